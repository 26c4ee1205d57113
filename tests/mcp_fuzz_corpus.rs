//! Replays the committed fuzz corpora of the MCP parsers on stable Rust with the same checks as
//! `fuzz/fuzz_targets/mcp_schema.rs` and `fuzz/fuzz_targets/mcp_config.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::fs;

use gg::mcp::config::{ServerSpec, parse};
use gg::mcp::schema::{check_acceptable, normalise};

#[test]
fn mcp_schema_corpus_replays_cleanly() {
    for file in testkit::fuzz_corpus("mcp_schema", 6) {
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(&fs::read(&file).unwrap())
        else {
            continue;
        };
        let out = normalise(&value);
        check_acceptable(&out).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        assert_eq!(normalise(&out), out, "{}", file.display());
    }
}

#[test]
fn mcp_config_corpus_replays_cleanly() {
    let (mut valid, mut invalid) = (0, 0);
    for file in testkit::fuzz_corpus("mcp_config", 6) {
        let Ok(text) = String::from_utf8(fs::read(&file).unwrap()) else {
            continue;
        };
        let Ok(entries) = parse(&text) else {
            invalid += 1;
            continue;
        };
        for entry in entries {
            match entry.spec {
                Ok(ServerSpec::Stdio { command, .. }) => {
                    valid += 1;
                    assert!(!command.trim().is_empty(), "{}", file.display());
                }
                Ok(ServerSpec::Http { url }) => {
                    valid += 1;
                    assert!(
                        url.starts_with("http://") || url.starts_with("https://"),
                        "{}",
                        file.display()
                    );
                }
                Err(e) => {
                    invalid += 1;
                    assert!(e.starts_with("MCP server \""), "{}: {e}", file.display());
                }
            }
        }
    }
    assert!(
        valid > 0 && invalid > 0,
        "the corpus holds both valid and invalid entries"
    );
}
