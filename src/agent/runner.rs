//! The turn loop: stream the model, put every tool call through the security chain, run what
//! was allowed, persist everything as it happens.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::approval::ApprovalPrompt;
use super::chain::{Approved, CallRecord, Denied, Gate, GateObserver, Prepared, ToolBox};
use super::context::{ContextBudget, ContextError, build_context};
use super::queue::MessageQueue;
use crate::provider::{self, ChatRequest, Provider, ProviderError, StreamEvent, ToolDefinition};
use crate::session::audit::{self, Audit};
use crate::session::{self, Session};
use policies::Decision;
use tools::registry::{Outcome, SandboxRun, ToolCall};

/// At most this many model requests per turn.
pub const MAX_REQUESTS_PER_TURN: usize = 32;
/// At most this many parallel-safe calls run at once.
pub const MAX_PARALLEL_TOOLS: usize = 4;

/// What a UI is told while a turn runs.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    /// A steering message taken into the running turn.
    UserMessage {
        text: String,
    },
    TextDelta(String),
    ThinkingDelta(String),
    Retrying {
        retry: u32,
        delay_ms: u64,
        reason: String,
    },
    /// A model reply finished (one per request).
    AssistantMessage {
        text: String,
        tool_calls: usize,
    },
    ToolCallStart {
        id: String,
        name: String,
        summary: String,
        classification: Option<String>,
        action: String,
        rule: String,
    },
    ApprovalRequested(ApprovalPrompt),
    ApprovalResolved {
        id: String,
        allowed: bool,
        decided_by: String,
    },
    ToolCallFinish {
        id: String,
        name: String,
        is_error: bool,
        text: String,
        sandbox_level: Option<String>,
        /// Connections the network proxy refused during the call.
        network_refused: Vec<tools::network::Refusal>,
        /// When the tool itself started and finished (not set for calls that never ran).
        ran: Option<(std::time::Instant, std::time::Instant)>,
    },
    Usage(provider::Usage),
}

pub type EventSink<'a> = dyn Fn(AgentEvent) + Send + Sync + 'a;

/// The gate's account of one call, as the turn's events.
struct GateEvents<'s, 'a> {
    sink: &'s EventSink<'a>,
    call: &'s ToolCall,
}

impl GateObserver for GateEvents<'_, '_> {
    fn decided(&self, prepared: &Prepared, decision: &Decision) {
        (self.sink)(AgentEvent::ToolCallStart {
            id: self.call.id.clone(),
            name: self.call.name.clone(),
            summary: prepared.summary().to_string(),
            classification: prepared.verdict().map(|v| v.class.as_str().to_string()),
            action: decision.action().to_string(),
            rule: decision.rule().id().to_string(),
        });
    }

    fn asked(&self, prompt: &ApprovalPrompt) {
        (self.sink)(AgentEvent::ApprovalRequested(prompt.clone()));
    }

    fn resolved(&self, allowed: bool, decided_by: &str) {
        (self.sink)(AgentEvent::ApprovalResolved {
            id: self.call.id.clone(),
            allowed,
            decided_by: decided_by.to_string(),
        });
    }
}

/// Why a turn ended without a final reply.
#[derive(Debug)]
pub enum TurnError {
    Provider(ProviderError),
    TooManyRequests,
    Session(session::SessionError),
    Canceled,
    Setup(String),
}

impl std::fmt::Display for TurnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TurnError::Provider(e) => write!(f, "{}", e.message()),
            TurnError::TooManyRequests => write!(f, "agent exceeded {MAX_REQUESTS_PER_TURN} turns"),
            TurnError::Session(e) => write!(f, "session: {e}"),
            TurnError::Canceled => write!(f, "turn canceled"),
            TurnError::Setup(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TurnError {}

impl From<session::SessionError> for TurnError {
    fn from(e: session::SessionError) -> Self {
        TurnError::Session(e)
    }
}

/// A finished turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnOutcome {
    pub final_text: String,
    pub usage: provider::Usage,
    /// Tool calls the gate denied (CI can fail on these with `--fail-on-deny`).
    pub denied_calls: usize,
    pub model_requests: usize,
}

