//! The re-executed helper: the host binary started again with [`HELPER_ARG`] as its first
//! argument. It must run before anything else in `main` (single-threaded, before any runtime),
//! because Landlock and seccomp only restrict the calling thread.
//!
//! It closes inherited file descriptors above 2, applies Landlock, drops capabilities, installs
//! the seccomp filters and executes the command. Without bubblewrap around it (the `landlock`
//! level) it also starts a new session and stays as a subreaper that kills every process the
//! command leaves behind.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::ExitCode;

use serde::{Deserialize, Serialize};

use crate::policy::Network;

/// What the first argument of a helper starts with.
pub const HELPER_ARG: &str = "__gg-sandbox-helper";
/// The identity of this build of the sandbox crate (see `sandbox/build.rs`).
pub const BUILD_ID: &str = env!("GG_SANDBOX_BUILD_ID");
/// First argument that selects the helper: [`HELPER_ARG`]`=`[`BUILD_ID`]. A helper started with
/// another build's identity refuses to run, so a stale `gg-sandbox-helper` can never apply an
/// older policy than the host rendered.
pub const HELPER_FLAG: &str = concat!("__gg-sandbox-helper=", env!("GG_SANDBOX_BUILD_ID"));
/// Second argument that asks the helper for its identity only.
pub const IDENTIFY_ARG: &str = "--identify";
/// Second argument for the capability probe.
pub const PROBE_ARG: &str = "--probe";
/// Second argument that runs the rest (`-- COMMAND [ARGS]...`) as a guarded command's reaper
/// (see [`crate::guard`]): the helper restricts nothing itself (the command and the helper
/// inherit the guard's Landlock domain and seccomp filter from the thread that started it), it
/// only stays as the command's subreaper and kills whatever the command left running when it
/// ends, whatever process group or session those processes moved to.
pub const REAP_ARG: &str = "--reap";
/// First word of the probe's success line on stdout.
pub const PROBE_OK: &str = "gg-sandbox-helper-ok";
/// Exit status when the helper itself fails (before the command runs), as `env(1)` does.
pub const HELPER_FAILURE: u8 = 125;

/// What the helper applies, passed as one JSON argument.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HelperConfig {
    /// Landlock ruleset.
    #[cfg(target_os = "linux")]
    pub landlock: crate::fs_rules::LandlockPlan,
    /// Selects the seccomp socket rules.
    pub network: Network,
    /// No bubblewrap around the helper: start a session, drop capabilities, reap leftovers, and
    /// refuse to run if Landlock is not enforced.
    pub standalone: bool,
    /// `TMPDIR` for the command.
    pub tmpdir: Option<PathBuf>,
    /// Inside bubblewrap with network [`Network::Proxy`]: the proxy forwarder to start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward: Option<crate::netfwd::Forward>,
    /// Allow `socket(AF_UNIX)` although the network is isolated ([`crate::Policy::local_sockets`]).
    #[serde(default)]
    pub local_sockets: bool,
}

pub use crate::error::HelperError;

