//! The agent loop against the scripted OpenAI-compatible server over loopback, with real files,
//! real processes and a real session file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gg::agent::chain::{Assessment, Proposal, ProposeError, Tool, ToolBox};
use gg::agent::{
    Agent, AgentEvent, Answer, ApprovalPrompt, Approver, Gate, MessageQueue, NobodyToAsk, TurnError,
};
use gg::provider::{CancellationToken, Provider, ProviderConfig};
use gg::session::{Role, Session};
use gg::tools::registry::SandboxSetting;
use policies::{Mode, Terminal};
use serde_json::json;
use support::{
    Reply, ScriptedServer, StreamReply, finish_chunk, text_chunk, tool_call_chunk, usage_chunk,
};

struct Fixture {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    home: PathBuf,
    session_path: PathBuf,
}

fn fixture() -> Fixture {
    // Outside /tmp: /tmp is a scratch directory, where the classifier allows writes.
    let tmp = support::fixture_dir();
    let home = tmp.path().join("home");
    let repo = home.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    Fixture {
        repo: repo.canonicalize().unwrap(),
        home: home.canonicalize().unwrap(),
        session_path: tmp.path().join("session.jsonl"),
        _tmp: tmp,
    }
}

fn agent(
    f: &Fixture,
    server: &ScriptedServer,
    mode: Mode,
    terminal: Terminal,
    approver: Arc<dyn Approver>,
) -> Agent {
    agent_with(f, server, Gate::new(mode, terminal, approver), Vec::new())
}

fn agent_with(
    f: &Fixture,
    server: &ScriptedServer,
    gate: Gate,
    external: Vec<Arc<dyn Tool>>,
) -> Agent {
    let mut config = ProviderConfig::new(server.base_url(), "test-key", "test-model");
    config.retry.max_retries = 0;
    let provider = Provider::new(config).unwrap();
    let mut tools = ToolBox::new(&f.repo, SandboxSetting::Off, Vec::new()).unwrap();
    // The classifier must see the fixture's home, not the test runner's.
    tools.classifier_context_mut().home = f.home.clone();
    // And so must the shell: if the classifier ever let `rm -rf ~` through, it would hit the
    // fixture's home, not the real one of whoever runs the tests.
    tools.set_child_env("HOME", &f.home);
    tools.add_tools(external);
    Agent {
        provider,
        tools: Arc::new(tools),
        gate: Arc::new(gate),
        budget: gg::agent::context::ContextBudget::default(),
        images: None,
    }
}

type Events = Arc<Mutex<Vec<AgentEvent>>>;

fn recorder() -> (Events, impl Fn(AgentEvent) + Send + Sync) {
    let events: Events = Arc::default();
    let sink_events = Arc::clone(&events);
    (events, move |e: AgentEvent| {
        sink_events.lock().unwrap().push(e)
    })
}

fn tool_results(session_path: &Path) -> Vec<(String, String, bool)> {
    let transcript = gg::session::load(session_path).unwrap();
    transcript
        .messages()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| (m.tool_name.clone(), m.display_text(), !m.error.is_empty()))
        .collect()
}

fn many_calls(calls: &[(&str, &str, serde_json::Value)]) -> Reply {
    let mut stream = StreamReply::new();
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let text = args.to_string();
        let (a, b) = text.split_at(text.len() / 2);
        stream = stream
            .event(tool_call_chunk(i as u32, Some(id), Some(name), a))
            .event(tool_call_chunk(i as u32, None, None, b));
    }
    stream
        .event(finish_chunk("tool_calls"))
        .event(usage_chunk(5, 5))
        .done()
        .reply()
}

struct Scripted(Mutex<Vec<Answer>>, Mutex<Vec<ApprovalPrompt>>);

impl Approver for Scripted {
    fn ask<'a>(&'a self, prompt: &'a ApprovalPrompt) -> gg::agent::approval::AnswerFuture<'a> {
        self.1.lock().unwrap().push(prompt.clone());
        let answer = self.0.lock().unwrap().remove(0);
        Box::pin(async move { Ok(answer) })
    }
}

