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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tantivy::collector::{DocSetCollector, TopDocs};
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    FAST, Field, IndexRecordOption, STORED, STRING, Schema, TantivyDocument, TextFieldIndexing,
    TextOptions, Value,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer,
};
use tantivy::{DocAddress, Index, IndexWriter, ReloadPolicy, Term};

use crate::KbError;
use crate::chunk::{self, Chunk, Kind};
use crate::embed::{self, Embedder};
use crate::vectors::Vectors;

/// The on-disk format. Bump it whenever the schema, the analyzer or the chunker changes in a way
/// that makes an old index give different answers: an index of another version is rebuilt, never
/// read with the wrong assumptions.
///
/// 2: the vectors moved out of the document store into a file of their own (`vectors-*.bin`,
/// keyed by a new `id` fast field); a format-1 index is rebuilt by the next `add`.
pub const FORMAT: u32 = 2;

pub const DEFAULT_NAME: &str = "default";

/// Files larger than this are skipped: at that size a "text" file is data, not notes.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Bytes probed for a NUL to call a file binary (what git and ripgrep do).
const BINARY_PROBE: usize = 8192;
/// Directories never worth indexing even without a `.gitignore` saying so.
const SKIP_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    "target",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".mypy_cache",
];
/// Reciprocal rank fusion's constant (Cormack et al.): damps the head of each list so one
/// retriever's top hit cannot drown the other's.
const RRF_K: f32 = 60.0;
const ANALYZER: &str = "kb";

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

    fn of(meta: &fs::Metadata, taken_ns: i64) -> Stamp {
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
    fn settled(&self) -> bool {
        self.ctime_ns.saturating_add(Self::SETTLED_NS) < self.taken_ns
            && self.mtime_ns.saturating_add(Self::SETTLED_NS) < self.taken_ns
    }

    /// Whether `now` (a fresh `lstat`) shows the same, unwritten file this settled stamp saw.
    fn vouches_for(&self, now: &Stamp) -> bool {
        self.settled()
            && (self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns)
                == (now.dev, now.ino, now.size, now.mtime_ns, now.ctime_ns)
    }
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

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

/// The opened commit's vectors in the searcher's document order, for an exact scan over one
/// contiguous slice: row `i` of `data` is the passage at `addrs[i]`, whose `id` is `ids[i]`.
struct Dense {
    dim: usize,
    addrs: Vec<DocAddress>,
    ids: Vec<u64>,
    data: Vec<f32>,
}

impl Dense {
    /// Lines up the vectors file with the searcher's live documents: every live passage must
    /// have exactly one vector and every vector a live passage.
    fn load(searcher: &tantivy::Searcher, file: &Vectors) -> Result<Dense, String> {
        let dim = file.dim();
        let mut dense = Dense {
            dim,
            addrs: Vec::with_capacity(file.len()),
            ids: Vec::with_capacity(file.len()),
            data: Vec::with_capacity(file.len().saturating_mul(dim)),
        };
        let mut used = vec![false; file.len()];
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let segment_ord =
                u32::try_from(ord).map_err(|_| "too many index segments".to_string())?;
            let ids = segment
                .fast_fields()
                .u64("id")
                .map_err(|e| format!("passage ids: {e}"))?;
            for doc_id in 0..segment.max_doc() {
                if segment.is_deleted(doc_id) {
                    continue;
                }
                let id = ids
                    .first(doc_id)
                    .ok_or_else(|| "a passage has no id".to_string())?;
                let (row, vector) = file
                    .find(id)
                    .and_then(|row| Some((row, file.row(row)?)))
                    .ok_or_else(|| format!("the vectors file has no vector for passage {id}"))?;
                if std::mem::replace(&mut used[row], true) {
                    return Err(format!("two passages share the id {id}"));
                }
                dense.addrs.push(DocAddress::new(segment_ord, doc_id));
                dense.ids.push(id);
                dense.data.extend_from_slice(vector);
            }
        }
        if dense.addrs.len() != file.len() {
            return Err(format!(
                "the vectors file holds {} vectors for {} passages",
                file.len(),
                dense.addrs.len()
            ));
        }
        Ok(dense)
    }

    fn rows(&self) -> impl Iterator<Item = (DocAddress, u64, &[f32])> + '_ {
        // dim 0 only with no rows (an index of nothing), where chunks_exact(1) yields nothing.
        self.addrs
            .iter()
            .zip(&self.ids)
            .zip(self.data.chunks_exact(self.dim.max(1)))
            .map(|((addr, id), v)| (*addr, *id, v))
    }
}

