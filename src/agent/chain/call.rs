//! The states of a call before the gate and after a denial: [`Prepared`] (resolved, described,
//! classified), [`Denied`] (with the error the model receives), and what the session records of
//! either ([`CallRecord`]). [`Approved`](super::Approved) lives with the gate that makes it.

use std::time::Duration;

use classifier::{Class, Verdict};
use policies::{Forbidden, Mode};

use super::tool::{Assessment, Run};
use crate::session::audit;
use crate::tools::registry::ToolCall;

/// A call resolved and described, ready for the gate. Not cloneable: it is consumed by
/// [`Gate::check`](super::Gate::check).
pub struct Prepared {
    pub(super) call: ToolCall,
    pub(super) summary: String,
    pub(super) details: String,
    pub(super) grant_key: String,
    pub(super) parallel_safe: bool,
    pub(super) checked: Checked,
}

pub(super) enum Checked {
    Command {
        verdict: Verdict,
        forbidden: Option<Forbidden>,
        script: String,
        timeout: Duration,
    },
    Tool {
        assessment: Assessment,
        run: Run,
    },
}

impl Prepared {
    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    /// One line for lists and events.
    pub fn summary(&self) -> &str {
        &self.summary
    }

    /// What a person needs to decide.
    pub fn details(&self) -> &str {
        &self.details
    }

    /// The classifier's verdict, for a shell command.
    pub fn verdict(&self) -> Option<&Verdict> {
        match &self.checked {
            Checked::Command { verdict, .. } => Some(verdict),
            Checked::Tool { .. } => None,
        }
    }

    /// Whether the call is dangerous (asked every time, never covered by a session grant).
    pub fn dangerous(&self) -> bool {
        match &self.checked {
            Checked::Command { verdict, .. } => verdict.class == Class::Dangerous,
            Checked::Tool { assessment, .. } => matches!(assessment, Assessment::Dangerous { .. }),
        }
    }

    /// The call as the decision table sees it.
    pub(super) fn policy_call(&self) -> policies::Call<'_> {
        let tool = self.call.name.as_str();
        match &self.checked {
            Checked::Command {
                verdict, forbidden, ..
            } => policies::Call::Bash {
                class: verdict.class,
                forbidden: forbidden.as_ref(),
            },
            Checked::Tool { assessment, .. } => match assessment {
                Assessment::ReadOnly => policies::Call::ReadType { tool },
                Assessment::PreApproved { reason } => policies::Call::PreApproved { tool, reason },
                Assessment::Normal => policies::Call::Gated { tool },
                Assessment::Dangerous { .. } => policies::Call::DangerousTool { tool },
            },
        }
    }

    /// Why a dangerous tool call is dangerous, as one clause for denials.
    pub(super) fn danger_reasons(&self) -> Option<String> {
        match &self.checked {
            Checked::Tool {
                assessment: Assessment::Dangerous { reasons },
                ..
            } if !reasons.is_empty() => Some(
                reasons
                    .iter()
                    .map(|r| r.message.as_str())
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            _ => None,
        }
    }

    pub(super) fn record(&self, decision: Option<audit::Decision>) -> CallRecord {
        CallRecord {
            call: self.call.clone(),
            verdict: self.verdict().cloned(),
            classification: Some(self.classification()),
            decision,
        }
    }

    /// The class of the call as the audit trail keeps it: the classifier's verdict for a shell
    /// command, the tool's own assessment for any other tool.
    fn classification(&self) -> audit::Classification {
        let reason = |rule: &str, message: &str| audit::Reason {
            rule: rule.to_string(),
            message: message.to_string(),
        };
        match &self.checked {
            Checked::Command { verdict, .. } => audit::Classification {
                verdict: verdict.class.as_str().to_string(),
                reasons: verdict
                    .reasons
                    .iter()
                    .map(|r| reason(&r.rule, &r.message))
                    .collect(),
            },
            Checked::Tool { assessment, .. } => {
                let (verdict, reasons) = match assessment {
                    Assessment::ReadOnly => ("read-only", Vec::new()),
                    Assessment::PreApproved { reason: why } => {
                        ("pre-approved", vec![reason("pre-approved", why)])
                    }
                    Assessment::Normal => ("normal", Vec::new()),
                    Assessment::Dangerous { reasons } => (
                        "dangerous",
                        reasons
                            .iter()
                            .map(|r| reason(&r.rule, &r.message))
                            .collect(),
                    ),
                };
                audit::Classification {
                    verdict: verdict.to_string(),
                    reasons,
                }
            }
        }
    }
}

/// What the session keeps about a call, whatever became of it.
#[derive(Debug, Clone)]
pub struct CallRecord {
    pub call: ToolCall,
    /// For a shell command: the classifier's verdict.
    pub verdict: Option<Verdict>,
    /// The call's class for the audit trail (every tool); `None` for a call that was never
    /// described (unknown tool, arguments that did not parse).
    pub classification: Option<audit::Classification>,
    /// Who decided and how; `None` for a call that never reached the gate.
    pub decision: Option<audit::Decision>,
}

/// A call that must not run, with the error the model receives and the audit record.
#[derive(Debug, Clone)]
pub struct Denied {
    /// Boxed: a denial travels in `Result`s, and the record is large.
    pub record: Box<CallRecord>,
    /// The tool error the model receives.
    pub message: String,
}

impl Denied {
    /// A call that never reached the gate (its arguments did not parse, the tool is unknown).
    pub fn unprepared(call: ToolCall, message: String) -> Denied {
        Denied {
            record: Box::new(CallRecord {
                call,
                verdict: None,
                classification: None,
                decision: None,
            }),
            message,
        }
    }

    /// A call the turn's cancellation stopped before it was decided.
    pub fn cancelled_before_gate(call: ToolCall, mode: Mode) -> Denied {
        Denied {
            record: Box::new(CallRecord {
                call,
                verdict: None,
                classification: None,
                decision: Some(cancelled_record(None, mode)),
            }),
            message: CANCELLED.to_string(),
        }
    }
}

/// The tool result of a call stopped by cancellation.
pub const CANCELLED: &str = "tool not executed: context canceled";

pub(super) fn cancelled_record(rule: Option<String>, mode: Mode) -> audit::Decision {
    audit::Decision {
        action: audit::action::CANCELLED.to_string(),
        rule,
        decided_by: audit::decided_by::USER.to_string(),
        mode: mode.as_str().to_string(),
    }
}
