//! The library: a person's own files, copied into `~/.gg/library/` (or `library.dir`) and
//! reachable from any workspace through `library_search` and `library_read`.
//!
//! Layout: the files themselves, flat, under their library names; `index.json`
//! (`{"entries": [{id, name, source, size, added_at}]}`) lists them; `library.lock` is the
//! `flock` every change holds. Names are unique case-insensitively, `index.json` and
//! `library.lock` are reserved, and each file is at most 50 MiB, checked on the bytes copied.
//! Only the person adds and removes files (`gg library`, or publishing an artifact); the model
//! only reads, confined to this directory (see [`read`]).

mod ranked;
mod read;

pub use ranked::{Passage, Ranked, search as search_ranked};
pub use read::{ReadRequest, SearchHit, read_file, search};

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::store::{self, StoreError, StoreLock};

/// The largest file the library takes.
pub const MAX_FILE: u64 = 50 * 1024 * 1024;
pub const INDEX: &str = "index.json";
pub const LOCK: &str = "library.lock";

/// One library file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub id: String,
    /// The file's name in the library (unique, case-insensitively).
    pub name: String,
    /// Where it came from: the original path, or `artifact:<id>` for a published artifact.
    pub source: String,
    pub size: u64,
    pub added_at: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Index {
    entries: Vec<Entry>,
}

/// What [`Library::put`] replaced, kept so a publish that loses the version race can put it
/// back.
#[derive(Debug)]
pub struct Put {
    pub entry: Entry,
    replaced: Option<(Entry, Vec<u8>)>,
}

/// The library at one root directory.
#[derive(Debug, Clone)]
pub struct Library {
    root: PathBuf,
}

impl Library {
    pub fn new(root: PathBuf) -> Library {
        Library { root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path of an entry's file.
    pub fn path_of(&self, entry: &Entry) -> PathBuf {
        self.root.join(&entry.name)
    }

    fn lock(&self) -> Result<StoreLock, StoreError> {
        store::create_private_dir(&self.root)
            .map_err(|e| StoreError::io(self.root.display(), e))?;
        let lock = StoreLock::acquire(&self.root.join(LOCK))
            .map_err(|e| StoreError::io("the library lock", e))?;
        // Holding the lock, no live writer has a temporary file here.
        store::sweep_temps(&self.root);
        Ok(lock)
    }

    fn load(&self) -> Result<Index, StoreError> {
        let path = self.root.join(INDEX);
        match store::read_regular(&path, 64 * 1024 * 1024) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                // Never write over an index we cannot read: that would lose every entry.
                StoreError::Io(format!(
                    "{} is not a valid library index ({e}); fix or move it first",
                    path.display()
                ))
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Index::default()),
            Err(e) => Err(StoreError::io(path.display(), e)),
        }
    }

