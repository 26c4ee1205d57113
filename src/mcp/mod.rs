//! MCP client: tools from the Model Context Protocol servers listed in `~/.gg/mcp.json`, built on
//! the official Rust SDK (`rmcp`).
//!
//! [`connect_all`] starts every configured server and returns an [`McpHub`] that owns the
//! connections (stdio children live exactly as long as the hub) together with one warning per
//! server that could not be used; such a server is skipped, never fatal. [`McpHub::tools`] are
//! external tools for the [`ToolBox`](crate::agent::ToolBox): every call goes through
//! the approval gate. [`list`] is `gg mcp list`.

pub mod config;
pub mod naming;
pub mod schema;
mod server;
mod tool;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use config::{ServerEntry, ServerSpec};
pub use server::{server_dir, server_env};
pub use tool::McpTool;

use crate::agent::Tool;
use tools::registry::SandboxSetting;

/// How long one tool call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a server may take to start, complete the handshake, and list its tools (each).
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// `~/.gg/mcp.json`.
pub fn config_path(home: &Path) -> PathBuf {
    home.join(".gg").join("mcp.json")
}

/// How servers are started.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// The user's home: `HOME` for stdio servers and the root of their directories
    /// (`~/.gg/mcp/<name>/`).
    pub home: PathBuf,
    /// With `On`, stdio servers run under the sandbox with their own directory writable.
    pub sandbox: SandboxSetting,
    /// Limit for the handshake and, separately, for `tools/list` ([`STARTUP_TIMEOUT`]).
    pub startup_timeout: Duration,
    /// Limit for one tool call ([`CALL_TIMEOUT`]).
    pub call_timeout: Duration,
}

impl ConnectOptions {
    /// The default timeouts.
    pub fn new(home: impl Into<PathBuf>, sandbox: SandboxSetting) -> ConnectOptions {
        ConnectOptions {
            home: home.into(),
            sandbox,
            startup_timeout: STARTUP_TIMEOUT,
            call_timeout: CALL_TIMEOUT,
        }
    }
}

/// Whether a server is usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    Connected,
    /// Not started, or it failed to start or list its tools: the reason.
    Failed(String),
}

/// One tool of a connected server, as `gg mcp list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInfo {
    /// The name the model sees (`mcp_<server>_<tool>`).
    pub exposed: String,
    /// The server's own name for it.
    pub remote: String,
    pub description: String,
}

/// One configured server: how it is reached, its state and its tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    pub name: String,
    /// `stdio: <command> <args…>` or `http: <url>`; empty for an invalid entry.
    pub transport: String,
    pub state: ServerState,
    pub tools: Vec<ToolInfo>,
    /// Warnings that did not stop the server (e.g. the sandbox is unavailable).
    pub notes: Vec<String>,
}

/// The live connections of one service. Dropping the hub (or [`McpHub::shutdown`]) stops every
/// stdio server and its process group.
#[derive(Default)]
pub struct McpHub {
    connections: Vec<server::Connection>,
    tools: Vec<Arc<McpTool>>,
    statuses: Vec<ServerStatus>,
}

impl McpHub {
    /// The tools of every connected server, for `ToolBox::add_tools`.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools
            .iter()
            .map(|t| Arc::clone(t) as Arc<dyn Tool>)
            .collect()
    }

    /// Every configured server with its state, in name order.
    pub fn statuses(&self) -> &[ServerStatus] {
        &self.statuses
    }

    /// Whether any server is configured (connected or not): the daemon advertises `mcp` then.
    pub fn has_servers(&self) -> bool {
        !self.statuses.is_empty()
    }

    /// Closes every session and stops every stdio server, waiting until their processes are
    /// gone (at most a few seconds: stdin closed, then `SIGTERM`, then `SIGKILL`).
    pub async fn shutdown(&mut self) {
        let mut stopping = tokio::task::JoinSet::new();
        for mut connection in self.connections.drain(..) {
            stopping.spawn(async move { connection.shutdown().await });
        }
        while stopping.join_next().await.is_some() {}
        self.tools.clear();
    }
}

