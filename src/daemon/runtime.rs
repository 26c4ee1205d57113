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
use crate::tools::registry::SandboxSetting;

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
    pub max_active_runs: usize,
    pub run_timeout: Duration,
    /// Tools of the MCP servers the daemon connected at start-up.
    pub external_tools: Vec<std::sync::Arc<dyn crate::agent::Tool>>,
    /// `GGD_TEST_HOOKS=1`: a run whose prompt is [`TEST_PANIC_PROMPT`] panics inside its task.
    pub test_hooks: bool,
}

/// With test hooks on, a run with exactly this prompt panics (tests of the panicking-run path).
pub const TEST_PANIC_PROMPT: &str = "__ggd_test_panic__";

/// What every open session has, whatever its state.
struct Open {
    path: PathBuf,
    /// `None` while a run or a session operation has it out.
    session: Arc<tokio::sync::Mutex<Option<Session>>>,
    last_used: u64,
}

/// One open session: idle, or held by exactly one run. A transition consumes the old state, so
/// a run id exists exactly while the session is running.
enum Slot {
    Idle(Open),
    Running { open: Open, run_id: String },
}

impl Slot {
    fn new(session: Session, last_used: u64) -> Slot {
        Slot::Idle(Open {
            path: session.path().to_path_buf(),
            session: Arc::new(tokio::sync::Mutex::new(Some(session))),
            last_used,
        })
    }

    fn open(&self) -> &Open {
        match self {
            Slot::Idle(open) | Slot::Running { open, .. } => open,
        }
    }

    fn open_mut(&mut self) -> &mut Open {
        match self {
            Slot::Idle(open) | Slot::Running { open, .. } => open,
        }
    }

    fn run_id(&self) -> Option<&str> {
        match self {
            Slot::Idle(_) => None,
            Slot::Running { run_id, .. } => Some(run_id),
        }
    }

    fn is_running(&self) -> bool {
        matches!(self, Slot::Running { .. })
    }

    /// Idle → running; a running slot keeps its run.
    fn start(self, run_id: String) -> Slot {
        match self {
            Slot::Idle(open) => Slot::Running { open, run_id },
            running @ Slot::Running { .. } => running,
        }
    }

    /// Running → idle.
    fn finish(self) -> Slot {
        match self {
            Slot::Running { open, .. } | Slot::Idle(open) => Slot::Idle(open),
        }
    }

    /// The session cell, the active run and the file, as the session operations need them.
    fn parts(
        &self,
    ) -> (
        Arc<tokio::sync::Mutex<Option<Session>>>,
        Option<String>,
        PathBuf,
    ) {
        let open = self.open();
        (
            Arc::clone(&open.session),
            self.run_id().map(str::to_string),
            open.path.clone(),
        )
    }
}

impl State {
    /// Applies a transition to the slot of `id`, if it is open.
    fn transition(&mut self, id: &str, step: impl FnOnce(Slot) -> Slot) {
        if let Some((key, slot)) = self.sessions.remove_entry(id) {
            self.sessions.insert(key, step(slot));
        }
    }
}

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

/// The events of one run and whether it is over.
struct EventLog {
    events: VecDeque<Value>,
    /// Sequence of `events[0]` (or of the next event when empty).
    first: u64,
    next: u64,
    done: bool,
    completed_at: Option<i64>,
    completed_instant: Option<Instant>,
}

struct Pending {
    request: Value,
    /// Dangerous calls are answered once; "for the session" is refused for them.
    dangerous: bool,
    answer: oneshot::Sender<Answer>,
}

/// One run: its events, approvals and cancellation.
pub struct Run {
    pub id: String,
    pub session_id: String,
    started_at: i64,
    /// The prompt that started the run and how many messages the session's active path held
    /// before it: a client that reattaches (a reloaded page) shows those messages and the
    /// prompt, then rebuilds the rest from the replayed events.
    prompt: String,
    messages_before: usize,
    cancel: CancellationToken,
    queue: Arc<MessageQueue>,
    log: Mutex<EventLog>,
    changed: watch::Sender<u64>,
    approvals: Mutex<HashMap<String, Pending>>,
    timed_out: AtomicBool,
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

impl Run {
    fn new(
        id: String,
        session_id: String,
        queue: Arc<MessageQueue>,
        prompt: String,
        messages_before: usize,
    ) -> Run {
        Run {
            id,
            session_id,
            started_at: now_ms(),
            prompt,
            messages_before,
            cancel: CancellationToken::new(),
            queue,
            log: Mutex::new(EventLog {
                events: VecDeque::new(),
                first: 1,
                next: 1,
                done: false,
                completed_at: None,
                completed_instant: None,
            }),
            changed: watch::Sender::new(0),
            approvals: Mutex::new(HashMap::new()),
            timed_out: AtomicBool::new(false),
        }
    }

