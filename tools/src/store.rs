//! Building blocks of gg's own durable stores under `~/.gg` (artifacts, library): a lock the
//! kernel releases when its holder dies, atomic replacement of a file, and creation of a file
//! that may never be overwritten.
//!
//! Every write goes to a temporary file beside its target (created `O_EXCL|O_NOFOLLOW`), is
//! fsynced, and is then renamed into place, and the directory is fsynced: a reader sees the old
//! bytes or the new ones, never a torn file, even if gg is killed with `SIGKILL` in between. A
//! killed writer leaves at most a dot-named temporary file, which the next writer (holding the
//! lock) removes.
//!
//! Locks are `flock(2)` locks on a lock file that is never deleted: the kernel drops them when
//! the holder's descriptor closes, so `kill -9` never leaves a store locked.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, Mode, OFlags};

/// How long a store operation waits for another process to release the lock.
pub const LOCK_WAIT: Duration = Duration::from_secs(30);

/// The marker in temporary file names (`.<name>.gg-tmp-<random>`).
const TEMP_MARK: &str = ".gg-tmp-";

/// Why a store operation failed. The daemon maps [`StoreError::NotFound`] to its
/// `artifact_not_found` error; everything else is shown as it reads.
#[derive(Debug)]
pub enum StoreError {
    /// No such artifact or library entry.
    NotFound(String),
    /// The input is refused (name, size, type, ...); nothing was changed.
    Invalid(String),
    /// The artifact changed between the copy into the library and the mark (see
    /// `artifacts::Store::publish`); the library copy was taken back.
    VersionChanged {
        id: String,
        from: u32,
        to: u32,
    },
    /// The artifact changed after an edit was shown for approval; nothing was written.
    Stale {
        id: String,
        shown: u32,
        now: u32,
    },
    Io(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::NotFound(m) | StoreError::Invalid(m) | StoreError::Io(m) => f.write_str(m),
            StoreError::VersionChanged { id, from, to } => write!(
                f,
                "artifact {id} changed from v{from} to v{to} while it was being published; \
                 the library copy was taken back and nothing was published (publish again)"
            ),
            StoreError::Stale { id, shown, now } => write!(
                f,
                "artifact {id} is at v{now} now, not v{shown} as when this edit was shown; \
                 nothing was written (read it again and redo the edit)"
            ),
        }
    }
}

impl std::error::Error for StoreError {}

impl StoreError {
    /// An I/O failure on `what`.
    pub fn io(what: impl std::fmt::Display, error: io::Error) -> StoreError {
        StoreError::Io(format!("{what}: {error}"))
    }
}

/// An exclusive lock on a store, held until dropped (or until the process dies).
#[derive(Debug)]
pub struct StoreLock {
    _file: File,
}

impl StoreLock {
    /// Takes the exclusive `flock` on `path` (created 0600 if absent), waiting up to 30 s for
    /// another process to release it.
    pub fn acquire(path: &Path) -> io::Result<StoreLock> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::from_raw_mode(0o600),
        )?;
        lock_exclusive_within(&fd, path, LOCK_WAIT)?;
        Ok(StoreLock {
            _file: File::from(fd),
        })
    }
}

/// Takes the exclusive `flock` on `fd` (the file or directory at `path`), waiting at most `wait`
/// for whoever holds it. Never a blocking `flock`: where a command can reach the locked file (the
/// project's memory), a process it left running could hold the lock for good, and gg would wait
/// for good (an attacker pass hung every later `memory_add` that way).
pub fn lock_exclusive_within(
    fd: impl rustix::fd::AsFd,
    path: &Path,
    wait: Duration,
) -> io::Result<()> {
    let started = Instant::now();
    loop {
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::WOULDBLOCK) if started.elapsed() < wait => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    format!(
                        "{} is locked by another process (waited {} s)",
                        path.display(),
                        wait.as_secs_f32()
                    ),
                ));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Creates `dir` and its missing parents, new ones private (0700).
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Replaces `dir/name` with `bytes` atomically (see the module doc). `label` names the write
/// for the test pause point `<label>.before-rename`.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8], label: &str) -> io::Result<()> {
    let tmp = write_temp(dir, name, bytes)?;
    pause_point(&format!("{label}.before-rename"));
    if let Err(e) = std::fs::rename(&tmp, dir.join(name)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    sync_dir(dir);
    Ok(())
}

