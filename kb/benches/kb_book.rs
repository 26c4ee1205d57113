//! Indexing throughput, query latency and retrieval quality on the Rust book (Debian's
//! `rust-doc`), BM25 alone and, when `GG_EMBED_BASE_URL`/`GG_EMBED_MODEL` name an embeddings
//! endpoint, hybrid. The numbers in docs/performance.md come from:
//!
//!     cargo bench -p kb --bench kb_book
//!     HF_HUB_OFFLINE=1 python3 benches/kb_embeddings_server.py --port 8089 &
//!     GG_EMBED_BASE_URL=http://127.0.0.1:8089/v1 GG_EMBED_MODEL=all-minilm-l6-v2 \
//!         cargo bench -p kb --bench kb_book
//!
//! `GG_KB_DUMP=PREFIX` also writes `PREFIX.<bm25|hybrid>.jsonl`: every query's top 50 hits
//! (file, lines, score, ranks), to show that two builds rank identically.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kb::{AddOptions, EmbedConfig, Embedder, HttpEmbedder, NoProgress, Store};

const ROUNDS: usize = 5;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn measure(label: &str, book: &Path, embedder: Option<&dyn Embedder>, cases: &[kb::eval::Case]) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("kb"));
    let options = AddOptions {
        excludes: vec!["print.html".to_string()],
        embedder,
        deny_read: Vec::new(),
        refuse_open: None,
    };
    let started = Instant::now();
    let report = store
        .add("book", &[book.to_path_buf()], &options, &mut NoProgress)
        .unwrap();
    let took = started.elapsed();
    let mb = report.bytes_indexed as f64 / 1e6;
    println!(
        "{label}: indexed {} files, {} passages, {mb:.1} MB in {:.2} s = {:.2} MB/s",
        report.files,
        report.chunks,
        took.as_secs_f64(),
        mb / took.as_secs_f64()
    );
    let again = Instant::now();
    store.add("book", &[], &options, &mut NoProgress).unwrap();
    println!(
        "{label}: re-add with nothing changed: {:.2} s",
        again.elapsed().as_secs_f64()
    );

    let kb = store.open("book").unwrap();
    let result = kb::eval::run(&kb, cases, 5, embedder).unwrap();
    println!(
        "{label}: mode {:?}, recall@5 {}/{} = {:.3}, MRR@5 {:.3}",
        result.mode,
        result.hits,
        cases.len(),
        result.recall,
        result.mrr
    );
    for case in result.cases.iter().filter(|c| c.rank.is_none()) {
        println!("{label}:   miss: {}", case.query);
    }
    if let Ok(prefix) = std::env::var("GG_KB_DUMP") {
        let mut out = String::new();
        for case in cases {
            let found = kb.search(&case.query, 50, embedder).unwrap();
            let hits: Vec<_> = found
                .hits
                .iter()
                .map(|h| {
                    serde_json::json!([
                        h.file,
                        h.start_line,
                        h.end_line,
                        h.score,
                        h.bm25_rank,
                        h.dense_rank
                    ])
                })
                .collect();
            out.push_str(
                &serde_json::json!({"query": case.query, "mode": found.mode, "hits": hits})
                    .to_string(),
            );
            out.push('\n');
        }
        std::fs::write(format!("{prefix}.{label}.jsonl"), out).unwrap();
    }
    let mut times = Vec::new();
    for _ in 0..ROUNDS {
        for case in cases {
            let t = Instant::now();
            let found = kb.search(&case.query, 5, embedder).unwrap();
            times.push(t.elapsed());
            assert!(!found.hits.is_empty() || found.note.is_some());
        }
    }
    times.sort();
    println!(
        "{label}: query latency over {} searches: p50 {:.2} ms, p99 {:.2} ms",
        times.len(),
        percentile(&times, 0.50).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3
    );
    // gg's kb_search tool opens the knowledge base for every search.
    let mut opens = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        let kb = store.open("book").unwrap();
        opens.push(t.elapsed());
        drop(kb);
    }
    opens.sort();
    println!(
        "{label}: open latency over {} opens: p50 {:.2} ms, p99 {:.2} ms",
        opens.len(),
        percentile(&opens, 0.50).as_secs_f64() * 1e3,
        percentile(&opens, 0.99).as_secs_f64() * 1e3
    );
}

fn main() {
    let book = PathBuf::from(
        std::env::var("GG_KB_BOOK")
            .unwrap_or_else(|_| "/usr/share/doc/rust-doc/html/book".to_string()),
    );
    if !book.join("ch04-01-what-is-ownership.html").is_file() {
        eprintln!(
            "no Rust book at {} (apt-get install rust-doc)",
            book.display()
        );
        return;
    }
    let cases = kb::eval::parse(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/rust-book-queries.jsonl"),
        )
        .unwrap(),
    )
    .unwrap();
    measure("bm25", &book, None, &cases);
    let (Ok(base_url), Ok(model)) = (
        std::env::var("GG_EMBED_BASE_URL"),
        std::env::var("GG_EMBED_MODEL"),
    ) else {
        println!("hybrid: skipped (set GG_EMBED_BASE_URL and GG_EMBED_MODEL)");
        return;
    };
    let embedder = HttpEmbedder::new(EmbedConfig {
        base_url,
        model,
        api_key: None,
    })
    .unwrap();
    measure("hybrid", &book, Some(&embedder), &cases);
}
