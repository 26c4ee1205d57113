//! Session flags and commands: `gg sessions list`, `gg resume`, `gg audit`, and which session a
//! run opens (`--continue`, `--session FILE`, `--no-session`, `--session-dir`).

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::error::CliError;
use crate::display::visible_inline;
use crate::session::{self, Session, paths};

/// The session flags of a run.
#[derive(Debug, Clone, Default)]
pub struct SessionFlags {
    pub no_session: bool,
    pub continue_last: bool,
    pub resume_picker: bool,
    pub resume_target: Option<String>,
    pub session_file: Option<PathBuf>,
    pub session_dir: Option<PathBuf>,
    pub name: Option<String>,
}

impl SessionFlags {
    /// The combinations the reference refuses (exit 2).
    pub fn validate(&self) -> Result<(), String> {
        let resuming = self.resume_picker || self.resume_target.is_some();
        if self.no_session && (resuming || self.continue_last || self.name.is_some()) {
            return Err(
                "--no-session cannot be combined with resume, --continue/--last or --name".into(),
            );
        }
        if self.session_file.is_some() && (resuming || self.continue_last) {
            return Err("--session cannot be combined with resume or --continue/--last".into());
        }
        if resuming && self.continue_last {
            return Err("resume cannot be combined with --continue/--last".into());
        }
        Ok(())
    }

    /// The session root, which joins every actor's deny-read policy where it lies outside
    /// `~/.gg` (`tools::secrets::add_private_dir`).
    pub fn root(&self) -> Result<PathBuf, String> {
        crate::app::session_root(self.session_dir.as_deref()).map_err(|e| e.to_string())
    }
}

/// The session a run writes to; `guard` removes a `--no-session` scratch file at the end.
pub struct OpenedSession {
    pub session: Session,
    pub guard: Option<ScratchSession>,
}

/// A throw-away session file for `--no-session`, deleted when dropped.
pub struct ScratchSession {
    dir: PathBuf,
}

impl Drop for ScratchSession {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Opens the session for a run: resume target → `--continue` → `--session FILE` → a new one.
pub async fn open_for_run(
    flags: &SessionFlags,
    cwd: &Path,
    _home: &Path,
) -> Result<OpenedSession, CliError> {
    let cwd_text = cwd.display().to_string();
    let failed = |e: session::SessionError| CliError::Failed(e.to_string());
    if flags.no_session {
        let dir = std::env::temp_dir().join(format!(
            "gg-nosession-{}-{:016x}",
            std::process::id(),
            fastrand::u64(..)
        ));
        let session = Session::create_at(&dir.join("session.jsonl"), &cwd_text).map_err(failed)?;
        return Ok(OpenedSession {
            session,
            guard: Some(ScratchSession { dir }),
        });
    }
    let root = flags.root().map_err(CliError::Usage)?;
    let session = if let Some(target) = &flags.resume_target {
        let path = paths::resolve_target(&root, cwd, target, true)
            .map_err(|e| CliError::Usage(e.to_string()))?;
        Session::open(&path).map_err(failed)?
    } else if flags.resume_picker {
        let path = pick(&root, cwd).await?;
        Session::open(&path).map_err(failed)?
    } else if flags.continue_last {
        match paths::latest_for_cwd(&root, cwd).map_err(failed)? {
            Some(path) => Session::open(&path).map_err(failed)?,
            None => new_session(&root, cwd, &cwd_text)?,
        }
    } else if let Some(file) = &flags.session_file {
        Session::open_or_create(file, &cwd_text).map_err(failed)?
    } else {
        new_session(&root, cwd, &cwd_text)?
    };
    Ok(OpenedSession {
        session,
        guard: None,
    })
}

pub fn new_session(root: &Path, cwd: &Path, cwd_text: &str) -> Result<Session, CliError> {
    let dir = paths::project_dir(root, cwd).map_err(|e| CliError::Failed(e.to_string()))?;
    Session::create(&dir, cwd_text).map_err(|e| CliError::Failed(e.to_string()))
}

/// The interactive picker: needs stdin and stdout to be terminals.
async fn pick(root: &Path, cwd: &Path) -> Result<PathBuf, CliError> {
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        return Err(CliError::Usage(
            "session selector requires a terminal; use gg resume <id-or-path>".to_string(),
        ));
    }
    let sessions = paths::list_sessions(root, cwd).map_err(|e| CliError::Failed(e.to_string()))?;
    if sessions.is_empty() {
        return Err(CliError::Failed("no sessions found".to_string()));
    }
    for (i, s) in sessions.iter().enumerate() {
        println!(
            "[{}] {}  {}  {} msgs  {}",
            i + 1,
            visible_inline(&s.id),
            s.updated,
            s.messages,
            visible_inline(s.name.as_deref().filter(|n| !n.is_empty()).unwrap_or("-"))
        );
        if !s.preview.is_empty() {
            println!("    {}", visible_inline(&s.preview));
        }
    }
    print!("Select session [1-{}] (empty to cancel): ", sessions.len());
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    let choice = line.trim();
    if choice.is_empty() {
        ::sandbox::leftovers::remove_all();
        std::process::exit(0);
    }
    choice
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=sessions.len()).contains(n))
        .map(|n| sessions[n - 1].path.clone())
        .ok_or_else(|| CliError::Usage(format!("invalid selection \"{choice}\"")))
}

