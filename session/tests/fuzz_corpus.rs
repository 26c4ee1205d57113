//! Replays the committed fuzz corpus of the session loader on stable Rust with the same
//! checks as `fuzz/fuzz_targets/session_load.rs`.

use std::fs;
use std::path::Path;

#[test]
fn session_load_corpus_replays_cleanly() {
    let files = testkit::fuzz_corpus("session_load", 8);
    let mut loaded = 0;
    for file in &files {
        let data = fs::read(file).unwrap();
        let name = Path::new("fuzz.jsonl");
        if let Ok(transcript) = session::load_bytes(name, &data) {
            loaded += 1;
            let bytes = transcript.to_jsonl().unwrap();
            let again = session::load_bytes(name, &bytes).unwrap();
            assert_eq!(again.header(), transcript.header(), "{}", file.display());
            assert_eq!(again.entries(), transcript.entries(), "{}", file.display());
            let _ = transcript.tree_items();
            let _ = session::audit_trail(&transcript);
        }
    }
    assert!(
        loaded > 0 && loaded < files.len(),
        "the corpus holds both valid and invalid sessions"
    );
}
