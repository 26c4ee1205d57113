//! The classifier's execution oracle, unbounded: every input is turned into a command, classified
//! by the real `gg classify`, and when read-only, run by the real `gg sandbox` in a throw-away
//! tree. A change to the tree is a false-safe, and a crash here.
//!
//! Input: the first byte picks the mode. Odd: the rest is the command text (UTF-8, lossily).
//! Even: the rest seeds the grammar-based generator of `tests/oracle_support` (the constructs of
//! the classifier's false-safe families), so the fuzzer explores the grammar too.
//!
//! Run with the binary to test: `GG_BIN=target/release/gg cargo +nightly fuzz run oracle`.
//! Each input costs a sandbox start, so expect tens of executions per second, not thousands.
#![no_main]

#[path = "../../tests/oracle_support/mod.rs"]
mod oracle_support;

use std::path::PathBuf;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use oracle_support::{Tree, false_safes, generate};

struct Setup {
    gg: PathBuf,
    tree: Tree,
    _dir: PathBuf,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let gg = std::env::var_os("GG_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("gg"));
        // Outside /tmp: the sandbox gives commands a private /tmp, which would hide the tree.
        let dir = std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("."))
            .join(format!("oracle-tree-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let tree = Tree::new(&dir);
        Setup { gg, tree, _dir: dir }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let command = if mode % 2 == 1 {
        String::from_utf8_lossy(rest).into_owned()
    } else {
        let mut seed = [0u8; 32];
        for (i, b) in rest.iter().enumerate() {
            seed[i % 32] ^= b.rotate_left((i / 32) as u32);
        }
        let strategy = oracle_support::command();
        match generate(&strategy, seed, 1).pop() {
            Some(tree) => tree.current(),
            None => return,
        }
    };
    if command.trim().is_empty() || command.contains('\0') {
        return;
    }
    let setup = setup();
    let (_, changes) = false_safes(&setup.gg, &setup.tree, &[command]);
    if let Some(change) = changes.first() {
        panic!("false-safe: {:?} changed the tree:\n{}", change.command, change.diff);
    }
});
