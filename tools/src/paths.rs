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

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

/// A path argument that the tools refuse, or an I/O failure on a confined path.
#[derive(Debug)]
pub enum PathError {
    /// The path leaves the working directory (lexically, or through a symlink).
    Outside(String),
    /// The path lies in a deny-read path (see [`Workspace::set_hidden`]), where it really is:
    /// through a symlink too.
    Hidden(String),
    /// Any other failure, with the path the user gave.
    Io { path: String, error: io::Error },
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::Outside(p) => write!(f, "path {p:?} is outside working directory"),
            PathError::Hidden(p) => write!(
                f,
                "path {p:?} is in a deny-read path (a secret the sandbox hides, such as ~/.ssh); \
                 gg's file tools neither read nor write there"
            ),
            PathError::Io { path, error } => write!(f, "{path}: {error}"),
        }
    }
}

impl std::error::Error for PathError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PathError::Io { error, .. } => Some(error),
            PathError::Outside(_) | PathError::Hidden(_) => None,
        }
    }
}

/// What gg's own tools (files, browser) keep out of, sandbox or not. These tools run in gg's own
/// process (or start a browser from it), so no sandbox covers them (see
/// [`Workspace::set_hidden`]); the one membership test is [`DenyRead::covers`].
#[derive(Debug, Clone, Default)]
pub struct DenyRead(Vec<PathBuf>);

impl DenyRead {
    /// The sandbox's deny-read list for `root` (the existing defaults in the home directory,
    /// canonical), and the defaults that do not exist yet, where they would appear.
    pub fn for_root(root: &Path) -> Result<DenyRead, sandbox::SandboxError> {
        // The root is refused where the sandbox would refuse it (`/`); its deny-read list is the
        // home's defaults, which `everywhere` holds too.
        sandbox::Policy::workdir_of(root)?;
        Ok(DenyRead::everywhere())
    }

    /// What every actor keeps out of wherever it works: the home's credential stores and gg's
    /// own state (each canonical where it exists, and as named where it does not yet), and the
    /// files gg read a secret from this session. For actors with no working directory of their
    /// own (`kb add`, `library add`).
    pub fn everywhere() -> DenyRead {
        let mut hidden = crate::secrets::secret_files();
        if let Some(home) = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .and_then(|h| std::fs::canonicalize(h).ok())
        {
            for rel in sandbox::policy::DEFAULT_DENY_READ_IN_HOME {
                let path = home.join(rel);
                // As `canonicalize` answers, for one `lstat` per name where `realpath` reads
                // the link of every component of the home again (five times a session, sixty
                // names, most absent).
                if let Some(canonical) =
                    sandbox::policy::canonicalize_below(&home, std::path::Path::new(rel))
                    && !hidden.contains(&canonical)
                {
                    hidden.push(canonical);
                }
                if !hidden.contains(&path) {
                    hidden.push(path);
                }
            }
        }
        DenyRead(hidden)
    }

    /// The hidden paths.
    pub fn into_paths(self) -> Vec<PathBuf> {
        self.0
    }

    /// Whether `path` (absolute) lies in one of the hidden paths.
    pub fn covers(&self, path: &Path) -> bool {
        self.0.iter().any(|h| path.starts_with(h))
    }

    /// Whether the open `fd` is hidden: where it really is (the kernel's name for the
    /// descriptor) lies in a hidden path, or that cannot be told, or it is a regular file with
    /// more than one name that is one of the hidden files (a hard link to `~/.ssh/id_rsa` made
    /// inside the project by someone other than gg: no path rule can see it). Every actor that
    /// judges a file it opened asks this, on the descriptor it then reads, so what is judged is
    /// what is read.
    pub fn covers_open(&self, fd: impl AsFd) -> bool {
        if self.is_empty() {
            return false;
        }
        match fd_path(fd.as_fd()) {
            Some(real) if !self.covers(&real) => self.links_to_hidden(fd.as_fd()),
            _ => true,
        }
    }

