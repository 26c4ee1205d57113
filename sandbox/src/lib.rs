//! Sandbox: turns a `std::process::Command` into one that runs under the best available isolation.
//!
//! A [`Policy`] says what the command may touch; [`wrap`] picks the strongest level the machine
//! offers (probed once per process, see [`probe`]) and returns the command to spawn, the level,
//! the reasons for any fallback and — at level [`Level::None`] — the warning line that must open
//! the command's output.
//!
//! Levels on Linux, strongest first:
//! 1. [`Level::Bwrap`]: system bubblewrap builds the filesystem view and namespaces, and inside it
//!    the host binary re-executed as the [`helper`] applies Landlock and seccomp.
//! 2. [`Level::Landlock`]: the helper alone (Landlock, seccomp, `no_new_privs`, new session, no
//!    capabilities, a per-command temp directory, leftover processes killed).
//! 3. [`Level::None`]: the command runs as is, with a warning.
//!
//! On macOS the level is [`Level::Seatbelt`] (`/usr/bin/sandbox-exec` with [`sbpl::profile`]).
//!
//! The host binary must call [`helper::run_if_requested`] first thing in `main`.

pub mod bwrap;
mod error;
#[cfg(target_os = "linux")]
pub mod fs_rules;
#[cfg(target_os = "linux")]
mod guard;
pub mod helper;
mod helper_image;
pub mod host_program;
pub mod inherit;
pub mod leftovers;
pub mod netfwd;
pub mod policy;
mod probe;
#[cfg(target_os = "linux")]
mod probe_cache;
pub mod protected;
#[cfg(target_os = "linux")]
mod restrict;
pub mod sbpl;
#[cfg(target_os = "linux")]
pub mod seccomp;
pub mod self_test;
pub mod server;
mod watch;

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

#[cfg(target_os = "linux")]
pub use guard::{GuardWrites, GuardedCommand, TEMP_DIRS, guard, guard_writes};
pub use helper_image::{HELPER_BINARY, SELF_HELPER_ENV};
#[cfg(target_os = "linux")]
pub use helper_image::{HelperImage, helper_image};
#[cfg(target_os = "linux")]
use helper_image::{helper_exe, needs_explicit_bind, standalone_helper_exe};
pub use policy::{Network, Policy};
use probe::{Availability, PROBE};
pub use probe::{Probe, ProbeError, probe};
pub use watch::{Watched, watch};

/// The isolation a command actually runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// bubblewrap + helper (Landlock + seccomp).
    Bwrap,
    /// Helper only: Landlock + seccomp + no capabilities, no namespaces.
    Landlock,
    /// macOS `sandbox-exec`.
    Seatbelt,
    /// No isolation at all.
    None,
}

impl Level {
    /// The name used by `--backend` and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Bwrap => "bwrap",
            Level::Landlock => "landlock",
            Level::Seatbelt => "seatbelt",
            Level::None => "none",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The level a caller asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The strongest available level, falling back with a reason.
    Auto,
    /// bubblewrap + helper, or an error.
    Bwrap,
    /// The helper alone, or an error.
    Landlock,
    /// No sandbox (still announced by the warning line).
    None,
}

impl std::str::FromStr for Backend {
    type Err = SandboxError;
    fn from_str(s: &str) -> Result<Self, SandboxError> {
        match s {
            "auto" => Ok(Backend::Auto),
            "bwrap" => Ok(Backend::Bwrap),
            "landlock" => Ok(Backend::Landlock),
            "none" => Ok(Backend::None),
            other => Err(SandboxError::UnknownBackend(other.to_string())),
        }
    }
}

/// Why a command could not be wrapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxError {
    /// The policy names something unusable (missing directory, `/` writable, …).
    InvalidPolicy(String),
    /// An explicitly requested backend is not available here.
    Unavailable {
        /// The requested backend.
        backend: &'static str,
        /// Why it is unavailable.
        reason: ProbeError,
    },
    /// A backend name that does not exist.
    UnknownBackend(String),
    /// Setting up the run failed (temp directory, current executable).
    Setup(String),
}

