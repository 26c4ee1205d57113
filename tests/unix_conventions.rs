//! What a Unix user takes for granted, with the real `gg`: a closed output pipe (`gg … | head -1`)
//! ends every command quietly with status 0 (ripgrep's choice: the reader has what it wanted);
//! `gg sandbox -- true` leaves the working directory as it found it; a config file holding one
//! key works, and a typo'd key is a warning that names it and the key meant.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::json;
use support::{GgFixture, Reply, ScriptedServer};

/// Runs `cmd` with its stdout a pipe whose reader is already closed: the first write fails with
/// EPIPE, whatever the machine's speed (what `| head -1` does once head has its line).
fn into_closed_pipe(mut cmd: Command) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    cmd.stdout(writer).stderr(Stdio::piped());
    cmd.output().unwrap()
}

/// `gg ARGS | head -1` in bash: gg's own exit status (PIPESTATUS), its stderr, and head's line.
fn piped_to_head(fx: &GgFixture, gg_args: &str, stdin: Option<&Path>) -> (String, String, String) {
    let gg = env!("CARGO_BIN_EXE_gg");
    let input = stdin
        .map(|p| format!(" < '{}'", p.display()))
        .unwrap_or_default();
    let script =
        format!("'{gg}' {gg_args}{input} 2>\"$ERR\" | head -1; echo \"status=${{PIPESTATUS[0]}}\"");
    let err = fx.tmp.path().join("gg.stderr");
    let out = Command::new("bash")
        .args(["-c", &script])
        .current_dir(&fx.repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &fx.home)
        .env("GG_SESSION_DIR", &fx.sessions)
        .env("ERR", &err)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let (line, status) = stdout
        .rsplit_once("status=")
        .unwrap_or_else(|| panic!("{out:?}"));
    (
        status.trim().to_string(),
        std::fs::read_to_string(&err).unwrap_or_default(),
        line.trim().to_string(),
    )
}

