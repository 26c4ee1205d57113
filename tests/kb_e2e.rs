//! Knowledge bases end to end with the real `gg` and `ggd`: `gg kb add` then a one-shot prompt
//! whose scripted model calls `kb_search` and cites the passage; crash safety of indexing (an
//! injected abort mid-add leaves the previous index usable); hybrid retrieval against the
//! scripted `/v1/embeddings`; the `kb.*` daemon methods.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::daemon_common;
use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use support::{Reply, ScriptedServer};

struct Env {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    docs: PathBuf,
    sessions: PathBuf,
}

fn env() -> Env {
    // Outside /tmp: /tmp is a scratch directory, where the classifier allows writes.
    let tmp = support::fixture_dir();
    let home = tmp.path().join("home");
    let repo = home.join("repo");
    let docs = home.join("notes");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&docs).unwrap();
    Env {
        home: home.canonicalize().unwrap(),
        repo: repo.canonicalize().unwrap(),
        docs: docs.canonicalize().unwrap(),
        sessions: tmp.path().join("sessions"),
        _tmp: tmp,
    }
}

fn gg(e: &Env, server: Option<&ScriptedServer>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gg"));
    cmd.current_dir(&e.repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &e.home)
        .env("OPENAI_API_KEY", "sk-test")
        .env("GG_SESSION_DIR", &e.sessions)
        .stdin(Stdio::null());
    if let Some(server) = server {
        cmd.env("OPENAI_BASE_URL", server.base_url());
    }
    cmd
}

fn run(mut cmd: Command, args: &[&str]) -> Output {
    cmd.args(args).output().unwrap()
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

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const NOTES: &str = "# Ops notes\n\nGeneral remarks about the servers.\n\n## Backups\n\nSnapshots run nightly at 02:00 with restic,\nand are kept for 35 days.\n\n## Deploys\n\nDeploys go out on Tuesdays.\n";

/// The tool message of a chat request: what the model saw as `kb_search`'s result.
fn tool_result(body: &Value) -> Option<String> {
    body["messages"]
        .as_array()?
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str().map(str::to_string))
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn according_to_my_notes_the_model_searches_the_kb_and_cites_file_and_lines() {
    let e = env();
    let notes = e.docs.join("ops.md");
    write(&notes, NOTES);
    let added = ok(run(gg(&e, None), &["kb", "add", e.docs.to_str().unwrap()]));
    assert!(added.contains("1 indexed"), "{added}");

    let location = format!("{}:5-8", notes.display());
    let server = ScriptedServer::with_replies([
        Reply::tool_call(
            "k1",
            "kb_search",
            &json!({"query": "when do backup snapshots run"}).to_string(),
        ),
        // The model answers from what the tool returned: it cites the first location it read.
        Reply::computed(|request| {
            let body = request.json();
            let result = tool_result(&body).unwrap_or_default();
            let cited = result
                .lines()
                .find_map(|l| l.strip_prefix("[1] "))
                .unwrap_or("nothing")
                .to_string();
            Reply::text(&[&format!(
                "According to your notes ({cited}), snapshots run nightly at 02:00."
            )])
        }),
    ]);
    // Default approval mode and no terminal: a tool that asked would be denied, so this run also
    // proves kb_search never asks.
    let out = ok(run(
        gg(&e, Some(&server)),
        &["-p", "according to my notes, when do the backups run?"],
    ));
    assert!(
        out.contains(&format!("According to your notes ({location})")),
        "{out}"
    );

    let bodies: Vec<Value> = server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.json())
        .collect();
    assert_eq!(bodies.len(), 2);
    assert!(tool_names(&bodies[0]).contains(&"kb_search".to_string()));
    let result = tool_result(&bodies[1]).unwrap();
    assert!(result.contains(&format!("[1] {location}")), "{result}");
    assert!(
        result.contains(&format!(
            "<untrusted-content source=\"kb:default {location}\""
        )),
        "the passage is not wrapped as untrusted content: {result}"
    );
    assert!(result.contains("heading: Ops notes > Backups"), "{result}");
    assert!(
        result.contains("Snapshots run nightly at 02:00 with restic"),
        "{result}"
    );

    // The audit trail records the call as read-only and allowed.
    let audit = ok(run(gg(&e, None), &["audit", "--json"]));
    let rows: Vec<Value> = match serde_json::from_str::<Value>(&audit) {
        Ok(Value::Array(rows)) => rows,
        _ => audit
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
    };
    let row = rows.iter().find(|r| r["tool"] == "kb_search").unwrap();
    assert_eq!(
        row["audit"]["classification"]["verdict"], "read-only",
        "{row}"
    );
    assert_eq!(row["audit"]["decision"]["action"], "allow", "{row}");
}

