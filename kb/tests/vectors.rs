//! The vectors file (`idx-*/vectors-*.bin`): what hybrid search scans, how incremental adds keep
//! it in step with the index, and what a damaged file or a format-1 index (vectors in the document
//! store) does: a "rebuild" error and a rebuild on the next add, never wrong results.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};

use kb::vectors::{HEADER_BYTES, Vectors};
use kb::{AddOptions, Embedder, Hit, KbError, Mode, NoProgress, Store};

const DIM: usize = 48;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// Unit vectors from hashed words (a word picks a dimension and a sign), `dim` wide.
struct Hashing {
    dim: usize,
}
impl Embedder for Hashing {
    fn model(&self) -> &str {
        "hashing"
    }
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, KbError> {
        Ok(texts.iter().map(|t| hashed(t, self.dim)).collect())
    }
}

fn hashed(text: &str, dim: usize) -> Vec<f32> {
    let mut v = vec![0f32; dim];
    for word in text.to_lowercase().split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let h = word.bytes().fold(0x811c_9dc5u32, |a, b| {
            (a ^ u32::from(b)).wrapping_mul(0x0100_0193)
        });
        v[h as usize % dim] += if h & 0x8000 == 0 { 1.0 } else { -0.75 };
    }
    v[0] += 0.01;
    kb::embed::normalize(v)
}

/// What the store gives the embedding model for a passage (file-name words, heading path, text).
fn embedded_text(hit: &Hit) -> String {
    let stem = Path::new(&hit.file).file_stem().unwrap().to_string_lossy();
    let mut text = format!("{}\n", stem.replace(['-', '_', '.'], " "));
    if !hit.heading.is_empty() {
        text.push_str(&hit.heading.join(" > "));
        text.push('\n');
    }
    text.push_str(&hit.text);
    text
}

fn corpus(docs: &Path) {
    let topics = [
        ("garage", "tyres brakes engine oil winter service"),
        ("kitchen", "oven timer fridge kettle toaster bread"),
        ("garden", "roses compost hedge lawn mower seeds"),
        ("office", "printer paper stapler monitor keyboard desk"),
        ("travel", "passport tickets luggage train airport hotel"),
    ];
    for (i, (name, words)) in topics.iter().enumerate() {
        let mut text = format!("# {name}\n\n");
        for section in 0..4 {
            let w: Vec<&str> = words.split(' ').collect();
            text.push_str(&format!(
                "## part {section}\n\nThe {} and the {} near the {} ({i}, {section}).\n\n",
                w[section % w.len()],
                w[(section + 2) % w.len()],
                w[(section * 3 + i) % w.len()]
            ));
        }
        write(&docs.join(format!("{name}.md")), &text);
    }
}

fn options(embedder: &dyn Embedder) -> AddOptions<'_> {
    AddOptions {
        excludes: Vec::new(),
        embedder: Some(embedder),
        deny_read: Vec::new(),
        refuse_open: None,
    }
}

fn index_dir(kb_dir: &Path) -> PathBuf {
    kb_dir.join(fs::read_to_string(kb_dir.join("CURRENT")).unwrap().trim())
}

fn vector_files(index: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(index)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("vectors-")
        })
        .collect();
    files.sort();
    files
}

fn current_vectors(store: &Store, kb_dir: &Path, name: &str) -> PathBuf {
    let kb = store.open(name).unwrap();
    index_dir(kb_dir).join(kb.manifest().vectors.as_ref().unwrap())
}

