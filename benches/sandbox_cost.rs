//! What the sandbox costs per command, as ratios measured side by side (A/B interleaved, so the
//! load of a shared machine hits both sides alike; medians quoted, and for the turns also the
//! median of the ratios pair by pair, which a machine drifting between rounds moves less):
//!
//! 1. a 20-call agent turn (`bash` running `true` 20 times) of the real `gg --yolo -p`, with
//!    `--sandbox` (the calls marked `"writes": true`, so they run in the workspace sandbox)
//!    against the same turn unconfined — at the bwrap level with the session's command server,
//!    at the landlock level (helper only) with it, and at the bwrap level with a sandbox per
//!    command (`GG_SANDBOX_NO_SERVER=1`, the fallback path); and the turn as it runs by default,
//!    `true` being read-only, in the read-only sandbox without `--sandbox`, at both levels. The
//!    unconfined baseline is the test-hooks knob `GG_TEST_READ_ONLY_UNENFORCED=1` (read-only
//!    commands run unconfined, as before read-only was enforced), hence the feature; and a turn
//!    of normal commands without `--sandbox` (the calls marked `"writes": true`), on the host
//!    under the guard (`sandbox::guard`) against the same turn with the guard off
//!    (`GG_TEST_UNGUARDED=1`): the guard's cost per call;
//! 2. `gg sandbox -- true` as a whole process against a bare hardened `bwrap … true` (the probe
//!    result is cached across processes, see `sandbox::probe`);
//! 3. `gg sandbox --backend landlock -- true` against `gg sandbox --backend none -- true` (the
//!    helper-only level's added time per call);
//! 4. the floor under item 2: bubblewrap run directly with the exact arguments gg gives it
//!    (`gg sandbox --explain`), once with the helper and once with `/bin/true` in the helper's
//!    place. No `gg sandbox` can be faster than the first of these without dropping a mount or a
//!    restriction, so this line says how much of item 2's ratio is gg's own.
//!
//! Run: `cargo bench --features test-hooks --bench sandbox_cost` (`GG_BENCH_RUNS=N`, default 11;
//! `GG_BENCH_CALLS=N` calls a turn, default 20; `GG_BENCH_FIRST_REPLY_MS=N` delays each turn's
//! first model reply, see [`first_reply_delay`]). Figures go to
//! docs/performance.md by hand.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use testkit::{Reply, ScriptedServer, StreamReply, finish_chunk, tool_call_chunk};