    /// Appends an event with the envelope fields; `finish` marks the run done in the same step
    /// so a waiter never sees the final event without `done`.
    fn emit(&self, kind: &str, fields: Value, finish: bool) {
        let mut log = lock(&self.log);
        if log.done {
            return;
        }
        let mut event = Map::new();
        event.insert("id".into(), json!(session::new_id().unwrap_or_default()));
        event.insert("sessionId".into(), json!(self.session_id));
        event.insert("runId".into(), json!(self.id));
        event.insert("sequence".into(), json!(log.next));
        event.insert("timestamp".into(), json!(now_ms()));
        event.insert("type".into(), json!(kind));
        if let Value::Object(extra) = fields {
            event.extend(extra);
        }
        log.events.push_back(Value::Object(event));
        log.next += 1;
        while log.events.len() > EVENT_BUFFER {
            log.events.pop_front();
            log.first += 1;
        }
        if finish {
            log.done = true;
            log.completed_at = Some(now_ms());
            log.completed_instant = Some(Instant::now());
        }
        let last = log.next - 1;
        drop(log);
        self.changed.send_replace(last);
    }

    fn agent_event(&self, event: AgentEvent) {
        let agent = match event {
            AgentEvent::TextDelta(text) => json!({"type": "text_delta", "text": text}),
            AgentEvent::ThinkingDelta(text) => json!({"type": "thinking_delta", "text": text}),
            AgentEvent::UserMessage { text } => json!({"type": "user_message", "text": text}),
            AgentEvent::ToolCallStart {
                id, name, summary, ..
            } => json!({
                "type": "tool_call_start", "toolCallId": id, "toolName": name, "summary": summary}),
            AgentEvent::ToolCallFinish {
                id,
                name,
                is_error,
                text,
                network_refused,
                ..
            } => {
                let mut v = json!({
                    "type": "tool_call_finish", "toolCallId": id, "toolName": name, "text": text,
                    "isError": is_error});
                if !network_refused.is_empty() {
                    v["networkRefused"] = json!(network_refused);
                }
                v
            }
            // Approvals are reported by the RPC approver, which knows the approval id; the
            // rest has no place in the protocol.
            AgentEvent::ApprovalRequested(_)
            | AgentEvent::ApprovalResolved { .. }
            | AgentEvent::Retrying { .. }
            | AgentEvent::AssistantMessage { .. }
            | AgentEvent::Usage(_) => return,
        };
        self.emit("agent_event", json!({"agent": agent}), false);
    }

    pub fn is_done(&self) -> bool {
        lock(&self.log).done
    }

    /// `RunStatus`.
    pub fn status(&self) -> Value {
        let log = lock(&self.log);
        let pending: Vec<Value> = lock(&self.approvals)
            .iter()
            .map(|(id, p)| json!({"id": id, "request": p.request}))
            .collect();
        let mut status = json!({
            "id": self.id, "sessionId": self.session_id, "done": log.done,
            "startedAt": self.started_at, "firstSequence": log.first,
            "lastSequence": log.next - 1, "pendingApprovals": pending,
            "prompt": self.prompt, "messagesBefore": self.messages_before,
        });
        if let (Some(at), Some(object)) = (log.completed_at, status.as_object_mut()) {
            object.insert("completedAt".into(), json!(at));
        }
        status
    }

    /// Events after `after`, waiting until there is at least one or the run is done.
    pub async fn wait(
        &self,
        after: u64,
        stop: &CancellationToken,
    ) -> Result<(Vec<Value>, bool), RpcError> {
        let mut changes = self.changed.subscribe();
        loop {
            {
                let log = lock(&self.log);
                if after.saturating_add(1) < log.first {
                    return Err(RpcError::app(
                        AppError::EventHistoryExpired,
                        format!(
                            "events after {after} are no longer buffered; the oldest kept is {}",
                            log.first
                        ),
                    ));
                }
                let skip = after.saturating_add(1).saturating_sub(log.first);
                let events: Vec<Value> = log
                    .events
                    .iter()
                    .skip(usize::try_from(skip).unwrap_or(usize::MAX))
                    .cloned()
                    .collect();
                if !events.is_empty() || log.done {
                    return Ok((events, log.done));
                }
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return Ok((Vec::new(), true)) },
                () = stop.cancelled() => return Ok((Vec::new(), self.is_done())),
            }
        }
    }

