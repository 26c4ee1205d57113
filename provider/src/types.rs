//! Provider-neutral conversation types: what the agent loop hands to [`Provider::stream`] and
//! what it gets back.
//!
//! [`Provider::stream`]: super::Provider::stream

use std::time::Duration;

/// Who authored a [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A system prompt. Several are allowed; each is sent as its own `system` message.
    System,
    /// The user.
    User,
    /// The model.
    Assistant,
    /// The result of one tool call; must carry [`Message::tool_call_id`].
    Tool,
}

impl Role {
    /// The OpenAI wire name of the role.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One message of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Plain text content (the agent joins text blocks with `\n` before building this).
    pub content: String,
    /// Tool calls the assistant made in this message (assistant messages only).
    pub tool_calls: Vec<ToolCall>,
    /// The call this message answers (tool messages only).
    pub tool_call_id: Option<String>,
    /// Transient model reasoning (`reasoning_content`) echoed back on a tool continuation so
    /// reasoning models keep their chain of thought. Never persisted by gg.
    pub reasoning: Option<String>,
    /// Set on an assistant message whose generation failed part-way; the provider appends
    /// `\n[Response incomplete: <error>]` to the content so the model knows its previous answer
    /// was cut.
    pub incomplete_error: Option<String>,
    /// Image URLs (normally `data:image/png;base64,…`) sent after the text as `image_url`
    /// content parts. Only the caller knows whether the model accepts images; most
    /// OpenAI-compatible servers accept them in user messages only, so gg puts them there.
    pub images: Vec<String>,
}

impl Message {
    fn plain(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            reasoning: None,
            incomplete_error: None,
            images: Vec::new(),
        }
    }

    /// A system prompt.
    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(Role::User, content)
    }

    /// A user message made of `content` followed by the images `image_urls`.
    pub fn user_with_images(content: impl Into<String>, image_urls: Vec<String>) -> Self {
        Message {
            images: image_urls,
            ..Self::plain(Role::User, content)
        }
    }

    /// An assistant message without tool calls.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::plain(Role::Assistant, content)
    }

    /// The result of the tool call `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(tool_call_id.into()),
            ..Self::plain(Role::Tool, content)
        }
    }
}

/// A complete, validated tool call requested by the model.
///
/// Values of this type returned by the provider always have a non-empty `id` and `name` and
/// `arguments` that parse as a JSON object: a half-assembled call is never handed out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The model's id for the call, echoed back in the tool result.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments exactly as the model produced them (a JSON object, kept as raw text so it is
    /// echoed back byte for byte).
    pub arguments: String,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// Tool name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// One chat-completions request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    /// The conversation, system prompts included.
    pub messages: Vec<Message>,
    /// Tools offered to the model; when non-empty `tool_choice: "auto"` is sent too.
    pub tools: Vec<ToolDefinition>,
    /// Output token limit for this request; `None` uses
    /// [`ProviderConfig::max_output_tokens`](super::ProviderConfig::max_output_tokens)
    /// (compaction passes `summaryMaxTokens` here). `Some(0)` sends no limit.
    pub max_output_tokens: Option<u32>,
}

/// Token counts reported by the server (`usage` of the final chunk).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Generated tokens.
    pub completion_tokens: u64,
    /// Total as reported by the server (not recomputed).
    pub total_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    /// Adds another request's counts (a turn's usage is the sum of its requests').
    fn add_assign(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model wants tools run; the reply carries at least one call.
    ToolUse,
    /// The output token limit was reached (always reported as an error too).
    MaxTokens,
    /// The stream failed.
    Error,
}

impl StopReason {
    /// The name stored in sessions (`end_turn`, `tool_use`, `max_tokens`, `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::Error => "error",
        }
    }
}

/// A successfully completed model reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssistantReply {
    /// All text deltas concatenated.
    pub text: String,
    /// All reasoning deltas concatenated (transient, for echoing back on tool continuation).
    pub reasoning: String,
    /// Validated tool calls in index order.
    pub tool_calls: Vec<ToolCall>,
    /// Token usage, when the server reported a non-zero count.
    pub usage: Option<Usage>,
    /// [`StopReason::ToolUse`] when there are calls, else [`StopReason::EndTurn`].
    pub stop_reason: StopReason,
}

/// Progress reported to the caller while a request runs, in arrival order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// New answer text, delivered as soon as its SSE event is complete.
    TextDelta(String),
    /// New reasoning text (`reasoning_content`).
    ThinkingDelta(String),
    /// The request failed before streaming began and will be sent again after `delay`.
    Retrying {
        /// 1-based number of this retry.
        retry: u32,
        /// How long gg waits before sending again.
        delay: Duration,
        /// Why (the error text of the failed attempt).
        reason: String,
    },
}

#[cfg(test)]
mod tests {
    use super::Usage;

    #[test]
    fn usages_add_field_by_field() {
        let mut total = Usage {
            prompt_tokens: 10,
            completion_tokens: 2,
            total_tokens: 12,
        };
        total += Usage {
            prompt_tokens: 5,
            completion_tokens: 1,
            total_tokens: 7,
        };
        assert_eq!(
            total,
            Usage {
                prompt_tokens: 15,
                completion_tokens: 3,
                total_tokens: 19,
            }
        );
    }
}
