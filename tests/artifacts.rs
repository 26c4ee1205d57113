//! Artifacts through the real `gg` binary, the scripted server playing the model: versions
//! created and edited by the model's tools, read back as untrusted content, diffed and shown by
//! `gg artifact`, the before/after preview in the approval, the publish version race (two
//! publishers, made deterministic by the `test-hooks` pause points), and the store surviving
//! `kill -9` in the middle of a write.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

#[cfg(feature = "test-hooks")]
use std::path::Path;
use std::path::PathBuf;
#[cfg(feature = "test-hooks")]
use std::process::Stdio;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Reply, ScriptedServer};

use support::GgFixture as Env;

fn env(server: &ScriptedServer) -> Env {
    Env::new(server, json!({}), "home/repo")
}

fn gg(e: &Env) -> Command {
    e.gg()
}

fn run(e: &Env, args: &[&str]) -> Output {
    gg(e).args(args).output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
}

/// The content of the last tool message in a request body.
fn last_tool_result(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "tool", "{last}");
    last["content"].as_str().unwrap_or_default().to_string()
}

/// The id in an `artifact_create` result (`created artifact <id> …`).
fn created_id(result: &str) -> String {
    result
        .split("created artifact ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no artifact id in {result:?}"))
        .to_string()
}

/// A reply calling `tool` with arguments built from the id created earlier in this run.
fn with_created_id(tool: &'static str, call: &'static str, args: fn(&str) -> Value) -> Reply {
    Reply::computed(move |request| {
        let body = request.json();
        let messages = body["messages"].as_array().unwrap();
        let created = messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default())
            .find(|c| c.contains("created artifact "))
            .unwrap();
        Reply::tool_call(call, tool, &args(&created_id(created)).to_string())
    })
}

fn audit_rows(e: &Env) -> Vec<Value> {
    let text = ok(run(e, &["audit", "--json"]));
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(rows)) => rows,
        _ => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    }
}

fn artifact_dir(e: &Env, id: &str) -> PathBuf {
    e.home.join(".gg/artifacts").join(id)
}

/// Creates an artifact through the model's tool (under --yolo) and returns its id.
fn create_artifact(e: &Env, server: &ScriptedServer, content: &str) -> String {
    server.push(Reply::tool_call(
        "c1",
        "artifact_create",
        &json!({"title": "Release plan", "type": "markdown", "content": content}).to_string(),
    ));
    server.push(Reply::text(&["created"]));
    let before = server.request_bodies().len();
    ok(run(e, &["--yolo", "-p", "write the plan"]));
    let bodies = server.request_bodies();
    created_id(&last_tool_result(&bodies[before + 1]))
}

/// Edits an artifact through the model's tool (under --yolo); returns the tool result.
#[cfg(feature = "test-hooks")] // only the crash-point tests edit artifacts
fn edit_artifact(e: &Env, server: &ScriptedServer, id: &str, content: &str) -> String {
    server.push(Reply::tool_call(
        "c1",
        "artifact_edit",
        &json!({"artifact_id": id, "content": content}).to_string(),
    ));
    server.push(Reply::text(&["edited"]));
    let before = server.request_bodies().len();
    ok(run(e, &["--yolo", "-p", "edit the plan"]));
    last_tool_result(&server.request_bodies()[before + 1])
}

