//! `~/.gg/config.json` and the provider selection built from it.
//!
//! Any subset of the file is valid: a key that is absent keeps its default, in every section
//! (a file holding only `{"memory": {"enabled": true}}` keeps the `OPENAI_*` provider). A key gg
//! does not read is a warning naming it and the nearest known key (see [`super::config_keys`]),
//! not an error, so one file still serves the earlier implementation too; a known key with a
//! value of the wrong type, or a bad value, is an error naming the file and the key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::config_keys;
pub use super::config_keys::UnknownKey;

pub const DEFAULT_SELECTION: &str = "openai:gpt-4.1";
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The reference's message, with the flag that keeps the key out of the process list first.
pub const MISSING_API_KEY: &str =
    "missing API key: set OPENAI_API_KEY or pass --api-key-file FILE (or --api-key KEY)";

/// Context budget settings: defined next to the budget that reads them (agent::context), so the
/// agent does not depend on the application layer.
pub use crate::agent::context::ContextConfig;
/// The `memory` section: defined with the store that reads it.
pub use tools::memory::MemoryConfig;

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CompatConfig {
    pub no_stream_usage: bool,
    pub completion_tokens: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct ProviderEntry {
    #[serde(rename = "type")]
    pub kind: Option<String>,
    #[serde(rename = "baseURL")]
    pub base_url: Option<String>,
    #[serde(rename = "apiKey")]
    pub api_key: Option<String>,
    #[serde(rename = "apiKeyEnv")]
    pub api_key_env: Option<String>,
    pub models: Vec<String>,
    pub compat: CompatConfig,
    /// Whether the models accept image input (browser screenshots are then sent as images).
    pub images: ImagesConfig,
}

/// `"images"` on a provider entry: `true` for all its models, or the list of models that accept
/// images. Off by default: a server that does not take image parts rejects the whole request.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum ImagesConfig {
    All(bool),
    Models(Vec<String>),
}

impl Default for ImagesConfig {
    fn default() -> ImagesConfig {
        ImagesConfig::All(false)
    }
}

impl ImagesConfig {
    /// Whether `model` accepts images.
    pub fn accepts(&self, model: &str) -> bool {
        match self {
            ImagesConfig::All(on) => *on,
            ImagesConfig::Models(models) => models.iter().any(|m| m == model),
        }
    }
}

/// Which secret-looking environment variables may still reach bash and MCP children.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct EnvConfig {
    pub allow: Vec<String>,
}

/// Optional tool families, off unless enabled.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct ToolsConfig {
    /// `"tools": {"computer": true}`: computer_info, process_list, process_kill, open, notify,
    /// clipboard_read and clipboard_write (each gated by its own class).
    pub computer: bool,
    /// `"tools": {"media": true}`: image_generate, speak and transcribe (see [`crate::media`]).
    pub media: bool,
    /// `"tools": {"google": true}`: gmail_search, gmail_read, calendar_list (and gmail_draft,
    /// calendar_create when enabled under `connectors.google`), once `gg connect google` signed in.
    pub google: bool,
}

/// `"artifacts"` / `"library"`: where the store lives and whether its tools are offered.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct StoreConfig {
    /// On by default: the tools only ever write gg's own store, and each write is asked for.
    pub enabled: bool,
    /// `~/` is expanded; a relative path is taken relative to `~/.gg`.
    pub dir: Option<String>,
}

impl Default for StoreConfig {
    fn default() -> StoreConfig {
        StoreConfig {
            enabled: true,
            dir: None,
        }
    }
}

impl StoreConfig {
    /// The store's directory: `dir`, else `~/.gg/<default>`.
    pub fn dir(&self, home: &Path, default: &str) -> PathBuf {
        match &self.dir {
            Some(dir) if !dir.trim().is_empty() => tools::store::expand_dir(dir, home),
            _ => gg_home(home).join(default),
        }
    }
}

/// `"kb"`: the knowledge bases (`gg kb`, the `kb_search` tool).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct KbConfig {
    /// Offer `kb_search` to the model when at least one knowledge base exists (default true).
    pub tool: bool,
    /// The knowledge base `kb_search` and `gg kb` use when none is named (default: `default`).
    pub default: Option<String>,
    /// Dense retrieval: an OpenAI-compatible `/v1/embeddings` endpoint. Without it (and without
    /// `GG_EMBED_BASE_URL`/`GG_EMBED_MODEL`) the knowledge bases are BM25 only.
    pub embeddings: Option<EmbeddingsConfig>,
}

