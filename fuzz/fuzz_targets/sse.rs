//! Fuzzes the SSE framer + chat-completions stream assembler (`gg::provider::StreamParser`).
//!
//! Input: the first byte picks the read size the body is split into; the rest is the body.
//! Besides "never panics", it checks that splitting the body into reads never changes the result
//! (reply or error, including the partial text) nor the deltas delivered.
#![no_main]

use gg::provider::{AssistantReply, ProviderError, StreamEvent, parse_recorded_stream};
use libfuzzer_sys::fuzz_target;

type Outcome = (Result<AssistantReply, ProviderError>, Vec<StreamEvent>);

fn parse<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Outcome {
    let mut events = Vec::new();
    let result = parse_recorded_stream(chunks, &mut |e| events.push(e));
    (result, events)
}

fuzz_target!(|data: &[u8]| {
    let Some((&stride, body)) = data.split_first() else {
        return;
    };
    let whole = parse([body]);
    let split = parse(body.chunks(usize::from(stride).max(1)));
    assert_eq!(whole, split, "read boundaries changed the outcome");
});
