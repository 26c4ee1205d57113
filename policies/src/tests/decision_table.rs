//! Every cell of mode × terminal × call kind × session grant, written out as the approval table,
//! so a reviewer can compare this file with `docs/security-model.md` line by line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use classifier::Class;

use crate::{
    Call, Decision, Forbidden, Granted, Mode, Request, Rule, Terminal, check_startup, decide,
};

#[derive(Clone, Copy, Debug)]
enum Kind {
    ReadTool,
    GatedTool,
    DangerousTool,
    BashReadOnly,
    BashNormal,
    BashDangerous,
}

const ALL_KINDS: [Kind; 6] = [
    Kind::ReadTool,
    Kind::GatedTool,
    Kind::DangerousTool,
    Kind::BashReadOnly,
    Kind::BashNormal,
    Kind::BashDangerous,
];

fn call(kind: Kind) -> Call<'static> {
    match kind {
        Kind::ReadTool => Call::ReadType { tool: "read" },
        Kind::GatedTool => Call::Gated { tool: "write" },
        Kind::DangerousTool => Call::DangerousTool { tool: "write" },
        Kind::BashReadOnly => Call::Bash {
            class: Class::ReadOnly,
            forbidden: None,
        },
        Kind::BashNormal => Call::Bash {
            class: Class::Normal,
            forbidden: None,
        },
        Kind::BashDangerous => Call::Bash {
            class: Class::Dangerous,
            forbidden: None,
        },
    }
}

use Kind::*;
use Terminal::{Absent, Present};

const UNATTENDED: Mode = Mode::Unattended { allow_all: false };
const ALLOW_ALL: Mode = Mode::Unattended { allow_all: true };

