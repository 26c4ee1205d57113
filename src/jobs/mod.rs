//! Scheduled jobs (`gg job …`): the store under `~/.gg/scheduler/`, the schedule
//! arithmetic, the scheduler loop the daemon runs, and the executor that runs one unattended
//! turn per firing.
//!
//! Jobs run under [`policies::Mode::Unattended`]: without `--allow-all` only read-type tools and
//! read-only bash run; with it, normal gated tools run; dangerous commands are always denied,
//! because nobody is there to confirm them.

pub mod executor;
pub mod manage;
pub mod schedule;
pub mod scheduler;
pub mod store;

use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

pub use executor::{ConversationExecutor, Execution};
pub use scheduler::{
    Armed, JobExecutor, SchedulerOptions, SystemWakeups, Wake, Wakeups, run_scheduler,
    run_scheduler_with,
};
pub use store::JobStore;

/// The default `--timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);
/// Longest summary kept in a run record, in characters (an ellipsis marks a cut).
pub const SUMMARY_LIMIT: usize = 500;

/// How a job is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Cron,
    Once,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Cron => "cron",
            Kind::Once => "once",
        }
    }
}

/// One job as stored in `jobs.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    /// 6 lowercase hex digits.
    pub id: String,
    pub name: String,
    pub kind: Kind,
    /// The cron expression, or the RFC 3339 instant of a one-shot job.
    pub schedule: String,
    pub prompt: String,
    /// IANA zone name the schedule is read in.
    pub timezone: String,
    /// The directory the job runs in (the directory `gg job add` ran in).
    pub workspace: String,
    #[serde(default)]
    pub workspace_id: String,
    pub enabled: bool,
    /// `--allow-all`: normal gated tools run without asking.
    pub auto_approve: bool,
    /// Absent in older files: the sandbox is on unless `--no-sandbox` was given.
    #[serde(default = "sandbox_default")]
    pub sandbox: bool,
    /// `--network`: the network policy of the job's sandboxed commands (`off`, `on`,
    /// `allow-list`); absent: the config's (default allow-list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// `--allow-domain`: further hosts for the allow-list.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_domains: Vec<String>,
    /// Nanoseconds.
    pub timeout: u64,
    pub created_at: Timestamp,
    #[serde(default)]
    pub last_run: Option<Timestamp>,
    #[serde(default)]
    pub next_run: Option<Timestamp>,
    #[serde(default)]
    pub run_count: u64,
}

fn sandbox_default() -> bool {
    true
}

impl Job {
    pub fn timeout(&self) -> Duration {
        Duration::from_nanos(self.timeout)
    }
}

/// The state of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    Ok,
    Error,
    Timeout,
    Skipped,
    Missed,
    Interrupted,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Ok => "ok",
            RunStatus::Error => "error",
            RunStatus::Timeout => "timeout",
            RunStatus::Skipped => "skipped",
            RunStatus::Missed => "missed",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

/// One line of `runs.jsonl`. A run is written as `running` first and appended again when it
/// ends; the last line with a given `id` is the current state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    /// 32 lowercase hex digits.
    pub id: String,
    pub job_id: String,
    pub job_name: String,
    pub started_at: Timestamp,
    #[serde(default)]
    pub finished_at: Option<Timestamp>,
    pub status: RunStatus,
    #[serde(default)]
    pub summary: String,
    #[serde(default)]
    pub session_path: String,
}

impl RunRecord {
    /// A record that starts and ends at `at` (`skipped`, `missed`).
    pub fn instant(
        job: &Job,
        at: Timestamp,
        status: RunStatus,
        summary: &str,
    ) -> Result<RunRecord, String> {
        Ok(RunRecord {
            id: random_hex(16)?,
            job_id: job.id.clone(),
            job_name: job.name.clone(),
            started_at: at,
            finished_at: Some(at),
            status,
            summary: summary.to_string(),
            session_path: String::new(),
        })
    }
}

/// `bytes` random bytes as lowercase hex.
pub fn random_hex(bytes: usize) -> Result<String, String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| format!("random id: {e}"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Cuts a summary to [`SUMMARY_LIMIT`] characters, marking the cut with `…`.
pub fn truncate_summary(text: &str) -> String {
    tools::registry::clip_chars_marked(text.trim().to_string(), SUMMARY_LIMIT, "…")
}

/// The session name of a firing: `scheduler/<name>-<yyyymmdd-hhmmss>`, the name reduced to
/// `[A-Za-z0-9._-]` and at most 32 characters so it stays one readable path-like token.
pub fn session_name(job_name: &str, manual: bool, at: Timestamp) -> String {
    let mut clean: String = job_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .take(32)
        .collect();
    if clean.is_empty() {
        clean.push_str("job");
    }
    let stamp = at
        .to_zoned(jiff::tz::TimeZone::UTC)
        .strftime("%Y%m%d-%H%M%S");
    if manual {
        format!("scheduler/{clean}-manual-{stamp}")
    } else {
        format!("scheduler/{clean}-{stamp}")
    }
}
