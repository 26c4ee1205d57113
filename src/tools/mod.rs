//! The agent's built-in tools and the inputs of the security chain they run through.

pub mod artifacts;
pub mod bash;
pub mod browser;
pub mod computer;
pub mod diff;
pub mod files;
pub mod library;
pub mod memory;
pub mod network;
pub mod paths;
pub mod persistence;
pub mod proc_stat;
pub mod registry;
pub mod security;
pub mod store;
