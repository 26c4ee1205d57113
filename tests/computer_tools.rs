//! The computer tools through the real `gg` binary, the scripted server playing the model:
//! system information against `/proc`, the process table with secrets redacted, kills decided by
//! who started the process, `open` of files outside the project, and the clipboard and
//! notifications under a real X server (Xvfb) and a private session D-Bus with a listener that
//! records what it is sent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::json;
use support::{Reply, ScriptedServer};
use testkit::desktop::{Desktop, Killed, missing_tools};

use support::GgFixture as Env;

fn env(server: &ScriptedServer) -> Env {
    Env::new(server, json!({"tools": {"computer": true}}), "home/repo")
}

/// gg with no terminal, no display and no session bus unless a test adds them.
fn gg(e: &Env) -> Command {
    e.gg()
}

fn run(mut cmd: Command) -> Output {
    cmd.output().unwrap()
}

/// The text of the tool result the model was sent last in request `index`.
fn tool_result(server: &ScriptedServer, index: usize) -> String {
    let bodies = server.request_bodies();
    let messages = bodies[index]["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "tool", "{last}");
    last["content"].as_str().unwrap_or_default().to_string()
}

fn session_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in walk(dir) {
        text.push_str(&std::fs::read_to_string(entry).unwrap_or_default());
    }
    text
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                files.extend(walk(&p));
            } else {
                files.push(p);
            }
        }
    }
    files
}

fn alive(pid: u32) -> bool {
    // A zombie has exited; only a running (or sleeping) process counts.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(')').next().map(|r| r.trim_start().to_string()))
        .is_some_and(|rest| !rest.starts_with('Z'))
}

