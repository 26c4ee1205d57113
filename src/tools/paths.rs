//! Path confinement for the file tools.
//!
//! Every file tool works inside the working directory. A check on a path string followed by an
//! `open` of the same string is racy: a symlink swapped in between redirects the open. So after
//! the lexical check, every open goes through a directory file descriptor of the working directory
//! with `openat2(RESOLVE_BENEATH)`: the kernel itself refuses any resolution, symlinks included,
//! that would leave the directory, at the moment of the open.
//!
//! Writes are atomic: a temporary file created beside the target (through the same confined
//! parent descriptor), fsynced, then renamed over the target within that descriptor.

use std::ffi::OsStr;
use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

/// A path argument that the tools refuse, or an I/O failure on a confined path.
#[derive(Debug)]
pub enum PathError {
    /// The path leaves the working directory (lexically, or through a symlink).
    Outside(String),
    /// Any other failure, with the path the user gave.
    Io { path: String, error: io::Error },
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::Outside(p) => write!(f, "path {p:?} is outside working directory"),
            PathError::Io { path, error } => write!(f, "{path}: {error}"),
        }
    }
}

impl std::error::Error for PathError {}

/// The working directory, held open so that every access is resolved beneath it.
pub struct Workspace {
    root: PathBuf,
    root_fd: OwnedFd,
    before_open: Option<OpenHook>,
}

impl fmt::Debug for Workspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workspace")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// Called with the relative path right before each confined open, after every check on that
/// path: a fault-injection point where a test swaps a symlink in, to prove that the open itself
/// (not the earlier check) keeps the access inside.
pub type OpenHook = std::sync::Arc<dyn Fn(&Path) + Send + Sync>;

/// A path relative to the workspace root, already checked lexically: no `..`, not absolute,
/// not empty unless it names the root itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confined {
    relative: PathBuf,
    /// The path as the user wrote it, for messages.
    shown: String,
}

impl Confined {
    pub fn relative(&self) -> &Path {
        &self.relative
    }

    pub fn shown(&self) -> &str {
        &self.shown
    }

    fn io(&self, error: io::Error) -> PathError {
        if error.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error()) {
            // RESOLVE_BENEATH reports an escape through a symlink as EXDEV.
            PathError::Outside(self.shown.clone())
        } else {
            PathError::Io {
                path: self.shown.clone(),
                error,
            }
        }
    }

    /// The relative path as the kernel wants it: `.` for the root.
    fn kernel_path(&self) -> &Path {
        if self.relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.relative
        }
    }
}

const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

impl Workspace {
    /// Opens `cwd` (canonicalised) as the confinement root.
    pub fn open(cwd: &Path) -> io::Result<Workspace> {
        let root = std::fs::canonicalize(cwd)?;
        let root_fd = rustix::fs::open(
            &root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Workspace {
            root,
            root_fd,
            before_open: None,
        })
    }

    /// Installs a hook run between the checks and every confined open (see [`OpenHook`]).
    #[doc(hidden)]
    pub fn set_before_open_hook(&mut self, hook: OpenHook) {
        self.before_open = Some(hook);
    }

    fn before_open(&self, path: &Confined) {
        if let Some(hook) = &self.before_open {
            hook(&path.relative);
        }
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Checks a user-supplied path lexically and makes it relative to the root.
    ///
    /// Relative paths join the root; absolute paths must lie under it. `..` may appear only while
    /// it stays inside (`a/../b` is fine, `../x` and `a/../../x` are not). Symlinks are not
    /// looked at here: the kernel checks them at open time.
    pub fn confine(&self, user_path: &str) -> Result<Confined, PathError> {
        let outside = || PathError::Outside(user_path.to_string());
        let path = Path::new(user_path);
        let rest = if path.is_absolute() {
            path.strip_prefix(&self.root).map_err(|_| outside())?
        } else {
            path
        };
        let mut parts: Vec<&OsStr> = Vec::new();
        for component in rest.components() {
            match component {
                Component::Normal(part) => parts.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    parts.pop().ok_or_else(outside)?;
                }
                Component::RootDir | Component::Prefix(_) => return Err(outside()),
            }
        }
        Ok(Confined {
            relative: parts.iter().collect(),
            shown: user_path.to_string(),
        })
    }

