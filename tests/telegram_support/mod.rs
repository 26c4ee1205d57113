//! A fake Telegram Bot API on loopback for the Telegram channel's tests: `POST
//! /bot<token>/<method>` with a JSON body, answered in the Bot API's shapes
//! (`{"ok":true,"result":…}`, `{"ok":false,"error_code":…,"description":…}`).
//!
//! It implements what ggd calls: `getUpdates` (a long poll: it holds the request until an update
//! at or above the offset is queued, or the asked timeout passes), `sendMessage`,
//! `editMessageText` (with Telegram's "message is not modified" and "message to edit not found"
//! errors), `answerCallbackQuery`, `getFile` and the file download (`GET
//! /file/bot<token>/<file_path>`, with Telegram's "invalid file_id" and "file is too big" for a
//! file over 20 MiB), and `sendVoice`/`sendAudio` (multipart uploads, kept with their bytes). Updates are never forgotten: every `getUpdates` gets all
//! queued updates from its offset on, which is what Telegram does for updates that were never
//! confirmed, so a client that lost its offset would see them again. A wrong token is a 401.
//! Faults can be queued for the next `getUpdates` calls (a 429 with `retry_after`, a connection
//! reset, a 502 whose description echoes the request path, token included).
#![allow(dead_code)] // not every test uses every helper

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// What the next `getUpdates` does instead of answering.
#[derive(Debug, Clone)]
pub enum Fault {
    /// `429 {"parameters": {"retry_after": seconds}}`.
    TooManyRequests(u64),
    /// The connection is closed without an answer.
    Reset,
    /// `502` whose description repeats the request's path (with the token in it).
    BadGatewayEchoingPath,
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct ApiRequest {
    pub method: String,
    pub body: Value,
    pub at: Instant,
}

/// A message the bot sent, as it stands after its edits.
#[derive(Debug, Clone)]
pub struct SentMessage {
    pub message_id: i64,
    pub chat: i64,
    pub text: String,
    pub keyboard: Option<Value>,
    /// The message's `entities` as sent (a quote is a `blockquote` entity).
    pub entities: Option<Value>,
    /// When each `editMessageText` of it arrived.
    pub edits: Vec<Instant>,
}

/// A voice or audio message the bot sent (`sendVoice` or `sendAudio`).
#[derive(Debug, Clone)]
pub struct SentAudio {
    pub method: String,
    pub chat: i64,
    pub file_name: String,
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// Telegram's limit on a file a bot may download.
pub const DOWNLOAD_LIMIT: u64 = 20 * 1024 * 1024;

/// A file the fake serves: where `getFile` says it is, its bytes, and the size `getFile`
/// reports (the bytes' length unless set otherwise).
struct StoredFile {
    path: String,
    bytes: Vec<u8>,
    size: u64,
}

#[derive(Default)]
struct Shared {
    updates: Vec<Value>,
    next_update_id: i64,
    next_message_id: i64,
    requests: Vec<ApiRequest>,
    messages: Vec<SentMessage>,
    faults: Vec<Fault>,
    /// `retry_after` seconds of 429s for the next `editMessageText` calls.
    edit_faults: Vec<u64>,
    files: HashMap<String, StoredFile>,
    /// The `file_path` of every download asked for.
    downloads: Vec<String>,
    audio: Vec<SentAudio>,
}

struct State {
    token: String,
    shared: Mutex<Shared>,
    queued: Notify,
}

impl State {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The running fake; stops when dropped.
pub struct FakeBotApi {
    addr: SocketAddr,
    state: Arc<State>,
    shutdown: CancellationToken,
    thread: Option<JoinHandle<()>>,
}

impl FakeBotApi {
    /// A fake for the bot `token` on an ephemeral loopback port.
    pub fn start(token: &str) -> FakeBotApi {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("address");
        let state = Arc::new(State {
            token: token.to_string(),
            shared: Mutex::new(Shared {
                next_update_id: 100,
                next_message_id: 1,
                ..Shared::default()
            }),
            queued: Notify::new(),
        });
        let shutdown = CancellationToken::new();
        let thread = {
            let (state, shutdown) = (Arc::clone(&state), shutdown.clone());
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                runtime.block_on(serve(listener, state, shutdown));
            })
        };
        FakeBotApi {
            addr,
            state,
            shutdown,
            thread: Some(thread),
        }
    }

    /// The `apiBase` to configure: `http://127.0.0.1:<port>`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn push(&self, make: impl FnOnce(i64) -> Value) -> i64 {
        let id = {
            let mut shared = self.state.lock();
            let id = shared.next_update_id;
            shared.next_update_id += 1;
            let update = make(id);
            shared.updates.push(update);
            id
        };
        self.state.queued.notify_waiters();
        id
    }

