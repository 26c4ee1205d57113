//! The scheduler sleeps until the next due time and is re-armed by events, not by polling: an
//! edit of the job store (add, pause, resume, remove) wakes it at once, a set clock wakes it,
//! and a job added with `--in 2s` fires when it is due.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use gg::jobs::manage::{AddArgs, add_job, pause, remove, resume};
use gg::jobs::scheduler::{ExecutionFuture, WakeFuture};
use gg::jobs::{
    Armed, Execution, Job, JobExecutor, JobStore, RunStatus, SchedulerOptions, SystemWakeups, Wake,
    Wakeups, run_scheduler_with,
};
use jiff::Timestamp;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio_util::sync::CancellationToken;

/// Generous: every wait below ends on an event; this only bounds a broken build.
const EVENT_TIMEOUT: Duration = Duration::from_secs(30);

/// Reports the wall-clock time of each firing.
struct Firings(UnboundedSender<(String, Timestamp)>);

impl JobExecutor for Firings {
    fn execute<'a>(
        &'a self,
        job: &'a Job,
        _session_name: String,
        _cancel: CancellationToken,
    ) -> ExecutionFuture<'a> {
        let _ = self.0.send((job.id.clone(), Timestamp::now()));
        Box::pin(async {
            Execution {
                status: RunStatus::Ok,
                summary: "done".into(),
                session_path: String::new(),
            }
        })
    }
}

fn args(name: &str, in_: &str) -> AddArgs {
    AddArgs {
        name: name.to_string(),
        in_: Some(in_.to_string()),
        timezone: Some("UTC".to_string()),
        prompt: vec!["do it".to_string()],
        ..AddArgs::default()
    }
}

