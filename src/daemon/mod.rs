//! `ggd`: the application core served over JSON-RPC to editors, the web UI and scripts
//! (reference 1.2 and 8).
//!
//! - [`rpc`]: framing, request validation, error codes (pure; fuzzed).
//! - [`runtime`]: sessions, runs, events, approvals, limits.
//! - [`handler`]: method dispatch.
//! - [`stdio`] / [`http`]: the transports.
//! - [`lock`]: the single-instance lock; [`service`]: `install-service`.
//!
//! Approval mapping: `requireApproval: true` (the default) runs in `on-request` mode with the
//! client as the terminal, so every gated call waits for `run.approve`; `requireApproval: false`
//! runs in `never` mode: allowed without asking, except dangerous bash, which is denied because
//! nobody is there to confirm it.

pub mod handler;
pub mod http;
pub mod lock;
pub mod rpc;
pub mod runtime;
pub mod service;
pub mod stdio;
pub mod web;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::app::config::{Config, Overrides};
use crate::tools::registry::SandboxSetting;
use crate::tools::security;

pub const VERSION: &str = "0.1.0";
pub const DEFAULT_MAX_ACTIVE_RUNS: usize = 16;
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The daemon flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flags {
    pub http: Option<String>,
    pub token: Option<String>,
    pub allow_remote: bool,
    pub exit_on_stdin_eof: bool,
    pub cwd: Option<PathBuf>,
    pub api_key: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub session_dir: Option<PathBuf>,
    pub no_skills: bool,
    pub no_memory: bool,
    pub no_context_files: bool,
    pub no_scheduler: bool,
    pub sandbox: bool,
    pub version: bool,
    pub max_active_runs: usize,
    pub run_timeout: Duration,
}

impl Default for Flags {
    fn default() -> Flags {
        Flags {
            http: None,
            token: None,
            allow_remote: false,
            exit_on_stdin_eof: false,
            cwd: None,
            api_key: None,
            base_url: None,
            model: None,
            session_dir: None,
            no_skills: false,
            no_memory: false,
            no_context_files: false,
            no_scheduler: false,
            sandbox: false,
            version: false,
            max_active_runs: DEFAULT_MAX_ACTIVE_RUNS,
            run_timeout: DEFAULT_RUN_TIMEOUT,
        }
    }
}

/// A usage error (exit 2) or a failure (exit 1).
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    Usage(String),
    Failed(String),
}

/// Parses the flags (`--flag value` or `--flag=value`).
pub fn parse_flags(args: &[String]) -> Result<Flags, Failure> {
    let mut flags = Flags::default();
    let mut iter = args.iter();
    let usage = |m: String| Failure::Usage(m);
    while let Some(arg) = iter.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        if !name.starts_with('-') {
            return Err(usage(
                "ggd does not accept positional arguments".to_string(),
            ));
        }
        let mut value = |flag: &str| -> Result<String, Failure> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => iter
                    .next()
                    .cloned()
                    .ok_or_else(|| Failure::Usage(format!("flag needs an argument: {flag}"))),
            }
        };
        let switch = |flag: &str| -> Result<bool, Failure> {
            match inline.as_deref() {
                None | Some("true") => Ok(true),
                Some("false") => Ok(false),
                Some(other) => Err(Failure::Usage(format!(
                    "invalid boolean value {other:?} for {flag}"
                ))),
            }
        };
        match name {
            "--http" => flags.http = Some(value(name)?),
            "--token" => flags.token = Some(value(name)?),
            "--cwd" => flags.cwd = Some(PathBuf::from(value(name)?)),
            "--api-key" => flags.api_key = Some(value(name)?),
            "--base-url" => flags.base_url = Some(value(name)?),
            "--model" => flags.model = Some(value(name)?),
            "--session-dir" => flags.session_dir = Some(PathBuf::from(value(name)?)),
            "--max-active-runs" => {
                let text = value(name)?;
                flags.max_active_runs =
                    text.parse::<usize>()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| {
                            usage(format!(
                                "--max-active-runs must be a positive integer, got {text:?}"
                            ))
                        })?;
            }
            "--run-timeout" => {
                flags.run_timeout = runtime::parse_duration(&value(name)?)
                    .map_err(|e| usage(format!("--run-timeout: {e}")))?;
            }
            "--allow-remote" => flags.allow_remote = switch(name)?,
            "--exit-on-stdin-eof" => flags.exit_on_stdin_eof = switch(name)?,
            "--no-skills" => flags.no_skills = switch(name)?,
            "--no-memory" => flags.no_memory = switch(name)?,
            "--no-context-files" => flags.no_context_files = switch(name)?,
            "--no-scheduler" => flags.no_scheduler = switch(name)?,
            "--sandbox" => flags.sandbox = switch(name)?,
            "--version" => flags.version = switch(name)?,
            other => return Err(usage(format!("flag provided but not defined: {other}"))),
        }
    }
    if let Some(addr) = flags.http.as_deref().filter(|a| !a.is_empty()) {
        if flags.token.as_deref().is_none_or(str::is_empty) {
            return Err(usage("--token is required in HTTP mode".to_string()));
        }
        if !flags.allow_remote && !is_loopback_addr(addr) {
            return Err(usage(
                "HTTP address must be loopback unless --allow-remote is set".to_string(),
            ));
        }
    }
    Ok(flags)
}

