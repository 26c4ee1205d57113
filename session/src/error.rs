//! Errors of the session store.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Everything that can go wrong while reading or writing a session.
#[derive(Debug)]
pub enum SessionError {
    /// Another process advanced the session file since this process last read it. The caller
    /// must drop its in-memory state and reopen the session by id; nothing was written.
    Conflict {
        /// Id of the session that has to be reopened.
        session_id: String,
    },
    /// Another process holds the writer lease and did not release it within the wait budget.
    Locked {
        /// The lease file that was held.
        lock_path: PathBuf,
    },
    /// No session matched the requested id.
    NotFound {
        /// The id or path the caller asked for.
        target: String,
    },
    /// A session file is not a valid session; the file was left untouched.
    Corrupt {
        /// The offending file.
        path: PathBuf,
        /// 1-based physical line number, or 0 when the problem is not tied to one line.
        line: usize,
        /// What is wrong with the line.
        reason: String,
    },
    /// The caller asked for something the session cannot do (unknown entry, wrong node type, ...).
    Invalid(String),
    /// An operating-system error on a named file.
    Io {
        /// What the store was doing.
        action: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

impl SessionError {
    pub(crate) fn io(action: &'static str, path: &Path, source: io::Error) -> Self {
        SessionError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn corrupt(path: &Path, line: usize, reason: impl Into<String>) -> Self {
        SessionError::Corrupt {
            path: path.to_path_buf(),
            line,
            reason: reason.into(),
        }
    }

    /// True for the errors a daemon reports as a retryable `session_conflict`
    /// (a stale snapshot or a lease that is held elsewhere).
    pub fn is_retryable_conflict(&self) -> bool {
        matches!(
            self,
            SessionError::Conflict { .. } | SessionError::Locked { .. }
        )
    }
}

impl fmt::Display for SessionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SessionError::Conflict { session_id } => {
                write!(
                    f,
                    "session changed by another process; reopen session {session_id}"
                )
            }
            SessionError::Locked { .. } => f.write_str("session is locked by another process"),
            SessionError::NotFound { target } => write!(f, "session not found: {target}"),
            SessionError::Corrupt { path, line, reason } => {
                if *line == 0 {
                    write!(f, "{}: {reason}", path.display())
                } else {
                    write!(f, "{}:{line}: {reason}", path.display())
                }
            }
            SessionError::Invalid(message) => f.write_str(message),
            SessionError::Io {
                action,
                path,
                source,
            } => {
                write!(f, "{action} {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for SessionError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SessionError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Result alias of the session store.
pub type Result<T> = std::result::Result<T, SessionError>;
