//! Starting, driving and finishing runs: limits, the run task, steering, and pruning of
//! completed runs.

use super::*;

impl Runtime {
    pub(super) fn run(&self, id: &str) -> Result<Arc<Run>, RpcError> {
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
    pub(crate) fn run_sandbox(
        &self,
        sandbox: Option<bool>,
        network: &RunNetwork,
    ) -> Result<SandboxSetting, RpcError> {
        let daemon_sandboxed = matches!(self.settings.sandbox, SandboxSetting::On { .. });
        // The daemon's start sets a floor that a run request cannot go below: a client (the web
        // UI, or a page that got hold of the token) cannot turn the sandbox off for its run or
        // open the network wider than the daemon's policy.
        if daemon_sandboxed && sandbox == Some(false) {
            return Err(RpcError::invalid_params(
                "sandbox: the daemon was started with --sandbox; a run cannot turn it off",
            ));
        }
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
            .map(str::parse::<tools::network::NetworkMode>)
            .transpose()
            .map_err(|e| RpcError::invalid_params(format!("network: {e}")))?;
        let (policy, _) = tools::network::session_policy(
            &self.settings.config.network,
            mode,
            &network.allow_domains,
            &self.settings.cwd,
        )
        .map_err(|e| RpcError::invalid_params(format!("network: {e}")))?;
        if let SandboxSetting::On { network: floor, .. } = &self.settings.sandbox
            && policy.mode > floor.policy.mode
        {
            return Err(RpcError::invalid_params(format!(
                "network: the daemon's policy is {}; a run cannot open it to {}",
                floor.policy.mode, policy.mode
            )));
        }
        Ok(SandboxSetting::with_network(true, policy))
    }

    /// `run_limit_reached` when `--max-active-runs` runs are active.
    fn refuse_over_run_limit(&self, state: &State) -> Result<(), RpcError> {
        let active = state.sessions.values().filter(|s| s.is_running()).count();
        if active >= self.settings.max_active_runs {
            return Err(RpcError::app(
                AppError::RunLimitReached,
                format!(
                    "{active} runs are active, the limit is {}; retry when one finishes",
                    self.settings.max_active_runs
                ),
            ));
        }
        Ok(())
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
        // Refused before the session is opened: reading a long transcript from disk costs as
        // much as the run would have, and a client at the limit retries. (Checked again below,
        // under the same lock as the start: runs may have begun while the session opened.)
        self.refuse_over_run_limit(&lock(&self.state))?;
        let (cell, _, _) = self.ensure_open(session_id).await?;
        let run_id = new_id()?;
        {
            let mut state = lock(&self.state);
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
            self.refuse_over_run_limit(&state)?;
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
            no_memory: s.no_memory,
            external_tools: s.external_tools.clone(),
            early_tools: None,
        };
        let messages_before = session.transcript().messages().len();
        let conversation = match Conversation::open(options, session) {
            Ok(c) => {
                for notice in c.notices() {
                    tracing::info!("{notice}");
                }
                c
            }
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

    pub(super) async fn drive(
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
                crate::daemon::test_hooks::panic_on_purpose("test panic requested");
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
        let (ending, detail) = match joined {
            Ok((conversation, result)) => {
                // After a conflict the in-memory session is stale: forget it so the next call
                // reopens the file.
                let stale = matches!(&result, Some(Err(TurnError::Session(e))) if e.is_retryable_conflict());
                let model = conversation.selection().label();
                let session = conversation.into_session();
                let ending = self.ending(&run, result, &model, session.transcript());
                if !stale {
                    session_back = Some(session);
                }
                ending
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
                (
                    "run_failed",
                    json!({"error": reason, "errorCode": "internal", "retryable": false}),
                )
            }
        };
        // The session is free again before the run says it ended: a client that starts the
        // next run as soon as it sees `run_completed` (or `done`) must not meet a conflict.
        let lost = session_back.is_none();
        *cell.lock().await = session_back;
        {
            let mut state = lock(&self.state);
            state.transition(&run.session_id, Slot::finish);
            if lost {
                state.sessions.remove(&run.session_id);
            }
        }
        run.emit(ending, detail, true);
        // Where a test holds the run right after its last event, to prove the session was
        // already free then (`daemon_stdio::the_session_is_free_once_a_run_has_ended`).
        tools::store::pause_point_async("run.after-last-event").await;
        {
            let mut state = lock(&self.state);
            prune_runs(&mut state);
            evict(&mut state);
        }
        tracing::info!(sessionID = %run.session_id, runID = %run.id, "run finished");
    }

    /// The run's last event (its type and data) for how its turns ended.
    pub(super) fn ending(
        &self,
        run: &Run,
        result: Option<Result<Submitted, TurnError>>,
        model: &str,
        transcript: &Transcript,
    ) -> (&'static str, Value) {
        let done = |content: &str, usage: Value| {
            json!({"result": {"Content": content, "Usage": usage, "ModelName": model,
                "TreeItems": transcript.tree_items()}})
        };
        match result {
            Some(Ok(Submitted::Turn(outcome))) => {
                let u = outcome.usage;
                let usage = json!({"promptTokens": u.prompt_tokens, "completionTokens": u.completion_tokens,
                    "totalTokens": u.total_tokens});
                ("run_completed", done(&outcome.final_text, usage))
            }
            Some(Ok(Submitted::Control(text))) => ("run_completed", done(&text, Value::Null)),
            None => ("run_completed", done("", Value::Null)),
            Some(Err(TurnError::Canceled)) if run.timed_out.load(Ordering::SeqCst) => {
                let limit = self.settings.run_timeout;
                (
                    "run_failed",
                    json!({"error": format!("run exceeded the run timeout of {}", format_duration(limit)),
                        "errorCode": "run_timeout", "retryable": false}),
                )
            }
            Some(Err(TurnError::Canceled)) => ("run_canceled", json!({})),
            Some(Err(TurnError::Session(error))) if error.is_retryable_conflict() => (
                "run_failed",
                json!({"error": error.to_string(), "errorCode": "session_conflict", "retryable": true}),
            ),
            Some(Err(error)) => {
                let code = match error {
                    TurnError::Provider(_) => "provider_error",
                    _ => "run_failed",
                };
                (
                    "run_failed",
                    json!({"error": error.to_string(), "errorCode": code, "retryable": false}),
                )
            }
        }
    }

    /// `run.steer`: steering for the running turn, or a follow-up turn of the same run.
    pub fn steer(&self, session_id: &str, text: String, follow_up: bool) -> Result<(), RpcError> {
        let run = self.active_run(session_id)?;
        run.queue.add(text, follow_up);
        Ok(())
    }
}

/// The approver needs the run, which needs the conversation's queue, which needs the approver:
/// this holder is filled in right after the run exists and before anything can ask.
pub(super) struct LateApprover(Arc<Mutex<Option<Arc<Run>>>>);

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

pub(super) fn update(mut snapshot: Value, draft: Option<String>, notice: String) -> Value {
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
pub(super) fn prune_runs(state: &mut State) {
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
