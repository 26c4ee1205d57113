//! A fake Telegram Bot API on loopback for the Telegram channel's tests: `POST
//! /bot<token>/<method>` with a JSON body, answered in the Bot API's shapes
//! (`{"ok":true,"result":…}`, `{"ok":false,"error_code":…,"description":…}`).
//!
//! It implements what ggd calls: `getUpdates` (a long poll: it holds the request until an update
//! at or above the offset is queued, or the asked timeout passes), `sendMessage`,
//! `editMessageText` (with Telegram's "message is not modified" and "message to edit not found"
//! errors) and `answerCallbackQuery`. Updates are never forgotten: every `getUpdates` gets all
//! queued updates from its offset on, which is what Telegram does for updates that were never
//! confirmed, so a client that lost its offset would see them again. A wrong token is a 401.
//! Faults can be queued for the next `getUpdates` calls (a 429 with `retry_after`, a connection
//! reset, a 502 whose description echoes the request path, token included).
//!
//! Voice (`getFile`, the file download, `sendVoice`/`sendAudio`) is not implemented: the channel
//! does not handle voice yet.
#![allow(dead_code)] // not every test uses every helper

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
    /// When each `editMessageText` of it arrived.
    pub edits: Vec<Instant>,
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

    /// Queues a voice note from `chat`.
    pub fn push_voice(&self, chat: i64) -> i64 {
        self.push(|id| {
            json!({"update_id": id, "message": {
                "message_id": id, "date": 1_700_000_000, "chat": {"id": chat, "type": "private"},
                "from": {"id": chat, "is_bot": false, "first_name": "T"},
                "voice": {"file_id": "voice-1", "file_unique_id": "u1", "duration": 2,
                          "mime_type": "audio/ogg"}}})
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
    let body = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return error(400, "Bad Request: unreadable body"),
    };
    let Some((token, method)) = path
        .strip_prefix("/bot")
        .and_then(|rest| rest.split_once('/'))
    else {
        return error(404, "Not Found");
    };
    if token != state.token {
        return error(401, "Unauthorized");
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
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
