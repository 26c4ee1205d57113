//! Turns the SSE events of a chat-completions stream into an [`AssistantReply`].
//!
//! Text and reasoning deltas are forwarded to the caller as each event completes; tool calls are
//! assembled from indexed fragments and validated only once the stream has ended, so a caller
//! never sees a half-built call.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use serde::Deserialize;

use super::error::{ErrorKind, Partial, ProviderError, sanitize_server_text};
use super::sse::{EventTooLarge, MAX_EVENT_BYTES, SseFramer};
use super::types::{AssistantReply, StopReason, StreamEvent, ToolCall, Usage};

pub(crate) const MSG_INTERRUPTED_EOF: &str = "model stream interrupted: unexpected EOF";
pub(crate) const MSG_OUTPUT_LIMIT: &str =
    "model output reached its token limit; response is incomplete";
pub(crate) const MSG_INVALID_TOOL_CALL: &str = "incomplete or invalid tool call in model stream";
pub(crate) const MSG_MISSING_TOOL_CALL: &str =
    "model requested tools without providing a tool call";

/// Longest server-provided string (finish reason, error message) quoted in an error.
const MAX_QUOTED_SERVER_TEXT: usize = 8192;

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCallDelta>>,
}

#[derive(Deserialize)]
struct WireToolCallDelta {
    #[serde(default)]
    index: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunctionDelta>,
}

#[derive(Deserialize)]
struct WireFunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Accumulates one streamed reply.
#[derive(Default)]
pub(crate) struct StreamAssembler {
    text: String,
    reasoning: String,
    calls: BTreeMap<u32, PartialCall>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    saw_done: bool,
}

impl StreamAssembler {
    /// Applies the data of one SSE event. Returns `Break` after `[DONE]`.
    pub(crate) fn apply_event(
        &mut self,
        data: &[u8],
        sink: &mut dyn FnMut(StreamEvent),
    ) -> Result<ControlFlow<()>, ProviderError> {
        let trimmed = data.trim_ascii();
        if trimmed == b"[DONE]" {
            self.saw_done = true;
            return Ok(ControlFlow::Break(()));
        }
        if trimmed.is_empty() {
            return Ok(ControlFlow::Continue(()));
        }
        let chunk: WireChunk = serde_json::from_slice(trimmed).map_err(|err| {
            self.fail(
                ErrorKind::MalformedChunk,
                format!("model stream returned malformed JSON: {err}"),
            )
        })?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            let message = match &error {
                serde_json::Value::String(s) => s.clone(),
                other => match other.get("message") {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    _ => "unknown error".to_string(),
                },
            };
            let message = sanitize_server_text(termsafe::clip(&message, MAX_QUOTED_SERVER_TEXT));
            return Err(self.fail(
                ErrorKind::ModelError,
                format!("model stream error: {message}"),
            ));
        }
        if let Some(usage) = chunk.usage {
            let usage = Usage {
                prompt_tokens: usage.prompt_tokens.unwrap_or(0),
                completion_tokens: usage.completion_tokens.unwrap_or(0),
                total_tokens: usage.total_tokens.unwrap_or(0),
            };
            if usage != Usage::default() {
                self.usage = Some(usage);
            }
        }
        for choice in chunk.choices.into_iter().flatten() {
            if let Some(delta) = choice.delta {
                if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                    self.text.push_str(&text);
                    sink(StreamEvent::TextDelta(text));
                }
                if let Some(text) = delta.reasoning_content.filter(|t| !t.is_empty()) {
                    self.reasoning.push_str(&text);
                    sink(StreamEvent::ThinkingDelta(text));
                }
                for fragment in delta.tool_calls.into_iter().flatten() {
                    let call = self.calls.entry(fragment.index.unwrap_or(0)).or_default();
                    if let Some(id) = fragment.id.filter(|s| !s.is_empty()) {
                        call.id = id;
                    }
                    if let Some(function) = fragment.function {
                        if let Some(name) = function.name.filter(|s| !s.is_empty()) {
                            call.name = name;
                        }
                        if let Some(args) = function.arguments {
                            call.arguments.push_str(&args);
                        }
                    }
                }
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finish_reason = Some(reason);
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// The text streamed so far, for errors raised outside the assembler (transport, timeout,
    /// cancellation).
    pub(crate) fn partial(&self) -> Partial {
        Partial {
            text: self.text.clone(),
            reasoning: self.reasoning.clone(),
            usage: self.usage,
            stop_reason: StopReason::Error,
        }
    }

    pub(crate) fn fail(&self, kind: ErrorKind, message: impl Into<String>) -> ProviderError {
        ProviderError::new(kind, message).with_partial(self.partial())
    }

    pub(crate) fn event_too_large(&self) -> ProviderError {
        self.fail(
            ErrorKind::EventTooLarge,
            format!(
                "model stream event exceeds the {} MiB limit",
                MAX_EVENT_BYTES / (1024 * 1024)
            ),
        )
    }

    /// Applies the end-of-stream rules once the body ended (or `[DONE]` arrived).
    pub(crate) fn finish(self) -> Result<AssistantReply, ProviderError> {
        let reason = self.finish_reason.as_deref().unwrap_or("");
        if !self.saw_done && self.finish_reason.is_none() {
            return Err(self.fail(ErrorKind::Interrupted, MSG_INTERRUPTED_EOF));
        }
        match reason {
            "" | "stop" | "tool_calls" => {}
            "length" => {
                let mut partial = self.partial();
                partial.stop_reason = StopReason::MaxTokens;
                return Err(ProviderError::new(ErrorKind::OutputLimit, MSG_OUTPUT_LIMIT)
                    .with_partial(partial));
            }
            other => {
                let shown = sanitize_server_text(termsafe::clip(other, MAX_QUOTED_SERVER_TEXT));
                return Err(self.fail(
                    ErrorKind::UnknownFinishReason,
                    format!("model response ended with {shown:?}"),
                ));
            }
        }
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for call in self.calls.values() {
            let arguments_are_object = matches!(
                serde_json::from_str::<serde_json::Value>(&call.arguments),
                Ok(serde_json::Value::Object(_))
            );
            if call.id.is_empty() || call.name.is_empty() || !arguments_are_object {
                return Err(self.fail(ErrorKind::InvalidToolCall, MSG_INVALID_TOOL_CALL));
            }
            tool_calls.push(ToolCall {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            });
        }
        if reason == "tool_calls" && tool_calls.is_empty() {
            return Err(self.fail(ErrorKind::MissingToolCall, MSG_MISSING_TOOL_CALL));
        }
        let stop_reason = if tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        };
        Ok(AssistantReply {
            text: self.text,
            reasoning: self.reasoning,
            tool_calls,
            usage: self.usage,
            stop_reason,
        })
    }
}

