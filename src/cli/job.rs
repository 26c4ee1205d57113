//! `gg job …`: add, list, show, pause, resume, remove, log and run. The work is done by the
//! jobs module ([`crate::jobs::manage`], the store, the scheduler); this module parses, prints
//! and maps errors to exit codes (1 failure, 2 usage).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use jiff::Timestamp;
use tokio_util::sync::CancellationToken;

use crate::display::{visible, visible_inline};
pub use crate::jobs::manage::AddArgs;
use crate::jobs::manage::{
    NO_DAEMON_NOTE, add_job, daemon_running, pause, remove, resolve, resume,
};
use crate::jobs::schedule::{format_duration, time_zone};
use crate::jobs::scheduler::fire;
use crate::jobs::{ConversationExecutor, Job, JobStore, Kind, RunStatus};
use tools::security;

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
                visible_inline(&job.name),
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
                    // The store is a file anything running as this user can edit, and names
                    // added before they were checked may hold anything: escaped like model text.
                    vec![
                        visible_inline(&j.id).into_owned(),
                        visible_inline(&j.name).into_owned(),
                        j.kind.as_str().to_string(),
                        visible_inline(&j.schedule).into_owned(),
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
            // Escaped as in `list`; the prompt keeps its line breaks (`visible`), every other
            // value is one line.
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
                let value = if key == "prompt" {
                    visible(&value)
                } else {
                    visible_inline(&value)
                };
                out.push_str(&format!("{key}: {value}\n"));
            }
        }
        JobCommand::Pause { job } => {
            let j = pause(&store, &job)?;
            out.push_str(&format!(
                "job {} ({}) paused\n",
                j.id,
                visible_inline(&j.name)
            ));
        }
        JobCommand::Resume { job } => {
            let j = resume(&store, &job, now)?;
            out.push_str(&format!(
                "job {} ({}) resumed; next run {}\n",
                j.id,
                visible_inline(&j.name),
                when(&j, j.next_run)
            ));
        }
        JobCommand::Remove { job } => {
            let j = remove(&store, &job)?;
            out.push_str(&format!(
                "job {} ({}) removed\n",
                j.id,
                visible_inline(&j.name)
            ));
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
                        visible_inline(&r.job_name).into_owned(),
                        r.started_at.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
                        r.status.as_str().to_string(),
                        visible_inline(&r.summary.replace(['\n', '\r'], " ")).into_owned(),
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
            // `SIGTERM` and `SIGHUP` cancel the run as Ctrl+C does (its command stopped and
            // swept, the run recorded) and end gg once it has ended.
            let stop = cancel.clone();
            let _stoppable = ::sandbox::leftovers::stoppable(move || {
                stop.cancel();
                true
            });
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
                visible_inline(&j.name),
                record.status.as_str()
            );
            if !record.session_path.is_empty() {
                println!("session: {}", record.session_path);
            }
            if !record.summary.is_empty() {
                // The model's last words: escaped like every other model text on a terminal.
                println!("{}", visible(&record.summary));
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