async fn next_armed(
    rx: &mut UnboundedReceiver<Armed>,
    what: &str,
    want: impl Fn(&Armed) -> bool,
) -> Armed {
    let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(armed)) if want(&armed) => return armed,
            Ok(Some(_)) => continue,
            Ok(None) => panic!("{what}: the scheduler stopped"),
            Err(_) => panic!("{what}: not re-armed"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_store_edit_re_arms_the_sleeping_scheduler() {
    let tmp = support::fixture_dir();
    let store = JobStore::open(&tmp.path().join("scheduler")).unwrap();
    let (armed_tx, mut armed) = unbounded_channel();
    let (fired_tx, _fired) = unbounded_channel();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(run_scheduler_with(
        store.clone(),
        Arc::new(Firings(fired_tx)),
        shutdown.clone(),
        SchedulerOptions {
            observer: Some(armed_tx),
            wakeups: None,
        },
    ));
    let start = next_armed(&mut armed, "start", |_| true).await;
    assert_eq!(
        start,
        Armed {
            woke_by: Wake::Start,
            next_due: None
        },
        "nothing scheduled: no wake-up at all"
    );

    let job = add_job(&store, &args("later", "1h"), tmp.path(), Timestamp::now()).unwrap();
    let due = job.next_run;
    next_armed(&mut armed, "add", |a| {
        a.woke_by == Wake::StoreChanged && a.next_due == due
    })
    .await;
    pause(&store, &job.id).unwrap();
    next_armed(&mut armed, "pause", |a| {
        a.woke_by == Wake::StoreChanged && a.next_due.is_none()
    })
    .await;
    let resumed = resume(&store, &job.id, Timestamp::now()).unwrap();
    next_armed(&mut armed, "resume", |a| {
        a.woke_by == Wake::StoreChanged && a.next_due == resumed.next_run
    })
    .await;
    remove(&store, &job.id).unwrap();
    next_armed(&mut armed, "remove", |a| {
        a.woke_by == Wake::StoreChanged && a.next_due.is_none()
    })
    .await;
    shutdown.cancel();
    task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_added_with_in_2s_fires_when_due() {
    let tmp = support::fixture_dir();
    let store = JobStore::open(&tmp.path().join("scheduler")).unwrap();
    let (armed_tx, mut armed) = unbounded_channel();
    let (fired_tx, mut fired) = unbounded_channel();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(run_scheduler_with(
        store.clone(),
        Arc::new(Firings(fired_tx)),
        shutdown.clone(),
        SchedulerOptions {
            observer: Some(armed_tx),
            wakeups: None,
        },
    ));
    // The scheduler is asleep with nothing to do before the job exists.
    next_armed(&mut armed, "start", |_| true).await;
    let job = add_job(&store, &args("soon", "2s"), tmp.path(), Timestamp::now()).unwrap();
    let due = job.next_run.unwrap();
    let (id, at) = tokio::time::timeout(EVENT_TIMEOUT, fired.recv())
        .await
        .expect("the job fired")
        .unwrap();
    assert_eq!(id, job.id);
    assert!(at >= due, "never early: fired {at}, due {due}");
    // The timer fires at the due time; the bound only allows for a loaded machine. A polling
    // scheduler (the old 30 s cap) misses it by up to 30 s.
    let late = at.duration_since(due);
    assert!(
        late < jiff::SignedDuration::from_secs(5),
        "fired {late:?} after its time"
    );
    shutdown.cancel();
    task.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_system_timer_is_absolute_wall_clock_and_the_store_watch_wakes_it() {
    let tmp = support::fixture_dir();
    let store = JobStore::open(&tmp.path().join("scheduler")).unwrap();
    let mut wakeups = SystemWakeups::new(store.dir());
    let past = Timestamp::now() - jiff::SignedDuration::from_secs(5);
    assert_eq!(
        wakeups.wait(Some(past)).await,
        Wake::Due,
        "a past due time fires at once"
    );
    let soon = Timestamp::now() + jiff::SignedDuration::from_millis(300);
    assert_eq!(wakeups.wait(Some(soon)).await, Wake::Due);
    assert!(
        Timestamp::now() >= soon,
        "the wall-clock due time was reached"
    );
    // Nothing due: only an edit wakes it. The run log and the lock file do not count.
    let edit = {
        let store = store.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            store
                .update(|jobs| {
                    jobs.clear();
                    Ok(())
                })
                .unwrap();
            std::fs::write(store.dir().join("jobs.json"), "[]\n").unwrap();
        })
    };
    let woke = tokio::time::timeout(EVENT_TIMEOUT, wakeups.wait(None))
        .await
        .unwrap();
    assert_eq!(woke, Wake::StoreChanged);
    edit.await.unwrap();
}

/// Wake-ups driven by the test: each `wait` reports the due time it was armed with, then
/// returns the next scripted reason.
struct Scripted {
    armed: UnboundedSender<Option<Timestamp>>,
    wakes: UnboundedReceiver<Wake>,
}

impl Wakeups for Scripted {
    fn wait(&mut self, due: Option<Timestamp>) -> WakeFuture<'_> {
        let _ = self.armed.send(due);
        Box::pin(async move { self.wakes.recv().await.unwrap_or(Wake::Due) })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_change_re_arms_from_the_store() {
    let tmp = support::fixture_dir();
    let store = JobStore::open(&tmp.path().join("scheduler")).unwrap();
    let job = add_job(&store, &args("later", "1h"), tmp.path(), Timestamp::now()).unwrap();
    let (armed_tx, mut armed) = unbounded_channel();
    let (due_tx, mut dues) = unbounded_channel();
    let (wake_tx, wakes) = unbounded_channel();
    let (fired_tx, _fired) = unbounded_channel();
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(run_scheduler_with(
        store.clone(),
        Arc::new(Firings(fired_tx)),
        shutdown.clone(),
        SchedulerOptions {
            observer: Some(armed_tx),
            wakeups: Some(Box::new(Scripted {
                armed: due_tx,
                wakes,
            })),
        },
    ));
    assert_eq!(dues.recv().await.unwrap(), job.next_run);
    wake_tx.send(Wake::ClockChanged).unwrap();
    let again = next_armed(&mut armed, "clock", |a| a.woke_by == Wake::ClockChanged).await;
    assert_eq!(
        again.next_due, job.next_run,
        "the due time is read again from the store"
    );
    assert_eq!(
        dues.recv().await.unwrap(),
        job.next_run,
        "and the timer re-armed with it"
    );
    shutdown.cancel();
    task.await.unwrap();
}
