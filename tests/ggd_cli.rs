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
