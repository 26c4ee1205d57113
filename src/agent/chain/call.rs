//! The states of a call before the gate and after a denial: [`Prepared`] (resolved, described,
//! classified), [`Denied`] (with the error the model receives), and what the session records of
//! either ([`CallRecord`]). [`Approved`](super::Approved) lives with the gate that makes it.

use std::time::Duration;

use classifier::{Class, Verdict};
use policies::{Forbidden, Mode};

use super::tool::{Assessment, Reason, Run};
use crate::session::audit;
use tools::registry::ToolCall;

/// The rule id of the taint (see [`Prepared::after_untrusted_mail`]).
pub const TAINT_RULE: &str = "taint.untrusted-mail";

/// A call resolved and described, ready for the gate. Not cloneable: it is consumed by
/// [`Gate::check`](super::Gate::check).
pub struct Prepared {
    pub(super) call: ToolCall,
    pub(super) summary: String,
    pub(super) details: String,
    pub(super) grant_key: String,
    pub(super) parallel_safe: bool,
    /// The tool returns mail written by others ([`Tool::reads_untrusted_mail`](super::Tool)).
    pub(super) reads_untrusted_mail: bool,
    /// The tool could carry data out ([`Tool::may_send_data_out`](super::Tool)).
    pub(super) may_send_data_out: bool,
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

    /// Whether approving this call taints the rest of the session: it returns untrusted mail.
    pub fn reads_untrusted_mail(&self) -> bool {
        self.reads_untrusted_mail
    }

    /// The taint rule: in a session that has read untrusted mail, a call that could send data out
    /// of the project (a shell command that is not read-only, which may reach the network or
    /// write anywhere the sandbox allows; any tool that reaches the network or writes outside
    /// the working directory) becomes dangerous, whatever the mode: it needs a person, and is
    /// denied where there is none. A hostile message cannot make the agent send anything.
    pub fn after_untrusted_mail(&mut self) {
        const RULE: &str = TAINT_RULE;
        match &mut self.checked {
            Checked::Command {
                verdict, script, ..
            } if verdict.class != Class::ReadOnly => {
                let message = "after untrusted mail: this turn read mail, and the command may \
                               reach the network or write outside the project";
                // The person asked sees the new class and why, under the classification line,
                // which follows the command (`ToolBox::command_details`), whatever it holds.
                let shown = format!("\nclassification: {}", verdict.class.as_str());
                let at = "command: ".len() + script.len();
                if self
                    .details
                    .get(at..)
                    .is_some_and(|rest| rest.starts_with(&shown))
                {
                    let line_end = self.details[at + 1..]
                        .find('\n')
                        .map_or(self.details.len(), |n| at + 1 + n);
                    self.details
                        .insert_str(line_end, &format!("\n  - {RULE}: {message}"));
                    self.details
                        .replace_range(at..at + shown.len(), "\nclassification: dangerous");
                }
                verdict.class = Class::Dangerous;
                verdict.reasons.push(classifier::Reason {
                    rule: RULE.to_string(),
                    class: Class::Dangerous,
                    message: message.to_string(),
                    span: (0, script.len()),
                });
            }
            Checked::Tool { assessment, .. } if self.may_send_data_out => {
                let reason = Reason {
                    rule: RULE.to_string(),
                    message: format!(
                        "after untrusted mail: this turn read mail, and {} may send data out of \
                         the project",
                        self.call.name
                    ),
                };
                let mut reasons = match std::mem::replace(assessment, Assessment::ReadOnly) {
                    Assessment::Dangerous { reasons } => reasons,
                    _ => Vec::new(),
                };
                self.details = format!(
                    "dangerous:\n  - {}: {}\n{}",
                    reason.rule, reason.message, self.details
                );
                reasons.push(reason);
                *assessment = Assessment::Dangerous { reasons };
            }
            _ => {}
        }
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
            // The classifier's own reasons are in the command's result line; the taint is not
            // the command's doing, so the model is told.
            Checked::Command { verdict, .. } => verdict
                .reasons
                .iter()
                .find(|r| r.rule == TAINT_RULE)
                .map(|r| r.message.clone()),
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
