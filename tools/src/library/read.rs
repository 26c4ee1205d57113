//! What the model may do with the library: search it and read it. Both open files only through
//! a [`Workspace`] rooted at the library with `RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS`, so a path
//! with `..`, an absolute path elsewhere, or a symlink planted in the library (by a
//! prompt-injected model with a shell, say) never reads anything outside it.

use std::io::Read;

use super::{Entry, Library};
use crate::paths::{PathError, Workspace};
use crate::store::StoreError;

/// The most bytes read from one file for a search or a read.
const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;
/// The most lines one `library_read` returns.
const MAX_LINES: usize = 2000;
/// The most bytes one `library_read` returns.
const MAX_OUTPUT: usize = 256 * 1024;
/// The longest snippet of a search hit, in characters.
const SNIPPET_CHARS: usize = 240;

/// `library_read {path, offset?, limit?}`.
#[derive(Debug, Clone, Default)]
pub struct ReadRequest {
    /// A library name (as `gg library list` and `library_search` show it), an entry id, or a
    /// path beneath the library root.
    pub path: String,
    /// First line, 1-based.
    pub offset: Option<usize>,
    pub limit: Option<usize>,
}

/// One keyword hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    pub name: String,
    pub line: usize,
    pub snippet: String,
    pub score: usize,
}

pub(super) fn workspace(library: &Library) -> Result<Workspace, StoreError> {
    Workspace::open(library.root()).map_err(|e| {
        StoreError::Io(format!(
            "the library ({}) cannot be opened: {e}",
            library.root().display()
        ))
    })
}

fn refusal(error: PathError) -> StoreError {
    match &error {
        // `open_read_strict` reports a symlink on the way as `Outside` too.
        PathError::Outside(p) => StoreError::Invalid(format!(
            "path {p:?} is outside the library or goes through a symbolic link (library reads \
             never follow one); refused"
        )),
        _ => StoreError::Io(error.to_string()),
    }
}