/// Every passage, ranked by the dense retriever, checked against cosines computed here from the
/// embedder: the order must be theirs (ties within 1e-6 aside), and every passage must be there.
fn assert_dense_matches_reference(store: &Store, name: &str, embedder: &Hashing, query: &str) {
    let kb = store.open(name).unwrap();
    let all = usize::try_from(kb.num_chunks()).unwrap();
    let found = kb.search(query, all, Some(embedder)).unwrap();
    assert_eq!(found.mode, Mode::Hybrid);
    assert_eq!(found.hits.len(), all);
    let mut ranked: Vec<&Hit> = found.hits.iter().collect();
    ranked.sort_by_key(|h| h.dense_rank.unwrap());
    let ranks: Vec<usize> = ranked.iter().map(|h| h.dense_rank.unwrap()).collect();
    assert_eq!(ranks, (1..=all).collect::<Vec<_>>());
    let q = hashed(query, embedder.dim);
    let cosine = |hit: &Hit| -> f64 {
        let v = hashed(&embedded_text(hit), embedder.dim);
        q.iter()
            .zip(&v)
            .map(|(a, b)| f64::from(*a) * f64::from(*b))
            .sum()
    };
    let reference: Vec<f64> = ranked.iter().map(|h| cosine(h)).collect();
    for (i, pair) in reference.windows(2).enumerate() {
        assert!(
            pair[0] >= pair[1] - 1e-6,
            "dense rank {} ({:.6}) above rank {} ({:.6}) for {query:?}",
            i + 1,
            pair[0],
            i + 2,
            pair[1]
        );
    }
    // The fused score is the two reciprocal ranks.
    for hit in &found.hits {
        let expected: f32 = [hit.bm25_rank, hit.dense_rank]
            .iter()
            .flatten()
            .map(|r| 1.0 / (60.0 + *r as f32))
            .sum();
        assert!((hit.score - expected).abs() < 1e-6, "{hit:?}");
    }
}

#[test]
fn vectors_live_in_one_file_per_commit_and_dense_ranks_match_a_reference() {
    let home = tmp();
    let docs = home.path().join("docs");
    corpus(&docs);
    let store = Store::new(home.path().join("kb"));
    let kb_dir = home.path().join("kb/v");
    let embedder = Hashing { dim: DIM };
    store
        .add(
            "v",
            std::slice::from_ref(&docs),
            &options(&embedder),
            &mut NoProgress,
        )
        .unwrap();

    let kb = store.open("v").unwrap();
    let n = usize::try_from(kb.num_chunks()).unwrap();
    assert!(n >= 20, "{n} passages");
    assert_eq!(kb.manifest().format, kb::FORMAT);
    let file = current_vectors(&store, &kb_dir, "v");
    assert_eq!(vector_files(&index_dir(&kb_dir)), vec![file.clone()]);
    assert_eq!(
        fs::metadata(&file).unwrap().len() as usize,
        HEADER_BYTES + n * 8 + n * DIM * 4
    );
    let stored = Vectors::read(&file, DIM).unwrap();
    assert_eq!(stored.len(), n);
    for query in [
        "oven timer",
        "winter tyres",
        "lawn seeds passport",
        "zzz unknown",
    ] {
        assert_dense_matches_reference(&store, "v", &embedder, query);
    }

    // What an add that died between writing its vectors file and committing leaves behind: the
    // live commit ignores it, and the next commit deletes it.
    let orphan = index_dir(&kb_dir).join("vectors-1-1.bin");
    fs::write(&orphan, b"half a file").unwrap();
    assert_dense_matches_reference(&store, "v", &embedder, "oven timer");

    // Change one file, delete another, add a third: the next commit's file holds exactly the
    // live passages, and ranks still match the reference.
    write(
        &docs.join("kitchen.md"),
        "# kitchen\n\nThe kettle is new.\n\n## fridge\n\nIt hums at night.\n",
    );
    fs::remove_file(docs.join("garden.md")).unwrap();
    write(
        &docs.join("music.md"),
        "# music\n\nPiano lessons on tuesday with the oven timer.\n",
    );
    let report = store
        .add("v", &[], &options(&embedder), &mut NoProgress)
        .unwrap();
    assert!(!report.rebuilt);
    assert_eq!((report.indexed, report.removed), (2, 1), "{report:?}");
    let kb = store.open("v").unwrap();
    let n = usize::try_from(kb.num_chunks()).unwrap();
    let second = current_vectors(&store, &kb_dir, "v");
    assert_ne!(second, file);
    assert_eq!(Vectors::read(&second, DIM).unwrap().len(), n);
    // The previous commit's file stays one round for readers that opened it; the orphan is gone.
    assert_eq!(vector_files(&index_dir(&kb_dir)), {
        let mut both = vec![file.clone(), second.clone()];
        both.sort();
        both
    });
    for query in ["oven timer", "piano", "roses hedge", "kettle fridge hums"] {
        assert_dense_matches_reference(&store, "v", &embedder, query);
    }
    let top = kb.search("roses compost", 3, Some(&embedder)).unwrap();
    assert!(
        top.hits.iter().all(|h| !h.file.ends_with("garden.md")),
        "{top:?}"
    );

    // A third commit removes the first file.
    fs::remove_file(docs.join("music.md")).unwrap();
    store
        .add("v", &[], &options(&embedder), &mut NoProgress)
        .unwrap();
    let third = current_vectors(&store, &kb_dir, "v");
    let mut expected = vec![second, third];
    expected.sort();
    assert_eq!(vector_files(&index_dir(&kb_dir)), expected);
    assert_dense_matches_reference(&store, "v", &embedder, "oven timer");

    // A query vector of another width is not compared: BM25, with a note saying why.
    let wider = Hashing { dim: DIM * 2 };
    let found = store
        .open("v")
        .unwrap()
        .search("oven", 3, Some(&wider))
        .unwrap();
    assert_eq!(found.mode, Mode::Bm25);
    assert!(found.note.unwrap().contains("dimensions"));
}

