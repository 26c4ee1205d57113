//! `gg job …`: add, list, show, pause, resume, remove, log and run.
//!
//! The library functions ([`add_job`], [`resolve`], [`pause`], …) do the work and return
//! errors as text; [`run`] prints and maps them to exit codes (1 failure, 2 usage).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use jiff::Timestamp;
use tokio_util::sync::CancellationToken;

use super::schedule::{
    default_time_zone_name, format_duration, next_cron, parse_at, parse_cron, parse_duration,
    time_zone,
};
use super::scheduler::fire;
use super::{ConversationExecutor, DEFAULT_TIMEOUT, Job, JobStore, Kind, RunStatus, random_hex};
use crate::tools::security;

/// The note printed when no daemon holds the instance lock.
pub const NO_DAEMON_NOTE: &str =
    "note: ggd is not running; jobs fire only while the daemon is alive";

/// `gg job` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum JobCommand {
    /// Add a job: exactly one of --cron, --at, --in.
    Add(AddArgs),
    /// List jobs (paused and finished ones only with --all).
    List {
        #[arg(long)]
        all: bool,
    },
    /// Show one job.
    Show { job: String },
    /// Stop a job from firing.
    Pause { job: String },
    /// Let a paused job fire again.
    Resume { job: String },
    /// Delete a job (its runs stay in the log).
    #[command(alias = "rm")]
    Remove { job: String },
    /// Show recent runs.
    Log {
        /// Only runs of this job (id or name; removed jobs still match).
        #[arg(long)]
        job: Option<String>,
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Fire a job now, in this process.
    Run { job: String },
}

/// `gg job add` arguments.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(group(clap::ArgGroup::new("when").required(true).args(["cron", "at", "in_"])))]
pub struct AddArgs {
    #[arg(long)]
    pub name: String,
    /// 5-field cron expression or @hourly/@daily/@weekly/@monthly/@yearly.
    #[arg(long)]
    pub cron: Option<String>,
    /// RFC 3339, or "YYYY-MM-DD HH:MM" in the job's time zone.
    #[arg(long)]
    pub at: Option<String>,
    /// From now: 90s, 10m, 2h, 1d, 1h30m.
    #[arg(long = "in", value_name = "DURATION")]
    pub in_: Option<String>,
    /// IANA zone (default: the system's).
    #[arg(long)]
    pub timezone: Option<String>,
    /// Per-run limit (default 10m).
    #[arg(long)]
    pub timeout: Option<String>,
    /// Let the job run normal gated tools; dangerous commands stay denied.
    #[arg(long)]
    pub allow_all: bool,
    /// Run the job's tools outside the sandbox.
    #[arg(long)]
    pub no_sandbox: bool,
    /// Network policy of the job's sandboxed commands: off, on or allow-list.
    #[arg(long, value_name = "MODE")]
    pub network: Option<String>,
    /// A further host the allow-list lets through (repeatable; *.example.com for subdomains).
    #[arg(long = "allow-domain", value_name = "HOST")]
    pub allow_domain: Vec<String>,
    /// The prompt (options may follow it; put `--` before a prompt that starts with '-').
    #[arg(required = true, num_args = 1.., value_name = "PROMPT")]
    pub prompt: Vec<String>,
}

