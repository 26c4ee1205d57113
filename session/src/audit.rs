//! The audit trail of tool calls: what ran, under which policy decision and which isolation.
//!
//! Recorded as an optional `audit` object next to `message` on the `message` entry of a tool
//! result (a gg extension of format version 3; the Go reader and older gg builds ignore unknown
//! fields, so files stay compatible both ways). All values are plain strings so that a newer
//! vocabulary never makes an older build refuse to open a session; the expected values are
//! documented on each field.

use serde::{Deserialize, Serialize};

use super::entry::{EntryKind, Role};
use super::transcript::Transcript;

/// Audit trail of one tool call, stored on its result entry.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Audit {
    /// Classifier verdict for bash commands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classification: Option<Classification>,
    /// The approval decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// The isolation the call ran under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxRecord>,
    /// The network policy of a sandboxed call, and what it refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkRecord>,
    /// A browser tool's page: the URL it ended on (after redirects) and any screenshot saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<BrowserRecord>,
}

/// What a browser tool call saw.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrowserRecord {
    /// The page's URL when the call ended (a navigation's final URL).
    pub url: String,
    /// The HTTP status of a navigation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The path of a screenshot the call saved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<String>,
}

/// The network policy a sandboxed call ran under.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkRecord {
    /// `off`, `on` or `allow-list`.
    pub mode: String,
    /// Connections the allow-list proxy refused during the call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<NetworkRefusal>,
}

/// One refused connection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkRefusal {
    /// The host the command asked for.
    pub host: String,
    /// The port.
    pub port: u16,
    /// Why (`not-on-allow-list`, `ip-literal`, `private-address`, `bad-host`).
    pub rule: String,
}

/// What the command classifier said about a bash command.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Classification {
    /// The classifier's verdict, as the classifier names it (e.g. `safe`, `unsafe`, `unknown`).
    pub verdict: String,
    /// The rules that produced the verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<Reason>,
}

/// One classifier rule that fired.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reason {
    /// Rule identifier.
    pub rule: String,
    /// Human-readable explanation.
    pub message: String,
}

/// The approval decision for a tool call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// `allow`, `allow-session`, `deny` or `cancelled` (a prompt is recorded by its outcome; see
    /// [`action`]).
    pub action: String,
    /// The policy or session rule that decided, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Who decided: `policy`, `user` or `session-rule`.
    #[serde(rename = "decidedBy")]
    pub decided_by: String,
    /// The approval mode in force (e.g. `auto`, `on-request`, `never`, `yolo`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mode: String,
}

/// What became of a call (the values of [`Decision::action`]).
pub mod action {
    /// Allowed, by a policy rule, a person, or a session grant.
    pub const ALLOW: &str = "allow";
    /// A person allowed it for the rest of the session.
    pub const ALLOW_SESSION: &str = "allow-session";
    /// Refused.
    pub const DENY: &str = "deny";
    /// The turn was cancelled (Ctrl+C, a cancelled daemon run) before the call was decided.
    pub const CANCELLED: &str = "cancelled";
}

/// Who made an approval decision (the values of [`Decision::decided_by`]).
pub mod decided_by {
    /// A policy rule.
    pub const POLICY: &str = "policy";
    /// The user, answering a prompt.
    pub const USER: &str = "user";
    /// A rule the user granted earlier in the session.
    pub const SESSION_RULE: &str = "session-rule";
}

/// The isolation a tool call ran under.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxRecord {
    /// Sandbox level as the sandbox crate names it.
    pub level: String,
    /// A degradation warning (e.g. a requested isolation was unavailable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// What happened to a tool call, as seen from its result entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// A result without error.
    Ok,
    /// A result with the `error` field set.
    Error,
    /// The interruption placeholder written on resume: the call may or may not have run.
    Interrupted,
    /// No result was recorded (the session ended mid-call and was not resumed).
    Missing,
}

/// One row of `gg audit`: a tool call with its arguments, outcome and audit trail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCallAudit {
    /// Entry id of the assistant message that requested the call.
    #[serde(rename = "requestEntryId")]
    pub request_entry_id: String,
    /// When the call was requested (entry timestamp, RFC 3339).
    pub timestamp: String,
    /// Provider call id.
    #[serde(rename = "callId")]
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// Arguments as JSON text.
    pub arguments: String,
    /// Outcome.
    pub status: CallStatus,
    /// Entry id of the result, if there is one.
    #[serde(rename = "resultEntryId", skip_serializing_if = "Option::is_none")]
    pub result_entry_id: Option<String>,
    /// Error text of the result, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Audit trail of the result, if one was recorded (results written by the Go implementation
    /// or by interruption recovery have none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<Audit>,
    /// True when the call is on the currently checked-out branch.
    #[serde(rename = "activeBranch")]
    pub active_branch: bool,
}

/// Every tool call of every branch, in file order, with its result and audit trail.
///
/// A result belongs to a call when its `toolCallId` matches one of the calls of the nearest
/// assistant message above it in the tree; this keeps branches apart even when providers reuse
/// call ids.
pub fn audit_trail(transcript: &Transcript) -> Vec<ToolCallAudit> {
    let entries = transcript.entries();
    let active = transcript.active_mask();
    // (assistant entry index, call id) -> result entry index; the first result wins.
    let mut results: std::collections::HashMap<(usize, &str), usize> =
        std::collections::HashMap::new();
    for (index, entry) in entries.iter().enumerate() {
        let Some(message) = entry.message() else {
            continue;
        };
        if message.role != Role::Tool || message.tool_call_id.is_empty() {
            continue;
        }
        if let Some(request) = transcript.nearest_ancestor(index, |candidate| {
            candidate.message().is_some_and(|m| m.role != Role::Tool)
        }) {
            results
                .entry((request, message.tool_call_id.as_str()))
                .or_insert(index);
        }
    }
    let mut rows = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let EntryKind::Message { message, .. } = &entry.kind else {
            continue;
        };
        if message.role != Role::Assistant {
            continue;
        }
        for call in &message.tool_calls {
            let result = results
                .get(&(index, call.id.as_str()))
                .map(|&i| &entries[i]);
            let (status, error, audit, result_entry_id) = match result {
                None => (CallStatus::Missing, None, None, None),
                Some(result_entry) => {
                    let result_message = result_entry.message();
                    let error = result_message
                        .map(|m| m.error.clone())
                        .filter(|e| !e.is_empty());
                    let status = match &error {
                        Some(text) if text == super::INTERRUPTED_TOOL_RESULT => {
                            CallStatus::Interrupted
                        }
                        Some(_) => CallStatus::Error,
                        None => CallStatus::Ok,
                    };
                    (
                        status,
                        error,
                        result_entry.audit().cloned(),
                        Some(result_entry.id.clone()),
                    )
                }
            };
            rows.push(ToolCallAudit {
                request_entry_id: entry.id.clone(),
                timestamp: entry.timestamp.clone(),
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.get().to_owned(),
                status,
                result_entry_id,
                error,
                audit,
                active_branch: active[index],
            });
        }
    }
    rows
}
