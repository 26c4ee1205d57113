//! JSON-RPC 2.0 framing: newline-delimited lines with a size cap, request validation, responses
//! and the daemon's application error codes.
//!
//! Everything here is pure so the fuzz target and the transports share one parser.

use serde_json::{Map, Value, json};

/// Largest accepted line (stdio) or body (HTTP).
pub const MAX_MESSAGE_BYTES: usize = 4 << 20;
/// The protocol version reported by `system.info` and `/health`.
pub const PROTOCOL_VERSION: &str = "1.6";

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn invalid_params(message: impl std::fmt::Display) -> RpcError {
        RpcError::new(INVALID_PARAMS, format!("invalid params: {message}"))
    }

    /// An application error: numeric code plus `data: {code, retryable}`.
    pub fn app(kind: AppError, message: impl Into<String>) -> RpcError {
        RpcError {
            code: kind.code(),
            message: message.into(),
            data: Some(json!({"code": kind.name(), "retryable": kind.retryable()})),
        }
    }

    pub fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let (Some(data), Some(object)) = (&self.data, error.as_object_mut()) {
            object.insert("data".to_string(), data.clone());
        }
        error
    }
}

/// The application errors of docs/daemon-protocol.md, plus the design's run limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppError {
    SessionNotFound,
    RunNotFound,
    RunConflict,
    ApprovalExpired,
    EventHistoryExpired,
    SessionConflict,
    InvalidAction,
    WorkspaceMismatch,
    /// `--max-active-runs` reached; retry when a run finishes.
    RunLimitReached,
    /// The daemon is shutting down and accepts no new runs.
    ShuttingDown,
    /// No such artifact or library entry (`-32000`, `data.code` says which).
    ArtifactNotFound,
    /// The artifact changed while it was being published; nothing was published (retryable).
    ArtifactVersionChanged,
    /// Everything else (`-32000`).
    Other,
}

impl AppError {
    pub fn code(self) -> i64 {
        match self {
            AppError::SessionNotFound => -32001,
            AppError::RunNotFound => -32002,
            AppError::RunConflict => -32003,
            AppError::ApprovalExpired => -32004,
            AppError::EventHistoryExpired => -32005,
            AppError::SessionConflict => -32006,
            AppError::InvalidAction => -32007,
            AppError::WorkspaceMismatch => -32008,
            AppError::RunLimitReached => -32009,
            AppError::ShuttingDown
            | AppError::ArtifactNotFound
            | AppError::ArtifactVersionChanged
            | AppError::Other => -32000,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AppError::SessionNotFound => "session_not_found",
            AppError::RunNotFound => "run_not_found",
            AppError::RunConflict => "run_conflict",
            AppError::ApprovalExpired => "approval_expired",
            AppError::EventHistoryExpired => "event_history_expired",
            AppError::SessionConflict => "session_conflict",
            AppError::InvalidAction => "invalid_action",
            AppError::WorkspaceMismatch => "workspace_mismatch",
            AppError::RunLimitReached => "run_limit_reached",
            AppError::ShuttingDown => "shutting_down",
            AppError::ArtifactNotFound => "artifact_not_found",
            AppError::ArtifactVersionChanged => "artifact_version_changed",
            AppError::Other => "internal",
        }
    }

    pub fn retryable(self) -> bool {
        matches!(
            self,
            AppError::RunConflict
                | AppError::EventHistoryExpired
                | AppError::SessionConflict
                | AppError::RunLimitReached
                | AppError::ArtifactVersionChanged
        )
    }
}

/// A validated request. `id == None` is a notification: it is handled but never answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: Option<Value>,
    pub method: String,
    /// Absent or `null` params become `{}`.
    pub params: Value,
}

/// Why a message is not a request, and the id to answer with (if one could be read).
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    pub id: Option<Value>,
    pub error: RpcError,
}

/// Parses one message. Bad JSON is `-32700` without id; a JSON value that is not a valid
/// request is `-32600` (answered with its id when it has one).
pub fn parse_request(bytes: &[u8]) -> Result<Request, Rejected> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| Rejected {
        id: None,
        error: RpcError::new(PARSE_ERROR, format!("parse error: {e}")),
    })?;
    let Value::Object(mut object) = value else {
        return Err(Rejected {
            id: None,
            error: RpcError::new(INVALID_REQUEST, "invalid request: expected an object"),
        });
    };
    let id = object.remove("id");
    let invalid = |id: Option<Value>, message: &str| Rejected {
        id,
        error: RpcError::new(INVALID_REQUEST, format!("invalid request: {message}")),
    };
    if let Some(id) = &id
        && !matches!(id, Value::String(_) | Value::Number(_) | Value::Null)
    {
        return Err(invalid(None, "id must be a string, number or null"));
    }
    match object.get("jsonrpc") {
        None => {}
        Some(Value::String(v)) if v == "2.0" => {}
        Some(_) => return Err(invalid(id, "jsonrpc must be \"2.0\"")),
    }
    let method = match object.remove("method") {
        Some(Value::String(m)) if !m.is_empty() => m,
        _ => return Err(invalid(id, "method is required")),
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(p) => p,
    };
    Ok(Request { id, method, params })
}