    /// Whether `fd` is a regular file with more than one link whose identity (device, inode)
    /// is one of the hidden files'. A file with one link is where its name says, which
    /// [`DenyRead::covers`] judges.
    fn links_to_hidden(&self, fd: BorrowedFd<'_>) -> bool {
        let Ok(stat) = rustix::fs::fstat(fd) else {
            return true;
        };
        if stat.st_mode & 0o170000 != 0o100000 || stat.st_nlink <= 1 {
            return false;
        }
        let id = (stat.st_dev, stat.st_ino);
        self.0.iter().any(|hidden| identities(hidden).contains(&id))
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// How many entries of a hidden directory are looked at for [`identities`], in all: `~/.ssh` or
/// `~/.aws` hold a handful of files, `~/.gg` its sessions; a directory with thousands (a
/// browser profile) is not walked to the end, so a hard link to a file past the first entries
/// is not recognised (its path rule still holds).
const IDENTITY_WALK_BOUND: usize = 4096;

/// How deep below a hidden directory [`identities`] looks: gg's own transcripts lie two levels
/// down (`~/.gg/sessions/<project>/<id>.jsonl`), the connectors' tokens one, and other tools'
/// caches of tokens a level or two more (`~/.aws/sso/cache/…`, `~/.config/gcloud/…/adc.json`).
/// An attacker pass read a session transcript through a hard link in the project when only the
/// files directly inside were known.
const IDENTITY_WALK_DEPTH: usize = 4;

/// A file's identity: device and inode.
type Identity = (u64, u64);

/// The identities of the regular files a hidden path holds: the file itself, or for a directory
/// the regular files below it ([`IDENTITY_WALK_DEPTH`] levels, breadth first, the first
/// [`IDENTITY_WALK_BOUND`] entries; links to files followed, links to directories not). Looked
/// at once per process and path, the first time a file with more than one name is judged, then
/// kept: a secret created later in the session is not known by identity (only by path).
fn identities(hidden: &Path) -> Arc<[Identity]> {
    static KNOWN: Mutex<BTreeMap<PathBuf, Arc<[Identity]>>> = Mutex::new(BTreeMap::new());
    if let Some(known) = KNOWN.lock().ok().and_then(|k| k.get(hidden).cloned()) {
        return known;
    }
    let of = |meta: std::fs::Metadata| {
        use std::os::unix::fs::MetadataExt;
        meta.is_file().then(|| (meta.dev(), meta.ino()))
    };
    let found: Arc<[Identity]> = match std::fs::metadata(hidden) {
        Ok(meta) if meta.is_dir() => {
            let mut found = Vec::new();
            let mut level = vec![hidden.to_path_buf()];
            let mut seen = 0;
            for _ in 0..IDENTITY_WALK_DEPTH {
                let mut next = Vec::new();
                for dir in &level {
                    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                        seen += 1;
                        if seen > IDENTITY_WALK_BOUND {
                            break;
                        }
                        let path = entry.path();
                        if entry.file_type().is_ok_and(|t| t.is_dir()) {
                            next.push(path);
                        } else if let Some(id) = std::fs::metadata(&path).ok().and_then(of) {
                            found.push(id);
                        }
                    }
                }
                level = next;
            }
            found.into()
        }
        Ok(meta) => of(meta).into_iter().collect(),
        Err(_) => Arc::from([]),
    };
    if let Ok(mut known) = KNOWN.lock() {
        known.insert(hidden.to_path_buf(), Arc::clone(&found));
    }
    found
}

/// What an open descriptor names now, as the kernel tells it (`/proc/self/fd`); `None` where
/// that cannot be told.
pub fn fd_path(fd: impl AsFd) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd())).ok()
}

