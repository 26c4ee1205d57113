//! What a result built from the file system was built from, so that it can be kept while that
//! stays the same: the directories a lookup went through (their entries decide whether a path
//! exists and what it is) and the files whose contents were read.
//!
//! A session's sandbox policy is rebuilt for every command because a secret, a placeholder or a
//! protected file may have appeared since the last one, and building it looks up about eighty
//! paths. Those lookups go through a few directories (the home directory, `~/.config`, the
//! project and its `.git`): any entry added, removed or renamed in one of them changes that
//! directory's times. So [`watch`] records the directories and files as the build meets them,
//! each stamped *before* it is looked in (a change after the stamp changes the stamp), and
//! [`Watched::unchanged`] asks a dozen `stat`s instead of the eighty lookups.
//!
//! Symbolic links on the way are covered by how a path is stamped: `stat` follows them, so the
//! stamp of each prefix of a looked-up path (`/home/u`, `/home/u/.config`, …) is the inode the
//! kernel's lookup reaches there, with its times. A link re-pointed anywhere in a chain changes
//! the inode reached; an entry added, removed or renamed in the directory reached changes its
//! times; either way a stamp differs.
//!
//! Two cases are never kept, and the build runs again for every command as before:
//! - A directory changed in the last two seconds: directory times come from a coarse clock, so
//!   two changes close together can leave the same time (git's "racily clean" index).
//! - A relative path, or one with `.` or `..` in it: not checked from another directory.

use std::cell::RefCell;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

/// What a path was when it was stamped: the inode it named and the times that change when a
/// directory gains, loses or renames an entry, or a file's contents are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    /// The stamp of what `path` names (links followed), `None` when nothing is there.
    pub(crate) fn of(path: &Path) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }

    /// The inode only: for a path where only which file it names matters, not its times (a
    /// written device file changes them).
    pub(crate) fn inode_of(path: &Path) -> Option<Stamp> {
        Stamp::of(path).map(|s| Stamp {
            mtime: (0, 0),
            ctime: (0, 0),
            ..s
        })
    }

    /// Changed within the last two seconds (or in the future) as seen at `now`. Directory times
    /// come from a coarse clock, so two changes close together can leave the same time: what
    /// was built from such a directory is not kept (as git treats a "racily clean" index).
    pub(crate) fn recent(&self, now: SystemTime) -> bool {
        let now = now
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.mtime.0.max(self.ctime.0) >= now - 2
    }
}

/// The record of one [`watch`]ed build.
#[derive(Clone, Debug)]
pub struct Watched {
    /// Every directory looked in and every file read, with its stamp from before.
    stamps: Vec<(PathBuf, Option<Stamp>)>,
    /// False when the build may not be kept (see the module's doc).
    reusable: bool,
}

impl Watched {
    /// Whether what was built may still be used: it could be kept at all, and no directory it
    /// looked in and no file it read has changed since.
    pub fn unchanged(&self) -> bool {
        self.reusable && self.stamps.iter().all(|(p, s)| Stamp::of(p) == *s)
    }

    /// Whether what was built may be kept at all (see the module's doc); whether it still may
    /// is [`Watched::unchanged`].
    pub fn is_reusable(&self) -> bool {
        self.reusable
    }

    /// How many paths [`Watched::unchanged`] stats (the tests bound it).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.stamps.len()
    }

    /// The recorded paths whose stamps differ now (tests look at their own paths: other
    /// processes change the shared ancestors, such as `/tmp`, at any time).
    #[cfg(test)]
    pub(crate) fn changed(&self) -> Vec<&Path> {
        self.stamps
            .iter()
            .filter(|(p, s)| Stamp::of(p) != *s)
            .map(|(p, _)| p.as_path())
            .collect()
    }
}

thread_local! {
    /// The record of the build running on this thread, if it is watched.
    static RECORD: RefCell<Option<Record>> = const { RefCell::new(None) };
}

#[derive(Default)]
struct Record {
    stamps: Vec<(PathBuf, Option<Stamp>)>,
    /// A lookup this record cannot check later (see the module's doc).
    unsure: bool,
}

impl Record {
    fn stamp(&mut self, path: &Path) {
        if !self.stamps.iter().any(|(p, _)| p == path) {
            self.stamps.push((path.to_path_buf(), Stamp::of(path)));
        }
    }
}

