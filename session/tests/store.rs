//! Session store behaviour on real files: Go-format compatibility, repair, conflicts, leases,
//! tree actions, audit trail, listing.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use session::paths::{latest_for_cwd, list_sessions, project_dir, resolve_target};
use session::{
    Audit, CallStatus, Classification, Decision, EntryKind, INTERRUPTED_TOOL_RESULT, Message,
    Reason, Role, SandboxRecord, Session, SessionError, StopReason, ToolCall, Usage, audit_trail,
    lease, load,
};

/// A v3 file as the Go implementation writes it: model, a tool round trip, usage, a summary and
/// a name on one branch, then a `head` back to the user message and an alternative reply.
const GO_V3: &str = r#"{"type":"session","version":3,"id":"0123456789abcdef","timestamp":"2026-01-02T03:04:05.123456789Z","cwd":"/home/u/proj","workspaceId":"ws1"}
{"type":"model","id":"a000000000000001","parentId":null,"timestamp":"2026-01-02T03:04:05.2Z","provider":"openai","model":"gpt-4o","selection":"openai:gpt-4o"}
{"type":"message","id":"a000000000000002","parentId":"a000000000000001","timestamp":"2026-01-02T03:04:06Z","message":{"role":"user","content":"list files \u003cnow\u003e","timestamp":1767323046000}}
{"type":"message","id":"a000000000000003","parentId":"a000000000000002","timestamp":"2026-01-02T03:04:07Z","message":{"role":"assistant","toolCalls":[{"id":"call_1","name":"bash","arguments":{"command":"ls -la"}}],"timestamp":1767323047000,"stopReason":"tool_use"}}
{"type":"message","id":"a000000000000004","parentId":"a000000000000003","timestamp":"2026-01-02T03:04:08Z","message":{"role":"tool","content":"a.txt\nb.txt","toolCallId":"call_1","toolName":"bash","timestamp":1767323048000}}
{"type":"usage","id":"a000000000000005","parentId":"a000000000000004","timestamp":"2026-01-02T03:04:09Z","usage":{"promptTokens":120,"completionTokens":30,"totalTokens":150}}
{"type":"message","id":"a000000000000006","parentId":"a000000000000005","timestamp":"2026-01-02T03:04:10Z","message":{"role":"assistant","content":"Two files.","contentBlocks":[{"type":"text","text":"Two files."}],"timestamp":1767323050000,"stopReason":"end_turn"}}
{"type":"summary","id":"a000000000000007","parentId":"a000000000000006","timestamp":"2026-01-02T03:04:11Z","summary":"user listed files","throughMessageCount":2}
{"type":"session_info","id":"a000000000000008","parentId":"a000000000000007","timestamp":"2026-01-02T03:04:12Z","name":"listing"}
{"type":"head","id":"a000000000000009","parentId":"a000000000000002","timestamp":"2026-01-02T03:04:13Z"}
{"type":"message","id":"a00000000000000a","parentId":"a000000000000009","timestamp":"2026-01-02T03:04:14Z","message":{"role":"assistant","content":"alternative","timestamp":1767323054000,"stopReason":"end_turn"}}
"#;

/// A v2 file (parents, legacy `parentSession`, no heads).
const GO_V2: &str = r#"{"type":"session","version":2,"id":"1111111111111111","timestamp":"2025-05-01T10:00:00Z","cwd":"/p","parentSession":"/old/path.jsonl"}
{"type":"message","id":"b000000000000001","parentId":null,"timestamp":"2025-05-01T10:00:01Z","message":{"role":"user","content":"hi"}}
{"type":"message","id":"b000000000000002","parentId":"b000000000000001","timestamp":"2025-05-01T10:00:02Z","message":{"role":"assistant","content":"hello","stopReason":"end_turn"}}
{"type":"message","id":"b000000000000003","parentId":"b000000000000001","timestamp":"2025-05-01T10:00:03Z","message":{"role":"assistant","content":"hey","stopReason":"end_turn"}}
"#;

/// A v1 file: ids but no parents; the file order is the conversation.
const GO_V1: &str = r#"{"type":"session","version":1,"id":"2222222222222222","timestamp":"2024-01-01T00:00:00Z","cwd":"/p"}
{"type":"message","id":"c000000000000001","timestamp":"2024-01-01T00:00:01Z","message":{"role":"user","content":"one"}}
{"type":"model","id":"c000000000000002","timestamp":"2024-01-01T00:00:02Z","provider":"p","model":"m","selection":"p:m"}
{"type":"message","id":"c000000000000003","timestamp":"2024-01-01T00:00:03Z","message":{"role":"assistant","content":"two"}}
"#;

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, content).unwrap();
    path
}

fn texts(session: &Session) -> Vec<String> {
    session
        .transcript()
        .messages()
        .iter()
        .map(|m| m.display_text())
        .collect()
}