impl fmt::Display for SandboxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SandboxError::InvalidPolicy(m) => write!(f, "invalid sandbox policy: {m}"),
            SandboxError::Unavailable { backend, reason } => {
                write!(f, "sandbox backend {backend} is unavailable: {reason}")
            }
            SandboxError::Setup(m) => write!(f, "sandbox setup failed: {m}"),
            SandboxError::UnknownBackend(name) => write!(
                f,
                "unknown sandbox backend {name:?} (auto, bwrap, landlock, none)"
            ),
        }
    }
}

impl std::error::Error for SandboxError {}

/// Puts a probe in a process group of its own, out of the terminal's foreground group: a
/// Ctrl+C meant for gg would otherwise also reach a probe's bubblewrap half-way through its
/// set-up, and kill the outer bubblewrap while its namespace's init (which ignores the signal)
/// waits forever for it, holding gg's pipes open, so that gg never exits. gg stops its probes
/// itself.
pub(crate) fn own_process_group(command: &mut Command) -> &mut Command {
    std::os::unix::process::CommandExt::process_group(command, 0)
}

/// Creates the policy's missing read-only directories and renders the bubblewrap arguments that
/// run `inner_argv` (the helper, program first), with the helper executable bound in when it
/// lies where bubblewrap mounts a tmpfs. `absent`: see [`bwrap::render_assuming`].
#[cfg(target_os = "linux")]
fn render_bwrap(
    policy: &Policy,
    info: &bwrap::BwrapInfo,
    exe: &Path,
    inner_argv: &[OsString],
    absent: &[PathBuf],
) -> bwrap::BwrapPlan {
    for dir in &policy.create_if_missing {
        if watch::symlink_metadata(dir).is_err() {
            // On failure render() covers the path with a temporary mount point instead.
            let _ = std::fs::create_dir(dir);
        }
    }
    let mut plan = bwrap::render_assuming(policy, info, inner_argv, absent);
    if needs_explicit_bind(exe) {
        // Insert right after the isolation flags, before the tmpfs mounts would hide it.
        let at = plan
            .args
            .iter()
            .position(|a| a == "--")
            .unwrap_or(plan.args.len());
        let bind: [OsString; 3] = [
            "--ro-bind".into(),
            exe.as_os_str().into(),
            exe.as_os_str().into(),
        ];
        let chdir_at = plan.args[..at]
            .iter()
            .rposition(|a| a == "--chdir")
            .unwrap_or(at);
        plan.args.splice(chdir_at..chdir_at, bind);
    }
    plan
}

/// A command to run: program, arguments and its **complete** environment (nothing is inherited
/// from the calling process; the caller scrubs secrets once, here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
}

impl Invocation {
    /// The command run as is, without a sandbox, in `cwd`, with exactly `env`.
    pub fn unsandboxed(&self, cwd: &Path) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.args)
            .current_dir(cwd)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }
}

/// A command ready to spawn under the chosen level.
///
/// To stop the command early, send `SIGTERM` to the spawned process: at the bwrap level bubblewrap
/// dies and `--die-with-parent` takes the PID namespace down; at the landlock level the helper
/// kills every process of the tree, detached ones included. (`SIGKILL` on the helper would leave
/// detached grandchildren running at the landlock level.)
#[derive(Debug)]
pub struct Wrapped {
    command: Command,
    level: Level,
    reasons: Vec<String>,
    warning: Option<String>,
    explain: serde_json::Value,
    cleanup: Cleanup,
}

/// A [`Wrapped`] command taken apart for spawning.
#[derive(Debug)]
pub struct Parts {
    /// The command to spawn (stdio is left for the caller to configure). Its environment is
    /// exactly the invocation's, plus what the wrapper itself needs.
    pub command: Command,
    /// The level it runs under.
    pub level: Level,
    /// Why stronger levels were not used (empty at the strongest level).
    pub reasons: Vec<String>,
    /// At level [`Level::None`]: the line that must open the command's output.
    pub warning: Option<String>,
    /// Keep it alive until the child has exited: dropping it removes the per-command temp
    /// directory and any empty mount point bubblewrap created for an absent read-only path.
    pub guard: Guard,
}