/// Creates `dir/name` with `bytes`, atomically, failing with `AlreadyExists` if it exists:
/// immutable files (an artifact's versions) are never overwritten.
pub fn create_new(dir: &Path, name: &str, bytes: &[u8], label: &str) -> io::Result<()> {
    let tmp = write_temp(dir, name, bytes)?;
    pause_point(&format!("{label}.before-rename"));
    let renamed = rustix::fs::renameat_with(
        rustix::fs::CWD,
        &tmp,
        rustix::fs::CWD,
        dir.join(name),
        rustix::fs::RenameFlags::NOREPLACE,
    );
    if let Err(e) = renamed {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.into());
    }
    sync_dir(dir);
    Ok(())
}

/// Copies at most `limit` bytes from `source` into a new temporary file in `dir`; more than
/// `limit` is an error (the limit is checked on the bytes actually copied, not on a size read
/// beforehand that could change). Returns the temporary path and the size; the caller renames
/// it with [`commit_temp`] or removes it.
pub fn copy_to_temp(
    source: &mut dyn io::Read,
    dir: &Path,
    name: &str,
    limit: u64,
) -> io::Result<(PathBuf, u64)> {
    let (tmp, mut file) = open_temp(dir, name)?;
    let copied = (|| -> io::Result<u64> {
        let copied = io::copy(&mut io::Read::take(source, limit + 1), &mut file)?;
        if copied > limit {
            return Err(io::Error::new(
                io::ErrorKind::FileTooLarge,
                format!("larger than the limit of {}", human_size(limit)),
            ));
        }
        file.sync_all()?;
        Ok(copied)
    })();
    match copied {
        Ok(size) => Ok((tmp, size)),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Renames a temporary file from [`copy_to_temp`] onto `dir/name`.
pub fn commit_temp(tmp: &Path, dir: &Path, name: &str, label: &str) -> io::Result<()> {
    pause_point(&format!("{label}.before-rename"));
    if let Err(e) = std::fs::rename(tmp, dir.join(name)) {
        let _ = std::fs::remove_file(tmp);
        return Err(e);
    }
    sync_dir(dir);
    Ok(())
}

fn open_temp(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    let tmp = dir.join(format!(".{name}{TEMP_MARK}{:016x}", fastrand::u64(..)));
    let fd = rustix::fs::open(
        &tmp,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    Ok((tmp, File::from(fd)))
}

fn write_temp(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<PathBuf> {
    let (tmp, mut file) = open_temp(dir, name)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(tmp)
}

/// Makes a rename (or a new entry) in `dir` durable.
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Removes the temporary files a killed writer left in `dir`. Call it holding the store's lock,
/// so no live writer's temporary file is removed.
pub fn sweep_temps(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if is_temp_name(&name) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Whether a directory entry is one of our temporary files.
pub fn is_temp_name(name: &OsStr) -> bool {
    let bytes = name.as_bytes();
    bytes.starts_with(b".")
        && bytes
            .windows(TEMP_MARK.len())
            .any(|w| w == TEMP_MARK.as_bytes())
}

/// Reads a regular file of gg's own stores, without following a symlink, at most `limit` bytes
/// (more is an error): [`sandbox::protected::read_regular`] (a FIFO or device is never opened).
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    use sandbox::protected::{LastLink, Unreadable};
    sandbox::protected::read_regular(path, limit, LastLink::Refuse).map_err(|e| match e {
        Unreadable::TooLarge(_) => io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("{} is larger than {}", path.display(), human_size(limit)),
        ),
        other => other.into_io(path),
    })
}

/// `1.5 MiB`, `12 KiB`, `80 B`.
pub fn human_size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB {
        let tenths = bytes * 10 / MIB;
        if tenths.is_multiple_of(10) {
            format!("{} MiB", tenths / 10)
        } else {
            format!("{}.{} MiB", tenths / 10, tenths % 10)
        }
    } else if bytes >= KIB {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} B")
    }
}

/// A configured store directory: `~/` is expanded against `home`, a relative path is taken
/// relative to `home/.gg`.
pub fn expand_dir(configured: &str, home: &Path) -> PathBuf {
    if configured == "~" {
        return home.to_path_buf();
    }
    if let Some(rest) = configured.strip_prefix("~/") {
        return home.join(rest);
    }
    let path = Path::new(configured);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        home.join(".gg").join(path)
    }
}

/// A random 12-hex-digit id.
pub fn new_id() -> String {
    format!("{:012x}", fastrand::u64(..) & 0xffff_ffff_ffff)
}

/// Now, as RFC 3339 UTC with second precision.
pub fn now_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second())
        .unwrap_or(now)
        .to_string()
}

