//! The built-in tools as the agent sees them: their definitions for the model, how each call is
//! described for approval (`prepare`), and how it runs (`execute`).
//!
//! `prepare` is where a bash command meets the security chain: it is classified here, and the
//! classification, together with any forbidding policy rule, travels with the call to the
//! approval gate. Nothing runs in `prepare`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use classifier::Verdict;
use policies::{EffectivePolicy, Forbidden};
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::bash;
use super::files::{self, ToolFailure};
use super::paths::Workspace;

/// A call as the model made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// Raw JSON arguments.
    pub arguments: String,
}

/// A tool's definition for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub parameters: serde_json::Value,
}

/// Whether bash runs sandboxed, and how.
#[derive(Debug, Clone)]
pub enum SandboxSetting {
    Off,
    On {
        backend: sandbox::Backend,
        network: sandbox::Network,
    },
}

impl SandboxSetting {
    /// What `--sandbox` (or `"sandbox": true`, or a job's default) turns on: the strongest level
    /// available, network on as the design says.
    pub fn enabled(on: bool) -> SandboxSetting {
        if on {
            SandboxSetting::On {
                backend: sandbox::Backend::Auto,
                network: sandbox::Network::On,
            }
        } else {
            SandboxSetting::Off
        }
    }
}

/// A tool that is not built in (MCP servers, tests). Every external tool is approval-gated.
pub trait ExternalTool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    fn parameters(&self) -> serde_json::Value;
    /// One line for approval prompts and events, e.g. `MCP server.tool`.
    fn summary(&self, arguments: &str) -> String;
    fn execute<'a>(
        &'a self,
        arguments: &'a str,
        cancel: &'a CancellationToken,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Outcome> + Send + 'a>>;
}

impl std::fmt::Debug for dyn ExternalTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalTool")
            .field("name", &self.name())
            .finish()
    }
}

/// Everything the tools need for one working directory. Built once per conversation.
pub struct ToolBox {
    pub workspace: Workspace,
    pub policy: EffectivePolicy,
    pub classifier_ctx: classifier::Context,
    pub sandbox: SandboxSetting,
    /// Secret-looking environment variable names that may nevertheless reach children.
    pub env_allow: Vec<String>,
    pub external: Vec<std::sync::Arc<dyn ExternalTool>>,
}

/// The kind of call, as the approval table sees it.
#[derive(Debug, Clone)]
pub enum CallKind {
    ReadType,
    /// A write into the agent area (`.gg/agent`).
    PreApproved {
        reason: String,
    },
    Gated,
    Bash {
        verdict: Verdict,
        forbidden: Option<Forbidden>,
        /// The script and timeout as checked and shown for approval; execution runs exactly
        /// these, without reading the arguments again.
        command: String,
        timeout: Duration,
    },
}

/// A call resolved and described, ready for the approval gate.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub call: ToolCall,
    pub kind: CallKind,
    /// One line for lists and events.
    pub summary: String,
    /// What a person needs to decide: the command with its classification, or a diff preview.
    pub details: String,
    /// The exact thing a "yes, for this session" answer covers.
    pub grant_key: String,
}

impl Prepared {
    pub fn policy_call(&self) -> policies::Call<'_> {
        match &self.kind {
            CallKind::ReadType => policies::Call::ReadType {
                tool: &self.call.name,
            },
            CallKind::PreApproved { reason } => policies::Call::PreApproved {
                tool: &self.call.name,
                reason,
            },
            CallKind::Gated => policies::Call::Gated {
                tool: &self.call.name,
            },
            CallKind::Bash {
                verdict, forbidden, ..
            } => policies::Call::Bash {
                class: verdict.class,
                forbidden: forbidden.as_ref(),
            },
        }
    }

    pub fn verdict(&self) -> Option<&Verdict> {
        match &self.kind {
            CallKind::Bash { verdict, .. } => Some(verdict),
            _ => None,
        }
    }

    /// Only `read` and `grep` may run alongside other calls.
    pub fn parallel_safe(&self) -> bool {
        matches!(self.call.name.as_str(), "read" | "grep")
    }
}

/// The result of running a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub text: String,
    pub is_error: bool,
    /// The sandbox level bash ran under (`bwrap`, `landlock`, `seatbelt`, `none`, or `off`).
    pub sandbox_level: Option<String>,
    pub sandbox_warning: Option<String>,
}

impl Outcome {
    pub fn error(text: impl Into<String>) -> Outcome {
        Outcome {
            text: text.into(),
            is_error: true,
            sandbox_level: None,
            sandbox_warning: None,
        }
    }

