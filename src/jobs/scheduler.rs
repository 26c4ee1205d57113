//! The scheduler loop the daemon runs (reference §9.2), and [`fire`], which `gg job run` shares.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::schedule::{next_cron, parse_cron, time_zone};
use super::store::JobStore;
use super::{Execution, Job, Kind, RunRecord, RunStatus, random_hex, truncate_summary};

/// Longest sleep between two looks at the store: jobs added by the CLI are seen within this.
pub const MAX_SLEEP: Duration = Duration::from_secs(30);
/// Pause before retrying a start-up recovery that failed (e.g. an unreadable store).
const RECOVERY_RETRY: Duration = Duration::from_secs(5);

pub type ExecutionFuture<'a> = Pin<Box<dyn Future<Output = Execution> + Send + 'a>>;

/// Runs one firing of a job. `cancel` fires on daemon shutdown; the executor applies the job's
/// own timeout.
pub trait JobExecutor: Send + Sync {
    fn execute<'a>(
        &'a self,
        job: &'a Job,
        session_name: String,
        cancel: CancellationToken,
    ) -> ExecutionFuture<'a>;
}

/// The next firing of a cron job after `after`.
pub fn next_cron_run(job: &Job, after: Timestamp) -> Result<Timestamp, String> {
    let cron = parse_cron(&job.schedule)?;
    next_cron(&cron, &time_zone(&job.timezone)?, after)
}

/// Runs one firing: a `running` record first, then the execution, then the final record and
/// the job's `last_run`/`run_count` (a one-shot job is disabled afterwards).
pub async fn fire(
    store: &JobStore,
    executor: &dyn JobExecutor,
    job: &Job,
    manual: bool,
    cancel: CancellationToken,
) -> Result<RunRecord, String> {
    let started = Timestamp::now();
    let mut record = RunRecord {
        id: random_hex(16)?,
        job_id: job.id.clone(),
        job_name: job.name.clone(),
        started_at: started,
        finished_at: None,
        status: RunStatus::Running,
        summary: String::new(),
        session_path: String::new(),
    };
    store.append_run(&record)?;
    let execution = executor
        .execute(job, super::session_name(&job.name, manual, started), cancel)
        .await;
    let finished = Timestamp::now();
    record.finished_at = Some(finished);
    record.status = execution.status;
    record.summary = truncate_summary(&execution.summary);
    record.session_path = execution.session_path;
    store.append_run(&record)?;
    store.update(|jobs| {
        if let Some(stored) = jobs.iter_mut().find(|j| j.id == job.id) {
            stored.last_run = Some(started);
            stored.run_count += 1;
            if stored.kind == Kind::Once {
                stored.enabled = false;
                stored.next_run = None;
            }
        }
        Ok(())
    })?;
    Ok(record)
}

/// Start-up recovery: dangling `running` records become `interrupted`; enabled cron jobs past
/// due get one `missed` record and are rescheduled from now (not caught up); one-shot jobs that
/// already ran are disabled. Past-due one-shot jobs that never ran keep their time and fire on
/// the first tick.
pub fn recover(store: &JobStore, now: Timestamp) -> Result<(), String> {
    store.mark_interrupted(now)?;
    let mut missed = Vec::new();
    store.update(|jobs| {
        for job in jobs.iter_mut().filter(|j| j.enabled) {
            match job.kind {
                Kind::Once if job.run_count > 0 => {
                    job.enabled = false;
                    job.next_run = None;
                }
                Kind::Once => {}
                Kind::Cron => {
                    if job.next_run.is_some_and(|due| due <= now) {
                        missed.push(RunRecord::instant(
                            job,
                            now,
                            RunStatus::Missed,
                            &format!(
                                "missed: due at {} while the scheduler was not running; not caught up",
                                job.next_run.map(|t| t.to_string()).unwrap_or_default()
                            ),
                        )?);
                    }
                    if job.next_run.is_none_or(|due| due <= now) {
                        match next_cron_run(job, now) {
                            Ok(next) => job.next_run = Some(next),
                            Err(e) => disable_broken(job, &e),
                        }
                    }
                }
            }
        }
        Ok(())
    })?;
    for record in &missed {
        store.append_run(record)?;
    }
    Ok(())
}

/// The scheduler: recovers (retrying until it succeeds), then fires due jobs until `shutdown`
/// is cancelled, sleeping at most [`MAX_SLEEP`] between looks at the store. On shutdown the
/// running firings are cancelled and awaited, so each ends with a final record.
///
/// The daemon calls it once, after taking its instance lock, unless `--no-scheduler` is given.
pub async fn run_scheduler(
    store: JobStore,
    executor: Arc<dyn JobExecutor>,
    shutdown: CancellationToken,
) {
    run_scheduler_with(store, executor, shutdown, SchedulerOptions::default()).await;
}

/// Scheduler tuning; the defaults are the reference's.
#[derive(Debug, Clone, Copy)]
pub struct SchedulerOptions {
    /// Longest sleep between looks at the store (tests shorten it to see edits quickly).
    pub max_sleep: Duration,
}

