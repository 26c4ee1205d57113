//! What the tools share: a call as the model made it, the result of running one, the built-in
//! tools' definitions for the model, and the sandbox setting.
//!
//! How a call is described, decided and run is gg's `agent::chain`; the built-in tools plug into
//! it in `agent::tools::builtin`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use super::bash;
use super::files::ToolFailure;

/// A call as the model made it: the provider's type, the one `ToolCall` of the agent (the
/// session stores its own form, with the arguments as raw JSON).
pub use provider::ToolCall;

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
        /// The session's network policy and its proxy (shared by bash and MCP servers).
        network: std::sync::Arc<super::network::SessionNetwork>,
    },
}

impl SandboxSetting {
    /// What `--sandbox` (or `"sandbox": true`, or a job's default) turns on: the strongest level
    /// available, with the default network policy (allow-list).
    pub fn enabled(on: bool) -> SandboxSetting {
        SandboxSetting::with_network(on, super::network::NetworkPolicy::default())
    }

    /// The strongest level available with `network`, or off.
    pub fn with_network(on: bool, network: super::network::NetworkPolicy) -> SandboxSetting {
        if on {
            SandboxSetting::On {
                backend: sandbox::Backend::Auto,
                network: std::sync::Arc::new(super::network::SessionNetwork::new(network)),
            }
        } else {
            SandboxSetting::Off
        }
    }

    /// Whether `other` is this very setting: the same level and the same session network (its
    /// proxy), not merely an equal policy.
    pub fn is_same(&self, other: &SandboxSetting) -> bool {
        match (self, other) {
            (SandboxSetting::Off, SandboxSetting::Off) => true,
            (
                SandboxSetting::On { backend, network },
                SandboxSetting::On {
                    backend: other_backend,
                    network: other_network,
                },
            ) => backend == other_backend && std::sync::Arc::ptr_eq(network, other_network),
            (SandboxSetting::Off, SandboxSetting::On { .. })
            | (SandboxSetting::On { .. }, SandboxSetting::Off) => false,
        }
    }

    /// The system prompt's line about the network, when the sandbox enforces a policy.
    pub fn network_prompt_line(&self) -> Option<String> {
        match self {
            SandboxSetting::Off => None,
            SandboxSetting::On { network, .. } => Some(network.policy.prompt_line(true)),
        }
    }
}

/// The audit's suffix of a level a command ran read-only at (`bwrap+read-only`, …).
pub const READ_ONLY_SUFFIX: &str = "+read-only";

/// Where a shell command ran: at which sandbox level (or unconfined), whether under the read-only
/// policy, and what the sandbox warned. Turned into the audit's text in one place
/// ([`SandboxRun::level_text`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxRun {
    /// `None`: unconfined (no `--sandbox`, or a read-only command where no level exists).
    pub level: Option<sandbox::Level>,
    /// Run under the read-only policy.
    pub read_only: bool,
    /// Run without a sandbox under the guard (`sandbox::guard`: secrets hidden, nothing
    /// writable but the project, the temporary directories and the home's package caches);
    /// `level` is `None` then.
    pub guarded: bool,
    pub warning: Option<String>,
}

impl SandboxRun {
    /// `off`, `bwrap`, `landlock`, `seatbelt`, `none`, with [`READ_ONLY_SUFFIX`] when run
    /// read-only: what the audit and the events say.
    pub fn level_text(&self) -> String {
        match self.level {
            None if self.guarded => "guard".to_string(),
            None => "off".to_string(),
            Some(level) if self.read_only => format!("{}{READ_ONLY_SUFFIX}", level.as_str()),
            Some(level) => level.as_str().to_string(),
        }
    }

    /// Whether the tool result names the level: everywhere but unconfined and the default,
    /// bubblewrap without the read-only policy.
    pub fn worth_saying(&self) -> bool {
        match self.level {
            None => self.guarded,
            Some(sandbox::Level::Bwrap) => self.read_only,
            Some(_) => true,
        }
    }
}

/// The result of running a call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    pub text: String,
    pub is_error: bool,
    /// Where a shell command ran; `None` for other tools.
    pub sandbox: Option<SandboxRun>,
    /// The network policy the command ran under (`off`, `on`, `allow-list`), when sandboxed.
    pub network_mode: Option<String>,
    /// Connections the network proxy refused during the call.
    pub network_refused: Vec<super::network::Refusal>,
    /// A browser tool's page and screenshot, for the audit trail.
    pub browser: Option<session::audit::BrowserRecord>,
    /// An image the call saved (a screenshot), shown to the model when its provider accepts
    /// images (`agent::images`); the session keeps only this path.
    pub image: Option<std::path::PathBuf>,
}

impl Outcome {
    /// A successful call's text, with nothing else to report (no sandbox, network or image).
    pub fn text(text: impl Into<String>) -> Outcome {
        Outcome {
            is_error: false,
            ..Outcome::error(text)
        }
    }

    pub fn error(text: impl Into<String>) -> Outcome {
        Outcome {
            text: text.into(),
            is_error: true,
            sandbox: None,
            network_mode: None,
            network_refused: Vec::new(),
            browser: None,
            image: None,
        }
    }

    pub fn from_result(result: Result<String, ToolFailure>) -> Outcome {
        match result {
            Ok(text) => Outcome::text(text),
            Err(e) => Outcome::error(e.0),
        }
    }
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
                "timeout": {"type": "number", "description": "Seconds before the command is killed (default 120)"},
                "writes": {"type": "boolean", "description": "Set when the command must write files or use the network: commands classified read-only otherwise run with a read-only filesystem and no network"}},
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
pub const AGENT_AREA: &str = sandbox::protected::AGENT_AREA;

