//! gg's end-to-end tests: the real `gg` and `ggd` binaries (and the library where a seam is
//! tested directly) against real processes, files, loopback HTTP, bubblewrap, Landlock, Chromium
//! and MCP servers; only the model is simulated ([`support::ScriptedServer`]).
//!
//! One test binary with a module per area (as ripgrep and codex-rs do), because every test binary
//! links the whole library: run one area with `cargo test --test all <module>::`, e.g.
//! `cargo test --test all read_only_enforced::`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

// Shared fixtures.
mod daemon_common;
mod oracle_support;
#[cfg(target_os = "linux")]
mod sandbox_support;
mod support;
mod telegram_support;

// One module per area.
mod agent_context;
mod agent_loop;
mod artifacts;
mod artifacts_daemon;
mod bash_tool;
mod bind_links;
mod browser;
mod browser_daemon;
mod classifier_families;
mod classifier_oracle;
mod classify_cli;
mod cli_args;
mod cli_e2e;
mod cli_pty;
mod computer_tools;
mod connectors;
mod credential_stores;
mod daemon_fuzz_corpus;
mod daemon_http;
mod daemon_stdio;
mod docs_match;
mod doctor;
mod file_tools;
mod ggd_cli;
mod host_programs;
mod invisible_text;
mod jobs;
mod jobs_daemon;
mod jobs_schedule;
mod jobs_wakeups;
mod kb_e2e;
mod landlock_kept;
mod library;
mod mcp;
mod mcp_cli;
mod mcp_fuzz_corpus;
mod media;
mod memory;
mod memory_daemon;
mod network_policy;
mod one_policy;
mod persistence_list;
mod planted_fifos;
mod protected_writes;
mod read_only_enforced;
mod sandbox_escape;
mod sandbox_server;
mod seams;
mod secret_links;
mod sweep_escapes;
mod telegram;
mod unix_conventions;
mod web_daemon;
mod web_e2e;