#[derive(Debug, Clone, Copy)]
struct Fields {
    path: Field,
    title: Field,
    heading: Field,
    body: Field,
    start: Field,
    end: Field,
    /// The passage's id, the key of its vector in the vectors file (a fast field).
    id: Field,
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

/// One passage found by a search.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    pub file: String,
    pub heading: Vec<String>,
    pub start_line: u32,
    pub end_line: u32,
    pub text: String,
    /// The fused score (RRF) in hybrid mode, the BM25 score otherwise.
    pub score: f32,
    /// 1-based ranks in each retriever's list, when it found the passage.
    pub bm25_rank: Option<usize>,
    pub dense_rank: Option<usize>,
}

impl Hit {
    /// `file:start-end`, the form every frontend cites.
    pub fn location(&self) -> String {
        format!("{}:{}-{}", self.file, self.start_line, self.end_line)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Bm25,
    Hybrid,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    pub hits: Vec<Hit>,
    pub mode: Mode,
    /// Why a hybrid search fell back to BM25, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What happened to one file during `add`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileStatus {
    Indexed { chunks: u32 },
    Unchanged,
    Removed,
    Skipped(String),
}

/// Reports indexing progress (a progress bar on a terminal, lines otherwise).
pub trait Progress {
    /// The walk found `total` candidate files.
    fn start(&mut self, _total: usize) {}
    /// One file handled (`done` of `total`).
    fn file(&mut self, _done: usize, _path: &Path, _status: &FileStatus) {}
    /// A phase message ("embedding 120 passages", "committing").
    fn note(&mut self, _message: &str) {}
}

pub struct NoProgress;
impl Progress for NoProgress {}

/// Options of one `add`.
#[derive(Default)]
pub struct AddOptions<'a> {
    /// Glob patterns (gitignore syntax, e.g. `print.html`, `drafts/`) never indexed; remembered.
    pub excludes: Vec<String>,
    /// Builds vectors for dense retrieval. Changing the model (or adding/removing it) rebuilds.
    pub embedder: Option<&'a dyn Embedder>,
    /// Canonical paths never read (the caller's deny-read policy: credential stores, gg's own
    /// state, secret files): a root that lies inside one is refused, and a file inside one is
    /// skipped, wherever the walk meets it (`kb add ~/.config`, a symlink named as a root).
    pub deny_read: Vec<PathBuf>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AddReport {
    pub indexed: usize,
    pub unchanged: usize,
    pub removed: usize,
    pub skipped: usize,
    pub chunks_added: usize,
    /// Bytes of the files read and chunked this time.
    pub bytes_indexed: u64,
    /// Files read and hashed this time; the other unchanged ones were vouched for by their
    /// [`Stamp`] without being read.
    pub files_read: usize,
    /// Whether the whole index was rebuilt (first add, other format, other embedding model).
    pub rebuilt: bool,
    pub files: usize,
    pub chunks: u64,
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

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    // BM25 needs term frequencies, not positions: WithFreqs keeps the index small.
    let text = |stored: bool| {
        let options = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(ANALYZER)
                .set_index_option(IndexRecordOption::WithFreqs),
        );
        if stored {
            options.set_stored()
        } else {
            options
        }
    };
    let fields = Fields {
        path: builder.add_text_field("path", STRING | STORED),
        title: builder.add_text_field("title", text(false)),
        heading: builder.add_text_field("heading", STORED),
        body: builder.add_text_field("body", text(true)),
        start: builder.add_u64_field("start", STORED),
        end: builder.add_u64_field("end", STORED),
        id: builder.add_u64_field("id", FAST),
    };
    (builder.build(), fields)
}

fn register_analyzer(index: &Index) {
    let analyzer = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(Stemmer::new(Language::English))
        .build();
    index.tokenizers().register(ANALYZER, analyzer);
}

