//! The helper's error type, apart from the helper so that the code it starts inside the sandbox
//! (the command server, the network forwarder) can report through it without importing the
//! helper that imports them.

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
