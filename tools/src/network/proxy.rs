//! The session's HTTP proxy: runs outside the sandbox, speaks `CONNECT` and plain HTTP, resolves
//! names itself and only lets allow-listed hosts through. No TLS interception: a `CONNECT` tunnel
//! carries the client's own TLS end to end.
//!
//! It listens on a Unix socket (bound into the bubblewrap namespace, where a forwarder inside
//! turns it back into `127.0.0.1:<port>`) and on `127.0.0.1:<port>` on the host (the helper-only
//! level, where Landlock lets the command reach that port only).
//!
//! Refusals are attributed to the tool call that made them: each call gets a token that travels
//! as the proxy credentials in its `HTTP_PROXY` URL (`http://gg:<token>@127.0.0.1:<port>`);
//! a refusal without a known token is recorded on every call running at that moment.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncWrite};

use super::NetworkError;
use super::rules::{AllowList, Refused};

/// How long connecting to an upstream may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// One refused connection, as recorded in the audit trail and sent as an event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Refusal {
    /// The host as the command asked for it.
    pub host: String,
    /// The port it asked for.
    pub port: u16,
    /// Why: `not-on-allow-list`, `ip-literal`, `private-address` or `bad-host`.
    pub rule: String,
}

impl Refusal {
    /// How the person lets this host through, for gg's own line about the refusal: for an HTTPS
    /// request curl shows only `CONNECT tunnel failed, response 403`, never the 403's text.
    /// (A project's `.gg/settings.json` can only narrow the list, so the user's config it is.)
    pub fn how_to_allow(&self) -> String {
        format!(
            "allow it with --allow-domain {} or in \"allowDomains\" of ~/.gg/config.json",
            self.host
        )
    }
}

/// Names the proxy resolves without DNS. Only tests set it (see [`super::test_resolver`]); an
/// address given here is trusted even when it is loopback or private.
pub type Overrides = HashMap<String, Vec<IpAddr>>;

/// A refusal as a custom admission rule reports it: what to record, and the text the client gets
/// (with the 403).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub refusal: Refusal,
    pub message: String,
    /// Refused without being recorded (traffic of the client itself that no call asked for).
    pub quiet: bool,
}

/// What an admission rule answers: the addresses to connect to (exactly these: the name is not
/// resolved again), or why not.
pub type AdmitFuture<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Vec<SocketAddr>, Denial>> + Send + 'a>,
>;

/// A custom admission rule for a proxy (the browser's guard): it sees every request, redirects
/// and subresources included, resolves the host once and returns the addresses to pin.
pub trait Admit: Send + Sync {
    fn admit<'a>(&'a self, host: &'a str, port: u16) -> AdmitFuture<'a>;
}

/// Who may connect where.
enum Admission {
    /// Sandboxed commands: allow-listed hosts only.
    AllowList(AllowList),
    /// A custom rule.
    Custom(Arc<dyn Admit>),
}

struct State {
    admission: Admission,
    overrides: Overrides,
    /// Active calls by token, with what was refused during each.
    calls: Mutex<HashMap<String, Vec<Refusal>>>,
    /// Every refusal of the session, in order (`gg sandbox` prints them).
    all: Mutex<Vec<Refusal>>,
}

/// A running proxy. Dropping it stops the proxy and removes its socket directory.
pub struct ProxyHandle {
    state: Arc<State>,
    socket: PathBuf,
    dir: PathBuf,
    port: u16,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// `dir` again, removed even if a signal ends gg before `Drop` runs.
    _registered: sandbox::leftovers::Registered,
}

impl std::fmt::Debug for ProxyHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyHandle")
            .field("socket", &self.socket)
            .field("port", &self.port)
            .finish()
    }
}

impl ProxyHandle {
    /// Starts a proxy for `allow` on its own thread and runtime (so it serves sync callers such
    /// as `gg sandbox` as well as the agent).
    pub fn start(allow: AllowList, overrides: Overrides) -> Result<ProxyHandle, NetworkError> {
        ProxyHandle::start_with(Admission::AllowList(allow), overrides)
    }

    /// Starts a proxy whose every request is admitted (or refused) by `rule`.
    pub fn start_custom(rule: Arc<dyn Admit>) -> Result<ProxyHandle, NetworkError> {
        ProxyHandle::start_with(Admission::Custom(rule), Overrides::new())
    }

