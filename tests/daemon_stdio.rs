//! The real `ggd` over stdio pipes against the scripted provider: every method's happy path and
//! error codes, approvals, steering, limits, timeouts, the instance lock and shutdown.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::daemon_common;
use crate::support;

use std::time::Duration;

use daemon_common::{StdioClient, env, follow, ggd, has_type, last_type};
use serde_json::{Value, json};
use support::{Reply, ScriptedServer, StreamReply, finish_chunk, text_chunk, usage_chunk};

fn daemon(e: &daemon_common::Env, server: &ScriptedServer, args: &[&str]) -> StdioClient {
    StdioClient::spawn(ggd(e, &server.base_url(), args))
}

fn start(client: &StdioClient, session: &str, prompt: &str, approval: Option<bool>) -> String {
    let mut params = json!({"sessionId": session, "prompt": prompt});
    if let Some(a) = approval {
        params["requireApproval"] = json!(a);
    }
    client.ok("run.start", params)["runId"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A reply that streams one delta and then stays open and silent.
fn stalled() -> Reply {
    StreamReply::new()
        .event(text_chunk("thinking"))
        .stall()
        .reply()
}

fn code(error: &Value) -> i64 {
    error["code"].as_i64().unwrap()
}

#[test]
fn framing_errors_notifications_and_system_info() {
    let e = env();
    let server = ScriptedServer::start();
    let client = daemon(&e, &server, &[]);
    let info = client.ok("system.info", json!(null));
    assert_eq!(info["protocolVersion"], "1.6");
    for cap in [
        "run.approval",
        "run.event-replay",
        "run.reattach",
        "run.steering",
        "session.clone",
        "session.fork",
        "session.pages",
        "session.tree",
    ] {
        assert!(
            info["capabilities"]
                .as_array()
                .unwrap()
                .contains(&json!(cap)),
            "{cap}"
        );
    }
    assert!(info.get("degradedProviders").is_none());

    // A notification is handled but never answered; the next request is.
    client.send_raw(b"{\"jsonrpc\":\"2.0\",\"method\":\"system.info\"}\n");
    let cases: [(&str, i64); 5] = [
        (
            r#"{"jsonrpc":"1.0","id":900,"method":"system.info"}"#,
            -32600,
        ),
        (r#"{"jsonrpc":"2.0","id":901}"#, -32600),
        (r#"{"jsonrpc":"2.0","id":902,"method":"no.such"}"#, -32601),
        (
            r#"{"jsonrpc":"2.0","id":903,"method":"session.open","params":{"sessionId":1}}"#,
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":904,"method":"run.get","params":{"runId":"x","extra":1}}"#,
            -32602,
        ),
    ];
    for (i, (line, want)) in cases.iter().enumerate() {
        client.send_raw(format!("{line}\n").as_bytes());
        let response = client.response(900 + i as u64);
        assert_eq!(code(&response["error"]), *want, "{line}: {response}");
    }
    assert_eq!(
        client.err("no.such", json!({}))["message"],
        "method \"no.such\" not found"
    );

    // Bad JSON and an oversized line: -32700 without id, and the daemon keeps serving.
    client.send_raw(b"{not json\n");
    let mut big = vec![b'x'; 4 * 1024 * 1024 + 10];
    big.push(b'\n');
    client.send_raw(&big);
    let errors = client.wait_unsolicited(2);
    assert!(
        errors
            .iter()
            .all(|r| r["error"]["code"] == -32700 && r["id"].is_null()),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|r| r["error"]["message"].as_str().unwrap().contains("exceeds"))
    );

    // A panicking run finishes as run_failed; the session is reopened from disk and usable.
    // The panic hooks exist only with the `test-hooks` feature (the README's test command has it).
    if cfg!(feature = "test-hooks") {
        panics_are_contained(&client, &server);
    }
    assert_eq!(
        client.unsolicited().len(),
        2,
        "the notification must not be answered"
    );
}

fn panics_are_contained(client: &StdioClient, server: &ScriptedServer) {
    server.push(Reply::text(&["still here"]));
    let session = client.new_session();
    let run = start(client, &session, "__ggd_test_panic__", Some(true));
    let events = follow(client, &run, |_| false);
    let failed = events.last().unwrap();
    assert_eq!(failed["type"], "run_failed", "{events:?}");
    assert_eq!(
        failed["error"],
        "panic: test panic requested (see daemon log for details)"
    );
    let run = start(client, &session, "again", Some(true));
    assert_eq!(last_type(&follow(client, &run, |_| false)), "run_completed");
    client
        .logs
        .wait_for(|l| l.contains("test panic requested") && l.contains("ERROR"));

    // A panicking handler is -32603 and nothing else is affected.
    let panicked = client.err("test.panic", json!({}));
    assert_eq!(code(&panicked), -32603);
    assert_eq!(
        client.ok("system.info", json!({}))["protocolVersion"],
        "1.6"
    );
}

#[test]
fn sessions_create_list_open_rename_and_actions() {
    let e = env();
    let server = ScriptedServer::with_replies([Reply::text(&["hello ", "there"])]);
    let client = daemon(&e, &server, &[]);
    let created = client.ok("session.create", json!({"name": "first"}));
    assert_eq!(created["sessionName"], "first");
    assert_eq!(created["messages"], json!([]));
    let id = created["sessionId"].as_str().unwrap().to_string();

    let run = start(&client, &id, "say hello", Some(true));
    let events = follow(&client, &run, |_| false);
    assert_eq!(events[0]["type"], "run_started");
    assert_eq!(last_type(&events), "run_completed");
    let deltas: String = events
        .iter()
        .filter(|e| e["type"] == "agent_event" && e["agent"]["type"] == "text_delta")
        .map(|e| e["agent"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "hello there");
    let result = &events.last().unwrap()["result"];
    assert_eq!(result["Content"], "hello there");
    assert_eq!(result["ModelName"], "openai:gpt-4.1");
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["sequence"], json!(i + 1));
        assert_eq!(event["runId"], run.as_str());
        assert_eq!(event["sessionId"], id.as_str());
    }

    let list = client.ok("session.list", json!({}));
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(list[0]["name"], "first");
    assert_eq!(list[0]["messageCount"], 2);
    assert_eq!(list[0]["preview"], "say hello");

    let snapshot = client.ok("session.get", json!({"sessionId": id}));
    assert_eq!(snapshot["messages"].as_array().unwrap().len(), 2);
    let user_node = snapshot["treeItems"][0]["id"].as_str().unwrap().to_string();
    let assistant_node = snapshot["treeItems"][1]["id"].as_str().unwrap().to_string();
    assert_eq!(snapshot["treeItems"][0]["role"], "user");
    let renamed = client.ok(
        "session.rename",
        json!({"sessionId": id, "name": "second\nname"}),
    );
    assert_eq!(renamed["sessionName"], "second name");

    let tree = client.ok(
        "session.action",
        json!({"sessionId": id, "action": "tree", "nodeId": user_node}),
    );
    assert_eq!(tree["draft"], "say hello");
    assert_eq!(tree["notice"], "switched conversation branch");
    assert_eq!(tree["messages"], json!([]));

    let fork = client.ok(
        "session.action",
        json!({"sessionId": id, "action": "fork", "nodeId": user_node}),
    );
    assert_ne!(fork["sessionId"], id.as_str());
    assert_eq!(fork["draft"], "say hello");
    assert!(
        fork["notice"].as_str().unwrap().starts_with("forked to "),
        "{fork}"
    );
    assert!(
        !fork["notice"].as_str().unwrap().contains('/'),
        "paths are never exposed"
    );
    let clone = client.ok(
        "session.action",
        json!({"sessionId": id, "action": "clone"}),
    );
    assert!(clone["notice"].as_str().unwrap().starts_with("cloned to "));
    // The fork is an independent open session.
    let fork_id = fork["sessionId"].as_str().unwrap();
    assert_eq!(
        client.ok("session.open", json!({"sessionId": fork_id}))["sessionId"],
        fork_id
    );
    assert_eq!(
        client
            .ok("session.list", json!({}))
            .as_array()
            .unwrap()
            .len(),
        3
    );

    let errors: [(&str, Value, i64); 7] = [
        (
            "session.action",
            json!({"sessionId": id, "action": "explode", "nodeId": user_node}),
            -32007,
        ),
        (
            "session.action",
            json!({"sessionId": id, "action": "fork", "nodeId": assistant_node}),
            -32007,
        ),
        (
            "session.action",
            json!({"sessionId": id, "action": "tree"}),
            -32007,
        ),
        (
            "session.open",
            json!({"sessionId": "0123456789abcdef"}),
            -32001,
        ),
        (
            "session.open",
            json!({"sessionId": "../../etc/passwd"}),
            -32602,
        ),
        ("session.get", json!({}), -32602),
        (
            "session.rename",
            json!({"sessionId": "ffffffffffffffff", "name": "x"}),
            -32001,
        ),
    ];
    for (method, params, want) in errors {
        let error = client.err(method, params.clone());
        assert_eq!(code(&error), want, "{method} {params}: {error}");
    }
    let invalid = client.err(
        "session.action",
        json!({"sessionId": id, "action": "explode", "nodeId": user_node}),
    );
    assert_eq!(
        invalid["data"],
        json!({"code": "invalid_action", "retryable": false})
    );
}

#[test]
fn sessions_are_paged_newest_first() {
    let e = env();
    let server = ScriptedServer::with_replies([
        Reply::text(&["first answer"]),
        Reply::tool_call("call_1", "bash", r#"{"command":"echo paged"}"#),
        Reply::text(&["second answer"]),
        Reply::text(&["third answer"]),
    ]);
    let client = daemon(&e, &server, &[]);
    let id = client.ok("session.create", json!({"name": "paged"}))["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    for prompt in ["one", "two", "three"] {
        let run = start(&client, &id, prompt, Some(false));
        assert_eq!(
            last_type(&follow(&client, &run, |_| false)),
            "run_completed"
        );
    }
    // user, assistant | user, assistant calling bash, tool result, assistant | user, assistant
    let whole = client.ok("session.get", json!({"sessionId": id}));
    assert_eq!(whole["messages"].as_array().unwrap().len(), 8);

    let newest = client.ok("session.open", json!({"sessionId": id, "limit": 2}));
    assert_eq!(newest["sessionName"], "paged");
    assert_eq!(newest["modelName"], whole["modelName"]);
    assert_eq!(
        newest["messages"],
        json!(whole["messages"].as_array().unwrap()[6..])
    );
    assert_eq!(
        (
            newest["firstMessage"].as_u64(),
            newest["messageCount"].as_u64()
        ),
        (Some(6), Some(8))
    );
    assert!(newest.get("treeItems").is_none(), "{newest}");
    // Two more would start at the tool result: the page reaches back to its call.
    let middle = client.ok(
        "session.entries",
        json!({"sessionId": id, "before": newest["before"], "limit": 2}),
    );
    assert_eq!(
        middle["messages"],
        json!(whole["messages"].as_array().unwrap()[3..6])
    );
    assert_eq!(middle["firstMessage"], 3);
    assert_eq!(middle["audit"].as_array().unwrap().len(), 1, "{middle}");
    assert_eq!(middle["audit"][0]["callId"], "call_1");
    assert_eq!(middle["audit"][0]["sessionId"], id.as_str());
    let mut messages = middle["messages"].as_array().unwrap().clone();
    messages.extend(newest["messages"].as_array().unwrap().iter().cloned());
    let mut cursor = middle["before"].clone();
    while !cursor.is_null() {
        let page = client.ok(
            "session.entries",
            json!({"sessionId": id, "before": cursor, "limit": 1}),
        );
        let mut older = page["messages"].as_array().unwrap().clone();
        older.append(&mut messages);
        messages = older;
        cursor = page["before"].clone();
    }
    assert_eq!(json!(messages), whole["messages"]);
    assert_eq!(
        client.ok("session.tree", json!({"sessionId": id}))["treeItems"],
        whole["treeItems"]
    );

    let before = newest["before"].as_str().unwrap();
    let errors = [
        ("session.open", json!({"sessionId": id, "limit": 0}), -32602),
        (
            "session.open",
            json!({"sessionId": id, "limit": 1001}),
            -32602,
        ),
        (
            "session.open",
            json!({"sessionId": id, "limit": "2"}),
            -32602,
        ),
        (
            "session.entries",
            json!({"sessionId": id, "before": "nope"}),
            -32602,
        ),
        (
            "session.entries",
            json!({"sessionId": id, "before": ""}),
            -32602,
        ),
        ("session.entries", json!({"sessionId": id}), -32602),
        (
            "session.entries",
            json!({"sessionId": id, "before": before, "after": 1}),
            -32602,
        ),
        (
            "session.entries",
            json!({"sessionId": "0123456789abcdef", "before": before}),
            -32001,
        ),
        (
            "session.open",
            json!({"sessionId": "0123456789abcdef", "limit": 5}),
            -32001,
        ),
        (
            "session.open",
            json!({"sessionId": "../x", "limit": 5}),
            -32602,
        ),
        (
            "session.tree",
            json!({"sessionId": "0123456789abcdef"}),
            -32001,
        ),
    ];
    for (method, params, want) in errors {
        let error = client.err(method, params.clone());
        assert_eq!(code(&error), want, "{method} {params}: {error}");
    }
}

#[test]
fn approval_round_trip_allow_and_deny_over_stdio() {
    let e = env();
    let server = ScriptedServer::with_replies([
        Reply::tool_call("c1", "write", r#"{"path":"allowed.txt","content":"yes"}"#),
        Reply::text(&["wrote it"]),
        Reply::tool_call("c2", "write", r#"{"path":"denied.txt","content":"no"}"#),
        Reply::text(&["could not"]),
    ]);
    let client = daemon(&e, &server, &[]);
    let session = client.new_session();
    // requireApproval absent means true.
    let run = start(&client, &session, "write a file", None);
    let events = follow(&client, &run, |ev| has_type(ev, "approval_requested"));
    let request = events
        .iter()
        .find(|e| e["type"] == "approval_requested")
        .unwrap();
    let approval_id = request["approval"]["id"].as_str().unwrap().to_string();
    assert_eq!(request["approval"]["request"]["toolName"], "write");
    let status = client.ok("run.get", json!({"runId": run}));
    assert_eq!(status["pendingApprovals"][0]["id"], approval_id.as_str());
    assert_eq!(status["done"], false);
    assert_eq!(
        client.ok("run.active", json!({"sessionId": session}))["id"],
        run.as_str()
    );
    // A run.wait blocked on this run must not hold up the approval: send it first.
    let last = events.last().unwrap()["sequence"].as_u64().unwrap();
    let blocked_wait = client.send("run.wait", json!({"runId": run, "afterSequence": last}));
    assert_eq!(
        client.ok(
            "run.approve",
            json!({"runId": run, "approvalId": approval_id, "allow": true})
        ),
        json!({"ok": true})
    );
    assert!(
        client.response(blocked_wait)["result"]["events"]
            .as_array()
            .is_some()
    );
    let events = follow(&client, &run, |_| false);
    assert_eq!(last_type(&events), "run_completed");
    let resolved = events
        .iter()
        .find(|e| e["type"] == "approval_resolved")
        .unwrap();
    assert_eq!(resolved["decision"]["allow"], true);
    assert_eq!(
        std::fs::read_to_string(e.project.join("allowed.txt")).unwrap(),
        "yes"
    );
    let expired = client.err(
        "run.approve",
        json!({"runId": run, "approvalId": approval_id, "allow": true}),
    );
    assert_eq!(code(&expired), -32004);
    assert_eq!(
        code(&client.err("run.active", json!({"sessionId": session}))),
        -32002
    );

    let run = start(&client, &session, "write another", Some(true));
    let events = follow(&client, &run, |ev| has_type(ev, "approval_requested"));
    let approval_id = events
        .iter()
        .find(|e| e["type"] == "approval_requested")
        .unwrap()["approval"]["id"]
        .clone();
    client.ok(
        "run.approve",
        json!({"runId": run, "approvalId": approval_id, "allow": false}),
    );
    let events = follow(&client, &run, |_| false);
    assert_eq!(last_type(&events), "run_completed");
    let finish = events
        .iter()
        .find(|e| e["agent"]["type"] == "tool_call_finish")
        .unwrap();
    assert_eq!(finish["agent"]["isError"], true);
    assert!(
        finish["agent"]["text"]
            .as_str()
            .unwrap()
            .contains("denied by user"),
        "{finish}"
    );
    assert!(!e.project.join("denied.txt").exists());
}

#[test]
fn unattended_runs_allow_writes_but_deny_dangerous_bash() {
    let e = env();
    let server = ScriptedServer::with_replies([
        Reply::tool_call("c1", "write", r#"{"path":"auto.txt","content":"ok"}"#),
        Reply::tool_call("c2", "bash", r#"{"command":"rm -rf ~"}"#),
        Reply::text(&["done"]),
    ]);
    let client = daemon(&e, &server, &[]);
    let session = client.new_session();
    let run = start(&client, &session, "go", Some(false));
    let events = follow(&client, &run, |_| false);
    assert_eq!(last_type(&events), "run_completed", "{events:?}");
    assert!(!has_type(&events, "approval_requested"));
    assert_eq!(
        std::fs::read_to_string(e.project.join("auto.txt")).unwrap(),
        "ok"
    );
    let bash = events
        .iter()
        .find(|e| e["agent"]["type"] == "tool_call_finish" && e["agent"]["toolName"] == "bash")
        .unwrap();
    assert_eq!(bash["agent"]["isError"], true, "{bash}");
    assert!(
        bash["agent"]["text"].as_str().unwrap().contains("denied"),
        "{bash}"
    );
    assert!(e.home.join("project").exists());
}

/// A client may start the next run the moment it sees the last one's final event. The daemon
/// is held right after it emitted `run_completed` (a test hook, nothing timed): the session
/// must already be free then. Emitting the event before giving the session back made this
/// `run_conflict` (found once on a loaded machine by `cancel_conflict_steer_and_follow_up`).
#[test]
fn the_session_is_free_once_a_run_has_ended() {
    let e = env();
    let server = ScriptedServer::with_replies([Reply::text(&["one"]), Reply::text(&["two"])]);
    let pauses = e.tmp.path().join("pauses");
    std::fs::create_dir_all(&pauses).unwrap();
    let mut cmd = ggd(&e, &server.base_url(), &[]);
    cmd.env("GG_TEST_PAUSE_AT", "run.after-last-event")
        .env("GG_TEST_PAUSE_DIR", &pauses);
    let client = StdioClient::spawn(cmd);
    let session = client.new_session();
    let first = start(&client, &session, "first", None);
    let events = follow(&client, &first, |_| false);
    assert_eq!(last_type(&events), "run_completed");
    let reached = pauses.join("run.after-last-event.reached");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !reached.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "ggd never reached the hook after the run's last event"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Held there, with its last event out: the next run starts.
    let second = start(&client, &session, "second", None);
    std::fs::write(pauses.join("run.after-last-event.go"), "").unwrap();
    let events = follow(&client, &second, |_| false);
    assert_eq!(last_type(&events), "run_completed");
    assert_eq!(events.last().unwrap()["result"]["Content"], "two");
}

#[test]
fn cancel_conflict_steer_and_follow_up() {
    let e = env();
    let server = ScriptedServer::with_replies([
        stalled(),
        StreamReply::new()
            .event(text_chunk("first"))
            .delay(Duration::from_millis(1500))
            .event(finish_chunk("stop"))
            .event(usage_chunk(1, 1))
            .done()
            .reply(),
        Reply::text(&["second"]),
    ]);
    let client = daemon(&e, &server, &[]);
    let session = client.new_session();
    let run = start(&client, &session, "slow", Some(true));
    follow(&client, &run, |ev| {
        ev.iter().any(|e| e["agent"]["type"] == "text_delta")
    });
    let conflict = client.err(
        "run.start",
        json!({"sessionId": session, "prompt": "again"}),
    );
    assert_eq!(code(&conflict), -32003);
    assert_eq!(
        conflict["data"],
        json!({"code": "run_conflict", "retryable": true})
    );
    let busy = client.err(
        "session.action",
        json!({"sessionId": session, "action": "clone"}),
    );
    assert_eq!(code(&busy), -32003);
    // While the run holds the session, get reads it from disk.
    assert_eq!(
        client.ok("session.get", json!({"sessionId": session}))["sessionId"],
        session.as_str()
    );
    assert_eq!(
        client.ok("run.cancel", json!({"runId": run})),
        json!({"ok": true})
    );
    let events = follow(&client, &run, |_| false);
    assert_eq!(last_type(&events), "run_canceled");
    assert_eq!(client.ok("run.get", json!({"runId": run}))["done"], true);
    assert!(client.ok("run.get", json!({"runId": run}))["completedAt"].is_i64());

    // Follow-up: queued during the first turn, it becomes a second turn of the same run.
    let run = start(&client, &session, "two turns", Some(true));
    follow(&client, &run, |ev| {
        ev.iter().any(|e| e["agent"]["text"] == "first")
    });
    client.ok(
        "run.steer",
        json!({"sessionId": session, "text": "and then?", "followUp": true}),
    );
    let events = follow(&client, &run, |_| false);
    assert_eq!(last_type(&events), "run_completed");
    assert_eq!(events.last().unwrap()["result"]["Content"], "second");
    let snapshot = client.ok("session.get", json!({"sessionId": session}));
    let texts: Vec<&str> = snapshot["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(texts.contains(&"and then?"), "{texts:?}");

    let errors: [(&str, Value, i64); 5] = [
        (
            "run.steer",
            json!({"sessionId": session, "text": "x"}),
            -32002,
        ),
        (
            "run.wait",
            json!({"runId": "nope", "afterSequence": 0}),
            -32002,
        ),
        ("run.cancel", json!({"runId": "nope"}), -32002),
        (
            "run.start",
            json!({"sessionId": session, "prompt": "x", "workspace": "elsewhere"}),
            -32008,
        ),
        (
            "run.start",
            json!({"sessionId": "0123456789abcdef", "prompt": "x"}),
            -32001,
        ),
    ];
    for (method, params, want) in errors {
        assert_eq!(
            code(&client.err(method, params.clone())),
            want,
            "{method} {params}"
        );
    }
}

#[test]
fn event_history_expires_beyond_the_buffer() {
    let e = env();
    let deltas: Vec<String> = (0..8300).map(|i| format!("{} ", i % 10)).collect();
    let refs: Vec<&str> = deltas.iter().map(String::as_str).collect();
    let server = ScriptedServer::with_replies([Reply::text(&refs)]);
    let client = daemon(&e, &server, &[]);
    let session = client.new_session();
    let run = start(&client, &session, "count", Some(true));
    let status = loop {
        let status = client.ok("run.get", json!({"runId": run}));
        if status["done"] == true {
            break status;
        }
        client.ok(
            "run.wait",
            json!({"runId": run, "afterSequence": status["lastSequence"]}),
        );
    };
    assert!(status["firstSequence"].as_u64().unwrap() > 1);
    let expired = client.err("run.wait", json!({"runId": run, "afterSequence": 0}));
    assert_eq!(code(&expired), -32005);
    assert_eq!(expired["data"]["retryable"], true);
    let first = status["firstSequence"].as_u64().unwrap();
    let kept = client.ok(
        "run.wait",
        json!({"runId": run, "afterSequence": first - 1}),
    );
    assert_eq!(kept["events"].as_array().unwrap().len(), 8192);
}

#[test]
fn the_seventeenth_concurrent_run_is_refused_and_timeouts_fail_runs() {
    let e = env();
    let server = ScriptedServer::with_replies((0..16).map(|_| stalled()));
    let client = daemon(&e, &server, &["--run-timeout", "60s"]);
    let sessions: Vec<String> = (0..17).map(|_| client.new_session()).collect();
    let runs: Vec<String> = sessions[..16]
        .iter()
        .map(|s| start(&client, s, "hold", Some(true)))
        .collect();
    // Every run has taken its stalled reply before the script gets anything else.
    for run in &runs {
        follow(&client, run, |ev| {
            ev.iter().any(|e| e["agent"]["type"] == "text_delta")
        });
    }
    let refused = client.err(
        "run.start",
        json!({"sessionId": sessions[16], "prompt": "one more"}),
    );
    assert_eq!(code(&refused), -32009, "{refused}");
    assert_eq!(
        refused["data"],
        json!({"code": "run_limit_reached", "retryable": true})
    );
    assert!(refused["message"].as_str().unwrap().contains("limit is 16"));
    // The limit is checked before the session is opened (reading a transcript from disk costs
    // as much as a run): a session that is not even on disk is refused for the limit, not
    // looked up.
    let unopened = client.err(
        "run.start",
        json!({"sessionId": "1234567890123456789", "prompt": "one more"}),
    );
    assert_eq!(code(&unopened), -32009, "{unopened}");
    client.ok("run.cancel", json!({"runId": runs[0]}));
    let events = follow(&client, &runs[0], |_| false);
    assert_eq!(last_type(&events), "run_canceled");
    server.push(Reply::text(&["now there is room"]));
    let run = start(&client, &sessions[16], "one more", Some(true));
    assert_eq!(
        last_type(&follow(&client, &run, |_| false)),
        "run_completed"
    );
    for run in &runs[1..] {
        client.ok("run.cancel", json!({"runId": run}));
    }

    // A run past --run-timeout is cancelled and fails with the reason.
    let e = env();
    let server = ScriptedServer::with_replies([stalled()]);
    let client = daemon(&e, &server, &["--run-timeout", "300ms"]);
    let session = client.new_session();
    let run = start(&client, &session, "forever", Some(true));
    let events = follow(&client, &run, |_| false);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_failed", "{events:?}");
    assert_eq!(last["errorCode"], "run_timeout");
    assert_eq!(last["error"], "run exceeded the run timeout of 300ms");
    // The session is usable again afterwards.
    server.push(Reply::text(&["fine"]));
    let run = start(&client, &session, "quick", Some(true));
    assert_eq!(
        last_type(&follow(&client, &run, |_| false)),
        "run_completed"
    );
}

#[test]
fn instance_lock_status_and_shutdown_with_active_runs() {
    let e = env();
    let server = ScriptedServer::with_replies((0..3).map(|_| stalled()));
    let mut first = daemon(&e, &server, &[]);
    let sessions: Vec<String> = (0..3).map(|_| first.new_session()).collect();
    let runs: Vec<String> = sessions
        .iter()
        .map(|s| start(&first, s, "work", Some(true)))
        .collect();
    for run in &runs {
        follow(&first, run, |ev| {
            ev.iter().any(|e| e["agent"]["type"] == "text_delta")
        });
    }

    let second = ggd(&e, &server.base_url(), &[])
        .stdin(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&second.stderr).contains("ggd is already running"));
    let status = ggd(&e, &server.base_url(), &["status"]).output().unwrap();
    assert_eq!(status.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&status.stdout).trim(),
        "ggd is running"
    );
    // The sidecar exception: serves without channels, ends with its stdin.
    let mut sidecar = daemon(&e, &server, &["--exit-on-stdin-eof"]);
    assert_eq!(
        sidecar.ok("system.info", json!({}))["protocolVersion"],
        "1.6"
    );
    sidecar
        .logs
        .wait_for(|l| l.contains("serving the API without channels"));
    sidecar.close_stdin();
    assert!(sidecar.wait_exit().success());

    // SIGTERM with three runs streaming: exit 0, every session file loads.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(first.child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    assert!(first.wait_exit().success());
    let dir = gg::session::paths::project_dir(&e.sessions, &e.project).unwrap();
    let mut files = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "jsonl") {
            files += 1;
            let transcript =
                gg::session::load(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            assert_eq!(transcript.messages()[0].content, "work");
        }
        assert!(
            !path.to_string_lossy().ends_with(".lock"),
            "a lease was left behind: {}",
            path.display()
        );
    }
    assert_eq!(files, 3);
    let status = ggd(&e, &server.base_url(), &["status"]).output().unwrap();
    assert_eq!(status.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&status.stdout).trim(),
        "ggd is not running"
    );
}

#[test]
fn stdin_eof_ends_the_daemon_and_flag_errors_exit_2() {
    let e = env();
    let server = ScriptedServer::start();
    let mut client = daemon(&e, &server, &[]);
    client.ok("system.info", json!({}));
    client.close_stdin();
    assert!(client.wait_exit().success());
    for line in client.logs.lines() {
        let record: Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("not a JSON log line: {line}"));
        assert!(record["level"].is_string());
    }

    let cases: [(&[&str], &str); 4] = [
        (&["positional"], "ggd does not accept positional arguments"),
        (
            &["--http", "127.0.0.1:0"],
            "--token is required in HTTP mode",
        ),
        (
            &["--http", "0.0.0.0:0", "--token", "t"],
            "HTTP address must be loopback unless --allow-remote is set",
        ),
        (&["--run-timeout", "soon"], "--run-timeout"),
    ];
    for (args, want) in cases {
        let out = ggd(&e, &server.base_url(), args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(want),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let version = ggd(&e, &server.base_url(), &["--version"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&version.stdout).trim(), "ggd 0.1.0");
    let install = ggd(&e, &server.base_url(), &["install-service", "--token", "t"])
        .output()
        .unwrap();
    assert_eq!(install.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&install.stderr).contains("--http"));
}

#[test]
fn open_check_classes_targets_as_the_open_tool_does() {
    let e = env();
    let server = ScriptedServer::start();
    let client = daemon(&e, &server, &[]);
    let public = client.ok("open.check", json!({"target": "https://crates.io"}));
    assert_eq!(public["target"], "https://crates.io/");
    assert_eq!(public["class"], "normal", "{public}");
    for dangerous in [
        "https://user:pw@crates.io/",
        // Off the network allow-list: the path and the name carry data too.
        "https://docs.rs",
        "https://collector.example/SECRET",
        "http://192.168.1.1/",
        "https://collector.example/?d=SECRET",
        "ssh://host",
    ] {
        let checked = client.ok("open.check", json!({"target": dangerous}));
        assert_eq!(checked["class"], "dangerous", "{dangerous}: {checked}");
        assert!(!checked["reason"].as_str().unwrap().is_empty());
    }
    for bad in [
        json!({"target": ""}),
        json!({"target": "a\u{7}b"}),
        json!({}),
    ] {
        assert_eq!(code(&client.err("open.check", bad)), -32602);
    }
}