/// Reads a confined file's text (at most [`MAX_READ_BYTES`]); `None` for a binary file.
pub(super) fn read_text(ws: &Workspace, path: &str) -> Result<Option<String>, StoreError> {
    let confined = ws.confine(path).map_err(refusal)?;
    let file = ws
        .open_read_strict(&confined)
        .map_err(refusal)?
        .ok_or_else(|| StoreError::NotFound(format!("no file {path:?} in the library")))?;
    let mut bytes = Vec::new();
    file.take(MAX_READ_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| StoreError::io(path, e))?;
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return Ok(None);
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// `library_read`: the lines asked for, with a header saying which.
pub fn read_file(library: &Library, request: &ReadRequest) -> Result<(String, String), StoreError> {
    let ws = workspace(library)?;
    // An entry id stands for its name; anything else is a path beneath the root.
    let entries = library.list().unwrap_or_default();
    let path = entries
        .iter()
        .find(|e| e.id == request.path)
        .map(|e| e.name.clone())
        .unwrap_or_else(|| request.path.clone());
    let text = read_text(&ws, &path)?.ok_or_else(|| {
        StoreError::Invalid(format!(
            "{path} is a binary file; library_read shows text only"
        ))
    })?;
    let lines: Vec<&str> = text.lines().collect();
    let first = request.offset.unwrap_or(1).max(1);
    let limit = request.limit.unwrap_or(MAX_LINES).clamp(1, MAX_LINES);
    let mut out = String::new();
    let mut last = first.saturating_sub(1);
    for (i, line) in lines.iter().enumerate().skip(first - 1).take(limit) {
        if out.len() + line.len() + 1 > MAX_OUTPUT {
            if out.is_empty() {
                // One line longer than the whole budget: show its start rather than nothing.
                out.push_str(crate::registry::clip(line, MAX_OUTPUT));
                out.push_str(" …[line cut]\n");
                last = i + 1;
            }
            break;
        }
        out.push_str(line);
        out.push('\n');
        last = i + 1;
    }
    let header = if lines.is_empty() {
        format!("library:{path} (empty)")
    } else if first > lines.len() {
        format!(
            "library:{path}: offset {first} is past the end ({} lines)",
            lines.len()
        )
    } else if last < lines.len() || first > 1 {
        format!(
            "library:{path} lines {first}-{last} of {} (use offset to read on)",
            lines.len()
        )
    } else {
        format!("library:{path} ({} lines)", lines.len())
    };
    Ok((header, out))
}

/// `library_search`: keyword search over every indexed file. A line scores one point per
/// distinct query word it contains (case-insensitively), plus one if it holds the whole query;
/// the best `top_k` lines win, earlier files and lines first on ties. Files that cannot be read
/// confined (a planted symlink) are skipped and named in `skipped`.
pub fn search(
    library: &Library,
    query: &str,
    top_k: usize,
) -> Result<(Vec<SearchHit>, usize, Vec<String>), StoreError> {
    let words = keywords(query);
    if words.is_empty() {
        return Err(StoreError::Invalid(
            "the query has no words to search for".into(),
        ));
    }
    let phrase = query.trim().to_lowercase();
    let ws = workspace(library)?;
    let entries: Vec<Entry> = library.list()?;
    let mut hits = Vec::new();
    let mut skipped = Vec::new();
    let mut searched = 0;
    for entry in &entries {
        let text = match read_text(&ws, &entry.name) {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(e) => {
                skipped.push(format!("{}: {e}", entry.name));
                continue;
            }
        };
        searched += 1;
        for (i, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let mut score = words.iter().filter(|w| lower.contains(w.as_str())).count();
            if score == 0 {
                continue;
            }
            if words.len() > 1 && lower.contains(&phrase) {
                score += 1;
            }
            hits.push(SearchHit {
                name: entry.name.clone(),
                line: i + 1,
                snippet: snippet(line),
                score,
            });
        }
    }
    // Stable: equal scores keep file and line order.
    hits.sort_by_key(|hit| std::cmp::Reverse(hit.score));
    hits.truncate(top_k);
    Ok((hits, searched, skipped))
}

fn keywords(query: &str) -> Vec<String> {
    let mut words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect();
    words.sort();
    words.dedup();
    words
}

fn snippet(line: &str) -> String {
    let trimmed = line.trim();
    if trimmed.chars().count() <= SNIPPET_CHARS {
        return trimmed.to_string();
    }
    let mut s: String = trimmed.chars().take(SNIPPET_CHARS).collect();
    s.push('…');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn library_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Library) {
        let dir = tempfile::tempdir().unwrap();
        let lib = Library::new(dir.path().join("lib"));
        for (name, text) in files {
            let src = dir.path().join(name);
            std::fs::write(&src, text).unwrap();
            lib.add(&src, None).unwrap();
        }
        (dir, lib)
    }

    #[test]
    fn search_ranks_lines_with_more_words_first() {
        let (_d, lib) = library_with(&[
            ("a.md", "nothing here\nthe deploy key rotates\nkey only\n"),
            ("b.md", "deploy key rotates monthly\n"),
        ]);
        let (hits, searched, skipped) = search(&lib, "deploy key rotates", 10).unwrap();
        assert_eq!(searched, 2);
        assert!(skipped.is_empty());
        assert_eq!(hits[0].name, "a.md");
        assert_eq!(hits[0].line, 2);
        assert_eq!(hits[1].name, "b.md");
        assert_eq!(hits.last().unwrap().snippet, "key only");
        assert!(search(&lib, " ! ", 5).is_err());
    }

    #[test]
    fn reads_windows_and_refuses_escapes() {
        let (d, lib) = library_with(&[("n.txt", "1\n2\n3\n4\n")]);
        let (header, text) = read_file(
            &lib,
            &ReadRequest {
                path: "n.txt".into(),
                offset: Some(2),
                limit: Some(2),
            },
        )
        .unwrap();
        assert_eq!(text, "2\n3\n");
        assert!(header.contains("lines 2-3 of 4"), "{header}");
        let long = format!("{}\nnext\n", "é".repeat(MAX_OUTPUT));
        std::fs::write(d.path().join("long.txt"), long).unwrap();
        lib.add(&d.path().join("long.txt"), None).unwrap();
        let (header, text) = read_file(
            &lib,
            &ReadRequest {
                path: "long.txt".into(),
                ..ReadRequest::default()
            },
        )
        .unwrap();
        assert!(
            text.ends_with(" …[line cut]\n"),
            "{}",
            &text[text.len() - 40..]
        );
        assert!(text.len() <= MAX_OUTPUT + 20);
        assert!(header.contains("lines 1-1 of 2"), "{header}");
        std::fs::write(d.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(d.path().join("secret"), d.path().join("lib/link")).unwrap();
        for path in [
            "../secret",
            "link",
            d.path().join("secret").to_str().unwrap(),
        ] {
            let e = read_file(
                &lib,
                &ReadRequest {
                    path: path.into(),
                    ..ReadRequest::default()
                },
            )
            .unwrap_err();
            assert!(e.to_string().contains("refused"), "{path}: {e}");
        }
    }
}
