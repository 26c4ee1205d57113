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

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{GgFixture, Reply, ScriptedServer, chromium_present};

const SSH_CANARY: &str = "SSH-HARDLINK-CANARY";
const AWS_CANARY: &str = "AWS-HARDLINK-CANARY";
/// A past session's transcript, two levels below `~/.gg` as gg keeps them.
const SESSION_CANARY: &str = "SESSION-HARDLINK-CANARY";

/// Plants `~/.ssh/id_rsa` and `~/.aws/credentials` with their canaries.
fn plant_secrets(fx: &GgFixture) {
    std::fs::create_dir_all(fx.home.join(".ssh")).unwrap();
    std::fs::write(fx.home.join(".ssh/id_rsa"), format!("{SSH_CANARY}\n")).unwrap();
    std::fs::create_dir_all(fx.home.join(".gg/sessions/old-project")).unwrap();
    std::fs::write(
        fx.home.join(".gg/sessions/old-project/1.jsonl"),
        format!("{SESSION_CANARY}\n"),
    )
    .unwrap();
    std::fs::create_dir_all(fx.home.join(".aws")).unwrap();
    std::fs::write(
        fx.home.join(".aws/credentials"),
        format!("[default]\naws_secret_access_key = {AWS_CANARY}\n"),
    )
    .unwrap();
}

/// The fixture with the secrets planted and hard links in the project (`repo_rel`) to files of
/// the home (`home_rel`).
fn fixture(
    server: &ScriptedServer,
    config: serde_json::Value,
    repo: &str,
    links: &[(&str, &str)],
) -> GgFixture {
    let fx = GgFixture::new(server, config, repo);
    plant_secrets(&fx);
    for (home_rel, repo_rel) in links {
        let link = fx.repo.join(repo_rel);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::fs::hard_link(fx.home.join(home_rel), link).unwrap();
    }
    fx
}

