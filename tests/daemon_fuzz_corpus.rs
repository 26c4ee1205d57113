//! Replays the committed fuzz corpus of the JSON-RPC framing on stable Rust with the same checks
//! as `fuzz/fuzz_targets/jsonrpc.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::fs;

#[test]
fn jsonrpc_corpus_replays_cleanly() {
    let files = testkit::fuzz_corpus("jsonrpc", 8);
    let (mut requests, mut rejected) = (0, 0);
    for file in &files {
        let data = fs::read(file).unwrap();
        gg::daemon::rpc::exercise(&data);
        let mut framer = gg::daemon::rpc::LineFramer::with_limit(gg::daemon::rpc::EXERCISE_LIMIT);
        let mut frames = framer.push(&data[1..]);
        frames.extend(framer.finish());
        for frame in frames {
            match frame {
                gg::daemon::rpc::Frame::Line(line) => match gg::daemon::rpc::parse_request(&line) {
                    Ok(_) => requests += 1,
                    Err(_) => rejected += 1,
                },
                gg::daemon::rpc::Frame::Oversized => rejected += 1,
            }
        }
    }
    assert!(
        requests > 0 && rejected > 0,
        "the corpus holds both valid and invalid messages"
    );
}
