//! One run's event log (replay, waiting, expiry) and its pending approvals.

use super::*;

/// The events of one run and whether it is over.
///
/// Each event is kept as the JSON text it is sent as, serialised once when emitted: a replay
/// (`run.wait` from the start, a reconnecting event stream) copies text into its response
/// instead of cloning a tree of maps per event, which took about twelve times the response's
/// size in memory per waiting client, and the buffer itself is a fraction of the trees' size.
pub(super) struct EventLog {
    pub(super) events: VecDeque<Arc<str>>,
    /// Sequence of `events[0]` (or of the next event when empty).
    pub(super) first: u64,
    pub(super) next: u64,
    pub(super) done: bool,
    pub(super) completed_at: Option<i64>,
    pub(super) completed_instant: Option<Instant>,
}

pub(super) struct Pending {
    pub(super) request: Value,
    /// Dangerous calls are answered once; "for the session" is refused for them.
    pub(super) dangerous: bool,
    pub(super) answer: oneshot::Sender<Answer>,
}

/// What [`Run::wait`] found: events as the JSON text of each, in order from `first_sequence`.
#[derive(Debug)]
pub struct Waited {
    pub first_sequence: u64,
    pub events: Vec<Arc<str>>,
    pub done: bool,
}

impl Waited {
    /// Nothing more will come.
    fn over() -> Waited {
        Waited {
            first_sequence: 0,
            events: Vec::new(),
            done: true,
        }
    }

    /// The `run.wait` result, `{"events":[…],"done":…}`, written straight from the events'
    /// text: one copy, the size of the response.
    pub fn result_json(&self) -> String {
        let size: usize = self.events.iter().map(|e| e.len() + 1).sum();
        let mut out = String::with_capacity(size + 32);
        out.push_str("{\"events\":[");
        for (i, event) in self.events.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(event);
        }
        out.push_str("],\"done\":");
        out.push_str(if self.done { "true" } else { "false" });
        out.push('}');
        out
    }
}

/// One run: its events, approvals and cancellation.
pub struct Run {
    pub id: String,
    pub session_id: String,
    pub(super) started_at: i64,
    /// The prompt that started the run and how many messages the session's active path held
    /// before it: a client that reattaches (a reloaded page) shows those messages and the
    /// prompt, then rebuilds the rest from the replayed events.
    pub(super) prompt: String,
    pub(super) messages_before: usize,
    pub(super) cancel: CancellationToken,
    pub(super) queue: Arc<MessageQueue>,
    pub(super) log: Mutex<EventLog>,
    pub(super) changed: watch::Sender<u64>,
    pub(super) approvals: Mutex<HashMap<String, Pending>>,
    pub(super) timed_out: AtomicBool,
}

impl Run {
    pub(super) fn new(
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
    pub(super) fn emit(&self, kind: &str, fields: Value, finish: bool) {
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
        log.events
            .push_back(Value::Object(event).to_string().into());
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

    pub(super) fn agent_event(&self, event: AgentEvent) {
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
    pub async fn wait(&self, after: u64, stop: &CancellationToken) -> Result<Waited, RpcError> {
        self.wait_at_most(after, usize::MAX, stop).await
    }

    /// [`Run::wait`], but with no more than `max_bytes` of event text (and at least one event):
    /// a client starting at the beginning of a long backlog gets it a part at a time, so the log
    /// stays locked only while one part's events are counted off, and no copy of the whole
    /// backlog is ever made. `done` is set with the part that ends at the run's last event.
    pub async fn wait_at_most(
        &self,
        after: u64,
        max_bytes: usize,
        stop: &CancellationToken,
    ) -> Result<Waited, RpcError> {
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
                let start = usize::try_from(skip)
                    .unwrap_or(usize::MAX)
                    .min(log.events.len());
                let mut events: Vec<Arc<str>> = Vec::new();
                let mut bytes = 0usize;
                for event in log.events.range(start..) {
                    bytes = bytes.saturating_add(event.len());
                    if bytes > max_bytes && !events.is_empty() {
                        break;
                    }
                    events.push(Arc::clone(event));
                }
                let to_the_end = start + events.len() == log.events.len();
                if !events.is_empty() || log.done {
                    return Ok(Waited {
                        first_sequence: log.first.saturating_add(skip),
                        events,
                        done: log.done && to_the_end,
                    });
                }
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return Ok(Waited::over()) },
                () = stop.cancelled() => return Ok(Waited { done: self.is_done(), ..Waited::over() }),
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
pub(super) struct RpcApprover {
    pub(super) run: Arc<Run>,
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