/// If this process was started as the helper, runs it and returns the exit status to return from
/// `main`; otherwise returns `None` at once. Call it first in `main`.
pub fn run_if_requested() -> Option<ExitCode> {
    let mut args = std::env::args_os();
    args.next();
    let first = args.next()?;
    if first != OsStr::new(HELPER_FLAG) {
        if !first.as_encoded_bytes().starts_with(HELPER_ARG.as_bytes()) {
            return None;
        }
        // Another build's host (or a hand-typed call): never fall through to the CLI.
        eprintln!(
            "gg sandbox: this helper is build {BUILD_ID} and was started as {}; gg and \
             gg-sandbox-helper must come from one build (reinstall gg)",
            first.to_string_lossy()
        );
        return Some(ExitCode::from(HELPER_FAILURE));
    }
    let rest: Vec<OsString> = args.collect();
    if rest.first().is_some_and(|a| a == IDENTIFY_ARG) {
        println!("{BUILD_ID}");
        return Some(ExitCode::SUCCESS);
    }
    Some(match imp::run(rest) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("gg sandbox: {message}");
            ExitCode::from(HELPER_FAILURE)
        }
    })
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::ffi::OsString;
    use std::process::ExitCode;

    pub fn run(_args: Vec<OsString>) -> Result<ExitCode, super::HelperError> {
        Err(super::HelperError::Unsupported)
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::ffi::OsString;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, ExitCode};
    use std::sync::atomic::{AtomicI32, Ordering};

    use super::{HelperConfig, HelperError, PROBE_ARG, PROBE_OK, REAP_ARG};
    use crate::fs_rules::{self, LandlockPlan};
    use crate::policy::Network;
    use crate::restrict::{close_inherited_fds, kill_all_children, restrict};
    use crate::seccomp;

    pub fn run(args: Vec<OsString>) -> Result<ExitCode, HelperError> {
        let first = args
            .first()
            .ok_or_else(|| HelperError::Usage("missing helper arguments".into()))?;
        if first == PROBE_ARG {
            return probe();
        }
        if first == REAP_ARG {
            return reap(&args[1..]);
        }
        if first == crate::server::SERVER_ARG {
            let config = args
                .get(1)
                .and_then(|a| a.to_str())
                .ok_or_else(|| HelperError::Usage("missing server config".into()))?;
            // At the landlock level: the session's private temp directory, removed by the
            // server when it ends.
            let temp = args.get(2).map(std::path::PathBuf::from);
            return crate::server::inside::serve(config, temp);
        }
        let text = first
            .to_str()
            .ok_or_else(|| HelperError::Usage("policy is not UTF-8".into()))?;
        let config: HelperConfig = serde_json::from_str(text)
            .map_err(|e| HelperError::Usage(format!("bad policy: {e}")))?;
        if args.get(1).is_none_or(|a| a != "--") || args.len() < 3 {
            return Err(HelperError::Usage(
                "usage: __gg-sandbox-helper POLICY -- COMMAND [ARGS]...".into(),
            ));
        }
        let program = &args[2];
        let program_args = &args[3..];
        // Build everything that can fail before restricting anything.
        let mut filters =
            seccomp::programs_with(config.network, config.local_sockets, config.standalone)
                .map_err(|e| HelperError::Seccomp(e.to_string()))?;
        #[cfg(target_os = "linux")]
        if config.landlock.no_sockets {
            // Run read-only: metadata too (see `seccomp::read_only_deny_list`).
            let sockets = config.network != Network::Off;
            filters.extend(
                seccomp::read_only_programs(sockets, config.standalone)
                    .map_err(|e| HelperError::Seccomp(e.to_string()))?,
            );
        }
        close_inherited_fds()?;
        if config.standalone && config.network == Network::Proxy {
            // Without a namespace only Landlock's TCP rules (ABI 4) keep the command from
            // connecting anywhere but the proxy: refuse rather than run with the network open.
            let abi = fs_rules::kernel_abi().unwrap_or(0);
            if abi < 4 {
                return Err(HelperError::Landlock(format!(
                    "the network allow-list needs Landlock ABI 4 at this level (kernel has {abi}); \
                     use network off or on"
                )));
            }
        }
        if let Some(forward) = &config.forward {
            crate::netfwd::start(forward)?;
        }
        if config.standalone {
            if let Some(code) = fork_and_reap()? {
                // The caller removes the temp directory when it outlives the command; this covers
                // a caller that was killed (the helper then got SIGTERM and killed the tree).
                if let Some(tmp) = &config.tmpdir
                    && tmp
                        .file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(crate::PRIVATE_TMP_PREFIX))
                {
                    let _ = std::fs::remove_dir_all(tmp);
                }
                return Ok(code);
            }
            // In the forked child: never a process-group leader (the helper itself may be one,
            // when its caller gave it a group of its own), so setsid cannot fail with EPERM.
            new_session()?;
        }
        let mut plan = config.landlock.clone();
        if plan.devices_only.is_some() {
            plan.own_terminals = own_terminals();
        }
        restrict(&plan, config.standalone, &filters)?;
        let mut cmd = Command::new(program);
        cmd.args(program_args);
        if let Some(tmp) = &config.tmpdir {
            cmd.env("TMPDIR", tmp);
        }
        Ok(exec(&mut cmd))
    }

    /// Replaces this process with `cmd`; returns only when that fails, with the status a shell
    /// gives: 127 when the command does not exist, 126 when it cannot be executed.
    fn exec(cmd: &mut Command) -> ExitCode {
        let err = cmd.exec();
        eprintln!(
            "gg sandbox: cannot execute {}: {err}",
            cmd.get_program().to_string_lossy()
        );
        ExitCode::from(if err.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        })
    }

    fn probe() -> Result<ExitCode, HelperError> {
        let filters =
            seccomp::programs(Network::Off).map_err(|e| HelperError::Seccomp(e.to_string()))?;
        let plan = LandlockPlan {
            deny_tcp: true,
            scoped: true,
            ..LandlockPlan::read_only_root()
        };
        let abi = fs_rules::kernel_abi().unwrap_or(0);
        let enforcement = restrict(&plan, false, &filters)?;
        println!("{PROBE_OK} landlock={enforcement:?} abi={abi}");
        Ok(ExitCode::SUCCESS)
    }

    /// The terminals on this process's standard descriptors, with the access each descriptor
    /// has (see [`LandlockPlan::own_terminals`]): a character device whose name under `/dev`
    /// is still the device the descriptor holds.
    fn own_terminals() -> Vec<fs_rules::OwnTerminal> {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let mut found: Vec<fs_rules::OwnTerminal> = Vec::new();
        for fd in 0..=2 {
            // SAFETY: fstat and fcntl(F_GETFL) on a descriptor number, into a zeroed local.
            let (st, flags) = unsafe {
                let mut st: libc::stat = std::mem::zeroed();
                let r = libc::fstat(fd, &mut st);
                ((r == 0).then_some(st), libc::fcntl(fd, libc::F_GETFL))
            };
            let Some(st) = st.filter(|st| st.st_mode & libc::S_IFMT == libc::S_IFCHR) else {
                continue;
            };
            if flags < 0 {
                continue;
            }
            let Ok(path) = std::fs::read_link(format!("/proc/self/fd/{fd}")) else {
                continue;
            };
            let same_device = std::fs::metadata(&path)
                .is_ok_and(|m| m.file_type().is_char_device() && m.rdev() == st.st_rdev);
            if !path.starts_with(fs_rules::HOST_DEV) || !same_device {
                continue;
            }
            let mode = flags & libc::O_ACCMODE;
            let read = mode == libc::O_RDONLY || mode == libc::O_RDWR;
            let write = mode == libc::O_WRONLY || mode == libc::O_RDWR;
            match found.iter_mut().find(|t| t.path == path) {
                Some(t) => {
                    t.read |= read;
                    t.write |= write;
                }
                None => found.push(fs_rules::OwnTerminal { path, read, write }),
            }
        }
        found
    }

    fn new_session() -> Result<(), HelperError> {
        // SAFETY: setsid has no memory arguments.
        if unsafe { libc::setsid() } < 0 {
            // Already a session leader is fine; anything else keeps the controlling tty.
            // SAFETY: getsid(0)/getpid have no memory arguments.
            if unsafe { libc::getsid(0) != libc::getpid() } {
                return Err(HelperError::last_os("setsid"));
            }
        }
        Ok(())
    }

    static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

    extern "C" fn on_stop_signal(sig: libc::c_int) {
        STOP_SIGNAL.store(sig, Ordering::SeqCst);
    }

    /// [`fork_as_subreaper`] for the landlock level's helper, which also ends (and takes the
    /// command's tree down) when its caller dies. Returns `None` in the child, which goes on to
    /// exec the command; the command's exit status in the parent.
    fn fork_and_reap() -> Result<Option<ExitCode>, HelperError> {
        // SAFETY: prctl with integer arguments.
        unsafe {
            // If the caller dies, stop too, and take the tree down (see the signal handler).
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
        }
        Ok(match fork_as_subreaper()? {
            Forked::Child => None,
            Forked::Parent(ended) => Some(ExitCode::from(ended.map_or(HELPER_ABNORMAL, exit_code))),
        })
    }

    /// Which side of [`fork_as_subreaper`] returned.
    enum Forked {
        /// The child, to exec the command.
        Child,
        /// The helper, after the command ended and its leftovers were killed: the command's
        /// wait status (that of a process killed by the stop signal when one came first;
        /// `None` when there was nothing to wait for).
        Parent(Option<i32>),
    }

    /// Forks. The parent becomes a subreaper, waits for the command (the child), then kills
    /// everything it left behind (background jobs, `setsid` daemons, double forks: each is
    /// re-parented to the subreaper when its parent ends) and returns how the command ended.
    fn fork_as_subreaper() -> Result<Forked, HelperError> {
        // SAFETY: prctl with integer arguments.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            // SAFETY: installs an async-signal-safe handler (one atomic store) without SA_RESTART
            // so that waitpid returns EINTR and the tree is killed.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_stop_signal as *const () as usize;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
        // SAFETY: the process is single-threaded (the helper runs first in main), so the child may
        // keep running ordinary Rust code after fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(HelperError::last_os("fork"));
        }
        if pid == 0 {
            // SAFETY: restoring default dispositions and the parent-death signal in the child.
            unsafe {
                for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
                    libc::signal(sig, libc::SIG_DFL);
                }
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            }
            return Ok(Forked::Child);
        }
        let mut ended: Option<i32> = None;
        loop {
            let sig = STOP_SIGNAL.load(Ordering::SeqCst);
            if sig != 0 {
                // As if the command had been ended by the signal the helper got: a signal's
                // number is the wait status of a process it killed.
                ended = Some(sig);
                break;
            }
            let mut status = 0;
            // SAFETY: waitpid writes the status into a local integer.
            let r = unsafe { libc::waitpid(-1, &mut status, 0) };
            if r == pid {
                ended = Some(status);
                break;
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
                break;
            }
        }
        kill_all_children();
        Ok(Forked::Parent(ended))
    }

    /// A guarded command's reaper ([`REAP_ARG`]): runs `-- COMMAND [ARGS]...` as its child,
    /// kills what the command left when it ends, and ends the way the command did.
    ///
    /// No parent-death signal here, unlike [`fork_and_reap`]: the kernel sends it when the
    /// *thread* that started the helper ends, and the guard starts it from a thread that ends
    /// as soon as it has (see `crate::guard`). gg stops the helper with SIGTERM on a timeout or
    /// a cancellation, and when gg itself is gone the helper still ends with its command.
    fn reap(args: &[OsString]) -> Result<ExitCode, HelperError> {
        if args.first().is_none_or(|a| a != "--") || args.len() < 2 {
            return Err(HelperError::Usage(
                "usage: __gg-sandbox-helper --reap -- COMMAND [ARGS]...".into(),
            ));
        }
        let Forked::Parent(ended) = fork_as_subreaper()? else {
            // The command signals what it starts, not the reaper (nor anything outside).
            crate::fs_rules::scope_signals_of_this_thread();
            let mut cmd = Command::new(&args[1]);
            cmd.args(&args[2..]);
            return Ok(exec(&mut cmd));
        };
        if let Some(status) = ended.filter(|&status| libc::WIFSIGNALED(status)) {
            end_by_signal(libc::WTERMSIG(status));
        }
        Ok(ExitCode::from(ended.map_or(HELPER_ABNORMAL, exit_code)))
    }

    /// Ends this process by `sig` with its default action, so that gg reads "killed by signal
    /// N" as it would from the command itself; returns if that does not end it. No core file:
    /// the helper's own image is of no use to anyone, and one would be written in the project.
    fn end_by_signal(sig: libc::c_int) {
        // SAFETY: setrlimit with a local struct; signal, sigprocmask and raise with integer
        // arguments and a local, initialised set.
        unsafe {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::raise(sig);
        }
    }

    const HELPER_ABNORMAL: u8 = 125;

    fn exit_code(status: i32) -> u8 {
        if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status) as u8
        } else if libc::WIFSIGNALED(status) {
            128u8.wrapping_add(libc::WTERMSIG(status) as u8)
        } else {
            HELPER_ABNORMAL
        }
    }
}
