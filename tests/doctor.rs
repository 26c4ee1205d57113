//! `gg doctor` through the real binary: at each Linux sandbox level (`GG_SANDBOX_BACKEND` forces
//! it, as it does for commands), with bubblewrap missing (hidden by a mount namespace in which
//! its files are `/dev/null`, so the probe meets exactly what a machine without it offers), the
//! `--json` shape, the exit status rule (1 only when something asked for cannot work), colour on
//! a real terminal, and `--online` against the scripted model server.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::sandbox_support;
use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{GgFixture, Reply, ScriptedServer};

/// The checks every run reports, in order (MCP servers add `mcp:<name>` entries at the end).
const CHECKS: &[&str] = &[
    "config",
    "provider",
    "provider-online",
    "bubblewrap",
    "user-namespaces",
    "landlock",
    "seccomp",
    "sandbox-level",
    "sandbox-self-test",
    "helper",
    "chromium",
    "ggd",
];

fn doctor(fx: &GgFixture, args: &[&str], env: &[(&str, &str)]) -> Output {
    fx.gg()
        .arg("doctor")
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// The `--json` object, checked for its shape: `status` and one entry per check with exactly
/// `name`, `status` (ok, warn, fail, skipped) and `detail`.
fn parsed(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "one JSON line: {stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert!(
        ["ok", "warn", "fail"].contains(&report["status"].as_str().unwrap()),
        "{report}"
    );
    for entry in report["checks"].as_array().unwrap() {
        let fields: Vec<&String> = entry.as_object().unwrap().keys().collect();
        assert_eq!(fields, ["detail", "name", "status"], "{entry}");
        assert!(
            ["ok", "warn", "fail", "skipped"].contains(&entry["status"].as_str().unwrap()),
            "{entry}"
        );
        assert!(entry["detail"].is_string() && entry["name"].is_string());
    }
    report
}

fn names(report: &Value) -> Vec<String> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

/// The entry named `name`: (status, detail).
fn entry(report: &Value, name: &str) -> (String, String) {
    let found = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report}"));
    (
        found["status"].as_str().unwrap().to_string(),
        found["detail"].as_str().unwrap().to_string(),
    )
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

#[test]
fn each_sandbox_level_is_reported_and_proven_with_secrets_hidden() {
    let server = ScriptedServer::start();
    let fx = GgFixture::new(&server, json!({}), "repo");
    for level in sandbox_support::available_levels() {
        let out = doctor(&fx, &["--json"], &[("GG_SANDBOX_BACKEND", level)]);
        let report = parsed(&out);
        assert_eq!(names(&report)[..CHECKS.len()], *CHECKS, "{report}");
        let (status, detail) = entry(&report, "sandbox-level");
        assert_eq!(status, "ok", "{level}: {detail}");
        assert!(
            detail.starts_with(&format!("{level} forced by GG_SANDBOX_BACKEND")),
            "{level}: {detail}"
        );
        let (status, detail) = entry(&report, "sandbox-self-test");
        assert_eq!(status, "ok", "{level}: {detail}");
        let (status, detail) = entry(
            &report,
            if level == "bwrap" {
                "bubblewrap"
            } else {
                "landlock"
            },
        );
        assert_eq!(status, "ok", "{level}: {detail}");
        assert_eq!(entry(&report, "seccomp").0, "ok", "{report}");
        assert_eq!(entry(&report, "config").0, "ok", "{report}");
        let (status, detail) = entry(&report, "provider");
        assert_eq!(status, "ok", "{detail}");
        assert!(
            detail.starts_with("local:m at http://127.0.0.1:"),
            "{detail}"
        );
        // The merged view: the file's values, the defaults, and the key hidden.
        assert_eq!(report["config"]["default"], "local:m");
        assert_eq!(report["config"]["context"]["maxOutputTokens"], 4096);
        assert_eq!(report["config"]["providers"]["local"]["apiKey"], "[hidden]");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("sk-test"));
        // Only a failed check makes the status 1; nothing here is asked for and broken.
        assert_eq!(
            code(&out),
            if report["status"] == "fail" { 1 } else { 0 },
            "{report}"
        );
        assert_ne!(report["status"], "fail", "{report}");
        assert!(
            server.requests().is_empty(),
            "nothing sent without --online"
        );

        let text = doctor(&fx, &[], &[("GG_SANDBOX_BACKEND", level)]);
        let text = String::from_utf8(text.stdout).unwrap();
        assert!(
            text.lines()
                .any(|l| l.starts_with("ok") && l.contains("sandbox-level") && l.contains(level)),
            "{text}"
        );
        assert!(text.contains("\"apiKey\":\"[hidden]\""), "{text}");
        assert!(
            !text.contains("sk-test") && !text.contains('\x1b'),
            "{text}"
        );
    }
}