/// The model, the tools and the gate for one conversation.
pub struct Agent {
    pub provider: Provider,
    pub tools: Arc<ToolBox>,
    pub gate: Arc<Gate>,
    /// Prompt budget and compaction settings.
    pub budget: ContextBudget,
    /// `~/.gg/media` when the model accepts images: tool results' screenshots are then sent as
    /// image parts (`agent::images`); `None` sends their paths only.
    pub images: Option<std::path::PathBuf>,
}

/// A call after the gate: it runs, or it does not and the model gets the reason.
enum CallPlan {
    /// Boxed: an approved call carries its whole description.
    Run(Box<Approved>),
    Blocked(Denied),
}

/// A call after phase 2: what the session keeps about it and how it ended.
struct Finished {
    record: CallRecord,
    outcome: Outcome,
    ran: Option<(std::time::Instant, std::time::Instant)>,
}

impl Agent {
    /// The tool definitions sent with every request.
    pub fn tool_definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .specs()
            .into_iter()
            .map(|(name, description, parameters)| ToolDefinition {
                name,
                description,
                parameters,
            })
            .collect()
    }

    /// Runs one user turn to its final reply.
    pub async fn run_turn(
        &self,
        session: &mut Session,
        system: &[String],
        user_text: &str,
        queue: &MessageQueue,
        sink: &EventSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<TurnOutcome, TurnError> {
        // Before the session write (an fsync), so that the sandbox's start overlaps it.
        self.tools.warm_sandbox();
        session.recover_interrupted_tool_calls()?;
        session.append_message(session::Message::text(session::Role::User, user_text))?;
        let tools = self.tool_definitions();
        let mut outcome = TurnOutcome::default();
        // The untrusted-mail taint: set when the session already holds mail (an earlier turn,
        // a resumed session: the mail is still in what the model reads, whatever the next
        // prompt says), or once a call of this turn that returns mail is approved.
        let mut read_untrusted_mail = session_holds_untrusted_mail(session, &self.tools);
        for _ in 0..MAX_REQUESTS_PER_TURN {
            if cancel.is_cancelled() {
                return Err(TurnError::Canceled);
            }
            self.take_steering(session, queue, sink)?;
            let context = build_context(
                &self.provider,
                session,
                system,
                &tools,
                &self.budget,
                self.images.as_deref(),
                cancel,
            )
            .await
            .map_err(context_error)?;
            if context.compaction_usage != provider::Usage::default() {
                outcome.usage += context.compaction_usage;
                sink(AgentEvent::Usage(context.compaction_usage));
            }
            let request = ChatRequest {
                messages: context.messages,
                tools: tools.clone(),
                max_output_tokens: Some(self.budget.max_output_tokens),
            };
            outcome.model_requests += 1;
            let mut on_stream = |event: StreamEvent| match event {
                StreamEvent::TextDelta(t) => sink(AgentEvent::TextDelta(t)),
                StreamEvent::ThinkingDelta(t) => sink(AgentEvent::ThinkingDelta(t)),
                StreamEvent::Retrying {
                    retry,
                    delay,
                    reason,
                } => sink(AgentEvent::Retrying {
                    retry,
                    delay_ms: delay.as_millis() as u64,
                    reason,
                }),
            };
            let reply = match self.provider.stream(&request, &mut on_stream, cancel).await {
                Ok(reply) => reply,
                Err(error) => {
                    persist_failed_reply(session, &error, cancel.is_cancelled())?;
                    if cancel.is_cancelled() {
                        return Err(TurnError::Canceled);
                    }
                    return Err(TurnError::Provider(error));
                }
            };
            if let Some(usage) = reply.usage {
                outcome.usage += usage;
                session.append_usage(session_usage(usage))?;
                sink(AgentEvent::Usage(usage));
            }
            let mut message = session::Message::text(session::Role::Assistant, reply.text.clone());
            message.stop_reason = Some(session_stop(reply.stop_reason));
            for call in &reply.tool_calls {
                let stored = session::ToolCall::new(&call.id, &call.name, &call.arguments)
                    .map_err(|e| TurnError::Setup(format!("tool call arguments: {e}")))?;
                message.tool_calls.push(stored);
            }
            session.append_message(message)?;
            sink(AgentEvent::AssistantMessage {
                text: reply.text.clone(),
                tool_calls: reply.tool_calls.len(),
            });

            if reply.tool_calls.is_empty() {
                if !queue.has_steering() {
                    outcome.final_text = reply.text;
                    return Ok(outcome);
                }
                continue;
            }
            let calls: Vec<ToolCall> = reply.tool_calls;
            outcome.denied_calls += self
                .run_tools(session, calls, &mut read_untrusted_mail, sink, cancel)
                .await?;
            if cancel.is_cancelled() {
                return Err(TurnError::Canceled);
            }
        }
        Err(TurnError::TooManyRequests)
    }

    fn take_steering(
        &self,
        session: &mut Session,
        queue: &MessageQueue,
        sink: &EventSink<'_>,
    ) -> Result<(), TurnError> {
        for text in queue.drain_steering() {
            session.append_message(session::Message::text(session::Role::User, text.clone()))?;
            sink(AgentEvent::UserMessage { text });
        }
        Ok(())
    }

    /// Phase 1, strictly in call order, through the chain: classify ([`ToolBox::prepare`]), decide
    /// ([`Gate::check`], asking if needed). Phase 2: run the approved calls, `read`/`grep` up to
    /// four at a time, every other tool alone. Results are persisted in call order. Returns how
    /// many calls were denied.
    ///
    /// `read_untrusted_mail` is the session's taint: once a call that returns mail is approved,
    /// every later call of the session (later in this batch too: the model may have planned them
    /// around what the mail will say) is judged with [`Prepared::after_untrusted_mail`].
    async fn run_tools(
        &self,
        session: &mut Session,
        calls: Vec<ToolCall>,
        read_untrusted_mail: &mut bool,
        sink: &EventSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<usize, TurnError> {
        let mut plans = Vec::with_capacity(calls.len());
        let mut denied = 0;
        for call in calls {
            if cancel.is_cancelled() {
                plans.push(CallPlan::Blocked(Denied::cancelled_before_gate(
                    call,
                    self.gate.mode(),
                )));
                continue;
            }
            let mut prepared = match self.tools.prepare(call.clone()) {
                Ok(p) => p,
                Err(error) => {
                    sink(AgentEvent::ToolCallStart {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        summary: call.name.clone(),
                        classification: None,
                        action: "error".to_string(),
                        rule: String::new(),
                    });
                    plans.push(CallPlan::Blocked(Denied::unprepared(
                        call,
                        error.to_string(),
                    )));
                    continue;
                }
            };
            // The gate reports its decision (the call starts), and asking a person and the answer
            // only when one is really asked; a person may never answer (Ctrl+C while the prompt
            // waits, a daemon run cancelled while an approval is pending): the gate ends the wait
            // and records `cancelled`.
            if *read_untrusted_mail {
                prepared.after_untrusted_mail();
            }
            let taints = prepared.reads_untrusted_mail();
            let events = GateEvents { sink, call: &call };
            let plan = match self.gate.check(prepared, &events, cancel).await {
                Ok(approved) => {
                    *read_untrusted_mail |= taints;
                    CallPlan::Run(Box::new(approved))
                }
                Err(refused) => {
                    denied += 1;
                    CallPlan::Blocked(refused)
                }
            };
            plans.push(plan);
        }

        let finished = self.execute_plans(plans, cancel).await;
        for done in finished {
            let Finished {
                record,
                outcome,
                ran,
            } = done;
            sink(AgentEvent::ToolCallFinish {
                id: record.call.id.clone(),
                name: record.call.name.clone(),
                is_error: outcome.is_error,
                text: outcome.text.clone(),
                sandbox_level: outcome.sandbox.as_ref().map(SandboxRun::level_text),
                network_refused: outcome.network_refused.clone(),
                ran,
            });
            let mut message =
                session::Message::text(session::Role::Tool, result_text(&record, &outcome));
            message.tool_call_id = record.call.id.clone();
            message.tool_name = record.call.name.clone();
            if outcome.is_error {
                message.error = outcome.text.clone();
            }
            message.images = outcome
                .image
                .iter()
                .map(|path| path.display().to_string())
                .collect();
            let audit = audit_record(&record, &outcome, self.gate.origin());
            session.append_message_with_audit(message, Some(audit))?;
        }
        Ok(denied)
    }

    async fn execute_plans(
        &self,
        plans: Vec<CallPlan>,
        cancel: &CancellationToken,
    ) -> Vec<Finished> {
        let mut records = Vec::with_capacity(plans.len());
        let mut results: Vec<Option<Ran>> = Vec::with_capacity(plans.len());
        let mut in_flight: tokio::task::JoinSet<(usize, Ran)> = tokio::task::JoinSet::new();
        for (index, plan) in plans.into_iter().enumerate() {
            let approved = match plan {
                CallPlan::Blocked(Denied { record, message }) => {
                    records.push(*record);
                    results.push(Some((Outcome::error(message), None)));
                    continue;
                }
                CallPlan::Run(approved) => *approved,
            };
            records.push(approved.record());
            results.push(None);
            let parallel = approved.parallel_safe();
            if !parallel {
                // A barrier: everything in flight finishes first, then this call runs alone.
                drain(&mut in_flight, &mut results).await;
            }
            while in_flight.len() >= MAX_PARALLEL_TOOLS {
                join_one(&mut in_flight, &mut results).await;
            }
            if cancel.is_cancelled() {
                results[index] = Some((Outcome::error(super::chain::CANCELLED), None));
                continue;
            }
            let tools: Arc<ToolBox> = Arc::clone(&self.tools);
            let cancel = cancel.clone();
            let name = approved.call().name.clone();
            in_flight.spawn(async move {
                let task = tokio::spawn(async move {
                    let started = std::time::Instant::now();
                    let outcome = tools.execute(approved, &cancel).await;
                    (outcome, started, std::time::Instant::now())
                });
                let ran = match task.await {
                    Ok((outcome, started, finished)) => (outcome, Some((started, finished))),
                    Err(e) if e.is_panic() => (
                        Outcome::error(format!(
                            "tool \"{name}\" panicked: {}",
                            panic_text(e.into_panic())
                        )),
                        None,
                    ),
                    Err(_) => (Outcome::error(super::chain::CANCELLED), None),
                };
                (index, ran)
            });
            if !parallel {
                drain(&mut in_flight, &mut results).await;
            }
        }
        drain(&mut in_flight, &mut results).await;
        records
            .into_iter()
            .zip(results)
            .map(|(record, result)| {
                let (outcome, ran) =
                    result.unwrap_or_else(|| (Outcome::error("tool result missing"), None));
                Finished {
                    record,
                    outcome,
                    ran,
                }
            })
            .collect()
    }
}

/// A call's outcome and, when it ran, its start and finish times.
type Ran = (Outcome, Option<(std::time::Instant, std::time::Instant)>);

async fn join_one(set: &mut tokio::task::JoinSet<(usize, Ran)>, results: &mut [Option<Ran>]) {
    if let Some(Ok((index, outcome))) = set.join_next().await {
        results[index] = Some(outcome);
    }
}

async fn drain(set: &mut tokio::task::JoinSet<(usize, Ran)>, results: &mut [Option<Ran>]) {
    while !set.is_empty() {
        join_one(set, results).await;
    }
}

fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// The text the model receives: the outcome, plus for bash the classification and, when the
/// sandbox runs below its strongest level, that level.
fn result_text(record: &CallRecord, outcome: &Outcome) -> String {
    let Some(verdict) = &record.verdict else {
        return outcome.text.clone();
    };
    let mut text = outcome.text.clone();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "[gg: command classified {}",
        verdict.class.as_str()
    ));
    if let Some(run) = outcome.sandbox.as_ref().filter(|run| run.worth_saying()) {
        text.push_str(&format!("; sandbox level: {}", run.level_text()));
    }
    text.push(']');
    text
}

