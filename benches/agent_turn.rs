//! A scripted 20-tool-call turn of the real `gg` binary against the scripted OpenAI-compatible
//! server on loopback: wall time, CPU time (gg plus the tool processes it waited for) and peak
//! RSS of the gg process.
//!
//! Run: `cargo bench --bench agent_turn` (results go to docs/performance.md by hand).
//!
//! CPU comes from `/proc/<pid>/stat` of the exited-but-not-reaped process (utime, stime, cutime,
//! cstime); peak RSS is `VmHWM` from `/proc/<pid>/status`, sampled every 2 ms while gg runs
//! (a high-water mark, so the last sample before exit is the peak to within 2 ms of activity).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use testkit::{Reply, ScriptedServer};

const RUNS: usize = 5;
const TOOL_CALLS: usize = 20;

fn script(server: &ScriptedServer) {
    for i in 0..TOOL_CALLS {
        let reply = match i % 4 {
            0 => Reply::tool_call(
                &format!("c{i}"),
                "read",
                &json!({"path": "src/lib.rs"}).to_string(),
            ),
            1 => Reply::tool_call(
                &format!("c{i}"),
                "grep",
                &json!({"pattern": "fn ", "path": "src"}).to_string(),
            ),
            2 => Reply::tool_call(
                &format!("c{i}"),
                "bash",
                &json!({"command": "ls -la src && git status --short"}).to_string(),
            ),
            _ => Reply::tool_call(
                &format!("c{i}"),
                "list",
                &json!({"path": "src"}).to_string(),
            ),
        };
        server.push(reply);
    }
    server.push(Reply::text(&[
        "All ", "twenty ", "tool ", "calls ", "done.",
    ]));
}

fn proc_stat_cpu(pid: i32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit(')').next()?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields after the command: state is index 0, so utime is 11, stime 12, cutime 13, cstime 14.
    let ticks: u64 = [11, 12, 13, 14]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<u64>().ok())
        .sum();
    Some(Duration::from_millis(ticks * 10))
}

fn vm_hwm_kib(pid: i32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn main() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    for i in 0..50 {
        let body: String = (0..200).map(|l| format!("fn f{i}_{l}() {{}}\n")).collect();
        std::fs::write(repo.join(format!("src/m{i}.rs")), body).unwrap();
    }
    std::fs::write(repo.join("src/lib.rs"), "pub fn lib() {}\n".repeat(100)).unwrap();
    let _ = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status();

    let mut walls = Vec::new();
    let mut cpus = Vec::new();
    let mut rss = Vec::new();
    for _ in 0..RUNS {
        let server = ScriptedServer::start();
        script(&server);
        let started = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_gg"))
            .args(["--yolo", "-p", "inspect the project"])
            .current_dir(&repo)
            .env("HOME", tmp.path())
            .env("OPENAI_API_KEY", "sk-bench")
            .env("OPENAI_BASE_URL", server.base_url())
            .env("GG_SESSION_DIR", tmp.path().join("sessions"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let mut peak = 0;
        loop {
            if let Some(k) = vm_hwm_kib(pid) {
                peak = peak.max(k);
            }
            // Wait without reaping, so /proc/<pid>/stat still holds the final CPU times.
            let exited = rustix::process::waitid(
                rustix::process::WaitId::Pid(rustix::process::Pid::from_raw(pid).unwrap()),
                rustix::process::WaitIdOptions::EXITED
                    | rustix::process::WaitIdOptions::NOWAIT
                    | rustix::process::WaitIdOptions::NOHANG,
            )
            .ok()
            .flatten()
            .is_some();
            if exited {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let wall = started.elapsed();
        let cpu = proc_stat_cpu(pid).unwrap_or_default();
        let status = child.wait().unwrap();
        assert!(status.success(), "gg failed");
        assert_eq!(server.requests().len(), TOOL_CALLS + 1);
        walls.push(wall);
        cpus.push(cpu);
        rss.push(peak);
    }
    walls.sort();
    cpus.sort();
    rss.sort();
    println!(
        "agent_turn: {TOOL_CALLS} tool calls, {RUNS} runs: wall median {:.0} ms (min {:.0}), cpu median {:.0} ms, peak RSS median {:.1} MiB (max {:.1})",
        walls[RUNS / 2].as_secs_f64() * 1000.0,
        walls[0].as_secs_f64() * 1000.0,
        cpus[RUNS / 2].as_secs_f64() * 1000.0,
        rss[RUNS / 2] as f64 / 1024.0,
        rss[RUNS - 1] as f64 / 1024.0,
    );
}
