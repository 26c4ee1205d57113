//! `ggd`: the application core served over JSON-RPC to editors, the web UI and scripts
//! (docs/daemon-protocol.md).
//!
//! - [`rpc`]: framing, request validation, error codes (pure; fuzzed).
//! - [`runtime`]: sessions, runs, events, approvals, limits.
//! - [`handler`]: method dispatch.
//! - [`stdio`] / [`http`]: the transports.
//! - [`lock`]: the single-instance lock; [`service`]: the unit `install-service` writes.
//! - `args`: the command line; `serve`: logging, the transports' start and the stop; `install`:
//!   `install-service` / `uninstall-service`.
//!
//! Approval mapping: `requireApproval: true` (the default) runs in `on-request` mode with the
//! client as the terminal, so every gated call waits for `run.approve`; `requireApproval: false`
//! runs in `never` mode: allowed without asking, except dangerous bash, which is denied because
//! nobody is there to confirm it.

mod args;
mod artifacts;
mod connectors;
pub mod handler;
pub mod http;
mod install;
pub mod kb;
mod media;
mod open_check;
use crate::app::lock;
pub mod rpc;
pub mod runtime;
mod serve;
pub mod service;
pub mod stdio;
mod telegram;
#[cfg(feature = "test-hooks")]
mod test_hooks;
pub mod web;

use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::app::config::Config;
use tools::registry::SandboxSetting;
use tools::security;

pub const VERSION: &str = "0.1.0";
pub const DEFAULT_MAX_ACTIVE_RUNS: usize = 16;
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(30 * 60);

pub use args::{Failure, Flags, TOKEN_ENV, is_loopback_addr, parse_flags};
use args::{Invocation, bind_addr, env_token, parse};
use install::{install_service, uninstall_service};
use serve::serve;

/// Whether this process was started as `ggd` (the name of its executable, `argv[0]`): the `gg`
/// executable is the daemon under that name (see `src/bin/gg.rs`).
pub fn invoked_as_ggd() -> bool {
    std::env::args_os()
        .next()
        .is_some_and(|argv0| std::path::Path::new(&argv0).file_name() == Some(DAEMON_NAME.as_ref()))
}

/// The name under which the `gg` executable is the daemon.
pub const DAEMON_NAME: &str = "ggd";

/// The `ggd` entry point (`args` without the program name).
pub fn main(args: Vec<String>) -> ExitCode {
    let flags = match parse(&args, env_token()) {
        Ok(Invocation::Serve(flags)) => *flags,
        Ok(Invocation::InstallService(flags)) => return install_service(&flags),
        Ok(Invocation::UninstallService) => return uninstall_service(),
        Ok(Invocation::Status) => {
            // The exit status is the answer; a reader that has gone (`ggd status | true`) does
            // not change it, so the line is written without a check.
            let say = |line: &str| {
                let _ = writeln!(std::io::stdout(), "{line}");
            };
            return match lock::daemon_alive(&security::home_dir()) {
                Ok(true) => {
                    say("ggd is running");
                    ExitCode::SUCCESS
                }
                Ok(false) => {
                    say("ggd is not running");
                    ExitCode::from(1)
                }
                Err(e) => {
                    eprintln!("ggd: {e}");
                    ExitCode::from(1)
                }
            };
        }
        Err(e) => {
            // clap exits 0 for --help/--version and 2 for usage errors.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let runtime = match crate::app::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ggd: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = match runtime.block_on(serve(flags)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(m)) => {
            eprintln!("ggd: {m}");
            ExitCode::from(2)
        }
        Err(Failure::Failed(m)) => {
            eprintln!("ggd: {m}");
            ExitCode::from(1)
        }
    };
    // Abandoned request tasks (a `run.wait` of a client that left) must not delay the exit.
    runtime.shutdown_timeout(Duration::from_millis(100));
    code
}
