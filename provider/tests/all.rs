//! The provider client's tests, against the scripted model from `testkit` over real TCP on
//! 127.0.0.1 (`stream`, and property tests over random scripts in `props`), the committed fuzz
//! corpus replayed on stable Rust (`fuzz_corpus`), and an opt-in run against a real
//! OpenAI-compatible server (`real_server`, ignored unless asked for). None of them links gg.
//!
//! One test binary with a module per file: `cargo test -p provider --test all <module>::`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod fuzz_corpus;
mod props;
mod real_server;
mod stream;
