//! The real `gg` binary: flags after the prompt take effect (a security flag is never prompt
//! text), unknown options stop before any request, secrets from files, shell completions.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};
use support::{
    GgHome as Env, Reply, ScriptedServer, gg_home as env, gg_in_home as gg, session_files,
};

fn run(mut cmd: Command) -> Output {
    cmd.output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn audit_rows(e: &Env, server: &ScriptedServer, session: Option<&str>) -> Vec<Value> {
    let mut cmd = gg(e, server);
    cmd.arg("audit");
    if let Some(id) = session {
        cmd.arg(id);
    }
    cmd.arg("--json");
    let out = run(cmd);
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn sandbox_after_the_prompt_runs_sandboxed_and_is_not_prompt_text() {
    let e = env();
    let server = ScriptedServer::with_replies([
        Reply::tool_call("b1", "bash", &json!({"command": "ls"}).to_string()),
        Reply::text(&["listed"]),
    ]);
    let mut cmd = gg(&e, &server);
    cmd.args(["-p", "list the files", "--sandbox"]);
    let out = run(cmd);
    assert!(out.status.success(), "{}", stderr(&out));
    let first = &server.request_bodies()[0];
    let user = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .to_string();
    assert!(user.contains("list the files"), "{user}");
    assert!(
        !user.contains("--sandbox"),
        "the flag leaked into the prompt: {user}"
    );
    let rows = audit_rows(&e, &server, None);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let level = rows[0]["audit"]["sandbox"]["level"].as_str().unwrap_or("");
    assert!(
        !level.is_empty() && level != "off",
        "the bash call ran with sandbox level {level:?}"
    );
}

#[test]
fn unknown_option_after_the_prompt_exits_2_before_any_request() {
    let e = env();
    let server = ScriptedServer::with_replies([Reply::text(&["should not be asked"])]);
    for args in [
        &["-p", "hi", "--bogus"][..],
        &["-p", "hi", "--sandbx"],
        &["fix", "it", "-x"],
        &["resume", "abc", "go", "--bogus"],
    ] {
        let mut cmd = gg(&e, &server);
        cmd.args(args);
        let out = run(cmd);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let text = stderr(&out);
        assert!(text.contains(args[args.len() - 1]), "{args:?}: {text}");
        if args.contains(&"--sandbx") {
            assert!(text.contains("'--sandbox'"), "a suggestion: {text}");
        }
    }
    assert!(server.requests().is_empty(), "the model was contacted");
    assert!(
        session_files(&e.sessions).is_empty(),
        "no session was opened"
    );
}

#[test]
fn api_key_after_the_prompt_and_from_a_file() {
    let e = env();
    let key_file = e.home.join("key.txt");
    std::fs::write(&key_file, "sk-from-file\n").unwrap();
    let server = ScriptedServer::with_replies([
        Reply::text(&["one"]),
        Reply::text(&["two"]),
        Reply::text(&["three"]),
        Reply::text(&["four"]),
    ]);
    let cases: [(&[&str], Option<&Path>, &str); 4] = [
        (&["-p", "hi", "--api-key", "K"], None, "Bearer K"),
        (
            &["-p", "hi", "--api-key-file", key_file.to_str().unwrap()],
            None,
            "Bearer sk-from-file",
        ),
        (&["-p", "hi"], Some(&key_file), "Bearer sk-from-file"),
        // A key typed on the command line beats the file named in the environment.
        (&["-p", "hi", "--api-key=K2"], Some(&key_file), "Bearer K2"),
    ];
    for (i, (args, env_file, want)) in cases.iter().enumerate() {
        let mut cmd = gg(&e, &server);
        cmd.env_remove("OPENAI_API_KEY").args(*args);
        if let Some(file) = env_file {
            cmd.env("GG_API_KEY_FILE", file);
        }
        let out = run(cmd);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert_eq!(
            server.requests()[i].header("authorization"),
            Some(*want),
            "{args:?}"
        );
    }
    // An unreadable key file is a usage error naming the file, before any request.
    let mut cmd = gg(&e, &server);
    cmd.env_remove("OPENAI_API_KEY")
        .args(["-p", "hi", "--api-key-file"])
        .arg(e.home.join("absent"));
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--api-key-file") && stderr(&out).contains("absent"));
    assert_eq!(server.requests().len(), 4);
}

/// `__gg-secrets-fd=N` is how gg hands its secrets to its own re-executed image (through a
/// sealed memfd). Given by anyone else it is refused, with the reason, before anything starts.
#[test]
fn a_forged_secrets_hand_over_is_refused_before_anything_runs() {
    let e = env();
    let server = ScriptedServer::with_replies([Reply::text(&["never asked"])]);
    for (fd, why) in [
        ("x", "not a descriptor number"),
        ("99", "descriptor 99 was not handed over"),
    ] {
        let mut cmd = gg(&e, &server);
        cmd.arg(format!("__gg-secrets-fd={fd}")).args(["-p", "hi"]);
        let out = run(cmd);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert_eq!(
            stderr(&out).trim_end(),
            format!("gg: __gg-secrets-fd=… is gg's own start-up argument: {why}")
        );
    }
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn resume_with_yolo_after_the_prompt_allows_the_write() {
    let e = env();
    let server = ScriptedServer::with_replies([
        Reply::text(&["hello"]),
        Reply::tool_call(
            "w1",
            "write",
            &json!({"path": "resumed.txt", "content": "yes\n"}).to_string(),
        ),
        Reply::text(&["written"]),
    ]);
    let mut cmd = gg(&e, &server);
    cmd.args(["-p", "start"]);
    let out = run(cmd);
    assert!(out.status.success(), "{}", stderr(&out));
    let files = session_files(&e.sessions);
    assert_eq!(files.len(), 1);
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&files[0])
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let id = header["id"].as_str().unwrap().to_string();

    // No terminal: without --yolo the write would be denied (auto mode asks nobody).
    let mut cmd = gg(&e, &server);
    cmd.args(["resume", &id, "continue", "--yolo"]);
    let out = run(cmd);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "written\n");
    assert_eq!(
        std::fs::read_to_string(e.repo.join("resumed.txt")).unwrap(),
        "yes\n",
        "--yolo after the prompt was honoured"
    );
    assert_eq!(
        session_files(&e.sessions).len(),
        1,
        "the same session was resumed"
    );
    let rows = audit_rows(&e, &server, Some(&id));
    assert_eq!(rows[0]["audit"]["decision"]["mode"], "yolo", "{rows:?}");
}

#[test]
fn completions_load_in_bash_and_the_man_page_renders() {
    let gg = env!("CARGO_BIN_EXE_gg");
    let script = format!("source <('{gg}' completions bash) && complete -p gg");
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(
        line.starts_with("complete ") && line.trim_end().ends_with(" gg"),
        "{line}"
    );
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = Command::new(gg)
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success() && out.stdout.len() > 100, "{shell}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("sandbox"),
            "{shell}"
        );
    }
    let out = Command::new(gg).arg("man").output().unwrap();
    assert!(out.status.success());
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.starts_with(".ie") || page.contains(".TH gg"), "{page}");
    assert!(page.contains("sandbox"));
    let out = Command::new(gg)
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn one_shot_into_a_pipe_prints_the_final_reply_or_the_text_before_a_failure() {
    let e = env();
    let server = ScriptedServer::with_replies([
        Reply::text(&["all ", "of ", "it"]),
        support::StreamReply::new()
            .event(support::text_chunk("half an answer"))
            .close_delimited()
            .reply(),
    ]);
    let mut cmd = gg(&e, &server);
    cmd.args(["-p", "one"]);
    let out = run(cmd);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "all of it\n");

    let mut cmd = gg(&e, &server);
    cmd.args(["-p", "two"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "half an answer\n");
    assert!(
        stderr(&out).contains("model stream interrupted"),
        "{}",
        stderr(&out)
    );
    // --json is unchanged: the deltas are events, nothing else on stdout.
    let server = ScriptedServer::with_replies([support::StreamReply::new()
        .event(support::text_chunk("half"))
        .close_delimited()
        .reply()]);
    let mut cmd = gg(&e, &server);
    cmd.args(["-p", "three", "--json"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(1));
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let event: Value = serde_json::from_str(line).unwrap();
        assert!(event["type"].is_string(), "{line}");
    }
}

#[test]
fn unasked_and_unsandboxed_runs_recommend_the_sandbox_once() {
    let e = env();
    let server = ScriptedServer::start();
    for (args, recommended) in [
        (&["-p", "hi", "--yolo"][..], true),
        (&["-p", "hi", "--approval", "never"], true),
        (&["-p", "hi", "--yolo", "--sandbox"], false),
        (&["-p", "hi"], false),
    ] {
        server.push(Reply::text(&["ok"]));
        let mut cmd = gg(&e, &server);
        cmd.args(args);
        let out = run(cmd);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let count = stderr(&out).matches("add --sandbox").count();
        assert_eq!(
            count,
            usize::from(recommended),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}
