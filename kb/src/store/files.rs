//! Which files `add` indexes and how it reads them: the walk of the roots (honouring
//! `.gitignore`, excludes and the deny-read list), the kind of each file by its extension, and
//! the size, binary and UTF-8 checks of a read. No index code: only the file system.

use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::KbError;
use crate::chunk::Kind;

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
pub(super) type Walked = (Vec<(PathBuf, Kind)>, Vec<(PathBuf, String)>);

/// The files under `roots` worth indexing, and the ones skipped by type.
pub(super) fn walk(
    roots: &[PathBuf],
    excludes: &[String],
    deny: &[PathBuf],
) -> Result<Walked, KbError> {
    let mut seen = BTreeSet::new();
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for root in roots {
        // A stored root is walked again at every refresh: where it leads now is judged now. A
        // root re-pointed since it was added (`notes` replaced by a link to `~/.ssh`), or one
        // that now lies in a secret, is not walked; the canonical root is what was added.
        match std::fs::canonicalize(root) {
            Ok(real) if real == *root && !deny.iter().any(|d| real.starts_with(d)) => {}
            Ok(real) => {
                skipped.push((
                    root.clone(),
                    format!(
                        "now leads to {}, not the directory that was added; add that by its own \
                         path if it is meant (secrets are never indexed)",
                        real.display()
                    ),
                ));
                continue;
            }
            Err(e) => {
                skipped.push((root.clone(), format!("cannot be read: {e}")));
                continue;
            }
        }
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
            // The roots are canonical and links are not followed, so a prefix is exact; a
            // directory on the way made a link since the walk listed it is caught by the real
            // path.
            let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            if real != path {
                skipped.push((
                    path,
                    "reached through a link made after the walk".to_string(),
                ));
                continue;
            }
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

/// The file's text, its size and its content hash; `Err` says why it is skipped. `path` is
/// where the walk found a regular file (canonical); the one open is judged, then read: it must
/// still be a regular file at that very path (no link followed, none swapped in on the way
/// since), and not one `refuse` refuses.
pub(super) fn read_text(
    path: &Path,
    refuse: Option<&(dyn Fn(&fs::File) -> bool + Sync)>,
) -> Result<(String, u64, String), String> {
    use std::os::unix::fs::OpenOptionsExt;
    pause_before_read(path);
    let file = fs::OpenOptions::new()
        .read(true)
        // NOFOLLOW: the walk saw a file, a link there now is not it. NONBLOCK: a FIFO swapped
        // in must not hang the open (it is refused below).
        .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".to_string());
    }
    if opened_at(&file).as_deref() != Some(path) {
        return Err("moved since the walk (a link on the way)".to_string());
    }
    if refuse.is_some_and(|refuse| refuse(&file)) {
        return Err("a secret (hidden from every tool)".to_string());
    }
    let size = meta.len();
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

/// Where an open file really is, as the kernel names its descriptor; `None` where that cannot
/// be told.
fn opened_at(file: &fs::File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

/// The race tests' injection point between the walk (the check) and the read (the use), in
/// test-hooks builds: with `GG_KB_TEST_PAUSE=<dir>`, before opening a file named `race.md` the
/// process creates `<dir>/reached` and waits until `<dir>/go` exists, while the test swaps a
/// link in.
fn pause_before_read(path: &Path) {
    #[cfg(feature = "test-hooks")]
    if let Some(dir) = std::env::var_os("GG_KB_TEST_PAUSE").map(PathBuf::from)
        && path.file_name().is_some_and(|n| n == "race.md")
    {
        let _ = fs::write(dir.join("reached"), b"");
        while !dir.join("go").exists() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    #[cfg(not(feature = "test-hooks"))]
    let _ = path;
}