/// A fault-injection point for the kill-9 and race tests, compiled only with the `test-hooks`
/// feature. With `GG_TEST_PAUSE_AT=<point>` and `GG_TEST_PAUSE_DIR=<dir>`, the first time the
/// process reaches `<point>` it creates `<dir>/<point>.reached` (holding its pid) and waits until
/// `<dir>/<point>.go` exists. A test either kills it there or lets it go on.
pub fn pause_point(point: &str) {
    #[cfg(feature = "test-hooks")]
    {
        let (Some(at), Some(dir)) = (
            std::env::var_os("GG_TEST_PAUSE_AT"),
            std::env::var_os("GG_TEST_PAUSE_DIR"),
        ) else {
            return;
        };
        if at != OsStr::new(point) {
            return;
        }
        let dir = PathBuf::from(dir);
        let go = dir.join(format!("{point}.go"));
        if go.exists() {
            return;
        }
        let _ = std::fs::write(
            dir.join(format!("{point}.reached")),
            std::process::id().to_string(),
        );
        while !go.exists() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    #[cfg(not(feature = "test-hooks"))]
    let _ = point;
}

/// [`pause_point`] for async code: it waits on a blocking thread, so the runtime's other tasks
/// (the requests a test sends while the process is held) go on.
pub async fn pause_point_async(point: &'static str) {
    #[cfg(feature = "test-hooks")]
    if std::env::var_os("GG_TEST_PAUSE_AT").is_some_and(|at| at == OsStr::new(point)) {
        let _ = tokio::task::spawn_blocking(move || pause_point(point)).await;
    }
    #[cfg(not(feature = "test-hooks"))]
    let _ = point;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_create_new_refuses_to_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        write_atomic(dir.path(), "a.json", b"one", "t").unwrap();
        write_atomic(dir.path(), "a.json", b"two", "t").unwrap();
        assert_eq!(std::fs::read(dir.path().join("a.json")).unwrap(), b"two");
        create_new(dir.path(), "v1.md", b"first", "t").unwrap();
        let again = create_new(dir.path(), "v1.md", b"second", "t").unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(dir.path().join("v1.md")).unwrap(), b"first");
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn copy_limit_is_checked_on_copied_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let mut big = io::Cursor::new(vec![b'x'; 11]);
        let e = copy_to_temp(&mut big, dir.path(), "f", 10).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut ok = io::Cursor::new(vec![b'x'; 10]);
        let (tmp, size) = copy_to_temp(&mut ok, dir.path(), "f", 10).unwrap();
        assert_eq!(size, 10);
        assert!(is_temp_name(tmp.file_name().unwrap()));
        sweep_temps(dir.path());
        assert!(!tmp.exists());
    }

    #[test]
    fn a_second_lock_waits_for_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.lock");
        let first = StoreLock::acquire(&path).unwrap();
        // Another open file description of the same file cannot take it while it is held.
        let other = rustix::fs::open(&path, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()).unwrap();
        assert!(rustix::fs::flock(&other, FlockOperation::NonBlockingLockExclusive).is_err());
        drop(first);
        assert!(rustix::fs::flock(&other, FlockOperation::NonBlockingLockExclusive).is_ok());
    }

    /// A lock someone keeps (a process a command left running) is waited for only so long:
    /// the wait ends with an error that says why, not with a hang.
    #[test]
    fn a_lock_held_for_good_ends_the_wait_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let holder = rustix::fs::open(
            dir.path(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        rustix::fs::flock(&holder, FlockOperation::LockExclusive).unwrap();
        let waiter = rustix::fs::open(
            dir.path(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        let err =
            lock_exclusive_within(&waiter, dir.path(), Duration::from_millis(60)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        assert!(
            err.to_string().contains("locked by another process"),
            "{err}"
        );
        drop(holder);
        lock_exclusive_within(&waiter, dir.path(), Duration::ZERO).unwrap();
    }

    #[test]
    fn sizes_and_dirs() {
        assert_eq!(human_size(80), "80 B");
        assert_eq!(human_size(50 * 1024 * 1024), "50 MiB");
        assert_eq!(human_size(1024 * 1024 + 512 * 1024), "1.5 MiB");
        let home = Path::new("/h");
        assert_eq!(expand_dir("~/x", home), PathBuf::from("/h/x"));
        assert_eq!(expand_dir("/abs", home), PathBuf::from("/abs"));
        assert_eq!(expand_dir("rel", home), PathBuf::from("/h/.gg/rel"));
    }
}
