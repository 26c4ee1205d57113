//! One gg-desktop per user: the first holds an exclusive lock on `~/.gg/desktop.lock` (released by
//! the kernel however the process ends) and listens on `~/.gg/desktop.sock`; a second one finds
//! the lock taken, asks the first to come to the front through the socket, and exits.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a later instance writes to the socket.
const FOCUS: &[u8] = b"focus\n";

pub enum Instance {
    /// This is the first: keep the lock for the life of the process; `listener` receives the
    /// requests of later instances.
    First {
        _lock: std::fs::File,
        listener: UnixListener,
        socket: PathBuf,
    },
    /// Another gg-desktop runs and was asked to come to the front.
    Focused,
}

/// `~/.gg`, created 0700 if missing.
pub fn state_dir() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or("HOME is not set")?;
    let dir = Path::new(&home).join(".gg");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

pub fn claim(dir: &Path) -> Result<Instance, String> {
    use rustix::fs::{FlockOperation, flock};
    use std::os::unix::fs::OpenOptionsExt;
    let lock_path = dir.join("desktop.lock");
    let socket = dir.join("desktop.sock");
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&lock_path)
        .map_err(|e| format!("{}: {e}", lock_path.display()))?;
    match flock(&lock, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => {
            ask_to_focus(&socket)?;
            return Ok(Instance::Focused);
        }
        Err(e) => return Err(format!("{}: {e}", lock_path.display())),
    }
    // Under the lock a socket file can only be one a crashed instance left behind.
    match std::fs::remove_file(&socket) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", socket.display())),
    }
    let listener = UnixListener::bind(&socket).map_err(|e| format!("{}: {e}", socket.display()))?;
    Ok(Instance::First {
        _lock: lock,
        listener,
        socket,
    })
}

fn ask_to_focus(socket: &Path) -> Result<(), String> {
    let mut stream = UnixStream::connect(socket).map_err(|e| {
        format!(
            "another gg-desktop holds the lock but does not answer on {}: {e}",
            socket.display()
        )
    })?;
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    stream
        .write_all(FOCUS)
        .map_err(|e| format!("{}: {e}", socket.display()))
}

/// Calls `on_focus` for every later instance that asks, until the listener fails.
pub fn serve(listener: UnixListener, on_focus: impl Fn() + Send + 'static) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let mut request = [0u8; FOCUS.len()];
            if stream.read_exact(&mut request).is_ok() && request == FOCUS {
                on_focus();
            }
        }
    });
}
