//! `gg web [--open] [--port N]`: the web UI. Reuses the ggd that `gg web` started before (its
//! port and token are in `~/.gg/web.json`, mode 0600), else starts one in HTTP mode on loopback
//! for the current directory, then prints `http://127.0.0.1:PORT/#token=…`. `gg web --stop`
//! stops that ggd (and no other).
//!
//! The token is in the fragment, which browsers never send to a server, put in a `Referer` or
//! write to a server log; the page moves it to memory and clears the address bar.
//!
//! `--open` never hands that address to the opener: another process's command line (and the
//! browser's, which the opener starts with the same argument) is readable by every local user in
//! `/proc/<pid>/cmdline`. The opener is given `~/.gg/web-open.html` instead, a page only this
//! user can read (like `web.json`, which holds the same token) that moves on to the address.

use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// `gg web` arguments.
#[derive(Debug, clap::Args)]
pub struct WebArgs {
    /// Open the address in the default browser as well.
    #[arg(long)]
    open: bool,
    /// Loopback port for a newly started ggd (default: any free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Stop the ggd that gg web started (a ggd started otherwise is left alone).
    #[arg(long, conflicts_with_all = ["open", "port"])]
    stop: bool,
}

/// What `gg web` remembers about the daemon it started.
#[derive(Debug, Serialize, Deserialize)]
struct State {
    port: u16,
    token: String,
    pid: u32,
    /// The workspace that daemon serves.
    cwd: PathBuf,
}

/// How long a new daemon gets to report its address.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a stopped daemon gets to finish its runs and exit after SIGTERM, before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

pub fn run(args: WebArgs) -> ExitCode {
    let result = if args.stop { stop() } else { web(&args) };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gg web: {e}");
            ExitCode::from(1)
        }
    }
}

fn web(args: &WebArgs) -> Result<(), String> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .ok_or("HOME is not set")?;
    let cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
    let state_path = home.join(".gg").join("web.json");
    let running = crate::app::lock::daemon_alive(&home)?;
    let state = if running {
        let known = read_state(&state_path).filter(|s| healthy(s.port, &s.token));
        let Some(state) = known else {
            return Err(
                "ggd is already running, but not one that gg web started (its address \
                 and token are unknown); stop it, or open its --http address with \
                 #token=<its token>"
                    .to_string(),
            );
        };
        if state.cwd != cwd {
            eprintln!(
                "gg web: the running ggd serves {}; stop it to serve this directory",
                state.cwd.display()
            );
        }
        state
    } else {
        let state = start(&home, &cwd, args.port)?;
        write_state(&state_path, &state)?;
        state
    };
    let url = format!("http://127.0.0.1:{}/#token={}", state.port, state.token);
    println!("{url}");
    if args.open {
        open(&home, &url);
    }
    Ok(())
}

