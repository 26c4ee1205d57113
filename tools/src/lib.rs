//! The agent's built-in tools and the inputs of the security chain they run through, as a crate
//! of their own so that the compiler holds the layering: tools depend on the security crates
//! (`policies`, `classifier`, `sandbox`) and on the session's audit record, never on gg's agent,
//! application or front ends. gg's chain adapters (`gg::agent::tools`) put these tools in front
//! of the model; what they do is here.
//!
//! Beside the tools: [`secrets`] (the start-up secret hand-over and the scrubbed environment
//! every child gets), [`duration`] (the one duration parser and its formatters) and [`ceiling`]
//! (what a command's environment tells a gg it starts), which the tools need and gg shares.

pub mod artifacts;
pub mod bash;
pub mod browser;
pub mod ceiling;
pub mod computer;
pub mod diff;
pub mod duration;
pub mod files;
pub mod library;
pub mod memory;
pub mod network;
pub mod paths;
pub mod persistence;
pub mod proc_stat;
pub mod registry;
pub mod secrets;
pub mod security;
pub mod store;
