//! Scheduled jobs: the store under concurrent processes, the scheduler loop's restart rules, and
//! real firings through the agent against the scripted model server, under the unattended policy.
//!
//! Child processes re-run this test binary with `GG_JOBS_TEST_ROLE` set (the `child_role` test),
//! so process-level behaviour is tested before `gg job` is wired into the `gg` binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Parser;
use gg::cli::job::{JobCommand, run_with_home};
use gg::jobs::manage::{AddArgs, add_job, daemon_running};
use gg::jobs::scheduler::{ExecutionFuture, fire, recover};
use gg::jobs::{
    ConversationExecutor, Execution, Job, JobExecutor, JobStore, Kind, RunRecord, RunStatus,
    SchedulerOptions, run_scheduler_with, session_name, truncate_summary,
};
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use support::{Reply, ScriptedServer, StreamReply};
use tokio_util::sync::CancellationToken;

const ROLE: &str = "GG_JOBS_TEST_ROLE";
const BEGIN: &str = "<<<job-output>>>";
const END: &str = "<<<end-job-output>>>";

struct Env {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    sessions: PathBuf,
}

fn env() -> Env {
    // Outside /tmp: /tmp is a scratch directory, where the classifier allows writes.
    let tmp = support::fixture_dir();
    let home = tmp.path().join("home");
    let repo = home.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    Env {
        home: home.canonicalize().unwrap(),
        repo: repo.canonicalize().unwrap(),
        sessions: tmp.path().join("sessions"),
        _tmp: tmp,
    }
}

impl Env {
    fn store(&self) -> JobStore {
        JobStore::open(&JobStore::default_dir(&self.home)).unwrap()
    }

    fn config(&self, server: &ScriptedServer) {
        let dir = self.home.join(".gg");
        std::fs::create_dir_all(&dir).unwrap();
        let config = json!({"default": "openai:gpt-test",
            "providers": {"openai": {"baseURL": server.base_url(), "apiKey": "sk-test"}}});
        std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    }

    fn executor(&self) -> ConversationExecutor {
        ConversationExecutor {
            session_dir: Some(self.sessions.clone()),
            ..ConversationExecutor::new(self.home.clone())
        }
    }

    fn job(&self, name: &str, kind: Kind, schedule: &str, next_run: Option<Timestamp>) -> Job {
        Job {
            id: gg::jobs::random_hex(3).unwrap(),
            name: name.to_string(),
            kind,
            schedule: schedule.to_string(),
            prompt: "do the thing".to_string(),
            timezone: "UTC".to_string(),
            workspace: self.repo.display().to_string(),
            workspace_id: String::new(),
            enabled: true,
            auto_approve: false,
            sandbox: true,
            network: None,
            allow_domains: Vec::new(),
            timeout: 60_000_000_000,
            created_at: Timestamp::now(),
            last_run: None,
            next_run,
            run_count: 0,
        }
    }

    fn insert(&self, job: Job) -> Job {
        self.store()
            .update(|jobs| {
                jobs.push(job.clone());
                Ok(())
            })
            .unwrap();
        job
    }
}

fn ago(secs: i64) -> Timestamp {
    Timestamp::now()
        .checked_sub(SignedDuration::from_secs(secs))
        .unwrap()
}

fn soon() -> Timestamp {
    Timestamp::now()
        .checked_add(SignedDuration::from_millis(300))
        .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Polls `check` for up to 60 s (real firings start a sandbox and an HTTP round trip).
fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    for _ in 0..600 {
        if let Some(value) = check() {
            return value;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting for {what}");
}

fn child(role: &str, envs: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "jobs::child_role",
        "--nocapture",
        "--quiet",
        "--test-threads=1",
    ])
    .env(ROLE, role);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd
}

/// The part of a child's stdout its role printed.
fn role_output(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout);
    let start = text.find(BEGIN).map(|i| i + BEGIN.len() + 1).unwrap_or(0);
    let end = text.find(END).unwrap_or(text.len());
    text[start.min(end)..end].to_string()
}

#[derive(Parser)]
struct JobCli {
    #[command(subcommand)]
    cmd: JobCommand,
}