    /// Queues a text message from `chat`; returns its update id.
    pub fn push_text(&self, chat: i64, text: &str) -> i64 {
        self.push(|id| {
            json!({"update_id": id, "message": {
                "message_id": id, "date": 1_700_000_000, "chat": {"id": chat, "type": "private"},
                "from": {"id": chat, "is_bot": false, "first_name": "T"}, "text": text}})
        })
    }

    /// Stores a file `getFile` will find under `file_id`, to be downloaded from `file_path`.
    pub fn add_file(&self, file_id: &str, file_path: &str, bytes: Vec<u8>) {
        let size = bytes.len() as u64;
        self.state.lock().files.insert(
            file_id.to_string(),
            StoredFile {
                path: file_path.to_string(),
                bytes,
                size,
            },
        );
    }

    /// [`FakeBotApi::add_file`] with `getFile` reporting `size` instead of the true length: a
    /// server whose word on the size cannot be trusted.
    pub fn add_file_reporting(&self, file_id: &str, file_path: &str, bytes: Vec<u8>, size: u64) {
        self.state.lock().files.insert(
            file_id.to_string(),
            StoredFile {
                path: file_path.to_string(),
                bytes,
                size,
            },
        );
    }

    /// Queues a voice note from `chat` of the file `file_id`; `file_size` is what the message
    /// says of its size (Telegram says it; `None` plays a message that does not).
    pub fn push_voice(&self, chat: i64, file_id: &str, file_size: Option<u64>) -> i64 {
        let file_id = file_id.to_string();
        self.push(|id| {
            let mut voice = json!({"file_id": file_id, "file_unique_id": format!("u{id}"),
                                   "duration": 2, "mime_type": "audio/ogg"});
            if let Some(size) = file_size {
                voice["file_size"] = json!(size);
            }
            json!({"update_id": id, "message": {
                "message_id": id, "date": 1_700_000_000, "chat": {"id": chat, "type": "private"},
                "from": {"id": chat, "is_bot": false, "first_name": "T"}, "voice": voice}})
        })
    }

    /// Queues an audio file (`file_name`, `file_size` bytes) from `chat`.
    pub fn push_audio(&self, chat: i64, file_id: &str, file_name: &str, file_size: u64) -> i64 {
        let (file_id, file_name) = (file_id.to_string(), file_name.to_string());
        self.push(|id| {
            json!({"update_id": id, "message": {
                "message_id": id, "date": 1_700_000_000, "chat": {"id": chat, "type": "private"},
                "from": {"id": chat, "is_bot": false, "first_name": "T"},
                "audio": {"file_id": file_id, "file_unique_id": format!("u{id}"), "duration": 60,
                          "file_name": file_name, "mime_type": "audio/mpeg",
                          "file_size": file_size}}})
        })
    }

    /// Queues a press of an inline button with `data`, on `message_id`, in `chat`.
    pub fn push_press(&self, chat: i64, message_id: i64, data: &str) -> i64 {
        self.push(|id| {
            json!({"update_id": id, "callback_query": {
                "id": format!("cb{id}"), "from": {"id": chat, "is_bot": false, "first_name": "T"},
                "chat_instance": "ci", "data": data,
                "message": {"message_id": message_id, "date": 1_700_000_000,
                            "chat": {"id": chat, "type": "private"}, "text": "Approve?"}}})
        })
    }

    /// The next `getUpdates` calls meet these faults, in order.
    pub fn fail_next_polls(&self, faults: &[Fault]) {
        self.state.lock().faults.extend_from_slice(faults);
    }

    /// The next `editMessageText` calls are answered 429 with these `retry_after` seconds.
    pub fn throttle_next_edits(&self, retry_after: &[u64]) {
        self.state.lock().edit_faults.extend_from_slice(retry_after);
    }

    pub fn requests(&self) -> Vec<ApiRequest> {
        self.state.lock().requests.clone()
    }