/// Incremental parser of a whole response body: SSE framing plus assembly.
///
/// The HTTP client feeds it socket reads; it is public so the fuzz target, the corpus replay
/// test and the benchmark exercise exactly the code the client runs.
pub struct StreamParser {
    framer: SseFramer,
    assembler: StreamAssembler,
    done: bool,
    /// The first error; once set, every later call returns it again (fail closed: a parser that
    /// failed must never go on to report success).
    failed: Option<ProviderError>,
}

impl Default for StreamParser {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamParser {
    /// A parser with the standard 8 MiB event cap.
    pub fn new() -> Self {
        StreamParser {
            framer: SseFramer::default(),
            assembler: StreamAssembler::default(),
            done: false,
            failed: None,
        }
    }

    /// True once `[DONE]` was seen; further bytes are ignored.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds one read from the body. Deltas go to `sink` as their events complete.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        sink: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), ProviderError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        if self.done {
            return Ok(());
        }
        let result = self.feed_inner(bytes, sink);
        if let Err(err) = &result {
            self.failed = Some(err.clone());
        }
        result
    }

    fn feed_inner(
        &mut self,
        bytes: &[u8],
        sink: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), ProviderError> {
        let mut failure = None;
        let assembler = &mut self.assembler;
        let mut on_event = |data: &[u8]| match assembler.apply_event(data, sink) {
            Ok(flow) => flow,
            Err(err) => {
                failure = Some(err);
                ControlFlow::Break(())
            }
        };
        let flow = match self.framer.feed(bytes, &mut on_event) {
            Ok(flow) => flow,
            Err(EventTooLarge) => return Err(self.assembler.event_too_large()),
        };
        if let Some(err) = failure {
            return Err(err);
        }
        if flow.is_break() {
            self.done = true;
        }
        Ok(())
    }

    /// Output so far, for errors raised by the transport.
    pub fn partial(&self) -> Partial {
        self.assembler.partial()
    }

    /// Builds an error of `kind` carrying the output so far.
    pub fn fail(&self, kind: ErrorKind, message: impl Into<String>) -> ProviderError {
        self.assembler.fail(kind, message)
    }

    /// The body ended cleanly (or `[DONE]` arrived): applies the end-of-stream rules.
    pub fn finish(
        mut self,
        sink: &mut dyn FnMut(StreamEvent),
    ) -> Result<AssistantReply, ProviderError> {
        if let Some(err) = self.failed {
            return Err(err);
        }
        if !self.done {
            let mut failure = None;
            let assembler = &mut self.assembler;
            let _ =
                self.framer
                    .finish(&mut |data: &[u8]| match assembler.apply_event(data, sink) {
                        Ok(flow) => flow,
                        Err(err) => {
                            failure = Some(err);
                            ControlFlow::Break(())
                        }
                    });
            if let Some(err) = failure {
                return Err(err);
            }
        }
        self.assembler.finish()
    }
}

