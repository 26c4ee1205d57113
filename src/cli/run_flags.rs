//! The agent's flags as the top-level command parsed them, apart from the run itself so that the
//! interactive mode's slash commands read them without importing the run loop that calls them.

use std::path::PathBuf;

use super::sessions::SessionFlags;

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
