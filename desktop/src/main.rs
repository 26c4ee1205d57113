//! gg-desktop: the web UI in a native window (the system's WebKitGTK through wry and tao), with
//! a ggd of its own as the sidecar. See docs/usage.md ("Desktop app") and docs/security-model.md
//! ("The desktop shell").

mod ipc;
mod links;
mod shell;
mod sidecar;
mod single;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// gg's desktop app: the web UI in a window, with its own ggd.
#[derive(Parser, Debug)]
#[command(name = "gg-desktop", version)]
struct Args {
    /// The workspace: the working directory of sessions and runs (default: the current one).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Let a WebDriver (WebKitWebDriver) drive the window; the driver passes this itself.
    #[arg(long)]
    automation: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gg-desktop: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(args: Args) -> Result<ExitCode, String> {
    let workspace = match args.workspace {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(|e| format!("current directory: {e}"))?,
    };
    let workspace = workspace
        .canonicalize()
        .map_err(|e| format!("workspace {}: {e}", workspace.display()))?;
    if !workspace.is_dir() {
        return Err(format!(
            "workspace {} is not a directory",
            workspace.display()
        ));
    }
    let dir = single::state_dir()?;
    match single::claim(&dir)? {
        single::Instance::Focused => {
            eprintln!("gg-desktop is already running; its window was brought to the front");
            Ok(ExitCode::SUCCESS)
        }
        single::Instance::First {
            _lock,
            listener,
            socket,
        } => {
            let code = shell::run(workspace, args.automation, listener);
            let _ = std::fs::remove_file(&socket);
            code
        }
    }
}
