//! What the sandbox costs per command, as ratios measured side by side (A/B interleaved, so the
//! load of a shared machine hits both sides alike; medians quoted):
//!
//! 1. a 20-call agent turn (`bash` running `true` 20 times) of the real `gg --yolo -p`, with
//!    `--sandbox` against without;
//! 2. `gg sandbox -- true` as a whole process against a bare hardened `bwrap … true` (the probe
//!    result is cached across processes, see `sandbox::probe`);
//! 3. `gg sandbox --backend landlock -- true` against `gg sandbox --backend none -- true` (the
//!    helper-only level's added time per call).
//!
//! Run: `cargo bench --bench sandbox_cost` (`GG_BENCH_RUNS=N`, default 11). Figures go to
//! docs/performance.md by hand.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Reply, ScriptedServer};

const TOOL_CALLS: usize = 20;
const GG: &str = env!("CARGO_BIN_EXE_gg");

fn turn(repo: &Path, home: &Path, sandboxed: bool) -> Duration {
    let server = ScriptedServer::start();
    for i in 0..TOOL_CALLS {
        server.push(Reply::tool_call(
            &format!("c{i}"),
            "bash",
            &json!({"command": "true"}).to_string(),
        ));
    }
    server.push(Reply::text(&["done"]));
    let mut cmd = Command::new(GG);
    cmd.arg("--yolo");
    if sandboxed {
        cmd.arg("--sandbox");
    }
    let started = Instant::now();
    let status = cmd
        .args(["-p", "run true twenty times"])
        .current_dir(repo)
        .env("HOME", home)
        .env("OPENAI_API_KEY", "sk-bench")
        .env("OPENAI_BASE_URL", server.base_url())
        .env("GG_SESSION_DIR", home.join("sessions"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    let wall = started.elapsed();
    assert!(status.success(), "gg failed");
    assert_eq!(server.requests().len(), TOOL_CALLS + 1);
    wall
}

fn timed(mut cmd: Command) -> Duration {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let status = cmd.status().unwrap();
    let wall = started.elapsed();
    assert!(status.success(), "{cmd:?} failed");
    wall
}

fn median(v: &mut [Duration]) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

fn gg_sandbox(dir: &Path, home: &Path, backend: &str) -> Command {
    let mut c = Command::new(GG);
    c.args(["sandbox", "--backend", backend, "--", "/bin/true"])
        .current_dir(dir)
        .env("HOME", home);
    c
}

fn bare_bwrap(dir: &Path) -> Command {
    let mut c = Command::new("/usr/bin/bwrap");
    c.args([
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--disable-userns",
        "--cap-drop",
        "ALL",
        "--new-session",
        "--die-with-parent",
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
    .arg(dir)
    .arg(dir)
    .args(["--", "/bin/true"]);
    c
}

fn main() {
    let runs: usize = std::env::var("GG_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(11);
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let home = tmp.path().join("home");
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let _ = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status();
    let bwrap = Path::new("/usr/bin/bwrap").exists();
    // Warm-up: fills the probe cache and the page cache.
    turn(&repo, &home, true);
    timed(gg_sandbox(&repo, &home, "auto"));

    let (mut plain, mut sandboxed) = (Vec::new(), Vec::new());
    let (mut bare, mut gg_bwrap) = (Vec::new(), Vec::new());
    let (mut none, mut landlock) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        plain.push(turn(&repo, &home, false));
        sandboxed.push(turn(&repo, &home, true));
        if bwrap {
            bare.push(timed(bare_bwrap(&repo)));
            gg_bwrap.push(timed(gg_sandbox(&repo, &home, "bwrap")));
        }
        none.push(timed(gg_sandbox(&repo, &home, "none")));
        landlock.push(timed(gg_sandbox(&repo, &home, "landlock")));
    }
    let (p, s) = (median(&mut plain), median(&mut sandboxed));
    println!(
        "agent turn, {TOOL_CALLS} bash calls, {runs} runs A/B: unsandboxed {p:.0} ms, sandboxed {s:.0} ms, ratio {:.2} ({:.1} ms added per call)",
        s / p,
        (s - p) / TOOL_CALLS as f64
    );
    if bwrap {
        let (b, g) = (median(&mut bare), median(&mut gg_bwrap));
        println!(
            "gg sandbox -- true: {g:.2} ms, bare hardened bwrap: {b:.2} ms, ratio {:.2}",
            g / b
        );
    }
    let (n, l) = (median(&mut none), median(&mut landlock));
    println!(
        "gg sandbox --backend landlock -- true: {l:.2} ms, --backend none: {n:.2} ms, added {:.2} ms",
        l - n
    );
}
