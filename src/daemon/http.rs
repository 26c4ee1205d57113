//! The HTTP transport: `POST /rpc`, `GET /events` (SSE), `GET /healthz`,
//! `GET /health`, with the bearer token, the `Host` check against DNS rebinding and
//! loopback-only CORS; and the web UI's page (`/`, `/assets/…`, see [`super::web`]) on the same
//! origin, under a strict Content-Security-Policy.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::handler::Handler;
use super::rpc::{self, MAX_MESSAGE_BYTES, RpcError};
use super::runtime::Run;
use super::web;

/// An idle SSE stream gets a comment this often, so proxies and clients keep it open.
pub const KEEPALIVE: Duration = Duration::from_secs(15);
/// The most event text one SSE write carries (one event larger than this goes alone). A client
/// starting at the beginning of a long backlog (thousands of events, megabytes) gets it in parts
/// of this size as its socket takes them, instead of all of it framed into one buffer at once:
/// the run's event log is locked only while one part's events are counted off, and a client that
/// stops reading holds a few parts, not a copy of its whole backlog.
pub const SSE_PART_BYTES: usize = 32 * 1024;
/// How long in-flight HTTP requests get after shutdown starts.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// A connection must deliver a request's headers within this time, also between requests on a
/// kept-alive connection: slow or silent clients are dropped instead of holding a task forever.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// A request body must arrive whole within this time: a body that trickles in a byte at a time
/// would otherwise hold its task and connection for as long as the client likes (hyper has no
/// body timeout of its own). 4 MiB, the largest body, takes well under this on any real link.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The most connections served at once. Each holds a file descriptor, and the runs' tools (bash,
/// MCP servers, the browser) need theirs: without a cap, anyone on the machine could open idle
/// connections, token or not, until ggd hit its descriptor limit and a run's next command failed
/// to start. See [`max_connections`].
pub const MAX_CONNECTIONS: usize = 256;

#[derive(Clone)]
struct Http {
    handler: Arc<Handler>,
    token: Arc<str>,
    /// `Host` values accepted; empty with `--allow-remote` (the token is then the only guard).
    allowed_hosts: Arc<Vec<String>>,
    /// The port ggd listens on: the only origins granted CORS are ggd's own
    /// (`http://localhost|127.0.0.1|[::1]:<port>`), not any loopback port, where the person's dev
    /// server (whose pages a sandboxed command may have written) also answers.
    port: u16,
    stop: CancellationToken,
}

/// Serves on `listener` until `stop` is cancelled; an error when the server fails or the
/// graceful shutdown does not finish within [`SHUTDOWN_GRACE`].
pub async fn serve(
    handler: Arc<Handler>,
    listener: tokio::net::TcpListener,
    token: String,
    allow_remote: bool,
    stop: CancellationToken,
) -> Result<(), String> {
    let local = listener
        .local_addr()
        .map_err(|e| format!("listener address: {e}"))?;
    let http = Http {
        handler,
        token: Arc::from(token),
        allowed_hosts: Arc::new(if allow_remote {
            Vec::new()
        } else {
            allowed_hosts(local)
        }),
        port: local.port(),
        stop: stop.clone(),
    };
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/health", get(health))
        .route("/rpc", post(rpc_endpoint))
        .route("/events", get(events))
        .route("/", get(page))
        .route("/index.html", get(page))
        .route("/assets/app.js", get(page))
        .route("/assets/style.css", get(page))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_MESSAGE_BYTES))
        .layer(middleware::from_fn_with_state(http.clone(), guard))
        .with_state(http);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let limit = max_connections();
    tracing::info!(max_connections = limit, "http connection limit");
    let slots = Arc::new(tokio::sync::Semaphore::new(limit));
    // Whether the last connection was refused for want of a slot: logged once per episode, not
    // once per connection of a flood.
    let mut refusing = false;
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: keep serving the open connections.
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        // Over the cap the connection is closed at once rather than left waiting for a slot: its
        // descriptor is given back now, and the client learns at once that it was refused.
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            drop(stream);
            if !refusing {
                tracing::warn!(
                    max_connections = limit,
                    "connection limit reached; new connections are closed until some end"
                );
                refusing = true;
            }
            continue;
        };
        refusing = false;
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT)
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
            drop(slot);
        });
    }
    tokio::select! {
        () = graceful.shutdown() => Ok(()),
        () = tokio::time::sleep(SHUTDOWN_GRACE) => {
            Err("HTTP shutdown did not finish within 5s".to_string())
        }
    }
}

