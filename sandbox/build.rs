//! Gives the helper protocol a build identity: a hash of this crate's sources, its manifest and
//! the workspace's lock file. gg and its small `gg-sandbox-helper` binary are linked from one
//! compilation of this crate, so they carry the same identity; a helper left over from another
//! build (an upgrade of one file, `cargo build --bin gg` next to an old helper) carries another,
//! and is neither chosen by the host nor willing to run (see `helper::HELPER_FLAG`).

use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let mut files = vec![root.join("Cargo.toml"), root.join("build.rs")];
    collect(&root.join("src"), &mut files);
    let lock = root.join("../Cargo.lock");
    if lock.is_file() {
        files.push(lock);
    }
    files.sort();
    let mut hasher = DefaultHasher::new();
    hasher.write(env!("CARGO_PKG_VERSION").as_bytes());
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        hasher.write(
            file.strip_prefix(&root)
                .unwrap_or(file)
                .as_os_str()
                .as_encoded_bytes(),
        );
        hasher.write(&std::fs::read(file).unwrap_or_default());
    }
    println!("cargo:rerun-if-changed={}", root.join("src").display());
    println!(
        "cargo:rustc-env=GG_SANDBOX_BUILD_ID={:016x}",
        hasher.finish()
    );
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}