fn user(text: &str) -> Message {
    Message::text(Role::User, text)
}

fn assistant(text: &str) -> Message {
    let mut message = Message::text(Role::Assistant, text);
    message.stop_reason = Some(StopReason::EndTurn);
    message
}

fn lock_exists(path: &Path) -> bool {
    lease::lock_path(path).exists()
}

#[test]
fn go_v3_file_opens_unchanged_with_the_right_tree() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "go.jsonl", GO_V3);
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    let session = Session::open(&path).unwrap();
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "tightened on open");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        GO_V3,
        "a clean v3 file is never rewritten"
    );
    assert!(!lock_exists(&path));
    let transcript = session.transcript();
    assert_eq!(transcript.id(), "0123456789abcdef");
    assert_eq!(transcript.header().workspace_id.as_deref(), Some("ws1"));
    assert_eq!(transcript.entries().len(), 10);
    assert_eq!(texts(&session), ["list files <now>", "alternative"]);
    assert_eq!(
        transcript.last_model(),
        Some(("openai", "gpt-4o", "openai:gpt-4o"))
    );
    assert_eq!(transcript.name(), None, "the name is on the other branch");
    assert_eq!(transcript.last_summary(), None);
    // The other branch still holds everything.
    let other: Vec<&str> = transcript
        .path_to("a000000000000008")
        .iter()
        .map(|e| e.kind.type_name())
        .collect();
    assert_eq!(
        other,
        [
            "model",
            "message",
            "message",
            "message",
            "usage",
            "message",
            "summary",
            "session_info"
        ]
    );
    let tool_call = &transcript
        .get("a000000000000003")
        .unwrap()
        .message()
        .unwrap()
        .tool_calls[0];
    assert_eq!(tool_call.arguments.get(), r#"{"command":"ls -la"}"#);
    let usage = transcript.get("a000000000000005").unwrap();
    assert_eq!(
        usage.kind,
        EntryKind::Usage(Usage {
            prompt_tokens: 120,
            completion_tokens: 30,
            total_tokens: 150
        })
    );
}

#[test]
fn appended_lines_have_the_go_field_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "go.jsonl", GO_V3);
    let mut session = Session::open(&path).unwrap();
    let id = session.append_message(user("next")).unwrap().id.clone();
    session
        .append_usage(Usage {
            prompt_tokens: 1,
            completion_tokens: 2,
            total_tokens: 3,
        })
        .unwrap();
    assert!(
        session.append_usage(Usage::default()).unwrap().is_none(),
        "zero usage is not written"
    );
    session.append_model("anthropic", "claude").unwrap();
    session.append_summary("sum", 4).unwrap();
    session.set_name(" my\r\nname ").unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with(GO_V3),
        "appends never rewrite earlier bytes"
    );
    let lines: Vec<Value> = text[GO_V3.len()..]
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    let message = &lines[0];
    assert_eq!(message["type"], "message");
    assert_eq!(message["id"], id.as_str());
    assert_eq!(message["parentId"], "a00000000000000a");
    assert!(session::time::parse_rfc3339(message["timestamp"].as_str().unwrap()).is_some());
    assert_eq!(message["message"]["role"], "user");
    assert_eq!(message["message"]["content"], "next");
    assert!(message["message"]["timestamp"].as_i64().unwrap() > 1_700_000_000_000);
    assert_eq!(
        lines[1]["usage"],
        serde_json::json!({"promptTokens":1,"completionTokens":2,"totalTokens":3})
    );
    assert_eq!(lines[2]["selection"], "anthropic:claude");
    assert_eq!(lines[3]["throughMessageCount"], 4);
    assert_eq!(lines[4]["name"], "my  name");
    for line in &lines {
        let id = line["id"].as_str().unwrap();
        assert_eq!(id.len(), 16);
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }
    let reopened = Session::open(&path).unwrap();
    assert_eq!(reopened.transcript().name(), Some("my  name"));
    assert_eq!(reopened.transcript().last_summary(), Some(("sum", 4)));
    assert_eq!(
        reopened.transcript().last_model(),
        Some(("anthropic", "claude", "anthropic:claude"))
    );
}

