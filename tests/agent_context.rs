//! Context budget and compaction against the scripted OpenAI-compatible server
//! over loopback, with real session files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gg::agent::ToolBox;
use gg::agent::context::{
    COMPACTION_SYSTEM_PROMPT, ContextBudget, ContextError, build_context, compact_now,
    context_report, estimate_message, estimate_text, estimate_tools, summary_message,
};
use gg::agent::{Agent, Gate, MessageQueue, NobodyToAsk, TurnError};
use gg::provider::{CancellationToken, Provider, ProviderConfig, ToolDefinition};
use gg::session::{EntryKind, Message, Role, Session};
use gg::tools::registry::SandboxSetting;
use policies::{Mode, Terminal};
use serde_json::Value;
use support::{Reply, ScriptedServer};

const SYSTEM: &str = "sys";

struct Fixture {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    session_path: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    Fixture {
        repo: repo.canonicalize().unwrap(),
        session_path: tmp.path().join("session.jsonl"),
        _tmp: tmp,
    }
}

fn provider(server: &ScriptedServer) -> Provider {
    let mut config = ProviderConfig::new(server.base_url(), "test-key", "test-model");
    config.retry.max_retries = 0;
    Provider::new(config).unwrap()
}

fn budget(max_prompt_tokens: u32, tail_turns: u32, summary_max_tokens: u32) -> ContextBudget {
    ContextBudget {
        max_prompt_tokens,
        max_output_tokens: 321,
        tail_turns,
        summary_max_tokens,
        auto_compact: true,
    }
}

fn user(text: &str) -> Message {
    Message::text(Role::User, text)
}

fn assistant(text: &str) -> Message {
    Message::text(Role::Assistant, text)
}

/// `turns` user/assistant pairs whose texts are `chars` long and start with their position.
fn conversation(turns: usize, chars: usize) -> Vec<Message> {
    (0..turns)
        .flat_map(|i| {
            [
                user(&padded(&format!("question {i} "), chars)),
                assistant(&padded(&format!("answer {i} "), chars)),
            ]
        })
        .collect()
}

fn padded(prefix: &str, chars: usize) -> String {
    format!("{prefix}{}", "x".repeat(chars.saturating_sub(prefix.len())))
}

fn session_with(f: &Fixture, history: &[Message]) -> Session {
    let mut session = Session::create_at(&f.session_path, &f.repo.display().to_string()).unwrap();
    for message in history {
        session.append_message(message.clone()).unwrap();
    }
    session
}

fn system() -> Vec<String> {
    vec![SYSTEM.to_string()]
}

/// `(role, content)` of every message of a request body.
fn roles_and_texts(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn expected(messages: &[(&str, &str)]) -> Vec<(String, String)> {
    messages
        .iter()
        .map(|(r, t)| (r.to_string(), t.to_string()))
        .collect()
}

/// `(summary, throughMessageCount)` of every summary entry in the file, in order.
fn summaries(path: &Path) -> Vec<(String, u64)> {
    gg::session::load(path)
        .unwrap()
        .entries()
        .iter()
        .filter_map(|e| match &e.kind {
            EntryKind::Summary {
                summary,
                through_message_count,
            } => Some((summary.clone(), *through_message_count)),
            _ => None,
        })
        .collect()
}

fn entry_types(path: &Path) -> Vec<&'static str> {
    gg::session::load(path)
        .unwrap()
        .entries()
        .iter()
        .map(|e| e.kind.type_name())
        .collect()
}

fn provider_messages(history: &[Message]) -> Vec<(String, String)> {
    history
        .iter()
        .map(|m| {
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
                Role::Tool => "tool",
                Role::System => "system",
            };
            (role.to_string(), m.display_text())
        })
        .collect()
}

fn agent(f: &Fixture, server: &ScriptedServer, budget: ContextBudget) -> Agent {
    Agent {
        provider: provider(server),
        tools: Arc::new(ToolBox::new(&f.repo, SandboxSetting::Off, Vec::new()).unwrap()),
        gate: Arc::new(Gate::new(
            Mode::Yolo,
            Terminal::Absent,
            Arc::new(NobodyToAsk),
        )),
        budget,
        images: None,
    }
}

fn tool_definitions(agent: &Agent) -> Vec<ToolDefinition> {
    agent
        .tools
        .specs()
        .into_iter()
        .map(|(name, description, parameters)| ToolDefinition {
            name,
            description,
            parameters,
        })
        .collect()
}

