//! `ggd`: the gg daemon (JSON-RPC over stdio, or HTTP + SSE). See `gg::daemon`.

fn main() -> std::process::ExitCode {
    // Jobs run sandboxed: the sandbox re-executes this binary as its helper, which must take over
    // before anything else runs.
    if let Some(code) = sandbox::helper::run_if_requested() {
        return code;
    }
    // Before any thread: may re-execute this binary with the secrets out of /proc.
    if let Err(e) = gg::secrets::start(gg::secrets::GGD_SECRET_FLAGS) {
        eprintln!("ggd: {e}");
        return std::process::ExitCode::from(1);
    }
    let mut args = Vec::new();
    for arg in gg::secrets::args_os().into_iter().skip(1) {
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
