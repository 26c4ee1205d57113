//! Running the agent from the command line: one-shot (`gg -p PROMPT`, `gg PROMPT`) and the line
//! interactive mode (`gg`), with approvals on the terminal, `--json` events for CI, and Ctrl+C.
//!
//! Exit codes: 0 the turn completed; 1 the run failed; 2 usage or configuration error; 3 a tool
//! call was denied and `--fail-on-deny` was given; 130 interrupted.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use policies::{Mode, Terminal};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::sessions::{self, SessionFlags};
use super::terminal::{Lines, TerminalApprover};
use crate::agent::{AgentEvent, Approver, NobodyToAsk, TurnError};
use crate::app::config::{Config, Overrides};
use crate::app::service::{Conversation, EarlyTools, ServiceOptions, Submitted};
use crate::tools::registry::SandboxSetting;
use crate::tools::security;

pub const EXIT_FAILED: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_DENIED: u8 = 3;
pub const EXIT_INTERRUPTED: u8 = 130;

/// The agent flags, as parsed by the top-level command.
#[derive(Debug, Clone, Default)]
pub struct RunFlags {
    pub print: bool,
    pub prompt: Vec<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    /// `--api-key-file` / `GG_API_KEY_FILE`; `api_key` wins when both are given.
    pub api_key_file: Option<PathBuf>,
    pub approval: Option<String>,
    pub yolo: bool,
    pub sandbox: bool,
    /// `--network`, parsed when the run starts (a bad value is a usage error).
    pub network: Option<String>,
    /// `--allow-domain`, repeatable.
    pub allow_domains: Vec<String>,
    pub usage: bool,
    pub no_skills: bool,
    pub no_context_files: bool,
    /// `--no-memory`.
    pub no_memory: bool,
    pub json: bool,
    pub directory: Option<PathBuf>,
    pub fail_on_deny: bool,
    pub session: SessionFlags,
}

pub use super::error::CliError;

pub fn run(flags: RunFlags) -> ExitCode {
    let runtime = match crate::app::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("gg: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    match runtime.block_on(run_async(flags)) {
        Ok(code) => code,
        Err(CliError::Usage(message)) => {
            eprintln!("gg: {}", crate::display::visible(&message));
            ExitCode::from(EXIT_USAGE)
        }
        Err(CliError::Failed(message)) => {
            eprintln!("gg: {}", crate::display::visible(&message));
            ExitCode::from(EXIT_FAILED)
        }
    }
}

fn mode_of(flags: &RunFlags) -> Result<Mode, CliError> {
    match (&flags.approval, flags.yolo) {
        (Some(a), true) if a != "yolo" => Err(CliError::Usage(format!(
            "--yolo conflicts with --approval {a}"
        ))),
        (_, true) => Ok(Mode::Yolo),
        (Some(a), false) => Mode::parse_cli(a).map_err(CliError::Usage),
        (None, false) => Ok(Mode::Auto),
    }
}

/// The one line printed at start when normal commands run without asking and nothing confines
/// them: the classifier alone stands between the model and the machine.
pub fn sandbox_note(mode: Mode, sandboxed: bool) -> Option<&'static str> {
    let unasked = matches!(
        mode,
        Mode::Yolo | Mode::Never | Mode::Unattended { allow_all: true }
    );
    (unasked && !sandboxed).then_some(
        "gg: note: commands run without asking and without the sandbox; add --sandbox to confine them to this directory",
    )
}

