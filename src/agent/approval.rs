//! The person's side of the approval gate: what they are shown, what they answer, and who asks
//! them. The gate itself is [`Gate`](super::chain::Gate) in `agent::chain`.

use std::future::Future;
use std::pin::Pin;

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