/// The real `gg doctor` with bubblewrap absent: where it is installed, run inside a mount
/// namespace (made by bubblewrap itself) in which each of its files is `/dev/null`. Returns the
/// output and whether bubblewrap was really absent (`false`: it is installed but cannot make a
/// namespace here, so it is unusable instead, which doctor must report the same way).
fn doctor_without_bubblewrap(
    fx: &GgFixture,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Output, bool) {
    let mut installed: Vec<PathBuf> = ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"]
        .iter()
        .map(Path::new)
        .filter(|p| p.is_file())
        .filter_map(|p| p.canonicalize().ok())
        .collect();
    installed.dedup();
    if installed.is_empty() {
        return (doctor(fx, args, env), true);
    }
    if !sandbox_support::usable("bwrap") {
        return (doctor(fx, args, env), false);
    }
    let mut cmd = Command::new(&installed[0]);
    cmd.args(["--dev-bind", "/", "/"]);
    for path in &installed {
        cmd.arg("--ro-bind").arg("/dev/null").arg(path);
    }
    let out = cmd
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_gg"))
        .arg("doctor")
        .args(args)
        .current_dir(&fx.repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &fx.home)
        .env("GG_SESSION_DIR", &fx.sessions)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        !out.stdout.is_empty(),
        "bubblewrap could not hide itself: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out, true)
}

#[test]
fn without_bubblewrap_it_says_why_and_falls_back_and_a_forced_bwrap_fails() {
    let server = ScriptedServer::start();
    let fx = GgFixture::new(&server, json!({}), "repo");
    let (out, absent) = doctor_without_bubblewrap(&fx, &["--json"], &[]);
    let report = parsed(&out);
    let (status, detail) = entry(&report, "bubblewrap");
    assert_eq!(status, "warn", "{detail}");
    if absent {
        assert!(
            detail.contains("bwrap not found") && detail.contains("install bubblewrap"),
            "{detail}"
        );
        assert_eq!(entry(&report, "user-namespaces").0, "skipped", "{report}");
    }
    let landlock = entry(&report, "landlock").0 == "ok";
    let (status, detail) = entry(&report, "sandbox-level");
    if landlock {
        assert_eq!(status, "ok", "{detail}");
        assert!(
            detail.starts_with("landlock: "),
            "the reason follows: {detail}"
        );
        assert!(!absent || detail.contains("bwrap not found"), "{detail}");
        assert_eq!(entry(&report, "sandbox-self-test").0, "ok", "{report}");
    } else {
        // No level at all, and the config does not ask for the sandbox: a warning.
        assert_eq!(status, "warn", "{detail}");
        assert!(detail.starts_with("none"), "{detail}");
    }
    assert_ne!(report["status"], "fail", "{report}");
    assert_eq!(code(&out), 0, "warnings alone exit 0: {report}");

    // Asking for bubblewrap where there is none cannot work: exit 1, and the reason is named.
    let (out, _) = doctor_without_bubblewrap(&fx, &["--json"], &[("GG_SANDBOX_BACKEND", "bwrap")]);
    let report = parsed(&out);
    assert_eq!(entry(&report, "bubblewrap").0, "fail", "{report}");
    let (status, detail) = entry(&report, "sandbox-level");
    assert_eq!(status, "fail", "{detail}");
    assert!(
        detail.contains("sandbox backend bwrap is unavailable"),
        "{detail}"
    );
    assert_eq!(report["status"], "fail");
    assert_eq!(code(&out), 1, "{report}");
}

#[test]
fn what_the_config_asks_for_and_cannot_work_exits_1() {
    let server = ScriptedServer::start();
    let fx = GgFixture::new(
        &server,
        json!({"browser": {"executable": "/nonexistent/chromium"}}),
        "repo",
    );
    let mut servers = json!({"absent": {"command": "/nonexistent/mcp-server"}});
    let everything = mcp_everything_server();
    if let Some(js) = &everything {
        servers["everything"] = json!({"command": "node", "args": [js, "stdio"]});
    }
    std::fs::write(
        fx.home.join(".gg/mcp.json"),
        json!({ "servers": servers }).to_string(),
    )
    .unwrap();
    let out = doctor(&fx, &["--json"], &[]);
    let report = parsed(&out);
    let (status, detail) = entry(&report, "chromium");
    assert_eq!(status, "fail", "{detail}");
    assert!(
        detail.contains("browser.executable /nonexistent/chromium"),
        "{detail}"
    );
    let (status, detail) = entry(&report, "mcp:absent");
    assert_eq!(status, "fail", "{detail}");
    assert!(detail.contains("MCP server \"absent\""), "{detail}");
    if everything.is_some() {
        let (status, detail) = entry(&report, "mcp:everything");
        assert_eq!(status, "ok", "{detail}");
        assert!(detail.starts_with("started, "), "{detail}");
    }
    assert_eq!(report["status"], "fail");
    assert_eq!(code(&out), 1, "{report}");

    // An invalid config: the error, no merged view, and the checks that need it skipped.
    std::fs::write(fx.home.join(".gg/config.json"), "{\"providers\": 3}").unwrap();
    std::fs::remove_file(fx.home.join(".gg/mcp.json")).unwrap();
    let out = doctor(&fx, &["--json"], &[]);
    let report = parsed(&out);
    let (status, detail) = entry(&report, "config");
    assert_eq!(status, "fail", "{detail}");
    assert!(detail.contains("config.json"), "{detail}");
    assert_eq!(entry(&report, "provider").0, "skipped");
    assert_eq!(entry(&report, "mcp").0, "ok", "no servers: {report}");
    assert!(report["config"].is_null(), "{report}");
    assert_eq!(code(&out), 1);
}

