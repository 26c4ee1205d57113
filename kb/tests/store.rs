//! The store on a real filesystem: incremental adds, ignore rules, binaries, permissions, format
//! versions, and hybrid fusion with a deterministic embedder.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use kb::{AddOptions, Embedder, FileStatus, KbError, Mode, NoProgress, Progress, Store};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

#[derive(Default)]
struct Seen(Vec<(String, FileStatus)>);
impl Progress for Seen {
    fn file(&mut self, _done: usize, path: &Path, status: &FileStatus) {
        self.0.push((
            path.file_name().unwrap().to_string_lossy().into_owned(),
            status.clone(),
        ));
    }
}
impl Seen {
    fn status(&self, name: &str) -> Option<&FileStatus> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }
}

fn files_of(store: &Store, name: &str, query: &str) -> Vec<String> {
    let kb = store.open(name).unwrap();
    kb.search(query, 10, None)
        .unwrap()
        .hits
        .into_iter()
        .map(|h| {
            Path::new(&h.file)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

#[test]
fn add_is_incremental_respects_gitignore_and_skips_binaries() {
    let home = tmp();
    let docs = home.path().join("docs");
    write(
        &docs.join("notes.md"),
        "# Deploy\nThe deploy key rotates every ninety days.\n",
    );
    write(
        &docs.join("old.md"),
        "# Old\nThe zeppelin schedule is obsolete.\n",
    );
    write(&docs.join("same.txt"), "Quartz clocks drift slowly.\n");
    write(&docs.join(".gitignore"), "secret.md\nbuild/\n");
    write(
        &docs.join("secret.md"),
        "the marmalade password is hunter2\n",
    );
    write(&docs.join("build/out.md"), "marmalade build output\n");
    fs::write(docs.join("blob.txt"), b"marmalade\0\x01\x02binary").unwrap();
    let store = Store::new(home.path().join(".gg/kb"));

    let mut seen = Seen::default();
    let first = store
        .add(
            "notes",
            std::slice::from_ref(&docs),
            &AddOptions::default(),
            &mut seen,
        )
        .unwrap();
    assert_eq!(first.indexed, 3, "{first:?}");
    assert!(first.rebuilt);
    assert_eq!(
        seen.status("blob.txt"),
        Some(&FileStatus::Skipped("binary".to_string()))
    );
    assert!(
        seen.status("secret.md").is_none(),
        "gitignored file was even looked at"
    );
    assert!(files_of(&store, "notes", "marmalade").is_empty());
    assert_eq!(files_of(&store, "notes", "zeppelin"), vec!["old.md"]);

    // Change one file, delete one, leave one.
    write(
        &docs.join("notes.md"),
        "# Deploy\nThe deploy key now rotates every thirty days.\n",
    );
    fs::remove_file(docs.join("old.md")).unwrap();
    let mut seen = Seen::default();
    let second = store
        .add("notes", &[], &AddOptions::default(), &mut seen)
        .unwrap();
    assert_eq!(
        (second.indexed, second.unchanged, second.removed),
        (1, 1, 1),
        "{second:?}"
    );
    assert!(!second.rebuilt);
    assert_eq!(seen.status("same.txt"), Some(&FileStatus::Unchanged));
    assert!(
        files_of(&store, "notes", "zeppelin").is_empty(),
        "deleted file still found"
    );
    assert!(
        files_of(&store, "notes", "ninety").is_empty(),
        "old version still found"
    );
    assert_eq!(files_of(&store, "notes", "thirty"), vec!["notes.md"]);
    let kb = store.open("notes").unwrap();
    assert_eq!(kb.manifest().files.len(), 2);
    assert_eq!(kb.num_chunks(), 2);

    // Nothing changed: nothing to do.
    let third = store
        .add("notes", &[], &AddOptions::default(), &mut NoProgress)
        .unwrap();
    assert_eq!((third.indexed, third.unchanged, third.removed), (0, 2, 0));

    // Directories are private.
    for dir in [home.path().join(".gg/kb"), home.path().join(".gg/kb/notes")] {
        assert_eq!(
            fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700,
            "{}",
            dir.display()
        );
    }
}

#[test]
fn hits_carry_file_lines_and_heading_path() {
    let home = tmp();
    let docs = home.path().join("docs");
    write(
        &docs.join("guide.md"),
        "# Guide\nintro\n\n## Backups\n\nSnapshots run nightly at 02:00 via restic.\n\n## Other\nnothing\n",
    );
    let store = Store::new(home.path().join("kb"));
    store
        .add("g", &[docs], &AddOptions::default(), &mut NoProgress)
        .unwrap();
    let hits = store
        .open("g")
        .unwrap()
        .search("when do restic snapshots run", 3, None)
        .unwrap();
    assert_eq!(hits.mode, Mode::Bm25);
    let top = &hits.hits[0];
    assert!(top.file.ends_with("/docs/guide.md"), "{top:?}");
    assert_eq!(top.heading, vec!["Guide", "Backups"]);
    assert_eq!((top.start_line, top.end_line), (4, 6));
    assert!(top.location().ends_with("guide.md:4-6"));
}

#[test]
fn names_are_validated_and_missing_ones_reported() {
    let home = tmp();
    let store = Store::new(home.path().join("kb"));
    for bad in ["", "..", "../x", "a/b", ".hidden", &"x".repeat(65)] {
        assert!(
            matches!(store.open(bad), Err(KbError::BadName(_))),
            "{bad:?}"
        );
    }
    assert!(matches!(store.open("nope"), Err(KbError::NotFound(_))));
    assert!(matches!(store.remove("nope"), Err(KbError::NotFound(_))));
    let missing = home.path().join("does-not-exist");
    assert!(matches!(
        store.add("x", &[missing], &AddOptions::default(), &mut NoProgress),
        Err(KbError::BadPath(_))
    ));
    assert!(store.names().unwrap().is_empty());
}

#[test]
fn an_index_of_another_format_is_rebuilt_not_misread() {
    let home = tmp();
    let docs = home.path().join("docs");
    write(&docs.join("a.md"), "# A\nthe walrus sings\n");
    let store = Store::new(home.path().join("kb"));
    store
        .add("f", &[docs], &AddOptions::default(), &mut NoProgress)
        .unwrap();
    // Rewrite the committed manifest's format, as an older/newer gg would have written it.
    let dir = home.path().join("kb/f");
    let current = fs::read_to_string(dir.join("CURRENT")).unwrap();
    let meta_path = dir.join(current.trim()).join("meta.json");
    let mut meta: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&meta_path).unwrap()).unwrap();
    let mut payload: serde_json::Value =
        serde_json::from_str(meta["payload"].as_str().unwrap()).unwrap();
    payload["format"] = serde_json::json!(kb::FORMAT + 1);
    meta["payload"] = serde_json::Value::String(payload.to_string());
    fs::write(&meta_path, meta.to_string()).unwrap();

    let err = store.open("f").err().unwrap();
    assert!(matches!(err, KbError::Stale { .. }), "{err:?}");
    assert!(err.to_string().contains("gg kb add --name f"), "{err}");
    let listed = store.list().unwrap();
    assert!(listed[0].problem.is_some());
    // `add` with no paths rebuilds from the roots the old manifest remembered.
    let report = store
        .add("f", &[], &AddOptions::default(), &mut NoProgress)
        .unwrap();
    assert!(report.rebuilt);
    assert_eq!(files_of(&store, "f", "walrus"), vec!["a.md"]);
    // The old index directory is gone.
    let dirs: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("idx-"))
        .collect();
    assert_eq!(dirs.len(), 1);
}

