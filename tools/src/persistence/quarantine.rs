//! Moving what a command planted out of reach: `.gg/quarantine/<time>-<name>`, or deleted
//! where the quarantine cannot be used safely ([`set_aside`]). Nothing is followed.

use super::*;

/// Moves each of `paths` (absent before the command) that exists now into
/// `.gg/quarantine/<time>-<name>`, out of reach of whatever opens the project, and says so with
/// its reason. `.gg` is read-only to commands at the bwrap level, so they cannot take it back.
/// Where the quarantine cannot be used safely, what was planted is deleted instead
/// ([`set_aside`]).
pub(super) fn quarantine(root: &Path, paths: &[(PathBuf, String)]) -> Vec<String> {
    let mut lines = Vec::new();
    for (path, why) in paths {
        if std::fs::symlink_metadata(path).is_err() {
            continue;
        }
        let name = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        lines.push(match set_aside(root, path) {
            Ok((_, aside)) => format!("[gg: the command created {name}, {why}; {}]", aside.done()),
            Err(e) => format!(
                "[gg: the command created {name}, {why}, and it could not be moved aside ({e}): \
                 remove it before opening the project]"
            ),
        });
    }
    lines
}

/// Where [`set_aside`] put what the command left.
pub(super) enum Aside {
    /// Moved into `.gg/quarantine`, under this name.
    Quarantined(PathBuf),
    /// Deleted, because the quarantine could not be used (why).
    Deleted(String),
}

impl Aside {
    pub(super) fn done(&self) -> String {
        match self {
            Aside::Quarantined(target) => format!("moved to {}", target.display()),
            Aside::Deleted(refused) => format!("deleted, not kept ({refused})"),
        }
    }
}

/// A name in a directory of the project, the directory opened without following any link.
pub(super) struct Spot {
    pub(super) dir: OwnedFd,
    pub(super) name: OsString,
}

/// Takes what the command left at `path` out of the project: moved (`renameat`, between
/// descriptors) into `.gg/quarantine/<time>-<flat path>`, or deleted where that cannot be done
/// safely. gg does this from its own unconfined process, so no path is followed as a string:
/// `.gg` and `quarantine` are opened beneath the project with no link followed on the way
/// (`RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS`, as the memory store opens `.gg/memory`) and made
/// with `mkdirat` where missing; `path`'s directory is opened one component at a time with
/// `O_NOFOLLOW`. A link at `.gg` or `.gg/quarantine` (made by a command at the landlock level,
/// which has no carve-out for `.gg`, or committed in a cloned repository) would otherwise send
/// the command's file into `~/.bashrc.d` or `~/.config/autostart`.
///
/// When the quarantine is a link or no directory, or the move fails (another file system),
/// the planted file is deleted: leaving it where it was is what the sweep exists to prevent,
/// and any other place gg could move it to is either in reach of the next command or on
/// another file system, where moving means copying a tree the command shaped. The person is
/// told, and a link at `.gg` is itself what an attack plants (gg never makes one).
pub(super) fn set_aside(root: &Path, path: &Path) -> Result<(Spot, Aside), String> {
    let spot = open_spot(root, path)?;
    let ws = crate::paths::Workspace::open(root).map_err(|e| e.to_string())?;
    let refused = match quarantine_dir(&ws) {
        Ok(dir) => {
            // `.git/commondir` is named as such, and kept as `…-.git_commondir`.
            let flat = path
                .strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string()
                .replace('/', "_");
            let stamp = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default();
            let target = format!("{stamp}-{flat}");
            match rustix::fs::renameat(&spot.dir, &spot.name, &dir, &target) {
                Ok(()) => {
                    let shown = root.join(".gg").join("quarantine").join(target);
                    return Ok((spot, Aside::Quarantined(shown)));
                }
                Err(e) => format!("it could not be moved to .gg/quarantine: {e}"),
            }
        }
        Err(refused) => refused,
    };
    remove_tree(&spot.dir, &spot.name, 0)
        .map_err(|e| format!("{refused}; deleting it failed too: {e}"))?;
    Ok((spot, Aside::Deleted(refused)))
}