/// Parses a complete recorded body delivered in `chunks` (convenience for tests, fuzzing and
/// benchmarks).
pub fn parse_recorded_stream<'a>(
    chunks: impl IntoIterator<Item = &'a [u8]>,
    sink: &mut dyn FnMut(StreamEvent),
) -> Result<AssistantReply, ProviderError> {
    let mut parser = StreamParser::new();
    for chunk in chunks {
        parser.feed(chunk, sink)?;
        if parser.is_done() {
            break;
        }
    }
    parser.finish(sink)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> (Result<AssistantReply, ProviderError>, Vec<StreamEvent>) {
        let mut events = Vec::new();
        let result = parse_recorded_stream([body.as_bytes()], &mut |e| events.push(e));
        (result, events)
    }

    fn sse(chunks: &[&str]) -> String {
        chunks.iter().map(|c| format!("data: {c}\n\n")).collect()
    }

    #[test]
    fn text_reasoning_and_usage() {
        let body = sse(&[
            r#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo","role":"assistant"},"finish_reason":null}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}"#,
            "[DONE]",
        ]);
        let (result, events) = parse(&body);
        let reply = result.expect("valid stream");
        assert_eq!(reply.text, "Hello");
        assert_eq!(reply.reasoning, "hmm");
        assert_eq!(reply.stop_reason, StopReason::EndTurn);
        assert_eq!(
            reply.usage,
            Some(Usage {
                prompt_tokens: 3,
                completion_tokens: 2,
                total_tokens: 5
            })
        );
        assert_eq!(
            events,
            vec![
                StreamEvent::ThinkingDelta("hmm".into()),
                StreamEvent::TextDelta("Hel".into()),
                StreamEvent::TextDelta("lo".into()),
            ]
        );
    }

    #[test]
    fn tool_calls_assembled_by_index_and_sorted() {
        let body = sse(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"read","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"bash","arguments":"{\"cmd\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"ls\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ]);
        let reply = parse(&body).0.expect("valid stream");
        assert_eq!(reply.stop_reason, StopReason::ToolUse);
        assert_eq!(
            reply.tool_calls,
            vec![
                ToolCall {
                    id: "a".into(),
                    name: "bash".into(),
                    arguments: r#"{"cmd":"ls"}"#.into()
                },
                ToolCall {
                    id: "b".into(),
                    name: "read".into(),
                    arguments: "{}".into()
                },
            ]
        );
    }

    #[test]
    fn end_of_stream_rules() {
        let call = |args: &str| {
            format!(
                r#"{{"choices":[{{"delta":{{"tool_calls":[{{"index":0,"id":"c","function":{{"name":"t","arguments":{}}}}}]}}}}]}}"#,
                serde_json::to_string(args).expect("string encodes")
            )
        };
        let text = r#"{"choices":[{"delta":{"content":"partial"}}]}"#;
        let finish = |r: &str| format!(r#"{{"choices":[{{"delta":{{}},"finish_reason":"{r}"}}]}}"#);
        let cases: Vec<(&str, String, ErrorKind, &str)> = vec![
            (
                "eof without finish",
                sse(&[text]),
                ErrorKind::Interrupted,
                MSG_INTERRUPTED_EOF,
            ),
            (
                "length",
                sse(&[text, &finish("length"), "[DONE]"]),
                ErrorKind::OutputLimit,
                MSG_OUTPUT_LIMIT,
            ),
            (
                "unknown finish",
                sse(&[text, &finish("content_filter"), "[DONE]"]),
                ErrorKind::UnknownFinishReason,
                r#"model response ended with "content_filter""#,
            ),
            (
                "args not object",
                sse(&[text, &call("[1]"), &finish("tool_calls"), "[DONE]"]),
                ErrorKind::InvalidToolCall,
                MSG_INVALID_TOOL_CALL,
            ),
            (
                "args null",
                sse(&[text, &call("null"), &finish("tool_calls"), "[DONE]"]),
                ErrorKind::InvalidToolCall,
                MSG_INVALID_TOOL_CALL,
            ),
            (
                "args truncated",
                sse(&[text, &call("{\"a\":"), &finish("tool_calls"), "[DONE]"]),
                ErrorKind::InvalidToolCall,
                MSG_INVALID_TOOL_CALL,
            ),
            (
                "args empty",
                sse(&[text, &call(""), &finish("tool_calls"), "[DONE]"]),
                ErrorKind::InvalidToolCall,
                MSG_INVALID_TOOL_CALL,
            ),
            (
                "tool_calls without calls",
                sse(&[text, &finish("tool_calls"), "[DONE]"]),
                ErrorKind::MissingToolCall,
                MSG_MISSING_TOOL_CALL,
            ),
            (
                "stream error object",
                sse(&[text, r#"{"error":{"message":"overloaded"}}"#]),
                ErrorKind::ModelError,
                "model stream error: overloaded",
            ),
            (
                "malformed json",
                sse(&[text, "{not json"]),
                ErrorKind::MalformedChunk,
                "model stream returned malformed JSON: key must be a string at line 1 column 2",
            ),
        ];
        for (name, body, kind, message) in cases {
            let err = parse(&body).0.expect_err(name);
            assert_eq!(err.kind(), kind, "{name}");
            assert_eq!(err.message(), message, "{name}");
            assert_eq!(err.partial().text, "partial", "{name}");
            let want_stop = if kind == ErrorKind::OutputLimit {
                StopReason::MaxTokens
            } else {
                StopReason::Error
            };
            assert_eq!(err.partial().stop_reason, want_stop, "{name}");
        }
    }

    #[test]
    fn finish_without_done_and_done_without_finish_both_succeed() {
        let with_finish =
            sse(&[r#"{"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}"#]);
        assert_eq!(
            parse(&with_finish).0.expect("finish reason suffices").text,
            "a"
        );
        let with_done = sse(&[r#"{"choices":[{"delta":{"content":"a"}}]}"#, "[DONE]"]);
        assert_eq!(parse(&with_done).0.expect("[DONE] suffices").text, "a");
    }

    #[test]
    fn bytes_after_done_are_ignored() {
        let body = format!(
            "{}data: {{broken\n\n",
            sse(&[r#"{"choices":[{"delta":{"content":"a"}}]}"#, "[DONE]"])
        );
        assert_eq!(parse(&body).0.expect("stops at [DONE]").text, "a");
    }

    #[test]
    fn a_failed_parser_never_reports_success_later() {
        let mut parser = StreamParser::new();
        let mut sink = |_: StreamEvent| {};
        let err = parser
            .feed(b"data: {bad\n\n", &mut sink)
            .expect_err("malformed");
        let valid = sse(&[r#"{"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}"#]);
        assert_eq!(parser.feed(valid.as_bytes(), &mut sink), Err(err.clone()));
        assert_eq!(parser.finish(&mut sink), Err(err));
    }

    #[test]
    fn zero_usage_is_dropped() {
        let body = sse(&[
            r#"{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}"#,
            "[DONE]",
        ]);
        assert_eq!(parse(&body).0.expect("valid").usage, None);
    }

    #[test]
    fn wrong_types_are_malformed_not_ignored() {
        let body = sse(&[r#"{"choices":[{"delta":{"content":5}}]}"#, "[DONE]"]);
        assert_eq!(
            parse(&body).0.expect_err("content must be a string").kind(),
            ErrorKind::MalformedChunk
        );
    }
}
