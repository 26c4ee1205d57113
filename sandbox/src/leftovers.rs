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
//! Before that, the same signals stop what must not be cut short: an agent turn whose command
//! is running ([`stoppable`]). The command would otherwise die with gg unswept, and what it
//! planted in the project (a `.git/hooks/pre-commit`, an `.envrc`) would run on the host later.
//! So the handler's thread stops each such turn as Ctrl+C does (the command is stopped, then
//! swept) and waits until it has ended, at most [`STOP_GRACE`], before it removes and ends gg.
//!
//! The signal handler, its pipe and its thread are set up at the first registration, not when
//! asked: most runs of gg (`gg classify`, `gg kb search`) create nothing to remove and start no
//! turn, and keep the default dispositions and a single thread.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, Once, OnceLock};
use std::time::{Duration, Instant};

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

/// How long a terminating signal waits for the turns it stopped to end (their commands stopped
/// and swept) before gg ends without them. Stopping a command takes a second at most (the
/// sandbox's own bounds); the sweep of a large project a few more.
pub const STOP_GRACE: Duration = Duration::from_secs(30);

/// Stops one piece of running work; says whether there was any to wait for.
type Stop = Arc<dyn Fn() -> bool + Send + Sync>;

struct Stops {
    next: u64,
    entries: Vec<(u64, Stop)>,
}

static STOPS: Mutex<Stops> = Mutex::new(Stops {
    next: 0,
    entries: Vec::new(),
});

fn stops() -> std::sync::MutexGuard<'static, Stops> {
    STOPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The terminating signal received (0: none yet).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// Running work that a terminating signal stops and waits for (see [`stoppable`]). Dropping it
/// says the work has ended.
#[must_use = "the work counts as ended when this is dropped"]
pub struct Stoppable(u64);

impl std::fmt::Debug for Stoppable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Stoppable").field(&self.0).finish()
    }
}

impl Drop for Stoppable {
    fn drop(&mut self) {
        stops().entries.retain(|(id, _)| *id != self.0);
        if RECEIVED.load(Ordering::SeqCst) != 0 {
            // Wakes the handler's thread, which waits for this (a zero byte is no signal).
            let fd = SIGNAL_PIPE.load(Ordering::SeqCst);
            if fd >= 0 {
                let byte = 0u8;
                // SAFETY: write(2) of one byte from a local to the pipe `install` created and
                // never closes.
                unsafe { libc::write(fd, (&raw const byte).cast(), 1) };
            }
        }
    }
}

/// Registers running work (an agent turn) that `SIGTERM` and `SIGHUP` must let end before gg
/// does: on either, `stop` is called (it cancels the turn, as Ctrl+C does: the running command
/// is stopped, then swept) and, when it says there was something to stop, gg ends only once the
/// returned guard is dropped, or [`STOP_GRACE`] later, saying so. Work registered after the
/// signal is stopped at once. The first registration after [`remove_on_termination`] sets up
/// the signal handler.
pub fn stoppable(stop: impl Fn() -> bool + Send + Sync + 'static) -> Stoppable {
    let stop: Stop = Arc::new(stop);
    let id = {
        let mut stops = stops();
        stops.next += 1;
        let id = stops.next;
        stops.entries.push((id, Arc::clone(&stop)));
        id
    };
    if RECEIVED.load(Ordering::SeqCst) != 0 {
        stop();
    }
    if ASKED.load(Ordering::SeqCst) {
        install_once();
    }
    Stoppable(id)
}

/// Ends gg by the terminating signal it received, if one came (its handler's thread does so
/// too, once what it stopped has ended): for a front end about to exit with a status of its own
/// when the signal's is due (the turn it stopped ended first). Returns when no signal came.
pub fn end_if_terminating() {
    let signal = RECEIVED.load(Ordering::SeqCst);
    if signal != 0 {
        end_by(signal);
    }
}

