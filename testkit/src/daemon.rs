//! Real clients for the real `ggd` binary, for gg's daemon tests and the `daemon_runs` bench: a
//! stdio JSON-RPC client over pipes and a minimal HTTP/1.0 client over loopback TCP
//! (close-delimited bodies, so SSE needs no chunk decoder).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fixture::{Bins, fixture_dir};

/// How long a client waits for an answer, a log line or an exit before it fails the test.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// Where a daemon test's `ggd` lives: a home with a project directory in it, and the session
/// directory.
pub struct Env {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub sessions: PathBuf,
}

/// A home with a project in it and a session directory, under [`fixture_dir`].
pub fn env<B: Bins>() -> Env {
    // Outside /tmp: /tmp is a scratch directory, where the classifier allows writes.
    let tmp = fixture_dir(Path::new(B::TARGET_TMPDIR));
    let home = tmp.path().join("home");
    let project = home.join("project");
    std::fs::create_dir_all(&project).unwrap();
    Env {
        home: home.canonicalize().unwrap(),
        project: project.canonicalize().unwrap(),
        sessions: tmp.path().join("sessions"),
        tmp,
    }
}

/// `ggd` with a private HOME, the scripted server as provider, and the test hooks on.
pub fn ggd<B: Bins>(e: &Env, base_url: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(B::GGD);
    cmd.current_dir(&e.project)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &e.home)
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", base_url)
        .env("GG_SESSION_DIR", &e.sessions)
        .env("GG_LOG_LEVEL", "info")
        .env("GGD_TEST_HOOKS", "1")
        .args(args);
    cmd
}

#[derive(Default)]
struct Inbox {
    responses: HashMap<u64, Value>,
    unsolicited: Vec<Value>,
    closed: bool,
}

/// Collects stderr lines (JSON logs) so tests can look for the bound address and so the pipe
/// never fills up.
#[derive(Clone, Default)]
pub struct Logs(Arc<(Mutex<Vec<String>>, Condvar)>);

impl Logs {
    fn spawn(stderr: impl Read + Send + 'static) -> Logs {
        let logs = Logs::default();
        let sink = logs.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let (lines, changed) = &*sink.0;
                lines.lock().unwrap().push(line);
                changed.notify_all();
            }
        });
        logs
    }

    pub fn lines(&self) -> Vec<String> {
        self.0.0.lock().unwrap().clone()
    }

    /// The first log line satisfying `pred`, waiting for it.
    pub fn wait_for(&self, pred: impl Fn(&str) -> bool) -> String {
        let (lines, changed) = &*self.0;
        let deadline = Instant::now() + TIMEOUT;
        let mut guard = lines.lock().unwrap();
        loop {
            if let Some(line) = guard.iter().find(|l| pred(l)) {
                return line.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "log line not found; logs:\n{}",
                guard.join("\n")
            );
            guard = changed.wait_timeout(guard, left).unwrap().0;
        }
    }
}

/// A daemon in stdio mode.
pub struct StdioClient {
    pub child: Child,
    stdin: Mutex<Option<ChildStdin>>,
    inbox: Arc<(Mutex<Inbox>, Condvar)>,
    next_id: AtomicU64,
    pub logs: Logs,
}

