//! Retrieval quality on a real document set: the Rust book as Debian's `rust-doc` installs it,
//! with 110 hand-labelled questions (80 in the book's terms, 30 paraphrased) (tests/data/rust-book-queries.jsonl). BM25 alone must keep
//! recall@5 and MRR above floors set a little under what it measured when the floors were set
//! (see docs/performance.md); a change to chunking, HTML extraction or scoring that costs quality
//! fails here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};

use kb::{AddOptions, NoProgress, Store};

const BOOK: &str = "/usr/share/doc/rust-doc/html/book";
const RECALL_AT_5_FLOOR: f64 = 0.85;
const MRR_FLOOR: f64 = 0.80;

fn book() -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var("GG_KB_BOOK").unwrap_or_else(|_| BOOK.to_string()));
    if path.join("ch04-01-what-is-ownership.html").is_file() {
        return Some(path);
    }
    // The README's test command runs this test (its prerequisites name rust-doc): a missing book
    // is a failure unless skipping was asked for with GG_ALLOW_SKIP=1, as in the other suites;
    // CI (and GG_REQUIRE_RUST_BOOK=1) never skips.
    assert!(
        std::env::var_os("GG_ALLOW_SKIP").is_some()
            && std::env::var_os("CI").is_none()
            && std::env::var_os("GG_REQUIRE_RUST_BOOK").is_none(),
        "the Rust book is not installed at {}: apt-get install rust-doc, or run with \
         GG_ALLOW_SKIP=1 to skip this test",
        path.display()
    );
    None
}

#[test]
fn bm25_recall_and_mrr_on_the_rust_book_stay_above_their_floors() {
    let Some(book) = book() else {
        // Not eprintln!: the harness hides that for a passing test, and the skip must show.
        let _ = writeln!(
            std::io::stderr(),
            "SKIP bm25_recall_and_mrr_on_the_rust_book_stay_above_their_floors: no Rust book \
             (apt-get install rust-doc; GG_ALLOW_SKIP is set)"
        );
        return;
    };
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let store = Store::new(home.path().join("kb"));
    let options = AddOptions {
        excludes: vec!["print.html".to_string()],
        embedder: None,
        deny_read: Vec::new(),
        refuse_open: None,
    };
    let report = store
        .add(
            "book",
            std::slice::from_ref(&book),
            &options,
            &mut NoProgress,
        )
        .unwrap();
    assert!(report.files > 100, "{report:?}");
    let kb = store.open("book").unwrap();
    let cases = kb::eval::parse(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/rust-book-queries.jsonl"),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(cases.len() >= 50);
    let result = kb::eval::run(&kb, &cases, 5, None).unwrap();
    for case in &result.cases {
        eprintln!(
            "{} rank={:?} {} -> top {}",
            if case.rank.is_some() { "PASS" } else { "FAIL" },
            case.rank,
            case.query,
            case.top.as_deref().unwrap_or("-")
        );
    }
    eprintln!(
        "BM25 recall@5 {}/{} = {:.3}, MRR@5 {:.3}",
        result.hits,
        cases.len(),
        result.recall,
        result.mrr
    );
    assert!(
        result.recall >= RECALL_AT_5_FLOOR,
        "recall@5 {:.3} fell under {RECALL_AT_5_FLOOR}",
        result.recall
    );
    assert!(
        result.mrr >= MRR_FLOOR,
        "MRR {:.3} fell under {MRR_FLOOR}",
        result.mrr
    );
}
