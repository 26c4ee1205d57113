//! What gg itself starts on the host, outside the sandbox and the guard (its own `git` query
//! for the hooks directory, the desktop opener and the helpers it looks up, an MCP server's
//! command), is never a program from a `PATH` directory the agent's commands write. An
//! attacker pass planted `git`, `run-mailcap` and an MCP server's command in the project's
//! `node_modules/.bin` and `.venv/bin` (on `PATH` as a relative and an absolute entry, as a
//! person's shell often has them), and gg then ran each unconfined, with every secret in reach.
//! Each test plants the programs as an earlier command could, drives the real `gg -p` with the
//! scripted model, and checks the host for the mark a planted program leaves.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::sandbox_support;
use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sandbox_support::available_levels;
use serde_json::json;
use support::{GgFixture, Reply, ScriptedServer};

/// Plants `names` in the project's `node_modules/.bin` and `.venv/bin`, each a script that
/// appends its name, arguments and parent to `mark` (outside the project, where no confined
/// command may write) and then runs the real program (through the real `PATH`, so the planted
/// ones never call each other); returns the `PATH` that puts both first, the first relative.
fn plant(repo: &Path, mark: &Path, names: &[&str]) -> String {
    let real_path = std::env::var("PATH").unwrap();
    for dir in ["node_modules/.bin", ".venv/bin"] {
        let dir = repo.join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        for name in names {
            let script = dir.join(name);
            std::fs::write(
                &script,
                format!(
                    "#!/bin/sh\nPATH='{real_path}'\n\
                     echo \"{name} $* (parent: $(tr '\\0' ' ' < /proc/$PPID/cmdline))\" >> '{}'\n\
                     exec {name} \"$@\"\n",
                    mark.display()
                ),
            )
            .unwrap();
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    format!(
        "node_modules/.bin:{}:{real_path}",
        repo.join(".venv/bin").display()
    )
}

fn marks(mark: &Path) -> String {
    std::fs::read_to_string(mark).unwrap_or_default()
}

/// The sweep after a command asks git where the hooks are whenever `PATH` holds a relative
/// entry: that git is found only outside the project, sandboxed at each level and guarded.
#[test]
fn gg_runs_no_git_from_a_directory_its_commands_write() {
    let mut runs: Vec<(String, Vec<&str>)> = available_levels()
        .into_iter()
        .map(|level| (level.to_string(), vec!["--yolo", "--sandbox"]))
        .collect();
    runs.push(("guard".to_string(), vec!["--yolo"]));
    for (level, args) in runs {
        let server = ScriptedServer::start();
        let fx = GgFixture::new(&server, json!({}), "home/repo");
        let mark: PathBuf = fx.tmp.path().join("planted-ran");
        let path = plant(&fx.repo, &mark, &["git"]);
        let mut env = vec![("PATH", path.as_str())];
        if level != "guard" {
            env.push(("GG_SANDBOX_BACKEND", level.as_str()));
        }
        let (out, results) =
            support::run_bash_calls(&fx, &server, &env, true, &["echo ran-$((40+2))"], &args);
        assert!(out.status.success(), "{level}: {out:?}");
        assert!(
            results.first().is_some_and(|r| r.contains("ran-42")),
            "{level}: {results:?}"
        );
        assert_eq!(
            marks(&mark),
            "",
            "{level}: gg started a planted git on the host"
        );
    }
}

/// `open` of a file in the project starts the desktop's opener (`xdg-open`, a shell script that
/// finds its helpers through `PATH`) with a `PATH` of the entries outside the project only.
#[test]
fn the_opener_finds_no_helper_in_a_directory_the_commands_write() {
    if std::fs::metadata("/usr/bin/xdg-open").is_err() {
        panic!("xdg-open is not installed (xdg-utils): the README's test command installs it");
    }
    let server = ScriptedServer::with_replies([
        Reply::tool_call("o1", "open", r#"{"target": "README.md"}"#),
        Reply::text(&["done"]),
    ]);
    let fx = GgFixture::new(&server, json!({"tools": {"computer": true}}), "home/repo");
    std::fs::write(fx.repo.join("README.md"), "# hello\n").unwrap();
    let mark = fx.tmp.path().join("planted-ran");
    // What xdg-open looks up on a machine without a desktop session, and the tools it uses.
    let names = [
        "run-mailcap",
        "mimeopen",
        "xdg-mime",
        "www-browser",
        "x-www-browser",
        "sensible-browser",
        "which",
        "sed",
        "grep",
        "cut",
        "tr",
        "head",
        "file",
        "mimetype",
        "xdg-settings",
    ];
    let path = plant(&fx.repo, &mark, &names);
    let out = fx
        .gg()
        .env("PATH", &path)
        .args(["--yolo", "-p", "open it"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let result = server.tool_results().first().cloned().unwrap_or_default();
    assert!(!result.contains("denied"), "open was not run: {result}");
    assert_eq!(
        marks(&mark),
        "",
        "the opener started a planted helper: {result}"
    );
}

/// An MCP server configured by its bare name is looked up outside the project: a program of
/// that name in the project's virtual environment (on `PATH`) is not started, with or without
/// the sandbox.
#[test]
fn an_mcp_servers_command_is_not_taken_from_the_project() {
    let server = ScriptedServer::with_replies([Reply::text(&["done"])]);
    let fx = GgFixture::new(&server, json!({}), "home/repo");
    std::fs::write(
        fx.home.join(".gg/mcp.json"),
        json!({"servers": {"planted": {"command": "gg-test-planted-mcp"}}}).to_string(),
    )
    .unwrap();
    let mark = fx.tmp.path().join("planted-ran");
    let path = plant(&fx.repo, &mark, &["gg-test-planted-mcp"]);
    let out = fx
        .gg()
        .env("PATH", &path)
        .args(["--yolo", "-p", "hello"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(marks(&mark), "", "gg started the planted MCP server");
}