    fn save(&self, index: &Index) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(index)
            .map_err(|e| StoreError::Io(format!("encoding the library index: {e}")))?;
        store::write_atomic(&self.root, INDEX, &bytes, "library-index")
            .map_err(|e| StoreError::io(self.root.join(INDEX).display(), e))
    }

    /// The entries, in the order they were added. The index is replaced atomically, so reading
    /// needs no lock.
    pub fn list(&self) -> Result<Vec<Entry>, StoreError> {
        Ok(self.load()?.entries)
    }

    /// The entry whose id is `key`, else whose name is `key` (case-insensitively).
    pub fn find(&self, key: &str) -> Result<Entry, StoreError> {
        let entries = self.list()?;
        find_in(&entries, key)
            .cloned()
            .ok_or_else(|| StoreError::NotFound(format!("no library file {key:?}")))
    }

    /// `gg library add <path> [--name NAME]`: copies the file in (following a symlink the
    /// person named: it is their own command).
    pub fn add(&self, source: &Path, name: Option<&str>) -> Result<Entry, StoreError> {
        let name = match name {
            Some(n) => n.to_string(),
            None => source
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .ok_or_else(|| {
                    StoreError::Invalid(format!("{} names no file", source.display()))
                })?,
        };
        validate_name(&name)?;
        // O_NONBLOCK: a FIFO named by mistake must not hang the open (it is refused below);
        // it changes nothing for the regular files that are accepted.
        let mut file = std::os::unix::fs::OpenOptionsExt::custom_flags(
            std::fs::OpenOptions::new().read(true),
            rustix::fs::OFlags::NONBLOCK.bits() as i32,
        )
        .open(source)
        .map_err(|e| StoreError::io(source.display(), e))?;
        let meta = file
            .metadata()
            .map_err(|e| StoreError::io(source.display(), e))?;
        if !meta.is_file() {
            return Err(StoreError::Invalid(format!(
                "{} is not a regular file",
                source.display()
            )));
        }
        // Judged on the descriptor that is copied from (where it really is, and what it is: a
        // hard link to a secret too), never on the name again, which a link swapped in since
        // the open would redirect.
        store::pause_point("library.add-opened");
        let canonical = crate::paths::fd_path(&file).unwrap_or_else(|| source.to_path_buf());
        if crate::paths::DenyRead::everywhere().covers_open(&file) {
            // Followed through a link or named directly: a secret is never copied in, where
            // the model could read it.
            return Err(StoreError::Invalid(format!(
                "{} is {}, which is hidden from every tool: secrets are never added",
                source.display(),
                canonical.display()
            )));
        }
        let origin = canonical.display().to_string();
        let _lock = self.lock()?;
        let mut index = self.load()?;
        if let Some(taken) = index.entries.iter().find(|e| same_name(&e.name, &name)) {
            return Err(StoreError::Invalid(format!(
                "the library already has {:?} (id {}); remove it first or choose another --name",
                taken.name, taken.id
            )));
        }
        let (tmp, size) = store::copy_to_temp(&mut file, &self.root, &name, MAX_FILE)
            .map_err(|e| StoreError::Io(format!("{}: {e}; nothing added", source.display())))?;
        store::commit_temp(&tmp, &self.root, &name, "library-file")
            .map_err(|e| StoreError::io(self.root.join(&name).display(), e))?;
        let entry = Entry {
            id: unique_id(&index.entries),
            name,
            source: origin,
            size,
            added_at: store::now_rfc3339(),
        };
        index.entries.push(entry.clone());
        self.save(&index)?;
        Ok(entry)
    }

    /// Puts `bytes` into the library as the copy of `source` (a published artifact). An entry
    /// from the same source is replaced and keeps its name; otherwise the name is `stem.ext`,
    /// or `stem-<suffix>.ext` when that is taken by another file.
    pub fn put(
        &self,
        stem: &str,
        ext: &str,
        suffix: &str,
        source: &str,
        bytes: &[u8],
    ) -> Result<Put, StoreError> {
        if bytes.len() as u64 > MAX_FILE {
            return Err(StoreError::Invalid(format!(
                "larger than the library's limit of {}",
                store::human_size(MAX_FILE)
            )));
        }
        let _lock = self.lock()?;
        let mut index = self.load()?;
        let previous = index.entries.iter().position(|e| e.source == source);
        let name = match previous {
            Some(i) => index.entries[i].name.clone(),
            None => {
                let plain = format!("{stem}.{ext}");
                let other = format!("{stem}-{suffix}.{ext}");
                [plain, other]
                    .into_iter()
                    .find(|n| {
                        validate_name(n).is_ok()
                            && !index.entries.iter().any(|e| same_name(&e.name, n))
                    })
                    .ok_or_else(|| {
                        StoreError::Invalid(format!(
                            "the library already has files named {stem}.{ext} and \
                             {stem}-{suffix}.{ext}"
                        ))
                    })?
            }
        };
        let replaced = match previous {
            Some(i) => {
                let old = index.entries.remove(i);
                let old_bytes = store::read_regular(&self.path_of(&old), MAX_FILE)
                    .map_err(|e| StoreError::io(self.path_of(&old).display(), e))?;
                Some((old, old_bytes))
            }
            None => None,
        };
        store::write_atomic(&self.root, &name, bytes, "library-file")
            .map_err(|e| StoreError::io(self.root.join(&name).display(), e))?;
        let entry = Entry {
            id: unique_id(&index.entries),
            name,
            source: source.to_string(),
            size: bytes.len() as u64,
            added_at: store::now_rfc3339(),
        };
        index.entries.push(entry.clone());
        self.save(&index)?;
        Ok(Put { entry, replaced })
    }

    /// Takes back a [`Library::put`]: if its entry is still the current one (no later put
    /// replaced it), the copy it replaced comes back, or the entry and file are removed.
    /// Returns whether anything was changed.
    pub fn take_back(&self, put: Put) -> Result<bool, StoreError> {
        let _lock = self.lock()?;
        let mut index = self.load()?;
        let Some(at) = index.entries.iter().position(|e| e.id == put.entry.id) else {
            return Ok(false);
        };
        index.entries.remove(at);
        match put.replaced {
            Some((old, bytes)) => {
                store::write_atomic(&self.root, &old.name, &bytes, "library-file")
                    .map_err(|e| StoreError::io(self.path_of(&old).display(), e))?;
                index.entries.push(old);
                self.save(&index)?;
            }
            None => {
                self.save(&index)?;
                let _ = std::fs::remove_file(self.path_of(&put.entry));
            }
        }
        Ok(true)
    }

    /// `gg library remove <id|name>`: drops the entry, then its file.
    pub fn remove(&self, key: &str) -> Result<Entry, StoreError> {
        let _lock = self.lock()?;
        let mut index = self.load()?;
        let at = find_in(&index.entries, key)
            .and_then(|found| index.entries.iter().position(|e| e.id == found.id))
            .ok_or_else(|| StoreError::NotFound(format!("no library file {key:?}")))?;
        let entry = index.entries.remove(at);
        self.save(&index)?;
        match std::fs::remove_file(self.path_of(&entry)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io(self.path_of(&entry).display(), e)),
        }
        Ok(entry)
    }
}

