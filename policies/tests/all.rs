//! The policy crate's tests: the decision table, policy files and the fuzz corpus.
//!
//! One test binary with a module per file: `cargo test -p policies --test all <module>::`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod decision_table;
mod fuzz_corpus;
mod policy_files;