/// Damages the live vectors file with `damage`, checks that opening says "rebuild" with
/// `expected` in the reason, and that the next add rebuilds to a working index.
fn damaged_file_is_reported_and_rebuilt(damage: impl Fn(&Path), expected: &str) {
    let home = tmp();
    let docs = home.path().join("docs");
    corpus(&docs);
    let store = Store::new(home.path().join("kb"));
    let kb_dir = home.path().join("kb/d");
    let embedder = Hashing { dim: DIM };
    store
        .add(
            "d",
            std::slice::from_ref(&docs),
            &options(&embedder),
            &mut NoProgress,
        )
        .unwrap();
    let file = current_vectors(&store, &kb_dir, "d");
    damage(&file);

    let err = store.open("d").err().unwrap();
    assert!(matches!(err, KbError::Stale { .. }), "{err:?}");
    assert!(err.to_string().contains(expected), "{err}");
    assert!(err.to_string().contains("gg kb add --name d"), "{err}");
    assert!(store.list().unwrap()[0].problem.is_some());

    let report = store
        .add("d", &[], &options(&embedder), &mut NoProgress)
        .unwrap();
    assert!(report.rebuilt);
    assert_dense_matches_reference(&store, "d", &embedder, "oven timer");
}

#[test]
fn a_truncated_vectors_file_means_rebuild() {
    damaged_file_is_reported_and_rebuilt(
        |f| {
            let len = fs::metadata(f).unwrap().len();
            fs::OpenOptions::new()
                .write(true)
                .open(f)
                .unwrap()
                .set_len(len - 10)
                .unwrap();
        },
        "truncated",
    );
    damaged_file_is_reported_and_rebuilt(
        |f| fs::write(f, b"GGKB").unwrap(),
        "shorter than the header",
    );
}

#[test]
fn a_corrupt_or_missing_vectors_file_means_rebuild() {
    damaged_file_is_reported_and_rebuilt(
        |f| {
            let mut bytes = fs::read(f).unwrap();
            let at = bytes.len() - 7;
            bytes[at] ^= 0x40;
            fs::write(f, bytes).unwrap();
        },
        "checksum",
    );
    damaged_file_is_reported_and_rebuilt(
        |f| {
            // A whole, valid file of another width.
            let mut other = Vectors::new(DIM + 1);
            other.push(0, &[0.5; DIM + 1]).unwrap();
            fs::write(f, other.encode()).unwrap();
        },
        "dimensions",
    );
    damaged_file_is_reported_and_rebuilt(
        |f| {
            // Valid, but missing the last passage's vector.
            let full = Vectors::read(f, DIM).unwrap();
            let mut fewer = Vectors::new(DIM);
            for row in 0..full.len() - 1 {
                fewer.push(full.ids()[row], full.row(row).unwrap()).unwrap();
            }
            fs::write(f, fewer.encode()).unwrap();
        },
        "no vector for passage",
    );
    damaged_file_is_reported_and_rebuilt(|f| fs::remove_file(f).unwrap(), "No such file");
}

