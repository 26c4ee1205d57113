//! Optional end-to-end test against a real OpenAI-compatible server (see docs/_provider-usage.md):
//!
//! `GG_TEST_BASE_URL=http://127.0.0.1:PORT/v1 cargo test -p provider --test all -- --ignored real_server`
//!
//! Optional: `GG_TEST_API_KEY` (default `sk-no-key-required`), `GG_TEST_MODEL` (default `local`).
//! Without a reachable server the test prints why it did not run and passes.

use std::net::ToSocketAddrs;
use std::time::Duration;

use provider::{
    CancellationToken, ChatRequest, Message, Provider, ProviderConfig, StopReason, StreamEvent,
};

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_string())
}

/// Why the server cannot be used, if it cannot.
fn unreachable_reason(base_url: &str) -> Option<String> {
    let url = match reqwest::Url::parse(base_url) {
        Ok(url) => url,
        Err(err) => return Some(format!("GG_TEST_BASE_URL is not a URL: {err}")),
    };
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return Some("GG_TEST_BASE_URL has no host/port".to_string());
    };
    let addrs = match (host, port).to_socket_addrs() {
        Ok(addrs) => addrs.collect::<Vec<_>>(),
        Err(err) => return Some(format!("cannot resolve {host}: {err}")),
    };
    let reachable = addrs
        .iter()
        .any(|addr| std::net::TcpStream::connect_timeout(addr, Duration::from_secs(2)).is_ok());
    (!reachable).then(|| format!("nothing accepts connections at {host}:{port}"))
}

#[tokio::test]
#[ignore = "needs a real model server: set GG_TEST_BASE_URL and run with --ignored"]
async fn real_server() {
    let Some(base_url) = std::env::var("GG_TEST_BASE_URL")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        eprintln!("real_server skipped: GG_TEST_BASE_URL is not set (see docs/_provider-usage.md)");
        return;
    };
    if let Some(reason) = unreachable_reason(&base_url) {
        eprintln!("real_server skipped: {reason}");
        return;
    }
    let mut config = ProviderConfig::new(
        base_url,
        env_or("GG_TEST_API_KEY", "sk-no-key-required"),
        env_or("GG_TEST_MODEL", "local"),
    );
    config.max_output_tokens = 48;
    config.idle_timeout = Duration::from_secs(120);
    let provider = Provider::new(config).expect("client builds");
    let request = ChatRequest {
        messages: vec![
            Message::system("You are terse."),
            Message::user("Say hello in five words or fewer."),
        ],
        ..ChatRequest::default()
    };
    let mut streamed = String::new();
    let mut deltas = 0;
    let result = provider
        .stream(
            &request,
            &mut |event| {
                if let StreamEvent::TextDelta(text) = event {
                    streamed.push_str(&text);
                    deltas += 1;
                }
            },
            &CancellationToken::new(),
        )
        .await;
    match result {
        Ok(reply) => {
            assert!(!reply.text.trim().is_empty(), "the model said nothing");
            assert_eq!(streamed, reply.text, "deltas add up to the reply");
            assert_eq!(reply.stop_reason, StopReason::EndTurn);
            eprintln!(
                "real_server: {deltas} deltas, usage {:?}, reply {:?}",
                reply.usage, reply.text
            );
        }
        // A tiny model may talk until the limit; the stream itself still worked.
        Err(err) if err.kind() == provider::ErrorKind::OutputLimit => {
            assert!(!err.partial().text.is_empty());
            assert_eq!(streamed, err.partial().text);
            eprintln!(
                "real_server: hit the 48-token limit after {deltas} deltas (expected for a tiny model)"
            );
        }
        Err(err) => panic!("real server request failed: {err}"),
    }
}
