//! gg's test kit: the scripted OpenAI-compatible HTTP/1.1 server that plays the model in every
//! crate's tests and benchmarks, a loopback listener that never accepts, and the fixtures that run
//! the real gg binaries: [`fixture`] (`GgFixture` and the skip rule), [`pty`] (gg on a terminal),
//! [`sandbox`] (`gg sandbox`'s host layout and the levels that work here), [`daemon`] (clients
//! of `ggd`) and [`desktop`] (Xvfb and a session bus of a test's own). A crate of its own (a
//! dev-dependency only) so that the provider crate's tests, gg's end-to-end tests, gg-desktop's
//! test and the benchmarks share one copy, and none of them links gg to get it.
//!
//! The server listens on `127.0.0.1`, runs on its own thread and tokio runtime (so synchronous
//! tests that spawn the `gg` binaries can use it too) and answers each request with the next
//! [`Reply`] of its script:
//!
//! ```ignore
//! let server = ScriptedServer::start();
//! server.push(Reply::status(429, "slow down").header("Retry-After", "1"));
//! server.push(Reply::text(&["Hel", "lo"]));
//! // ... point gg at server.base_url() ...
//! let bodies = server.request_bodies(); // every request body, as JSON, in arrival order
//! ```
//!
//! Every connection serves exactly one request and is closed after it (`Connection: close`), so
//! connection-level failures (reset, cut, stall) affect exactly one scripted reply. An empty script
//! answers `500` with `scripted server: no reply queued`, which makes a missing script obvious.
// Test support: a broken script or fixture should fail the test that uses it, loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod daemon;
pub mod desktop;
pub mod fixture;
#[cfg(feature = "notifications")]
pub mod notifications;
pub mod pty;
pub mod sandbox;

/// The committed seeds of the fuzz target `name` (`fuzz/corpus/<name>/`), sorted, for the tests
/// that replay them on stable Rust; fails when fewer than `at_least` are there (a corpus that
/// went missing must not pass as an empty replay).
pub fn fuzz_corpus(name: &str, at_least: usize) -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(name);
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(
        files.len() >= at_least,
        "corpus at {} is missing",
        dir.display()
    );
    files
}

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// Largest request head (request line + headers) the server accepts.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// One piece of a streamed body.
#[derive(Debug, Clone)]
pub enum Part {
    /// Bytes written (and flushed) as one write.
    Bytes(Vec<u8>),
    /// A pause before the next part.
    Delay(Duration),
}

/// How a streamed body is delimited on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Transfer-Encoding: chunked`, one chunk per [`Part::Bytes`] (what real servers do).
    Chunked,
    /// No length: the body ends when the server closes the connection.
    CloseDelimited,
}

/// A streamed (SSE) reply.
#[derive(Debug, Clone)]
pub struct StreamReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub parts: Vec<Part>,
    pub framing: Framing,
    /// Close the connection after this many body bytes, without ending the body properly.
    pub cut_after: Option<usize>,
    /// After the last part, keep the connection open without ending the body (until the client
    /// goes away or the server is dropped).
    pub stall: bool,
}

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A streamed body.
    Stream(StreamReply),
    /// A complete response with a `Content-Length` body (errors, non-streaming answers).
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Read the request, then reset the connection (TCP RST) without answering.
    ResetBeforeHeaders,
    /// Read the request and never answer (until the client goes away or the server is dropped).
    Hang,
    /// A reply made from the request when it arrives: a model that answers with what it just
    /// read (a pid, a path) from the previous tool result.
    Computed(Computed),
}

/// The function behind [`Reply::Computed`].
#[derive(Clone)]
pub struct Computed(pub Arc<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>);

impl std::fmt::Debug for Computed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Computed(..)")
    }
}

impl Default for StreamReply {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamReply {
    /// An empty `200 text/event-stream` reply; add parts with the builder methods.
    pub fn new() -> Self {
        StreamReply {
            status: 200,
            headers: Vec::new(),
            parts: Vec::new(),
            framing: Framing::Chunked,
            cut_after: None,
            stall: false,
        }
    }

    /// Appends `data: <json>\n\n`.
    pub fn event(mut self, chunk: Value) -> Self {
        self.parts
            .push(Part::Bytes(format!("data: {chunk}\n\n").into_bytes()));
        self
    }

    /// Appends raw bytes as one write.
    pub fn raw(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.parts.push(Part::Bytes(bytes.into()));
        self
    }

    /// Pauses before the next part.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.parts.push(Part::Delay(delay));
        self
    }

