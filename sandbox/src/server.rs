//! The per-session sandbox: one bubblewrap namespace (or, at the landlock level, one helper
//! process) started at the first sandboxed command of a session, with a small command server
//! inside it that runs every later command of the session.
//!
//! Starting bubblewrap and re-executing the host binary as the helper costs several
//! milliseconds per command; forking from a process that already stands in the namespace costs a
//! fraction of that. Each command still gets every restriction of the per-command path, applied
//! in its own process after the fork: `no_new_privs`, Landlock, no capabilities, a new session
//! and process group, its own working directory, environment and output pipe. The Landlock
//! ruleset comes with the command's plan and is built by the server from the live tree, then
//! reused for later commands with the same plan while that tree is unchanged
//! ([`crate::fs_rules::Prepared`]); each command applies its own copy. The seccomp filters, the
//! same for every command of a server (their network mode is part of the server's key), are
//! installed once on the server and inherited.
//!
//! Process layout inside the namespace:
//!
//! ```text
//! server (reads requests on fd 0; child subreaper)
//!  ├─ command (setsid, restricted, exec'd; itself a child subreaper)
//!  │   └─ whatever it starts; its orphans are re-parented to the command
//!  └─ another command running at the same time
//! ```
//!
//! The server forks each command itself and waits for all of them in one `poll` (the control
//! socket, a signalfd for `SIGCHLD` and the stop signals, and every running command's channel).
//! When a command ends, the server kills its process group and every one of its own children
//! that is not a running command (a command is the subreaper of its own orphans while it runs,
//! so those children can only be left over from a command that ended: they were re-parented to
//! the server when it did), reaps them, and only then reports the wait status. It does the same
//! at once when the host closes the command's channel (timeout, cancellation), and for every
//! command when it stops. So nothing a command started outlives it, and a later command cannot
//! see it. (Until the sixth session a supervisor process per command did this; folding it into the
//! server saves a fork and a hand-over between processes on every command.)
//!
//! Protocol: the control socket (a `SOCK_SEQPACKET` pair; the server's end is its stdin) carries
//! one byte per command with two descriptors attached: the command's channel (a stream socket)
//! and the write end of its output pipe. The request (`Request`, length-prefixed) is on the
//! channel, written before the descriptors are sent when it fits the socket buffer; the server
//! answers `exit <wait status>\n` and closes it. A channel sent without an output pipe carries
//! only a plan: the server builds its Landlock ruleset ahead of the first command.
//!
//! The bubblewrap mounts are fixed when the server starts. Before each command the host renders
//! the command's policy again; when the arguments differ (a `.git` created meanwhile, another
//! writable root, a changed network policy) the server is replaced by a new one.

use std::ffi::OsString;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::policy::Network;

/// Second argument of the helper that selects the command server.
pub const SERVER_ARG: &str = "--server";

/// What the server itself applies, passed as one JSON argument.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerConfig {
    /// Selects the seccomp socket rules (part of the key: a change restarts the server).
    pub network: Network,
    /// No bubblewrap around the server (the landlock level).
    pub standalone: bool,
    /// Inside bubblewrap with network [`Network::Proxy`]: the proxy forwarder to start, once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward: Option<crate::netfwd::Forward>,
    /// Allow `socket(AF_UNIX)` although the network is isolated ([`crate::Policy::local_sockets`];
    /// bubblewrap level only).
    #[serde(default)]
    pub local_sockets: bool,
}

/// One command, as the server receives it.
#[cfg(target_os = "linux")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub cwd: PathBuf,
    pub landlock: crate::fs_rules::LandlockPlan,
    pub tmpdir: Option<PathBuf>,
    pub program: OsString,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
}

#[cfg(target_os = "linux")]
#[derive(Serialize, Deserialize)]
struct RequestHead {
    cwd: PathBuf,
    landlock: crate::fs_rules::LandlockPlan,
    tmpdir: Option<PathBuf>,
}

/// The most a request may take (a script is at most 1 MiB; environments are small).
#[cfg(target_os = "linux")]
const MAX_REQUEST: usize = 16 << 20;

