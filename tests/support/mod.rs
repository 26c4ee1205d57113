//! The fixtures of the `testkit` crate bound to this build's binaries: only gg's own tests and
//! benches know where cargo put `gg` and `ggd` (`env!("CARGO_BIN_EXE_gg")`), so this module names
//! them once ([`GgBins`]) and hands them to testkit's fixtures. The test files import everything
//! from here: [`GgFixture`], [`gg_on_pty`], [`fixture_dir`], the scripted model server and the
//! rest of testkit.
//!
//! Include it from a test crate with `mod support;` (or
//! `#[path = "support/mod.rs"] mod support;`).
// Each test crate (tests/all.rs, the daemon_runs bench) uses a different part of this module.
#![allow(dead_code, unused_imports)]

pub use testkit::fixture::{
    chromium_present, files_under, git, run_bash_calls, say_skipped, session_files,
    skip_unless_required,
};
pub use testkit::*;

use testkit::fixture::Bins;

/// This build's `gg` and `ggd`, and its target's directory for test files.
pub struct GgBins;

impl Bins for GgBins {
    const GG: &'static str = env!("CARGO_BIN_EXE_gg");
    const GGD: &'static str = env!("CARGO_BIN_EXE_ggd");
    const TARGET_TMPDIR: &'static str = env!("CARGO_TARGET_TMPDIR");
}

/// A home, a repository and a session directory for the real `gg` against a scripted server
/// (`testkit::fixture::GgFixture`).
pub type GgFixture = testkit::fixture::GgFixture<GgBins>;

/// A home with a repository for the real `gg` configured by its environment alone
/// (`testkit::fixture::GgHome`).
pub type GgHome = testkit::fixture::GgHome<GgBins>;

/// A new [`GgHome`], for the tests that call their fixture `env()`.
pub fn gg_home() -> GgHome {
    GgHome::new()
}

/// `gg` in `home` with `server` as its model ([`GgHome::gg`]), for the tests that call it
/// `gg(&e, &server)`.
pub fn gg_in_home(home: &GgHome, server: &ScriptedServer) -> std::process::Command {
    home.gg(server)
}

/// A temporary directory for test fixtures outside the classifier's scratch directories
/// (`testkit::fixture::fixture_dir`).
pub fn fixture_dir() -> tempfile::TempDir {
    testkit::fixture::fixture_dir(std::path::Path::new(GgBins::TARGET_TMPDIR))
}

/// This build's `gg` on a pseudo-terminal of its own (`testkit::pty::gg_on_pty`).
pub fn gg_on_pty(
    home: &std::path::Path,
    repo: &std::path::Path,
    server: &ScriptedServer,
    args: &[&str],
    env: &[(&str, &str)],
    on_output: impl FnMut(&[u8]) + Send + 'static,
) -> (std::fs::File, std::process::Child) {
    testkit::pty::gg_on_pty(GgBins::GG, home, repo, server, args, env, on_output)
}

/// Writes each of `scripts` to `s{i}.sh` in `repo` and returns the calls that run them (`sh
/// ./s{i}.sh`): through a script, the classifier lets a call run as a normal command, so the
/// sandbox, the guard and the sweep are what a test tries.
pub fn script_calls(repo: &std::path::Path, scripts: &[&str]) -> Vec<String> {
    scripts
        .iter()
        .enumerate()
        .map(|(i, script)| {
            std::fs::write(repo.join(format!("s{i}.sh")), script).expect("a script in the repo");
            format!("sh ./s{i}.sh")
        })
        .collect()
}
