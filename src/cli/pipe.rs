//! A closed output pipe (`gg kb search x | head -1`) ends gg quietly with status 0, as ripgrep
//! does: the reader has all it wanted, so neither a message nor a failure status would be true.
//!
//! Two ways in, one outcome: `println!` panics on EPIPE (Rust ignores SIGPIPE, so the write
//! returns the error), which [`quiet_on_closed_stdout`] turns into a quiet exit for every print in
//! gg at once; writers that handle their `io::Result` call [`exit_if_closed`].

use std::io;

/// The status ripgrep exits with when its output pipe closes.
const CLOSED_PIPE_STATUS: i32 = 0;

/// Installs a panic hook that exits quietly when the panic is std's `failed printing to stdout:
/// Broken pipe` (from `print!`/`println!`); any other panic reaches the previous hook unchanged.
pub fn quiet_on_closed_stdout() {
    let previous = std::panic::take_hook();
    let closed = format!(
        "failed printing to stdout: {}",
        io::Error::from(rustix::io::Errno::PIPE)
    );
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied());
        if message == Some(closed.as_str()) {
            ::sandbox::leftovers::remove_all();
            std::process::exit(CLOSED_PIPE_STATUS);
        }
        previous(info);
    }));
}

/// Exits quietly when `error` says stdout's reader has gone; returns otherwise, so that the
/// caller reports any other write failure.
pub fn exit_if_closed(error: &io::Error) {
    if error.kind() == io::ErrorKind::BrokenPipe {
        ::sandbox::leftovers::remove_all();
        std::process::exit(CLOSED_PIPE_STATUS);
    }
}