    fn from_result(result: Result<String, ToolFailure>) -> Outcome {
        match result {
            Ok(text) => Outcome {
                text,
                is_error: false,
                sandbox_level: None,
                sandbox_warning: None,
            },
            Err(e) => Outcome::error(e.0),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BashArgs {
    command: String,
    /// Seconds.
    timeout: Option<f64>,
}

/// The definitions of the built-in tools, in the order the model sees them.
pub fn builtin_specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read",
            description: "Read a text file in the working directory. Returns up to 2000 lines / 50 KiB starting at `offset` (1-based); page with offset/limit.",
            parameters: json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "File path, relative to the working directory"},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)"},
                "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines"}},
                "required": ["path"], "additionalProperties": false}),
        },
        ToolSpec {
            name: "list",
            description: "List a directory in the working directory: sorted names, directories end with `/`.",
            parameters: json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "Directory, relative to the working directory (default `.`)"}},
                "additionalProperties": false}),
        },
        ToolSpec {
            name: "grep",
            description: "Search files under a path for a fixed string. Returns `path:line: text` lines (default 50, max 200). Skips binary files, files over 1 MiB and .git.",
            parameters: json!({"type": "object", "properties": {
                "pattern": {"type": "string", "description": "Text to search for (not a regular expression)"},
                "path": {"type": "string", "description": "File or directory to search (default `.`)"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 200}},
                "required": ["pattern"], "additionalProperties": false}),
        },
        ToolSpec {
            name: "bash",
            description: "Run a bash command in the working directory. Output keeps the last 50 KiB. Read-only commands run at once; others may need approval, and dangerous ones always do.",
            parameters: json!({"type": "object", "properties": {
                "command": {"type": "string", "description": "The command or script"},
                "timeout": {"type": "number", "description": "Seconds before the command is killed (default 120)"}},
                "required": ["command"], "additionalProperties": false}),
        },
        ToolSpec {
            name: "edit",
            description: "Edit a file with exact text replacements. Each oldText must match exactly once; edits must not overlap. Line endings are preserved.",
            parameters: json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "edits": {"type": "array", "minItems": 1, "items": {"type": "object", "properties": {
                    "oldText": {"type": "string"}, "newText": {"type": "string"}},
                    "required": ["oldText", "newText"], "additionalProperties": false}}},
                "required": ["path", "edits"], "additionalProperties": false}),
        },
        ToolSpec {
            name: "write",
            description: "Create or overwrite a file (parent directories are created). The write is atomic.",
            parameters: json!({"type": "object", "properties": {
                "path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"], "additionalProperties": false}),
        },
    ]
}

/// The directory whose writes need no approval: the agent's own scratch area.
pub const AGENT_AREA: &str = ".gg/agent";

impl ToolBox {
    /// Opens `cwd` and loads the policy files and classifier inputs for it. A malformed policy
    /// file is an error: gg does not run with a half-read policy.
    pub fn new(
        cwd: &Path,
        sandbox: SandboxSetting,
        env_allow: Vec<String>,
    ) -> Result<ToolBox, String> {
        let workspace = Workspace::open(cwd)
            .map_err(|e| format!("working directory {}: {e}", cwd.display()))?;
        let policy =
            super::security::load_policy(workspace.root(), None).map_err(|e| e.to_string())?;
        let classifier_ctx =
            super::security::classifier_context(workspace.root(), policy.classifier_rules());
        Ok(ToolBox {
            workspace,
            policy,
            classifier_ctx,
            sandbox,
            env_allow,
            external: Vec::new(),
        })
    }

    /// Every tool definition the model sees: built-ins, then external tools.
    pub fn specs(&self) -> Vec<(String, String, serde_json::Value)> {
        let mut specs: Vec<_> = builtin_specs()
            .into_iter()
            .map(|s| (s.name.to_string(), s.description.to_string(), s.parameters))
            .collect();
        for tool in &self.external {
            specs.push((
                tool.name().to_string(),
                tool.description().to_string(),
                tool.parameters(),
            ));
        }
        specs
    }

    fn external(&self, name: &str) -> Option<&std::sync::Arc<dyn ExternalTool>> {
        self.external.iter().find(|t| t.name() == name)
    }

    pub fn cwd(&self) -> &Path {
        self.workspace.root()
    }

