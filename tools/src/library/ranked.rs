//! `library_search` through the knowledge-base engine (the `kb` crate): structure-aware passages
//! ranked by BM25, instead of single keyword lines.
//!
//! The index is a cache of the library, kept in `<library>/.kb/library` (hidden, so it is never a
//! library name) and refreshed incrementally before each search: a file whose stamp (inode,
//! size, times) is unchanged is not read at all, and of the rest only those whose content hash
//! changed are re-chunked. The engine only ranks: every passage returned is read
//! again from the library through the confined, symlink-refusing open of [`super::read`], by the
//! line range the engine gives, and only for files that are library entries. What the index
//! holds therefore never reaches the model unless the file, as it is now, is a regular file
//! inside the library.

use std::path::{Path, PathBuf};

use super::Library;
use crate::store::StoreError;

/// The knowledge base's name inside the library's own `.kb` directory.
const KB_NAME: &str = "library";

/// One ranked passage, read back from the library.
#[derive(Debug, Clone, PartialEq)]
pub struct Passage {
    pub name: String,
    pub start_line: usize,
    pub end_line: usize,
    /// The heading path of the section, outermost first.
    pub heading: Vec<String>,
    pub text: String,
    pub score: f32,
}

/// What a ranked search found.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    pub passages: Vec<Passage>,
    /// Files whose hits were dropped because the confined read refused them, with why.
    pub skipped: Vec<String>,
}

fn kb_store(library: &Library) -> kb::Store {
    kb::Store::new(library.root().join(".kb"))
}

/// Brings the index up to date with the library's files and opens it. Another process
/// refreshing it at the same moment (`Busy`) is fine: its result is as good, so the index is
/// opened as it is.
fn refreshed(library: &Library) -> Result<kb::Kb, kb::KbError> {
    let store = kb_store(library);
    let options = kb::AddOptions {
        // The store's own files are not documents.
        excludes: vec![format!("/{}", super::INDEX), format!("/{}", super::LOCK)],
        embedder: None,
        deny_read: Vec::new(),
        refuse_open: None,
    };
    match store.add_and_open(
        KB_NAME,
        &[library.root().to_path_buf()],
        &options,
        &mut kb::NoProgress,
    ) {
        Ok((_, index)) => Ok(index),
        Err(kb::KbError::Busy(_)) => store.open(KB_NAME),
        Err(e) => Err(e),
    }
}

/// Searches with the engine. `Ok(None)` when the engine cannot serve this search (no index
/// could be built, nothing found): the caller falls back to the keyword search.
pub fn search(library: &Library, query: &str, top_k: usize) -> Result<Option<Ranked>, StoreError> {
    let entries = library.list()?;
    if entries.is_empty() {
        return Ok(None);
    }
    let index = match refreshed(library) {
        Ok(index) => index,
        Err(e) => {
            tracing::warn!(error = %e, "library index refresh failed; keyword search instead");
            return Ok(None);
        }
    };
    // Ask for more than needed: hits in files that fail the confined read are dropped.
    let found = match index.search(query, top_k * 2, None) {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(error = %e, "library index search failed; keyword search instead");
            return Ok(None);
        }
    };
    if found.hits.is_empty() {
        return Ok(None);
    }
    let root = canonical(library.root());
    let ws = super::read::workspace(library)?;
    let mut passages = Vec::new();
    let mut skipped = Vec::new();
    for hit in found.hits {
        if passages.len() >= top_k {
            break;
        }
        let Some(name) = Path::new(&hit.file)
            .strip_prefix(&root)
            .ok()
            .and_then(|rest| rest.to_str())
            .filter(|name| entries.iter().any(|e| e.name == *name))
            .map(str::to_string)
        else {
            continue;
        };
        let text = match super::read::read_text(&ws, &name) {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(e) => {
                if !skipped.iter().any(|s: &String| s.starts_with(&name)) {
                    skipped.push(format!("{name}: {e}"));
                }
                continue;
            }
        };
        let start = (hit.start_line as usize).max(1);
        let end = (hit.end_line as usize).max(start);
        let lines: Vec<&str> = text.lines().skip(start - 1).take(end - start + 1).collect();
        if lines.is_empty() {
            // The file changed since it was indexed and no longer has these lines.
            continue;
        }
        passages.push(Passage {
            name,
            start_line: start,
            end_line: start + lines.len() - 1,
            heading: hit.heading,
            text: lines.join("\n"),
            score: hit.score,
        });
    }
    if passages.is_empty() {
        return Ok(None);
    }
    Ok(Some(Ranked { passages, skipped }))
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passages_come_from_the_library_files_by_line_range() {
        let dir = tempfile::tempdir().unwrap();
        let lib = Library::new(dir.path().join("lib"));
        let src = dir.path().join("ops.md");
        std::fs::write(
            &src,
            "# Ops\n\nGeneral notes about the office.\n\n## Keys\n\nThe deploy key rotates \
             monthly; the rotation script lives in tools/rotate.\n\n## Lunch\n\nPizza on \
             Fridays.\n",
        )
        .unwrap();
        lib.add(&src, None).unwrap();
        let Ranked { passages, skipped } = search(&lib, "deploy key rotation", 3).unwrap().unwrap();
        assert!(skipped.is_empty());
        let top = &passages[0];
        assert_eq!(top.name, "ops.md");
        assert!(top.text.contains("deploy key rotates"), "{top:?}");
        assert!(top.heading.iter().any(|h| h.contains("Keys")), "{top:?}");
        // A second search is served from the refreshed index; a removed file is gone from it.
        lib.remove("ops.md").unwrap();
        assert!(search(&lib, "deploy key", 3).unwrap().is_none());
    }
}
