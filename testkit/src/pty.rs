//! The real `gg` on a pseudo-terminal of its own, for the tests of what a person at a terminal
//! sees and types (the interactive prompt, approvals, Ctrl-C).

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};

use crate::ScriptedServer;

/// Starts the `gg` binary at `gg` with `args` on a new pseudo-terminal that is its controlling
/// terminal (`setsid -c`), in `repo`, with `home` as HOME, sessions under `home/sessions`, no
/// colour, and the scripted `server` as its model, and `env` added. Every byte gg writes to the
/// terminal is passed to `on_output` from a reader thread. Returns the master side (write to it
/// to type) and the child.
pub fn gg_on_pty(
    gg: &str,
    home: &Path,
    repo: &Path,
    server: &ScriptedServer,
    args: &[&str],
    env: &[(&str, &str)],
    mut on_output: impl FnMut(&[u8]) + Send + 'static,
) -> (std::fs::File, Child) {
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let slave = std::fs::File::options()
        .read(true)
        .write(true)
        .open(name.to_str().unwrap())
        .unwrap();
    let child = Command::new("setsid")
        .arg("-c")
        .arg(gg)
        .args(args)
        .current_dir(repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TERM", "dumb")
        .env("NO_COLOR", "1")
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", server.base_url())
        .env("GG_SESSION_DIR", home.join("sessions"))
        .envs(env.iter().copied())
        .stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave))
        .spawn()
        .unwrap();
    let master = std::fs::File::from(master);
    let mut reader = master.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            on_output(&buf[..n]);
        }
    });
    (master, child)
}
