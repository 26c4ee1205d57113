//! Remembers, across processes, that a level worked, so that a short-lived `gg sandbox` or a
//! fresh agent does not pay for a trial run (a bubblewrap start, a helper start) every time.
//!
//! Only success at full strength is stored, as a key naming everything the result depends on:
//! the binaries involved (path, device, inode, size, modification time), the running kernel
//! (release and boot id), the user-namespace sysctls, the effective uid. Any change makes a new
//! key and the next process probes again. A planted or stale entry cannot lower the sandbox: a
//! miss probes, and a hit only ever claims the strongest result, which the real run then relies on
//! (if it is wrong, the command fails with bubblewrap's or the helper's error instead of running
//! weaker).
//!
//! Stored in `$XDG_CACHE_HOME/gg/` (or `~/.cache/gg/`), one small file per level.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Set to any value to bypass the cache (probe every time, store nothing).
pub const DISABLE_ENV: &str = "GG_SANDBOX_NO_PROBE_CACHE";

const SYSCTLS: &[&str] = &[
    "/proc/sys/kernel/osrelease",
    "/proc/sys/kernel/random/boot_id",
    "/proc/sys/user/max_user_namespaces",
    "/proc/sys/kernel/unprivileged_userns_clone",
    "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
];

/// The key for `level` whose result depends on `binaries` (plus the running executable, which is
/// the helper), or `None` when caching is off or something cannot be identified.
pub fn key(level: &str, binaries: &[&Path]) -> Option<String> {
    if std::env::var_os(DISABLE_ENV).is_some() {
        return None;
    }
    let mut key = format!("v1 {level} euid={}", rustix_euid());
    for bin in binaries {
        key.push_str(&identity(bin)?);
    }
    key.push_str(host_part().as_deref()?);
    Some(key)
}

/// One binary's part of a key: ` path:dev:ino:size:mtime`.
fn identity(bin: &Path) -> Option<String> {
    let m = std::fs::metadata(bin).ok()?;
    Some(format!(
        " {}:{}:{}:{}:{}.{}",
        bin.display(),
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec()
    ))
}

/// The part every key of this process shares (the running executable and the sysctls), read
/// once: a process asks for up to three keys (helper, bwrap, landlock).
fn host_part() -> &'static Option<String> {
    static PART: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    PART.get_or_init(|| {
        let exe = std::env::current_exe().ok()?;
        let mut part = identity(&exe)?;
        for sysctl in SYSCTLS {
            let value = std::fs::read_to_string(sysctl).unwrap_or_else(|_| "-".into());
            part.push_str(&format!(" {}={}", sysctl, value.trim()));
        }
        Some(part)
    })
}

/// Whether `key` was stored by an earlier success.
pub fn hit(key: &str) -> bool {
    file(key)
        .and_then(|f| std::fs::read_to_string(f).ok())
        .as_deref()
        == Some(key)
}

/// Remembers `key` (best effort: a cache that cannot be written only costs a probe).
pub fn store(key: &str) {
    let Some(path) = file(key) else { return };
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let tmp = dir.join(format!(".probe-{}.tmp", std::process::id()));
    if std::fs::write(&tmp, key).is_ok() && std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

fn file(key: &str) -> Option<PathBuf> {
    let level = key.split_whitespace().nth(1)?;
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|h| h.join(".cache"))
        })?;
    Some(base.join("gg").join(format!("sandbox-probe-{level}")))
}

fn rustix_euid() -> u32 {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_changes_with_the_binary() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bwrap");
        std::fs::write(&bin, "a").unwrap();
        let first = key("bwrap", &[&bin]).unwrap();
        assert_eq!(key("bwrap", &[&bin]).unwrap(), first);
        std::fs::write(&bin, "ab").unwrap();
        assert_ne!(key("bwrap", &[&bin]).unwrap(), first);
        assert!(first.contains("boot_id="));
        assert!(key("bwrap", &[&dir.path().join("absent")]).is_none());
    }
}
