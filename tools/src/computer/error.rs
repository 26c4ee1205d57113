//! What can go wrong with a computer tool's call, from reading its arguments to the desktop's
//! answer. Each variant prints exactly the text the model (or `gg`'s JSON-RPC client) reads, so
//! a refusal is told apart from a failure by its type, not by parsing that text.

use std::fmt;

/// A computer tool call that was refused or failed.
#[derive(Debug)]
pub enum ComputerError {
    /// The arguments are not JSON of the tool's shape (bad JSON, a missing or unknown field).
    Arguments(serde_json::Error),
    /// A text argument is longer than the tool takes.
    TooLong { what: &'static str, max: usize },
    /// An argument parsed but its value is not one the tool takes (a limit, a signal, a sort
    /// order, an open target); the text says which value and what is allowed.
    BadValue(String),
    /// The call is refused outright, before anyone is asked (pid 1, gg itself, ggd, a process
    /// that changed since it was approved); the text starts with `refused:` and says why.
    Refused(String),
    /// A tool name the computer tools do not have.
    UnknownTool(String),
    /// The call was cancelled before or while it ran; the text is what the model reads.
    Cancelled(&'static str),
    /// The blocking work's task ended without an answer (it panicked or was dropped).
    Unfinished(tokio::task::JoinError),
    /// The process to signal is gone, or the signal could not be sent; the text says which.
    Kill(String),
    /// The desktop did not do it (no opener, no clipboard, no notification service, or the
    /// program failed); the text says which and how.
    Desktop(String),
}

impl fmt::Display for ComputerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ComputerError::Arguments(e) => write!(f, "invalid arguments: {e}"),
            ComputerError::TooLong { what, max } => {
                write!(f, "{what} is longer than {max} characters")
            }
            ComputerError::UnknownTool(name) => write!(f, "unknown tool \"{name}\""),
            ComputerError::Unfinished(e) => write!(f, "tool did not finish: {e}"),
            ComputerError::Cancelled(text) => f.write_str(text),
            ComputerError::BadValue(text)
            | ComputerError::Refused(text)
            | ComputerError::Kill(text)
            | ComputerError::Desktop(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for ComputerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ComputerError::Arguments(e) => Some(e),
            ComputerError::Unfinished(e) => Some(e),
            _ => None,
        }
    }
}