/// [`MAX_CONNECTIONS`], but never more than a quarter of this process's file-descriptor limit, so
/// that connections alone can take at most a quarter of the descriptors and the rest stay for the
/// runs (a limit of 256 allows 64 connections). At least one, whatever the limit.
pub fn max_connections() -> usize {
    let descriptors = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(usize::MAX);
    (descriptors / 4).clamp(1, MAX_CONNECTIONS)
}

/// The loopback names a browser may send for the bound port.
fn allowed_hosts(local: SocketAddr) -> Vec<String> {
    let port = local.port();
    let mut hosts = Vec::new();
    for name in ["localhost", "127.0.0.1", "[::1]"] {
        hosts.push(name.to_string());
        hosts.push(format!("{name}:{port}"));
    }
    hosts
}

/// `http(s)://localhost|127.0.0.1|[::1]` with an optional port. Not `null`: that is what sandboxed
/// iframes, `file:` pages and redirects send, so any page can claim it.
pub fn loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let (host, port) = match rest.strip_prefix("[::1]") {
        Some(port) => ("[::1]", port),
        None => match rest.split_once(':') {
            Some((host, port)) => (host, &rest[host.len()..][..port.len() + 1]),
            None => (rest, ""),
        },
    };
    let host_ok = host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "[::1]";
    let port_ok = match port.strip_prefix(':') {
        None => port.is_empty(),
        Some(digits) => {
            !digits.is_empty() && digits.len() <= 5 && digits.bytes().all(|b| b.is_ascii_digit())
        }
    };
    host_ok && port_ok
}

/// Whether `origin` is ggd's own page: a loopback origin over plain HTTP with ggd's `port`
/// spelled out (the page is served from there, so its origin always carries the port).
pub fn own_origin(origin: &str, port: u16) -> bool {
    loopback_origin(origin)
        && origin
            .strip_prefix("http://")
            .and_then(|rest| rest.rsplit_once(':'))
            .is_some_and(|(_, p)| p.parse::<u16>() == Ok(port))
}

/// Compares without an early exit, so timing does not reveal how much of a guess matched.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(bearer_credentials);
    match given {
        Some(given) => !token.is_empty() && constant_time_eq(given.as_bytes(), token.as_bytes()),
        None => false,
    }
}

/// The token of an `Authorization: Bearer <token>` value. The scheme is case-insensitive and
/// separated from the token by one or more spaces (RFC 9110, 11.4 and 11.6.2), as clients send it.
fn bearer_credentials(value: &str) -> Option<&str> {
    let (scheme, rest) = value.split_once(' ')?;
    let token = rest.trim_start_matches(' ');
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    text_json_response(status, value.to_string())
}

/// A response whose body is JSON text already.
fn text_json_response(status: StatusCode, text: String) -> Response {
    let mut response = Response::new(Body::from(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Host check, CORS, authentication and the common headers, in that order.
async fn guard(State(http): State<Http>, request: Request, next: Next) -> Response {
    if !http.allowed_hosts.is_empty() {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_ascii_lowercase);
        if !host.is_some_and(|h| http.allowed_hosts.contains(&h)) {
            let mut response =
                json_response(StatusCode::FORBIDDEN, &json!({"error": "host not allowed"}));
            finish_headers(&mut response, None);
            return response;
        }
    }
    if request
        .headers()
        .get(header::ORIGIN)
        .is_some_and(|o| o.as_bytes().eq_ignore_ascii_case(b"null"))
    {
        // An opaque origin is anybody's: refused outright, not merely left without CORS headers.
        let mut response = json_response(
            StatusCode::FORBIDDEN,
            &json!({"error": "origin not allowed"}),
        );
        finish_headers(&mut response, None);
        return response;
    }
    let origin = request
        .headers()
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .filter(|o| own_origin(o, http.port))
        .and_then(|o| HeaderValue::from_str(o).ok());
    let path = request.uri().path();
    if web::is_asset(path) {
        // The page obeys the same rules as the API: a foreign Origin (or a cross-site fetch)
        // gets nothing, so another site cannot pull the UI into its own context.
        let foreign_origin = request
            .headers()
            .get(header::ORIGIN)
            .is_some_and(|o| o.to_str().map_or(true, |o| !own_origin(o, http.port)));
        let cross_site = request
            .headers()
            .get("sec-fetch-site")
            .is_some_and(|v| v.as_bytes() == b"cross-site");
        if foreign_origin || cross_site {
            let mut response = json_response(
                StatusCode::FORBIDDEN,
                &json!({"error": "origin not allowed"}),
            );
            finish_headers(&mut response, None);
            return response;
        }
        // The page carries no secret; the token reaches it in the URL fragment.
        let mut response = next.run(request).await;
        finish_headers(&mut response, origin);
        return response;
    }
    if request.method() == Method::OPTIONS && origin.is_some() {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = StatusCode::NO_CONTENT;
        let headers = response.headers_mut();
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST, OPTIONS"),
        );
        headers.insert(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            HeaderValue::from_static(
                "Authorization, Content-Type, Accept, Cache-Control, Last-Event-ID",
            ),
        );
        headers.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from_static("600"),
        );
        finish_headers(&mut response, origin);
        return response;
    }
    if request.uri().path() != "/healthz" && !authorized(request.headers(), &http.token) {
        let mut response =
            json_response(StatusCode::UNAUTHORIZED, &json!({"error": "unauthorized"}));
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"gg\""),
        );
        // A client without the token gets no kept-alive connection to hold one of the slots.
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        finish_headers(&mut response, origin);
        return response;
    }
    let mut response = next.run(request).await;
    finish_headers(&mut response, origin);
    response
}

