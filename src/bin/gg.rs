fn main() -> std::process::ExitCode {
    gg::cli::main()
}
