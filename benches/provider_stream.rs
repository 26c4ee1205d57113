//! Provider streaming benchmark (harness = false).
//!
//! 1. Parse throughput: a large recorded chat-completions stream (token-sized text deltas plus a
//!    tool call with long streamed arguments) fed through the SSE framer and assembler in 16 KiB
//!    reads, as the HTTP client would.
//! 2. Added latency: on loopback, a server writes one SSE event at a time and waits for the
//!    previous one to reach the caller's sink. Reported next to a raw tokio socket read of the
//!    same bytes, so the difference is what gg's HTTP + SSE + JSON path adds.
//!
//! Run: `cargo bench --bench provider_stream` (results go to stdout; see docs/_provider-perf.md).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gg::provider::{
    CancellationToken, ChatRequest, Message, Provider, ProviderConfig, StreamEvent, StreamParser,
};

const READ_SIZE: usize = 16 * 1024;
const LATENCY_EVENTS: usize = 2000;
const LATENCY_WARMUP: usize = 200;

fn recorded_stream(target_bytes: usize) -> Vec<u8> {
    let words = [
        "The",
        " quick",
        " brown",
        " fox",
        " jumps",
        " over",
        " the",
        " lazy",
        " dog",
        ".\n",
        " é€",
        " \"quoted\"",
    ];
    let mut body = String::with_capacity(target_bytes + 4096);
    let mut i = 0usize;
    while body.len() < target_bytes / 2 {
        let chunk = serde_json::json!({
            "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_700_000_000u64,
            "model": "bench-model",
            "choices": [{"index": 0, "delta": {"content": words[i % words.len()]}, "finish_reason": null}]
        });
        body.push_str("data: ");
        body.push_str(&chunk.to_string());
        body.push_str("\n\n");
        i += 1;
    }
    let mut first = true;
    while body.len() < target_bytes {
        let mut call = serde_json::json!({"index": 0, "function": {"arguments": "\"line of a file that is being written\\n\","}});
        if first {
            call = serde_json::json!({"index": 0, "id": "call_1", "type": "function",
                                       "function": {"name": "write", "arguments": "{\"content\":["}});
            first = false;
        }
        let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]});
        body.push_str("data: ");
        body.push_str(&chunk.to_string());
        body.push_str("\r\n\r\n");
    }
    let close = serde_json::json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"end\"]}"}}]}, "finish_reason": "tool_calls"}]});
    body.push_str(&format!("data: {close}\n\ndata: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3}}}}\n\ndata: [DONE]\n\n"));
    body.into_bytes()
}

fn throughput() {
    let body = recorded_stream(32 * 1024 * 1024);
    let mut runs = Vec::new();
    for _ in 0..7 {
        let started = Instant::now();
        let mut deltas = 0usize;
        let mut parser = StreamParser::new();
        let mut sink = |_: StreamEvent| deltas += 1;
        for chunk in body.chunks(READ_SIZE) {
            parser
                .feed(chunk, &mut sink)
                .expect("recorded stream is valid");
        }
        let reply = parser.finish(&mut sink).expect("recorded stream is valid");
        let elapsed = started.elapsed();
        assert_eq!(reply.tool_calls.len(), 1);
        assert!(deltas > 50_000, "the body is mostly text deltas");
        runs.push(elapsed);
    }
    runs.sort();
    let median = runs[runs.len() / 2];
    let mb = body.len() as f64 / 1e6;
    println!(
        "parse throughput: {:.1} MB/s (median of {} runs, {:.1} MB body, {} KiB reads, best {:.1} MB/s)",
        mb / median.as_secs_f64(),
        runs.len(),
        mb,
        READ_SIZE / 1024,
        mb / runs[0].as_secs_f64()
    );
}

fn event_bytes(chunked: bool) -> Vec<u8> {
    let event = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok\"},\"finish_reason\":null}]}\n\n";
    if chunked {
        format!("{:x}\r\n{event}\r\n", event.len()).into_bytes()
    } else {
        event.as_bytes().to_vec()
    }
}

