//! Property tests of the stream parser: how reads split the body never changes the outcome, and
//! arbitrary bytes never panic. One property runs over real TCP against the scripted server.

use std::collections::BTreeMap;

use proptest::prelude::*;
use provider::{
    AssistantReply, CancellationToken, ChatRequest, Message, Provider, ProviderConfig,
    ProviderError, StreamEvent, ToolCall, parse_recorded_stream,
};
use serde_json::{Value, json};
use testkit::{ScriptedServer, StreamReply};

#[derive(Debug, Clone)]
enum Piece {
    Text(String),
    Reasoning(String),
    /// Tool call index and the arguments object it streams.
    Call(u32, BTreeMap<String, String>),
    Comment(String),
}

#[derive(Debug, Clone, Copy)]
enum Eol {
    Lf,
    CrLf,
    Cr,
}

impl Eol {
    fn as_str(self) -> &'static str {
        match self {
            Eol::Lf => "\n",
            Eol::CrLf => "\r\n",
            Eol::Cr => "\r",
        }
    }
}

fn text_strategy() -> impl Strategy<Value = String> {
    // Quotes, backslashes, newlines, CR and multi-byte characters all appear in real deltas.
    proptest::string::string_regex("[a-zé€😀 \"\\\\\n\r\t{}:,]{1,12}").expect("valid regex")
}

fn piece_strategy() -> impl Strategy<Value = Piece> {
    prop_oneof![
        4 => text_strategy().prop_map(Piece::Text),
        1 => text_strategy().prop_map(Piece::Reasoning),
        2 => (0u32..3, proptest::collection::btree_map("[a-z]{1,4}", text_strategy(), 0..3))
            .prop_map(|(index, args)| Piece::Call(index, args)),
        1 => "[ -~]{0,10}".prop_map(Piece::Comment),
    ]
}

/// A valid body, the reply it must produce, and the line ending / pretty-printing used.
fn stream_strategy() -> impl Strategy<Value = (Vec<u8>, AssistantReply)> {
    (
        proptest::collection::vec(piece_strategy(), 0..8),
        prop_oneof![Just(Eol::Lf), Just(Eol::CrLf), Just(Eol::Cr)],
        any::<bool>(),
        1usize..6,
    )
        .prop_map(|(pieces, eol, multiline, fragments)| {
            build_stream(&pieces, eol, multiline, fragments)
        })
}

fn event(body: &mut String, chunk: &Value, eol: Eol, multiline: bool) {
    let json = if multiline {
        serde_json::to_string_pretty(chunk).expect("encodes")
    } else {
        chunk.to_string()
    };
    for line in json.split('\n') {
        body.push_str("data: ");
        body.push_str(line);
        body.push_str(eol.as_str());
    }
    body.push_str(eol.as_str());
}

