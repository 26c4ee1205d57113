//! Policy-file parsing and layering: what each layer may do, and how bad files are reported.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use classifier::{Class, FoundCommand, Verdict};

use crate::{EffectivePolicy, Layer, RuleKind, parse_policy};

const SAMPLE: &str = r#"version = 1

[[read_only]]
prefix = "cargo metadata"

[[dangerous]]
prefix = "terraform apply"
reason = "changes real infrastructure"

[[forbidden]]
prefix = "git push"
reason = "pushes go through CI"
"#;

fn verdict_with(argvs: &[&[&str]]) -> Verdict {
    Verdict {
        class: Class::Normal,
        reasons: Vec::new(),
        commands: argvs
            .iter()
            .map(|argv| FoundCommand {
                argv: argv.iter().map(|s| s.to_string()).collect(),
                span: (0, 0),
            })
            .collect(),
    }
}

#[test]
fn user_file_keeps_every_rule_with_its_line() {
    let parsed = parse_policy(SAMPLE, Layer::User, "/home/u/.gg/policy.toml").unwrap();
    assert!(parsed.ignored.is_empty());
    let summary: Vec<_> = parsed
        .rules
        .iter()
        .map(|r| (r.kind, r.prefix.clone(), r.line))
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                RuleKind::ReadOnly,
                vec!["cargo".into(), "metadata".into()],
                3
            ),
            (
                RuleKind::Dangerous,
                vec!["terraform".into(), "apply".into()],
                6
            ),
            (RuleKind::Forbidden, vec!["git".into(), "push".into()], 10),
        ]
    );
}

#[test]
fn project_file_cannot_loosen_and_says_where() {
    let parsed = parse_policy(SAMPLE, Layer::Project, "/repo/.gg/policy.toml").unwrap();
    assert!(parsed.rules.iter().all(|r| r.kind != RuleKind::ReadOnly));
    assert_eq!(parsed.rules.len(), 2, "tightening rules are kept");
    assert_eq!(parsed.ignored.len(), 1);
    let report = parsed.ignored[0].to_string();
    assert!(report.starts_with("/repo/.gg/policy.toml:3: "), "{report}");
    assert!(report.contains("cargo metadata"), "{report}");
}

#[test]
fn malformed_files_name_file_line_and_problem() {
    let cases: &[(&str, usize, &str)] = &[
        (
            "version = 1\n[[forbidden]]\nprefix = \"rm\"\n",
            2,
            "needs a reason",
        ),
        (
            "[[dangerous]]\nprefix = \"x\"\ncolour = 1\n",
            3,
            "unknown field",
        ),
        ("[[dangerous]]\nprefix = \n", 2, ""),
        ("version = 2\n", 1, "unsupported policy version 2"),
        ("[[dangerous]]\nprefix = \"\"\n", 1, "at least one word"),
        (
            "[[dangerous]]\nprefix = \"'unterminated\"\n",
            1,
            "not valid shell words",
        ),
        ("[[allow]]\nprefix = \"ls\"\n", 1, "unknown field"),
        (
            "\n\n[[read_only]]\nreason = \"no prefix\"\n",
            3,
            "missing field",
        ),
    ];
    for &(text, line, needle) in cases {
        let err = parse_policy(text, Layer::User, "p.toml").unwrap_err();
        assert_eq!(err.origin, "p.toml");
        assert_eq!(err.line, line, "{text:?}: {err}");
        assert!(err.message.contains(needle), "{text:?}: {err}");
        assert!(err.to_string().starts_with(&format!("p.toml:{line}: ")));
    }
}

#[test]
fn builtin_defaults_parse_and_are_attributed_to_builtin() {
    let policy = EffectivePolicy::builtin().unwrap();
    assert!(!policy.rules.is_empty());
    assert!(
        policy
            .rules
            .iter()
            .all(|r| r.layer == Layer::Builtin && r.origin == "builtin")
    );
    assert!(policy.ignored.is_empty());
}

#[test]
fn layers_merge_and_feed_the_classifier() {
    let mut policy = EffectivePolicy::builtin().unwrap();
    policy.add(parse_policy(SAMPLE, Layer::User, "user.toml").unwrap());
    let rules = policy.classifier_rules();
    assert!(
        rules
            .read_only_prefixes
            .contains(&vec!["cargo".into(), "metadata".into()])
    );
    assert!(
        rules
            .dangerous_prefixes
            .contains(&vec!["terraform".into(), "apply".into()])
    );
    assert!(
        rules
            .dangerous_prefixes
            .contains(&vec!["cargo".into(), "publish".into()])
    );
}

#[test]
fn forbidden_matches_any_found_command_by_word_prefix() {
    let mut policy = EffectivePolicy::default();
    policy.add(parse_policy(SAMPLE, Layer::Project, "/repo/.gg/policy.toml").unwrap());

    let hit = policy
        .forbidden_match(&verdict_with(&[
            &["ls"],
            &["/usr/bin/git", "push", "origin"],
        ]))
        .expect("git push inside a list is forbidden");
    assert_eq!(hit.prefix, "git push");
    assert_eq!(hit.source, "/repo/.gg/policy.toml:10");

    for miss in [
        &[&["git", "pushx"][..]][..],
        &[&["git"][..]][..],
        &[&["echo", "git", "push"][..]][..],
        &[&["gitpush"][..]][..],
    ] {
        assert!(
            policy.forbidden_match(&verdict_with(miss)).is_none(),
            "{miss:?}"
        );
    }
}