    /// Every request of `method`.
    pub fn calls(&self, method: &str) -> Vec<ApiRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == method)
            .collect()
    }

    /// The messages sent to `chat`, as they stand.
    pub fn messages(&self, chat: i64) -> Vec<SentMessage> {
        self.state
            .lock()
            .messages
            .iter()
            .filter(|m| m.chat == chat)
            .cloned()
            .collect()
    }

    /// The `file_path` of every file download asked for.
    pub fn downloads(&self) -> Vec<String> {
        self.state.lock().downloads.clone()
    }

    /// The voice and audio messages sent to `chat`.
    pub fn audio(&self, chat: i64) -> Vec<SentAudio> {
        self.state
            .lock()
            .audio
            .iter()
            .filter(|a| a.chat == chat)
            .cloned()
            .collect()
    }

    /// Every message sent, to any chat.
    pub fn all_messages(&self) -> Vec<SentMessage> {
        self.state.lock().messages.clone()
    }

    /// Waits (up to `timeout`) until `ready` holds for the fake's view; panics naming `what`.
    pub fn wait_until(&self, what: &str, timeout: Duration, ready: impl Fn(&FakeBotApi) -> bool) {
        let deadline = Instant::now() + timeout;
        while !ready(self) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; messages: {:#?}; calls: {:?}",
                self.all_messages(),
                self.requests()
                    .iter()
                    .map(|r| r.method.clone())
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until a message to `chat` shows text containing `needle`; returns it.
    pub fn wait_for_text(&self, chat: i64, needle: &str, timeout: Duration) -> SentMessage {
        self.wait_until(&format!("{needle:?} in chat {chat}"), timeout, |api| {
            api.messages(chat).iter().any(|m| m.text.contains(needle))
        });
        self.messages(chat)
            .into_iter()
            .find(|m| m.text.contains(needle))
            .expect("found")
    }
}

impl Drop for FakeBotApi {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(listener: std::net::TcpListener, state: Arc<State>, shutdown: CancellationToken) {
    let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
    loop {
        let (stream, _) = tokio::select! {
            () = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(_) => continue,
            },
        };
        let (state, shutdown) = (Arc::clone(&state), shutdown.clone());
        tokio::spawn(async move {
            let reset = CancellationToken::new();
            let service = {
                let (reset, shutdown) = (reset.clone(), shutdown.clone());
                hyper::service::service_fn(move |request| {
                    let (state, shutdown, reset) =
                        (Arc::clone(&state), shutdown.clone(), reset.clone());
                    async move { Ok::<_, Infallible>(answer(request, &state, &shutdown, &reset).await) }
                })
            };
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            // A reset fault drops the connection without an answer.
            tokio::select! {
                _ = connection => {}
                () = reset.cancelled() => {}
                () = shutdown.cancelled() => {}
            }
        });
    }
}

fn reply(status: u16, body: Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = hyper::StatusCode::from_u16(status).expect("status");
    response
        .headers_mut()
        .insert("content-type", "application/json".parse().expect("header"));
    response
}

fn error(code: u16, description: &str) -> Response<Full<Bytes>> {
    reply(
        code,
        json!({"ok": false, "error_code": code, "description": description}),
    )
}

fn ok(result: Value) -> Response<Full<Bytes>> {
    reply(200, json!({"ok": true, "result": result}))
}

async fn answer(
    request: Request<Incoming>,
    state: &State,
    shutdown: &CancellationToken,
    reset: &CancellationToken,
) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_string();
    let content_type = request
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return error(400, "Bad Request: unreadable body"),
    };
    if let Some((token, file_path)) = path
        .strip_prefix("/file/bot")
        .and_then(|rest| rest.split_once('/'))
    {
        if token != state.token {
            return error(401, "Unauthorized");
        }
        return download(state, file_path);
    }
    let Some((token, method)) = path
        .strip_prefix("/bot")
        .and_then(|rest| rest.split_once('/'))
    else {
        return error(404, "Not Found");
    };
    if token != state.token {
        return error(401, "Unauthorized");
    }
    let (body, upload) = if content_type.starts_with("multipart/form-data") {
        match parse_multipart(&content_type, &body) {
            Some(parts) => form(parts),
            None => return error(400, "Bad Request: can't parse multipart/form-data"),
        }
    } else {
        (serde_json::from_slice(&body).unwrap_or(Value::Null), None)
    };
    state.lock().requests.push(ApiRequest {
        method: method.to_string(),
        body: body.clone(),
        at: Instant::now(),
    });
    match method {
        "getUpdates" => get_updates(state, &body, &path, shutdown, reset).await,
        "sendMessage" => send_message(state, &body),
        "editMessageText" => edit_message_text(state, &body),
        "answerCallbackQuery" => ok(json!(true)),
        "getFile" => get_file(state, &body),
        "sendVoice" => send_audio(state, "voice", &body, upload),
        "sendAudio" => send_audio(state, "audio", &body, upload),
        _ => error(404, "Not Found: method not found"),
    }
}

