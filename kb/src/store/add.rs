//! Indexing: [`Store::add`] walks the roots, reads what changed, embeds the new passages and
//! writes them in one atomic commit (with a fresh index directory and a `CURRENT` swap for a
//! rebuild). Apart from searching because it is the only writer, and the only code with
//! crash points.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tantivy::collector::DocSetCollector;
use tantivy::query::TermQuery;
use tantivy::schema::{IndexRecordOption, TantivyDocument};
use tantivy::{DocAddress, Index, IndexWriter, Term};

use super::files::{read_text, walk};
use super::manifest::{
    EmbedInfo, FORMAT, FileEntry, Manifest, Stamp, now_ns, read_manifest_leniently,
};
use super::schema::{fields_of, register_analyzer, schema};
use super::{Kb, Store, io, lock, now, private_dir, tv};
use crate::KbError;
use crate::chunk::{self, Chunk};
use crate::embed::{self, Embedder};
use crate::vectors::Vectors;

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
    /// The caller's deny-read policy asked of each file as opened for reading (where the
    /// descriptor really is, and whether it is a hard link to a secret, which no path rule
    /// sees): `true` skips the file. Asked of the descriptor then read, so a link swapped in
    /// after the walk cannot redirect the read past it.
    pub refuse_open: Option<&'a (dyn Fn(&fs::File) -> bool + Sync)>,
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
            let status = match read_text(path, options.refuse_open) {
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

impl Kb {
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
