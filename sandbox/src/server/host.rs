//! The host side of the session sandbox: starting, checking and replacing the command server,
//! and handing it commands.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::protocol::{Request, SERVER_ARG, ServerConfig, send_fds};
use crate::{
    Availability, Backend, Cleanup, Invocation, Level, PROBE, Policy, SandboxError, fs_rules,
    helper,
};

/// A command running in the session's sandbox.
#[derive(Debug)]
pub struct ServerCommand {
    /// Read end of the pipe that is the command's stdout and stderr.
    pub output: OwnedFd,
    /// The command's channel: reading it to the end gives the report ([`super::Ended`]);
    /// shutting it down (or dropping it) makes the server kill the command's tree.
    pub channel: UnixStream,
    /// Its place among the server's outstanding commands: [`Ticket::ended`] once the report
    /// has been read.
    pub ticket: Ticket,
}

/// A served command not yet known to be over, counted by its server ([`Outstanding`]).
///
/// The report comes only after the server has killed the command's whole tree, so a command
/// whose report was read ([`Ticket::ended`]) has left nothing running. One dropped without
/// that (a timeout, a cancellation, gg stopping mid-command) may still have a tree the server
/// is taking down.
#[derive(Debug)]
pub struct Ticket {
    outstanding: Arc<Outstanding>,
    ended: bool,
}

impl Ticket {
    fn new(outstanding: &Arc<Outstanding>) -> Ticket {
        outstanding.count.fetch_add(1, Ordering::SeqCst);
        Ticket {
            outstanding: Arc::clone(outstanding),
            ended: false,
        }
    }

    /// The command's report was read: nothing it started runs any more.
    pub fn ended(mut self) {
        self.ended = true;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if !self.ended {
            self.outstanding.abandoned.store(true, Ordering::SeqCst);
        }
        self.outstanding.count.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A server's commands whose end gg has not read, and whether one was given up before it.
#[derive(Debug, Default)]
struct Outstanding {
    count: AtomicUsize,
    abandoned: AtomicBool,
}

impl Outstanding {
    /// Every command handed over has reported its end: the server runs nothing but its spare.
    fn idle(&self) -> bool {
        self.count.load(Ordering::SeqCst) == 0 && !self.abandoned.load(Ordering::SeqCst)
    }
}

/// A command handed to the session's server.
#[derive(Debug)]
pub struct Served {
    /// The running command.
    pub command: ServerCommand,
    /// The level it runs under.
    pub level: Level,
    /// Why stronger levels were not used.
    pub reasons: Vec<String>,
    /// Lines for the command's output: the server was restarted, and why.
    pub notes: Vec<String>,
}

/// What [`SessionServer::spawn`] did.
#[derive(Debug)]
pub enum Spawned {
    /// The command runs in the session's sandbox.
    Served(Served),
    /// The caller runs the command with [`crate::wrap`] instead: the level has no server
    /// (none, seatbelt), or the server cannot start — then with the line to show once.
    PerCommand {
        /// Why the server is not used, the first time for this policy.
        note: Option<String>,
    },
}

/// What decides whether a running server can take a command: its level and its complete
/// command line (for bubblewrap, every mount).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    level: Level,
    argv: Vec<OsString>,
    /// The guard's server ([`SessionServer::spawn_guarded`]): no private temp directory.
    guard: bool,
}

/// The largest request handed over without blocking (`spawn_now`, `spawn_guarded_now`): what
/// fits in the channel's socket buffer is written without waiting for the server.
const SMALL_REQUEST: usize = 64 << 10;

/// What the lines a command's output gets call a server of `key`'s kind, and where its commands
/// go without it.
struct Names {
    /// It stopped: "… had stopped".
    stopped: &'static str,
    /// It could not start or failed: "… could not start", "… failed".
    failed: &'static str,
    /// Where one command goes without it.
    alone: &'static str,
    /// Where every command goes when it cannot start.
    each_alone: &'static str,
}

impl Key {
    fn names(&self) -> Names {
        if self.guard {
            Names {
                stopped: "the guard's command server",
                failed: "the guard's command server",
                alone: "this command is guarded on its own",
                each_alone: "each command without --sandbox is guarded on its own",
            }
        } else {
            Names {
                stopped: "the sandbox server",
                failed: "the sandbox command server",
                alone: "this command runs in a sandbox of its own",
                each_alone: "each command runs in a sandbox of its own",
            }
        }
    }
}

/// The sandbox server of one session: started lazily, replaced when the policy's rendering
/// changes or when it died, stopped when dropped (and, through bubblewrap's
/// `--die-with-parent` and the helper's parent-death signal, when the host dies).
#[derive(Debug, Default)]
pub struct SessionServer {
    state: Mutex<State>,
    /// A warm-up was asked for ([`SessionServer::begin_warm`]); read without the state's
    /// lock, which a start holds for as long as bubblewrap takes.
    warm_begun: std::sync::atomic::AtomicBool,
    /// The thread that starts the servers (see [`Launcher`]).
    launcher: Launcher,
}

/// A thread that lives as long as the session and forks every server of it.
///
/// bubblewrap's `--die-with-parent` and the standalone helper's parent-death signal are
/// tied to the *thread* that forked them, not to the process: a server started from a
/// short-lived thread (a tokio blocking-pool thread exits after 10 s idle) was killed with
/// that thread, and with it the command running in it. Here the thread ends only when the
/// session's `SessionServer` is dropped, which stops the server anyway.
#[derive(Debug, Default)]
struct Launcher {
    jobs: Mutex<Option<std::sync::mpsc::Sender<LaunchJob>>>,
}

type LaunchJob = Box<dyn FnOnce() + Send>;

impl Launcher {
    /// Runs `start` on the launcher thread (starting the thread at first use) and returns
    /// its result.
    fn run<T: Send + 'static>(
        &self,
        start: impl FnOnce() -> Result<T, String> + Send + 'static,
    ) -> Result<T, String> {
        let (tx, rx) = std::sync::mpsc::channel();
        let job: LaunchJob = Box::new(move || {
            let _ = tx.send(start());
        });
        let mut jobs = self
            .jobs
            .lock()
            .map_err(|_| "sandbox launcher poisoned".to_string())?;
        let job = match jobs.as_ref() {
            Some(sender) => match sender.send(job) {
                Ok(()) => None,
                Err(std::sync::mpsc::SendError(job)) => Some(job),
            },
            None => Some(job),
        };
        if let Some(job) = job {
            let (sender, receiver) = std::sync::mpsc::channel::<LaunchJob>();
            std::thread::Builder::new()
                .name("gg-sandbox-launcher".into())
                .spawn(move || {
                    while let Ok(job) = receiver.recv() {
                        job();
                    }
                })
                .map_err(|e| format!("cannot start the sandbox launcher thread: {e}"))?;
            sender
                .send(job)
                .map_err(|_| "sandbox launcher thread ended".to_string())?;
            *jobs = Some(sender);
        }
        drop(jobs);
        rx.recv()
            .map_err(|_| "sandbox launcher thread ended".to_string())?
    }
}