async fn get_updates(
    state: &State,
    body: &Value,
    path: &str,
    shutdown: &CancellationToken,
    reset: &CancellationToken,
) -> Response<Full<Bytes>> {
    let fault = {
        let mut shared = state.lock();
        (!shared.faults.is_empty()).then(|| shared.faults.remove(0))
    };
    match fault {
        Some(Fault::TooManyRequests(seconds)) => {
            return reply(
                429,
                json!({"ok": false, "error_code": 429,
                       "description": format!("Too Many Requests: retry after {seconds}"),
                       "parameters": {"retry_after": seconds}}),
            );
        }
        Some(Fault::Reset) => {
            reset.cancel();
            std::future::pending::<()>().await;
        }
        Some(Fault::BadGatewayEchoingPath) => {
            return error(502, &format!("Bad Gateway: upstream failed for {path}"));
        }
        None => {}
    }
    let offset = body["offset"].as_i64().unwrap_or(0);
    let timeout = Duration::from_secs(body["timeout"].as_u64().unwrap_or(0).min(50));
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        // Registered before the check, so an update queued in between still wakes us.
        let queued = state.queued.notified();
        let ready: Vec<Value> = state
            .lock()
            .updates
            .iter()
            .filter(|u| u["update_id"].as_i64().unwrap_or(0) >= offset)
            .cloned()
            .collect();
        if !ready.is_empty() || tokio::time::Instant::now() >= deadline {
            return ok(Value::Array(ready));
        }
        tokio::select! {
            () = queued => {}
            () = tokio::time::sleep_until(deadline) => {}
            () = shutdown.cancelled() => return error(500, "shutting down"),
        }
    }
}

fn send_message(state: &State, body: &Value) -> Response<Full<Bytes>> {
    let (Some(chat), Some(text)) = (body["chat_id"].as_i64(), body["text"].as_str()) else {
        return error(400, "Bad Request: chat_id and text are required");
    };
    if text.is_empty() {
        return error(400, "Bad Request: message text is empty");
    }
    if text.encode_utf16().count() > 4096 {
        return error(400, "Bad Request: message is too long");
    }
    let mut shared = state.lock();
    let message_id = shared.next_message_id;
    shared.next_message_id += 1;
    shared.messages.push(SentMessage {
        message_id,
        chat,
        text: text.to_string(),
        keyboard: body.get("reply_markup").cloned(),
        entities: body.get("entities").cloned(),
        edits: Vec::new(),
    });
    ok(json!({"message_id": message_id, "date": 1_700_000_000,
              "chat": {"id": chat, "type": "private"}, "text": text}))
}

fn edit_message_text(state: &State, body: &Value) -> Response<Full<Bytes>> {
    let (Some(chat), Some(id), Some(text)) = (
        body["chat_id"].as_i64(),
        body["message_id"].as_i64(),
        body["text"].as_str(),
    ) else {
        return error(
            400,
            "Bad Request: chat_id, message_id and text are required",
        );
    };
    if text.encode_utf16().count() > 4096 {
        return error(400, "Bad Request: MESSAGE_TOO_LONG");
    }
    let mut shared = state.lock();
    if !shared.edit_faults.is_empty() {
        let seconds = shared.edit_faults.remove(0);
        return reply(
            429,
            json!({"ok": false, "error_code": 429,
                   "description": format!("Too Many Requests: retry after {seconds}"),
                   "parameters": {"retry_after": seconds}}),
        );
    }
    let Some(message) = shared
        .messages
        .iter_mut()
        .find(|m| m.chat == chat && m.message_id == id)
    else {
        return error(400, "Bad Request: message to edit not found");
    };
    if message.text == text && message.keyboard.is_none() {
        return error(
            400,
            "Bad Request: message is not modified: specified new message content and reply \
             markup are exactly the same as a current content and reply markup of the message",
        );
    }
    message.text = text.to_string();
    message.keyboard = None;
    message.edits.push(Instant::now());
    ok(json!({"message_id": id, "date": 1_700_000_000,
              "chat": {"id": chat, "type": "private"}, "text": text}))
}

fn get_file(state: &State, body: &Value) -> Response<Full<Bytes>> {
    let Some(file_id) = body["file_id"].as_str() else {
        return error(400, "Bad Request: file_id is required");
    };
    let shared = state.lock();
    let Some(file) = shared.files.get(file_id) else {
        return error(400, "Bad Request: invalid file_id");
    };
    if file.size > DOWNLOAD_LIMIT {
        return error(400, "Bad Request: file is too big");
    }
    ok(
        json!({"file_id": file_id, "file_unique_id": format!("u-{file_id}"),
              "file_size": file.size, "file_path": file.path}),
    )
}

