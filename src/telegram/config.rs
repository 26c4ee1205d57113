//! `"telegram"` in `~/.gg/config.json`: the section's shape, its checks and where the token is
//! read from. Apart from the bot so that the configuration (`app::config`) can name it without
//! depending on the channel that uses it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The Bot API's public server.
pub const DEFAULT_API_BASE: &str = "https://api.telegram.org";
/// The variable that may name the token file (it wins over `telegram.tokenFile`).
pub const TOKEN_FILE_ENV: &str = "GG_TELEGRAM_TOKEN_FILE";

/// `"telegram"` in `~/.gg/config.json`. Its presence turns the channel on in ggd.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TelegramConfig {
    /// The file holding the bot token (first line); `~/` is expanded, a relative path is taken
    /// relative to `~/.gg`. The token is never read from the configuration itself.
    pub token_file: Option<String>,
    /// The chats answered; updates from any other chat are ignored. Empty: nobody.
    pub allowed_chats: Vec<i64>,
    /// The Bot API server (tests and self-hosted Bot API servers).
    pub api_base: String,
    /// The directory the chats' sessions work in (default: ggd's working directory).
    pub workspace: Option<String>,
    /// What happens to normal (not dangerous) calls: `never` asks and runs them, `deny` refuses
    /// them, `ask` asks the chat with inline buttons. Dangerous calls are always denied.
    pub approval: Approval,
    /// Run commands under the sandbox (default true, with the configured network policy,
    /// allow-list unless `network` says otherwise).
    pub sandbox: bool,
    /// Answer a voice message with a voice note too (media's speech), after the text reply.
    pub reply_voice: bool,
}

impl Default for TelegramConfig {
    fn default() -> TelegramConfig {
        TelegramConfig {
            token_file: None,
            allowed_chats: Vec::new(),
            api_base: DEFAULT_API_BASE.to_string(),
            workspace: None,
            approval: Approval::default(),
            sandbox: true,
            reply_voice: false,
        }
    }
}

/// `telegram.approval`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    /// Normal calls run without asking (`Mode::Unattended { allow_all: true }`).
    Never,
    /// Normal calls are refused (`Mode::Unattended { allow_all: false }`).
    #[default]
    Deny,
    /// Normal calls are asked in the chat (`Mode::Remote`).
    Ask,
}

impl Approval {
    /// The approval mode the chats' turns run in.
    pub fn mode(self) -> policies::Mode {
        match self {
            Approval::Never => policies::Mode::Unattended { allow_all: true },
            Approval::Deny => policies::Mode::Unattended { allow_all: false },
            Approval::Ask => policies::Mode::Remote,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Approval::Never => "never",
            Approval::Deny => "deny",
            Approval::Ask => "ask",
        }
    }
}

impl TelegramConfig {
    /// The checks serde cannot make; messages name the key.
    pub fn validate(&self) -> Result<(), String> {
        let base = url::Url::parse(&self.api_base)
            .map_err(|e| format!("telegram.apiBase: {e}: {:?}", self.api_base))?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            return Err(format!(
                "telegram.apiBase: must be an http(s) URL with a host, got {:?}",
                self.api_base
            ));
        }
        if base.query().is_some() || base.fragment().is_some() || !base.username().is_empty() {
            return Err("telegram.apiBase: no credentials, query or fragment".to_string());
        }
        if self
            .token_file
            .as_deref()
            .is_some_and(|f| f.trim().is_empty())
        {
            return Err("telegram.tokenFile: must not be empty".to_string());
        }
        if self
            .workspace
            .as_deref()
            .is_some_and(|w| w.trim().is_empty())
        {
            return Err("telegram.workspace: must not be empty".to_string());
        }
        Ok(())
    }

    /// Where the token is read from: `GG_TELEGRAM_TOKEN_FILE`, else `tokenFile`.
    pub fn token_path(&self, home: &Path) -> Option<(PathBuf, &'static str)> {
        if let Some(file) = tools::secrets::var(TOKEN_FILE_ENV).filter(|f| !f.trim().is_empty()) {
            return Some((PathBuf::from(file), TOKEN_FILE_ENV));
        }
        self.token_file
            .as_deref()
            .map(|f| (tools::store::expand_dir(f, home), "telegram.tokenFile"))
    }

    /// Reads the token. The file joins the deny-read policy of every actor (as `--api-key-file`
    /// does), whatever its place; errors name the file, never the contents.
    pub fn token(&self, home: &Path) -> Result<String, String> {
        let (path, source) = self.token_path(home).ok_or_else(|| {
            format!("telegram: no bot token: set telegram.tokenFile or {TOKEN_FILE_ENV}")
        })?;
        let token = crate::app::provider_flags::read_secret_file(&path, source)?;
        // The token is a path segment of every request URL: anything but a Bot API token's
        // characters could change the URL.
        let well_formed = token.contains(':')
            && token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b':' | b'_' | b'-'));
        if !well_formed {
            return Err(format!(
                "{source} {}: not a Bot API token (expected <digits>:<letters, digits, _ and ->)",
                path.display()
            ));
        }
        Ok(token)
    }

    /// The sessions' working directory: `workspace` (`~/` expanded, relative to ggd's
    /// directory), else `default`; it must exist.
    pub fn workspace_dir(&self, home: &Path, default: &Path) -> Result<PathBuf, String> {
        let dir = match self.workspace.as_deref() {
            None => default.to_path_buf(),
            Some("~") => home.to_path_buf(),
            Some(w) => match w.strip_prefix("~/") {
                Some(rest) => home.join(rest),
                None => default.join(w),
            },
        };
        std::fs::canonicalize(&dir)
            .map_err(|e| format!("telegram.workspace {}: {e}", dir.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approval_values_map_to_modes() {
        assert_eq!(
            Approval::Never.mode(),
            policies::Mode::Unattended { allow_all: true }
        );
        assert_eq!(
            Approval::Deny.mode(),
            policies::Mode::Unattended { allow_all: false }
        );
        assert_eq!(Approval::Ask.mode(), policies::Mode::Remote);
        assert_eq!(TelegramConfig::default().approval, Approval::Deny);
        assert!(TelegramConfig::default().sandbox);
    }

    #[test]
    fn api_base_and_token_are_checked() {
        let bad_base = TelegramConfig {
            api_base: "ftp://x".into(),
            ..TelegramConfig::default()
        };
        assert!(
            bad_base
                .validate()
                .unwrap_err()
                .contains("telegram.apiBase")
        );
        let with_user = TelegramConfig {
            api_base: "https://u:p@api.example".into(),
            ..TelegramConfig::default()
        };
        assert!(with_user.validate().is_err());
        assert!(TelegramConfig::default().validate().is_ok());

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        let config = TelegramConfig {
            token_file: Some(file.display().to_string()),
            ..TelegramConfig::default()
        };
        std::fs::write(&file, "123:abc_DEF-9\n").unwrap();
        assert_eq!(config.token(dir.path()).unwrap(), "123:abc_DEF-9");
        std::fs::write(&file, "123:abc/../x\n").unwrap();
        let err = config.token(dir.path()).unwrap_err();
        assert!(err.contains("not a Bot API token"), "{err}");
        assert!(
            !err.contains("abc/../x"),
            "the contents are never shown: {err}"
        );
        let none = TelegramConfig::default();
        assert!(none.token(dir.path()).unwrap_err().contains("no bot token"));
    }
}
