//! The `gg` command line.

use std::process::ExitCode;

pub fn main() -> ExitCode {
    ExitCode::SUCCESS
}