/// Runs in a child process when `GG_JOBS_TEST_ROLE` is set; a no-op otherwise.
#[test]
fn child_role() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let home = PathBuf::from(std::env::var("HOME").unwrap());
    match role.as_str() {
        "add" => {
            let store = JobStore::open(&JobStore::default_dir(&home)).unwrap();
            let prefix = std::env::var("JOB_PREFIX").unwrap();
            for i in 0..5 {
                let args = AddArgs {
                    name: format!("{prefix}-{i}"),
                    cron: Some("*/5 * * * *".to_string()),
                    prompt: vec!["report".to_string()],
                    ..AddArgs::default()
                };
                add_job(&store, &args, &home, Timestamp::now()).unwrap();
            }
        }
        "cli" => {
            let args: Vec<String> =
                serde_json::from_str(&std::env::var("JOB_ARGS").unwrap()).unwrap();
            let cli =
                JobCli::try_parse_from(std::iter::once("job".to_string()).chain(args)).unwrap();
            println!("{BEGIN}");
            let code = run_with_home(cli.cmd, &home);
            println!("{END}");
            use std::io::Write;
            std::io::stdout().flush().unwrap();
            std::process::exit(if code == std::process::ExitCode::SUCCESS {
                0
            } else {
                1
            });
        }
        "fire" => {
            let store = JobStore::open(&JobStore::default_dir(&home)).unwrap();
            let job = store.jobs().unwrap().into_iter().next().unwrap();
            let executor = ConversationExecutor {
                session_dir: Some(PathBuf::from(std::env::var("GG_SESSION_DIR").unwrap())),
                ..ConversationExecutor::new(home.clone())
            };
            let record = runtime()
                .block_on(fire(
                    &store,
                    &executor,
                    &job,
                    false,
                    CancellationToken::new(),
                ))
                .unwrap();
            assert_eq!(record.status, RunStatus::Ok, "{record:?}");
        }
        other => panic!("unknown role {other}"),
    }
}