async fn run_async(flags: RunFlags) -> Result<ExitCode, CliError> {
    // Started by a command of another gg session: never looser than that session.
    let ceiling = crate::app::ceiling::Ceiling::from_env();
    let wanted = mode_of(&flags)?;
    let mode = ceiling.map_or(wanted, |c| c.clamp_mode(wanted));
    if mode != wanted {
        eprintln!(
            "gg: note: started by another gg session's command: approval mode {} (that session's ceiling), not {}",
            mode.as_str(),
            wanted.as_str()
        );
    }
    let terminal = super::terminal_present();
    // Decided before anything else happens, so no request reaches a server.
    policies::check_startup(mode, terminal).map_err(|e| CliError::Usage(e.message))?;
    flags.session.validate().map_err(CliError::Usage)?;
    let one_shot = !flags.prompt.is_empty();
    if flags.print && !one_shot {
        return Err(CliError::Usage(
            "prompt is required in print mode".to_string(),
        ));
    }
    let cwd = match &flags.directory {
        Some(dir) => std::fs::canonicalize(dir)
            .map_err(|e| CliError::Usage(format!("-C {}: {e}", dir.display())))?,
        None => std::env::current_dir()
            .map_err(|e| CliError::Failed(format!("current directory: {e}")))?,
    };
    let home = security::home_dir();
    let config = Config::load(&home).map_err(CliError::Usage)?;
    let api_key = match (&flags.api_key, &flags.api_key_file) {
        (Some(key), _) => Some(key.clone()),
        (None, Some(file)) => {
            Some(super::args::read_secret_file(file, "--api-key-file").map_err(CliError::Usage)?)
        }
        (None, None) => None,
    };
    let overrides = Overrides {
        selection: flags.model.clone(),
        api_key,
        base_url: flags.base_url.clone(),
    };
    // Fail before any network call when no key is configured.
    let selection = config
        .select(&home, flags.model.as_deref(), &overrides)
        .map_err(CliError::Usage)?;
    if selection.api_key.is_empty() {
        return Err(CliError::Usage(
            crate::app::config::MISSING_API_KEY.to_string(),
        ));
    }

    let lines = Lines::stdin();
    let approver: Arc<dyn Approver> = match (mode, terminal) {
        (Mode::Auto | Mode::OnRequest | Mode::Yolo, Terminal::Present) => {
            Arc::new(TerminalApprover {
                lines: lines.clone(),
            })
        }
        _ => Arc::new(NobodyToAsk),
    };
    let sandboxed = flags.sandbox || config.sandbox || ceiling.is_some_and(|c| c.sandbox);
    if let Some(note) = sandbox_note(mode, sandboxed) {
        eprintln!("{note}");
    }
    let network_mode = flags
        .network
        .as_deref()
        .map(str::parse::<crate::tools::network::NetworkMode>)
        .transpose()
        .map_err(|e| CliError::Usage(format!("--network: {e}")))?;
    let (mut network, explicit) = crate::tools::network::session_policy(
        &config.network,
        network_mode,
        &flags.allow_domains,
        &cwd,
    )
    .map_err(CliError::Usage)?;
    if !sandboxed
        && explicit
        && let Some(line) = network.unenforced_warning()
    {
        eprintln!("{line}");
    }
    if let Some(c) = ceiling {
        network.mode = c.clamp_network(network.mode);
    }
    let sandbox = SandboxSetting::with_network(sandboxed, network);
    // Before the session file and the MCP servers: the sandbox's start overlaps both.
    let early_tools = EarlyTools::start(&cwd, &sandbox, &config).map_err(CliError::Usage)?;
    let session = sessions::open_for_run(&flags.session, &cwd, &home).await?;
    // MCP servers live for the whole process; a server that fails is skipped with a warning.
    let mcp_options = crate::mcp::ConnectOptions::new(&home, sandbox.clone());
    let (mut mcp, mcp_warnings) =
        crate::mcp::connect_all(&crate::mcp::config_path(&home), &mcp_options).await;
    for warning in &mcp_warnings {
        eprintln!("gg: {warning}");
    }
    let options = ServiceOptions {
        cwd: cwd.clone(),
        home,
        config,
        overrides,
        mode,
        terminal,
        approver,
        sandbox,
        context_files: !flags.no_context_files,
        skills: !flags.no_skills,
        no_memory: flags.no_memory,
        external_tools: mcp.tools(),
        early_tools: Some(early_tools),
    };
    let mut conversation = Conversation::open(options, session.session).map_err(CliError::Usage)?;
    for notice in conversation.notices() {
        eprintln!("gg: {}", crate::display::visible_inline(notice));
    }
    if let Some(name) = &flags.session.name {
        conversation.set_name(name).map_err(CliError::Failed)?;
    }

    let interrupts = Interrupts::install();
    let output = Output::new(flags.json, one_shot);
    if one_shot {
        let prompt = flags.prompt.join(" ");
        let result = run_one(&mut conversation, &prompt, &output, &interrupts, &flags).await;
        mcp.shutdown().await;
        drop(session.guard);
        return Ok(result.code);
    }

    if !flags.json {
        println!("gg interactive mode. Press Ctrl+D to exit.");
    }
    loop {
        if !flags.json {
            print!("> ");
            let _ = std::io::stdout().flush();
        }
        let Some(line) = lines.next().await else {
            if !flags.json {
                println!();
            }
            break;
        };
        if line.trim().is_empty() {
            continue;
        }
        // A failed turn ends the session with its code; an interrupted one
        // returns to the prompt.
        if let Some(code) = run_one(&mut conversation, &line, &output, &interrupts, &flags)
            .await
            .fatal
        {
            mcp.shutdown().await;
            drop(session.guard);
            return Ok(code);
        }
    }
    mcp.shutdown().await;
    drop(session.guard);
    Ok(ExitCode::SUCCESS)
}

