//! The single-instance lock of the daemon: an exclusive, non-blocking lock on `~/.gg/ggd.pid`.
//! It lives in `app` because `gg jobs` and `gg web` ask whether a daemon runs.
//!
//! The file is never deleted; the lock dies with the process, so a crashed daemon never leaves
//! a stale lock behind.

use std::fs::{DirBuilder, File, OpenOptions, Permissions, TryLockError};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why the lock was not taken.
#[derive(Debug)]
pub enum LockError {
    /// Another daemon holds it.
    Held,
    Other(String),
}

/// The held lock; released when dropped.
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
}

/// `~/.gg/ggd.pid`.
pub fn pid_path(home: &Path) -> PathBuf {
    crate::app::config::gg_home(home).join("ggd.pid")
}

fn open(home: &Path) -> Result<File, String> {
    let dir = crate::app::config::gg_home(home);
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    std::fs::set_permissions(&dir, Permissions::from_mode(0o700))
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = pid_path(home);
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Takes the lock and writes our pid under it.
pub fn acquire(home: &Path) -> Result<InstanceLock, LockError> {
    let mut file = open(home).map_err(LockError::Other)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Err(LockError::Held),
        Err(TryLockError::Error(e)) => return Err(LockError::Other(e.to_string())),
    }
    let written = file
        .set_len(0)
        .and_then(|()| writeln!(file, "{}", std::process::id()))
        .and_then(|()| file.sync_all());
    written.map_err(|e| LockError::Other(format!("write pid: {e}")))?;
    Ok(InstanceLock { _file: file })
}

/// Whether a daemon currently holds the lock (`ggd status`). Errors count as not running only
/// when the file does not exist.
pub fn daemon_alive(home: &Path) -> Result<bool, String> {
    let path = pid_path(home);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    match file.try_lock_shared() {
        Ok(()) => Ok(false),
        Err(TryLockError::WouldBlock) => Ok(true),
        Err(TryLockError::Error(e)) => Err(format!("{}: {e}", path.display())),
    }
}
