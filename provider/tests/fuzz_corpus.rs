//! Replays the committed `fuzz/corpus/sse/` inputs on stable Rust with the same checks as the
//! `sse` fuzz target (first byte = read size, rest = body; splitting must not change anything),
//! and checks the expected verdict encoded in each seed's name (`ok-*` parses, `err-*` fails).

use provider::{AssistantReply, ProviderError, StreamEvent, parse_recorded_stream};

type Outcome = (Result<AssistantReply, ProviderError>, Vec<StreamEvent>);

fn parse<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Outcome {
    let mut events = Vec::new();
    let result = parse_recorded_stream(chunks, &mut |e| events.push(e));
    (result, events)
}

#[test]
fn sse_corpus_replays_with_split_invariance() {
    let mut replayed = 0;
    let entries = testkit::fuzz_corpus("sse", 1);
    for path in entries {
        let data = std::fs::read(&path).expect("corpus file");
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let Some((&stride, body)) = data.split_first() else {
            continue;
        };
        let whole = parse([body]);
        let split = parse(body.chunks(usize::from(stride).max(1)));
        assert_eq!(
            whole, split,
            "{name}: read size {stride} changed the outcome"
        );
        // Every read size, not just the recorded one: seeds are small.
        for size in 1..=body.len().min(64) {
            assert_eq!(parse(body.chunks(size)), whole, "{name}: read size {size}");
        }
        if name.starts_with("ok-") {
            assert!(whole.0.is_ok(), "{name}: {:?}", whole.0);
        } else if name.starts_with("err-") {
            let err = whole.0.as_ref().expect_err(&name);
            assert!(
                !err.message().contains('\u{1b}'),
                "{name}: server text reaches the terminal unescaped"
            );
        }
        replayed += 1;
    }
    assert!(
        replayed >= 16,
        "expected the committed seeds, replayed {replayed}"
    );
}