#[test]
fn a_policy_change_is_a_session_info_line_that_older_readers_see_as_the_same_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "go.jsonl", GO_V3);
    let mut session = Session::open(&path).unwrap();
    let before = session.transcript().messages().len();
    let name = session.transcript().name().map(str::to_string);
    session.append_policy("approval", "auto", "never").unwrap();
    let text = fs::read_to_string(&path).unwrap();
    let line: Value = serde_json::from_str(text[GO_V3.len()..].trim_end()).unwrap();
    // Format 3 has no room for a new type (readers refuse one), so the change rides on a
    // session_info that repeats the current name: a reader that ignores the extra fields (the
    // Go implementation, an older gg) sees the name unchanged.
    assert_eq!(line["type"], "session_info");
    assert_eq!(line["name"], Value::from(name.clone().unwrap_or_default()));
    assert_eq!(
        (&line["setting"], &line["from"], &line["to"]),
        (
            &Value::from("approval"),
            &Value::from("auto"),
            &Value::from("never")
        )
    );
    let reopened = Session::open(&path).unwrap();
    let last = reopened.transcript().entries().last().unwrap();
    assert_eq!(
        last.kind,
        session::EntryKind::Policy {
            name: name.clone().unwrap_or_default(),
            setting: "approval".into(),
            from: "auto".into(),
            to: "never".into()
        }
    );
    assert_eq!(reopened.transcript().name(), name.as_deref());
    assert_eq!(
        reopened.transcript().messages().len(),
        before,
        "the model never sees it"
    );
    // What an older reader sees: the same line without the fields it does not know.
    let mut plain = line.clone();
    for field in ["setting", "from", "to"] {
        plain.as_object_mut().unwrap().remove(field);
    }
    let older = format!("{GO_V3}{plain}\n");
    let old_view = session::load_bytes(&path, older.as_bytes()).unwrap();
    assert_eq!(old_view.name(), name.as_deref());
}

#[test]
fn tool_result_images_are_stored_by_path_and_old_lines_have_none() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "go.jsonl", GO_V3);
    let mut session = Session::open(&path).unwrap();
    let old = session.transcript().messages();
    assert!(
        old.iter().all(|m| m.images.is_empty()),
        "lines without the field read as no images"
    );
    let mut result = Message::text(Role::Tool, "screenshot: /h/.gg/media/screenshots/a.png");
    result.tool_call_id = "call_9".into();
    result.tool_name = "browser_screenshot".into();
    result.images = vec!["/h/.gg/media/screenshots/a.png".into()];
    session.append_message(result).unwrap();
    session.append_message(user("plain")).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<Value> = text[GO_V3.len()..]
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[0]["message"]["images"],
        serde_json::json!(["/h/.gg/media/screenshots/a.png"]),
        "the path, never the bytes"
    );
    assert!(
        lines[1]["message"].get("images").is_none(),
        "no field without images"
    );
    let reopened = Session::open(&path).unwrap();
    let messages = reopened.transcript().messages();
    assert_eq!(
        messages[messages.len() - 2].images,
        ["/h/.gg/media/screenshots/a.png"]
    );
}

#[test]
fn new_session_header_is_go_shaped_and_private() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("sessions").join("home-u-proj");
    fs::create_dir_all(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    let session = Session::create(&dir, "/home/u/proj").unwrap();
    assert_eq!(
        fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700,
        "chmod enforced"
    );
    assert_eq!(
        fs::metadata(session.path()).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let name = session.path().file_name().unwrap().to_str().unwrap();
    let stem = name.strip_suffix(".jsonl").unwrap();
    assert!(
        stem.parse::<u128>().unwrap() > 1_700_000_000_000_000_000,
        "unix nanoseconds: {name}"
    );
    let header: Value =
        serde_json::from_str(fs::read_to_string(session.path()).unwrap().trim_end()).unwrap();
    assert_eq!(header["type"], "session");
    assert_eq!(header["version"], 3);
    assert_eq!(header["cwd"], "/home/u/proj");
    assert_eq!(header["id"].as_str().unwrap().len(), 16);
    assert!(header.get("workspaceId").is_none());
}

#[test]
fn v2_and_v1_files_are_migrated_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let v2 = write(dir.path(), "v2.jsonl", GO_V2);
    fs::set_permissions(&v2, fs::Permissions::from_mode(0o644)).unwrap();
    let v1 = write(dir.path(), "v1.jsonl", GO_V1);
    let inode_before = std::os::unix::fs::MetadataExt::ino(&fs::metadata(&v2).unwrap());

    let session = Session::open(&v2).unwrap();
    assert_eq!(texts(&session), ["hi", "hey"]);
    let migrated = fs::read_to_string(&v2).unwrap();
    let header: Value = serde_json::from_str(migrated.lines().next().unwrap()).unwrap();
    assert_eq!(header["version"], 3);
    assert_eq!(header["id"], "1111111111111111");
    assert_eq!(
        header["parentSession"], "/old/path.jsonl",
        "legacy field is kept"
    );
    assert_eq!(migrated.lines().count(), 4);
    assert_ne!(
        std::os::unix::fs::MetadataExt::ino(&fs::metadata(&v2).unwrap()),
        inode_before,
        "replaced by rename"
    );
    assert_eq!(
        fs::metadata(&v2).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let session = Session::open(&v1).unwrap();
    assert_eq!(texts(&session), ["one", "two"]);
    assert_eq!(session.transcript().last_model(), Some(("p", "m", "p:m")));
    let migrated = fs::read_to_string(&v1).unwrap();
    let parents: Vec<Value> = migrated
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["parentId"].clone())
        .collect();
    assert_eq!(
        parents,
        [
            Value::Null,
            "c000000000000001".into(),
            "c000000000000002".into()
        ]
    );

    let leftovers: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.') || name.ends_with(".lock"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // Migrated files open again without change.
    let before = fs::read(&v1).unwrap();
    Session::open(&v1).unwrap();
    assert_eq!(fs::read(&v1).unwrap(), before);
}

