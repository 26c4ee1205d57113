//! The classifier's tests: the labelled corpus, the rule table, the fuzz corpus, properties and
//! the walk's budget.
//!
//! One test binary with a module per file: `cargo test -p classifier --test all <module>::`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod budget;
mod fuzz_corpus;
mod labelled;
mod props;
mod table;