/// Builds and stores a job; `cwd` becomes the directory it runs in.
pub fn add_job(
    store: &JobStore,
    args: &AddArgs,
    cwd: &Path,
    now: Timestamp,
) -> Result<Job, String> {
    let name = args.name.trim();
    if name.is_empty() {
        return Err("--name must not be empty".to_string());
    }
    let prompt = args.prompt.join(" ");
    if prompt.trim().is_empty() {
        return Err("a prompt is required".to_string());
    }
    let timezone = args.timezone.clone().unwrap_or_else(default_time_zone_name);
    let tz = time_zone(&timezone)?;
    let (kind, schedule, next_run) = match (&args.cron, &args.at, &args.in_) {
        (Some(expr), None, None) => {
            let cron = parse_cron(expr)?;
            (
                Kind::Cron,
                expr.trim().to_string(),
                next_cron(&cron, &tz, now)?,
            )
        }
        (None, Some(at), None) => {
            let at = parse_at(at, &tz)?;
            if at <= now {
                return Err(format!("--at {at} is in the past"));
            }
            (Kind::Once, at.to_string(), at)
        }
        (None, None, Some(after)) => {
            let after = parse_duration(after)?;
            let at = jiff::SignedDuration::try_from(after)
                .ok()
                .and_then(|d| now.checked_add(d).ok())
                .and_then(|t| t.round(jiff::Unit::Second).ok())
                .ok_or_else(|| "--in is too far in the future".to_string())?;
            (Kind::Once, at.to_string(), at)
        }
        _ => return Err("exactly one of --cron, --at or --in is required".to_string()),
    };
    let timeout = match &args.timeout {
        Some(text) => parse_duration(text).map_err(|e| format!("--timeout: {e}"))?,
        None => DEFAULT_TIMEOUT,
    };
    let timeout =
        u64::try_from(timeout.as_nanos()).map_err(|_| "--timeout is too large".to_string())?;
    // Checked now, so a typo fails at `gg job add` rather than at 3 a.m.
    if let Some(mode) = &args.network {
        mode.parse::<crate::tools::network::NetworkMode>()
            .map_err(|e| format!("--network: {e}"))?;
    }
    crate::tools::network::AllowList::parse(&args.allow_domain)
        .map_err(|e| format!("--allow-domain: {e}"))?;
    store.update(|jobs| {
        let mut id = random_hex(3)?;
        while jobs.iter().any(|j| j.id == id) {
            id = random_hex(3)?;
        }
        let job = Job {
            id,
            name: name.to_string(),
            kind,
            schedule,
            prompt,
            timezone,
            workspace: cwd.display().to_string(),
            workspace_id: String::new(),
            enabled: true,
            auto_approve: args.allow_all,
            sandbox: !args.no_sandbox,
            network: args.network.clone(),
            allow_domains: args.allow_domain.clone(),
            timeout,
            created_at: now,
            last_run: None,
            next_run: Some(next_run),
            run_count: 0,
        };
        jobs.push(job.clone());
        Ok(job)
    })
}

/// Finds a job by id, else by unique name.
pub fn resolve<'a>(jobs: &'a [Job], reference: &str) -> Result<&'a Job, String> {
    if let Some(job) = jobs.iter().find(|j| j.id == reference) {
        return Ok(job);
    }
    let mut named = jobs.iter().filter(|j| j.name == reference);
    match (named.next(), named.next()) {
        (Some(job), None) => Ok(job),
        (Some(_), Some(_)) => Err(format!("multiple jobs named \"{reference}\"; use the id")),
        _ => Err(format!("no job \"{reference}\"")),
    }
}

fn resolve_mut<'a>(jobs: &'a mut [Job], reference: &str) -> Result<&'a mut Job, String> {
    let id = resolve(jobs, reference)?.id.clone();
    jobs.iter_mut()
        .find(|j| j.id == id)
        .ok_or_else(|| format!("no job \"{reference}\""))
}

/// Stops a job from firing.
pub fn pause(store: &JobStore, reference: &str) -> Result<Job, String> {
    store.update(|jobs| {
        let job = resolve_mut(jobs, reference)?;
        job.enabled = false;
        Ok(job.clone())
    })
}

/// Re-enables a job. A one-shot job that already ran refuses; one that never ran and is past
/// due fires immediately; a cron job is rescheduled from now.
pub fn resume(store: &JobStore, reference: &str, now: Timestamp) -> Result<Job, String> {
    store.update(|jobs| {
        let job = resolve_mut(jobs, reference)?;
        match job.kind {
            Kind::Once if job.run_count > 0 || job.last_run.is_some() => {
                return Err(format!(
                    "job {} already ran; a one-shot job cannot be resumed",
                    job.id
                ));
            }
            Kind::Once => {
                let at = job
                    .schedule
                    .parse::<Timestamp>()
                    .map_err(|e| format!("job {}: bad schedule: {e}", job.id))?;
                job.next_run = Some(at.max(now));
            }
            Kind::Cron => job.next_run = Some(super::scheduler::next_cron_run(job, now)?),
        }
        job.enabled = true;
        Ok(job.clone())
    })
}