/// Vectors from word hashing: texts sharing words point the same way. Deterministic.
struct FakeEmbedder {
    model: &'static str,
    fail: bool,
}
impl Embedder for FakeEmbedder {
    fn model(&self) -> &str {
        self.model
    }
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, KbError> {
        if self.fail {
            return Err(KbError::Embed("endpoint down".to_string()));
        }
        Ok(texts.iter().map(|t| fake_vector(t)).collect())
    }
}

fn fake_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; 256];
    // Synonyms the BM25 index cannot know about map to the same dimension.
    for word in text.to_lowercase().split(|c: char| !c.is_alphanumeric()) {
        let word = match word {
            "automobile" | "car" | "vehicle" => "car",
            other => other,
        };
        if word.len() > 2 {
            let h = word
                .bytes()
                .fold(7u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b)));
            v[(h % 256) as usize] += 1.0;
        }
    }
    v
}

#[test]
fn hybrid_fuses_dense_hits_bm25_cannot_find_and_degrades_without_the_endpoint() {
    let home = tmp();
    let docs = home.path().join("docs");
    write(
        &docs.join("garage.md"),
        "# Garage\nThe car needs new tyres before winter.\n",
    );
    write(
        &docs.join("kitchen.md"),
        "# Kitchen\nThe oven timer is broken.\n",
    );
    let store = Store::new(home.path().join("kb"));
    let embedder = FakeEmbedder {
        model: "fake-1",
        fail: false,
    };
    let options = AddOptions {
        excludes: Vec::new(),
        embedder: Some(&embedder),
        deny_read: Vec::new(),
        refuse_open: None,
    };
    store
        .add("h", std::slice::from_ref(&docs), &options, &mut NoProgress)
        .unwrap();
    let kb = store.open("h").unwrap();
    assert_eq!(kb.manifest().embed.as_ref().unwrap().model, "fake-1");

    // "automobile" appears nowhere: BM25 finds nothing, dense finds the garage.
    assert!(kb.search("automobile", 3, None).unwrap().hits.is_empty());
    let hybrid = kb.search("automobile", 3, Some(&embedder)).unwrap();
    assert_eq!(hybrid.mode, Mode::Hybrid);
    assert!(hybrid.hits[0].file.ends_with("garage.md"), "{hybrid:?}");
    assert_eq!(hybrid.hits[0].dense_rank, Some(1));
    assert_eq!(hybrid.hits[0].bm25_rank, None);

    // A passage both retrievers rank first gets both ranks.
    let both = kb.search("oven timer", 3, Some(&embedder)).unwrap();
    assert!(both.hits[0].file.ends_with("kitchen.md"));
    assert_eq!(
        (both.hits[0].bm25_rank, both.hits[0].dense_rank),
        (Some(1), Some(1))
    );

    // Endpoint down at query time: BM25 with a note, not an error.
    let down = FakeEmbedder {
        model: "fake-1",
        fail: true,
    };
    let degraded = kb.search("oven", 3, Some(&down)).unwrap();
    assert_eq!(degraded.mode, Mode::Bm25);
    assert!(degraded.note.unwrap().contains("endpoint down"));
    // Another model's vectors are never compared with these.
    let other = FakeEmbedder {
        model: "fake-2",
        fail: false,
    };
    assert_eq!(kb.search("oven", 3, Some(&other)).unwrap().mode, Mode::Bm25);

    // Endpoint down at index time: the add fails and the index is untouched.
    write(&docs.join("kitchen.md"), "# Kitchen\nThe fridge hums.\n");
    let failing = AddOptions {
        excludes: Vec::new(),
        embedder: Some(&down),
        deny_read: Vec::new(),
        refuse_open: None,
    };
    assert!(store.add("h", &[], &failing, &mut NoProgress).is_err());
    assert_eq!(files_of(&store, "h", "oven"), vec!["kitchen.md"]);

    // Switching the model rebuilds with the new one.
    let switched = AddOptions {
        excludes: Vec::new(),
        embedder: Some(&other),
        deny_read: Vec::new(),
        refuse_open: None,
    };
    let report = store.add("h", &[], &switched, &mut NoProgress).unwrap();
    assert!(report.rebuilt);
    assert_eq!(
        store
            .open("h")
            .unwrap()
            .manifest()
            .embed
            .as_ref()
            .unwrap()
            .model,
        "fake-2"
    );
    assert_eq!(files_of(&store, "h", "fridge"), vec!["kitchen.md"]);
}