fn estimate_system(text: &str) -> u64 {
    4 + estimate_text("system") + estimate_text(text)
}

#[tokio::test]
async fn under_budget_the_request_is_system_and_the_whole_history() {
    let f = fixture();
    let server = ScriptedServer::with_replies([Reply::text(&["fine"])]);
    let agent = agent(&f, &server, budget(24000, 6, 1200));
    let mut session = session_with(&f, &[user("earlier"), assistant("earlier answer")]);
    let sink = |_| {};
    let outcome = agent
        .run_turn(
            &mut session,
            &system(),
            "now",
            &MessageQueue::new(),
            &sink,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "fine");
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 1, "no compaction request");
    assert_eq!(
        roles_and_texts(&bodies[0]),
        expected(&[
            ("system", SYSTEM),
            ("user", "earlier"),
            ("assistant", "earlier answer"),
            ("user", "now")
        ])
    );
    assert_eq!(
        bodies[0]["max_tokens"], 321,
        "maxOutputTokens of the budget"
    );
    assert!(summaries(&f.session_path).is_empty());
}

#[tokio::test]
async fn over_budget_the_turn_compacts_then_sends_the_summary_and_the_tail() {
    let f = fixture();
    let server = ScriptedServer::with_replies([
        Reply::text(&["- the user asked ", "three questions"]),
        Reply::text(&["done"]),
    ]);
    let history = conversation(3, 400);
    let mut session = session_with(&f, &history);
    // Room for the tools, the system prompt, the summary and the last two turns (one before the
    // new prompt), but not for the whole history.
    let probe = agent(&f, &server, ContextBudget::default());
    let tool_tokens = estimate_tools(&tool_definitions(&probe));
    let agent = agent(&f, &server, budget(tool_tokens as u32 + 500, 1, 100));

    let sink = |_| {};
    let outcome = agent
        .run_turn(
            &mut session,
            &system(),
            "now",
            &MessageQueue::new(),
            &sink,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.final_text, "done");

    let bodies = server.request_bodies();
    assert_eq!(
        bodies.len(),
        2,
        "one summary request, then the model request"
    );
    let compaction = roles_and_texts(&bodies[0]);
    assert_eq!(compaction.len(), 2);
    assert_eq!(
        compaction[0],
        ("system".to_string(), COMPACTION_SYSTEM_PROMPT.to_string())
    );
    assert_eq!(compaction[1].0, "user");
    let prompt = &compaction[1].1;
    assert!(
        prompt.starts_with(
            "Summarize the following gg conversation history in at most 100 tokens.\n"
        )
    );
    assert!(prompt.contains("[user]\nquestion 0 ") && prompt.contains("[assistant]\nanswer 1 "));
    assert!(
        !prompt.contains("question 2"),
        "the kept tail is not summarised"
    );
    assert_eq!(bodies[0]["max_tokens"], 100, "summaryMaxTokens");
    assert!(
        bodies[0].get("tools").is_none(),
        "the summariser gets no tools"
    );

    let mut want = vec![
        ("system".to_string(), SYSTEM.to_string()),
        (
            "system".to_string(),
            "Conversation summary for earlier messages:\n- the user asked three questions"
                .to_string(),
        ),
    ];
    want.extend(provider_messages(&history[4..]));
    want.push(("user".to_string(), "now".to_string()));
    assert_eq!(roles_and_texts(&bodies[1]), want);
    assert_eq!(bodies[1]["max_tokens"], 321);

    assert_eq!(
        summaries(&f.session_path),
        vec![("- the user asked three questions".to_string(), 4)]
    );
    let types = entry_types(&f.session_path);
    let summary_at = types.iter().position(|t| *t == "summary").unwrap();
    assert_eq!(
        types[summary_at - 1],
        "usage",
        "the summary request's usage is recorded before it"
    );
    // Reply::text reports 10 prompt tokens per request.
    assert_eq!(
        outcome.usage.prompt_tokens, 20,
        "compaction usage counts towards the turn"
    );
}