#[derive(Debug, Default)]
struct State {
    server: Option<Server>,
    /// The key whose server could not start, and why (not retried for that key).
    failed: Option<Key>,
    /// Why the server could not start when [`SessionServer::warm`] tried, for the next
    /// command to report.
    unreported: Option<String>,
    starts: u64,
    /// The last command's key, with what its rendering looked at (see [`kept_key_for`]).
    kept_key: Option<KeptKey>,
}

/// A server key kept for the next command of the same policy: the bubblewrap rendering looks
/// up every mount's path (the sockets, the hidden paths, the carve-outs), and the same policy
/// renders the same while none of those lookups would answer differently (`crate::watch`).
#[derive(Debug)]
struct KeptKey {
    level: Level,
    policy: Policy,
    stubs: Vec<PathBuf>,
    key: Key,
    plan_stubs: Vec<PathBuf>,
    watched: crate::Watched,
}

/// [`key_for`], or the last command's key (`kept`) when the level, the policy and the stubs are
/// the same and nothing the rendering looked at has changed.
fn kept_key_for(
    kept: &mut Option<KeptKey>,
    level: Level,
    policy: &Policy,
    stubs: &[PathBuf],
) -> Result<(Key, Vec<PathBuf>), SandboxError> {
    if let Some(k) = kept.as_ref()
        && k.level == level
        && k.policy == *policy
        && k.stubs == stubs
        && k.watched.unchanged()
    {
        return Ok((k.key.clone(), k.plan_stubs.clone()));
    }
    let (rendered, watched) = crate::watch(|| key_for(level, policy, stubs));
    let (key, plan_stubs) = rendered?;
    *kept = watched.is_reusable().then(|| KeptKey {
        level,
        policy: policy.clone(),
        stubs: stubs.to_vec(),
        key: key.clone(),
        plan_stubs: plan_stubs.clone(),
        watched,
    });
    Ok((key, plan_stubs))
}