/// A blocking server that writes event `i` only after the client signalled it received `i-1`,
/// recording the instant just before each write.
fn spawn_ping_pong_server(
    http: bool,
    go: mpsc::Receiver<()>,
    sent: Arc<Mutex<Vec<Instant>>>,
) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().expect("accept");
        stream.set_nodelay(true).expect("nodelay");
        if http {
            read_request(&mut stream);
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
                .expect("head");
        }
        let event = event_bytes(http);
        for _ in 0..LATENCY_EVENTS {
            if go.recv().is_err() {
                return;
            }
            // Let the client go idle (parked in epoll) first, as it is between real tokens;
            // otherwise whichever client is slower to re-poll looks faster.
            std::thread::sleep(Duration::from_millis(1));
            let now = Instant::now();
            stream.write_all(&event).expect("write event");
            sent.lock().expect("lock").push(now);
        }
        if http {
            let end = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
            let _ = stream.write_all(format!("{:x}\r\n{end}\r\n0\r\n\r\n", end.len()).as_bytes());
        }
    });
    addr
}

fn read_request(stream: &mut TcpStream) {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).expect("request head");
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).expect("request body");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn latencies(sent: &[Instant], received: &[Instant]) -> Vec<Duration> {
    let mut all: Vec<Duration> = sent
        .iter()
        .zip(received)
        .skip(LATENCY_WARMUP)
        .map(|(s, r)| r.saturating_duration_since(*s))
        .collect();
    all.sort();
    all
}

fn report(label: &str, sorted: &[Duration]) -> Duration {
    let median = sorted[sorted.len() / 2];
    let p99 = sorted[sorted.len() * 99 / 100];
    println!(
        "{label}: median {:.1} µs, p99 {:.1} µs ({} events)",
        median.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6,
        sorted.len()
    );
    median
}

fn raw_socket_latency() -> Vec<Duration> {
    let (go_tx, go_rx) = mpsc::channel();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let addr = spawn_ping_pong_server(false, go_rx, Arc::clone(&sent));
    let event_len = event_bytes(false).len();
    let received = runtime().block_on(async move {
        use tokio::io::AsyncReadExt;
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let mut received = Vec::with_capacity(LATENCY_EVENTS);
        let mut buf = vec![0u8; 4096];
        go_tx.send(()).expect("go");
        for _ in 0..LATENCY_EVENTS {
            let mut got = 0;
            while got < event_len {
                got += stream.read(&mut buf[got..]).await.expect("read");
            }
            received.push(Instant::now());
            let _ = go_tx.send(());
        }
        received
    });
    let sent = sent.lock().expect("lock").clone();
    latencies(&sent, &received)
}

fn provider_latency() -> Vec<Duration> {
    let (go_tx, go_rx) = mpsc::channel();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let addr = spawn_ping_pong_server(true, go_rx, Arc::clone(&sent));
    let provider =
        Provider::new(ProviderConfig::new(format!("http://{addr}/v1"), "k", "m")).expect("client");
    let request = ChatRequest {
        messages: vec![Message::user("hi")],
        ..ChatRequest::default()
    };
    let mut received = Vec::with_capacity(LATENCY_EVENTS);
    go_tx.send(()).expect("go");
    let result = runtime().block_on(provider.stream(
        &request,
        &mut |event| {
            if let StreamEvent::TextDelta(_) = event {
                received.push(Instant::now());
                let _ = go_tx.send(());
            }
        },
        &CancellationToken::new(),
    ));
    result.expect("stream succeeds");
    let sent = sent.lock().expect("lock").clone();
    latencies(&sent, &received)
}

fn main() {
    // `cargo test --benches` runs bench binaries with `--test`-like flags; the numbers only mean
    // something under `cargo bench`.
    throughput();
    let raw = raw_socket_latency();
    let via_provider = provider_latency();
    let raw_median = report("loopback write -> raw tokio socket read", &raw);
    let provider_median = report(
        "loopback write -> provider TextDelta in sink",
        &via_provider,
    );
    println!(
        "added by HTTP + SSE + JSON path: median {:.1} µs",
        (provider_median.as_secs_f64() - raw_median.as_secs_f64()) * 1e6
    );
}
