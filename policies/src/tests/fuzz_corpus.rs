//! Replays the committed fuzz corpus of the policy-file parser on stable Rust: every file parses
//! or errors cleanly, with the fuzz target's invariants.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::{Layer, RuleKind, parse_policy};

#[test]
fn policy_file_corpus_replays_without_panics() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/policy_file");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).expect("corpus directory") {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        count += 1;
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        let lines = text.split('\n').count();
        for layer in [Layer::User, Layer::Project] {
            match parse_policy(text, layer, "corpus.toml") {
                Ok(parsed) => {
                    if layer == Layer::Project {
                        assert!(
                            parsed.rules.iter().all(|r| r.kind != RuleKind::ReadOnly),
                            "{path:?}"
                        );
                    }
                    assert!(
                        parsed.rules.iter().all(|r| r.line >= 1 && r.line <= lines),
                        "{path:?}"
                    );
                }
                Err(e) => assert!(e.line <= lines, "{path:?}: {e}"),
            }
        }
    }
    assert!(count >= 8, "corpus present ({count} files)");
}
