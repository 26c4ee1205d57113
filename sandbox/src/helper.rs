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

/// Why the helper could not run the command.
#[derive(Debug)]
pub enum HelperError {
    /// Wrong arguments or an undecodable policy.
    Usage(String),
    /// A system call needed to set up the restrictions failed.
    Setup {
        /// What was being done.
        step: &'static str,
        /// The system's answer.
        error: std::io::Error,
    },
    /// Landlock could not be applied, or is not enforced where it must be.
    Landlock(String),
    /// The seccomp filters could not be built or installed.
    Seccomp(String),
    /// The platform has no helper.
    Unsupported,
}

impl std::fmt::Display for HelperError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HelperError::Usage(m) => f.write_str(m),
            HelperError::Setup { step, error } => write!(f, "{step}: {error}"),
            HelperError::Landlock(m) => write!(f, "Landlock: {m}"),
            HelperError::Seccomp(m) => write!(f, "seccomp: {m}"),
            HelperError::Unsupported => f.write_str("the sandbox helper only exists on Linux"),
        }
    }
}

impl std::error::Error for HelperError {}

impl HelperError {
    #[cfg(target_os = "linux")]
    pub(crate) fn last_os(step: &'static str) -> HelperError {
        HelperError::Setup {
            step,
            error: std::io::Error::last_os_error(),
        }
    }
}

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
pub(crate) mod imp {
    use std::ffi::OsString;
    use std::os::fd::RawFd;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, ExitCode};
    use std::sync::atomic::{AtomicI32, Ordering};

    use super::{HelperConfig, HelperError, PROBE_ARG, PROBE_OK};
    use crate::fs_rules::{self, Enforcement, LandlockPlan};
    use crate::policy::Network;
    use crate::seccomp;

    pub fn run(args: Vec<OsString>) -> Result<ExitCode, HelperError> {
        let first = args
            .first()
            .ok_or_else(|| HelperError::Usage("missing helper arguments".into()))?;
        if first == PROBE_ARG {
            return probe();
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
        let filters =
            seccomp::programs_with(config.network, config.local_sockets, config.standalone)
                .map_err(|e| HelperError::Seccomp(e.to_string()))?;
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
        restrict(&config.landlock, config.standalone, &filters)?;
        let mut cmd = Command::new(program);
        cmd.args(program_args);
        if let Some(tmp) = &config.tmpdir {
            cmd.env("TMPDIR", tmp);
        }
        let err = cmd.exec();
        eprintln!(
            "gg sandbox: cannot execute {}: {err}",
            program.to_string_lossy()
        );
        // As shells do: 127 when the command does not exist, 126 when it cannot be executed.
        Ok(ExitCode::from(
            if err.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            },
        ))
    }

    /// Applies every restriction to this process, ready to exec.
    pub(crate) fn restrict(
        plan: &LandlockPlan,
        standalone: bool,
        filters: &[seccompiler::BpfProgram],
    ) -> Result<Enforcement, HelperError> {
        let enforcement = restrict_landlock(fs_rules::prepare(plan), standalone)?;
        drop_capabilities()?;
        seccomp::apply(filters).map_err(|e| HelperError::Seccomp(e.to_string()))?;
        Ok(enforcement)
    }

    /// `no_new_privs` and the Landlock ruleset: what a command of the server applies itself
    /// (the server has dropped the capabilities and installed the seccomp filters for all of
    /// its commands, which inherit both).
    pub(crate) fn restrict_landlock(
        ruleset: Result<fs_rules::Prepared, landlock::RulesetError>,
        standalone: bool,
    ) -> Result<Enforcement, HelperError> {
        set_no_new_privs()?;
        let enforcement = match ruleset.and_then(fs_rules::Prepared::restrict) {
            Ok(e) => e,
            Err(e) if standalone => return Err(HelperError::Landlock(e.to_string())),
            // Under bubblewrap the filesystem view is already read-only: Landlock is depth.
            Err(_) => Enforcement::None,
        };
        if standalone && enforcement == Enforcement::None {
            return Err(HelperError::Landlock(
                "not enforced by this kernel; refusing to run".into(),
            ));
        }
        Ok(enforcement)
    }

    fn probe() -> Result<ExitCode, HelperError> {
        let filters =
            seccomp::programs(Network::Off).map_err(|e| HelperError::Seccomp(e.to_string()))?;
        let plan = LandlockPlan {
            read_only: vec!["/".into()],
            read_write: Vec::new(),
            devices: Vec::new(),
            deny_tcp: true,
            connect_tcp: Vec::new(),
            scoped: true,
            deny_read: Vec::new(),
            no_sockets: false,
        };
        let abi = fs_rules::kernel_abi().unwrap_or(0);
        let enforcement = restrict(&plan, false, &filters)?;
        println!("{PROBE_OK} landlock={enforcement:?} abi={abi}");
        Ok(ExitCode::SUCCESS)
    }

    pub(crate) fn set_no_new_privs() -> Result<(), HelperError> {
        // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1) takes integer arguments only.
        let r = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
        if r != 0 {
            return Err(HelperError::last_os("no_new_privs"));
        }
        Ok(())
    }

    /// Closes every descriptor above 2 (a leaked descriptor keeps whatever rights it was opened
    /// with, whatever Landlock says).
    pub(crate) fn close_inherited_fds() -> Result<(), HelperError> {
        close_inherited_fds_except(&[])
    }

    /// [`close_inherited_fds`] but for `keep` (the command server's spare keeps its hand-over
    /// socket and `/dev/null` while it waits). The caller uses no Rust object owning a closed
    /// descriptor again: the helper before it opened any, a forked command or spare before its
    /// exec.
    pub(crate) fn close_inherited_fds_except(keep: &[RawFd]) -> Result<(), HelperError> {
        let mut keep: Vec<libc::c_uint> = keep
            .iter()
            .filter(|&&fd| fd > 2)
            .map(|&fd| fd as libc::c_uint)
            .collect();
        keep.sort_unstable();
        // The ranges between the kept descriptors, and above the last.
        let mut ranges = Vec::with_capacity(keep.len() + 1);
        let mut from: libc::c_uint = 3;
        for &fd in &keep {
            if fd > from {
                ranges.push((from, fd - 1));
            }
            from = fd + 1;
        }
        ranges.push((from, libc::c_uint::MAX));
        let closed_all = ranges.iter().all(|&(first, last)| {
            // SAFETY: close_range only closes descriptors; see above for who owns them.
            unsafe { libc::close_range(first, last, 0) == 0 }
        });
        if closed_all {
            return Ok(());
        }
        // Kernels before 5.9: close what /proc lists (the directory's own fd fails harmlessly).
        let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
            .map_err(|error| HelperError::Setup {
                step: "cannot list fds",
                error,
            })?
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .filter(|&fd| fd > 2 && !keep.contains(&(fd as libc::c_uint)))
            .collect();
        for fd in fds {
            // SAFETY: closing a descriptor number owned by no Rust object used again here.
            unsafe { libc::close(fd) };
        }
        Ok(())
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

    /// The highest capability number this kernel knows, read once per process.
    pub(crate) fn cap_last_cap() -> libc::c_ulong {
        static LAST: std::sync::OnceLock<libc::c_ulong> = std::sync::OnceLock::new();
        *LAST.get_or_init(|| {
            std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
                .ok()
                .and_then(|s| s.trim().parse::<libc::c_ulong>().ok())
                .unwrap_or(63)
        })
    }

    /// Drops every capability: bounding set, ambient set, and the permitted/effective/inheritable
    /// sets, and locks root's automatic capabilities on exec away (securebits).
    pub(crate) fn drop_capabilities() -> Result<(), HelperError> {
        for cap in 0..=cap_last_cap() {
            // SAFETY: prctl with integer arguments. EINVAL for capabilities the kernel does not
            // know and EPERM without CAP_SETPCAP (then the set is already what it can be) are fine.
            unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
        }
        // SAFETY: prctl with integer arguments; EINVAL on kernels without ambient capabilities.
        unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL,
                0,
                0,
                0,
            )
        };
        const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
        const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
        const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
        const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
        // SAFETY: prctl with integer arguments; fails with EPERM without CAP_SETPCAP, in which
        // case exec cannot grant root capabilities beyond the (now empty) bounding set anyway.
        unsafe {
            libc::prctl(
                libc::PR_SET_SECUREBITS,
                SECBIT_NOROOT
                    | SECBIT_NOROOT_LOCKED
                    | SECBIT_NO_SETUID_FIXUP
                    | SECBIT_NO_SETUID_FIXUP_LOCKED,
                0,
                0,
                0,
            )
        };
        #[repr(C)]
        struct CapHeader {
            version: u32,
            pid: i32,
        }
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct CapData {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
        let mut header = CapHeader {
            version: LINUX_CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        // SAFETY: capset reads one header and two data structs laid out as in
        // <linux/capability.h> for version 3; both live on the stack for the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_capset,
                &mut header as *mut CapHeader,
                data.as_ptr(),
            )
        };
        if r != 0 {
            return Err(HelperError::last_os("capset"));
        }
        Ok(())
    }

    static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

    extern "C" fn on_stop_signal(sig: libc::c_int) {
        STOP_SIGNAL.store(sig, Ordering::SeqCst);
    }

    /// Forks. The child returns `None` and goes on to exec the command. The parent becomes a
    /// subreaper, waits for the command, then kills everything it left behind (background jobs,
    /// `setsid` daemons) and returns the command's status.
    fn fork_and_reap() -> Result<Option<ExitCode>, HelperError> {
        // SAFETY: prctl with integer arguments.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
            // If the caller dies, stop too, and take the tree down (see the signal handler).
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM, 0, 0, 0);
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
            return Ok(None);
        }
        let mut code: Option<u8> = None;
        loop {
            let sig = STOP_SIGNAL.load(Ordering::SeqCst);
            if sig != 0 {
                code = Some(128u8.wrapping_add(sig as u8));
                break;
            }
            let mut status = 0;
            // SAFETY: waitpid writes the status into a local integer.
            let r = unsafe { libc::waitpid(-1, &mut status, 0) };
            if r == pid {
                code = Some(exit_code(status));
                break;
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
                break;
            }
        }
        kill_all_children();
        Ok(Some(ExitCode::from(code.unwrap_or(HELPER_ABNORMAL))))
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

    /// SIGKILLs every child (orphans are reparented to us as subreaper) until none is left.
    pub(crate) fn kill_all_children() {
        loop {
            kill_children_except(&[]);
            // Reap whatever exited meanwhile without being listed; stop when nothing is left.
            let mut status = 0;
            // SAFETY: waitpid writes into a local integer.
            if unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } <= 0 {
                return;
            }
        }
    }

    /// Kills this process's children other than `keep`, and reaps them and whatever is
    /// re-parented here as they die, until only `keep` is left. Returns whether it found any.
    /// Each child is waited for by its pid, so a child in `keep` that ends meanwhile stays for
    /// the caller to reap.
    pub(crate) fn kill_children_except(keep: &[i32]) -> bool {
        let mut found = false;
        loop {
            let others: Vec<i32> = list_children()
                .into_iter()
                .filter(|pid| !keep.contains(pid))
                .collect();
            if others.is_empty() {
                return found;
            }
            found = true;
            for pid in &others {
                // SAFETY: kill with a positive pid. It is our child and not yet reaped (only
                // this process reaps), so the pid cannot have been reused by another process.
                unsafe { libc::kill(*pid, libc::SIGKILL) };
            }
            for pid in others {
                let mut status = 0;
                // SAFETY: waitpid on our own child, into a local integer.
                unsafe { libc::waitpid(pid, &mut status, 0) };
            }
        }
    }

    pub(crate) fn list_children() -> Vec<i32> {
        let me = std::process::id() as i32;
        if let Ok(text) = std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")) {
            return text
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
        }
        // Without CONFIG_PROC_CHILDREN: scan /proc for processes whose parent is us.
        let mut out = Vec::new();
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for entry in dir.flatten() {
                let Some(pid) = entry
                    .file_name()
                    .to_str()
                    .and_then(|s| s.parse::<i32>().ok())
                else {
                    continue;
                };
                if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    && let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..])
                    && after
                        .split_whitespace()
                        .nth(1)
                        .and_then(|p| p.parse::<i32>().ok())
                        == Some(me)
                {
                    out.push(pid);
                }
            }
        }
        out
    }
}
