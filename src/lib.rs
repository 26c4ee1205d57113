//! gg: a security-hardened terminal AI coding agent.
//!
//! The security chain lives in three pure crates that this package only consumes:
//! [`classifier`] decides what a bash command is, [`policies`] decides whether it may run, and
//! [`sandbox`] decides how it runs. Everything in this package is an adapter around them.

pub mod agent;
pub mod app;
pub mod cli;
pub mod connectors;
pub mod daemon;
pub mod display;
pub mod duration;
pub mod jobs;
pub mod mcp;
pub mod media;
// Two layers that import nothing else from gg are crates of their own, so the compiler holds the
// layering; they stay reachable as `gg::provider` and `gg::session`.
pub use provider;
pub mod secrets;
pub use session;
pub mod telegram;
pub mod tools;
