//! The approval gate: the policy table's answer, and the person's when the table says ask.
//!
//! The approver is always passed explicitly. Modes in which nobody can answer get
//! [`NobodyToAsk`], which denies: the policy table never asks in those modes, so reaching it is a
//! bug, and a bug here must fail closed.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use classifier::Class;
use policies::{Decision, Mode, Request, Terminal, decide};

use crate::session::audit;
use crate::tools::registry::Prepared;

/// What a person is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalPrompt {
    pub call_id: String,
    pub tool: String,
    pub summary: String,
    /// The command with its classification and reasons, or a diff preview.
    pub details: String,
    /// Why the policy asks (e.g. "dangerous command: always needs your confirmation").
    pub reason: String,
    /// Dangerous calls cannot be allowed for the rest of the session.
    pub dangerous: bool,
}

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Allow,
    /// Allow this exact call for the rest of the session (never offered for dangerous calls).
    AllowForSession,
    Deny,
}

pub type AnswerFuture<'a> = Pin<Box<dyn Future<Output = Result<Answer, String>> + Send + 'a>>;

/// Asks a person. Implemented by the CLI (a prompt on stderr) and the daemon (an RPC round trip).
pub trait Approver: Send + Sync {
    fn ask<'a>(&'a self, prompt: &'a ApprovalPrompt) -> AnswerFuture<'a>;
}

/// The approver for runs where no person exists.
pub struct NobodyToAsk;

impl Approver for NobodyToAsk {
    fn ask<'a>(&'a self, _prompt: &'a ApprovalPrompt) -> AnswerFuture<'a> {
        Box::pin(async { Err("nobody is present to answer an approval prompt".to_string()) })
    }
}

/// The gate's verdict on one call, with the audit record of who decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateResult {
    pub allowed: bool,
    /// The tool error the model receives when not allowed.
    pub denial: Option<String>,
    pub audit: audit::Decision,
}

/// Mode, terminal, the approver, and the calls a person allowed for the rest of the session.
pub struct Gate {
    mode: Mode,
    terminal: Terminal,
    approver: Arc<dyn Approver>,
    grants: Mutex<HashSet<String>>,
}

impl Gate {
    pub fn new(mode: Mode, terminal: Terminal, approver: Arc<dyn Approver>) -> Gate {
        Gate {
            mode,
            terminal,
            approver,
            grants: Mutex::new(HashSet::new()),
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The table's decision for a call, before any person is involved.
    pub fn decision(&self, prepared: &Prepared) -> Decision {
        decide(&Request {
            mode: self.mode,
            terminal: self.terminal,
            call: prepared.policy_call(),
        })
    }

    /// Decides one call, asking the approver when the table says so. `on_ask` sees the prompt
    /// just before a person is asked (a UI's `approval_requested` event); it is not called when
    /// the table decides alone or a session grant covers the call.
    pub async fn check(
        &self,
        prepared: &Prepared,
        on_ask: &(dyn Fn(&ApprovalPrompt) + Sync),
    ) -> GateResult {
        let decision = self.decision(prepared);
        let record = |action: &str, by: &str| audit::Decision {
            action: action.to_string(),
            rule: Some(decision.rule().id().to_string()),
            decided_by: by.to_string(),
            mode: self.mode.as_str().to_string(),
        };
        let tool = &prepared.call.name;
        match &decision {
            Decision::Allow { .. } => GateResult {
                allowed: true,
                denial: None,
                audit: record("allow", audit::decided_by::POLICY),
            },
            Decision::Deny { message, .. } => GateResult {
                allowed: false,
                denial: Some(format!("tool call \"{tool}\" denied by policy: {message}")),
                audit: record("deny", audit::decided_by::POLICY),
            },
            Decision::Ask { prompt, .. } => {
                let dangerous = prepared
                    .verdict()
                    .is_some_and(|v| v.class == Class::Dangerous);
                if !dangerous && self.granted(&prepared.grant_key) {
                    return GateResult {
                        allowed: true,
                        denial: None,
                        audit: record("allow", audit::decided_by::SESSION_RULE),
                    };
                }
                let question = ApprovalPrompt {
                    call_id: prepared.call.id.clone(),
                    tool: tool.clone(),
                    summary: prepared.summary.clone(),
                    details: prepared.details.clone(),
                    reason: prompt.clone(),
                    dangerous,
                };
                on_ask(&question);
                match self.approver.ask(&question).await {
                    Ok(Answer::Allow) => GateResult {
                        allowed: true,
                        denial: None,
                        audit: record("allow", audit::decided_by::USER),
                    },
                    Ok(Answer::AllowForSession) => {
                        // A dangerous call is confirmed once, never for the session.
                        if !dangerous {
                            self.grant(&prepared.grant_key);
                        }
                        GateResult {
                            allowed: true,
                            denial: None,
                            audit: record(
                                if dangerous { "allow" } else { "allow-session" },
                                audit::decided_by::USER,
                            ),
                        }
                    }
                    Ok(Answer::Deny) => GateResult {
                        allowed: false,
                        denial: Some(format!("tool call \"{tool}\" denied by user")),
                        audit: record("deny", audit::decided_by::USER),
                    },
                    Err(e) => GateResult {
                        allowed: false,
                        denial: Some(format!("approval failed for tool \"{tool}\": {e}")),
                        audit: record("deny", audit::decided_by::POLICY),
                    },
                }
            }
        }
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
