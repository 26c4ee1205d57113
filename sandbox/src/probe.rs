//! What this machine offers: each sandbox level probed once per process (bubblewrap by one run
//! of the real chain, Landlock and seccomp by the helper's self-test in a child), and why a level
//! cannot be used. Apart from `lib.rs` because probing is set-up work the wrapping itself only
//! asks about ([`Availability`]).

use std::fmt;
#[cfg(target_os = "linux")]
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::{bwrap, helper, own_process_group};
#[cfg(target_os = "linux")]
use crate::{
    fs_rules,
    helper_image::{helper_exe, needs_explicit_bind, standalone_helper_exe},
    probe_cache,
};

/// Why a level cannot be used on this machine (the result of its probe).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeError {
    /// The level does not exist on this platform.
    Platform(&'static str),
    /// No usable binary was found (bubblewrap, `sandbox-exec`).
    NotFound(String),
    /// The kernel lacks or refuses the feature (Landlock).
    Kernel(String),
    /// bubblewrap or the helper could not be started.
    Spawn(String),
    /// The trial run failed; what it reported.
    Trial(String),
    /// Landlock is there but did not enforce the trial ruleset.
    NotEnforced {
        /// The kernel's Landlock ABI.
        abi: i64,
    },
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProbeError::Platform(m) => f.write_str(m),
            ProbeError::NotFound(m)
            | ProbeError::Kernel(m)
            | ProbeError::Spawn(m)
            | ProbeError::Trial(m) => f.write_str(m),
            ProbeError::NotEnforced { abi } => {
                write!(f, "Landlock not enforced (kernel ABI {abi})")
            }
        }
    }
}

impl std::error::Error for ProbeError {}

/// What this machine offers, probed once per process.
#[derive(Debug, Clone)]
pub struct Probe {
    /// A working bubblewrap, or why there is none.
    pub bwrap: Result<bwrap::BwrapInfo, ProbeError>,
    /// The helper works and Landlock is enforced (with the helper's report), or why not.
    pub landlock: Result<String, ProbeError>,
    /// On macOS: whether `sandbox-exec` is usable.
    pub seatbelt: Result<PathBuf, ProbeError>,
}

/// Availability of each level, as `choose` needs it.
pub(crate) trait Availability {
    fn bwrap(&self) -> &Result<bwrap::BwrapInfo, ProbeError>;
    fn landlock(&self) -> &Result<String, ProbeError>;
    fn seatbelt(&self) -> &Result<PathBuf, ProbeError>;
}

impl Availability for Probe {
    fn bwrap(&self) -> &Result<bwrap::BwrapInfo, ProbeError> {
        &self.bwrap
    }
    fn landlock(&self) -> &Result<String, ProbeError> {
        &self.landlock
    }
    fn seatbelt(&self) -> &Result<PathBuf, ProbeError> {
        &self.seatbelt
    }
}

/// Each level is probed the first time it is needed (a `--backend landlock` run never starts
/// bubblewrap, an `auto` run where bubblewrap works never probes the helper alone), then cached.
pub(crate) struct LazyProbe {
    bwrap: OnceLock<Result<bwrap::BwrapInfo, ProbeError>>,
    landlock: OnceLock<Result<String, ProbeError>>,
    seatbelt: OnceLock<Result<PathBuf, ProbeError>>,
}

pub(crate) static PROBE: LazyProbe = LazyProbe {
    bwrap: OnceLock::new(),
    landlock: OnceLock::new(),
    seatbelt: OnceLock::new(),
};

impl Availability for LazyProbe {
    fn bwrap(&self) -> &Result<bwrap::BwrapInfo, ProbeError> {
        self.bwrap.get_or_init(probe_bwrap)
    }
    fn landlock(&self) -> &Result<String, ProbeError> {
        self.landlock.get_or_init(probe_landlock)
    }
    fn seatbelt(&self) -> &Result<PathBuf, ProbeError> {
        self.seatbelt.get_or_init(probe_seatbelt)
    }
}

/// Probes every level (each once per process; later calls return the cached results).
pub fn probe() -> Probe {
    Probe {
        bwrap: PROBE.bwrap().clone(),
        landlock: PROBE.landlock().clone(),
        seatbelt: PROBE.seatbelt().clone(),
    }
}

#[cfg(target_os = "macos")]
fn probe_seatbelt() -> Result<PathBuf, ProbeError> {
    if Path::new(sbpl::SANDBOX_EXEC).is_file() {
        Ok(PathBuf::from(sbpl::SANDBOX_EXEC))
    } else {
        Err(ProbeError::NotFound(format!(
            "{} not found",
            sbpl::SANDBOX_EXEC
        )))
    }
}

#[cfg(not(target_os = "macos"))]
fn probe_seatbelt() -> Result<PathBuf, ProbeError> {
    Err(ProbeError::Platform("sandbox-exec exists only on macOS"))
}

