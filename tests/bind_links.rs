//! The bubblewrap level's binds never follow a link out of the project, and `/run` is hidden
//! whatever the network. A sandboxed command can turn a protected name (`AGENTS.md`, `.envrc`)
//! into a link; bubblewrap follows links on both sides of a bind, so the next sandbox bound
//! the host directory the link led to (the host's `/tmp`, with its tmux and ssh-agent sockets)
//! over the private one, and a link leading nowhere stopped every later sandbox from starting.
//! Each test drives the real `gg -p` at the bubblewrap level with the scripted model and looks
//! at what the command saw.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::sandbox_support;
use crate::support;

use std::path::Path;

use sandbox_support::available_levels;
use serde_json::json;
use support::{GgFixture, ScriptedServer};

/// Runs `script` (from `app.sh`, so that the classifier lets it run and the sandbox decides) in
/// a `--yolo --sandbox` session at the bubblewrap level with `extra` arguments, and returns
/// what the command printed.
fn run_in_bwrap(fx: &GgFixture, server: &ScriptedServer, script: &str, extra: &[&str]) -> String {
    std::fs::write(fx.repo.join("app.sh"), script).unwrap();
    let mut args = vec!["--yolo", "--sandbox"];
    args.extend_from_slice(extra);
    let (out, results) = support::run_bash_calls(
        fx,
        server,
        &[("GG_SANDBOX_BACKEND", "bwrap")],
        true,
        &["sh ./app.sh"],
        &args,
    );
    assert!(out.status.success(), "{out:?}");
    results.into_iter().next().unwrap_or_default()
}

fn has_bwrap() -> bool {
    if available_levels().contains(&"bwrap") {
        return true;
    }
    support::say_skipped("no bubblewrap level on this host");
    false
}

/// The relative path from `from` (a directory) up to `/` and down to `to`, as a link written
/// by a command would spell it (`../../../tmp`).
fn relative_from(from: &Path, to: &Path) -> std::path::PathBuf {
    let up = from.components().count() - 1;
    let mut rel = std::path::PathBuf::new();
    for _ in 0..up {
        rel.push("..");
    }
    rel.join(to.strip_prefix("/").unwrap())
}

/// `AGENTS.md -> ../../../tmp` (what two commands of a2's H1 left behind): the host's `/tmp`
/// must not come over the command's private one.
#[test]
fn a_placeholder_link_to_the_hosts_tmp_does_not_bring_it_into_the_sandbox() {
    if !has_bwrap() {
        return;
    }
    let host_dir = tempfile::tempdir_in("/tmp").unwrap();
    std::fs::write(host_dir.path().join("marker"), "HOST-TMP-CANARY").unwrap();
    let server = ScriptedServer::start();
    let fx = GgFixture::new(&server, json!({}), "repo");
    let repo = std::fs::canonicalize(&fx.repo).unwrap();
    std::fs::write(repo.join("CLAUDE.md"), "instructions\n").unwrap();
    std::os::unix::fs::symlink(
        relative_from(&repo, Path::new("/tmp")),
        repo.join("AGENTS.md"),
    )
    .unwrap();
    let text = run_in_bwrap(
        &fx,
        &server,
        &format!("cat {}/marker; echo end", host_dir.path().display()),
        &[],
    );
    assert!(text.contains("end"), "the command did not run: {text}");
    assert!(
        !text.contains("HOST-TMP-CANARY"),
        "the host's /tmp was visible: {text}"
    );
}

/// A protected name that is a link leading nowhere (dangling, absolute) or to a file of the
/// project: the sandbox still starts, and the project file it leads to stays read-only.
#[test]
fn a_placeholder_link_leading_nowhere_leaves_the_sandbox_usable() {
    if !has_bwrap() {
        return;
    }
    let server = ScriptedServer::start();
    let fx = GgFixture::new(&server, json!({}), "repo");
    std::os::unix::fs::symlink("/nonexistent-gg-bind-links/x", fx.repo.join(".envrc")).unwrap();
    std::os::unix::fs::symlink("loop", fx.repo.join("loop")).unwrap();
    std::os::unix::fs::symlink("loop", fx.repo.join(".mcp.json")).unwrap();
    std::fs::create_dir(fx.repo.join("docs")).unwrap();
    std::fs::write(fx.repo.join("docs/agents.md"), "instructions\n").unwrap();
    std::os::unix::fs::symlink("docs/agents.md", fx.repo.join("AGENTS.md")).unwrap();
    let text = run_in_bwrap(
        &fx,
        &server,
        "echo planted >> docs/agents.md; echo rc=$?; echo end",
        &[],
    );
    assert!(text.contains("end"), "the sandbox did not start: {text}");
    assert!(!text.contains("rc=0"), "{text}");
    assert_eq!(
        std::fs::read_to_string(fx.repo.join("docs/agents.md")).unwrap(),
        "instructions\n"
    );
}

/// With `--network on`, `/run` is hidden as without a network (a host tmux server under
/// `/run/lock` ran the command's code outside the sandbox); name resolution still works.
#[test]
fn run_is_hidden_with_the_network_on() {
    if !has_bwrap() {
        return;
    }
    // /run/lock is writable by everyone on Debian-like hosts; elsewhere there is nothing to
    // plant there, and nothing to show.
    let Ok(host_dir) = tempfile::tempdir_in("/run/lock") else {
        support::say_skipped("/run/lock is not writable here");
        return;
    };
    std::fs::write(host_dir.path().join("marker"), "HOST-RUN-CANARY").unwrap();
    let server = ScriptedServer::start();
    let fx = GgFixture::new(&server, json!({}), "repo");
    let text = run_in_bwrap(
        &fx,
        &server,
        &format!(
            "cat {}/marker; test -r /etc/resolv.conf || ! test -e /etc/resolv.conf; \
             echo resolv=$?; echo end",
            host_dir.path().display()
        ),
        &["--network", "on"],
    );
    assert!(text.contains("end"), "the command did not run: {text}");
    assert!(
        !text.contains("HOST-RUN-CANARY"),
        "the host's /run was visible: {text}"
    );
    assert!(text.contains("resolv=0"), "resolv.conf unreadable: {text}");
}
