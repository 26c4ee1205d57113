//! The on-disk knowledge bases and their index.
//!
//! Layout of `~/.gg/kb/<name>/` (directories 0700):
//! - `CURRENT`: the name of the live index directory, replaced atomically (write + rename).
//! - `idx-<id>/`: a tantivy index. Its commit payload is the [`Manifest`] (format version, the
//!   roots, a content hash per file, the embedding model), so the list of indexed files and the
//!   index can never disagree: both change in the same atomic commit.
//! - `idx-<id>/vectors-<id>.bin`: with an embedding model, every passage's vector in one
//!   contiguous array ([`crate::vectors`]), keyed by the passage's `id` fast field. Each commit
//!   writes a new file before committing and names it in its manifest, so a crash leaves the
//!   previous commit with the file it names; files no manifest names are deleted after a commit.
//! - `lock`: `flock`ed by `add`/`rm`, so two writers never interleave.
//!
//! An incremental `add` changes the live index in place (tantivy's commit is atomic: a crash
//! before it leaves the previous commit). A full rebuild (first add, another format version, a
//! different embedding model) writes a fresh `idx-<id>/` and only then swaps `CURRENT`.
//!
//! The parts: [`manifest`] (what an index knows about itself), [`schema`] (the tantivy fields
//! and analyzer), [`files`] (which files are indexed and how they are read), [`dense`] (the
//! vectors of an opened commit), [`add`] (indexing) and [`search`] (BM25 and hybrid retrieval).
//! This file holds the [`Store`] and an open [`Kb`]: naming, opening, listing and removing.

mod add;
mod dense;
mod files;
mod manifest;
mod schema;
mod search;

use std::fs;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tantivy::{Index, ReloadPolicy};

use crate::KbError;
use crate::embed::Embedder;
use crate::vectors::Vectors;
use dense::Dense;
use schema::{Fields, fields_of, register_analyzer};

pub use add::{AddOptions, AddReport, FileStatus, NoProgress, Progress};
pub use manifest::{FORMAT, Manifest, Stamp};
pub use search::{Hit, Mode, SearchResult};

pub const DEFAULT_NAME: &str = "default";

/// Where all knowledge bases live (`~/.gg/kb`).
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

/// One open knowledge base, ready to search.
pub struct Kb {
    name: String,
    index: Index,
    /// The commit opened; every search reads this one, so [`Dense`]'s addresses stay valid.
    searcher: tantivy::Searcher,
    fields: Fields,
    manifest: Manifest,
    /// The index directory (`<kb>/idx-<id>`).
    dir: PathBuf,
    /// Set when the manifest has an embedding model.
    dense: Option<Dense>,
}

/// A summary for `gg kb list`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KbInfo {
    pub name: String,
    pub files: usize,
    pub chunks: u64,
    pub roots: Vec<PathBuf>,
    pub embed_model: Option<String>,
    pub updated_at: u64,
    /// Set when the index must be rebuilt (`gg kb add --name NAME`).
    pub problem: Option<String>,
}

/// `gg kb stats`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub name: String,
    pub format: u32,
    pub files: usize,
    pub chunks: u64,
    /// Bytes of the indexed source files.
    pub source_bytes: u64,
    /// Bytes the index takes on disk.
    pub index_bytes: u64,
    pub roots: Vec<PathBuf>,
    pub excludes: Vec<String>,
    pub embed_model: Option<String>,
    pub embed_dim: Option<usize>,
    pub updated_at: u64,
    pub path: PathBuf,
}

pub fn validate_name(name: &str) -> Result<(), KbError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(KbError::BadName(name.to_string()))
    }
}

fn io(context: impl std::fmt::Display, e: impl std::fmt::Display) -> KbError {
    KbError::Io(format!("{context}: {e}"))
}

fn tv(e: tantivy::TantivyError) -> KbError {
    KbError::Index(format!("index: {e}"))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn private_dir(path: &Path) -> Result<(), KbError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|e| io(path.display(), e))?;
    // An existing directory keeps its old mode through create(); tighten it.
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o700)).map_err(|e| io(path.display(), e))
}

/// Exclusive lock on `<kb>/lock`, released when dropped (and by the kernel if the process dies).
struct Lock {
    _file: fs::File,
}

fn lock(dir: &Path, name: &str) -> Result<Lock, KbError> {
    let path = dir.join("lock");
    let file = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| io(path.display(), e))?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(Lock { _file: file }),
        Err(rustix::io::Errno::WOULDBLOCK) => Err(KbError::Busy(name.to_string())),
        Err(e) => Err(io(path.display(), e)),
    }
}

impl Store {
    pub fn new(root: impl Into<PathBuf>) -> Store {
        Store { root: root.into() }
    }

