//! The agent: the turn loop, the approval gate, the message queue and the system prompt.

pub mod approval;
pub mod context;
pub mod prompt;
pub mod queue;
pub mod runner;

pub use approval::{Answer, ApprovalPrompt, Approver, Gate, NobodyToAsk};
pub use queue::MessageQueue;
pub use runner::{Agent, AgentEvent, EventSink, TurnError, TurnOutcome};