/// A response object for `id`.
pub fn response(id: &Value, result: Result<Value, RpcError>) -> Value {
    match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}),
    }
}

/// [`response`] as JSON text, with a result that is already JSON text (written in place, not
/// parsed again).
pub fn response_text(id: &Value, result: Result<String, RpcError>) -> String {
    match result {
        Ok(result) => format!("{{\"id\":{id},\"jsonrpc\":\"2.0\",\"result\":{result}}}"),
        Err(error) => response(id, Err(error)).to_string(),
    }
}

/// An error response that has no request id (parse errors).
pub fn error_without_id(error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": Value::Null, "error": error.to_json()})
}

/// One item cut from a byte stream by [`LineFramer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete line without its `\n` (and without a trailing `\r`).
    Line(Vec<u8>),
    /// A line longer than [`MAX_MESSAGE_BYTES`]; its bytes were discarded.
    Oversized,
}

/// Splits a byte stream into lines, never buffering more than the cap: an oversized line is
/// dropped as it arrives and reported once when its newline comes.
#[derive(Debug, Default)]
pub struct LineFramer {
    buffer: Vec<u8>,
    overflowed: bool,
    limit: Option<usize>,
}

impl LineFramer {
    pub fn new() -> LineFramer {
        LineFramer::default()
    }

    /// A framer with a smaller cap (tests and fuzzing).
    pub fn with_limit(limit: usize) -> LineFramer {
        LineFramer {
            limit: Some(limit),
            ..LineFramer::default()
        }
    }

    fn limit(&self) -> usize {
        self.limit.unwrap_or(MAX_MESSAGE_BYTES)
    }

    /// Feeds bytes; returns the frames they completed. Blank lines are skipped.
    pub fn push(&mut self, mut bytes: &[u8]) -> Vec<Frame> {
        let mut frames = Vec::new();
        while !bytes.is_empty() {
            let (chunk, complete, rest) = match memchr::memchr(b'\n', bytes) {
                Some(at) => (&bytes[..at], true, &bytes[at + 1..]),
                None => (bytes, false, &[][..]),
            };
            bytes = rest;
            if !self.overflowed {
                if self.buffer.len() + chunk.len() > self.limit() {
                    self.overflowed = true;
                    self.buffer = Vec::new();
                } else {
                    self.buffer.extend_from_slice(chunk);
                }
            }
            if complete {
                frames.extend(self.take());
            }
        }
        frames
    }

    /// Ends the stream: an unterminated last line still counts.
    pub fn finish(&mut self) -> Option<Frame> {
        self.take()
    }

    fn take(&mut self) -> Option<Frame> {
        if std::mem::take(&mut self.overflowed) {
            self.buffer.clear();
            return Some(Frame::Oversized);
        }
        let mut line = std::mem::take(&mut self.buffer);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        Some(Frame::Line(line))
    }
}

/// The error answered for an oversized line.
pub fn oversized_error() -> RpcError {
    RpcError::new(
        PARSE_ERROR,
        format!("parse error: message exceeds {MAX_MESSAGE_BYTES} bytes"),
    )
}

/// The line cap [`exercise`] uses, small so oversized lines are reached quickly.
pub const EXERCISE_LIMIT: usize = 256;