#[test]
fn bad_lines_are_errors_naming_file_and_line_and_leave_the_file_alone() {
    let lines: Vec<&str> = GO_V3.lines().collect();
    let with_line_4 = |bad: &str| {
        let mut copy = lines.clone();
        copy[3] = bad;
        copy.join("\n") + "\n"
    };
    let duplicate = lines[2].to_owned();
    let cases: Vec<(String, usize, &str)> = vec![
        (with_line_4("{not json"), 4, "invalid JSON"),
        (
            with_line_4(r#"{"type":"bogus","id":"x","parentId":null}"#),
            4,
            r#"unknown session entry type "bogus""#,
        ),
        (with_line_4(&duplicate), 4, "duplicate session entry id"),
        (
            with_line_4(
                r#"{"type":"head","id":"zz","parentId":"a00000000000000a","timestamp":"t"}"#,
            ),
            4,
            "missing or non-append-only parent",
        ),
        (
            with_line_4(
                r#"{"type":"message","id":"zz","parentId":null,"message":{"role":"robot"}}"#,
            ),
            4,
            "invalid entry",
        ),
        (
            GO_V3.replacen(r#""type":"session""#, r#""type":"sessio""#, 1),
            1,
            "missing session header",
        ),
        (
            GO_V3.replacen(r#""version":3"#, r#""version":4"#, 1),
            1,
            "unsupported session version 4",
        ),
        // A complete (newline-terminated) bad last line is not a torn write.
        (format!("{GO_V3}{{oops\n"), 12, "invalid JSON"),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (content, line, reason) in cases {
        let path = write(dir.path(), "bad.jsonl", &content);
        let error = Session::open(&path).unwrap_err();
        match &error {
            SessionError::Corrupt {
                path: named,
                line: got,
                reason: why,
            } => {
                assert_eq!(named, &path);
                assert_eq!(*got, line, "{why}");
                assert!(why.contains(reason), "{why:?} should contain {reason:?}");
            }
            other => panic!("expected a corrupt-file error, got {other:?}"),
        }
        let shown = error.to_string();
        assert!(shown.contains(&format!("bad.jsonl:{line}:")), "{shown}");
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            content,
            "file untouched"
        );
        assert!(load(&path).is_err());
        assert!(!lock_exists(&path), "lease released after a failed open");
    }
}

#[test]
fn torn_tail_is_truncated_and_missing_newline_restored() {
    let dir = tempfile::tempdir().unwrap();
    let torn = format!("{GO_V3}{{\"type\":\"message\",\"id\":\"ff\",\"parentId\":\"a0");
    let path = write(dir.path(), "torn.jsonl", &torn);
    assert_eq!(
        load(&path).unwrap().entries().len(),
        10,
        "read-only load skips the torn line"
    );
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        torn,
        "read-only load never repairs"
    );
    let mut session = Session::open(&path).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), GO_V3);
    session.append_message(user("after repair")).unwrap();
    assert_eq!(
        texts(&Session::open(&path).unwrap()).last().unwrap(),
        "after repair"
    );

    let unterminated = GO_V3.trim_end_matches('\n');
    let path = write(dir.path(), "nonl.jsonl", unterminated);
    let session = Session::open(&path).unwrap();
    assert_eq!(session.transcript().entries().len(), 10);
    assert_eq!(fs::read_to_string(&path).unwrap(), GO_V3);

    let garbage_tail = format!("{GO_V3}\0\0\0\0");
    let path = write(dir.path(), "zeros.jsonl", &garbage_tail);
    Session::open(&path).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), GO_V3);
}

#[test]
fn open_or_create_initialises_only_files_without_a_complete_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("missing.jsonl", None),
        ("empty.jsonl", Some("")),
        ("torn-header.jsonl", Some(r#"{"type":"sess"#)),
    ];
    for (name, content) in cases {
        let path = dir.path().join("nested").join(name);
        if let Some(content) = content {
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, content).unwrap();
        }
        let session = Session::open_or_create(&path, "/work").unwrap();
        assert_eq!(session.transcript().header().cwd, "/work");
        assert!(session.transcript().entries().is_empty());
        assert_eq!(load(&path).unwrap().id(), session.id(), "{name}");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600,
            "{name}"
        );
    }
    // A file with a complete header is opened, never replaced.
    let path = write(dir.path(), "go.jsonl", GO_V3);
    assert_eq!(
        Session::open_or_create(&path, "/elsewhere").unwrap().id(),
        "0123456789abcdef"
    );
    assert!(
        Session::open(&write(dir.path(), "empty2.jsonl", "")).is_err(),
        "plain open needs a header"
    );
}

