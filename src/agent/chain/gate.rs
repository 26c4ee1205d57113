//! Step 2 of the chain, deciding: the exhaustive table of `policies::decide` (mode × terminal ×
//! call × session grant) answers allow, deny or ask, and when it asks, a person answers. The only
//! way to obtain an [`Approved`] call is [`Gate::check`]: its fields are private to this file.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use policies::{Decision, Granted, Mode, Request, Terminal, decide};
use tokio_util::sync::CancellationToken;

use super::call::{CANCELLED, CallRecord, Denied, Prepared, cancelled_record};
use crate::agent::approval::{Answer, ApprovalPrompt, Approver};
use crate::session::audit;
use tools::registry::ToolCall;

/// What the gate tells while it decides a call, for a front end's events. Each method does
/// nothing by default; `()` is the observer that is told nothing.
pub trait GateObserver: Sync {
    /// The table's decision, made once, before anyone is asked (an `Ask` still ends either way).
    fn decided(&self, _prepared: &Prepared, _decision: &Decision) {}
    /// A person is about to be asked (a session grant answering is no asking).
    fn asked(&self, _prompt: &ApprovalPrompt) {}
    /// How the asking ended: allowed or not, and who decided (`user`, or `policy` when the
    /// approver failed); after [`GateObserver::asked`] only.
    fn resolved(&self, _allowed: bool, _decided_by: &str) {}
}

/// No observer: nothing is told.
impl GateObserver for () {}

/// Mode, terminal, the approver, and the calls a person allowed for the rest of the session.
///
/// The approver is always passed explicitly. Modes in which nobody can answer get
/// [`NobodyToAsk`](crate::agent::approval::NobodyToAsk), which denies: the table never asks in those
/// modes, so reaching it is a bug, and a bug here must fail closed.
pub struct Gate {
    mode: Mode,
    terminal: Terminal,
    approver: Arc<dyn Approver>,
    grants: Mutex<HashSet<String>>,
    /// Where the calls come from when not from the terminal or a ggd client (`telegram:<chat>`);
    /// recorded on every call's audit.
    origin: Option<String>,
}

impl Gate {
    pub fn new(mode: Mode, terminal: Terminal, approver: Arc<dyn Approver>) -> Gate {
        Gate {
            mode,
            terminal,
            approver,
            grants: Mutex::new(HashSet::new()),
            origin: None,
        }
    }

    /// The gate for calls requested from `origin` (`telegram:<chat id>`), which the audit names.
    pub fn with_origin(mut self, origin: &str) -> Gate {
        self.origin = Some(origin.to_string());
        self
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Where the calls come from, when not the terminal or a ggd client.
    pub fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }

    /// The table's decision for a call, session grants included, before any person is asked.
    fn decision(&self, prepared: &Prepared) -> Decision {
        let granted = if self.granted(&prepared.grant_key) {
            Granted::ForSession
        } else {
            Granted::No
        };
        decide(&Request {
            mode: self.mode,
            terminal: self.terminal,
            granted,
            call: prepared.policy_call(),
        })
    }

