//! The newest page of a long session (what ggd's `session.open {limit: 100}` reads for the web
//! UI's first screen) against the whole read-only load (what `session.open` without a limit
//! parses), on linear sessions of 10,000 and 100,000 entries of about 1 KB each.
//!
//! Run: `cargo bench -p session --bench read_page` (set `GG_BENCH_ENTRIES` for one other size).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // bench code: failing loudly is the point

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use session::{Entry, EntryKind, Message, Role, Session, ToolCall, load, read_page};

/// A named session with `count` messages (user, assistant calling bash, tool result, assistant)
/// appended as the store writes them, in one buffered write (through the store each append would
/// fsync).
fn generate(dir: &Path, count: usize) -> std::path::PathBuf {
    let mut session = Session::create(dir, "/home/user/project").unwrap();
    session.set_name("long").unwrap();
    let mut parent = session.transcript().entries().last().unwrap().id.clone();
    let path = session.path().to_path_buf();
    drop(session);
    let body = "The quick brown fox jumps over the lazy dog; \"quoted\" text, a\ttab and ünïcödé. "
        .repeat(11);
    let mut out = std::io::BufWriter::new(
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap(),
    );
    for index in 0..count {
        let message = match index % 4 {
            0 => Message::text(Role::User, format!("{index}: {body}")),
            1 => {
                let mut message = Message::text(Role::Assistant, "");
                let arguments = format!(r#"{{"command":"grep -rn {index} src/"}}"#);
                message.tool_calls =
                    vec![ToolCall::new(format!("call_{index}"), "bash", &arguments).unwrap()];
                message
            }
            2 => {
                let mut message = Message::text(Role::Tool, format!("{index}: {body}"));
                message.tool_call_id = format!("call_{}", index - 1);
                message.tool_name = "bash".into();
                message
            }
            _ => Message::text(Role::Assistant, format!("{index}: {body}")),
        };
        let entry = Entry {
            id: format!("{index:016x}"),
            parent_id: Some(parent),
            timestamp: "2026-01-02T03:04:05Z".into(),
            kind: EntryKind::Message {
                message,
                audit: None,
            },
        };
        out.write_all(&entry.to_json_line().unwrap()).unwrap();
        parent = entry.id;
    }
    out.flush().unwrap();
    path
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> Duration {
    median(
        (0..runs)
            .map(|_| {
                let started = Instant::now();
                std::hint::black_box(f());
                started.elapsed()
            })
            .collect(),
    )
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this in test mode: keep it tiny.
    let test_mode = !std::env::args().any(|arg| arg == "--bench");
    let sizes: Vec<usize> = match std::env::var("GG_BENCH_ENTRIES").ok() {
        Some(value) => vec![value.parse().expect("GG_BENCH_ENTRIES: a number")],
        None if test_mode => vec![1_000],
        None => vec![10_000, 100_000],
    };
    let dir = tempfile::tempdir().unwrap();
    for count in sizes {
        let sub = dir.path().join(count.to_string());
        std::fs::create_dir_all(&sub).unwrap();
        let path = generate(&sub, count);
        let size = std::fs::metadata(&path).unwrap().len() as f64 / 1e6;
        let page = read_page(&path, None, 100).unwrap().unwrap();
        assert_eq!(page.total_messages, count);
        assert_eq!(page.name.as_deref(), Some("long"));
        let runs = 7;
        let whole = time(runs, || load(&path).unwrap().messages().len());
        let newest = time(runs, || read_page(&path, None, 100).unwrap());
        let before = page.before.clone().unwrap();
        let older = time(runs, || read_page(&path, Some(&before), 100).unwrap());
        // The floor of any read that must see every line: the bytes alone, from the page cache.
        let bytes = time(runs, || std::fs::read(&path).unwrap().len());
        println!(
            "{count} entries ({size:.1} MB), median of {runs}: whole load {whole:.2?}, \
             newest page of 100 {newest:.2?} ({:.1}x less), the page before it {older:.2?}, \
             reading the file's bytes alone {bytes:.2?}",
            whole.as_secs_f64() / newest.as_secs_f64()
        );
    }
}