#[test]
fn a_stale_writer_gets_a_conflict_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "go.jsonl", GO_V3);
    let mut first = Session::open(&path).unwrap();
    let mut second = Session::open(&path).unwrap();
    first.append_message(user("from first")).unwrap();
    let after_first = fs::read(&path).unwrap();
    for _ in 0..2 {
        let error = second.append_message(user("from second")).unwrap_err();
        assert!(matches!(error, SessionError::Conflict { .. }), "{error:?}");
        assert!(
            error
                .to_string()
                .starts_with("session changed by another process")
        );
        assert!(error.is_retryable_conflict());
        assert_eq!(fs::read(&path).unwrap(), after_first, "nothing written");
    }
    assert!(matches!(
        second.branch(None),
        Err(SessionError::Conflict { .. })
    ));
    assert!(matches!(
        second.clone_session(),
        Err(SessionError::Conflict { .. })
    ));
    // Reopening picks up the other writer's work and may write again.
    let mut second = Session::open(&path).unwrap();
    second.append_message(user("from second")).unwrap();
    assert_eq!(
        texts(&Session::open(&path).unwrap()),
        [
            "list files <now>",
            "alternative",
            "from first",
            "from second"
        ]
    );
}

#[test]
fn a_header_rewrite_by_another_process_is_not_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "go.jsonl", GO_V3);
    let mut first = Session::open(&path).unwrap();
    let mut second = Session::open(&path).unwrap();
    second.set_workspace_id(Some("ws2")).unwrap();
    first.append_message(user("still fine")).unwrap();
    assert_eq!(
        first.transcript().header().workspace_id.as_deref(),
        Some("ws2")
    );
    let reopened = Session::open(&path).unwrap();
    assert_eq!(
        reopened.transcript().header().workspace_id.as_deref(),
        Some("ws2")
    );
    assert_eq!(texts(&reopened).last().unwrap(), "still fine");
}

#[test]
fn a_held_lease_blocks_for_five_seconds_then_reports_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "go.jsonl", GO_V3);
    let mut session = Session::open(&path).unwrap();
    let lock = lease::lock_path(&path);
    fs::write(&lock, "999999:0123456789abcdef").unwrap();
    let started = Instant::now();
    let error = session.append_message(user("blocked")).unwrap_err();
    assert!(matches!(error, SessionError::Locked { .. }), "{error:?}");
    assert_eq!(error.to_string(), "session is locked by another process");
    assert!(started.elapsed() >= lease::WAIT);
    assert_eq!(
        fs::read_to_string(&lock).unwrap(),
        "999999:0123456789abcdef",
        "a live lease is not ours to delete"
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), GO_V3);

    // Once the lock is older than 30 s it is taken over.
    let old = SystemTime::now() - lease::STALE_AFTER - Duration::from_secs(1);
    fs::File::options()
        .write(true)
        .open(&lock)
        .unwrap()
        .set_modified(old)
        .unwrap();
    session.append_message(user("after takeover")).unwrap();
    assert!(!lock.exists());
    assert_eq!(
        texts(&Session::open(&path).unwrap()).last().unwrap(),
        "after takeover"
    );
}

/// u1 → a1 → {u2 → a2, u2'}
fn branched_session(dir: &Path) -> (Session, [String; 5]) {
    let mut session = Session::create(dir, "/p").unwrap();
    let u1 = session.append_message(user("u1")).unwrap().id.clone();
    let a1 = session.append_message(assistant("a1")).unwrap().id.clone();
    let u2 = session.append_message(user("u2")).unwrap().id.clone();
    let a2 = session.append_message(assistant("a2")).unwrap().id.clone();
    assert_eq!(
        session.checkout(&u2).unwrap().as_deref(),
        Some("u2"),
        "user node: draft is its text"
    );
    assert_eq!(texts(&session), ["u1", "a1"]);
    let head = session.transcript().leaf().unwrap();
    assert_eq!(head.kind, EntryKind::Head);
    assert_eq!(head.parent_id.as_deref(), Some(a1.as_str()));
    let u2b = session.append_message(user("u2'")).unwrap().id.clone();
    (session, [u1, a1, u2, a2, u2b])
}