/// (mode, terminal, kind, action, rule) without a session grant. 7 modes × 2 terminals × 6 kinds
/// = 84 cells.
#[rustfmt::skip]
const TABLE: &[(Mode, Terminal, Kind, &str, Rule)] = &[
    // auto
    (Mode::Auto, Present, ReadTool,      "allow", Rule::ReadTypeTool),
    (Mode::Auto, Present, GatedTool,     "ask",   Rule::AutoAsk),
    (Mode::Auto, Present, DangerousTool, "ask",   Rule::DangerousAsk),
    (Mode::Auto, Present, BashReadOnly,  "allow", Rule::BashReadOnly),
    (Mode::Auto, Present, BashNormal,    "ask",   Rule::AutoAsk),
    (Mode::Auto, Present, BashDangerous, "ask",   Rule::DangerousAsk),
    (Mode::Auto, Absent,  ReadTool,      "allow", Rule::ReadTypeTool),
    (Mode::Auto, Absent,  GatedTool,     "deny",  Rule::AutoNoTerminal),
    (Mode::Auto, Absent,  DangerousTool, "deny",  Rule::DangerousNoTerminal),
    (Mode::Auto, Absent,  BashReadOnly,  "allow", Rule::BashReadOnly),
    (Mode::Auto, Absent,  BashNormal,    "deny",  Rule::AutoNoTerminal),
    (Mode::Auto, Absent,  BashDangerous, "deny",  Rule::DangerousNoTerminal),
    // on-request (without a terminal the process does not start; decide stays fail-closed)
    (Mode::OnRequest, Present, ReadTool,      "allow", Rule::ReadTypeTool),
    (Mode::OnRequest, Present, GatedTool,     "ask",   Rule::OnRequestAsk),
    (Mode::OnRequest, Present, DangerousTool, "ask",   Rule::DangerousAsk),
    (Mode::OnRequest, Present, BashReadOnly,  "allow", Rule::BashReadOnly),
    (Mode::OnRequest, Present, BashNormal,    "ask",   Rule::OnRequestAsk),
    (Mode::OnRequest, Present, BashDangerous, "ask",   Rule::DangerousAsk),
    (Mode::OnRequest, Absent,  ReadTool,      "allow", Rule::ReadTypeTool),
    (Mode::OnRequest, Absent,  GatedTool,     "deny",  Rule::OnRequestNoTerminal),
    (Mode::OnRequest, Absent,  DangerousTool, "deny",  Rule::DangerousNoTerminal),
    (Mode::OnRequest, Absent,  BashReadOnly,  "allow", Rule::BashReadOnly),
    (Mode::OnRequest, Absent,  BashNormal,    "deny",  Rule::OnRequestNoTerminal),
    (Mode::OnRequest, Absent,  BashDangerous, "deny",  Rule::DangerousNoTerminal),
    // yolo
    (Mode::Yolo, Present, ReadTool,      "allow", Rule::ReadTypeTool),
    (Mode::Yolo, Present, GatedTool,     "allow", Rule::YoloAllow),
    (Mode::Yolo, Present, DangerousTool, "ask",   Rule::DangerousAsk),
    (Mode::Yolo, Present, BashReadOnly,  "allow", Rule::BashReadOnly),
    (Mode::Yolo, Present, BashNormal,    "allow", Rule::YoloAllow),
    (Mode::Yolo, Present, BashDangerous, "ask",   Rule::DangerousAsk),
    (Mode::Yolo, Absent,  ReadTool,      "allow", Rule::ReadTypeTool),
    (Mode::Yolo, Absent,  GatedTool,     "allow", Rule::YoloAllow),
    (Mode::Yolo, Absent,  DangerousTool, "deny",  Rule::DangerousNoTerminal),
    (Mode::Yolo, Absent,  BashReadOnly,  "allow", Rule::BashReadOnly),
    (Mode::Yolo, Absent,  BashNormal,    "allow", Rule::YoloAllow),
    (Mode::Yolo, Absent,  BashDangerous, "deny",  Rule::DangerousNoTerminal),
    // never
    (Mode::Never, Present, ReadTool,      "allow", Rule::ReadTypeTool),
    (Mode::Never, Present, GatedTool,     "allow", Rule::NeverAllow),
    (Mode::Never, Present, DangerousTool, "deny",  Rule::DangerousNeverMode),
    (Mode::Never, Present, BashReadOnly,  "allow", Rule::BashReadOnly),
    (Mode::Never, Present, BashNormal,    "allow", Rule::NeverAllow),
    (Mode::Never, Present, BashDangerous, "deny",  Rule::DangerousNeverMode),
    (Mode::Never, Absent,  ReadTool,      "allow", Rule::ReadTypeTool),
    (Mode::Never, Absent,  GatedTool,     "allow", Rule::NeverAllow),
    (Mode::Never, Absent,  DangerousTool, "deny",  Rule::DangerousNeverMode),
    (Mode::Never, Absent,  BashReadOnly,  "allow", Rule::BashReadOnly),
    (Mode::Never, Absent,  BashNormal,    "allow", Rule::NeverAllow),
    (Mode::Never, Absent,  BashDangerous, "deny",  Rule::DangerousNeverMode),
    // unattended without --allow-all
    (UNATTENDED, Present, ReadTool,      "allow", Rule::ReadTypeTool),
    (UNATTENDED, Present, GatedTool,     "deny",  Rule::UnattendedDeny),
    (UNATTENDED, Present, DangerousTool, "deny",  Rule::DangerousUnattended),
    (UNATTENDED, Present, BashReadOnly,  "allow", Rule::BashReadOnly),
    (UNATTENDED, Present, BashNormal,    "deny",  Rule::UnattendedDeny),
    (UNATTENDED, Present, BashDangerous, "deny",  Rule::DangerousUnattended),
    (UNATTENDED, Absent,  ReadTool,      "allow", Rule::ReadTypeTool),
    (UNATTENDED, Absent,  GatedTool,     "deny",  Rule::UnattendedDeny),
    (UNATTENDED, Absent,  DangerousTool, "deny",  Rule::DangerousUnattended),
    (UNATTENDED, Absent,  BashReadOnly,  "allow", Rule::BashReadOnly),
    (UNATTENDED, Absent,  BashNormal,    "deny",  Rule::UnattendedDeny),
    (UNATTENDED, Absent,  BashDangerous, "deny",  Rule::DangerousUnattended),
    // unattended with --allow-all: dangerous stays denied, nobody can confirm it
    (ALLOW_ALL, Present, ReadTool,      "allow", Rule::ReadTypeTool),
    (ALLOW_ALL, Present, GatedTool,     "allow", Rule::UnattendedAllowAll),
    (ALLOW_ALL, Present, DangerousTool, "deny",  Rule::DangerousUnattended),
    (ALLOW_ALL, Present, BashReadOnly,  "allow", Rule::BashReadOnly),
    (ALLOW_ALL, Present, BashNormal,    "allow", Rule::UnattendedAllowAll),
    (ALLOW_ALL, Present, BashDangerous, "deny",  Rule::DangerousUnattended),
    (ALLOW_ALL, Absent,  ReadTool,      "allow", Rule::ReadTypeTool),
    (ALLOW_ALL, Absent,  GatedTool,     "allow", Rule::UnattendedAllowAll),
    (ALLOW_ALL, Absent,  DangerousTool, "deny",  Rule::DangerousUnattended),
    (ALLOW_ALL, Absent,  BashReadOnly,  "allow", Rule::BashReadOnly),
    (ALLOW_ALL, Absent,  BashNormal,    "allow", Rule::UnattendedAllowAll),
    (ALLOW_ALL, Absent,  BashDangerous, "deny",  Rule::DangerousUnattended),
    // remote (a chat answers): normal calls asked there, dangerous ones denied
    (Mode::Remote, Present, ReadTool,      "allow", Rule::ReadTypeTool),
    (Mode::Remote, Present, GatedTool,     "ask",   Rule::RemoteAsk),
    (Mode::Remote, Present, DangerousTool, "deny",  Rule::DangerousRemote),
    (Mode::Remote, Present, BashReadOnly,  "allow", Rule::BashReadOnly),
    (Mode::Remote, Present, BashNormal,    "ask",   Rule::RemoteAsk),
    (Mode::Remote, Present, BashDangerous, "deny",  Rule::DangerousRemote),
    (Mode::Remote, Absent,  ReadTool,      "allow", Rule::ReadTypeTool),
    (Mode::Remote, Absent,  GatedTool,     "ask",   Rule::RemoteAsk),
    (Mode::Remote, Absent,  DangerousTool, "deny",  Rule::DangerousRemote),
    (Mode::Remote, Absent,  BashReadOnly,  "allow", Rule::BashReadOnly),
    (Mode::Remote, Absent,  BashNormal,    "ask",   Rule::RemoteAsk),
    (Mode::Remote, Absent,  BashDangerous, "deny",  Rule::DangerousRemote),
];