impl Default for SchedulerOptions {
    fn default() -> Self {
        SchedulerOptions {
            max_sleep: MAX_SLEEP,
        }
    }
}

/// [`run_scheduler`] with explicit options.
pub async fn run_scheduler_with(
    store: JobStore,
    executor: Arc<dyn JobExecutor>,
    shutdown: CancellationToken,
    options: SchedulerOptions,
) {
    let max_sleep = options.max_sleep.min(MAX_SLEEP);
    loop {
        match recover(&store, Timestamp::now()) {
            Ok(()) => break,
            Err(e) => {
                tracing::warn!(error = %e, "scheduler start-up recovery failed; retrying");
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(RECOVERY_RETRY) => {}
                }
            }
        }
    }
    let running: Arc<Mutex<RunningSet>> = Arc::default();
    let mut tasks = JoinSet::new();
    let store = Arc::new(store);
    loop {
        while tasks.try_join_next().is_some() {}
        let now = Timestamp::now();
        let sleep = match tick(&store, &running, now, max_sleep) {
            Ok(tick) => {
                for job in tick.due {
                    let store = Arc::clone(&store);
                    let executor = Arc::clone(&executor);
                    let running = Arc::clone(&running);
                    let cancel = shutdown.child_token();
                    tasks.spawn(async move {
                        if let Err(e) = fire(&store, executor.as_ref(), &job, false, cancel).await {
                            tracing::warn!(job = %job.id, error = %e, "recording a job run failed");
                        }
                        if let Ok(mut set) = running.lock() {
                            set.finish(&job.id);
                        }
                    });
                }
                tick.sleep
            }
            Err(e) => {
                tracing::warn!(error = %e, "scheduler tick failed");
                max_sleep
            }
        };
        tokio::select! {
            () = shutdown.cancelled() => break,
            () = tokio::time::sleep(sleep) => {}
            // A finished firing may have changed what is due (a one-shot job disabled).
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    while tasks.join_next().await.is_some() {}
}

/// A job whose schedule no longer parses (a hand-edited file, a zone removed from the system
/// database) stops firing instead of stalling every other job; `gg job show` reveals it paused.
fn disable_broken(job: &mut Job, error: &str) {
    tracing::warn!(job = %job.id, error = %error, "job schedule is invalid; pausing the job");
    job.enabled = false;
    job.next_run = None;
}

/// Jobs currently executing, and which of them already have their one `skipped` record.
#[derive(Default)]
struct RunningSet {
    running: HashSet<String>,
    skip_recorded: HashSet<String>,
}

impl RunningSet {
    fn finish(&mut self, id: &str) {
        self.running.remove(id);
        self.skip_recorded.remove(id);
    }
}

struct Tick {
    due: Vec<Job>,
    sleep: Duration,
}

/// One look at the store: advances `next_run` of every due job and persists that before any
/// dispatch (so a crash cannot fire the same slot twice), collects the jobs to start, and
/// records one `skipped` run for a job still running from its previous firing.
fn tick(
    store: &JobStore,
    running: &Mutex<RunningSet>,
    now: Timestamp,
    max_sleep: Duration,
) -> Result<Tick, String> {
    let mut skipped = Vec::new();
    let (due, next_due) = store.update(|jobs| {
        let mut set = running
            .lock()
            .map_err(|_| "scheduler state poisoned".to_string())?;
        let mut due = Vec::new();
        let mut next_due: Option<Timestamp> = None;
        for job in jobs.iter_mut().filter(|j| j.enabled) {
            let Some(at) = job.next_run else { continue };
            if at > now {
                next_due = Some(next_due.map_or(at, |n| n.min(at)));
                continue;
            }
            job.next_run = match job.kind {
                // A job late by several periods fires once; the slots in between are not caught up.
                Kind::Cron => match next_cron_run(job, now) {
                    Ok(next) => Some(next),
                    Err(e) => {
                        disable_broken(job, &e);
                        continue;
                    }
                },
                Kind::Once => None,
            };
            if let Some(next) = job.next_run {
                next_due = Some(next_due.map_or(next, |n| n.min(next)));
            }
            if set.running.contains(&job.id) {
                if set.skip_recorded.insert(job.id.clone()) {
                    skipped.push(RunRecord::instant(
                        job,
                        now,
                        RunStatus::Skipped,
                        "skipped: the previous run of this job is still running",
                    )?);
                }
                continue;
            }
            due.push(job.clone());
        }
        Ok((due, next_due))
    })?;
    // Marked running only once the advanced schedule is on disk: a failed write dispatches nothing.
    if let Ok(mut set) = running.lock() {
        set.running.extend(due.iter().map(|j| j.id.clone()));
    }
    for record in &skipped {
        store.append_run(record)?;
    }
    let sleep = next_due
        .map(|at| Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO))
        .unwrap_or(max_sleep)
        .min(max_sleep);
    Ok(Tick { due, sleep })
}
