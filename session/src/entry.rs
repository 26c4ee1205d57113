//! The on-disk records: header (line 1) and the flat entries after it.
//!
//! Field names match the Go implementation byte for byte. Unknown fields are ignored on read, so
//! files written by newer versions still open; the optional `audit` object on message entries is
//! ignored the same way by older readers.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::audit::Audit;

/// Current on-disk format version.
pub const CURRENT_VERSION: u32 = 3;

/// Line 1 of a session file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Always `session`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Format version; files below [`CURRENT_VERSION`] are migrated on open.
    pub version: u32,
    /// Session id (16 hex digits for sessions created by gg).
    pub id: String,
    /// Creation time, RFC 3339 UTC.
    #[serde(default)]
    pub timestamp: String,
    /// Working directory the session belongs to.
    #[serde(default)]
    pub cwd: String,
    /// Workspace binding, if any.
    #[serde(
        rename = "workspaceId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub workspace_id: Option<String>,
    /// Id of the session this one was forked or cloned from.
    #[serde(
        rename = "parentSessionId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub parent_session_id: Option<String>,
    /// Id of the last entry copied from the parent session.
    #[serde(
        rename = "parentEntryId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub parent_entry_id: Option<String>,
    /// Legacy v2 field: path of the parent session. Kept when present, never set by gg.
    #[serde(
        rename = "parentSession",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub parent_session: Option<String>,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// System instructions.
    System,
    /// The user.
    User,
    /// The model.
    Assistant,
    /// A tool result.
    Tool,
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Normal end of the reply.
    EndTurn,
    /// The reply asks for tool calls.
    ToolUse,
    /// The request failed.
    Error,
    /// The output token limit was reached.
    MaxTokens,
    /// The run was cancelled.
    Canceled,
}

/// A structured content block; only text exists in format version 3.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
}

/// One tool call requested by the model.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned call id; the tool result refers to it.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments exactly as the model sent them (raw JSON, kept byte for byte).
    pub arguments: Box<RawValue>,
}

impl ToolCall {
    /// A tool call whose arguments are the JSON text `arguments`; fails if it is not valid JSON.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: &str,
    ) -> serde_json::Result<Self> {
        Ok(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: RawValue::from_string(arguments.to_owned())?,
        })
    }
}

impl PartialEq for ToolCall {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.name == other.name
            && self.arguments.get() == other.arguments.get()
    }
}

/// A conversation message as stored in a `message` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Text content.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content: String,
    /// Structured content, when the provider returned blocks.
    #[serde(
        rename = "contentBlocks",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub content_blocks: Vec<ContentBlock>,
    /// Tool calls of an assistant message.
    #[serde(rename = "toolCalls", default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool result: the call it answers.
    #[serde(
        rename = "toolCallId",
        default,
        skip_serializing_if = "String::is_empty"
    )]
    pub tool_call_id: String,
    /// For a tool result: the tool's name.
    #[serde(rename = "toolName", default, skip_serializing_if = "String::is_empty")]
    pub tool_name: String,
    /// Unix milliseconds; 0 means unset and is filled in on append.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub timestamp: i64,
    /// Why the model stopped (assistant messages).
    #[serde(
        rename = "stopReason",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub stop_reason: Option<StopReason>,
    /// Error text (failed requests, failed tools).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
    /// For a tool result: images the tool saved (a screenshot), by absolute path. Only the path
    /// is kept; the bytes are read from the file when a request is built, so a session file
    /// stays small and an image deleted since is reported as gone rather than resent
    /// (gg extension; other readers ignore it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

impl Message {
    /// A message with only a role and text content.
    pub fn text(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            content_blocks: Vec::new(),
            tool_calls: Vec::new(),
            tool_call_id: String::new(),
            tool_name: String::new(),
            timestamp: 0,
            stop_reason: None,
            error: String::new(),
            images: Vec::new(),
        }
    }

    /// The readable text: `content`, or the text blocks joined by newlines when it is empty.
    pub fn display_text(&self) -> String {
        if !self.content.is_empty() {
            return self.content.clone();
        }
        self.content_blocks
            .iter()
            .map(|ContentBlock::Text { text }| text.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Token usage of one provider call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    #[serde(rename = "promptTokens", default, skip_serializing_if = "is_zero_u64")]
    pub prompt_tokens: u64,
    /// Completion tokens.
    #[serde(
        rename = "completionTokens",
        default,
        skip_serializing_if = "is_zero_u64"
    )]
    pub completion_tokens: u64,
    /// Total tokens.
    #[serde(rename = "totalTokens", default, skip_serializing_if = "is_zero_u64")]
    pub total_tokens: u64,
}

