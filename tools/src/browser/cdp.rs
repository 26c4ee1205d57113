//! A small Chrome DevTools Protocol client over `--remote-debugging-pipe`.
//!
//! Why a pipe and not a port: a DevTools port on 127.0.0.1 can be driven by any local process
//! (and inside a sandbox with its own network namespace gg could not reach it at all); the pipe is
//! two descriptors only gg holds. Messages are JSON objects separated by a NUL byte: commands go
//! to the browser's descriptor 3, answers and events come back on descriptor 4. The launcher
//! (`process.rs`) moves those onto the child's stdin and stdout.
//!
//! Why not a CDP crate: the protocol needs a handful of commands here; chromiumoxide's generated
//! bindings alone take minutes to compile on two cores, and a WebSocket client is unnecessary
//! with a pipe. This file has no dependency beyond tokio and serde_json.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;

/// The largest single message accepted from the browser (a full-page screenshot is the biggest).
const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// An event from the browser.
#[derive(Debug, Clone)]
pub struct Event {
    pub method: String,
    pub params: Value,
    /// The target session it belongs to (page events), if any.
    pub session: Option<String>,
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

/// A connection to one browser.
pub struct Cdp {
    writer: tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>,
    pending: Pending,
    events: broadcast::Sender<Event>,
    next_id: AtomicU64,
    closed: CancellationToken,
}

impl Cdp {
    /// Starts the reader task over `reader` (the browser's descriptor 4) and writes commands to
    /// `writer` (its descriptor 3).
    pub fn new<R, W>(reader: R, writer: W) -> Arc<Cdp>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (events, _) = broadcast::channel(512);
        let cdp = Arc::new(Cdp {
            writer: tokio::sync::Mutex::new(Box::new(writer)),
            pending: Arc::new(Mutex::new(HashMap::new())),
            events: events.clone(),
            next_id: AtomicU64::new(1),
            closed: CancellationToken::new(),
        });
        let pending = Arc::clone(&cdp.pending);
        let closed = cdp.closed.clone();
        tokio::spawn(async move {
            read_loop(reader, &pending, &events).await;
            closed.cancel();
            if let Ok(mut p) = pending.lock() {
                for (_, tx) in p.drain() {
                    let _ = tx.send(Err("the browser closed the connection".into()));
                }
            }
        });
        cdp
    }

    /// Whether the browser end is gone.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Resolves when the browser end is gone.
    pub async fn closed(&self) {
        self.closed.cancelled().await
    }

    /// Events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Sends `method` (to the page `session` when given) and waits for its answer.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
        timeout: Duration,
    ) -> Result<Value, String> {
        if self.is_closed() {
            return Err("the browser is not running".into());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .map_err(|_| "browser connection state poisoned".to_string())?
            .insert(id, tx);
        let mut bytes = serde_json::to_vec(&message).map_err(|e| e.to_string())?;
        bytes.push(0);
        {
            let mut w = self.writer.lock().await;
            let written = async {
                w.write_all(&bytes).await?;
                w.flush().await
            };
            if let Err(e) = written.await {
                self.forget(id);
                return Err(format!("writing to the browser: {e}"));
            }
        }
        let answer = tokio::select! {
            r = rx => r.map_err(|_| "the browser closed the connection".to_string())?,
            () = tokio::time::sleep(timeout) => {
                self.forget(id);
                return Err(format!("the browser did not answer {method} within {}s", timeout.as_secs()));
            }
        };
        answer.map_err(|e| format!("{method}: {e}"))
    }

    fn forget(&self, id: u64) {
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&id);
        }
    }
}

async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: R,
    pending: &Pending,
    events: &broadcast::Sender<Event>,
) {
    let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let start = buf.len();
        buf.extend_from_slice(&chunk[..n]);
        let mut from = 0;
        let mut scan = start;
        while let Some(pos) = memchr::memchr(0, &buf[scan..]) {
            let end = scan + pos;
            dispatch(&buf[from..end], pending, events);
            from = end + 1;
            scan = from;
        }
        buf.drain(..from);
        if buf.len() > MAX_MESSAGE {
            tracing::warn!("browser sent a message larger than {MAX_MESSAGE} bytes; closing");
            return;
        }
    }
}

fn dispatch(raw: &[u8], pending: &Pending, events: &broadcast::Sender<Event>) {
    let Ok(message) = serde_json::from_slice::<Value>(raw) else {
        return;
    };
    if let Some(id) = message.get("id").and_then(Value::as_u64) {
        let tx = pending.lock().ok().and_then(|mut p| p.remove(&id));
        if let Some(tx) = tx {
            let result = match message.get("error") {
                Some(e) => Err(e
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error")
                    .to_string()),
                None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = tx.send(result);
        }
        return;
    }
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        let _ = events.send(Event {
            method: method.to_string(),
            params: message.get("params").cloned().unwrap_or(Value::Null),
            session: message
                .get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_string),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The framing: NUL-separated JSON both ways, answers matched by id, events broadcast, and a
    /// closed pipe fails what is pending.
    #[tokio::test]
    async fn calls_events_and_close() {
        let (client_io, browser_io) = tokio::io::duplex(1 << 16);
        let (client_r, client_w) = tokio::io::split(client_io);
        let (mut browser_r, mut browser_w) = tokio::io::split(browser_io);
        let cdp = Cdp::new(client_r, client_w);
        let mut events = cdp.subscribe();
        let fake = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut b = [0u8; 1];
            loop {
                browser_r.read_exact(&mut b).await.unwrap();
                if b[0] == 0 {
                    break;
                }
                got.push(b[0]);
            }
            let req: Value = serde_json::from_slice(&got).unwrap();
            assert_eq!(req["method"], "Page.navigate");
            assert_eq!(req["sessionId"], "S");
            let id = req["id"].as_u64().unwrap();
            // An event split across writes, then the answer in the same write as another event.
            browser_w
                .write_all(br#"{"method":"Page.load"#)
                .await
                .unwrap();
            browser_w
                .write_all(
                    format!(
                        "EventFired\",\"params\":{{}},\"sessionId\":\"S\"}}\0{{\"id\":{id},\"result\":{{\"frameId\":\"F\"}}}}\0{{\"method\":\"X\"}}\0"
                    )
                    .as_bytes(),
                )
                .await
                .unwrap();
            // Keep the pipe open until told.
            let mut rest = Vec::new();
            let _ = browser_r.read_to_end(&mut rest).await;
        });
        let r = cdp
            .call(
                "Page.navigate",
                json!({"url": "http://x/"}),
                Some("S"),
                Duration::from_secs(30),
            )
            .await
            .unwrap();
        assert_eq!(r["frameId"], "F");
        let e = events.recv().await.unwrap();
        assert_eq!(e.method, "Page.loadEventFired");
        assert_eq!(e.session.as_deref(), Some("S"));
        assert_eq!(events.recv().await.unwrap().method, "X");
        fake.abort();
        let _ = fake.await;
        // The fake browser's halves are dropped: the pipe is closed.
        cdp.closed().await;
        assert!(cdp.is_closed());
        assert!(
            cdp.call(
                "Browser.getVersion",
                json!({}),
                None,
                Duration::from_secs(5)
            )
            .await
            .is_err()
        );
    }
}