#[test]
fn branch_checkout_and_tree_items_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let (mut session, [u1, a1, u2, a2, u2b]) = branched_session(dir.path());
    let reopened = Session::open(session.path()).unwrap();
    assert_eq!(texts(&reopened), ["u1", "a1", "u2'"]);
    let items: Vec<(String, usize, bool, Option<String>)> = reopened
        .transcript()
        .tree_items()
        .into_iter()
        .map(|item| (item.id, item.depth, item.active, item.parent_id))
        .collect();
    assert_eq!(
        items,
        [
            (u1.clone(), 0, true, None),
            (a1.clone(), 0, true, Some(u1.clone())),
            (u2.clone(), 1, false, Some(a1.clone())),
            (a2.clone(), 1, false, Some(u2.clone())),
            (u2b.clone(), 1, true, Some(a1.clone())),
        ]
    );
    assert_eq!(
        session.checkout(&a2).unwrap(),
        None,
        "non-user node: no draft"
    );
    assert_eq!(texts(&session), ["u1", "a1", "u2", "a2"]);
    session.branch(None).unwrap();
    assert!(texts(&session).is_empty());
    let next_parent = session
        .append_message(user("fresh root"))
        .unwrap()
        .parent_id
        .clone()
        .unwrap();
    let root_head = session.transcript().get(&next_parent).unwrap();
    assert_eq!(
        (&root_head.kind, &root_head.parent_id),
        (&EntryKind::Head, &None),
        "hangs off the root head"
    );
    assert_eq!(
        texts(&Session::open(session.path()).unwrap()),
        ["fresh root"]
    );
    assert!(session.branch(Some("nope")).is_err());
    assert!(session.checkout("nope").is_err());
}

#[test]
fn fork_and_clone_write_new_files_with_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let (mut session, [u1, a1, u2, _a2, u2b]) = branched_session(dir.path());
    let source_bytes = fs::read(session.path()).unwrap();

    let (fork, draft) = session.fork(&u2).unwrap();
    assert_eq!(draft, "u2");
    assert_eq!(fork.path().parent(), session.path().parent());
    let name = fork
        .path()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let (stamp, rest) = name.split_once("-fork-").unwrap();
    assert_eq!(stamp.len(), "20060102T150405.000000000Z".len(), "{name}");
    assert!(stamp.ends_with('Z') && stamp.as_bytes()[8] == b'T');
    assert_eq!(rest.strip_suffix(".jsonl").unwrap().len(), 16);
    assert_eq!(
        fs::metadata(fork.path()).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let reopened = Session::open(fork.path()).unwrap();
    let ids: Vec<&str> = reopened
        .transcript()
        .entries()
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    assert_eq!(ids, [u1.as_str(), a1.as_str()], "ids preserved");
    let header = reopened.transcript().header();
    assert_eq!(header.parent_session_id.as_deref(), Some(session.id()));
    assert_eq!(header.parent_entry_id.as_deref(), Some(a1.as_str()));
    assert_eq!(header.cwd, "/p");
    assert_ne!(header.id, session.id());
    assert_eq!(
        fs::read(session.path()).unwrap(),
        source_bytes,
        "the source stays put"
    );

    let (root_fork, _) = session.fork(&u1).unwrap();
    assert!(root_fork.transcript().entries().is_empty());
    assert_eq!(root_fork.transcript().header().parent_entry_id, None);

    for not_user in [a1.as_str(), "missing"] {
        let error = session.fork(not_user).unwrap_err();
        assert_eq!(error.to_string(), "select a user message to fork");
    }

    let clone = session.clone_session().unwrap();
    let clone = Session::open(clone.path()).unwrap();
    assert_eq!(texts(&clone), ["u1", "a1", "u2'"]);
    assert_eq!(
        clone.transcript().header().parent_entry_id.as_deref(),
        Some(u2b.as_str())
    );
    assert_eq!(clone.transcript().leaf().unwrap().id, u2b);
}

