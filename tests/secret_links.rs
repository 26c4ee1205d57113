//! Hard links to secrets and links swapped in between check and use (issue 35, one policy for
//! every actor). A hard link inside the project to `~/.ssh/id_rsa`, made by the person or an
//! earlier process (not by gg's sandbox), is the secret under another name: no path rule sees
//! it, so each actor judges the file it opened by its identity. And an actor that judged a path
//! then opened it again by name would read whatever a link swapped in between leads to; each
//! reads the descriptor it judged. Each test drives the real `gg` (the scripted model playing a
//! prompt-injected model, or the person's own `gg kb add` / `gg library add`) and checks that
//! the secret reaches neither the model, nor the output, nor anything gg stores.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::process::Output;

use serde_json::json;
use support::{GgFixture, Reply, ScriptedServer, chromium_present};

const SSH_CANARY: &str = "SSH-HARDLINK-CANARY";
const AWS_CANARY: &str = "AWS-HARDLINK-CANARY";

/// Plants `~/.ssh/id_rsa` and `~/.aws/credentials` with their canaries.
fn plant_secrets(fx: &GgFixture) {
    std::fs::create_dir_all(fx.home.join(".ssh")).unwrap();
    std::fs::write(fx.home.join(".ssh/id_rsa"), format!("{SSH_CANARY}\n")).unwrap();
    std::fs::create_dir_all(fx.home.join(".aws")).unwrap();
    std::fs::write(
        fx.home.join(".aws/credentials"),
        format!("[default]\naws_secret_access_key = {AWS_CANARY}\n"),
    )
    .unwrap();
}

fn said(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// The file tools (`read`, `grep`, `list`, `edit`) and the project instructions read at start
/// refuse a hard link in the project to `~/.ssh/id_rsa` or `~/.aws/credentials` as they refuse
/// the secret itself: the model is told it is a deny-read path and sees no byte of it, and the
/// secret is left as it was.
#[test]
fn file_tools_refuse_hard_links_to_secrets() {
    let server = ScriptedServer::start();
    let fx = GgFixture::new(&server, json!({}), "repo");
    plant_secrets(&fx);
    std::fs::create_dir_all(fx.repo.join("sub")).unwrap();
    std::fs::hard_link(fx.home.join(".ssh/id_rsa"), fx.repo.join("notes.txt")).unwrap();
    std::fs::hard_link(
        fx.home.join(".aws/credentials"),
        fx.repo.join("sub/creds.ini"),
    )
    .unwrap();
    std::fs::hard_link(fx.home.join(".aws/credentials"), fx.repo.join("AGENTS.md")).unwrap();
    std::fs::write(fx.repo.join("plain.txt"), "PLAIN-TEXT-CANARY\n").unwrap();
    let calls = [
        ("read", json!({"path": "notes.txt"})),
        ("read", json!({"path": "sub/creds.ini"})),
        ("grep", json!({"pattern": "CANARY", "path": "."})),
        ("list", json!({})),
        (
            "edit",
            json!({"path": "notes.txt", "edits": [{"oldText": "SSH", "newText": "x"}]}),
        ),
        ("read", json!({"path": "plain.txt"})),
    ];
    for (i, (tool, args)) in calls.iter().enumerate() {
        server.push(Reply::tool_call(&format!("c{i}"), tool, &args.to_string()));
    }
    server.push(Reply::text(&["done"]));
    let out = fx.gg().args(["--yolo", "-p", "go"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let bodies = server.all_bodies();
    let results = server.tool_results();
    for canary in [SSH_CANARY, AWS_CANARY] {
        assert!(
            !bodies.contains(canary),
            "{canary} reached the model: {results:?}"
        );
        assert!(!said(&out).contains(canary), "{canary} in the output");
    }
    assert_eq!(results.len(), calls.len(), "{results:?}");
    for i in [0, 1, 4] {
        assert!(results[i].contains("deny-read"), "call {i}: {results:?}");
    }
    // The tools still work: the ordinary file reads and greps.
    assert!(results[5].contains("PLAIN-TEXT-CANARY"), "{results:?}");
    assert!(results[2].contains("plain.txt"), "{results:?}");
    assert_eq!(
        std::fs::read_to_string(fx.home.join(".ssh/id_rsa")).unwrap(),
        format!("{SSH_CANARY}\n")
    );
}

/// The browser (no sandbox, so nothing but gg's `file:` rule stands in the way) neither opens
/// a hard link in the project to `~/.ssh/id_rsa` by navigation nor loads it in a frame of a
/// project page: the navigation is refused as a deny-read path, the frame's load is blocked,
/// and the key reaches the model nowhere.
#[test]
fn the_browser_refuses_hard_links_to_secrets() {
    if !chromium_present() {
        return;
    }
    let server = ScriptedServer::start();
    let fx = GgFixture::new(&server, json!({ "browser": {} }), "home/repo");
    plant_secrets(&fx);
    std::fs::hard_link(fx.home.join(".ssh/id_rsa"), fx.repo.join("key.txt")).unwrap();
    std::fs::write(
        fx.repo.join("page.html"),
        "<p>PROJECT-PAGE</p><iframe src=\"key.txt\"></iframe>",
    )
    .unwrap();
    let url = |rel: &str| format!("file://{}", fx.repo.join(rel).display());
    server.push(Reply::tool_call(
        "c0",
        "browser_navigate",
        &json!({ "url": url("key.txt") }).to_string(),
    ));
    server.push(Reply::tool_call("c1", "browser_read", "{}"));
    server.push(Reply::tool_call(
        "c2",
        "browser_navigate",
        &json!({ "url": url("page.html") }).to_string(),
    ));
    server.push(Reply::tool_call("c3", "browser_read", "{}"));
    server.push(Reply::text(&["done"]));
    let tmp = fx.tmp.path().canonicalize().unwrap().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = fx
        .gg()
        .env("TMPDIR", &tmp)
        .env("GG_SANDBOX_BACKEND", "none")
        .args(["--yolo", "-p", "open the key"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let bodies = server.all_bodies();
    let results = server.tool_results();
    assert!(!bodies.contains(SSH_CANARY), "{results:?}");
    assert!(results[0].contains("deny-read"), "{results:?}");
    assert!(results[3].contains("PROJECT-PAGE"), "{results:?}");
    let blocked: usize = results
        .iter()
        .flat_map(|r| r.lines())
        .filter_map(|l| l.strip_prefix("[gg: the browser blocked "))
        .filter_map(|l| l.split(' ').next()?.parse::<usize>().ok())
        .sum();
    assert!(
        blocked >= 1,
        "the frame's load was not blocked: {results:?}"
    );
}