/// Ctrl+C: the first one cancels the running turn; a second one while that turn is still
/// cleaning up exits at once.
struct Interrupts {
    current: Arc<std::sync::Mutex<Option<CancellationToken>>>,
}

impl Interrupts {
    fn install() -> Interrupts {
        let current: Arc<std::sync::Mutex<Option<CancellationToken>>> = Arc::default();
        let watched = Arc::clone(&current);
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                let token = watched.lock().ok().and_then(|c| c.clone());
                match token {
                    Some(token) if token.is_cancelled() => {
                        eprintln!("\ngg: interrupted again; exiting");
                        std::process::exit(i32::from(EXIT_INTERRUPTED));
                    }
                    Some(token) => {
                        eprintln!("\ngg: cancelling (Ctrl+C again to exit now)");
                        token.cancel();
                    }
                    None => eprintln!("\n(press Ctrl+D to exit)"),
                }
            }
        });
        Interrupts { current }
    }

    fn start_turn(&self) -> CancellationToken {
        let token = CancellationToken::new();
        if let Ok(mut c) = self.current.lock() {
            *c = Some(token.clone());
        }
        token
    }

    fn end_turn(&self) {
        if let Ok(mut c) = self.current.lock() {
            *c = None;
        }
    }
}

/// Where events go: JSON lines on stdout, or text with progress on stderr. Text streams as it is
/// generated in interactive mode and when stdout is a terminal; a one-shot run into a pipe or
/// file prints only the final reply, or, when the turn fails, the text it had received.
struct Output {
    json: bool,
    one_shot: bool,
    /// Write text deltas as they arrive (else keep them in `pending`).
    stream_text: bool,
    /// The turn's text so far, when not streamed: printed if the turn fails.
    pending: std::sync::Mutex<String>,
    wrote_text: AtomicBool,
    colour_stderr: bool,
    next_seq: AtomicU8,
}

impl Output {
    fn new(json: bool, one_shot: bool) -> Output {
        Output {
            json,
            one_shot,
            stream_text: !one_shot || std::io::IsTerminal::is_terminal(&std::io::stdout()),
            pending: std::sync::Mutex::new(String::new()),
            wrote_text: AtomicBool::new(false),
            colour_stderr: super::terminal::colour_on(super::terminal::Stream::Stderr),
            next_seq: AtomicU8::new(0),
        }
    }

    fn json_line(&self, value: serde_json::Value) {
        let mut stdout = std::io::stdout().lock();
        let _ = serde_json::to_writer(&mut stdout, &value);
        let _ = stdout.write_all(b"\n");
        let _ = stdout.flush();
    }