fn build_stream(
    pieces: &[Piece],
    eol: Eol,
    multiline: bool,
    fragments: usize,
) -> (Vec<u8>, AssistantReply) {
    let mut body = String::new();
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut calls: BTreeMap<u32, (String, String)> = BTreeMap::new();
    for piece in pieces {
        match piece {
            Piece::Text(t) => {
                text.push_str(t);
                event(
                    &mut body,
                    &json!({"choices":[{"index":0,"delta":{"content":t}}]}),
                    eol,
                    multiline,
                );
            }
            Piece::Reasoning(t) => {
                reasoning.push_str(t);
                event(
                    &mut body,
                    &json!({"choices":[{"delta":{"reasoning_content":t}}]}),
                    eol,
                    multiline,
                );
            }
            Piece::Call(index, args) => {
                if calls.contains_key(index) {
                    continue; // one complete call per index keeps the expectation simple
                }
                let arguments = serde_json::to_string(args).expect("encodes");
                let id = format!("call_{index}");
                let name = format!("tool{index}");
                // Stream the arguments in `fragments` pieces split on char boundaries.
                let bounds: Vec<usize> = (0..=fragments)
                    .map(|i| {
                        let mut at = arguments.len() * i / fragments;
                        while !arguments.is_char_boundary(at) {
                            at += 1;
                        }
                        at
                    })
                    .collect();
                for (n, window) in bounds.windows(2).enumerate() {
                    let mut call = json!({"index": index, "function": {"arguments": &arguments[window[0]..window[1]]}});
                    if n == 0 {
                        call["id"] = json!(id);
                        call["type"] = json!("function");
                        call["function"]["name"] = json!(name);
                    }
                    event(
                        &mut body,
                        &json!({"choices":[{"delta":{"tool_calls":[call]}}]}),
                        eol,
                        multiline,
                    );
                }
                calls.insert(*index, (id, arguments));
            }
            Piece::Comment(c) => {
                body.push(':');
                body.push_str(c);
                body.push_str(eol.as_str());
            }
        }
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    event(
        &mut body,
        &json!({"choices":[{"delta":{},"finish_reason":finish}]}),
        eol,
        multiline,
    );
    body.push_str("data: [DONE]");
    body.push_str(eol.as_str());
    body.push_str(eol.as_str());
    let tool_calls: Vec<ToolCall> = calls
        .into_iter()
        .map(|(index, (id, arguments))| ToolCall {
            id,
            name: format!("tool{index}"),
            arguments,
        })
        .collect();
    let stop_reason = if tool_calls.is_empty() {
        provider::StopReason::EndTurn
    } else {
        provider::StopReason::ToolUse
    };
    let expected = AssistantReply {
        text,
        reasoning,
        tool_calls,
        usage: None,
        stop_reason,
    };
    (body.into_bytes(), expected)
}

type Outcome = (Result<AssistantReply, ProviderError>, Vec<StreamEvent>);

fn parse_split(body: &[u8], cuts: &[usize]) -> Outcome {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
    points.sort_unstable();
    let mut chunks = Vec::new();
    let mut start = 0;
    for point in points {
        chunks.push(&body[start..point]);
        start = point;
    }
    chunks.push(&body[start..]);
    let mut events = Vec::new();
    let result = parse_recorded_stream(chunks, &mut |e| events.push(e));
    (result, events)
}

fn text_of(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_split_of_a_valid_stream_yields_the_same_reply(
        (body, expected) in stream_strategy(),
        cuts in proptest::collection::vec(any::<usize>(), 0..24),
    ) {
        let (whole, whole_events) = parse_split(&body, &[]);
        prop_assert_eq!(whole.as_ref(), Ok(&expected));
        prop_assert_eq!(text_of(&whole_events), expected.text.clone());
        let (split, split_events) = parse_split(&body, &cuts);
        prop_assert_eq!(split, whole);
        prop_assert_eq!(split_events, whole_events);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_splits_do_not_matter(
        body in proptest::collection::vec(any::<u8>(), 0..4096),
        cuts in proptest::collection::vec(any::<usize>(), 0..16),
    ) {
        let whole = parse_split(&body, &[]);
        let split = parse_split(&body, &cuts);
        prop_assert_eq!(split, whole);
    }

    #[test]
    fn sse_shaped_noise_never_panics_and_splits_do_not_matter(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("data: [DONE]".to_string()),
                Just(String::new()),
                Just("data: {\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]}".to_string()),
                Just("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"n\",\"arguments\":\"{\"}}]}}]}".to_string()),
                "data: [ -~]{0,20}",
                ": [ -~]{0,10}",
                "[\\x00-\\x7f]{0,20}",
            ],
            0..20,
        ),
        eols in proptest::collection::vec(prop_oneof![Just("\n"), Just("\r\n"), Just("\r")], 20),
        cuts in proptest::collection::vec(any::<usize>(), 0..16),
    ) {
        let mut body = String::new();
        for (line, eol) in lines.iter().zip(eols.iter().cycle()) {
            body.push_str(line);
            body.push_str(eol);
        }
        let whole = parse_split(body.as_bytes(), &[]);
        let split = parse_split(body.as_bytes(), &cuts);
        prop_assert_eq!(split, whole);
    }
}

proptest! {
    // Each case is a real HTTP exchange; fewer cases keep the suite fast.
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn any_split_over_tcp_yields_the_same_reply(
        (body, expected) in stream_strategy(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (body.len() + 1)).collect();
        points.sort_unstable();
        points.dedup();
        let mut reply = StreamReply::new();
        let mut start = 0;
        for point in points.into_iter().chain([body.len()]) {
            if point > start {
                // A pause makes each piece its own read on the client side.
                reply = reply.raw(&body[start..point]).delay(std::time::Duration::from_millis(1));
                start = point;
            }
        }
        let server = ScriptedServer::with_replies([reply.reply()]);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let provider = Provider::new(ProviderConfig::new(server.base_url(), "k", "m")).expect("client");
        let request = ChatRequest { messages: vec![Message::user("hi")], ..ChatRequest::default() };
        let mut events = Vec::new();
        let result = runtime.block_on(provider.stream(&request, &mut |e| events.push(e), &CancellationToken::new()));
        prop_assert_eq!(result, Ok(expected.clone()));
        prop_assert_eq!(text_of(&events), expected.text);
    }
}
