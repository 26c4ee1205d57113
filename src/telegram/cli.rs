//! `gg telegram status`: whether the channel is configured, whether ggd polls, the last
//! update and the chats, from `~/.gg/telegram/status.json` (which ggd keeps) and the instance
//! lock (whether that ggd still runs).

use std::fmt::Write as _;
use std::process::ExitCode;

use clap::Subcommand;

use super::state::{self, Status};
use crate::app::config::Config;

#[derive(Subcommand, Debug)]
pub enum TelegramCommand {
    /// Whether ggd polls Telegram, the last update, and the chats with their sessions.
    Status {
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: TelegramCommand) -> ExitCode {
    let TelegramCommand::Status { json } = command;
    let home = tools::security::home_dir();
    match status(&home, json) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gg: {e}");
            ExitCode::from(1)
        }
    }
}

fn status(home: &std::path::Path, json: bool) -> Result<String, String> {
    let config = Config::load(home)?;
    let alive = crate::app::lock::daemon_alive(home)?;
    let recorded = state::load_status(home)?;
    // A status left by a ggd that stopped says nothing about now.
    let polling = alive && recorded.as_ref().is_some_and(|s| s.polling);
    if json {
        let value = serde_json::json!({
            "configured": config.telegram.is_some(),
            "allowedChats": config.telegram.as_ref().map(|t| t.allowed_chats.clone()),
            "approval": config.telegram.as_ref().map(|t| t.approval.as_str()),
            "ggdRunning": alive,
            "polling": polling,
            "status": recorded,
        });
        return Ok(format!("{value}\n"));
    }
    let mut out = String::new();
    match &config.telegram {
        None => out.push_str(
            "telegram: not configured (add a \"telegram\" section to ~/.gg/config.json)\n",
        ),
        Some(t) => {
            let _ = writeln!(
                out,
                "telegram: configured, {} allowed chat(s), approval {}, sandbox {}",
                t.allowed_chats.len(),
                t.approval.as_str(),
                if t.sandbox { "on" } else { "off" }
            );
        }
    }
    let polling_line = match (&recorded, alive) {
        (_, false) => "no (ggd is not running)".to_string(),
        (None, true) => "no (ggd runs without the Telegram channel)".to_string(),
        (Some(s), true) if s.polling => format!("yes (ggd pid {})", s.pid),
        (Some(s), true) => format!("no, retrying (ggd pid {})", s.pid),
    };
    let _ = writeln!(out, "polling: {polling_line}");
    if let Some(s) = &recorded {
        describe(&mut out, s);
    }
    Ok(out)
}

fn describe(out: &mut String, s: &Status) {
    let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "never".to_string());
    let _ = writeln!(out, "last poll: {}", show(&s.last_poll_at));
    match s.last_update_id {
        Some(id) => {
            let _ = writeln!(out, "last update: {} (id {id})", show(&s.last_update_at));
        }
        None => out.push_str("last update: none\n"),
    }
    if let Some(error) = &s.last_error {
        let _ = writeln!(out, "last error: {}", crate::display::visible_inline(error));
    }
    if s.chats.is_empty() {
        out.push_str("chats: none yet\n");
        return;
    }
    out.push_str("chats:\n");
    for (chat, c) in &s.chats {
        let _ = writeln!(
            out,
            "  {chat}  last message {}{}\n    session {}",
            show(&c.last_message_at),
            if c.turn_running {
                "  (turn running)"
            } else {
                ""
            },
            c.session.as_deref().unwrap_or("-")
        );
    }
}