/// The working directory, held open so that every access is resolved beneath it.
pub struct Workspace {
    root: PathBuf,
    root_fd: OwnedFd,
    before_open: Option<OpenHook>,
    before_rename: Option<OpenHook>,
    /// What the tools keep out of (see [`Workspace::set_hidden`]).
    hidden: DenyRead,
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
            before_rename: None,
            hidden: DenyRead::default(),
        })
    }

    /// Keeps every access out of `hidden` (the sandbox's deny-read list). The file tools run in gg's own process, outside any sandbox, so what the sandbox
    /// hides from commands (`~/.ssh`, `~/.aws`, gg's own credentials, …) they must keep out of
    /// themselves, or a model would read it with `read` instead of `cat` whenever gg runs in a
    /// directory holding one (the home directory). Judged by where an opened file or directory
    /// really is, so a symlink inside the root leading into a hidden path is refused too.
    pub fn set_hidden(&mut self, hidden: DenyRead) {
        self.hidden = hidden;
    }

    /// Refuses what `fd` (just opened for `path`) names when it really lies in a hidden path.
    /// Where it is cannot be told (no `/proc`): refused too, while anything is hidden.
    fn refuse_hidden(&self, fd: &OwnedFd, path: &Confined) -> Result<(), PathError> {
        if self.hidden.covers_open(fd) {
            return Err(PathError::Hidden(path.shown.clone()));
        }
        Ok(())
    }

    /// [`Workspace::refuse_hidden`] for a path opened with no symlink on the way: it is where
    /// its name says.
    fn refuse_hidden_name(&self, path: &Confined) -> Result<(), PathError> {
        if self.hidden.covers(&self.root.join(&path.relative)) {
            return Err(PathError::Hidden(path.shown.clone()));
        }
        Ok(())
    }

    /// Installs a hook run between the checks and every confined open (see [`OpenHook`]).
    #[doc(hidden)]
    pub fn set_before_open_hook(&mut self, hook: OpenHook) {
        self.before_open = Some(hook);
    }

    /// Installs a hook run in [`Workspace::write_target`] after the temporary file is written and
    /// synced and before it is renamed over the target: the point where a crash test kills the
    /// writer, to prove the target is never seen half-written.
    #[doc(hidden)]
    pub fn set_before_rename_hook(&mut self, hook: OpenHook) {
        self.before_rename = Some(hook);
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
        let fd = openat2(
            &self.root_fd,
            path.kernel_path(),
            // NONBLOCK keeps a planted FIFO from hanging the open; it does not affect regular
            // files, the only kind accepted below.
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
            Mode::empty(),
            BENEATH,
        )
        .map_err(|e| path.io(e.into()))?;
        self.refuse_hidden(&fd, path)?;
        regular_file(fd).map_err(|e| path.io(e))
    }

    /// Opens a directory, confined (for listing and walking).
    pub fn open_dir(&self, path: &Confined) -> Result<OwnedFd, PathError> {
        self.before_open(path);
        let fd = openat2(
            &self.root_fd,
            path.kernel_path(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            BENEATH,
        )
        .map_err(|e| path.io(e.into()))?;
        self.refuse_hidden(&fd, path)?;
        Ok(fd)
    }

    /// Opens a directory beneath the root without following any symlink (`RESOLVE_NO_SYMLINKS`):
    /// `ELOOP` when a component is one.
    fn open_dir_no_symlinks(&self, path: &Confined) -> Result<OwnedFd, rustix::io::Errno> {
        self.before_open(path);
        openat2(
            &self.root_fd,
            path.kernel_path(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            BENEATH | ResolveFlags::NO_SYMLINKS,
        )
    }

    /// Opens a regular file for reading without following any symlink on the way
    /// (`RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS`): for files gg keeps itself under fixed names (the
    /// memory overlay, the library, `.gg/outputs/*.log`), where a link can only be planted. `Ok(None)` when the file does not exist; a symlink
    /// anywhere on the path is refused as [`PathError::Outside`].
    pub fn open_read_strict(&self, path: &Confined) -> Result<Option<File>, PathError> {
        self.refuse_hidden_name(path)?;
        self.before_open(path);
        let fd = match openat2(
            &self.root_fd,
            path.kernel_path(),
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
            Mode::empty(),
            BENEATH | ResolveFlags::NO_SYMLINKS,
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(rustix::io::Errno::LOOP) => return Err(PathError::Outside(path.shown.clone())),
            Err(e) => return Err(path.io(e.into())),
        };
        self.refuse_hidden(&fd, path)?;
        regular_file(fd).map(Some).map_err(|e| path.io(e))
    }

    /// Opens a directory without following any symlink on the way, creating the missing ones
    /// (mode `mode`) one component at a time, each through the descriptor of its parent. A
    /// symlink anywhere on the path is refused as [`PathError::Outside`]. `Ok(None)` with
    /// `create == false` when it does not exist.
    pub fn open_dir_strict(
        &self,
        path: &Confined,
        create: Option<u32>,
    ) -> Result<Option<OwnedFd>, PathError> {
        self.refuse_hidden_name(path)?;
        let refuse = |e: rustix::io::Errno| match e {
            rustix::io::Errno::LOOP | rustix::io::Errno::XDEV => {
                PathError::Outside(path.shown.clone())
            }
            e => path.io(e.into()),
        };
        match self.open_dir_no_symlinks(path) {
            Ok(fd) => return Ok(Some(fd)),
            Err(rustix::io::Errno::NOENT) if create.is_some() => {}
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(refuse(e)),
        }
        let mode = Mode::from_raw_mode(create.unwrap_or(0o700));
        let mut dir = openat2(
            &self.root_fd,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            BENEATH | ResolveFlags::NO_SYMLINKS,
        )
        .map_err(refuse)?;
        for component in path.relative.components() {
            let Component::Normal(part) = component else {
                continue;
            };
            match rustix::fs::mkdirat(&dir, part, mode) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(refuse(e)),
            }
            dir = openat2(
                &dir,
                part,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
                BENEATH | ResolveFlags::NO_SYMLINKS,
            )
            .map_err(refuse)?;
        }
        Ok(Some(dir))
    }

    /// [`Workspace::resolve_write`] for stores that gg keeps itself: refused as
    /// [`PathError::Outside`] when any component of the path, the file included, is a symlink.
    pub fn resolve_write_strict(&self, path: &Confined) -> Result<WriteTarget, PathError> {
        let target = self.resolve_write(path)?;
        if !target.symlink_free() {
            return Err(PathError::Outside(path.shown.clone()));
        }
        Ok(target)
    }

    /// Resolves where a write to `path` lands, without changing anything: the deepest existing
    /// directory on the way is opened and held (symlinks inside the root are followed, as an
    /// editor would; any leading out is refused by the kernel), a final symlink is followed to
    /// its target, and the result says whether any symlink was involved at all. Whatever is
    /// decided about the target is decided on the opened directory and the real path it had.
    pub fn resolve_write(&self, path: &Confined) -> Result<WriteTarget, PathError> {
        self.resolve_write_from(path, path.shown.clone(), Vec::new(), true)
    }

    /// `via`: the links followed so far, each as the path it was reached by.
    fn resolve_write_from(
        &self,
        path: &Confined,
        shown: String,
        mut via: Vec<PathBuf>,
        symlink_free: bool,
    ) -> Result<WriteTarget, PathError> {
        let name = path
            .relative
            .file_name()
            .ok_or_else(|| {
                path.io(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "not a file path",
                ))
            })?
            .to_os_string();
        let mut existing = path
            .relative
            .parent()
            .unwrap_or(Path::new(""))
            .to_path_buf();
        let mut missing: Vec<std::ffi::OsString> = Vec::new();
        let (dir, strict) = loop {
            let step = Confined {
                relative: existing.clone(),
                shown: path.shown.clone(),
            };
            let opened = match self.open_dir_no_symlinks(&step) {
                Ok(fd) => Ok((fd, true)),
                Err(rustix::io::Errno::LOOP) => {
                    self.before_open(&step);
                    openat2(
                        &self.root_fd,
                        step.kernel_path(),
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                        Mode::empty(),
                        BENEATH,
                    )
                    .map(|fd| (fd, false))
                }
                Err(e) => Err(e),
            };
            match opened {
                Ok(found) => break found,
                Err(rustix::io::Errno::NOENT) if !existing.as_os_str().is_empty() => {
                    if let Some(last) = existing.file_name() {
                        missing.insert(0, last.to_os_string());
                    }
                    existing.pop();
                }
                Err(e) => return Err(path.io(e.into())),
            }
        };
        let dir_relative = self
            .where_is(&dir)
            .ok_or_else(|| path.io(io::Error::other("cannot tell where the directory is")))?;
        let symlink_free = symlink_free && strict;
        if missing.is_empty() {
            match rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) if stat.st_mode & 0o170000 == 0o120000 => {
                    // Writing through a link writes its target, which must be inside too.
                    if via.len() >= 8 {
                        return Err(path.io(rustix::io::Errno::LOOP.into()));
                    }
                    let link = rustix::fs::readlinkat(&dir, &name, Vec::new())
                        .map_err(|e| path.io(e.into()))?;
                    let link = PathBuf::from(OsStr::from_bytes(link.as_bytes()));
                    let joined = if link.is_absolute() {
                        link
                    } else {
                        self.root.join(&dir_relative).join(link)
                    };
                    let next = self
                        .confine(&joined.to_string_lossy())
                        .map_err(|_| PathError::Outside(shown.clone()))?;
                    via.push(dir_relative.join(&name));
                    return self.resolve_write_from(&next, shown, via, false);
                }
                Ok(stat) if stat.st_mode & 0o170000 == 0o040000 => {
                    return Err(path.io(io::Error::new(
                        io::ErrorKind::IsADirectory,
                        "is a directory",
                    )));
                }
                _ => {}
            }
        }
        // Where the write really lands (the held directory's real path, then what is still to
        // be made below it): never in a hidden path.
        let lands = missing
            .iter()
            .fold(self.root.join(&dir_relative), |p, m| p.join(m))
            .join(&name);
        if self.hidden.covers(&lands) {
            return Err(PathError::Hidden(shown));
        }
        Ok(WriteTarget {
            dir,
            dir_relative,
            missing,
            name,
            symlink_free,
            via,
            shown,
        })
    }

    /// Where an open directory is now, relative to the root (`None` when it is not beneath it).
    fn where_is(&self, dir: &OwnedFd) -> Option<PathBuf> {
        let now = fd_path(dir)?;
        now.strip_prefix(&self.root).ok().map(Path::to_path_buf)
    }

    /// The current contents of a resolved target (`None` when it does not exist yet), read from
    /// the held directory without following a link: what was checked is what is read.
    pub fn read_target(
        &self,
        target: &WriteTarget,
        limit: u64,
    ) -> Result<Option<Vec<u8>>, PathError> {
        if !target.missing.is_empty() {
            return Ok(None);
        }
        let fd = match rustix::fs::openat(
            &target.dir,
            &target.name,
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::NOFOLLOW,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(e) => return Err(target.io(e.into())),
        };
        if self.hidden.covers_open(&fd) {
            // A hard link to a secret: its contents would reach the model in the edit's diff.
            return Err(PathError::Hidden(target.shown.clone()));
        }
        let file = regular_file(fd).map_err(|e| target.io(e))?;
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(file, limit), &mut bytes)
            .map_err(|e| target.io(e))?;
        Ok(Some(bytes))
    }

    /// Replaces (or creates) the file atomically with `contents`, creating parent directories.
    pub fn write_atomic(&self, path: &Confined, contents: &[u8]) -> Result<(), PathError> {
        let target = self.resolve_write(path)?;
        self.write_target(&target, contents, None)
    }

    /// Writes a resolved target atomically: into the directory held since it was resolved
    /// (refused if that directory has moved since), creating the missing directories below it
    /// without following any symlink, through a temporary file created with `O_EXCL|O_NOFOLLOW`
    /// and renamed within the same directory descriptor. With `expect`, the current contents
    /// must still be exactly those (an edit is written only over the text it was computed from).
    /// An existing file keeps its permission bits.
    pub fn write_target(
        &self,
        target: &WriteTarget,
        contents: &[u8],
        expect: Option<&[u8]>,
    ) -> Result<(), PathError> {
        if self.where_is(&target.dir).as_deref() != Some(target.dir_relative.as_path()) {
            return Err(target.io(io::Error::other(
                "its directory was moved after the write was approved; nothing written",
            )));
        }
        // Judged again now: writes approved together (one reply's `HEAD`, `objects/…`,
        // `refs/…`) each saw the disk before the others landed, and together make a git
        // directory.
        let home = crate::security::home_dir();
        if let Some(why) = sandbox::protected::planted(self.root(), &target.relative(), Some(&home))
        {
            return Err(target.io(io::Error::other(format!(
                "it is now {why}; nothing written"
            ))));
        }
        if let Some(expected) = expect {
            let now = self.read_target(target, expected.len() as u64 + 1)?;
            if now.as_deref() != Some(expected) {
                return Err(target.io(io::Error::other(
                    "the file changed after the edit was approved; nothing written",
                )));
            }
        }
        let mut owned: Option<OwnedFd> = None;
        let mut relative = target.dir_relative.clone();
        for component in &target.missing {
            relative.push(component);
            let parent = owned.as_ref().unwrap_or(&target.dir);
            let mode = if relative == Path::new(sandbox::protected::AGENT_AREA) {
                0o700
            } else {
                0o755
            };
            match rustix::fs::mkdirat(parent, component.as_os_str(), Mode::from_raw_mode(mode)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(target.io(e.into())),
            }
            let next = openat2(
                parent,
                component.as_os_str(),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
                BENEATH | ResolveFlags::NO_SYMLINKS,
            )
            .map_err(|e| target.io(e.into()))?;
            owned = Some(next);
        }
        let parent = owned.as_ref().unwrap_or(&target.dir);
        let name = target.name.as_os_str();
        let mode = match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if (stat.st_mode & 0o170000) == 0o040000 => {
                return Err(target.io(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "is a directory",
                )));
            }
            Ok(stat) if (stat.st_mode & 0o170000) == 0o100000 => {
                Mode::from_raw_mode(stat.st_mode & 0o7777)
            }
            _ => Mode::from_raw_mode(0o644),
        };
        let tmp_name = temp_name(name);
        let tmp_fd = rustix::fs::openat(
            parent,
            &tmp_name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            mode,
        )
        .map_err(|e| target.io(e.into()))?;
        let result = (|| -> io::Result<()> {
            let mut file = File::from(tmp_fd);
            rustix::fs::fchmod(&file, mode)?;
            file.write_all(contents)?;
            file.sync_all()?;
            if let Some(hook) = &self.before_rename {
                hook(Path::new(name));
            }
            rustix::fs::renameat(parent, &tmp_name, parent, name)?;
            Ok(())
        })();
        if let Err(error) = result {
            let _ = rustix::fs::unlinkat(parent, &tmp_name, AtFlags::empty());
            return Err(target.io(error));
        }
        // Make the rename itself durable.
        let _ = rustix::fs::fsync(parent);
        Ok(())
    }
}