#[tokio::test]
async fn a_multi_step_turn_reads_edits_runs_and_answers() {
    let f = fixture();
    std::fs::write(f.repo.join("greeting.txt"), "hello world\n").unwrap();
    let server = ScriptedServer::with_replies([
        Reply::tool_call("c1", "read", &json!({"path": "greeting.txt"}).to_string()),
        Reply::tool_call(
            "c2",
            "edit",
            &json!({"path": "greeting.txt",
            "edits": [{"oldText": "world", "newText": "gg"}]})
            .to_string(),
        ),
        Reply::tool_call(
            "c3",
            "bash",
            &json!({"command": "cat greeting.txt && echo made > made.txt"}).to_string(),
        ),
        Reply::text(&["Done: ", "greeting updated."]),
    ]);
    let agent = agent(
        &f,
        &server,
        Mode::Yolo,
        Terminal::Absent,
        Arc::new(NobodyToAsk),
    );
    let mut session = Session::create_at(&f.session_path, &f.repo.display().to_string()).unwrap();
    let (events, sink) = recorder();
    let outcome = agent
        .run_turn(
            &mut session,
            &["system".to_string()],
            "say hello to gg",
            &MessageQueue::new(),
            &sink,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "Done: greeting updated.");
    assert_eq!(outcome.model_requests, 4);
    assert_eq!(
        std::fs::read_to_string(f.repo.join("greeting.txt")).unwrap(),
        "hello gg\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.repo.join("made.txt")).unwrap(),
        "made\n"
    );

    let results = tool_results(&f.session_path);
    assert_eq!(results.len(), 3);
    assert_eq!(results[0], ("read".into(), "hello world\n".into(), false));
    assert!(results[2].1.contains("hello gg\n"), "{:?}", results[2]);
    assert!(
        results[2].1.contains("[gg: command classified normal]"),
        "{:?}",
        results[2]
    );

    // The model saw each tool result on its next request.
    let bodies = server.request_bodies();
    let last_messages = bodies[3]["messages"].as_array().unwrap();
    let tool_msgs: Vec<_> = last_messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(tool_msgs.len(), 3);
    assert_eq!(tool_msgs[0]["tool_call_id"], "c1");
    assert_eq!(bodies[0]["tools"].as_array().unwrap().len(), 6);

    // Audit trail: the bash call records its classification and who decided.
    let transcript = gg::session::load(&f.session_path).unwrap();
    let trail = gg::session::audit_trail(&transcript);
    let bash = trail.iter().find(|r| r.tool == "bash").unwrap();
    let audit = bash.audit.as_ref().unwrap();
    assert_eq!(audit.classification.as_ref().unwrap().verdict, "normal");
    let decision = audit.decision.as_ref().unwrap();
    assert_eq!(
        (decision.action.as_str(), decision.decided_by.as_str()),
        ("allow", "policy")
    );
    assert_eq!(decision.rule.as_deref(), Some("yolo-allow"));
    let deltas: String = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta(t) => Some(t.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, "Done: greeting updated.");
}

