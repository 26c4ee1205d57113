//! Fuzzes the session loader: arbitrary bytes never panic, and whatever loads survives a
//! write/reload round trip unchanged.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let name = Path::new("fuzz.jsonl");
    if let Ok(transcript) = gg::session::load_bytes(name, data) {
        let bytes = transcript
            .to_jsonl()
            .expect("a loaded transcript serialises");
        let again = gg::session::load_bytes(name, &bytes).expect("a written transcript loads");
        assert_eq!(again.header(), transcript.header());
        assert_eq!(again.entries(), transcript.entries());
        let _ = transcript.tree_items();
        let _ = gg::session::audit_trail(&transcript);
    }
});