/// The fuzz target's body, shared with the stable corpus replay test: the first byte picks the
/// read size the rest is split into. Checks that read boundaries never change the frames, that
/// every line respects the cap and holds no newline, that every line and the whole input (the
/// HTTP body path) parse without panicking into either a request or a `-32700`/`-32600`
/// rejection, and that answers encode. Panics on any violation.
pub fn exercise(data: &[u8]) {
    let Some((&stride, body)) = data.split_first() else {
        return;
    };
    let frames = |chunks: &mut dyn Iterator<Item = &[u8]>| {
        let mut framer = LineFramer::with_limit(EXERCISE_LIMIT);
        let mut frames: Vec<Frame> = chunks.flat_map(|chunk| framer.push(chunk)).collect();
        frames.extend(framer.finish());
        frames
    };
    let whole = frames(&mut std::iter::once(body));
    let split = frames(&mut body.chunks(usize::from(stride).max(1)));
    assert_eq!(whole, split, "read boundaries changed the frames");
    let check = |message: &[u8]| match parse_request(message) {
        Ok(request) => {
            assert!(!request.method.is_empty());
            assert!(!request.params.is_null());
            let id = request.id.clone().unwrap_or(Value::Null);
            let answer = response(&id, Err(RpcError::new(METHOD_NOT_FOUND, request.method)));
            assert!(serde_json::to_vec(&answer).is_ok());
        }
        Err(rejected) => {
            assert!(matches!(rejected.error.code, PARSE_ERROR | INVALID_REQUEST));
            assert!(serde_json::to_vec(&error_without_id(&rejected.error)).is_ok());
        }
    };
    for frame in &whole {
        if let Frame::Line(line) = frame {
            assert!(line.len() <= EXERCISE_LIMIT, "a line exceeded the cap");
            assert!(!line.contains(&b'\n'));
            check(line);
        }
    }
    check(body);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The method and params of a valid request, or the error code.
    type Expected = Result<(&'static str, Value), i64>;

    #[test]
    fn requests_are_validated() {
        let cases: [(&str, Expected); 9] = [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"a"}"#,
                Ok(("a", json!({}))),
            ),
            (
                r#"{"id":1,"method":"a","params":null}"#,
                Ok(("a", json!({}))),
            ),
            (
                r#"{"id":"x","method":"a","params":{"k":1}}"#,
                Ok(("a", json!({"k":1}))),
            ),
            (
                r#"{"jsonrpc":"1.0","id":1,"method":"a"}"#,
                Err(INVALID_REQUEST),
            ),
            (r#"{"id":1}"#, Err(INVALID_REQUEST)),
            (r#"{"id":1,"method":""}"#, Err(INVALID_REQUEST)),
            (r#"{"id":{},"method":"a"}"#, Err(INVALID_REQUEST)),
            (r#"[1,2]"#, Err(INVALID_REQUEST)),
            (r#"{"id":1,"method":"#, Err(PARSE_ERROR)),
        ];
        for (input, want) in cases {
            let got = parse_request(input.as_bytes());
            match (got, want) {
                (Ok(r), Ok((method, params))) => {
                    assert_eq!(r.method, method, "{input}");
                    assert_eq!(r.params, params, "{input}");
                }
                (Err(r), Err(code)) => assert_eq!(r.error.code, code, "{input}"),
                (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn notifications_have_no_id() {
        let r = parse_request(br#"{"method":"x"}"#).unwrap();
        assert_eq!(r.id, None);
    }

    #[test]
    fn framer_splits_lines_across_pushes_and_caps_them() {
        let mut framer = LineFramer::with_limit(8);
        assert_eq!(framer.push(b"ab"), vec![]);
        assert_eq!(
            framer.push(b"c\r\n\n  \nd"),
            vec![Frame::Line(b"abc".to_vec())]
        );
        assert_eq!(
            framer.push(b"123456789\nok\n"),
            vec![Frame::Oversized, Frame::Line(b"ok".to_vec())]
        );
        assert_eq!(framer.push(b"tail"), vec![]);
        assert_eq!(framer.finish(), Some(Frame::Line(b"tail".to_vec())));
        assert_eq!(framer.finish(), None);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_keep_the_framing_invariants(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..2048),
        ) {
            exercise(&data);
        }

        #[test]
        fn requests_survive_any_read_boundaries(
            methods in proptest::collection::vec(".{1,40}", 1..12),
            stride in 1usize..97,
        ) {
            let mut stream = Vec::new();
            for (id, method) in methods.iter().enumerate() {
                let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"text": "a\nb"}});
                stream.extend_from_slice(line.to_string().as_bytes());
                stream.push(b'\n');
            }
            let mut framer = LineFramer::new();
            let mut parsed = Vec::new();
            for chunk in stream.chunks(stride) {
                for frame in framer.push(chunk) {
                    let Frame::Line(line) = frame else { panic!("unexpected oversized frame") };
                    parsed.push(parse_request(&line).map(|r| r.method).map_err(|r| r.error));
                }
            }
            proptest::prop_assert_eq!(framer.finish(), None);
            let want: Vec<Result<String, RpcError>> = methods.iter().cloned().map(Ok).collect();
            proptest::prop_assert_eq!(parsed, want);
        }
    }

    #[test]
    fn app_errors_carry_code_and_retryable() {
        let e = RpcError::app(AppError::RunConflict, "busy").to_json();
        assert_eq!(
            e,
            json!({"code": -32003, "message": "busy", "data": {"code": "run_conflict", "retryable": true}})
        );
    }
}