#[test]
fn concurrent_adds_from_several_processes_lose_nothing() {
    let e = env();
    let home = e.home.display().to_string();
    let children: Vec<_> = (0..6)
        .map(|p| {
            child("add", &[("HOME", &home), ("JOB_PREFIX", &format!("p{p}"))])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let jobs = e.store().jobs().unwrap();
    let mut names: Vec<String> = jobs.iter().map(|j| j.name.clone()).collect();
    names.sort();
    let mut want: Vec<String> = (0..6)
        .flat_map(|p| (0..5).map(move |i| format!("p{p}-{i}")))
        .collect();
    want.sort();
    assert_eq!(names, want);
    let mut ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 30, "ids are unique");

    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let store = e.store();
    assert_eq!(mode(store.dir()), 0o700);
    assert_eq!(mode(&store.jobs_path()), 0o600);
    assert_eq!(mode(&store.dir().join("jobs.lock")), 0o600);
    // No temp file was left behind by the atomic replacements.
    let leftovers: Vec<_> = std::fs::read_dir(store.dir())
        .unwrap()
        .flatten()
        .filter(|d| d.file_name().to_string_lossy().starts_with(".jobs-"))
        .collect();
    assert!(leftovers.is_empty());
}

fn cli(e: &Env, args: &[&str]) -> (bool, String, String) {
    let args = serde_json::to_string(args).unwrap();
    let out = child(
        "cli",
        &[("HOME", &e.home.display().to_string()), ("JOB_ARGS", &args)],
    )
    .current_dir(&e.repo)
    .output()
    .unwrap();
    (
        out.status.success(),
        role_output(&out),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn cli_commands_print_the_reference_output() {
    let e = env();
    let (ok, out, err) = cli(
        &e,
        &[
            "add",
            "--name",
            "nightly",
            "--cron",
            "0 3 * * *",
            "--timezone",
            "Europe/Berlin",
            "--no-sandbox",
            "summarise",
            "the",
            "repo",
        ],
    );
    assert!(ok, "{out}{err}");
    let id = out.strip_prefix("job ").unwrap()[..6].to_string();
    assert!(
        out.starts_with(&format!("job {id} (nightly) added; next run ")),
        "{out}"
    );
    assert!(
        out.trim_end().ends_with("CET") || out.trim_end().ends_with("CEST"),
        "{out}"
    );
    assert!(
        err.contains("note: ggd is not running; jobs fire only while the daemon is alive"),
        "{err}"
    );

    let (ok, out, _) = cli(
        &e,
        &[
            "add",
            "--name",
            "once",
            "--in",
            "2h",
            "--allow-all",
            "--timeout",
            "90s",
            "check",
        ],
    );
    assert!(ok, "{out}");

    let (_, out, _) = cli(&e, &["list"]);
    let lines: Vec<&str> = out.lines().collect();
    let header: Vec<&str> = lines[0]
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(
        header,
        [
            "ID", "NAME", "KIND", "SCHEDULE", "NEXT RUN", "LAST RUN", "STATUS"
        ],
        "{out}"
    );
    let once: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(once[1..3], ["once", "once"], "{out}");
    assert!(
        once[3].ends_with(":00Z") || !once[3].contains('.'),
        "whole seconds: {out}"
    );
    assert_eq!(lines.len(), 3, "{out}");

    let (_, out, _) = cli(&e, &["show", "nightly"]);
    for want in [
        "kind: cron",
        "schedule: 0 3 * * *",
        "timezone: Europe/Berlin",
        "allow-all: false",
        "sandbox: off (--no-sandbox)",
        "timeout: 10m",
        "prompt: summarise the repo",
    ] {
        assert!(out.contains(want), "{want} in {out}");
    }
    let (_, out, _) = cli(&e, &["show", "once"]);
    for want in [
        "kind: once",
        "allow-all: true",
        "sandbox: on",
        "timeout: 1m30s",
    ] {
        assert!(out.contains(want), "{want} in {out}");
    }

    let (ok, out, _) = cli(&e, &["pause", &id]);
    assert!(ok && out == format!("job {id} (nightly) paused\n"), "{out}");
    let (_, out, _) = cli(&e, &["list"]);
    assert!(!out.contains("nightly"), "paused jobs are hidden: {out}");
    let (_, out, _) = cli(&e, &["list", "--all"]);
    assert!(
        out.lines()
            .any(|l| l.contains("nightly") && l.ends_with("paused")),
        "{out}"
    );
    let (ok, out, _) = cli(&e, &["resume", "nightly"]);
    assert!(
        ok && out.starts_with(&format!("job {id} (nightly) resumed; next run 20")),
        "{out}"
    );

    let (ok, out, _) = cli(&e, &["log"]);
    assert!(ok && out == "no runs\n", "{out}");

    // Errors: unknown and ambiguous references.
    let (ok, _, err) = cli(&e, &["show", "nope"]);
    assert!(!ok && err.contains("no job \"nope\""), "{err}");
    assert!(cli(&e, &["add", "--name", "once", "--in", "1d", "again"]).0);
    let (ok, _, err) = cli(&e, &["remove", "once"]);
    assert!(
        !ok && err.contains("multiple jobs named \"once\"; use the id"),
        "{err}"
    );
    let (ok, _, err) = cli(&e, &["add", "--name", "x", "--cron", "* * *", "p"]);
    assert!(!ok && err.contains("invalid cron expression"), "{err}");
    let (ok, _, err) = cli(&e, &["add", "--name", "x", "--at", "2001-01-01 10:00", "p"]);
    assert!(!ok && err.contains("is in the past"), "{err}");

    let (ok, out, _) = cli(&e, &["remove", &id]);
    assert!(
        ok && out == format!("job {id} (nightly) removed\n"),
        "{out}"
    );
    assert_eq!(e.store().jobs().unwrap().len(), 2);
}

#[test]
fn add_needs_exactly_one_schedule() {
    for args in [
        vec!["job", "add", "--name", "n", "p"],
        vec![
            "job",
            "add",
            "--name",
            "n",
            "--cron",
            "@daily",
            "--at",
            "2030-01-01",
            "p",
        ],
        vec![
            "job", "add", "--name", "n", "--in", "1h", "--cron", "@daily", "p",
        ],
        vec!["job", "add", "--cron", "@daily", "p"],
        vec!["job", "add", "--name", "n", "--cron", "@daily"],
    ] {
        assert!(JobCli::try_parse_from(&args).is_err(), "{args:?} parsed");
    }
    assert!(JobCli::try_parse_from(["job", "add", "--name", "n", "--in", "1h", "p", "q"]).is_ok());
    assert!(JobCli::try_parse_from(["job", "log", "--job", "n", "--limit", "5"]).is_ok());
    assert!(JobCli::try_parse_from(["job", "rm", "n"]).is_ok());
}

#[test]
fn the_daemon_probe_sees_a_held_pid_lock() {
    let e = env();
    assert!(!daemon_running(&e.home), "no pid file: not running");
    let dir = e.home.join(".gg");
    std::fs::create_dir_all(&dir).unwrap();
    let pid = std::fs::File::create(dir.join("ggd.pid")).unwrap();
    assert!(!daemon_running(&e.home), "unlocked pid file: not running");
    pid.lock().unwrap();
    assert!(daemon_running(&e.home), "locked pid file: running");
    pid.unlock().unwrap();
    assert!(!daemon_running(&e.home));
}

/// An executor that records its firings and can hold them until released.
#[derive(Default)]
struct Recording {
    calls: AtomicUsize,
    names: Mutex<Vec<String>>,
    gate: Option<Arc<tokio::sync::Semaphore>>,
}

impl JobExecutor for Recording {
    fn execute<'a>(
        &'a self,
        _job: &'a Job,
        session_name: String,
        cancel: CancellationToken,
    ) -> ExecutionFuture<'a> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.names.lock().unwrap().push(session_name);
            if let Some(gate) = &self.gate {
                tokio::select! {
                    permit = gate.acquire() => drop(permit),
                    () = cancel.cancelled() => {
                        return Execution { status: RunStatus::Interrupted, summary: "stopped".into(), session_path: String::new() };
                    }
                }
            }
            Execution {
                status: RunStatus::Ok,
                summary: "done".into(),
                session_path: String::new(),
            }
        })
    }
}

