//! The loopback ports gg's own daemons serve, which no tool may reach: a page the browser tool
//! opens (or one a sandboxed command served and the model navigated to) must never drive ggd's
//! API, whatever its token and CORS say.
//!
//! Each ggd serving HTTP records its port as `~/.gg/daemons/<port>` holding its pid, and removes
//! it when it stops. A record whose process is gone (a crash) is ignored, so a stale file never
//! refuses someone else's server for long. `~/.gg` is hidden from every command, so none can
//! remove or plant a record.

use std::path::{Path, PathBuf};

fn dir(home: &Path) -> PathBuf {
    home.join(".gg").join("daemons")
}

/// A recorded port, removed when dropped.
pub struct Recorded {
    path: PathBuf,
}

impl Drop for Recorded {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Records that this process serves `port` on loopback.
pub fn record(home: &Path, port: u16) -> Result<Recorded, super::NetworkError> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = dir(home);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|source| super::NetworkError::Record {
            path: dir.clone(),
            source,
        })?;
    let path = dir.join(port.to_string());
    std::fs::write(&path, format!("{}\n", std::process::id())).map_err(|source| {
        super::NetworkError::Record {
            path: path.clone(),
            source,
        }
    })?;
    Ok(Recorded { path })
}

/// Whether a live ggd of this home serves `port`.
pub fn is_own(home: &Path, port: u16) -> bool {
    let Ok(text) = std::fs::read_to_string(dir(home).join(port.to_string())) else {
        return false;
    };
    text.trim().parse::<u32>().is_ok_and(|pid| {
        Path::new("/proc").join(pid.to_string()).exists() || !cfg!(target_os = "linux")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_port_is_own_while_recorded_and_a_dead_record_is_not() {
        let home = tempfile::tempdir().unwrap();
        assert!(!is_own(home.path(), 4321));
        let recorded = record(home.path(), 4321).unwrap();
        assert!(is_own(home.path(), 4321));
        assert!(!is_own(home.path(), 4322));
        drop(recorded);
        assert!(!is_own(home.path(), 4321));
        // A record left by a process that is gone.
        std::fs::write(dir(home.path()).join("4321"), "999999999\n").unwrap();
        assert!(!is_own(home.path(), 4321));
    }
}
