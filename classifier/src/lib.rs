//! Bash command text → [`Verdict`] (read-only, normal or dangerous) with reasons.
//!
//! This crate is the single place where gg decides what a bash command *is*. It is pure: no I/O,
//! no async, no global state. Everything it needs to know about the world (working directory,
//! home, scratch directories, the repository's git config, policy-file prefixes) arrives in
//! [`Context`].
//!
//! It is a guard against mistakes and prompt injection, not a security boundary: the sandbox is.
#![forbid(unsafe_code)]

use std::path::PathBuf;

/// How much care a command needs. Ordered: a script's class is the maximum over its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// Clearly side-effect free; never asks in any mode.
    ReadOnly,
    /// Everything else; follows the approval mode.
    Normal,
    /// Always needs a person to confirm.
    Dangerous,
}

impl Class {
    /// The stable name used in JSON and human output: `read-only`, `normal`, `dangerous`.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::ReadOnly => "read-only",
            Class::Normal => "normal",
            Class::Dangerous => "dangerous",
        }
    }
}

/// Why a verdict is what it is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Reason {
    /// Stable rule id, e.g. `rm.recursive-force-root`, `download.pipe-to-shell`.
    pub rule: String,
    /// The class this reason pushes the script to.
    #[serde(skip)]
    pub class: Class,
    /// Human explanation.
    pub message: String,
    /// Byte span `[start, end)` in the original input that triggered the rule.
    pub span: (usize, usize),
}

/// One simple command the text can run, after normalisation and wrapper unwrapping.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FoundCommand {
    /// Normalised argv (quotes removed, `$'..'` decoded, program path reduced to its base name
    /// where that is how rules match it). A word that could not be resolved statically keeps its
    /// source text.
    pub argv: Vec<String>,
    /// Byte span of the command in the original input.
    pub span: (usize, usize),
}

/// The classifier's answer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Verdict {
    pub class: Class,
    pub reasons: Vec<Reason>,
    pub commands: Vec<FoundCommand>,
}

/// What the classifier may know about the world. Built by the caller, which does the I/O.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The working directory that relative paths resolve against.
    pub cwd: PathBuf,
    /// The user's home directory (`~`, `$HOME`).
    pub home: PathBuf,
    /// Directories where writes are harmless (`/tmp`, `$TMPDIR`).
    pub scratch_dirs: Vec<PathBuf>,
    /// The repository's git configuration as read by the caller (`.git/config` and its includes).
    pub git_config: GitConfig,
    /// Extra rules from policy files.
    pub rules: ExtraRules,
}

/// Git configuration text the caller read from disk; the classifier only parses it.
#[derive(Debug, Clone, Default)]
pub struct GitConfig {
    /// Each file's text, main config first, then includes, in the order git would read them.
    pub files: Vec<String>,
}

/// Command-prefix rules that come from policy files (see the `policies` crate).
///
/// A prefix is a list of words matched against the start of a found command's argv.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtraRules {
    /// Commands treated as if they were on the read-only allow-list.
    pub read_only_prefixes: Vec<Vec<String>>,
    /// Commands that are always dangerous (always ask).
    pub dangerous_prefixes: Vec<Vec<String>>,
}

/// Input the classifier refuses to give a verdict on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClassifyError {
    /// Empty or whitespace-only input.
    Empty,
}

impl std::fmt::Display for ClassifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClassifyError::Empty => f.write_str("empty command"),
        }
    }
}

impl std::error::Error for ClassifyError {}

/// Classifies `command` (a whole bash script) in `ctx`.
///
/// Placeholder until the parser lands: everything is `normal`, which is the fail-closed answer.
pub fn classify(command: &str, ctx: &Context) -> Result<Verdict, ClassifyError> {
    let _ = ctx;
    if command.trim().is_empty() {
        return Err(ClassifyError::Empty);
    }
    Ok(Verdict { class: Class::Normal, reasons: Vec::new(), commands: Vec::new() })
}
