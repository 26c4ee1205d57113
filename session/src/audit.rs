//! The audit trail of tool calls: what ran, under which policy decision and which isolation.
//!
//! Recorded as an optional `audit` object next to `message` on the `message` entry of a tool
//! result (a gg extension of format version 3; the Go reader and older gg builds ignore unknown
//! fields, so files stay compatible both ways). All values are plain strings so that a newer
//! vocabulary never makes an older build refuse to open a session; the expected values are
//! documented on each field.

use serde::{Deserialize, Serialize};

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
    /// Where the request came from when the person was not at a terminal or a ggd client:
    /// `telegram:<chat id>` for a chat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
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