/// The production scheduler: it sees edits to the store as they happen, without polling.
fn fast() -> SchedulerOptions {
    SchedulerOptions::default()
}

fn statuses(store: &JobStore, job: &Job) -> Vec<RunStatus> {
    store
        .runs()
        .unwrap()
        .iter()
        .filter(|r| r.job_id == job.id)
        .map(|r| r.status)
        .collect()
}

#[test]
fn restart_marks_dangling_runs_interrupted_and_records_missed_cron_firings() {
    let e = env();
    let store = e.store();
    let cron = e.insert(e.job("hourly", Kind::Cron, "0 * * * *", Some(ago(7200))));
    let mut ran = e.job(
        "ran-once",
        Kind::Once,
        &ago(600).to_string(),
        Some(ago(600)),
    );
    ran.run_count = 1;
    let ran = e.insert(ran);
    // A crash mid-run: the `running` record was written, its final record never was.
    let dangling = RunRecord {
        id: gg::jobs::random_hex(16).unwrap(),
        job_id: cron.id.clone(),
        job_name: cron.name.clone(),
        started_at: ago(7200),
        finished_at: None,
        status: RunStatus::Running,
        summary: String::new(),
        session_path: "/somewhere.jsonl".to_string(),
    };
    store.append_run(&dangling).unwrap();

    let executor = Arc::new(Recording::default());
    let shutdown = CancellationToken::new();
    let rt = runtime();
    let task = rt.spawn(run_scheduler_with(
        store.clone(),
        executor.clone(),
        shutdown.clone(),
        fast(),
    ));
    wait_for("recovery", || {
        (statuses(&store, &cron).len() == 2).then_some(())
    });
    std::thread::sleep(Duration::from_millis(400));
    shutdown.cancel();
    rt.block_on(task).unwrap();

    let runs = store.runs().unwrap();
    let first = runs.iter().find(|r| r.id == dangling.id).unwrap();
    assert_eq!(first.status, RunStatus::Interrupted);
    assert_eq!(first.session_path, "/somewhere.jsonl");
    assert!(first.finished_at.is_some());
    assert_eq!(
        statuses(&store, &cron),
        [RunStatus::Interrupted, RunStatus::Missed],
        "one missed record, no catch-up"
    );
    assert_eq!(
        executor.calls.load(Ordering::SeqCst),
        0,
        "missed firings are not run"
    );
    let jobs = store.jobs().unwrap();
    let cron_now = jobs.iter().find(|j| j.id == cron.id).unwrap();
    assert!(
        cron_now.next_run.unwrap() > Timestamp::now(),
        "rescheduled from now"
    );
    let ran_now = jobs.iter().find(|j| j.id == ran.id).unwrap();
    assert!(
        !ran_now.enabled,
        "a one-shot job that already ran is disabled"
    );
    // Recovery is idempotent.
    recover(&store, Timestamp::now()).unwrap();
    assert_eq!(statuses(&store, &cron).len(), 2);
}

#[test]
fn a_past_due_one_shot_job_fires_once_at_start_up() {
    let e = env();
    let store = e.store();
    let job = e.insert(e.job("late", Kind::Once, &ago(3600).to_string(), Some(ago(3600))));
    let executor = Arc::new(Recording::default());
    let shutdown = CancellationToken::new();
    let rt = runtime();
    let task = rt.spawn(run_scheduler_with(
        store.clone(),
        executor.clone(),
        shutdown.clone(),
        fast(),
    ));
    wait_for("the firing", || {
        (statuses(&store, &job) == [RunStatus::Ok]).then_some(())
    });
    std::thread::sleep(Duration::from_millis(500));
    shutdown.cancel();
    rt.block_on(task).unwrap();
    assert_eq!(executor.calls.load(Ordering::SeqCst), 1);
    let stored = store
        .jobs()
        .unwrap()
        .into_iter()
        .find(|j| j.id == job.id)
        .unwrap();
    assert!(
        !stored.enabled
            && stored.run_count == 1
            && stored.last_run.is_some()
            && stored.next_run.is_none()
    );
    let name = executor.names.lock().unwrap()[0].clone();
    assert!(
        name.starts_with("scheduler/late-2") && name.len() == "scheduler/late-".len() + 15,
        "{name}"
    );
}