/// Starts every server of the configuration at `config_path` (a missing file means none) and
/// lists their tools. Never fails: each problem — an unreadable or malformed file, an invalid
/// entry, a server that does not start, does not complete the handshake or does not list its
/// tools — is one warning, and the server is left out.
pub async fn connect_all(config_path: &Path, options: &ConnectOptions) -> (McpHub, Vec<String>) {
    let entries = match read_config(config_path) {
        Ok(entries) => entries,
        Err(e) => return (McpHub::default(), vec![e]),
    };
    let mut starting = tokio::task::JoinSet::new();
    for (index, entry) in entries.iter().enumerate() {
        if let Ok(spec) = &entry.spec {
            let (name, spec, options) = (entry.name.clone(), spec.clone(), options.clone());
            starting.spawn(async move { (index, connect_one(&name, &spec, &options).await) });
        }
    }
    let mut results: Vec<Option<Result<server::Connection, String>>> =
        entries.iter().map(|_| None).collect();
    while let Some(joined) = starting.join_next().await {
        match joined {
            Ok((index, result)) => results[index] = Some(result),
            // A panic while connecting loses that server only; its slot stays empty below.
            Err(e) => tracing::warn!("MCP connect task failed: {e}"),
        }
    }

    let mut hub = McpHub::default();
    let mut warnings = Vec::new();
    let mut names = naming::NameAllocator::default();
    for (entry, result) in entries.into_iter().zip(results) {
        let transport = entry.spec.as_ref().map(describe).unwrap_or_default();
        let result = match (entry.spec, result) {
            (Err(e), _) => Err(e),
            (Ok(_), None) => Err("connecting failed unexpectedly".to_string()),
            (Ok(_), Some(result)) => result,
        };
        let shown = config::printable(&entry.name);
        let mut status = ServerStatus {
            name: entry.name.clone(),
            transport,
            state: ServerState::Connected,
            tools: Vec::new(),
            notes: Vec::new(),
        };
        match result {
            Err(reason) => {
                // Reasons carry text from the server (stderr, error messages): no escapes
                // reach the terminal that prints them.
                let reason = displayable(&reason);
                let reason = if reason.starts_with("MCP server \"") {
                    reason
                } else {
                    format!("MCP server \"{shown}\" skipped: {reason}")
                };
                warnings.push(reason.clone());
                status.state = ServerState::Failed(reason);
            }
            Ok(connection) => {
                for note in &connection.notes {
                    warnings.push(format!("MCP server \"{shown}\": {note}"));
                }
                status.notes = connection.notes.clone();
                let Some(peer) = connection.service.as_ref().map(|s| s.peer().clone()) else {
                    continue;
                };
                for remote in &connection.tools {
                    let exposed = names.allocate(&entry.name, &remote.name);
                    let description = naming::description(
                        remote
                            .description
                            .as_deref()
                            .or(remote.title.as_deref())
                            .unwrap_or_default(),
                    );
                    let parameters = schema::normalise(&serde_json::Value::Object(
                        (*remote.input_schema).clone(),
                    ));
                    status.tools.push(ToolInfo {
                        exposed: exposed.clone(),
                        remote: config::printable(&remote.name),
                        description: displayable(&description),
                    });
                    hub.tools.push(Arc::new(McpTool {
                        exposed,
                        server: entry.name.clone(),
                        tool: remote.name.to_string(),
                        description,
                        parameters,
                        peer: peer.clone(),
                        timeout: options.call_timeout,
                        stderr: connection.stderr.clone(),
                    }));
                }
                hub.connections.push(connection);
            }
        }
        hub.statuses.push(status);
    }
    (hub, warnings)
}

/// `gg mcp list`: starts every server, records its state and tools, and stops them again.
pub async fn list(config_path: &Path, options: &ConnectOptions) -> Vec<ServerStatus> {
    let (mut hub, warnings) = connect_all(config_path, options).await;
    let mut statuses = hub.statuses.clone();
    hub.shutdown().await;
    if statuses.is_empty()
        && let Some(problem) = warnings.into_iter().next()
    {
        // The file itself is unusable: report it as the only entry.
        statuses.push(ServerStatus {
            name: config_path.display().to_string(),
            transport: String::new(),
            state: ServerState::Failed(problem),
            tools: Vec::new(),
            notes: Vec::new(),
        });
    }
    statuses
}

/// The text `gg mcp list` prints.
pub fn render_list(config_path: &Path, statuses: &[ServerStatus]) -> String {
    if statuses.is_empty() {
        return format!("no MCP servers configured ({})\n", config_path.display());
    }
    let mut out = String::new();
    for status in statuses {
        let state = match &status.state {
            ServerState::Connected => format!("connected, {} tools", status.tools.len()),
            ServerState::Failed(reason) => format!("failed: {reason}"),
        };
        out.push_str(&format!("{}  [{}]", config::printable(&status.name), state));
        if !status.transport.is_empty() {
            out.push_str(&format!("  {}", status.transport));
        }
        out.push('\n');
        for note in &status.notes {
            out.push_str(&format!("  note: {note}\n"));
        }
        for tool in &status.tools {
            let first_line = tool.description.lines().next().unwrap_or_default();
            out.push_str(&format!("  {}  {}\n", tool.exposed, first_line));
        }
    }
    out
}

/// Whether `config_path` names at least one server (valid or not); a missing or malformed file
/// names none.
pub fn has_servers(config_path: &Path) -> bool {
    read_config(config_path).is_ok_and(|entries| !entries.is_empty())
}

fn read_config(config_path: &Path) -> Result<Vec<ServerEntry>, String> {
    let text = match std::fs::read_to_string(config_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(format!(
                "MCP servers skipped: cannot read {}: {e}",
                config_path.display()
            ));
        }
    };
    config::parse(&text).map_err(|e| format!("MCP servers skipped: {}: {e}", config_path.display()))
}

async fn connect_one(
    name: &str,
    spec: &ServerSpec,
    options: &ConnectOptions,
) -> Result<server::Connection, String> {
    match spec {
        ServerSpec::Stdio { command, args, env } => {
            server::connect_stdio(name, command, args, env, options).await
        }
        ServerSpec::Http { url } => server::connect_http(url, options).await,
    }
}

/// Text for a terminal: control characters other than newline and tab, bidi controls and
/// invisible characters (tag characters, zero-width spaces) become `?`.
fn displayable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if (c.is_control() || crate::display::needs_escape(c)) && c != '\n' && c != '\t' {
                '?'
            } else {
                c
            }
        })
        .collect()
}

fn describe(spec: &ServerSpec) -> String {
    match spec {
        ServerSpec::Stdio { command, args, .. } => {
            let mut text = format!("stdio: {command}");
            for arg in args {
                text.push(' ');
                text.push_str(arg);
            }
            text.chars()
                .map(|c| {
                    if c.is_control() || crate::display::needs_escape(c) {
                        '?'
                    } else {
                        c
                    }
                })
                .collect()
        }
        ServerSpec::Http { url } => format!("http: {}", redacted(url)),
    }
}

/// A URL without its password, for display.
fn redacted(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_string(),
    }
}
