//! Provider behaviour over real TCP on 127.0.0.1 against the scripted server.

use std::time::Duration;

use provider::{
    AssistantReply, CancellationToken, ChatRequest, Compat, ErrorKind, Message, Provider,
    ProviderConfig, ProviderError, StopReason, StreamEvent, ToolCall, ToolDefinition, Usage,
};
use serde_json::json;
use testkit::{
    Outcome, Reply, SaturatedListener, ScriptedServer, StreamReply, finish_chunk, reasoning_chunk,
    text_chunk, tool_call_chunk, usage_chunk,
};

/// Upper bound for any single test call: a hang fails the test instead of stalling the suite.
const CALL_LIMIT: Duration = Duration::from_secs(30);

fn config(server: &ScriptedServer) -> ProviderConfig {
    ProviderConfig::new(server.base_url(), "sk-test", "test-model")
}

fn provider(server: &ScriptedServer) -> Provider {
    Provider::new(config(server)).expect("client builds")
}

fn hello_request() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::system("be brief"), Message::user("hi")],
        ..ChatRequest::default()
    }
}

/// Runs one request, collecting the sink events.
async fn run(
    provider: &Provider,
    request: &ChatRequest,
) -> (Result<AssistantReply, ProviderError>, Vec<StreamEvent>) {
    run_with(provider, request, &CancellationToken::new(), |_, _| {}).await
}

/// Like [`run`], with a hook called on each event (used to cancel at a precise point).
async fn run_with(
    provider: &Provider,
    request: &ChatRequest,
    cancel: &CancellationToken,
    mut on_event: impl FnMut(&StreamEvent, &CancellationToken) + Send,
) -> (Result<AssistantReply, ProviderError>, Vec<StreamEvent>) {
    let mut events = Vec::new();
    let mut sink = |event: StreamEvent| {
        on_event(&event, cancel);
        events.push(event);
    };
    let result = tokio::time::timeout(CALL_LIMIT, provider.stream(request, &mut sink, cancel))
        .await
        .expect("provider call must finish");
    (result, events)
}