fn audit_record(record: &CallRecord, outcome: &Outcome, origin: Option<&str>) -> Audit {
    Audit {
        origin: origin.map(str::to_string),
        classification: record.classification.clone(),
        decision: record.decision.clone(),
        sandbox: outcome.sandbox.as_ref().map(|run| audit::SandboxRecord {
            level: run.level_text(),
            warning: run.warning.clone(),
        }),
        network: outcome
            .network_mode
            .as_ref()
            .map(|mode| audit::NetworkRecord {
                mode: mode.clone(),
                refused: outcome
                    .network_refused
                    .iter()
                    .map(|r| audit::NetworkRefusal {
                        host: r.host.clone(),
                        port: r.port,
                        rule: r.rule.clone(),
                    })
                    .collect(),
            }),
        browser: outcome.browser.clone(),
    }
}

/// Compaction and budget failures end the turn; they are the user's to fix (shorter input, a
/// larger budget), so they are reported like setup errors rather than provider failures.
fn context_error(error: ContextError) -> TurnError {
    match error {
        ContextError::Canceled => TurnError::Canceled,
        ContextError::Session(e) => TurnError::Session(e),
        other => TurnError::Setup(other.to_string()),
    }
}

/// Whether a tool result on the session's active path came from a tool that returns mail written
/// by others (the Google reads by name, and any offered tool that says it does), and delivered it
/// (a denied or failed call brought nothing in).
fn session_holds_untrusted_mail(session: &Session, tools: &ToolBox) -> bool {
    session.transcript().messages().iter().any(|message| {
        message.role == session::Role::Tool
            && message.error.is_empty()
            && (crate::agent::tools::google::UNTRUSTED_MAIL_TOOLS
                .contains(&message.tool_name.as_str())
                || tools.reads_untrusted_mail(&message.tool_name))
    })
}