/// `.gg/quarantine` beneath the project, made (mode 0700) where missing, with no link followed;
/// why not when it is a link or not a directory.
fn quarantine_dir(ws: &crate::paths::Workspace) -> Result<OwnedFd, String> {
    use crate::paths::PathError;
    let refused = |e: PathError| match e {
        PathError::Outside(_) => {
            ".gg or .gg/quarantine is a symbolic link, which gg does not follow: remove it"
                .to_string()
        }
        PathError::Io { error, .. }
            if error.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()) =>
        {
            ".gg or .gg/quarantine is not a directory".to_string()
        }
        e => format!(".gg/quarantine cannot be used: {e}"),
    };
    let confined = ws.confine(".gg/quarantine").map_err(refused)?;
    ws.open_dir_strict(&confined, Some(0o700))
        .map_err(refused)?
        .ok_or_else(|| ".gg/quarantine could not be made".to_string())
}

/// The directory holding `path` (below `root`), opened one component at a time from the
/// project's root with `O_NOFOLLOW`, and `path`'s name in it. Where a link lies on the way (a
/// `.git/hooks` that is one, listed through it as git does), the directory is told by where it
/// really is, which must be inside the project, and that is walked the same way.
pub(super) fn open_spot(root: &Path, path: &Path) -> Result<Spot, String> {
    use rustix::fs::{Mode, OFlags};
    let outside = || "it is not inside the project".to_string();
    let name = path.file_name().ok_or_else(outside)?.to_os_string();
    let parent = path.parent().ok_or_else(outside)?;
    let given = root;
    let root = std::fs::canonicalize(root).map_err(|e| e.to_string())?;
    let walk = |relative: &Path| -> rustix::io::Result<OwnedFd> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut dir = rustix::fs::open(&root, flags, Mode::empty())?;
        for component in relative.components() {
            match component {
                std::path::Component::Normal(part) => {
                    dir = rustix::fs::openat(&dir, part, flags, Mode::empty())?;
                }
                std::path::Component::CurDir => {}
                _ => return Err(rustix::io::Errno::XDEV),
            }
        }
        Ok(dir)
    };
    let lexical = parent
        .strip_prefix(given)
        .or_else(|_| parent.strip_prefix(&root))
        .ok()
        .map(walk);
    let dir = match lexical {
        Some(Ok(dir)) => dir,
        Some(Err(e)) if e != rustix::io::Errno::LOOP && e != rustix::io::Errno::NOTDIR => {
            return Err(std::io::Error::from(e).to_string());
        }
        // A link on the way (or a root named otherwise): where the directory really is.
        _ => {
            let real = std::fs::canonicalize(parent).map_err(|e| e.to_string())?;
            let relative = real.strip_prefix(&root).map_err(|_| outside())?;
            walk(relative).map_err(|e| std::io::Error::from(e).to_string())?
        }
    };
    Ok(Spot { dir, name })
}

/// Deletes `name` in `dir`, a directory with everything in it, never following a link (a link
/// is removed as itself). Nested at most [`MAX_DEPTH`] deep.
fn remove_tree(dir: &OwnedFd, name: &OsStr, depth: usize) -> std::io::Result<()> {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    use std::os::unix::ffi::OsStrExt;
    const MAX_DEPTH: usize = 256;
    let stat = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
        return Ok(rustix::fs::unlinkat(dir, name, AtFlags::empty())?);
    }
    if depth >= MAX_DEPTH {
        return Err(std::io::Error::other("nested too deep"));
    }
    let inner = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(&inner)? {
        let entry = entry?;
        let entry_name = entry.file_name().to_bytes();
        if entry_name != b"." && entry_name != b".." {
            names.push(OsStr::from_bytes(entry_name).to_os_string());
        }
    }
    for entry_name in names {
        remove_tree(&inner, &entry_name, depth + 1)?;
    }
    Ok(rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)?)
}