    fn start_with(admission: Admission, overrides: Overrides) -> Result<ProxyHandle, NetworkError> {
        let dir = private_dir()?;
        let registered = sandbox::leftovers::register(&dir, sandbox::leftovers::Removal::Tree);
        let socket = dir.join("proxy.sock");
        let unix = std::os::unix::net::UnixListener::bind(&socket).map_err(NetworkError::proxy(
            format!("network proxy: bind {}", socket.display()),
        ))?;
        let tcp = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))
            .map_err(NetworkError::proxy("network proxy: bind 127.0.0.1"))?;
        let port = tcp
            .local_addr()
            .map_err(NetworkError::proxy("network proxy"))?
            .port();
        unix.set_nonblocking(true)
            .and_then(|()| tcp.set_nonblocking(true))
            .map_err(NetworkError::proxy("network proxy"))?;
        let state = Arc::new(State {
            admission,
            overrides,
            calls: Mutex::new(HashMap::new()),
            all: Mutex::new(Vec::new()),
        });
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let st = Arc::clone(&state);
        // Inside a runtime (the agent, ggd, jobs) the proxy is a task of it. A second runtime
        // in the same process would also run a SIGCHLD driver, and children spawned by the
        // first one could then wait for an exit they are never told about. Sync callers
        // (`gg sandbox`) get a thread with its own runtime.
        let thread = match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(accept_loop(unix, tcp, st, stop_rx));
                None
            }
            Err(_) => {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(NetworkError::proxy("network proxy runtime"))?;
                Some(
                    std::thread::Builder::new()
                        .name("gg-network-proxy".into())
                        .spawn(move || runtime.block_on(accept_loop(unix, tcp, st, stop_rx)))
                        .map_err(NetworkError::proxy("network proxy thread"))?,
                )
            }
        };
        Ok(ProxyHandle {
            state,
            socket,
            dir,
            port,
            stop: Some(stop_tx),
            thread,
            _registered: registered,
        })
    }

    /// The route the sandbox needs.
    pub fn route(&self) -> sandbox::netfwd::ProxyRoute {
        sandbox::netfwd::ProxyRoute {
            socket: self.socket.clone(),
            port: self.port,
        }
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Registers a tool call; its refusals are collected until [`CallScope::finish`].
    pub fn begin_call(&self) -> CallScope {
        let token = random_token();
        if let Ok(mut calls) = self.state.calls.lock() {
            calls.insert(token.clone(), Vec::new());
        }
        CallScope {
            state: Arc::clone(&self.state),
            token,
            port: self.port,
        }
    }

    /// Every refusal so far.
    pub fn refusals(&self) -> Vec<Refusal> {
        self.state.all.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl Drop for ProxyHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One tool call's view of the proxy.
pub struct CallScope {
    state: Arc<State>,
    token: String,
    port: u16,
}

impl CallScope {
    /// The proxy URL for this call's environment (the token is its attribution, not a secret:
    /// a command that forges another call's token only misfiles its own refusals).
    pub fn url(&self) -> String {
        format!("http://gg:{}@127.0.0.1:{}", self.token, self.port)
    }

    /// Stops collecting and returns what was refused during the call.
    pub fn finish(self) -> Vec<Refusal> {
        self.take()
    }

    fn take(&self) -> Vec<Refusal> {
        self.state
            .calls
            .lock()
            .ok()
            .and_then(|mut calls| calls.remove(&self.token))
            .unwrap_or_default()
    }
}

impl Drop for CallScope {
    fn drop(&mut self) {
        self.take();
    }
}

impl State {
    fn record(&self, refusal: Refusal, token: Option<&str>) {
        tracing::info!(host = %refusal.host, port = refusal.port, rule = %refusal.rule, "network proxy refused a connection");
        if let Ok(mut calls) = self.calls.lock() {
            match token.filter(|t| calls.contains_key(*t)) {
                Some(t) => {
                    if let Some(v) = calls.get_mut(t) {
                        v.push(refusal.clone());
                    }
                }
                None => {
                    for v in calls.values_mut() {
                        v.push(refusal.clone());
                    }
                }
            }
        }
        if let Ok(mut all) = self.all.lock() {
            all.push(refusal);
        }
    }

    /// Checks `host:port` and resolves it; a refusal is recorded and returned as the 403.
    async fn admit(
        &self,
        host: &str,
        port: u16,
        token: Option<&str>,
    ) -> Result<Vec<SocketAddr>, Response<Body>> {
        let refuse = |why: Refused| {
            // Shown to the model and in `gg audit`: no control characters from the request.
            let shown: String = host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .escape_debug()
                .collect();
            let shown = shown.as_str();
            self.record(
                Refusal {
                    host: shown.to_string(),
                    port,
                    rule: why.as_str().to_string(),
                },
                token,
            );
            forbidden(shown, port, why)
        };
        let allow = match &self.admission {
            Admission::AllowList(allow) => allow,
            Admission::Custom(rule) => {
                return rule.admit(host, port).await.map_err(|denial| {
                    let message = denial.message.clone();
                    if denial.quiet {
                        tracing::debug!(host = %denial.refusal.host, rule = %denial.refusal.rule, "proxy refused a background connection");
                    } else {
                        self.record(denial.refusal, token);
                    }
                    text(StatusCode::FORBIDDEN, message)
                });
            }
        };
        let addr = match allow.check_host(host) {
            Ok(a) => a,
            Err(why) => return Err(refuse(why)),
        };
        if let Some(addr) = addr {
            return Ok(vec![SocketAddr::new(addr, port)]);
        }
        let name = host.trim_end_matches('.').to_ascii_lowercase();
        if let Some(addrs) = self.overrides.get(&name) {
            return Ok(addrs.iter().map(|a| SocketAddr::new(*a, port)).collect());
        }
        let resolved: Vec<SocketAddr> = match tokio::net::lookup_host((name.as_str(), port)).await {
            Ok(it) => it.collect(),
            Err(e) => {
                return Err(text(
                    StatusCode::BAD_GATEWAY,
                    format!("gg network proxy: cannot resolve {name}: {e}\n"),
                ));
            }
        };
        let allowed: Vec<SocketAddr> = resolved
            .iter()
            .copied()
            .filter(|a| allow.address_allowed(a.ip()))
            .collect();
        if allowed.is_empty() {
            return Err(refuse(Refused::PrivateAddress));
        }
        Ok(allowed)
    }
}

type Body = BoxBody<Bytes, hyper::Error>;

fn text(status: StatusCode, body: String) -> Response<Body> {
    let mut r = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed(),
    );
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    // A refused or failed request ends the client connection: nothing else goes through it.
    r.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    r
}

/// The message a refused command sees (and shows the model).
pub fn refusal_message(host: &str, port: u16, why: Refused) -> String {
    let reason = match why {
        Refused::NotAllowed => "it is not on the network allow-list",
        Refused::IpLiteral => "IP addresses are refused unless a rule names them",
        Refused::PrivateAddress => "it resolves only to loopback, link-local or private addresses",
        Refused::BadHost => "it is not a valid host name",
    };
    format!(
        "gg network policy: connection to {host}:{port} refused ({}): {reason}. \
         To allow it, ask the user to run gg with --allow-domain {host} \
         or add \"{host}\" to \"allowDomains\" in ~/.gg/config.json.\n",
        why.as_str()
    )
}

fn forbidden(host: &str, port: u16, why: Refused) -> Response<Body> {
    text(StatusCode::FORBIDDEN, refusal_message(host, port, why))
}

async fn accept_loop(
    unix: std::os::unix::net::UnixListener,
    tcp: std::net::TcpListener,
    state: Arc<State>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let (Ok(unix), Ok(tcp)) = (
        tokio::net::UnixListener::from_std(unix),
        tokio::net::TcpListener::from_std(tcp),
    ) else {
        return;
    };
    loop {
        tokio::select! {
            _ = &mut stop => return,
            Ok((s, _)) = unix.accept() => { tokio::spawn(serve(s, Arc::clone(&state))); }
            Ok((s, peer)) = tcp.accept() => {
                // Loopback only (the listener is bound there); anything else is dropped.
                if peer.ip().is_loopback() {
                    tokio::spawn(serve(s, Arc::clone(&state)));
                }
            }
        }
    }
}

async fn serve<I>(io: I, state: Arc<State>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req| {
        let state = Arc::clone(&state);
        async move { Ok::<_, Infallible>(handle(req, state).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .preserve_header_case(true)
        .title_case_headers(true)
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades()
        .await;
}

/// The call token from `Proxy-Authorization: Basic base64(gg:<token>)`.
fn call_token(headers: &header::HeaderMap) -> Option<String> {
    let value = headers.get(header::PROXY_AUTHORIZATION)?.to_str().ok()?;
    let encoded = value.strip_prefix("Basic ")?.trim();
    let decoded = base64_decode(encoded)?;
    let text = String::from_utf8(decoded).ok()?;
    text.strip_prefix("gg:").map(str::to_string)
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

async fn handle(req: Request<Incoming>, state: Arc<State>) -> Response<Body> {
    let token = call_token(req.headers());
    if req.method() == Method::CONNECT {
        let Some(authority) = req.uri().authority().cloned() else {
            return text(
                StatusCode::BAD_REQUEST,
                "gg network proxy: CONNECT needs host:port\n".into(),
            );
        };
        let port = authority.port_u16().unwrap_or(443);
        let addrs = match state.admit(authority.host(), port, token.as_deref()).await {
            Ok(a) => a,
            Err(response) => return response,
        };
        let upstream = match connect(&addrs).await {
            Ok(s) => s,
            Err(e) => return text(StatusCode::BAD_GATEWAY, format!("gg network proxy: {e}\n")),
        };
        tokio::spawn(async move {
            if let Ok(upgraded) = hyper::upgrade::on(req).await {
                let mut client = TokioIo::new(upgraded);
                let mut upstream = upstream;
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            }
        });
        return Response::new(
            http_body_util::Empty::new()
                .map_err(|never| match never {})
                .boxed(),
        );
    }
    let uri = req.uri().clone();
    if uri.scheme_str() != Some("http") || uri.host().is_none() {
        return text(
            StatusCode::BAD_REQUEST,
            "gg network proxy: send CONNECT host:port, or an absolute http:// URL\n".into(),
        );
    }
    let host = uri.host().unwrap_or_default().to_string();
    let port = uri.port_u16().unwrap_or(80);
    let addrs = match state.admit(&host, port, token.as_deref()).await {
        Ok(a) => a,
        Err(response) => return response,
    };
    match forward_plain(req, &addrs).await {
        Ok(r) => r,
        Err(e) => text(StatusCode::BAD_GATEWAY, format!("gg network proxy: {e}\n")),
    }
}

async fn connect(addrs: &[SocketAddr]) -> Result<tokio::net::TcpStream, String> {
    let mut last = String::from("no address to connect to");
    for addr in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(addr)).await {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(e)) => last = format!("connect {addr}: {e}"),
            Err(_) => last = format!("connect {addr}: timed out"),
        }
    }
    Err(last)
}

/// Headers that describe one hop and are not passed on.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "upgrade",
];

async fn forward_plain(
    req: Request<Incoming>,
    addrs: &[SocketAddr],
) -> Result<Response<Body>, String> {
    let stream = connect(addrs).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("upstream: {e}"))?;
    tokio::spawn(conn);
    let (mut parts, body) = req.into_parts();
    let authority = parts.uri.authority().cloned();
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    parts.uri = path.parse().map_err(|e| format!("bad URL: {e}"))?;
    let listed: Vec<String> = parts
        .headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').map(|s| s.trim().to_ascii_lowercase()))
        .collect();
    for name in HOP_BY_HOP
        .iter()
        .copied()
        .chain(listed.iter().map(String::as_str))
    {
        parts.headers.remove(name);
    }
    if !parts.headers.contains_key(header::HOST)
        && let Some(a) = authority
        && let Ok(v) = header::HeaderValue::from_str(a.as_str())
    {
        parts.headers.insert(header::HOST, v);
    }
    let response = sender
        .send_request(Request::from_parts(parts, body))
        .await
        .map_err(|e| format!("upstream: {e}"))?;
    Ok(response.map(BodyExt::boxed))
}

