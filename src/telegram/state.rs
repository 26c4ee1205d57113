//! What the Telegram channel keeps under `~/.gg/telegram/` (0700, files 0600, each replaced
//! atomically):
//!
//! - `offset`: the next update id to ask for. It is written **before** an update is handled, so
//!   a restart (or a crash mid-turn) never handles an update twice: an agent turn that ran
//!   commands must not run again because ggd restarted. The cost is that an update whose
//!   handling a crash cut short is not retried.
//! - `chats.json`: each allowed chat's current session file (`/new` replaces it).
//! - `status.json`: what `gg telegram status` prints (polling, last update, chats).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// `~/.gg/telegram`.
pub fn dir(home: &Path) -> PathBuf {
    crate::app::config::gg_home(home).join("telegram")
}

fn write(home: &Path, name: &str, bytes: &[u8]) -> Result<(), String> {
    let dir = dir(home);
    tools::store::create_private_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    tools::store::write_atomic(&dir, name, bytes, "telegram")
        .map_err(|e| format!("{}: {e}", dir.join(name).display()))
}

fn read(home: &Path, name: &str) -> Result<Option<Vec<u8>>, String> {
    let path = dir(home).join(name);
    match tools::store::read_regular(&path, 1024 * 1024) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// The persisted offset (0 when none was saved yet). A damaged file is an error, not 0: 0
/// would hand every pending update to the agent again.
pub fn load_offset(home: &Path) -> Result<i64, String> {
    match read(home, "offset")? {
        None => Ok(0),
        Some(bytes) => String::from_utf8_lossy(&bytes).trim().parse().map_err(|_| {
            format!(
                "{}: not an update offset; remove it to start from the updates Telegram still holds",
                dir(home).join("offset").display()
            )
        }),
    }
}

pub fn save_offset(home: &Path, offset: i64) -> Result<(), String> {
    write(home, "offset", format!("{offset}\n").as_bytes())
}

/// `chats.json`: chat id → session file.
pub fn load_chats(home: &Path) -> Result<BTreeMap<i64, PathBuf>, String> {
    match read(home, "chats.json")? {
        None => Ok(BTreeMap::new()),
        Some(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| format!("{}: {e}", dir(home).join("chats.json").display())),
    }
}

pub fn save_chats(home: &Path, chats: &BTreeMap<i64, PathBuf>) -> Result<(), String> {
    let bytes = serde_json::to_vec_pretty(chats).map_err(|e| e.to_string())?;
    write(home, "chats.json", &bytes)
}

/// `status.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Status {
    /// The ggd that polls.
    pub pid: u32,
    pub started_at: String,
    /// Whether the last `getUpdates` succeeded (false while backing off after an error).
    pub polling: bool,
    pub last_poll_at: Option<String>,
    pub last_update_at: Option<String>,
    pub last_update_id: Option<i64>,
    /// The last error of the poll, the token redacted.
    pub last_error: Option<String>,
    pub chats: BTreeMap<i64, ChatStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ChatStatus {
    pub session: Option<String>,
    pub last_message_at: Option<String>,
    pub turn_running: bool,
}

pub fn save_status(home: &Path, status: &Status) -> Result<(), String> {
    let bytes = serde_json::to_vec_pretty(status).map_err(|e| e.to_string())?;
    write(home, "status.json", &bytes)
}

pub fn load_status(home: &Path) -> Result<Option<Status>, String> {
    read(home, "status.json")?
        .map(|bytes| {
            serde_json::from_slice(&bytes)
                .map_err(|e| format!("{}: {e}", dir(home).join("status.json").display()))
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_and_chats_round_trip_and_a_damaged_offset_is_an_error() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(load_offset(home.path()).unwrap(), 0);
        save_offset(home.path(), 42).unwrap();
        assert_eq!(load_offset(home.path()).unwrap(), 42);
        let chats = BTreeMap::from([(7, PathBuf::from("/s/1.jsonl"))]);
        save_chats(home.path(), &chats).unwrap();
        assert_eq!(load_chats(home.path()).unwrap(), chats);
        std::fs::write(dir(home.path()).join("offset"), "x\n").unwrap();
        assert!(
            load_offset(home.path())
                .unwrap_err()
                .contains("not an update offset")
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir(home.path()))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }
}
