//! The daemon runtime: open sessions, runs, their event logs and pending approvals, and the
//! run limits (docs/daemon-protocol.md).
//!
//! A session is kept open between runs; each run builds its own [`Conversation`] over it because
//! the approval mode is chosen per run (`requireApproval`). The run task owns the session while it
//! runs and hands it back when it ends; a run that panics loses it, and the next call reopens the
//! file from disk.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use policies::{Mode, Terminal};
use serde_json::{Map, Value, json};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use super::rpc::{AppError, RpcError};
use crate::agent::approval::AnswerFuture;
use crate::agent::{
    AgentEvent, Answer, ApprovalPrompt, Approver, MessageQueue, NobodyToAsk, TurnError,
};
use crate::app::config::{Config, Overrides};
use crate::app::service::{Conversation, ServiceOptions, Submitted};
use crate::session::{self, Session, SessionError, Transcript, paths};
use tools::registry::SandboxSetting;

mod events;
mod logs;
pub mod memory;
mod runs;
mod sessions;

pub use events::Run;
use events::*;
use runs::*;
use sessions::*;

/// Events kept per run; a client asking for older ones gets `event_history_expired`.
pub const EVENT_BUFFER: usize = 8192;
/// Completed runs are kept this long for `run.get`/`run.wait`...
pub const COMPLETED_RUN_RETENTION: Duration = Duration::from_secs(30 * 60);
/// ...and at most this many of them.
pub const COMPLETED_RUN_LIMIT: usize = 128;
/// Open sessions beyond this are closed, least recently used first (never one with a run).
pub const OPEN_SESSION_LIMIT: usize = 64;
/// How long shutdown waits for cancelled runs to finish writing.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What the daemon was started with.
#[derive(Debug, Clone)]
pub struct Settings {
    pub cwd: PathBuf,
    pub home: PathBuf,
    pub session_root: PathBuf,
    pub config: Config,
    pub overrides: Overrides,
    pub sandbox: SandboxSetting,
    pub skills: bool,
    pub context_files: bool,
    /// `--no-memory`: no memory tools, blocks or profile in any run, and `memory.*` refused.
    pub no_memory: bool,
    pub max_active_runs: usize,
    pub run_timeout: Duration,
    /// Tools of the MCP servers the daemon connected at start-up.
    pub external_tools: Vec<std::sync::Arc<dyn crate::agent::Tool>>,
    /// `GGD_TEST_HOOKS=1`: a run whose prompt is [`TEST_PANIC_PROMPT`] panics inside its task.
    pub test_hooks: bool,
}

/// With test hooks on, a run with exactly this prompt panics (tests of the panicking-run path).
pub const TEST_PANIC_PROMPT: &str = "__ggd_test_panic__";

#[derive(Default)]
struct State {
    sessions: HashMap<String, Slot>,
    runs: HashMap<String, Arc<Run>>,
    clock: u64,
}

