//! Connecting to one server: spawning a stdio server (optionally sandboxed) or opening a
//! streamable-HTTP session, and stopping it again without leaving processes behind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, Tool};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rustix::process::{Pid, Signal, kill_process_group};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use super::ConnectOptions;
use tools::registry::SandboxSetting;

/// How long a server has to exit after its stdin is closed, and then after `SIGTERM`.
const POLITE_EXIT: Duration = Duration::from_millis(300);
const TERM_GRACE: Duration = Duration::from_secs(2);
/// The stderr kept for error messages.
const STDERR_TAIL_BYTES: usize = 2048;
/// `PATH` for a server when gg itself has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

pub(crate) type Service = RunningService<RoleClient, ClientConfig>;

/// The last bytes a stdio server wrote to stderr.
#[derive(Default)]
pub(crate) struct StderrTail(Mutex<Vec<u8>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        let mut buf = self.0.lock().unwrap_or_else(|p| p.into_inner());
        buf.extend_from_slice(bytes);
        if buf.len() > STDERR_TAIL_BYTES {
            let cut = buf.len() - STDERR_TAIL_BYTES;
            buf.drain(..cut);
        }
    }

    /// The tail as text, control characters other than newlines and tabs, bidi controls and
    /// invisible characters replaced.
    pub(crate) fn text(&self) -> String {
        let buf = self.0.lock().unwrap_or_else(|p| p.into_inner());
        String::from_utf8_lossy(&buf)
            .trim()
            .chars()
            .map(|c| {
                if (c.is_control() || crate::display::needs_escape(c)) && c != '\n' && c != '\t' {
                    '?'
                } else {
                    c
                }
            })
            .collect()
    }
}

/// A running stdio server's process, stopped when this is dropped or [`Child::stop`]ped.
pub(crate) struct Child {
    pgid: Pid,
    stop: CancellationToken,
    exited: Arc<AtomicBool>,
    supervisor: Option<tokio::task::JoinHandle<()>>,
}

impl Child {
    /// Stops the process group and waits until it is gone.
    pub(crate) async fn stop(&mut self) {
        self.stop.cancel();
        if let Some(handle) = self.supervisor.take() {
            let _ = handle.await;
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.stop.cancel();
        // The supervisor finishes the job when the runtime is still running; when it is not
        // (the process is exiting), this SIGTERM is all there is. The group leader is not reaped
        // before `exited` is set, so the group id cannot belong to anyone else yet.
        if !self.exited.load(Ordering::SeqCst) {
            let _ = kill_process_group(self.pgid, Signal::TERM);
        }
    }
}

/// A connected server.
pub(crate) struct Connection {
    pub(crate) service: Option<Service>,
    pub(crate) child: Option<Child>,
    pub(crate) stderr: Option<Arc<StderrTail>>,
    pub(crate) tools: Vec<Tool>,
    /// Things the user should know although the server works (e.g. the sandbox fell back).
    pub(crate) notes: Vec<String>,
}

impl Connection {
    pub(crate) async fn shutdown(&mut self) {
        if let Some(service) = self.service.take() {
            // Cancelling closes the transport: a stdio server sees its stdin close.
            let _ = tokio::time::timeout(TERM_GRACE, service.cancel()).await;
        }
        if let Some(child) = self.child.as_mut() {
            child.stop().await;
        }
    }
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("gg", env!("CARGO_PKG_VERSION")),
    )
}

/// The directory a stdio server runs in and, under the sandbox, the one place it may write:
/// `~/.gg/mcp/<name>/`, created 0700.
pub fn server_dir(home: &Path, name: &str) -> PathBuf {
    home.join(".gg").join("mcp").join(name)
}

fn make_server_dir(home: &Path, name: &str) -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = server_dir(home, name);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    Ok(dir)
}

/// The whole environment of a stdio server: `PATH`, `HOME` and what the configuration sets.
/// Nothing else of gg's environment (provider keys in particular) reaches it. `PATH` keeps only
/// the entries outside what the session's commands write ([`sandbox::host_program`]): the
/// server's command is looked up there, and without `--sandbox` it runs unguarded (an attacker
/// pass planted the configured command's name in the project's virtual environment, on
/// `PATH`, from a guarded command, and the next gg started it with every secret in reach).
pub fn server_env(home: &Path, configured: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let project = std::env::current_dir().ok();
    let writable: Vec<&Path> = project.iter().map(PathBuf::as_path).collect();
    let path = std::env::var_os("PATH")
        .filter(|p| !p.is_empty())
        .map(|_| sandbox::host_program::trusted_path(&writable))
        .and_then(|p| p.into_string().ok());
    let mut env = vec![
        (
            "PATH".to_string(),
            path.unwrap_or_else(|| DEFAULT_PATH.to_string()),
        ),
        ("HOME".to_string(), home.display().to_string()),
    ];
    for (key, value) in configured {
        env.retain(|(k, _)| k != key);
        env.push((key.clone(), value.clone()));
    }
    env
}