/// Where a write lands, resolved before it is approved (see [`Workspace::resolve_write`]).
#[derive(Debug)]
pub struct WriteTarget {
    /// The deepest existing directory on the way, held open.
    dir: OwnedFd,
    /// Where `dir` was, relative to the root, when it was resolved.
    dir_relative: PathBuf,
    /// Directories to create below `dir` (absent when resolved).
    missing: Vec<std::ffi::OsString>,
    name: std::ffi::OsString,
    symlink_free: bool,
    /// The links the write went through to land here, each as the path (relative to the
    /// root, its directory's real path) it was reached by: `AGENTS.md` for a write asked of
    /// `AGENTS.md -> docs/agents.md`.
    via: Vec<PathBuf>,
    shown: String,
}

impl WriteTarget {
    /// The real path the write lands on, relative to the root, symlinks resolved.
    pub fn relative(&self) -> PathBuf {
        let mut path = self.dir_relative.clone();
        path.extend(&self.missing);
        path.push(&self.name);
        path
    }

    /// The links the write goes through, each as the path it was reached by (see `via`).
    pub fn links_followed(&self) -> &[PathBuf] {
        &self.via
    }

    /// Whether no component of the path, the file itself included, is a symlink.
    pub fn symlink_free(&self) -> bool {
        self.symlink_free
    }