    /// Step 2: decides one call, asking the approver when the table says so. The table runs
    /// once; `observer` sees its decision, then, only when a person is really asked, the prompt
    /// just before and the answer after (a UI's `tool_call_start`, `approval_requested` and
    /// `approval_resolved` events). Cancellation while a person is asked ends the wait: the call
    /// is recorded as `cancelled`.
    pub async fn check(
        &self,
        prepared: Prepared,
        observer: &dyn GateObserver,
        cancel: &CancellationToken,
    ) -> Result<Approved, Denied> {
        let decision = self.decision(&prepared);
        observer.decided(&prepared, &decision);
        let rule = decision.rule().id().to_string();
        let record = |action: &str, by: &str| audit::Decision {
            action: action.to_string(),
            rule: Some(rule.clone()),
            decided_by: by.to_string(),
            mode: self.mode.as_str().to_string(),
        };
        let tool = prepared.call.name.clone();
        let deny = |prepared: Prepared, message: String, decision: audit::Decision| {
            Err(Denied {
                record: Box::new(prepared.record(Some(decision))),
                message,
            })
        };
        let prompt = match decision {
            Decision::Allow {
                rule: policies::Rule::SessionGrant,
            } => {
                let decision = record(audit::action::ALLOW, audit::decided_by::SESSION_RULE);
                return Ok(Approved { prepared, decision });
            }
            Decision::Allow { .. } => {
                let decision = record(audit::action::ALLOW, audit::decided_by::POLICY);
                return Ok(Approved { prepared, decision });
            }
            Decision::Deny { message, .. } => {
                let why = prepared
                    .danger_reasons()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default();
                let message = format!("tool call \"{tool}\" denied by policy: {message}{why}");
                let decision = record(audit::action::DENY, audit::decided_by::POLICY);
                return deny(prepared, message, decision);
            }
            Decision::Ask { prompt, .. } => prompt,
        };
        let dangerous = prepared.dangerous();
        let question = ApprovalPrompt {
            call_id: prepared.call.id.clone(),
            tool: tool.clone(),
            summary: prepared.summary.clone(),
            details: prepared.details.clone(),
            // Control characters in what is shown are escaped there; the reason says so.
            reason: crate::display::flag_controls(&prompt, &[&prepared.summary, &prepared.details]),
            dangerous,
        };
        observer.asked(&question);
        let answered: Result<Approved, Denied> = async {
            let answer = tokio::select! {
                answer = self.approver.ask(&question) => answer,
                () = cancel.cancelled() => {
                    let decision = cancelled_record(Some(rule.clone()), self.mode);
                    return deny(prepared, CANCELLED.to_string(), decision);
                }
            };
            match answer {
                Ok(Answer::Allow) => {
                    let decision = record(audit::action::ALLOW, audit::decided_by::USER);
                    Ok(Approved { prepared, decision })
                }
                Ok(Answer::AllowForSession) => {
                    // A dangerous call is confirmed once, never for the session.
                    let action = if dangerous {
                        audit::action::ALLOW
                    } else {
                        self.grant(&prepared.grant_key);
                        audit::action::ALLOW_SESSION
                    };
                    let decision = record(action, audit::decided_by::USER);
                    Ok(Approved { prepared, decision })
                }
                Ok(Answer::Deny) => {
                    let decision = record(audit::action::DENY, audit::decided_by::USER);
                    deny(
                        prepared,
                        format!("tool call \"{tool}\" denied by user"),
                        decision,
                    )
                }
                Err(e) => {
                    let decision = record(audit::action::DENY, audit::decided_by::POLICY);
                    let message = format!("approval failed for tool \"{tool}\": {e}");
                    deny(prepared, message, decision)
                }
            }
        }
        .await;
        let (allowed, decided_by) = match &answered {
            Ok(approved) => (true, approved.decision.decided_by.as_str()),
            Err(denied) => (
                false,
                denied
                    .record
                    .decision
                    .as_ref()
                    .map_or("", |d| d.decided_by.as_str()),
            ),
        };
        observer.resolved(allowed, decided_by);
        answered
    }

    fn granted(&self, key: &str) -> bool {
        self.grants.lock().map(|g| g.contains(key)).unwrap_or(false)
    }

    fn grant(&self, key: &str) {
        if let Ok(mut grants) = self.grants.lock() {
            grants.insert(key.to_string());
        }
    }
}

/// A call the gate allowed. Only [`Gate::check`] makes one (its fields are private to this file);
/// [`ToolBox::execute`](super::ToolBox::execute) consumes it.
pub struct Approved {
    prepared: Prepared,
    decision: audit::Decision,
}

impl Approved {
    pub fn call(&self) -> &ToolCall {
        &self.prepared.call
    }

    /// Whether it may run alongside other calls.
    pub fn parallel_safe(&self) -> bool {
        self.prepared.parallel_safe
    }

    /// What the session records about it.
    pub fn record(&self) -> CallRecord {
        self.prepared.record(Some(self.decision.clone()))
    }
}

impl Approved {
    /// The call and the decision that allowed it, for the one place that runs it.
    pub(super) fn into_parts(self) -> (Prepared, audit::Decision) {
        (self.prepared, self.decision)
    }
}
