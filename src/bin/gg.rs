//! `gg`, and `ggd` too: one executable with two names. Invoked as `ggd` (the small `ggd`
//! launcher installed beside it execs it under that name, and a symlink works the same), it is
//! the daemon; otherwise the command line. One executable means one fat-LTO link in a release
//! build and one ~22 MB file installed instead of two.

fn main() -> std::process::ExitCode {
    if let Some(code) = sandbox::helper::run_if_requested() {
        return code;
    }
    if gg::daemon::invoked_as_ggd() {
        return daemon();
    }
    // Before any thread: may re-execute this binary with the secrets out of /proc.
    if let Err(e) = tools::secrets::start(tools::secrets::GG_SECRET_FLAGS) {
        eprintln!("gg: {e}");
        return std::process::ExitCode::from(1);
    }
    gg::cli::main()
}

/// `ggd`: the gg daemon (JSON-RPC over stdio, or HTTP + SSE). See `gg::daemon`.
fn daemon() -> std::process::ExitCode {
    // `ggd install-service … | head -1` ends quietly, as every gg command does.
    gg::cli::pipe::quiet_on_closed_stdout();
    // Before any thread: may re-execute this binary (keeping the name `ggd`) with the secrets out
    // of /proc.
    if let Err(e) = tools::secrets::start(tools::secrets::GGD_SECRET_FLAGS) {
        eprintln!("ggd: {e}");
        return std::process::ExitCode::from(1);
    }
    let mut args = Vec::new();
    for arg in tools::secrets::args_os().into_iter().skip(1) {
        match arg.into_string() {
            Ok(arg) => args.push(arg),
            Err(arg) => {
                eprintln!("ggd: argument {arg:?} is not valid UTF-8");
                return std::process::ExitCode::from(2);
            }
        }
    }
    gg::daemon::main(args)
}