fn retries(events: &[StreamEvent]) -> Vec<(u32, Duration, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Retrying {
                retry,
                delay,
                reason,
            } => Some((*retry, *delay, reason.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn streams_text_and_sends_the_reference_request_shape() {
    let server = ScriptedServer::with_replies([StreamReply::new()
        .raw(": keep-alive comment\n\n")
        .event(reasoning_chunk("thinking"))
        .event(text_chunk("Hel"))
        .event(text_chunk("lo"))
        .event(finish_chunk("stop"))
        .event(usage_chunk(7, 2))
        .done()
        .reply()]);
    let (result, events) = run(&provider(&server), &hello_request()).await;
    let reply = result.expect("stream succeeds");
    assert_eq!(reply.text, "Hello");
    assert_eq!(reply.reasoning, "thinking");
    assert_eq!(reply.stop_reason, StopReason::EndTurn);
    assert_eq!(
        reply.usage,
        Some(Usage {
            prompt_tokens: 7,
            completion_tokens: 2,
            total_tokens: 9
        })
    );
    assert_eq!(
        events,
        vec![
            StreamEvent::ThinkingDelta("thinking".into()),
            StreamEvent::TextDelta("Hel".into()),
            StreamEvent::TextDelta("lo".into()),
        ]
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("accept"), Some("text/event-stream"));
    assert_eq!(
        request.json(),
        json!({
            "model": "test-model",
            "messages": [{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],
            "stream": true,
            "max_tokens": 4096,
            "stream_options": {"include_usage": true},
        })
    );
}

#[tokio::test]
async fn base_url_trailing_slashes_are_trimmed() {
    let server = ScriptedServer::with_replies([Reply::text(&["ok"])]);
    let mut config = config(&server);
    config.base_url.push_str("//");
    let provider = Provider::new(config).expect("client builds");
    run(&provider, &hello_request())
        .await
        .0
        .expect("stream succeeds");
    assert_eq!(server.requests()[0].path, "/v1/chat/completions");
}

#[tokio::test]
async fn tool_calls_are_sent_and_assembled() {
    let server = ScriptedServer::with_replies([StreamReply::new()
        .event(text_chunk("Let me look."))
        .event(tool_call_chunk(0, Some("call_1"), Some("read"), "{\"pa"))
        .event(tool_call_chunk(1, Some("call_2"), Some("bash"), ""))
        .event(tool_call_chunk(0, None, None, "th\":\"a.txt\"}"))
        .event(tool_call_chunk(1, None, None, "{\"command\":\"ls\"}"))
        .event(finish_chunk("tool_calls"))
        .done()
        .reply()]);
    let request = ChatRequest {
        messages: vec![Message::user("look")],
        tools: vec![ToolDefinition {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: json!({"type":"object","properties":{"path":{"type":"string"}}}),
        }],
        max_output_tokens: Some(1200),
    };
    let reply = run(&provider(&server), &request)
        .await
        .0
        .expect("stream succeeds");
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    assert_eq!(reply.text, "Let me look.");
    assert_eq!(
        reply.tool_calls,
        vec![
            ToolCall {
                id: "call_1".into(),
                name: "read".into(),
                arguments: r#"{"path":"a.txt"}"#.into()
            },
            ToolCall {
                id: "call_2".into(),
                name: "bash".into(),
                arguments: r#"{"command":"ls"}"#.into()
            },
        ]
    );
    let body = server.requests()[0].json();
    assert_eq!(body["max_tokens"], json!(1200));
    assert_eq!(body["tool_choice"], json!("auto"));
    assert_eq!(
        body["tools"],
        json!([{"type":"function","function":{"name":"read","description":"Read a file",
                 "parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}])
    );
}

#[tokio::test]
async fn stream_errors_keep_partial_text_and_are_never_retried() {
    let partial = || StreamReply::new().event(text_chunk("partial "));
    let first_event_len = format!("data: {}\n\n", text_chunk("partial ")).len();
    let big = "x".repeat(9 * 1024 * 1024);
    let cases: Vec<(&str, Reply, ErrorKind, &str)> = vec![
        (
            "connection cut mid-event (chunked)",
            partial()
                .event(text_chunk("never seen"))
                .cut_after(first_event_len + 20)
                .reply(),
            ErrorKind::Interrupted,
            "model stream interrupted: ",
        ),
        (
            "clean EOF before finish",
            partial().close_delimited().reply(),
            ErrorKind::Interrupted,
            "model stream interrupted: unexpected EOF",
        ),
        (
            "length finish",
            partial().event(finish_chunk("length")).done().reply(),
            ErrorKind::OutputLimit,
            "model output reached its token limit; response is incomplete",
        ),
        (
            "unknown finish reason",
            partial()
                .event(finish_chunk("content_filter"))
                .done()
                .reply(),
            ErrorKind::UnknownFinishReason,
            "model response ended with \"content_filter\"",
        ),
        (
            "incomplete tool arguments",
            partial()
                .event(tool_call_chunk(0, Some("c"), Some("read"), "{\"path\":"))
                .event(finish_chunk("tool_calls"))
                .done()
                .reply(),
            ErrorKind::InvalidToolCall,
            "incomplete or invalid tool call in model stream",
        ),
        (
            "tool call without id",
            partial()
                .event(tool_call_chunk(0, None, Some("read"), "{}"))
                .event(finish_chunk("tool_calls"))
                .done()
                .reply(),
            ErrorKind::InvalidToolCall,
            "incomplete or invalid tool call in model stream",
        ),
        (
            "tool call without name",
            partial()
                .event(tool_call_chunk(0, Some("c"), None, "{}"))
                .event(finish_chunk("tool_calls"))
                .done()
                .reply(),
            ErrorKind::InvalidToolCall,
            "incomplete or invalid tool call in model stream",
        ),
        (
            "tool_calls finish without calls",
            partial().event(finish_chunk("tool_calls")).done().reply(),
            ErrorKind::MissingToolCall,
            "model requested tools without providing a tool call",
        ),
        (
            "error object in stream",
            partial()
                .event(json!({"error":{"message":"upstream overloaded"}}))
                .reply(),
            ErrorKind::ModelError,
            "model stream error: upstream overloaded",
        ),
        (
            "malformed chunk",
            partial().raw("data: {\"choices\":\n\n").reply(),
            ErrorKind::MalformedChunk,
            "model stream returned malformed JSON: ",
        ),
        (
            "event over 8 MiB",
            partial().raw(format!("data: {big}\n\n")).reply(),
            ErrorKind::EventTooLarge,
            "model stream event exceeds the 8 MiB limit",
        ),
    ];
    for (name, reply, kind, message) in cases {
        let server = ScriptedServer::with_replies([reply, Reply::text(&["must not be requested"])]);
        let (result, events) = run(&provider(&server), &hello_request()).await;
        let err = result.expect_err(name);
        assert_eq!(err.kind(), kind, "{name}: {err}");
        assert!(err.message().starts_with(message), "{name}: {err}");
        assert_eq!(err.partial().text, "partial ", "{name}");
        let stop = if kind == ErrorKind::OutputLimit {
            StopReason::MaxTokens
        } else {
            StopReason::Error
        };
        assert_eq!(err.partial().stop_reason, stop, "{name}");
        assert_eq!(
            events.first(),
            Some(&StreamEvent::TextDelta("partial ".into())),
            "{name}"
        );
        assert!(retries(&events).is_empty(), "{name}");
        assert_eq!(
            server.requests().len(),
            1,
            "{name}: a started stream is never retried"
        );
        assert_eq!(server.pending_replies(), 1, "{name}");
    }
}

#[tokio::test]
async fn http_errors_quote_a_capped_sanitized_body_and_4xx_is_not_retried() {
    let server = ScriptedServer::with_replies([Reply::status(401, "{\"error\":\"bad key\"}\n")]);
    let (result, events) = run(&provider(&server), &hello_request()).await;
    let err = result.expect_err("401 fails");
    assert_eq!(err.kind(), ErrorKind::Http { status: 401 });
    assert_eq!(
        err.message(),
        "OpenAI-compatible API returned 401 Unauthorized: {\"error\":\"bad key\"}"
    );
    assert!(retries(&events).is_empty());
    assert_eq!(server.requests().len(), 1);

    let long = format!("\u{1b}[31m{}", "e".repeat(20_000));
    let server = ScriptedServer::with_replies([Reply::status(404, &long)]);
    let err = run(&provider(&server), &hello_request())
        .await
        .0
        .expect_err("404 fails");
    let prefix = "OpenAI-compatible API returned 404 Not Found: ";
    let quoted = err.message().strip_prefix(prefix).expect("status prefix");
    assert!(
        quoted.starts_with("\\x1b[31meee"),
        "escape sequence neutralised: {quoted:.20}"
    );
    // 8192 body bytes, of which the 1-byte ESC became its 4-byte escaped form.
    assert_eq!(quoted.len(), 8192 + 3);
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let server = ScriptedServer::with_replies([
        Reply::status(307, "").header("Location", "http://127.0.0.1:9/v1/chat/completions")
    ]);
    let err = run(&provider(&server), &hello_request())
        .await
        .0
        .expect_err("redirect fails");
    assert_eq!(err.kind(), ErrorKind::Http { status: 307 });
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn retries_429_honouring_retry_after() {
    let server = ScriptedServer::with_replies([
        Reply::status(429, "rate limited").header("Retry-After", "1"),
        Reply::text(&["ok"]),
    ]);
    let (result, events) = run(&provider(&server), &hello_request()).await;
    assert_eq!(result.expect("second attempt succeeds").text, "ok");
    assert_eq!(
        retries(&events),
        vec![(
            1,
            Duration::from_secs(1),
            "OpenAI-compatible API returned 429 Too Many Requests: rate limited".to_string()
        )]
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn retries_429_without_retry_after_and_5xx_with_jittered_backoff() {
    let server = ScriptedServer::with_replies([
        Reply::status(429, "slow"),
        Reply::status(503, "busy"),
        Reply::text(&["ok"]),
    ]);
    let (result, events) = run(&provider(&server), &hello_request()).await;
    assert_eq!(result.expect("third attempt succeeds").text, "ok");
    let retries = retries(&events);
    assert_eq!(retries.len(), 2);
    assert!(retries[0].1 <= Duration::from_millis(250), "{retries:?}");
    assert!(retries[1].1 <= Duration::from_millis(500), "{retries:?}");
    assert!(retries[1].2.contains("503 Service Unavailable: busy"));
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn gives_up_after_two_retries() {
    let server = ScriptedServer::with_replies([
        Reply::status(500, "boom 1"),
        Reply::status(500, "boom 2"),
        Reply::status(500, "boom 3"),
        Reply::text(&["never"]),
    ]);
    let (result, events) = run(&provider(&server), &hello_request()).await;
    let err = result.expect_err("three 500s fail");
    assert_eq!(err.kind(), ErrorKind::Http { status: 500 });
    assert_eq!(
        err.message(),
        "OpenAI-compatible API returned 500 Internal Server Error: boom 3"
    );
    assert_eq!(retries(&events).len(), 2);
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn retries_a_connection_reset_before_headers() {
    let server = ScriptedServer::with_replies([Reply::ResetBeforeHeaders, Reply::text(&["ok"])]);
    let (result, events) = run(&provider(&server), &hello_request()).await;
    assert_eq!(result.expect("retry succeeds").text, "ok");
    let retries = retries(&events);
    assert_eq!(retries.len(), 1);
    assert!(
        retries[0].2.starts_with("model request failed: "),
        "{retries:?}"
    );
    assert!(
        !retries[0].2.contains("127.0.0.1"),
        "URL stays out of messages: {retries:?}"
    );
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        server.outcomes_after(2, CALL_LIMIT).await[0],
        Outcome::Reset
    );
}

#[tokio::test]
async fn connection_refused_is_a_transport_error_after_retries() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let provider = Provider::new(ProviderConfig::new(
        format!("http://127.0.0.1:{port}/v1"),
        "k",
        "m",
    ))
    .expect("client builds");
    let (result, events) = run(&provider, &hello_request()).await;
    let err = result.expect_err("nothing listens");
    assert_eq!(err.kind(), ErrorKind::Transport);
    assert!(err.message().starts_with("model request failed: "), "{err}");
    assert_eq!(retries(&events).len(), 2);
}

#[tokio::test]
async fn stream_options_fallback_is_immediate_free_and_remembered() {
    let server = ScriptedServer::with_replies([
        Reply::status(
            400,
            r#"{"error":{"message":"Unrecognized request argument supplied: stream_options"}}"#,
        ),
        // The fallback must not spend the retry budget: two retries remain.
        Reply::status(500, "a"),
        Reply::status(502, "b"),
        Reply::text(&["ok"]),
        Reply::text(&["again"]),
    ]);
    let provider = provider(&server);
    let (result, events) = run(&provider, &hello_request()).await;
    assert_eq!(result.expect("fallback then retries succeed").text, "ok");
    assert_eq!(retries(&events).len(), 2, "the fallback is not a retry");
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 4);
    assert!(bodies[0].get("stream_options").is_some());
    for body in &bodies[1..] {
        assert!(body.get("stream_options").is_none(), "{body}");
        assert_eq!(body["stream"], json!(true));
    }
    // A clone shares what was learnt: the next request has the right shape at once.
    let clone = provider.clone();
    assert_eq!(
        run(&clone, &hello_request()).await.0.expect("ok").text,
        "again"
    );
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 5);
    assert!(bodies[4].get("stream_options").is_none());
}

#[tokio::test]
async fn max_completion_tokens_fallback() {
    let message = r#"{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."}}"#;
    let server = ScriptedServer::with_replies([
        Reply::status(400, message),
        Reply::text(&["ok"]),
        Reply::text(&["ok"]),
    ]);
    let provider = provider(&server);
    run(&provider, &hello_request())
        .await
        .0
        .expect("fallback succeeds");
    run(&provider, &hello_request())
        .await
        .0
        .expect("remembered");
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[0]["max_tokens"], json!(4096));
    for body in &bodies[1..] {
        assert!(body.get("max_tokens").is_none(), "{body}");
        assert_eq!(body["max_completion_tokens"], json!(4096));
    }
}

#[tokio::test]
async fn both_fallbacks_apply_once_each_then_the_400_is_returned() {
    let both = r#"stream_options unsupported; max_tokens unsupported, use max_completion_tokens"#;
    let server = ScriptedServer::with_replies([
        Reply::status(400, both),
        Reply::status(400, both),
        Reply::status(400, both),
        Reply::text(&["never"]),
    ]);
    let (result, events) = run(&provider(&server), &hello_request()).await;
    let err = result.expect_err("third 400 is final");
    assert_eq!(err.kind(), ErrorKind::Http { status: 400 });
    assert!(retries(&events).is_empty());
    let bodies = server.request_bodies();
    assert_eq!(bodies.len(), 3);
    assert!(bodies[1].get("stream_options").is_none() && bodies[1].get("max_tokens").is_some());
    assert!(
        bodies[2].get("stream_options").is_none()
            && bodies[2].get("max_completion_tokens").is_some()
    );
}

#[tokio::test]
async fn max_tokens_fallback_needs_a_limit() {
    let message = "max_tokens is deprecated, use max_completion_tokens";
    let server =
        ScriptedServer::with_replies([Reply::status(400, message), Reply::text(&["never"])]);
    let request = ChatRequest {
        max_output_tokens: Some(0),
        ..hello_request()
    };
    let err = run(&provider(&server), &request)
        .await
        .0
        .expect_err("no fallback without a limit");
    assert_eq!(err.kind(), ErrorKind::Http { status: 400 });
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn compat_flags_send_the_right_shape_first() {
    let server = ScriptedServer::with_replies([Reply::text(&["ok"])]);
    let mut config = config(&server);
    config.compat = Compat {
        no_stream_usage: true,
        completion_tokens: true,
    };
    let provider = Provider::new(config).expect("client builds");
    run(&provider, &hello_request()).await.0.expect("ok");
    let body = &server.request_bodies()[0];
    assert!(body.get("stream_options").is_none());
    assert!(body.get("max_tokens").is_none());
    assert_eq!(body["max_completion_tokens"], json!(4096));
}

#[tokio::test]
async fn cancellation_interrupts_a_backoff_sleep_at_once() {
    let server = ScriptedServer::with_replies([
        Reply::status(429, "later").header("Retry-After", "120"),
        Reply::text(&["never"]),
    ]);
    let started = std::time::Instant::now();
    let (result, events) = run_with(
        &provider(&server),
        &hello_request(),
        &CancellationToken::new(),
        |event, cancel| {
            if matches!(event, StreamEvent::Retrying { .. }) {
                cancel.cancel();
            }
        },
    )
    .await;
    let err = result.expect_err("cancelled");
    assert_eq!(err.kind(), ErrorKind::Canceled);
    assert_eq!(
        retries(&events)[0].1,
        Duration::from_secs(60),
        "Retry-After is capped at 60 s"
    );
    // The backoff was 60 s; returning at all within CALL_LIMIT proves the sleep was interrupted.
    assert!(started.elapsed() < CALL_LIMIT);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn cancellation_mid_stream_returns_partial_text_and_closes_the_connection() {
    let server = ScriptedServer::with_replies([StreamReply::new()
        .event(text_chunk("first words"))
        .delay(Duration::from_secs(60))
        .event(finish_chunk("stop"))
        .done()
        .reply()]);
    let (result, _) = run_with(
        &provider(&server),
        &hello_request(),
        &CancellationToken::new(),
        |event, cancel| {
            if matches!(event, StreamEvent::TextDelta(_)) {
                cancel.cancel();
            }
        },
    )
    .await;
    let err = result.expect_err("cancelled");
    assert_eq!(err.kind(), ErrorKind::Canceled);
    assert_eq!(err.partial().text, "first words");
    assert_eq!(err.partial().stop_reason, StopReason::Error);
    assert_eq!(
        server.outcomes_after(1, CALL_LIMIT).await,
        vec![Outcome::ClientGone]
    );
}

#[tokio::test]
async fn an_already_cancelled_request_sends_nothing() {
    let server = ScriptedServer::with_replies([Reply::text(&["never"])]);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let err = run_with(&provider(&server), &hello_request(), &cancel, |_, _| {})
        .await
        .0
        .expect_err("cancelled");
    assert_eq!(err.kind(), ErrorKind::Canceled);
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_silent_stream_hits_the_idle_timeout() {
    let server = ScriptedServer::with_replies([StreamReply::new()
        .event(text_chunk("so far"))
        .stall()
        .reply()]);
    let mut config = config(&server);
    config.idle_timeout = Duration::from_millis(300);
    let provider = Provider::new(config).expect("client builds");
    let err = run(&provider, &hello_request())
        .await
        .0
        .expect_err("stalls");
    assert_eq!(err.kind(), ErrorKind::IdleTimeout);
    assert_eq!(
        err.message(),
        "model stream stalled: no data received for 300ms"
    );
    assert_eq!(err.partial().text, "so far");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn slow_but_steady_streams_are_not_idle() {
    let server = ScriptedServer::with_replies([StreamReply::new()
        .event(text_chunk("a"))
        .delay(Duration::from_millis(150))
        .event(text_chunk("b"))
        .delay(Duration::from_millis(150))
        .event(text_chunk("c"))
        .delay(Duration::from_millis(150))
        .event(text_chunk("d"))
        .delay(Duration::from_millis(150))
        .event(finish_chunk("stop"))
        .done()
        .reply()]);
    let mut config = config(&server);
    // Total time (600 ms) exceeds the idle limit; no single gap (150 ms) does.
    config.idle_timeout = Duration::from_millis(400);
    let provider = Provider::new(config).expect("client builds");
    assert_eq!(
        run(&provider, &hello_request())
            .await
            .0
            .expect("steady")
            .text,
        "abcd"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_idle_timeout_without_retry() {
    let server = ScriptedServer::with_replies([Reply::Hang, Reply::text(&["never"])]);
    let mut config = config(&server);
    config.idle_timeout = Duration::from_millis(300);
    let provider = Provider::new(config).expect("client builds");
    let (result, events) = run(&provider, &hello_request()).await;
    let err = result.expect_err("no headers");
    assert_eq!(err.kind(), ErrorKind::IdleTimeout);
    assert_eq!(
        err.message(),
        "model server sent no response for 300ms (idle timeout)"
    );
    assert!(retries(&events).is_empty());
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn connect_timeout_names_itself() {
    let saturated =
        SaturatedListener::new().expect("a full accept queue makes loopback connects hang");
    let mut config = ProviderConfig::new(format!("http://{}/v1", saturated.addr), "k", "m");
    config.connect_timeout = Duration::from_millis(300);
    config.retry.max_retries = 1;
    let provider = Provider::new(config).expect("client builds");
    let (result, events) = run(&provider, &hello_request()).await;
    let err = result.expect_err("connect hangs");
    assert_eq!(err.kind(), ErrorKind::ConnectTimeout);
    assert_eq!(
        err.message(),
        "connecting to the model server timed out after 300ms"
    );
    assert_eq!(
        retries(&events).len(),
        1,
        "a connect timeout is a network error and is retried"
    );
}

#[tokio::test]
async fn preflight_errors_send_nothing() {
    let server = ScriptedServer::with_replies([Reply::text(&["never"])]);
    let cases = [
        (
            ProviderConfig::new(server.base_url(), "", "m"),
            ErrorKind::MissingApiKey,
            "missing API key: set OPENAI_API_KEY or pass --api-key",
        ),
        (
            ProviderConfig::new("  ", "k", "m"),
            ErrorKind::MissingBaseUrl,
            "missing base URL",
        ),
        (
            ProviderConfig::new("/", "k", "m"),
            ErrorKind::MissingBaseUrl,
            "missing base URL",
        ),
        (
            ProviderConfig::new("ftp://127.0.0.1/v1", "k", "m"),
            ErrorKind::InvalidConfig,
            "invalid base URL: scheme must be http or https",
        ),
        (
            ProviderConfig::new(server.base_url(), "k\nInjected: 1", "m"),
            ErrorKind::InvalidConfig,
            "invalid API key: contains characters not allowed in a header",
        ),
    ];
    for (config, kind, message) in cases {
        let provider = Provider::new(config).expect("client builds");
        let err = run(&provider, &hello_request()).await.0.expect_err(message);
        assert_eq!((err.kind(), err.message()), (kind, message));
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn the_server_script_serves_multi_request_conversations() {
    let server = ScriptedServer::with_replies([
        Reply::tool_call("c1", "read", r#"{"path":"x"}"#),
        Reply::text(&["done"]),
    ]);
    let provider = provider(&server);
    let mut request = hello_request();
    let first = run(&provider, &request).await.0.expect("tool call");
    assert_eq!(first.tool_calls.len(), 1);
    let mut assistant = Message::assistant(first.text.clone());
    assistant.tool_calls = first.tool_calls.clone();
    request.messages.push(assistant);
    request
        .messages
        .push(Message::tool_result("c1", "contents of x"));
    let second = run(&provider, &request).await.0.expect("final answer");
    assert_eq!(second.text, "done");
    let bodies = server.request_bodies();
    assert_eq!(
        bodies[1]["messages"][2],
        json!({"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{\"path\":\"x\"}"}}]})
    );
    assert_eq!(
        bodies[1]["messages"][3],
        json!({"role":"tool","content":"contents of x","tool_call_id":"c1"})
    );
}
