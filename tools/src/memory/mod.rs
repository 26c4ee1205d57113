//! Memory: what the agent keeps between sessions, as Markdown files the person can read and edit.
//!
//! Two layers with the same layout:
//! - **global**, `~/.gg/memory/` (or `memory.dir`): the person's own memory;
//! - **workspace**, `<root>/.gg/memory/`: what belongs to one project.
//!
//! In each layer: `MEMORY.md` (curated notes, one `- entry` a line), `YYYY-MM-DD.md` daily logs
//! (`- HH:MM entry`), `people/<slug>.md` and `groups/<slug>.md` (created with a `# <name>`
//! header). Writes go to the workspace layer unless the global one is asked for.
//!
//! The workspace layer lies under `.gg/`, which the bash sandbox keeps read-only, so the memory
//! tools write it themselves, and every access goes through [`Workspace`] with
//! `RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS`: a symlink planted earlier (by a command the model ran)
//! at `.gg`, `.gg/memory` or `MEMORY.md` is refused, never followed. The global layer is
//! accessed the same way, rooted at its own directory.
//!
//! Writes are atomic (temporary file, fsync, rename, fsync of the directory: a writer killed at
//! any point leaves the old file or the new one) and serialised by an exclusive `flock` on the
//! layer's directory, which the kernel releases when a writer dies.

mod entry;
mod error;
pub mod marks;
pub mod profile;

use std::io::Read;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Dir, FileType, FlockOperation};
use serde::Deserialize;

use super::paths::{OpenHook, Workspace};
use entry::entry_lines;
pub use entry::{Entry, Layer, MAX_ENTRY_CHARS, Scope, clean_entry, slug};
pub use error::MemoryError;
use error::refused;
pub use marks::Mark;

/// The `memory` section of `~/.gg/config.json`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MemoryConfig {
    /// Off unless set: memory adds the person's notes to every request.
    pub enabled: bool,
    /// Tokens of curated memory (MEMORY.md lines) in the system prompt.
    pub max_prompt_tokens: u64,
    /// The global store (`~/` is the home directory).
    pub dir: Option<String>,
    /// Tokens of today's log in the system prompt (0: none).
    pub daily_log_tail_tokens: u64,
    /// Daily logs older than this many days are deleted at start-up (0: keep them all).
    pub daily_log_retention_days: u64,
}

impl Default for MemoryConfig {
    fn default() -> MemoryConfig {
        MemoryConfig {
            enabled: false,
            max_prompt_tokens: 1200,
            dir: None,
            daily_log_tail_tokens: 500,
            daily_log_retention_days: 90,
        }
    }
}

impl MemoryConfig {
    /// The global store's directory.
    pub fn global_dir(&self, home: &Path) -> PathBuf {
        match self.dir.as_deref().filter(|d| !d.is_empty()) {
            Some("~") => home.to_path_buf(),
            Some(dir) => match dir.strip_prefix("~/") {
                Some(rest) => home.join(rest),
                None => PathBuf::from(dir),
            },
            None => home.join(".gg").join("memory"),
        }
    }
}

/// A memory file larger than this is not read (it is not one gg wrote).
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Search returns at most this many hits.
pub const SEARCH_LIMIT: usize = 10;
const CURATED: &str = "MEMORY.md";
const WORKSPACE_DIR: &str = ".gg/memory";

