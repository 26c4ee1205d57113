//! Daemon throughput: 16 concurrent runs against the scripted provider, each streaming a tool call
//! (`read`) and then a few hundred text deltas, followed over HTTP + SSE like the web UI does.
//!
//! Reports runs/s, event delivery latency (daemon emit timestamp → client receipt, ms
//! resolution) p50/p99, and the daemon's RSS. Then the replay: one finished run of
//! [`REPLAY_DELTAS`] events read back from the start by [`CONCURRENT`] `run.wait` calls at once,
//! with the daemon's peak RSS before and after (each response is ~1.7 MB; the events were once
//! cloned into JSON trees per call, about twelve times the response). Run: `cargo bench -p gg
//! --bench daemon_runs` (`GG_BENCH_ROUNDS`, default 5).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

#[path = "../tests/daemon_common/mod.rs"]
mod daemon_common;
#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use daemon_common::{HttpDaemon, env, ggd};
use serde_json::json;
use support::{Reply, ScriptedServer, StreamReply, finish_chunk, text_chunk, usage_chunk};

const CONCURRENT: usize = 16;
const DELTAS: usize = 300;
const REPLAY_DELTAS: usize = 6000;

fn text_reply() -> Reply {
    long_reply(DELTAS)
}

fn long_reply(deltas: usize) -> Reply {
    let mut stream = StreamReply::new();
    for i in 0..deltas {
        stream = stream.event(text_chunk(&format!("token{i} ")));
    }
    stream
        .event(finish_chunk("stop"))
        .event(usage_chunk(100, deltas as u64))
        .done()
        .reply()
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn rss_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index]
}

fn main() {
    let rounds: usize = std::env::var("GG_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let e = env();
    std::fs::write(e.project.join("data.txt"), "some file content\n".repeat(50)).unwrap();
    let server = ScriptedServer::start();
    let daemon = HttpDaemon::spawn(ggd(&e, &server.base_url(), &[]), "bench-token");
    let sessions: Vec<String> = (0..CONCURRENT)
        .map(|_| {
            daemon.ok("session.create", json!({}))["sessionId"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();

    let mut latencies: Vec<i64> = Vec::new();
    let mut events_total = 0usize;
    let started = Instant::now();
    for _ in 0..rounds {
        // Whatever order requests arrive in, each run ends on one text reply and each tool
        // reply causes exactly one more request.
        for _ in 0..CONCURRENT {
            server.push(Reply::tool_call("c1", "read", r#"{"path":"data.txt"}"#));
            server.push(text_reply());
        }
        let runs: Vec<String> = sessions
            .iter()
            .map(|s| {
                daemon.ok("run.start", json!({"sessionId": s, "prompt": "read and summarise", "requireApproval": false}))
                    ["runId"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        let results: Vec<(Vec<i64>, usize, String)> = std::thread::scope(|scope| {
            let handles: Vec<_> = runs
                .iter()
                .map(|run| {
                    let daemon = &daemon;
                    scope.spawn(move || {
                        let mut stream = daemon.events(&format!("runId={run}"), &[]);
                        let mut latencies = Vec::new();
                        let mut count = 0;
                        let mut last = String::new();
                        while let Some(event) = stream.next_event() {
                            latencies.push(now_ms() - event["timestamp"].as_i64().unwrap());
                            count += 1;
                            last = event["type"].as_str().unwrap().to_string();
                        }
                        (latencies, count, last)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (lat, count, last) in results {
            assert_eq!(last, "run_completed");
            latencies.extend(lat);
            events_total += count;
        }
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    let total_runs = rounds * CONCURRENT;
    let pid = daemon.child.id();
    println!(
        "daemon_runs: {rounds} rounds x {CONCURRENT} concurrent runs, {DELTAS} deltas + 1 tool call each"
    );
    println!(
        "  runs/s:            {:.1}",
        total_runs as f64 / elapsed.as_secs_f64()
    );
    println!(
        "  events delivered:  {events_total} ({:.0}/s)",
        events_total as f64 / elapsed.as_secs_f64()
    );
    println!(
        "  delivery latency:  p50 {} ms, p99 {} ms, max {} ms",
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or(0)
    );
    println!(
        "  daemon RSS:        {} KiB now, {} KiB peak",
        rss_kib(pid, "VmRSS:"),
        rss_kib(pid, "VmHWM:")
    );

    // The replay.
    server.push(long_reply(REPLAY_DELTAS));
    let run = daemon.ok(
        "run.start",
        json!({"sessionId": sessions[0], "prompt": "a long answer", "requireApproval": false}),
    )["runId"]
        .as_str()
        .unwrap()
        .to_string();
    while daemon.ok("run.get", json!({"runId": run}))["done"] != true {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (rss_before, peak_before) = (rss_kib(pid, "VmRSS:"), rss_kib(pid, "VmHWM:"));
    let started = Instant::now();
    let sizes: Vec<usize> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CONCURRENT)
            .map(|_| {
                let (daemon, run) = (&daemon, &run);
                scope.spawn(move || {
                    let replay = daemon.ok("run.wait", json!({"runId": run, "afterSequence": 0}));
                    assert!(replay["events"].as_array().unwrap().len() > REPLAY_DELTAS);
                    replay.to_string().len()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    println!(
        "  replay:            {CONCURRENT} run.wait from 0 at once on a {REPLAY_DELTAS}-event run ({:.2} MB each) in {} ms; RSS {} KiB before, peak {} KiB before and {} KiB after, {} KiB now",
        sizes[0] as f64 / 1e6,
        started.elapsed().as_millis(),
        rss_before,
        peak_before,
        rss_kib(pid, "VmHWM:"),
        rss_kib(pid, "VmRSS:")
    );
}