/// Splits `host:port` (`[v6]:port` too).
fn split_host(addr: &str) -> Option<(&str, &str)> {
    let (host, port) = addr.rsplit_once(':')?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    Some((host, port))
}

/// `localhost` (any case) or a loopback IP; anything unparsable is not loopback.
pub fn is_loopback_addr(addr: &str) -> bool {
    let Some((host, _)) = split_host(addr) else {
        return false;
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The socket address to bind (`localhost` binds IPv4 loopback).
fn bind_addr(addr: &str) -> Result<SocketAddr, String> {
    let (host, port) = split_host(addr).ok_or_else(|| format!("invalid HTTP address {addr:?}"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("invalid port in {addr:?}"))?;
    let ip: IpAddr = if host.eq_ignore_ascii_case("localhost") {
        IpAddr::from([127, 0, 0, 1])
    } else if host.is_empty() {
        IpAddr::from([0, 0, 0, 0])
    } else {
        host.parse()
            .map_err(|_| format!("invalid host in {addr:?}"))?
    };
    Ok(SocketAddr::new(ip, port))
}

/// The `ggd` entry point.
pub fn main(args: Vec<String>) -> ExitCode {
    match args.first().map(String::as_str) {
        Some("install-service") => return install_service(&args[1..]),
        Some("uninstall-service") => return uninstall_service(),
        Some("status") => {
            return match lock::daemon_alive(&security::home_dir()) {
                Ok(true) => {
                    println!("ggd is running");
                    ExitCode::SUCCESS
                }
                Ok(false) => {
                    println!("ggd is not running");
                    ExitCode::from(1)
                }
                Err(e) => {
                    eprintln!("ggd: {e}");
                    ExitCode::from(1)
                }
            };
        }
        _ => {}
    }
    let flags = match parse_flags(&args) {
        Ok(flags) => flags,
        Err(Failure::Usage(m)) => {
            eprintln!("ggd: {m}");
            return ExitCode::from(2);
        }
        Err(Failure::Failed(m)) => {
            eprintln!("ggd: {m}");
            return ExitCode::from(1);
        }
    };
    if flags.version {
        println!("ggd {VERSION}");
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ggd: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = match runtime.block_on(serve(flags)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(m)) => {
            eprintln!("ggd: {m}");
            ExitCode::from(2)
        }
        Err(Failure::Failed(m)) => {
            eprintln!("ggd: {m}");
            ExitCode::from(1)
        }
    };
    // Abandoned request tasks (a `run.wait` of a client that left) must not delay the exit.
    runtime.shutdown_timeout(Duration::from_millis(100));
    code
}

/// ggd's log lines are JSON, whose encoder escapes C0 controls but writes DEL, C1 controls and
/// bidi overrides raw; a log on a terminal could so be rewritten by a value the model chose. They
/// are written as `\uXXXX` escapes instead, which leaves the line the same JSON.
struct TerminalSafeJson<W>(W);

impl<W: std::io::Write> std::io::Write for TerminalSafeJson<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        if !crate::display::has_controls(&text) {
            self.0.write_all(buf)?;
            return Ok(buf.len());
        }
        let mut out = String::with_capacity(text.len() + 16);
        for c in text.chars() {
            if crate::display::is_control(c) && c as u32 >= 0x20 {
                out.push_str(&format!("\\u{:04x}", c as u32));
            } else {
                out.push(c);
            }
        }
        self.0.write_all(out.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

fn init_logging() {
    let level = match std::env::var("GG_LOG_LEVEL")
        .unwrap_or_default()
        .to_ascii_lowercase()
        .as_str()
    {
        "debug" => tracing::Level::DEBUG,
        "warn" | "warning" => tracing::Level::WARN,
        "error" => tracing::Level::ERROR,
        _ => tracing::Level::INFO,
    };
    let _ = tracing_subscriber::fmt()
        .json()
        .with_writer(|| TerminalSafeJson(std::io::stderr()))
        .with_max_level(level)
        .with_current_span(false)
        .with_span_list(false)
        .try_init();
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        tracing::error!(location = %location, "panic: {info}");
    }));
}

async fn serve(flags: Flags) -> Result<(), Failure> {
    let cwd = match &flags.cwd {
        Some(dir) => std::fs::canonicalize(dir)
            .map_err(|e| Failure::Usage(format!("--cwd {}: {e}", dir.display())))?,
        None => std::env::current_dir()
            .and_then(std::fs::canonicalize)
            .map_err(|e| Failure::Failed(format!("current directory: {e}")))?,
    };
    let home = security::home_dir();
    let config = Config::load(&home).map_err(Failure::Failed)?;
    let session_root = crate::session::paths::root_from_env(flags.session_dir.as_deref())
        .map_err(|e| Failure::Failed(e.to_string()))?;
    init_logging();
    let sandbox = SandboxSetting::enabled(flags.sandbox || config.sandbox);
    // MCP servers live as long as the daemon; one that fails is skipped with a warning.
    let mcp_options = crate::mcp::ConnectOptions::new(&home, sandbox.clone());
    let (mut mcp, mcp_warnings) =
        crate::mcp::connect_all(&crate::mcp::config_path(&home), &mcp_options).await;
    for warning in &mcp_warnings {
        tracing::warn!("{warning}");
    }
    let settings = runtime::Settings {
        cwd,
        home: home.clone(),
        session_root,
        config,
        overrides: Overrides {
            selection: flags.model.clone(),
            api_key: flags.api_key.clone(),
            base_url: flags.base_url.clone(),
        },
        sandbox,
        skills: !flags.no_skills,
        context_files: !flags.no_context_files,
        max_active_runs: flags.max_active_runs,
        run_timeout: flags.run_timeout,
        test_hooks: std::env::var(handler::TEST_HOOKS_ENV).is_ok_and(|v| v == "1"),
        external_tools: mcp.tools(),
    };
    let app = runtime::Runtime::new(settings);
    let handler = handler::Handler::new(Arc::clone(&app), mcp.has_servers());

    let instance = match lock::acquire(&home) {
        Ok(lock) => Some(lock),
        Err(lock::LockError::Held) if flags.exit_on_stdin_eof => {
            tracing::warn!("another ggd holds the instance lock; serving the API without channels");
            None
        }
        Err(lock::LockError::Held) => {
            return Err(Failure::Failed("ggd is already running".to_string()));
        }
        Err(lock::LockError::Other(e)) => {
            return Err(Failure::Failed(format!(
                "cannot acquire instance lock: {e}"
            )));
        }
    };
    let stop = CancellationToken::new();
    // The scheduler is a channel: it runs only in the instance that holds the lock, so two
    // daemons never fire the same job.
    let scheduler = if instance.is_some() && !flags.no_scheduler {
        let store = crate::jobs::JobStore::open(&crate::jobs::JobStore::default_dir(&home))
            .map_err(Failure::Failed)?;
        let executor = crate::jobs::ConversationExecutor {
            session_dir: flags.session_dir.clone(),
            overrides: Overrides {
                selection: flags.model.clone(),
                api_key: flags.api_key.clone(),
                base_url: flags.base_url.clone(),
            },
            context_files: !flags.no_context_files,
            skills: !flags.no_skills,
            ..crate::jobs::ConversationExecutor::new(home.clone())
        };
        tracing::info!("scheduler started");
        // With the test hooks on, the scheduler looks at the store every second, so a job added
        // through the API (the web UI's tests) fires without a 30 s wait.
        let options = if std::env::var(handler::TEST_HOOKS_ENV).is_ok_and(|v| v == "1") {
            crate::jobs::SchedulerOptions {
                max_sleep: std::time::Duration::from_secs(1),
            }
        } else {
            crate::jobs::SchedulerOptions::default()
        };
        Some(tokio::spawn(crate::jobs::run_scheduler_with(
            store,
            Arc::new(executor),
            stop.child_token(),
            options,
        )))
    } else {
        None
    };
    spawn_signal_watch(stop.clone());
    let served = match flags.http.as_deref().filter(|a| !a.is_empty()) {
        None => {
            tracing::info!(mode = "stdio", "ggd serving");
            let (input, output) = std_streams().map_err(Failure::Failed)?;
            stdio::serve(Arc::clone(&handler), input, output, stop.clone()).await;
            Ok(())
        }
        Some(addr) => {
            let bind = bind_addr(addr).map_err(Failure::Usage)?;
            let listener = tokio::net::TcpListener::bind(bind)
                .await
                .map_err(|e| Failure::Failed(format!("listen on {addr}: {e}")))?;
            let local = listener
                .local_addr()
                .map_err(|e| Failure::Failed(e.to_string()))?;
            tracing::info!(mode = "http", addr = %local, "ggd serving");
            if flags.exit_on_stdin_eof {
                spawn_stdin_watch(stop.clone());
            }
            let token = flags.token.clone().unwrap_or_default();
            http::serve(
                Arc::clone(&handler),
                listener,
                token,
                flags.allow_remote,
                stop.clone(),
            )
            .await
        }
    };
    // Shutdown order: no new work, cancel runs and wait for them, then release the lock.
    stop.cancel();
    app.shutdown().await;
    if let Some(scheduler) = scheduler {
        // Running firings are cancelled and recorded as interrupted before the lock goes.
        let _ = scheduler.await;
    }
    mcp.shutdown().await;
    drop(instance);
    tracing::info!("ggd stopped");
    served.map_err(Failure::Failed)
}

fn spawn_signal_watch(stop: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    tokio::spawn(async move {
        let (Ok(mut interrupt), Ok(mut terminate)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            tracing::error!("cannot install signal handlers");
            return;
        };
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        tracing::info!("signal received; shutting down");
        stop.cancel();
    });
}

/// Stdin and stdout as async files (reads and writes run on tokio's blocking pool).
fn std_streams() -> Result<(tokio::fs::File, tokio::fs::File), String> {
    use std::os::fd::AsFd;
    let input = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| format!("stdin: {e}"))?;
    let output = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| format!("stdout: {e}"))?;
    Ok((
        tokio::fs::File::from_std(std::fs::File::from(input)),
        tokio::fs::File::from_std(std::fs::File::from(output)),
    ))
}

