//! Link-time settings for the desktop shell, the same as gg's own (the root `build.rs` says why):
//! packed relative relocations (`DT_RELR`) keep gg-desktop's ~2,100 relative relocations in a
//! few hundred bytes instead of a 60 KB `.rela.dyn` table. Only glibc targets on Linux, where
//! the GNU linker from 2.38 and lld from 15 write them and an older linker ignores the flag.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