/// Both layers of one person in one workspace.
#[derive(Clone)]
pub struct Store {
    global: PathBuf,
    /// The workspace root; `None` when its overlay would be the global directory itself.
    workspace: Option<PathBuf>,
    legacy: PathBuf,
    retention_days: u64,
    before_rename: Option<OpenHook>,
    before_open: Option<OpenHook>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("global", &self.global)
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

/// A layer opened for one operation.
struct Opened {
    ws: Workspace,
    /// The layer's directory relative to `ws`'s root.
    prefix: &'static str,
    layer: Layer,
}

impl Opened {
    fn rel(&self, path: &str) -> String {
        if self.prefix.is_empty() {
            path.to_string()
        } else if path.is_empty() {
            self.prefix.to_string()
        } else {
            format!("{}/{path}", self.prefix)
        }
    }
}

fn io_error(what: &str, source: std::io::Error) -> MemoryError {
    MemoryError::Io {
        what: what.to_string(),
        source,
    }
}

fn dir_error(what: &str, source: rustix::io::Errno) -> MemoryError {
    MemoryError::Dir {
        what: what.to_string(),
        source,
    }
}

fn path_error(what: &str, source: super::paths::PathError) -> MemoryError {
    MemoryError::Path {
        what: what.to_string(),
        source,
    }
}

impl Store {
    pub fn new(config: &MemoryConfig, home: &Path, workspace_root: &Path) -> Store {
        let global = config.global_dir(home);
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let overlay = canonical(workspace_root).join(WORKSPACE_DIR);
        let workspace = (overlay != canonical(&global)).then(|| workspace_root.to_path_buf());
        Store {
            global,
            workspace,
            legacy: home.join(".gg").join("memory.md"),
            retention_days: config.daily_log_retention_days,
            before_rename: test_stall_hook(),
            before_open: None,
        }
    }

    /// Installs a hook run before every confined open (see [`Workspace::set_before_open_hook`]):
    /// the race tests swap a symlink in there.
    #[doc(hidden)]
    pub fn set_before_open_hook(&mut self, hook: OpenHook) {
        self.before_open = Some(hook);
    }

    /// The global store's directory.
    pub fn global_dir(&self) -> &Path {
        &self.global
    }

    /// Where a layer's file is, for messages and `gg memory edit`.
    pub fn display_path(&self, layer: Layer, path: &str) -> PathBuf {
        match (layer, &self.workspace) {
            (Layer::Workspace, Some(root)) => root.join(WORKSPACE_DIR).join(path),
            _ => self.global.join(path),
        }
    }

    /// The layers in reading order (workspace first).
    fn layers(&self) -> Vec<Layer> {
        if self.workspace.is_some() {
            vec![Layer::Workspace, Layer::Global]
        } else {
            vec![Layer::Global]
        }
    }

    /// Opens a layer; `None` when the global directory does not exist and `create` is false.
    fn open(&self, layer: Layer, create: bool) -> Result<Option<Opened>, MemoryError> {
        let (root, prefix) = match (layer, &self.workspace) {
            (Layer::Workspace, Some(root)) => (root.clone(), WORKSPACE_DIR),
            _ => {
                if create {
                    std::fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o700)
                        .create(&self.global)
                        .map_err(|e| io_error(&self.global.display().to_string(), e))?;
                } else if !self.global.is_dir() {
                    return Ok(None);
                }
                (self.global.clone(), "")
            }
        };
        let mut ws =
            Workspace::open(&root).map_err(|e| io_error(&root.display().to_string(), e))?;
        if let Some(hook) = &self.before_rename {
            ws.set_before_rename_hook(hook.clone());
        }
        if let Some(hook) = &self.before_open {
            ws.set_before_open_hook(hook.clone());
        }
        let layer = if prefix.is_empty() {
            Layer::Global
        } else {
            Layer::Workspace
        };
        Ok(Some(Opened { ws, prefix, layer }))
    }

    /// A file's text, `None` when absent. Symlinks anywhere on the way are refused.
    fn read(&self, o: &Opened, path: &str) -> Result<Option<String>, MemoryError> {
        self.read_as(o, path, false)
    }

    /// A file's text for rewriting it (call with the lock held): refused when it is larger than
    /// gg reads or not UTF-8, since writing back what was read would then lose part of it.
    fn read_for_write(&self, o: &Opened, path: &str) -> Result<Option<String>, MemoryError> {
        self.read_as(o, path, true)
    }