pub(crate) async fn connect_stdio(
    name: &str,
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    options: &ConnectOptions,
) -> Result<Connection, String> {
    let dir = make_server_dir(&options.home, name)?;
    let inner = sandbox::Invocation {
        program: command.into(),
        args: args.iter().map(Into::into).collect(),
        env: server_env(&options.home, env)
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect(),
    };
    let mut notes = Vec::new();
    let (mut command_to_spawn, level, guard) = match &options.sandbox {
        SandboxSetting::Off => (inner.unsandboxed(&dir), None, None),
        SandboxSetting::On { backend, network } => {
            let mut policy = sandbox::Policy::with_home(&dir, Some(&options.home))
                .map_err(|e| format!("sandbox policy: {e}"))?;
            if let Some(sock) = tools::secrets::var("SSH_AUTH_SOCK") {
                policy.hide_socket(std::path::Path::new(&sock));
            }
            // The server shares the session's proxy; its refusals are attributed to the tool
            // calls running at the time (it carries no call token of its own).
            let mut inner = inner;
            if network
                .apply(&mut policy)
                .map_err(|e| e.to_string())?
                .is_some()
            {
                let proxy = network.proxy().map_err(|e| e.to_string())?;
                let url = format!("http://127.0.0.1:{}", proxy.port());
                tools::network::set_proxy_env(&mut inner.env, &url);
            }
            let parts = sandbox::wrap(inner, &policy, *backend)
                .map_err(|e| e.to_string())?
                .into_parts();
            notes.extend(parts.warning);
            (parts.command, Some(parts.level), Some(parts.guard))
        }
    };
    // Its own process group, so stopping the server stops whatever it started (npx → node).
    // At the landlock level the sandbox helper makes itself a session (and group) leader
    // instead, with the same group id; `setsid` would fail for a process that already leads a
    // group.
    let helper_leads = level == Some(sandbox::Level::Landlock);
    if !helper_leads {
        std::os::unix::process::CommandExt::process_group(&mut command_to_spawn, 0);
    }
    command_to_spawn
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut spawn = tokio::process::Command::from(command_to_spawn);
    spawn.kill_on_drop(true);
    let mut process = spawn
        .spawn()
        .map_err(|e| format!("cannot start {command:?}: {e}"))?;
    let (Some(pid), Some(stdin), Some(stdout), Some(mut stderr)) = (
        process.id(),
        process.stdin.take(),
        process.stdout.take(),
        process.stderr.take(),
    ) else {
        return Err("the server process has no pipes".to_string());
    };
    let pgid = Pid::from_raw(pid as i32).ok_or("the server process has no pid")?;
    let tail = Arc::new(StderrTail::default());
    let reader_tail = Arc::clone(&tail);
    tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            reader_tail.push(&buf[..n]);
        }
    });
    let stop = CancellationToken::new();
    let exited = Arc::new(AtomicBool::new(false));
    let supervisor = tokio::spawn(supervise(
        process,
        pgid,
        stop.clone(),
        Arc::clone(&exited),
        guard,
    ));
    let mut child = Child {
        pgid,
        stop,
        exited,
        supervisor: Some(supervisor),
    };
    match initialise(client_config().serve((stdout, stdin)), options).await {
        Ok((service, tools)) => Ok(Connection {
            service: Some(service),
            child: Some(child),
            stderr: Some(tail),
            tools,
            notes,
        }),
        Err(e) => {
            child.stop().await;
            let stderr = tail.text();
            Err(if stderr.is_empty() {
                e
            } else {
                format!("{e}; stderr: {}", last_lines(&stderr, 5))
            })
        }
    }
}

pub(crate) async fn connect_http(
    url: &str,
    options: &ConnectOptions,
) -> Result<Connection, String> {
    install_crypto_provider();
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        // Following a redirect would take the session (and any headers) somewhere unconfigured.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let transport = StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    let (service, tools) = initialise(client_config().serve(transport), options).await?;
    Ok(Connection {
        service: Some(service),
        child: None,
        stderr: None,
        tools,
        notes: Vec::new(),
    })
}

/// The MCP handshake and the tool list, both under the start-up timeout.
async fn initialise<F, E>(
    serve: F,
    options: &ConnectOptions,
) -> Result<(Service, Vec<Tool>), String>
where
    F: std::future::Future<Output = Result<Service, E>>,
    E: std::fmt::Display,
{
    let limit = options.startup_timeout;
    let secs = limit.as_secs_f64();
    let service = tokio::time::timeout(limit, serve)
        .await
        .map_err(|_| format!("no MCP handshake within {secs} s"))?
        .map_err(|e| format!("MCP handshake failed: {e}"))?;
    let tools = tokio::time::timeout(limit, service.peer().list_all_tools())
        .await
        .map_err(|_| format!("tools/list did not answer within {secs} s"))?
        .map_err(|e| format!("tools/list failed: {e}"))?;
    Ok((service, tools))
}

/// Owns the process until it is gone: on a stop request, stdin has been closed by then; the
/// group gets `SIGTERM` (the sandbox helper passes it on to everything it started), then
/// `SIGKILL`. The sandbox's temporary state (`guard`) lives exactly as long as the process.
async fn supervise(
    mut process: tokio::process::Child,
    pgid: Pid,
    stop: CancellationToken,
    exited: Arc<AtomicBool>,
    guard: Option<sandbox::Guard>,
) {
    let stopped_by_us = tokio::select! {
        _ = process.wait() => false,
        _ = stop.cancelled() => true,
    };
    if stopped_by_us
        && tokio::time::timeout(POLITE_EXIT, process.wait())
            .await
            .is_err()
    {
        let _ = kill_process_group(pgid, Signal::TERM);
        if tokio::time::timeout(TERM_GRACE, process.wait())
            .await
            .is_err()
        {
            let _ = kill_process_group(pgid, Signal::KILL);
            let _ = process.wait().await;
        }
    }
    // Whatever the leader left behind in its group goes too. The leader was reaped just now,
    // and a group id stays reserved while any member lives, so this reaches only leftovers.
    let _ = kill_process_group(pgid, Signal::KILL);
    exited.store(true, Ordering::SeqCst);
    drop(guard);
}

/// rustls is built without a default crypto backend; `ring` is installed once per process (the
/// provider client does the same; whichever runs first wins, and both install the same one).
fn install_crypto_provider() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
    });
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}
