//! The knowledge base's tests: the store, and retrieval quality on the Rust book.
//!
//! One test binary with a module per file: `cargo test -p kb --test all <module>::`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod book_eval;
mod store;
mod vectors;
