//! Daemon throughput: 16 concurrent runs against the scripted provider, each streaming a tool call
//! (`read`) and then a few hundred text deltas, followed over HTTP + SSE like the web UI does.
//!
//! Reports runs/s, event delivery latency (daemon emit timestamp → client receipt, ms
//! resolution) p50/p99, and the daemon's RSS. Then the replay: one finished run of
//! [`REPLAY_DELTAS`] events read back from the start by [`CONCURRENT`] `run.wait` calls at once,
//! with the daemon's peak RSS before and after (each response is ~1.7 MB; the events were once
//! cloned into JSON trees per call, about twelve times the response). Then the attach storm, on a
//! daemon of its own: [`ATTACHERS`] SSE clients open a finished run of [`REPLAY_DELTAS`] events
//! from sequence 0 at once while [`LIVE_RUNS`] runs stream paced deltas to their own clients
//! (see [`attach_storm`]). Run: `cargo bench -p gg --bench daemon_runs` (`GG_BENCH_ROUNDS`,
//! default 5; `GG_BENCH_STORMS`, default 3; `GG_BENCH_SCENARIO=runs|attach` for one part only;
//! `GG_BENCH_GGD=/path/to/ggd` to measure another build's ggd, with its `gg` beside it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

#[path = "../tests/daemon_common/mod.rs"]
mod daemon_common;
#[path = "../tests/support/mod.rs"]
mod support;

use std::process::Command;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use daemon_common::{Env, HttpDaemon, env, ggd};
use serde_json::json;
use support::{Reply, ScriptedServer, StreamReply, finish_chunk, text_chunk, usage_chunk};

const CONCURRENT: usize = 16;
const DELTAS: usize = 300;
const REPLAY_DELTAS: usize = 6000;
/// Runs streaming to their own clients while the attach storm goes on.
const LIVE_RUNS: usize = 8;
/// Clients opening the long backlog at once.
const ATTACHERS: usize = 50;
/// Deltas of each live run, one every [`PACE`]: about 6 s of streaming, longer than a storm.
const PACED_DELTAS: usize = 300;
/// A model's pace (50 tokens/s); the bursty replies above write every delta back to back, so
/// their latency figures measure queueing of a burst, not delivery.
const PACE: Duration = Duration::from_millis(20);
/// Events each live client receives before the storm starts, so every live run is streaming.
const WARM_UP_EVENTS: usize = 25;

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

/// [`long_reply`] at a model's pace: one delta every [`PACE`].
fn paced_reply(deltas: usize) -> Reply {
    let mut stream = StreamReply::new();
    for i in 0..deltas {
        stream = stream.event(text_chunk(&format!("token{i} "))).delay(PACE);
    }
    stream
        .event(finish_chunk("stop"))
        .event(usage_chunk(100, deltas as u64))
        .done()
        .reply()
}

