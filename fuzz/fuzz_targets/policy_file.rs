//! Fuzzes the policy-file parser (`policies::parse_policy`): project policy files arrive with
//! cloned repositories, so they are untrusted input.
//!
//! Besides "never panics": an error names a line inside the file, and a project file never
//! yields a read-only rule (it may only tighten).
#![no_main]

use libfuzzer_sys::fuzz_target;
use policies::{Layer, RuleKind, parse_policy};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let lines = text.split('\n').count();
    match parse_policy(text, Layer::Project, "fuzz.toml") {
        Ok(parsed) => {
            assert!(parsed.rules.iter().all(|r| r.kind != RuleKind::ReadOnly));
            assert!(parsed.rules.iter().all(|r| !r.prefix.is_empty() && r.line >= 1 && r.line <= lines));
        }
        Err(e) => assert!(e.line <= lines, "line {} of {lines}", e.line),
    }
});
