//! Replays the committed fuzz corpus (`fuzz/corpus/classify/`) on stable Rust: every file must
//! classify without panicking and with the same invariants the fuzz target checks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::path::Path;

use classifier::{Class, Context, classify, is_read_only_program};

const DECLARATIONS: &[&str] = &["export", "local", "declare", "readonly", "typeset", "unset"];

#[test]
fn corpus_replays_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/classify");
    let entries =
        std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    let ctx = Context {
        cwd: "/home/u/proj".into(),
        home: "/home/u".into(),
        scratch_dirs: vec!["/tmp".into()],
        home_credentials: sandbox::protected::DENY_READ_IN_HOME,
        ..Context::default()
    };
    let mut replayed = 0;
    for entry in entries {
        let path = entry.expect("directory entry").path();
        let data =
            std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let input = String::from_utf8_lossy(&data);
        replayed += 1;
        let Ok(verdict) = classify(&input, &ctx) else {
            assert!(
                input.trim().is_empty(),
                "{}: refused non-blank input",
                path.display()
            );
            continue;
        };
        let highest = verdict
            .reasons
            .iter()
            .map(|r| r.class)
            .max()
            .unwrap_or(Class::ReadOnly);
        assert_eq!(verdict.class, highest, "{}", path.display());
        for r in &verdict.reasons {
            assert!(
                r.span.0 <= r.span.1 && r.span.1 <= input.len(),
                "{}: {r:?}",
                path.display()
            );
            assert!(
                input.is_char_boundary(r.span.0) && input.is_char_boundary(r.span.1),
                "{}",
                path.display()
            );
        }
        if verdict.class == Class::ReadOnly {
            for c in &verdict.commands {
                assert!(
                    is_read_only_program(&c.argv[0]) || DECLARATIONS.contains(&c.argv[0].as_str()),
                    "{}: read-only verdict lists {:?}",
                    path.display(),
                    c.argv
                );
            }
        }
    }
    assert!(replayed >= 40, "corpus has only {replayed} files");
}

/// Seeds whose verdict is part of the contract, so a corpus edit cannot silently weaken them.
#[test]
fn dangerous_seeds_stay_dangerous() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/classify");
    let ctx = Context {
        cwd: "/home/u/proj".into(),
        home: "/home/u".into(),
        home_credentials: sandbox::protected::DENY_READ_IN_HOME,
        ..Context::default()
    };
    for name in [
        "rm-rf-root",
        "rm-ifs",
        "rm-ifs-bare",
        "ansi-c",
        "zero-width",
        "curl-sh",
        "bash-procsub",
        "sh-c-subst",
        "base64-sh",
        "heredoc-pipe-sh",
        "herestring",
        "nested-eval",
        "fork-bomb",
        "reverse-shell",
        "fifo-shell",
        "find-exec",
        "tar-checkpoint",
        "git-c",
        "git-push",
        "cd-chain",
        "dynamic-name",
        "parse-error-danger",
        "nul-and-controls",
        "crlf",
        "wrappers",
        "policy-writes",
        "exfil",
        "awk-system",
    ] {
        let text =
            std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let v = classify(&text, &ctx).expect("verdict");
        assert_eq!(v.class, Class::Dangerous, "{name}: {:?}", v.reasons);
    }
}
