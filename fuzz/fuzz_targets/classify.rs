//! Fuzzes the bash command classifier (`classifier::classify`).
//!
//! Input: arbitrary bytes, read as UTF-8 lossily. Besides "never panics", it checks the verdict's
//! invariants: the class is the highest class among the reasons, spans lie within the input on
//! character boundaries, and a read-only verdict only lists allow-listed commands.
#![no_main]

use classifier::{Class, Context, classify, is_read_only_program};
use libfuzzer_sys::fuzz_target;

const DECLARATIONS: &[&str] = &["export", "local", "declare", "readonly", "typeset", "unset"];

fuzz_target!(|data: &[u8]| {
    let input = String::from_utf8_lossy(data);
    let ctx = Context {
        cwd: "/home/u/proj".into(),
        home: "/home/u".into(),
        scratch_dirs: vec!["/tmp".into()],
        home_credentials: sandbox::protected::DENY_READ_IN_HOME,
        ..Context::default()
    };
    let Ok(verdict) = classify(&input, &ctx) else {
        assert!(input.trim().is_empty(), "only blank input is refused");
        return;
    };
    let highest = verdict.reasons.iter().map(|r| r.class).max().unwrap_or(Class::ReadOnly);
    assert_eq!(verdict.class, highest);
    for r in &verdict.reasons {
        assert!(r.span.0 <= r.span.1 && r.span.1 <= input.len());
        assert!(input.is_char_boundary(r.span.0) && input.is_char_boundary(r.span.1));
    }
    if verdict.class == Class::ReadOnly {
        for c in &verdict.commands {
            assert!(is_read_only_program(&c.argv[0]) || DECLARATIONS.contains(&c.argv[0].as_str()));
        }
    }
});