/// Runs `build` on this thread and records what it looked up through this module's functions.
/// A watched build inside another one records into the outer one.
pub fn watch<T>(build: impl FnOnce() -> T) -> (T, Watched) {
    watch_at(SystemTime::now(), build)
}

/// [`watch`] as if it were `now` (tests move the clock instead of waiting).
pub(crate) fn watch_at<T>(now: SystemTime, build: impl FnOnce() -> T) -> (T, Watched) {
    let outer = RECORD.with(|r| r.borrow().is_some());
    if outer {
        let value = build();
        return (
            value,
            Watched {
                stamps: Vec::new(),
                reusable: false,
            },
        );
    }
    RECORD.with(|r| *r.borrow_mut() = Some(Record::default()));
    let value = build();
    let record = RECORD.with(|r| r.borrow_mut().take()).unwrap_or_default();
    let recent = !recency_ignored_for_tests()
        && record
            .stamps
            .iter()
            .any(|(_, s)| s.is_some_and(|s| s.recent(now)));
    (
        value,
        Watched {
            stamps: record.stamps,
            reusable: !record.unsure && !recent,
        },
    )
}

/// `GG_TEST_WATCH_SETTLED` (test-hooks builds): no directory counts as changed just now. The
/// end-to-end tests of kept policies set it so that the kept path is taken whatever else
/// changes their fixtures' ancestors; they wait a clock tick before changing anything.
#[cfg(feature = "test-hooks")]
fn recency_ignored_for_tests() -> bool {
    std::env::var_os("GG_TEST_WATCH_SETTLED").is_some()
}

#[cfg(not(feature = "test-hooks"))]
fn recency_ignored_for_tests() -> bool {
    false
}

/// Notes a lookup of `path` (its last name not followed): every directory on its way is stamped
/// (once per build) before the lookup happens.
fn note_lookup(path: &Path) {
    RECORD.with(|r| {
        let mut r = r.borrow_mut();
        let Some(record) = r.as_mut() else {
            return;
        };
        if !path.is_absolute()
            || path
                .components()
                .any(|c| matches!(c, Component::ParentDir | Component::CurDir))
        {
            record.unsure = true;
            return;
        }
        for dir in path.ancestors().skip(1) {
            record.stamp(dir);
        }
    });
}

/// Notes a lookup that follows `path` to the end (a file read, a directory listed, a link
/// followed): the path itself is stamped too.
fn note_whole(path: &Path) {
    note_lookup(path);
    RECORD.with(|r| {
        if let Some(record) = r.borrow_mut().as_mut() {
            record.stamp(path);
        }
    });
}

/// `std::fs::symlink_metadata`, noted.
pub(crate) fn symlink_metadata(path: impl AsRef<Path>) -> std::io::Result<std::fs::Metadata> {
    let path = path.as_ref();
    note_lookup(path);
    std::fs::symlink_metadata(path)
}

/// `Path::exists` (links followed), noted.
pub(crate) fn exists(path: impl AsRef<Path>) -> bool {
    let path = path.as_ref();
    note_whole(path);
    path.exists()
}

/// `std::fs::metadata` (links followed), noted.
pub(crate) fn metadata(path: impl AsRef<Path>) -> std::io::Result<std::fs::Metadata> {
    let path = path.as_ref();
    note_whole(path);
    std::fs::metadata(path)
}

/// `std::fs::canonicalize`, noted.
pub(crate) fn canonicalize(path: impl AsRef<Path>) -> std::io::Result<PathBuf> {
    let path = path.as_ref();
    note_whole(path);
    std::fs::canonicalize(path)
}

/// `std::fs::read_to_string`, noted; a FIFO or device is refused (`protected::read_settings_text`).
pub(crate) fn read_to_string(path: impl AsRef<Path>) -> std::io::Result<String> {
    let path = path.as_ref();
    note_whole(path);
    crate::protected::read_settings_text(path)
}

