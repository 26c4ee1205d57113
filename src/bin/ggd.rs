//! `ggd`, the launcher: the daemon is the `gg` executable beside this one, run under the name
//! `ggd` (see `src/bin/gg.rs`). This file links nothing but std, so the release build links the
//! library once (for `gg`) instead of twice, and the install is one large executable instead of
//! two. It replaces itself with gg (`exec`: same pid, no process left behind), so whoever
//! started `ggd` — a terminal, a service manager, `gg web`, a desktop shell — sees one process.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let mut args = std::env::args_os();
    let name = daemon_name(args.next());
    let gg = match gg_beside_this() {
        Ok(gg) => gg,
        Err(e) => {
            eprintln!("ggd: {e}");
            return ExitCode::from(1);
        }
    };
    let err = Command::new(&gg).arg0(name).args(args).exec();
    eprintln!(
        "ggd: cannot run {} (ggd is gg under another name, so gg must be installed beside it): {err}",
        gg.display()
    );
    ExitCode::from(1)
}

/// The name gg is run under: the one this launcher was started by when it is `ggd` (so `ps`
/// shows what the person typed), else plain `ggd`, the name gg recognises.
fn daemon_name(argv0: Option<OsString>) -> OsString {
    argv0
        .filter(|a| Path::new(a).file_name().is_some_and(|n| n == "ggd"))
        .unwrap_or_else(|| OsString::from("ggd"))
}

/// `gg` in the directory of this executable (symlinks resolved), where `cargo install` puts both.
/// Never `gg` from `PATH`: that could be another version, or someone else's program.
fn gg_beside_this() -> Result<PathBuf, String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find its own executable: {e}"))?;
    let dir = exe
        .parent()
        .ok_or_else(|| format!("{} has no directory", exe.display()))?;
    Ok(dir.join("gg"))
}