/// The cells where a session grant changes the answer: (mode, terminal, kind, action, rule).
/// A grant only answers a question the table would ask, so it matters only where the ungranted
/// table says "ask"; a dangerous call is asked again (`dangerous-never-granted`). Every other
/// granted cell decides exactly as in [`TABLE`].
#[rustfmt::skip]
const GRANTED: &[(Mode, Terminal, Kind, &str, Rule)] = &[
    (Mode::Auto,      Present, GatedTool,     "allow", Rule::SessionGrant),
    (Mode::Auto,      Present, BashNormal,    "allow", Rule::SessionGrant),
    (Mode::Auto,      Present, DangerousTool, "ask",   Rule::DangerousNeverGranted),
    (Mode::Auto,      Present, BashDangerous, "ask",   Rule::DangerousNeverGranted),
    (Mode::OnRequest, Present, GatedTool,     "allow", Rule::SessionGrant),
    (Mode::OnRequest, Present, BashNormal,    "allow", Rule::SessionGrant),
    (Mode::OnRequest, Present, DangerousTool, "ask",   Rule::DangerousNeverGranted),
    (Mode::OnRequest, Present, BashDangerous, "ask",   Rule::DangerousNeverGranted),
    (Mode::Yolo,      Present, DangerousTool, "ask",   Rule::DangerousNeverGranted),
    (Mode::Yolo,      Present, BashDangerous, "ask",   Rule::DangerousNeverGranted),
    (Mode::Remote,    Present, GatedTool,     "allow", Rule::SessionGrant),
    (Mode::Remote,    Present, BashNormal,    "allow", Rule::SessionGrant),
    (Mode::Remote,    Absent,  GatedTool,     "allow", Rule::SessionGrant),
    (Mode::Remote,    Absent,  BashNormal,    "allow", Rule::SessionGrant),
];