    fn event(&self, event: AgentEvent) {
        if self.json {
            if let Some(value) = event_json(&event) {
                self.json_line(value);
            }
            return;
        }
        match event {
            AgentEvent::TextDelta(text) if !self.stream_text => {
                if let Ok(mut pending) = self.pending.lock() {
                    pending.push_str(&text);
                }
            }
            AgentEvent::TextDelta(text) => {
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(crate::display::visible(&text).as_bytes());
                let _ = stdout.flush();
                self.wrote_text.store(true, Ordering::Relaxed);
            }
            AgentEvent::ThinkingDelta(text) => {
                let text = crate::display::visible(&text);
                let text = if self.colour_stderr {
                    format!("\x1b[2m{text}\x1b[0m")
                } else {
                    text.into_owned()
                };
                eprint!("{text}");
            }
            AgentEvent::Retrying {
                retry,
                delay_ms,
                reason,
            } => {
                // A retried request starts its reply over.
                if let Ok(mut pending) = self.pending.lock() {
                    pending.clear();
                }
                let reason = crate::display::visible(&reason);
                eprintln!("gg: retry {retry} in {delay_ms} ms: {reason}");
            }
            AgentEvent::ToolCallStart {
                summary,
                classification,
                action,
                ..
            } => {
                self.end_text_line();
                if let Ok(mut pending) = self.pending.lock()
                    && !pending.is_empty()
                    && !pending.ends_with('\n')
                {
                    pending.push('\n');
                }
                let class = classification
                    .map(|c| format!(" [{c}]"))
                    .unwrap_or_default();
                let summary = crate::display::visible_inline(&summary);
                eprintln!("• {summary}{class} → {action}");
            }
            AgentEvent::ToolCallFinish {
                is_error: true,
                text,
                name,
                ..
            } => {
                let first = text.lines().next().unwrap_or("").to_string();
                let first = crate::display::visible_inline(&first);
                eprintln!("  {name} failed: {first}");
            }
            // Memory writes run without asking, so each one is shown as it lands.
            AgentEvent::ToolCallFinish {
                is_error: false,
                text,
                name,
                ..
            } if name == "memory_add" => {
                for line in text.lines() {
                    eprintln!("  {}", crate::display::visible_inline(line));
                }
            }
            _ => {}
        }
    }

    fn end_text_line(&self) {
        if self.wrote_text.swap(false, Ordering::Relaxed) {
            println!();
        }
    }

    /// Takes the text kept back during a turn (empty when text was streamed).
    fn take_pending(&self) -> String {
        self.pending
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default()
    }
}

fn event_json(event: &AgentEvent) -> Option<serde_json::Value> {
    Some(match event {
        AgentEvent::UserMessage { text } => json!({"type": "user_message", "text": text}),
        AgentEvent::TextDelta(t) => json!({"type": "text_delta", "text": t}),
        AgentEvent::ThinkingDelta(t) => json!({"type": "thinking_delta", "text": t}),
        AgentEvent::Retrying {
            retry,
            delay_ms,
            reason,
        } => {
            json!({"type": "retrying", "retry": retry, "delayMs": delay_ms, "reason": reason})
        }
        AgentEvent::AssistantMessage { .. } => return None,
        AgentEvent::ToolCallStart {
            id,
            name,
            summary,
            classification,
            action,
            rule,
        } => json!({
            "type": "tool_call_start", "id": id, "tool": name, "summary": summary,
            "classification": classification, "decision": {"action": action, "rule": rule}}),
        AgentEvent::ApprovalRequested(p) => json!({
            "type": "approval_requested", "id": p.call_id, "tool": p.tool, "summary": p.summary,
            "details": p.details, "reason": p.reason, "dangerous": p.dangerous}),
        AgentEvent::ApprovalResolved {
            id,
            allowed,
            decided_by,
        } => json!({
            "type": "approval_resolved", "id": id, "allowed": allowed, "decidedBy": decided_by}),
        AgentEvent::ToolCallFinish {
            id,
            name,
            is_error,
            text,
            sandbox_level,
            network_refused,
            ran,
        } => {
            let mut v = json!({
                "type": "tool_call_finish", "id": id, "tool": name, "isError": is_error,
                "result": text, "sandboxLevel": sandbox_level,
                "durationMs": ran.map(|(s, e)| e.duration_since(s).as_millis() as u64)});
            if !network_refused.is_empty() {
                v["networkRefused"] = json!(network_refused);
            }
            v
        }
        AgentEvent::Usage(u) => json!({"type": "usage", "promptTokens": u.prompt_tokens,
            "completionTokens": u.completion_tokens, "totalTokens": u.total_tokens}),
    })
}

