//! Reads NUL-separated commands from stdin and prints one JSON verdict per line, classified in
//! the context `gg classify` builds for the current directory
//! (`tools::security::classifier_context`, without a project policy's rules).
//!
//! Run: `cargo run --release -p tools --example verdicts < cmds.bin > verdicts.jsonl`.
//!
//! Why it exists: the library's verdicts can be compared byte for byte between two trees, and
//! the library profiled (`perf record`) in gg's context, without a release build of gg (minutes
//! on the 2-core machine).
//!
//! `GG_VERDICTS_ROUNDS=N` classifies the input N times and prints only the last round (for
//! profiling); `GG_VERDICTS_TIMES=1` prints each distinct command's time instead, slowest
//! first; `GG_VERDICTS_NO_NESTED=1` leaves `nested_git` out.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a tool: failing loudly is the point

use std::io::{Read, Write};

use classifier::{ExtraRules, classify};

fn main() {
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input).unwrap();
    let commands: Vec<String> = input
        .split(|&b| b == 0)
        .filter(|c| !c.is_empty())
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let mut ctx = tools::security::classifier_context(
        &std::env::current_dir().unwrap(),
        ExtraRules::default(),
    );
    if std::env::var_os("GG_VERDICTS_NO_NESTED").is_some() {
        ctx.nested_git = None;
    }
    let rounds: usize = std::env::var("GG_VERDICTS_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1)
        .max(1);
    if std::env::var_os("GG_VERDICTS_TIMES").is_some() {
        // Each distinct command's time (the fastest of `rounds` runs), slowest first, instead
        // of the verdicts: where a set's time goes.
        let mut seen = std::collections::BTreeMap::new();
        for command in &commands {
            seen.entry(command.as_str()).or_insert(u128::MAX);
        }
        for _ in 0..rounds {
            for (command, best) in seen.iter_mut() {
                let started = std::time::Instant::now();
                std::hint::black_box(classify(command, &ctx).ok());
                *best = (*best).min(started.elapsed().as_nanos());
            }
        }
        let mut times: Vec<(u128, &str)> = seen.into_iter().map(|(c, t)| (t, c)).collect();
        times.sort_by(|a, b| b.cmp(a));
        let total: u128 = times.iter().map(|t| t.0).sum();
        println!(
            "total {} µs over {} distinct commands",
            total / 1000,
            times.len()
        );
        for (t, c) in times {
            println!(
                "{:>8} ns  {}",
                t,
                c.escape_debug()
                    .to_string()
                    .chars()
                    .take(120)
                    .collect::<String>()
            );
        }
        return;
    }
    for _ in 1..rounds {
        for command in &commands {
            std::hint::black_box(classify(command, &ctx).ok());
        }
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for command in &commands {
        let line = match classify(command, &ctx) {
            Ok(verdict) => serde_json::json!({ "command": command, "verdict": verdict }),
            Err(e) => serde_json::json!({ "command": command, "error": e.to_string() }),
        };
        serde_json::to_writer(&mut out, &line).unwrap();
        out.write_all(b"\n").unwrap();
    }
    out.flush().unwrap();
}
