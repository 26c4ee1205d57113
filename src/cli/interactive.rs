//! The interactive mode's own slash commands (those that change how this process runs, or
//! show what the command line knows) and the status line shown before each prompt. The
//! conversation's commands (`/model`, `/memory`, `/compact`, `/context`, `/name`, `/skill:`)
//! are the service's, shared with the other frontends.

use std::sync::Arc;

use policies::{Mode, Terminal};

use super::run_flags::RunFlags;
use super::terminal::{Lines, TerminalApprover};
use crate::agent::{Approver, NobodyToAsk};
use crate::app::service::Conversation;
use tools::ceiling::{Ceiling, looseness};
use tools::network::{NetworkMode, NetworkPolicy};
use tools::registry::SandboxSetting;

/// The settings the person can change mid-session, as the command line set them up.
pub struct Settings {
    pub sandboxed: bool,
    /// The session's network policy; enforced only while the sandbox is on.
    pub network: NetworkPolicy,
    pub ceiling: Option<Ceiling>,
    pub terminal: Terminal,
    pub lines: Lines,
}

/// What the prompt loop does after a command.
pub enum After {
    Prompt,
    Exit,
    /// A conversation command: the service handles the line.
    Service,
}

/// Service commands: passed on whole.
const SERVICE: &[&str] = &["model", "memory", "compact", "context", "name"];

/// The approver a mode asks: the terminal where a person can answer, else nobody.
pub fn approver_for(mode: Mode, terminal: Terminal, lines: &Lines) -> Arc<dyn Approver> {
    match (mode, terminal) {
        (Mode::Auto | Mode::OnRequest | Mode::Yolo, Terminal::Present) => {
            Arc::new(TerminalApprover {
                lines: lines.clone(),
            })
        }
        _ => Arc::new(NobodyToAsk),
    }
}

/// Runs `/name arg`. Its answer, or its error, is printed here.
pub fn command(
    name: &str,
    arg: &str,
    conversation: &mut Conversation,
    settings: &mut Settings,
    flags: &RunFlags,
    last_output: Option<&str>,
) -> After {
    if SERVICE.contains(&name) || name.starts_with("skill:") {
        return After::Service;
    }
    let result = match name {
        "help" => Ok(super::slash::help(matches!(
            settings.lines,
            Lines::Editor(_)
        ))),
        "exit" | "quit" if arg.is_empty() => return After::Exit,
        "approval" => approval(arg, conversation, settings),
        "sandbox" => sandbox(arg, conversation, settings),
        "network" => network(arg, conversation, settings),
        "sessions" => sessions(conversation, flags),
        "resume" => resume(arg, conversation, flags),
        "clear" => clear(conversation, flags),
        "audit" => {
            let path = conversation.session().path().display().to_string();
            let _ =
                super::sessions::audit(Some(&path), false, flags.session.session_dir.as_deref());
            return After::Prompt;
        }
        "output" => Ok(match last_output {
            Some(text) => crate::display::visible(text).into_owned(),
            None => "no tool output yet".to_string(),
        }),
        "exit" | "quit" => Err(format!("/{name} takes no argument")),
        other => Err(super::slash::unknown(other)),
    };
    match result {
        // `--json` keeps stdout for events.
        Ok(text) if flags.json => eprintln!("{}", text.trim_end()),
        Ok(text) => println!("{}", text.trim_end()),
        Err(e) => eprintln!("gg: {}", crate::display::visible(&e)),
    }
    After::Prompt
}

fn approval(
    arg: &str,
    conversation: &mut Conversation,
    settings: &Settings,
) -> Result<String, String> {
    let from = conversation.mode();
    if arg.is_empty() {
        return Ok(format!("approval: {}", from.as_str()));
    }
    let to = Mode::parse_cli(arg)?;
    if let Some(ceiling) = settings.ceiling
        && ceiling.clamp_mode(to) != to
    {
        return Err(format!(
            "approval {arg} is looser than the gg session that started this one allows ({})",
            ceiling.mode.as_str()
        ));
    }
    let approver = approver_for(to, settings.terminal, &settings.lines);
    conversation.set_mode(to, approver)?;
    if looseness(to) > looseness(from) {
        conversation.record_policy("approval", from.as_str(), to.as_str())?;
    }
    let mut text = format!("approval: {} → {}", from.as_str(), to.as_str());
    if let Some(note) = super::terminal::sandbox_note(to, settings.sandboxed) {
        text.push('\n');
        text.push_str(note);
    }
    Ok(text)
}

fn sandbox(
    arg: &str,
    conversation: &mut Conversation,
    settings: &mut Settings,
) -> Result<String, String> {
    let on_off = |on: bool| if on { "on" } else { "off" };
    let from = settings.sandboxed;
    let to = match arg {
        "" => return Ok(format!("sandbox: {}", on_off(from))),
        "on" => true,
        "off" => false,
        other => return Err(format!("/sandbox {other}: say on or off")),
    };
    if !to && settings.ceiling.is_some_and(|c| c.sandbox) {
        return Err(
            "the gg session that started this one runs sandboxed: this one cannot turn it off"
                .to_string(),
        );
    }
    if to != from {
        conversation.set_sandbox(SandboxSetting::with_network(to, settings.network.clone()))?;
        settings.sandboxed = to;
        if !to {
            conversation.record_policy("sandbox", "on", "off")?;
        }
    }
    let mut text = format!("sandbox: {} → {}", on_off(from), on_off(to));
    if to != from && conversation.has_external_tools() {
        text.push_str("\nnote: MCP servers keep the sandbox setting they were started with");
    }
    if let Some(note) = super::terminal::sandbox_note(conversation.mode(), to) {
        text.push('\n');
        text.push_str(note);
    }
    Ok(text)
}

