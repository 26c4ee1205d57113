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
pub mod jobs;
pub mod mcp;
pub mod media;
// Layers that import nothing of gg are crates of their own, so the compiler holds the layering;
// they stay reachable as `gg::provider`, `gg::session` and `gg::tools` (the built-in tools, with
// `tools::secrets`, `tools::duration` and `tools::ceiling`).
pub use provider;
pub use session;
pub mod telegram;
pub use tools;
