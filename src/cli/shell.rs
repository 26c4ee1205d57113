//! Shell conventions: completion scripts (`gg completions SHELL`) and the manual page
//! (`gg man`), both generated from the same clap definition the parser uses, so they cannot
//! drift from the real flags.

use std::io::Write;
use std::process::ExitCode;

/// `gg completions SHELL`: the script on stdout.
pub fn completions(shell: clap_complete::Shell, mut cmd: clap::Command) -> ExitCode {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "gg", &mut out);
    write_out(&out)
}

/// `gg man`: the roff page on stdout (`gg man | man -l -`, or redirect it into `man1/gg.1`).
pub fn man(cmd: clap::Command) -> ExitCode {
    let mut out = Vec::new();
    if let Err(e) = clap_mangen::Man::new(cmd).render(&mut out) {
        eprintln!("gg man: {e}");
        return ExitCode::from(1);
    }
    write_out(&out)
}

fn write_out(bytes: &[u8]) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`gg man | head`) is not worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gg: {e}");
            ExitCode::from(1)
        }
    }
}