    /// `<home>/.gg/kb`.
    pub fn in_home(home: &Path) -> Store {
        Store::new(home.join(".gg").join("kb"))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn dir(&self, name: &str) -> Result<PathBuf, KbError> {
        validate_name(name)?;
        Ok(self.root.join(name))
    }

    pub fn exists(&self, name: &str) -> bool {
        self.dir(name).is_ok_and(|d| d.join("CURRENT").is_file())
    }

    /// Names of the knowledge bases, sorted.
    pub fn names(&self) -> Result<Vec<String>, KbError> {
        let entries = match fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(self.root.display(), e)),
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| validate_name(n).is_ok() && self.exists(n))
            .collect();
        names.sort();
        Ok(names)
    }

    pub fn list(&self) -> Result<Vec<KbInfo>, KbError> {
        let mut out = Vec::new();
        for name in self.names()? {
            out.push(match self.open(&name) {
                Ok(kb) => KbInfo {
                    name: name.clone(),
                    files: kb.manifest.files.len(),
                    chunks: kb.num_chunks(),
                    roots: kb.manifest.roots.clone(),
                    embed_model: kb.manifest.embed.as_ref().map(|e| e.model.clone()),
                    updated_at: kb.manifest.updated_at,
                    problem: None,
                },
                Err(e) => KbInfo {
                    name: name.clone(),
                    files: 0,
                    chunks: 0,
                    roots: Vec::new(),
                    embed_model: None,
                    updated_at: 0,
                    problem: Some(e.to_string()),
                },
            });
        }
        Ok(out)
    }

    /// Opens a knowledge base for searching.
    pub fn open(&self, name: &str) -> Result<Kb, KbError> {
        let dir = self.dir(name)?;
        let current = match fs::read_to_string(dir.join("CURRENT")) {
            Ok(c) => c.trim().to_string(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(KbError::NotFound(name.to_string()));
            }
            Err(e) => return Err(io(dir.join("CURRENT").display(), e)),
        };
        let stale = |why: String| KbError::Stale {
            name: name.to_string(),
            why,
        };
        if !current.starts_with("idx-") || current.contains('/') {
            return Err(stale(format!("CURRENT names \"{current}\"")));
        }
        let index_dir = dir.join(&current);
        let index =
            Index::open_in_dir(&index_dir).map_err(|e| stale(format!("unreadable index: {e}")))?;
        register_analyzer(&index);
        let metas = index
            .load_metas()
            .map_err(|e| stale(format!("unreadable index: {e}")))?;
        let manifest: Manifest = metas
            .payload
            .as_deref()
            .and_then(|p| serde_json::from_str(p).ok())
            .ok_or_else(|| stale("no readable manifest".to_string()))?;
        if manifest.format != FORMAT {
            return Err(stale(format!(
                "written by format {}, this gg reads format {FORMAT}",
                manifest.format
            )));
        }
        let fields = fields_of(&index.schema()).map_err(stale)?;
        let reader: tantivy::IndexReader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(tv)?;
        let searcher = reader.searcher();
        let dense = match &manifest.embed {
            None => None,
            Some(info) => {
                let file = manifest
                    .vectors
                    .as_deref()
                    .filter(|f| f.starts_with("vectors-") && !f.contains('/'))
                    .ok_or_else(|| stale("the manifest names no vectors file".to_string()))?;
                let vectors = Vectors::read(&index_dir.join(file), info.dim).map_err(&stale)?;
                Some(Dense::load(&searcher, &vectors).map_err(&stale)?)
            }
        };
        Ok(Kb {
            name: name.to_string(),
            index,
            searcher,
            fields,
            manifest,
            dir: index_dir,
            dense,
        })
    }

    /// Deletes a knowledge base.
    pub fn remove(&self, name: &str) -> Result<(), KbError> {
        let dir = self.dir(name)?;
        if !dir.is_dir() {
            return Err(KbError::NotFound(name.to_string()));
        }
        let _lock = lock(&dir, name)?;
        // CURRENT first: from then on the knowledge base no longer exists for readers.
        match fs::remove_file(dir.join("CURRENT")) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(dir.display(), e)),
        }
        fs::remove_dir_all(&dir).map_err(|e| io(dir.display(), e))
    }
}

impl Kb {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    pub fn num_chunks(&self) -> u64 {
        self.searcher.num_docs()
    }

    /// Whether a search with `embedder` would be hybrid.
    pub fn dense_with(&self, embedder: Option<&dyn Embedder>) -> bool {
        matches!((&self.manifest.embed, embedder), (Some(info), Some(e)) if info.model == e.model())
    }

    pub fn stats(&self, store: &Store) -> Stats {
        let path = store.root.join(&self.name);
        Stats {
            name: self.name.clone(),
            format: self.manifest.format,
            files: self.manifest.files.len(),
            chunks: self.num_chunks(),
            source_bytes: self.manifest.files.values().map(|f| f.bytes).sum(),
            index_bytes: dir_size(&path),
            roots: self.manifest.roots.clone(),
            excludes: self.manifest.excludes.clone(),
            embed_model: self.manifest.embed.as_ref().map(|e| e.model.clone()),
            embed_dim: self.manifest.embed.as_ref().map(|e| e.dim),
            updated_at: self.manifest.updated_at,
            path,
        }
    }
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(path) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}