/// A bash call's timeout: the default, or 0 < seconds ≤ 24 h.
pub fn bash_timeout(seconds: Option<f64>) -> Result<Duration, BadTimeout> {
    match seconds {
        None => Ok(bash::DEFAULT_TIMEOUT),
        Some(s) if s.is_finite() && s > 0.0 && s <= 24.0 * 3600.0 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(BadTimeout { seconds: s }),
    }
}

/// A bash call's timeout outside 0 < seconds ≤ 24 h (or not a number).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BadTimeout {
    /// The timeout the call asked for.
    pub seconds: f64,
}

impl std::fmt::Display for BadTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "timeout must be between 0 and 86400 seconds, not {}",
            self.seconds
        )
    }
}

impl std::error::Error for BadTimeout {}

/// At most `max` characters (not bytes), with `...` when cut: the MCP argument preview limit is
/// stated in characters.
pub fn truncate_chars(text: &str, max: usize) -> String {
    clip_chars_marked(text.to_string(), max, "...")
}

/// `text` cut to its first `max` characters, with `mark` appended when cut.
pub fn clip_chars_marked(mut text: String, max: usize, mark: &str) -> String {
    let end = clip_chars(&text, max).len();
    if end < text.len() {
        text.truncate(end);
        text.push_str(mark);
    }
    text
}

/// The first `max` characters (not bytes) of `text`, or all of it: the one place gg cuts text
/// by a count of characters.
pub fn clip_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// `text` cut to at most `max` bytes, `...` appended when cut.
pub fn truncate(text: &str, max: usize) -> String {
    clip_marked(text.to_string(), max, "...")
}

/// `text` cut to at most `max` bytes on a character boundary, with `mark` appended when cut.
pub fn clip_marked(mut text: String, max: usize, mark: &str) -> String {
    let end = clip(&text, max).len();
    if end < text.len() {
        text.truncate(end);
        text.push_str(mark);
    }
    text
}

/// The longest start of `text` of at most `max` bytes that ends on a character boundary
/// (`termsafe`'s, the one place gg cuts text by size: the provider's error messages too).
pub use termsafe::clip;

/// Where bash logs go; exposed for the CLI's messages.
pub fn outputs_dir(cwd: &Path) -> PathBuf {
    cwd.join(".gg").join("outputs")
}

#[cfg(test)]
mod tests {
    use super::{
        SandboxRun, SandboxSetting, clip, clip_chars, clip_chars_marked, clip_marked, truncate,
        truncate_chars,
    };

    #[test]
    fn clips_cut_on_character_boundaries() {
        // "é" is two bytes: a cut inside it steps back before it.
        assert_eq!(clip("aéb", 2), "a");
        assert_eq!(clip("aéb", 3), "aé");
        assert_eq!(clip("aéb", 10), "aéb");
        assert_eq!(clip("", 0), "");
        assert_eq!(clip_chars("aéb", 2), "aé");
        assert_eq!(clip_chars("aéb", 3), "aéb");
        assert_eq!(clip_chars("aéb", 0), "");
        assert_eq!(truncate("aéb", 2), "a...");
        assert_eq!(truncate("ab", 2), "ab");
        assert_eq!(truncate_chars("aéb", 2), "aé...");
        assert_eq!(truncate_chars("aéb", 3), "aéb");
        assert_eq!(clip_marked("aéb".into(), 2, "…"), "a…");
        assert_eq!(clip_marked("aéb".into(), 4, "…"), "aéb");
        assert_eq!(clip_chars_marked("aéb".into(), 1, " [cut]"), "a [cut]");
        assert_eq!(clip_chars_marked("aéb".into(), 3, " [cut]"), "aéb");
    }

    #[test]
    fn a_sandbox_run_names_its_level_as_the_audit_always_has() {
        let run = |level, read_only| SandboxRun {
            level,
            read_only,
            guarded: false,
            warning: None,
        };
        let cases = [
            (run(None, false), "off", false),
            (run(Some(sandbox::Level::Bwrap), false), "bwrap", false),
            (
                run(Some(sandbox::Level::Bwrap), true),
                "bwrap+read-only",
                true,
            ),
            (run(Some(sandbox::Level::Landlock), false), "landlock", true),
            (
                run(Some(sandbox::Level::Landlock), true),
                "landlock+read-only",
                true,
            ),
            (run(Some(sandbox::Level::None), false), "none", true),
            (
                run(Some(sandbox::Level::Seatbelt), true),
                "seatbelt+read-only",
                true,
            ),
        ];
        for (run, text, said) in cases {
            assert_eq!(run.level_text(), text);
            assert_eq!(run.worth_saying(), said, "{text}");
        }
    }

    #[test]
    fn a_sandbox_setting_is_the_same_only_as_itself() {
        let on = SandboxSetting::enabled(true);
        assert!(
            on.is_same(&on.clone()),
            "a clone shares the session network"
        );
        assert!(
            !on.is_same(&SandboxSetting::enabled(true)),
            "an equal policy with another proxy is another setting"
        );
        assert!(!on.is_same(&SandboxSetting::Off));
        assert!(!SandboxSetting::Off.is_same(&on));
        assert!(SandboxSetting::Off.is_same(&SandboxSetting::Off));
    }
}
