//! The agent: the security chain every tool call goes through, the turn loop, the message queue
//! and the system prompt; `tools/` puts the built-in tools (the `tools` crate) in front of the
//! chain.

pub mod approval;
pub mod chain;
pub mod context;
pub mod images;
pub mod prompt;
pub mod queue;
pub mod runner;
pub mod tools;
pub mod untrusted;

pub use approval::{Answer, ApprovalPrompt, Approver, NobodyToAsk};
pub use chain::{Gate, Tool, ToolBox};
pub use queue::MessageQueue;
pub use runner::{Agent, AgentEvent, EventSink, TurnError, TurnOutcome};
