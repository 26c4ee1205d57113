fn main() -> std::process::ExitCode {
    if let Some(code) = sandbox::helper::run_if_requested() {
        return code;
    }
    gg::cli::main()
}