fn request(mode: Mode, terminal: Terminal, granted: Granted, kind: Kind) -> Decision {
    decide(&Request {
        mode,
        terminal,
        granted,
        call: call(kind),
    })
}

#[test]
fn granted_cells_decide_as_the_granted_table_says_and_all_others_as_ungranted() {
    for mode in Mode::ALL {
        for terminal in [Present, Absent] {
            for kind in ALL_KINDS {
                let got = request(mode, terminal, Granted::ForSession, kind);
                let expected = GRANTED
                    .iter()
                    .find(|c| c.0 == mode && c.1 == terminal && c.2 as u8 == kind as u8)
                    .map(|c| (c.3, c.4))
                    .unwrap_or_else(|| {
                        let ungranted = request(mode, terminal, Granted::No, kind);
                        (ungranted.action(), ungranted.rule())
                    });
                assert_eq!(
                    (got.action(), got.rule()),
                    expected,
                    "granted cell {mode:?} {terminal:?} {kind:?}: {got:?}"
                );
            }
        }
    }
}

#[test]
fn a_grant_never_allows_a_dangerous_call() {
    for mode in Mode::ALL {
        for terminal in [Present, Absent] {
            for kind in [DangerousTool, BashDangerous] {
                let d = request(mode, terminal, Granted::ForSession, kind);
                assert_ne!(d.action(), "allow", "{mode:?} {terminal:?} {kind:?}");
            }
        }
    }
}

#[test]
fn a_grant_never_lifts_a_policy_forbidden_command() {
    let forbidden = Forbidden {
        prefix: "git push".into(),
        reason: "pushes go through CI".into(),
        source: "builtin".into(),
    };
    for mode in Mode::ALL {
        let d = decide(&Request {
            mode,
            terminal: Present,
            granted: Granted::ForSession,
            call: Call::Bash {
                class: Class::Normal,
                forbidden: Some(&forbidden),
            },
        });
        assert_eq!(d.rule(), Rule::PolicyForbidden);
    }
}

#[test]
fn a_dangerous_tool_denial_names_the_tool() {
    let d = request(Mode::Yolo, Absent, Granted::No, DangerousTool);
    assert!(
        d.message().contains("tool call \"write\""),
        "{}",
        d.message()
    );
    assert!(d.message().contains("--yolo"), "{}", d.message());
}

#[test]
fn table_covers_every_cell_exactly_once() {
    let mut seen = std::collections::HashSet::new();
    for &(mode, terminal, kind, _, _) in TABLE {
        assert!(
            seen.insert((mode, terminal, kind as u8)),
            "duplicate cell {mode:?} {terminal:?} {kind:?}"
        );
    }
    assert_eq!(seen.len(), Mode::ALL.len() * 2 * ALL_KINDS.len());
    let mut granted = std::collections::HashSet::new();
    for &(mode, terminal, kind, _, _) in GRANTED {
        assert!(
            granted.insert((mode, terminal, kind as u8)),
            "duplicate granted cell"
        );
    }
}

#[test]
fn every_cell_decides_as_the_table_says() {
    for &(mode, terminal, kind, action, rule) in TABLE {
        let decision = request(mode, terminal, Granted::No, kind);
        assert_eq!(
            (decision.action(), decision.rule()),
            (action, rule),
            "cell {mode:?} {terminal:?} {kind:?}: {decision:?}"
        );
        match &decision {
            Decision::Allow { .. } => assert!(decision.message().is_empty()),
            Decision::Ask { prompt, .. } => assert!(!prompt.is_empty()),
            Decision::Deny { message, .. } => assert!(message.contains("denied"), "{message}"),
        }
    }
}

