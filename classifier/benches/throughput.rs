//! Batch throughput of `classify` on a shell-history-like corpus, single thread.
//!
//! Run: `cargo bench -p classifier --bench throughput`. Prints commands per second.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::hint::black_box;
use std::time::{Duration, Instant};

use classifier::{Context, GitConfig, classify};

/// Templates modelled on real shell histories of developers; `{}` is filled with a varying word.
const TEMPLATES: &[&str] = &[
    "ls -la {}",
    "cd {} && ls",
    "git status",
    "git diff --stat",
    "git log --oneline -20 -- {}",
    "git add {} && git commit -m 'fix {}'",
    "git push origin {}",
    "git checkout -b feature/{}",
    "cargo build --release",
    "cargo test -p {} -- --nocapture",
    "cargo clippy --all-targets -- -D warnings",
    "grep -rn '{}' src/ | head -50",
    "rg -n --hidden {} .",
    "find . -name '*.{}' -type f | xargs wc -l",
    "cat {}.log | sort | uniq -c | sort -rn | head",
    "tail -f /var/log/{}.log",
    "vim src/{}.rs",
    "make -j8 {}",
    "docker run --rm -it -v $(pwd):/src {} bash",
    "kubectl get pods -n {} -o wide",
    "ssh {} 'uptime'",
    "curl -s https://api.example.com/{} | jq .",
    "python3 -m venv .venv && . .venv/bin/activate && pip install -r requirements.txt",
    "npm run {}",
    "export PATH=$HOME/.local/bin:$PATH",
    "echo \"$HOME/{}\" >> notes.txt",
    "rm -rf target/{}",
    "sudo systemctl restart {}",
    "for f in *.{}; do echo \"$f\"; wc -c < \"$f\"; done",
    "if [ -d {} ]; then cp -r {} /tmp/{}; fi",
    "tar -czf {}.tar.gz {}/",
    "ps aux | grep {} | grep -v grep",
    "history | tail -n 100 | awk '{print $2}'",
    "sed -i 's/{}/bar/g' src/main.rs",
    "curl -fsSL https://get.example.com/{} | sh",
    "diff <(sort a.{}) <(sort b.{})",
    "cat <<EOF > {}.conf\nkey = value\nEOF",
    "bash -c 'cd {} && make test'",
    "TZ=UTC date +%Y-%m-%dT%H:%M:%S",
    "du -sh * | sort -h | tail -{}",
];

const WORDS: &[&str] = &[
    "api", "core", "web", "db", "main", "v2", "rs", "txt", "json", "nginx", "prod", "tests",
];

fn corpus(size: usize) -> Vec<String> {
    (0..size)
        .map(|i| {
            let template = TEMPLATES[i % TEMPLATES.len()];
            let word = WORDS[(i * 7 + i / TEMPLATES.len()) % WORDS.len()];
            template.replace("{}", word)
        })
        .collect()
}

fn main() {
    let ctx = Context {
        cwd: "/home/dev/project".into(),
        home: "/home/dev".into(),
        scratch_dirs: vec!["/tmp".into()],
        git_config: GitConfig {
            files: vec!["[core]\n\trepositoryformatversion = 0\n[remote \"origin\"]\n\turl = git@example.com:x.git\n".into()],
        },
        home_credentials: sandbox::protected::DENY_READ_IN_HOME,
        ..Context::default()
    };
    let mut ctx = ctx;
    if let Some(cwd) = std::env::var_os("GG_BENCH_CWD") {
        let cwd = std::path::PathBuf::from(cwd);
        ctx.home = "/root".into();
        ctx.protected = sandbox::protected::PROTECTED_IN_ROOT
            .iter()
            .map(|entry| classifier::Protected {
                path: cwd.join(entry.name),
                except: Vec::new(),
                why: entry.why.to_string(),
                anywhere: entry.anywhere,
            })
            .collect();
        ctx.cwd = cwd;
    }
    // `GG_BENCH_FILE`: commands separated by NUL bytes (as `gg classify --null` reads them)
    // instead of the built-in history-like corpus, e.g. a sample of the labelled corpus.
    let lines = match std::env::var_os("GG_BENCH_FILE") {
        Some(path) => std::fs::read(path)
            .unwrap()
            .split(|&b| b == 0)
            .filter(|c| !c.is_empty())
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect(),
        None => corpus(5000),
    };
    if std::env::var_os("GG_BENCH_TIMES").is_some() {
        let mut seen = std::collections::BTreeMap::new();
        for c in &lines {
            seen.entry(c.as_str()).or_insert(u128::MAX);
        }
        for _ in 0..5 {
            for (c, best) in seen.iter_mut() {
                let t = Instant::now();
                let _ = black_box(classify(c, &ctx));
                *best = (*best).min(t.elapsed().as_nanos());
            }
        }
        let mut times: Vec<(u128, &str)> = seen.into_iter().map(|(c, t)| (t, c)).collect();
        times.sort_by(|a, b| b.cmp(a));
        let total: u128 = times.iter().map(|t| t.0).sum();
        println!("total {} us over {}", total / 1000, times.len());
        let mut acc = 0;
        for (i, (t, c)) in times.iter().enumerate() {
            acc += t;
            println!(
                "{:>8} {:>5.1}% {:>4} {}",
                t,
                acc as f64 * 100.0 / total as f64,
                i,
                c.escape_debug()
                    .to_string()
                    .chars()
                    .take(150)
                    .collect::<String>()
            );
        }
        return;
    }
    // Warm-up: builds the thread's parser and warms caches.
    for line in lines.iter().take(500) {
        let _ = black_box(classify(line, &ctx));
    }
    let mut total = 0usize;
    let cpu_started = cpu_seconds();
    let started = Instant::now();
    let mut rounds = 0;
    let fixed: Option<usize> = std::env::var("GG_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok());
    while match fixed {
        Some(n) => rounds < n,
        None => started.elapsed() < Duration::from_secs(3) || rounds < 2,
    } {
        for line in &lines {
            let verdict = classify(black_box(line), &ctx);
            black_box(&verdict);
            total += 1;
        }
        rounds += 1;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let per_second = total as f64 / elapsed;
    println!(
        "classified {total} commands ({} distinct, {rounds} rounds) in {elapsed:.2} s wall: {per_second:.0} commands/s, {:.1} µs/command",
        lines.len(),
        1e6 / per_second
    );
    // On a shared machine wall time includes waiting for the CPU; CPU time does not.
    if let (Some(a), Some(b)) = (cpu_started, cpu_seconds()) {
        let cpu = b - a;
        if cpu > 0.0 {
            println!(
                "CPU time {cpu:.2} s: {:.0} commands/s per core",
                total as f64 / cpu
            );
        }
    }
}

/// User + system CPU time of this process, from /proc (Linux only).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of stat(5); `after_name` starts at field 3.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // Clock ticks are 100 per second on Linux.
    Some((utime + stime) / 100.0)
}
