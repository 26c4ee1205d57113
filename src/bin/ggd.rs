//! `ggd`: the gg daemon (JSON-RPC over stdio, or HTTP + SSE). See `gg::daemon`.

fn main() -> std::process::ExitCode {
    // Jobs run sandboxed: the sandbox re-executes this binary as its helper, which must take over
    // before anything else runs.
    if let Some(code) = sandbox::helper::run_if_requested() {
        return code;
    }
    gg::daemon::main(std::env::args().skip(1).collect())
}
