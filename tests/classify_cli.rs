//! `gg classify` and `gg policy show`, run as the real binary in temporary directories.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn gg(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gg"));
    cmd.env("HOME", home).env_remove("TMPDIR");
    cmd
}

fn run_with_stdin(mut cmd: Command, stdin: &[u8]) -> Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn gg");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

struct Dirs {
    _tmp: tempfile::TempDir,
    home: std::path::PathBuf,
    repo: std::path::PathBuf,
}

fn dirs() -> Dirs {
    // Outside /tmp: /tmp is a scratch directory, where the classifier allows writes.
    let tmp = support::fixture_dir();
    let home = tmp.path().join("home");
    let repo = home.join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::write(repo.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    Dirs {
        home: home.canonicalize().unwrap(),
        repo: repo.canonicalize().unwrap(),
        _tmp: tmp,
    }
}

#[test]
fn json_has_one_object_per_command_in_input_order() {
    let d = dirs();
    let out = gg(&d.home)
        .current_dir(&d.repo)
        .args(["classify", "--json", "ls -la", "make", "rm -rf ~"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let lines = json_lines(&out);
    let got: Vec<(&str, &str)> = lines
        .iter()
        .map(|v| {
            (
                v["command"].as_str().unwrap(),
                v["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("ls -la", "read-only"),
            ("make", "normal"),
            ("rm -rf ~", "dangerous")
        ]
    );
    let danger = &lines[2];
    let reason = &danger["reasons"][0];
    assert!(reason["rule"].as_str().unwrap().contains('.'), "{reason}");
    assert!(!reason["message"].as_str().unwrap().is_empty());
    assert_eq!(reason["span"].as_array().unwrap().len(), 2);
    // `~` is resolved against the home directory the classifier was given.
    assert_eq!(
        danger["commands"],
        serde_json::json!([["rm", "-rf", d.home.display().to_string()]])
    );
    assert!(
        lines[0].get("decision").is_none(),
        "no decision without --approval"
    );
}

#[test]
fn stdin_lines_and_dash_read_one_command_per_line_skipping_blanks() {
    let d = dirs();
    for args in [
        &["classify", "--json"][..],
        &["classify", "--json", "-"][..],
    ] {
        let mut cmd = gg(&d.home);
        cmd.current_dir(&d.repo).args(args);
        let out = run_with_stdin(cmd, b"pwd\n\n   \ncat a | sort\r\nsudo ls\n");
        assert!(out.status.success());
        let verdicts: Vec<String> = json_lines(&out)
            .iter()
            .map(|v| v["verdict"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(verdicts, ["read-only", "read-only", "dangerous"]);
    }
}

#[test]
fn null_mode_keeps_multi_line_scripts_whole() {
    let d = dirs();
    let mut cmd = gg(&d.home);
    cmd.current_dir(&d.repo)
        .args(["classify", "--json", "--null"]);
    let out = run_with_stdin(cmd, b"ls\necho hi\0cd /\nrm -rf *\0");
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["command"], "ls\necho hi");
    assert_eq!(lines[0]["verdict"], "read-only");
    assert_eq!(lines[1]["verdict"], "dangerous");
}

#[test]
fn fail_on_sets_the_exit_status_for_ci_gates() {
    let d = dirs();
    let status = |args: &[&str]| {
        gg(&d.home)
            .current_dir(&d.repo)
            .arg("classify")
            .args(args)
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(status(&["ls", "make"]), Some(0));
    assert_eq!(status(&["--fail-on", "normal", "ls"]), Some(0));
    assert_eq!(status(&["--fail-on", "normal", "ls", "make"]), Some(1));
    assert_eq!(status(&["--fail-on", "dangerous", "ls", "make"]), Some(0));
    assert_eq!(
        status(&["--fail-on", "dangerous", "make", "sudo reboot"]),
        Some(1)
    );
}

#[test]
fn usage_errors_exit_2_with_a_message() {
    let d = dirs();
    let cases: &[&[&str]] = &[
        &["classify", "--fail-on", "sometimes", "ls"],
        &["classify", "--approval", "maybe", "ls"],
        &["classify", "--no-such-flag", "ls"],
        &["classify", ""],
        &["classify", "--cwd", "/definitely/not/here", "ls"],
        &["classify", "--tty", "ls"],
        &["classify", "--null", "ls"],
    ];
    for args in cases {
        let out = gg(&d.home)
            .current_dir(&d.repo)
            .args(*args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
        assert!(!out.stderr.is_empty(), "{args:?}: a message on stderr");
    }
}

#[test]
fn cwd_option_decides_what_is_outside() {
    let d = dirs();
    let verdict = |cwd: &Path, command: &str| {
        let out = gg(&d.home)
            .args(["classify", "--json", "--cwd"])
            .arg(cwd)
            .arg(command)
            .output()
            .unwrap();
        json_lines(&out)[0]["verdict"].as_str().unwrap().to_string()
    };
    let nested = d.repo.join("sub");
    std::fs::create_dir(&nested).unwrap();
    // From the repo, ../ is the home directory: outside the working directory.
    assert_eq!(verdict(&d.repo, "touch ../sibling.txt"), "dangerous");
    assert_eq!(verdict(&d.repo, "touch sub/../inside.txt"), "normal");
    // The same text is judged against the directory it runs in.
    assert_eq!(verdict(&nested, "touch ../inside.txt"), "dangerous");
    assert_eq!(verdict(&nested, "touch inside.txt"), "normal");
}

#[test]
fn approval_prints_the_decision_for_each_command() {
    let d = dirs();
    let out = gg(&d.home)
        .current_dir(&d.repo)
        .args([
            "classify",
            "--json",
            "--approval",
            "auto",
            "--no-tty",
            "make",
            "git status",
        ])
        .output()
        .unwrap();
    let lines = json_lines(&out);
    let make = &lines[0]["decision"];
    assert_eq!(make["mode"], "auto");
    assert_eq!(make["terminal"], false);
    assert_eq!(make["action"], "deny");
    assert_eq!(make["rule"], "auto-no-terminal");
    assert!(make["message"].as_str().unwrap().contains("--yolo"));
    assert_eq!(lines[1]["decision"]["action"], "allow");

    let out = gg(&d.home)
        .current_dir(&d.repo)
        .args(["classify", "--approval", "yolo", "--tty", "rm -rf /"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("decision (yolo, terminal): ask [dangerous-ask]"),
        "{text}"
    );
}

#[test]
fn matrix_shows_every_mode_and_terminal_state() {
    let d = dirs();
    let out = gg(&d.home)
        .current_dir(&d.repo)
        .args(["classify", "--json", "--matrix", "sudo rm -rf /"])
        .output()
        .unwrap();
    let matrix = json_lines(&out)[0]["matrix"].as_array().unwrap().clone();
    assert_eq!(matrix.len(), 14);
    assert!(
        matrix.iter().all(|cell| cell["action"] != "allow"),
        "dangerous is never allowed: {matrix:?}"
    );
    let human = gg(&d.home)
        .current_dir(&d.repo)
        .args(["classify", "--matrix", "make"])
        .output()
        .unwrap();
    let text = String::from_utf8(human.stdout).unwrap();
    for mode in [
        "auto",
        "on-request",
        "yolo",
        "never",
        "unattended",
        "unattended-allow-all",
        "remote",
    ] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(mode)),
            "{mode}: {text}"
        );
    }
}

#[test]
fn policy_files_layer_and_project_cannot_loosen() {
    let d = dirs();
    std::fs::create_dir_all(d.home.join(".gg")).unwrap();
    std::fs::write(
        d.home.join(".gg/policy.toml"),
        "[[read_only]]\nprefix = \"make -n\"\n\n[[forbidden]]\nprefix = \"git push\"\nreason = \"CI pushes\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(d.repo.join(".gg")).unwrap();
    std::fs::write(
        d.repo.join(".gg/policy.toml"),
        "[[read_only]]\nprefix = \"make\"\n\n[[dangerous]]\nprefix = \"make deploy\"\nreason = \"prod\"\n",
    )
    .unwrap();
    let out = gg(&d.home)
        .current_dir(&d.repo)
        .args([
            "classify",
            "--json",
            "--approval",
            "never",
            "make -n",
            "make",
            "make deploy",
            "git push",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(".gg/policy.toml:1:"),
        "project loosening reported: {stderr}"
    );
    let lines = json_lines(&out);
    let verdicts: Vec<&str> = lines
        .iter()
        .map(|v| v["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["read-only", "normal", "dangerous", "normal"]);
    assert_eq!(lines[3]["decision"]["action"], "deny");
    assert_eq!(lines[3]["decision"]["rule"], "policy-forbidden");
    assert!(
        lines[3]["decision"]["message"]
            .as_str()
            .unwrap()
            .contains("CI pushes")
    );

    let show = gg(&d.home)
        .current_dir(&d.repo)
        .args(["policy", "show"])
        .output()
        .unwrap();
    let text = String::from_utf8(show.stdout).unwrap();
    assert!(
        text.contains("make deploy") && text.contains("project"),
        "{text}"
    );
    assert!(
        text.contains("policy.toml:4"),
        "user rule with its line: {text}"
    );
    assert!(text.contains("[ignored]"), "{text}");
}

#[test]
fn a_malformed_policy_refuses_to_run() {
    let d = dirs();
    std::fs::create_dir_all(d.repo.join(".gg")).unwrap();
    std::fs::write(
        d.repo.join(".gg/policy.toml"),
        "[[forbidden]]\nprefix = \"x\"\n",
    )
    .unwrap();
    let out = gg(&d.home)
        .current_dir(&d.repo)
        .args(["classify", "ls"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(".gg/policy.toml:1: ") && stderr.contains("needs a reason"),
        "{stderr}"
    );

    let candidate = d.home.join("candidate.toml");
    std::fs::write(&candidate, "oops = [").unwrap();
    let out = gg(&d.home)
        .args(["classify", "--policy"])
        .arg(&candidate)
        .arg("ls")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("candidate.toml:1"));
}

#[test]
fn repository_config_that_runs_programs_makes_git_normal() {
    let d = dirs();
    let verdict = || {
        let out = gg(&d.home)
            .current_dir(&d.repo)
            .args(["classify", "--json", "git status"])
            .output()
            .unwrap();
        json_lines(&out)[0]["verdict"].as_str().unwrap().to_string()
    };
    assert_eq!(verdict(), "read-only");
    std::fs::write(
        d.repo.join(".git/config"),
        "[core]\n\tfsmonitor = ./evil.sh\n",
    )
    .unwrap();
    assert_eq!(verdict(), "normal");
    // Through an include, too.
    std::fs::write(d.repo.join(".git/config"), "[include]\n\tpath = extra\n").unwrap();
    std::fs::write(d.repo.join(".git/extra"), "[core]\n\tpager = ./evil.sh\n").unwrap();
    assert_eq!(verdict(), "normal");
}

#[test]
fn non_utf8_input_is_reported_not_guessed() {
    let d = dirs();
    let mut cmd = gg(&d.home);
    cmd.current_dir(&d.repo)
        .args(["classify", "--json", "--fail-on", "dangerous"]);
    let out = run_with_stdin(cmd, b"ls\n\xff\xfe rm\n");
    assert_eq!(
        out.status.code(),
        Some(1),
        "an unreadable command fails the gate"
    );
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["error"], "command is not valid UTF-8");
}

#[test]
fn version_and_help() {
    let d = dirs();
    for flag in ["-v", "--version"] {
        let out = gg(&d.home).arg(flag).output().unwrap();
        assert!(out.status.success());
        assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), "gg 0.1.0");
    }
    let out = gg(&d.home).arg("--help").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().contains("classify"));
}

/// Runs `gg classify --json` on `command` in `cwd` and returns the verdict.
fn verdict_in(home: &Path, cwd: &Path, command: &str) -> String {
    let out = gg(home)
        .current_dir(cwd)
        .args(["classify", "--json", command])
        .output()
        .unwrap();
    json_lines(&out)[0]["verdict"].as_str().unwrap().to_string()
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_SYSTEM", "/dev/null")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[test]
fn the_config_git_really_reads_decides_git_commands() {
    let d = dirs();
    // A real repository with a linked worktree: the worktree's `.git` is a file pointing at
    // .git/worktrees/<name>, whose `commondir` leads back to the main config.
    let main = d.home.join("main");
    std::fs::create_dir_all(&main).unwrap();
    git(&main, &["init", "-q"]);
    git(
        &main,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e.invalid",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "x",
        ],
    );
    let linked = d.home.join("linked");
    git(&main, &["worktree", "add", "-q", linked.to_str().unwrap()]);
    assert_eq!(verdict_in(&d.home, &linked, "git log -p"), "read-only");
    let config = main.join(".git/config");
    let original = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{original}[diff \"x\"]\n\ttextconv = ./evil.sh\n"),
    )
    .unwrap();
    assert_eq!(
        verdict_in(&d.home, &linked, "git log -p"),
        "normal",
        "the main repository's config applies in a linked worktree"
    );
    std::fs::write(&config, &original).unwrap();
    // config.worktree of the linked worktree.
    let wt_dir = main.join(".git/worktrees/linked");
    std::fs::write(wt_dir.join("config.worktree"), "[core]\n\tpager = ./p\n").unwrap();
    assert_eq!(verdict_in(&d.home, &linked, "git log"), "normal");
    std::fs::remove_file(wt_dir.join("config.worktree")).unwrap();

    // A byte-order mark and CRLF line ends do not hide a key.
    std::fs::write(&config, "\u{feff}[core]\r\n\tfsmonitor = ./evil.sh\r\n").unwrap();
    assert_eq!(verdict_in(&d.home, &main, "git status"), "normal");
    std::fs::write(&config, &original).unwrap();
    assert_eq!(verdict_in(&d.home, &main, "git status"), "read-only");

    // A symlinked `.git` directory is followed.
    let real = d.home.join("real-git");
    let link_repo = d.home.join("linkrepo");
    std::fs::create_dir_all(&link_repo).unwrap();
    std::fs::create_dir_all(&real).unwrap();
    std::fs::write(real.join("config"), "[alias]\n\tl = !touch M\n").unwrap();
    std::os::unix::fs::symlink(&real, link_repo.join(".git")).unwrap();
    assert_eq!(verdict_in(&d.home, &link_repo, "git log"), "normal");

    // `cd` into a nested repository: its config was not read.
    let nested = main.join("sub");
    std::fs::create_dir_all(&nested).unwrap();
    git(&nested, &["init", "-q"]);
    assert_eq!(verdict_in(&d.home, &main, "git log -p"), "read-only");
    assert_eq!(verdict_in(&d.home, &main, "cd sub && git log -p"), "normal");
}

#[test]
fn programs_the_repository_resolves_are_not_read_only() {
    let d = dirs();
    assert_eq!(verdict_in(&d.home, &d.repo, "cargo --version"), "read-only");
    std::fs::write(
        d.repo.join("rust-toolchain.toml"),
        "[toolchain]\npath = \"./evil-toolchain\"\n",
    )
    .unwrap();
    assert_eq!(verdict_in(&d.home, &d.repo, "cargo --version"), "normal");
    let sub = d.repo.join("crates/x");
    std::fs::create_dir_all(&sub).unwrap();
    assert_eq!(
        verdict_in(&d.home, &sub, "rustc --version"),
        "normal",
        "rustup looks for the file in every parent directory"
    );
    // A relative PATH entry resolves inside the working directory.
    std::fs::create_dir_all(d.repo.join("bin")).unwrap();
    std::fs::write(d.repo.join("bin/ls"), "#!/bin/sh\ntouch M\n").unwrap();
    let out = gg(&d.home)
        .current_dir(&d.repo)
        .env("PATH", format!("bin:{}", std::env::var("PATH").unwrap()))
        .args(["classify", "--json", "ls"])
        .output()
        .unwrap();
    assert_eq!(json_lines(&out)[0]["verdict"], "normal");
}

#[test]
fn an_oversized_command_streams_and_is_never_read_only() {
    let d = dirs();
    // Three megabytes on one line (more than the one-command limit), a dangerous command at its
    // end, then an ordinary line: the big one is scanned piece by piece, the next is unaffected.
    let mut input = "echo ".to_string();
    input.push_str(&"a".repeat(3 << 20));
    input.push_str(" ; rm -rf ~\nls\n");
    input.push_str(&"b".repeat(3 << 20));
    input.push('\n');
    let mut cmd = gg(&d.home);
    cmd.current_dir(&d.repo).args(["classify", "--json"]);
    let out = run_with_stdin(cmd, input.as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["verdict"], "dangerous");
    let rules: Vec<&str> = lines[0]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"input.too-large"), "{rules:?}");
    assert!(lines[0]["command"].as_str().unwrap().len() < 4096);
    assert_eq!(lines[1]["verdict"], "read-only");
    assert_eq!(lines[2]["verdict"], "normal", "harmless but too large");
}
