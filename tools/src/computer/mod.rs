//! Computer tools: the machine itself, for the agent (Linux and macOS).
//!
//! | tool | class |
//! |---|---|
//! | `computer_info` | read-only |
//! | `process_list` | read-only (command lines redacted) |
//! | `process_kill` | normal for the session's own processes, dangerous for any other, refused for pid ≤ 1, gg, its ancestors and ggd |
//! | `open` | normal for files inside the working directory and http(s) URLs to public or loopback hosts, dangerous for anything else |
//! | `clipboard_read` | normal (a clipboard often holds a secret) |
//! | `clipboard_write` | normal |
//! | `notify` | read-only |
//!
//! Each crosses from the agent to the person's desktop, so each is described here (class, reason,
//! preview) and decided by the same approval table as bash; nothing runs before the gate allows
//! it. They exist only when `tools.computer` is enabled in config.

mod desktop;
mod error;
mod info;
pub mod procs;
pub mod redact;
pub mod target;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use classifier::Class;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

pub use error::ComputerError;
pub use procs::{SESSION_TAG_ENV, SessionTag};

/// Tool output is cut to this many characters, with a marker.
pub const MAX_OUTPUT_CHARS: usize = 10_000;
/// How long the desktop opener may take.
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);

/// The tools' names, in the order the model sees them.
pub const TOOL_NAMES: &[&str] = &[
    "computer_info",
    "process_list",
    "process_kill",
    "open",
    "notify",
    "clipboard_read",
    "clipboard_write",
];

/// Whether `name` is one of the computer tools.
pub fn is_computer_tool(name: &str) -> bool {
    TOOL_NAMES.contains(&name)
}

/// Definitions for the model: `(name, description, JSON schema)`.
pub fn specs() -> Vec<(&'static str, &'static str, serde_json::Value)> {
    vec![
        (
            "computer_info",
            "This machine: OS, kernel, CPU, memory, disks (mount, size, free), load, uptime, hostname.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        (
            "process_list",
            "Running processes (pid, parent, user, CPU %, memory, start time, program name). `*` marks processes this session started. Full command lines (redacted) need command_lines: true, which is asked like a normal command.",
            json!({"type": "object", "properties": {
                "limit": {"type": "integer", "minimum": 1, "maximum": procs::MAX_LIST, "description": "Rows (default 50, at most 200)"},
                "command_lines": {"type": "boolean", "description": "Show full command lines (redacted) instead of program names; needs approval"},
                "sort_by": {"type": "string", "enum": ["cpu", "mem"], "description": "Order (default cpu)"}},
                "additionalProperties": false}),
        ),
        (
            "process_kill",
            "Send SIGTERM (default) or SIGKILL to a process. Processes this session started need approval like other commands; any other process always needs the person.",
            json!({"type": "object", "properties": {
                "pid": {"type": "integer"},
                "signal": {"type": "string", "enum": ["term", "kill"]}},
                "required": ["pid"], "additionalProperties": false}),
        ),
        (
            "open",
            "Open a file in the working directory or an http(s) URL with the desktop's default application.",
            json!({"type": "object", "properties": {
                "target": {"type": "string", "maxLength": target::MAX_TARGET_CHARS, "description": "Relative path, absolute path or URL"}},
                "required": ["target"], "additionalProperties": false}),
        ),
        (
            "notify",
            "Show a desktop notification to the person.",
            json!({"type": "object", "properties": {
                "title": {"type": "string", "maxLength": desktop::MAX_TITLE},
                "body": {"type": "string", "maxLength": desktop::MAX_BODY}},
                "required": ["title"], "additionalProperties": false}),
        ),
        (
            "clipboard_read",
            "Read the text on the person's clipboard.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        (
            "clipboard_write",
            "Put text on the person's clipboard.",
            json!({"type": "object", "properties": {
                "text": {"type": "string", "maxLength": desktop::MAX_CLIPBOARD_WRITE}},
                "required": ["text"], "additionalProperties": false}),
        ),
    ]
}

/// Which tools can work on this machine now, with the reason for each that cannot (no display,
/// no session bus, no opener). ggd advertises this.
pub fn availability() -> Vec<(&'static str, Option<String>)> {
    TOOL_NAMES
        .iter()
        .map(|&name| {
            let missing = match name {
                "clipboard_read" | "clipboard_write" => desktop::clipboard_missing(),
                "notify" => desktop::notifications_missing(),
                "open" => opener()
                    .is_none()
                    .then(|| "no desktop opener (/usr/bin/xdg-open)".to_string()),
                _ => None,
            };
            (name, missing)
        })
        .collect()
}