impl Default for KbConfig {
    fn default() -> KbConfig {
        KbConfig {
            tool: true,
            default: None,
            embeddings: None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct EmbeddingsConfig {
    #[serde(rename = "baseURL")]
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// The variable holding the key (default `GG_EMBED_API_KEY`); no key is fine for a local
    /// server.
    #[serde(rename = "apiKeyEnv")]
    pub api_key_env: Option<String>,
}

impl KbConfig {
    /// The knowledge base used when none is named.
    pub fn default_name(&self) -> &str {
        self.default.as_deref().unwrap_or(kb::DEFAULT_NAME)
    }

    /// Where embeddings come from: `GG_EMBED_BASE_URL`/`GG_EMBED_MODEL` override the config's
    /// `kb.embeddings`; the key is `GG_EMBED_API_KEY` (or the configured variable). `None`: BM25
    /// only. Half a configuration is an error, not a silent BM25 fallback.
    pub fn embeddings(&self) -> Result<Option<kb::EmbedConfig>, String> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let configured = self.embeddings.clone().unwrap_or_default();
        let base_url = env("GG_EMBED_BASE_URL").or(configured.base_url);
        let model = env("GG_EMBED_MODEL").or(configured.model);
        let key_var = configured
            .api_key_env
            .unwrap_or_else(|| "GG_EMBED_API_KEY".to_string());
        match (base_url, model) {
            (None, None) => Ok(None),
            (Some(base_url), Some(model)) => Ok(Some(kb::EmbedConfig {
                base_url,
                model,
                api_key: tools::secrets::var(&key_var).filter(|v| !v.is_empty()),
            })),
            (Some(_), None) => Err(
                "embeddings: a base URL is set but no model (kb.embeddings.model or GG_EMBED_MODEL)"
                    .to_string(),
            ),
            (None, Some(_)) => Err(
                "embeddings: a model is set but no base URL (kb.embeddings.baseURL or GG_EMBED_BASE_URL)"
                    .to_string(),
            ),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(super) struct RawConfig {
    default: Option<String>,
    context: ContextConfig,
    /// Absent: the `OPENAI_*` provider of a config-less run ([`default_providers`]).
    providers: Option<BTreeMap<String, ProviderEntry>>,
    sandbox: bool,
    env: EnvConfig,
    tools: ToolsConfig,
    memory: MemoryConfig,
    artifacts: StoreConfig,
    library: StoreConfig,
    kb: KbConfig,
    network: Option<tools::network::NetworkMode>,
    #[serde(rename = "allowDomains")]
    allow_domains: Option<Vec<String>>,
    browser: tools::browser::BrowserConfig,
    media: crate::media::MediaConfig,
    telegram: Option<crate::telegram::config::TelegramConfig>,
    connectors: crate::connectors::ConnectorsConfig,
}

/// The loaded configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub default_selection: String,
    pub context: ContextConfig,
    pub providers: BTreeMap<String, ProviderEntry>,
    /// `"sandbox": true` turns the sandbox on by default.
    pub sandbox: bool,
    pub env: EnvConfig,
    pub tools: ToolsConfig,
    /// `"memory"`: off unless `enabled`.
    pub memory: MemoryConfig,
    /// `"artifacts"`: the artifact store (tools artifact_create/edit/read, `gg artifact`).
    pub artifacts: StoreConfig,
    /// `"library"`: the library (tools library_search/read, `gg library`).
    pub library: StoreConfig,
    /// `"kb"`: the knowledge bases (`gg kb`, the kb_search tool).
    pub kb: KbConfig,
    /// `"network"` and `"allowDomains"`: the network policy of sandboxed commands.
    pub network: tools::network::NetworkSettings,
    /// `"browser"`: the browser tools (on when a Chromium is found; click/type/eval off).
    pub browser: tools::browser::BrowserConfig,
    /// `"media"`: image generation, speech and transcription (`gg media`, the media tools).
    pub media: crate::media::MediaConfig,
    /// `"telegram"`: ggd answers the allowed chats (on when the section is present).
    pub telegram: Option<crate::telegram::config::TelegramConfig>,
    /// `"connectors"`: the Google sign-in's client and endpoints (`gg connect`).
    pub connectors: crate::connectors::ConnectorsConfig,
    /// Whether the values came from a file (else from `OPENAI_*` variables).
    pub from_file: bool,
    /// Keys of the file gg does not read ([`Config::load`] warns about each).
    pub unknown_keys: Vec<UnknownKey>,
}

/// Command-line and environment overrides.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub selection: Option<String>,
    pub api_key: Option<String>,
    pub base_url: Option<String>,
}

/// A resolved provider: what the client needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub provider: String,
    pub model: String,
    pub base_url: String,
    pub api_key: String,
    pub compat: CompatConfig,
    /// The model accepts image input (`"images"` of its provider entry).
    pub images: bool,
}

impl Selection {
    pub fn label(&self) -> String {
        format!("{}:{}", self.provider, self.model)
    }
}

/// `~/.gg`.
pub fn gg_home(home: &Path) -> PathBuf {
    home.join(".gg")
}

impl Config {
    /// The artifact store this configuration names.
    pub fn artifact_store(&self, home: &Path) -> tools::artifacts::Store {
        tools::artifacts::Store::new(self.artifacts.dir(home, "artifacts"))
    }

    /// The library this configuration names.
    pub fn library(&self, home: &Path) -> tools::library::Library {
        tools::library::Library::new(self.library.dir(home, "library"))
    }

    /// Loads `<home>/.gg/config.json`, or builds the `OPENAI_*` default when it does not exist.
    pub fn load(home: &Path) -> Result<Config, String> {
        let path = gg_home(home).join("config.json");
        match std::fs::read(&path) {
            Ok(bytes) => {
                let config = Config::parse(&bytes, &path)?;
                for key in &config.unknown_keys {
                    eprintln!("warning: {}: {key}", path.display());
                }
                // The bot token's file is a secret of every gg process, not only of the ggd
                // that reads it: no actor of any session may read it.
                if let Some((token_file, _)) =
                    config.telegram.as_ref().and_then(|t| t.token_path(home))
                {
                    tools::secrets::add_secret_file(&token_file);
                }
                // The Google client secret's file is a secret file from the moment it is named,
                // read or not yet (a refresh reads it mid-session): it joins the deny-read
                // policy of every actor here, before any tool is built.
                if let Some(file) = &config.connectors.google.client_secret_file {
                    tools::secrets::add_secret_file(&tools::store::expand_dir(file, home));
                }
                Ok(config)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::from_env()),
            Err(e) => Err(format!("failed to read {}: {e}", path.display())),
        }
    }

    /// Parses config text; errors name the file, and the key when one is at fault.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<Config, String> {
        let failed = |why: String| format!("failed to parse {}: {why}", path.display());
        let mut unknown_keys = Vec::new();
        let mut json = serde_json::Deserializer::from_slice(bytes);
        let mut note_unknown = |ignored: serde_ignored::Path| {
            unknown_keys.push(unknown_key(&path_segments(&ignored)));
        };
        let noting_unknown = serde_ignored::Deserializer::new(&mut json, &mut note_unknown);
        let raw: RawConfig = serde_path_to_error::deserialize(noting_unknown).map_err(|e| {
            // The path is `.` when the fault is the text itself (a syntax error), not a key.
            let key = e.path().to_string();
            match key.as_str() {
                "." => failed(e.into_inner().to_string()),
                _ => failed(format!("{key}: {}", e.into_inner())),
            }
        })?;
        json.end().map_err(|e| failed(e.to_string()))?;
        let bad = |key: &str, why: &str| format!("failed to parse {}: {key} {why}", path.display());
        let c = &raw.context;
        for (key, value) in [
            ("context.maxPromptTokens", c.max_prompt_tokens),
            ("context.maxOutputTokens", c.max_output_tokens),
            ("context.tailTurns", c.tail_turns),
            ("context.summaryMaxTokens", c.summary_max_tokens),
        ] {
            if value == 0 {
                return Err(bad(key, "must be greater than 0"));
            }
        }
        if raw.memory.max_prompt_tokens == 0 {
            return Err(bad("memory.maxPromptTokens", "must be greater than 0"));
        }
        let providers = raw.providers.unwrap_or_else(default_providers);
        if providers.is_empty() {
            return Err(bad("providers", "must define at least one provider"));
        }
        for (name, entry) in &providers {
            if name.contains(':') || name.is_empty() {
                return Err(bad(
                    &format!("providers.{name:?}"),
                    "name must be non-empty without ':'",
                ));
            }
            if let Some(kind) = &entry.kind
                && kind != "openai-compatible"
            {
                return Err(bad(
                    &format!("providers.{name}.type"),
                    &format!("{kind:?} is not supported (only \"openai-compatible\")"),
                ));
            }
        }
        if let Some(name) = &raw.kb.default {
            kb::validate_name(name).map_err(|e| bad("kb.default", &e.to_string()))?;
        }
        if let Some(domains) = &raw.allow_domains {
            tools::network::AllowList::parse(domains)
                .map_err(|e| format!("failed to parse {}: allowDomains: {e}", path.display()))?;
        }
        raw.browser
            .validate()
            .map_err(|e| format!("failed to parse {}: {e}", path.display()))?;
        raw.media
            .validate()
            .map_err(|e| format!("failed to parse {}: {e}", path.display()))?;
        if let Some(telegram) = &raw.telegram {
            telegram
                .validate()
                .map_err(|e| format!("failed to parse {}: {e}", path.display()))?;
        }
        raw.connectors
            .validate()
            .map_err(|e| format!("failed to parse {}: {e}", path.display()))?;
        Ok(Config {
            default_selection: raw.default.unwrap_or_else(|| DEFAULT_SELECTION.to_string()),
            context: raw.context,
            providers,
            sandbox: raw.sandbox,
            env: raw.env,
            tools: raw.tools,
            memory: raw.memory,
            artifacts: raw.artifacts,
            library: raw.library,
            kb: raw.kb,
            network: tools::network::NetworkSettings {
                network: raw.network,
                allow_domains: raw.allow_domains,
            },
            browser: raw.browser,
            media: raw.media,
            telegram: raw.telegram,
            connectors: raw.connectors,
            from_file: true,
            unknown_keys,
        })
    }

    /// No config file: one provider `openai` from `OPENAI_BASE_URL` and `OPENAI_API_KEY`.
    pub fn from_env() -> Config {
        Config {
            default_selection: DEFAULT_SELECTION.to_string(),
            context: ContextConfig::default(),
            providers: default_providers(),
            sandbox: false,
            env: EnvConfig::default(),
            tools: ToolsConfig::default(),
            memory: MemoryConfig::default(),
            artifacts: StoreConfig::default(),
            library: StoreConfig::default(),
            kb: KbConfig::default(),
            network: tools::network::NetworkSettings::default(),
            browser: tools::browser::BrowserConfig::default(),
            media: crate::media::MediaConfig::default(),
            telegram: None,
            connectors: crate::connectors::ConnectorsConfig::default(),
            from_file: false,
            unknown_keys: Vec::new(),
        }
    }

    /// Every `provider:model` the config lists (for `/model`).
    pub fn available_models(&self) -> Vec<String> {
        self.providers
            .iter()
            .flat_map(|(p, e)| e.models.iter().map(move |m| format!("{p}:{m}")))
            .collect()
    }

    /// Resolves a selection: `--model` (or `selection`) else the default; key and URL by the
    /// reference's precedence.
    pub fn select(
        &self,
        home: &Path,
        selection: Option<&str>,
        overrides: &Overrides,
    ) -> Result<Selection, String> {
        let text = selection
            .or(overrides.selection.as_deref())
            .unwrap_or(&self.default_selection);
        let (provider, model) = text
            .split_once(':')
            .filter(|(p, m)| !p.is_empty() && !m.is_empty())
            .ok_or_else(|| "model selection must use provider:model".to_string())?;
        let entry = self
            .providers
            .get(provider)
            .ok_or_else(|| format!("unknown provider \"{provider}\""))?;
        if !entry.models.is_empty() && !entry.models.iter().any(|m| m == model) {
            return Err(format!(
                "unknown model \"{model}\" for provider \"{provider}\""
            ));
        }
        let (base_url, api_key) = self.provider_access(home, provider, overrides)?;
        Ok(Selection {
            provider: provider.to_string(),
            model: model.to_string(),
            base_url,
            api_key,
            compat: entry.compat.clone(),
            images: entry.images.accepts(model),
        })
    }

    /// The base URL and API key of the provider named `provider`, by the reference's
    /// precedence (`--base-url`/`--api-key`, the entry, `credentials.json`, `apiKeyEnv`). An
    /// empty key when none is configured. Also for the media endpoints, whose models are not
    /// the chat models an entry lists.
    pub fn provider_access(
        &self,
        home: &Path,
        provider: &str,
        overrides: &Overrides,
    ) -> Result<(String, String), String> {
        let entry = self
            .providers
            .get(provider)
            .ok_or_else(|| format!("unknown provider \"{provider}\""))?;
        let api_key = overrides
            .api_key
            .clone()
            .filter(|k| !k.is_empty())
            .or_else(|| entry.api_key.clone().filter(|k| !k.is_empty()))
            .or_else(|| credentials_key(home, provider))
            .or_else(|| {
                entry
                    .api_key_env
                    .as_ref()
                    .and_then(|var| tools::secrets::var(var))
                    .filter(|k| !k.is_empty())
            })
            .unwrap_or_default();
        let base_url = overrides
            .base_url
            .clone()
            .filter(|u| !u.is_empty())
            .or_else(|| entry.base_url.clone().filter(|u| !u.is_empty()))
            .unwrap_or_else(|| well_known_base_url(provider).to_string());
        Ok((base_url, api_key))
    }
}

/// The providers when none are configured: one, `openai`, from `OPENAI_BASE_URL` and
/// `OPENAI_API_KEY`.
fn default_providers() -> BTreeMap<String, ProviderEntry> {
    let entry = ProviderEntry {
        base_url: std::env::var("OPENAI_BASE_URL")
            .ok()
            .filter(|v| !v.is_empty()),
        api_key: tools::secrets::var("OPENAI_API_KEY").filter(|v| !v.is_empty()),
        ..ProviderEntry::default()
    };
    BTreeMap::from([("openai".to_string(), entry)])
}

/// The parts of a path serde_ignored reports (`memory` then `enabeld`); an array's element is its
/// index.
fn path_segments(path: &serde_ignored::Path) -> Vec<String> {
    use serde_ignored::Path;
    match path {
        Path::Root => Vec::new(),
        Path::Seq { parent, index } => {
            let mut parts = path_segments(parent);
            parts.push(index.to_string());
            parts
        }
        Path::Map { parent, key } => {
            let mut parts = path_segments(parent);
            parts.push(key.clone());
            parts
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => path_segments(parent),
    }
}

/// `~/.gg/credentials.json`: `{"<provider>": "key"}`.
fn credentials_key(home: &Path, provider: &str) -> Option<String> {
    let bytes = std::fs::read(gg_home(home).join("credentials.json")).ok()?;
    let map: BTreeMap<String, String> = serde_json::from_slice(&bytes).ok()?;
    map.get(provider).cloned().filter(|k| !k.is_empty())
}

/// Default endpoints of well-known OpenAI-compatible services.
pub fn well_known_base_url(provider: &str) -> &'static str {
    match provider {
        "deepseek" => "https://api.deepseek.com/v1",
        "openrouter" => "https://openrouter.ai/api/v1",
        "ollama" => "http://127.0.0.1:11434/v1",
        "lmstudio" => "http://127.0.0.1:1234/v1",
        "moonshot" => "https://api.moonshot.ai/v1",
        _ => DEFAULT_BASE_URL,
    }
}

/// An unknown key at `segments`, with the nearest key gg reads in its parent object.
fn unknown_key(segments: &[String]) -> UnknownKey {
    config_keys::unknown_key(segments, known_keys)
}

/// The keys gg reads in the object at `parent` (path parts from the top); `None` where the
/// object's keys are names the person chooses (`providers`) or the place is not a section.
fn known_keys(parent: &[String]) -> Option<&'static [&'static str]> {
    let parts: Vec<&str> = parent.iter().map(String::as_str).collect();
    Some(match parts.as_slice() {
        [] => config_keys::fields_of::<RawConfig>(),
        ["context"] => config_keys::fields_of::<ContextConfig>(),
        ["memory"] => config_keys::fields_of::<MemoryConfig>(),
        ["providers", _] => config_keys::fields_of::<ProviderEntry>(),
        ["providers", _, "compat"] => config_keys::fields_of::<CompatConfig>(),
        ["env"] => config_keys::fields_of::<EnvConfig>(),
        ["tools"] => config_keys::fields_of::<ToolsConfig>(),
        ["artifacts"] | ["library"] => config_keys::fields_of::<StoreConfig>(),
        ["kb"] => config_keys::fields_of::<KbConfig>(),
        ["kb", "embeddings"] => config_keys::fields_of::<EmbeddingsConfig>(),
        ["browser"] => config_keys::fields_of::<tools::browser::BrowserConfig>(),
        ["media"] => config_keys::fields_of::<crate::media::MediaConfig>(),
        ["media", "image"] => config_keys::fields_of::<crate::media::ImageConfig>(),
        ["media", "speech"] => config_keys::fields_of::<crate::media::SpeechConfig>(),
        ["media", "transcription"] => config_keys::fields_of::<crate::media::TranscriptionConfig>(),
        ["telegram"] => config_keys::fields_of::<crate::telegram::config::TelegramConfig>(),
        ["connectors"] => config_keys::fields_of::<crate::connectors::ConnectorsConfig>(),
        ["connectors", "google"] => {
            config_keys::fields_of::<crate::connectors::google::GoogleConfig>()
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod key_tests;