    /// Resolves and describes a call. An error here becomes the tool result
    /// `approval request for tool "X" failed: <err>` (or `unknown tool "X"`).
    pub fn prepare(&self, call: ToolCall) -> Result<Prepared, String> {
        let failed = |e: String| format!("approval request for tool \"{}\" failed: {e}", call.name);
        let (kind, summary, details, grant_key) = match call.name.as_str() {
            "read" | "list" | "grep" => {
                let summary = format!("{} {}", call.name, truncate(&call.arguments, 120));
                (CallKind::ReadType, summary, String::new(), String::new())
            }
            "bash" => {
                let args: BashArgs = serde_json::from_str(&call.arguments)
                    .map_err(|e| failed(format!("invalid arguments: {e}")))?;
                let verdict = classifier::classify(&args.command, &self.classifier_ctx)
                    .map_err(|e| failed(e.to_string()))?;
                let forbidden = self.policy.forbidden_match(&verdict);
                let timeout = bash_timeout(args.timeout).map_err(failed)?;
                let mut details = format!(
                    "command: {}\nclassification: {}\n",
                    args.command,
                    verdict.class.as_str()
                );
                for reason in &verdict.reasons {
                    details.push_str(&format!("  - {}: {}\n", reason.rule, reason.message));
                }
                details.push_str(&format!(
                    "cwd: {}\ntimeout: {}s",
                    self.cwd().display(),
                    timeout.as_secs()
                ));
                if let SandboxSetting::On { .. } = self.sandbox {
                    details.push_str("\nsandbox: on");
                }
                let summary = format!("bash {}", truncate(&args.command, 120));
                let grant_key = format!("bash\0{}", args.command);
                (
                    CallKind::Bash {
                        verdict,
                        forbidden,
                        command: args.command,
                        timeout,
                    },
                    summary,
                    details,
                    grant_key,
                )
            }
            "write" | "edit" => {
                let target = files::target_path(&self.workspace, &call.arguments)
                    .map_err(|e| failed(e.0))?;
                let (before, after) = if call.name == "edit" {
                    let plan = files::plan_edit(&self.workspace, &call.arguments)
                        .map_err(|e| failed(e.0))?;
                    (plan.before, plan.after)
                } else {
                    #[derive(Deserialize)]
                    struct Content {
                        content: String,
                    }
                    let c: Content = serde_json::from_str(&call.arguments)
                        .map_err(|e| failed(format!("invalid arguments: {e}")))?;
                    let before = files::read_existing(&self.workspace, &target).unwrap_or_default();
                    (before, c.content)
                };
                let details = super::diff::unified(target.shown(), &before, &after);
                let summary = format!("{} {}", call.name, target.shown());
                let kind = match self.agent_area_reason(target.relative()) {
                    Some(reason) => CallKind::PreApproved { reason },
                    None => CallKind::Gated,
                };
                let grant_key = format!("{}\0{}", call.name, call.arguments);
                (kind, summary, details, grant_key)
            }
            name => match self.external(name) {
                Some(tool) => {
                    let summary = tool.summary(&call.arguments);
                    let details = truncate_chars(&call.arguments, 1200);
                    let grant_key = format!("{name}\0{}", call.arguments);
                    (CallKind::Gated, summary, details, grant_key)
                }
                None => return Err(format!("unknown tool \"{}\"", call.name)),
            },
        };
        Ok(Prepared {
            call,
            kind,
            summary,
            details,
            grant_key,
        })
    }

    /// A write target inside a real (non-symlink) `.gg/agent` directory is pre-approved. The
    /// write itself is confined like any other, so a link inside the area cannot lead out.
    fn agent_area_reason(&self, relative: &Path) -> Option<String> {
        let area = Path::new(AGENT_AREA);
        if !relative.starts_with(area) || relative == area {
            return None;
        }
        let dir = self.cwd().join(area);
        if !dir.exists() {
            let _ = std::fs::create_dir_all(self.cwd().join(".gg"));
            let mut builder = std::fs::DirBuilder::new();
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            let _ = builder.create(&dir);
        }
        let meta = std::fs::symlink_metadata(&dir).ok()?;
        let gg_meta = std::fs::symlink_metadata(self.cwd().join(".gg")).ok()?;
        (meta.is_dir() && gg_meta.is_dir()).then(|| "agent area".to_string())
    }

