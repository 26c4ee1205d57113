//! The `ggd` clients of `testkit::daemon` bound to this build's `ggd` ([`crate::support::GgBins`]).
// Each test crate (tests/all.rs, the daemon_runs bench) uses a different part of this module.
#![allow(dead_code, unused_imports)]

use std::process::Command;

pub use testkit::daemon::{
    Env, HttpDaemon, StdioClient, TIMEOUT, follow, has_type, http, http_bytes, last_type,
};

use crate::support::GgBins;

/// A home with a project in it and a session directory (`testkit::daemon::env`).
pub fn env() -> Env {
    testkit::daemon::env::<GgBins>()
}

/// This build's `ggd` with a private HOME, the scripted server at `base_url` as provider, and the
/// test hooks on (`testkit::daemon::ggd`).
pub fn ggd(e: &Env, base_url: &str, args: &[&str]) -> Command {
    testkit::daemon::ggd::<GgBins>(e, base_url, args)
}
