fn main() -> std::process::ExitCode {
    if let Some(code) = sandbox::helper::run_if_requested() {
        return code;
    }
    // Before any thread: may re-execute this binary with the secrets out of /proc.
    if let Err(e) = gg::secrets::start(gg::secrets::GG_SECRET_FLAGS) {
        eprintln!("gg: {e}");
        return std::process::ExitCode::from(1);
    }
    gg::cli::main()
}
