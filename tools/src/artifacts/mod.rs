//! Artifacts: versioned documents the agent produces (a plan, a report), kept in gg's own store
//! apart from the working tree.
//!
//! Layout under `~/.gg/artifacts/` (or `artifacts.dir`): `artifacts.lock` (the `flock` every
//! change holds) and one directory per artifact, `<id>/artifact.json`
//! (`{id, title, type, version, published_version, created_at, updated_at}`) beside its
//! versions `v1.md`, `v2.md`, … (`.html` for HTML). A version file is created once, never
//! overwritten ([`store::create_new`]); `artifact.json` is replaced atomically and is the truth:
//! a version file above its `version` was left by a writer killed before it updated the
//! metadata, and the next writer removes it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::library::{Entry, Library};
use super::store::{self, StoreError, StoreLock};

/// The largest content of one version.
pub const MAX_CONTENT: usize = 1024 * 1024;
/// The longest title, in characters.
pub const MAX_TITLE: usize = 200;
pub const LOCK: &str = "artifacts.lock";
const META: &str = "artifact.json";

/// What an artifact holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Markdown,
    Html,
}

impl Kind {
    pub fn parse(text: &str) -> Result<Kind, StoreError> {
        match text.trim().to_ascii_lowercase().as_str() {
            "markdown" | "md" => Ok(Kind::Markdown),
            "html" => Ok(Kind::Html),
            other => Err(StoreError::Invalid(format!(
                "artifact type must be \"markdown\" or \"html\", not {other:?}"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Markdown => "markdown",
            Kind::Html => "html",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Kind::Markdown => "md",
            Kind::Html => "html",
        }
    }
}

/// An artifact's metadata (`artifact.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Artifact {
    pub id: String,
    pub title: String,
    #[serde(rename = "type")]
    pub kind: Kind,
    /// The latest version; versions are numbered from 1.
    pub version: u32,
    /// The version last published into the library, if any.
    pub published_version: Option<u32>,
    pub created_at: String,
    pub updated_at: String,
}

impl Artifact {
    /// The file name of version `n`.
    pub fn file_of(&self, n: u32) -> String {
        format!("v{n}.{}", self.kind.extension())
    }
}

/// The artifact store at one root directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

/// Checks a title and content as the tools and the CLI take them.
pub fn validate(title: Option<&str>, content: &str) -> Result<(), StoreError> {
    if let Some(title) = title {
        if title.trim().is_empty() {
            return Err(StoreError::Invalid("artifact title is empty".into()));
        }
        if title.chars().count() > MAX_TITLE {
            return Err(StoreError::Invalid(format!(
                "artifact title is longer than {MAX_TITLE} characters"
            )));
        }
        if title.chars().any(char::is_control) {
            return Err(StoreError::Invalid(
                "artifact title contains control characters".into(),
            ));
        }
    }
    if content.len() > MAX_CONTENT {
        return Err(StoreError::Invalid(format!(
            "artifact content is {}, more than the limit of {} per version",
            store::human_size(content.len() as u64),
            store::human_size(MAX_CONTENT as u64)
        )));
    }
    Ok(())
}

/// An artifact id as stored: 12 lower-case hex digits (anything else never reaches a path).
fn is_id(text: &str) -> bool {
    text.len() == 12 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A title as a file-name stem: lower-case letters and digits, `-` and `_`; spaces and other
/// characters become `-`; `unnamed` when nothing is left.
pub fn slug(title: &str) -> String {
    let mut out = String::new();
    for ch in title.trim().chars() {
        let c = ch.to_lowercase().next().unwrap_or(ch);
        if c.is_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out: String = out.trim_matches('-').chars().take(80).collect();
    if out.is_empty() {
        "unnamed".to_string()
    } else {
        out
    }
}

impl Store {
    pub fn new(root: PathBuf) -> Store {
        Store { root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn dir_of(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    fn lock(&self) -> Result<StoreLock, StoreError> {
        store::create_private_dir(&self.root)
            .map_err(|e| StoreError::io(self.root.display(), e))?;
        StoreLock::acquire(&self.root.join(LOCK))
            .map_err(|e| StoreError::io("the artifact lock", e))
    }

    fn load(&self, id: &str) -> Result<Artifact, StoreError> {
        let not_found = || StoreError::NotFound(format!("no artifact {id:?}"));
        if !is_id(id) {
            return Err(not_found());
        }
        let path = self.dir_of(id).join(META);
        let bytes = match store::read_regular(&path, 64 * 1024) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found()),
            Err(e) => return Err(StoreError::io(path.display(), e)),
        };
        let artifact: Artifact = serde_json::from_slice(&bytes)
            .map_err(|e| StoreError::Io(format!("{}: {e}", path.display())))?;
        if artifact.id != id || artifact.version == 0 {
            return Err(StoreError::Io(format!(
                "{} does not describe artifact {id}",
                path.display()
            )));
        }
        Ok(artifact)
    }

    fn save(&self, artifact: &Artifact) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(artifact)
            .map_err(|e| StoreError::Io(format!("encoding artifact metadata: {e}")))?;
        let dir = self.dir_of(&artifact.id);
        store::write_atomic(&dir, META, &bytes, "artifact-meta")
            .map_err(|e| StoreError::io(dir.join(META).display(), e))
    }

    /// Resolves what a person typed: a full id or a unique prefix of at least 4 digits.
    pub fn resolve(&self, key: &str) -> Result<String, StoreError> {
        if is_id(key) {
            return Ok(key.to_string());
        }
        let not_found = || StoreError::NotFound(format!("no artifact {key:?}"));
        if key.len() < 4 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(not_found());
        }
        let key = key.to_ascii_lowercase();
        let matches: Vec<String> = self
            .list()?
            .into_iter()
            .map(|a| a.id)
            .filter(|id| id.starts_with(&key))
            .collect();
        match matches.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(not_found()),
            _ => Err(StoreError::Invalid(format!(
                "{key:?} matches several artifacts: {}",
                matches.join(", ")
            ))),
        }
    }

    /// Every artifact, most recently updated first. Directories without readable metadata (a
    /// create killed half-way, a removal in progress) are not listed.
    pub fn list(&self) -> Result<Vec<Artifact>, StoreError> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io(self.root.display(), e)),
        };
        let mut out: Vec<Artifact> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|name| is_id(name))
            .filter_map(|id| self.load(&id).ok())
            .collect();
        out.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// The metadata of one artifact.
    pub fn get(&self, id: &str) -> Result<Artifact, StoreError> {
        self.load(id)
    }

    /// The content of version `version` (default: the latest).
    pub fn read(
        &self,
        id: &str,
        version: Option<u32>,
    ) -> Result<(Artifact, u32, String), StoreError> {
        let artifact = self.load(id)?;
        let n = version.unwrap_or(artifact.version);
        if n == 0 || n > artifact.version {
            return Err(StoreError::NotFound(format!(
                "artifact {id} has no version {n} (latest is v{})",
                artifact.version
            )));
        }
        let path = self.dir_of(id).join(artifact.file_of(n));
        let bytes = store::read_regular(&path, MAX_CONTENT as u64)
            .map_err(|e| StoreError::io(path.display(), e))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| StoreError::Io(format!("{} is not UTF-8", path.display())))?;
        Ok((artifact, n, text))
    }

    /// `artifact_create`: a new artifact at version 1.
    pub fn create(&self, title: &str, kind: Kind, content: &str) -> Result<Artifact, StoreError> {
        validate(Some(title), content)?;
        let _lock = self.lock()?;
        self.sweep();
        let id = loop {
            let id = store::new_id();
            match std::fs::create_dir(self.dir_of(&id)) {
                Ok(()) => break id,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(StoreError::io(self.root.display(), e)),
            }
        };
        // The new directory's entry must be durable before anything inside it is.
        store::sync_dir(&self.root);
        let now = store::now_rfc3339();
        let artifact = Artifact {
            id: id.clone(),
            title: title.trim().to_string(),
            kind,
            version: 1,
            published_version: None,
            created_at: now.clone(),
            updated_at: now,
        };
        let dir = self.dir_of(&id);
        store::create_new(
            &dir,
            &artifact.file_of(1),
            content.as_bytes(),
            "artifact-version",
        )
        .map_err(|e| StoreError::io(dir.display(), e))?;
        self.save(&artifact)?;
        Ok(artifact)
    }

    /// `artifact_edit`: version `shown + 1` with `content`, only if `shown` is still the latest
    /// (the edit was approved as a diff against it).
    pub fn edit(&self, id: &str, content: &str, shown: u32) -> Result<Artifact, StoreError> {
        validate(None, content)?;
        let _lock = self.lock()?;
        let mut artifact = self.load(id)?;
        if artifact.version != shown {
            return Err(StoreError::Stale {
                id: id.to_string(),
                shown,
                now: artifact.version,
            });
        }
        let next = artifact.version + 1;
        let dir = self.dir_of(id);
        // A version above the metadata's was left by a writer killed before its metadata
        // update; it was never visible, so it is not an immutable version yet.
        store::sweep_temps(&dir);
        let _ = std::fs::remove_file(dir.join(artifact.file_of(next)));
        store::create_new(
            &dir,
            &artifact.file_of(next),
            content.as_bytes(),
            "artifact-version",
        )
        .map_err(|e| StoreError::io(dir.display(), e))?;
        artifact.version = next;
        artifact.updated_at = store::now_rfc3339();
        self.save(&artifact)?;
        Ok(artifact)
    }

    /// `gg artifact remove`: the directory is renamed out of sight first, so a removal killed
    /// half-way never leaves a half artifact listed.
    pub fn remove(&self, id: &str) -> Result<Artifact, StoreError> {
        let _lock = self.lock()?;
        let artifact = self.load(id)?;
        let hidden = self.root.join(format!(".removed-{id}-{}", store::new_id()));
        std::fs::rename(self.dir_of(id), &hidden)
            .map_err(|e| StoreError::io(self.dir_of(id).display(), e))?;
        std::fs::remove_dir_all(&hidden).map_err(|e| StoreError::io(hidden.display(), e))?;
        Ok(artifact)
    }

    /// Publishes the latest version into `library`: the bytes are copied into the library
    /// first (as `<slug>.<ext>`, source `artifact:<id>`), then the artifact is marked published.
    /// If the artifact's version changed in between, the library copy is taken back (unless a
    /// later publish has replaced it already) and the publish fails with
    /// [`StoreError::VersionChanged`]. No lock is held across both stores.
    pub fn publish(&self, id: &str, library: &Library) -> Result<(Artifact, Entry), StoreError> {
        let (artifact, version, content) = {
            let _lock = self.lock()?;
            self.read(id, None)?
        };
        let put = library.put(
            &slug(&artifact.title),
            artifact.kind.extension(),
            id,
            &format!("artifact:{id}"),
            content.as_bytes(),
        )?;
        store::pause_point("publish.after-copy");
        let marked = {
            let _lock = self.lock()?;
            let mut now = self.load(id)?;
            if now.version == version {
                now.published_version = Some(version);
                self.save(&now).map(|()| Ok(now))
            } else {
                Ok(Err(now.version))
            }
        };
        match marked {
            Ok(Ok(now)) => Ok((now, put.entry)),
            Ok(Err(to)) => {
                library.take_back(put)?;
                Err(StoreError::VersionChanged {
                    id: id.to_string(),
                    from: version,
                    to,
                })
            }
            Err(e) => {
                // The artifact vanished or could not be marked: do not leave an unmarked copy.
                let _ = library.take_back(put);
                Err(e)
            }
        }
    }

    /// Removes what killed writers left at the top level: temporary files, directories being
    /// removed, and directories whose create never wrote metadata. Call holding the lock.
    fn sweep(&self) {
        store::sweep_temps(&self.root);
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let removing = name.starts_with(".removed-");
            let never_created = is_id(&name) && !path.join(META).exists();
            if removing || never_created {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stores() -> (tempfile::TempDir, Store, Library) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("artifacts"));
        let library = Library::new(dir.path().join("library"));
        (dir, store, library)
    }

    #[test]
    fn versions_are_immutable_and_edits_need_the_shown_version() {
        let (_d, store, _) = stores();
        let a = store
            .create("Release plan", Kind::Markdown, "one\n")
            .unwrap();
        assert_eq!(a.version, 1);
        let b = store.edit(&a.id, "two\n", 1).unwrap();
        assert_eq!(b.version, 2);
        let stale = store.edit(&a.id, "three\n", 1).unwrap_err();
        assert!(matches!(stale, StoreError::Stale { now: 2, .. }), "{stale}");
        assert_eq!(store.read(&a.id, Some(1)).unwrap().2, "one\n");
        assert_eq!(store.read(&a.id, None).unwrap().2, "two\n");
        assert!(store.read(&a.id, Some(3)).is_err());
        assert_eq!(store.resolve(&a.id[..6]).unwrap(), a.id);
        assert!(store.resolve("../x").is_err());
        assert_eq!(store.list().unwrap().len(), 1);
        store.remove(&a.id).unwrap();
        assert!(store.list().unwrap().is_empty());
    }

    #[test]
    fn limits() {
        let (_d, store, _) = stores();
        assert!(store.create("", Kind::Markdown, "x").is_err());
        assert!(store.create("t\u{1b}[2J", Kind::Markdown, "x").is_err());
        let big = "x".repeat(MAX_CONTENT + 1);
        assert!(store.create("t", Kind::Html, &big).is_err());
        assert!(Kind::parse("pdf").is_err());
        assert_eq!(slug("  Q3 Report: Final!  "), "q3-report-final");
        assert_eq!(slug("!!!"), "unnamed");
    }

    #[test]
    fn publish_copies_then_marks() {
        let (_d, store, library) = stores();
        let a = store.create("Plan", Kind::Html, "<p>x</p>").unwrap();
        let (marked, entry) = store.publish(&a.id, &library).unwrap();
        assert_eq!(marked.published_version, Some(1));
        assert_eq!(entry.name, "plan.html");
        assert_eq!(entry.source, format!("artifact:{}", a.id));
        assert_eq!(
            std::fs::read_to_string(library.path_of(&entry)).unwrap(),
            "<p>x</p>"
        );
    }
}