/// The everything-server of `npm ci --prefix tests/mcp-servers`, when node can run it.
fn mcp_everything_server() -> Option<String> {
    let js = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node {
        eprintln!("skipped the started-server half: `node` is not installed");
        return None;
    }
    assert!(js.exists(), "run `npm ci --prefix tests/mcp-servers` first");
    Some(js.display().to_string())
}

#[test]
fn online_sends_exactly_one_models_request_with_the_key_and_names_a_refusal() {
    let server = ScriptedServer::start();
    let fx = GgFixture::new(&server, json!({}), "repo");
    // Without --online nothing reaches the provider.
    let report_off = parsed(&doctor(&fx, &["--json"], &[]));
    let (status, detail) = entry(&report_off, "provider-online");
    assert_eq!(status, "skipped", "{detail}");
    assert!(detail.contains("--online"), "{detail}");
    assert!(server.requests().is_empty());

    // The key comes from a file: its path may be shown, its contents never.
    let key_file = fx.tmp.path().join("key");
    std::fs::write(&key_file, "sk-from-a-file-123\n").unwrap();
    let key_env = [("GG_API_KEY_FILE", key_file.to_str().unwrap())];
    server.push(Reply::status(
        200,
        r#"{"object":"list","data":[{"id":"m"},{"id":"other"}]}"#,
    ));
    let out = doctor(&fx, &["--online", "--json"], &key_env);
    let report = parsed(&out);
    let (status, detail) = entry(&report, "provider-online");
    assert_eq!(status, "ok", "{detail}");
    assert!(detail.contains("2 model(s), m among them"), "{detail}");
    assert!(
        entry(&report, "provider")
            .1
            .contains(key_file.to_str().unwrap())
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("sk-from-a-file-123"));
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].method, "GET");
    assert_eq!(requests[0].path, "/v1/models");
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-from-a-file-123")
    );

    // A refused key cannot work: named, and exit 1.
    server.push(Reply::status(401, r#"{"error":{"message":"bad key"}}"#));
    let out = doctor(&fx, &["--online", "--json"], &[]);
    let report = parsed(&out);
    let (status, detail) = entry(&report, "provider-online");
    assert_eq!(status, "fail", "{detail}");
    assert!(
        detail.contains("HTTP 401: the API key was refused"),
        "{detail}"
    );
    assert_eq!(code(&out), 1);
    assert_eq!(server.requests().len(), 2);
}

/// On a real terminal the statuses are coloured, unless `NO_COLOR` is set.
#[test]
fn colour_on_a_terminal_follows_no_color() {
    let server = ScriptedServer::start();
    let fx = GgFixture::new(&server, json!({}), "repo");
    for (no_color, coloured) in [("", true), ("1", false)] {
        let output = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&output);
        let (_master, mut child) = support::gg_on_pty(
            &fx.home,
            &fx.repo,
            &server,
            &["doctor"],
            &[("NO_COLOR", no_color)],
            move |bytes| sink.lock().unwrap().extend_from_slice(bytes),
        );
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "gg doctor did not finish");
            std::thread::sleep(Duration::from_millis(50));
        };
        // The reader thread drains what is left once the last line arrived.
        let text = loop {
            let text = String::from_utf8_lossy(&output.lock().unwrap()).into_owned();
            if (text.contains("sandbox-level") && text.contains("config (merged"))
                || Instant::now() > deadline
            {
                break text;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.code().is_some(), "{text}");
        assert_eq!(
            text.contains("\x1b[32mok"),
            coloured,
            "NO_COLOR={no_color:?}: {text:?}"
        );
        assert_eq!(
            text.contains('\x1b'),
            coloured,
            "NO_COLOR={no_color:?}: {text:?}"
        );
    }
}

/// ggd is reported as its single-instance lock records it: not running, then running with its
/// pid while a real daemon serves.
#[test]
fn a_running_ggd_is_named_with_its_pid() {
    let server = ScriptedServer::start();
    let fx = GgFixture::new(&server, json!({}), "repo");
    let (status, detail) = entry(&parsed(&doctor(&fx, &["--json"], &[])), "ggd");
    assert_eq!(status, "ok");
    assert!(detail.starts_with("not running"), "{detail}");

    let mut cmd = fx.ggd();
    cmd.arg("--no-scheduler");
    let mut daemon = crate::daemon_common::StdioClient::spawn(cmd);
    // It answers only after taking the lock.
    daemon.ok("system.info", json!({}));
    let (status, detail) = entry(&parsed(&doctor(&fx, &["--json"], &[])), "ggd");
    assert_eq!(status, "ok");
    assert!(
        detail.starts_with(&format!("running (pid {}", daemon.child.id())),
        "{detail}"
    );
    daemon.close_stdin();
    assert!(daemon.wait_exit().success());
}