impl StdioClient {
    pub fn spawn(mut cmd: Command) -> StdioClient {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ggd");
        let stdout = child.stdout.take().unwrap();
        let logs = Logs::spawn(child.stderr.take().unwrap());
        let inbox: Arc<(Mutex<Inbox>, Condvar)> = Arc::default();
        let filler = Arc::clone(&inbox);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let value: Value = serde_json::from_str(&line).expect("daemon wrote a JSON line");
                let (inbox, changed) = &*filler;
                let mut inbox = inbox.lock().unwrap();
                match value["id"].as_u64() {
                    Some(id) => {
                        inbox.responses.insert(id, value);
                    }
                    None => inbox.unsolicited.push(value),
                }
                changed.notify_all();
            }
            let (inbox, changed) = &*filler;
            inbox.lock().unwrap().closed = true;
            changed.notify_all();
        });
        StdioClient {
            stdin: Mutex::new(child.stdin.take()),
            child,
            inbox,
            next_id: AtomicU64::new(1),
            logs,
        }
    }

    pub fn send_raw(&self, bytes: &[u8]) {
        let mut stdin = self.stdin.lock().unwrap();
        let stdin = stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and returns its id without waiting.
    pub fn send(&self, method: &str, params: Value) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_raw(format!("{line}\n").as_bytes());
        id
    }

    pub fn response(&self, id: u64) -> Value {
        let (inbox, changed) = &*self.inbox;
        let deadline = Instant::now() + TIMEOUT;
        let mut guard = inbox.lock().unwrap();
        loop {
            if let Some(v) = guard.responses.remove(&id) {
                return v;
            }
            assert!(!guard.closed, "daemon closed stdout before answering {id}");
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no response to request {id}");
            guard = changed.wait_timeout(guard, left).unwrap().0;
        }
    }

    /// Responses without a numeric id (parse errors).
    pub fn wait_unsolicited(&self, count: usize) -> Vec<Value> {
        let (inbox, changed) = &*self.inbox;
        let deadline = Instant::now() + TIMEOUT;
        let mut guard = inbox.lock().unwrap();
        while guard.unsolicited.len() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "expected {count} id-less responses");
            guard = changed.wait_timeout(guard, left).unwrap().0;
        }
        guard.unsolicited.clone()
    }

    pub fn unsolicited(&self) -> Vec<Value> {
        self.inbox.0.lock().unwrap().unsolicited.clone()
    }

    pub fn call(&self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.response(id)
    }

    pub fn ok(&self, method: &str, params: Value) -> Value {
        let response = self.call(method, params.clone());
        assert!(
            response.get("error").is_none(),
            "{method} {params} failed: {response}"
        );
        response["result"].clone()
    }

    /// `session.create` without parameters: the new session's id (as [`HttpDaemon::new_session`]).
    pub fn new_session(&self) -> String {
        self.ok("session.create", json!({}))["sessionId"]
            .as_str()
            .unwrap()
            .to_string()
    }

    pub fn err(&self, method: &str, params: Value) -> Value {
        let response = self.call(method, params.clone());
        assert!(
            response.get("result").is_none(),
            "{method} {params} succeeded: {response}"
        );
        response["error"].clone()
    }

    pub fn close_stdin(&self) {
        self.stdin.lock().unwrap().take();
    }

    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "ggd did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Follows a run with `run.wait` until `stop` holds for the collected events or the run is done.
pub fn follow(client: &StdioClient, run_id: &str, stop: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let mut events: Vec<Value> = Vec::new();
    loop {
        let after = events
            .last()
            .map(|e| e["sequence"].as_u64().unwrap())
            .unwrap_or(0);
        let waited = client.ok("run.wait", json!({"runId": run_id, "afterSequence": after}));
        events.extend(waited["events"].as_array().unwrap().iter().cloned());
        if stop(&events) || waited["done"] == json!(true) {
            return events;
        }
    }
}

pub fn has_type(events: &[Value], kind: &str) -> bool {
    events.iter().any(|e| e["type"] == kind)
}