#[cfg(not(target_os = "linux"))]
fn probe_bwrap() -> Result<bwrap::BwrapInfo, ProbeError> {
    Err(ProbeError::Platform("bubblewrap exists only on Linux"))
}

#[cfg(not(target_os = "linux"))]
fn probe_landlock() -> Result<String, ProbeError> {
    Err(ProbeError::Platform("Landlock exists only on Linux"))
}

/// Runs the helper's self-test in a child: it applies Landlock and seccomp and reports.
#[cfg(target_os = "linux")]
fn probe_landlock() -> Result<String, ProbeError> {
    let abi = fs_rules::kernel_abi()?;
    let exe = standalone_helper_exe().map_err(|e| ProbeError::Spawn(e.to_string()))?;
    let key = probe_cache::key("landlock", &[exe.as_path()]);
    if key.as_deref().is_some_and(probe_cache::hit) {
        return Ok(format!("{} (cached) abi={abi}", helper::PROBE_OK));
    }
    let out = own_process_group(&mut Command::new(&exe))
        .args([helper::HELPER_FLAG, helper::PROBE_ARG])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| ProbeError::Spawn(format!("cannot start the sandbox helper: {e}")))?;
    let report = helper_report(&out.stdout).ok_or_else(|| {
        ProbeError::Trial(format!(
            "sandbox helper failed ({}): {}",
            out.status,
            first_line(&out.stderr).unwrap_or("the executable does not dispatch the helper")
        ))
    })?;
    if report.contains("landlock=None") {
        return Err(ProbeError::NotEnforced { abi });
    }
    if report.contains("landlock=Full")
        && let Some(key) = &key
    {
        probe_cache::store(key);
    }
    Ok(report)
}

#[cfg(target_os = "linux")]
fn probe_bwrap() -> Result<bwrap::BwrapInfo, ProbeError> {
    let path = bwrap::BWRAP_LOCATIONS
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .ok_or_else(|| {
            ProbeError::NotFound(format!(
                "bwrap not found in {} (install bubblewrap)",
                bwrap::BWRAP_LOCATIONS.join(", ")
            ))
        })?;
    let mut info = bwrap::BwrapInfo {
        path: path.to_path_buf(),
        disable_userns: true,
    };
    let helper = helper_exe().map_err(|e| ProbeError::Spawn(e.to_string()))?;
    let key = probe_cache::key("bwrap", &[path, helper.as_path()]);
    if key.as_deref().is_some_and(probe_cache::hit) {
        return Ok(info);
    }
    match trial_bwrap(&info) {
        Ok(()) => {
            // Only the full-strength result is remembered: a cached entry can never lower the
            // level or drop a flag, whoever wrote it.
            if let Some(key) = &key {
                probe_cache::store(key);
            }
            Ok(info)
        }
        // bubblewrap < 0.8.0, or a kernel where it cannot lower max_user_namespaces: run
        // without it (seccomp refuses new user namespaces anyway) rather than lose the level.
        Err(ProbeError::Trial(first))
            if first.contains("disable-userns") || first.contains("max_user_namespaces") =>
        {
            info.disable_userns = false;
            trial_bwrap(&info).map(|()| info).map_err(|second| {
                ProbeError::Trial(format!("{first}; without --disable-userns: {second}"))
            })
        }
        Err(e) => Err(e),
    }
}

/// One run of the real chain: bubblewrap with the isolation flags, the helper applying Landlock
/// and seccomp inside it.
#[cfg(target_os = "linux")]
fn trial_bwrap(info: &bwrap::BwrapInfo) -> Result<(), ProbeError> {
    let exe = helper_exe().map_err(|e| ProbeError::Spawn(e.to_string()))?;
    let mut cmd = Command::new(&info.path);
    cmd.args(bwrap::isolation_flags(info))
        .args([
            "--unshare-net",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ])
        .args(["--tmpfs", "/tmp"]);
    if needs_explicit_bind(&exe) {
        cmd.arg("--ro-bind").arg(&exe).arg(&exe);
    }
    let out = own_process_group(&mut cmd)
        .arg("--")
        .arg(&exe)
        .args([helper::HELPER_FLAG, helper::PROBE_ARG])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| ProbeError::Spawn(format!("cannot run {}: {e}", info.path.display())))?;
    if out.status.success() && helper_report(&out.stdout).is_some() {
        return Ok(());
    }
    Err(ProbeError::Trial(match first_line(&out.stderr) {
        Some(line) => line.to_string(),
        None => format!("{} exited with {}", info.path.display(), out.status),
    }))
}

#[cfg(target_os = "linux")]
fn helper_report(stdout: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(stdout).ok()?;
    text.lines()
        .find(|l| l.starts_with(helper::PROBE_OK))
        .map(str::to_string)
}

#[cfg(target_os = "linux")]
fn first_line(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes)
        .ok()?
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
}