#[test]
fn auto_without_terminal_names_the_flags_that_would_change_it() {
    for kind in [GatedTool, BashNormal] {
        let d = decide(&Request {
            mode: Mode::Auto,
            terminal: Absent,
            granted: Granted::No,
            call: call(kind),
        });
        let msg = d.message();
        assert!(msg.contains("--yolo"), "{msg}");
        assert!(msg.contains("--approval on-request"), "{msg}");
    }
}

#[test]
fn dangerous_under_never_says_the_mode_never_asks() {
    let d = decide(&Request {
        mode: Mode::Never,
        terminal: Present,
        granted: Granted::No,
        call: call(BashDangerous),
    });
    assert!(d.message().contains("never asks"), "{}", d.message());
}

#[test]
fn dangerous_under_yolo_without_terminal_says_yolo_does_not_skip_it() {
    let d = decide(&Request {
        mode: Mode::Yolo,
        terminal: Absent,
        granted: Granted::No,
        call: call(BashDangerous),
    });
    assert!(d.message().contains("--yolo"), "{}", d.message());
}

#[test]
fn unattended_denials_explain_allow_all() {
    let normal = decide(&Request {
        mode: UNATTENDED,
        terminal: Absent,
        granted: Granted::No,
        call: call(BashNormal),
    });
    assert!(
        normal.message().contains("--allow-all"),
        "{}",
        normal.message()
    );
    let dangerous = decide(&Request {
        mode: ALLOW_ALL,
        terminal: Absent,
        granted: Granted::No,
        call: call(BashDangerous),
    });
    assert!(
        dangerous.message().contains("--allow-all does not cover"),
        "{}",
        dangerous.message()
    );
}

#[test]
fn forbidden_is_denied_in_every_mode_and_terminal_state_even_when_read_only() {
    let forbidden = Forbidden {
        prefix: "git push".into(),
        reason: "pushes go through CI".into(),
        source: "/home/u/.gg/policy.toml:4".into(),
    };
    for mode in Mode::ALL {
        for terminal in [Present, Absent] {
            for class in [Class::ReadOnly, Class::Normal, Class::Dangerous] {
                let d = decide(&Request {
                    mode,
                    terminal,
                    granted: Granted::No,
                    call: Call::Bash {
                        class,
                        forbidden: Some(&forbidden),
                    },
                });
                assert_eq!(d.rule(), Rule::PolicyForbidden);
                assert!(d.message().contains("pushes go through CI"));
                assert!(d.message().contains("policy.toml:4"));
            }
        }
    }
}

#[test]
fn pre_approved_tools_are_allowed_in_every_mode() {
    for mode in Mode::ALL {
        for terminal in [Present, Absent] {
            let d = decide(&Request {
                mode,
                terminal,
                granted: Granted::No,
                call: Call::PreApproved {
                    tool: "write",
                    reason: "agent area",
                },
            });
            assert_eq!(
                d,
                Decision::Allow {
                    rule: Rule::PreApproved
                }
            );
        }
    }
}

#[test]
fn on_request_without_terminal_is_a_startup_error_and_nothing_else_is() {
    for mode in Mode::ALL {
        for terminal in [Present, Absent] {
            let result = check_startup(mode, terminal);
            let expect_error = mode == Mode::OnRequest && terminal == Absent;
            assert_eq!(result.is_err(), expect_error, "{mode:?} {terminal:?}");
        }
    }
    let err = check_startup(Mode::OnRequest, Absent).unwrap_err();
    assert!(err.message.contains("needs a terminal"));
}

#[test]
fn cli_mode_names_round_trip_and_bad_names_are_rejected() {
    for name in ["auto", "on-request", "yolo", "never"] {
        assert_eq!(Mode::parse_cli(name).unwrap().as_str(), name);
    }
    for bad in ["", "Auto", "unattended", "always", "yes"] {
        let err = Mode::parse_cli(bad).unwrap_err();
        assert_eq!(
            err,
            "approval must be one of: auto, on-request, yolo, never"
        );
    }
}