#[tokio::test]
async fn decisions_read_only_runs_normal_denied_dangerous_denied_even_in_yolo() {
    let f = fixture();
    std::fs::write(f.home.join("precious.txt"), "keep me").unwrap();
    // auto, no terminal: read-only bash runs, normal bash is denied.
    let server = ScriptedServer::with_replies([
        many_calls(&[
            ("c1", "bash", json!({"command": "ls"})),
            ("c2", "bash", json!({"command": "touch created.txt"})),
        ]),
        Reply::text(&["ok"]),
    ]);
    let a = agent(
        &f,
        &server,
        Mode::Auto,
        Terminal::Absent,
        Arc::new(NobodyToAsk),
    );
    let mut session = Session::create_at(&f.session_path, &f.repo.display().to_string()).unwrap();
    let (_, sink) = recorder();
    let outcome = a
        .run_turn(
            &mut session,
            &[],
            "go",
            &MessageQueue::new(),
            &sink,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.denied_calls, 1);
    assert!(!f.repo.join("created.txt").exists());
    let results = tool_results(&f.session_path);
    assert!(!results[0].2, "ls ran: {:?}", results[0]);
    assert!(results[1].2);
    assert!(
        results[1].1.contains("--yolo"),
        "denial explains itself: {}",
        results[1].1
    );

    // The shell runs with the fixture's home (what `rm -rf ~` below would aim at).
    let server = ScriptedServer::with_replies([
        Reply::tool_call(
            "h1",
            "bash",
            &json!({"command": "echo \"home=$HOME\""}).to_string(),
        ),
        Reply::text(&["ok"]),
    ]);
    let a = agent(
        &f,
        &server,
        Mode::Yolo,
        Terminal::Absent,
        Arc::new(NobodyToAsk),
    );
    let path_home = f.session_path.with_file_name("s-home.jsonl");
    let mut session = Session::create_at(&path_home, &f.repo.display().to_string()).unwrap();
    a.run_turn(
        &mut session,
        &[],
        "where is home",
        &MessageQueue::new(),
        &sink,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let results = tool_results(&path_home);
    assert!(
        results[0].1.contains(&format!("home={}", f.home.display())),
        "{}",
        results[0].1
    );

    // yolo, no terminal: rm -rf ~ is dangerous and denied; home survives.
    let server = ScriptedServer::with_replies([
        Reply::tool_call("d1", "bash", &json!({"command": "rm -rf ~"}).to_string()),
        Reply::text(&["could not"]),
    ]);
    let a = agent(
        &f,
        &server,
        Mode::Yolo,
        Terminal::Absent,
        Arc::new(NobodyToAsk),
    );
    let path2 = f.session_path.with_file_name("s2.jsonl");
    let mut session = Session::create_at(&path2, &f.repo.display().to_string()).unwrap();
    let outcome = a
        .run_turn(
            &mut session,
            &[],
            "clean up",
            &MessageQueue::new(),
            &sink,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.denied_calls, 1);
    assert_eq!(
        std::fs::read_to_string(f.home.join("precious.txt")).unwrap(),
        "keep me"
    );
    let results = tool_results(&path2);
    assert!(results[0].1.contains("dangerous"), "{}", results[0].1);
}

#[tokio::test]
async fn a_person_answers_prompts_and_allow_for_session_covers_repeats_but_never_danger() {
    let f = fixture();
    let server = ScriptedServer::with_replies([
        many_calls(&[
            ("c1", "bash", json!({"command": "touch a.txt"})),
            ("c2", "bash", json!({"command": "touch a.txt"})),
            ("c3", "bash", json!({"command": "touch b.txt"})),
            ("c4", "bash", json!({"command": "sudo true"})),
            ("c5", "bash", json!({"command": "sudo true"})),
        ]),
        Reply::text(&["ok"]),
    ]);
    let approver = Arc::new(Scripted(
        Mutex::new(vec![
            Answer::AllowForSession,
            Answer::Deny,
            Answer::AllowForSession,
            Answer::Deny,
        ]),
        Mutex::default(),
    ));
    let a = agent(&f, &server, Mode::Auto, Terminal::Present, approver.clone());
    let mut session = Session::create_at(&f.session_path, &f.repo.display().to_string()).unwrap();
    let (events, sink) = recorder();
    a.run_turn(
        &mut session,
        &[],
        "go",
        &MessageQueue::new(),
        &sink,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    // UIs are told about exactly the prompts a person saw.
    let requested: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ApprovalRequested(p) => Some(p.call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(requested, ["c1", "c3", "c4", "c5"]);
    let asked: Vec<String> = approver
        .1
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.call_id.clone())
        .collect();
    // c2 repeats c1 exactly: covered by the session grant. c5 repeats a dangerous command: asked again.
    assert_eq!(asked, ["c1", "c3", "c4", "c5"]);
    assert!(f.repo.join("a.txt").exists());
    assert!(!f.repo.join("b.txt").exists());
    let transcript = gg::session::load(&f.session_path).unwrap();
    let trail = gg::session::audit_trail(&transcript);
    let by: Vec<String> = trail
        .iter()
        .map(|r| {
            r.audit
                .as_ref()
                .unwrap()
                .decision
                .as_ref()
                .unwrap()
                .decided_by
                .clone()
        })
        .collect();
    assert_eq!(by, ["user", "session-rule", "user", "user", "user"]);
}

#[tokio::test]
async fn read_and_grep_overlap_up_to_four_and_writes_are_barriers() {
    let f = fixture();
    // Enough data that each grep takes measurable time.
    for d in 0..4 {
        let dir = f.repo.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..60 {
            std::fs::write(
                dir.join(format!("f{i}.txt")),
                "some text without the word\n".repeat(4000),
            )
            .unwrap();
        }
    }
    let mut calls: Vec<(String, &str, serde_json::Value)> = Vec::new();
    for i in 0..6 {
        calls.push((
            format!("g{i}"),
            "grep",
            json!({"pattern": "needle", "path": format!("d{}", i % 4)}),
        ));
    }
    calls.push((
        "w".into(),
        "write",
        json!({"path": "out.txt", "content": "x"}),
    ));
    calls.push((
        "g6".into(),
        "grep",
        json!({"pattern": "needle", "path": "d0"}),
    ));
    let refs: Vec<(&str, &str, serde_json::Value)> = calls
        .iter()
        .map(|(a, b, c)| (a.as_str(), *b, c.clone()))
        .collect();
    let server = ScriptedServer::with_replies([many_calls(&refs), Reply::text(&["ok"])]);
    let a = agent(
        &f,
        &server,
        Mode::Yolo,
        Terminal::Absent,
        Arc::new(NobodyToAsk),
    );
    let mut session = Session::create_at(&f.session_path, &f.repo.display().to_string()).unwrap();
    let (events, sink) = recorder();
    a.run_turn(
        &mut session,
        &[],
        "search",
        &MessageQueue::new(),
        &sink,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let spans: Vec<(String, std::time::Instant, std::time::Instant)> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolCallFinish {
                id,
                ran: Some((s, e)),
                ..
            } => Some((id.clone(), *s, *e)),
            _ => None,
        })
        .collect();
    assert_eq!(spans.len(), 8);
    let max_overlap = spans
        .iter()
        .map(|(_, start, _)| {
            spans
                .iter()
                .filter(|(_, s, e)| s <= start && start < e)
                .count()
        })
        .max()
        .unwrap();
    assert!(
        max_overlap >= 2,
        "greps ran concurrently (max overlap {max_overlap})"
    );
    assert!(
        max_overlap <= 4,
        "never more than four at once ({max_overlap})"
    );
    let span = |id: &str| spans.iter().find(|(i, ..)| i == id).unwrap().clone();
    let (_, w_start, w_end) = span("w");
    for (id, s, e) in &spans {
        if id != "w" {
            assert!(
                *e <= w_start || *s >= w_end,
                "{id} overlapped the write barrier"
            );
        }
    }
    // Results stay in call order in the session.
    let names: Vec<String> = tool_results(&f.session_path)
        .into_iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(
        names,
        [
            "grep", "grep", "grep", "grep", "grep", "grep", "write", "grep"
        ]
    );
}

struct Panicker;

impl Tool for Panicker {
    fn name(&self) -> &str {
        "explode"
    }
    fn description(&self) -> &str {
        "panics"
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    fn propose(&self, _: &str) -> Result<Proposal, ProposeError> {
        Ok(Proposal::tool(
            Assessment::Normal,
            "explode".into(),
            String::new(),
            "explode".into(),
            |_cancel: CancellationToken| Box::pin(async { panic!("boom at the tool") }),
        ))
    }
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result_and_the_turn_goes_on() {
    let f = fixture();
    let server = ScriptedServer::with_replies([
        Reply::tool_call("p1", "explode", "{}"),
        Reply::text(&["recovered"]),
    ]);
    let a = agent_with(
        &f,
        &server,
        Gate::new(Mode::Yolo, Terminal::Absent, Arc::new(NobodyToAsk)),
        vec![Arc::new(Panicker)],
    );
    let mut session = Session::create_at(&f.session_path, &f.repo.display().to_string()).unwrap();
    let (_, sink) = recorder();
    let outcome = a
        .run_turn(
            &mut session,
            &[],
            "go",
            &MessageQueue::new(),
            &sink,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "recovered");
    let results = tool_results(&f.session_path);
    assert_eq!(results[0].1, "tool \"explode\" panicked: boom at the tool");
    assert!(results[0].2);
}

#[tokio::test]
async fn cancellation_mid_stream_keeps_partial_text_and_mid_tool_kills_bash() {
    let f = fixture();
    let slow = StreamReply::new()
        .event(text_chunk("partial "))
        .event(text_chunk("answer"))
        .delay(Duration::from_secs(30))
        .event(finish_chunk("stop"))
        .done()
        .reply();
    let server = ScriptedServer::with_replies([slow]);
    let a = agent(
        &f,
        &server,
        Mode::Yolo,
        Terminal::Absent,
        Arc::new(NobodyToAsk),
    );
    let mut session = Session::create_at(&f.session_path, &f.repo.display().to_string()).unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let sink = move |e: AgentEvent| {
        if e == AgentEvent::TextDelta("answer".into()) {
            trigger.cancel();
        }
    };
    let err = a
        .run_turn(
            &mut session,
            &[],
            "go",
            &MessageQueue::new(),
            &sink,
            &cancel,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, TurnError::Canceled), "{err:?}");
    let transcript = gg::session::load(&f.session_path).unwrap();
    let last = transcript.messages().last().cloned().cloned().unwrap();
    assert_eq!(last.role, Role::Assistant);
    assert_eq!(last.content, "partial answer");
    assert_eq!(last.stop_reason, Some(gg::session::StopReason::Canceled));

    // Mid-tool: a long bash is killed, the next call never starts, results stay consistent.
    let server = ScriptedServer::with_replies([many_calls(&[
        ("b1", "bash", json!({"command": "sleep 30"})),
        ("b2", "write", json!({"path": "never.txt", "content": "x"})),
    ])]);
    let a = agent(
        &f,
        &server,
        Mode::Yolo,
        Terminal::Absent,
        Arc::new(NobodyToAsk),
    );
    let path2 = f.session_path.with_file_name("s2.jsonl");
    let mut session = Session::create_at(&path2, &f.repo.display().to_string()).unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        trigger.cancel();
    });
    let started = std::time::Instant::now();
    let err = a
        .run_turn(
            &mut session,
            &[],
            "go",
            &MessageQueue::new(),
            &|_| {},
            &cancel,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, TurnError::Canceled));
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(!f.repo.join("never.txt").exists());
    let results = tool_results(&path2);
    assert_eq!(results.len(), 2, "every call has a result");
    assert!(
        results[0].1.contains("command canceled"),
        "{:?}",
        results[0]
    );
    assert_eq!(results[1].1, "tool not executed: context canceled");
}

