//! Running the agent from the command line: one-shot (`gg -p PROMPT`, `gg PROMPT`) and the line
//! interactive mode (`gg`), with approvals on the terminal, `--json` events for CI, and Ctrl+C.
//!
//! Exit codes: 0 the turn completed; 1 the run failed; 2 usage or configuration error; 3 a tool
//! call was denied and `--fail-on-deny` was given; 130 interrupted.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use policies::{Mode, Terminal};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::sessions;
use super::terminal::Lines;
use crate::agent::{AgentEvent, TurnError};
use crate::app::config::{Config, Overrides};
use crate::app::service::{Conversation, EarlyTools, ServiceOptions, Submitted};
use tools::registry::SandboxSetting;
use tools::security;

pub const EXIT_FAILED: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_DENIED: u8 = 3;
pub const EXIT_INTERRUPTED: u8 = 130;

pub use super::error::CliError;
pub use super::run_flags::RunFlags;

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

async fn run_async(flags: RunFlags) -> Result<ExitCode, CliError> {
    // Started by a command of another gg session: never looser than that session.
    let ceiling = tools::ceiling::Ceiling::from_env();
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
        (None, Some(file)) => Some(
            crate::app::provider_flags::read_secret_file(file, "--api-key-file")
                .map_err(CliError::Usage)?,
        ),
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

    // The line editor on a terminal; a pipe (scripts, tests) is read line by line as before.
    let lines = if matches!(terminal, Terminal::Present) && !one_shot && !flags.json {
        match super::editor::LineEditor::start(super::history::path(&home)) {
            Ok((editor, notes)) => {
                for note in notes {
                    eprintln!("gg: note: {}", crate::display::visible_inline(&note));
                }
                Lines::Editor(editor)
            }
            Err(e) => {
                eprintln!("gg: note: {e}; reading plain lines");
                Lines::stdin()
            }
        }
    } else {
        Lines::stdin()
    };
    let approver = super::interactive::approver_for(mode, terminal, &lines);
    let sandboxed = flags.sandbox || config.sandbox || ceiling.is_some_and(|c| c.sandbox);
    if let Some(note) = super::terminal::sandbox_note(mode, sandboxed) {
        eprintln!("{note}");
    }
    let network_mode = flags
        .network
        .as_deref()
        .map(str::parse::<tools::network::NetworkMode>)
        .transpose()
        .map_err(|e| CliError::Usage(format!("--network: {e}")))?;
    let (mut network, explicit) =
        tools::network::session_policy(&config.network, network_mode, &flags.allow_domains, &cwd)
            .map_err(|e| CliError::Usage(e.to_string()))?;
    if !sandboxed
        && explicit
        && let Some(line) = network.unenforced_warning()
    {
        eprintln!("{line}");
    }
    if let Some(c) = ceiling {
        network.mode = c.clamp_network(network.mode);
    }
    let session_network = network.clone();
    let sandbox = SandboxSetting::with_network(sandboxed, network);
    // The session root joins the deny-read policy (`app::session_root`) before the sandbox
    // warms up: a server started without it hides one path fewer than the first command's
    // policy, and is replaced, whole, when that command arrives. An error here is
    // `open_for_run`'s to report.
    if !flags.session.no_session {
        let _ = flags.session.root();
    }
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
        let turn = Turn {
            prompt: &prompt,
            literal: false,
        };
        let result = run_one(&mut conversation, turn, &output, &interrupts, &flags).await;
        mcp.shutdown().await;
        drop(session.guard);
        return Ok(result.code);
    }

    if !flags.json {
        println!("gg interactive mode. Press Ctrl+D to exit. /help lists the commands.");
    }
    let mut settings = super::interactive::Settings {
        sandboxed,
        network: session_network,
        ceiling,
        terminal,
        lines: lines.clone(),
    };
    let show_status = !flags.json && std::io::stderr().is_terminal();
    // Ctrl+C on an empty prompt: the first says how to leave, the second in a row leaves.
    let mut interrupted = false;
    loop {
        if show_status {
            let status = super::interactive::status_line(&conversation, &settings);
            if output.colour_stderr {
                eprintln!("\x1b[2m{status}\x1b[0m");
            } else {
                eprintln!("{status}");
            }
        }
        let line = match &lines {
            Lines::Editor(editor) => match editor.prompt("> ").await {
                super::editor::Read::Line(line) => line,
                super::editor::Read::Interrupted if interrupted => break,
                super::editor::Read::Interrupted => {
                    interrupted = true;
                    eprintln!("(Ctrl+C again or Ctrl+D to exit)");
                    continue;
                }
                super::editor::Read::Eof => break,
            },
            Lines::Piped(_) => {
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
                line
            }
        };
        interrupted = false;
        let (prompt, literal) = match super::slash::parse(&line) {
            super::slash::Line::Blank => continue,
            super::slash::Line::Prompt(text) => (text.to_string(), text != line),
            super::slash::Line::Command { name, arg } => {
                let last = output.last_tool_output();
                match super::interactive::command(
                    name,
                    arg,
                    &mut conversation,
                    &mut settings,
                    &flags,
                    last.as_deref(),
                ) {
                    super::interactive::After::Prompt => continue,
                    super::interactive::After::Exit => break,
                    super::interactive::After::Service => (line.clone(), false),
                }
            }
        };
        // A failed turn ends the session with its code; an interrupted one
        // returns to the prompt.
        let turn = Turn {
            prompt: &prompt,
            literal,
        };
        if let Some(code) = run_one(&mut conversation, turn, &output, &interrupts, &flags)
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
/// cleaning up exits at once. `SIGTERM` and `SIGHUP` (a `kill`, a closed terminal) cancel it the
/// same way and end gg once it has ended (`sandbox::leftovers::stoppable`): its running command
/// is stopped and swept, as on Ctrl+C, instead of dying with gg unswept.
struct Interrupts {
    current: Arc<std::sync::Mutex<Option<CancellationToken>>>,
    /// The running turn, registered for the terminating signals until it ends.
    stoppable: std::sync::Mutex<Option<::sandbox::leftovers::Stoppable>>,
}

impl Interrupts {
    fn install() -> Interrupts {
        let current: Arc<std::sync::Mutex<Option<CancellationToken>>> = Arc::default();
        let watched = Arc::clone(&current);
        // Registered now, not when the task first runs: the line editor swaps its own SIGINT
        // handler in for each prompt and puts back the one it found, so tokio's must be in
        // place before the first prompt (else the default, which kills gg, comes back).
        let mut sigint =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
                Ok(stream) => Some(stream),
                Err(e) => {
                    eprintln!("gg: note: Ctrl+C cannot be handled: {e}");
                    None
                }
            };
        tokio::spawn(async move {
            let Some(sigint) = sigint.as_mut() else {
                return;
            };
            while sigint.recv().await.is_some() {
                let token = watched.lock().ok().and_then(|c| c.clone());
                match token {
                    Some(token) if token.is_cancelled() => {
                        eprintln!("\ngg: interrupted again; exiting");
                        ::sandbox::leftovers::remove_all();
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
        Interrupts {
            current,
            stoppable: std::sync::Mutex::new(None),
        }
    }

    fn start_turn(&self) -> CancellationToken {
        let token = CancellationToken::new();
        if let Ok(mut c) = self.current.lock() {
            *c = Some(token.clone());
        }
        let stop = token.clone();
        let stoppable = ::sandbox::leftovers::stoppable(move || {
            stop.cancel();
            true
        });
        if let Ok(mut s) = self.stoppable.lock() {
            *s = Some(stoppable);
        }
        token
    }

    /// After the turn has ended (its commands stopped and swept): a terminating signal that
    /// cancelled it may end gg from here on.
    fn end_turn(&self) {
        if let Ok(mut c) = self.current.lock() {
            *c = None;
        }
        let stoppable = self.stoppable.lock().ok().and_then(|mut s| s.take());
        drop(stoppable);
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
    /// The reply rendered as markdown as it streams (colour on stdout), else written as it is.
    markdown: Option<std::sync::Mutex<super::markdown::Markdown>>,
    /// Folded outputs and status lines after each tool call: the interactive mode, and `gg -p`
    /// when a person watches its standard error (a terminal, not `--json`); scripts keep the
    /// one-line failure notes.
    tool_status: Option<super::tool_status::Unfold>,
    /// The last tool call's whole output, for `/output`.
    last_tool_output: std::sync::Mutex<Option<String>>,
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
            markdown: super::terminal::colour_on(super::terminal::Stream::Stdout)
                .then(|| std::sync::Mutex::new(super::markdown::Markdown::default())),
            tool_status: if !one_shot {
                Some(super::tool_status::Unfold::OutputCommand)
            } else if !json && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
                Some(super::tool_status::Unfold::Nowhere)
            } else {
                None
            },
            last_tool_output: std::sync::Mutex::new(None),
        }
    }

    fn last_tool_output(&self) -> Option<String> {
        self.last_tool_output.lock().ok().and_then(|l| l.clone())
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
                let shown = match &self.markdown {
                    Some(markdown) => markdown
                        .lock()
                        .map(|mut m| m.push(&text))
                        .unwrap_or_default(),
                    None => crate::display::visible(&text).into_owned(),
                };
                let mut stdout = std::io::stdout().lock();
                let _ = stdout.write_all(shown.as_bytes());
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
                is_error,
                text,
                name,
                sandbox_level,
                ran,
                ..
            } if self.tool_status.is_some() && name != "memory_add" => {
                let unfold = self
                    .tool_status
                    .unwrap_or(super::tool_status::Unfold::Nowhere);
                let shown = super::tool_status::render(
                    &name,
                    is_error,
                    &text,
                    sandbox_level.as_deref(),
                    ran,
                    unfold,
                );
                eprint!("{shown}");
                if let Ok(mut last) = self.last_tool_output.lock() {
                    *last = Some(text);
                }
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
        let rest = self
            .markdown
            .as_ref()
            .and_then(|m| m.lock().ok().map(|mut m| m.finish()))
            .unwrap_or_default();
        if self.wrote_text.swap(false, Ordering::Relaxed) {
            println!("{rest}");
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

/// What to submit: a line for the service (which may be a slash command of its own), or text
/// for the model as it is (`//text` typed at the prompt).
struct Turn<'a> {
    prompt: &'a str,
    literal: bool,
}

async fn run_one(
    conversation: &mut Conversation,
    turn: Turn<'_>,
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
    let result = if turn.literal {
        conversation.submit_text(turn.prompt, &sink, &cancel).await
    } else {
        conversation.submit(turn.prompt, &sink, &cancel).await
    };
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
                crate::cli::terminal::sandbox_note(mode, sandboxed).is_some(),
                want,
                "{mode:?} {sandboxed}"
            );
        }
    }
}