fn random_token() -> String {
    let mut bytes = [0u8; 12];
    if getrandom::fill(&mut bytes).is_err() {
        // Attribution only: a weak token misattributes, it does not open anything.
        bytes = fastrand::u128(..).to_le_bytes()[..12]
            .try_into()
            .unwrap_or_default();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A fresh 0700 directory for the socket (short path: Unix socket paths are limited to 107
/// bytes).
fn private_dir() -> Result<PathBuf, NetworkError> {
    use std::os::unix::fs::DirBuilderExt;
    let bases = [std::env::temp_dir(), PathBuf::from("/tmp")];
    let mut last = String::new();
    for base in bases {
        let dir = base.join(format!("gg-net-{}", random_token()));
        if dir.as_os_str().len() > 90 {
            last = format!("{} is too long for a socket path", dir.display());
            continue;
        }
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) => last = format!("{}: {e}", dir.display()),
        }
    }
    Err(NetworkError::ProxyDirectory(last))
}

/// Whether `path` is the socket of a live proxy (tests).
pub fn is_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn upstream() -> (u16, std::thread::JoinHandle<String>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            let n = s.read(&mut buf).unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                .unwrap();
            String::from_utf8_lossy(&buf[..n]).into_owned()
        });
        (port, t)
    }

    fn request(port: u16, text: &str) -> String {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(text.as_bytes()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    fn proxy(allow: &[&str], names: &[(&str, &str)]) -> ProxyHandle {
        let overrides = names
            .iter()
            .map(|(n, a)| (n.to_string(), vec![a.parse().unwrap()]))
            .collect();
        ProxyHandle::start(AllowList::parse(allow).unwrap(), overrides).unwrap()
    }

    #[test]
    fn plain_http_to_an_allowed_name_is_forwarded() {
        let (up, t) = upstream();
        let p = proxy(&["registry.test"], &[("registry.test", "127.0.0.1")]);
        let scope = p.begin_call();
        let r = request(
            p.port(),
            &format!(
                "GET http://registry.test:{up}/x HTTP/1.1\r\nHost: registry.test:{up}\r\n\
                 Proxy-Authorization: Basic Z2c6eA==\r\nConnection: close\r\n\r\n"
            ),
        );
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        let seen = t.join().unwrap();
        assert!(seen.starts_with("GET /x HTTP/1.1"), "{seen}");
        assert!(!seen.to_ascii_lowercase().contains("proxy-authorization"));
        assert!(scope.finish().is_empty());
    }

    #[test]
    fn refusals_are_403_and_attributed() {
        let p = proxy(&["registry.test"], &[("registry.test", "127.0.0.1")]);
        let a = p.begin_call();
        let b = p.begin_call();
        let token = a.url();
        let token = token
            .strip_prefix("http://gg:")
            .and_then(|s| s.split('@').next())
            .unwrap()
            .to_string();
        let auth = format!("gg:{token}");
        let b64 = base64_encode(auth.as_bytes());
        let r = request(
            p.port(),
            &format!(
                "CONNECT collector.example:443 HTTP/1.1\r\nHost: collector.example:443\r\n\
                 Proxy-Authorization: Basic {b64}\r\n\r\n"
            ),
        );
        assert!(r.starts_with("HTTP/1.1 403"), "{r}");
        assert!(r.contains("collector.example:443 refused"), "{r}");
        assert!(r.contains("--allow-domain collector.example"), "{r}");
        for (target, rule) in [("127.0.0.1:80", "ip-literal"), ("[::1]:80", "ip-literal")] {
            let r = request(
                p.port(),
                &format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n"),
            );
            assert!(r.starts_with("HTTP/1.1 403"), "{r}");
            assert!(r.contains(rule), "{r}");
        }
        let a = a.finish();
        let b = b.finish();
        assert_eq!(a.len(), 3, "{a:?}");
        assert_eq!(
            a[0],
            Refusal {
                host: "collector.example".into(),
                port: 443,
                rule: "not-on-allow-list".into()
            }
        );
        // Unattributed refusals go to every running call.
        assert_eq!(b.len(), 2, "{b:?}");
        assert_eq!(b[0].host, "127.0.0.1");
        assert_eq!(p.refusals().len(), 3);
    }

    #[test]
    fn connect_tunnels_bytes_to_an_allowed_name() {
        let (up, t) = upstream();
        let p = proxy(&["*.registry.test"], &[("a.registry.test", "127.0.0.1")]);
        let mut s = std::net::TcpStream::connect(("127.0.0.1", p.port())).unwrap();
        s.write_all(
            format!("CONNECT a.registry.test:{up} HTTP/1.1\r\nHost: a.registry.test:{up}\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
        let mut buf = [0u8; 1024];
        let n = s.read(&mut buf).unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        s.write_all(b"GET /tunnelled HTTP/1.1\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        assert!(out.ends_with("ok"), "{out}");
        assert!(t.join().unwrap().starts_with("GET /tunnelled"));
    }

    fn base64_encode(b: &[u8]) -> String {
        const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in b.chunks(3) {
            let n =
                chunk.iter().fold(0u32, |a, &x| (a << 8) | u32::from(x)) << (8 * (3 - chunk.len()));
            for i in 0..=chunk.len() {
                out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        while !out.len().is_multiple_of(4) {
            out.push('=');
        }
        out
    }

    #[test]
    fn base64_round_trip() {
        assert_eq!(
            base64_decode(&base64_encode(b"gg:abc123")).unwrap(),
            b"gg:abc123"
        );
        assert!(base64_decode("!!").is_none());
    }
}