fn network(
    arg: &str,
    conversation: &mut Conversation,
    settings: &mut Settings,
) -> Result<String, String> {
    let from = settings.network.mode;
    if arg.is_empty() {
        return Ok(format!(
            "network: {}",
            network_text(from, settings.sandboxed)
        ));
    }
    let to: NetworkMode = arg.parse()?;
    if let Some(ceiling) = settings.ceiling
        && ceiling.clamp_network(to) != to
    {
        return Err(format!(
            "network {to} is looser than the gg session that started this one allows ({})",
            ceiling.network
        ));
    }
    if to != from {
        let mut policy = settings.network.clone();
        policy.mode = to;
        if settings.sandboxed {
            // The proxy and the sandbox's network namespace are the tool box's: built anew.
            conversation.set_sandbox(SandboxSetting::with_network(true, policy.clone()))?;
        }
        settings.network = policy;
        if to > from {
            conversation.record_policy("network", from.as_str(), to.as_str())?;
        }
    }
    let mut text = format!("network: {from} → {}", network_text(to, settings.sandboxed));
    if to != from && conversation.has_external_tools() {
        text.push_str("\nnote: MCP servers keep the network setting they were started with");
    }
    Ok(text)
}

fn network_text(mode: NetworkMode, sandboxed: bool) -> String {
    if sandboxed {
        mode.to_string()
    } else {
        format!("{mode} (not enforced: the sandbox is off)")
    }
}

fn sessions(conversation: &Conversation, flags: &RunFlags) -> Result<String, String> {
    let root = flags.session.root()?;
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let list = session::paths::list_sessions(&root, &cwd).map_err(|e| e.to_string())?;
    if list.is_empty() {
        return Ok("no sessions found".to_string());
    }
    let current = conversation.session().id();
    let mut text = String::new();
    for s in list {
        let mark = if s.id == current { "*" } else { " " };
        let name = s.name.as_deref().filter(|n| !n.is_empty()).unwrap_or("-");
        text.push_str(&format!(
            "{mark} {}  {}  {} messages  {}  {}\n",
            crate::display::visible_inline(&s.id),
            s.updated,
            s.messages,
            crate::display::visible_inline(name),
            crate::display::visible_inline(&s.preview)
        ));
    }
    text.push_str("(* this session; /resume ID continues another)");
    Ok(text)
}

fn resume(arg: &str, conversation: &mut Conversation, flags: &RunFlags) -> Result<String, String> {
    if arg.is_empty() {
        return Err("/resume needs a session id (/sessions lists them)".to_string());
    }
    if flags.session.no_session {
        return Err("/resume: this run keeps no session (--no-session)".to_string());
    }
    let root = flags.session.root()?;
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let path =
        session::paths::resolve_target(&root, &cwd, arg, false).map_err(|e| e.to_string())?;
    if path == conversation.session().path() {
        return Ok("already in that session".to_string());
    }
    let next = session::Session::open(&path).map_err(|e| e.to_string())?;
    let messages = next.transcript().messages().len();
    let left = conversation.replace_session(next);
    Ok(format!(
        "resumed {} ({messages} messages); /resume {} goes back",
        conversation.session().id(),
        left.id()
    ))
}

fn clear(conversation: &mut Conversation, flags: &RunFlags) -> Result<String, String> {
    if flags.session.no_session {
        return Err("/clear: this run keeps no session (--no-session)".to_string());
    }
    let root = flags.session.root()?;
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let next = super::sessions::new_session(&root, &cwd, &cwd.display().to_string()).map_err(
        |e| match e {
            super::error::CliError::Usage(m) | super::error::CliError::Failed(m) => m,
        },
    )?;
    let left = conversation.replace_session(next);
    Ok(format!(
        "new session {}; the previous one is kept (/resume {})",
        conversation.session().id(),
        left.id()
    ))
}

/// The line before each prompt: model, approval mode, sandbox, network, context used.
pub fn status_line(conversation: &Conversation, settings: &Settings) -> String {
    let context = match conversation.context_used() {
        Ok((used, 0)) => format!("context {} tokens", tokens(used)),
        Ok((used, max)) => format!("context {}/{} tokens", tokens(used), tokens(u64::from(max))),
        Err(_) => "context ?".to_string(),
    };
    let network = if settings.sandboxed {
        settings.network.mode.to_string()
    } else {
        format!("{} (unenforced)", settings.network.mode)
    };
    format!(
        "{} · approval {} · sandbox {} · network {network} · {context}",
        crate::display::visible_inline(&conversation.selection().label()),
        conversation.mode().as_str(),
        if settings.sandboxed { "on" } else { "off" },
    )
}

fn tokens(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else {
        format!("{:.1}k", n as f64 / 1000.0)
    }
}
