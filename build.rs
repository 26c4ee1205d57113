//! Build-time work for gg's executables: link settings, and the web UI's files compressed once.
//!
//! **Link settings.** `gg` is a position-independent executable (for address-space
//! randomisation) of about 24 MB, and its ~32,000 relative relocations were a 760 KB `.rela.dyn`
//! table: 3% of the installed size, and read in full by the dynamic loader at every start,
//! `gg --version` included. Packed relative relocations (`DT_RELR`, glibc 2.36 and later) store
//! the same relocations in a few kilobytes. The GNU linker from 2.38 and lld from 15 understand
//! the flag; an older GNU linker warns and ignores it, and a linker whose libc lacks
//! `GLIBC_ABI_DT_RELR` keeps the classic table, so the flag never breaks a build. Only glibc
//! targets on Linux get it: musl and macOS have their own formats.
//!
//! **The web UI's script and style sheet** (`web/dist/assets`, committed) are embedded gzipped:
//! 310 KB of text become 96 KB, about 0.2 MB off the installed executables (issue 43's 25 MB
//! target), and a browser downloads a third as much. ggd sends the gzip as it is to every client
//! that accepts it (browsers and WebKit all do) and inflates it for one that does not
//! (`src/daemon/web.rs`). The gzip is made here rather than committed so that the committed
//! bundle stays one rebuild of `web/src`, and it is byte-for-byte the same on every machine: no
//! name and no time in the header.
use std::path::{Path, PathBuf};

/// The files under `web/dist/assets` that are embedded gzipped (`<name>.gz` in `OUT_DIR`).
const GZIPPED_ASSETS: [&str; 2] = ["app.js", "style.css"];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    if let Err(message) = gzip_web_assets() {
        eprintln!("error: {message}");
        std::process::exit(1);
    }
}

fn gzip_web_assets() -> Result<(), String> {
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("cargo set no OUT_DIR")?);
    for name in GZIPPED_ASSETS {
        let source = Path::new("web/dist/assets").join(name);
        println!("cargo:rerun-if-changed={}", source.display());
        let raw = std::fs::read(&source)
            .map_err(|e| format!("cannot read the web UI's {}: {e}", source.display()))?;
        let target = out_dir.join(format!("{name}.gz"));
        std::fs::write(&target, gzip(&raw)?)
            .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
    }
    Ok(())
}

/// `raw` as a gzip member (RFC 1952) with the smallest deflate stream miniz_oxide makes.
fn gzip(raw: &[u8]) -> Result<Vec<u8>, String> {
    let size = u32::try_from(raw.len()).map_err(|_| "a web asset over 4 GiB".to_string())?;
    // ID1 ID2, CM = deflate, no flags, MTIME 0 (none), XFL 2 (slowest compression), OS unknown.
    let mut member = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff];
    member.extend(miniz_oxide::deflate::compress_to_vec(raw, 10));
    member.extend(crc32fast::hash(raw).to_le_bytes());
    member.extend(size.to_le_bytes());
    Ok(member)
}
