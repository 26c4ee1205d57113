//! The cross-process writer lease: a `<file>.lock` sidecar created exclusively.
//!
//! The lease is short-lived: it is held only while one open, append, fork or header rewrite
//! runs, never for the lifetime of a session. A lock whose mtime is older than
//! [`STALE_AFTER`] is presumed abandoned by a crashed writer and taken over.

use std::ffi::OsString;
use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use super::error::{Result, SessionError};
use super::id::new_id;

/// How long to keep retrying before reporting the session as locked.
pub const WAIT: Duration = Duration::from_secs(5);
/// Age (by mtime) after which a lock is considered abandoned.
pub const STALE_AFTER: Duration = Duration::from_secs(30);
const RETRY_EVERY: Duration = Duration::from_millis(10);

/// A held lease; released on drop.
#[derive(Debug)]
pub(crate) struct Lease {
    lock_path: PathBuf,
    content: String,
}

/// The sidecar lock path of a session file.
pub fn lock_path(session_path: &Path) -> PathBuf {
    let mut name: OsString = session_path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

impl Lease {
    /// Takes the lease of `session_path`, waiting up to [`WAIT`].
    pub(crate) fn acquire(session_path: &Path) -> Result<Lease> {
        let lock_path = lock_path(session_path);
        let content = format!("{}:{}", std::process::id(), new_id()?);
        let deadline = Instant::now() + WAIT;
        loop {
            let created = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&lock_path);
            match created {
                Ok(mut file) => {
                    // The content is what release checks ownership against; without it the
                    // lease could never be released safely, so a failed write gives it back.
                    if let Err(error) = file.write_all(content.as_bytes()) {
                        let _ = fs::remove_file(&lock_path);
                        return Err(SessionError::io("write session lock", &lock_path, error));
                    }
                    return Ok(Lease { lock_path, content });
                }
                Err(error) if error.kind() == ErrorKind::AlreadyExists => {
                    if remove_if_stale(&lock_path) {
                        continue;
                    }
                    if Instant::now() >= deadline {
                        return Err(SessionError::Locked { lock_path });
                    }
                    thread::sleep(RETRY_EVERY);
                }
                Err(error) => {
                    return Err(SessionError::io("create session lock", &lock_path, error));
                }
            }
        }
    }
}

/// Deletes the lock at `lock_path` if it is older than [`STALE_AFTER`]. Returns true when the
/// caller should retry at once.
fn remove_if_stale(lock_path: &Path) -> bool {
    let is_stale = |path: &Path| -> Option<String> {
        let metadata = fs::metadata(path).ok()?;
        let age = SystemTime::now()
            .duration_since(metadata.modified().ok()?)
            .ok()?;
        if age < STALE_AFTER {
            return None;
        }
        fs::read_to_string(path).ok()
    };
    let Some(stale_content) = is_stale(lock_path) else {
        // Gone in the meantime: retry immediately.
        return fs::symlink_metadata(lock_path).is_err();
    };
    // Re-check right before deleting so a lock that was just replaced by a live writer (new
    // content, fresh mtime) is not removed.
    if is_stale(lock_path).as_deref() == Some(stale_content.as_str()) {
        let _ = fs::remove_file(lock_path);
    }
    true
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Only delete the lock if it is still ours: after a stale takeover it belongs to
        // someone else.
        if fs::read_to_string(&self.lock_path).is_ok_and(|content| content == self.content) {
            let _ = fs::remove_file(&self.lock_path);
        }
    }
}