/// The daemon under test: the `ggd` built with this bench, or the one `GG_BENCH_GGD` names (an
/// older build kept for a before/after comparison, with its `gg` beside it), with the same
/// arguments, environment and working directory.
fn daemon_command(e: &Env, base_url: &str) -> Command {
    let ours = ggd(e, base_url, &[]);
    let Some(path) = std::env::var_os("GG_BENCH_GGD") else {
        return ours;
    };
    assert!(
        std::path::Path::new(&path).is_file(),
        "GG_BENCH_GGD={} is not a file",
        path.to_string_lossy()
    );
    let mut other = Command::new(path);
    // `ggd` starts from an empty environment; these are the variables it sets.
    other.env_clear().args(ours.get_args());
    for (name, value) in ours.get_envs() {
        match value {
            Some(value) => other.env(name, value),
            None => other.env_remove(name),
        };
    }
    if let Some(dir) = ours.get_current_dir() {
        other.current_dir(dir);
    }
    other
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Which sequences one client received, against the run's `1..=last`.
#[derive(Default)]
struct Tally {
    events: usize,
    lost: u64,
    duplicated: u64,
    reordered: u64,
}

impl Tally {
    fn of(ids: &[u64], last: u64) -> Tally {
        let mut seen = vec![false; usize::try_from(last + 1).unwrap()];
        let mut tally = Tally {
            events: ids.len(),
            ..Tally::default()
        };
        let mut highest = 0;
        for &id in ids {
            match seen.get_mut(usize::try_from(id).unwrap()) {
                Some(slot) if id > 0 && !*slot => *slot = true,
                // Sequence 0 or past the end is as wrong as a repeat: nobody sent it once.
                _ => {
                    tally.duplicated += 1;
                    continue;
                }
            }
            if id < highest {
                tally.reordered += 1;
            }
            highest = highest.max(id);
        }
        tally.lost = seen.iter().skip(1).filter(|s| !**s).count() as u64;
        tally
    }

    fn add(&mut self, other: Tally) {
        self.events += other.events;
        self.lost += other.lost;
        self.duplicated += other.duplicated;
        self.reordered += other.reordered;
    }
}

fn last_sequence(daemon: &HttpDaemon, run: &str) -> u64 {
    loop {
        let status = daemon.ok("run.get", json!({"runId": run}));
        if status["done"] == true {
            return status["lastSequence"].as_u64().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What one live client saw: (receipt time, latency) per event, in ms, and the sequences.
struct Live {
    latencies: Vec<(i64, i64)>,
    ids: Vec<u64>,
}

/// What one attaching client saw: the sequences, the bytes of event data, and when it had the
/// whole backlog (ms since the epoch).
struct Attached {
    ids: Vec<u64>,
    bytes: usize,
    finished_ms: i64,
}

/// [`ATTACHERS`] SSE clients open a finished [`REPLAY_DELTAS`]-event run from sequence 0 at the
/// same moment, while [`LIVE_RUNS`] runs stream [`PACE`]d deltas to a client each; repeated
/// `GG_BENCH_STORMS` times on one daemon. Reports the live streams' delivery latency during the
/// storm (receipt between the storm's start and the last attaching client's last event) and
/// outside it, how long the attaching clients took for the whole backlog, the daemon's RSS peak
/// (sampled every 5 ms, and `VmHWM`), and whether every client got every event of its run
/// exactly once and in order.
fn attach_storm() {
    let storms: usize = std::env::var("GG_BENCH_STORMS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let load_before = load_average();
    let e = env();
    let server = ScriptedServer::start();
    let daemon = HttpDaemon::spawn(daemon_command(&e, &server.base_url()), "bench-token");
    let pid = daemon.child.id();

    server.push(long_reply(REPLAY_DELTAS));
    let backlog = daemon.start_unattended_run(&daemon.new_session(), "a long answer");
    let backlog_last = last_sequence(&daemon, &backlog);
    let live_sessions: Vec<String> = (0..LIVE_RUNS).map(|_| daemon.new_session()).collect();

    let sampling = AtomicBool::new(true);
    let rss_peak = AtomicU64::new(0);
    let mut storm_latencies: Vec<i64> = Vec::new();
    let mut quiet_latencies: Vec<i64> = Vec::new();
    let mut backlog_times: Vec<i64> = Vec::new();
    let mut storm_lengths: Vec<i64> = Vec::new();
    let mut backlog_bytes = 0;
    let mut tally = Tally::default();
    let mut streams = 0;
    std::thread::scope(|outer| {
        outer.spawn(|| {
            while sampling.load(Ordering::Relaxed) {
                rss_peak.fetch_max(rss_kib(pid, "VmRSS:"), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        for _ in 0..storms {
            for _ in 0..LIVE_RUNS {
                server.push(paced_reply(PACED_DELTAS));
            }
            let runs: Vec<String> = live_sessions
                .iter()
                .map(|s| daemon.start_unattended_run(s, "stream at a model's pace"))
                .collect();
            let warm = AtomicUsize::new(0);
            let release = Barrier::new(ATTACHERS + 1);
            let (lives, attached, storm_start) = std::thread::scope(|scope| {
                let lives: Vec<_> = runs
                    .iter()
                    .map(|run| {
                        let (daemon, warm) = (&daemon, &warm);
                        scope.spawn(move || {
                            let mut stream = daemon.events(&format!("runId={run}"), &[]);
                            let mut live = Live {
                                latencies: Vec::new(),
                                ids: Vec::new(),
                            };
                            while let Some(event) = stream.next_event() {
                                let now = now_ms();
                                live.latencies
                                    .push((now, now - event["timestamp"].as_i64().unwrap()));
                                live.ids.push(event["sequence"].as_u64().unwrap());
                                if live.ids.len() == WARM_UP_EVENTS {
                                    warm.fetch_add(1, Ordering::SeqCst);
                                }
                            }
                            live
                        })
                    })
                    .collect();
                let attachers: Vec<_> = (0..ATTACHERS)
                    .map(|_| {
                        let (daemon, release, backlog) = (&daemon, &release, &backlog);
                        scope.spawn(move || {
                            release.wait();
                            let mut stream = daemon.events(&format!("runId={backlog}"), &[]);
                            let mut attached = Attached {
                                ids: Vec::new(),
                                bytes: 0,
                                finished_ms: 0,
                            };
                            // Frames, not parsed events: fifty JSON parsers would compete with
                            // the daemon for the same two cores. The data must name its id.
                            while let Some(frame) = stream.next_frame() {
                                let Some(id) = frame.id else { continue };
                                assert!(
                                    frame.data.contains(&format!("\"sequence\":{id},")),
                                    "frame {id} carries another event"
                                );
                                attached.ids.push(id);
                                attached.bytes += frame.data.len();
                            }
                            attached.finished_ms = now_ms();
                            attached
                        })
                    })
                    .collect();
                // Released even when a live run never warms up, so no attacher waits forever.
                let warm_by = Instant::now() + Duration::from_secs(60);
                while warm.load(Ordering::SeqCst) < LIVE_RUNS && Instant::now() < warm_by {
                    std::thread::sleep(Duration::from_millis(5));
                }
                let warmed = warm.load(Ordering::SeqCst) == LIVE_RUNS;
                let storm_start = now_ms();
                release.wait();
                let attached: Vec<Attached> =
                    attachers.into_iter().map(|h| h.join().unwrap()).collect();
                let lives: Vec<Live> = lives.into_iter().map(|h| h.join().unwrap()).collect();
                assert!(
                    warmed,
                    "the live runs were streaming when the storm started"
                );
                (lives, attached, storm_start)
            });
            let storm_end = attached.iter().map(|a| a.finished_ms).max().unwrap();
            storm_lengths.push(storm_end - storm_start);
            for (live, run) in lives.into_iter().zip(&runs) {
                for (received, latency) in live.latencies {
                    if (storm_start..=storm_end).contains(&received) {
                        storm_latencies.push(latency);
                    } else {
                        quiet_latencies.push(latency);
                    }
                }
                tally.add(Tally::of(&live.ids, last_sequence(&daemon, run)));
                streams += 1;
            }
            for attached in attached {
                backlog_times.push(attached.finished_ms - storm_start);
                backlog_bytes = attached.bytes;
                tally.add(Tally::of(&attached.ids, backlog_last));
                streams += 1;
            }
        }
        sampling.store(false, Ordering::Relaxed);
    });
    storm_latencies.sort_unstable();
    quiet_latencies.sort_unstable();
    backlog_times.sort_unstable();
    println!(
        "attach storm: {storms} x ({ATTACHERS} SSE clients from sequence 0 on a finished {backlog_last}-event run, {:.2} MB of event data each, while {LIVE_RUNS} runs stream {PACED_DELTAS} deltas at one per {} ms)",
        backlog_bytes as f64 / 1e6,
        PACE.as_millis()
    );
    println!(
        "  live latency, storm:   p50 {} ms, p99 {} ms, max {} ms ({} events)",
        percentile(&storm_latencies, 0.50),
        percentile(&storm_latencies, 0.99),
        storm_latencies.last().copied().unwrap_or(0),
        storm_latencies.len()
    );
    println!(
        "  live latency, quiet:   p50 {} ms, p99 {} ms, max {} ms ({} events)",
        percentile(&quiet_latencies, 0.50),
        percentile(&quiet_latencies, 0.99),
        quiet_latencies.last().copied().unwrap_or(0),
        quiet_latencies.len()
    );
    println!(
        "  whole backlog after:   p50 {} ms, max {} ms (storms lasted {:?} ms)",
        percentile(&backlog_times, 0.50),
        backlog_times.last().copied().unwrap_or(0),
        storm_lengths
    );
    println!(
        "  daemon RSS:            peak {} KiB sampled, VmHWM {} KiB, {} KiB now",
        rss_peak.load(Ordering::Relaxed),
        rss_kib(pid, "VmHWM:"),
        rss_kib(pid, "VmRSS:")
    );
    println!(
        "  every event once:      {streams} streams, {} events: {} lost, {} duplicated, {} reordered",
        tally.events, tally.lost, tally.duplicated, tally.reordered
    );
    println!(
        "  load average:          {load_before} before, {} after",
        load_average()
    );
    assert_eq!(
        (tally.lost, tally.duplicated, tally.reordered),
        (0, 0, 0),
        "every client gets every event of its run once, in order"
    );
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
    match std::env::var("GG_BENCH_SCENARIO").as_deref() {
        Err(_) | Ok("all") => {
            runs_and_replay();
            attach_storm();
        }
        Ok("runs") => runs_and_replay(),
        Ok("attach") => attach_storm(),
        Ok(other) => panic!("GG_BENCH_SCENARIO={other}: expected all, runs or attach"),
    }
}

/// The concurrent runs and the `run.wait` replay.
fn runs_and_replay() {
    let rounds: usize = std::env::var("GG_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let e = env();
    std::fs::write(e.project.join("data.txt"), "some file content\n".repeat(50)).unwrap();
    let server = ScriptedServer::start();
    let daemon = HttpDaemon::spawn(daemon_command(&e, &server.base_url()), "bench-token");
    let sessions: Vec<String> = (0..CONCURRENT).map(|_| daemon.new_session()).collect();

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
