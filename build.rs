//! Link-time settings for gg's executables, and nothing else.
//!
//! `gg` is a position-independent executable (for address-space randomisation) of about 24 MB,
//! and its ~32,000 relative relocations were a 760 KB `.rela.dyn` table: 3% of the installed
//! size, and read in full by the dynamic loader at every start, `gg --version` included. Packed
//! relative relocations (`DT_RELR`, glibc 2.36 and later) store the same relocations in a few
//! kilobytes. The GNU linker from 2.38 and lld from 15 understand the flag; an older GNU linker
//! warns and ignores it, and a linker whose libc lacks `GLIBC_ABI_DT_RELR` keeps the classic
//! table, so the flag never breaks a build. Only glibc targets on Linux get it: musl and macOS
//! have their own formats.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