#[test]
fn an_overlapping_firing_is_recorded_once_as_skipped() {
    let e = env();
    let store = e.store();
    let job = e.insert(e.job("slow", Kind::Cron, "* * * * *", Some(soon())));
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let executor = Arc::new(Recording {
        gate: Some(gate.clone()),
        ..Recording::default()
    });
    let shutdown = CancellationToken::new();
    let rt = runtime();
    let task = rt.spawn(run_scheduler_with(
        store.clone(),
        executor.clone(),
        shutdown.clone(),
        fast(),
    ));
    wait_for("the first firing", || {
        (executor.calls.load(Ordering::SeqCst) == 1).then_some(())
    });
    // Due twice more while the first firing still runs (as if minutes passed).
    for _ in 0..2 {
        store
            .update(|jobs| {
                jobs.iter_mut().find(|j| j.id == job.id).unwrap().next_run = Some(ago(1));
                Ok(())
            })
            .unwrap();
        wait_for("the tick", || {
            let next = store
                .jobs()
                .unwrap()
                .into_iter()
                .find(|j| j.id == job.id)
                .unwrap()
                .next_run
                .unwrap();
            (next > Timestamp::now()).then_some(())
        });
    }
    assert_eq!(
        statuses(&store, &job),
        [RunStatus::Running, RunStatus::Skipped]
    );
    gate.add_permits(1);
    wait_for("the end of the run", || {
        (statuses(&store, &job)[0] == RunStatus::Ok).then_some(())
    });
    shutdown.cancel();
    rt.block_on(task).unwrap();
    assert_eq!(executor.calls.load(Ordering::SeqCst), 1);
    assert_eq!(statuses(&store, &job), [RunStatus::Ok, RunStatus::Skipped]);
}

#[test]
fn shutdown_interrupts_a_running_firing_and_records_it() {
    let e = env();
    let store = e.store();
    let job = e.insert(e.job("long", Kind::Cron, "@daily", Some(soon())));
    let executor = Arc::new(Recording {
        gate: Some(Arc::new(tokio::sync::Semaphore::new(0))),
        ..Recording::default()
    });
    let shutdown = CancellationToken::new();
    let rt = runtime();
    let task = rt.spawn(run_scheduler_with(
        store.clone(),
        executor.clone(),
        shutdown.clone(),
        fast(),
    ));
    wait_for("the firing", || {
        (executor.calls.load(Ordering::SeqCst) == 1).then_some(())
    });
    shutdown.cancel();
    rt.block_on(task).unwrap();
    assert_eq!(statuses(&store, &job), [RunStatus::Interrupted]);
}

/// Every audit object in a session file.
fn audits(session: &str) -> Vec<Value> {
    std::fs::read_to_string(session)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v.get("audit").cloned())
        .collect()
}

fn session_name_of(session: &str) -> Option<String> {
    std::fs::read_to_string(session)
        .unwrap()
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "session_info")
        .find_map(|v| v["name"].as_str().map(str::to_string))
}

#[test]
fn a_job_fires_through_the_scheduler_with_a_scripted_model() {
    let e = env();
    let server = ScriptedServer::with_replies([Reply::text(&["all ", "done"])]);
    e.config(&server);
    let store = e.store();
    let job = e.insert(e.job(
        "nightly report",
        Kind::Once,
        &ago(5).to_string(),
        Some(ago(5)),
    ));
    let shutdown = CancellationToken::new();
    let rt = runtime();
    let task = rt.spawn(run_scheduler_with(
        store.clone(),
        Arc::new(e.executor()),
        shutdown.clone(),
        fast(),
    ));
    let record = wait_for("the run", || {
        store
            .runs()
            .unwrap()
            .into_iter()
            .find(|r| r.job_id == job.id && r.status != RunStatus::Running)
    });
    shutdown.cancel();
    rt.block_on(task).unwrap();
    assert_eq!(record.status, RunStatus::Ok, "{record:?}");
    assert_eq!(record.summary, "all done");
    assert!(
        record
            .session_path
            .starts_with(&e.sessions.display().to_string()),
        "{record:?}"
    );
    let name = session_name_of(&record.session_path).unwrap();
    assert!(name.starts_with("scheduler/nightly-report-20"), "{name}");
    let body = &server.request_bodies()[0];
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap();
    let text =
        user["content"].as_str().unwrap_or_default().to_string() + &user["content"].to_string();
    assert!(
        text.contains("runs unattended") && text.contains("do the thing"),
        "{text}"
    );
}

/// Fires `job` in this process with the real executor and returns the record.
fn fire_now(e: &Env, job: &Job) -> RunRecord {
    runtime()
        .block_on(fire(
            &e.store(),
            &e.executor(),
            job,
            true,
            CancellationToken::new(),
        ))
        .unwrap()
}

