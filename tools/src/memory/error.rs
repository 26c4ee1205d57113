//! What can go wrong with the memory store: a request it refuses (an empty entry, an unknown
//! scope, an id that matches nothing or several entries) and a file it cannot read or write
//! safely. Each prints the text `gg memory` and the model have always read.

use std::fmt;
use std::path::PathBuf;

use super::entry::MAX_ENTRY_CHARS;
use crate::paths::PathError;

/// A memory request refused, or a store file that could not be read or written.
#[derive(Debug)]
pub enum MemoryError {
    /// The target layer is neither `workspace` nor `global`.
    Target { given: String },
    /// The scope is none of `general`, `daily`, `person:<name>`, `group:<name>`.
    Scope { given: String },
    /// A `person:` or `group:` scope without a name.
    ScopeNeedsName { kind: &'static str },
    /// The entry is empty once cleaned.
    EmptyEntry,
    /// The entry is longer than [`MAX_ENTRY_CHARS`] characters.
    EntryTooLong { chars: usize },
    /// A search without a word to look for.
    EmptyQuery,
    /// Fewer than 4 characters of an id to remove.
    IdTooShort,
    /// No entry has this id.
    NoSuchId { id: String },
    /// Several entries start with this id.
    AmbiguousId { id: String, matches: Vec<String> },
    /// The file changed while the person edited it; nothing was written.
    ChangedWhileEditing { path: PathBuf },
    /// A store file or directory could not be opened, read or written.
    Io {
        what: String,
        source: std::io::Error,
    },
    /// A store directory could not be listed or locked.
    Dir {
        what: String,
        source: rustix::io::Errno,
    },
    /// A store path does not stay inside the store as written.
    Path { what: String, source: PathError },
    /// A symlink, or a path leading out of the memory directory: never followed.
    Link { rel: String },
    /// The path is refused for another reason (a deny-read path, an I/O error on the way).
    Refused(PathError),
    /// The global store's directory cannot be created.
    NoStore,
    /// A layer's directory cannot be created.
    NoDirectory { rel: String },
    /// A file to rewrite is larger than gg reads: writing back would lose its end.
    TooLarge { path: String, max: u64 },
    /// A file to rewrite is not UTF-8: writing back would lose part of it.
    NotUtf8 { path: String },
}

impl fmt::Display for MemoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryError::Target { given } => write!(
                f,
                "target must be \"workspace\" or \"global\", not {given:?}"
            ),
            MemoryError::Scope { given } => write!(
                f,
                "scope must be general, daily, person:<name> or group:<name>, not {given:?}"
            ),
            MemoryError::ScopeNeedsName { kind } => {
                write!(f, "scope {kind}: needs a name, e.g. {kind}:alice")
            }
            MemoryError::EmptyEntry => f.write_str("memory entry is empty"),
            MemoryError::EntryTooLong { chars } => write!(
                f,
                "memory entry is too long ({chars} characters; at most {MAX_ENTRY_CHARS})"
            ),
            MemoryError::EmptyQuery => f.write_str("memory search needs a query"),
            MemoryError::IdTooShort => {
                f.write_str("give at least 4 characters of the id (see gg memory list)")
            }
            MemoryError::NoSuchId { id } => {
                write!(f, "no memory entry with id {id} (see gg memory list)")
            }
            MemoryError::AmbiguousId { id, matches } => {
                write!(f, "id {id} is ambiguous: {}", matches.join(", "))
            }
            MemoryError::ChangedWhileEditing { path } => write!(
                f,
                "{} changed while you were editing it; nothing written",
                path.display()
            ),
            MemoryError::Io { what, source } => write!(f, "memory: {what}: {source}"),
            MemoryError::Dir { what, source } => write!(f, "memory: {what}: {source}"),
            MemoryError::Path { what, source } => write!(f, "memory: {what}: {source}"),
            MemoryError::Link { rel } => write!(
                f,
                "memory: refused {rel}: a symlink or a path leading out of the memory directory \
                 (memory files are never written through links)"
            ),
            MemoryError::Refused(e) => write!(f, "memory: {e}"),
            MemoryError::NoStore => f.write_str("memory: store: cannot be created"),
            MemoryError::NoDirectory { rel } => {
                write!(f, "memory: {rel}: cannot create the directory")
            }
            MemoryError::TooLarge { path, max } => write!(
                f,
                "memory: {path}: larger than {max} bytes; nothing written (trim it with gg \
                 memory edit)"
            ),
            MemoryError::NotUtf8 { path } => {
                write!(f, "memory: {path}: not UTF-8 text; nothing written")
            }
        }
    }
}

impl std::error::Error for MemoryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MemoryError::Io { source, .. } => Some(source),
            MemoryError::Dir { source, .. } => Some(source),
            MemoryError::Path { source, .. } | MemoryError::Refused(source) => Some(source),
            _ => None,
        }
    }
}

/// A path refused by the store's confined opens: a link or a way out is said plainly.
pub(super) fn refused(rel: &str, e: PathError) -> MemoryError {
    match e {
        PathError::Outside(_) => MemoryError::Link {
            rel: rel.to_string(),
        },
        e => MemoryError::Refused(e),
    }
}
