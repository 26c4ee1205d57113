//! Per-command overhead of each sandbox level, against the same command run bare and against a
//! bare hardened bubblewrap invocation. Run with:
//!
//! `cargo bench -p sandbox --bench overhead` (`GG_BENCH_RUNS=N` to change the sample size).
//!
//! This binary is its own sandbox helper (it calls `run_if_requested` first, as gg does), so the
//! levels run exactly the code path of the bash tool: `wrap` + spawn + wait, probe cached.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use sandbox::{Backend, Level, Policy};

/// A named thing to time.
type BenchCase = (&'static str, Box<dyn Fn()>);

fn main() -> ExitCode {
    if let Some(code) = sandbox::helper::run_if_requested() {
        return code;
    }
    let runs: usize = std::env::var("GG_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let work = match tempfile::tempdir() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("tempdir: {e}");
            return ExitCode::FAILURE;
        }
    };
    let policy = match Policy::new(work.path()) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let t = Instant::now();
    let probe = sandbox::probe();
    println!("probe (once per process): {:.2} ms", ms(t.elapsed()));
    println!(
        "runs per case: {runs}; command: /bin/true; wall-clock per spawn+wait, and mean CPU time of the spawned processes\n"
    );
    println!(
        "{:<44} {:>10} {:>10} {:>12} {:>12}",
        "case", "median ms", "p90 ms", "overhead ms", "child cpu ms"
    );

    // Cases run interleaved (one round = one run of each) so that load from other processes on
    // the machine hits every case alike and the ratios stay meaningful.
    let workdir = policy.workdir.clone();
    let mut cases: Vec<BenchCase> = vec![(
        "bare /bin/true",
        Box::new(|| run(Command::new("/bin/true"))),
    )];
    if let Ok(info) = &probe.bwrap {
        let info = info.clone();
        cases.push((
            "bare hardened bwrap ... /bin/true",
            Box::new(move || {
                let mut c = Command::new(&info.path);
                c.args(sandbox::bwrap::isolation_flags(&info))
                    .args([
                        "--ro-bind",
                        "/",
                        "/",
                        "--dev",
                        "/dev",
                        "--proc",
                        "/proc",
                        "--tmpfs",
                        "/tmp",
                    ])
                    .arg("--bind")
                    .arg(&workdir)
                    .arg(&workdir)
                    .args(["--", "/bin/true"]);
                run(c)
            }),
        ));
        let p = policy.clone();
        cases.push((
            "gg level bwrap (bwrap + helper)",
            Box::new(move || level(&p, Backend::Bwrap)),
        ));
    } else if let Err(r) = &probe.bwrap {
        println!("gg level bwrap: skipped: {r}");
    }
    match &probe.landlock {
        Ok(_) => {
            let p = policy.clone();
            cases.push((
                "gg level landlock (helper only)",
                Box::new(move || level(&p, Backend::Landlock)),
            ));
        }
        Err(r) => println!("gg level landlock: skipped: {r}"),
    }
    let p = policy.clone();
    cases.push((
        "gg level none (wrap + spawn)",
        Box::new(move || level(&p, Backend::None)),
    ));

    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(runs); cases.len()];
    let mut cpu: Vec<f64> = vec![0.0; cases.len()];
    for round in 0..runs + 3 {
        for (i, (_, f)) in cases.iter().enumerate() {
            let c = children_cpu_ms();
            let t = Instant::now();
            f();
            // The first rounds warm the page cache and are not recorded.
            if round >= 3 {
                samples[i].push(ms(t.elapsed()));
                cpu[i] += children_cpu_ms() - c;
            }
        }
    }
    for s in &mut samples {
        s.sort_by(f64::total_cmp);
    }
    for (i, (name, _)) in cases.iter().enumerate() {
        report(
            name,
            &samples[i],
            (i > 0).then(|| &samples[0]),
            cpu[i] / runs as f64,
        );
    }
    let find = |n: &str| {
        cases
            .iter()
            .position(|(name, _)| name.starts_with(n))
            .map(|i| median(&samples[i]))
    };
    if let (Some(gg), Some(bare)) = (find("gg level bwrap"), find("bare hardened bwrap")) {
        println!("\ngg bwrap level / bare hardened bwrap: {:.2}x", gg / bare);
    }
    ExitCode::SUCCESS
}

fn level(policy: &Policy, backend: Backend) {
    let inner = sandbox::Invocation {
        program: "/bin/true".into(),
        args: Vec::new(),
        env: std::env::vars_os().collect(),
    };
    match sandbox::wrap(inner, policy, backend) {
        Ok(w) => {
            let mut w = w.into_parts();
            assert_ne!(w.level, Level::Seatbelt);
            let status = w.command.stdin(Stdio::null()).status();
            assert!(status.is_ok_and(|s| s.success()), "{backend:?} run failed");
        }
        Err(e) => panic!("{e}"),
    }
}

fn run(mut c: Command) {
    let status = c.stdin(Stdio::null()).status();
    assert!(status.is_ok_and(|s| s.success()), "{c:?} failed");
}

fn median(v: &[f64]) -> f64 {
    v[v.len() / 2]
}

/// User + system time of all waited-for descendants so far: unlike wall-clock time it does not
/// grow with the load other processes put on the machine.
fn children_cpu_ms() -> f64 {
    // SAFETY: getrusage writes one rusage struct into the zeroed local we pass.
    let usage = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut u);
        u
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn report(name: &str, v: &[f64], base: Option<&Vec<f64>>, cpu_ms: f64) {
    let p90 = v[(v.len() * 9 / 10).min(v.len() - 1)];
    let overhead = base
        .map(|b| format!("{:.2}", median(v) - median(b)))
        .unwrap_or_default();
    println!(
        "{name:<44} {:>10.2} {:>10.2} {:>12} {:>12.2}",
        median(v),
        p90,
        overhead,
        cpu_ms
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