/// `gg web --stop`: SIGTERM to the ggd recorded in `web.json`, once it has proved to be that one
/// (it answers `/health` with the recorded token: a pid alone may have been reused), then a wait
/// until its lock on `ggd.pid` is released; SIGKILL if it has not exited in time.
fn stop() -> Result<(), String> {
    use rustix::process::{Pid, Signal, kill_process};
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .ok_or("HOME is not set")?;
    let state_path = home.join(".gg").join("web.json");
    let running = crate::app::lock::daemon_alive(&home)?;
    let state = read_state(&state_path);
    let ours = state
        .as_ref()
        .filter(|s| running && healthy(s.port, &s.token));
    let Some(state) = ours else {
        if running {
            return Err(
                "ggd is running, but not one that gg web started; it is left alone (stop it \
                 where it was started, or with kill)"
                    .to_string(),
            );
        }
        // Nothing of ours runs: a record left by a daemon that died is removed.
        if state.is_some() {
            let _ = std::fs::remove_file(&state_path);
        }
        println!("no ggd started by gg web is running");
        return Ok(());
    };
    let pid = i32::try_from(state.pid)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| format!("{}: bad pid {}", state_path.display(), state.pid))?;
    kill_process(pid, Signal::TERM).map_err(|e| format!("stopping ggd (pid {pid}): {e}"))?;
    let deadline = Instant::now() + STOP_TIMEOUT;
    while crate::app::lock::daemon_alive(&home)? {
        if Instant::now() > deadline {
            let _ = kill_process(pid, Signal::KILL);
            eprintln!(
                "gg web: ggd (pid {pid}) did not exit within {}s of SIGTERM; killed it",
                STOP_TIMEOUT.as_secs()
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::fs::remove_file(&state_path);
    // Its token no longer opens anything, but there is no reason to keep it on disk either.
    let _ = std::fs::remove_file(open_page_path(&home));
    println!("stopped ggd (pid {pid})");
    Ok(())
}

fn read_state(path: &Path) -> Option<State> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

fn write_state(path: &Path, state: &State) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let text = serde_json::to_string(state).map_err(|e| e.to_string())?;
    let tmp = path.with_extension("json.tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
}

/// `GET /health` with the token answers 200: the daemon is up and the token is right.
fn healthy(port: u16, token: &str) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!(
        "GET /health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\r\n"
    );
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.") && &head[9..12] == b"200"
}

/// ggd is this executable under the name `ggd` (see `src/bin/gg.rs`): never a `ggd` found on
/// `PATH`, which could be another version.
fn ggd_command() -> Result<Command, String> {
    use std::os::unix::process::CommandExt;
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find gg's own executable: {e}"))?;
    let mut command = Command::new(exe);
    command.arg0(crate::daemon::DAEMON_NAME);
    Ok(command)
}

/// Starts ggd in its own process group (a Ctrl-C in this terminal does not stop it), with its
/// log appended to `~/.gg/ggd-web.log`, and waits for the address it reports.
fn start(home: &Path, cwd: &Path, port: u16) -> Result<State, String> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::process::CommandExt;
    let dir = home.join(".gg");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let log_path = dir.join("ggd-web.log");
    let log = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(&log_path)
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let offset = log.metadata().map(|m| m.len()).unwrap_or(0);
    let token = crate::jobs::random_hex(32)?;
    let stderr = log
        .try_clone()
        .map_err(|e| format!("{}: {e}", log_path.display()))?;
    let mut child = ggd_command()?
        // The environment gg itself was started with, secrets included (gg hid them from its own
        // environment at start-up): what ggd started from this shell would read, the model's API
        // key among them. In the child's environment, which only this user can read and which
        // ggd hides again at its own start-up; never on its command line.
        .env_clear()
        .envs(tools::secrets::vars_os())
        .arg("--http")
        .arg(format!("127.0.0.1:{port}"))
        // In the environment, not on the command line: ggd takes GGD_TOKEN through its secret
        // hand-over, so it never shows in /proc/<pid>/cmdline.
        .env("GGD_TOKEN", &token)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start ggd: {e}"))?;
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Some(port) = reported_port(&log_path, offset) {
            return Ok(State {
                port,
                token,
                pid: child.id(),
                cwd: cwd.to_path_buf(),
            });
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "ggd exited ({status}) before serving; see {}",
                log_path.display()
            ));
        }
        if Instant::now() > deadline {
            return Err(format!(
                "ggd did not report its address within {}s; see {}",
                START_TIMEOUT.as_secs(),
                log_path.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The port of the first `ggd serving` record after `offset` in the log.
fn reported_port(log: &Path, offset: u64) -> Option<u16> {
    use std::io::Seek;
    let mut file = std::fs::File::open(log).ok()?;
    file.seek(std::io::SeekFrom::Start(offset)).ok()?;
    for line in std::io::BufReader::new(file).lines() {
        let line = line.ok()?;
        let Ok(record) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if record["fields"]["message"] == "ggd serving"
            && let Some(addr) = record["fields"]["addr"].as_str()
        {
            return addr.parse::<SocketAddr>().ok().map(|a| a.port());
        }
    }
    None
}

/// `~/.gg/web-open.html`: the page `--open` hands to the opener.
fn open_page_path(home: &Path) -> PathBuf {
    crate::app::config::gg_home(home).join("web-open.html")
}

/// A page that goes on to `url` at once. Script and refresh both, so it works with scripts off;
/// `<` is escaped so nothing in the address can end the script element.
fn open_page(url: &str) -> Result<String, String> {
    let quoted = serde_json::to_string(url)
        .map_err(|e| e.to_string())?
        .replace('<', "\\u003c");
    let attribute = url
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;");
    Ok(format!(
        "<!doctype html>\n<meta charset=\"utf-8\">\n<meta name=\"referrer\" content=\"no-referrer\">\n\
         <title>gg</title>\n<script>location.replace({quoted});</script>\n\
         <noscript><meta http-equiv=\"refresh\" content=\"0;url={attribute}\"></noscript>\n"
    ))
}

/// Writes the page for `url` to `~/.gg/web-open.html`, mode 0600 from its creation, in a 0700
/// `~/.gg`, replaced atomically (a browser still reading the previous one sees either whole).
fn write_open_page(home: &Path, url: &str) -> Result<PathBuf, String> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    let dir = crate::app::config::gg_home(home);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    // An existing ~/.gg made with a wider mode is narrowed, as ggd's lock does.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let page = open_page(url)?;
    let path = open_page_path(home);
    let tmp = dir.join(format!("web-open.{}.tmp", crate::jobs::random_hex(8)?));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut file| {
            file.write_all(page.as_bytes())?;
            file.sync_all()
        });
    let renamed = written.and_then(|()| std::fs::rename(&tmp, &path));
    if let Err(e) = renamed {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("{}: {e}", path.display()));
    }
    Ok(path)
}

/// Hands the page that leads to `url` to the desktop's opener; failing that, the printed address
/// is enough.
fn open(home: &Path, url: &str) {
    let Some(opener) = tools::computer::opener() else {
        eprintln!("gg web: no desktop opener (/usr/bin/xdg-open); open the address above yourself");
        return;
    };
    let page = match write_open_page(home, url) {
        Ok(page) => page,
        Err(e) => {
            eprintln!("gg web: {e}; open the address above yourself");
            return;
        }
    };
    // Nothing secret for the opener and the browser it starts (they are not gg's), and no
    // program from a directory the agent's commands write.
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let opened = match tools::computer::opener_command(&page, &cwd) {
        Some(mut command) => command.spawn(),
        None => Err(std::io::Error::from(std::io::ErrorKind::NotFound)),
    };
    if let Err(e) = opened {
        eprintln!(
            "gg web: could not run {} ({e}); open the address above yourself",
            opener.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_comes_from_the_serving_record_after_the_offset() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        let old = r#"{"fields":{"message":"ggd serving","mode":"http","addr":"127.0.0.1:1111"}}"#;
        std::fs::write(&log, format!("{old}\n")).unwrap();
        let offset = std::fs::metadata(&log).unwrap().len();
        assert_eq!(reported_port(&log, 0), Some(1111));
        assert_eq!(reported_port(&log, offset), None);
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        writeln!(f, "not json").unwrap();
        writeln!(
            f,
            r#"{{"fields":{{"message":"ggd serving","mode":"http","addr":"127.0.0.1:2222"}}}}"#
        )
        .unwrap();
        assert_eq!(reported_port(&log, offset), Some(2222));
    }
}
