//! Fuzzes the daemon's JSON-RPC framing: the newline framer with its size cap and the request
//! parser (`gg::daemon::rpc::exercise` holds the checks, shared with the stable corpus replay
//! in `tests/daemon_fuzz_corpus.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    gg::daemon::rpc::exercise(data);
});
