//! The provider flags both front ends take (`--model`, `--base-url`, `--api-key`,
//! `--api-key-file`/`GG_API_KEY_FILE`), and reading a secret from a file, which gg's and ggd's
//! other secret flags (`--token-file`) use too. In the application core because `gg` and `ggd`
//! each flatten them into their own command line.

use std::path::{Path, PathBuf};

/// Environment variable naming a file that holds the provider API key.
pub const API_KEY_FILE_ENV: &str = "GG_API_KEY_FILE";

/// Which model to talk to and how to reach it (gg and ggd).
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderArgs {
    /// The model, as provider:model.
    #[arg(long, value_name = "PROVIDER:MODEL")]
    pub model: Option<String>,
    /// Override the provider's base URL (e.g. http://127.0.0.1:11434/v1 for a local server).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Override the provider's API key (visible to other local users in the process list;
    /// prefer --api-key-file).
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// Read the provider's API key from FILE (first line; nothing on the command line).
    #[arg(long, value_name = "FILE", env = API_KEY_FILE_ENV, hide_env_values = true)]
    pub api_key_file: Option<PathBuf>,
}

impl ProviderArgs {
    /// The API key override: `--api-key`, else the contents of `--api-key-file` (or the file
    /// `GG_API_KEY_FILE` names). A key typed on the command line wins over a file.
    pub fn api_key(&self) -> Result<Option<String>, String> {
        match (&self.api_key, &self.api_key_file) {
            (Some(key), _) => Ok(Some(key.clone())),
            (None, Some(file)) => read_secret_file(file, "--api-key-file").map(Some),
            (None, None) => Ok(None),
        }
    }
}

/// Longest secret file accepted: a key or token is a line, not a document.
const SECRET_FILE_LIMIT: u64 = 64 * 1024;

/// Reads a secret (API key, token) from a file: the first line, surrounding whitespace removed.
/// An empty, unreadable or oversized file is an error naming `flag` and the path, never the
/// contents.
pub fn read_secret_file(path: &Path, flag: &str) -> Result<String, String> {
    use std::io::Read;
    // Hidden from every actor from now on, read or not: the path was given as a secret's.
    tools::secrets::add_secret_file(path);
    let file = std::fs::File::open(path).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(SECRET_FILE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    if bytes.len() as u64 > SECRET_FILE_LIMIT {
        return Err(format!(
            "{flag} {}: larger than {SECRET_FILE_LIMIT} bytes; expected one line",
            path.display()
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{flag} {}: not UTF-8 text", path.display()))?;
    let secret = text.lines().next().unwrap_or("").trim().to_string();
    if secret.is_empty() {
        return Err(format!(
            "{flag} {}: the first line is empty",
            path.display()
        ));
    }
    Ok(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "  sk-abc \nsecond line\n").unwrap();
        assert_eq!(read_secret_file(&path, "--api-key-file").unwrap(), "sk-abc");
        std::fs::write(&path, "\n").unwrap();
        let err = read_secret_file(&path, "--api-key-file").unwrap_err();
        assert!(err.contains("first line is empty"), "{err}");
        std::fs::write(&path, vec![b'k'; 70_000]).unwrap();
        let err = read_secret_file(&path, "--token-file").unwrap_err();
        assert!(
            err.starts_with("--token-file ") && err.contains("larger"),
            "{err}"
        );
        assert!(!err.contains("kkkk"), "the secret is never echoed");
        let err = read_secret_file(&dir.path().join("absent"), "--token-file").unwrap_err();
        assert!(err.contains("absent"), "{err}");
    }
}
