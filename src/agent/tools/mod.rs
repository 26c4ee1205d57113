//! The built-in tools as the chain sees them: a file per tool family, each implementing the
//! chain's [`Tool`](super::chain::Tool) for the work the `tools` crate does (reading the
//! arguments, assessing the call, binding what it would run). The browser and the computer,
//! whose tools share one state and describe their own calls, go through one generic adapter
//! (`family.rs`) and say only how a call is assessed and run.

pub mod artifacts;
pub mod browser;
pub mod builtin;
pub mod computer;
pub mod family;
pub mod google;
pub mod kb;
pub mod library;
pub mod media;
pub mod memory;