    fn read_as(&self, o: &Opened, path: &str, exact: bool) -> Result<Option<String>, MemoryError> {
        let rel = o.rel(path);
        let confined = o.ws.confine(&rel).map_err(|e| path_error(path, e))?;
        let Some(file) =
            o.ws.open_read_strict(&confined)
                .map_err(|e| refused(&rel, e))?
        else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io_error(path, e))?;
        if !exact {
            bytes.truncate(MAX_FILE_BYTES as usize);
            return Ok(Some(String::from_utf8_lossy(&bytes).into_owned()));
        }
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(MemoryError::TooLarge {
                path: path.to_string(),
                max: MAX_FILE_BYTES,
            });
        }
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| MemoryError::NotUtf8 {
                path: path.to_string(),
            })
    }

    /// The `.md` files of a layer's subdirectory (`""`, `people`, `groups`), sorted.
    fn files(&self, o: &Opened, dir: &str) -> Result<Vec<String>, MemoryError> {
        let rel = o.rel(dir);
        let confined = o.ws.confine(&rel).map_err(|e| path_error(dir, e))?;
        let Some(fd) =
            o.ws.open_dir_strict(&confined, None)
                .map_err(|e| refused(&rel, e))?
        else {
            return Ok(Vec::new());
        };
        let mut names = Vec::new();
        for entry in Dir::read_from(&fd).map_err(|e| dir_error(dir, e))? {
            let entry = entry.map_err(|e| dir_error(dir, e))?;
            let name = String::from_utf8_lossy(entry.file_name().to_bytes()).into_owned();
            if entry.file_type() == FileType::RegularFile
                && name.ends_with(".md")
                && !name.starts_with('.')
            {
                names.push(if dir.is_empty() {
                    name
                } else {
                    format!("{dir}/{name}")
                });
            }
        }
        names.sort();
        Ok(names)
    }

    /// Runs `f` holding the layer's write lock (an exclusive `flock` on its directory, created
    /// if missing, released by the kernel if this process dies).
    fn locked<T>(
        &self,
        o: &Opened,
        f: impl FnOnce(&Opened) -> Result<T, MemoryError>,
    ) -> Result<T, MemoryError> {
        let rel = o.rel("");
        let confined = o.ws.confine(&rel).map_err(|e| path_error(&rel, e))?;
        let dir =
            o.ws.open_dir_strict(&confined, Some(0o700))
                .map_err(|e| refused(&rel, e))?
                .ok_or_else(|| MemoryError::NoDirectory { rel: rel.clone() })?;
        crate::store::lock_exclusive_within(&dir, Path::new(&rel), crate::store::LOCK_WAIT)
            .map_err(|source| MemoryError::Io {
                what: "taking the write lock".to_string(),
                source,
            })?;
        sweep_temporaries(&dir);
        let result = f(o);
        let _ = rustix::fs::flock(&dir, FlockOperation::Unlock);
        result
    }

    /// Replaces a file atomically (call with the lock held).
    fn write(&self, o: &Opened, path: &str, contents: &str) -> Result<(), MemoryError> {
        let rel = o.rel(path);
        let confined = o.ws.confine(&rel).map_err(|e| path_error(path, e))?;
        let target =
            o.ws.resolve_write_strict(&confined)
                .map_err(|e| refused(&rel, e))?;
        o.ws.write_target(&target, contents.as_bytes(), None)
            .map_err(|e| refused(&rel, e))
    }

    /// Adds one entry and returns it as stored.
    pub fn add(&self, content: &str, scope: &Scope, target: Layer) -> Result<Entry, MemoryError> {
        self.add_at(content, scope, target, &jiff::Zoned::now())
    }

    pub fn add_at(
        &self,
        content: &str,
        scope: &Scope,
        target: Layer,
        now: &jiff::Zoned,
    ) -> Result<Entry, MemoryError> {
        let text = clean_entry(content)?;
        let (path, header, line) = match scope {
            Scope::General => (CURATED.to_string(), None, format!("- {text}")),
            Scope::Daily => (
                format!("{}.md", now.date()),
                None,
                format!("- {} {text}", now.strftime("%H:%M")),
            ),
            Scope::Person(name) => (
                format!("people/{}.md", slug(name)),
                Some(name.clone()),
                format!("- {text}"),
            ),
            Scope::Group(name) => (
                format!("groups/{}.md", slug(name)),
                Some(name.clone()),
                format!("- {text}"),
            ),
        };
        let opened = self.open(target, true)?.ok_or(MemoryError::NoStore)?;
        self.locked(&opened, |o| {
            let mut contents = self.read_for_write(o, &path)?.unwrap_or_default();
            if contents.is_empty()
                && let Some(name) = &header
            {
                let name = clean_entry(name)?;
                contents.push_str(&format!("# {name}\n\n"));
            }
            if !contents.is_empty() && !contents.ends_with('\n') {
                contents.push('\n');
            }
            contents.push_str(&line);
            contents.push('\n');
            self.write(o, &path, &contents)?;
            let number = contents.lines().count();
            Ok(Entry::new(o.layer, &path, number, &line))
        })
    }

    /// Every entry of every file, workspace first.
    pub fn list(&self) -> Result<Vec<Entry>, MemoryError> {
        let mut entries = Vec::new();
        for layer in self.layers() {
            let Some(o) = self.open(layer, false)? else {
                continue;
            };
            let mut files = self.files(&o, "")?;
            files.extend(self.files(&o, "people")?);
            files.extend(self.files(&o, "groups")?);
            for path in files {
                if let Some(text) = self.read(&o, &path)? {
                    entries.extend(
                        entry_lines(&text).map(|(n, line)| Entry::new(o.layer, &path, n, line)),
                    );
                }
            }
        }
        Ok(entries)
    }

    /// The curated lines for the prompt: the workspace's `MEMORY.md`, then the global one
    /// without the lines the workspace already has (byte for byte). Not yet cut to a budget.
    pub fn curated(&self) -> Result<Vec<Entry>, MemoryError> {
        let mut entries: Vec<Entry> = Vec::new();
        let mut workspace_lines = std::collections::HashSet::new();
        for layer in self.layers() {
            let Some(o) = self.open(layer, false)? else {
                continue;
            };
            let Some(text) = self.read(&o, CURATED)? else {
                continue;
            };
            for (n, line) in entry_lines(&text) {
                match layer {
                    Layer::Workspace => {
                        workspace_lines.insert(line.to_string());
                    }
                    Layer::Global if workspace_lines.contains(line) => continue,
                    Layer::Global => {}
                }
                entries.push(Entry::new(layer, CURATED, n, line));
            }
        }
        Ok(entries)
    }

    /// Today's log: the global lines, then the workspace's. Not yet cut to a budget.
    pub fn daily(&self, today: jiff::civil::Date) -> Result<Vec<Entry>, MemoryError> {
        let path = format!("{today}.md");
        let mut entries = Vec::new();
        for layer in self.layers().into_iter().rev() {
            let Some(o) = self.open(layer, false)? else {
                continue;
            };
            if let Some(text) = self.read(&o, &path)? {
                entries.extend(entry_lines(&text).map(|(n, l)| Entry::new(layer, &path, n, l)));
            }
        }
        Ok(entries)
    }

    /// Keyword search over every file of both layers: a line scores one point per query word it
    /// (or its file name) contains; best first, the workspace winning ties; at most `limit`.
    /// A workspace person or group page shadows the global page of the same name.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<Entry>, MemoryError> {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        if words.is_empty() {
            return Err(MemoryError::EmptyQuery);
        }
        let entries = self.list()?;
        let workspace_pages: Vec<&str> = entries
            .iter()
            .filter(|e| e.layer == Layer::Workspace && e.path.contains('/'))
            .map(|e| e.path.as_str())
            .collect();
        let mut scored: Vec<(usize, Entry)> = entries
            .iter()
            .filter(|e| {
                !(e.layer == Layer::Global
                    && e.path.contains('/')
                    && workspace_pages.contains(&e.path.as_str()))
            })
            .filter_map(|e| {
                let haystack = format!("{} {}", e.path, e.text).to_lowercase();
                let score = words
                    .iter()
                    .filter(|w| haystack.contains(w.as_str()))
                    .count();
                (score > 0).then(|| (score, e.clone()))
            })
            .collect();
        // Stable: equal scores keep list order, which has the workspace first.
        scored.sort_by_key(|s| std::cmp::Reverse(s.0));
        Ok(scored.into_iter().take(limit).map(|(_, e)| e).collect())
    }

    /// Removes every line with this id (or unique id prefix of at least 4 characters).
    pub fn remove(&self, id: &str) -> Result<Vec<Entry>, MemoryError> {
        let id = id.trim().to_lowercase();
        if id.len() < 4 {
            return Err(MemoryError::IdTooShort);
        }
        let all = self.list()?;
        let mut ids: Vec<&str> = all
            .iter()
            .filter(|e| e.id.starts_with(&id))
            .map(|e| e.id.as_str())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let full = match ids.as_slice() {
            [] => return Err(MemoryError::NoSuchId { id }),
            [one] => one.to_string(),
            _ => {
                return Err(MemoryError::AmbiguousId {
                    matches: ids.iter().map(|i| i.to_string()).collect(),
                    id,
                });
            }
        };
        let mut removed = Vec::new();
        for layer in self.layers() {
            let targets: Vec<String> = all
                .iter()
                .filter(|e| e.layer == layer && e.id == full)
                .map(|e| e.path.clone())
                .collect();
            if targets.is_empty() {
                continue;
            }
            let Some(opened) = self.open(layer, false)? else {
                continue;
            };
            self.locked(&opened, |o| {
                for path in dedup(targets) {
                    // Re-read under the lock: remove what is there now.
                    let Some(text) = self.read_for_write(o, &path)? else {
                        continue;
                    };
                    let mut kept = String::with_capacity(text.len());
                    for (i, line) in text.lines().enumerate() {
                        let entry = Entry::new(layer, &path, i + 1, line.trim_end());
                        let is_entry = !line.trim().is_empty() && !line.trim().starts_with('#');
                        if is_entry && entry.id == full {
                            removed.push(entry);
                        } else {
                            kept.push_str(line);
                            kept.push('\n');
                        }
                    }
                    self.write(o, &path, &kept)?;
                }
                Ok(())
            })?;
        }
        Ok(removed)
    }

    /// The whole text of a layer's file (for `gg memory edit`); `None` when absent.
    pub fn read_file(&self, layer: Layer, path: &str) -> Result<Option<String>, MemoryError> {
        match self.open(layer, false)? {
            Some(o) => self.read(&o, path),
            None => Ok(None),
        }
    }

    /// Replaces a layer's file with `contents` if it still holds `expected` (what the person
    /// started editing from); otherwise nothing is written and the error says so.
    pub fn replace_file(
        &self,
        layer: Layer,
        path: &str,
        expected: Option<&str>,
        contents: &str,
    ) -> Result<(), MemoryError> {
        let opened = self.open(layer, true)?.ok_or(MemoryError::NoStore)?;
        self.locked(&opened, |o| {
            if self.read_for_write(o, path)?.as_deref() != expected {
                return Err(MemoryError::ChangedWhileEditing {
                    path: self.display_path(layer, path),
                });
            }
            self.write(o, path, contents)
        })
    }

    /// Start-up upkeep: moves a legacy `~/.gg/memory.md` into `MEMORY.md`, and deletes daily
    /// logs older than the retention. Returns notices for the person.
    pub fn maintain(&self, today: jiff::civil::Date) -> Vec<String> {
        let mut notices = Vec::new();
        if let Err(e) = self.migrate_legacy(&mut notices) {
            notices.push(e.to_string());
        }
        if self.retention_days > 0 {
            for layer in self.layers() {
                if let Err(e) = self.prune(layer, today) {
                    notices.push(e.to_string());
                }
            }
        }
        notices
    }

    fn migrate_legacy(&self, notices: &mut Vec<String>) -> Result<(), MemoryError> {
        let legacy = &self.legacy;
        match std::fs::symlink_metadata(legacy) {
            Ok(meta) if meta.is_file() => {}
            _ => return Ok(()),
        }
        let text = std::fs::read_to_string(legacy)
            .map_err(|e| io_error(&legacy.display().to_string(), e))?;
        let opened = self
            .open(Layer::Global, true)?
            .ok_or(MemoryError::NoStore)?;
        self.locked(&opened, |o| {
            let current = self.read(o, CURATED)?.unwrap_or_default();
            if !current.trim().is_empty() {
                notices.push(format!(
                    "memory: {} was not migrated: {} already has content; merge it by hand",
                    legacy.display(),
                    self.global.join(CURATED).display()
                ));
                return Ok(());
            }
            self.write(o, CURATED, &text)?;
            let backup = legacy.with_extension("md.bak");
            std::fs::rename(legacy, &backup)
                .map_err(|e| io_error(&legacy.display().to_string(), e))?;
            notices.push(format!(
                "memory: moved {} to {} (the old file is {})",
                legacy.display(),
                self.global.join(CURATED).display(),
                backup.display()
            ));
            Ok(())
        })
    }

    fn prune(&self, layer: Layer, today: jiff::civil::Date) -> Result<(), MemoryError> {
        let Some(opened) = self.open(layer, false)? else {
            return Ok(());
        };
        let days = i64::try_from(self.retention_days).unwrap_or(i64::MAX);
        let Some(cutoff) = jiff::Span::new()
            .try_days(days)
            .ok()
            .and_then(|span| today.checked_sub(span).ok())
        else {
            return Ok(());
        };
        let old: Vec<String> = self
            .files(&opened, "")?
            .into_iter()
            .filter(|name| {
                name.strip_suffix(".md")
                    .and_then(|d| d.parse::<jiff::civil::Date>().ok())
                    .is_some_and(|d| d < cutoff)
            })
            .collect();
        if old.is_empty() {
            return Ok(());
        }
        self.locked(&opened, |o| {
            let rel = o.rel("");
            let confined = o.ws.confine(&rel).map_err(|e| path_error(&rel, e))?;
            if let Some(dir) =
                o.ws.open_dir_strict(&confined, None)
                    .map_err(|e| refused(&rel, e))?
            {
                for name in &old {
                    let _ = rustix::fs::unlinkat(&dir, name.as_str(), AtFlags::empty());
                }
            }
            Ok(())
        })
    }
}