/// The daemon's application state, shared by every transport.
pub struct Runtime {
    settings: Settings,
    state: Mutex<State>,
    shutdown: CancellationToken,
    workers: watch::Sender<usize>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves plain data behind; keep serving.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn now_ms() -> i64 {
    session::time::now_unix_millis()
}

fn new_id() -> Result<String, RpcError> {
    session::new_id().map_err(|e| RpcError::app(AppError::Other, format!("random id: {e}")))
}

fn session_error(error: SessionError) -> RpcError {
    match &error {
        SessionError::NotFound { .. } => {
            RpcError::app(AppError::SessionNotFound, error.to_string())
        }
        e if e.is_retryable_conflict() => {
            RpcError::app(AppError::SessionConflict, error.to_string())
        }
        SessionError::Invalid(_) => RpcError::app(AppError::InvalidAction, error.to_string()),
        _ => RpcError::app(AppError::Other, error.to_string()),
    }
}

/// Counts a run task while it lives, so shutdown can wait for it.
struct WorkerGuard(watch::Sender<usize>);

impl WorkerGuard {
    fn new(workers: &watch::Sender<usize>) -> WorkerGuard {
        workers.send_modify(|n| *n += 1);
        WorkerGuard(workers.clone())
    }
}

impl Drop for WorkerGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// Session ids only: anything that could be a path is refused.
fn check_session_id(id: &str) -> Result<(), RpcError> {
    let plausible = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if plausible {
        Ok(())
    } else {
        Err(RpcError::invalid_params(
            "sessionId must be a session id (paths are refused)",
        ))
    }
}

impl Runtime {
    pub fn new(settings: Settings) -> Arc<Runtime> {
        Arc::new(Runtime {
            settings,
            state: Mutex::new(State::default()),
            shutdown: CancellationToken::new(),
            workers: watch::Sender::new(0),
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Cancelled when the daemon starts shutting down.
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// Whether `tools.computer` is enabled, so runs get the computer tools.
    pub fn computer_tools_enabled(&self) -> bool {
        self.settings.config.tools.computer
    }

    /// Providers whose selection or key is unusable (`system.info`'s `degradedProviders`).
    pub fn degraded_providers(&self) -> Vec<String> {
        match self.select() {
            Ok(selection) if !selection.api_key.is_empty() => Vec::new(),
            Ok(selection) => vec![selection.provider],
            Err(_) => vec![self.default_label()],
        }
    }

    fn select(&self) -> Result<crate::app::config::Selection, String> {
        let s = &self.settings;
        s.config
            .select(&s.home, s.overrides.selection.as_deref(), &s.overrides)
    }

    fn default_label(&self) -> String {
        self.settings
            .overrides
            .selection
            .clone()
            .unwrap_or_else(|| self.settings.config.default_selection.clone())
    }

    fn project_dir(&self) -> Result<PathBuf, RpcError> {
        paths::project_dir(&self.settings.session_root, &self.settings.cwd).map_err(session_error)
    }

    // ---- sessions -------------------------------------------------------------------------
}

impl Runtime {
    /// Shutdown: cancel every run, wait for the run tasks to write their last entries.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        let runs: Vec<Arc<Run>> = lock(&self.state).runs.values().cloned().collect();
        for run in &runs {
            run.cancel();
        }
        let mut workers = self.workers.subscribe();
        let idle = workers.wait_for(|n| *n == 0);
        if tokio::time::timeout(SHUTDOWN_GRACE, idle).await.is_err() {
            tracing::warn!("runs did not finish within the shutdown grace period");
        }
    }
}

/// `30m0s`-style durations for messages.
pub use tools::duration::clock as format_duration;

/// Parses `--run-timeout`: `90s`, `30m`, `1h30m`, `500ms`, or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let grammar = tools::duration::Grammar {
        bare_seconds: true,
        millis: true,
        saturate: true,
        ..Default::default()
    };
    tools::duration::parse(text, grammar)
        .map_err(|_| format!("invalid duration {text:?} (use e.g. 30m, 90s, 500ms)"))
}

/// A run's own network parameters (`run.start`'s `network` and `allowDomains`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunNetwork {
    /// `off`, `on` or `allow-list`; `None`: the daemon's.
    pub mode: Option<String>,
    /// Further hosts for the allow-list.
    pub allow_domains: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_print() {
        for (text, want) in [
            ("30m", 1_800_000),
            ("90s", 90_000),
            ("500ms", 500),
            ("1h30m", 5_400_000),
            ("5", 5000),
        ] {
            assert_eq!(
                parse_duration(text).map(|d| d.as_millis()),
                Ok(want),
                "{text}"
            );
        }
        for bad in ["", "m", "5x", "0s", "-1s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(format_duration(Duration::from_secs(1800)), "30m0s");
        assert_eq!(format_duration(Duration::from_millis(300)), "300ms");
    }

    #[test]
    fn session_ids_refuse_paths() {
        for ok in ["0123456789abcdef", "1700000000000000000"] {
            assert!(check_session_id(ok).is_ok());
        }
        for bad in ["", "../x", "/etc/passwd", "a/b", "x.jsonl", "a\\b"] {
            assert!(check_session_id(bad).is_err(), "{bad}");
        }
    }

    /// A current-thread runtime and a run of its own, for the event-log tests.
    fn runtime_and_run() -> (tokio::runtime::Runtime, Run) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let run = Run::new(
            "r".into(),
            "s".into(),
            Arc::new(MessageQueue::new()),
            "p".into(),
            0,
        );
        (rt, run)
    }

    #[test]
    fn event_log_waits_and_expires() {
        let (rt, run) = runtime_and_run();
        for _ in 0..(EVENT_BUFFER + 10) {
            run.emit("agent_event", json!({}), false);
        }
        let stop = CancellationToken::new();
        let expired = rt.block_on(run.wait(0, &stop)).unwrap_err();
        assert_eq!(expired.code, AppError::EventHistoryExpired.code());
        let waited = rt.block_on(run.wait(10, &stop)).unwrap();
        assert_eq!(waited.events.len(), EVENT_BUFFER);
        assert_eq!(waited.first_sequence, 11);
        assert!(!waited.done);
        // The result is the JSON the tree would have given.
        let result: Value = serde_json::from_str(&waited.result_json()).unwrap();
        assert_eq!(result["events"].as_array().unwrap().len(), EVENT_BUFFER);
        assert_eq!(result["events"][0]["sequence"], 11);
        assert_eq!(result["done"], false);
        run.emit("run_completed", json!({}), true);
        let waited = rt
            .block_on(run.wait((EVENT_BUFFER + 10) as u64, &stop))
            .unwrap();
        assert_eq!(waited.events.len(), 1);
        assert!(waited.done);
        let result: Value = serde_json::from_str(&waited.result_json()).unwrap();
        assert_eq!(result["events"][0]["type"], "run_completed");
        assert_eq!(result["done"], true);
        assert!(run.approve("nope", true, false).is_err());
    }

    #[test]
    fn a_backlog_read_in_parts_is_every_event_once_and_done_only_with_the_last() {
        let (rt, run) = runtime_and_run();
        for i in 0..100 {
            run.emit("agent_event", json!({"n": i}), false);
        }
        run.emit("run_completed", json!({"big": "x".repeat(5000)}), true);
        let stop = CancellationToken::new();
        let budget = 10 * lock(&run.log).events[0].len();
        let mut after = 0;
        let mut parts = Vec::new();
        loop {
            let part = rt.block_on(run.wait_at_most(after, budget, &stop)).unwrap();
            assert_eq!(
                part.first_sequence,
                after + 1,
                "each part starts where the last ended"
            );
            let size: usize = part.events.iter().map(|e| e.len()).sum();
            assert!(
                size <= budget || part.events.len() == 1,
                "{size} bytes in a part"
            );
            after += part.events.len() as u64;
            parts.push(part.events.len());
            if part.done {
                break;
            }
        }
        // About ten events fit in a part; the final event is larger than a part and goes alone.
        assert!(parts.len() > 10 && parts[0] > 1, "{parts:?}");
        assert_eq!(parts.last(), Some(&1));
        assert_eq!(after, 101);
    }
}
