//! The real `gg` binary end to end against the scripted server: one-shot runs, approvals without
//! a terminal, `--json` events, exit codes and start-up errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use support::{Reply, ScriptedServer, gg_home as env, gg_in_home as gg, session_files};

fn run(mut cmd: Command) -> Output {
    cmd.output().unwrap()
}

#[test]
fn one_shot_yolo_writes_the_file_and_the_session_holds_the_turn() {
    let e = env();
    let server = ScriptedServer::with_replies([
        Reply::tool_call(
            "w1",
            "write",
            &json!({"path": "hello.txt", "content": "hi from gg\n"}).to_string(),
        ),
        Reply::text(&["Created ", "hello.txt."]),
    ]);
    let mut cmd = gg(&e, &server);
    cmd.args(["--yolo", "-p", "create hello.txt"]);
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "Created hello.txt.\n"
    );
    assert_eq!(
        std::fs::read_to_string(e.repo.join("hello.txt")).unwrap(),
        "hi from gg\n"
    );

    let files = session_files(&e.sessions);
    assert_eq!(files.len(), 1);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries[0]["type"], "session");
    let roles: Vec<&str> = entries
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| e["message"]["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    assert!(entries.iter().any(|e| e["type"] == "model"));
    // The request carried the key and the built-in tools.
    let req = &server.requests()[0];
    assert_eq!(req.header("authorization"), Some("Bearer sk-test"));
}

#[test]
fn auto_without_terminal_denies_the_write_and_fail_on_deny_exits_3() {
    let e = env();
    for (extra, code) in [(&[][..], 0), (&["--fail-on-deny"][..], 3)] {
        let server = ScriptedServer::with_replies([
            Reply::tool_call(
                "w1",
                "write",
                &json!({"path": "nope.txt", "content": "x"}).to_string(),
            ),
            Reply::text(&["I could not write it."]),
        ]);
        let mut cmd = gg(&e, &server);
        cmd.args(extra).args(["-p", "write nope.txt"]);
        let out = run(cmd);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!e.repo.join("nope.txt").exists());
        let second = &server.request_bodies()[1];
        let tool_msg = second["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "tool")
            .unwrap();
        let denial = tool_msg["content"].as_str().unwrap();
        assert!(denial.contains("denied"), "{denial}");
        assert!(denial.contains("--yolo"), "{denial}");
    }
}

#[test]
fn json_mode_prints_only_parseable_events() {
    let e = env();
    let server = ScriptedServer::with_replies([
        Reply::tool_call("b1", "bash", &json!({"command": "ls"}).to_string()),
        Reply::text(&["All ", "good."]),
    ]);
    let mut cmd = gg(&e, &server);
    cmd.args(["--json", "--approval", "never", "-p", "look"]);
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|err| panic!("not JSON: {l}: {err}")))
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"run_started"));
    assert_eq!(types.last(), Some(&"run_completed"));
    for needed in ["tool_call_start", "tool_call_finish", "text_delta", "usage"] {
        assert!(types.contains(&needed), "{needed} in {types:?}");
    }
    let start = events
        .iter()
        .find(|e| e["type"] == "tool_call_start")
        .unwrap();
    assert_eq!(start["classification"], "read-only");
    assert_eq!(start["decision"]["action"], "allow");
    assert_eq!(events.last().unwrap()["text"], "All good.");
}

