//! Serving: logging, the runtime, the transports (stdio, HTTP + SSE), the scheduler, and how the
//! daemon stops (signals, stdin at end of file).

use super::*;

/// ggd's log lines are JSON, whose encoder escapes C0 controls but writes DEL, C1 controls, bidi
/// overrides and invisible characters (tag characters, zero-width spaces) raw; a log on a
/// terminal could so be rewritten, or carry text no one sees, by a value the model chose. They
/// are written as `\uXXXX` escapes instead (a surrogate pair above U+FFFF), which leaves the line
/// the same JSON.
struct TerminalSafeJson<W>(W);

impl<W: std::io::Write> std::io::Write for TerminalSafeJson<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        if !crate::display::needs_escaping(&text) {
            self.0.write_all(buf)?;
            return Ok(buf.len());
        }
        let mut out = String::with_capacity(text.len() + 16);
        for c in text.chars() {
            if crate::display::needs_escape(c) && c as u32 >= 0x20 {
                for unit in c.encode_utf16(&mut [0; 2]) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
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

pub(super) async fn serve(flags: Flags) -> Result<(), Failure> {
    let cwd = match &flags.cwd {
        Some(dir) => std::fs::canonicalize(dir)
            .map_err(|e| Failure::Usage(format!("--cwd {}: {e}", dir.display())))?,
        None => std::env::current_dir()
            .and_then(std::fs::canonicalize)
            .map_err(|e| Failure::Failed(format!("current directory: {e}")))?,
    };
    let home = security::home_dir();
    let config = Config::load(&home).map_err(Failure::Failed)?;
    // Read now, so that a missing or bad token stops ggd before it serves anything.
    let telegram = super::telegram::ggd_channel(&flags, &config, &home, &cwd)?;
    let session_root = crate::app::session_root(flags.session_dir.as_deref())
        .map_err(|e| Failure::Failed(e.to_string()))?;
    init_logging();
    let sandboxed = flags.sandbox || config.sandbox;
    let (network, explicit) =
        tools::network::session_policy(&config.network, flags.network, &flags.allow_domains, &cwd)
            .map_err(|e| Failure::Usage(e.to_string()))?;
    if !sandboxed
        && explicit
        && let Some(line) = network.unenforced_warning()
    {
        tracing::warn!("{line}");
    }
    let sandbox = SandboxSetting::with_network(sandboxed, network);
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
        overrides: flags.overrides(),
        sandbox,
        skills: !flags.no_skills,
        context_files: !flags.no_context_files,
        no_memory: flags.no_memory,
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
            overrides: flags.overrides(),
            context_files: !flags.no_context_files,
            skills: !flags.no_skills,
            no_memory: flags.no_memory,
            ..crate::jobs::ConversationExecutor::new(home.clone())
        };
        tracing::info!("scheduler started");
        // Jobs added through the API or the CLI wake the scheduler at once (it watches the store).
        let options = crate::jobs::SchedulerOptions::default();
        Some(tokio::spawn(crate::jobs::run_scheduler_with(
            store,
            Arc::new(executor),
            stop.child_token(),
            options,
        )))
    } else {
        None
    };
    // Telegram is a channel like the scheduler: one daemon polls, or Telegram refuses the
    // second poller (409) and both would answer.
    let telegram = match (telegram, instance.is_some()) {
        (Some(options), true) => {
            let stop = stop.child_token();
            Some(tokio::spawn(async move {
                if let Err(e) = crate::telegram::run(options, stop).await {
                    tracing::error!("telegram: {e}");
                }
            }))
        }
        (Some(_), false) if flags.telegram => {
            return Err(Failure::Failed(
                "--telegram: another ggd holds the instance lock and polls Telegram".to_string(),
            ));
        }
        (Some(_), false) => {
            tracing::warn!("telegram: another ggd holds the instance lock and polls Telegram");
            None
        }
        (None, _) => None,
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
            // The browser tool never reaches this port (`own_ports`); kept until ggd stops.
            let _own_port = match tools::network::own_ports::record(&home, local.port()) {
                Ok(recorded) => Some(recorded),
                Err(e) => {
                    return Err(Failure::Failed(format!(
                        "record the port so that the browser tool never reaches it: {e}"
                    )));
                }
            };
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
    if let Some(telegram) = telegram {
        // Its running turns are cancelled and recorded before the lock goes.
        let _ = telegram.await;
    }
    mcp.shutdown().await;
    drop(instance);
    tracing::info!("ggd stopped");
    served.map_err(Failure::Failed)
}

/// SIGINT, SIGTERM (a service manager stopping ggd) and SIGHUP (its terminal closed) shut ggd
/// down: its runs are cancelled, so a running command is stopped and swept, not left to die
/// with ggd unswept. A SIGHUP ggd was started with ignored (`nohup`) stays ignored.
fn spawn_signal_watch(stop: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let hangup = if ::sandbox::leftovers::ignored(rustix::process::Signal::HUP.as_raw()) {
        None
    } else {
        match signal(SignalKind::hangup()) {
            Ok(stream) => Some(stream),
            Err(e) => {
                tracing::error!("cannot install the SIGHUP handler: {e}");
                None
            }
        }
    };
    tokio::spawn(async move {
        let (Ok(mut interrupt), Ok(mut terminate)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            tracing::error!("cannot install signal handlers");
            return;
        };
        let hung_up = async {
            match hangup {
                Some(mut hangup) => hangup.recv().await,
                None => std::future::pending::<Option<()>>().await,
            }
        };
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
            _ = hung_up => {}
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

    #[test]
    fn log_lines_escape_invisible_characters_as_json() {
        use std::io::Write;
        let mut w = TerminalSafeJson(Vec::new());
        let m = "ok\u{200b}\u{e0041}\u{e007f}";
        let line = serde_json::json!({ "m": m }).to_string() + "\n";
        w.write_all(line.as_bytes()).unwrap();
        let out = String::from_utf8(w.0).unwrap();
        assert_eq!(out, "{\"m\":\"ok\\u200b\\udb40\\udc41\\udb40\\udc7f\"}\n");
        let back: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(back["m"], m);
    }
}
