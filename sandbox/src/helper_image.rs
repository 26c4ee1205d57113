//! Which executable applies the restrictions inside a sandbox: the small `gg-sandbox-helper`
//! beside the host binary when it is of this very build, else the host binary itself. Apart
//! from `lib.rs` because it is decided once per process and cached across processes.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use std::process::Command;

#[cfg(target_os = "linux")]
use crate::probe_cache;
use crate::{SandboxError, helper, own_process_group};

/// File name of the small helper binary installed beside `gg` and `ggd`.
pub const HELPER_BINARY: &str = "gg-sandbox-helper";

/// Set to any value to run the host binary itself as the helper even when a matching
/// `gg-sandbox-helper` lies beside it (benchmarks compare the two; a debugging aid).
pub const SELF_HELPER_ENV: &str = "GG_SANDBOX_SELF_HELPER";

/// The executable that applies the restrictions (the helper, the command server).
#[cfg(target_os = "linux")]
#[derive(Debug, Clone)]
pub struct HelperImage {
    /// Canonical path, as bound into bubblewrap and executed.
    pub path: PathBuf,
    /// `gg-sandbox-helper` rather than the host binary.
    pub separate: bool,
}

/// Which executable runs as the helper, decided once per process: `gg-sandbox-helper` beside
/// the host binary when it is of this very build, otherwise the host binary itself.
///
/// Why a second binary: every sandboxed command (and the session's command server) starts the
/// helper, and the host binary is large; loading and relocating it cost about 1.5 ms of CPU per
/// start here, the small helper a tenth of that (docs/performance.md). Why "of this very build":
/// the helper enforces what the host rendered, so one from another build is never used; it would
/// also refuse to run ([`helper::HELPER_FLAG`]).
#[cfg(target_os = "linux")]
pub fn helper_image() -> Result<&'static HelperImage, SandboxError> {
    static IMAGE: OnceLock<Result<HelperImage, String>> = OnceLock::new();
    IMAGE
        .get_or_init(|| {
            let exe = std::env::current_exe().map_err(|e| format!("current executable: {e}"))?;
            let exe = std::fs::canonicalize(&exe).map_err(|e| format!("{}: {e}", exe.display()))?;
            if std::env::var_os(SELF_HELPER_ENV).is_none()
                && let Some(sibling) = exe.parent().map(|d| d.join(HELPER_BINARY))
                && sibling != exe
                && helper_is_this_build(&sibling)
            {
                return Ok(HelperImage {
                    path: sibling,
                    separate: true,
                });
            }
            Ok(HelperImage {
                path: exe,
                separate: false,
            })
        })
        .as_ref()
        .map_err(|e| SandboxError::Setup(e.clone()))
}

/// Whether `path` is an executable helper of this build: asked once (`--identify`), then
/// remembered across processes under a key naming the file (device, inode, size, time), the host
/// binary and the build.
#[cfg(target_os = "linux")]
fn helper_is_this_build(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => {}
        _ => return false,
    }
    let key =
        probe_cache::key("helper", &[path]).map(|k| format!("{k} build={}", helper::BUILD_ID));
    if key.as_deref().is_some_and(probe_cache::hit) {
        return true;
    }
    let answer = own_process_group(&mut Command::new(path))
        .args([helper::HELPER_FLAG, helper::IDENTIFY_ARG])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let matches = answer.is_ok_and(|out| {
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == helper::BUILD_ID
    });
    if matches && let Some(key) = &key {
        probe_cache::store(key);
    }
    matches
}

/// The helper executable as seen inside bubblewrap.
#[cfg(target_os = "linux")]
pub(crate) fn helper_exe() -> Result<PathBuf, SandboxError> {
    helper_image().map(|h| h.path.clone())
}

/// The helper executable to start without bubblewrap: the separate helper, or
/// `/proc/self/exe` for the host binary (the running image even if the file on disk was
/// replaced).
#[cfg(target_os = "linux")]
pub(crate) fn standalone_helper_exe() -> Result<PathBuf, SandboxError> {
    helper_image().map(|h| {
        if h.separate {
            h.path.clone()
        } else {
            PathBuf::from("/proc/self/exe")
        }
    })
}

/// Whether the executable sits where bubblewrap mounts an empty tmpfs.
#[cfg(target_os = "linux")]
pub(crate) fn needs_explicit_bind(exe: &Path) -> bool {
    ["/tmp", "/run", "/var/run", "/dev"]
        .iter()
        .any(|d| exe.starts_with(d))
}