fn dedup(mut items: Vec<String>) -> Vec<String> {
    items.sort();
    items.dedup();
    items
}

/// Removes temporary files a killed writer left (called with the lock held, so none is live).
fn sweep_temporaries(dir: &std::os::fd::OwnedFd) {
    let Ok(entries) = Dir::read_from(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_bytes();
        if name.starts_with(b".")
            && memchr::memmem::find(name, b".gg-tmp-").is_some()
            && entry.file_type() == FileType::RegularFile
        {
            let _ = rustix::fs::unlinkat(dir, entry.file_name(), AtFlags::empty());
        }
    }
}

/// The crash-test injection point: with `GG_TEST_MEMORY_STALL=<file>` (test builds only), a
/// memory write creates `<file>` once its temporary file is written and synced, then waits
/// before the rename until the test kills the process.
#[cfg(feature = "test-hooks")]
fn test_stall_hook() -> Option<OpenHook> {
    let marker = std::env::var_os("GG_TEST_MEMORY_STALL")?;
    Some(std::sync::Arc::new(move |_: &Path| {
        let _ = std::fs::write(&marker, b"stalled before rename\n");
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }))
}

#[cfg(not(feature = "test-hooks"))]
fn test_stall_hook() -> Option<OpenHook> {
    None
}

#[cfg(test)]
mod tests;