    /// Appends `data: [DONE]\n\n`.
    pub fn done(self) -> Self {
        self.raw("data: [DONE]\n\n")
    }

    /// Cuts the connection after `bytes` body bytes.
    pub fn cut_after(mut self, bytes: usize) -> Self {
        self.cut_after = Some(bytes);
        self
    }

    /// Keeps the connection open and silent after the last part.
    pub fn stall(mut self) -> Self {
        self.stall = true;
        self
    }

    /// Ends the body by closing the connection instead of chunked encoding.
    pub fn close_delimited(mut self) -> Self {
        self.framing = Framing::CloseDelimited;
        self
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Wraps into a [`Reply`].
    pub fn reply(self) -> Reply {
        Reply::Stream(self)
    }
}

impl Reply {
    /// A complete text answer streamed as one delta per element, then `finish_reason: stop`,
    /// a usage chunk and `[DONE]`.
    pub fn text(deltas: &[&str]) -> Reply {
        let mut stream = StreamReply::new();
        for delta in deltas {
            stream = stream.event(text_chunk(delta));
        }
        stream
            .event(finish_chunk("stop"))
            .event(usage_chunk(10, deltas.len() as u64))
            .done()
            .reply()
    }

    /// A reply calling one tool (`arguments` is the raw JSON text, streamed in two fragments).
    pub fn tool_call(id: &str, name: &str, arguments: &str) -> Reply {
        let split = arguments.len() / 2;
        let split = (0..=split)
            .rev()
            .find(|&i| arguments.is_char_boundary(i))
            .unwrap_or(0);
        StreamReply::new()
            .event(tool_call_chunk(
                0,
                Some(id),
                Some(name),
                &arguments[..split],
            ))
            .event(tool_call_chunk(0, None, None, &arguments[split..]))
            .event(finish_chunk("tool_calls"))
            .done()
            .reply()
    }

    /// A non-streamed reply with a text body.
    pub fn computed(f: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static) -> Reply {
        Reply::Computed(Computed(Arc::new(f)))
    }

    pub fn status(status: u16, body: &str) -> Reply {
        Reply::Status {
            status,
            headers: Vec::new(),
            body: body.as_bytes().to_vec(),
        }
    }

    /// Adds a response header (to a [`Reply::Status`] or [`Reply::Stream`]).
    pub fn header(self, name: &str, value: &str) -> Reply {
        match self {
            Reply::Status {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.to_string(), value.to_string()));
                Reply::Status {
                    status,
                    headers,
                    body,
                }
            }
            Reply::Stream(stream) => Reply::Stream(stream.header(name, value)),
            other => other,
        }
    }
}

/// `{"choices":[{"index":0,"delta":{"content":text}}]}`
pub fn text_chunk(text: &str) -> Value {
    json!({"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]})
}

/// A reasoning (`reasoning_content`) delta.
pub fn reasoning_chunk(text: &str) -> Value {
    json!({"choices":[{"index":0,"delta":{"reasoning_content":text},"finish_reason":null}]})
}

/// A chunk carrying only a finish reason.
pub fn finish_chunk(reason: &str) -> Value {
    json!({"choices":[{"index":0,"delta":{},"finish_reason":reason}]})
}

/// The final usage chunk (`choices: []`).
pub fn usage_chunk(prompt: u64, completion: u64) -> Value {
    json!({"choices":[],"usage":{"prompt_tokens":prompt,"completion_tokens":completion,"total_tokens":prompt+completion}})
}

/// One tool-call fragment.
pub fn tool_call_chunk(index: u32, id: Option<&str>, name: Option<&str>, arguments: &str) -> Value {
    let mut call =
        json!({"index": index, "type": "function", "function": {"arguments": arguments}});
    if let Some(id) = id {
        call["id"] = json!(id);
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    json!({"choices":[{"index":0,"delta":{"tool_calls":[call]},"finish_reason":null}]})
}

/// The dimension of [`fake_embedding`]'s vectors.
pub const FAKE_EMBEDDING_DIM: usize = 64;

/// A deterministic stand-in for an embedding model: words hashed into buckets, so texts that
/// share words point the same way. Words listed in [`FAKE_SYNONYMS`] share a bucket, which lets a
/// test show dense retrieval finding a passage that BM25 cannot (the query's word is absent).
pub fn fake_embedding(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; FAKE_EMBEDDING_DIM];
    for word in text.to_lowercase().split(|c: char| !c.is_alphanumeric()) {
        let word = FAKE_SYNONYMS
            .iter()
            .find(|(w, _)| *w == word)
            .map_or(word, |(_, canonical)| canonical);
        if word.len() > 2 {
            let h = word
                .bytes()
                .fold(7u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b)));
            v[h as usize % FAKE_EMBEDDING_DIM] += 1.0;
        }
    }
    v
}

