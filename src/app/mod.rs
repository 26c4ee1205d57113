//! The application core shared by the CLI and the daemon: configuration, and the conversation
//! service that ties a provider, the tools, the approval gate and a session together.

pub mod config;
mod config_keys;
pub mod lock;
pub mod media;
pub mod provider_flags;
pub mod service;

/// `NO_COLOR` set to something non-empty (<https://no-color.org>): both front ends honour it
/// (gg's output and help, ggd's help).
pub fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// The async runtime every gg and ggd entry point runs on: two workers (the agent waits on the
/// model and on commands most of the time; more threads only cost memory and start-up).
///
/// With the `test-hooks` feature, `GG_TEST_BLOCKING_KEEP_ALIVE_MS` shortens how long an idle
/// blocking-pool thread lives (tokio's default is 10 s), so that tests can show deterministically
/// that nothing depends on such a thread staying alive.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(2).enable_all();
    #[cfg(feature = "test-hooks")]
    if let Some(ms) = std::env::var("GG_TEST_BLOCKING_KEEP_ALIVE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        builder.thread_keep_alive(std::time::Duration::from_millis(ms));
    }
    builder.build()
}

/// The session root a run writes to (`flag`, else `GG_SESSION_DIR`, else `~/.gg/sessions`).
/// One outside `~/.gg` holds what `~/.gg/sessions` would: past prompts and tool outputs. It
/// joins every actor's deny-read policy for this process (an attacker pass read another
/// project's session through a read-only `grep -r` and the `grep` tool), unless it holds the
/// working directory or the home.
pub fn session_root(flag: Option<&std::path::Path>) -> crate::session::Result<std::path::PathBuf> {
    let root = crate::session::paths::root_from_env(flag)?;
    if let Ok(cwd) = std::env::current_dir() {
        tools::secrets::add_private_dir(&root, &cwd);
    }
    Ok(root)
}