/// A fixture with a knowledge base of a few documents, one stored session, and `big`: a file of
/// 200,000 commands (far more output than a pipe holds).
fn fixture() -> (ScriptedServer, GgFixture) {
    let server = ScriptedServer::with_replies([Reply::text(&["done"])]);
    let fx = GgFixture::new(&server, json!({}), "home/repo");
    let docs = fx.tmp.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    for i in 0..20 {
        std::fs::write(
            docs.join(format!("d{i}.md")),
            format!("# Doc {i}\n\nx marks the spot {i}\n"),
        )
        .unwrap();
    }
    let added = fx
        .gg()
        .args(["kb", "add", docs.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    let ran = fx.gg().args(["-p", "hello"]).output().unwrap();
    assert!(ran.status.success(), "{ran:?}");
    std::fs::write(fx.tmp.path().join("big"), "ls -la\n".repeat(200_000)).unwrap();
    (server, fx)
}

#[test]
fn a_closed_output_pipe_ends_every_command_quietly_with_status_0() {
    let (server, fx) = fixture();
    server.push(Reply::text(&["an answer for a closed pipe"]));
    let big = fx.tmp.path().join("big");
    let commands: &[&[&str]] = &[
        &["kb", "search", "x"],
        &["kb", "search", "x", "--json"],
        &["kb", "list"],
        &["kb", "stats"],
        &["classify", "ls", "cargo build", "rm -rf /"],
        &["classify", "--json", "ls"],
        &["classify", "--matrix", "git push --force"],
        &["sessions", "list"],
        &["audit"],
        &["policy", "show"],
        &["artifact", "list"],
        &["library", "list"],
        &["job", "list"],
        &["mcp", "list"],
        &["sandbox", "--self-test"],
        &["completions", "bash"],
        &["man"],
        &["--help"],
        &["-p", "answer"],
    ];
    for args in commands {
        let mut cmd = fx.gg();
        cmd.args(*args);
        let out = into_closed_pipe(cmd);
        assert_eq!(out.status.code(), Some(0), "gg {args:?}: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "",
            "gg {args:?} said something about the closed pipe"
        );
    }
    // Reading its commands from stdin, too.
    let mut cmd = fx.gg();
    cmd.arg("classify")
        .stdin(std::fs::File::open(&big).unwrap());
    let out = into_closed_pipe(cmd);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
}

#[test]
fn the_commands_of_the_issue_piped_to_head_exit_quietly() {
    let (_server, fx) = fixture();
    let big = fx.tmp.path().join("big");
    let (status, stderr, line) = piped_to_head(&fx, "classify", Some(&big));
    assert_eq!((status.as_str(), stderr.as_str()), ("0", ""), "{line}");
    assert_eq!(line, "read-only: ls -la");
    let (status, stderr, line) = piped_to_head(&fx, "kb search x", None);
    assert_eq!((status.as_str(), stderr.as_str()), ("0", ""), "{line}");
    assert!(line.starts_with("[1] "), "{line}");
    let (status, stderr, line) = piped_to_head(&fx, "sessions list", None);
    assert_eq!((status.as_str(), stderr.as_str()), ("0", ""), "{line}");
    assert!(line.starts_with("ID\tUPDATED"), "{line}");
}

#[test]
fn gg_sandbox_leaves_the_working_directory_as_it_found_it() {
    let server = ScriptedServer::with_replies([]);
    let fx = GgFixture::new(&server, json!({}), "home/repo");
    let listing = |dir: &Path| -> Vec<String> {
        let mut names: Vec<String> = walk(dir)
            .iter()
            .map(|p| p.strip_prefix(dir).unwrap().display().to_string())
            .collect();
        names.sort();
        names
    };
    // A plain directory, then a repository (whose .git/hooks bubblewrap also wants to exist).
    let before = listing(&fx.repo);
    let out = fx.gg().args(["sandbox", "--", "true"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        listing(&fx.repo),
        before,
        "gg sandbox -- true changed the directory"
    );

    support::git(&fx.repo, &["init", "-q"]);
    std::fs::remove_dir_all(fx.repo.join(".git/hooks")).unwrap();
    let before = listing(&fx.repo);
    let out = fx.gg().args(["sandbox", "--", "true"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        listing(&fx.repo),
        before,
        "gg sandbox -- true changed the repository"
    );

    // What existed before stays, even when empty.
    std::fs::create_dir(fx.repo.join(".gg")).unwrap();
    let out = fx.gg().args(["sandbox", "--", "true"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(fx.repo.join(".gg").is_dir());
}

/// A `kill` (SIGTERM) or a closed terminal (SIGHUP) ends gg without running its destructors:
/// the empty mount points it created in the project (`.gg/` here), the network proxy's socket
/// directory and the landlock level's temp directory stayed behind. gg now removes them on its
/// way out and still ends by the signal, at both Linux levels.
#[test]
fn gg_sandbox_ended_by_a_signal_leaves_nothing_behind() {
    use std::os::unix::process::ExitStatusExt;
    let levels = crate::sandbox_support::available_levels();
    assert!(!levels.is_empty(), "no sandbox level works here");
    let server = ScriptedServer::with_replies([]);
    for level in levels {
        for signal in [rustix::process::Signal::TERM, rustix::process::Signal::HUP] {
            let fx = GgFixture::new(&server, json!({}), "home/repo");
            let tmpdir = fx.tmp.path().join("tmpdir");
            std::fs::create_dir(&tmpdir).unwrap();
            let before = walk(&fx.repo);
            let mut cmd = fx.gg();
            cmd.env("TMPDIR", &tmpdir);
            let mut child = sandbox_running(cmd, level, "allow-list");
            // While the command runs, what the signal must not leave behind is there: at the
            // bwrap level the mount point, at both the proxy's directory and at the landlock
            // level the command's temp directory, in TMPDIR.
            if level == "bwrap" {
                assert!(fx.repo.join(".gg").is_dir(), "{level}: no .gg mount point");
            }
            assert!(
                std::fs::read_dir(&tmpdir).unwrap().next().is_some(),
                "{level}: nothing in TMPDIR while it runs"
            );
            rustix::process::kill_process(rustix::process::Pid::from_child(&child), signal)
                .unwrap();
            let status = child.wait().unwrap();
            assert_eq!(
                status.signal(),
                Some(signal.as_raw()),
                "{level} {signal:?}: gg did not end by the signal: {status:?}"
            );
            assert_eq!(
                walk(&fx.repo),
                before,
                "{level} {signal:?}: the project was left changed"
            );
            let left = names_in(&tmpdir);
            assert!(
                left.is_empty(),
                "{level} {signal:?}: left in TMPDIR: {left:?}"
            );
        }
    }
}

/// A signal gg was started with ignored stays ignored: `nohup gg sandbox …` outlives a closed
/// terminal (SIGHUP) as it did before gg handled the signal. If gg died by it, its status says
/// so, whatever the command printed meanwhile.
#[test]
fn gg_sandbox_under_nohup_outlives_sighup() {
    use std::io::{BufRead, Write};
    let server = ScriptedServer::with_replies([]);
    let fx = GgFixture::new(&server, json!({}), "home/repo");
    let mut child = Command::new("nohup")
        .args([crate::sandbox_support::GG, "sandbox", "--"])
        .args(["sh", "-c", "echo ready; read line; echo survived"])
        .current_dir(&fx.repo)
        .env("HOME", &fx.home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first, "ready\n");
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::HUP,
    )
    .unwrap();
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "gg ended by SIGHUP under nohup: {status:?}"
    );
    assert_eq!(rest, "survived\n");
}

/// The handler is set up only when gg has something to remove: a `gg sandbox` at the `none`
/// level with the network on creates no directory, so `SIGTERM` and `SIGHUP` keep their default
/// action (not caught, per `/proc/PID/status`), and a real level catches them. Read once the
/// command has printed, so gg is past its start either way.
#[test]
fn the_signal_handler_is_set_up_only_when_gg_created_something_to_remove() {
    let level = crate::sandbox_support::available_levels()
        .into_iter()
        .next()
        .expect("no sandbox level works here");
    let server = ScriptedServer::with_replies([]);
    for (backend, network, caught) in [("none", "on", false), (level, "allow-list", true)] {
        let fx = GgFixture::new(&server, json!({}), "home/repo");
        let mut child = sandbox_running(fx.gg(), backend, network);
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
        let mask = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .map(|m| u64::from_str_radix(m.trim(), 16).unwrap())
            .unwrap();
        for signal in [rustix::process::Signal::TERM, rustix::process::Signal::HUP] {
            let bit = 1u64 << (signal.as_raw() - 1);
            assert_eq!(
                mask & bit != 0,
                caught,
                "{backend}: {signal:?} caught is not {caught} (SigCgt {mask:x})"
            );
        }
        end_by_sigterm(&mut child, backend);
    }
}

/// The same for the agent: a `--sandbox` turn killed while its bash call runs (the session's
/// sandbox server, its network proxy) leaves nothing in TMPDIR or the project but what the
/// command wrote and the `.gg/` gg keeps, at both Linux levels.
#[test]
fn an_agent_turn_ended_by_a_signal_leaves_nothing_behind() {
    let levels = crate::sandbox_support::available_levels();
    assert!(!levels.is_empty(), "no sandbox level works here");
    for level in levels {
        let server = ScriptedServer::with_replies([
            Reply::tool_call(
                "b1",
                "bash",
                &json!({"command": "touch started; exec sleep 600"}).to_string(),
            ),
            Reply::text(&["never reached"]),
        ]);
        let fx = GgFixture::new(&server, json!({}), "home/repo");
        let tmpdir = fx.tmp.path().join("tmpdir");
        std::fs::create_dir(&tmpdir).unwrap();
        let mut child = fx
            .gg()
            .env("TMPDIR", &tmpdir)
            .env("GG_SANDBOX_BACKEND", level)
            .args(["-p", "go", "--sandbox", "--yolo"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The command's own mark says it runs (a deadline only against a hang, not a timing).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !fx.repo.join("started").exists() {
            assert!(
                std::time::Instant::now() < deadline && child.try_wait().unwrap().is_none(),
                "{level}: the bash call never ran"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(
            std::fs::read_dir(&tmpdir).unwrap().next().is_some(),
            "{level}: nothing in TMPDIR while it runs"
        );
        end_by_sigterm(&mut child, level);
        let left = names_in(&tmpdir);
        assert!(left.is_empty(), "{level}: left in TMPDIR: {left:?}");
        let in_project = names_in(&fx.repo);
        assert!(
            in_project.iter().all(|n| n == "started" || n == ".gg"),
            "{level}: left in the project: {in_project:?}"
        );
    }
}

/// A `kill` (SIGTERM) while a command runs takes the path Ctrl+C takes: the command is stopped
/// and swept, and only then does gg end, by the signal. The command plants a hook and an
/// `.envrc` in a git repository and sleeps; once it has, gg is signalled; afterwards neither is
/// in the project and the person's `git commit` runs nothing. Under `--sandbox` at each level
/// and guarded without it. Before, gg died at once and both stayed.
#[test]
fn sigterm_during_a_command_sweeps_it_before_gg_ends() {
    signalled_during_a_command(rustix::process::Signal::TERM, false);
}

/// The same for a closed terminal (SIGHUP).
#[test]
fn sighup_during_a_command_sweeps_it_before_gg_ends() {
    signalled_during_a_command(rustix::process::Signal::HUP, false);
}

/// The same for `gg job run`, whose run is cancelled as by Ctrl+C.
#[test]
fn sigterm_during_a_job_runs_command_sweeps_it_before_gg_ends() {
    signalled_during_a_command(rustix::process::Signal::TERM, true);
}

/// A fixture whose model runs one command that plants in the project (see
/// [`planting_script`]) and then waits, and where its marks go (see [`git_project`]).
fn planting_session(server: &ScriptedServer) -> (GgFixture, std::path::PathBuf) {
    let fx = GgFixture::new(server, json!({}), "repo");
    let marks = git_project(&fx.repo, fx.tmp.path());
    let calls = support::script_calls(&fx.repo, &[&planting_script(&marks)]);
    server.push(Reply::tool_call(
        "c0",
        "bash",
        &json!({"command": calls[0], "writes": true}).to_string(),
    ));
    server.push(Reply::text(&["never reached"]));
    (fx, marks)
}

/// `job`: the turn is `gg job run` of a job allowed to run normal commands, else `gg -p --yolo`.
fn signalled_during_a_command(signal: rustix::process::Signal, job: bool) {
    use std::os::unix::process::ExitStatusExt;
    let mut failures = Vec::new();
    for (name, level) in sweeping_configurations() {
        let server = ScriptedServer::start();
        let (fx, marks) = planting_session(&server);
        let mut gg = fx.gg();
        if let Some(level) = level {
            gg.env("GG_SANDBOX_BACKEND", level);
        }
        if job {
            let mut add = fx.gg();
            add.args([
                "job",
                "add",
                "--name",
                "plant",
                "--cron",
                "@daily",
                "--allow-all",
            ]);
            if level.is_none() {
                add.arg("--no-sandbox");
            }
            let added = add.arg("go").output().unwrap();
            assert!(added.status.success(), "{name}: {added:?}");
            gg.args(["job", "run", "plant"]);
        } else {
            if level.is_some() {
                gg.arg("--sandbox");
            }
            gg.args(["--yolo", "-p", "go"]);
        }
        let (mut child, pid, stderr) = start_until_the_command(&fx, gg, name);
        rustix::process::kill_process(rustix::process::Pid::from_child(&child), signal).unwrap();
        let status = wait_bounded(&mut child, name);
        let said = std::fs::read_to_string(&stderr).unwrap_or_default();
        if status.signal() != Some(signal.as_raw()) {
            failures.push(format!(
                "{name} {signal:?}: gg did not end by the signal: {status:?}\n{said}"
            ));
        }
        fx.host_git(&fx.repo, &["commit", "-q", "--allow-empty", "-m", "x"]);
        for left in left_unswept(&fx.repo, &marks) {
            failures.push(format!("{name} {signal:?}: {left}\n{said}"));
        }
        end_the_command_if_left(pid, level.is_none());
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// gg does not wait for a sweep without bound: with every sweep held far longer than the test
/// runs (test hooks), a SIGTERM during a command ends gg by the signal once the grace period
/// has passed (shortened here), and a second SIGTERM ends it at once; each time gg says on
/// stderr that the command was not swept.
#[cfg(feature = "test-hooks")]
#[test]
fn a_sweep_that_does_not_finish_does_not_keep_a_signalled_gg_alive() {
    use std::os::unix::process::ExitStatusExt;
    for (case, grace_ms) in [("grace", "1000"), ("second signal", "600000")] {
        let server = ScriptedServer::start();
        let (fx, _) = planting_session(&server);
        let mut gg = fx.gg();
        gg.env("GG_TEST_SWEEP_STALL_SECS", "3600")
            .env("GG_TEST_STOP_GRACE_MS", grace_ms)
            .args(["--yolo", "-p", "go"]);
        let (mut child, pid, stderr) = start_until_the_command(&fx, gg, case);
        let term = || {
            rustix::process::kill_process(
                rustix::process::Pid::from_child(&child),
                rustix::process::Signal::TERM,
            )
            .unwrap();
        };
        term();
        let said = || std::fs::read_to_string(&stderr).unwrap_or_default();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
        while !said().contains("gg: SIGTERM: stopping the running command") {
            assert!(
                std::time::Instant::now() < deadline,
                "{case}: gg never said it stops the command: {}",
                said()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        if case == "second signal" {
            term();
        }
        let status = wait_bounded(&mut child, case);
        end_the_command_if_left(pid, true);
        assert_eq!(
            status.signal(),
            Some(rustix::process::Signal::TERM.as_raw()),
            "{case}: {status:?}\n{}",
            said()
        );
        let want = if case == "grace" {
            "gg: the command was not stopped and swept within 1 s; exiting without its sweep"
        } else {
            "gg: SIGTERM again: exiting without waiting for the sweep"
        };
        assert!(said().contains(want), "{case}: {}", said());
    }
}

/// The same for ggd: stopped (SIGTERM) or its terminal closed (SIGHUP) while a run's command
/// runs, it cancels the run, which stops and sweeps the command, before it exits.
#[test]
fn ggd_ended_by_a_signal_during_a_command_sweeps_it_first() {
    use crate::daemon_common;
    let mut failures = Vec::new();
    for signal in [rustix::process::Signal::TERM, rustix::process::Signal::HUP] {
        for (name, level) in sweeping_configurations() {
            let e = daemon_common::env();
            let marks = git_project(&e.project, e.tmp.path());
            let calls = support::script_calls(&e.project, &[&planting_script(&marks)]);
            let server = ScriptedServer::with_replies([
                Reply::tool_call(
                    "c0",
                    "bash",
                    &json!({"command": calls[0], "writes": true}).to_string(),
                ),
                Reply::text(&["never reached"]),
            ]);
            let mut ggd = daemon_common::ggd(&e, &server.base_url(), &[]);
            if let Some(level) = level {
                ggd.env("GG_SANDBOX_BACKEND", level).arg("--sandbox");
            }
            let mut client = daemon_common::StdioClient::spawn(with_default_signals(ggd));
            let session = client.new_session();
            client.ok(
                "run.start",
                json!({"sessionId": session, "prompt": "go", "requireApproval": false}),
            );
            let pid = wait_for_the_command(&e.project, &mut client.child, name);
            rustix::process::kill_process(rustix::process::Pid::from_child(&client.child), signal)
                .unwrap();
            let status = client.wait_exit();
            if !status.success() {
                failures.push(format!(
                    "ggd {name} {signal:?}: did not shut down: {status:?}\n{}",
                    client.logs.lines().join("\n")
                ));
            }
            let _ = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(["commit", "-q", "--allow-empty", "-m", "x"])
                .current_dir(&e.project)
                .env("HOME", &e.home)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env_remove("GIT_DIR")
                .env_remove("GIT_WORK_TREE")
                .output()
                .unwrap();
            for left in left_unswept(&e.project, &marks) {
                failures.push(format!("ggd {name} {signal:?}: {left}"));
            }
            end_the_command_if_left(pid, level.is_none());
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// ggd catches SIGHUP (to shut down as on SIGTERM), but one it was started with ignored stays
/// ignored: `nohup ggd` neither catches it (per `/proc/PID/status`) nor ends by it, and keeps
/// serving, as `nohup gg sandbox` does (`gg_sandbox_under_nohup_outlives_sighup`).
#[test]
fn ggd_catches_sighup_unless_started_under_nohup() {
    use crate::daemon_common;
    let hup = 1u64 << (rustix::process::Signal::HUP.as_raw() - 1);
    for under_nohup in [false, true] {
        let e = daemon_common::env();
        let server = ScriptedServer::start();
        let ggd = daemon_common::ggd(&e, &server.base_url(), &[]);
        let cmd = if under_nohup {
            // `nohup` (which ignores SIGHUP) inside `env --default-signal` (which sets it to
            // its default first, whatever this test inherited).
            let mut nohup = Command::new("nohup");
            nohup.arg(ggd.get_program()).args(ggd.get_args());
            if let Some(dir) = ggd.get_current_dir() {
                nohup.current_dir(dir);
            }
            for (key, value) in ggd.get_envs() {
                if let Some(value) = value {
                    nohup.env(key, value);
                }
            }
            nohup
        } else {
            ggd
        };
        let mut client = daemon_common::StdioClient::spawn(with_default_signals(cmd));
        // Answered: ggd serves, its signal handling set up before.
        client.ok("system.info", json!({}));
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", client.child.id())).unwrap();
        let mask = |field: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(field))
                .map(|m| u64::from_str_radix(m.trim(), 16).unwrap())
                .unwrap()
        };
        assert_eq!(
            mask("SigCgt:") & hup != 0,
            !under_nohup,
            "nohup {under_nohup}: SIGHUP caught"
        );
        assert_eq!(
            mask("SigIgn:") & hup != 0,
            under_nohup,
            "nohup {under_nohup}: SIGHUP ignored"
        );
        if under_nohup {
            rustix::process::kill_process(
                rustix::process::Pid::from_child(&client.child),
                rustix::process::Signal::HUP,
            )
            .unwrap();
            client.ok("system.info", json!({}));
        }
        client.close_stdin();
        assert!(client.wait_exit().success(), "nohup {under_nohup}");
    }
}

/// Where a command's sweep applies: `--sandbox` at each level here (the level's name and
/// `GG_SANDBOX_BACKEND`), and a normal command without it (`guarded`, no level).
fn sweeping_configurations() -> Vec<(&'static str, Option<&'static str>)> {
    let levels = crate::sandbox_support::available_levels();
    assert!(!levels.is_empty(), "no sandbox level works here");
    levels
        .into_iter()
        .map(|level| (level, Some(level)))
        .chain([("guarded", None)])
        .collect()
}

/// `repo` made a git repository with one commit; returns a directory for the plants' marks
/// (under `tmp`, outside the project).
fn git_project(repo: &Path, tmp: &Path) -> std::path::PathBuf {
    support::git(repo, &["init", "-q"]);
    std::fs::write(repo.join("README.md"), "the person's\n").unwrap();
    support::git(repo, &["add", "README.md"]);
    support::git(repo, &["commit", "-qm", "init"]);
    let marks = tmp.join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    marks
}

/// A command that plants a pre-commit hook (read-only at the bwrap level, where that step fails)
/// and an `.envrc`, each leaving a mark in `marks` when run, then writes its own mark `started`
/// (its pid) in the project and sleeps.
fn planting_script(marks: &Path) -> String {
    format!(
        "mkdir -p .git/hooks; printf '#!/bin/sh\\ntouch {marks}/hook\\n' > .git/hooks/pre-commit \
         && chmod 755 .git/hooks/pre-commit\n\
         printf 'touch {marks}/envrc\\n' > .envrc\n\
         echo $$ > started.tmp && mv started.tmp started\n\
         exec sleep 600\n",
        marks = marks.display()
    )
}

/// Starts `gg` (its signals at their defaults, its stderr to a file in the fixture) and waits
/// until the planted command runs: the child, the command's pid and where stderr goes.
fn start_until_the_command(
    fx: &GgFixture,
    gg: Command,
    what: &str,
) -> (std::process::Child, u32, std::path::PathBuf) {
    let stderr = fx.tmp.path().join("gg.stderr");
    let mut child = with_default_signals(gg)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let pid = wait_for_the_command(&fx.repo, &mut child, what);
    (child, pid, stderr)
}

/// Waits for the command's mark in `repo` (a deadline only against a hang, not a timing) and
/// returns the pid it wrote.
fn wait_for_the_command(repo: &Path, child: &mut std::process::Child, what: &str) -> u32 {
    let mark = repo.join("started");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    while !mark.exists() {
        assert!(
            std::time::Instant::now() < deadline && child.try_wait().unwrap().is_none(),
            "{what}: the command never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::fs::read_to_string(&mark)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Waits for gg to end (killing it after a deadline that only a hang reaches).
fn wait_bounded(child: &mut std::process::Child, what: &str) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: gg did not end after the signal");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// What of the plants is still in `repo`, and what the person's `git commit` (run by the caller
/// since) or a shell entering the project ran of them.
fn left_unswept(repo: &Path, marks: &Path) -> Vec<String> {
    let mut left = Vec::new();
    for planted in [".git/hooks/pre-commit", ".envrc"] {
        if std::fs::symlink_metadata(repo.join(planted)).is_ok() {
            left.push(format!("{planted} left in the project"));
        }
    }
    if marks.join("hook").exists() {
        left.push("the person's git commit ran the planted hook".to_string());
    }
    left
}

/// A guarded command is gg's child on the host: if gg died without stopping it, it sleeps on;
/// ended here (only if that pid is still a `sleep`).
fn end_the_command_if_left(pid: u32, on_host: bool) {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    if on_host && cmdline.starts_with(b"sleep\0") {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32).unwrap(),
            rustix::process::Signal::KILL,
        );
    }
}

/// The names directly in `dir`, sorted.
/// `gg sandbox --backend BACKEND --network NETWORK` running a command that has printed its first
/// line (so gg is past its start and the sandbox is set up) and now sleeps.
fn sandbox_running(gg: Command, backend: &str, network: &str) -> std::process::Child {
    use std::io::BufRead;
    let mut child = with_default_signals(gg)
        .args(["sandbox", "--backend", backend, "--network", network, "--"])
        .args(["sh", "-c", "echo ready; exec sleep 600"])
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert_eq!(first, "ready\n", "{backend}: the command did not start");
    child
}

/// `gg` (a fixture's command: its environment set explicitly after a clear) started through
/// `env --default-signal`, so that it starts with SIGHUP, SIGINT and SIGTERM at their default
/// action whatever this test process inherited: under `nohup cargo test` SIGHUP comes ignored,
/// gg rightly leaves it so (`gg_sandbox_under_nohup_outlives_sighup`), and a test that ends gg
/// by SIGHUP would wait for ever. `env` execs gg: the child's pid is gg's.
fn with_default_signals(gg: Command) -> Command {
    let mut wrapped = Command::new("/usr/bin/env");
    wrapped
        .arg("--default-signal=HUP,INT,TERM")
        .arg(gg.get_program())
        .args(gg.get_args())
        .env_clear();
    if let Some(dir) = gg.get_current_dir() {
        wrapped.current_dir(dir);
    }
    for (key, value) in gg.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    wrapped
}

/// Sends `SIGTERM` to gg and checks that gg ended by it, as it would have without its handler.
fn end_by_sigterm(child: &mut std::process::Child, what: &str) {
    use std::os::unix::process::ExitStatusExt;
    rustix::process::kill_process(
        rustix::process::Pid::from_child(child),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let status = child.wait().unwrap();
    // At the `none` level the command is gg's plain child and outlives it (as under any
    // launcher that is killed); it is in gg's process group when gg was started in one of
    // its own (`sandbox_running`), and goes with it.
    let _ = rustix::process::kill_process_group(
        rustix::process::Pid::from_child(child),
        rustix::process::Signal::KILL,
    );
    assert_eq!(
        status.signal(),
        Some(rustix::process::Signal::TERM.as_raw()),
        "{what}: gg did not end by the signal: {status:?}"
    );
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        found.push(path.clone());
        if entry.file_type().unwrap().is_dir() {
            found.extend(walk(&path));
        }
    }
    found
}

/// gg with only `config` as its `~/.gg/config.json`, and the scripted server reached the
/// config-less way (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
fn gg_with_config(server: &ScriptedServer, config: &str) -> (GgFixture, Command) {
    let fx = GgFixture::new(server, json!({}), "home/repo");
    std::fs::write(fx.home.join(".gg/config.json"), config).unwrap();
    let mut cmd = fx.gg();
    cmd.env("OPENAI_BASE_URL", server.base_url())
        .env("OPENAI_API_KEY", "sk-test");
    (fx, cmd)
}

#[test]
fn a_config_with_one_key_works_and_keeps_every_default() {
    let server = ScriptedServer::with_replies([Reply::text(&["hello back"])]);
    let (_fx, mut cmd) = gg_with_config(&server, r#"{"memory": {"enabled": true}}"#);
    let out = cmd.args(["-p", "hello"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hello back");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{out:?}");
    // The default model of the default provider was asked; memory was on (its tools offered).
    let request = &server.request_bodies()[0];
    assert_eq!(request["model"], "gpt-4.1");
    assert!(request.to_string().contains("memory_add"), "{request}");
}

#[test]
fn a_typo_is_a_warning_naming_the_key_and_the_run_goes_on() {
    let server = ScriptedServer::with_replies([Reply::text(&["ran anyway"])]);
    let (fx, mut cmd) = gg_with_config(&server, r#"{"memory": {"enabeld": true}}"#);
    let out = cmd.args(["-p", "hello"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ran anyway");
    let config = fx.home.join(".gg/config.json");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        format!(
            "warning: {}: unknown key memory.enabeld (did you mean memory.enabled?)",
            config.display()
        )
    );
}

#[test]
fn a_wrong_type_is_an_error_naming_the_key() {
    let server = ScriptedServer::with_replies([]);
    let (_fx, mut cmd) = gg_with_config(&server, r#"{"memory": {"enabled": "yes"}}"#);
    let out = cmd.args(["-p", "hello"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("memory.enabled: invalid type: string \"yes\", expected a boolean"),
        "{stderr}"
    );
    assert!(server.request_bodies().is_empty());
}

/// ggd too: `ggd status` into a closed pipe still answers with its exit status (1: none runs
/// here), and its help ends quietly with 0; neither says a word about the pipe.
#[test]
fn ggd_into_a_closed_pipe_keeps_its_answer_and_says_nothing() {
    let (_server, fx) = fixture();
    for (args, status) in [
        (&["status"][..], 1),
        (&["--help"][..], 0),
        (&["install-service", "--help"][..], 0),
    ] {
        let mut cmd = fx.ggd();
        cmd.args(args);
        let out = into_closed_pipe(cmd);
        assert_eq!(out.status.code(), Some(status), "ggd {args:?}: {out:?}");
        assert!(out.stderr.is_empty(), "ggd {args:?}: {out:?}");
    }
}
