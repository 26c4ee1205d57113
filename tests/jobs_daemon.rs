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
