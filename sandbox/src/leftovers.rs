//! Paths gg creates on the host while it runs, removed even when gg is ended by a signal.
//!
//! Their owners remove them in `Drop`: the directories bubblewrap creates on the host for its
//! mount points (in the project, where a protected path such as `.gg` was missing), the landlock
//! level's private temp directory, the network proxy's socket directory, the browser's temp
//! directory. `SIGTERM` (`kill`, a service manager) and `SIGHUP` (a closed terminal) end the
//! process without running any destructor, and so does `std::process::exit`: an empty `.gg/`
//! stayed in the project and a socket in `/tmp` after each. So every such path is also
//! registered here while it exists, and [`remove_all`] removes what is still registered: on those
//! signals once [`remove_on_termination`] has asked for it, and before each `exit`.
//!
//! The signal handler, its pipe and its thread are set up at the first registration, not when
//! asked: most runs of gg (`gg classify`, `gg kb search`, a turn with no sandbox) create nothing
//! to remove, and keep the default dispositions and a single thread.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, Once, OnceLock};

/// How a registered path is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// Only if it is an empty directory: what bubblewrap created as a mount point, which a
    /// person or a command may have filled since.
    EmptyDir,
    /// The whole tree: a directory gg made for itself alone.
    Tree,
}

struct Entry {
    id: u64,
    path: PathBuf,
    removal: Removal,
}

struct Registry {
    next: u64,
    entries: Vec<Entry>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    next: 0,
    entries: Vec::new(),
});

/// A registered path. Dropping it unregisters the path (its owner has removed it, or keeps it
/// on purpose); it does not remove anything.
#[derive(Debug)]
#[must_use = "the path is unregistered when this is dropped"]
pub struct Registered(u64);

impl Drop for Registered {
    fn drop(&mut self) {
        registry().entries.retain(|e| e.id != self.0);
    }
}

/// The registry, also after a thread panicked holding it: the list is still right, and an entry
/// left in it would have a path its owner keeps removed on the way out.
fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers `path` for removal if gg ends before its owner removes it. The first registration
/// after [`remove_on_termination`] sets up the signal handler.
pub fn register(path: &Path, removal: Removal) -> Registered {
    let id = {
        let mut registry = registry();
        registry.next += 1;
        let id = registry.next;
        registry.entries.push(Entry {
            id,
            path: path.to_path_buf(),
            removal,
        });
        id
    };
    if ASKED.load(Ordering::SeqCst) {
        install_once();
    }
    Registered(id)
}

/// Removes every registered path, the latest first (a stub's parents were registered before
/// it), and forgets them. Errors are ignored: this runs on the way out.
pub fn remove_all() {
    let entries = std::mem::take(&mut registry().entries);
    for entry in entries.iter().rev() {
        let _ = match entry.removal {
            Removal::EmptyDir => std::fs::remove_dir(&entry.path),
            Removal::Tree => std::fs::remove_dir_all(&entry.path),
        };
    }
}

/// The write end of the pipe the signal handler reports to (-1: not installed).
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

/// Whether [`remove_on_termination`] was called: registrations then set up the handler.
static ASKED: AtomicBool = AtomicBool::new(false);

/// The handler is set up once, by whichever registration comes first.
static INSTALLED: Once = Once::new();

/// Where a failure to set up the handler is reported (given to [`remove_on_termination`]).
static REPORT_FAILURE: OnceLock<fn(std::io::Error)> = OnceLock::new();

const TERMINATING: [libc::c_int; 2] = [libc::SIGTERM, libc::SIGHUP];

extern "C" fn on_terminating_signal(signal: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    let byte = signal as u8;
    // SAFETY: write(2) is async-signal-safe; it writes one byte from a local to the pipe that
    // `remove_on_termination` created and never closes.
    unsafe { libc::write(fd, (&raw const byte).cast(), 1) };
}

/// On `SIGTERM` and `SIGHUP`, removes every registered path, then ends the process by that
/// signal as it would have ended without this (the parent sees the same status). A signal
/// that gg was started with ignored (`nohup`) stays ignored. For gg's command-line front ends;
/// the daemon shuts down on its own signal handling.
///
/// The handler is set up at the first registration (now, if a path is registered already).
/// If that fails (no pipe, no thread), the default behaviour stays and `report_failure` is
/// called once with the error.
pub fn remove_on_termination(report_failure: fn(std::io::Error)) {
    let _ = REPORT_FAILURE.set(report_failure);
    ASKED.store(true, Ordering::SeqCst);
    if !registry().entries.is_empty() {
        install_once();
    }
}

fn install_once() {
    INSTALLED.call_once(|| {
        if let Err(e) = install()
            && let Some(report) = REPORT_FAILURE.get()
        {
            report(e);
        }
    });
}

/// Sets up the pipe, the thread that removes on a signal, and the handlers.
fn install() -> std::io::Result<()> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the two-element array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let [read_end, write_end] = fds;
    // Set before the handlers exist (below), so a handler never sees -1; `install_once` runs
    // this once.
    SIGNAL_PIPE.store(write_end, Ordering::SeqCst);
    std::thread::Builder::new()
        .name("gg-leftovers".into())
        .spawn(move || {
            let mut byte = 0u8;
            loop {
                // SAFETY: read of one byte into a local from the pipe's read end, owned by this
                // thread for the life of the process.
                let n = unsafe { libc::read(read_end, (&raw mut byte).cast(), 1) };
                if n == 1 {
                    break;
                }
                if n < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                {
                    continue;
                }
                return;
            }
            remove_all();
            let signal = libc::c_int::from(byte);
            // SAFETY: restores the default action for the signal that arrived, then raises it
            // for the whole process (kill to our own pid, not raise, which targets this
            // thread only for a signal it has not blocked either way): the process ends as it
            // would have without the handler.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
                libc::kill(libc::getpid(), signal);
            }
        })?;
    for signal in TERMINATING {
        // SAFETY: a zeroed sigaction is a valid value to fill; the handler only calls write(2),
        // which is async-signal-safe; SA_RESTART keeps other threads' calls from failing with
        // EINTR.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut current) == 0
                && current.sa_sigaction == libc::SIG_IGN
            {
                // Ignored by whoever started gg (`nohup` ignores SIGHUP): it stays ignored.
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_terminating_signal as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_what_is_still_registered_latest_first_and_only_empty_stubs() {
        let root = tempfile::tempdir().unwrap();
        let stub_parent = root.path().join("a");
        let stub = stub_parent.join("b");
        std::fs::create_dir_all(&stub).unwrap();
        let filled = root.path().join("filled");
        std::fs::create_dir(&filled).unwrap();
        std::fs::write(filled.join("keep"), "x").unwrap();
        let tree = root.path().join("tree");
        std::fs::create_dir_all(tree.join("inner")).unwrap();
        std::fs::write(tree.join("inner/f"), "x").unwrap();
        let gone = root.path().join("unregistered");
        std::fs::create_dir(&gone).unwrap();

        let _parent = register(&stub_parent, Removal::EmptyDir);
        let _stub = register(&stub, Removal::EmptyDir);
        let _filled = register(&filled, Removal::EmptyDir);
        let _tree = register(&tree, Removal::Tree);
        drop(register(&gone, Removal::Tree));
        remove_all();

        assert!(!stub_parent.exists(), "the stub and then its parent");
        assert!(filled.join("keep").exists(), "a filled mount point stays");
        assert!(!tree.exists());
        assert!(gone.exists(), "an unregistered path is left to its owner");
    }
}