    /// Runs a prepared call that the gate allowed. File tools do blocking I/O, so they run on
    /// the blocking pool: parallel-safe calls then really run in parallel and never stall the
    /// runtime's workers.
    pub async fn execute(
        self: &std::sync::Arc<Self>,
        prepared: &Prepared,
        cancel: &CancellationToken,
    ) -> Outcome {
        if cancel.is_cancelled() {
            return Outcome::error("tool not executed: context canceled");
        }
        let name = prepared.call.name.as_str();
        if matches!(name, "read" | "list" | "grep" | "write" | "edit") {
            let this = std::sync::Arc::clone(self);
            let (name, args) = (name.to_string(), prepared.call.arguments.clone());
            let task = tokio::task::spawn_blocking(move || {
                let ws = &this.workspace;
                let result = match name.as_str() {
                    "read" => files::read(ws, &args),
                    "list" => files::list(ws, &args),
                    "grep" => files::grep(ws, &args),
                    "write" => files::write(ws, &args),
                    _ => files::edit(ws, &args),
                };
                Outcome::from_result(result)
            });
            return match task.await {
                Ok(outcome) => outcome,
                // Re-raise so the runner reports `tool "X" panicked: …` like any other panic.
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => Outcome::error(format!("tool did not finish: {e}")),
            };
        }
        match name {
            "bash" => self.execute_bash(prepared, cancel).await,
            other => match self.external(other) {
                Some(tool) => tool.execute(&prepared.call.arguments, cancel).await,
                None => Outcome::error(format!("unknown tool \"{other}\"")),
            },
        }
    }

    async fn execute_bash(&self, prepared: &Prepared, cancel: &CancellationToken) -> Outcome {
        let CallKind::Bash {
            verdict,
            command: script,
            timeout,
            ..
        } = &prepared.kind
        else {
            return Outcome::error("bash call was not prepared as bash");
        };
        let timeout = *timeout;
        let mut command = std::process::Command::new(bash::shell());
        command
            .arg("-lc")
            .arg(script)
            .current_dir(self.cwd())
            .env_clear()
            .envs(bash::scrubbed_env(&self.env_allow));
        if verdict.class == classifier::Class::ReadOnly {
            command.envs(bash::git_protective_env());
        }
        let (level, warning, _guard, command) = match &self.sandbox {
            SandboxSetting::Off => ("off".to_string(), None, None, command),
            SandboxSetting::On { backend, network } => {
                match sandboxed(&command, self.cwd(), *backend, *network) {
                    Ok(mut wrapped) => {
                        let outer = std::mem::replace(
                            &mut wrapped.command,
                            std::process::Command::new("/bin/false"),
                        );
                        let outer = scrub_outer(outer, &self.env_allow);
                        let level = wrapped.level.as_str().to_string();
                        let warning = wrapped.warning.clone();
                        (level, warning, Some(wrapped), outer)
                    }
                    Err(e) => return Outcome::error(format!("sandbox could not be set up: {e}")),
                }
            }
        };
        let log_dir = self.cwd().join(".gg").join("outputs");
        let output = match bash::run(command, timeout, cancel, &log_dir).await {
            Ok(o) => o,
            Err(e) => {
                return Outcome {
                    text: format!("failed to start {}: {e}", bash::shell().display()),
                    is_error: true,
                    sandbox_level: Some(level),
                    sandbox_warning: warning,
                };
            }
        };
        let mut text = String::new();
        if let Some(w) = &warning {
            text.push_str(w);
            text.push('\n');
        }
        text.push_str(&output.text);
        Outcome {
            text,
            is_error: output.is_error(),
            sandbox_level: Some(level),
            sandbox_warning: warning,
        }
    }
}

/// The wrapper process (bwrap, or gg's helper) would otherwise inherit gg's whole environment:
/// `Command` cannot report `env_clear`, so the wrapper's environment is rebuilt here from the
/// scrubbed parent environment plus whatever the wrapper set explicitly.
fn scrub_outer(mut outer: std::process::Command, allow: &[String]) -> std::process::Command {
    let explicit: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)> = outer
        .get_envs()
        .map(|(k, v)| (k.to_os_string(), v.map(|v| v.to_os_string())))
        .collect();
    outer.env_clear().envs(bash::scrubbed_env(allow));
    for (k, v) in explicit {
        match v {
            Some(v) => outer.env(k, v),
            None => outer.env_remove(k),
        };
    }
    outer
}

fn sandboxed(
    command: &std::process::Command,
    cwd: &Path,
    backend: sandbox::Backend,
    network: sandbox::Network,
) -> Result<sandbox::Wrapped, sandbox::SandboxError> {
    let mut policy = sandbox::Policy::new(cwd)?;
    policy.network = network;
    sandbox::wrap(command, &policy, backend)
}

fn bash_timeout(seconds: Option<f64>) -> Result<Duration, String> {
    match seconds {
        None => Ok(bash::DEFAULT_TIMEOUT),
        Some(s) if s.is_finite() && s > 0.0 && s <= 24.0 * 3600.0 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(format!(
            "timeout must be between 0 and 86400 seconds, not {s}"
        )),
    }
}

/// At most `max` characters (not bytes), with `...` when cut: the MCP argument preview limit is
/// stated in characters.
fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

/// Where bash logs go; exposed for the CLI's messages.
pub fn outputs_dir(cwd: &Path) -> PathBuf {
    cwd.join(".gg").join("outputs")
}