#[test]
fn on_request_without_a_terminal_exits_2_before_any_request() {
    let e = env();
    let server = ScriptedServer::start();
    let mut cmd = gg(&e, &server);
    cmd.args(["--approval", "on-request", "-p", "hi"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("on-request needs a terminal"));
    assert!(server.requests().is_empty());
}

#[test]
fn configuration_errors_exit_2_without_network() {
    let e = env();
    let server = ScriptedServer::start();
    let cases: Vec<(Vec<&str>, Option<&str>, &str)> = vec![
        (
            vec!["-p", "hi"],
            Some(""),
            "missing API key: set OPENAI_API_KEY or pass --api-key",
        ),
        (
            vec!["--approval", "sometimes", "-p", "hi"],
            None,
            "approval must be one of",
        ),
        (
            vec!["--model", "nocolon", "-p", "hi"],
            None,
            "model selection must use provider:model",
        ),
        (vec!["-p"], None, "prompt is required in print mode"),
        (
            vec!["--no-session", "--continue", "-p", "x"],
            None,
            "--no-session cannot be combined",
        ),
    ];
    for (args, key, needle) in cases {
        let mut cmd = gg(&e, &server);
        if let Some(k) = key {
            cmd.env("OPENAI_API_KEY", k);
        }
        cmd.args(&args);
        let out = run(cmd);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(needle),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(server.requests().is_empty());
}

/// The tools (and the sandbox's warm-up) are built before the session file: a policy file gg
/// cannot read refuses the run with its line, and leaves no session behind and asks no model.
#[test]
fn a_malformed_policy_refuses_the_run_before_the_session_exists() {
    let e = env();
    let server = ScriptedServer::start();
    // A repository of its own, so that the project policy is this one's.
    std::fs::create_dir_all(e.repo.join(".git")).unwrap();
    std::fs::create_dir_all(e.repo.join(".gg")).unwrap();
    std::fs::write(
        e.repo.join(".gg/policy.toml"),
        "[[forbidden]]\nprefix = \"x\"\n",
    )
    .unwrap();
    for sandbox in [false, true] {
        let mut cmd = gg(&e, &server);
        if sandbox {
            cmd.arg("--sandbox");
        }
        cmd.args(["--yolo", "-p", "hi"]);
        let out = run(cmd);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "sandbox {sandbox}: {stderr}");
        assert!(
            stderr.contains(".gg/policy.toml:1: ") && stderr.contains("needs a reason"),
            "sandbox {sandbox}: {stderr}"
        );
        assert!(
            session_files(&e.sessions).is_empty(),
            "sandbox {sandbox}: a session file was left: {:?}",
            session_files(&e.sessions)
        );
    }
    assert!(server.requests().is_empty());
}

#[test]
fn provider_failure_exits_1_with_the_error() {
    let e = env();
    let server =
        ScriptedServer::with_replies([Reply::status(401, "{\"error\":{\"message\":\"bad key\"}}")]);
    let mut cmd = gg(&e, &server);
    cmd.args(["-p", "hi"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("401"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn sessions_list_continue_and_audit() {
    let e = env();
    let server = ScriptedServer::with_replies([
        Reply::tool_call(
            "b1",
            "bash",
            &json!({"command": "echo hi > f.txt"}).to_string(),
        ),
        Reply::text(&["first"]),
        Reply::text(&["second"]),
    ]);
    let mut cmd = gg(&e, &server);
    cmd.args(["--yolo", "-n", "my work", "-p", "one"]);
    assert!(run(cmd).status.success());
    let mut cmd = gg(&e, &server);
    cmd.args(["--continue", "-p", "two"]);
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        session_files(&e.sessions).len(),
        1,
        "--continue reused the session"
    );
    // The second request carried the whole first turn.
    let roles: Vec<String> = server.request_bodies()[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .filter(|r| r != "system")
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant", "user"]);

    let mut cmd = gg(&e, &server);
    cmd.args(["sessions", "list"]);
    let listing = String::from_utf8(run(cmd).stdout).unwrap();
    assert!(
        listing.starts_with("ID\tUPDATED\tMESSAGES\tNAME\tPATH\tPREVIEW\n"),
        "{listing}"
    );
    assert!(listing.contains("my work"), "{listing}");

    let mut cmd = gg(&e, &server);
    cmd.args(["audit", "--json"]);
    let out = run(cmd);
    let rows: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["tool"], "bash");
    assert_eq!(rows[0]["audit"]["classification"]["verdict"], "normal");
    assert_eq!(rows[0]["audit"]["decision"]["decidedBy"], "policy");
    assert_eq!(rows[0]["audit"]["decision"]["mode"], "yolo");
    let mut cmd = gg(&e, &server);
    cmd.args(["audit"]);
    let human = String::from_utf8(run(cmd).stdout).unwrap();
    assert!(
        human.contains("classification: normal") && human.contains("decision: allow by policy"),
        "{human}"
    );
}

#[test]
fn secrets_never_reach_the_bash_environment() {
    let e = env();
    let server = ScriptedServer::with_replies([
        Reply::tool_call("b1", "bash", &json!({"command": "env"}).to_string()),
        Reply::text(&["seen"]),
    ]);
    let mut cmd = gg(&e, &server);
    cmd.env("OPENAI_API_KEY", "sk-live-secret-1")
        .env("ANTHROPIC_API_KEY", "secret-2")
        .env("GG_INTERNAL", "secret-3")
        .env("NPM_TOKEN", "secret-4")
        .env("DB_PASSWORD", "secret-5")
        .env("AWS_SECRET_ACCESS_KEY", "secret-6")
        // Standard names without a secret-sounding word (an attacker pass read them with `env`).
        .env("MYSQL_PWD", "secret-7")
        .env("CI_JOB_JWT", "secret-8")
        .env("DOCKER_AUTH_CONFIG", "secret-9")
        .env("GPG_PASSPHRASE", "secret-10")
        .env("HARMLESS_SETTING", "visible-value")
        .args(["--approval", "never", "-p", "show env"]);
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let second = &server.request_bodies()[1];
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        result.contains("HARMLESS_SETTING=visible-value"),
        "{result}"
    );
    for secret in [
        "sk-live-secret-1",
        "secret-2",
        "secret-3",
        "secret-4",
        "secret-5",
        "secret-6",
        "secret-7",
        "secret-8",
        "secret-9",
        "secret-10",
    ] {
        assert!(
            !result.contains(secret),
            "{secret} leaked into bash: {result}"
        );
    }
}

#[test]
fn the_sandbox_stops_what_the_classifier_cannot_see() {
    let e = env();
    // A script on disk: the classifier sees `sh ./tidy.sh` (normal), not what the script does.
    std::fs::write(
        e.repo.join("tidy.sh"),
        format!(
            "echo inside > inside.txt\necho pwned > {}/outside.txt\n",
            e.home.display()
        ),
    )
    .unwrap();
    let server = ScriptedServer::with_replies([
        Reply::tool_call(
            "b1",
            "bash",
            &json!({"command": "sh ./tidy.sh"}).to_string(),
        ),
        Reply::text(&["ran it"]),
    ]);
    let mut cmd = gg(&e, &server);
    cmd.args(["--yolo", "--sandbox", "-p", "tidy up"]);
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(e.repo.join("inside.txt")).unwrap(),
        "inside\n"
    );
    assert!(
        !e.home.join("outside.txt").exists(),
        "the write outside the working directory was stopped"
    );
    let result = server.request_bodies()[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        result.contains("[gg: command classified normal"),
        "{result}"
    );
    // The failing redirection shows in the output (read-only file system or permission denied).
    assert!(result.contains("exit code"), "{result}");
}

#[test]
fn two_gg_processes_on_one_session_one_wins_the_other_gets_a_conflict() {
    let e = env();
    let session = e.home.join("shared.jsonl");
    // A's reply is slow, so B writes to the session while A waits for the model.
    let slow = support::StreamReply::new()
        .event(support::text_chunk("A answers"))
        .delay(std::time::Duration::from_millis(1500))
        .event(support::finish_chunk("stop"))
        .done()
        .reply();
    let server = ScriptedServer::with_replies([slow, Reply::text(&["B answers"])]);
    let mut a = gg(&e, &server);
    a.arg("--session").arg(&session).args(["-p", "from A"]);
    a.stdout(Stdio::piped()).stderr(Stdio::piped());
    let a = a.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while server.requests().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "A never reached the model"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut b = gg(&e, &server);
    b.arg("--session").arg(&session).args(["-p", "from B"]);
    let b = run(b);
    let a = a.wait_with_output().unwrap();

    assert!(
        b.status.success(),
        "B: {}",
        String::from_utf8_lossy(&b.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&b.stdout), "B answers\n");
    assert_eq!(
        a.status.code(),
        Some(1),
        "A: {}",
        String::from_utf8_lossy(&a.stderr)
    );
    assert!(
        String::from_utf8_lossy(&a.stderr).contains("session changed by another process"),
        "{}",
        String::from_utf8_lossy(&a.stderr)
    );
    // The file is still one valid tree, with B's turn complete and nothing of A's reply.
    let transcript = gg::session::load(&session).unwrap();
    let texts: Vec<String> = transcript
        .messages()
        .iter()
        .map(|m| m.display_text())
        .collect();
    assert_eq!(texts, ["from A", "from B", "B answers"]);
}
