//! OpenAI-compatible streaming chat-completions provider.
//!
//! One [`Provider`] talks to one `openai-compatible` endpoint (OpenAI, Ollama, llama.cpp's server,
//! vLLM, LM Studio, OpenRouter, DeepSeek...). A request is always streamed
//! ([`Provider::stream`]): text and reasoning deltas reach the caller's sink as soon as their SSE
//! event is complete, tool calls are assembled and validated at the end, and any failure returns a
//! [`ProviderError`] that still carries the text already streamed ([`ProviderError::partial`]).
//!
//! Reliability rules (docs/usage.md, "Model provider"):
//! - network errors, 429 and 5xx are retried before a stream is accepted (at most
//!   [`RetryPolicy::max_retries`] times, `Retry-After` honoured up to 60 s, else full jitter);
//!   nothing is retried once a 2xx response began;
//! - two request-shape fallbacks (drop `stream_options`; send `max_completion_tokens`) are applied
//!   immediately on the matching HTTP 400 without spending the retry budget, and are remembered by
//!   the [`Provider`] (shared by all its clones) for the rest of the process;
//! - a connection attempt is limited by [`ProviderConfig::connect_timeout`] and a silent server
//!   by [`ProviderConfig::idle_timeout`];
//! - nothing is logged: prompts, tool arguments, keys and bodies never leave this module except
//!   as the return value; server text quoted in errors is capped and stripped of terminal
//!   control characters.

mod assemble;
mod client;
mod error;
mod retry;
pub mod sse;
mod types;
mod wire;

pub use assemble::{StreamParser, parse_recorded_stream};
pub use client::{Compat, Provider, ProviderConfig, error_chain};
pub use error::{ErrorKind, Partial, ProviderError};
pub use retry::{MAX_RETRY_AFTER, RetryPolicy, parse_retry_after};
/// Cancellation handle accepted by [`Provider::stream`] (re-exported so callers need not depend on
/// `tokio-util` directly).
pub use tokio_util::sync::CancellationToken;
pub use types::{
    AssistantReply, ChatRequest, Message, Role, StopReason, StreamEvent, ToolCall, ToolDefinition,
    Usage,
};