/// `std::fs::read_dir`, noted. The entries' own types come from the listing; a change of one
/// (a replacement) changes the directory's times.
pub(crate) fn read_dir(path: impl AsRef<Path>) -> std::io::Result<std::fs::ReadDir> {
    let path = path.as_ref();
    note_whole(path);
    std::fs::read_dir(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Sets `dir`'s times an hour back, so that it is settled for [`watch`] and a change made
    /// now is seen whatever the clock's grain.
    fn settle(dir: &Path) {
        let past = SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::open(dir)
            .unwrap()
            .set_times(
                std::fs::FileTimes::new()
                    .set_modified(past)
                    .set_accessed(past),
            )
            .unwrap();
    }

    fn looks_up(path: &Path) -> bool {
        symlink_metadata(path).is_ok()
    }

    #[test]
    fn an_entry_made_in_a_directory_looked_in_is_noticed() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir(root.join("home")).unwrap();
        // ctime cannot be set back: judge recency an hour ahead instead, with mtime set back
        // so that a change now is a different time.
        settle(&root.join("home"));
        let later = SystemTime::now() + Duration::from_secs(3600);
        let (found, watched) = watch_at(later, || looks_up(&root.join("home/.aws")));
        assert!(!found);
        assert!(watched.is_reusable(), "{watched:?}");
        assert!(!watched.changed().contains(&root.join("home").as_path()));
        std::fs::create_dir(root.join("home/.aws")).unwrap();
        assert!(
            watched.changed().contains(&root.join("home").as_path()),
            "the new entry changes home's stamp: {watched:?}"
        );
        assert!(!watched.unchanged());
    }

    #[test]
    fn a_directory_changed_just_now_is_not_kept() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir(root.join("fresh")).unwrap();
        let (_, watched) = watch(|| looks_up(&root.join("fresh/x")));
        assert!(!watched.is_reusable() && !watched.unchanged());
    }

    /// A link followed on the way is watched through the stamps of the path's prefixes: the
    /// link re-pointed (replaced, as links are) or an entry made in the directory it leads to
    /// is noticed. A relative path is not kept.
    #[test]
    fn a_link_on_the_way_is_watched_and_a_relative_path_is_not_kept() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        for d in ["real", "other"] {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        std::os::unix::fs::symlink("real", root.join("link")).unwrap();
        let past = SystemTime::now() - Duration::from_secs(3600);
        for d in ["real", "other"] {
            std::fs::File::open(root.join(d))
                .unwrap()
                .set_modified(past)
                .unwrap();
        }
        let later = SystemTime::now() + Duration::from_secs(3600);
        let (found, watched) = watch_at(later, || looks_up(&root.join("link/secret")));
        assert!(!found && watched.is_reusable(), "{watched:?}");
        assert!(!watched.changed().contains(&root.join("link").as_path()));
        // An entry made in the directory the link leads to.
        std::fs::write(root.join("real/secret"), "x").unwrap();
        assert!(
            watched.changed().contains(&root.join("link").as_path()),
            "{watched:?}"
        );
        // The link re-pointed: a different directory is reached.
        let (_, watched) = watch_at(later, || canonicalize(root.join("link")));
        std::fs::remove_file(root.join("link")).unwrap();
        std::os::unix::fs::symlink("other", root.join("link")).unwrap();
        assert!(
            watched.changed().contains(&root.join("link").as_path()),
            "{watched:?}"
        );
        let (_, relative) = watch_at(later, || looks_up(Path::new("real")));
        assert!(!relative.is_reusable());
    }

    #[test]
    fn a_file_read_is_stamped_itself() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let file = root.join("pointer");
        std::fs::write(&file, "gitdir: a\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(3600))
            .unwrap();
        let later = SystemTime::now() + Duration::from_secs(3600);
        let (_, watched) = watch_at(later, || read_to_string(&file));
        assert!(watched.is_reusable() && !watched.changed().contains(&file.as_path()));
        // Rewritten in place: the directory's entries are the same, the file's time is not.
        std::fs::write(&file, "gitdir: b\n").unwrap();
        assert!(watched.changed().contains(&file.as_path()), "{watched:?}");
    }

    #[test]
    fn nothing_is_recorded_outside_a_watch_and_a_nested_watch_is_not_kept_apart() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        assert!(!looks_up(&root.join("absent")));
        let later = SystemTime::now() + Duration::from_secs(3600);
        let ((_, inner), outer) = watch_at(later, || watch_at(later, || looks_up(&root.join("x"))));
        assert!(!inner.is_reusable());
        assert!(
            outer.len() >= 2,
            "the outer build recorded the lookup: {outer:?}"
        );
    }
}