fn is_zero_u64(value: &u64) -> bool {
    *value == 0
}

impl Usage {
    /// True when nothing was counted (such usage is not written).
    pub fn is_zero(&self) -> bool {
        self.prompt_tokens == 0 && self.completion_tokens == 0 && self.total_tokens == 0
    }
}

/// The payload of an entry, by entry `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryKind {
    /// `message`: a conversation message, with the audit trail for tool results.
    Message {
        /// The message.
        message: Message,
        /// Audit trail of the tool call this result answers (gg extension, optional; boxed
        /// because most messages have none).
        audit: Option<Box<Audit>>,
    },
    /// `usage`: token counts of one provider call.
    Usage(Usage),
    /// `model`: the model selected from here on.
    Model {
        /// Provider name.
        provider: String,
        /// Model name.
        model: String,
        /// `provider:model`.
        selection: String,
    },
    /// `summary`: compaction summary of the first `through_message_count` active-path messages.
    Summary {
        /// Summary text.
        summary: String,
        /// Messages of the active path the summary covers.
        through_message_count: u64,
    },
    /// `session_info`: display name (empty = cleared).
    SessionInfo {
        /// The name.
        name: String,
    },
    /// `head`: no payload; its parent is the checked-out node.
    Head,
    /// A setting changed mid-session by the person (the interactive mode's `/approval`,
    /// `/sandbox`, `/network`), for the audit; not part of the conversation. A gg extension
    /// written as a `session_info` line that repeats the session's current `name` and adds
    /// `setting`, `from` and `to`: the format has no room for a new type (a reader of format 3,
    /// the Go implementation or an older gg, refuses an unknown type), while it ignores unknown
    /// fields, so to those readers this line only says the name is unchanged.
    Policy {
        /// The session's name when the change was made (what older readers see).
        name: String,
        /// `approval`, `sandbox` or `network`.
        setting: String,
        /// The value before.
        from: String,
        /// The value from here on.
        to: String,
    },
}

impl EntryKind {
    /// The `type` string of this kind.
    pub fn type_name(&self) -> &'static str {
        match self {
            EntryKind::Message { .. } => "message",
            EntryKind::Usage(_) => "usage",
            EntryKind::Model { .. } => "model",
            EntryKind::Summary { .. } => "summary",
            EntryKind::SessionInfo { .. } => "session_info",
            EntryKind::Head => "head",
            EntryKind::Policy { .. } => "session_info",
        }
    }
}

/// One line after the header.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Unique id within the file.
    pub id: String,
    /// The entry this one hangs off; `None` for a root.
    pub parent_id: Option<String>,
    /// Write time, RFC 3339 UTC.
    pub timestamp: String,
    /// Payload.
    pub kind: EntryKind,
}

impl Entry {
    /// The message of a `message` entry.
    pub fn message(&self) -> Option<&Message> {
        match &self.kind {
            EntryKind::Message { message, .. } => Some(message),
            _ => None,
        }
    }

    /// The audit trail of a `message` entry, if one was recorded.
    pub fn audit(&self) -> Option<&Audit> {
        match &self.kind {
            EntryKind::Message { audit, .. } => audit.as_deref(),
            _ => None,
        }
    }

    /// Serialises the entry as one JSON line including the trailing `\n`.
    pub fn to_json_line(&self) -> serde_json::Result<Vec<u8>> {
        let mut wire = WireOut {
            kind: self.kind.type_name(),
            id: &self.id,
            parent_id: self.parent_id.as_deref(),
            timestamp: &self.timestamp,
            message: None,
            audit: None,
            usage: None,
            provider: None,
            model: None,
            selection: None,
            summary: None,
            through_message_count: None,
            name: None,
            setting: None,
            from: None,
            to: None,
        };
        match &self.kind {
            EntryKind::Message { message, audit } => {
                wire.message = Some(message);
                wire.audit = audit.as_deref();
            }
            EntryKind::Usage(usage) => wire.usage = Some(usage),
            EntryKind::Model {
                provider,
                model,
                selection,
            } => {
                wire.provider = Some(provider);
                wire.model = Some(model);
                wire.selection = Some(selection);
            }
            EntryKind::Summary {
                summary,
                through_message_count,
            } => {
                wire.summary = Some(summary);
                wire.through_message_count = Some(*through_message_count);
            }
            EntryKind::SessionInfo { name } => wire.name = Some(name),
            EntryKind::Head => {}
            EntryKind::Policy {
                name,
                setting,
                from,
                to,
            } => {
                wire.name = Some(name);
                wire.setting = Some(setting);
                wire.from = Some(from);
                wire.to = Some(to);
            }
        }
        let mut line = serde_json::to_vec(&wire)?;
        line.push(b'\n');
        Ok(line)
    }
}