/// Removes what a wrapped run left behind, when dropped (see [`Parts::guard`]).
#[derive(Debug)]
pub struct Guard {
    _cleanup: Cleanup,
}

impl Wrapped {
    /// The level, the fallback reasons and the effective policy, as JSON (`gg sandbox --explain`).
    pub fn explain(&self) -> &serde_json::Value {
        &self.explain
    }

    /// The level it runs under.
    pub fn level(&self) -> Level {
        self.level
    }

    /// At level [`Level::None`]: the line that must open the command's output.
    pub fn warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// The command, level, reasons, warning and cleanup guard.
    pub fn into_parts(self) -> Parts {
        Parts {
            command: self.command,
            level: self.level,
            reasons: self.reasons,
            warning: self.warning,
            guard: Guard {
                _cleanup: self.cleanup,
            },
        }
    }
}

#[derive(Debug, Default)]
struct Cleanup {
    stubs: Vec<PathBuf>,
    temp_dir: Option<PathBuf>,
    /// The same paths in [`leftovers`], for a gg ended by a signal before this is dropped.
    registered: Vec<leftovers::Registered>,
}

impl Cleanup {
    fn new(stubs: Vec<PathBuf>, temp_dir: Option<PathBuf>) -> Cleanup {
        let mut cleanup = Cleanup::default();
        cleanup.set_stubs(stubs);
        if let Some(dir) = temp_dir {
            cleanup.set_temp_dir(dir);
        }
        cleanup
    }

    /// The mount points bubblewrap will create on the host, parents first.
    fn set_stubs(&mut self, stubs: Vec<PathBuf>) {
        self.registered.extend(
            stubs
                .iter()
                .map(|s| leftovers::register(s, leftovers::Removal::EmptyDir)),
        );
        self.stubs = stubs;
    }

