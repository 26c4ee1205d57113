//! Provider errors. Every error carries what the stream had already produced so the caller can
//! persist it.

use std::fmt;

use super::types::{StopReason, Usage};

/// Output already streamed when a request failed. Tool calls are deliberately absent: a call from
/// a failed stream may be half-assembled and must never be executed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partial {
    /// Text deltas received before the failure.
    pub text: String,
    /// Reasoning deltas received before the failure.
    pub reasoning: String,
    /// Usage, if the server reported one before failing.
    pub usage: Option<Usage>,
    /// [`StopReason::MaxTokens`] for a `length` finish, else [`StopReason::Error`].
    pub stop_reason: StopReason,
}

impl Default for Partial {
    fn default() -> Self {
        Partial {
            text: String::new(),
            reasoning: String::new(),
            usage: None,
            stop_reason: StopReason::Error,
        }
    }
}

/// What went wrong, for callers that branch on it. The user-facing text is the error's
/// [`Display`](fmt::Display).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// No API key configured.
    MissingApiKey,
    /// No base URL configured.
    MissingBaseUrl,
    /// The base URL is not a usable `http`/`https` URL, or the HTTP client could not be built.
    InvalidConfig,
    /// The caller cancelled the request.
    Canceled,
    /// Establishing the TCP/TLS connection took longer than the connect timeout.
    ConnectTimeout,
    /// The server sent no bytes (headers or body) for the idle timeout.
    IdleTimeout,
    /// Sending the request failed (refused, reset, DNS, TLS...).
    Transport,
    /// The server answered with a non-2xx status.
    Http {
        /// The HTTP status code.
        status: u16,
    },
    /// The connection broke or ended before the stream was complete.
    Interrupted,
    /// The stream carried a top-level `error` object.
    ModelError,
    /// A stream chunk was not valid JSON of the expected shape.
    MalformedChunk,
    /// One SSE event exceeded the 8 MiB limit.
    EventTooLarge,
    /// `finish_reason: "length"`.
    OutputLimit,
    /// A finish reason gg does not know.
    UnknownFinishReason,
    /// A tool call lacked an id or name, or its arguments are not a JSON object.
    InvalidToolCall,
    /// `finish_reason: "tool_calls"` without any call.
    MissingToolCall,
}

/// A failed provider request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderError {
    kind: ErrorKind,
    message: String,
    partial: Partial,
}

impl ProviderError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ProviderError {
            kind,
            message: message.into(),
            partial: Partial::default(),
        }
    }

    pub(crate) fn with_partial(mut self, partial: Partial) -> Self {
        self.partial = partial;
        self
    }

    /// The error category.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The user-facing message (same as `Display`).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Output streamed before the failure; the caller persists it.
    pub fn partial(&self) -> &Partial {
        &self.partial
    }

    /// Takes the partial output out of the error.
    pub fn into_partial(self) -> Partial {
        self.partial
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProviderError {}

/// Makes server-controlled text safe to show in a terminal: control characters other than
/// newline and tab are escaped so a hostile server cannot inject terminal escape sequences
/// through an error message.
pub(crate) fn sanitize_server_text(text: &str) -> String {
    termsafe::visible(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_escapes_terminal_controls_but_keeps_newlines() {
        assert_eq!(
            sanitize_server_text("a\u{1b}[2Jb\nc\td\r"),
            "a\\x1b[2Jb\nc\td\\r"
        );
    }
}