/// Deletes a job.
pub fn remove(store: &JobStore, reference: &str) -> Result<Job, String> {
    store.update(|jobs| {
        let id = resolve(jobs, reference)?.id.clone();
        let index = jobs
            .iter()
            .position(|j| j.id == id)
            .ok_or_else(|| format!("no job \"{reference}\""))?;
        Ok(jobs.remove(index))
    })
}

/// Whether a daemon holds `~/.gg/ggd.pid`. An unreadable lock file counts as "not running" so
/// the user is warned rather than reassured.
pub fn daemon_running(home: &Path) -> bool {
    crate::app::lock::daemon_alive(home).unwrap_or(false)
}

/// Runs a `gg job` subcommand.
pub fn run(cmd: JobCommand) -> ExitCode {
    run_with_home(cmd, &security::home_dir())
}

/// [`run`] against an explicit home directory (`<home>/.gg/scheduler`, `<home>/.gg/ggd.pid`).
pub fn run_with_home(cmd: JobCommand, home: &Path) -> ExitCode {
    match run_in(cmd, home) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("gg: {message}");
            ExitCode::from(1)
        }
    }
}

fn run_in(cmd: JobCommand, home: &Path) -> Result<ExitCode, String> {
    let store = JobStore::open(&JobStore::default_dir(home))?;
    let now = Timestamp::now();
    let mut out = String::new();
    match cmd {
        JobCommand::Add(args) => {
            let cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
            let job = add_job(&store, &args, &cwd, now)?;
            out.push_str(&format!(
                "job {} ({}) added; next run {}\n",
                job.id,
                job.name,
                when(&job, job.next_run)
            ));
            print!("{out}");
            let mode = policies::Mode::Unattended {
                allow_all: job.auto_approve,
            };
            if let Some(note) = crate::cli::terminal::sandbox_note(mode, job.sandbox) {
                eprintln!("{note}");
            }
            if !daemon_running(home) {
                eprintln!("{NO_DAEMON_NOTE}");
            }
            return Ok(ExitCode::SUCCESS);
        }
        JobCommand::List { all } => {
            let jobs = store.jobs()?;
            let runs = store.runs()?;
            let rows: Vec<Vec<String>> = jobs
                .iter()
                .filter(|j| all || j.enabled)
                .map(|j| {
                    let last = runs.iter().rev().find(|r| r.job_id == j.id);
                    vec![
                        j.id.clone(),
                        j.name.clone(),
                        j.kind.as_str().to_string(),
                        j.schedule.clone(),
                        when(j, j.next_run.filter(|_| j.enabled)),
                        when(j, j.last_run),
                        match (j.enabled, last) {
                            (false, _) if j.kind == Kind::Once && j.run_count > 0 => {
                                "done".to_string()
                            }
                            (false, _) => "paused".to_string(),
                            (true, Some(r)) => r.status.as_str().to_string(),
                            (true, None) => "scheduled".to_string(),
                        },
                    ]
                })
                .collect();
            if rows.is_empty() {
                out.push_str("no jobs\n");
            } else {
                out.push_str(&table(
                    &[
                        "ID", "NAME", "KIND", "SCHEDULE", "NEXT RUN", "LAST RUN", "STATUS",
                    ],
                    &rows,
                ));
            }
        }
        JobCommand::Show { job } => {
            let jobs = store.jobs()?;
            let j = resolve(&jobs, &job)?;
            for (key, value) in [
                ("id", j.id.clone()),
                ("name", j.name.clone()),
                ("kind", j.kind.as_str().to_string()),
                ("schedule", j.schedule.clone()),
                ("timezone", j.timezone.clone()),
                ("enabled", j.enabled.to_string()),
                ("allow-all", j.auto_approve.to_string()),
                (
                    "sandbox",
                    if j.sandbox {
                        "on"
                    } else {
                        "off (--no-sandbox)"
                    }
                    .to_string(),
                ),
                (
                    "network",
                    match (&j.network, j.allow_domains.is_empty()) {
                        (mode, true) => mode.clone().unwrap_or_else(|| "config".into()),
                        (mode, false) => format!(
                            "{} + {}",
                            mode.as_deref().unwrap_or("config"),
                            j.allow_domains.join(", ")
                        ),
                    },
                ),
                ("timeout", format_duration(j.timeout())),
                ("directory", j.workspace.clone()),
                ("created", when(j, Some(j.created_at))),
                ("next run", when(j, j.next_run.filter(|_| j.enabled))),
                ("last run", when(j, j.last_run)),
                ("runs", j.run_count.to_string()),
                ("prompt", j.prompt.clone()),
            ] {
                out.push_str(&format!("{key}: {value}\n"));
            }
        }
        JobCommand::Pause { job } => {
            let j = pause(&store, &job)?;
            out.push_str(&format!("job {} ({}) paused\n", j.id, j.name));
        }
        JobCommand::Resume { job } => {
            let j = resume(&store, &job, now)?;
            out.push_str(&format!(
                "job {} ({}) resumed; next run {}\n",
                j.id,
                j.name,
                when(&j, j.next_run)
            ));
        }
        JobCommand::Remove { job } => {
            let j = remove(&store, &job)?;
            out.push_str(&format!("job {} ({}) removed\n", j.id, j.name));
        }
        JobCommand::Log { job, limit } => {
            let mut runs = store.runs()?;
            if let Some(reference) = &job {
                // Removed jobs still match by the id or name recorded in their runs.
                let id = match resolve(&store.jobs()?, reference) {
                    Ok(j) => Some(j.id.clone()),
                    Err(_) => None,
                };
                runs.retain(|r| {
                    Some(&r.job_id) == id.as_ref()
                        || r.job_id == *reference
                        || r.job_name == *reference
                });
                if runs.is_empty() && id.is_none() {
                    return Err(format!("no job \"{reference}\""));
                }
            }
            let skip = runs.len().saturating_sub(limit);
            let rows: Vec<Vec<String>> = runs[skip..]
                .iter()
                .map(|r| {
                    vec![
                        r.job_name.clone(),
                        r.started_at.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
                        r.status.as_str().to_string(),
                        crate::display::visible_inline(&r.summary.replace(['\n', '\r'], " "))
                            .into_owned(),
                    ]
                })
                .collect();
            if rows.is_empty() {
                out.push_str("no runs\n");
            } else {
                out.push_str(&table(&["JOB", "STARTED", "STATUS", "SUMMARY"], &rows));
            }
        }
        JobCommand::Run { job } => {
            let j = resolve(&store.jobs()?, &job)?.clone();
            let runtime = crate::app::runtime()
                .map_err(|e| format!("cannot start the async runtime: {e}"))?;
            let executor = Arc::new(ConversationExecutor::new(home.to_path_buf()));
            let cancel = CancellationToken::new();
            let record = runtime.block_on(async {
                let interrupt = cancel.clone();
                tokio::spawn(async move {
                    if tokio::signal::ctrl_c().await.is_ok() {
                        interrupt.cancel();
                    }
                });
                fire(&store, executor.as_ref(), &j, true, cancel).await
            })?;
            println!(
                "run {} of job {} ({}): {}",
                record.id,
                j.id,
                j.name,
                record.status.as_str()
            );
            if !record.session_path.is_empty() {
                println!("session: {}", record.session_path);
            }
            if !record.summary.is_empty() {
                // The model's last words: escaped like every other model text on a terminal.
                println!("{}", crate::display::visible(&record.summary));
            }
            return Ok(if record.status == RunStatus::Ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            });
        }
    }
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    Ok(ExitCode::SUCCESS)
}

/// A time in the job's zone, or `-`.
fn when(job: &Job, at: Option<Timestamp>) -> String {
    match (at, time_zone(&job.timezone)) {
        (None, _) => "-".to_string(),
        (Some(t), Ok(tz)) => t.to_zoned(tz).strftime("%Y-%m-%d %H:%M %Z").to_string(),
        (Some(t), Err(_)) => t.to_string(),
    }
}

/// Left-aligned columns separated by two spaces; the last column is not padded.
fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        let last = cells.len().saturating_sub(1);
        for (i, cell) in cells.iter().enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        out.push('\n');
    };
    line(headers.to_vec(), &mut out);
    for row in rows {
        line(row.iter().map(String::as_str).collect(), &mut out);
    }
    out
}
