//! gg's knowledge base: local indexes over a person's own documents that the agent searches with
//! the `kb_search` tool instead of pasting them into the context.
//!
//! - [`chunk`]: structure-aware passages (Markdown/HTML sections, code items, paragraphs), each
//!   with its heading path and line range.
//! - [`Store`]: the indexes under `~/.gg/kb/<name>/` (0700). [`Store::add`] indexes files and
//!   directories incrementally (a content hash per file), respecting `.gitignore` and skipping
//!   binaries; every change is one atomic tantivy commit whose payload carries the manifest, so a
//!   crash mid-indexing leaves the previous index usable.
//! - [`Kb::search`]: BM25 (tantivy), plus dense retrieval when the index was built with an
//!   [`Embedder`] and the same model is available at query time, fused by reciprocal rank.
//! - [`vectors`]: the passages' embedding vectors, one contiguous array per commit in a file of
//!   their own, read once when a knowledge base is opened.
//! - [`eval`]: recall@k and MRR over a labelled query file.
//!
//! The crate is synchronous; async callers run it on a blocking thread.

pub mod chunk;
pub mod embed;
pub mod eval;
pub mod html;
mod store;
pub mod vectors;

pub use embed::{EmbedConfig, Embedder, HttpEmbedder};
pub use store::{
    AddOptions, AddReport, DEFAULT_NAME, FORMAT, FileStatus, Hit, Kb, KbInfo, Manifest, Mode,
    NoProgress, Progress, SearchResult, Stamp, Stats, Store, validate_name,
};

/// What went wrong, worded for the person at the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KbError {
    /// No knowledge base of that name.
    NotFound(String),
    /// A name that could escape `~/.gg/kb/` or is otherwise unusable.
    BadName(String),
    /// Written by another version of gg (or damaged): `gg kb add --name NAME` rebuilds it.
    Stale {
        name: String,
        why: String,
    },
    /// Another process is adding to the same knowledge base.
    Busy(String),
    Io(String),
    Index(String),
    Embed(String),
    /// A path given to `add` that does not exist.
    BadPath(String),
}

impl std::fmt::Display for KbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KbError::NotFound(name) => write!(
                f,
                "no knowledge base named \"{name}\" (create it with: gg kb add PATH --name {name})"
            ),
            KbError::BadName(name) => write!(
                f,
                "bad knowledge base name \"{name}\": use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
            ),
            KbError::Stale { name, why } => write!(
                f,
                "knowledge base \"{name}\" must be rebuilt ({why}); run: gg kb add --name {name}"
            ),
            KbError::Busy(name) => write!(
                f,
                "knowledge base \"{name}\" is being updated by another process; try again when it finishes"
            ),
            KbError::Io(m) | KbError::Index(m) | KbError::BadPath(m) => f.write_str(m),
            KbError::Embed(m) => write!(f, "embeddings: {m}"),
        }
    }
}

impl std::error::Error for KbError {}
