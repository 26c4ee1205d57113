//! `gg mcp list` through the real binary, with and without `--sandbox`, against the real
//! everything-server from the npm registry (installed by `npm ci --prefix tests/mcp-servers`).
//! Under the sandbox a stdio server may write only its own directory, `~/.gg/mcp/<name>`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

fn everything_js() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/mcp-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    )
}

fn node_available() -> bool {
    let found = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        support::skip_unless_required("GG_REQUIRE_NODE", "`node` is not installed");
        return false;
    }
    assert!(
        everything_js().exists(),
        "run `npm ci --prefix tests/mcp-servers` first"
    );
    true
}

fn list(home: &Path, sandbox: bool) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gg"));
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .current_dir(home);
    if sandbox {
        cmd.arg("--sandbox");
    }
    let out = cmd.args(["mcp", "list"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn mcp_list_connects_with_and_without_the_sandbox_and_the_sandbox_confines_writes() {
    if !node_available() {
        return;
    }
    let tmp = support::fixture_dir();
    let home = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(home.join(".gg")).unwrap();
    // The sandbox gives commands a private /tmp, so a checkout under /tmp (CI may clone there)
    // is invisible inside it: run the server from a copy in the fixture directory instead.
    let modules = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp-servers/node_modules");
    let copied = home.join("node_modules");
    let status = Command::new("cp")
        .arg("-a")
        .arg(&modules)
        .arg(&copied)
        .status()
        .unwrap();
    assert!(status.success(), "copy the MCP test servers");
    let js = copied.join("@modelcontextprotocol/server-everything/dist/index.js");
    // The server tries to write outside its directory, then becomes the real server.
    let script = format!(
        "touch {home}/outside-marker; touch ./inside-marker; exec node {js} stdio",
        home = home.display(),
        js = js.display()
    );
    let config = json!({"servers": {
        "everything": {"command": "sh", "args": ["-c", script]},
        "absent": {"command": "/nonexistent/mcp-server"}
    }});
    std::fs::write(home.join(".gg/mcp.json"), config.to_string()).unwrap();

    let sandboxed = list(&home, true);
    assert!(sandboxed.contains("everything  [connected"), "{sandboxed}");
    assert!(sandboxed.contains("mcp_everything_echo"), "{sandboxed}");
    assert!(sandboxed.contains("absent  [failed"), "{sandboxed}");
    assert!(
        home.join(".gg/mcp/everything/inside-marker").exists(),
        "the server's own directory is writable"
    );
    assert!(
        !home.join("outside-marker").exists(),
        "the sandbox stopped the write outside the server's directory"
    );

    // Positive control: without the sandbox the same server does write outside.
    let plain = list(&home, false);
    assert!(plain.contains("everything  [connected"), "{plain}");
    assert!(home.join("outside-marker").exists());
}
