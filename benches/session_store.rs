//! Session store benchmark: open a ~100 MB session of 100,000 entries, then append to it.
//!
//! Run: `cargo bench -p gg --bench session_store` (set `GG_BENCH_ENTRIES` for another size).
//! Reports open time, peak RSS (VmHWM, reset before the open) against the file size, and append
//! latency on the large session next to the same on an empty one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use gg::session::{
    Entry, EntryKind, Header, Message, Role, Session, StopReason, ToolCall, load, new_id,
};

fn status_kib(field: &str) -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Resets VmHWM to the current RSS (Linux >= 4.0) so the next peak belongs to what follows.
fn reset_peak() {
    let _ = fs::write("/proc/self/clear_refs", "5");
}

/// Writes a linear session of `count` entries of about 1 KB each, streaming (no big buffers).
fn generate(path: &Path, count: usize) {
    let header = Header {
        kind: "session".into(),
        version: 3,
        id: new_id().unwrap(),
        timestamp: "2026-01-01T00:00:00Z".into(),
        cwd: "/home/user/project".into(),
        workspace_id: None,
        parent_session_id: None,
        parent_entry_id: None,
        parent_session: None,
    };
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path).unwrap());
    out.write_all(&serde_json::to_vec(&header).unwrap())
        .unwrap();
    out.write_all(b"\n").unwrap();
    let body = "The quick brown fox jumps over the lazy dog; \"quoted\" text, a\ttab and ünïcödé. "
        .repeat(11);
    let mut parent: Option<String> = None;
    for index in 0..count {
        let mut message = match index % 4 {
            0 => Message::text(Role::User, format!("{index}: {body}")),
            1 => {
                let mut message = Message::text(Role::Assistant, "");
                let arguments = serde_json::json!({ "command": format!("grep -rn {index} src/ && {}", &body[..600]) });
                message.tool_calls = vec![
                    ToolCall::new(format!("call_{index}"), "bash", &arguments.to_string()).unwrap(),
                ];
                message.stop_reason = Some(StopReason::ToolUse);
                message
            }
            2 => {
                let mut message = Message::text(Role::Tool, format!("{index}: {body}"));
                message.tool_call_id = format!("call_{}", index - 1);
                message.tool_name = "bash".into();
                message
            }
            _ => {
                let mut message = Message::text(Role::Assistant, format!("{index}: {body}"));
                message.stop_reason = Some(StopReason::EndTurn);
                message
            }
        };
        message.timestamp = 1_767_225_600_000 + index as i64;
        let entry = Entry {
            id: new_id().unwrap(),
            parent_id: parent.take(),
            timestamp: "2026-01-01T00:00:00.123456789Z".into(),
            kind: EntryKind::Message {
                message,
                audit: None,
            },
        };
        out.write_all(&entry.to_json_line().unwrap()).unwrap();
        parent = Some(entry.id);
    }
    out.flush().unwrap();
    out.get_ref().sync_all().unwrap();
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

fn append_latencies(session: &mut Session, count: usize) -> (Duration, Duration, Duration) {
    let mut samples = Vec::with_capacity(count);
    for index in 0..count {
        let message = Message::text(Role::User, format!("appended {index}: {}", "x".repeat(900)));
        let started = Instant::now();
        session.append_message(message).unwrap();
        samples.push(started.elapsed());
    }
    samples.sort();
    (
        percentile(&samples, 0.5),
        percentile(&samples, 0.99),
        samples[samples.len() - 1],
    )
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this in test mode: keep it tiny.
    let test_mode = std::env::args().any(|arg| arg == "--test")
        || !std::env::args().any(|arg| arg == "--bench");
    let count: usize = std::env::var("GG_BENCH_ENTRIES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(if test_mode { 1_000 } else { 100_000 });
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("big.jsonl");

    let started = Instant::now();
    generate(&path, count);
    let size = fs::metadata(&path).unwrap().len();
    println!(
        "generated {count} entries, {:.1} MB in {:.2?}",
        size as f64 / 1e6,
        started.elapsed()
    );

    reset_peak();
    let rss_before = status_kib("VmRSS:");
    let started = Instant::now();
    let mut session = Session::open(&path).unwrap();
    let open_time = started.elapsed();
    let peak = status_kib("VmHWM:");
    let retained = status_kib("VmRSS:");
    assert_eq!(session.transcript().entries().len(), count);
    println!("open (lease + parse + validate): {open_time:.2?}");
    println!(
        "peak RSS during open: {:.1} MB ({:.2}x file size; {:.1} MB before open), RSS after open: {:.1} MB",
        peak as f64 / 1024.0,
        peak as f64 * 1024.0 / size as f64,
        rss_before as f64 / 1024.0,
        retained as f64 / 1024.0,
    );
    let started = Instant::now();
    let messages = session.transcript().messages().len();
    println!(
        "active-path messages ({messages}): {:.2?}",
        started.elapsed()
    );

    let appends = if test_mode { 20 } else { 200 };
    let (median, p99, max) = append_latencies(&mut session, appends);
    println!(
        "append to the {count}-entry session ({appends}x, fsync each): median {median:.2?}, p99 {p99:.2?}, max {max:.2?}"
    );
    drop(session);

    let mut small = Session::create(dir.path(), "/p").unwrap();
    let (median, p99, max) = append_latencies(&mut small, appends);
    println!(
        "append to an empty session ({appends}x, fsync each): median {median:.2?}, p99 {p99:.2?}, max {max:.2?}"
    );

    let mut loads = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        let transcript = load(&path).unwrap();
        loads.push(started.elapsed());
        assert!(transcript.entries().len() >= count);
    }
    loads.sort();
    println!(
        "read-only load (3 runs): min {:.2?}, median {:.2?}",
        loads[0], loads[1]
    );
}