    /// The path as the model wrote it.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    fn io(&self, error: io::Error) -> PathError {
        PathError::Io {
            path: self.shown.clone(),
            error,
        }
    }
}

fn temp_name(name: &OsStr) -> PathBuf {
    let mut bytes = b".".to_vec();
    bytes.extend_from_slice(name.as_bytes());
    bytes.extend_from_slice(format!(".gg-tmp-{:016x}", fastrand::u64(..)).as_bytes());
    PathBuf::from(OsStr::from_bytes(&bytes))
}

/// `openat2(2)`, retried while the kernel answers `EAGAIN`. With `RESOLVE_BENEATH` the kernel
/// refuses to finish a lookup during which any rename or mount happened anywhere on the system
/// (it cannot then prove the walk stayed beneath), and says so with `EAGAIN` for the caller to
/// retry. On a busy machine (every atomic write renames) that happens; it is not an answer about
/// the path. Bounded, so a system that renames without pause cannot spin us forever.
fn openat2<Fd: rustix::fd::AsFd, P: rustix::path::Arg + Copy>(
    dirfd: Fd,
    path: P,
    oflags: OFlags,
    mode: Mode,
    resolve: ResolveFlags,
) -> rustix::io::Result<OwnedFd> {
    retry_eagain(|| rustix::fs::openat2(&dirfd, path, oflags, mode, resolve))
}

