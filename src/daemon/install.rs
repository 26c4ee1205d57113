//! `ggd install-service` / `uninstall-service`: the user service unit that starts ggd at login
//! (the unit itself is [`super::service`]).

use super::*;

pub(super) fn install_service(args: &[String]) -> ExitCode {
    let result = (|| -> Result<service::ServiceFile, String> {
        let platform = service::Platform::current()?;
        let exe = launcher_path()?;
        let cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
        let file = service::service_file(platform, &security::home_dir(), &exe, &cwd, args)?;
        write_private(&file.path, &file.text)?;
        Ok(file)
    })();
    match result {
        Ok(file) => {
            println!("installed {}", file.path.display());
            println!("enable it with: {}", file.enable);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ggd: {e}");
            ExitCode::from(1)
        }
    }
}

/// The `ggd` launcher beside this executable, which the service starts: the unit cannot name this
/// executable itself (`gg`), because it is the daemon only under the name `ggd`.
fn launcher_path() -> Result<std::path::PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("executable path: {e}"))?;
    let launcher = exe.with_file_name(DAEMON_NAME);
    if launcher.is_file() {
        Ok(launcher)
    } else {
        Err(format!(
            "{} not found: install gg and ggd together (cargo install puts both in one directory)",
            launcher.display()
        ))
    }
}

fn write_private(path: &std::path::Path, text: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // The unit holds the token: 0600 even when the file existed with wider bits.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .and_then(|()| file.write_all(text.as_bytes()))
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("{}: {e}", path.display()))
}

pub(super) fn uninstall_service() -> ExitCode {
    let platform = match service::Platform::current() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ggd: {e}");
            return ExitCode::from(1);
        }
    };
    let path = service::service_path(platform, &security::home_dir());
    if !path.exists() {
        eprintln!("ggd: no service installed at {}", path.display());
        return ExitCode::from(1);
    }
    // Best effort: the file goes either way.
    let _ = match platform {
        service::Platform::Linux => std::process::Command::new("systemctl")
            .args(["--user", "disable", "--now", "ggd.service"])
            .status(),
        service::Platform::MacOs => std::process::Command::new("launchctl")
            .arg("unload")
            .arg(&path)
            .status(),
    };
    match std::fs::remove_file(&path) {
        Ok(()) => {
            println!("removed {}", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ggd: {}: {e}", path.display());
            ExitCode::from(1)
        }
    }
}