fn persist_failed_reply(
    session: &mut Session,
    error: &ProviderError,
    canceled: bool,
) -> Result<(), TurnError> {
    let partial = error.partial();
    let content = if partial.text.is_empty() {
        format!("Request interrupted: {}", error.message())
    } else {
        partial.text.clone()
    };
    let mut message = session::Message::text(session::Role::Assistant, content);
    message.stop_reason = Some(if canceled {
        session::StopReason::Canceled
    } else {
        match partial.stop_reason {
            provider::StopReason::MaxTokens => session::StopReason::MaxTokens,
            _ => session::StopReason::Error,
        }
    });
    message.error = error.message().to_string();
    session.append_message(message)?;
    if let Some(usage) = partial.usage {
        session.append_usage(session_usage(usage))?;
    }
    Ok(())
}

fn session_stop(stop: provider::StopReason) -> session::StopReason {
    match stop {
        provider::StopReason::EndTurn => session::StopReason::EndTurn,
        provider::StopReason::ToolUse => session::StopReason::ToolUse,
        provider::StopReason::MaxTokens => session::StopReason::MaxTokens,
        provider::StopReason::Error => session::StopReason::Error,
    }
}

fn session_usage(u: provider::Usage) -> session::Usage {
    session::Usage {
        prompt_tokens: u.prompt_tokens,
        completion_tokens: u.completion_tokens,
        total_tokens: u.total_tokens,
    }
}
