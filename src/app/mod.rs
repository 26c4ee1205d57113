//! The application core shared by the CLI and the daemon: configuration, and the conversation
//! service that ties a provider, the tools, the approval gate and a session together.

pub mod config;
pub mod lock;
pub mod service;