#[cfg(target_os = "linux")]
impl Request {
    /// `[u32 total][u32 head len][head JSON][u32 argc]([u32 len][bytes])*[u32 envc]([u32][k][u32][v])*`
    pub(crate) fn encode(&self) -> Result<Vec<u8>, String> {
        use std::os::unix::ffi::OsStrExt;
        fn put(out: &mut Vec<u8>, bytes: &[u8]) {
            out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(bytes);
        }
        let head = serde_json::to_vec(&RequestHead {
            cwd: self.cwd.clone(),
            landlock: self.landlock.clone(),
            tmpdir: self.tmpdir.clone(),
        })
        .map_err(|e| format!("request encoding: {e}"))?;
        let mut body = Vec::new();
        put(&mut body, &head);
        let argv: Vec<&OsString> = std::iter::once(&self.program).chain(&self.args).collect();
        body.extend_from_slice(&(argv.len() as u32).to_le_bytes());
        for a in argv {
            put(&mut body, a.as_bytes());
        }
        body.extend_from_slice(&(self.env.len() as u32).to_le_bytes());
        for (k, v) in &self.env {
            put(&mut body, k.as_bytes());
            put(&mut body, v.as_bytes());
        }
        if body.len() > MAX_REQUEST {
            return Err(format!("command too large ({} bytes)", body.len()));
        }
        let mut out = (body.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// The inverse of [`Request::encode`] for the body (after the total length).
    pub(crate) fn decode(body: &[u8]) -> Option<Request> {
        use std::os::unix::ffi::OsStringExt;
        struct Reader<'a>(&'a [u8]);
        impl Reader<'_> {
            fn number(&mut self) -> Option<usize> {
                let (n, rest) = self.0.split_first_chunk::<4>()?;
                self.0 = rest;
                Some(u32::from_le_bytes(*n) as usize)
            }
            fn bytes(&mut self) -> Option<Vec<u8>> {
                let n = self.number()?;
                if n > self.0.len() {
                    return None;
                }
                let (b, rest) = self.0.split_at(n);
                self.0 = rest;
                Some(b.to_vec())
            }
        }
        let mut r = Reader(body);
        let head: RequestHead = serde_json::from_slice(&r.bytes()?).ok()?;
        let argc = r.number()?;
        let mut argv = Vec::new();
        for _ in 0..argc {
            argv.push(OsString::from_vec(r.bytes()?));
        }
        let envc = r.number()?;
        let mut env = Vec::new();
        for _ in 0..envc {
            let k = OsString::from_vec(r.bytes()?);
            let v = OsString::from_vec(r.bytes()?);
            env.push((k, v));
        }
        if !r.0.is_empty() || argv.is_empty() {
            return None;
        }
        let program = argv.remove(0);
        Some(Request {
            cwd: head.cwd,
            landlock: head.landlock,
            tmpdir: head.tmpdir,
            program,
            args: argv,
            env,
        })
    }
}

/// How a served command ended, as its server reported it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal.
    Signalled(i32),
    /// The server stopped it because the host asked (closed the channel), or vanished
    /// without a report.
    Stopped,
}

impl Ended {
    /// Parses the server's report (`exit <wait status>`); anything else is [`Ended::Stopped`].
    pub fn parse(report: &[u8]) -> Ended {
        let status = std::str::from_utf8(report)
            .ok()
            .and_then(|t| t.trim().strip_prefix("exit "))
            .and_then(|n| n.parse::<i32>().ok());
        match status {
            Some(s) if libc::WIFEXITED(s) => Ended::Exited(libc::WEXITSTATUS(s)),
            Some(s) if libc::WIFSIGNALED(s) => Ended::Signalled(libc::WTERMSIG(s)),
            _ => Ended::Stopped,
        }
    }
}

#[cfg(target_os = "linux")]
pub use host::{Served, ServerCommand, SessionServer, Spawned};

/// The host side: starting, checking, replacing the server, and handing it commands.
#[cfg(target_os = "linux")]
mod host {
    use std::ffi::OsString;
    use std::io::{Read, Write};
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::os::unix::net::UnixStream;
    use std::os::unix::process::CommandExt;
    use std::path::PathBuf;
    use std::process::{Child, Command, Stdio};
    use std::sync::Mutex;
    use std::time::Duration;