/// The calls of one turn: 20 by default, `GG_BENCH_CALLS` to take the turn apart (one call
/// against twenty separates what a session pays once from what each call pays).
fn tool_calls() -> usize {
    std::env::var("GG_BENCH_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(20)
}
const GG: &str = env!("CARGO_BIN_EXE_gg");

/// `GG_BENCH_FIRST_REPLY_MS=N`: the model's first reply of a turn comes N ms after the request,
/// as a real model's first token does (default: at once, the worst case for the sandbox, whose
/// servers start in the background when the turn begins). The added milliseconds, not the
/// ratios, are what to compare: a constant added to both sides shrinks every ratio.
fn first_reply_delay() -> Option<Duration> {
    std::env::var("GG_BENCH_FIRST_REPLY_MS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&ms: &u64| ms > 0)
        .map(Duration::from_millis)
}

/// How the turn's bash calls run.
#[derive(Clone, Copy)]
enum Mode {
    /// No confinement at all: the unenforced baseline.
    Plain,
    /// `--sandbox`, the calls asking to write: the workspace sandbox's server at this level.
    Server(&'static str),
    /// `--sandbox` with a sandbox per command.
    PerCommand,
    /// No `--sandbox`: the read-only sandbox's server at this level (how `true` runs by default).
    ReadOnly(&'static str),
    /// No `--sandbox`, the calls asking to write (normal commands): on the host under the guard
    /// (`sandbox::guard`), or, `false`, bare (the test-hooks knob `GG_TEST_UNGUARDED=1`). Both
    /// are swept; the pair measures the guard alone.
    Host { guarded: bool },
}

fn turn(repo: &Path, home: &Path, mode: Mode) -> Duration {
    let server = ScriptedServer::start();
    let writes = matches!(mode, Mode::Server(_) | Mode::PerCommand | Mode::Host { .. });
    for i in 0..tool_calls() {
        let arguments = json!({"command": "true", "writes": writes}).to_string();
        server.push(match first_reply_delay() {
            // A model's time to its first token, on the first reply only: what the servers'
            // start in the background has to hide (every later reply comes at once, so each
            // call's own cost stays in view).
            Some(delay) if i == 0 => StreamReply::new()
                .delay(delay)
                .event(tool_call_chunk(0, Some("c0"), Some("bash"), &arguments))
                .event(finish_chunk("tool_calls"))
                .done()
                .reply(),
            _ => Reply::tool_call(&format!("c{i}"), "bash", &arguments),
        });
    }
    server.push(Reply::text(&["done"]));
    let mut cmd = Command::new(GG);
    cmd.arg("--yolo").env_remove("GG_SANDBOX_NO_SERVER");
    match mode {
        Mode::Plain => {
            cmd.env("GG_TEST_READ_ONLY_UNENFORCED", "1");
        }
        Mode::ReadOnly(level) => {
            cmd.env("GG_SANDBOX_BACKEND", level);
        }
        Mode::Server(level) => {
            cmd.arg("--sandbox").env("GG_SANDBOX_BACKEND", level);
        }
        Mode::Host { guarded } => {
            if !guarded {
                cmd.env("GG_TEST_UNGUARDED", "1");
            }
        }
        Mode::PerCommand => {
            cmd.arg("--sandbox")
                .env("GG_SANDBOX_BACKEND", "bwrap")
                .env("GG_SANDBOX_NO_SERVER", "1");
        }
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
    assert_eq!(server.requests().len(), tool_calls() + 1);
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

fn median(runs: &[Duration]) -> f64 {
    let mut sorted = runs.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2].as_secs_f64() * 1000.0
}

/// The median of the ratios round by round (each sandboxed turn against the unsandboxed turn
/// run just before it): a machine whose speed drifts between rounds moves both sides of a pair
/// alike, where the ratio of the two medians takes each side from wherever its median fell.
fn paired_ratio(sandboxed: &[Duration], plain: &[Duration]) -> f64 {
    let mut ratios: Vec<f64> = sandboxed
        .iter()
        .zip(plain)
        .map(|(s, p)| s.as_secs_f64() / p.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios[ratios.len() / 2]
}

fn gg_sandbox(dir: &Path, home: &Path, backend: &str, network: &str) -> Command {
    let mut c = Command::new(GG);
    c.args([
        "sandbox",
        "--backend",
        backend,
        "--network",
        network,
        "--",
        "/bin/true",
    ])
    .current_dir(dir)
    .env("HOME", home);
    c
}

/// Bare hardened bubblewrap with the same namespaces as `gg sandbox --network <mode>`:
/// `unshare_net` for off and the allow-list (whose proxy is reached through a bound socket).
fn bare_bwrap(dir: &Path, unshare_net: bool) -> Command {
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
    ]);
    if unshare_net {
        c.arg("--unshare-net");
    }
    c.args([
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

/// The arguments `gg sandbox --backend bwrap --network on -- /bin/true` gives bubblewrap, read
/// from `--explain`.
fn gg_bwrap_argv(dir: &Path, home: &Path) -> Vec<String> {
    let out = Command::new(GG)
        .args([
            "sandbox",
            "--backend",
            "bwrap",
            "--network",
            "on",
            "--explain",
            "--",
            "/bin/true",
        ])
        .current_dir(dir)
        .env("HOME", home)
        .output()
        .unwrap();
    assert!(out.status.success(), "gg sandbox --explain failed: {out:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    let json = &stderr[stderr.find('{').unwrap()..];
    let explain: serde_json::Value = serde_json::Deserializer::from_str(json)
        .into_iter()
        .next()
        .unwrap()
        .unwrap();
    explain["bwrap"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

/// Bubblewrap run directly with gg's arguments: as gg runs it (the helper, then `/bin/true`), or
/// with `/bin/true` in the helper's place.
fn bwrap_as_gg(argv: &[String], dir: &Path, home: &Path, helper: bool) -> Command {
    let end_of_options = argv.iter().position(|a| a == "--").unwrap();
    let mut c = Command::new("/usr/bin/bwrap");
    if helper {
        c.args(argv);
    } else {
        c.args(&argv[..=end_of_options]).arg("/bin/true");
    }
    c.current_dir(dir).env("HOME", home);
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
    // A home directory as users have one: the default deny-read paths exist, so the Landlock
    // ruleset is computed around them (read granted on their siblings), which is the expensive
    // case; an empty home measures a cheaper sandbox than anyone runs.
    for dir in [
        ".ssh",
        ".aws",
        ".config/gh",
        ".config/git",
        ".cache",
        ".local/share",
        ".gnupg",
    ] {
        std::fs::create_dir_all(home.join(dir)).unwrap();
    }
    for file in [
        ".ssh/id_ed25519",
        ".aws/credentials",
        ".netrc",
        ".bashrc",
        ".profile",
        ".gitconfig",
    ] {
        std::fs::write(home.join(file), "x").unwrap();
    }
    let _ = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status();
    let bwrap = Path::new("/usr/bin/bwrap").exists();
    // Warm-up: fills the probe cache and the page cache.
    turn(&repo, &home, Mode::Server("bwrap"));
    timed(gg_sandbox(&repo, &home, "auto", "on"));

    let (mut plain, mut sandboxed) = (Vec::new(), Vec::new());
    let (mut ll_turn, mut per_command) = (Vec::new(), Vec::new());
    let (mut ro_bwrap, mut ro_landlock) = (Vec::new(), Vec::new());
    let (mut host_bare, mut host_guarded) = (Vec::new(), Vec::new());
    let (mut bare, mut gg_bwrap) = (Vec::new(), Vec::new());
    let (mut bare_net, mut gg_allow) = (Vec::new(), Vec::new());
    let (mut none, mut landlock) = (Vec::new(), Vec::new());
    let (mut floor_helper, mut floor_mounts) = (Vec::new(), Vec::new());
    let gg_argv = if bwrap {
        gg_bwrap_argv(&repo, &home)
    } else {
        Vec::new()
    };
    for _ in 0..runs {
        plain.push(turn(&repo, &home, Mode::Plain));
        if bwrap {
            sandboxed.push(turn(&repo, &home, Mode::Server("bwrap")));
            per_command.push(turn(&repo, &home, Mode::PerCommand));
        }
        ll_turn.push(turn(&repo, &home, Mode::Server("landlock")));
        if bwrap {
            ro_bwrap.push(turn(&repo, &home, Mode::ReadOnly("bwrap")));
        }
        ro_landlock.push(turn(&repo, &home, Mode::ReadOnly("landlock")));
        host_bare.push(turn(&repo, &home, Mode::Host { guarded: false }));
        host_guarded.push(turn(&repo, &home, Mode::Host { guarded: true }));
        if bwrap {
            bare.push(timed(bare_bwrap(&repo, false)));
            gg_bwrap.push(timed(gg_sandbox(&repo, &home, "bwrap", "on")));
            bare_net.push(timed(bare_bwrap(&repo, true)));
            gg_allow.push(timed(gg_sandbox(&repo, &home, "bwrap", "allow-list")));
            floor_helper.push(timed(bwrap_as_gg(&gg_argv, &repo, &home, true)));
            floor_mounts.push(timed(bwrap_as_gg(&gg_argv, &repo, &home, false)));
        }
        none.push(timed(gg_sandbox(&repo, &home, "none", "on")));
        landlock.push(timed(gg_sandbox(&repo, &home, "landlock", "on")));
    }
    let p = median(&plain);
    let calls = tool_calls();
    let report = |name: &str, turns: &[Duration]| {
        let s = median(turns);
        println!(
            "agent turn, {calls} bash calls, {runs} runs interleaved: unconfined {p:.0} ms, {name} {s:.0} ms, ratio {:.2}, pair by pair {:.2} ({:.2} ms added per call)",
            s / p,
            paired_ratio(turns, &plain),
            (s - p) / calls as f64
        );
    };
    if bwrap {
        report("bwrap level, session server", &sandboxed);
        report("bwrap level, sandbox per command", &per_command);
    }
    report("landlock level, session server", &ll_turn);
    if bwrap {
        report("read-only enforced (no --sandbox), bwrap level", &ro_bwrap);
    }
    report(
        "read-only enforced (no --sandbox), landlock level",
        &ro_landlock,
    );
    report("normal commands without --sandbox, swept, bare", &host_bare);
    report(
        "normal commands without --sandbox, swept, under the guard",
        &host_guarded,
    );
    let (hb, hg) = (median(&host_bare), median(&host_guarded));
    println!(
        "the guard alone: {hg:.0} ms against {hb:.0} ms bare, ratio {:.2}, pair by pair {:.2} ({:.2} ms added per call)",
        hg / hb,
        paired_ratio(&host_guarded, &host_bare),
        (hg - hb) / calls as f64
    );
    if bwrap {
        let (b, g) = (median(&bare), median(&gg_bwrap));
        println!(
            "gg sandbox --network on -- true: {g:.2} ms, bare hardened bwrap: {b:.2} ms, ratio {:.2}",
            g / b
        );
        let (h, m) = (median(&floor_helper), median(&floor_mounts));
        println!(
            "the floor, bwrap run directly with gg's arguments: with the helper {h:.2} ms, ratio {:.2}; with /bin/true in the helper's place {m:.2} ms, ratio {:.2}; gg's own part {:.2} ms",
            h / b,
            m / b,
            g - h
        );
        let (b, g) = (median(&bare_net), median(&gg_allow));
        println!(
            "gg sandbox --network allow-list -- true: {g:.2} ms, bare hardened bwrap --unshare-net: {b:.2} ms, ratio {:.2}",
            g / b
        );
    }
    let (n, l) = (median(&none), median(&landlock));
    println!(
        "gg sandbox --backend landlock -- true: {l:.2} ms, --backend none: {n:.2} ms, added {:.2} ms",
        l - n
    );
}