/// HTTP mode with `--exit-on-stdin-eof`: the parent (an editor, Electron) going away ends us.
fn spawn_stdin_watch(stop: CancellationToken) {
    tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let Ok((mut stdin, _)) = std_streams() else {
            return;
        };
        let mut buffer = [0u8; 4096];
        loop {
            match stdin.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        stop.cancel();
    });
}

fn install_service(args: &[String]) -> ExitCode {
    let result = (|| -> Result<service::ServiceFile, String> {
        let platform = service::Platform::current()?;
        let exe = std::env::current_exe().map_err(|e| format!("executable path: {e}"))?;
        let cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
        let file = service::service_file(platform, &security::home_dir(), &exe, &cwd, args)?;
        write_private(&file.path, &file.text)?;
        Ok(file)
    })();
    match result {
        Ok(file) => {
            println!("installed {}", file.path.display());
            println!("enable it with: {}", file.enable);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ggd: {e}");
            ExitCode::from(1)
        }
    }
}

fn write_private(path: &std::path::Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // The unit holds the token: 0600 even when the file existed with wider bits.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .and_then(|()| file.write_all(text.as_bytes()))
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn uninstall_service() -> ExitCode {
    let platform = match service::Platform::current() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ggd: {e}");
            return ExitCode::from(1);
        }
    };
    let path = service::service_path(platform, &security::home_dir());
    if !path.exists() {
        eprintln!("ggd: no service installed at {}", path.display());
        return ExitCode::from(1);
    }
    // Best effort: the file goes either way.
    let _ = match platform {
        service::Platform::Linux => std::process::Command::new("systemctl")
            .args(["--user", "disable", "--now", "ggd.service"])
            .status(),
        service::Platform::MacOs => std::process::Command::new("launchctl")
            .arg("unload")
            .arg(&path)
            .status(),
    };
    match std::fs::remove_file(&path) {
        Ok(()) => {
            println!("removed {}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ggd: {}: {e}", path.display());
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_escape_what_json_leaves_raw() {
        use std::io::Write;
        let mut w = TerminalSafeJson(Vec::new());
        let line = serde_json::json!({"m": "a\u{1b}[2Kb\u{7f}\u{9b}\u{202e}c"}).to_string() + "\n";
        w.write_all(line.as_bytes()).unwrap();
        let out = String::from_utf8(w.0).unwrap();
        assert_eq!(out, "{\"m\":\"a\\u001b[2Kb\\u007f\\u009b\\u202ec\"}\n");
        let back: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(back["m"], "a\u{1b}[2Kb\u{7f}\u{9b}\u{202e}c");
    }

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flag_errors() {
        let cases: [(&[&str], &str); 6] = [
            (&["extra"], "ggd does not accept positional arguments"),
            (
                &["--http", "127.0.0.1:1"],
                "--token is required in HTTP mode",
            ),
            (
                &["--http", "0.0.0.0:1", "--token", "t"],
                "HTTP address must be loopback unless --allow-remote is set",
            ),
            (
                &["--http=example.com:1", "--token=t"],
                "HTTP address must be loopback unless --allow-remote is set",
            ),
            (
                &["--max-active-runs", "0"],
                "--max-active-runs must be a positive integer, got \"0\"",
            ),
            (&["--bogus"], "flag provided but not defined: --bogus"),
        ];
        for (input, want) in cases {
            assert_eq!(
                parse_flags(&args(input)),
                Err(Failure::Usage(want.to_string())),
                "{input:?}"
            );
        }
    }

    #[test]
    fn flags_parse() {
        let flags = parse_flags(&args(&[
            "--http=[::1]:9",
            "--token",
            "t",
            "--run-timeout",
            "2s",
            "--max-active-runs=3",
            "--no-scheduler",
        ]))
        .unwrap();
        assert_eq!(flags.http.as_deref(), Some("[::1]:9"));
        assert_eq!(flags.run_timeout, Duration::from_secs(2));
        assert_eq!(flags.max_active_runs, 3);
        assert!(flags.no_scheduler);
        assert!(
            parse_flags(&args(&[
                "--http",
                "0.0.0.0:1",
                "--token",
                "t",
                "--allow-remote"
            ]))
            .is_ok()
        );
    }

    #[test]
    fn loopback_addresses() {
        for (addr, want) in [
            ("127.0.0.1:80", true),
            ("LocalHost:1", true),
            ("[::1]:1", true),
            ("127.1.2.3:1", true),
            ("0.0.0.0:1", false),
            (":8080", false),
            ("10.0.0.1:1", false),
            ("garbage", false),
        ] {
            assert_eq!(is_loopback_addr(addr), want, "{addr}");
        }
    }
}