fn finish_headers(response: &mut Response, origin: Option<HeaderValue>) {
    let headers = response.headers_mut();
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // The page's protections, on every response so no path is a gap.
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(web::CSP),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    if let Some(origin) = origin {
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(header::VARY, HeaderValue::from_static("Origin"));
    }
}

async fn healthz() -> Response {
    json_response(StatusCode::OK, &json!({"ok": true}))
}

async fn health() -> Response {
    // No channels run in this build (the scheduler is a separate component; Telegram is absent).
    json_response(
        StatusCode::OK,
        &json!({"ok": true, "protocolVersion": rpc::PROTOCOL_VERSION, "channels": []}),
    )
}

async fn page(uri: Uri, headers: HeaderMap) -> Response {
    let accept_encoding = headers
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok());
    web::asset(uri.path(), accept_encoding)
        .unwrap_or_else(|| json_response(StatusCode::NOT_FOUND, &json!({"error": "not found"})))
}

async fn not_found() -> Response {
    json_response(StatusCode::NOT_FOUND, &json!({"error": "not found"}))
}

async fn rpc_endpoint(State(http): State<Http>, body: Body) -> Response {
    let body = match read_body(body, BODY_READ_TIMEOUT).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    match http.handler.handle_message(&body).await {
        Some(response) => {
            let status = if response.parse_error {
                StatusCode::BAD_REQUEST
            } else {
                StatusCode::OK
            };
            text_json_response(status, response.text)
        }
        None => {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::NO_CONTENT;
            response
        }
    }
}

/// The whole body within `limit` time and [`MAX_MESSAGE_BYTES`]; otherwise the response to send:
/// 408 (and the connection closes) or 413.
async fn read_body(body: Body, limit: Duration) -> Result<Bytes, Response> {
    match tokio::time::timeout(limit, axum::body::to_bytes(body, MAX_MESSAGE_BYTES)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(json_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            &json!({"error": "request body too large or unreadable"}),
        )),
        Err(_) => {
            let mut response = json_response(
                StatusCode::REQUEST_TIMEOUT,
                &json!({"error": "request body not received in time"}),
            );
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            Err(response)
        }
    }
}

#[derive(Deserialize)]
struct EventsQuery {
    #[serde(rename = "runId")]
    run_id: Option<String>,
    after: Option<String>,
}

fn bad_request(message: &str) -> Response {
    json_response(StatusCode::BAD_REQUEST, &json!({"error": message}))
}

/// Where an SSE stream stands.
struct Cursor {
    run: Option<Arc<Run>>,
    after: u64,
    error: Option<RpcError>,
    finished: bool,
    stop: CancellationToken,
}

fn error_frame(error: &RpcError) -> Bytes {
    Bytes::from(format!("event: error\ndata: {}\n\n", error.to_json()))
}