#[test]
fn a_normal_command_needs_allow_all() {
    for (allow_all, sandboxed) in [(false, true), (true, true), (true, false)] {
        let e = env();
        let server = ScriptedServer::with_replies([
            Reply::tool_call("b0", "bash", &json!({"command": "ls"}).to_string()),
            Reply::tool_call(
                "b1",
                "bash",
                &json!({"command": "echo hi > made.txt"}).to_string(),
            ),
            Reply::text(&["finished"]),
        ]);
        e.config(&server);
        let mut job = e.job("writer", Kind::Cron, "@daily", None);
        job.auto_approve = allow_all;
        job.sandbox = sandboxed;
        let job = e.insert(job);
        let record = fire_now(&e, &job);
        assert_eq!(record.status, RunStatus::Ok, "{record:?}");
        assert_eq!(
            session_name_of(&record.session_path).unwrap()[..24].to_string(),
            "scheduler/writer-manual-"
        );
        let all = audits(&record.session_path);
        // Read-only bash runs in every unattended job.
        assert_eq!(
            all[0]["classification"]["verdict"], "read-only",
            "{}",
            all[0]
        );
        assert_eq!(all[0]["decision"]["action"], "allow", "{}", all[0]);
        let audit = &all[1];
        let decision = &audit["decision"];
        assert_eq!(audit["classification"]["verdict"], "normal");
        if allow_all {
            assert_eq!(decision["action"], "allow", "{audit}");
            assert_eq!(decision["rule"], "unattended-allow-all");
            assert_eq!(
                std::fs::read_to_string(e.repo.join("made.txt")).unwrap(),
                "hi\n"
            );
            // Jobs ask for the sandbox unless `--no-sandbox`. This test binary is not a sandbox
            // helper (the `gg`/`ggd` binaries are), so a requested sandbox degrades here with a
            // recorded warning; an opted-out job records plain `none`.
            let level = audit["sandbox"]["level"].as_str().unwrap_or_default();
            let warning = audit["sandbox"]["warning"].as_str().unwrap_or_default();
            if sandboxed {
                assert!(
                    level != "none" || warning.contains("sandbox unavailable"),
                    "{audit}"
                );
            } else {
                assert!(level == "off" && warning.is_empty(), "{audit}");
            }
        } else {
            assert_eq!(decision["action"], "deny", "{audit}");
            assert_eq!(decision["rule"], "unattended-deny");
            assert!(!e.repo.join("made.txt").exists());
        }
        let stored = e.store().jobs().unwrap().into_iter().next().unwrap();
        assert_eq!(stored.run_count, 1);
    }
}

#[test]
fn rm_rf_home_is_denied_even_with_allow_all_and_the_home_survives() {
    let e = env();
    let marker = e.home.join("precious.txt");
    std::fs::write(&marker, "keep me").unwrap();
    let server = ScriptedServer::with_replies([
        Reply::tool_call("b1", "bash", &json!({"command": "rm -rf ~"}).to_string()),
        Reply::text(&["tried"]),
    ]);
    e.config(&server);
    let mut job = e.job("cleanup", Kind::Cron, "@daily", None);
    job.auto_approve = true;
    job.sandbox = false; // the policy alone must stop it
    e.insert(job);
    // In a child whose HOME is the temporary home, so `~` can only ever mean that directory.
    let out = child(
        "fire",
        &[
            ("HOME", &e.home.display().to_string()),
            ("GG_SESSION_DIR", &e.sessions.display().to_string()),
        ],
    )
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "keep me");
    let record = e.store().runs().unwrap().pop().unwrap();
    assert_eq!(record.status, RunStatus::Ok);
    let audit = &audits(&record.session_path)[0];
    assert_eq!(audit["classification"]["verdict"], "dangerous", "{audit}");
    assert_eq!(audit["decision"]["action"], "deny", "{audit}");
    assert_eq!(audit["decision"]["rule"], "dangerous-unattended", "{audit}");
}

#[test]
fn a_run_past_its_timeout_is_recorded_as_timeout() {
    let e = env();
    let server = ScriptedServer::with_replies([StreamReply::new().stall().reply()]);
    e.config(&server);
    let mut job = e.job("stuck", Kind::Cron, "@daily", None);
    job.timeout = 1_000_000_000;
    let job = e.insert(job);
    let record = fire_now(&e, &job);
    assert_eq!(record.status, RunStatus::Timeout, "{record:?}");
    assert_eq!(record.summary, "timeout: the run exceeded 1s");
    assert!(Path::new(&record.session_path).exists());
}

#[test]
fn run_log_keeps_the_latest_state_and_tolerates_a_torn_last_line() {
    let e = env();
    let store = e.store();
    let job = e.job("j", Kind::Cron, "@daily", None);
    let mut record = RunRecord::instant(&job, Timestamp::now(), RunStatus::Running, "").unwrap();
    store.append_run(&record).unwrap();
    record.status = RunStatus::Ok;
    store.append_run(&record).unwrap();
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(store.runs_path())
        .unwrap();
    f.write_all(b"{\"id\":\"torn").unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(store.runs_path())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    let runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, RunStatus::Ok);
    // A bad line in the middle is an error, not silently dropped.
    f.write_all(b"\n").unwrap();
    store.append_run(&record).unwrap();
    assert!(store.runs().unwrap_err().contains("line 3"));
}