    /// Answers a pending approval; `for_session` allows the same call for the rest of the
    /// session and is refused (the approval stays pending) when the call is dangerous.
    pub fn approve(
        &self,
        approval_id: &str,
        allow: bool,
        for_session: bool,
    ) -> Result<(), RpcError> {
        let mut approvals = lock(&self.approvals);
        if for_session && allow && approvals.get(approval_id).is_some_and(|p| p.dangerous) {
            return Err(RpcError::invalid_params(
                "a dangerous call cannot be approved for the session; approve it once or deny it",
            ));
        }
        let answer = match (allow, for_session) {
            (false, _) => Answer::Deny,
            (true, false) => Answer::Allow,
            (true, true) => Answer::AllowForSession,
        };
        let pending = approvals.remove(approval_id);
        drop(approvals);
        match pending.map(|p| p.answer.send(answer)) {
            Some(Ok(())) => Ok(()),
            _ => Err(RpcError::app(
                AppError::ApprovalExpired,
                format!("approval {approval_id} is not pending"),
            )),
        }
    }

    pub fn cancel(&self) {
        self.cancel.cancel();
    }
}

/// The approver of `requireApproval: true` runs: the client answering `run.approve` is the person.
struct RpcApprover {
    run: Arc<Run>,
}

impl Approver for RpcApprover {
    fn ask<'a>(&'a self, prompt: &'a ApprovalPrompt) -> AnswerFuture<'a> {
        Box::pin(async move {
            let run = &self.run;
            if run.cancel.is_cancelled() {
                return Err("run canceled".to_string());
            }
            let id = session::new_id().map_err(|e| format!("approval id: {e}"))?;
            let request = json!({
                "toolCallId": prompt.call_id, "toolName": prompt.tool, "summary": prompt.summary,
                "details": prompt.details, "reason": prompt.reason, "dangerous": prompt.dangerous,
            });
            let (answer, answered) = oneshot::channel();
            lock(&run.approvals).insert(
                id.clone(),
                Pending {
                    request: request.clone(),
                    dangerous: prompt.dangerous,
                    answer,
                },
            );
            run.emit(
                "approval_requested",
                json!({"approval": {"id": id, "request": request}}),
                false,
            );
            tokio::select! {
                answer = answered => {
                    let answer = answer.unwrap_or(Answer::Deny);
                    let allow = answer != Answer::Deny;
                    let mut decision = json!({"allow": allow});
                    if answer == Answer::AllowForSession {
                        decision["scope"] = json!("session");
                    }
                    run.emit("approval_resolved",
                        json!({"approval": {"id": id}, "decision": decision}), false);
                    Ok(answer)
                }
                () = run.cancel.cancelled() => {
                    // Cancellation withdraws the request.
                    lock(&run.approvals).remove(&id);
                    Err("run canceled".to_string())
                }
            }
        })
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

    /// `session.list`.
    pub fn list_sessions(&self) -> Result<Value, RpcError> {
        let list = paths::list_sessions(&self.settings.session_root, &self.settings.cwd)
            .map_err(session_error)?;
        Ok(Value::Array(
            list.into_iter()
                .map(|s| {
                    json!({"id": s.id, "name": s.name.unwrap_or_default(), "updatedAt": s.updated,
                        "messageCount": s.messages, "preview": s.preview})
                })
                .collect(),
        ))
    }

    /// `session.create`.
    pub fn create_session(&self, name: Option<&str>) -> Result<Value, RpcError> {
        let dir = self.project_dir()?;
        let mut session = Session::create(&dir, &self.settings.cwd.display().to_string())
            .map_err(session_error)?;
        if let Some(name) = name.filter(|n| !n.trim().is_empty()) {
            session.set_name(name).map_err(session_error)?;
        }
        let snapshot = self.snapshot(session.transcript());
        self.insert_slot(session);
        Ok(snapshot)
    }

    fn insert_slot(&self, session: Session) {
        let mut state = lock(&self.state);
        state.clock += 1;
        let id = session.id().to_string();
        let slot = Slot::new(session, state.clock);
        state.sessions.insert(id, slot);
        evict(&mut state);
    }

    /// Makes sure `id` is open; returns its slot's session cell and whether a run holds it.
    async fn ensure_open(
        &self,
        id: &str,
    ) -> Result<
        (
            Arc<tokio::sync::Mutex<Option<Session>>>,
            Option<String>,
            PathBuf,
        ),
        RpcError,
    > {
        check_session_id(id)?;
        {
            let mut state = lock(&self.state);
            state.clock += 1;
            let clock = state.clock;
            if let Some(slot) = state.sessions.get_mut(id) {
                slot.open_mut().last_used = clock;
                return Ok(slot.parts());
            }
        }
        let root = self.settings.session_root.clone();
        let cwd = self.settings.cwd.clone();
        let target = id.to_string();
        // Opening may wait for another process's lease: off the async workers.
        let session = tokio::task::spawn_blocking(move || {
            let path = paths::resolve_target(&root, &cwd, &target, false)?;
            Session::open(&path)
        })
        .await
        .map_err(|e| RpcError::app(AppError::Other, format!("open session: {e}")))?
        .map_err(session_error)?;
        if session.id() != id {
            // A prefix matched: the protocol takes exact ids only.
            return Err(RpcError::app(
                AppError::SessionNotFound,
                format!("session not found: {id}"),
            ));
        }
        let mut state = lock(&self.state);
        state.clock += 1;
        let clock = state.clock;
        let slot = state
            .sessions
            .entry(id.to_string())
            .or_insert_with(|| Slot::new(session, clock));
        let found = slot.parts();
        evict(&mut state);
        Ok(found)
    }

    /// Forgets an open session so the next call reopens it from disk (after a conflict or a
    /// lost session).
    fn drop_slot(&self, id: &str) {
        let mut state = lock(&self.state);
        if state.sessions.get(id).is_some_and(|s| !s.is_running()) {
            state.sessions.remove(id);
        }
    }

    /// `session.open` / `session.get`: a snapshot; read from disk while a run holds the session.
    pub async fn open_session(&self, id: &str) -> Result<Value, RpcError> {
        let (cell, active, path) = self.ensure_open(id).await?;
        if active.is_none()
            && let Ok(guard) = cell.try_lock()
            && let Some(session) = guard.as_ref()
        {
            return Ok(self.snapshot(session.transcript()));
        }
        let transcript = tokio::task::spawn_blocking(move || session::load(&path))
            .await
            .map_err(|e| RpcError::app(AppError::Other, format!("load session: {e}")))?
            .map_err(session_error)?;
        Ok(self.snapshot(&transcript))
    }

    /// Runs a write on an idle session; refused while a run holds it.
    async fn with_idle_session<T>(
        &self,
        id: &str,
        op: impl FnOnce(&mut Session) -> Result<T, SessionError>,
    ) -> Result<T, RpcError> {
        let (cell, active, _) = self.ensure_open(id).await?;
        if active.is_some() {
            return Err(RpcError::app(
                AppError::RunConflict,
                "cannot change conversation branch while a run is in progress",
            ));
        }
        let mut guard = cell.lock().await;
        let Some(session) = guard.as_mut() else {
            drop(guard);
            self.drop_slot(id);
            return Err(RpcError::app(
                AppError::SessionConflict,
                "session is being reopened; retry",
            ));
        };
        match op(session) {
            Ok(value) => Ok(value),
            Err(error) => {
                let retry = error.is_retryable_conflict();
                drop(guard);
                if retry {
                    self.drop_slot(id);
                }
                Err(session_error(error))
            }
        }
    }

    /// `session.rename`.
    pub async fn rename_session(&self, id: &str, name: &str) -> Result<Value, RpcError> {
        self.with_idle_session(id, |s| s.set_name(name).map(|_| ()))
            .await?;
        self.open_session(id).await
    }

    /// `session.action`: `tree` checks out a node, `fork` and `clone` create a new open session.
    pub async fn session_action(
        &self,
        id: &str,
        action: &str,
        node: Option<&str>,
    ) -> Result<Value, RpcError> {
        let node_required = || {
            node.filter(|n| !n.is_empty()).ok_or_else(|| {
                RpcError::app(AppError::InvalidAction, format!("{action} needs a nodeId"))
            })
        };
        match action {
            "tree" => {
                let node = node_required()?.to_string();
                let (draft, snapshot) = self
                    .with_idle_session(id, |s| {
                        let draft = s.checkout(&node)?;
                        Ok((draft, self.snapshot(s.transcript())))
                    })
                    .await?;
                Ok(update(
                    snapshot,
                    draft,
                    "switched conversation branch".to_string(),
                ))
            }
            "fork" | "clone" => {
                let node = if action == "fork" {
                    Some(node_required()?.to_string())
                } else {
                    None
                };
                let (forked, draft) = self
                    .with_idle_session(id, |s| match &node {
                        Some(node) => s.fork(node).map(|(f, d)| (f, Some(d))),
                        None => s.clone_session().map(|f| (f, None)),
                    })
                    .await?;
                let file = forked
                    .path()
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let verb = if action == "fork" { "forked" } else { "cloned" };
                let snapshot = self.snapshot(forked.transcript());
                self.insert_slot(forked);
                Ok(update(snapshot, draft, format!("{verb} to {file}")))
            }
            other => Err(RpcError::app(
                AppError::InvalidAction,
                format!("unknown session action {other:?} (tree, fork or clone)"),
            )),
        }
    }

    fn snapshot(&self, transcript: &Transcript) -> Value {
        let model = transcript
            .last_model()
            .map(|(_, _, selection)| selection.to_string())
            .unwrap_or_else(|| self.default_label());
        let mut snapshot = json!({
            "sessionId": transcript.id(),
            "sessionName": transcript.name().unwrap_or_default(),
            "modelName": model,
            "messages": transcript.messages(),
            "treeItems": transcript.tree_items(),
        });
        if let (Some((summary, through)), Some(object)) =
            (transcript.last_summary(), snapshot.as_object_mut())
        {
            object.insert("summary".into(), json!(summary));
            object.insert("summaryThrough".into(), json!(through));
        }
        snapshot
    }

    // ---- runs -----------------------------------------------------------------------------

    fn run(&self, id: &str) -> Result<Arc<Run>, RpcError> {
        lock(&self.state)
            .runs
            .get(id)
            .cloned()
            .ok_or_else(|| RpcError::app(AppError::RunNotFound, format!("run {id} not found")))
    }

    pub fn get_run(&self, id: &str) -> Result<Arc<Run>, RpcError> {
        self.run(id)
    }

    /// `run.list`: every run that is not done, oldest first (the web UI's approval queue).
    pub fn list_runs(&self) -> Value {
        let mut runs: Vec<Arc<Run>> = lock(&self.state)
            .runs
            .values()
            .filter(|r| !r.is_done())
            .cloned()
            .collect();
        runs.sort_by_key(|r| (r.started_at, r.id.clone()));
        Value::Array(runs.iter().map(|r| r.status()).collect())
    }

    /// `audit.list`: the audit trail of one session, or of every session of the workspace,
    /// each row tagged with its session's id and name.
    pub fn audit(&self, session_id: Option<&str>) -> Result<Value, RpcError> {
        if let Some(id) = session_id {
            check_session_id(id)?;
        }
        let list = paths::list_sessions(&self.settings.session_root, &self.settings.cwd)
            .map_err(session_error)?;
        let mut rows = Vec::new();
        let mut found = false;
        for summary in list {
            if session_id.is_some_and(|id| id != summary.id) {
                continue;
            }
            found = true;
            let transcript = session::load(&summary.path).map_err(session_error)?;
            for row in session::audit_trail(&transcript) {
                let mut value = serde_json::to_value(&row)
                    .map_err(|e| RpcError::app(AppError::Other, e.to_string()))?;
                value["sessionId"] = json!(summary.id);
                value["sessionName"] = json!(summary.name.clone().unwrap_or_default());
                rows.push(value);
            }
        }
        if let (Some(id), false) = (session_id, found) {
            return Err(RpcError::app(
                AppError::SessionNotFound,
                format!("session {id} not found"),
            ));
        }
        Ok(Value::Array(rows))
    }

    /// The active run of a session.
    pub fn active_run(&self, session_id: &str) -> Result<Arc<Run>, RpcError> {
        check_session_id(session_id)?;
        let state = lock(&self.state);
        state
            .sessions
            .get(session_id)
            .and_then(|s| s.run_id())
            .and_then(|r| state.runs.get(r))
            .cloned()
            .ok_or_else(|| {
                RpcError::app(
                    AppError::RunNotFound,
                    format!("session {session_id} has no active run"),
                )
            })
    }

    /// The sandbox of one run: `sandbox` (the web UI's per-run switch) or the daemon's, with the
    /// run's own network policy when it names one (layered like `gg --network`: over the
    /// user's config, under the project's settings). A network policy without the sandbox is
    /// refused: it cannot be enforced.
    fn run_sandbox(
        &self,
        sandbox: Option<bool>,
        network: &RunNetwork,
    ) -> Result<SandboxSetting, RpcError> {
        let daemon_sandboxed = matches!(self.settings.sandbox, SandboxSetting::On { .. });
        let sandboxed = sandbox.unwrap_or(daemon_sandboxed);
        let own_network = network.mode.is_some() || !network.allow_domains.is_empty();
        if !sandboxed {
            if own_network {
                return Err(RpcError::invalid_params(
                    "network: the policy cannot be enforced without the sandbox",
                ));
            }
            return Ok(SandboxSetting::Off);
        }
        if daemon_sandboxed && !own_network {
            // The daemon's setting, and its proxy.
            return Ok(self.settings.sandbox.clone());
        }
        let mode = network
            .mode
            .as_deref()
            .map(str::parse::<crate::tools::network::NetworkMode>)
            .transpose()
            .map_err(|e| RpcError::invalid_params(format!("network: {e}")))?;
        let (policy, _) = crate::tools::network::session_policy(
            &self.settings.config.network,
            mode,
            &network.allow_domains,
            &self.settings.cwd,
        )
        .map_err(|e| RpcError::invalid_params(format!("network: {e}")))?;
        Ok(SandboxSetting::with_network(true, policy))
    }

    /// `run.start`.
    pub async fn start_run(
        self: &Arc<Self>,
        session_id: &str,
        prompt: String,
        require_approval: bool,
        workspace: Option<&str>,
        sandbox: Option<bool>,
        network: RunNetwork,
    ) -> Result<String, RpcError> {
        // The web UI's per-run setting; absent = the daemon's `--sandbox`.
        let sandbox = self.run_sandbox(sandbox, &network)?;
        if self.shutdown.is_cancelled() {
            return Err(RpcError::app(
                AppError::ShuttingDown,
                "the daemon is shutting down",
            ));
        }
        if let Some(workspace) = workspace.filter(|w| !w.is_empty() && *w != "default") {
            return Err(RpcError::app(
                AppError::WorkspaceMismatch,
                format!("this daemon serves the workspace \"default\", not \"{workspace}\""),
            ));
        }
        let selection = self
            .select()
            .map_err(|e| RpcError::app(AppError::Other, e))?;
        if selection.api_key.is_empty() {
            return Err(RpcError::app(
                AppError::Other,
                crate::app::config::MISSING_API_KEY,
            ));
        }
        let (cell, _, _) = self.ensure_open(session_id).await?;
        let run_id = new_id()?;
        {
            let mut state = lock(&self.state);
            let active = state.sessions.values().filter(|s| s.is_running()).count();
            let Some(slot) = state.sessions.get(session_id) else {
                return Err(RpcError::app(
                    AppError::SessionConflict,
                    "session was closed; retry",
                ));
            };
            if slot.is_running() {
                return Err(RpcError::app(
                    AppError::RunConflict,
                    "the session already has an active run",
                ));
            }
            if active >= self.settings.max_active_runs {
                return Err(RpcError::app(
                    AppError::RunLimitReached,
                    format!(
                        "{active} runs are active, the limit is {}; retry when one finishes",
                        self.settings.max_active_runs
                    ),
                ));
            }
            let started = run_id.clone();
            state.transition(session_id, move |slot| slot.start(started));
        }
        let release = |this: &Runtime| {
            lock(&this.state).transition(session_id, Slot::finish);
        };
        let session = cell.lock().await.take();
        let Some(session) = session else {
            release(self);
            self.drop_slot(session_id);
            return Err(RpcError::app(
                AppError::SessionConflict,
                "session is being reopened; retry",
            ));
        };
        let run_holder: Arc<Mutex<Option<Arc<Run>>>> = Arc::default();
        let (mode, terminal, approver): (Mode, Terminal, Arc<dyn Approver>) = if require_approval {
            (
                Mode::OnRequest,
                Terminal::Present,
                Arc::new(LateApprover(Arc::clone(&run_holder))),
            )
        } else {
            // Trusted automation: allowed without asking, but dangerous bash is still denied
            // because nobody is there to confirm it.
            (Mode::Never, Terminal::Absent, Arc::new(NobodyToAsk))
        };
        let s = &self.settings;
        let options = ServiceOptions {
            cwd: s.cwd.clone(),
            home: s.home.clone(),
            config: s.config.clone(),
            overrides: s.overrides.clone(),
            mode,
            terminal,
            approver,
            sandbox,
            context_files: s.context_files,
            skills: s.skills,
            external_tools: s.external_tools.clone(),
        };
        let messages_before = session.transcript().messages().len();
        let conversation = match Conversation::open(options, session) {
            Ok(c) => c,
            Err(e) => {
                release(self);
                self.drop_slot(session_id);
                return Err(RpcError::app(AppError::Other, e));
            }
        };
        let run = Arc::new(Run::new(
            run_id.clone(),
            session_id.to_string(),
            conversation.queue(),
            prompt.clone(),
            messages_before,
        ));
        *lock(&run_holder) = Some(Arc::clone(&run));
        {
            let mut state = lock(&self.state);
            state.runs.insert(run_id.clone(), Arc::clone(&run));
            prune_runs(&mut state);
        }
        run.emit("run_started", json!({}), false);
        tracing::info!(sessionID = %session_id, runID = %run_id, requireApproval = require_approval, "run started");
        let guard = WorkerGuard::new(&self.workers);
        let runtime = Arc::clone(self);
        tokio::spawn(async move {
            runtime.drive(run, conversation, cell, prompt).await;
            drop(guard);
        });
        Ok(run_id)
    }

    async fn drive(
        self: Arc<Self>,
        run: Arc<Run>,
        conversation: Conversation,
        cell: Arc<tokio::sync::Mutex<Option<Session>>>,
        prompt: String,
    ) {
        let turn_run = Arc::clone(&run);
        #[cfg(feature = "test-hooks")]
        let panic_requested = self.settings.test_hooks && prompt == TEST_PANIC_PROMPT;
        let mut turns = tokio::spawn(async move {
            #[cfg(feature = "test-hooks")]
            if panic_requested {
                super::handler::test_panic("test panic requested");
            }
            let mut conversation = conversation;
            let sink_run = Arc::clone(&turn_run);
            let sink = move |event: AgentEvent| sink_run.agent_event(event);
            let mut next = Some(prompt);
            let mut last = None;
            // Follow-ups queued during the run become further turns of the same run.
            while let Some(input) = next.take().or_else(|| turn_run.queue.pop_next()) {
                let result = conversation.submit(&input, &sink, &turn_run.cancel).await;
                let failed = result.is_err();
                last = Some(result);
                if failed || turn_run.cancel.is_cancelled() {
                    break;
                }
            }
            (conversation, last)
        });
        let timeout = self.settings.run_timeout;
        let joined = tokio::select! {
            joined = &mut turns => joined,
            () = tokio::time::sleep(timeout) => {
                run.timed_out.store(true, Ordering::SeqCst);
                run.cancel.cancel();
                turns.await
            }
        };
        let mut session_back = None;
        match joined {
            Ok((conversation, result)) => {
                // After a conflict the in-memory session is stale: forget it so the next call
                // reopens the file.
                let stale = matches!(&result, Some(Err(TurnError::Session(e))) if e.is_retryable_conflict());
                let model = conversation.selection().label();
                let session = conversation.into_session();
                self.finish(&run, result, &model, session.transcript());
                if !stale {
                    session_back = Some(session);
                }
            }
            Err(error) => {
                let reason = if error.is_panic() {
                    let payload = error.into_panic();
                    let text = payload
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| payload.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown panic".to_string());
                    tracing::error!(sessionID = %run.session_id, runID = %run.id, panic = %text, "run panicked");
                    format!("panic: {text} (see daemon log for details)")
                } else {
                    "run task was aborted".to_string()
                };
                run.emit(
                    "run_failed",
                    json!({"error": reason, "errorCode": "internal", "retryable": false}),
                    true,
                );
            }
        }
        let lost = session_back.is_none();
        *cell.lock().await = session_back;
        {
            let mut state = lock(&self.state);
            state.transition(&run.session_id, Slot::finish);
            if lost {
                state.sessions.remove(&run.session_id);
            }
            prune_runs(&mut state);
            evict(&mut state);
        }
        tracing::info!(sessionID = %run.session_id, runID = %run.id, "run finished");
    }

    fn finish(
        &self,
        run: &Run,
        result: Option<Result<Submitted, TurnError>>,
        model: &str,
        transcript: &Transcript,
    ) {
        let done = |content: &str, usage: Value| {
            json!({"result": {"Content": content, "Usage": usage, "ModelName": model,
                "TreeItems": transcript.tree_items()}})
        };
        match result {
            Some(Ok(Submitted::Turn(outcome))) => {
                let u = outcome.usage;
                let usage = json!({"promptTokens": u.prompt_tokens, "completionTokens": u.completion_tokens,
                    "totalTokens": u.total_tokens});
                run.emit("run_completed", done(&outcome.final_text, usage), true);
            }
            Some(Ok(Submitted::Control(text))) => {
                run.emit("run_completed", done(&text, Value::Null), true)
            }
            None => run.emit("run_completed", done("", Value::Null), true),
            Some(Err(TurnError::Canceled)) if run.timed_out.load(Ordering::SeqCst) => {
                let limit = self.settings.run_timeout;
                run.emit(
                    "run_failed",
                    json!({"error": format!("run exceeded the run timeout of {}", format_duration(limit)),
                        "errorCode": "run_timeout", "retryable": false}),
                    true,
                );
            }
            Some(Err(TurnError::Canceled)) => run.emit("run_canceled", json!({}), true),
            Some(Err(TurnError::Session(error))) if error.is_retryable_conflict() => {
                run.emit(
                    "run_failed",
                    json!({"error": error.to_string(), "errorCode": "session_conflict", "retryable": true}),
                    true,
                );
            }
            Some(Err(error)) => {
                let code = match error {
                    TurnError::Provider(_) => "provider_error",
                    _ => "run_failed",
                };
                run.emit(
                    "run_failed",
                    json!({"error": error.to_string(), "errorCode": code, "retryable": false}),
                    true,
                );
            }
        }
    }

    /// `run.steer`: steering for the running turn, or a follow-up turn of the same run.
    pub fn steer(&self, session_id: &str, text: String, follow_up: bool) -> Result<(), RpcError> {
        let run = self.active_run(session_id)?;
        run.queue.add(text, follow_up);
        Ok(())
    }

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

/// The approver needs the run, which needs the conversation's queue, which needs the approver:
/// this holder is filled in right after the run exists and before anything can ask.
struct LateApprover(Arc<Mutex<Option<Arc<Run>>>>);

impl Approver for LateApprover {
    fn ask<'a>(&'a self, prompt: &'a ApprovalPrompt) -> AnswerFuture<'a> {
        let run = lock(&self.0).clone();
        Box::pin(async move {
            match run {
                Some(run) => RpcApprover { run }.ask(prompt).await,
                None => Err("approval requested before the run started".to_string()),
            }
        })
    }
}

fn update(mut snapshot: Value, draft: Option<String>, notice: String) -> Value {
    if let Some(object) = snapshot.as_object_mut() {
        if let Some(draft) = draft {
            object.insert("draft".into(), json!(draft));
        }
        object.insert("notice".into(), json!(notice));
        object.remove("summary");
        object.remove("summaryThrough");
    }
    snapshot
}

/// Completed runs: at most [`COMPLETED_RUN_LIMIT`], none older than the retention.
fn prune_runs(state: &mut State) {
    let mut completed: Vec<(Instant, String)> = state
        .runs
        .values()
        .filter_map(|r| lock(&r.log).completed_instant.map(|at| (at, r.id.clone())))
        .collect();
    completed.sort();
    let excess = completed.len().saturating_sub(COMPLETED_RUN_LIMIT);
    for (index, (at, id)) in completed.iter().enumerate() {
        if index < excess || at.elapsed() > COMPLETED_RUN_RETENTION {
            state.runs.remove(id);
        }
    }
}

/// Closes the least recently used idle sessions beyond [`OPEN_SESSION_LIMIT`].
fn evict(state: &mut State) {
    while state.sessions.len() > OPEN_SESSION_LIMIT {
        let victim = state
            .sessions
            .iter()
            .filter(|(_, s)| !s.is_running())
            .min_by_key(|(_, s)| s.open().last_used)
            .map(|(id, _)| id.clone());
        match victim {
            Some(id) => {
                state.sessions.remove(&id);
            }
            None => break,
        }
    }
}

/// `30m0s`-style durations for messages.
pub use crate::duration::clock as format_duration;

/// Parses `--run-timeout`: `90s`, `30m`, `1h30m`, `500ms`, or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let grammar = crate::duration::Grammar {
        bare_seconds: true,
        millis: true,
        saturate: true,
        ..Default::default()
    };
    crate::duration::parse(text, grammar)
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

    #[test]
    fn event_log_waits_and_expires() {
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
        for _ in 0..(EVENT_BUFFER + 10) {
            run.emit("agent_event", json!({}), false);
        }
        let stop = CancellationToken::new();
        let expired = rt.block_on(run.wait(0, &stop)).unwrap_err();
        assert_eq!(expired.code, AppError::EventHistoryExpired.code());
        let (events, done) = rt.block_on(run.wait(10, &stop)).unwrap();
        assert_eq!(events.len(), EVENT_BUFFER);
        assert!(!done);
        run.emit("run_completed", json!({}), true);
        let (events, done) = rt
            .block_on(run.wait((EVENT_BUFFER + 10) as u64, &stop))
            .unwrap();
        assert_eq!(events.len(), 1);
        assert!(done);
        assert!(run.approve("nope", true, false).is_err());
    }
}
