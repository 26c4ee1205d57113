//! The agent: the security chain every tool call goes through, the turn loop, the message queue
//! and the system prompt.

pub mod approval;
pub mod artifacts;
pub mod browser;
pub mod builtin;
pub mod chain;
pub mod computer;
pub mod context;
pub mod google;
pub mod images;
pub mod kb;
pub mod library;
pub mod media;
pub mod memory;
pub mod prompt;
pub mod queue;
pub mod runner;
pub mod untrusted;

pub use approval::{Answer, ApprovalPrompt, Approver, NobodyToAsk};
pub use chain::{Gate, Tool, ToolBox};
pub use queue::MessageQueue;
pub use runner::{Agent, AgentEvent, EventSink, TurnError, TurnOutcome};