#[test]
fn summaries_and_session_names_are_bounded() {
    let long = "é".repeat(600);
    let cut = truncate_summary(&long);
    assert_eq!(cut.chars().count(), 501);
    assert!(cut.ends_with('…'));
    assert_eq!(truncate_summary("short"), "short");
    let at: Timestamp = "2026-03-08T07:05:09Z".parse().unwrap();
    assert_eq!(
        session_name("nightly report", false, at),
        "scheduler/nightly-report-20260308-070509"
    );
    assert_eq!(
        session_name("a/../b", true, at),
        "scheduler/a-..-b-manual-20260308-070509"
    );
    let name = session_name(&"x".repeat(50), false, at);
    assert_eq!(
        name,
        format!("scheduler/{}-20260308-070509", "x".repeat(32))
    );
}

#[test]
fn a_job_with_a_broken_schedule_is_paused_and_the_others_still_fire() {
    let e = env();
    let store = e.store();
    let broken = e.insert(e.job("broken", Kind::Cron, "not a cron", Some(soon())));
    let mut bad_zone = e.job("bad-zone", Kind::Cron, "@daily", Some(soon()));
    bad_zone.timezone = "Mars/Olympus".to_string();
    let bad_zone = e.insert(bad_zone);
    let good = e.insert(e.job("good", Kind::Once, &soon().to_string(), Some(soon())));
    let executor = Arc::new(Recording::default());
    let shutdown = CancellationToken::new();
    let rt = runtime();
    let task = rt.spawn(run_scheduler_with(
        store.clone(),
        executor.clone(),
        shutdown.clone(),
        fast(),
    ));
    wait_for("the good job", || {
        (statuses(&store, &good) == [RunStatus::Ok]).then_some(())
    });
    shutdown.cancel();
    rt.block_on(task).unwrap();
    let jobs = store.jobs().unwrap();
    for id in [&broken.id, &bad_zone.id] {
        let job = jobs.iter().find(|j| &j.id == id).unwrap();
        assert!(!job.enabled && job.next_run.is_none(), "{job:?}");
    }
    assert_eq!(executor.calls.load(Ordering::SeqCst), 1);
}

#[test]
fn job_run_fires_now_in_the_cli_process() {
    let e = env();
    let server = ScriptedServer::with_replies([Reply::text(&["checked"])]);
    e.config(&server);
    let job = e.insert(e.job("check", Kind::Cron, "@daily", None));
    let (ok, out, err) = cli(&e, &["run", "check"]);
    assert!(ok, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("run ")
            && lines[0].ends_with(&format!("of job {} (check): ok", job.id)),
        "{out}"
    );
    let session = lines[1].strip_prefix("session: ").unwrap();
    assert!(
        session.starts_with(&e.home.join(".gg/sessions").display().to_string()),
        "{session}"
    );
    assert!(
        session_name_of(session)
            .unwrap()
            .starts_with("scheduler/check-manual-")
    );
    assert_eq!(lines[2], "checked");
    let (_, log, _) = cli(&e, &["log", "--job", "check"]);
    let rows: Vec<Vec<&str>> = log
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["JOB", "STARTED", "STATUS", "SUMMARY"]);
    assert_eq!(rows[1][0], "check");
    assert_eq!(rows[1][4], "ok", "{log}");
    assert_eq!(rows[1][5], "checked", "{log}");
    // Removed jobs stay visible in the log by name.
    assert!(cli(&e, &["remove", "check"]).0);
    let (ok, log, _) = cli(&e, &["log", "--job", "check"]);
    assert!(ok && log.lines().count() == 2, "{log}");
}

