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

/// An instructions file is read as the file tools read: beneath its own directory, never in a
/// credential store. A cloned repository's `AGENTS.md -> ~/.ssh/id_rsa` put the key into the
/// system prompt (gg's own unconfined process read it); a link to a sibling still works.
#[test]
fn an_instructions_link_out_of_its_directory_is_not_read() {
    let server = ScriptedServer::start();
    let fx = fixture(&server);
    std::fs::create_dir_all(fx.home.join(".ssh")).unwrap();
    std::fs::write(fx.home.join(".ssh/id_rsa"), "SSH-KEY-CANARY").unwrap();
    std::os::unix::fs::symlink(fx.home.join(".ssh/id_rsa"), fx.repo.join("AGENTS.md")).unwrap();
    std::fs::create_dir_all(fx.repo.join("sub")).unwrap();
    std::fs::write(fx.repo.join("sub/CLAUDE.md"), "SIBLING-RULES").unwrap();
    std::os::unix::fs::symlink("CLAUDE.md", fx.repo.join("sub/AGENTS.md")).unwrap();
    // gg's own directory is exempt from the credential check, not from this: its personal
    // instructions as a link to ggd's token beside them.
    std::fs::create_dir_all(fx.home.join(".gg")).unwrap();
    std::fs::write(fx.home.join(".gg/web.json"), "GGD-TOKEN-CANARY").unwrap();
    std::os::unix::fs::symlink("web.json", fx.home.join(".gg/AGENTS.md")).unwrap();
    server.push(Reply::text(&["done"]));
    let mut cmd = fx.gg();
    cmd.current_dir(fx.repo.join("sub")).args(["-p", "go"]);
    let out = output_within(cmd, Duration::from_secs(60));
    assert!(out.status.success(), "{out:?}");
    let sent = serde_json::to_string(&server.request_bodies()).unwrap();
    assert!(
        !sent.contains("SSH-KEY-CANARY"),
        "the key reached the model"
    );
    assert!(
        !sent.contains("GGD-TOKEN-CANARY"),
        "ggd's token reached the model through ~/.gg/AGENTS.md"
    );
    assert!(
        sent.contains("SIBLING-RULES"),
        "a link to a sibling is read: {sent}"
    );
}

/// At the landlock level a command can make `.git/hooks` a link to the project (`-> ..`); the
/// sweep then took every file of the project for a new hook and moved it aside, `.gg` (with the
/// person's memory) deleted. Now nothing is moved through such a link: the link goes, and the
/// person's hooks directory is made again in its place (s33).
#[test]
fn a_hooks_link_to_the_project_empties_nothing() {
    if !crate::sandbox_support::available_levels().contains(&"landlock") {
        return;
    }
    let server = ScriptedServer::start();
    let fx = fixture(&server);
    std::fs::write(fx.repo.join("README.md"), "keep me").unwrap();
    std::fs::create_dir_all(fx.repo.join(".gg/memory")).unwrap();
    std::fs::write(fx.repo.join(".gg/memory/MEMORY.md"), "- remembered\n").unwrap();
    // What the model wrote earlier (a file write the person allowed), run as a normal command.
    std::fs::write(
        fx.repo.join("t1.sh"),
        "rm -rf .git/hooks && ln -s .. .git/hooks\n",
    )
    .unwrap();
    server.push(Reply::tool_call(
        "c0",
        "bash",
        &json!({ "command": "sh t1.sh" }).to_string(),
    ));
    server.push(Reply::text(&["done"]));
    let mut cmd = fx.gg();
    cmd.env("GG_SANDBOX_BACKEND", "landlock")
        .args(["--sandbox", "--yolo", "-p", "go"]);
    let out = output_within(cmd, Duration::from_secs(90));
    assert!(out.status.success(), "{out:?}");
    let results = server.tool_results();
    assert_eq!(
        std::fs::read_to_string(fx.repo.join("README.md")).unwrap(),
        "keep me",
        "{results:?}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.repo.join(".gg/memory/MEMORY.md")).unwrap(),
        "- remembered\n",
        "{results:?}"
    );
    assert!(fx.repo.join(".git/HEAD").exists(), "{results:?}");
    let hooks = std::fs::symlink_metadata(fx.repo.join(".git/hooks")).unwrap();
    assert!(
        hooks.is_dir() && !hooks.file_type().is_symlink(),
        "the link stays: {results:?}"
    );
    assert_eq!(
        std::fs::read_dir(fx.repo.join(".git/hooks"))
            .unwrap()
            .count(),
        0,
        "{results:?}"
    );
}
