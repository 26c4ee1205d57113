//! The command server, inside the sandbox (the helper process): forks, restricts and runs each
//! command it is handed, and reports how it ended.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};

use super::protocol::{MAX_REQUEST, Request, ServerConfig, recv_fds, send_fds};
use crate::error::HelperError;
use crate::policy::Network;
use crate::restrict as h;

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
    // The guard's server gives its commands the guard's filters (typing into a terminal and
    // setting the clock refused), the sandbox's give theirs the network's and the rest.
    let mut filters = if config.guard {
        crate::seccomp::guard_programs()
    } else {
        crate::seccomp::programs_with(config.network, config.local_sockets, config.standalone)
    }
    .map_err(|e| HelperError::Seccomp(e.to_string()))?;
    if config.read_only {
        // What each read-only command would add after its fork (`restrict_child`), added here
        // once for all of them; nothing the server does is among what it refuses (modes,
        // owners, times and attributes of files, SysV IPC, other processes' scheduling).
        filters.extend(read_only_filters(config)?);
    }
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
    // A guarded command keeps the person's, as it would run without gg (`crate::guard`).
    if !config.guard {
        h::drop_capabilities()?;
    }
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
                    if let Some(started) = start(fds, config, &mut rulesets, &mut spare, &old_mask)
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
    if restricted.is_ok() && plan.no_sockets && !config.read_only {
        // A command run read-only: one more filter of its own, stacked on the server's, refuses
        // changing files' metadata, which Landlock does not cover, and every socket where the
        // server's filters allow sockets (Network::Off's rules). Built here, after the fork: the
        // server is single-threaded (and a spare has done this before its command comes). A
        // server whose every command runs read-only has installed it on itself instead
        // (`ServerConfig::read_only`).
        restricted = read_only_filters(config).and_then(|filters| {
            crate::seccomp::apply(&filters).map_err(|e| HelperError::Seccomp(e.to_string()))
        });
    }
    (null, restricted)
}

/// The filter a read-only command adds to the server's ([`crate::seccomp::read_only_programs`]):
/// the sockets too where the server's network rules allow them.
fn read_only_filters(config: &ServerConfig) -> Result<Vec<seccompiler::BpfProgram>, HelperError> {
    let sockets = config.network != Network::Off;
    crate::seccomp::read_only_programs(sockets, config.standalone)
        .map_err(|e| HelperError::Seccomp(e.to_string()))
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
        send_fds(&self.handover, &[output.as_raw_fd()])?;
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
    if len > MAX_REQUEST {
        return None;
    }
    let mut body = vec![0u8; len];
    channel.read_exact(&mut body).ok()?;
    Some((Request::decode(&body)?, body))
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
    // SAFETY: fcntl and dup2 with descriptors this process holds.
    unsafe {
        // `restrict_child` closed 0 first, so `/dev/null` normally opened as 0 itself, with
        // close-on-exec: `dup2(0, 0)` changes nothing and would leave the command a closed
        // stdin (the docs promise `/dev/null`), so the flag is cleared instead.
        let stdin_ready = if null == 0 {
            libc::fcntl(0, libc::F_SETFD, 0) == 0
        } else {
            null >= 0 && libc::dup2(null, 0) >= 0
        };
        if !stdin_ready
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