    /// Opens a regular file for reading, confined. Anything else (a FIFO that would block, a
    /// device, a directory) is refused.
    pub fn open_read(&self, path: &Confined) -> Result<File, PathError> {
        self.before_open(path);
        let fd = rustix::fs::openat2(
            &self.root_fd,
            path.kernel_path(),
            // NONBLOCK keeps a planted FIFO from hanging the open; it does not affect regular
            // files, the only kind accepted below.
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
            Mode::empty(),
            BENEATH,
        )
        .map_err(|e| path.io(e.into()))?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| path.io(e.into()))?;
        if stat.st_mode & 0o170000 != 0o100000 {
            return Err(path.io(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            )));
        }
        Ok(File::from(fd))
    }

    /// Opens a directory, confined (for listing and walking).
    pub fn open_dir(&self, path: &Confined) -> Result<OwnedFd, PathError> {
        self.before_open(path);
        rustix::fs::openat2(
            &self.root_fd,
            path.kernel_path(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            BENEATH,
        )
        .map_err(|e| path.io(e.into()))
    }

    /// Replaces (or creates) the file atomically with `contents`, creating parent directories.
    ///
    /// The parent is opened beneath the root, the temporary file is created in it with
    /// `O_EXCL|O_NOFOLLOW`, and the rename happens within that same directory descriptor, so a
    /// symlink swapped in anywhere along the path cannot redirect the write. An existing file keeps
    /// its permission bits.
    pub fn write_atomic(&self, path: &Confined, contents: &[u8]) -> Result<(), PathError> {
        let resolved;
        let path = match self.final_symlink_target(path)? {
            Some(target) => {
                resolved = target;
                &resolved
            }
            None => path,
        };
        let name = path
            .relative
            .file_name()
            .ok_or_else(|| PathError::Io {
                path: path.shown.clone(),
                error: io::Error::new(io::ErrorKind::InvalidInput, "not a file path"),
            })?
            .to_os_string();
        let parent = self.create_parents(path)?;
        let mode = match rustix::fs::statat(&parent, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if (stat.st_mode & 0o170000) == 0o040000 => {
                return Err(path.io(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "is a directory",
                )));
            }
            Ok(stat) if (stat.st_mode & 0o170000) == 0o100000 => {
                Mode::from_raw_mode(stat.st_mode & 0o7777)
            }
            _ => Mode::from_raw_mode(0o644),
        };
        let tmp_name = temp_name(&name);
        let tmp_fd = rustix::fs::openat(
            &parent,
            &tmp_name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            mode,
        )
        .map_err(|e| path.io(e.into()))?;
        let result = (|| -> io::Result<()> {
            let mut file = File::from(tmp_fd);
            rustix::fs::fchmod(&file, mode)?;
            file.write_all(contents)?;
            file.sync_all()?;
            rustix::fs::renameat(&parent, &tmp_name, &parent, &name)?;
            Ok(())
        })();
        if let Err(error) = result {
            let _ = rustix::fs::unlinkat(&parent, &tmp_name, AtFlags::empty());
            return Err(path.io(error));
        }
        // Make the rename itself durable.
        let _ = rustix::fs::fsync(&parent);
        Ok(())
    }

    /// When `path` names a symlink, where it points (which must be inside the root): writing
    /// through a link writes its target, as an editor would, and a link out is an escape.
    fn final_symlink_target(&self, path: &Confined) -> Result<Option<Confined>, PathError> {
        let is_link = std::fs::symlink_metadata(self.root.join(&path.relative))
            .is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            return Ok(None);
        }
        let outside = || PathError::Outside(path.shown.clone());
        let target = match std::fs::canonicalize(self.root.join(&path.relative)) {
            Ok(target) => target,
            // A dangling link: resolve its parent and keep the link's own target name.
            Err(_) => {
                let link =
                    std::fs::read_link(self.root.join(&path.relative)).map_err(|e| path.io(e))?;
                let base = self.root.join(&path.relative);
                let joined = base.parent().unwrap_or(&self.root).join(link);
                let parent = joined.parent().ok_or_else(outside)?;
                let name = joined.file_name().ok_or_else(outside)?;
                std::fs::canonicalize(parent)
                    .map_err(|e| path.io(e))?
                    .join(name)
            }
        };
        let relative = target.strip_prefix(&self.root).map_err(|_| outside())?;
        // The result is re-confined, so a link changed after this check is still caught by
        // RESOLVE_BENEATH when the write opens it.
        let mut confined = self.confine(&relative.to_string_lossy())?;
        confined.shown = path.shown.clone();
        Ok(Some(confined))
    }

    /// Opens (creating as needed) every parent directory of `path`, each beneath the root.
    fn create_parents(&self, path: &Confined) -> Result<OwnedFd, PathError> {
        let parent_rel = path.relative.parent().unwrap_or(Path::new(""));
        let mut built = PathBuf::new();
        for component in parent_rel.components() {
            built.push(component);
            let step = Confined {
                relative: built.clone(),
                shown: path.shown.clone(),
            };
            match self.open_dir(&step) {
                Ok(_) => {}
                Err(PathError::Io { error, .. }) if error.kind() == io::ErrorKind::NotFound => {
                    let above = Confined {
                        relative: built.parent().unwrap_or(Path::new("")).to_path_buf(),
                        shown: path.shown.clone(),
                    };
                    let above_fd = self.open_dir(&above)?;
                    match rustix::fs::mkdirat(
                        &above_fd,
                        component.as_os_str(),
                        Mode::from_raw_mode(0o755),
                    ) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(path.io(e.into())),
                    }
                }
                Err(other) => return Err(other),
            }
        }
        self.open_dir(&Confined {
            relative: parent_rel.to_path_buf(),
            shown: path.shown.clone(),
        })
    }
}

fn temp_name(name: &OsStr) -> PathBuf {
    let mut bytes = b".".to_vec();
    bytes.extend_from_slice(name.as_bytes());
    bytes.extend_from_slice(format!(".gg-tmp-{:016x}", fastrand::u64(..)).as_bytes());
    PathBuf::from(OsStr::from_bytes(&bytes))
}