#[derive(Debug)]
struct Server {
    key: Key,
    child: Child,
    control: OwnedFd,
    stderr: Option<std::process::ChildStderr>,
    /// Mount points bubblewrap created on the host, and at the landlock level the session's
    /// private temp directory; removed when the server ends.
    _cleanup: Cleanup,
    /// The landlock level's private temp directory, the `TMPDIR` of every command of this
    /// server (as the bubblewrap level's private `/tmp` is one tmpfs for the whole server).
    /// One per server rather than one per command, so that every command's Landlock plan is
    /// the same and the server's ruleset is reused (`fs_rules::Prepared`).
    temp: Option<PathBuf>,
    stubs: Vec<PathBuf>,
    /// A command has run in it (a server started by `warm` has run none yet).
    used: bool,
    /// Its commands not yet known to be over.
    outstanding: Arc<Outstanding>,
}

impl Drop for Server {
    fn drop(&mut self) {
        // At the landlock level the server itself kills what its running commands started
        // (there is no namespace to tear down): ask it to stop (`SIGTERM`) and give it a
        // moment. The kill covers a server that does not stop, and is all bubblewrap needs
        // (its `--die-with-parent` init takes the whole PID namespace down). A server whose
        // every command has reported its end has killed their trees already, and runs only
        // its spare, which dies with it (`PR_SET_PDEATHSIG`): the kill is all it needs too,
        // and the session's end does not wait for the server's own stop (about a millisecond
        // here, most of it for the spare to be scheduled to die).
        if self.key.level == Level::Landlock
            && !self.outstanding.idle()
            && matches!(self.child.try_wait(), Ok(None))
        {
            let pid = self.child.id() as libc::pid_t;
            // SAFETY: pidfd_open and kill with the pid of our child, not yet reaped
            // (try_wait just saw it running and only this process reaps it), so the pid
            // cannot be reused.
            let pidfd = unsafe {
                let fd = libc::syscall(libc::SYS_pidfd_open, pid, 0) as libc::c_int;
                libc::kill(pid, libc::SIGTERM);
                fd
            };
            let deadline = std::time::Instant::now() + Duration::from_secs(1);
            while matches!(self.child.try_wait(), Ok(None)) {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                if pidfd >= 0 {
                    // Readable when the server has exited: no polling interval to wait out.
                    let mut poll = libc::pollfd {
                        fd: pidfd,
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: poll on one local pollfd naming the descriptor opened above.
                    unsafe { libc::poll(&mut poll, 1, left.as_millis() as libc::c_int + 1) };
                } else {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            if pidfd >= 0 {
                // SAFETY: closing the descriptor pidfd_open gave us, used nowhere else.
                unsafe { libc::close(pidfd) };
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl SessionServer {
    /// A session without a server yet (the first sandboxed command starts it).
    pub fn new() -> SessionServer {
        SessionServer::default()
    }

    /// Claims this session's one warm-up: true the first time only. Never blocks (a host
    /// calls it on its async thread, maybe while a start holds the state's lock).
    pub fn begin_warm(&self) -> bool {
        !self
            .warm_begun
            .swap(true, std::sync::atomic::Ordering::SeqCst)
    }

    /// Starts the server for `policy` ahead of the first command, when none runs yet: a
    /// host calls it when it knows commands are coming (a turn starts, and the model's
    /// answer takes longer than bubblewrap and the helper take to start). Does nothing at
    /// a level without a server, or when a server was already started; a server that cannot
    /// start is reported by the next [`SessionServer::spawn`], as if it had tried.
    pub fn warm(&self, policy: &Policy, backend: Backend) -> Result<(), SandboxError> {
        let level = crate::choose(&PROBE, backend, &mut Vec::new())?;
        if !matches!(level, Level::Bwrap | Level::Landlock) {
            return Ok(());
        }
        let mut state = self
            .state
            .lock()
            .map_err(|_| SandboxError::Setup("sandbox server state poisoned".into()))?;
        if state.server.is_some() || state.failed.is_some() || state.starts > 0 {
            return Ok(());
        }
        let (key, stubs) = key_for(level, policy, &[])?;
        if let Err(note) = state.start(&self.launcher, key, stubs) {
            state.unreported = Some(note);
        } else if let Some(server) = &state.server {
            // Have the server build the command's Landlock ruleset now too, rather than
            // when the first command arrives (about a millisecond with a home's deny-read
            // paths to grant around). Best effort: the first command builds it otherwise.
            let _ = server.prepare_ahead(policy, level);
        }
        Ok(())
    }

    /// [`SessionServer::spawn`] for the common case, without blocking: when this session's
    /// server runs with the mounts `policy` renders to and the command is small, hands it
    /// over at once (a few system calls into socket buffers, no process start). Otherwise
    /// `None`: the caller then calls `spawn` where it may block (it may start bubblewrap),
    /// which also reports restarts. Saves async hosts a hand-over to a blocking thread per
    /// command.
    pub fn spawn_now(
        &self,
        inner: &Invocation,
        policy: &Policy,
        command_policy: &Policy,
        backend: Backend,
    ) -> Option<Result<Spawned, SandboxError>> {
        let mut reasons = Vec::new();
        let level = crate::choose(&PROBE, backend, &mut reasons).ok()?;
        let mut state = self.state.try_lock().ok()?;
        let state = &mut *state;
        let server = state.server.as_mut()?;
        if server.key.level != level || server.exited().is_some() {
            return None;
        }
        let (key, _) = kept_key_for(&mut state.kept_key, level, policy, &server.stubs).ok()?;
        if server.key != key {
            return None;
        }
        let request = match server.request(inner, command_policy, level) {
            Ok(request) if request.len() <= SMALL_REQUEST => request,
            Ok(_) | Err(RunError::Server(_)) => return None,
            Err(RunError::Setup(e)) => return Some(Err(e)),
        };
        let command = server.send(&request).ok()?;
        Some(Ok(Spawned::Served(Served {
            command,
            level,
            reasons,
            notes: Vec::new(),
        })))
    }

    /// Runs `inner` in the session's sandbox at the level `backend` asks for, starting or
    /// replacing the server as needed. `policy` is the server's (its mounts and network);
    /// `command_policy` is the command's own Landlock ruleset, the same policy or a stricter
    /// one ([`Policy::read_only`]: rulesets and seccomp filters stack, so a command can only
    /// restrict itself further within the server). An explicitly requested backend that is
    /// unavailable is an error, as with [`crate::wrap`].
    pub fn spawn(
        &self,
        inner: &Invocation,
        policy: &Policy,
        command_policy: &Policy,
        backend: Backend,
    ) -> Result<Spawned, SandboxError> {
        let mut reasons = Vec::new();
        let level = crate::choose(&PROBE, backend, &mut reasons)?;
        if !matches!(level, Level::Bwrap | Level::Landlock) {
            return Ok(Spawned::PerCommand { note: None });
        }
        let mut state = self
            .state
            .lock()
            .map_err(|_| SandboxError::Setup("sandbox server state poisoned".into()))?;
        let stubs = state
            .server
            .as_ref()
            .map(|s| s.stubs.clone())
            .unwrap_or_default();
        let (key, plan_stubs) = kept_key_for(&mut state.kept_key, level, policy, &stubs)?;
        let mut notes: Vec<String> = state.forget_exited().into_iter().collect();
        if let Some(server) = &state.server {
            if server.key != key && !server.used {
                // Started ahead by `warm` for a policy that changed before any command ran
                // in it: nothing the model saw is lost, so nothing to say.
                state.server = None;
            } else if server.key != key {
                notes.push(match level {
                    Level::Bwrap => "[gg: sandbox restarted: its mounts changed (a new or \
                                     removed protected path, writable root or network \
                                     policy); /tmp is empty again]"
                        .to_string(),
                    _ => "[gg: sandbox restarted: its policy changed]".to_string(),
                });
                state.server = None;
            }
        }
        state.hand_over(
            &self.launcher,
            &key,
            &plan_stubs,
            level,
            reasons,
            notes,
            |server| server.run(inner, command_policy, level),
        )
    }
}

/// A session's guarded commands (normal commands without `--sandbox`, `crate::guard`), served.
///
/// Spawning each on its own costs a thread, the helper's start as the command's reaper and its
/// fork: about 2 ms a command on this project's machines, against a few hundred microseconds
/// for a command the landlock level's server forks. So the guard's commands go to a server of
/// that kind too, started once per session on the host: it installs the guard's seccomp
/// filters on itself, keeps the person's capabilities, and gives each command the guard's
/// Landlock plan ([`crate::guard`]'s, worked out by gg for every command), a session of its
/// own and `/dev/null` as input; it is the reaper of what each command leaves (see
/// `inside::settle`), as the helper in its reaper's role was. A server of its own
/// (a [`SessionServer`] used only through these methods), so that its key never meets the
/// sandbox's.
impl SessionServer {
    /// [`SessionServer::spawn_guarded`] without blocking: `None` when the server is not running
    /// (or is being started) or the command is too large to hand over at once.
    pub fn spawn_guarded_now(
        &self,
        inner: &Invocation,
        project: &Path,
        deny_read: &[PathBuf],
    ) -> Option<Result<Spawned, SandboxError>> {
        let mut state = self.state.try_lock().ok()?;
        let server = state.server.as_mut()?;
        if server.exited().is_some() || server.key != *guard_key().ok()? {
            return None;
        }
        let request = match crate::guard::plan(project, deny_read)
            .and_then(|plan| guard_request(inner, project, plan))
        {
            Ok(request) if request.len() <= SMALL_REQUEST => request,
            Ok(_) => return None,
            Err(e) => return Some(Err(e)),
        };
        let command = server.send(&request).ok()?;
        Some(Ok(Spawned::Served(Served {
            command,
            level: Level::Landlock,
            reasons: Vec::new(),
            notes: Vec::new(),
        })))
    }

    /// Runs `inner` on the host under the guard, in `project` (the session's workspace root),
    /// with `deny_read` hidden: handed to the session's guard server, started or replaced as
    /// needed. [`Spawned::PerCommand`] when the server cannot take it: the caller then guards the
    /// command on its own ([`crate::guard`]). `Err` where Landlock is not enforced here, or the
    /// command cannot be encoded.
    pub fn spawn_guarded(
        &self,
        inner: &Invocation,
        project: &Path,
        deny_read: &[PathBuf],
    ) -> Result<Spawned, SandboxError> {
        let request = guard_request(inner, project, crate::guard::plan(project, deny_read)?)?;
        let key = guard_key()?;
        let mut state = self
            .state
            .lock()
            .map_err(|_| SandboxError::Setup("guard server state poisoned".into()))?;
        let notes = state.forget_exited().into_iter().collect();
        state.hand_over(
            &self.launcher,
            key,
            &[],
            Level::Landlock,
            Vec::new(),
            notes,
            |server| server.send(&request).map_err(RunError::Server),
        )
    }
}

/// The guard's server's command line: the helper (started without bubblewrap) with a
/// configuration that selects the guard's filters and keeps the capabilities. The same for the
/// whole process (the helper is chosen once, `crate::helper_image`), so worked out once: every
/// guarded command compares it with the running server's.
fn guard_key() -> Result<&'static Key, SandboxError> {
    static KEY: std::sync::OnceLock<Result<Key, String>> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        let config = ServerConfig {
            network: crate::Network::On,
            standalone: true,
            forward: None,
            local_sockets: false,
            guard: true,
            read_only: false,
        };
        let json = serde_json::to_string(&config).map_err(|e| format!("policy encoding: {e}"))?;
        Ok(Key {
            level: Level::Landlock,
            argv: vec![
                crate::standalone_helper_exe()
                    .map_err(|e| e.to_string())?
                    .into_os_string(),
                helper::HELPER_FLAG.into(),
                SERVER_ARG.into(),
                json.into(),
            ],
            guard: true,
        })
    })
    .as_ref()
    .map_err(|e| SandboxError::Setup(e.clone()))
}

/// The encoded request for a guarded command: `inner` in `project` under the guard's `plan`,
/// with the host's temporary directory (no private one).
fn guard_request(
    inner: &Invocation,
    project: &Path,
    plan: fs_rules::LandlockPlan,
) -> Result<Vec<u8>, SandboxError> {
    crate::guard::injected_ruleset_failure()?;
    Request {
        cwd: project.to_path_buf(),
        landlock: plan,
        tmpdir: None,
        program: inner.program.clone(),
        args: inner.args.clone(),
        env: inner.env.clone(),
    }
    .encode()
    .map_err(SandboxError::Setup)
}

/// A command that is never run: what a request that only carries a plan names.
fn placeholder() -> Invocation {
    Invocation {
        program: OsString::from("true"),
        args: Vec::new(),
        env: Vec::new(),
    }
}

impl State {
    /// Forgets the server when it has exited, with the line that says so for the next
    /// command's output.
    fn forget_exited(&mut self) -> Option<String> {
        let server = self.server.as_mut()?;
        let why = server.exited()?;
        let stopped = server.key.names().stopped;
        self.server = None;
        Some(format!(
            "[gg: {stopped} had stopped ({why}); started a new one]"
        ))
    }

    /// Hands a command to the server for `key` through `send`, starting the server where none
    /// runs, and once more where it had stopped meanwhile; [`Spawned::PerCommand`], with the
    /// line to show, where it cannot start or fails again. `notes` are the command's lines so
    /// far (a restart), `level` and `reasons` what the command runs under and why.
    #[allow(clippy::too_many_arguments)]
    fn hand_over(
        &mut self,
        launcher: &Launcher,
        key: &Key,
        stubs: &[PathBuf],
        level: Level,
        reasons: Vec<String>,
        mut notes: Vec<String>,
        mut send: impl FnMut(&mut Server) -> Result<ServerCommand, RunError>,
    ) -> Result<Spawned, SandboxError> {
        let Names {
            stopped,
            failed,
            alone,
            ..
        } = key.names();
        for attempt in 0..2 {
            if self.server.is_none() {
                if self.failed.as_ref() == Some(key) {
                    return Ok(Spawned::PerCommand {
                        note: self.unreported.take(),
                    });
                }
                if let Err(note) = self.start(launcher, key.clone(), stubs.to_vec()) {
                    self.unreported = None;
                    return Ok(Spawned::PerCommand { note: Some(note) });
                }
            }
            let Some(server) = &mut self.server else {
                continue;
            };
            match send(server) {
                Ok(command) => {
                    return Ok(Spawned::Served(Served {
                        command,
                        level,
                        reasons,
                        notes,
                    }));
                }
                Err(RunError::Setup(e)) => return Err(e),
                Err(RunError::Server(why)) if attempt == 0 => {
                    notes.push(format!(
                        "[gg: {stopped} had stopped ({why}); started a new one]"
                    ));
                    self.server = None;
                }
                Err(RunError::Server(why)) => {
                    self.server = None;
                    return Ok(Spawned::PerCommand {
                        note: Some(format!("[gg: {failed} failed ({why}); {alone}]")),
                    });
                }
            }
        }
        Ok(Spawned::PerCommand { note: None })
    }

    /// Starts the server for `key` on the session's launcher thread. On failure the key is
    /// remembered (not retried) and the line to show is returned.
    fn start(&mut self, launcher: &Launcher, key: Key, stubs: Vec<PathBuf>) -> Result<(), String> {
        let start_key = key.clone();
        match launcher.run(move || Server::start(start_key, stubs)) {
            Ok(server) => {
                self.starts += 1;
                self.failed = None;
                self.server = Some(server);
                Ok(())
            }
            Err(why) => {
                let Names {
                    failed, each_alone, ..
                } = key.names();
                self.failed = Some(key);
                Err(format!(
                    "[gg: {failed} could not start ({why}); {each_alone}]"
                ))
            }
        }
    }
}

/// The server's command line for `policy` at `level`, and the host mount points its
/// bubblewrap will create.
fn key_for(
    level: Level,
    policy: &Policy,
    stubs: &[PathBuf],
) -> Result<(Key, Vec<PathBuf>), SandboxError> {
    let config = ServerConfig {
        network: policy.network,
        standalone: level == Level::Landlock,
        forward: if level == Level::Bwrap {
            crate::forward(policy)
        } else {
            None
        },
        local_sockets: level == Level::Bwrap && policy.local_sockets,
        guard: false,
        read_only: !policy.workdir_writable,
    };
    if level == Level::Landlock && policy.local_sockets && policy.network.isolated() {
        // As the per-command path: without a network namespace, abstract and host sockets
        // would be reachable.
        return Err(SandboxError::InvalidPolicy(
            "local Unix sockets with an isolated network need the bubblewrap level".into(),
        ));
    }
    let json = serde_json::to_string(&config)
        .map_err(|e| SandboxError::Setup(format!("policy encoding: {e}")))?;
    match level {
        Level::Bwrap => {
            let info = PROBE
                .bwrap()
                .clone()
                .map_err(|reason| SandboxError::Unavailable {
                    backend: "bwrap",
                    reason,
                })?;
            let exe = crate::helper_exe()?;
            let inner: Vec<OsString> = vec![
                exe.clone().into_os_string(),
                helper::HELPER_FLAG.into(),
                SERVER_ARG.into(),
                json.into(),
            ];
            let plan = crate::render_bwrap(policy, &info, &exe, &inner, stubs);
            let mut argv = vec![info.path.into_os_string()];
            argv.extend(plan.args);
            let mut all_stubs = stubs.to_vec();
            all_stubs.extend(plan.stubs.into_iter().filter(|s| !stubs.contains(s)));
            Ok((
                Key {
                    level,
                    argv,
                    guard: false,
                },
                all_stubs,
            ))
        }
        _ => {
            let argv = vec![
                crate::standalone_helper_exe()?.into_os_string(),
                helper::HELPER_FLAG.into(),
                SERVER_ARG.into(),
                json.into(),
            ];
            Ok((
                Key {
                    level,
                    argv,
                    guard: false,
                },
                Vec::new(),
            ))
        }
    }
}

enum RunError {
    /// The command could not be prepared (temp directory): the caller reports it.
    Setup(SandboxError),
    /// The server did not take it.
    Server(String),
}

impl Server {
    fn start(key: Key, stubs: Vec<PathBuf>) -> Result<Server, String> {
        let temp = match key.level {
            Level::Landlock if !key.guard => {
                Some(crate::make_private_tmp().map_err(|e| format!("its temp directory: {e}"))?)
            }
            _ => None,
        };
        // Removes the temp directory on every early return below.
        let cleanup = Cleanup::new(stubs.clone(), temp.clone());
        let (ours, theirs) = seqpacket_pair().map_err(|e| format!("socketpair: {e}"))?;
        let mut cmd = Command::new(&key.argv[0]);
        cmd.args(&key.argv[1..]);
        if let Some(t) = &temp {
            // Not part of the key: the server removes it if the host dies without doing so.
            cmd.arg(t);
        }
        cmd.env_clear()
            .current_dir("/")
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Out of the terminal's process group: Ctrl-C cancels a command, it does not
            // take the session's sandbox down.
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| format!("cannot start it: {e}"))?;
        // The command still holds the server's end of the control socket: drop it, so that a
        // server that dies before it is ready closes the socket and is noticed at once.
        drop(cmd);
        let stderr = child.stderr.take();
        if let Some(err) = &stderr {
            // Read only what is there when the server has died (a command or the
            // forwarder may still hold the pipe).
            // SAFETY: fcntl on a descriptor the ChildStderr owns.
            unsafe { libc::fcntl(err.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        }
        set_recv_timeout(&ours, Some(Duration::from_secs(60)));
        let mut server = Server {
            key,
            child,
            control: ours,
            stderr,
            _cleanup: cleanup,
            temp,
            stubs,
            used: false,
            outstanding: Arc::default(),
        };
        // The server says it is ready once it stands in the namespace with its forwarder
        // running; bubblewrap failing closes the socket instead.
        let mut byte = [0u8; 1];
        // SAFETY: recv into a one-byte local buffer from a descriptor we own.
        let n = unsafe { libc::recv(server.control.as_raw_fd(), byte.as_mut_ptr().cast(), 1, 0) };
        if n != 1 || byte[0] != b'R' {
            let _ = server.child.kill();
            let _ = server.child.wait();
            return Err(server.last_words());
        }
        set_recv_timeout(&server.control, None);
        Ok(server)
    }

    /// Whether it has exited, and how.
    fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(None) => None,
            Ok(Some(_)) | Err(_) => Some(self.last_words()),
        }
    }

    /// Its exit status and the last line it wrote on stderr.
    fn last_words(&mut self) -> String {
        let status = match self.child.try_wait() {
            Ok(Some(s)) => s.to_string(),
            _ => "not responding".to_string(),
        };
        let mut bytes = Vec::new();
        if let Some(err) = &mut self.stderr {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 || bytes.len() > 65536 {
                    break;
                }
                bytes.extend_from_slice(&buf[..n]);
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        match text.lines().map(str::trim).rfind(|l| !l.is_empty()) {
            Some(line) => format!("{status}: {line}"),
            None => status,
        }
    }

    fn run(
        &mut self,
        inner: &Invocation,
        policy: &Policy,
        level: Level,
    ) -> Result<ServerCommand, RunError> {
        let request = self.request(inner, policy, level)?;
        self.send(&request).map_err(RunError::Server)
    }

    /// The encoded request for `inner` under `policy`.
    fn request(
        &self,
        inner: &Invocation,
        policy: &Policy,
        level: Level,
    ) -> Result<Vec<u8>, RunError> {
        let (private, tmpdir): (Vec<PathBuf>, Option<PathBuf>) = match (level, &self.temp) {
            (Level::Landlock, Some(temp)) => (vec![temp.clone()], Some(temp.clone())),
            (Level::Landlock, None) => {
                return Err(RunError::Server(
                    "the server has no temp directory".to_string(),
                ));
            }
            _ if policy.private_tmp => (
                vec![PathBuf::from("/tmp"), PathBuf::from("/dev/shm")],
                Some(PathBuf::from("/tmp")),
            ),
            _ => (Vec::new(), None),
        };
        let landlock = fs_rules::plan(policy, &private, level == Level::Landlock);
        if level == Level::Landlock {
            crate::refuse_unhideable(&landlock).map_err(RunError::Setup)?;
        }
        Request {
            cwd: policy.workdir.clone(),
            landlock,
            tmpdir,
            program: inner.program.clone(),
            args: inner.args.clone(),
            env: inner.env.clone(),
        }
        .encode()
        .map_err(|e| RunError::Setup(SandboxError::Setup(e)))
    }

    /// Sends the server the Landlock plan of `policy`'s commands with no command to run
    /// (a channel and no output pipe), for it to build the ruleset ahead.
    fn prepare_ahead(&self, policy: &Policy, level: Level) -> Result<(), String> {
        let request = match self.request(&placeholder(), policy, level) {
            Ok(request) => request,
            Err(RunError::Server(why)) => return Err(why),
            Err(RunError::Setup(e)) => return Err(e.to_string()),
        };
        self.send_plan(&request)
    }

    /// Sends the server an encoded request with no output pipe: it builds the request's
    /// Landlock ruleset and runs nothing.
    fn send_plan(&self, request: &[u8]) -> Result<(), String> {
        let (_channel, theirs, rest) = channel_with(request)?;
        // Small (a plan, no script): it fits the socket buffer, or it is not sent.
        if !rest.is_empty() {
            return Err("plan larger than the socket buffer".to_string());
        }
        send_fds(&self.control, &[theirs.as_raw_fd()]).map_err(|e| e.to_string())
    }

    /// Hands an encoded request to the server with the command's channel and output pipe;
    /// an error says why the server did not take it.
    fn send(&mut self, request: &[u8]) -> Result<ServerCommand, String> {
        self.used = true;
        let (output, output_w) = pipe().map_err(|e| format!("pipe: {e}"))?;
        let (mut channel, theirs, rest) = channel_with(request)?;
        send_fds(&self.control, &[theirs.as_raw_fd(), output_w.as_raw_fd()])
            .map_err(|e| format!("{}: {e}", self.last_words()))?;
        drop((theirs, output_w));
        if !rest.is_empty() {
            // A stuck server must not hang the host: the server reads the request at once.
            let _ = channel.set_write_timeout(Some(Duration::from_secs(30)));
            channel
                .write_all(rest)
                .map_err(|e| format!("sending the command: {e}"))?;
            let _ = channel.set_write_timeout(None);
        }
        Ok(ServerCommand {
            output,
            channel,
            ticket: Ticket::new(&self.outstanding),
        })
    }
}

/// A command's channel (our end, the server's end) with as much of `request` already in it
/// as the socket buffers hold (all of it for any ordinary command), so the server finds it
/// complete when the descriptors arrive instead of going back to sleep until it comes; and
/// what did not fit.
fn channel_with(request: &[u8]) -> Result<(UnixStream, UnixStream, &[u8]), String> {
    let (channel, theirs) = UnixStream::pair().map_err(|e| format!("socketpair: {e}"))?;
    let mut rest = request;
    channel
        .set_nonblocking(true)
        .map_err(|e| format!("sending the command: {e}"))?;
    while !rest.is_empty() {
        match (&channel).write(rest) {
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => return Err(format!("sending the command: {e}")),
        }
    }
    channel
        .set_nonblocking(false)
        .map_err(|e| format!("sending the command: {e}"))?;
    Ok((channel, theirs, rest))
}

fn seqpacket_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0i32; 2];
    // SAFETY: socketpair writes two descriptors into the local array.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two descriptors into the local array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn set_recv_timeout(sock: &OwnedFd, timeout: Option<Duration>) {
    let tv = timeout.map_or(
        libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
        |d| libc::timeval {
            tv_sec: d.as_secs() as libc::time_t,
            tv_usec: 0,
        },
    );
    // SAFETY: setsockopt reads one timeval from a local.
    unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server is idle only when every command handed to it has had its report read: one
    /// outstanding, or one given up before its report (its tree may still be going down),
    /// keeps the session's end waiting for the server's own stop.
    #[test]
    fn a_server_is_idle_only_when_every_command_reported() {
        let outstanding = Arc::new(Outstanding::default());
        assert!(outstanding.idle());
        let first = Ticket::new(&outstanding);
        let second = Ticket::new(&outstanding);
        assert!(!outstanding.idle(), "two commands running");
        first.ended();
        assert!(!outstanding.idle(), "one command still running");
        second.ended();
        assert!(outstanding.idle(), "both reported");
        let abandoned = Ticket::new(&outstanding);
        drop(abandoned);
        assert!(!outstanding.idle(), "a command given up before its report");
        let later = Ticket::new(&outstanding);
        later.ended();
        assert!(!outstanding.idle(), "a later report does not undo it");
    }
}
