//! What an index knows about itself: the [`Manifest`] stored as the payload of every commit,
//! with a content hash and a [`Stamp`] per file. Apart from the store because both `add` (which
//! writes it) and opening (which reads and checks it) depend on it, and it depends on neither.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The on-disk format. Bump it whenever the schema, the analyzer or the chunker changes in a way
/// that makes an old index give different answers: an index of another version is rebuilt, never
/// read with the wrong assumptions.
///
/// 2: the vectors moved out of the document store into a file of their own (`vectors-*.bin`,
/// keyed by a new `id` fast field); a format-1 index is rebuilt by the next `add`.
pub const FORMAT: u32 = 2;

/// What the index knows about itself, stored as the payload of every commit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    pub name: String,
    /// The files and directories `add` was given, absolute.
    pub roots: Vec<PathBuf>,
    /// Glob patterns (gitignore syntax) excluded from every walk.
    #[serde(default)]
    pub excludes: Vec<String>,
    pub embed: Option<EmbedInfo>,
    /// Absolute path → what was indexed.
    pub files: BTreeMap<String, FileEntry>,
    /// Unix seconds of the last commit.
    pub updated_at: u64,
    /// The `id` the next passage gets (ids are never reused within one index directory).
    #[serde(default)]
    pub next_id: u64,
    /// The vectors file of this commit, in the index directory (set when `embed` is).
    #[serde(default)]
    pub vectors: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedInfo {
    pub model: String,
    pub dim: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// SHA-256 of the file's bytes, hex.
    pub hash: String,
    pub bytes: u64,
    pub chunks: u32,
    /// What the file looked like when it was read (absent in indexes written before stamps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<Stamp>,
}

/// A file's identity and change times when it was read, so that a refresh can skip reading and
/// hashing a file that has not changed: one `lstat` instead of a read and a SHA-256.
///
/// A write always moves `ctime` to the current time, and no program can set it back, so a file
/// whose device, inode, size, `mtime` and `ctime` all match has not been written since — with
/// one race: a write in the same clock tick as the read that was hashed leaves the same times.
/// Like git's "racily clean" entries, a stamp is therefore trusted only when the file had not
/// changed for [`Stamp::SETTLED_NS`] before it was read; a fresher file is hashed again on the
/// next refresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    /// When the `lstat` was taken, before the file was read (Unix nanoseconds).
    pub taken_ns: i64,
}

impl Stamp {
    /// How long a file must have been unchanged before its stamp stands in for its hash.
    pub const SETTLED_NS: i64 = 2_000_000_000;

    pub(super) fn of(meta: &fs::Metadata, taken_ns: i64) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        let ns = |secs: i64, nanos: i64| secs.saturating_mul(1_000_000_000).saturating_add(nanos);
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
            taken_ns,
        }
    }

    /// Whether this stamp may stand in for reading the file: it had settled when it was taken.
    pub(super) fn settled(&self) -> bool {
        self.ctime_ns.saturating_add(Self::SETTLED_NS) < self.taken_ns
            && self.mtime_ns.saturating_add(Self::SETTLED_NS) < self.taken_ns
    }

    /// Whether `now` (a fresh `lstat`) shows the same, unwritten file this settled stamp saw.
    pub(super) fn vouches_for(&self, now: &Stamp) -> bool {
        self.settled()
            && (self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns)
                == (now.dev, now.ino, now.size, now.mtime_ns, now.ctime_ns)
    }
}

pub(super) fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// The manifest of whatever index `CURRENT` names, even one of another format, to recover its
/// roots for a rebuild.
pub(super) fn read_manifest_leniently(dir: &Path) -> Option<Manifest> {
    let current = fs::read_to_string(dir.join("CURRENT")).ok()?;
    let meta = fs::read_to_string(dir.join(current.trim()).join("meta.json")).ok()?;
    let meta: serde_json::Value = serde_json::from_str(&meta).ok()?;
    let payload = meta.get("payload")?.as_str()?;
    let value: serde_json::Value = serde_json::from_str(payload).ok()?;
    let roots = value
        .get("roots")?
        .as_array()?
        .iter()
        .filter_map(|r| r.as_str().map(PathBuf::from))
        .collect();
    let excludes = value
        .get("excludes")
        .and_then(|e| e.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    Some(Manifest {
        roots,
        excludes,
        ..Manifest::default()
    })
}