/// Word → the word whose bucket it shares in [`fake_embedding`].
pub const FAKE_SYNONYMS: &[(&str, &str)] = &[("automobile", "car"), ("vehicle", "car")];

/// The OpenAI embeddings response for `request` (`{"model", "input": string | [string]}`).
fn embeddings_reply(request: &RecordedRequest) -> Reply {
    let Ok(body) = serde_json::from_slice::<Value>(&request.body) else {
        return Reply::status(400, "embeddings: body is not JSON");
    };
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_string))
            .collect(),
        _ => return Reply::status(400, "embeddings: input must be a string or an array"),
    };
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, text)| serde_json::json!({"object": "embedding", "index": i, "embedding": fake_embedding(text)}))
        .collect();
    let body = serde_json::json!({"object": "list", "data": data, "model": body["model"]});
    Reply::Status {
        status: 200,
        headers: Vec::new(),
        body: serde_json::to_vec(&body).unwrap_or_default(),
    }
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// First value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON (panics with the body shown if it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|err| {
            panic!(
                "request body is not JSON ({err}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// How the server's handling of one connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The whole scripted reply was written.
    Completed,
    /// The client closed the connection before the reply was complete.
    ClientGone,
    /// The scripted `cut_after` closed the connection.
    Cut,
    /// The scripted reset was sent.
    Reset,
    /// The server was dropped while the connection was stalled or hanging.
    Shutdown,
    /// No complete request was read (malformed, client closed, or server dropped first).
    BadRequest,
}

#[derive(Default)]
struct Shared {
    script: VecDeque<Reply>,
    requests: Vec<RecordedRequest>,
    outcomes: Vec<Outcome>,
}

struct State {
    shared: Mutex<Shared>,
    changed: Condvar,
}