/// Calls `call` again while it fails with `EAGAIN`, at most 100 times more.
fn retry_eagain<T>(mut call: impl FnMut() -> rustix::io::Result<T>) -> rustix::io::Result<T> {
    let mut tries = 0;
    loop {
        match call() {
            Err(rustix::io::Errno::AGAIN) if tries < 100 => tries += 1,
            other => return other,
        }
    }
}

/// The opened descriptor as a `File` when it is a regular file; anything else (a FIFO that would
/// block a reader, a device, a directory) is refused. One check for every read path.
fn regular_file(fd: OwnedFd) -> io::Result<File> {
    let stat = rustix::fs::fstat(&fd)?;
    if stat.st_mode & 0o170000 != 0o100000 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(File::from(fd))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code

    use super::retry_eagain;
    use rustix::io::Errno;

    /// `EAGAIN` from `openat2` (a rename or mount anywhere during a `RESOLVE_BENEATH` lookup) is
    /// retried, other answers are returned at once, and the retries are bounded.
    #[test]
    fn eagain_is_retried_a_bounded_number_of_times() {
        let mut calls = 0;
        let r = retry_eagain(|| {
            calls += 1;
            if calls < 5 { Err(Errno::AGAIN) } else { Ok(7) }
        });
        assert_eq!((r, calls), (Ok(7), 5));

        let mut calls = 0;
        let r: rustix::io::Result<()> = retry_eagain(|| {
            calls += 1;
            Err(Errno::LOOP)
        });
        assert_eq!((r, calls), (Err(Errno::LOOP), 1));

        let mut calls = 0;
        let r: rustix::io::Result<()> = retry_eagain(|| {
            calls += 1;
            Err(Errno::AGAIN)
        });
        assert_eq!((r, calls), (Err(Errno::AGAIN), 101));
    }
}