#[test]
fn cli_adds_while_the_scheduler_fires_lose_nothing() {
    let e = env();
    let store = e.store();
    let due: Vec<Job> = (0..10)
        .map(|i| {
            e.insert(e.job(
                &format!("due-{i}"),
                Kind::Once,
                &soon().to_string(),
                Some(soon()),
            ))
        })
        .collect();
    let executor = Arc::new(Recording::default());
    let shutdown = CancellationToken::new();
    let rt = runtime();
    let task = rt.spawn(run_scheduler_with(
        store.clone(),
        executor.clone(),
        shutdown.clone(),
        fast(),
    ));
    let home = e.home.display().to_string();
    let children: Vec<_> = (0..4)
        .map(|p| {
            child(
                "add",
                &[("HOME", &home), ("JOB_PREFIX", &format!("cli{p}"))],
            )
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    wait_for("every due job to finish", || {
        let jobs = store.jobs().unwrap();
        due.iter()
            .all(|d| {
                jobs.iter()
                    .any(|j| j.id == d.id && j.run_count == 1 && !j.enabled)
            })
            .then_some(())
    });
    shutdown.cancel();
    rt.block_on(task).unwrap();
    let jobs = store.jobs().unwrap();
    assert_eq!(jobs.len(), 30, "10 fired + 20 added");
    assert_eq!(
        jobs.iter().filter(|j| j.name.starts_with("cli")).count(),
        20
    );
    assert_eq!(executor.calls.load(Ordering::SeqCst), 10);
}

#[test]
fn a_firing_that_cannot_start_is_recorded_as_an_error() {
    let e = env();
    let dir = e.home.join(".gg");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.json"),
        r#"{"providers": {"openai": {"baseURL": "http://127.0.0.1:9/v1"}}}"#,
    )
    .unwrap();
    let job = e.insert(e.job("keyless", Kind::Cron, "@daily", None));
    let record = fire_now(&e, &job);
    assert_eq!(record.status, RunStatus::Error);
    assert_eq!(record.summary, gg::app::config::MISSING_API_KEY);

    let mut gone = e.job("gone", Kind::Cron, "@daily", None);
    gone.workspace = e.home.join("no-such-dir").display().to_string();
    let gone = e.insert(gone);
    let record = fire_now(&e, &gone);
    assert_eq!(record.status, RunStatus::Error);
    assert!(record.summary.starts_with("job directory "), "{record:?}");
    assert!(record.session_path.is_empty());
}

/// The real `gg job …` in `e`'s home: success, stdout, stderr.
fn gg_job(e: &Env, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gg"))
        .arg("job")
        .args(args)
        .current_dir(&e.repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &e.home)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn job_names_and_prompts_reach_the_terminal_escaped() {
    let e = env();
    // What an edited store (or a gg from before names were checked) may hold.
    let mut job = e.job("red\u{1b}[31m\u{7}", Kind::Cron, "@daily", Some(ago(-3600)));
    job.prompt = "line one\nclear\u{1b}[2J\u{1b}]0;title\u{7}".to_string();
    let job = e.insert(job);
    e.store()
        .append_run(&RunRecord::instant(&job, ago(10), RunStatus::Missed, "").unwrap())
        .unwrap();
    for args in [
        vec!["list"],
        vec!["list", "--all"],
        vec!["show", &job.id],
        vec!["log"],
        vec!["pause", &job.id],
        vec!["resume", &job.id],
        vec!["remove", &job.id],
    ] {
        let (ok, out, err) = gg_job(&e, &args);
        assert!(ok, "{args:?}: {err}");
        assert!(
            !out.contains('\u{1b}') && !out.contains('\u{7}'),
            "{args:?}: {out:?}"
        );
        assert!(out.contains("red\\x1b[31m"), "{args:?}: {out:?}");
        if args[0] == "show" {
            // The prompt keeps its line break; its controls are escaped.
            assert!(
                out.contains("prompt: line one\nclear\\x1b[2J\\x1b]0;title"),
                "{out:?}"
            );
        }
    }
}

#[test]
fn job_names_are_checked_when_added_from_the_cli_and_ggd() {
    let e = env();
    for bad in [
        "../../x",
        "a/b",
        "red\u{1b}[31m",
        "zero\u{200b}width",
        "quote\"",
        &"n".repeat(65),
    ] {
        let (ok, _, err) = gg_job(&e, &["add", "--name", bad, "--in", "1h", "p"]);
        assert!(!ok, "{bad:?} was accepted");
        assert!(
            err.contains("a job name may hold letters, digits, spaces"),
            "{err}"
        );
        assert!(!err.contains('\u{1b}'), "{err:?}");
    }
    for good in ["nightly report", "build-2.0_rc", "Сборка", &"n".repeat(64)] {
        let (ok, _, err) = gg_job(&e, &["add", "--name", good, "--in", "1h", "p"]);
        assert!(ok, "{good:?}: {err}");
    }
    assert_eq!(e.store().jobs().unwrap().len(), 4);

    // job.add over ggd's API goes through the same check.
    let server = ScriptedServer::start();
    let mut ggd = Command::new(env!("CARGO_BIN_EXE_ggd"));
    ggd.current_dir(&e.repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &e.home)
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", server.base_url())
        .env("GG_SESSION_DIR", &e.sessions)
        .env("GG_LOG_LEVEL", "info");
    let d = crate::daemon_common::HttpDaemon::spawn(ggd, "jobs-token");
    let refused = d.rpc(
        "job.add",
        json!({"name": "../../x", "prompt": "p", "in": "1h"}),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("a job name may hold"),
        "{refused}"
    );
    assert_eq!(e.store().jobs().unwrap().len(), 4);
}
