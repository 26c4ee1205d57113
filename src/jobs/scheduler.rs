//! The scheduler loop the daemon runs, and [`fire`], which `gg job run` shares.

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
/// is cancelled. Between looks at the store it sleeps on [`Wakeups`]: until the next due time on
/// the wall clock, or until the job store changes (a job added, removed, paused or resumed by
/// the CLI or the daemon) or the system clock is set, whichever comes first. There is no polling
/// interval. On shutdown the running firings are cancelled and awaited, so each ends with a
/// final record.
///
/// The daemon calls it once, after taking its instance lock, unless `--no-scheduler` is given.
pub async fn run_scheduler(
    store: JobStore,
    executor: Arc<dyn JobExecutor>,
    shutdown: CancellationToken,
) {
    run_scheduler_with(store, executor, shutdown, SchedulerOptions::default()).await;
}

/// Why the scheduler woke up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The first look, at start.
    Start,
    /// The due time it slept towards has come.
    Due,
    /// The job store was replaced (an edit by any process).
    StoreChanged,
    /// The system clock was set: due times measured against it must be looked at again.
    ClockChanged,
    /// A firing finished (a one-shot job is now disabled).
    FiringDone,
}

/// One sleep of the scheduler, reported to [`SchedulerOptions::observer`]: what woke it last,
/// and the due time it now sleeps towards (`None`: nothing is scheduled).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Armed {
    pub woke_by: Wake,
    pub next_due: Option<Timestamp>,
}

pub type WakeFuture<'a> = Pin<Box<dyn Future<Output = Wake> + Send + 'a>>;

/// What the scheduler sleeps on. [`SystemWakeups`] in production; tests inject their own.
pub trait Wakeups: Send {
    /// Returns at `due` (wall clock; `None`: never) or earlier when the store or the clock
    /// changes. May return spuriously; the scheduler then simply looks again.
    fn wait(&mut self, due: Option<Timestamp>) -> WakeFuture<'_>;
}

/// Scheduler wiring; the defaults are production's.
#[derive(Default)]
pub struct SchedulerOptions {
    /// Receives every [`Armed`] (tests use it to see re-arming as an event, not a timing).
    pub observer: Option<tokio::sync::mpsc::UnboundedSender<Armed>>,
    /// Replaces [`SystemWakeups`].
    pub wakeups: Option<Box<dyn Wakeups>>,
}

/// [`run_scheduler`] with explicit options.
pub async fn run_scheduler_with(
    store: JobStore,
    executor: Arc<dyn JobExecutor>,
    shutdown: CancellationToken,
    options: SchedulerOptions,
) {
    // Watching starts before recovery, so an edit made meanwhile still wakes the loop.
    let mut wakeups: Box<dyn Wakeups> = match options.wakeups {
        Some(w) => w,
        None => Box::new(SystemWakeups::new(store.dir())),
    };
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
    let mut woke_by = Wake::Start;
    loop {
        while tasks.try_join_next().is_some() {}
        let now = Timestamp::now();
        let next_due = match tick(&store, &running, now) {
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
                tick.next_due
            }
            Err(e) => {
                // An unreadable store is looked at again when it changes, or after a pause.
                tracing::warn!(error = %e, "scheduler tick failed");
                Some(
                    now.checked_add(jiff::SignedDuration::from_secs(5))
                        .unwrap_or(now),
                )
            }
        };
        if let Some(observer) = &options.observer {
            let _ = observer.send(Armed { woke_by, next_due });
        }
        woke_by = tokio::select! {
            () = shutdown.cancelled() => break,
            wake = wakeups.wait(next_due) => wake,
            // A finished firing may have changed what is due (a one-shot job disabled).
            Some(_) = tasks.join_next(), if !tasks.is_empty() => Wake::FiringDone,
        };
    }
    while tasks.join_next().await.is_some() {}
}

/// Production wake-ups (Linux): a `CLOCK_REALTIME` timerfd armed at the absolute due time with
/// `TFD_TIMER_CANCEL_ON_SET`, so it fires at the wall-clock time even across suspend and reports
/// a clock that is set; and inotify on the store directory, so an edit by any process (the CLI
/// replaces `jobs.json` by rename) wakes the scheduler at once.
///
/// Should either facility be unavailable, the scheduler still works with what remains: without
/// the timer it sleeps on tokio's monotonic clock; without inotify it looks at the store again
/// at least every [`DEGRADED_LOOK`] (logged once, at start).
pub struct SystemWakeups {
    timer: Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>,
    watch: Option<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>,
}

/// How often the store is looked at when its directory cannot be watched.
pub const DEGRADED_LOOK: Duration = Duration::from_secs(30);

impl SystemWakeups {
    pub fn new(store_dir: &std::path::Path) -> SystemWakeups {
        use rustix::fs::inotify;
        use rustix::time::{TimerfdClockId, TimerfdFlags, timerfd_create};
        let timer = timerfd_create(
            TimerfdClockId::Realtime,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )
        .map_err(std::io::Error::from)
        .and_then(register);
        let watch = inotify::init(inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC)
            .and_then(|fd| {
                inotify::add_watch(
                    &fd,
                    store_dir,
                    inotify::WatchFlags::MOVED_TO
                        | inotify::WatchFlags::CLOSE_WRITE
                        | inotify::WatchFlags::DELETE,
                )
                .map(|_| fd)
            })
            .map_err(std::io::Error::from)
            .and_then(register);
        if let Err(e) = &timer {
            tracing::warn!(error = %e, "no realtime timer; the scheduler sleeps on the monotonic clock");
        }
        if let Err(e) = &watch {
            tracing::warn!(error = %e, "cannot watch the job store; edits are seen within 30 s");
        }
        SystemWakeups {
            timer: timer.ok(),
            watch: watch.ok(),
        }
    }
}