/// How one turn ended: its exit code, and whether it ends an interactive session.
struct TurnExit {
    code: ExitCode,
    fatal: Option<ExitCode>,
}

impl From<ExitCode> for TurnExit {
    fn from(code: ExitCode) -> Self {
        TurnExit { code, fatal: None }
    }
}

async fn run_one(
    conversation: &mut Conversation,
    prompt: &str,
    output: &Output,
    interrupts: &Interrupts,
    flags: &RunFlags,
) -> TurnExit {
    let cancel = interrupts.start_turn();
    let seq = output.next_seq.fetch_add(1, Ordering::Relaxed);
    if output.json {
        output.json_line(json!({"type": "run_started", "run": seq,
            "sessionId": conversation.session().id(), "model": conversation.selection().label()}));
    }
    let sink = |event: AgentEvent| output.event(event);
    let result = conversation.submit(prompt, &sink, &cancel).await;
    interrupts.end_turn();
    output.end_text_line();
    let pending = output.take_pending();
    match result {
        Ok(Submitted::Control(text)) => {
            if output.json {
                output.json_line(
                    json!({"type": "run_completed", "run": seq, "text": text, "control": true}),
                );
            } else {
                // Not println!: a closed pipe must not end gg before it has shut its browser.
                let _ = writeln!(std::io::stdout(), "{}", crate::display::visible(&text));
            }
            ExitCode::SUCCESS.into()
        }
        Ok(Submitted::Turn(outcome)) => {
            if output.json {
                output.json_line(
                    json!({"type": "run_completed", "run": seq, "text": outcome.final_text,
                    "deniedCalls": outcome.denied_calls,
                    "usage": {"promptTokens": outcome.usage.prompt_tokens,
                        "completionTokens": outcome.usage.completion_tokens,
                        "totalTokens": outcome.usage.total_tokens}}),
                );
            } else if output.one_shot && !output.stream_text {
                let _ = writeln!(
                    std::io::stdout(),
                    "{}",
                    crate::display::visible(&outcome.final_text)
                );
            }
            if flags.usage {
                eprintln!(
                    "tokens: prompt={} completion={} total={}",
                    outcome.usage.prompt_tokens,
                    outcome.usage.completion_tokens,
                    outcome.usage.total_tokens
                );
            }
            if flags.fail_on_deny && outcome.denied_calls > 0 {
                ExitCode::from(EXIT_DENIED).into()
            } else {
                ExitCode::SUCCESS.into()
            }
        }
        Err(error) => {
            let (code, kind, fatal) = match &error {
                TurnError::Canceled => (EXIT_INTERRUPTED, "interrupted", false),
                TurnError::Setup(_) => (EXIT_FAILED, "error", false),
                TurnError::Provider(_) | TurnError::TooManyRequests | TurnError::Session(_) => {
                    (EXIT_FAILED, "failed", true)
                }
            };
            if output.json {
                output.json_line(json!({"type": "run_failed", "run": seq, "reason": kind, "error": error.to_string()}));
            } else {
                // What the model had said before the failure is shown, not only kept in the
                // session: stdout first, then the error on stderr.
                if !pending.is_empty() {
                    let mut stdout = std::io::stdout().lock();
                    let _ = stdout.write_all(crate::display::visible(&pending).as_bytes());
                    if !pending.ends_with('\n') {
                        let _ = stdout.write_all(b"\n");
                    }
                    let _ = stdout.flush();
                }
                eprintln!("gg: {}", crate::display::visible(&error.to_string()));
            }
            TurnExit {
                code: ExitCode::from(code),
                fatal: fatal.then(|| ExitCode::from(code)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_is_recommended_exactly_when_commands_run_unasked_and_unconfined() {
        for (mode, sandboxed, want) in [
            (Mode::Yolo, false, true),
            (Mode::Never, false, true),
            (Mode::Unattended { allow_all: true }, false, true),
            (Mode::Yolo, true, false),
            (Mode::Auto, false, false),
            (Mode::OnRequest, false, false),
            (Mode::Unattended { allow_all: false }, false, false),
        ] {
            assert_eq!(
                sandbox_note(mode, sandboxed).is_some(),
                want,
                "{mode:?} {sandboxed}"
            );
        }
    }
}