/// Removes what is registered and ends the process by `signal`, as it would have ended without
/// the handler.
fn end_by(signal: libc::c_int) -> ! {
    remove_all();
    // SAFETY: restores the default action for the signal that arrived, then raises it for the
    // whole process (kill to our own pid, not raise, which targets this thread only for a
    // signal it has not blocked either way): the process ends as it would have without the
    // handler.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::kill(libc::getpid(), signal);
    }
    // The signal ends the process; until it is delivered, nothing else happens here.
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// How the wait for stopped work ended.
#[derive(Debug, PartialEq, Eq)]
enum Waited {
    /// It has all ended.
    Ended,
    /// Another terminating signal came first.
    Again(libc::c_int),
    /// The grace period passed.
    TimedOut,
}

/// Waits on the pipe's `read_end` until `ended()` holds (checked at each zero byte, which a
/// dropped [`Stoppable`] writes), another signal's byte comes, or `grace` has passed.
fn wait_for_stopped(read_end: libc::c_int, ended: impl Fn() -> bool, grace: Duration) -> Waited {
    let deadline = Instant::now() + grace;
    loop {
        if ended() {
            return Waited::Ended;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Waited::TimedOut;
        }
        let mut poll = libc::pollfd {
            fd: read_end,
            events: libc::POLLIN,
            revents: 0,
        };
        let millis = libc::c_int::try_from(left.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
        // SAFETY: poll(2) on one pollfd that lives on this stack frame.
        let ready = unsafe { libc::poll(&mut poll, 1, millis) };
        if ready <= 0 {
            // Timed out (the loop finds the deadline passed) or interrupted by a signal.
            continue;
        }
        let mut byte = 0u8;
        // SAFETY: read of one byte into a local from the pipe's read end, which poll found
        // readable.
        let n = unsafe { libc::read(read_end, (&raw mut byte).cast(), 1) };
        if n == 1 && byte != 0 {
            return Waited::Again(libc::c_int::from(byte));
        }
        if n == 0 {
            // End of file, which the write end (never closed) cannot give: do not spin on it.
            return if ended() {
                Waited::Ended
            } else {
                Waited::TimedOut
            };
        }
    }
}

/// On the first terminating signal: stops the registered work and waits for what there was
/// to end; says on stderr what it waits for and how that ended (gg is ending either way).
fn stop_running_work(read_end: libc::c_int, signal: libc::c_int) {
    RECEIVED.store(signal, Ordering::SeqCst);
    let registered: Vec<(u64, Stop)> = stops().entries.clone();
    let waited_for: Vec<u64> = registered
        .into_iter()
        .filter(|(_, stop)| stop())
        .map(|(id, _)| id)
        .collect();
    if waited_for.is_empty() {
        return;
    }
    let name = signal_name(signal);
    say(&format!(
        "gg: {name}: stopping the running command; gg exits once it is stopped and swept"
    ));
    let ended = || {
        stops()
            .entries
            .iter()
            .all(|(id, _)| !waited_for.contains(id))
    };
    let grace = stop_grace();
    match wait_for_stopped(read_end, ended, grace) {
        Waited::Ended => {}
        Waited::Again(again) => say(&format!(
            "gg: {} again: exiting without waiting for the sweep; the project may keep what \
             the command wrote",
            signal_name(again)
        )),
        Waited::TimedOut => say(&format!(
            "gg: the command was not stopped and swept within {} s; exiting without its sweep: \
             the project may keep what it wrote",
            grace.as_secs_f32()
        )),
    }
}

/// [`STOP_GRACE`]; a test-hooks build takes `GG_TEST_STOP_GRACE_MS` instead, so that a test of
/// the bound need not wait the whole of it.
fn stop_grace() -> Duration {
    #[cfg(feature = "test-hooks")]
    if let Some(millis) = std::env::var("GG_TEST_STOP_GRACE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        return Duration::from_millis(millis);
    }
    STOP_GRACE
}

fn signal_name(signal: libc::c_int) -> &'static str {
    match signal {
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

/// A line on stderr, which may be gone (a closed terminal): then nothing.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
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

/// On `SIGTERM` and `SIGHUP`, stops the registered work and waits for it ([`stoppable`]),
/// removes every registered path, then ends the process by that signal as it would have ended
/// without this (the parent sees the same status). A signal that gg was started with ignored
/// (`nohup`) stays ignored. For gg's command-line front ends; the daemon shuts down on its own
/// signal handling.
///
/// The handler is set up at the first registration of a path or of work (now, if one is
/// registered already).
/// If that fails (no pipe, no thread), the default behaviour stays and `report_failure` is
/// called once with the error.
pub fn remove_on_termination(report_failure: fn(std::io::Error)) {
    let _ = REPORT_FAILURE.set(report_failure);
    ASKED.store(true, Ordering::SeqCst);
    if !registry().entries.is_empty() || !stops().entries.is_empty() {
        install_once();
    }
}

/// Whether `signal` is ignored now: one gg was started with ignored (`nohup` ignores `SIGHUP`)
/// must stay so, not be caught.
pub fn ignored(signal: libc::c_int) -> bool {
    // SAFETY: a zeroed sigaction is a valid value to fill; a null new action only reads.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
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
                if n == 1 && byte != 0 {
                    break;
                }
                if n == 1 {
                    // A zero byte (work ended) is no signal.
                    continue;
                }
                if n < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                {
                    continue;
                }
                return;
            }
            let signal = libc::c_int::from(byte);
            stop_running_work(read_end, signal);
            end_by(signal);
        })?;
    for signal in TERMINATING {
        if ignored(signal) {
            // Ignored by whoever started gg (`nohup` ignores SIGHUP): it stays ignored.
            continue;
        }
        // SAFETY: a zeroed sigaction is a valid value to fill; the handler only calls write(2),
        // which is async-signal-safe; SA_RESTART keeps other threads' calls from failing with
        // EINTR.
        unsafe {
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

    fn pipe() -> (libc::c_int, libc::c_int) {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 fills the two-element array it is given.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        (fds[0], fds[1])
    }

    fn write_byte(fd: libc::c_int, byte: u8) {
        // SAFETY: write(2) of one byte from a local to a pipe this test made.
        assert_eq!(unsafe { libc::write(fd, (&raw const byte).cast(), 1) }, 1);
    }

    #[test]
    fn the_wait_for_stopped_work_ends_when_it_has_ended_at_a_second_signal_or_at_the_deadline() {
        let (read_end, write_end) = pipe();
        assert_eq!(
            wait_for_stopped(read_end, || true, Duration::from_secs(60)),
            Waited::Ended
        );
        write_byte(write_end, libc::SIGTERM as u8);
        assert_eq!(
            wait_for_stopped(read_end, || false, Duration::from_secs(60)),
            Waited::Again(libc::SIGTERM)
        );
        let started = Instant::now();
        assert_eq!(
            wait_for_stopped(read_end, || false, Duration::from_millis(50)),
            Waited::TimedOut
        );
        assert!(started.elapsed() >= Duration::from_millis(50));
        // Work that ends later wakes the wait with a zero byte, as a dropped `Stoppable` does.
        let ended = Arc::new(AtomicBool::new(false));
        let ender = {
            let ended = Arc::clone(&ended);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                write_byte(write_end, 0);
                ended.store(true, Ordering::SeqCst);
                write_byte(write_end, 0);
            })
        };
        assert_eq!(
            wait_for_stopped(
                read_end,
                || ended.load(Ordering::SeqCst),
                Duration::from_secs(60)
            ),
            Waited::Ended
        );
        ender.join().unwrap();
        // SAFETY: closes the two ends this test made, once.
        unsafe {
            libc::close(read_end);
            libc::close(write_end);
        }
    }

    #[test]
    fn stoppable_work_is_registered_until_it_ends() {
        let work = stoppable(|| true);
        let id = work.0;
        assert!(stops().entries.iter().any(|(i, _)| *i == id));
        drop(work);
        assert!(!stops().entries.iter().any(|(i, _)| *i == id));
    }
}