/// Registers a descriptor with tokio's reactor. `AsyncFd::new` is deprecated because a borrowed
/// descriptor could be closed while registered; here the `AsyncFd` owns the `OwnedFd`, so it
/// is deregistered before it is closed, and the safe constructor is sound.
#[allow(deprecated)]
fn register(
    fd: std::os::fd::OwnedFd,
) -> std::io::Result<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>> {
    tokio::io::unix::AsyncFd::new(fd)
}

/// Arms `timer` at `due` (absolute, realtime, cancelled when the clock is set), or disarms it.
fn arm(timer: &std::os::fd::OwnedFd, due: Option<Timestamp>) -> std::io::Result<()> {
    use rustix::time::{Itimerspec, TimerfdTimerFlags, Timespec, timerfd_settime};
    let value = match due {
        // The epoch itself would read as "disarmed"; anything that early is due now anyway.
        Some(at) => Timespec {
            tv_sec: at.as_second().max(0),
            tv_nsec: i64::from(at.subsec_nanosecond().max(0)),
        },
        None => Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
    };
    let value = if due.is_some() && value.tv_sec == 0 && value.tv_nsec == 0 {
        Timespec {
            tv_sec: 0,
            tv_nsec: 1,
        }
    } else {
        value
    };
    let spec = Itimerspec {
        it_interval: Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: value,
    };
    timerfd_settime(
        timer,
        TimerfdTimerFlags::ABSTIME | TimerfdTimerFlags::CANCEL_ON_SET,
        &spec,
    )
    .map(|_| ())
    .map_err(std::io::Error::from)
}

impl Wakeups for SystemWakeups {
    fn wait(&mut self, due: Option<Timestamp>) -> WakeFuture<'_> {
        Box::pin(async move {
            let timer_armed = match &self.timer {
                Some(timer) => match arm(timer.get_ref(), due) {
                    Ok(()) => due.is_some(),
                    Err(e) => {
                        tracing::warn!(error = %e, "arming the scheduler timer failed");
                        false
                    }
                },
                None => false,
            };
            // Without a realtime timer (or when arming failed), the monotonic fallback.
            let fallback = if timer_armed {
                None
            } else {
                due.map(|at| {
                    Duration::try_from(at.duration_since(Timestamp::now()))
                        .unwrap_or(Duration::ZERO)
                })
            };
            let fallback = match (&self.watch, fallback) {
                (Some(_), f) => f,
                (None, Some(f)) => Some(f.min(DEGRADED_LOOK)),
                (None, None) => Some(DEGRADED_LOOK),
            };
            let timer = self.timer.as_ref().filter(|_| timer_armed);
            let watch = self.watch.as_ref();
            tokio::select! {
                wake = timer_fired(timer) => wake,
                wake = store_changed(watch) => wake,
                () = async {
                    match fallback {
                        Some(d) => tokio::time::sleep(d).await,
                        None => std::future::pending().await,
                    }
                } => Wake::Due,
            }
        })
    }
}

async fn timer_fired(timer: Option<&tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>) -> Wake {
    let Some(timer) = timer else {
        return std::future::pending().await;
    };
    loop {
        let Ok(mut ready) = timer.readable().await else {
            return std::future::pending().await;
        };
        let mut buf = [0u8; 8];
        match rustix::io::read(timer.get_ref(), &mut buf) {
            Ok(_) => return Wake::Due,
            Err(rustix::io::Errno::CANCELED) => return Wake::ClockChanged,
            Err(rustix::io::Errno::AGAIN) => ready.clear_ready(),
            Err(e) => {
                tracing::warn!(error = %e, "reading the scheduler timer failed");
                return Wake::Due;
            }
        }
    }
}

async fn store_changed(watch: Option<&tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>>) -> Wake {
    use rustix::fs::inotify;
    let Some(watch) = watch else {
        return std::future::pending().await;
    };
    loop {
        let Ok(mut ready) = watch.readable().await else {
            return std::future::pending().await;
        };
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
        let mut reader = inotify::Reader::new(watch.get_ref(), &mut buf);
        let mut jobs_changed = false;
        loop {
            match reader.next() {
                Ok(event) => {
                    // Only the job list matters; run-log appends and the lock file do not.
                    let name = event.file_name().map(|n| n.to_bytes());
                    jobs_changed |= name == Some(b"jobs.json".as_slice())
                        || event.events().contains(inotify::ReadFlags::QUEUE_OVERFLOW);
                }
                Err(rustix::io::Errno::AGAIN) => {
                    ready.clear_ready();
                    break;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "reading job store events failed");
                    jobs_changed = true;
                    break;
                }
            }
        }
        if jobs_changed {
            return Wake::StoreChanged;
        }
    }
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
    next_due: Option<Timestamp>,
}

/// One look at the store: advances `next_run` of every due job and persists that before any
/// dispatch (so a crash cannot fire the same slot twice), collects the jobs to start, and
/// records one `skipped` run for a job still running from its previous firing.
fn tick(store: &JobStore, running: &Mutex<RunningSet>, now: Timestamp) -> Result<Tick, String> {
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
    Ok(Tick { due, next_due })
}