/// `gg sessions list`.
pub fn list(session_dir: Option<&Path>) -> ExitCode {
    let result = (|| -> Result<Vec<paths::SessionSummary>, String> {
        let root = paths::root_from_env(session_dir).map_err(|e| e.to_string())?;
        let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
        paths::list_sessions(&root, &cwd).map_err(|e| e.to_string())
    })();
    match result {
        Ok(sessions) if sessions.is_empty() => {
            println!("no sessions found");
            ExitCode::SUCCESS
        }
        Ok(sessions) => {
            println!("ID\tUPDATED\tMESSAGES\tNAME\tPATH\tPREVIEW");
            for s in sessions {
                // Names and previews come from session files, which the model wrote into.
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{}",
                    visible_inline(&s.id),
                    s.updated,
                    s.messages,
                    visible_inline(s.name.as_deref().filter(|n| !n.is_empty()).unwrap_or("-")),
                    visible_inline(&s.path.display().to_string()),
                    visible_inline(&s.preview)
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gg sessions list: {e}");
            ExitCode::from(1)
        }
    }
}

/// A setting changed mid-session, as `gg audit` shows it: in JSON one line
/// `{"timestamp", "policyChange": {"name", "setting", "from", "to"}}` before the tool-call rows.
#[derive(serde::Serialize)]
struct PolicyChange {
    timestamp: String,
    #[serde(rename = "policyChange")]
    change: PolicyChangeFields,
}

#[derive(serde::Serialize)]
struct PolicyChangeFields {
    name: String,
    setting: String,
    from: String,
    to: String,
}

/// `gg audit [SESSION] [--json]`: every tool call of a session with its classification,
/// decision and sandbox level; the text form also lists the settings changed mid-session.
pub fn audit(target: Option<&str>, json: bool, session_dir: Option<&Path>) -> ExitCode {
    let result = (|| -> Result<(Vec<session::ToolCallAudit>, Vec<PolicyChange>), String> {
        let root = paths::root_from_env(session_dir).map_err(|e| e.to_string())?;
        let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
        let path = match target {
            Some(t) => paths::resolve_target(&root, &cwd, t, true).map_err(|e| e.to_string())?,
            None => paths::latest_for_cwd(&root, &cwd)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| "no sessions found".to_string())?,
        };
        let transcript = session::load(&path).map_err(|e| e.to_string())?;
        let changes = transcript
            .entries()
            .iter()
            .filter_map(|entry| match &entry.kind {
                session::EntryKind::Policy {
                    name,
                    setting,
                    from,
                    to,
                } => Some(PolicyChange {
                    timestamp: entry.timestamp.clone(),
                    change: PolicyChangeFields {
                        name: name.clone(),
                        setting: setting.clone(),
                        from: from.clone(),
                        to: to.clone(),
                    },
                }),
                _ => None,
            })
            .collect();
        Ok((session::audit_trail(&transcript), changes))
    })();
    let (rows, changes) = match result {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("gg audit: {e}");
            return ExitCode::from(1);
        }
    };
    let mut out = std::io::stdout().lock();
    for change in &changes {
        if json {
            let _ = serde_json::to_writer(&mut out, change);
            let _ = out.write_all(b"\n");
        } else {
            let line = format!(
                "{}  policy  {}: {} -> {} (changed in the session)\n",
                change.timestamp, change.change.setting, change.change.from, change.change.to
            );
            let _ = out.write_all(crate::display::visible(&line).as_bytes());
        }
    }
    for row in &rows {
        // Arguments, reasons and errors come from the model and its tools: escaped as a whole.
        let mut text = String::new();
        if json {
            let _ = serde_json::to_writer(&mut out, row);
            let _ = out.write_all(b"\n");
            continue;
        }
        let audit = row.audit.clone().unwrap_or_default();
        let class = audit
            .classification
            .as_ref()
            .map(|c| c.verdict.clone())
            .unwrap_or_else(|| "-".to_string());
        let decision = audit
            .decision
            .as_ref()
            .map(|d| {
                format!(
                    "{} by {} ({}{})",
                    d.action,
                    d.decided_by,
                    d.rule.as_deref().unwrap_or("-"),
                    if d.mode.is_empty() {
                        String::new()
                    } else {
                        format!(", mode {}", d.mode)
                    }
                )
            })
            .unwrap_or_else(|| "-".to_string());
        let sandbox = audit
            .sandbox
            .as_ref()
            .map(|s| s.level.clone())
            .unwrap_or_else(|| "-".to_string());
        let decision = match &audit.origin {
            Some(origin) => format!("{decision}, from {origin}"),
            None => decision,
        };
        let _ = writeln!(
            text,
            "{}  {}  {}  status={:?}\n  classification: {class}\n  decision: {decision}\n  sandbox: {sandbox}\n  arguments: {}",
            row.timestamp, row.tool, row.call_id, row.status, row.arguments
        );
        if let Some(c) = &audit.classification {
            for r in &c.reasons {
                let _ = writeln!(text, "    - {}: {}", r.rule, r.message);
            }
        }
        if let Some(n) = &audit.network {
            let _ = writeln!(out, "  network: {}", n.mode);
            for r in &n.refused {
                let _ = writeln!(
                    out,
                    "    - refused {}:{} ({})",
                    r.host.escape_debug(),
                    r.port,
                    r.rule
                );
            }
        }
        if let Some(b) = &audit.browser {
            let status = b
                .status
                .map(|s| format!(" (status {s})"))
                .unwrap_or_default();
            let _ = writeln!(text, "  browser: {}{status}", b.url);
            if let Some(shot) = &b.screenshot {
                let _ = writeln!(text, "  screenshot: {shot}");
            }
        }
        if let Some(e) = &row.error {
            let _ = writeln!(text, "  error: {}", e.lines().next().unwrap_or(""));
        }
        let _ = writeln!(text);
        let _ = out.write_all(crate::display::visible(&text).as_bytes());
    }
    if rows.is_empty() && changes.is_empty() && !json {
        let _ = writeln!(out, "no tool calls in this session");
    }
    ExitCode::SUCCESS
}