fn download(state: &State, file_path: &str) -> Response<Full<Bytes>> {
    let mut shared = state.lock();
    shared.downloads.push(file_path.to_string());
    let Some(file) = shared.files.values().find(|f| f.path == file_path) else {
        return error(404, "Not Found");
    };
    let mut response = Response::new(Full::new(Bytes::from(file.bytes.clone())));
    response.headers_mut().insert(
        "content-type",
        "application/octet-stream".parse().expect("header"),
    );
    response
}

fn send_audio(
    state: &State,
    field: &str,
    body: &Value,
    upload: Option<(String, Part)>,
) -> Response<Full<Bytes>> {
    let Some(chat) = body["chat_id"].as_str().and_then(|c| c.parse::<i64>().ok()) else {
        return error(400, "Bad Request: chat_id is required");
    };
    let Some((_, part)) = upload.filter(|(name, _)| name == field) else {
        return error(
            400,
            &format!("Bad Request: there is no {field} in the request"),
        );
    };
    if part.data.is_empty() {
        return error(400, "Bad Request: file must be non-empty");
    }
    let mut shared = state.lock();
    let message_id = shared.next_message_id;
    shared.next_message_id += 1;
    let method = if field == "voice" {
        "sendVoice"
    } else {
        "sendAudio"
    };
    shared.audio.push(SentAudio {
        method: method.to_string(),
        chat,
        file_name: part.file_name.clone().unwrap_or_default(),
        content_type: part.content_type.clone().unwrap_or_default(),
        bytes: part.data.clone(),
    });
    ok(json!({"message_id": message_id, "date": 1_700_000_000,
              "chat": {"id": chat, "type": "private"},
              field: {"file_id": format!("sent-{message_id}"),
                      "file_unique_id": format!("s{message_id}"), "duration": 1,
                      "file_size": part.data.len()}}))
}

/// One part of a `multipart/form-data` body.
#[derive(Debug, Clone)]
struct Part {
    name: String,
    file_name: Option<String>,
    content_type: Option<String>,
    data: Vec<u8>,
}

/// The form's text fields as a JSON object (recorded as the request's body), and its file part
/// with its field name.
fn form(parts: Vec<Part>) -> (Value, Option<(String, Part)>) {
    let mut fields = serde_json::Map::new();
    let mut file = None;
    for part in parts {
        if part.file_name.is_some() {
            file = Some((part.name.clone(), part));
        } else {
            fields.insert(
                part.name.clone(),
                Value::String(String::from_utf8_lossy(&part.data).into_owned()),
            );
        }
    }
    (Value::Object(fields), file)
}

/// A `multipart/form-data` body split into its parts (RFC 7578), binary data intact.
fn parse_multipart(content_type: &str, body: &[u8]) -> Option<Vec<Part>> {
    let boundary = content_type
        .split(';')
        .find_map(|p| p.trim().strip_prefix("boundary="))?
        .trim_matches('"');
    let delimiter = format!("--{boundary}").into_bytes();
    let find = |haystack: &[u8], needle: &[u8], from: usize| -> Option<usize> {
        haystack
            .get(from..)?
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|at| at + from)
    };
    let mut at = find(body, &delimiter, 0)? + delimiter.len();
    let mut parts = Vec::new();
    loop {
        if body.get(at..at + 2) == Some(b"--") {
            return Some(parts);
        }
        at += 2; // CRLF after the delimiter
        let headers_end = find(body, b"\r\n\r\n", at)?;
        let headers = String::from_utf8_lossy(&body[at..headers_end]).into_owned();
        let next = find(
            body,
            &[b"\r\n".as_slice(), &delimiter].concat(),
            headers_end,
        )?;
        let data = body[headers_end + 4..next].to_vec();
        let mut part = Part {
            name: String::new(),
            file_name: None,
            content_type: None,
            data,
        };
        for line in headers.split("\r\n") {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            match key.trim().to_ascii_lowercase().as_str() {
                "content-disposition" => {
                    for param in value.split(';').map(str::trim) {
                        if let Some(v) = param.strip_prefix("name=") {
                            part.name = v.trim_matches('"').to_string();
                        } else if let Some(v) = param.strip_prefix("filename=") {
                            part.file_name = Some(v.trim_matches('"').to_string());
                        }
                    }
                }
                "content-type" => part.content_type = Some(value.trim().to_string()),
                _ => {}
            }
        }
        parts.push(part);
        at = next + 2 + delimiter.len();
    }
}