impl State {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        // A panicking connection task must not hide the recorded data from the test.
        self.shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The running server; stops (closing every open connection) when dropped.
pub struct ScriptedServer {
    addr: SocketAddr,
    state: Arc<State>,
    shutdown: CancellationToken,
    thread: Option<JoinHandle<()>>,
}

impl ScriptedServer {
    /// Starts a server on an ephemeral `127.0.0.1` port with an empty script.
    pub fn start() -> ScriptedServer {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        std_listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let addr = std_listener.local_addr().expect("listener address");
        let state = Arc::new(State {
            shared: Mutex::new(Shared::default()),
            changed: Condvar::new(),
        });
        let shutdown = CancellationToken::new();
        let thread = {
            let state = Arc::clone(&state);
            let shutdown = shutdown.clone();
            std::thread::Builder::new()
                .name("scripted-server".into())
                .spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .expect("server runtime");
                    runtime.block_on(serve(std_listener, state, shutdown));
                })
                .expect("spawn server thread")
        };
        ScriptedServer {
            addr,
            state,
            shutdown,
            thread: Some(thread),
        }
    }

    /// Starts a server with `replies` already queued.
    pub fn with_replies(replies: impl IntoIterator<Item = Reply>) -> ScriptedServer {
        let server = Self::start();
        for reply in replies {
            server.push(reply);
        }
        server
    }

    /// `http://127.0.0.1:<port>/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues the reply for the next unanswered request.
    pub fn push(&self, reply: Reply) {
        self.state.lock().script.push_back(reply);
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.lock().requests.clone()
    }

    /// Every request body so far, parsed as JSON.
    pub fn request_bodies(&self) -> Vec<Value> {
        self.requests().iter().map(RecordedRequest::json).collect()
    }

    /// Every request body so far as one text to search (for a secret that must not have
    /// reached the model, or a word that must have).
    pub fn all_bodies(&self) -> String {
        self.request_bodies().iter().map(Value::to_string).collect()
    }

    /// The tool results gg sent back, in order (from the last request, which carries them all).
    pub fn tool_results(&self) -> Vec<String> {
        let bodies = self.request_bodies();
        let Some(last) = bodies.last() else {
            return Vec::new();
        };
        last["messages"]
            .as_array()
            .map(|messages| {
                messages
                    .iter()
                    .filter(|m| m["role"] == "tool")
                    .map(|m| m["content"].as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// How each finished connection ended, in completion order.
    pub fn outcomes(&self) -> Vec<Outcome> {
        self.state.lock().outcomes.clone()
    }

    /// Replies still queued.
    pub fn pending_replies(&self) -> usize {
        self.state.lock().script.len()
    }

    /// Waits until `count` connections have finished (or `timeout` passes) and returns the
    /// outcomes seen. Blocks the thread: from an async test use
    /// [`outcomes_after`](Self::outcomes_after).
    pub fn wait_for_outcomes(&self, count: usize, timeout: Duration) -> Vec<Outcome> {
        let deadline = Instant::now() + timeout;
        let mut shared = self.state.lock();
        while shared.outcomes.len() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            shared = self
                .state
                .changed
                .wait_timeout(shared, left)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
        shared.outcomes.clone()
    }
}

impl ScriptedServer {
    /// [`wait_for_outcomes`](Self::wait_for_outcomes) for async tests: polls instead of blocking,
    /// so client tasks on the same runtime (such as hyper's connection task) keep running.
    pub async fn outcomes_after(&self, count: usize, timeout: Duration) -> Vec<Outcome> {
        let deadline = Instant::now() + timeout;
        loop {
            let outcomes = self.outcomes();
            if outcomes.len() >= count || Instant::now() >= deadline {
                return outcomes;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(
    std_listener: std::net::TcpListener,
    state: Arc<State>,
    shutdown: CancellationToken,
) {
    let listener = TcpListener::from_std(std_listener).expect("register listener");
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    connections.spawn(handle(stream, Arc::clone(&state), shutdown.clone()));
                }
            }
        }
    }
    // Let stalled/hanging connections observe the shutdown and record it.
    while connections.join_next().await.is_some() {}
}

async fn handle(mut stream: TcpStream, state: Arc<State>, shutdown: CancellationToken) {
    let _ = stream.set_nodelay(true);
    let request = tokio::select! {
        () = shutdown.cancelled() => None,
        request = read_request(&mut stream) => request,
    };
    let outcome = match request {
        // `/v1/embeddings` answers from the request itself (deterministic fake vectors) and never
        // consumes the chat script, so a test scripts only the model's turns.
        Some(request) if request.path.ends_with("/embeddings") => {
            state.lock().requests.push(request.clone());
            state.changed.notify_all();
            respond(&mut stream, embeddings_reply(&request), &shutdown).await
        }
        Some(request) => {
            let reply = {
                let mut shared = state.lock();
                shared.requests.push(request.clone());
                shared.script.pop_front()
            };
            let reply = match reply {
                Some(Reply::Computed(Computed(make))) => match make(&request) {
                    Reply::Computed(_) => {
                        Some(Reply::status(500, "scripted server: nested computed reply"))
                    }
                    made => Some(made),
                },
                other => other,
            };
            state.changed.notify_all();
            let reply =
                reply.unwrap_or_else(|| Reply::status(500, "scripted server: no reply queued"));
            respond(&mut stream, reply, &shutdown).await
        }
        None => Outcome::BadRequest,
    };
    state.lock().outcomes.push(outcome);
    state.changed.notify_all();
}

async fn read_request(stream: &mut TcpStream) -> Option<RecordedRequest> {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEAD_BYTES {
            return None;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = std::str::from_utf8(&buf[..head_end]).ok()?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_string();
    let path = request_line.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let mut chunk = vec![0u8; (length - body.len()).min(64 * 1024)];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Some(RecordedRequest {
        method,
        path,
        headers,
        body,
    })
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Scripted",
    }
}

fn head(status: u16, headers: &[(String, String)], framing: &str) -> Vec<u8> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nConnection: close\r\n{framing}",
        reason_phrase(status)
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    head.into_bytes()
}

/// Waits `delay`, or until the client closes its side (returns false then) or shutdown.
async fn pause(
    stream: &mut TcpStream,
    delay: Option<Duration>,
    shutdown: &CancellationToken,
) -> Result<(), Outcome> {
    let mut probe = [0u8; 512];
    let sleep = async {
        match delay {
            Some(delay) => tokio::time::sleep(delay).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(sleep);
    loop {
        tokio::select! {
            () = &mut sleep => return Ok(()),
            () = shutdown.cancelled() => return Err(Outcome::Shutdown),
            read = stream.read(&mut probe) => match read {
                Ok(0) | Err(_) => return Err(Outcome::ClientGone),
                Ok(_) => {} // Pipelined bytes are not expected; ignore them.
            },
        }
    }
}

async fn respond(stream: &mut TcpStream, reply: Reply, shutdown: &CancellationToken) -> Outcome {
    match reply {
        Reply::ResetBeforeHeaders => {
            let _ = stream.set_zero_linger();
            Outcome::Reset
        }
        // Resolved into a concrete reply in `handle` before it gets here.
        Reply::Computed(_) => Outcome::BadRequest,
        Reply::Hang => match pause(stream, None, shutdown).await {
            Err(outcome) => outcome,
            Ok(()) => Outcome::Completed,
        },
        Reply::Status {
            status,
            headers,
            body,
        } => {
            let mut all = headers;
            all.push(("Content-Type".into(), "application/json".into()));
            let mut bytes = head(status, &all, &format!("Content-Length: {}\r\n", body.len()));
            bytes.extend_from_slice(&body);
            match stream.write_all(&bytes).await {
                Ok(()) => {
                    let _ = stream.shutdown().await;
                    Outcome::Completed
                }
                Err(_) => Outcome::ClientGone,
            }
        }
        Reply::Stream(reply) => stream_reply(stream, reply, shutdown).await,
    }
}

async fn stream_reply(
    stream: &mut TcpStream,
    reply: StreamReply,
    shutdown: &CancellationToken,
) -> Outcome {
    let chunked = reply.framing == Framing::Chunked;
    let mut headers = reply.headers.clone();
    headers.push(("Content-Type".into(), "text/event-stream".into()));
    headers.push(("Cache-Control".into(), "no-cache".into()));
    let framing = if chunked {
        "Transfer-Encoding: chunked\r\n"
    } else {
        ""
    };
    if stream
        .write_all(&head(reply.status, &headers, framing))
        .await
        .is_err()
    {
        return Outcome::ClientGone;
    }
    let mut budget = reply.cut_after;
    for part in reply.parts {
        match part {
            Part::Delay(delay) => {
                if let Err(outcome) = pause(stream, Some(delay), shutdown).await {
                    return outcome;
                }
            }
            Part::Bytes(bytes) => {
                let (bytes, cut) = match budget {
                    Some(left) if bytes.len() >= left => (&bytes[..left], true),
                    _ => (&bytes[..], false),
                };
                if let Some(left) = budget.as_mut() {
                    *left -= bytes.len();
                }
                if !bytes.is_empty() && write_body(stream, bytes, chunked).await.is_err() {
                    return Outcome::ClientGone;
                }
                if cut {
                    let _ = stream.flush().await;
                    return Outcome::Cut;
                }
            }
        }
    }
    if reply.stall {
        return match pause(stream, None, shutdown).await {
            Err(outcome) => outcome,
            Ok(()) => Outcome::Completed,
        };
    }
    if chunked && stream.write_all(b"0\r\n\r\n").await.is_err() {
        return Outcome::ClientGone;
    }
    let _ = stream.shutdown().await;
    Outcome::Completed
}

async fn write_body(stream: &mut TcpStream, bytes: &[u8], chunked: bool) -> std::io::Result<()> {
    if chunked {
        let mut frame = format!("{:x}\r\n", bytes.len()).into_bytes();
        frame.extend_from_slice(bytes);
        frame.extend_from_slice(b"\r\n");
        stream.write_all(&frame).await?;
    } else {
        stream.write_all(bytes).await?;
    }
    stream.flush().await
}

/// A loopback listener whose accept queue is full, so a further connection attempt is neither
/// accepted nor refused: the kernel drops the SYN and the client's connect hangs. Keep the
/// returned value alive for as long as the address must stay saturated.
pub struct SaturatedListener {
    pub addr: SocketAddr,
    _listener: std::net::TcpListener,
    _queued: Vec<std::net::TcpStream>,
}

impl SaturatedListener {
    /// `None` if the kernel kept accepting (then a connect-timeout test cannot be run honestly).
    pub fn new() -> Option<SaturatedListener> {
        let socket = socket_with_backlog()?;
        let addr = socket.local_addr().ok()?;
        let mut queued = Vec::new();
        for _ in 0..64 {
            match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
                Ok(stream) => queued.push(stream),
                Err(err) if err.kind() == std::io::ErrorKind::TimedOut => {
                    return Some(SaturatedListener {
                        addr,
                        _listener: socket,
                        _queued: queued,
                    });
                }
                Err(_) => return None,
            }
        }
        None
    }
}

/// A listening socket with the smallest backlog the kernel allows.
/// Runs on its own thread because tokio's `listen` needs a runtime and the caller may already be
/// inside one.
fn socket_with_backlog() -> Option<std::net::TcpListener> {
    std::thread::spawn(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        runtime.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4().ok()?;
            socket.bind("127.0.0.1:0".parse().ok()?).ok()?;
            let listener = socket.listen(0).ok()?;
            listener.into_std().ok()
        })
    })
    .join()
    .ok()
    .flatten()
}