#[test]
fn a_second_writer_is_refused_while_one_holds_the_lock() {
    let home = tmp();
    let docs = home.path().join("docs");
    write(&docs.join("a.md"), "alpha\n");
    let store = Store::new(home.path().join("kb"));
    store
        .add("l", &[docs], &AddOptions::default(), &mut NoProgress)
        .unwrap();
    let lock = fs::OpenOptions::new()
        .write(true)
        .open(home.path().join("kb/l/lock"))
        .unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();
    assert!(matches!(
        store.add("l", &[], &AddOptions::default(), &mut NoProgress),
        Err(KbError::Busy(_))
    ));
    assert!(matches!(store.remove("l"), Err(KbError::Busy(_))));
    drop(lock);
    store.remove("l").unwrap();
    assert!(!store.exists("l"));
}

/// Waits (by the clock, not by the machine's speed) until every file under `dir` has been
/// unchanged long enough for its stamp to stand in for reading it.
fn wait_until_settled(files: &[&Path]) {
    use std::os::unix::fs::MetadataExt;
    let settled = std::time::Duration::from_nanos(
        u64::try_from(kb::Stamp::SETTLED_NS).unwrap() + 100_000_000,
    );
    for file in files {
        let meta = fs::metadata(file).unwrap();
        let changed = std::time::UNIX_EPOCH
            + std::time::Duration::new(
                u64::try_from(meta.ctime().max(meta.mtime())).unwrap(),
                u32::try_from(meta.ctime_nsec()).unwrap(),
            );
        while std::time::SystemTime::now() < changed + settled {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

#[test]
fn a_refresh_reads_only_files_whose_stamp_changed_or_had_not_settled() {
    let home = tmp();
    let docs = home.path().join("docs");
    let (a, b, c) = (docs.join("a.md"), docs.join("b.md"), docs.join("c.md"));
    write(&a, "# A\nalpha apples\n");
    write(&b, "# B\nbravo bananas\n");
    write(&c, "# C\ncharlie cherries\n");
    let store = Store::new(home.path().join("kb"));
    let options = AddOptions::default();
    let add = || {
        store
            .add("d", std::slice::from_ref(&docs), &options, &mut NoProgress)
            .unwrap()
    };
    assert_eq!(add().files_read, 3);
    // Fresh files: their stamps cannot vouch for them yet (a write in the same clock tick as
    // the read would leave the same times), so they are read again.
    let again = add();
    assert_eq!((again.files_read, again.unchanged), (3, 3));

    wait_until_settled(&[&a, &b, &c]);
    // Read once more: unchanged, and now settled, so their stamps are recorded.
    let settling = add();
    assert_eq!((settling.files_read, settling.unchanged), (3, 3));
    let quiet = add();
    assert_eq!(
        (quiet.files_read, quiet.unchanged, quiet.indexed),
        (0, 3, 0)
    );

    // Same size, modification time put back: ctime still moves, so the change is found.
    let mtime = fs::metadata(&a).unwrap().modified().unwrap();
    fs::write(&a, "# A\nalpha avocado\n").unwrap();
    fs::File::options()
        .write(true)
        .open(&a)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    // Replaced by a rename: another inode.
    let tmp_b = docs.join(".b.tmp");
    fs::write(&tmp_b, "# B\nbravo berries\n").unwrap();
    fs::rename(&tmp_b, &b).unwrap();
    let changed = add();
    assert_eq!((changed.files_read, changed.indexed), (2, 2));
    assert_eq!(files_of(&store, "d", "avocado"), vec!["a.md".to_string()]);
    assert_eq!(files_of(&store, "d", "berries"), vec!["b.md".to_string()]);
    assert!(files_of(&store, "d", "apples").is_empty());
    // The two just written are fresh again: read until they settle; c is not read.
    let after = add();
    assert_eq!((after.files_read, after.indexed), (2, 0));
}