#[test]
fn kb_search_is_offered_only_when_a_knowledge_base_exists_and_not_when_turned_off() {
    let e = env();
    let server = ScriptedServer::with_replies([Reply::text(&["hi"])]);
    ok(run(gg(&e, Some(&server)), &["-p", "hello"]));
    assert!(!tool_names(&server.requests()[0].json()).contains(&"kb_search".to_string()));

    write(&e.docs.join("a.md"), "# A\nalpha\n");
    ok(run(
        gg(&e, None),
        &["kb", "add", e.docs.to_str().unwrap(), "--name", "notes"],
    ));
    write(
        &e.home.join(".gg/config.json"),
        &json!({"providers": {"openai": {"baseURL": server.base_url(), "apiKey": "sk-test", "models": ["gpt-4.1"]}},
                "kb": {"tool": false}})
        .to_string(),
    );
    server.push(Reply::text(&["hi"]));
    ok(run(gg(&e, Some(&server)), &["-p", "hello"]));
    assert!(!tool_names(&server.requests()[1].json()).contains(&"kb_search".to_string()));
}

#[test]
fn a_crash_mid_indexing_leaves_the_previous_index_usable() {
    let e = env();
    write(
        &e.docs.join("plan.md"),
        "# Plan\nThe launch code word is aardvark.\n",
    );
    ok(run(gg(&e, None), &["kb", "add", e.docs.to_str().unwrap()]));

    write(
        &e.docs.join("plan.md"),
        "# Plan\nThe launch code word is zebra.\n",
    );
    write(&e.docs.join("more.md"), "# More\nquokka facts\n");
    for point in ["mid-add", "before-commit"] {
        let mut cmd = gg(&e, None);
        cmd.env("GG_KB_TEST_CRASH", point);
        let crashed = run(cmd, &["kb", "add"]);
        assert!(
            !crashed.status.success(),
            "{point}: the injected crash did not happen"
        );
        // The previous commit is what readers see: old text found, new text not.
        let found = ok(run(gg(&e, None), &["kb", "search", "aardvark", "--json"]));
        let found: Value = serde_json::from_str(&found).unwrap();
        assert_eq!(
            found["hits"].as_array().unwrap().len(),
            1,
            "{point}: {found}"
        );
        for word in ["zebra", "quokka"] {
            let found: Value =
                serde_json::from_str(&ok(run(gg(&e, None), &["kb", "search", word, "--json"])))
                    .unwrap();
            assert!(
                found["hits"].as_array().unwrap().is_empty(),
                "{point}: {found}"
            );
        }
    }
    // The next add completes (the writer lock died with the process) and sees both changes.
    let report = ok(run(gg(&e, None), &["kb", "add"]));
    assert!(report.contains("2 indexed"), "{report}");
    for word in ["zebra", "quokka"] {
        let found: Value =
            serde_json::from_str(&ok(run(gg(&e, None), &["kb", "search", word, "--json"])))
                .unwrap();
        assert_eq!(
            found["hits"].as_array().unwrap().len(),
            1,
            "{word}: {found}"
        );
    }
}

