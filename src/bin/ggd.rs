fn main() -> std::process::ExitCode {
    eprintln!("ggd: the daemon is not built yet (issue 9)");
    std::process::ExitCode::from(1)
}