#[tokio::test]
async fn a_long_prefix_is_summarised_in_batches_that_each_fit_the_budget() {
    let f = fixture();
    let server = ScriptedServer::start();
    for i in 1..=12 {
        server.push(Reply::text(&[&format!("- summary {i}")]));
    }
    let history = conversation(6, 400);
    let mut session = session_with(&f, &history);
    let budget = budget(400, 1, 50);

    let built = build_context(
        &provider(&server),
        &mut session,
        &system(),
        &[],
        &budget,
        None,
        &CancellationToken::new(),
    )
    .await
    .unwrap();

    let bodies = server.request_bodies();
    let written = summaries(&f.session_path);
    assert!(bodies.len() >= 2, "{} requests", bodies.len());
    assert_eq!(written.len(), bodies.len(), "one summary entry per batch");
    for (i, body) in bodies.iter().enumerate() {
        let messages = roles_and_texts(body);
        let tokens = estimate_system(&messages[0].1)
            + 4
            + estimate_text("user")
            + estimate_text(&messages[1].1);
        assert!(tokens <= 400, "batch {i} needs {tokens} tokens");
        assert_eq!(body["max_tokens"], 50);
        if i > 0 {
            assert!(
                messages[1].1.contains(&format!(
                    "Existing summary to carry forward:\n- summary {i}\n"
                )),
                "batch {i} carries the previous summary forward"
            );
        }
    }
    let throughs: Vec<u64> = written.iter().map(|(_, t)| *t).collect();
    assert!(throughs.windows(2).all(|w| w[0] < w[1]), "{throughs:?}");
    // The tail budget is 400 - 7 - 50 - 32 = 311 tokens: only the last turn (212) fits.
    assert_eq!(*throughs.last().unwrap(), 10);

    let last = &written.last().unwrap().0;
    let mut want = vec![
        ("system".to_string(), SYSTEM.to_string()),
        ("system".to_string(), summary_message(last)),
    ];
    want.extend(provider_messages(&history[10..]));
    let got: Vec<(String, String)> = built
        .messages
        .iter()
        .map(|m| (m.role.as_str().to_string(), m.content.clone()))
        .collect();
    assert_eq!(got, want);
    assert!(built.prompt_tokens <= 400);
    assert_eq!(
        built.compaction_usage.prompt_tokens,
        10 * bodies.len() as u64
    );
}

#[tokio::test]
async fn a_single_message_larger_than_a_summary_request_fails_compaction() {
    let f = fixture();
    let server = ScriptedServer::start();
    let mut history = vec![user(&"h".repeat(4000)), assistant("ok")];
    history.extend(conversation(2, 50));
    let mut session = session_with(&f, &history);

    let err = build_context(
        &provider(&server),
        &mut session,
        &system(),
        &[],
        &budget(600, 1, 50),
        None,
        &CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ContextError::MessageTooLarge), "{err:?}");
    assert_eq!(
        err.to_string(),
        "context compaction failed: a history message exceeds the summary request budget; increase context.maxPromptTokens"
    );
    assert!(server.requests().is_empty());
    assert!(summaries(&f.session_path).is_empty());
}

#[tokio::test]
async fn a_context_still_over_budget_after_compaction_is_refused() {
    let f = fixture();
    let server = ScriptedServer::with_replies([Reply::text(&["- short"])]);
    let mut history = conversation(2, 200);
    let huge = user(&"q".repeat(4000));
    history.push(huge.clone());
    let mut session = session_with(&f, &history);

    let err = build_context(
        &provider(&server),
        &mut session,
        &system(),
        &[],
        &budget(600, 1, 50),
        None,
        &CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert_eq!(
        server.request_bodies().len(),
        1,
        "the prefix was compacted first"
    );
    assert_eq!(summaries(&f.session_path), vec![("- short".to_string(), 4)]);
    let required = estimate_system(SYSTEM)
        + estimate_system(&summary_message("- short"))
        + estimate_message(&huge);
    assert!(
        matches!(err, ContextError::OverBudget { required: r, budget: 600 } if r == required),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "context requires approximately {required} prompt tokens (including tools), budget is 600; shorten the input or increase context.maxPromptTokens"
        )
    );
}

