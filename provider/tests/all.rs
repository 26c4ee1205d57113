//! The provider client's tests that need nothing of gg: the committed fuzz corpus replayed on
//! stable Rust (`fuzz_corpus`), and an opt-in run against a real OpenAI-compatible server
//! (`real_server`, ignored unless asked for). The streaming tests against the scripted model live
//! with gg's end-to-end tests, which own that server (`tests/provider.rs`).
//!
//! One test binary with a module per file: `cargo test -p provider --test all <module>::`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod fuzz_corpus;
mod real_server;
