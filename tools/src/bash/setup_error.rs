//! Why a confined command's sandbox could not be set up. The command does not run, and the
//! tool result is `sandbox could not be set up: <this error>`, in the words it always had; the
//! type tells a refusal (the home directory as a writable root, a protection that does not hold
//! with nobody here) from a failure (the policy, the wrapper, the proxy).

use std::fmt;
use std::path::PathBuf;

use crate::network::NetworkError;

/// A confined command's sandbox that could not be set up.
#[derive(Debug)]
pub enum SetupError {
    /// `GG_SANDBOX_BACKEND` names no backend: every sandboxed command fails rather than pick one.
    BackendOverride(sandbox::SandboxError),
    /// The self-test of the level found protections that do not hold (or did not finish) and
    /// no person is here to decide; `finding` is its one-line report.
    Unproven { finding: String },
    /// The sandbox's policy could not be built, or the command not wrapped in it.
    Sandbox(sandbox::SandboxError),
    /// A writable root at or above the home directory: refused, whatever the mode.
    HomeWritable { root: PathBuf },
    /// The network policy could not be applied (the proxy did not start).
    Network(NetworkError),
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupError::BackendOverride(e) => write!(f, "GG_SANDBOX_BACKEND: {e}"),
            SetupError::Unproven { finding } => write!(
                f,
                "{finding}; no person is here to decide, so no command runs (see `gg sandbox \
                 --self-test`)"
            ),
            SetupError::Sandbox(e) => write!(f, "{e}"),
            SetupError::HomeWritable { root } => write!(
                f,
                "{} is the home directory, contains it, or lies in the home's configuration (a \
                 dot-directory of home, or ~/bin): a sandboxed command could write the person's \
                 start-up files or git's global configuration there, which run outside the \
                 sandbox later; start gg in a project directory",
                root.display()
            ),
            SetupError::Network(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for SetupError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SetupError::BackendOverride(e) | SetupError::Sandbox(e) => Some(e),
            SetupError::Network(e) => Some(e),
            SetupError::Unproven { .. } | SetupError::HomeWritable { .. } => None,
        }
    }
}

impl From<NetworkError> for SetupError {
    fn from(e: NetworkError) -> SetupError {
        SetupError::Network(e)
    }
}

impl From<sandbox::SandboxError> for SetupError {
    fn from(e: sandbox::SandboxError) -> SetupError {
        SetupError::Sandbox(e)
    }
}
