//! `gg job …`: the subcommand lives in [`crate::jobs::cli`], next to the store and scheduler it
//! drives; this module is the CLI's entry point for it.

pub use crate::jobs::cli::{AddArgs, JobCommand, run};
