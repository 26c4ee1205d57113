//! End to end: a job added with the real `gg job add` fires while the real `ggd` runs, against
//! the scripted model server, sandboxed, and leaves an auditable session and an `ok` record.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Reply, ScriptedServer, session_files};

fn command(bin: &str, home: &Path, repo: &Path, server: &ScriptedServer) -> Command {
    let mut cmd = Command::new(bin);
    cmd.current_dir(repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", server.base_url())
        .env("GG_SESSION_DIR", home.join("sessions"));
    cmd
}

fn runs(home: &Path) -> Vec<Value> {
    std::fs::read_to_string(home.join(".gg/scheduler/runs.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn a_job_fires_while_ggd_runs_sandboxed_and_is_auditable() {
    let tmp = support::fixture_dir();
    let home = tmp.path().join("home");
    let repo = home.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("notes.txt"), "remember the milk\n").unwrap();
    let (home, repo) = (home.canonicalize().unwrap(), repo.canonicalize().unwrap());
    let server = ScriptedServer::with_replies([
        Reply::tool_call(
            "b1",
            "bash",
            &json!({"command": "cat notes.txt"}).to_string(),
        ),
        Reply::text(&["Reminder: ", "buy milk."]),
    ]);

    let out = command(env!("CARGO_BIN_EXE_gg"), &home, &repo, &server)
        .args([
            "job",
            "add",
            "--name",
            "nightly notes",
            "--in",
            "1s",
            "summarise",
            "notes.txt",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("ggd"),
        "warns that no daemon runs"
    );
    std::thread::sleep(Duration::from_millis(1200));

    let mut daemon = command(env!("CARGO_BIN_EXE_ggd"), &home, &repo, &server)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let record = loop {
        if let Some(done) = runs(&home)
            .into_iter()
            .rev()
            .find(|r| r["status"] != "running")
        {
            break done;
        }
        assert!(
            Instant::now() < deadline,
            "the job did not fire: {:?}",
            runs(&home)
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    drop(daemon.stdin.take());
    let _ = daemon.wait();

    assert_eq!(record["status"], "ok", "{record}");
    assert_eq!(record["summary"], "Reminder: buy milk.");
    let session_path = PathBuf::from(record["session_path"].as_str().unwrap());
    assert!(session_path.exists(), "{session_path:?}");
    assert_eq!(
        session_files(&home.join("sessions")),
        std::slice::from_ref(&session_path)
    );

    // The session is auditable: the bash call ran read-only, under a sandbox level, decided by
    // the unattended policy.
    let audit = command(env!("CARGO_BIN_EXE_gg"), &home, &repo, &server)
        .args(["audit", "--json"])
        .arg(&session_path)
        .output()
        .unwrap();
    let rows: Vec<Value> = String::from_utf8(audit.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let a = &rows[0]["audit"];
    assert_eq!(a["classification"]["verdict"], "read-only");
    assert_eq!(a["decision"]["mode"], "unattended");
    let level = a["sandbox"]["level"].as_str().unwrap();
    // A read-only command runs in the read-only sandbox, at the job's sandbox level.
    assert!(
        ["bwrap+read-only", "landlock+read-only"].contains(&level),
        "jobs run sandboxed: {a}"
    );
    let transcript = std::fs::read_to_string(&session_path).unwrap();
    assert!(
        transcript.contains("remember the milk"),
        "the tool really ran"
    );
}

fn stored_jobs(home: &Path) -> Vec<Value> {
    match std::fs::read_to_string(home.join(".gg/scheduler/jobs.json")) {
        Ok(text) => serde_json::from_str(&text).unwrap(),
        Err(_) => Vec::new(),
    }
}

/// A job is a run that starts later: on `ggd --sandbox`, `job.add` and `job.resume` go through the
/// floor `run.start` goes through (no job without the sandbox, none with a wider network), and
/// nothing is stored when it refuses (s23 D2: `job.add {noSandbox, allowAll}` was accepted and
/// the job later ran unsandboxed).
#[test]
fn ggd_job_add_and_resume_go_through_the_run_start_floor() {
    use crate::daemon_common::{self, StdioClient};
    let e = daemon_common::env();
    let server = ScriptedServer::with_replies([]);
    let d = StdioClient::spawn(daemon_common::ggd(
        &e,
        &server.base_url(),
        &["--sandbox", "--network", "off"],
    ));
    for (extra, said) in [
        (
            json!({"noSandbox": true, "allowAll": true}),
            "cannot turn it off",
        ),
        (json!({"network": "on"}), "cannot open it to on"),
        (
            json!({"network": "allow-list"}),
            "cannot open it to allow-list",
        ),
    ] {
        let mut params = json!({"name": "loose", "prompt": "go", "in": "1h"});
        params
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let refused = d.err("job.add", params.clone());
        assert_eq!(refused["code"], -32602, "{params}: {refused}");
        assert!(
            refused["message"].as_str().unwrap().contains(said),
            "{params}: {refused}"
        );
    }
    assert_eq!(d.ok("job.list", json!({}))["jobs"], json!([]));
    assert_eq!(stored_jobs(&e.home), Vec::<Value>::new(), "nothing stored");

    // A job that names no network fires with the daemon's, not the config's default allow-list.
    let job = d.ok(
        "job.add",
        json!({"name": "tight", "prompt": "go", "in": "1h", "allowAll": true}),
    );
    assert_eq!(
        (&job["sandbox"], &job["network"]),
        (&json!(true), &json!("off"))
    );

    // A paused job looser than the floor (the person's own `gg job add --no-sandbox`) is not
    // resumed through the sandboxed daemon either.
    let gg = |args: &[&str]| {
        let out = command(env!("CARGO_BIN_EXE_gg"), &e.home, &e.project, &server)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
    };
    gg(&[
        "job",
        "add",
        "--name",
        "mine",
        "--no-sandbox",
        "--in",
        "1h",
        "go",
    ]);
    gg(&["job", "pause", "mine"]);
    let refused = d.err("job.resume", json!({"id": "mine"}));
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("cannot turn it off"),
        "{refused}"
    );
    let mine = stored_jobs(&e.home)
        .into_iter()
        .find(|j| j["name"] == "mine")
        .unwrap();
    assert_eq!(mine["enabled"], false, "{mine}");
    assert!(server.requests().is_empty());
}

/// `gg job …` run by a command of a gg session (which sets `GG_PARENT_CEILING`) cannot schedule,
/// resume or fire a job looser than that session: the job would run later, out of its reach.
#[test]
fn gg_job_add_resume_and_run_hold_to_the_parent_sessions_ceiling() {
    let tmp = support::fixture_dir();
    let home = tmp.path().join("home");
    let repo = home.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let (home, repo) = (home.canonicalize().unwrap(), repo.canonicalize().unwrap());
    let server = ScriptedServer::with_replies([]);
    // What a sandboxed `--approval auto` session with the network off puts on its commands.
    let ceiling = "mode=auto;sandbox=on;network=off";
    let gg = |args: &[&str], ceiling: Option<&str>| {
        let mut cmd = command(env!("CARGO_BIN_EXE_gg"), &home, &repo, &server);
        if let Some(c) = ceiling {
            cmd.env("GG_PARENT_CEILING", c);
        }
        cmd.args(args).output().unwrap()
    };
    for (flags, said) in [
        (&["--no-sandbox"][..], "--no-sandbox:"),
        (&["--allow-all"][..], "--allow-all:"),
        (&["--network", "on"][..], "--network:"),
        (&["--network", "allow-list"][..], "--network:"),
    ] {
        let mut args = vec!["job", "add", "--name", "loose", "--in", "1h"];
        args.extend(flags);
        args.push("go");
        let out = gg(&args, Some(ceiling));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(said),
            "{flags:?}: {stderr}"
        );
    }
    assert_eq!(stored_jobs(&home), Vec::<Value>::new(), "nothing stored");

    // Within the ceiling: stored, with the ceiling's network (the default allow-list is wider).
    assert!(
        gg(
            &["job", "add", "--name", "tight", "--in", "1h", "go"],
            Some(ceiling)
        )
        .status
        .success()
    );
    let tight = &stored_jobs(&home)[0];
    assert_eq!(
        (&tight["sandbox"], &tight["network"]),
        (&json!(true), &json!("off"))
    );

    // A job the person added outside any session, looser than the ceiling: not resumed and not
    // fired from inside one.
    for args in [
        &[
            "job",
            "add",
            "--name",
            "mine",
            "--no-sandbox",
            "--allow-all",
            "--in",
            "1h",
            "go",
        ][..],
        &["job", "pause", "mine"][..],
    ] {
        assert!(gg(args, None).status.success(), "{args:?}");
    }
    let out = gg(&["job", "resume", "mine"], Some(ceiling));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("--no-sandbox:"),
        "{stderr}"
    );
    let out = gg(&["job", "run", "mine"], Some(ceiling));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success() && stdout.contains("error"),
        "{stdout}"
    );
    let record = runs(&home).pop().unwrap();
    assert_eq!(record["status"], "error", "{record}");
    assert!(
        record["summary"]
            .as_str()
            .unwrap()
            .contains("--no-sandbox:"),
        "{record}"
    );
    assert!(server.requests().is_empty(), "the model was never asked");
    let mine = stored_jobs(&home)
        .into_iter()
        .find(|j| j["name"] == "mine")
        .unwrap();
    assert_eq!(mine["enabled"], false, "{mine}");
}