    use super::{Request, SERVER_ARG, ServerConfig};
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
    }

    impl Drop for Server {
        fn drop(&mut self) {
            // At the landlock level the server itself kills what its running commands started
            // (there is no namespace to tear down): ask it to stop (`SIGTERM`) and give it a
            // moment. The kill covers a server that does not stop, and is all bubblewrap needs
            // (its `--die-with-parent` init takes the whole PID namespace down).
            if self.key.level == Level::Landlock && matches!(self.child.try_wait(), Ok(None)) {
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
            // What fits in the channel's socket buffer is written without waiting for the server.
            const SMALL: usize = 64 << 10;
            let mut reasons = Vec::new();
            let level = crate::choose(&PROBE, backend, &mut reasons).ok()?;
            let mut state = self.state.try_lock().ok()?;
            let server = state.server.as_mut()?;
            if server.key.level != level || server.exited().is_some() {
                return None;
            }
            let (key, _) = key_for(level, policy, &server.stubs).ok()?;
            if server.key != key {
                return None;
            }
            let request = match server.request(inner, command_policy, level) {
                Ok(request) if request.len() <= SMALL => request,
                Ok(_) | Err(RunError::Server(_)) => return None,
                Err(RunError::Setup(e)) => return Some(Err(e)),
            };
            let command = server.send(&request).ok()?;
            Some(Ok(Spawned::Served(super::Served {
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
            let (key, plan_stubs) = key_for(level, policy, &stubs)?;
            let mut notes = Vec::new();
            if let Some(server) = &mut state.server {
                if let Some(why) = server.exited() {
                    notes.push(format!(
                        "[gg: the sandbox server had stopped ({why}); started a new one]"
                    ));
                    state.server = None;
                } else if server.key != key && !server.used {
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
            for attempt in 0..2 {
                if state.server.is_none() {
                    if state.failed.as_ref() == Some(&key) {
                        return Ok(Spawned::PerCommand {
                            note: state.unreported.take(),
                        });
                    }
                    if let Err(note) = state.start(&self.launcher, key.clone(), plan_stubs.clone())
                    {
                        state.unreported = None;
                        return Ok(Spawned::PerCommand { note: Some(note) });
                    }
                }
                let Some(server) = &mut state.server else {
                    continue;
                };
                match server.run(inner, command_policy, level) {
                    Ok(command) => {
                        return Ok(Spawned::Served(super::Served {
                            command,
                            level,
                            reasons,
                            notes,
                        }));
                    }
                    Err(RunError::Setup(e)) => return Err(e),
                    Err(RunError::Server(why)) if attempt == 0 => {
                        notes.push(format!(
                            "[gg: the sandbox server had stopped ({why}); started a new one]"
                        ));
                        state.server = None;
                    }
                    Err(RunError::Server(why)) => {
                        state.server = None;
                        return Ok(Spawned::PerCommand {
                            note: Some(format!(
                                "[gg: the sandbox command server failed ({why}); this command \
                                 runs in a sandbox of its own]"
                            )),
                        });
                    }
                }
            }
            Ok(Spawned::PerCommand { note: None })
        }
    }

    impl State {
        /// Starts the server for `key` on the session's launcher thread. On failure the key is
        /// remembered (not retried) and the line to show is returned.
        fn start(
            &mut self,
            launcher: &Launcher,
            key: Key,
            stubs: Vec<PathBuf>,
        ) -> Result<(), String> {
            let start_key = key.clone();
            match launcher.run(move || Server::start(start_key, stubs)) {
                Ok(server) => {
                    self.starts += 1;
                    self.failed = None;
                    self.server = Some(server);
                    Ok(())
                }
                Err(why) => {
                    self.failed = Some(key);
                    Err(format!(
                        "[gg: the sandbox command server could not start ({why}); each command \
                         runs in a sandbox of its own]"
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
                Ok((Key { level, argv }, all_stubs))
            }
            _ => {
                let argv = vec![
                    crate::standalone_helper_exe()?.into_os_string(),
                    helper::HELPER_FLAG.into(),
                    SERVER_ARG.into(),
                    json.into(),
                ];
                Ok((Key { level, argv }, Vec::new()))
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
                Level::Landlock => Some(
                    crate::make_private_tmp().map_err(|e| format!("its temp directory: {e}"))?,
                ),
                _ => None,
            };
            // Removes the temp directory on every early return below.
            let cleanup = Cleanup {
                stubs: stubs.clone(),
                temp_dir: temp.clone(),
            };
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
            };
            // The server says it is ready once it stands in the namespace with its forwarder
            // running; bubblewrap failing closes the socket instead.
            let mut byte = [0u8; 1];
            // SAFETY: recv into a one-byte local buffer from a descriptor we own.
            let n =
                unsafe { libc::recv(server.control.as_raw_fd(), byte.as_mut_ptr().cast(), 1, 0) };
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
            let landlock = fs_rules::plan(policy, &private);
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
            let placeholder = Invocation {
                program: OsString::from("true"),
                args: Vec::new(),
                env: Vec::new(),
            };
            let request = match self.request(&placeholder, policy, level) {
                Ok(request) => request,
                Err(RunError::Server(why)) => return Err(why),
                Err(RunError::Setup(e)) => return Err(e.to_string()),
            };
            let (_channel, theirs, rest) = channel_with(&request)?;
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
            Ok(ServerCommand { output, channel })
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

    /// Sends one byte with `fds` attached.
    pub(super) fn send_fds(sock: &impl AsRawFd, fds: &[i32]) -> std::io::Result<()> {
        let payload = [b'C'];
        let mut iov = libc::iovec {
            iov_base: payload.as_ptr() as *mut libc::c_void,
            iov_len: 1,
        };
        let bytes = std::mem::size_of_val(fds);
        let mut control = [0u64; 16];
        // SAFETY: CMSG_SPACE is a pure size computation.
        let space = unsafe { libc::CMSG_SPACE(bytes as u32) } as usize;
        if space > std::mem::size_of_val(&control) {
            return Err(std::io::Error::other("too many descriptors"));
        }
        // SAFETY: an all-zero msghdr is valid; the pointers set below outlive the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: the control buffer is large enough for one header with `bytes` of data
        // (checked above) and suitably aligned (u64); CMSG_* stay inside it.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(bytes as u32) as _;
            std::ptr::copy_nonoverlapping(
                fds.as_ptr(),
                libc::CMSG_DATA(c).cast::<i32>(),
                fds.len(),
            );
        }
        loop {
            // SAFETY: msg points at live local buffers; MSG_NOSIGNAL turns a dead peer into EPIPE.
            let r = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
            if r >= 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
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
}

/// The server, inside the sandbox (the helper process).
#[cfg(target_os = "linux")]
pub(crate) mod inside {
    use std::io::{Read, Write};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::os::unix::net::UnixStream;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, ExitCode};

    use super::{Request, ServerConfig};
    use crate::helper::HelperError;
    use crate::helper::imp as h;
    use crate::policy::Network;

    pub(crate) fn serve(
        config_json: &str,
        temp: Option<std::path::PathBuf>,
    ) -> Result<ExitCode, HelperError> {
        let config: ServerConfig = serde_json::from_str(config_json)
            .map_err(|e| HelperError::Usage(format!("bad server config: {e}")))?;
        // Only gg's own temp directory, by its name, is ever removed.
        let temp = temp.filter(|t| {
            config.standalone
                && t.is_absolute()
                && t.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(crate::PRIVATE_TMP_PREFIX))
        });
        let served = serve_loop(&config);
        if let Some(t) = &temp {
            let _ = std::fs::remove_dir_all(t);
        }
        served
    }

    /// How long the server waits, idle and without a spare, before building the last plan's
    /// ruleset again (a little more than the two seconds after which a changed directory's
    /// times can be trusted).
    const SPARE_RETRY_MS: libc::c_int = 2500;

    /// A command the server forked and has not yet seen end.
    struct Live {
        pid: libc::pid_t,
        /// Its channel: the report goes here; the host closing it stops the command.
        channel: UnixStream,
    }

    /// The signals the server waits for on its signalfd (blocked, so they are only read there):
    /// children ending, and being told to stop (the landlock-level server's parent-death
    /// signal is `SIGTERM`).
    fn server_signals() -> libc::sigset_t {
        // SAFETY: sigemptyset/sigaddset initialise and fill a local set.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
                libc::sigaddset(&mut set, sig);
            }
            set
        }
    }

    fn serve_loop(config: &ServerConfig) -> Result<ExitCode, HelperError> {
        let filters =
            crate::seccomp::programs_with(config.network, config.local_sockets, config.standalone)
                .map_err(|e| HelperError::Seccomp(e.to_string()))?;
        h::close_inherited_fds()?;
        // Block the signals the loop reads from its signalfd before anything can send them;
        // each command gets the old mask back before it runs.
        let signal_set = server_signals();
        // SAFETY: sigprocmask with a local, initialised set; the old mask goes to a local.
        let old_mask = unsafe {
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigprocmask(libc::SIG_BLOCK, &signal_set, &mut old);
            old
        };
        // SAFETY: signalfd over the initialised set; the descriptor is owned from here on.
        let signals = unsafe { libc::signalfd(-1, &signal_set, libc::SFD_CLOEXEC) };
        if signals < 0 {
            return Err(HelperError::last_os("signalfd"));
        }
        // SAFETY: a descriptor signalfd just returned, owned by nothing else.
        let signals = unsafe { OwnedFd::from_raw_fd(signals) };
        if config.standalone {
            // The host dying closes the control socket too; the signal also covers a server
            // that is not reading it. SIGTERM rather than SIGKILL, so that the server still
            // stops its commands' trees and removes the session's temp directory.
            // SAFETY: prctl with integer arguments.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0) };
            if config.network == Network::Proxy {
                // Without a namespace only Landlock's TCP rules (ABI 4) keep the commands from
                // connecting anywhere but the proxy: refuse rather than run with the network open.
                let abi = crate::fs_rules::kernel_abi().unwrap_or(0);
                if abi < 4 {
                    return Err(HelperError::Landlock(format!(
                        "the network allow-list needs Landlock ABI 4 at this level (kernel has \
                         {abi}); use network off or on"
                    )));
                }
            }
        }
        if let Some(forward) = &config.forward {
            crate::netfwd::start(forward)?;
        }
        // What a command leaves behind when it ends comes here (not to bubblewrap's init or
        // the host's init), to be killed (`settle`). After the forwarder's start: it is
        // detached on purpose and must not be taken for a leftover.
        // SAFETY: prctl with integer arguments.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        // Every command of this server gets the same seccomp filters, so the server installs
        // them on itself once (after starting the forwarder, which needs the sockets they
        // refuse) and every command forked from it inherits them: loading and compiling the
        // programs cost about 0.3 ms per command. Nothing the server does needs a refused call.
        h::set_no_new_privs()?;
        // Likewise the capabilities (bounding and ambient sets, securebits, the sets
        // themselves), inherited by every fork and kept across its exec: one drop here
        // rather than some forty system calls per command. Nothing the server does needs one.
        h::drop_capabilities()?;
        crate::seccomp::apply(&filters).map_err(|e| HelperError::Seccomp(e.to_string()))?;
        // SAFETY: fd 0 is the control socket the host gave us; a one-byte send from a local.
        let ready = unsafe { libc::send(0, b"R".as_ptr().cast(), 1, libc::MSG_NOSIGNAL) };
        if ready != 1 {
            return Err(HelperError::last_os("ready"));
        }
        let mut rulesets = Rulesets::default();
        let mut live: Vec<Live> = Vec::new();
        let mut spare: Option<Spare> = None;
        let served = loop {
            if spare.is_none() {
                // Fork and restrict the next command's process now, off the path from request
                // to exec: right after a hand-over, while gg only waits for the command's
                // output, rather than when the command ends, when gg, the model's answer and
                // the spare would all want the processors at once.
                spare = Spare::fork(config, &mut rulesets, &old_mask);
            }
            let mut polls = Vec::with_capacity(2 + live.len());
            for fd in [0, signals.as_raw_fd()]
                .into_iter()
                .chain(live.iter().map(|l| l.channel.as_raw_fd()))
            {
                polls.push(libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                });
            }
            // Without a spare although a plan is known, its ruleset could not be reused (a
            // listed directory changed in the last two seconds, see `fs_rules::Stamp::recent`):
            // build it again once that has settled, so that the next command finds a spare.
            let timeout = if spare.is_none() && rulesets.last.is_some() {
                SPARE_RETRY_MS
            } else {
                -1
            };
            // SAFETY: poll over a local array of initialised pollfds.
            let r = unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, timeout) };
            if r < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                break Err(HelperError::last_os("poll"));
            }
            if r == 0 {
                rulesets.refresh();
                continue;
            }
            // The host closed a command's channel (timeout, cancellation): stop that command
            // now. (Its tree is killed as it ends, below.) Newest first, so indices hold.
            let mut ended = false;
            for i in (0..live.len()).rev() {
                if polls[2 + i].revents != 0 {
                    let stopped = live.swap_remove(i);
                    stop_command(stopped.pid);
                    ended = true;
                }
            }
            if polls[1].revents != 0 {
                if !read_signals(&signals) {
                    break Ok(ExitCode::SUCCESS);
                }
                ended = true;
            }
            if ended {
                settle(&mut live, &mut spare);
            }
            if polls[0].revents != 0 {
                match recv_fds(0) {
                    Ok(Some(fds)) => {
                        if let Some(started) =
                            start(fds, config, &mut rulesets, &mut spare, &old_mask)
                        {
                            live.push(started);
                        }
                    }
                    Ok(None) => break Ok(ExitCode::SUCCESS),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(error) => {
                        break Err(HelperError::Setup {
                            step: "control socket",
                            error,
                        });
                    }
                }
            }
        };
        // Stopping (the host is gone or asked): nothing a command started outlives the server.
        for command in live.drain(..) {
            stop_command(command.pid);
        }
        h::kill_all_children();
        served
    }

    /// Reads the pending signals; false when one of them asks the server to stop.
    fn read_signals(signals: &OwnedFd) -> bool {
        let mut info = [0u8; 128 * 8];
        // SAFETY: reading whole signalfd_siginfo records (128 bytes each) into a local buffer.
        let n = unsafe { libc::read(signals.as_raw_fd(), info.as_mut_ptr().cast(), info.len()) };
        if n <= 0 {
            return true;
        }
        info[..n as usize].chunks_exact(128).all(|record| {
            let signo = u32::from_ne_bytes([record[0], record[1], record[2], record[3]]) as i32;
            signo == libc::SIGCHLD
        })
    }

    /// Kills a command and its process group (it called `setsid`, so the group id is its pid);
    /// it is not reaped yet, so its pid cannot have been reused.
    fn stop_command(pid: libc::pid_t) {
        // SAFETY: kill with the pid and the negative pid of our unreaped child.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
            libc::kill(pid, libc::SIGKILL);
        }
    }

    /// Handles every child that ended: a live command's end is reported on its channel once
    /// its process group is killed; what a command left behind is killed and reaped.
    ///
    /// Each command is a child subreaper (set before its `execve`, which keeps it), so while
    /// it runs, the processes it orphans come to it, not to the server. Any child of the
    /// server that is not a live command is therefore left over from a command that ended
    /// (re-parented here when it did), and is killed; its own children come here in turn as
    /// it dies, and the loop goes on until none is left. Concurrent commands keep theirs.
    fn settle(live: &mut Vec<Live>, spare: &mut Option<Spare>) {
        loop {
            let mut ended = false;
            loop {
                // Which child ended, without reaping it: its process group is killed while its
                // pid cannot be reused.
                // SAFETY: an all-zero siginfo_t is valid; waitid writes into the local.
                let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
                // SAFETY: waitid with a valid pointer to a local siginfo_t.
                let r = unsafe {
                    libc::waitid(
                        libc::P_ALL,
                        0,
                        &mut info,
                        libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                    )
                };
                // SAFETY: si_pid is valid to read after waitid filled the record (0 if none).
                let pid = unsafe { info.si_pid() };
                if r < 0 || pid <= 0 {
                    break;
                }
                let command = live.iter().position(|l| l.pid == pid);
                if command.is_some() {
                    // SAFETY: kill the ended command's process group (see `stop_command`).
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
                }
                let mut status = 0;
                // SAFETY: waitpid reaps the child waitid reported, into a local integer.
                unsafe { libc::waitpid(pid, &mut status, 0) };
                if spare.as_ref().is_some_and(|s| s.pid == pid) {
                    // It cannot run a command any more; the next idle moment forks another.
                    *spare = None;
                }
                if let Some(i) = command {
                    let mut command = live.swap_remove(i);
                    ended = true;
                    kill_leftovers(live, spare.as_ref());
                    let _ = command
                        .channel
                        .write_all(format!("exit {status}\n").as_bytes());
                    // The host reads the report to the end: end it now.
                    let _ = command.channel.shutdown(std::net::Shutdown::Both);
                }
            }
            if !ended && !kill_leftovers(live, spare.as_ref()) {
                return;
            }
        }
    }

    /// Kills the server's children that are not live commands or the spare (see [`settle`])
    /// and what they leave; whether there were any.
    fn kill_leftovers(live: &[Live], spare: Option<&Spare>) -> bool {
        let keep: Vec<i32> = live
            .iter()
            .map(|l| l.pid)
            .chain(spare.map(|s| s.pid))
            .collect();
        h::kill_children_except(&keep)
    }

    /// Takes one command from the host: its channel and output pipe, then its request; hands
    /// it to the spare when the spare was restricted for the same, still current, ruleset, and
    /// forks it otherwise. `None` when the message or the request is unusable (the host reads
    /// the closed channel as a command that did not run) or the fork failed.
    fn start(
        fds: Vec<OwnedFd>,
        config: &ServerConfig,
        rulesets: &mut Rulesets,
        spare: &mut Option<Spare>,
        old_mask: &libc::sigset_t,
    ) -> Option<Live> {
        let mut fds = fds.into_iter();
        let mut channel = UnixStream::from(fds.next()?);
        // A host that sent the descriptors writes the request at once; one that cannot
        // closes the channel, and the command is dropped.
        let (request, body) = read_request(&mut channel)?;
        rulesets.prepare(&request.landlock);
        // A channel without an output pipe only asks for the ruleset to be built ahead (the
        // host's warm-up): nothing runs. (The spare forked next applies it.)
        let Some(output) = fds.next() else {
            if let Some(stale) = spare.take() {
                stale.discard();
            }
            return None;
        };
        if let Some(ready) = spare.take() {
            if ready.fits(&request.landlock, rulesets) && ready.hand_over(&output, &body).is_ok() {
                return Some(Live {
                    pid: ready.pid,
                    channel,
                });
            }
            ready.discard();
        }
        // SAFETY: the server is single-threaded (the helper runs first in main and the
        // forwarder lives in a process of its own), so the child may run Rust code.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return None;
        }
        if pid == 0 {
            drop(channel);
            let (null, restricted) = restrict_child(old_mask, &request.landlock, config, rulesets);
            let code = exec_request(request, null, &output, restricted);
            // SAFETY: leave without running the server's destructors.
            unsafe { libc::_exit(code) };
        }
        Some(Live { pid, channel })
    }

    /// In a process forked for a command (or as the spare), before its request is needed:
    /// close the control socket (it must not hold it), restore the signal mask, die with the
    /// server, become the subreaper of what it starts (kept across execve; see `settle`), open
    /// `/dev/null` (its stdin, before Landlock applies; -1 if it cannot be), start its own
    /// session and apply `plan`'s Landlock ruleset — this process's copy of the server's when
    /// it has one for the plan (fork copied the descriptor), built here otherwise. The seccomp
    /// filters and the dropped capabilities are inherited from the server (see `serve_loop`).
    /// One function for both, so that a spare applies exactly what a forked command does.
    fn restrict_child(
        old_mask: &libc::sigset_t,
        plan: &crate::fs_rules::LandlockPlan,
        config: &ServerConfig,
        rulesets: &mut Rulesets,
    ) -> (RawFd, Result<(), HelperError>) {
        // SAFETY: close, sigprocmask, prctl, open and setsid with a descriptor number, an
        // initialised set, integer arguments and a NUL-terminated literal path.
        let null = unsafe {
            libc::close(0);
            libc::sigprocmask(libc::SIG_SETMASK, old_mask, std::ptr::null_mut());
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            libc::setsid();
            null
        };
        let ruleset = rulesets
            .take_for(plan)
            .map_or_else(|| crate::fs_rules::prepare(plan), Ok);
        let mut restricted = h::restrict_landlock(ruleset, config.standalone).map(drop);
        if restricted.is_ok() && plan.no_sockets && config.network != Network::Off {
            // A command run read-only in a server whose filters allow sockets: one more filter
            // of its own, stacked on the server's, refuses every socket (Network::Off's rules).
            // Built here, after the fork: the server is single-threaded, and only read-only
            // commands of `--sandbox` sessions with a network pay for it.
            restricted = crate::seccomp::programs_with(Network::Off, false, config.standalone)
                .map_err(|e| HelperError::Seccomp(e.to_string()))
                .and_then(|filters| {
                    crate::seccomp::apply(&filters).map_err(|e| HelperError::Seccomp(e.to_string()))
                });
        }
        (null, restricted)
    }

    /// The next command's process, forked and restricted ahead (right after the previous
    /// hand-over), waiting for its request.
    ///
    /// Forking, a new session and applying Landlock took about half a millisecond between a
    /// request and its exec; a spare has done all of it before the request comes. It applies
    /// exactly what a command forked for the request would ([`restrict_child`]): the server
    /// hands it a command only when the request's Landlock plan is the one the spare applied
    /// and that ruleset is still current ([`fs_rules::Prepared::is_current`], checked at
    /// hand-over, as for a forked command), and discards it otherwise. It is in a
    /// Landlock domain of its own and in a session of its own, so no command can signal or
    /// trace it; a spare whose restriction failed still takes its command, and reports the
    /// failure as the forked command would (exit 125).
    ///
    /// [`fs_rules::Prepared::is_current`]: crate::fs_rules::Prepared::is_current
    struct Spare {
        pid: libc::pid_t,
        /// The server's end of the hand-over socket.
        handover: UnixStream,
        plan: crate::fs_rules::LandlockPlan,
        /// Which of the server's rulesets it applied ([`Rulesets::generation`]).
        generation: u64,
    }

    impl Spare {
        /// Forks the spare for the last plan the server built a ruleset for; `None` when there
        /// is none yet, it serves one command only, or the fork failed.
        fn fork(
            config: &ServerConfig,
            rulesets: &mut Rulesets,
            old_mask: &libc::sigset_t,
        ) -> Option<Spare> {
            // A ruleset that serves one command only would be discarded at the request. Whether
            // the tree changed is not checked again here: `Rulesets::prepare` has just checked it
            // for the request handed over, and checks it again at the next one, where a spare
            // restricted by a ruleset gone stale since is discarded (`Spare::fits`).
            let plan = rulesets
                .last
                .as_ref()
                .filter(|(_, ruleset)| ruleset.is_reusable())
                .map(|(plan, _)| plan.clone())?;
            let generation = rulesets.generation;
            let (ours, theirs) = UnixStream::pair().ok()?;
            // SAFETY: as for a command's fork in `start`: the server is single-threaded.
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                return None;
            }
            if pid == 0 {
                drop(ours);
                // Until its command comes, no process of the same user can trace it or read
                // its memory through /proc (its exec makes the command dumpable again).
                // SAFETY: prctl with integer arguments.
                unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
                let (null, restricted) = restrict_child(old_mask, &plan, config, rulesets);
                // It waits for as long as the model thinks: it holds nothing of the server's
                // (the channels of running commands) meanwhile.
                // (Should that fail, its exec closes them: `exec_request`.)
                let _ = h::close_inherited_fds_except(&[theirs.as_raw_fd(), null]);
                let code = match receive_handover(theirs) {
                    Some((request, output)) => exec_request(request, null, &output, restricted),
                    // Discarded, or the server is gone: nothing ran.
                    None => 0,
                };
                // SAFETY: leave without running the server's destructors.
                unsafe { libc::_exit(code) };
            }
            drop(theirs);
            Some(Spare {
                pid,
                handover: ours,
                plan,
                generation,
            })
        }

        /// Whether it may run a command whose plan is `plan`, now that `rulesets` has been
        /// brought up to date for it: the same plan, and no ruleset built since the spare's
        /// (`Rulesets::prepare` builds one whenever the last is for another plan, missing or no
        /// longer current).
        fn fits(&self, plan: &crate::fs_rules::LandlockPlan, rulesets: &Rulesets) -> bool {
            &self.plan == plan && rulesets.generation == self.generation
        }

        /// Gives it the command's output pipe and request: from here on it is that command.
        /// On failure it must be discarded.
        fn hand_over(&self, output: &OwnedFd, body: &[u8]) -> std::io::Result<()> {
            super::host::send_fds(&self.handover, &[output.as_raw_fd()])?;
            (&self.handover).write_all(&(body.len() as u32).to_le_bytes())?;
            (&self.handover).write_all(body)
        }

        /// Kills and reaps it (it has run nothing).
        fn discard(self) {
            // SAFETY: kill and waitpid on our own unreaped child (only this process reaps, and
            // `settle` forgets a spare it reaps), into a local integer.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                let mut status = 0;
                libc::waitpid(self.pid, &mut status, 0);
            }
        }
    }

    /// In the spare: waits for its command (the output pipe, then the request); `None` when
    /// the server closed the socket instead.
    fn receive_handover(handover: UnixStream) -> Option<(Request, OwnedFd)> {
        let output = recv_fds(handover.as_raw_fd()).ok()??.into_iter().next()?;
        let mut handover = handover;
        let (request, _) = read_request(&mut handover)?;
        Some((request, output))
    }

    /// The Landlock ruleset of the last plan, built by the server and applied by each command
    /// forked from it while [`fs_rules::Prepared::is_current`] holds (see there for why).
    ///
    /// [`fs_rules::Prepared::is_current`]: crate::fs_rules::Prepared::is_current
    #[derive(Default)]
    struct Rulesets {
        last: Option<(crate::fs_rules::LandlockPlan, crate::fs_rules::Prepared)>,
        /// Counts the rulesets built: a spare fits only the one it applied.
        generation: u64,
    }

    impl Rulesets {
        /// Makes sure the ruleset for `plan` is built and current. A plan that cannot be built
        /// here leaves none, and the command builds it itself (and reports why it failed).
        fn prepare(&mut self, plan: &crate::fs_rules::LandlockPlan) {
            let current = self
                .last
                .as_ref()
                .is_some_and(|(p, r)| p == plan && r.is_current());
            if !current {
                self.generation += 1;
                self.last = crate::fs_rules::prepare(plan)
                    .ok()
                    .map(|r| (plan.clone(), r));
            }
        }

        /// Builds the last plan's ruleset again if it is no longer current.
        fn refresh(&mut self) {
            if let Some(plan) = self.last.as_ref().map(|(plan, _)| plan.clone()) {
                self.prepare(&plan);
            }
        }

        fn take_for(
            &mut self,
            plan: &crate::fs_rules::LandlockPlan,
        ) -> Option<crate::fs_rules::Prepared> {
            self.last.take().filter(|(p, _)| p == plan).map(|(_, r)| r)
        }
    }

    /// Reads one length-prefixed request from a command's channel, with its encoded body.
    fn read_request(channel: &mut UnixStream) -> Option<(Request, Vec<u8>)> {
        let mut len = [0u8; 4];
        channel.read_exact(&mut len).ok()?;
        let len = u32::from_le_bytes(len) as usize;
        if len > super::MAX_REQUEST {
            return None;
        }
        let mut body = vec![0u8; len];
        channel.read_exact(&mut body).ok()?;
        Some((Request::decode(&body)?, body))
    }

    /// Receives one message; `None` at end of file (the host is gone).
    fn recv_fds(sock: RawFd) -> std::io::Result<Option<Vec<OwnedFd>>> {
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut control = [0u64; 16];
        // SAFETY: an all-zero msghdr is valid; the pointers set below outlive the call.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: msg points at live local buffers.
        let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut fds = Vec::new();
        // SAFETY: walking the control messages the kernel wrote into `control`, within
        // msg_controllen; each SCM_RIGHTS payload holds whole descriptors that are now ours.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                    let data = libc::CMSG_DATA(c).cast::<i32>();
                    let count = ((*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize)
                        / std::mem::size_of::<i32>();
                    for i in 0..count {
                        fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        if n == 0 && fds.is_empty() {
            return Ok(None);
        }
        Ok(Some(fds))
    }

    /// In the command's process, restricted ([`restrict_child`]): stdin `null`, the output
    /// pipe as stdout and stderr, no other descriptor, exec. A failed restriction is reported
    /// on the output and nothing runs.
    fn exec_request(
        request: Request,
        null: RawFd,
        output: &OwnedFd,
        restricted: Result<(), HelperError>,
    ) -> i32 {
        // SAFETY: dup2 with descriptors this process holds.
        unsafe {
            if null < 0
                || libc::dup2(null, 0) < 0
                || libc::dup2(output.as_raw_fd(), 1) < 0
                || libc::dup2(output.as_raw_fd(), 2) < 0
            {
                return 125;
            }
        }
        if let Err(e) = restricted {
            let _ = writeln!(std::io::stderr(), "gg sandbox: {e}");
            return 125;
        }
        if let Err(e) = h::close_inherited_fds() {
            let _ = writeln!(std::io::stderr(), "gg sandbox: {e}");
            return 125;
        }
        let mut cmd = Command::new(&request.program);
        cmd.args(&request.args)
            .env_clear()
            .envs(request.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&request.cwd);
        if let Some(tmp) = &request.tmpdir {
            cmd.env("TMPDIR", tmp);
        }
        let err = cmd.exec();
        let _ = writeln!(
            std::io::stderr(),
            "gg sandbox: cannot execute {}: {err}",
            request.program.to_string_lossy()
        );
        if err.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_garbage_is_refused() {
        let r = Request {
            cwd: "/w".into(),
            landlock: crate::fs_rules::LandlockPlan {
                read_only: vec!["/".into()],
                read_write: vec!["/w".into()],
                devices: Vec::new(),
                deny_tcp: true,
                connect_tcp: Vec::new(),
                scoped: true,
                deny_read: vec!["/root/.ssh".into()],
                no_sockets: false,
            },
            tmpdir: Some("/tmp".into()),
            program: "/bin/sh".into(),
            args: vec!["-lc".into(), "echo 'a\0b'".into()],
            env: vec![("A".into(), "1".into()), ("EMPTY".into(), "".into())],
        };
        let bytes = r.encode().unwrap();
        let total = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
        assert_eq!(total, bytes.len() - 4);
        assert_eq!(Request::decode(&bytes[4..]), Some(r));
        assert_eq!(Request::decode(&bytes[4..bytes.len() - 1]), None);
        assert_eq!(Request::decode(b"garbage"), None);
    }

    #[test]
    fn reports_parse() {
        assert_eq!(Ended::parse(b"exit 0\n"), Ended::Exited(0));
        assert_eq!(Ended::parse(b"exit 512\n"), Ended::Exited(2));
        assert_eq!(Ended::parse(b"exit 9\n"), Ended::Signalled(9));
        assert_eq!(Ended::parse(b""), Ended::Stopped);
        assert_eq!(Ended::parse(b"nonsense"), Ended::Stopped);
    }
}