/// A format-1 index as that version wrote it: the vector a bytes field in the document store,
/// no `id` field, no vectors file.
fn write_format_1_index(kb_dir: &Path, docs: &Path, embedder: &Hashing) {
    use tantivy::schema::{
        IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
    };
    use tantivy::{Index, IndexWriter, TantivyDocument};

    let mut builder = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("kb")
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let path = builder.add_text_field("path", STRING | STORED);
    let title = builder.add_text_field("title", text.clone());
    let heading = builder.add_text_field("heading", STORED);
    let body = builder.add_text_field("body", text.set_stored());
    let start = builder.add_u64_field("start", STORED);
    let end = builder.add_u64_field("end", STORED);
    let vector = builder.add_bytes_field("vector", STORED);
    let idx = kb_dir.join("idx-1-1");
    fs::create_dir_all(&idx).unwrap();
    let index = Index::create_in_dir(&idx, builder.build()).unwrap();
    index.tokenizers().register(
        "kb",
        tantivy::tokenizer::TextAnalyzer::builder(tantivy::tokenizer::SimpleTokenizer::default())
            .filter(tantivy::tokenizer::LowerCaser)
            .build(),
    );
    let mut writer: IndexWriter<TantivyDocument> =
        index.writer_with_num_threads(1, 15_000_000).unwrap();
    let file = fs::canonicalize(docs.join("kitchen.md")).unwrap();
    let key = file.to_string_lossy().into_owned();
    let mut doc = TantivyDocument::default();
    doc.add_text(path, &key);
    doc.add_text(title, "kitchen");
    doc.add_text(heading, "[\"kitchen\"]");
    doc.add_text(body, "The oven timer is broken.");
    doc.add_u64(start, 1);
    doc.add_u64(end, 3);
    let v: Vec<u8> = embedder.embed(&["kitchen".to_string()]).unwrap()[0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    doc.add_bytes(vector, v.as_slice());
    writer.add_document(doc).unwrap();
    let manifest = serde_json::json!({
        "format": 1,
        "name": "old",
        "roots": [fs::canonicalize(docs).unwrap()],
        "excludes": [],
        "embed": {"model": embedder.model(), "dim": embedder.dim},
        "files": {key: {"hash": "0", "bytes": 10, "chunks": 1}},
        "updated_at": 1,
    });
    let mut prepared = writer.prepare_commit().unwrap();
    prepared.set_payload(&manifest.to_string());
    prepared.commit().unwrap();
    writer.wait_merging_threads().unwrap();
    fs::write(kb_dir.join("CURRENT"), "idx-1-1").unwrap();
}

#[test]
fn a_format_1_index_is_reported_and_rebuilt_with_a_vectors_file() {
    let home = tmp();
    let docs = home.path().join("docs");
    corpus(&docs);
    let store = Store::new(home.path().join("kb"));
    let kb_dir = home.path().join("kb/old");
    let embedder = Hashing { dim: DIM };
    write_format_1_index(&kb_dir, &docs, &embedder);

    let err = store.open("old").err().unwrap();
    assert!(matches!(err, KbError::Stale { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&format!(
            "written by format 1, this gg reads format {}",
            kb::FORMAT
        )),
        "{err}"
    );
    // `add` with no paths rebuilds from the old manifest's roots, vectors file and all.
    let report = store
        .add("old", &[], &options(&embedder), &mut NoProgress)
        .unwrap();
    assert!(report.rebuilt);
    assert!(report.files >= 5, "{report:?}");
    assert!(!kb_dir.join("idx-1-1").exists());
    assert_eq!(vector_files(&index_dir(&kb_dir)).len(), 1);
    assert_dense_matches_reference(&store, "old", &embedder, "oven timer");
}

#[test]
fn an_index_without_an_embedding_model_has_no_vectors_file() {
    let home = tmp();
    let docs = home.path().join("docs");
    corpus(&docs);
    let store = Store::new(home.path().join("kb"));
    store
        .add(
            "b",
            std::slice::from_ref(&docs),
            &AddOptions::default(),
            &mut NoProgress,
        )
        .unwrap();
    let kb = store.open("b").unwrap();
    assert!(kb.manifest().vectors.is_none());
    assert!(vector_files(&index_dir(&home.path().join("kb/b"))).is_empty());
    let embedder = Hashing { dim: DIM };
    assert_eq!(
        kb.search("oven", 3, Some(&embedder)).unwrap().mode,
        Mode::Bm25
    );
    // Adding a model later rebuilds with one.
    let report = store
        .add("b", &[], &options(&embedder), &mut NoProgress)
        .unwrap();
    assert!(report.rebuilt);
    assert_dense_matches_reference(&store, "b", &embedder, "oven timer");
}