#[tokio::test]
async fn interrupted_calls_are_recovered_on_the_next_turn_never_replayed() {
    let f = fixture();
    let mut session = Session::create_at(&f.session_path, &f.repo.display().to_string()).unwrap();
    let mut assistant = gg::session::Message::text(Role::Assistant, "");
    assistant.tool_calls.push(
        gg::session::ToolCall::new("x1", "bash", r#"{"command":"touch replayed.txt"}"#).unwrap(),
    );
    session
        .append_message(gg::session::Message::text(Role::User, "first"))
        .unwrap();
    session.append_message(assistant).unwrap();
    drop(session);
    let server = ScriptedServer::with_replies([Reply::text(&["checked"])]);
    let a = agent(
        &f,
        &server,
        Mode::Yolo,
        Terminal::Absent,
        Arc::new(NobodyToAsk),
    );
    let mut session = Session::open(&f.session_path).unwrap();
    a.run_turn(
        &mut session,
        &[],
        "again",
        &MessageQueue::new(),
        &|_| {},
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert!(!f.repo.join("replayed.txt").exists());
    let results = tool_results(&f.session_path);
    assert_eq!(results[0].1, gg::session::INTERRUPTED_TOOL_RESULT);
    let body = &server.request_bodies()[0];
    let roles: Vec<&str> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user"]);
}

#[tokio::test]
async fn steering_is_taken_into_the_running_turn() {
    let f = fixture();
    let server = ScriptedServer::with_replies([
        Reply::tool_call("c1", "list", "{}"),
        Reply::text(&["first answer"]),
        Reply::text(&["steered answer"]),
    ]);
    let a = agent(
        &f,
        &server,
        Mode::Yolo,
        Terminal::Absent,
        Arc::new(NobodyToAsk),
    );
    let mut session = Session::create_at(&f.session_path, &f.repo.display().to_string()).unwrap();
    let queue = Arc::new(MessageQueue::new());
    let q = Arc::clone(&queue);
    let sink = move |e: AgentEvent| {
        if matches!(e, AgentEvent::ToolCallFinish { .. }) {
            q.add("also check the tests", false);
        }
        if let AgentEvent::TextDelta(t) = &e
            && t == "first answer"
        {
            q.add("and one more thing", false);
            q.add("a follow-up for later", true);
        }
    };
    let outcome = a
        .run_turn(
            &mut session,
            &[],
            "look around",
            &queue,
            &sink,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "steered answer");
    let bodies = server.request_bodies();
    let users = |i: usize| -> Vec<String> {
        bodies[i]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(users(1), ["look around", "also check the tests"]);
    assert_eq!(
        users(2),
        ["look around", "also check the tests", "and one more thing"]
    );
    assert_eq!(queue.pop_next().as_deref(), Some("a follow-up for later"));
}

#[tokio::test]
async fn too_many_requests_ends_the_turn_with_the_reference_message() {
    let f = fixture();
    let server = ScriptedServer::start();
    for i in 0..33 {
        server.push(Reply::tool_call(&format!("c{i}"), "list", "{}"));
    }
    let a = agent(
        &f,
        &server,
        Mode::Yolo,
        Terminal::Absent,
        Arc::new(NobodyToAsk),
    );
    let mut session = Session::create_at(&f.session_path, &f.repo.display().to_string()).unwrap();
    let err = a
        .run_turn(
            &mut session,
            &[],
            "loop",
            &MessageQueue::new(),
            &|_| {},
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.to_string(), "agent exceeded 32 turns");
    assert_eq!(server.request_bodies().len(), 32);
}