#[test]
fn a_crash_during_a_rebuild_keeps_the_old_index_and_the_next_add_cleans_up() {
    let e = env();
    write(
        &e.docs.join("garage.md"),
        "# Garage\nThe car needs new tyres before winter.\n",
    );
    ok(run(gg(&e, None), &["kb", "add", e.docs.to_str().unwrap()]));
    let server = ScriptedServer::start();
    let with_embeddings = |cmd: &mut Command| {
        cmd.env("GG_EMBED_BASE_URL", server.base_url())
            .env("GG_EMBED_MODEL", "fake-embed");
    };
    // Turning embeddings on rebuilds into a fresh directory; crash just before the swap.
    let mut cmd = gg(&e, None);
    with_embeddings(&mut cmd);
    cmd.env("GG_KB_TEST_CRASH", "before-swap");
    assert!(!run(cmd, &["kb", "add"]).status.success());
    let stats: Value =
        serde_json::from_str(&ok(run(gg(&e, None), &["kb", "stats", "--json"]))).unwrap();
    assert_eq!(stats["embedModel"], Value::Null, "{stats}");
    assert_eq!(stats["chunks"], 1);
    let kb_dir = e.home.join(".gg/kb/default");
    let index_dirs = |dir: &Path| {
        std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|d| d.file_name().to_string_lossy().starts_with("idx-"))
            .count()
    };
    assert_eq!(
        index_dirs(&kb_dir),
        2,
        "the half-built index should be left for cleanup"
    );

    // Hybrid now: "automobile" is not in the text, so only the dense side can find the garage.
    let mut cmd = gg(&e, None);
    with_embeddings(&mut cmd);
    let report = ok(run(cmd, &["kb", "add"]));
    assert!(
        report.contains("rebuilt") && report.contains("embeddings: fake-embed"),
        "{report}"
    );
    assert_eq!(index_dirs(&kb_dir), 1);
    let mut cmd = gg(&e, None);
    with_embeddings(&mut cmd);
    let found: Value =
        serde_json::from_str(&ok(run(cmd, &["kb", "search", "automobile", "--json"]))).unwrap();
    assert_eq!(found["mode"], "hybrid", "{found}");
    assert!(
        found["hits"][0]["file"]
            .as_str()
            .unwrap()
            .ends_with("garage.md"),
        "{found}"
    );
    assert_eq!(found["hits"][0]["denseRank"], 1);
    let embeds: Vec<Value> = server
        .requests()
        .iter()
        .filter(|r| r.path == "/v1/embeddings")
        .map(|r| r.json())
        .collect();
    assert!(embeds.iter().all(|b| b["model"] == "fake-embed"));
    assert!(
        embeds.iter().any(|b| b["input"] == json!(["automobile"])),
        "{embeds:?}"
    );
    // Without the endpoint configured, the same index answers with BM25 alone.
    let found: Value = serde_json::from_str(&ok(run(
        gg(&e, None),
        &["kb", "search", "automobile", "--json"],
    )))
    .unwrap();
    assert_eq!(found["mode"], "bm25");
    assert!(found["hits"].as_array().unwrap().is_empty());
}

#[test]
fn kb_commands_report_bad_input_clearly() {
    let e = env();
    let out = run(gg(&e, None), &["kb", "search", "x", "--name", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no knowledge base named \"nope\""),
        "{out:?}"
    );
    let out = run(gg(&e, None), &["kb", "add", "/no/such/dir"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("/no/such/dir"),
        "{out:?}"
    );
    let out = run(
        gg(&e, None),
        &["kb", "add", e.docs.to_str().unwrap(), "--name", "../x"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad knowledge base name"));
    assert!(!e.home.join(".gg/x").exists());
    let out = run(gg(&e, None), &["kb", "frobnicate"]);
    assert_eq!(out.status.code(), Some(2));

    write(&e.docs.join("a.md"), "# A\nalpha beta\n");
    ok(run(
        gg(&e, None),
        &["kb", "add", e.docs.to_str().unwrap(), "--name", "n1"],
    ));
    let listed = ok(run(gg(&e, None), &["kb", "list"]));
    assert!(listed.contains("n1: 1 files, 1 passages, bm25"), "{listed}");
    ok(run(gg(&e, None), &["kb", "rm", "n1"]));
    assert!(!e.home.join(".gg/kb/n1").exists());
    assert!(
        e.docs.join("a.md").exists(),
        "rm must not touch the documents"
    );
}

#[test]
fn ggd_kb_methods_list_add_search_stats_and_remove() {
    let d = daemon_common::env();
    let docs = d.home.join("notes");
    write(&docs.join("ops.md"), NOTES);
    let server = ScriptedServer::start();
    let client = daemon_common::StdioClient::spawn(daemon_common::ggd(&d, &server.base_url(), &[]));
    let info = client.ok("system.info", json!({}));
    assert!(
        info["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("kb"))
    );
    assert_eq!(client.ok("kb.list", json!({}))["knowledgeBases"], json!([]));

    let added = client.ok("kb.add", json!({"paths": ["../notes"], "kb": "ops"}));
    assert_eq!(added["indexed"], 1, "{added}");
    let listed = client.ok("kb.list", json!({}));
    assert_eq!(listed["knowledgeBases"][0]["name"], "ops");
    let found = client.ok(
        "kb.search",
        json!({"query": "restic snapshots", "kb": "ops", "topK": 2}),
    );
    assert_eq!(found["mode"], "bm25");
    assert_eq!(found["hits"][0]["heading"], json!(["Ops notes", "Backups"]));
    assert_eq!(found["hits"][0]["startLine"], 5);
    let stats = client.ok("kb.stats", json!({"kb": "ops"}));
    assert_eq!(stats["files"], 1);

    let missing = client.call("kb.search", json!({"query": "x", "kb": "nope"}));
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    let bad = client.call("kb.search", json!({"query": "x", "bogus": 1}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    client.ok("kb.remove", json!({"kb": "ops"}));
    assert_eq!(client.ok("kb.list", json!({}))["knowledgeBases"], json!([]));
}
