//! The built-in tools as the chain sees them: a file per tool family, each implementing the
//! chain's [`Tool`](super::chain::Tool) for the work the `tools` crate does (reading the
//! arguments, assessing the call, binding what it would run). The rest of `agent` never names a
//! tool family except to add it to the tool box.

pub mod artifacts;
pub mod browser;
pub mod builtin;
pub mod computer;
pub mod google;
pub mod kb;
pub mod library;
pub mod media;
pub mod memory;