fn find_in<'a>(entries: &'a [Entry], key: &str) -> Option<&'a Entry> {
    entries
        .iter()
        .find(|e| e.id == key)
        .or_else(|| entries.iter().find(|e| same_name(&e.name, key)))
}

fn same_name(a: &str, b: &str) -> bool {
    a.to_lowercase() == b.to_lowercase()
}

fn unique_id(entries: &[Entry]) -> String {
    loop {
        let id = store::new_id();
        if !entries.iter().any(|e| e.id == id) {
            return id;
        }
    }
}

/// A library name is one path component a person can type: not empty, not hidden, no `/`, no
/// control characters, at most 255 bytes, and not one of the store's own files.
pub fn validate_name(name: &str) -> Result<(), StoreError> {
    let bad = |why: &str| StoreError::Invalid(format!("library name {name:?} {why}"));
    if name.is_empty() || name.trim().is_empty() {
        return Err(bad("is empty"));
    }
    if name.len() > 255 {
        return Err(bad("is longer than 255 bytes"));
    }
    if name.starts_with('.') {
        return Err(bad("starts with '.'"));
    }
    if name.contains('/') || name.contains('\\') {
        return Err(bad("contains a path separator"));
    }
    if name.chars().any(char::is_control) {
        return Err(bad("contains control characters"));
    }
    if same_name(name, INDEX) || same_name(name, LOCK) {
        return Err(bad("is reserved for the library's own files"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for bad in [
            "",
            " ",
            ".hidden",
            "a/b",
            "..",
            "INDEX.json",
            "library.lock",
            "a\u{1b}b",
        ] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
        for good in ["notes.md", "Rapport 2024.pdf", "ü.txt"] {
            assert!(validate_name(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn add_list_collide_remove() {
        let dir = tempfile::tempdir().unwrap();
        let lib = Library::new(dir.path().join("library"));
        let src = dir.path().join("Notes.md");
        std::fs::write(&src, "hello").unwrap();
        let entry = lib.add(&src, None).unwrap();
        assert_eq!(entry.name, "Notes.md");
        assert_eq!(entry.size, 5);
        let e = lib.add(&src, Some("notes.MD")).unwrap_err();
        assert!(e.to_string().contains("already has"), "{e}");
        assert_eq!(lib.find("NOTES.md").unwrap().id, entry.id);
        assert_eq!(lib.remove(&entry.id).unwrap().name, "Notes.md");
        assert!(lib.list().unwrap().is_empty());
        assert!(!dir.path().join("library/Notes.md").exists());
    }

    #[test]
    fn put_replaces_its_own_source_and_take_back_restores_it() {
        let dir = tempfile::tempdir().unwrap();
        let lib = Library::new(dir.path().to_path_buf());
        let first = lib.put("plan", "md", "abc", "artifact:abc", b"v1").unwrap();
        assert_eq!(first.entry.name, "plan.md");
        let second = lib.put("plan", "md", "abc", "artifact:abc", b"v2").unwrap();
        assert_eq!(second.entry.name, "plan.md");
        assert_eq!(lib.list().unwrap().len(), 1);
        // Another artifact with the same title gets the suffixed name.
        let other = lib.put("plan", "md", "def", "artifact:def", b"x").unwrap();
        assert_eq!(other.entry.name, "plan-def.md");
        // Taking back a put that a later put replaced changes nothing.
        assert!(!lib.take_back(first).unwrap());
        assert_eq!(std::fs::read(dir.path().join("plan.md")).unwrap(), b"v2");
        // Taking back the current one brings back what it replaced.
        assert!(lib.take_back(second).unwrap());
        assert_eq!(std::fs::read(dir.path().join("plan.md")).unwrap(), b"v1");
        assert!(lib.take_back(other).unwrap());
        assert!(!dir.path().join("plan-def.md").exists());
    }

    #[test]
    fn a_fifo_is_refused_without_hanging() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let lib = Library::new(dir.path().join("lib"));
        let e = lib.add(&fifo, None).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }

    #[test]
    fn a_corrupt_index_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(INDEX), "{not json").unwrap();
        let lib = Library::new(dir.path().to_path_buf());
        let src = dir.path().join("x.txt");
        std::fs::write(&src, "x").unwrap();
        assert!(lib.add(&src, None).is_err());
        assert_eq!(
            std::fs::read_to_string(dir.path().join(INDEX)).unwrap(),
            "{not json"
        );
    }
}