/// `gg` for the browser tests: its own TMPDIR (the browser profile), and no sandbox, so that
/// nothing but gg's `file:` rule stands between the browser and a file.
fn browser_gg(fx: &GgFixture) -> std::process::Command {
    let tmp = fx.tmp.path().canonicalize().unwrap().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = fx.gg();
    cmd.env("TMPDIR", &tmp).env("GG_SANDBOX_BACKEND", "none");
    cmd
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// Nothing gg keeps in its knowledge bases and library holds a canary.
fn assert_stores_clean(fx: &GgFixture) {
    for dir in [fx.home.join(".gg/kb"), fx.home.join(".gg/library")] {
        for entry in walk(&dir) {
            let text =
                String::from_utf8_lossy(&std::fs::read(&entry).unwrap_or_default()).into_owned();
            for canary in [SSH_CANARY, AWS_CANARY] {
                assert!(!text.contains(canary), "{} holds {canary}", entry.display());
            }
        }
    }
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
    let fx = fixture(
        &server,
        json!({}),
        "repo",
        &[
            (".ssh/id_rsa", "notes.txt"),
            (".aws/credentials", "sub/creds.ini"),
            (".aws/credentials", "AGENTS.md"),
            (".gg/sessions/old-project/1.jsonl", "history.txt"),
        ],
    );
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
        ("read", json!({"path": "history.txt"})),
    ];
    for (i, (tool, args)) in calls.iter().enumerate() {
        server.push(Reply::tool_call(&format!("c{i}"), tool, &args.to_string()));
    }
    server.push(Reply::text(&["done"]));
    let out = fx.gg().args(["--yolo", "-p", "go"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let bodies = server.all_bodies();
    let results = server.tool_results();
    for canary in [SSH_CANARY, AWS_CANARY, SESSION_CANARY] {
        assert!(
            !bodies.contains(canary),
            "{canary} reached the model: {results:?}"
        );
        assert!(!said(&out).contains(canary), "{canary} in the output");
    }
    assert_eq!(results.len(), calls.len(), "{results:?}");
    for i in [0, 1, 4, 6] {
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

/// `gg kb add` skips a hard link to a secret met in a root (and indexes its neighbour), and
/// `gg library add` refuses one named directly: the secret is in no index or copy.
#[test]
fn kb_add_and_library_add_refuse_hard_links_to_secrets() {
    let server = ScriptedServer::start();
    let fx = fixture(
        &server,
        json!({}),
        "repo",
        &[
            (".ssh/id_rsa", "docs/guide.md"),
            (".aws/credentials", "docs/aws.txt"),
        ],
    );
    std::fs::write(fx.repo.join("docs/readme.md"), "# Readme\nORDINARY-NOTES\n").unwrap();
    let gg = |args: &[&str]| fx.gg().args(args).output().unwrap();

    let kb = gg(&["kb", "add", "docs", "--no-embed"]);
    assert!(kb.status.success(), "{kb:?}");
    assert!(said(&kb).contains("1 indexed"), "{}", said(&kb));
    let search = gg(&["kb", "search", "CANARY"]);
    assert!(!said(&search).contains(SSH_CANARY), "{search:?}");
    let found = gg(&["kb", "search", "ORDINARY"]);
    assert!(said(&found).contains("readme.md"), "{found:?}");

    let library = gg(&["library", "add", "docs/guide.md"]);
    assert!(!library.status.success(), "{library:?}");
    assert!(
        said(&library).contains("secrets are never added"),
        "{library:?}"
    );
    for out in [&kb, &search, &library] {
        assert!(!said(out).contains(SSH_CANARY), "{out:?}");
    }
    assert_stores_clean(&fx);
}

/// ggd's `kb.add` (a client's, the person's) skips a hard link to a secret in a root as
/// `gg kb add` does: it is in no index and no search finds it.
#[test]
fn ggd_kb_add_skips_hard_links_to_secrets() {
    let d = crate::daemon_common::env();
    std::fs::create_dir_all(d.home.join(".ssh")).unwrap();
    std::fs::write(d.home.join(".ssh/id_rsa"), format!("{SSH_CANARY}\n")).unwrap();
    let docs = d.home.join("notes");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(docs.join("ops.md"), "# Ops\nORDINARY-NOTES\n").unwrap();
    std::fs::hard_link(d.home.join(".ssh/id_rsa"), docs.join("key.md")).unwrap();
    let server = ScriptedServer::start();
    let client = crate::daemon_common::StdioClient::spawn(crate::daemon_common::ggd(
        &d,
        &server.base_url(),
        &[],
    ));
    let added = client.ok("kb.add", json!({"paths": [docs], "kb": "ops"}));
    assert_eq!(added["indexed"], 1, "{added}");
    let found = client.ok("kb.search", json!({"query": "CANARY", "kb": "ops"}));
    assert!(!found.to_string().contains(SSH_CANARY), "{found}");
    for entry in walk(&d.home.join(".gg/kb")) {
        let text = String::from_utf8_lossy(&std::fs::read(&entry).unwrap_or_default()).into_owned();
        assert!(
            !text.contains(SSH_CANARY),
            "{} holds the key",
            entry.display()
        );
    }
}

/// Spawns `gg args` with `env`, output piped.
fn spawn(fx: &GgFixture, env: &[(&str, &Path)], args: &[&str]) -> Child {
    let mut cmd = fx.gg();
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `file` exists (the process reached its injection point).
fn wait_for(file: &Path) {
    let start = Instant::now();
    while !file.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} never appeared",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Replaces `link` by a symlink to `target`.
fn relink(link: &Path, target: &Path) {
    std::fs::remove_file(link).unwrap();
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// `gg library add notes.txt` where `notes.txt` leads to `~/.ssh/id_rsa` when opened, and is
/// re-pointed at an ordinary file while gg holds the open file (a test-hooks pause between the
/// open and the check): judging the name again would find the ordinary file and copy the key.
/// The descriptor copied from is what is judged, so the add is refused.
#[test]
fn library_add_judges_the_file_it_copies_not_the_name_again() {
    if !cfg!(feature = "test-hooks") {
        return;
    }
    let server = ScriptedServer::start();
    let fx = fixture(&server, json!({}), "repo", &[]);
    std::fs::write(fx.repo.join("plain.txt"), "ordinary\n").unwrap();
    let link = fx.repo.join("notes.txt");
    std::os::unix::fs::symlink(fx.home.join(".ssh/id_rsa"), &link).unwrap();
    let pauses = tempfile::tempdir().unwrap();
    let child = spawn(
        &fx,
        &[
            ("GG_TEST_PAUSE_AT", Path::new("library.add-opened")),
            ("GG_TEST_PAUSE_DIR", pauses.path()),
        ],
        &["library", "add", "notes.txt"],
    );
    wait_for(&pauses.path().join("library.add-opened.reached"));
    relink(&link, &fx.repo.join("plain.txt"));
    std::fs::write(pauses.path().join("library.add-opened.go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success(), "{out:?}");
    assert!(said(&out).contains("secrets are never added"), "{out:?}");
    assert_stores_clean(&fx);
}

/// `gg kb add docs`: the walk finds `docs/race.md` an ordinary file, and before it is read (a
/// test-hooks pause) it is replaced by a symlink to `~/.ssh/id_rsa`. Opening the name again,
/// following links, would index the key; the read refuses a link where the walk saw a file.
#[test]
fn kb_add_reads_what_the_walk_judged() {
    if !cfg!(feature = "test-hooks") {
        return;
    }
    let server = ScriptedServer::start();
    let fx = fixture(&server, json!({}), "repo", &[]);
    std::fs::create_dir_all(fx.repo.join("docs")).unwrap();
    std::fs::write(fx.repo.join("docs/race.md"), "# Race\nordinary\n").unwrap();
    let pauses = tempfile::tempdir().unwrap();
    let child = spawn(
        &fx,
        &[("GG_KB_TEST_PAUSE", pauses.path())],
        &["kb", "add", "docs", "--no-embed"],
    );
    wait_for(&pauses.path().join("reached"));
    relink(&fx.repo.join("docs/race.md"), &fx.home.join(".ssh/id_rsa"));
    std::fs::write(pauses.path().join("go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(!said(&out).contains(SSH_CANARY), "{out:?}");
    let search = fx.gg().args(["kb", "search", "CANARY"]).output().unwrap();
    assert!(!said(&search).contains(SSH_CANARY), "{search:?}");
    assert_stores_clean(&fx);
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
    let fx = fixture(
        &server,
        json!({ "browser": {} }),
        "home/repo",
        &[(".ssh/id_rsa", "key.txt")],
    );
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
    let out = browser_gg(&fx)
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

/// A `file:` load is judged when Chromium asks, and the file is served from what was judged:
/// `doc.html` in the project is judged an ordinary page, then (a test-hooks pause between the
/// judgement and the load) replaced by a symlink to a page in `~/.ssh`. Chromium opening the
/// name would load that page, whose title `browser_navigate` reports to the model; the page
/// judged is what loads. No sandbox: nothing but gg's rule stands in the way.
#[test]
fn the_browser_loads_the_file_it_judged() {
    if !chromium_present() || !cfg!(feature = "test-hooks") {
        return;
    }
    let server = ScriptedServer::start();
    let fx = fixture(&server, json!({ "browser": {} }), "home/repo", &[]);
    std::fs::write(
        fx.home.join(".ssh/notes.html"),
        format!("<title>{SSH_CANARY}</title>"),
    )
    .unwrap();
    let doc = fx.repo.join("doc.html");
    std::fs::write(&doc, "<title>ORDINARY-TITLE</title><p>ordinary</p>").unwrap();
    server.push(Reply::tool_call(
        "c0",
        "browser_navigate",
        &json!({ "url": format!("file://{}", doc.display()) }).to_string(),
    ));
    server.push(Reply::text(&["done"]));
    let pauses = tempfile::tempdir().unwrap();
    let mut cmd = browser_gg(&fx);
    cmd.env("GG_TEST_PAUSE_AT", "browser.file-judged")
        .env("GG_TEST_PAUSE_DIR", pauses.path())
        .args(["--yolo", "-p", "open the doc"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    wait_for(&pauses.path().join("browser.file-judged.reached"));
    relink(&doc, &fx.home.join(".ssh/notes.html"));
    std::fs::write(pauses.path().join("browser.file-judged.go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let results = server.tool_results();
    assert!(!server.all_bodies().contains(SSH_CANARY), "{results:?}");
    assert!(results[0].contains("ORDINARY-TITLE"), "{results:?}");
}