/// The state the tools keep for one session.
pub struct ComputerTools {
    cwd: PathBuf,
    tag: SessionTag,
    clipboard: desktop::Clipboard,
}

/// A call, parsed, classified and pinned (a kill to one process incarnation, an open to one
/// resolved target), waiting for the gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComputerCall {
    pub class: Class,
    /// Why it is in its class (one line; shown in the approval prompt and the audit).
    pub reason: String,
    /// One line for lists and events.
    pub summary: String,
    /// What a person needs to decide.
    pub details: String,
    plan: Plan,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Plan {
    Info,
    List {
        limit: usize,
        sort_by: procs::SortBy,
        /// Full command lines rather than program names.
        commands: bool,
    },
    Kill(procs::KillPlan),
    Open(target::OpenTarget),
    Notify {
        title: String,
        body: String,
    },
    ClipboardRead,
    ClipboardWrite {
        text: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    limit: Option<i64>,
    sort_by: Option<String>,
    /// Full command lines (redacted) instead of program names: asked, as a normal call.
    #[serde(default)]
    command_lines: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KillArgs {
    pid: i64,
    signal: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenArgs {
    target: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NotifyArgs {
    title: String,
    #[serde(default)]
    body: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

fn args<T: for<'de> Deserialize<'de>>(arguments: &str) -> Result<T, ComputerError> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    serde_json::from_str(text).map_err(ComputerError::Arguments)
}

fn too_long(what: &'static str, text: &str, max: usize) -> Result<(), ComputerError> {
    if text.chars().count() > max {
        Err(ComputerError::TooLong { what, max })
    } else {
        Ok(())
    }
}

impl ComputerTools {
    pub fn new(cwd: &Path, tag: SessionTag) -> ComputerTools {
        ComputerTools {
            cwd: cwd.to_path_buf(),
            tag,
            clipboard: desktop::Clipboard::default(),
        }
    }

    /// The tag every process started by this session's tools carries in its environment.
    pub fn session_tag(&self) -> &SessionTag {
        &self.tag
    }

    /// Parses and classifies a call. Nothing runs here; an error becomes the tool's result
    /// (refusals such as killing pid 1 never reach a person).
    pub fn describe(&self, name: &str, arguments: &str) -> Result<ComputerCall, ComputerError> {
        let call = |class, reason: String, summary: String, details: String, plan| ComputerCall {
            class,
            reason,
            summary,
            details,
            plan,
        };
        match name {
            "computer_info" => {
                args::<NoArgs>(arguments)?;
                Ok(call(
                    Class::ReadOnly,
                    "reads system information".into(),
                    "computer_info".into(),
                    String::new(),
                    Plan::Info,
                ))
            }
            "process_list" => {
                let a: ListArgs = args(arguments)?;
                let limit = match a.limit {
                    None => procs::DEFAULT_LIST,
                    Some(n) if (1..=procs::MAX_LIST as i64).contains(&n) => n as usize,
                    Some(n) => {
                        return Err(ComputerError::BadValue(format!(
                            "limit must be 1 to {}, not {n}",
                            procs::MAX_LIST
                        )));
                    }
                };
                let sort_by = procs::SortBy::parse(a.sort_by.as_deref())?;
                let commands = a.command_lines;
                // Other processes' command lines carry their secrets in shapes no redaction
                // list keeps up with (headers, `-p` values, connection strings): by default
                // only the program's name is shown; full command lines are asked for.
                let (class, reason) = if commands {
                    (
                        Class::Normal,
                        "lists processes with their full command lines (redacted), which can \
                         hold other programs' secrets",
                    )
                } else {
                    (
                        Class::ReadOnly,
                        "lists processes by program name (no command lines)",
                    )
                };
                Ok(call(
                    class,
                    reason.into(),
                    format!(
                        "process_list limit={limit}{}",
                        if commands { " command_lines" } else { "" }
                    ),
                    String::new(),
                    Plan::List {
                        limit,
                        sort_by,
                        commands,
                    },
                ))
            }
            "process_kill" => {
                let a: KillArgs = args(arguments)?;
                let signal = procs::KillSignal::parse(a.signal.as_deref())?;
                let plan = procs::plan_kill(a.pid, signal, &self.tag)?;
                Ok(call(
                    plan.class,
                    plan.reason.clone(),
                    format!("process_kill {} ({})", plan.pid, signal.as_str()),
                    format!(
                        "signal: SIG{}\npid: {}\nprocess: {}\n{}",
                        signal.as_str().to_ascii_uppercase(),
                        plan.pid,
                        plan.shown,
                        plan.reason
                    ),
                    Plan::Kill(plan),
                ))
            }
            "open" => {
                let a: OpenArgs = args(arguments)?;
                let target = target::classify(&a.target, &self.cwd)?;
                Ok(call(
                    target.class,
                    target.reason.clone(),
                    format!("open {}", target.argument),
                    format!("open: {}\n{}", target.argument, target.reason),
                    Plan::Open(target),
                ))
            }
            "notify" => {
                let a: NotifyArgs = args(arguments)?;
                too_long("title", &a.title, desktop::MAX_TITLE)?;
                too_long("body", &a.body, desktop::MAX_BODY)?;
                Ok(call(
                    Class::ReadOnly,
                    "shows a desktop notification".into(),
                    format!("notify {}", a.title),
                    String::new(),
                    Plan::Notify {
                        title: a.title,
                        body: a.body,
                    },
                ))
            }
            "clipboard_read" => {
                args::<NoArgs>(arguments)?;
                Ok(call(
                    Class::Normal,
                    "reads the clipboard, which often holds a secret".into(),
                    "clipboard_read".into(),
                    "read the text on your clipboard and send it to the model".into(),
                    Plan::ClipboardRead,
                ))
            }
            "clipboard_write" => {
                let a: WriteArgs = args(arguments)?;
                too_long("text", &a.text, desktop::MAX_CLIPBOARD_WRITE)?;
                let preview: String = a.text.chars().take(1200).collect();
                Ok(call(
                    Class::Normal,
                    "replaces what is on the clipboard".into(),
                    format!("clipboard_write ({} characters)", a.text.chars().count()),
                    format!("put on your clipboard:\n{preview}"),
                    Plan::ClipboardWrite { text: a.text },
                ))
            }
            other => Err(ComputerError::UnknownTool(other.to_string())),
        }
    }

    /// Runs a call the gate allowed. Blocking work runs on the blocking pool.
    pub async fn execute(
        self: &Arc<Self>,
        call: &ComputerCall,
        cancel: &CancellationToken,
    ) -> Result<String, ComputerError> {
        if cancel.is_cancelled() {
            return Err(ComputerError::Cancelled(
                "tool not executed: context canceled",
            ));
        }
        let this = Arc::clone(self);
        let plan = call.plan.clone();
        let blocking = |f: BlockingWork| async move {
            tokio::task::spawn_blocking(move || f(&this))
                .await
                .map_err(ComputerError::Unfinished)?
        };
        let text = match plan {
            Plan::Info => blocking(Box::new(|_| Ok(info::describe()))).await?,
            Plan::List {
                limit,
                sort_by,
                commands,
            } => {
                blocking(Box::new(move |t| {
                    Ok(procs::list(limit, sort_by, commands, &t.tag))
                }))
                .await?
            }
            Plan::Kill(plan) => blocking(Box::new(move |t| procs::kill(&plan, &t.tag))).await?,
            Plan::Open(target) => open(&target.argument, &self.cwd, cancel).await?,
            Plan::Notify { title, body } => {
                desktop::notify(&title, &body).await?;
                format!("notification shown: {title}")
            }
            Plan::ClipboardRead => blocking(Box::new(|t| t.clipboard.read())).await?,
            Plan::ClipboardWrite { text } => {
                let count = text.chars().count();
                blocking(Box::new(move |t| {
                    t.clipboard.write(&text).map(|()| String::new())
                }))
                .await?;
                format!("{count} characters put on the clipboard")
            }
        };
        Ok(truncate(text))
    }
}

/// Work that must not stall the runtime's workers: /proc walks, the X11 clipboard.
type BlockingWork = Box<dyn FnOnce(&ComputerTools) -> Result<String, ComputerError> + Send>;

fn truncate(text: String) -> String {
    let mark = format!("\n[output truncated at {MAX_OUTPUT_CHARS} characters]");
    crate::registry::clip_chars_marked(text, MAX_OUTPUT_CHARS, &mark)
}

/// The desktop's opener: `xdg-open` on Linux, `open` on macOS, from fixed system paths only.
/// It runs outside the sandbox, so it is never looked up through `PATH`: a relative entry or a
/// user-writable one (`node_modules/.bin`, `~/.local/bin`) would let a planted `xdg-open` run
/// unsandboxed.
pub fn opener() -> Option<PathBuf> {
    const PLACES: &[&str] = if cfg!(target_os = "macos") {
        &["/usr/bin/open"]
    } else {
        &[
            "/usr/bin/xdg-open",
            "/bin/xdg-open",
            "/usr/local/bin/xdg-open",
        ]
    };
    PLACES
        .iter()
        .map(PathBuf::from)
        .find(|candidate| candidate.is_file())
}

/// The desktop's opener for `target`, as gg starts it (the `open` tool, `gg web`, `gg
/// connect`): unconfined, as the person's own click would be, with nothing secret in its
/// environment. `cwd` is the session's working directory: the opener (a shell script on Linux)
/// looks its helpers up through `PATH`, so it gets only the entries outside what commands write
/// ([`sandbox::host_program::trusted_path`]): an attacker pass planted `run-mailcap` in the
/// project's virtual environment, on `PATH`, and `open README.md` ran it with every secret.
/// Its standard streams are null. `None` without an opener.
pub fn opener_command(
    target: impl AsRef<std::ffi::OsStr>,
    cwd: &Path,
) -> Option<std::process::Command> {
    let mut command = std::process::Command::new(opener()?);
    command
        .arg(target)
        .env_clear()
        .envs(crate::bash::scrubbed_env(&[]))
        .env("PATH", sandbox::host_program::trusted_path(&[cwd]))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    Some(command)
}

/// The `open` tool: `argument` through [`opener_command`], its error output kept for the
/// answer, bounded by [`OPEN_TIMEOUT`] and the turn's `cancel`.
async fn open(
    argument: &str,
    cwd: &Path,
    cancel: &CancellationToken,
) -> Result<String, ComputerError> {
    let opener = opener_command(argument, cwd).ok_or_else(|| {
        ComputerError::Desktop("no desktop opener (/usr/bin/xdg-open)".to_string())
    })?;
    let program = PathBuf::from(opener.get_program());
    let mut command = tokio::process::Command::from(opener);
    command
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let child = command.spawn().map_err(|e| {
        ComputerError::Desktop(format!("could not start {}: {e}", program.display()))
    })?;
    let output = tokio::select! {
        () = cancel.cancelled() => return Err(ComputerError::Cancelled("open canceled")),
        out = tokio::time::timeout(OPEN_TIMEOUT, child.wait_with_output()) => out,
    };
    match output {
        Err(_) => Err(ComputerError::Desktop(format!(
            "{} did not finish within {} s",
            program.display(),
            OPEN_TIMEOUT.as_secs()
        ))),
        Ok(Err(e)) => Err(ComputerError::Desktop(format!(
            "{}: {e}",
            program.display()
        ))),
        Ok(Ok(out)) if out.status.success() => Ok(format!("opened {argument}")),
        Ok(Ok(out)) => Err(ComputerError::Desktop(format!(
            "{} failed ({}): {}",
            program.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_match_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let tools = ComputerTools::new(dir.path(), SessionTag::new());
        let class = |name: &str, args: &str| {
            tools
                .describe(name, args)
                .map(|c| c.class)
                .map_err(|e| e.to_string())
        };
        assert_eq!(class("computer_info", "{}"), Ok(Class::ReadOnly));
        assert_eq!(class("computer_info", ""), Ok(Class::ReadOnly));
        assert_eq!(class("process_list", r#"{"limit":5}"#), Ok(Class::ReadOnly));
        assert_eq!(class("notify", r#"{"title":"done"}"#), Ok(Class::ReadOnly));
        assert_eq!(class("clipboard_read", "{}"), Ok(Class::Normal));
        assert_eq!(
            class("clipboard_write", r#"{"text":"x"}"#),
            Ok(Class::Normal)
        );
        assert_eq!(
            class("open", r#"{"target":"https://crates.io"}"#),
            Ok(Class::Normal)
        );
        // Off the network allow-list: what the URL carries reaches that host.
        assert_eq!(
            class("open", r#"{"target":"https://docs.rs"}"#),
            Ok(Class::Dangerous)
        );
        assert_eq!(
            class("open", r#"{"target":"/etc/passwd"}"#),
            Ok(Class::Dangerous)
        );
        assert!(class("process_kill", r#"{"pid":1}"#).is_err());
        assert!(class("process_list", r#"{"limit":500}"#).is_err());
        assert!(class("process_list", r#"{"bogus":1}"#).is_err());
        assert!(class("notify", &format!(r#"{{"title":"{}"}}"#, "t".repeat(201))).is_err());
    }

    #[test]
    fn output_is_cut_with_a_marker() {
        let cut = truncate("é".repeat(MAX_OUTPUT_CHARS + 5));
        assert!(cut.ends_with("characters]"));
        assert_eq!(cut.chars().filter(|c| *c == 'é').count(), MAX_OUTPUT_CHARS);
    }
}