fn fields_of(schema: &Schema) -> Result<Fields, String> {
    let get = |name: &str| {
        schema
            .get_field(name)
            .map_err(|_| format!("the index has no field \"{name}\""))
    };
    Ok(Fields {
        path: get("path")?,
        title: get("title")?,
        heading: get("heading")?,
        body: get("body")?,
        start: get("start")?,
        end: get("end")?,
        id: get("id")?,
    })
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

/// Injected failure points for the crash-safety tests: `GG_KB_TEST_CRASH=<point>` aborts the
/// process there, as a kill would.
fn crash_point(point: &str) {
    #[cfg(feature = "test-hooks")]
    if std::env::var("GG_KB_TEST_CRASH").is_ok_and(|v| v == point) {
        std::process::abort();
    }
    #[cfg(not(feature = "test-hooks"))]
    let _ = point;
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

    /// Indexes `paths` into the knowledge base `name` (created if needed), re-scanning every root
    /// it already has: new and changed files are (re)indexed, deleted ones dropped. With no paths
    /// it refreshes the existing roots (and rebuilds an index of another format).
    pub fn add(
        &self,
        name: &str,
        paths: &[PathBuf],
        options: &AddOptions<'_>,
        progress: &mut dyn Progress,
    ) -> Result<AddReport, KbError> {
        self.add_and_open(name, paths, options, progress)
            .map(|(report, _)| report)
    }

    /// [`Store::add`], and the knowledge base as it now is, open for searching: a refresh
    /// before a search (the library's) then opens the index once, not twice.
    pub fn add_and_open(
        &self,
        name: &str,
        paths: &[PathBuf],
        options: &AddOptions<'_>,
        progress: &mut dyn Progress,
    ) -> Result<(AddReport, Kb), KbError> {
        let dir = self.dir(name)?;
        private_dir(&self.root)?;
        let mut new_roots = Vec::new();
        for path in paths {
            let absolute = fs::canonicalize(path)
                .map_err(|e| KbError::BadPath(format!("{}: {e}", path.display())))?;
            if let Some(secret) = options.deny_read.iter().find(|d| absolute.starts_with(d)) {
                return Err(KbError::BadPath(format!(
                    "{} is {}: secrets are never indexed",
                    path.display(),
                    if absolute == *secret {
                        format!("{} (hidden from every tool)", secret.display())
                    } else {
                        format!("inside {} (hidden from every tool)", secret.display())
                    }
                )));
            }
            new_roots.push(absolute);
        }
        let existed = dir.is_dir();
        private_dir(&dir)?;
        let _lock = lock(&dir, name)?;
        let previous = match self.open(name) {
            Ok(kb) => Some(kb),
            Err(KbError::NotFound(_)) => None,
            Err(KbError::Stale { why, .. }) => {
                progress.note(&format!("rebuilding \"{name}\": {why}"));
                // The roots are still worth keeping when only the format changed.
                None
            }
            Err(e) => return Err(e),
        };
        let old_manifest = match &previous {
            Some(kb) => kb.manifest.clone(),
            None => read_manifest_leniently(&dir).unwrap_or_default(),
        };
        if previous.is_none() && !existed && new_roots.is_empty() {
            return Err(KbError::NotFound(name.to_string()));
        }
        let wanted_embed = options.embedder.map(|e| e.model().to_string());
        let had_embed = old_manifest.embed.as_ref().map(|e| e.model.clone());
        let rebuild = previous.is_none() || wanted_embed != had_embed;
        if previous.is_some() && rebuild {
            progress.note(&format!(
                "rebuilding \"{name}\": embedding model changes from {} to {}",
                had_embed.as_deref().unwrap_or("none"),
                wanted_embed.as_deref().unwrap_or("none")
            ));
        }

        let mut roots = old_manifest.roots.clone();
        for root in new_roots {
            if !roots.contains(&root) {
                roots.push(root);
            }
        }
        roots.retain(|r| {
            let alive = r.exists();
            if !alive {
                progress.note(&format!("{} no longer exists; dropping it", r.display()));
            }
            alive
        });
        if roots.is_empty() {
            return Err(KbError::BadPath(format!(
                "knowledge base \"{name}\" has no paths to index; give one: gg kb add PATH --name {name}"
            )));
        }
        let mut excludes = old_manifest.excludes.clone();
        for e in &options.excludes {
            if !excludes.contains(e) {
                excludes.push(e.clone());
            }
        }

        let (candidates, walk_skipped) = walk(&roots, &excludes, &options.deny_read)?;
        progress.start(candidates.len() + walk_skipped.len());
        let mut report = AddReport {
            rebuilt: rebuild,
            ..AddReport::default()
        };
        let mut done = 0;
        for (path, why) in &walk_skipped {
            done += 1;
            report.skipped += 1;
            progress.file(done, path, &FileStatus::Skipped(why.clone()));
        }

        let old_files = if rebuild {
            BTreeMap::new()
        } else {
            old_manifest.files.clone()
        };
        let mut files: BTreeMap<String, FileEntry> = BTreeMap::new();
        let mut pending: Vec<(String, Vec<Chunk>)> = Vec::new();
        let mut changed_paths: Vec<String> = Vec::new();
        // Unchanged files whose stamp became one worth keeping: a commit records them even when
        // nothing else changed, so the next refresh need not read them.
        let mut stamps_settled = 0usize;
        for (path, kind) in &candidates {
            done += 1;
            let key = path.to_string_lossy().into_owned();
            // Before the read: a write during or after it moves ctime past this stamp.
            let stamp = fs::symlink_metadata(path)
                .ok()
                .map(|meta| Stamp::of(&meta, now_ns()));
            let old = old_files.get(&key);
            if let (Some(old), Some(now)) = (old, &stamp)
                && old.stamp.is_some_and(|s| s.vouches_for(now))
            {
                files.insert(key.clone(), old.clone());
                report.unchanged += 1;
                progress.file(done, path, &FileStatus::Unchanged);
                continue;
            }
            report.files_read += 1;
            let status = match read_text(path) {
                Err(why) => {
                    report.skipped += 1;
                    FileStatus::Skipped(why)
                }
                Ok((text, bytes, hash)) => {
                    if let Some(old) = old.filter(|o| o.hash == hash) {
                        let mut entry = old.clone();
                        if stamp.is_some_and(|s| s.settled()) {
                            stamps_settled += 1;
                            entry.stamp = stamp;
                        }
                        files.insert(key.clone(), entry);
                        report.unchanged += 1;
                        FileStatus::Unchanged
                    } else {
                        let chunks = chunk::chunk(*kind, &text);
                        let count = u32::try_from(chunks.len()).unwrap_or(u32::MAX);
                        report.indexed += 1;
                        report.chunks_added += chunks.len();
                        report.bytes_indexed += bytes;
                        files.insert(
                            key.clone(),
                            FileEntry {
                                hash,
                                bytes,
                                chunks: count,
                                stamp,
                            },
                        );
                        if old_files.contains_key(&key) {
                            changed_paths.push(key.clone());
                        }
                        pending.push((key.clone(), chunks));
                        FileStatus::Indexed { chunks: count }
                    }
                }
            };
            progress.file(done, path, &status);
        }
        let removed: Vec<String> = old_files
            .keys()
            .filter(|k| !files.contains_key(*k))
            .cloned()
            .collect();
        report.removed = removed.len();
        for key in &removed {
            progress.file(done, Path::new(key), &FileStatus::Removed);
        }

        // Vectors before touching the index, so an unreachable endpoint changes nothing.
        let mut vectors: Vec<Vec<Vec<f32>>> = Vec::new();
        let mut embed_info = None;
        if let Some(embedder) = options.embedder {
            let texts: Vec<String> = pending
                .iter()
                .flat_map(|(path, chunks)| chunks.iter().map(move |c| embed_text(path, c)))
                .collect();
            if !texts.is_empty() {
                progress.note(&format!(
                    "embedding {} passages with {}",
                    texts.len(),
                    embedder.model()
                ));
            }
            let mut flat = Vec::with_capacity(texts.len());
            for batch in texts.chunks(embed::BATCH * 4) {
                flat.extend(embedder.embed(batch)?);
            }
            let dim = flat
                .first()
                .map(Vec::len)
                .or(old_manifest
                    .embed
                    .as_ref()
                    .filter(|_| !rebuild)
                    .map(|e| e.dim))
                .unwrap_or(0);
            if flat.iter().any(|v| v.len() != dim) {
                return Err(KbError::Embed("vectors of different lengths".to_string()));
            }
            if let Some(old) = previous.as_ref().and_then(|kb| kb.dense.as_ref())
                && !rebuild
                && !old.addrs.is_empty()
                && !flat.is_empty()
                && old.dim != dim
            {
                return Err(KbError::Embed(format!(
                    "{} now returns vectors of {dim} dimensions, the index holds {}; remove the knowledge base and add it again",
                    embedder.model(),
                    old.dim
                )));
            }
            embed_info = Some(EmbedInfo {
                model: embedder.model().to_string(),
                dim,
            });
            let mut it = flat.into_iter();
            for (_, chunks) in &pending {
                vectors.push(it.by_ref().take(chunks.len()).collect());
            }
        }

        let nothing_changed =
            !rebuild && pending.is_empty() && removed.is_empty() && stamps_settled == 0;
        let first_id = if rebuild { 0 } else { old_manifest.next_id };
        let new_passages: usize = pending.iter().map(|(_, chunks)| chunks.len()).sum();
        let mut manifest = Manifest {
            format: FORMAT,
            name: name.to_string(),
            roots,
            excludes,
            embed: embed_info,
            files,
            updated_at: now(),
            next_id: first_id.saturating_add(new_passages as u64),
            vectors: None,
        };
        if nothing_changed
            && manifest.roots == old_manifest.roots
            && manifest.excludes == old_manifest.excludes
        {
            report.files = manifest.files.len();
            let kb = match previous {
                Some(kb) => kb,
                None => self.open(name)?,
            };
            report.chunks = kb.num_chunks();
            return Ok((report, kb));
        }

        progress.note("writing the index");
        let (index_dir, index, index_path) = if rebuild {
            let fresh = format!("idx-{}-{}", now(), std::process::id());
            let path = dir.join(&fresh);
            if path.exists() {
                fs::remove_dir_all(&path).map_err(|e| io(path.display(), e))?;
            }
            private_dir(&path)?;
            let (schema, _) = schema();
            let index = Index::create_in_dir(&path, schema).map_err(tv)?;
            (Some(fresh), index, path)
        } else {
            let Some(kb) = previous.as_ref() else {
                return Err(KbError::Index("no index to update".to_string()));
            };
            (None, kb.index.clone(), kb.dir.clone())
        };
        register_analyzer(&index);
        let fields = fields_of(&index.schema()).map_err(KbError::Index)?;
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 2);
        let mut writer: IndexWriter<TantivyDocument> = index
            .writer_with_num_threads(threads, threads * 40_000_000)
            .map_err(tv)?;
        for key in changed_paths.iter().chain(&removed) {
            writer.delete_term(Term::from_field_text(fields.path, key));
        }
        // This commit's vectors: the previous commit's, less the passages deleted above, plus the
        // new ones, by passage id.
        let mut rows: Vec<(u64, &[f32])> = Vec::new();
        if manifest.embed.is_some()
            && !rebuild
            && let Some(kb) = previous.as_ref()
            && let Some(old) = kb.dense.as_ref()
        {
            let gone = kb.passages_of(changed_paths.iter().chain(&removed))?;
            rows.extend(
                old.rows()
                    .filter(|(addr, _, _)| !gone.contains(addr))
                    .map(|(_, id, v)| (id, v)),
            );
        }
        let mut next_id = first_id;
        for (i, (path, chunks)) in pending.iter().enumerate() {
            let title_base = file_title(path);
            for (j, chunk) in chunks.iter().enumerate() {
                let mut doc = TantivyDocument::default();
                doc.add_text(fields.path, path);
                doc.add_text(
                    fields.title,
                    format!("{title_base} {}", chunk.heading.join(" ")),
                );
                doc.add_text(
                    fields.heading,
                    serde_json::to_string(&chunk.heading).unwrap_or_default(),
                );
                doc.add_text(fields.body, &chunk.text);
                doc.add_u64(fields.start, u64::from(chunk.start_line));
                doc.add_u64(fields.end, u64::from(chunk.end_line));
                doc.add_u64(fields.id, next_id);
                if let Some(v) = vectors.get(i).and_then(|vs| vs.get(j)) {
                    rows.push((next_id, v.as_slice()));
                }
                next_id += 1;
                writer.add_document(doc).map_err(tv)?;
            }
            if i == pending.len() / 2 {
                crash_point("mid-add");
            }
        }
        // The vectors file goes next to the index before the commit that names it.
        let mut written = None;
        if let Some(info) = &manifest.embed {
            rows.sort_by_key(|(id, _)| *id);
            let mut file = Vectors::new(info.dim);
            for (id, v) in rows {
                file.push(id, v).map_err(KbError::Embed)?;
            }
            let file_name = format!(
                "vectors-{}-{}.bin",
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
                std::process::id()
            );
            let path = index_path.join(&file_name);
            file.write(&path).map_err(KbError::Io)?;
            manifest.vectors = Some(file_name);
            written = Some(path);
        }
        crash_point("before-commit");
        let committed = serde_json::to_string(&manifest)
            .map_err(|e| KbError::Index(e.to_string()))
            .and_then(|payload| {
                let mut prepared = writer.prepare_commit().map_err(tv)?;
                prepared.set_payload(&payload);
                prepared.commit().map_err(tv)
            });
        if let Err(e) = committed {
            if let Some(path) = written {
                let _ = fs::remove_file(path);
            }
            return Err(e);
        }
        writer.wait_merging_threads().map_err(tv)?;
        // Vectors files of earlier commits (or of an add that died before committing). The
        // previous commit's stays one more round, for a reader that opened it just before.
        let keep = [
            manifest.vectors.as_deref(),
            old_manifest.vectors.as_deref().filter(|_| !rebuild),
        ];
        if let Ok(entries) = fs::read_dir(&index_path) {
            for entry in entries.filter_map(Result::ok) {
                let n = entry.file_name().to_string_lossy().into_owned();
                if n.starts_with("vectors-") && !keep.contains(&Some(n.as_str())) {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }

        if let Some(fresh) = index_dir {
            crash_point("before-swap");
            let tmp = dir.join("CURRENT.tmp");
            {
                let mut file = fs::OpenOptions::new()
                    .create(true)
                    .truncate(true)
                    .write(true)
                    .mode(0o600)
                    .open(&tmp)
                    .map_err(|e| io(tmp.display(), e))?;
                file.write_all(fresh.as_bytes())
                    .and_then(|()| file.sync_all())
                    .map_err(|e| io(tmp.display(), e))?;
            }
            fs::rename(&tmp, dir.join("CURRENT")).map_err(|e| io(dir.display(), e))?;
            // The swap is done; old index directories are garbage now.
            if let Ok(entries) = fs::read_dir(&dir) {
                for entry in entries.filter_map(Result::ok) {
                    let n = entry.file_name().to_string_lossy().into_owned();
                    if n.starts_with("idx-") && n != fresh {
                        let _ = fs::remove_dir_all(entry.path());
                    }
                }
            }
        }
        let kb = self.open(name)?;
        report.files = kb.manifest.files.len();
        report.chunks = kb.num_chunks();
        Ok((report, kb))
    }
}

/// The manifest of whatever index `CURRENT` names, even one of another format, to recover its
/// roots for a rebuild.
fn read_manifest_leniently(dir: &Path) -> Option<Manifest> {
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

/// Words of the file name ("ch04-01-what-is-ownership.html" → "ch04 01 what is ownership"):
/// generated documentation names files after their topic.
fn file_title(path: &str) -> String {
    Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().replace(['-', '_', '.'], " "))
        .unwrap_or_default()
}

/// What the embedding model sees: the heading path gives a short passage its topic.
fn embed_text(path: &str, chunk: &Chunk) -> String {
    let mut text = format!("{}\n", file_title(path));
    if !chunk.heading.is_empty() {
        text.push_str(&chunk.heading.join(" > "));
        text.push('\n');
    }
    text.push_str(&chunk.text);
    text
}

fn kind_of(path: &Path) -> Result<Kind, String> {
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    Ok(match ext.as_str() {
        "md" | "markdown" | "mdx" | "mdown" => Kind::Markdown,
        "html" | "htm" | "xhtml" => Kind::Html,
        "rs" | "py" | "pyi" | "js" | "mjs" | "cjs" | "ts" | "tsx" | "jsx" | "go" | "c" | "h"
        | "cc" | "cpp" | "cxx" | "hpp" | "hh" | "java" | "kt" | "kts" | "swift" | "rb" | "php"
        | "cs" | "scala" | "sh" | "bash" | "zsh" | "fish" | "lua" | "pl" | "pm" | "hs" | "ml"
        | "mli" | "ex" | "exs" | "erl" | "clj" | "sql" | "r" | "jl" | "dart" | "zig" | "nim"
        | "vue" | "svelte" | "proto" | "el" | "vim" | "cmake" | "gradle" => Kind::Code,
        "" | "txt" | "text" | "rst" | "adoc" | "asciidoc" | "org" | "tex" | "json" | "yaml"
        | "yml" | "toml" | "ini" | "cfg" | "conf" | "csv" | "tsv" | "xml" | "css" | "scss"
        | "graphql" | "tf" | "nix" | "dockerfile" | "mk" | "make" | "pod" | "man" | "1" | "5"
        | "8" => Kind::Text,
        "pdf" => return Err("PDF text extraction is not built in".to_string()),
        other => return Err(format!("not a text format (.{other})")),
    })
}

/// Files worth indexing with their kind, and files skipped with the reason.
type Walked = (Vec<(PathBuf, Kind)>, Vec<(PathBuf, String)>);

/// The files under `roots` worth indexing, and the ones skipped by type.
fn walk(roots: &[PathBuf], excludes: &[String], deny: &[PathBuf]) -> Result<Walked, KbError> {
    let mut seen = BTreeSet::new();
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for root in roots {
        let mut builder = ignore::WalkBuilder::new(root);
        builder
            .hidden(true)
            .git_ignore(true)
            .git_exclude(true)
            .git_global(false)
            .ignore(true)
            .parents(true)
            // A notes folder that is not a repository still means its .gitignore.
            .require_git(false)
            .follow_links(false)
            .filter_entry(|e| {
                !(e.file_type().is_some_and(|t| t.is_dir())
                    && SKIP_DIRS.contains(&e.file_name().to_string_lossy().as_ref()))
            });
        if !excludes.is_empty() {
            let mut overrides = ignore::overrides::OverrideBuilder::new(root);
            for pattern in excludes {
                overrides
                    .add(&format!("!{pattern}"))
                    .map_err(|e| KbError::BadPath(format!("bad exclude pattern {pattern}: {e}")))?;
            }
            builder.overrides(
                overrides
                    .build()
                    .map_err(|e| KbError::BadPath(format!("bad exclude patterns: {e}")))?,
            );
        }
        for entry in builder.build() {
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let path = entry.into_path();
            if !seen.insert(path.clone()) {
                continue;
            }
            // The roots are canonical and links are not followed, so a prefix is exact.
            if deny.iter().any(|d| path.starts_with(d)) {
                skipped.push((path, "a secret (hidden from every tool)".to_string()));
                continue;
            }
            match kind_of(&path) {
                Ok(kind) => files.push((path, kind)),
                Err(why) => skipped.push((path, why)),
            }
        }
    }
    Ok((files, skipped))
}

/// The file's text, its size and its content hash; `Err` says why it is skipped.
fn read_text(path: &Path) -> Result<(String, u64, String), String> {
    let file = fs::File::open(path).map_err(|e| e.to_string())?;
    let size = file.metadata().map_err(|e| e.to_string())?.len();
    if size > MAX_FILE_BYTES {
        return Err(format!(
            "larger than {} MiB",
            MAX_FILE_BYTES / (1024 * 1024)
        ));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes[..bytes.len().min(BINARY_PROBE)].contains(&0) {
        return Err("binary".to_string());
    }
    let hash = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let bytes = e.into_bytes();
            let bad = std::str::from_utf8(&bytes)
                .err()
                .map_or(0, |e| e.valid_up_to());
            // Mostly-text files with a stray byte are text; anything else is not ours to read.
            let lossy = String::from_utf8_lossy(&bytes);
            if lossy.matches('\u{FFFD}').count() * 100 > lossy.len().max(1) {
                return Err(format!("not UTF-8 text (invalid byte at {bad})"));
            }
            lossy.into_owned()
        }
    };
    Ok((text, len, hash))
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

    /// The `k` best passages for `query`: BM25, fused with dense retrieval by reciprocal rank
    /// when the index has vectors of `embedder`'s model. A failing embeddings endpoint degrades
    /// to BM25 (with a note) rather than failing the search.
    pub fn search(
        &self,
        query: &str,
        k: usize,
        embedder: Option<&dyn Embedder>,
    ) -> Result<SearchResult, KbError> {
        let k = k.max(1);
        let searcher = &self.searcher;
        let pool = (k * 4).max(50);
        let bm25 = self.bm25(searcher, query, pool)?;
        let mut note = None;
        let dense = match (self.dense_with(embedder), embedder, &self.dense) {
            (true, Some(e), Some(vectors)) => match e.embed(&[query.to_string()]) {
                Ok(mut v) => match v.pop() {
                    Some(q) if q.len() == vectors.dim || vectors.addrs.is_empty() => {
                        Some(dense_scan(vectors, &q, pool))
                    }
                    Some(q) => {
                        note = Some(format!(
                            "dense retrieval unavailable ({} returned a vector of {} dimensions, the index holds {}); BM25 only",
                            e.model(),
                            q.len(),
                            vectors.dim
                        ));
                        None
                    }
                    None => None,
                },
                Err(err) => {
                    note = Some(format!("dense retrieval unavailable ({err}); BM25 only"));
                    None
                }
            },
            _ => None,
        };
        let mode = if dense.is_some() {
            Mode::Hybrid
        } else {
            Mode::Bm25
        };
        let mut scored: HashMap<DocAddress, Fused> = HashMap::new();
        match &dense {
            None => {
                for (rank, (score, addr)) in bm25.iter().enumerate() {
                    scored.insert(*addr, (*score, Some(rank + 1), None));
                }
            }
            Some(dense) => {
                for (rank, (_, addr)) in bm25.iter().enumerate() {
                    let entry = scored.entry(*addr).or_insert((0.0, None, None));
                    entry.0 += 1.0 / (RRF_K + (rank + 1) as f32);
                    entry.1 = Some(rank + 1);
                }
                for (rank, (_, addr)) in dense.iter().enumerate() {
                    let entry = scored.entry(*addr).or_insert((0.0, None, None));
                    entry.0 += 1.0 / (RRF_K + (rank + 1) as f32);
                    entry.2 = Some(rank + 1);
                }
            }
        }
        let mut ranked: Vec<(DocAddress, Fused)> = scored.into_iter().collect();
        ranked.sort_by(|a, b| {
            b.1.0
                .total_cmp(&a.1.0)
                .then_with(|| a.0.segment_ord.cmp(&b.0.segment_ord))
                .then_with(|| a.0.doc_id.cmp(&b.0.doc_id))
        });
        let mut hits = Vec::new();
        for (addr, (score, bm25_rank, dense_rank)) in ranked.into_iter().take(k) {
            let doc: TantivyDocument = searcher.doc(addr).map_err(tv)?;
            hits.push(self.hit(&doc, score, bm25_rank, dense_rank));
        }
        Ok(SearchResult { hits, mode, note })
    }

    fn hit(
        &self,
        doc: &TantivyDocument,
        score: f32,
        bm25_rank: Option<usize>,
        dense_rank: Option<usize>,
    ) -> Hit {
        let f = &self.fields;
        let text = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        };
        let num = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_u64())
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0)
        };
        Hit {
            file: text(f.path),
            heading: serde_json::from_str(&text(f.heading)).unwrap_or_default(),
            start_line: num(f.start),
            end_line: num(f.end),
            text: text(f.body),
            score,
            bm25_rank,
            dense_rank,
        }
    }

    fn bm25(
        &self,
        searcher: &tantivy::Searcher,
        query: &str,
        limit: usize,
    ) -> Result<Vec<(f32, DocAddress)>, KbError> {
        let mut analyzer = self
            .index
            .tokenizer_for_field(self.fields.body)
            .map_err(tv)?;
        let mut terms: Vec<String> = Vec::new();
        let mut stream = analyzer.token_stream(query);
        while stream.advance() {
            let t = stream.token().text.clone();
            if !terms.contains(&t) {
                terms.push(t);
            }
        }
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for t in &terms {
            clauses.push((
                Occur::Should,
                Box::new(TermQuery::new(
                    Term::from_field_text(self.fields.body, t),
                    IndexRecordOption::WithFreqs,
                )),
            ));
            // Heading and file-name words say what a passage is about: worth more than a mention.
            clauses.push((
                Occur::Should,
                Box::new(BoostQuery::new(
                    Box::new(TermQuery::new(
                        Term::from_field_text(self.fields.title, t),
                        IndexRecordOption::WithFreqs,
                    )),
                    1.5,
                )),
            ));
        }
        let query = BooleanQuery::new(clauses);
        searcher
            .search(&query, &TopDocs::with_limit(limit).order_by_score())
            .map_err(tv)
    }

    /// The live passages of `paths` (exact path terms).
    fn passages_of<'a>(
        &self,
        paths: impl Iterator<Item = &'a String>,
    ) -> Result<std::collections::HashSet<DocAddress>, KbError> {
        let mut found = std::collections::HashSet::new();
        for path in paths {
            let query = TermQuery::new(
                Term::from_field_text(self.fields.path, path),
                IndexRecordOption::Basic,
            );
            found.extend(self.searcher.search(&query, &DocSetCollector).map_err(tv)?);
        }
        Ok(found)
    }
}

/// Brute-force cosine over the opened commit's vectors, one contiguous slice: exact, and fast
/// enough for the tens of thousands of passages a personal knowledge base holds. Ties keep the
/// index's document order.
fn dense_scan(dense: &Dense, query: &[f32], limit: usize) -> Vec<(f32, DocAddress)> {
    let query = embed::normalize(query.to_vec());
    let mut scored: Vec<(f32, usize)> = dense
        .data
        .chunks_exact(dense.dim.max(1))
        .take(dense.addrs.len())
        .map(|v| embed::dot(&query, v))
        .zip(0..)
        .collect();
    // Best score first, then document order: the order a stable sort by score gives, found
    // without sorting every passage.
    let order = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if limit == 0 {
        return Vec::new();
    }
    if scored.len() > limit {
        scored.select_nth_unstable_by(limit - 1, order);
        scored.truncate(limit);
    }
    scored.sort_unstable_by(order);
    scored
        .into_iter()
        .filter_map(|(score, row)| dense.addrs.get(row).map(|addr| (score, *addr)))
        .collect()
}

/// A passage's fused score and its 1-based rank in the BM25 and dense lists.
type Fused = (f32, Option<usize>, Option<usize>);

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