#[test]
fn info_and_process_list_show_the_machine_with_secrets_redacted() {
    let server = ScriptedServer::with_replies([
        Reply::tool_call("c1", "computer_info", "{}"),
        Reply::tool_call("c2", "process_list", r#"{"limit": 200, "sort_by": "mem"}"#),
        Reply::tool_call(
            "c3",
            "process_list",
            r#"{"limit": 200, "sort_by": "mem", "command_lines": true}"#,
        ),
        Reply::text(&["done"]),
    ]);
    let e = env(&server);
    // A process of the person's, holding a token on its command line and enough memory to be
    // near the top of the list sorted by memory.
    let secret = "tok-4f1c9a2b7e-do-not-leak";
    let mut child = Killed(
        Command::new("python3")
            .args([
                "-c",
                "import sys,time\nb=b'x'*(256<<20)\nprint('ready',flush=True)\ntime.sleep(120)",
                "--token",
                secret,
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut ready = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    let mut cmd = gg(&e);
    cmd.args(["-p", "describe this machine"]);
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let info = tool_result(&server, 1);
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert!(
        info.contains(&format!("kernel: {}", release.trim())),
        "{info}"
    );
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert!(
        info.contains(&format!("hostname: {}", hostname.trim())),
        "{info}"
    );

    let list = tool_result(&server, 2);
    let line = list
        .lines()
        .find(|l| l.starts_with(&format!("{}\t", child.0.id())))
        .unwrap_or_else(|| panic!("pid {} not in:\n{list}", child.0.id()));
    // By default the program's name only: none of its arguments.
    assert!(line.contains("python3"), "{line}");
    assert!(!line.contains("--token"), "{line}");
    // Full command lines are a normal call: without a terminal to ask, refused.
    let asked = tool_result(&server, 3);
    assert!(asked.contains("denied"), "{asked}");
    // The secret reaches neither the model nor the session file.
    for body in server.request_bodies() {
        assert!(!body.to_string().contains(secret));
    }
    assert!(!session_text(&e.sessions).contains(secret));
    // Both calls were read-only: no approval was needed without a terminal.
    let audit = run({
        let mut c = gg(&e);
        c.args(["audit", "--json"]);
        c
    });
    let rows = audit_rows(&audit);
    let full = rows
        .iter()
        .filter(|r| r["tool"] == "process_list")
        .nth(1)
        .unwrap();
    assert_eq!(
        full["audit"]["classification"]["verdict"], "normal",
        "{full}"
    );
    assert_eq!(full["audit"]["decision"]["action"], "deny", "{full}");
    for tool in ["computer_info", "process_list"] {
        let row = rows.iter().find(|r| r["tool"] == tool).unwrap();
        assert_eq!(
            row["audit"]["classification"]["verdict"], "read-only",
            "{row}"
        );
        assert_eq!(row["audit"]["decision"]["action"], "allow", "{row}");
    }
}

fn audit_rows(out: &Output) -> Vec<serde_json::Value> {
    let text = String::from_utf8_lossy(&out.stdout);
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(serde_json::Value::Array(rows)) => rows,
        _ => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    }
}

#[test]
fn kills_are_decided_by_who_started_the_process() {
    // The model starts a daemon of its own with bash (which reports its own pid: `$!` would name
    // setsid, which forks when it leads a process group), reads the pid from the result and
    // tries to kill it: it is gone already, since nothing a command starts outlives it (the
    // guard's reaper; the sandbox's), so the kill finds nothing to check. (That a process
    // carrying the session's tag may be killed unasked is `procs`' unit tests'.) Then it tries
    // the person's process (dangerous: denied without a terminal even under --yolo), and pid 1
    // (refused outright).
    let e_server = ScriptedServer::start();
    let e = env(&e_server);
    let theirs = Killed(Command::new("sleep").arg("120").spawn().unwrap());
    let their_pid = theirs.0.id();
    let started = e.repo.join("started.pid");
    e_server.push(Reply::tool_call(
        "b1",
        "bash",
        &json!({"command": "setsid sh -c 'echo $$ > started.pid; exec sleep 120' </dev/null >/dev/null 2>&1 & while [ ! -s started.pid ]; do sleep 0.01; done; echo \"PID=$(cat started.pid)\""})
            .to_string(),
    ));
    e_server.push(Reply::computed(|request| {
        let body = request.json();
        let content = body["messages"].as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        // The marker, not the first number: a login shell may print other text first.
        let pid: u32 = content
            .split("PID=")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|digits| digits.parse().ok())
            .unwrap_or_else(|| panic!("no PID= in {content:?}"));
        Reply::tool_call("k1", "process_kill", &json!({"pid": pid}).to_string())
    }));
    e_server.push(Reply::tool_call(
        "k2",
        "process_kill",
        &json!({"pid": their_pid, "signal": "kill"}).to_string(),
    ));
    e_server.push(Reply::tool_call("k3", "process_kill", r#"{"pid": 1}"#));
    e_server.push(Reply::text(&["done"]));
    let mut cmd = gg(&e);
    cmd.args(["--yolo", "-p", "clean up"]);
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let own_pid: u32 = std::fs::read_to_string(&started)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !alive(own_pid),
        "the session's own daemon outlived the command that started it"
    );
    let own_kill = tool_result(&e_server, 2);
    assert!(
        own_kill.contains(&format!("pid {own_pid} has no command line to check")),
        "{own_kill}"
    );

    let their_kill = tool_result(&e_server, 3);
    assert!(their_kill.contains("denied"), "{their_kill}");
    assert!(alive(their_pid), "the person's process was killed");
    let init_kill = tool_result(&e_server, 4);
    assert!(init_kill.contains("refused"), "{init_kill}");

    // The audit trail shows each kill: the refusal, and the others with their class and who
    // decided.
    let audit = run({
        let mut c = gg(&e);
        c.args(["audit", "--json"]);
        c
    });
    let rows = audit_rows(&audit);
    let kills: Vec<_> = rows
        .iter()
        .filter(|r| r["tool"] == "process_kill")
        .collect();
    assert_eq!(kills.len(), 3, "{rows:?}");
    assert_eq!(kills[0]["status"], "error", "{:?}", kills[0]);
    assert!(
        kills[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("has no command line to check")),
        "{:?}",
        kills[0]
    );
    assert_eq!(kills[1]["audit"]["classification"]["verdict"], "dangerous");
    assert_eq!(
        kills[1]["audit"]["classification"]["reasons"][0]["rule"],
        "computer.process_kill"
    );
    assert_eq!(kills[1]["audit"]["decision"]["action"], "deny");
}

#[test]
fn opening_a_file_outside_the_project_is_denied_without_a_terminal() {
    let server = ScriptedServer::with_replies([
        Reply::tool_call("o1", "open", r#"{"target": "file:///etc/passwd"}"#),
        Reply::tool_call(
            "o2",
            "open",
            r#"{"target": "http://169.254.169.254/latest/"}"#,
        ),
        Reply::text(&["done"]),
    ]);
    let e = env(&server);
    let mut cmd = gg(&e);
    cmd.args(["--yolo", "-p", "open it"]);
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for index in [1, 2] {
        let result = tool_result(&server, index);
        assert!(result.contains("denied"), "{result}");
    }
}

#[test]
fn without_a_desktop_the_errors_say_what_is_missing() {
    let server = ScriptedServer::with_replies([
        Reply::tool_call("n1", "notify", r#"{"title": "hi"}"#),
        Reply::tool_call("r1", "clipboard_read", "{}"),
        Reply::text(&["done"]),
    ]);
    let e = env(&server);
    let mut cmd = gg(&e);
    cmd.args(["--yolo", "-p", "tell me"]);
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(tool_result(&server, 1).contains("no session D-Bus"));
    assert!(tool_result(&server, 2).contains("no display"));
}

/// A desktop of our own (testkit's: Xvfb on a free display and a private session bus), or `None`
/// when a program it needs is missing and skipping is allowed.
fn desktop() -> Option<Desktop> {
    let missing = missing_tools(&["Xvfb", "dbus-daemon", "xclip"]);
    if !missing.is_empty() {
        support::skip_unless_required(
            "GG_REQUIRE_DESKTOP",
            &format!("not installed: {}", missing.join(", ")),
        );
        return None;
    }
    Some(Desktop::start("640x480x24"))
}

#[test]
fn clipboard_and_notifications_on_a_real_desktop() {
    let Some(desk) = desktop() else { return };
    let notifications = testkit::notifications::NotificationService::start(&desk.bus_address);
    // The person copied something; xclip keeps serving it in the background.
    let mut copy = Command::new("xclip")
        .args(["-selection", "clipboard", "-i"])
        .env("DISPLAY", &desk.display)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut copy.stdin.take().unwrap(), b"copied by the person").unwrap();
    assert!(copy.wait().unwrap().success());

    let server = ScriptedServer::with_replies([
        Reply::tool_call("r1", "clipboard_read", "{}"),
        Reply::tool_call("w1", "clipboard_write", r#"{"text": "written by gg"}"#),
        Reply::tool_call("r2", "clipboard_read", "{}"),
        Reply::tool_call(
            "n1",
            "notify",
            r#"{"title": "Build done", "body": "all green"}"#,
        ),
        Reply::text(&["done"]),
    ]);
    let e = env(&server);
    let mut cmd = gg(&e);
    cmd.env("DISPLAY", &desk.display)
        .env("DBUS_SESSION_BUS_ADDRESS", &desk.bus_address)
        .args(["--yolo", "-p", "use the desktop"]);
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(tool_result(&server, 1), "copied by the person");
    assert!(tool_result(&server, 2).contains("13 characters"));
    assert_eq!(tool_result(&server, 3), "written by gg");
    assert!(tool_result(&server, 4).contains("notification shown"));
    assert_eq!(
        notifications.received(),
        vec![("Build done".to_string(), "all green".to_string())]
    );
    drop((desk.xvfb, desk.bus));
}

#[test]
fn ggd_advertises_which_computer_tools_work_here() {
    let server = ScriptedServer::start();
    let e = env(&server);
    let mut daemon = Killed(
        e.ggd()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut input = daemon.0.stdin.take().unwrap();
    std::io::Write::write_all(
        &mut input,
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"system.info\",\"params\":{}}\n",
    )
    .unwrap();
    let mut line = String::new();
    BufReader::new(daemon.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    drop(input);
    let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
    let tools = reply["result"]["computerTools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "computer_info",
            "process_list",
            "process_kill",
            "open",
            "notify",
            "clipboard_read",
            "clipboard_write"
        ]
    );
    // No display and no bus in this environment: said, per tool.
    let clipboard = tools
        .iter()
        .find(|t| t["name"] == "clipboard_read")
        .unwrap();
    assert_eq!(clipboard["available"], false);
    assert!(clipboard["reason"].as_str().unwrap().contains("no display"));
    let info = tools.iter().find(|t| t["name"] == "computer_info").unwrap();
    assert_eq!(info["available"], true);
}