#[test]
fn the_model_creates_edits_and_reads_versions_and_the_person_diffs_them() {
    let server = ScriptedServer::with_replies([
        Reply::tool_call(
            "c1",
            "artifact_create",
            r##"{"title": "Release plan", "type": "markdown", "content": "# Plan\nstep one\n"}"##,
        ),
        with_created_id(
            "artifact_edit",
            "c2",
            |id| json!({"artifact_id": id, "content": "# Plan\nstep one\nstep two\n"}),
        ),
        with_created_id(
            "artifact_read",
            "c3",
            |id| json!({"artifact_id": id, "version": 1}),
        ),
        Reply::tool_call("c4", "artifact_read", "{}"),
        Reply::text(&["done"]),
    ]);
    let e = env(&server);
    ok(run(&e, &["--yolo", "-p", "write the plan"]));
    let bodies = server.request_bodies();
    // All three tools were offered (and no library tools: the library is empty).
    let offered: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for tool in ["artifact_create", "artifact_edit", "artifact_read"] {
        assert!(offered.contains(&tool), "{offered:?}");
    }
    assert!(!offered.contains(&"library_read"), "{offered:?}");
    let id = created_id(&last_tool_result(&bodies[1]));
    assert!(
        last_tool_result(&bodies[2]).contains("is now v2"),
        "{}",
        last_tool_result(&bodies[2])
    );
    // v1 read back as untrusted content, exactly as it was.
    let read = last_tool_result(&bodies[3]);
    assert!(read.contains("v1 of 2"), "{read}");
    assert!(
        read.contains("<untrusted-content source=\"artifact:"),
        "{read}"
    );
    assert!(
        read.contains("# Plan\nstep one\n</untrusted-content"),
        "{read}"
    );
    let listed = last_tool_result(&bodies[4]);
    assert!(
        listed.contains(&format!("{id}  v2  markdown  Release plan")),
        "{listed}"
    );

    // The store: two immutable version files and the metadata.
    let dir = artifact_dir(&e, &id);
    assert_eq!(
        std::fs::read_to_string(dir.join("v1.md")).unwrap(),
        "# Plan\nstep one\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("v2.md")).unwrap(),
        "# Plan\nstep one\nstep two\n"
    );
    let meta: Value =
        serde_json::from_slice(&std::fs::read(dir.join("artifact.json")).unwrap()).unwrap();
    assert_eq!(meta["version"], 2);
    assert_eq!(meta["type"], "markdown");
    assert_eq!(meta["published_version"], Value::Null);

    // The person's side.
    let list = ok(run(&e, &["artifact", "list"]));
    assert!(list.contains(&id) && list.contains("v2") && list.contains("Release plan"));
    let prefix = &id[..6];
    assert_eq!(
        ok(run(&e, &["artifact", "show", prefix, "--version", "1"])),
        "# Plan\nstep one\n"
    );
    assert_eq!(
        ok(run(&e, &["artifact", "show", &id])),
        "# Plan\nstep one\nstep two\n"
    );
    let diff = ok(run(&e, &["artifact", "diff", &id]));
    assert!(diff.contains(&format!("--- {id}/v1.md")), "{diff}");
    assert!(diff.contains(&format!("+++ {id}/v2.md")), "{diff}");
    assert!(diff.contains("\n+step two"), "{diff}");
    assert!(!diff.contains('\x1b'), "not a terminal: no colour\n{diff}");
    let coloured = ok(run(
        &e,
        &["--color", "always", "artifact", "diff", &id, "1", "2"],
    ));
    assert!(
        coloured.contains("\x1b[32m+step two\x1b[0m"),
        "{coloured:?}"
    );
    let missing = run(&e, &["artifact", "show", &id, "--version", "3"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no version 3"));

    // Every call is in the audit trail with its class.
    let rows = audit_rows(&e);
    let class_of = |tool: &str| -> Vec<String> {
        rows.iter()
            .filter(|r| r["tool"] == tool)
            .map(|r| {
                assert_eq!(r["audit"]["decision"]["action"], "allow", "{r}");
                r["audit"]["classification"]["verdict"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(class_of("artifact_create"), ["normal"]);
    assert_eq!(class_of("artifact_edit"), ["normal"]);
    assert_eq!(class_of("artifact_read"), ["read-only", "read-only"]);

    // Removal takes every version.
    ok(run(&e, &["artifact", "remove", &id]));
    assert!(!dir.exists());
    assert!(ok(run(&e, &["artifact", "list"])).contains("no artifacts"));
}

#[test]
fn without_a_person_to_ask_artifact_writes_are_denied() {
    let server = ScriptedServer::with_replies([
        Reply::tool_call(
            "c1",
            "artifact_create",
            r#"{"title": "t", "type": "markdown", "content": "x"}"#,
        ),
        Reply::text(&["ok"]),
    ]);
    let e = env(&server);
    ok(run(&e, &["-p", "write it"]));
    let result = last_tool_result(&server.request_bodies()[1]);
    assert!(result.contains("denied"), "{result}");
    assert!(ok(run(&e, &["artifact", "list"])).contains("no artifacts"));
    let rows = audit_rows(&e);
    let row = rows
        .iter()
        .find(|r| r["tool"] == "artifact_create")
        .unwrap();
    assert_eq!(row["audit"]["classification"]["verdict"], "normal", "{row}");
    assert_eq!(row["audit"]["decision"]["action"], "deny", "{row}");
}

#[test]
fn bad_arguments_are_refused_before_anything_is_written() {
    // (The 1 MiB content limit is a unit test: a larger tool call would not fit the model's
    // context on the next turn.)
    let long_title = "t".repeat(201);
    let server = ScriptedServer::with_replies([
        Reply::tool_call(
            "c1",
            "artifact_create",
            r#"{"title": "t", "type": "pdf", "content": "x"}"#,
        ),
        Reply::tool_call(
            "c2",
            "artifact_create",
            &json!({"title": long_title, "type": "html", "content": "x"}).to_string(),
        ),
        Reply::tool_call(
            "c3",
            "artifact_edit",
            r#"{"artifact_id": "../../../etc", "content": "x"}"#,
        ),
        Reply::text(&["ok"]),
    ]);
    let e = env(&server);
    ok(run(&e, &["--yolo", "-p", "go"]));
    let bodies = server.request_bodies();
    assert!(last_tool_result(&bodies[1]).contains("\"markdown\" or \"html\""));
    assert!(last_tool_result(&bodies[2]).contains("longer than 200 characters"));
    let escape = last_tool_result(&bodies[3]);
    assert!(escape.contains("no artifact \"../../../etc\""), "{escape}");
    assert!(ok(run(&e, &["artifact", "list"])).contains("no artifacts"));
}

#[test]
fn the_approval_shows_the_edit_as_a_before_after_diff() {
    let server = ScriptedServer::start();
    let e = env(&server);
    let id = create_artifact(&e, &server, "alpha\nbeta\n");
    // Asked on a terminal: the prompt carries the diff from v1 to v2.
    server.push(Reply::tool_call(
        "c1",
        "artifact_edit",
        &json!({"artifact_id": id, "content": "alpha\ngamma\n"}).to_string(),
    ));
    server.push(Reply::text(&["edited"]));
    let screen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = std::sync::Arc::clone(&screen);
    // gg_on_pty configures the model through OPENAI_* (no config file), so drop ours.
    std::fs::remove_file(e.home.join(".gg/config.json")).unwrap();
    let (mut master, mut child) = support::gg_on_pty(
        &e.home,
        &e.repo,
        &server,
        &["-p", "edit it"],
        &[],
        move |bytes| {
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(bytes));
        },
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while !screen.lock().unwrap().contains("Approve? [y/N/a]") {
        assert!(
            Instant::now() < deadline,
            "no prompt:\n{}",
            screen.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::io::Write::write_all(&mut master, b"y\n").unwrap();
    let status = wait_child(&mut child, Duration::from_secs(60));
    assert_eq!(status, Some(0), "{}", screen.lock().unwrap());
    let shown = screen.lock().unwrap().clone();
    assert!(
        shown.contains(&format!("artifact_edit {id} \"Release plan\" v1 → v2")),
        "{shown}"
    );
    assert!(shown.contains(&format!("--- {id}/v1.md")), "{shown}");
    assert!(shown.contains(&format!("+++ {id}/v2.md")), "{shown}");
    assert!(shown.contains("-beta"), "{shown}");
    assert!(shown.contains("+gamma"), "{shown}");
    assert_eq!(
        std::fs::read_to_string(artifact_dir(&e, &id).join("v2.md")).unwrap(),
        "alpha\ngamma\n"
    );
}

fn wait_child(child: &mut Child, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("gg did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for a pause point's `.reached` marker (the process is then stopped there).
#[cfg(feature = "test-hooks")]
fn wait_reached(dir: &Path, point: &str, child: &mut Child) {
    let marker = dir.join(format!("{point}.reached"));
    let deadline = Instant::now() + Duration::from_secs(120);
    while !marker.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("exited ({status}) before reaching {point}");
        }
        assert!(Instant::now() < deadline, "never reached {point}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(feature = "test-hooks")]
fn paused(e: &Env, dir: &Path, point: &str, args: &[&str]) -> Child {
    gg(e)
        .args(args)
        .env("GG_TEST_PAUSE_AT", point)
        .env("GG_TEST_PAUSE_DIR", dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[cfg(feature = "test-hooks")]
fn library_index(e: &Env) -> Vec<Value> {
    match std::fs::read(e.home.join(".gg/library/index.json")) {
        Ok(bytes) => serde_json::from_slice::<Value>(&bytes).unwrap()["entries"]
            .as_array()
            .unwrap()
            .clone(),
        Err(_) => Vec::new(),
    }
}

#[cfg(feature = "test-hooks")]
fn published_version(e: &Env, id: &str) -> Value {
    let meta: Value =
        serde_json::from_slice(&std::fs::read(artifact_dir(e, id).join("artifact.json")).unwrap())
            .unwrap();
    meta["published_version"].clone()
}

/// The reference's rule: publish copies the latest bytes into the library first, then marks the
/// artifact; if its version changed in between, the library copy is taken back and the publish
/// fails. Publisher A is stopped between the copy and the mark while the model edits the
/// artifact; with a second publisher B publishing the new version meanwhile, A's failure must
/// not take back B's copy.
#[cfg(feature = "test-hooks")]
#[test]
fn a_publish_that_races_an_edit_is_taken_back() {
    let server = ScriptedServer::start();
    let e = env(&server);
    let id = create_artifact(&e, &server, "version one\n");
    let pauses = support::fixture_dir();

    // A alone: copy of v1 in the library, then the edit, then A goes on and loses.
    let mut a = paused(
        &e,
        pauses.path(),
        "publish.after-copy",
        &["artifact", "publish", &id],
    );
    wait_reached(pauses.path(), "publish.after-copy", &mut a);
    let copied = library_index(&e);
    assert_eq!(copied.len(), 1, "{copied:?}");
    assert_eq!(copied[0]["source"], format!("artifact:{id}"));
    assert_eq!(copied[0]["name"], "release-plan.md");
    assert!(edit_artifact(&e, &server, &id, "version two\n").contains("is now v2"));
    std::fs::write(pauses.path().join("publish.after-copy.go"), "").unwrap();
    let out = a.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("changed from v1 to v2"), "{err}");
    assert!(library_index(&e).is_empty(), "the copy was taken back");
    assert!(!e.home.join(".gg/library/release-plan.md").exists());
    assert_eq!(published_version(&e, &id), Value::Null);

    // A again, stopped after copying v2; the model edits to v3 and B publishes v3 meanwhile.
    let pauses = support::fixture_dir();
    let mut a = paused(
        &e,
        pauses.path(),
        "publish.after-copy",
        &["artifact", "publish", &id],
    );
    wait_reached(pauses.path(), "publish.after-copy", &mut a);
    assert!(edit_artifact(&e, &server, &id, "version three\n").contains("is now v3"));
    let b = ok(run(&e, &["artifact", "publish", &id]));
    assert!(b.contains(&format!("published artifact {id} v3")), "{b}");
    std::fs::write(pauses.path().join("publish.after-copy.go"), "").unwrap();
    let out = a.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("changed from v2 to v3"));
    // B's copy and mark stand.
    let entries = library_index(&e);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(
        std::fs::read_to_string(e.home.join(".gg/library/release-plan.md")).unwrap(),
        "version three\n"
    );
    assert_eq!(published_version(&e, &id), json!(3));
    let path = ok(run(&e, &["library", "path", "RELEASE-PLAN.md"]));
    assert_eq!(
        path.trim(),
        e.home.join(".gg/library/release-plan.md").to_str().unwrap()
    );
}

/// Kills gg with SIGKILL while it is stopped between writing a temporary file and renaming it
/// into place, then checks the store: the old state intact, no temporary file visible, the lock
/// released (the next write goes through at once), and the next write correct.
#[cfg(feature = "test-hooks")]
#[test]
fn the_artifact_store_survives_kill_9_mid_write() {
    let server = ScriptedServer::start();
    let e = env(&server);
    let id = create_artifact(&e, &server, "one\n");
    for (n, point) in [
        "artifact-version.before-rename",
        "artifact-meta.before-rename",
    ]
    .into_iter()
    .enumerate()
    {
        let version = n as u32 + 1;
        server.push(Reply::tool_call(
            "c1",
            "artifact_edit",
            &json!({"artifact_id": id, "content": "torn\n"}).to_string(),
        ));
        let pauses = support::fixture_dir();
        let mut child = paused(&e, pauses.path(), point, &["--yolo", "-p", "edit"]);
        wait_reached(pauses.path(), point, &mut child);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // The tool call never finished, so the scripted server may hold no pending reply.
        let dir = artifact_dir(&e, &id);
        let list = ok(run(&e, &["artifact", "list"]));
        assert!(list.contains(&format!("v{version} ")), "{point}: {list}");
        assert_ne!(
            ok(run(&e, &["artifact", "show", &id])),
            "torn\n",
            "{point}: the killed edit is not visible"
        );
        // The next edit goes through (the lock died with its holder) and cleans up.
        let started = Instant::now();
        let result = edit_artifact(&e, &server, &id, &format!("after kill {n}\n"));
        assert!(
            result.contains(&format!("is now v{}", version + 1)),
            "{point}: {result}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(25),
            "waited for a dead lock"
        );
        assert_eq!(
            ok(run(&e, &["artifact", "show", &id])),
            format!("after kill {n}\n")
        );
        let leftovers: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with('.'))
            .collect();
        assert!(leftovers.is_empty(), "{point}: {leftovers:?}");
    }
}

/// The same for the library: `gg library add` killed before the file's rename and before the
/// index's rename.
#[cfg(feature = "test-hooks")]
#[test]
fn the_library_survives_kill_9_mid_write() {
    let server = ScriptedServer::start();
    let e = env(&server);
    let doc = e.repo.join("doc.txt");
    std::fs::write(&doc, "library text\n").unwrap();
    for point in ["library-file.before-rename", "library-index.before-rename"] {
        let pauses = support::fixture_dir();
        let mut child = paused(
            &e,
            pauses.path(),
            point,
            &["library", "add", doc.to_str().unwrap()],
        );
        wait_reached(pauses.path(), point, &mut child);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(library_index(&e).is_empty(), "{point}");
        assert!(ok(run(&e, &["library", "list"])).contains("the library is empty"));
        let started = Instant::now();
        ok(run(&e, &["library", "add", doc.to_str().unwrap()]));
        assert!(
            started.elapsed() < Duration::from_secs(25),
            "waited for a dead lock"
        );
        let entries = library_index(&e);
        assert_eq!(entries.len(), 1, "{point}: {entries:?}");
        assert_eq!(
            std::fs::read_to_string(e.home.join(".gg/library/doc.txt")).unwrap(),
            "library text\n"
        );
        let names: Vec<String> = std::fs::read_dir(e.home.join(".gg/library"))
            .unwrap()
            .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !names.iter().any(|n| n.starts_with('.')),
            "{point}: {names:?}"
        );
        ok(run(&e, &["library", "remove", "doc.txt"]));
    }
}