pub fn last_type(events: &[Value]) -> String {
    events
        .last()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

/// A daemon in HTTP mode on an ephemeral loopback port.
pub struct HttpDaemon {
    pub child: Child,
    pub addr: SocketAddr,
    pub token: String,
    pub logs: Logs,
}

impl HttpDaemon {
    pub fn spawn(cmd: Command, token: &str) -> HttpDaemon {
        HttpDaemon::spawn_with(cmd, token, &["--token", token])
    }

    /// [`HttpDaemon::spawn`] with the token handed over by `token_args` (e.g. `--token-file F`,
    /// or nothing when `GGD_TOKEN` is in the command's environment); `token` is what clients send.
    pub fn spawn_with(mut cmd: Command, token: &str, token_args: &[&str]) -> HttpDaemon {
        let mut child = cmd
            .args(["--http", "127.0.0.1:0"])
            .args(token_args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ggd");
        let logs = Logs::spawn(child.stderr.take().unwrap());
        let line = logs.wait_for(|l| l.contains("ggd serving"));
        let record: Value = serde_json::from_str(&line).unwrap();
        let addr = record["fields"]["addr"].as_str().unwrap().parse().unwrap();
        HttpDaemon {
            child,
            addr,
            token: token.to_string(),
            logs,
        }
    }

    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    /// One request with the token and a correct Host.
    pub fn request(&self, method: &str, path: &str, body: Option<&str>) -> HttpResponse {
        let auth = format!("Bearer {}", self.token);
        let host = self.host();
        http(
            self.addr,
            method,
            path,
            &[("Host", &host), ("Authorization", &auth)],
            body,
        )
    }

    pub fn rpc(&self, method: &str, params: Value) -> Value {
        let body =
            json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
        let response = self.request("POST", "/rpc", Some(&body));
        assert_eq!(response.status, 200, "{}", response.body);
        serde_json::from_str(&response.body).unwrap()
    }

    pub fn ok(&self, method: &str, params: Value) -> Value {
        let response = self.rpc(method, params.clone());
        assert!(
            response.get("error").is_none(),
            "{method} {params} failed: {response}"
        );
        response["result"].clone()
    }

    /// `session.create` without parameters: the new session's id.
    pub fn new_session(&self) -> String {
        self.ok("session.create", json!({}))["sessionId"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// `run.start` of `prompt` in `session` with no approval asked: the run's id.
    pub fn start_unattended_run(&self, session: &str, prompt: &str) -> String {
        self.ok(
            "run.start",
            json!({"sessionId": session, "prompt": prompt, "requireApproval": false}),
        )["runId"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Opens `/events` and returns a reader positioned after the headers.
    pub fn events(&self, query: &str, extra: &[(&str, &str)]) -> SseStream {
        let auth = format!("Bearer {}", self.token);
        let host = self.host();
        let mut headers = vec![("Host", host.as_str()), ("Authorization", auth.as_str())];
        headers.extend_from_slice(extra);
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        write_request(
            &mut stream,
            "GET",
            &format!("/events?{query}"),
            &headers,
            None,
        );
        let mut reader = BufReader::new(stream);
        let (status, headers) = read_head(&mut reader);
        SseStream {
            status,
            headers,
            reader,
        }
    }
}

impl Drop for HttpDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct HttpResponse {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: String,
}

fn write_request(
    stream: &mut TcpStream,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) {
    let mut request = format!("{method} {path} HTTP/1.0\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    if let Some(body) = body {
        request.push_str(body);
    }
    // The server may answer (413) and close before reading a large body.
    let _ = stream.write_all(request.as_bytes());
}

fn read_head(reader: &mut impl BufRead) -> (u16, HashMap<String, String>) {
    let mut status_line = String::new();
    reader.read_line(&mut status_line).unwrap();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let mut headers = HashMap::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap();
        headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    (status, headers)
}

/// One HTTP/1.0 request with exactly these headers (the answer's body is text).
pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> HttpResponse {
    let (status, headers, body) = http_bytes(addr, method, path, headers, body);
    HttpResponse {
        status,
        headers,
        body: String::from_utf8(body).unwrap(),
    }
}

/// One HTTP/1.0 request with exactly these headers: the status, the headers (names in lower
/// case) and the body's bytes as sent (a gzip-encoded body stays encoded).
pub fn http_bytes(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, HashMap<String, String>, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    write_request(&mut stream, method, path, headers, body);
    let mut reader = BufReader::new(stream);
    let (status, headers) = read_head(&mut reader);
    let mut body = Vec::new();
    reader.read_to_end(&mut body).unwrap();
    (status, headers, body)
}

/// A server-sent event stream.
pub struct SseStream {
    pub status: u16,
    pub headers: HashMap<String, String>,
    reader: BufReader<TcpStream>,
}

/// One SSE frame (comments come back with `comment` set).
#[derive(Debug, Clone, Default)]
pub struct SseFrame {
    pub id: Option<u64>,
    pub event: String,
    pub data: String,
    pub comment: Option<String>,
}

impl SseStream {
    /// The next frame, or `None` when the server closed the stream.
    pub fn next_frame(&mut self) -> Option<SseFrame> {
        let mut frame = SseFrame::default();
        let mut any = false;
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).unwrap() == 0 {
                return any.then_some(frame);
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if any {
                    return Some(frame);
                }
                continue;
            }
            any = true;
            if let Some(comment) = line.strip_prefix(':') {
                frame.comment = Some(comment.trim().to_string());
            } else if let Some(id) = line.strip_prefix("id: ") {
                frame.id = Some(id.parse().unwrap());
            } else if let Some(event) = line.strip_prefix("event: ") {
                frame.event = event.to_string();
            } else if let Some(data) = line.strip_prefix("data: ") {
                frame.data.push_str(data);
            }
        }
    }

    pub fn next_event(&mut self) -> Option<Value> {
        loop {
            let frame = self.next_frame()?;
            if frame.comment.is_some() {
                continue;
            }
            let value: Value = serde_json::from_str(&frame.data).unwrap();
            if frame.event == "event" {
                assert_eq!(frame.id, value["sequence"].as_u64());
            }
            return Some(value);
        }
    }
}