    fn set_temp_dir(&mut self, dir: PathBuf) {
        self.registered
            .push(leftovers::register(&dir, leftovers::Removal::Tree));
        self.temp_dir = Some(dir);
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for stub in self.stubs.iter().rev() {
            // Only an empty directory goes: that is exactly what bubblewrap created.
            let _ = std::fs::remove_dir(stub);
        }
        if let Some(dir) = &self.temp_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Name prefix of the per-command temp directories of the landlock level.
pub const PRIVATE_TMP_PREFIX: &str = "gg-sandbox-";

/// The warning line for level none.
pub fn unsandboxed_warning(reasons: &[String]) -> String {
    format!(
        "[gg: sandbox unavailable, running unsandboxed: {}]",
        if reasons.is_empty() {
            "no reason given".to_string()
        } else {
            reasons.join("; ")
        }
    )
}

/// Wraps `inner` so it runs under `policy` in `policy.workdir`, at the level `backend` asks for,
/// with exactly `inner.env` as its environment (the wrapper does not pass on the calling
/// process's environment).
///
/// An explicitly requested backend that is unavailable is an error, never a fallback.
pub fn wrap(inner: Invocation, policy: &Policy, backend: Backend) -> Result<Wrapped, SandboxError> {
    if policy.network == Network::Proxy && policy.proxy.is_none() {
        return Err(SandboxError::InvalidPolicy(
            "network allow-list without a proxy route".into(),
        ));
    }
    let mut reasons = Vec::new();
    let level = choose(&PROBE, backend, &mut reasons)?;
    let Invocation { program, args, env } = inner;
    let mut cleanup = Cleanup::default();
    let mut explain = serde_json::json!({
        "level": level,
        "reasons": reasons,
        "policy": policy,
    });
    let mut command = match level {
        Level::None => {
            let mut c = Command::new(&program);
            c.args(&args);
            c
        }
        #[cfg(target_os = "linux")]
        Level::Bwrap => {
            let bwrap_info = PROBE
                .bwrap()
                .clone()
                .map_err(|reason| SandboxError::Unavailable {
                    backend: "bwrap",
                    reason,
                })?;
            let private: Vec<PathBuf> = if policy.private_tmp {
                vec![PathBuf::from("/tmp"), PathBuf::from("/dev/shm")]
            } else {
                Vec::new()
            };
            let config = helper::HelperConfig {
                landlock: fs_rules::plan(policy, &private, false),
                network: policy.network,
                standalone: false,
                tmpdir: None,
                forward: forward(policy),
                local_sockets: policy.local_sockets,
            };
            let exe = helper_exe()?;
            let inner_argv = helper_argv(exe.as_os_str(), &config, &program, &args)?;
            let plan = render_bwrap(policy, &bwrap_info, &exe, &inner_argv, &[]);
            explain["bwrap"] = serde_json::json!(
                plan.args
                    .iter()
                    .map(|a| a.to_string_lossy())
                    .collect::<Vec<_>>()
            );
            // Carve-outs that are links leading out of the writable roots or nowhere.
            explain["bwrap_carve_outs_skipped"] = serde_json::json!(plan.skipped);
            explain["landlock"] = serde_json::json!(config.landlock);
            explain["landlock_cannot_hide"] =
                serde_json::json!(fs_rules::unhideable(&config.landlock));
            explain["seccomp_denied"] = seccomp_names(policy.network, false);
            cleanup.set_stubs(plan.stubs);
            let mut c = Command::new(&bwrap_info.path);
            c.args(&plan.args);
            c
        }
        #[cfg(target_os = "linux")]
        Level::Landlock => {
            if policy.local_sockets && policy.network.isolated() {
                // Without a network namespace, abstract and host sockets would be reachable.
                return Err(SandboxError::InvalidPolicy(
                    "local Unix sockets with an isolated network need the bubblewrap level".into(),
                ));
            }
            let temp = make_private_tmp()?;
            let config = helper::HelperConfig {
                landlock: fs_rules::plan(policy, std::slice::from_ref(&temp), true),
                network: policy.network,
                standalone: true,
                tmpdir: Some(temp.clone()),
                forward: None,
                local_sockets: false,
            };
            cleanup.set_temp_dir(temp);
            refuse_unhideable(&config.landlock)?;
            let exe = standalone_helper_exe()?;
            let argv = helper_argv(exe.as_os_str(), &config, &program, &args)?;
            explain["landlock"] = serde_json::json!(config.landlock);
            explain["landlock_cannot_hide"] =
                serde_json::json!(fs_rules::unhideable(&config.landlock));
            // Landlock rights are inherited by everything below a grant: a writable root's grant
            // cannot leave a file beneath it read-only without also leaving every new file in
            // that root unwritable.
            explain["landlock_cannot_protect"] = serde_json::json!(policy.read_only);
            explain["seccomp_denied"] = seccomp_names(policy.network, true);
            let mut c = Command::new(&argv[0]);
            c.args(&argv[1..]);
            c
        }
        #[cfg(target_os = "macos")]
        Level::Seatbelt => {
            let tmp = std::fs::canonicalize(std::env::temp_dir())
                .unwrap_or_else(|_| PathBuf::from("/private/tmp"));
            let profile = sbpl::profile(policy, &[Path::new("/private/tmp"), tmp.as_path()]);
            explain["sbpl"] = serde_json::json!(profile);
            let mut c = Command::new(sbpl::SANDBOX_EXEC);
            c.arg("-p").arg(profile).arg("--").arg(&program).args(&args);
            c
        }
        #[allow(unreachable_patterns)]
        other => {
            return Err(SandboxError::Unavailable {
                backend: other.as_str(),
                reason: ProbeError::Platform("not supported on this platform"),
            });
        }
    };
    command.current_dir(&policy.workdir).env_clear().envs(env);
    let warning = (level == Level::None).then(|| unsandboxed_warning(&reasons));
    Ok(Wrapped {
        command,
        level,
        reasons,
        warning,
        explain,
        cleanup,
    })
}

/// The level [`wrap`] gives a command that asks for `backend` here, and why stronger levels
/// were not used (`gg doctor` says which level gg will use and why).
pub fn level_for(backend: Backend) -> Result<(Level, Vec<String>), SandboxError> {
    let mut reasons = Vec::new();
    let level = choose(&PROBE, backend, &mut reasons)?;
    Ok((level, reasons))
}

fn choose(
    probe: &impl Availability,
    backend: Backend,
    reasons: &mut Vec<String>,
) -> Result<Level, SandboxError> {
    fn unavailable<T>(backend: &'static str, r: &Result<T, ProbeError>) -> SandboxError {
        SandboxError::Unavailable {
            backend,
            reason: r
                .as_ref()
                .err()
                .cloned()
                .unwrap_or(ProbeError::Trial("no reason given".into())),
        }
    }
    match backend {
        Backend::None => {
            reasons.push("sandbox disabled (backend none requested)".into());
            Ok(Level::None)
        }
        Backend::Bwrap => match probe.bwrap() {
            Ok(_) => Ok(Level::Bwrap),
            r => Err(unavailable("bwrap", r)),
        },
        Backend::Landlock => match probe.landlock() {
            Ok(_) => Ok(Level::Landlock),
            r => Err(unavailable("landlock", r)),
        },
        Backend::Auto => {
            if cfg!(target_os = "macos") {
                return match probe.seatbelt() {
                    Ok(_) => Ok(Level::Seatbelt),
                    Err(r) => {
                        reasons.push(r.to_string());
                        Ok(Level::None)
                    }
                };
            }
            if probe.bwrap().is_ok() {
                return Ok(Level::Bwrap);
            }
            if let Err(r) = probe.bwrap() {
                reasons.push(r.to_string());
            }
            match probe.landlock() {
                Ok(_) => Ok(Level::Landlock),
                Err(r) => {
                    reasons.push(r.to_string());
                    Ok(Level::None)
                }
            }
        }
    }
}

#[cfg(target_os = "linux")]
fn helper_argv(
    exe: &OsStr,
    config: &helper::HelperConfig,
    program: &OsStr,
    args: &[OsString],
) -> Result<Vec<OsString>, SandboxError> {
    let json = serde_json::to_string(config)
        .map_err(|e| SandboxError::Setup(format!("policy encoding: {e}")))?;
    let mut v = vec![
        exe.to_os_string(),
        helper::HELPER_FLAG.into(),
        json.into(),
        "--".into(),
        program.to_os_string(),
    ];
    v.extend(args.iter().cloned());
    Ok(v)
}

/// The forwarder the helper starts inside the bubblewrap namespace.
#[cfg(target_os = "linux")]
fn forward(policy: &Policy) -> Option<netfwd::Forward> {
    let route = policy
        .proxy
        .as_ref()
        .filter(|_| policy.network == Network::Proxy)?;
    Some(netfwd::Forward {
        socket: netfwd::socket_in_sandbox(route, policy.private_tmp),
        port: route.port,
    })
}

/// At the landlock level, a deny-read path inside a writable root cannot be hidden (Landlock
/// rights are inherited by everything below a grant), so the run is refused rather than go ahead
/// with the secret readable: only bubblewrap's mounts can hide it.
#[cfg(target_os = "linux")]
pub(crate) fn refuse_unhideable(plan: &fs_rules::LandlockPlan) -> Result<(), SandboxError> {
    let unhideable = fs_rules::unhideable(plan);
    if unhideable.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = unhideable.iter().map(|p| p.display().to_string()).collect();
    Err(SandboxError::InvalidPolicy(format!(
        "the landlock level cannot hide {} inside a writable directory; run at the bubblewrap \
         level (install bubblewrap, or --backend bwrap) or start gg in a directory that does \
         not contain it",
        list.join(", ")
    )))
}

#[cfg(target_os = "linux")]
fn seccomp_names(network: Network, standalone: bool) -> serde_json::Value {
    serde_json::json!(
        seccomp::deny_list_with(network, false, standalone)
            .iter()
            .map(|d| d.name)
            .collect::<Vec<_>>()
    )
}

/// A fresh 0700 directory for the command's `TMPDIR` (level landlock, where `/tmp` cannot be
/// made private).
#[cfg(target_os = "linux")]
fn make_private_tmp() -> Result<PathBuf, SandboxError> {
    use std::os::unix::ffi::OsStringExt;
    let base =
        std::fs::canonicalize(std::env::temp_dir()).unwrap_or_else(|_| PathBuf::from("/tmp"));
    let mut template = base
        .join(format!("{PRIVATE_TMP_PREFIX}XXXXXX"))
        .into_os_string()
        .into_vec();
    template.push(0);
    // SAFETY: mkdtemp rewrites the trailing XXXXXX of the NUL-terminated buffer we own.
    let r = unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) };
    if r.is_null() {
        return Err(SandboxError::Setup(format!(
            "temp directory in {}: {}",
            base.display(),
            std::io::Error::last_os_error()
        )));
    }
    template.pop();
    Ok(PathBuf::from(OsString::from_vec(template)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(bwrap: bool, landlock: bool) -> Probe {
        Probe {
            bwrap: if bwrap {
                Ok(bwrap::BwrapInfo {
                    path: "/usr/bin/bwrap".into(),
                    disable_userns: true,
                })
            } else {
                Err(ProbeError::Trial(
                    "bwrap: No permissions to create a new namespace".into(),
                ))
            },
            landlock: if landlock {
                Ok("ok".into())
            } else {
                Err(ProbeError::Kernel(
                    "Landlock not supported by this kernel".into(),
                ))
            },
            seatbelt: Err(ProbeError::Platform("not macOS")),
        }
    }

    #[test]
    fn auto_falls_back_strongest_first_with_reasons() {
        if cfg!(target_os = "macos") {
            return;
        }
        let table = [
            (true, true, Level::Bwrap, 0),
            (false, true, Level::Landlock, 1),
            (false, false, Level::None, 2),
            (true, false, Level::Bwrap, 0),
        ];
        for (b, l, want, n_reasons) in table {
            let mut reasons = Vec::new();
            assert_eq!(
                choose(&probe(b, l), Backend::Auto, &mut reasons).unwrap(),
                want
            );
            assert_eq!(reasons.len(), n_reasons, "{reasons:?}");
        }
        let mut reasons = Vec::new();
        choose(&probe(false, false), Backend::Auto, &mut reasons).unwrap();
        assert_eq!(
            unsandboxed_warning(&reasons),
            "[gg: sandbox unavailable, running unsandboxed: bwrap: No permissions to create a new \
             namespace; Landlock not supported by this kernel]"
        );
    }

    #[test]
    fn explicit_backend_never_falls_back() {
        let mut reasons = Vec::new();
        let err = choose(&probe(false, true), Backend::Bwrap, &mut reasons).unwrap_err();
        assert_eq!(
            err,
            SandboxError::Unavailable {
                backend: "bwrap",
                reason: ProbeError::Trial("bwrap: No permissions to create a new namespace".into())
            }
        );
        assert!(choose(&probe(true, false), Backend::Landlock, &mut reasons).is_err());
        assert_eq!(
            choose(&probe(false, false), Backend::None, &mut reasons).unwrap(),
            Level::None
        );
        assert!(unsandboxed_warning(&reasons).contains("backend none"));
    }

    #[test]
    fn backend_names_parse() {
        assert_eq!("landlock".parse::<Backend>().unwrap(), Backend::Landlock);
        assert!("chroot".parse::<Backend>().is_err());
    }
}
