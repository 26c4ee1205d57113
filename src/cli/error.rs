//! The error type the agent-running commands share (`run` and the session picker in
//! `sessions`), kept apart so neither module reaches into the other for it.

/// A usage or configuration error (exit 2), or a failure (exit 1).
pub enum CliError {
    Usage(String),
    Failed(String),
}