#[test]
fn interrupted_tool_calls_get_the_fixed_result_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = Session::create(dir.path(), "/p").unwrap();
    session.append_message(user("do it")).unwrap();
    let mut request = Message::text(Role::Assistant, "");
    request.stop_reason = Some(StopReason::ToolUse);
    request.tool_calls = vec![
        ToolCall::new("c1", "read", r#"{"path":"a"}"#).unwrap(),
        ToolCall::new("c2", "bash", r#"{"command":"make"}"#).unwrap(),
        ToolCall::new("c3", "write", r#"{"path":"b","content":"x"}"#).unwrap(),
    ];
    session.append_message(request).unwrap();
    let mut done = Message::text(Role::Tool, "contents");
    done.tool_call_id = "c1".into();
    done.tool_name = "read".into();
    session.append_message(done).unwrap();

    let mut resumed = Session::open(session.path()).unwrap();
    assert_eq!(
        resumed.recover_interrupted_tool_calls().unwrap(),
        ["c2", "c3"]
    );
    assert!(resumed.recover_interrupted_tool_calls().unwrap().is_empty());
    let reopened = Session::open(session.path()).unwrap();
    let messages = reopened.transcript().messages();
    assert_eq!(messages.len(), 5);
    for (message, (id, name)) in messages[3..].iter().zip([("c2", "bash"), ("c3", "write")]) {
        assert_eq!(message.role, Role::Tool);
        assert_eq!(message.content, INTERRUPTED_TOOL_RESULT);
        assert_eq!(message.error, INTERRUPTED_TOOL_RESULT);
        assert_eq!(
            (message.tool_call_id.as_str(), message.tool_name.as_str()),
            (id, name)
        );
    }
    assert_eq!(
        INTERRUPTED_TOOL_RESULT,
        "Execution interrupted; result unavailable. This tool may already have run. Inspect the current state before retrying."
    );
    let mut plain = Session::create(dir.path(), "/p").unwrap();
    plain.append_message(user("no tools")).unwrap();
    assert!(plain.recover_interrupted_tool_calls().unwrap().is_empty());
}

fn bash_audit(verdict: &str, action: &str, by: &str) -> Audit {
    Audit {
        classification: Some(Classification {
            verdict: verdict.into(),
            reasons: vec![Reason {
                rule: "net.curl".into(),
                message: "downloads from the network".into(),
            }],
        }),
        decision: Some(Decision {
            action: action.into(),
            rule: Some("ask-network".into()),
            decided_by: by.into(),
            mode: "auto".into(),
        }),
        sandbox: Some(SandboxRecord {
            level: "workspace-write".into(),
            warning: Some("no network namespace".into()),
        }),
        network: Some(session::audit::NetworkRecord {
            mode: "allow-list".into(),
            refused: vec![session::audit::NetworkRefusal {
                host: "collector.example".into(),
                port: 443,
                rule: "not-on-allow-list".into(),
            }],
        }),
        browser: None,
        origin: None,
    }
}

#[test]
fn audit_trail_round_trips_and_is_extracted_per_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = Session::create(dir.path(), "/p").unwrap();
    session.append_message(user("go")).unwrap();
    let mut request = Message::text(Role::Assistant, "");
    request.tool_calls = vec![
        ToolCall::new("c1", "bash", r#"{"command":"curl x"}"#).unwrap(),
        ToolCall::new("c2", "bash", r#"{"command":"rm -rf /"}"#).unwrap(),
        ToolCall::new("c3", "read", r#"{"path":"a"}"#).unwrap(),
    ];
    let request_id = session.append_message(request).unwrap().id.clone();
    let mut ok = Message::text(Role::Tool, "done");
    ok.tool_call_id = "c1".into();
    ok.tool_name = "bash".into();
    let allowed = bash_audit("network", "allow", "user");
    session
        .append_message_with_audit(ok, Some(allowed.clone()))
        .unwrap();
    let mut denied = Message::text(Role::Tool, "denied by policy");
    denied.error = "denied by policy".into();
    denied.tool_call_id = "c2".into();
    denied.tool_name = "bash".into();
    let refused = bash_audit("destructive", "deny", "policy");
    session
        .append_message_with_audit(denied, Some(refused.clone()))
        .unwrap();

    let raw = fs::read_to_string(session.path()).unwrap();
    let line: Value = serde_json::from_str(raw.lines().nth(3).unwrap()).unwrap();
    assert_eq!(line["audit"]["decision"]["decidedBy"], "user");
    assert_eq!(
        line["audit"]["classification"]["reasons"][0]["rule"],
        "net.curl"
    );
    assert_eq!(line["audit"]["sandbox"]["warning"], "no network namespace");
    assert!(
        line["message"].get("audit").is_none(),
        "the message object keeps the Go shape"
    );

    let reopened = Session::open(session.path()).unwrap();
    assert_eq!(reopened.transcript().entries()[2].audit(), Some(&allowed));
    // Forks carry the audit along.
    let mut source = Session::open(session.path()).unwrap();
    let clone = source.clone_session().unwrap();
    assert_eq!(
        Session::open(clone.path()).unwrap().transcript().entries()[3].audit(),
        Some(&refused)
    );

    let rows = audit_trail(&load(session.path()).unwrap());
    let summary: Vec<(&str, &str, CallStatus, bool)> = rows
        .iter()
        .map(|r| {
            (
                r.call_id.as_str(),
                r.tool.as_str(),
                r.status,
                r.audit.is_some(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("c1", "bash", CallStatus::Ok, true),
            ("c2", "bash", CallStatus::Error, true),
            ("c3", "read", CallStatus::Missing, false)
        ]
    );
    assert_eq!(rows[1].arguments, r#"{"command":"rm -rf /"}"#);
    assert_eq!(rows[1].error.as_deref(), Some("denied by policy"));
    assert!(
        rows.iter()
            .all(|r| r.request_entry_id == request_id && r.active_branch)
    );

    let mut resumed = Session::open(session.path()).unwrap();
    resumed.recover_interrupted_tool_calls().unwrap();
    // Another branch reuses call id c1: its result must not be attributed to the first request.
    let first_user = resumed.transcript().entries()[0].id.clone();
    resumed.checkout(&first_user).unwrap();
    resumed.append_message(user("again")).unwrap();
    let mut again = Message::text(Role::Assistant, "");
    again.tool_calls = vec![ToolCall::new("c1", "bash", r#"{"command":"ls"}"#).unwrap()];
    resumed.append_message(again).unwrap();
    let rows = audit_trail(resumed.transcript());
    let statuses: Vec<(&str, CallStatus, bool)> = rows
        .iter()
        .map(|r| (r.call_id.as_str(), r.status, r.active_branch))
        .collect();
    assert_eq!(
        statuses,
        [
            ("c1", CallStatus::Ok, false),
            ("c2", CallStatus::Error, false),
            ("c3", CallStatus::Interrupted, false),
            ("c1", CallStatus::Missing, true)
        ]
    );
    let json = serde_json::to_value(&rows[0]).unwrap();
    assert_eq!(json["status"], "ok");
    assert_eq!(json["audit"]["decision"]["action"], "allow");
}

#[test]
fn listing_resolving_and_latest_for_a_cwd() {
    let root = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let dir = project_dir(root.path(), cwd.path()).unwrap();
    assert!(list_sessions(root.path(), cwd.path()).unwrap().is_empty());
    assert_eq!(latest_for_cwd(root.path(), cwd.path()).unwrap(), None);

    let mut older = Session::create(&dir, "/p").unwrap();
    older
        .append_message(user("first   task\nwith lines"))
        .unwrap();
    older.append_message(assistant("ok")).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    let mut newer = Session::create(&dir, "/p").unwrap();
    newer.append_message(user(&"long ".repeat(40))).unwrap();
    newer.set_name("named").unwrap();

    let list = list_sessions(root.path(), cwd.path()).unwrap();
    let rows: Vec<(&str, usize, Option<&str>)> = list
        .iter()
        .map(|s| (s.id.as_str(), s.messages, s.name.as_deref()))
        .collect();
    assert_eq!(
        rows,
        [(newer.id(), 1, Some("named")), (older.id(), 2, None)]
    );
    assert_eq!(list[1].preview, "first task with lines");
    assert_eq!(list[0].preview.chars().count(), 80);
    assert!(list[0].preview.ends_with("..."));
    assert_eq!(
        latest_for_cwd(root.path(), cwd.path()).unwrap().as_deref(),
        Some(newer.path())
    );

    let by_id = resolve_target(root.path(), cwd.path(), older.id(), true).unwrap();
    assert_eq!(by_id, older.path());
    let by_prefix = resolve_target(root.path(), cwd.path(), &older.id()[..10], true).unwrap();
    assert_eq!(by_prefix, older.path());
    let stem = older
        .path()
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        resolve_target(root.path(), cwd.path(), &stem, true).unwrap(),
        older.path()
    );
    let as_path = older.path().to_str().unwrap();
    assert_eq!(
        resolve_target(root.path(), cwd.path(), as_path, true).unwrap(),
        older.path()
    );
    for missing in ["ffffffffffffffff", "", "nope/none.jsonl"] {
        assert!(
            matches!(
                resolve_target(root.path(), cwd.path(), missing, true),
                Err(SessionError::NotFound { .. })
            ),
            "{missing}"
        );
    }
    assert!(matches!(
        resolve_target(root.path(), cwd.path(), as_path, false),
        Err(SessionError::NotFound { .. })
    ));

    fs::write(
        dir.join("corrupt.jsonl"),
        "{\"type\":\"session\",\"version\":3,\"id\":\"x\"}\nnot json\n{}\n",
    )
    .unwrap();
    let error = list_sessions(root.path(), cwd.path()).unwrap_err();
    assert!(error.to_string().contains("corrupt.jsonl:2:"), "{error}");
}

#[test]
fn a_replaced_file_with_other_history_is_a_conflict() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "go.jsonl", GO_V3);
    let mut stale = Session::open(&path).unwrap();
    let mut other = Session::open(&path).unwrap();
    other.append_message(user("other")).unwrap();
    // Replaced by rename (new inode): only a re-read can tell whether the history is the same.
    other.set_workspace_id(Some("ws9")).unwrap();
    let before = fs::read(&path).unwrap();
    let error = stale.append_message(user("stale")).unwrap_err();
    assert!(matches!(error, SessionError::Conflict { .. }), "{error:?}");
    assert_eq!(fs::read(&path).unwrap(), before);
}