/// `events` (JSON texts, in order from `first_sequence`) as SSE frames, each with its sequence
/// as the event id.
fn sse_frames(first_sequence: u64, events: &[Arc<str>]) -> String {
    use std::fmt::Write as _;
    // The frame around each event: "id: " + up to 20 digits + "\nevent: event\ndata: " + "\n\n".
    let size: usize = events.iter().map(|e| e.len() + 48).sum();
    let mut text = String::with_capacity(size);
    for (sequence, event) in (first_sequence..).zip(events) {
        // Writing into a String cannot fail.
        let _ = write!(text, "id: {sequence}\nevent: event\ndata: {event}\n\n");
    }
    text
}

async fn events(
    State(http): State<Http>,
    query: Result<Query<EventsQuery>, axum::extract::rejection::QueryRejection>,
    headers: HeaderMap,
) -> Response {
    let Ok(Query(query)) = query else {
        return bad_request("invalid query");
    };
    let Some(run_id) = query.run_id.filter(|r| !r.is_empty()) else {
        return bad_request("runId is required");
    };
    // A reconnecting EventSource repeats the original URL; its Last-Event-ID is the newer cursor.
    let cursor_text = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or(query.after);
    let after = match cursor_text.as_deref().map(str::trim) {
        None | Some("") => 0,
        Some(text) => match text.parse::<u64>() {
            Ok(n) => n,
            Err(_) => return bad_request("after / Last-Event-ID must be a non-negative integer"),
        },
    };
    let (run, error) = match http.handler.runtime().get_run(&run_id) {
        Ok(run) => (Some(run), None),
        Err(error) => (None, Some(error)),
    };
    let cursor = Cursor {
        run,
        after,
        error,
        finished: false,
        stop: http.stop.clone(),
    };
    let stream = futures_util::stream::unfold(cursor, |mut cursor| async move {
        if let Some(error) = cursor.error.take() {
            cursor.finished = true;
            return Some((Ok::<Bytes, Infallible>(error_frame(&error)), cursor));
        }
        if cursor.finished {
            return None;
        }
        let run = cursor.run.clone()?;
        tokio::select! {
            waited = run.wait_at_most(cursor.after, SSE_PART_BYTES, &cursor.stop) => match waited {
                Ok(waited) => {
                    if waited.events.is_empty() {
                        // Done, or the daemon is stopping.
                        return None;
                    }
                    let text = sse_frames(waited.first_sequence, &waited.events);
                    cursor.after = waited.first_sequence + (waited.events.len() as u64 - 1);
                    cursor.finished = waited.done;
                    Some((Ok(Bytes::from(text)), cursor))
                }
                Err(error) => {
                    cursor.finished = true;
                    Some((Ok(error_frame(&error)), cursor))
                }
            },
            () = tokio::time::sleep(KEEPALIVE) => Some((Ok(Bytes::from_static(b": keepalive\n\n")), cursor)),
        }
    });
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_origins() {
        for ok in [
            "http://localhost",
            "http://LOCALHOST:3000",
            "https://127.0.0.1:8443",
            "http://[::1]:1",
        ] {
            assert!(loopback_origin(ok), "{ok}");
        }
        for bad in [
            "http://evil.com",
            "http://localhost.evil.com",
            "http://127.0.0.1.evil.com:80",
            "ftp://localhost",
            "http://localhost:",
            "http://localhost:80x",
            "http://[::2]",
            "null",
            "",
        ] {
            assert!(!loopback_origin(bad), "{bad}");
        }
    }

    #[test]
    fn only_ggds_own_origin() {
        for ok in [
            "http://localhost:4321",
            "http://127.0.0.1:4321",
            "http://[::1]:4321",
        ] {
            assert!(own_origin(ok, 4321), "{ok}");
        }
        for bad in [
            "http://localhost:3000",
            "http://localhost",
            "https://localhost:4321",
            "http://evil.com:4321",
            "http://127.0.0.1:43210",
            "null",
        ] {
            assert!(!own_origin(bad, 4321), "{bad}");
        }
    }

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret1"));
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer t0k"),
        );
        assert!(authorized(&headers, "t0k"));
        assert!(!authorized(&headers, ""));
        assert!(!authorized(&headers, "t0"));
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for ok in ["Bearer t0k", "bearer t0k", "BEARER t0k", "bEaReR  t0k"] {
            assert_eq!(bearer_credentials(ok), Some("t0k"), "{ok}");
        }
        for bad in [
            "Bearer",
            "Bearer ",
            "Bearert0k",
            "Basic t0k",
            "t0k",
            " Bearer t0k",
        ] {
            assert_eq!(bearer_credentials(bad), None, "{bad}");
        }
    }
}
