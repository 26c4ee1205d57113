//! The policy crate's tests of its public API: the decision table, policy files and the fuzz
//! corpus.
//!
//! Unit tests of the crate rather than an integration-test binary of their own: they need nothing
//! but the crate, and the library's unit-test binary (which `web.rs`'s tests already need) runs
//! them, one test binary fewer to link (issue 37: at most six). Run one file's tests with
//! `cargo test -p policies --lib tests::<module>::`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod decision_table;
mod fuzz_corpus;
mod policy_files;