/// Serialises a header as one JSON line including the trailing `\n`.
pub(crate) fn header_line(header: &Header) -> serde_json::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(header)?;
    line.push(b'\n');
    Ok(line)
}

#[derive(Serialize)]
struct WireOut<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: &'a str,
    #[serde(rename = "parentId")]
    parent_id: Option<&'a str>,
    timestamp: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a Message>,
    #[serde(skip_serializing_if = "Option::is_none")]
    audit: Option<&'a Audit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<&'a Usage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    selection: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a str>,
    #[serde(
        rename = "throughMessageCount",
        skip_serializing_if = "Option::is_none"
    )]
    through_message_count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    setting: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    from: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    to: Option<&'a str>,
}

/// Every field any entry type may carry; decoded in one pass, then checked per type.
#[derive(Deserialize)]
struct WireIn {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    id: String,
    #[serde(rename = "parentId", default)]
    parent_id: Option<String>,
    #[serde(default)]
    timestamp: String,
    #[serde(default)]
    message: Option<Message>,
    #[serde(default)]
    audit: Option<Box<Audit>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    selection: Option<String>,
    #[serde(default)]
    summary: Option<String>,
    #[serde(rename = "throughMessageCount", default)]
    through_message_count: Option<u64>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    setting: Option<String>,
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
}

/// Only the discriminator, to report an unknown type before type-specific field errors.
#[derive(Deserialize)]
struct TypeProbe {
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

/// Decodes one entry line. The error is the reason only; the caller adds file and line.
pub(crate) fn decode_entry(line: &[u8]) -> std::result::Result<Entry, String> {
    let wire: WireIn = match serde_json::from_slice(line) {
        Ok(wire) => wire,
        Err(error) => {
            // Prefer the reference's message for an unknown type over a field-shape error.
            if let Ok(TypeProbe { kind: Some(kind) }) = serde_json::from_slice::<TypeProbe>(line)
                && !KNOWN_TYPES.contains(&kind.as_str())
            {
                return Err(format!("unknown session entry type {kind:?}"));
            }
            return Err(if error.is_data() {
                format!("invalid entry: {error}")
            } else {
                format!("invalid JSON: {error}")
            });
        }
    };
    let kind = match wire.kind.as_str() {
        "message" => EntryKind::Message {
            message: wire
                .message
                .ok_or_else(|| "message entry has no message".to_owned())?,
            audit: wire.audit,
        },
        "usage" => EntryKind::Usage(wire.usage.unwrap_or_default()),
        "model" => EntryKind::Model {
            provider: wire.provider.unwrap_or_default(),
            model: wire.model.unwrap_or_default(),
            selection: wire.selection.unwrap_or_default(),
        },
        "summary" => EntryKind::Summary {
            summary: wire.summary.unwrap_or_default(),
            through_message_count: wire.through_message_count.unwrap_or_default(),
        },
        "session_info" => match wire.setting {
            Some(setting) => EntryKind::Policy {
                name: wire.name.unwrap_or_default(),
                setting,
                from: wire.from.unwrap_or_default(),
                to: wire.to.unwrap_or_default(),
            },
            None => EntryKind::SessionInfo {
                name: wire.name.unwrap_or_default(),
            },
        },
        "head" => EntryKind::Head,
        other => return Err(format!("unknown session entry type {other:?}")),
    };
    Ok(Entry {
        id: wire.id,
        parent_id: wire.parent_id,
        timestamp: wire.timestamp,
        kind,
    })
}

const KNOWN_TYPES: [&str; 6] = [
    "message",
    "usage",
    "model",
    "summary",
    "session_info",
    "head",
];

/// The header fields needed before the version is known to be supported.
#[derive(Deserialize)]
struct HeaderProbe {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    version: Option<i64>,
}

/// Decodes line 1. The error is the reason only; the caller adds file and line.
pub(crate) fn decode_header(line: &[u8]) -> std::result::Result<Header, String> {
    let probe: HeaderProbe = serde_json::from_slice(line).map_err(|error| {
        if error.is_syntax() || error.is_eof() {
            format!("missing session header (invalid JSON: {error})")
        } else {
            "missing session header".to_owned()
        }
    })?;
    if probe.kind.as_deref() != Some("session") {
        return Err("missing session header".to_owned());
    }
    let version = probe.version.unwrap_or(0);
    if version > i64::from(CURRENT_VERSION) || version < 1 {
        return Err(format!("unsupported session version {version}"));
    }
    let header: Header =
        serde_json::from_slice(line).map_err(|error| format!("invalid session header: {error}"))?;
    if header.id.is_empty() {
        return Err("session header has no id".to_owned());
    }
    Ok(header)
}
