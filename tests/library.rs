//! The library through the real `gg` binary: `gg library add|list|path|remove` with its limits,
//! and a prompt-injected model (the scripted server) trying to read outside the library with
//! `library_read` and `library_search`: `..`, an absolute path, a symlink planted in the library
//! (as a model with a shell could), a symlinked directory. The secret must reach neither the
//! model nor the transcript; the person's own files come back wrapped as untrusted content.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::path::PathBuf;
use std::process::Output;

use serde_json::{Value, json};
use support::{Reply, ScriptedServer};

use support::GgFixture as Env;

fn env(server: &ScriptedServer) -> Env {
    Env::new(server, json!({}), "home/repo")
}

fn run(e: &Env, args: &[&str]) -> Output {
    e.gg().args(args).output().unwrap()
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn failed(out: Output) -> String {
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn tool_results(server: &ScriptedServer) -> Vec<(String, String)> {
    let bodies = server.request_bodies();
    let last = bodies.last().unwrap();
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_person_manages_the_library_within_its_limits() {
    let server = ScriptedServer::start();
    let e = env(&server);
    let notes = e.repo.join("Notes.md");
    std::fs::write(&notes, "hello\n").unwrap();
    let added = ok(run(&e, &["library", "add", notes.to_str().unwrap()]));
    assert!(added.contains("Notes.md"), "{added}");
    // Names collide case-insensitively; the reserved names are refused.
    let again = failed(run(
        &e,
        &[
            "library",
            "add",
            notes.to_str().unwrap(),
            "--name",
            "notes.MD",
        ],
    ));
    assert!(again.contains("already has \"Notes.md\""), "{again}");
    let reserved = failed(run(
        &e,
        &[
            "library",
            "add",
            notes.to_str().unwrap(),
            "--name",
            "Index.json",
        ],
    ));
    assert!(reserved.contains("reserved"), "{reserved}");
    let hidden = failed(run(
        &e,
        &["library", "add", notes.to_str().unwrap(), "--name", "../x"],
    ));
    assert!(
        hidden.contains("path separator") || hidden.contains("starts with '.'"),
        "{hidden}"
    );
    // 50 MiB is the limit, checked on the bytes copied; a failed add leaves nothing behind.
    let big = e.repo.join("big.bin");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(50 * 1024 * 1024 + 1).unwrap();
    let too_big = failed(run(&e, &["library", "add", big.to_str().unwrap()]));
    assert!(
        too_big.contains("larger than the limit of 50 MiB"),
        "{too_big}"
    );
    let lib = e.home.join(".gg/library");
    let mut names: Vec<String> = std::fs::read_dir(&lib)
        .unwrap()
        .map(|d| d.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["Notes.md", "index.json", "library.lock"]);
    // A directory is not a file.
    failed(run(&e, &["library", "add", e.repo.to_str().unwrap()]));

    let list = ok(run(&e, &["library", "list"]));
    assert!(list.contains("Notes.md") && list.contains("6 B"), "{list}");
    let json_line = ok(run(&e, &["library", "list", "--json"]));
    let entry: Value = serde_json::from_str(json_line.trim()).unwrap();
    assert_eq!(entry["name"], "Notes.md");
    assert_eq!(entry["source"], notes.to_str().unwrap());
    let id = entry["id"].as_str().unwrap().to_string();
    let path = ok(run(&e, &["library", "path", &id]));
    assert_eq!(path.trim(), lib.join("Notes.md").to_str().unwrap());
    // The library holds a copy: the original can change or go.
    std::fs::write(&notes, "changed\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(lib.join("Notes.md")).unwrap(),
        "hello\n"
    );
    ok(run(&e, &["library", "remove", "notes.md"]));
    assert!(!lib.join("Notes.md").exists());
    assert!(failed(run(&e, &["library", "path", "Notes.md"])).contains("no library file"));
}

#[test]
fn an_injected_model_cannot_read_outside_the_library() {
    let server = ScriptedServer::start();
    let e = env(&server);
    let secret = "TOPSECRET-4242";
    std::fs::write(e.home.join("secret.txt"), format!("{secret}\n")).unwrap();
    let notes = e.repo.join("notes.md");
    std::fs::write(&notes, "# Ops\nthe deploy key rotates monthly\n").unwrap();
    ok(run(&e, &["library", "add", notes.to_str().unwrap()]));
    let lib = e.home.join(".gg/library");
    // What a prompt-injected model with a shell could plant: a symlinked file listed in the
    // index, and a symlinked directory.
    std::os::unix::fs::symlink(e.home.join("secret.txt"), lib.join("evil.md")).unwrap();
    std::os::unix::fs::symlink(&e.home, lib.join("docs")).unwrap();
    let index_path = lib.join("index.json");
    let mut index: Value = serde_json::from_slice(&std::fs::read(&index_path).unwrap()).unwrap();
    index["entries"].as_array_mut().unwrap().push(json!({
        "id": "000000000bad", "name": "evil.md", "source": "planted", "size": 15,
        "added_at": "2026-01-01T00:00:00Z"
    }));
    std::fs::write(&index_path, index.to_string()).unwrap();

    let absolute = e.home.join("secret.txt");
    let calls = [
        ("c1", "library_read", json!({"path": "../../secret.txt"})),
        (
            "c2",
            "library_read",
            json!({"path": absolute.to_str().unwrap()}),
        ),
        ("c3", "library_read", json!({"path": "evil.md"})),
        ("c4", "library_read", json!({"path": "000000000bad"})),
        ("c5", "library_read", json!({"path": "docs/secret.txt"})),
        ("c6", "library_search", json!({"query": "TOPSECRET"})),
        ("c7", "library_read", json!({"path": "notes.md"})),
        ("c8", "library_search", json!({"query": "deploy key"})),
    ];
    for (id, tool, args) in &calls {
        server.push(Reply::tool_call(id, tool, &args.to_string()));
    }
    server.push(Reply::text(&["done"]));
    // Default approval mode, no terminal: read-only calls run without asking.
    ok(run(&e, &["-p", "read my library"]));

    let offered: Vec<String> = server.request_bodies()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(offered.contains(&"library_read".to_string()), "{offered:?}");
    assert!(
        offered.contains(&"library_search".to_string()),
        "{offered:?}"
    );

    let results = tool_results(&server);
    assert_eq!(results.len(), calls.len());
    for (id, text) in &results[..5] {
        assert!(text.contains("refused"), "{id}: {text}");
    }
    assert!(
        results[0].1.contains("outside the library"),
        "{}",
        results[0].1
    );
    assert!(results[2].1.contains("symbolic link"), "{}", results[2].1);
    assert!(results[5].1.contains("no matches"), "{}", results[5].1);
    assert!(results[5].1.contains("skipped evil.md"), "{}", results[5].1);
    let read = &results[6].1;
    assert!(
        read.contains("<untrusted-content source=\"library:notes.md\""),
        "{read}"
    );
    assert!(read.contains("the deploy key rotates monthly"), "{read}");
    let found = &results[7].1;
    assert!(found.contains("<untrusted-content"), "{found}");
    // Ranked by the knowledge-base engine: a passage with its line range and heading, read
    // back from the library file.
    assert!(
        found.contains("ranked by the knowledge-base engine"),
        "{found}"
    );
    assert!(
        found.contains("notes.md:1-2 (Ops)\n# Ops\nthe deploy key rotates monthly"),
        "{found}"
    );

    // The secret reached neither the model nor the transcript.
    for body in server.request_bodies() {
        assert!(!body.to_string().contains(secret));
    }
    for entry in walk(&e.sessions) {
        assert!(
            !std::fs::read_to_string(entry)
                .unwrap_or_default()
                .contains(secret)
        );
    }

    // Every call is in the audit trail as read-only, allowed without asking.
    let audit = ok(run(&e, &["audit", "--json"]));
    let rows: Vec<Value> = match serde_json::from_str::<Value>(&audit) {
        Ok(Value::Array(rows)) => rows,
        _ => audit
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    };
    let library_rows: Vec<&Value> = rows
        .iter()
        .filter(|r| {
            r["tool"]
                .as_str()
                .unwrap_or_default()
                .starts_with("library_")
        })
        .collect();
    assert_eq!(library_rows.len(), calls.len());
    for row in library_rows {
        assert_eq!(
            row["audit"]["classification"]["verdict"], "read-only",
            "{row}"
        );
        assert_eq!(row["audit"]["decision"]["action"], "allow", "{row}");
    }
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
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
