//! Files gg reads when it starts (the project's `.gg/settings.json` and `.gg/policy.toml`, its
//! `AGENTS.md`, git's config) that a command made a FIFO: gg opened them and waited forever for a
//! writer, so every later run in the project, ggd and its scheduler included, hung silently. Now
//! each run ends: with a clear error naming the file, or, for git's config, by not trusting git
//! there. Each run has a deadline far above its normal time, so a regression fails instead of
//! hanging the suite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{GgFixture, Reply, ScriptedServer};

/// Waits for `cmd` at most `limit`; a run still going then is killed and fails the test.
fn output_within(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("gg still running after {limit:?}: it waits on a planted FIFO");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

fn fixture(server: &ScriptedServer) -> GgFixture {
    let fx = GgFixture::new(server, json!({}), "repo");
    support::git(&fx.repo, &["init", "-q"]);
    fx
}

#[test]
fn a_fifo_where_gg_reads_its_settings_is_an_error_not_a_hang() {
    for planted in [".gg/settings.json", ".gg/policy.toml"] {
        let server = ScriptedServer::start();
        let fx = fixture(&server);
        mkfifo(&fx.repo.join(planted));
        server.push(Reply::text(&["done"]));
        let mut cmd = fx.gg();
        cmd.args(["-p", "go"]);
        let out = output_within(cmd, Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{planted}: {out:?}");
        assert!(
            stderr.contains("not a regular file") && stderr.contains(planted),
            "{planted}: {stderr}"
        );
    }
}

/// Instructions that are not a regular file are skipped (as a directory named `AGENTS.md` is);
/// git's config that is not one makes git untrusted there, and gg's own questions to git give up
/// after a bounded wait.
#[test]
fn a_fifo_as_instructions_or_gits_config_does_not_stop_the_session() {
    let server = ScriptedServer::start();
    let fx = fixture(&server);
    mkfifo(&fx.repo.join("AGENTS.md"));
    std::fs::remove_file(fx.repo.join(".git/config")).unwrap();
    mkfifo(&fx.repo.join(".git/config"));
    server.push(Reply::tool_call(
        "c0",
        "bash",
        &json!({ "command": "echo still-here" }).to_string(),
    ));
    server.push(Reply::text(&["done"]));
    let mut cmd = fx.gg();
    cmd.args(["-p", "go"]);
    let out = output_within(cmd, Duration::from_secs(60));
    assert!(out.status.success(), "{out:?}");
    let results = server.tool_results();
    assert!(
        results.iter().any(|r| r.contains("still-here")),
        "{results:?}"
    );
}
