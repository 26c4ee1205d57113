//! The session store's tests: the file format and its history (`store`), a file cut at every
//! byte (`truncation`), the committed fuzz corpus replayed on stable Rust (`fuzz_corpus`), and real
//! processes racing on one file or killed mid-append (`processes`).
//!
//! One test binary with a module per file: `cargo test -p session --test all <module>::`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

mod fuzz_corpus;
mod processes;
mod store;
mod truncation;