#[tokio::test]
async fn without_auto_compact_an_over_budget_turn_fails_before_any_request() {
    let f = fixture();
    let server = ScriptedServer::start();
    let mut budget = budget(24000, 6, 1200);
    budget.auto_compact = false;
    let agent = agent(&f, &server, budget);
    let tool_tokens = estimate_tools(&tool_definitions(&agent));
    let prompt = "p".repeat(100_000);
    let mut session = session_with(&f, &[]);
    let sink = |_| {};
    let err = agent
        .run_turn(
            &mut session,
            &system(),
            &prompt,
            &MessageQueue::new(),
            &sink,
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    let required = estimate_system(SYSTEM) + estimate_message(&user(&prompt)) + tool_tokens;
    assert!(matches!(&err, TurnError::Setup(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "context requires approximately {required} prompt tokens (including tools), budget is 24000; shorten the input or increase context.maxPromptTokens"
        )
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn compact_command_keeps_the_last_tail_turns() {
    let f = fixture();
    let server = ScriptedServer::with_replies([Reply::text(&["- first two turns"])]);
    let mut session = session_with(&f, &conversation(4, 20));
    let provider = provider(&server);
    let budget = budget(24000, 2, 1200);

    let text = compact_now(&provider, &mut session, &budget, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        text,
        "context compacted: summarized 4 messages, kept 2 turns"
    );
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 1);
    assert_eq!(bodies[0]["max_tokens"], 1200);
    assert_eq!(
        summaries(&f.session_path),
        vec![("- first two turns".to_string(), 4)]
    );

    // Nothing new to summarise: no request, nothing written.
    let again = compact_now(&provider, &mut session, &budget, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        again,
        "context compacted: summarized 0 messages, kept 2 turns"
    );
    assert_eq!(server.requests().len(), 1);
    assert_eq!(summaries(&f.session_path).len(), 1);
}

#[tokio::test]
async fn an_empty_or_failed_summary_writes_nothing() {
    let f = fixture();
    let server = ScriptedServer::with_replies([
        Reply::text(&["  \n "]),
        Reply::status(400, "no such model"),
    ]);
    let mut session = session_with(&f, &conversation(4, 20));
    let provider = provider(&server);
    let budget = budget(24000, 1, 1200);

    let empty = compact_now(&provider, &mut session, &budget, &CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(
        empty.to_string(),
        "context compaction returned empty summary"
    );
    let failed = compact_now(&provider, &mut session, &budget, &CancellationToken::new())
        .await
        .unwrap_err();
    let text = failed.to_string();
    assert!(
        text.starts_with("context compaction failed: ") && text.contains("400"),
        "{text}"
    );
    assert!(summaries(&f.session_path).is_empty());
    assert_eq!(
        entry_types(&f.session_path)
            .iter()
            .filter(|t| **t == "usage")
            .count(),
        1,
        "the empty reply's usage"
    );
}

#[tokio::test]
async fn a_canceled_compaction_sends_nothing() {
    let f = fixture();
    let server = ScriptedServer::start();
    let mut session = session_with(&f, &conversation(6, 400));
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = build_context(
        &provider(&server),
        &mut session,
        &system(),
        &[],
        &budget(400, 1, 50),
        None,
        &cancel,
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ContextError::Canceled), "{err:?}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn context_report_shows_the_estimate_and_the_settings() {
    let f = fixture();
    let mut session = session_with(&f, &[user("hello"), assistant("hi")]);
    let budget = ContextBudget::default();
    // system 4+2+1, user 4+1+2, assistant 4+3+1.
    assert_eq!(
        context_report(&session, &system(), &[], &budget),
        "context: promptTokens=22 maxPromptTokens=24000 tailTurns=6 summary=false autoCompact=true maxOutputTokens=4096"
    );
    let tool = ToolDefinition {
        name: "t".into(),
        description: "d".into(),
        parameters: serde_json::json!({}),
    };
    assert!(
        context_report(&session, &system(), &[tool], &budget)
            .starts_with("context: promptTokens=42 ")
    );

    session.append_summary("- greeted", 2).unwrap();
    let summary_tokens = estimate_system(&summary_message("- greeted"));
    assert_eq!(
        context_report(&session, &system(), &[], &budget),
        format!(
            "context: promptTokens={} maxPromptTokens=24000 tailTurns=6 summary=true autoCompact=true maxOutputTokens=4096",
            7 + summary_tokens
        )
    );
}

#[tokio::test]
async fn a_summary_covering_more_than_the_active_path_hides_nothing() {
    let f = fixture();
    let server = ScriptedServer::start();
    let mut session = session_with(&f, &[user("one"), assistant("two")]);
    // A summary recorded on a longer branch than the one now checked out.
    session.append_summary("- from another branch", 9).unwrap();
    let built = build_context(
        &provider(&server),
        &mut session,
        &system(),
        &[],
        &ContextBudget::default(),
        None,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    let roles: Vec<&str> = built.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["system", "system", "user", "assistant"]);
}
