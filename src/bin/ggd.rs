//! `ggd`: the gg daemon (JSON-RPC over stdio, or HTTP + SSE). See `gg::daemon`.

fn main() -> std::process::ExitCode {
    gg::daemon::main(std::env::args().skip(1).collect())
}
