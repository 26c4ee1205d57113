//! `~/.gg/connectors/google.json`: the tokens of the signed-in account.
//!
//! Written atomically (a 0600 temporary file in the same 0700 directory, fsync, rename) and
//! opened strictly: no symlink is followed, and a file that is not a regular file, not the
//! person's own, readable by anyone else or implausibly large is refused rather than used. The
//! whole of `~/.gg` is in the deny-read list of every actor (`sandbox::protected`), so neither a
//! sandboxed command nor gg's file tools can read it.

use std::io::Read;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use serde::{Deserialize, Serialize};

use tools::store;

/// A token file is a few hundred bytes; anything much larger is not ours.
const MAX_TOKEN_FILE: u64 = 64 * 1024;
pub const FILE_NAME: &str = "google.json";

/// The tokens, as stored. `Debug` shows neither token.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tokens {
    /// The OAuth client these tokens belong to (a refresh needs the same one).
    pub client_id: String,
    /// The scopes Google granted.
    pub scopes: Vec<String>,
    pub access_token: String,
    pub refresh_token: Option<String>,
    /// Unix seconds at which the access token expires, when Google said.
    pub expires_at: Option<u64>,
    /// RFC 3339.
    pub signed_in_at: String,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl Tokens {
    /// Whether the access token is expired or expires within a minute (refresh first).
    pub fn expired(&self, now: u64) -> bool {
        self.expires_at
            .is_some_and(|at| at <= now.saturating_add(60))
    }

    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// Every secret value in the file, for callers that check they never leak one.
    pub fn secrets(&self) -> Vec<&str> {
        std::iter::once(self.access_token.as_str())
            .chain(self.refresh_token.as_deref())
            .collect()
    }
}

/// `~/.gg/connectors`.
pub fn dir(home: &Path) -> PathBuf {
    // `app::config::gg_home`'s answer, spelt out: nothing below `app` names it.
    home.join(".gg").join("connectors")
}

pub fn path(home: &Path) -> PathBuf {
    dir(home).join(FILE_NAME)
}

pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// The stored tokens; `None` when nobody signed in. A file that is there but wrong is an error
/// (it is never overwritten or used silently).
pub fn load(home: &Path) -> Result<Option<Tokens>, String> {
    let path = path(home);
    let shown = path.display();
    let fd = match rustix::fs::open(
        &path,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => {
            return Err(format!("{shown} is a symbolic link; refusing to read it"));
        }
        Err(e) => return Err(format!("{shown}: {e}")),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| format!("{shown}: {e}"))?;
    if stat.st_mode & 0o170000 != 0o100000 {
        return Err(format!(
            "{shown} is not a regular file; refusing to read it"
        ));
    }
    if stat.st_uid != rustix::process::geteuid().as_raw() {
        return Err(format!(
            "{shown} belongs to another user; refusing to read it"
        ));
    }
    if stat.st_mode & 0o077 != 0 {
        return Err(format!(
            "{shown} is readable or writable by others (mode {:o}); run `chmod 600 {shown}` or \
             sign in again",
            stat.st_mode & 0o777
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(MAX_TOKEN_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{shown}: {e}"))?;
    if bytes.len() as u64 > MAX_TOKEN_FILE {
        return Err(format!("{shown} is too large to be a token file"));
    }
    // serde_json's error names a line and column, never the values around them.
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| format!("{shown} is not a gg token file: {e}"))
}

/// Replaces the token file atomically (0600, in a 0700 directory).
pub fn save(home: &Path, tokens: &Tokens) -> Result<(), String> {
    let dir = dir(home);
    store::create_private_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let bytes = serde_json::to_vec_pretty(tokens).map_err(|e| e.to_string())?;
    store::write_atomic(&dir, FILE_NAME, &bytes, "google-tokens")
        .map_err(|e| format!("{}: {e}", path(home).display()))
}

/// Deletes the token file; `false` when there was none.
pub fn remove(home: &Path) -> Result<bool, String> {
    let path = path(home);
    match std::fs::remove_file(&path) {
        Ok(()) => {
            store::sync_dir(&dir(home));
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Held while tokens are read, refreshed and written back, so that two gg processes do not both
/// refresh (the kernel releases it if the process dies).
pub fn lock(home: &Path) -> Result<store::StoreLock, String> {
    let dir = dir(home);
    store::create_private_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join("google.lock");
    store::StoreLock::acquire(&path).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn sample() -> Tokens {
        Tokens {
            client_id: "id".into(),
            scopes: vec![super::super::SCOPE_GMAIL_READONLY.into()],
            access_token: "at-secret".into(),
            refresh_token: Some("rt-secret".into()),
            expires_at: Some(100),
            signed_in_at: "2026-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn saved_tokens_are_private_and_load_back() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(load(home.path()).unwrap(), None);
        save(home.path(), &sample()).unwrap();
        let mode = std::fs::metadata(path(home.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = std::fs::metadata(dir(home.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        assert_eq!(load(home.path()).unwrap(), Some(sample()));
        assert!(!format!("{:?}", sample()).contains("secret"));
    }

    #[test]
    fn a_loose_mode_a_symlink_or_garbage_is_refused() {
        let home = tempfile::tempdir().unwrap();
        save(home.path(), &sample()).unwrap();
        let file = path(home.path());
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(
            load(home.path())
                .unwrap_err()
                .contains("readable or writable by others")
        );
        std::fs::rename(&file, home.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(home.path().join("elsewhere"), &file).unwrap();
        assert!(load(home.path()).unwrap_err().contains("symbolic link"));
        std::fs::remove_file(&file).unwrap();
        std::fs::write(&file, "{\"accessToken\": \"x\"").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let error = load(home.path()).unwrap_err();
        assert!(error.contains("not a gg token file"), "{error}");
    }

    #[test]
    fn expiry_counts_a_minute_early() {
        let tokens = sample();
        assert!(!tokens.expired(0));
        assert!(tokens.expired(41));
        assert!(tokens.expired(1000));
    }
}
