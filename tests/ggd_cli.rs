//! The real `ggd` command line: help and version, usage errors exit 2 naming the problem, and
//! the HTTP token from a file or the environment instead of the command line.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::daemon_common;

use daemon_common::{HttpDaemon, env, ggd};
use serde_json::json;

#[test]
fn help_version_and_usage_errors() {
    let e = env();
    for flag in ["--help", "-h"] {
        let out = ggd(&e, "http://127.0.0.1:9", &[flag]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{flag}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Usage: ggd [OPTIONS]"), "{flag}: {text}");
        for listed in [
            "--http",
            "--token-file",
            "GGD_TOKEN",
            "--api-key-file",
            "install-service",
        ] {
            assert!(text.contains(listed), "{flag} lists {listed}: {text}");
        }
    }
    for flag in ["--version", "-v"] {
        let out = ggd(&e, "http://127.0.0.1:9", &[flag]).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "ggd 0.1.0\n");
    }
    for (args, needle) in [
        (&["--bogus"][..], "'--bogus'"),
        (&["--sandbx"], "'--sandbox'"),
        (&["extra"], "ggd does not accept positional arguments"),
        (
            &["--http", "127.0.0.1:0"],
            "--token is required in HTTP mode",
        ),
        (&["--http", "0.0.0.0:1", "--token", "t"], "must be loopback"),
        (&["--max-active-runs", "0"], "positive integer"),
        (
            &["--token-file", "/nonexistent/token"],
            "/nonexistent/token",
        ),
    ] {
        let out = ggd(&e, "http://127.0.0.1:9", args)
            .env_remove("GGD_TOKEN")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
        assert!(text.contains(needle), "{args:?}: {text}");
    }
}

#[test]
fn the_http_token_comes_from_a_file_or_ggd_token() {
    let e = env();
    let file = e.home.join("token");
    std::fs::write(&file, "file-token\n").unwrap();
    let path = file.to_str().unwrap();
    let cases = [
        ("file-token", vec!["--token-file", path], None),
        ("env-token", vec![], Some("env-token")),
    ];
    for (token, args, env_token) in cases {
        let mut cmd = ggd(&e, "http://127.0.0.1:9", &["--no-scheduler"]);
        if let Some(t) = env_token {
            cmd.env("GGD_TOKEN", t);
        }
        let mut daemon = HttpDaemon::spawn_with(cmd, token, &args);
        let pong = daemon.rpc("system.info", json!({}));
        assert!(pong.get("error").is_none(), "{token}: {pong}");
        // The wrong token is refused.
        let host = daemon.host();
        let refused = daemon_common::http(
            daemon.addr,
            "POST",
            "/rpc",
            &[("Host", &host), ("Authorization", "Bearer wrong")],
            Some(r#"{"jsonrpc":"2.0","id":1,"method":"system.info"}"#),
        );
        assert_eq!(refused.status, 401, "{token}");
        let _ = daemon.child.kill();
        let _ = daemon.child.wait();
    }
}

/// ggd is the gg executable under another name: the `ggd` launcher execs the `gg` beside it (same
/// pid, so whoever started ggd can wait for and signal it), a symlink named ggd works the same,
/// the service unit starts the launcher (not `gg`, which is the command line under its own
/// name), and a launcher copied away from gg says what is missing.
#[test]
fn ggd_is_gg_under_another_name() {
    let e = env();
    let gg = std::path::Path::new(env!("CARGO_BIN_EXE_gg"));
    let launcher = std::path::Path::new(env!("CARGO_BIN_EXE_ggd"));
    assert_eq!(launcher.parent(), gg.parent());
    let launcher_size = std::fs::metadata(launcher).unwrap().len();
    let gg_size = std::fs::metadata(gg).unwrap().len();
    assert!(
        launcher_size * 20 < gg_size,
        "the launcher links the library: {launcher_size} bytes against gg's {gg_size}"
    );

    // The launcher replaces itself with gg: the daemon runs as the pid that was started.
    let mut child = ggd(&e, "http://127.0.0.1:9", &[])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let exe = {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let exe = std::fs::read_link(format!("/proc/{}/exe", child.id())).unwrap();
            if exe.file_name() == gg.file_name() || std::time::Instant::now() > deadline {
                break exe;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    };
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    assert_eq!(exe.canonicalize().unwrap(), gg.canonicalize().unwrap());
    assert!(
        status.success(),
        "ggd on stdio ends at end of input: {status}"
    );

    // A symlink called ggd is the daemon too; gg under its own name is the command line.
    let dir = e.home.join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(gg, dir.join("ggd")).unwrap();
    let out = std::process::Command::new(dir.join("ggd"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ggd 0.1.0\n");
    let out = std::process::Command::new(gg)
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("gg "));

    // The service unit names the launcher beside gg.
    let out = ggd(
        &e,
        "http://127.0.0.1:9",
        &["install-service", "--http", "127.0.0.1:0", "--token", "t"],
    )
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let unit = std::fs::read_to_string(e.home.join(".config/systemd/user/ggd.service")).unwrap();
    let exec_start = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap();
    let program = exec_start
        .split_whitespace()
        .next()
        .unwrap()
        .trim_matches('"');
    assert_eq!(
        std::path::Path::new(program).canonicalize().unwrap(),
        launcher.canonicalize().unwrap(),
        "{unit}"
    );

    // Copied away from gg, the launcher fails with a message that says what is missing.
    let alone = dir.join("alone");
    std::fs::create_dir_all(&alone).unwrap();
    std::fs::copy(launcher, alone.join("ggd")).unwrap();
    let out = std::process::Command::new(alone.join("ggd"))
        .arg("--version")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("gg must be installed beside it") && text.contains("alone/gg"),
        "{text}"
    );
}
