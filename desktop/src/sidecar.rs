//! The ggd this shell starts and owns: `gg` beside this executable, run under the name `ggd` with
//! `--http 127.0.0.1:0 --exit-on-stdin-eof --cwd <workspace>`.
//!
//! - The token is fresh for every start and travels in `GGD_TOKEN` (ggd's secret hand-over takes
//!   it from there), never on the command line that `ps` shows.
//! - The port is read from ggd's own `ggd serving` log record on its standard error, which is then
//!   copied to this process's standard error.
//! - ggd's standard input is a pipe only this process holds: if the shell dies in any way, the
//!   kernel closes it and ggd (`--exit-on-stdin-eof`) stops, so no daemon is left behind.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a starting ggd gets to report its address.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stopping ggd gets after SIGTERM (it waits up to 10 s for its runs) before SIGKILL.
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// A running ggd started by this shell.
pub struct Sidecar {
    pub port: u16,
    pub token: String,
    pub pid: u32,
    /// Kept open for ggd's `--exit-on-stdin-eof`; dropped last.
    stdin: Option<ChildStdin>,
    /// Filled by the waiter thread when ggd has exited (and been reaped).
    exited: Arc<(Mutex<Option<String>>, std::sync::Condvar)>,
}

/// The `ggd` to run: `gg` in this executable's directory (never one on `PATH`, which could be
/// another version), started under the name `ggd` like `gg web` does.
pub fn gg_executable() -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let dir = me
        .parent()
        .ok_or_else(|| format!("{} has no directory", me.display()))?;
    let gg = dir.join("gg");
    if gg.is_file() {
        Ok(gg)
    } else {
        Err(format!(
            "{} is missing: gg-desktop runs the gg installed beside it (install both)",
            gg.display()
        ))
    }
}

/// A 256-bit token as hex.
pub fn fresh_token() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no random numbers for the token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Sidecar {
    /// Starts ggd for `workspace` and waits for its address. `on_exit` is called (from another
    /// thread) with a description of how it ended, once it has exited.
    pub fn start(
        workspace: &Path,
        on_exit: impl FnOnce(String) + Send + 'static,
    ) -> Result<Sidecar, String> {
        use std::os::unix::process::CommandExt;
        let gg = gg_executable()?;
        let token = fresh_token()?;
        let mut child = Command::new(&gg)
            .arg0("ggd")
            .args(["--http", "127.0.0.1:0", "--exit-on-stdin-eof", "--cwd"])
            .arg(workspace)
            .env("GGD_TOKEN", &token)
            .current_dir(workspace)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start ggd ({}): {e}", gg.display()))?;
        let pid = child.id();
        let stdin = child.stdin.take();
        let stderr = child.stderr.take();
        let (port_tx, port_rx) = mpsc::channel();
        if let Some(stderr) = stderr {
            std::thread::spawn(move || copy_log(stderr, port_tx));
        }
        let exited = Arc::new((Mutex::new(None), std::sync::Condvar::new()));
        let sidecar = Sidecar {
            port: 0,
            token,
            pid,
            stdin,
            exited: Arc::clone(&exited),
        };
        std::thread::spawn(move || wait_for(child, exited, on_exit));
        let port = match port_rx.recv_timeout(START_TIMEOUT) {
            Ok(port) => port,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                sidecar.stop();
                return Err("ggd exited before serving (its log is above)".to_string());
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                sidecar.stop();
                return Err(format!(
                    "ggd did not report its address within {} s",
                    START_TIMEOUT.as_secs()
                ));
            }
        };
        Ok(Sidecar { port, ..sidecar })
    }

    /// The origin the page is served from, which is the only one the webview may show.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Whether ggd has exited.
    pub fn has_exited(&self) -> bool {
        self.exited.0.lock().map(|e| e.is_some()).unwrap_or(true)
    }

    /// SIGTERM, a wait for the exit, SIGKILL when it does not come; then its stdin is closed.
    pub fn stop(mut self) {
        use rustix::process::{Pid, Signal, kill_process};
        let pid = i32::try_from(self.pid).ok().and_then(Pid::from_raw);
        let (lock, condvar) = &*self.exited;
        // The waiter thread reaps ggd and records it under this lock, so a signal sent while the
        // lock shows it running cannot reach a reused pid.
        if let (Some(pid), Ok(state)) = (pid, lock.lock()) {
            if state.is_none() {
                let _ = kill_process(pid, Signal::TERM);
            }
            let deadline = Instant::now() + STOP_TIMEOUT;
            let mut state = state;
            while state.is_none() {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    eprintln!(
                        "gg-desktop: ggd (pid {pid}) did not stop within {} s of SIGTERM; killing it",
                        STOP_TIMEOUT.as_secs()
                    );
                    let _ = kill_process(pid, Signal::KILL);
                    let _ = condvar.wait_timeout(state, Duration::from_secs(5));
                    break;
                }
                match condvar.wait_timeout(state, left) {
                    Ok((next, _)) => state = next,
                    Err(_) => break,
                }
            }
        }
        drop(self.stdin.take());
    }
}

/// One JSON-RPC call over a short HTTP/1.0 exchange (ggd closes the connection after it).
pub fn rpc(
    port: u16,
    token: &str,
    method: &str,
    params: serde_json::Value,
) -> Result<serde_json::Value, String> {
    use std::io::Read;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("ggd: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| format!("ggd: {e}"))?;
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        .to_string();
    let request = format!(
        "POST /rpc HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("ggd: {e}"))?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .map_err(|e| format!("ggd: {e}"))?;
    let text = String::from_utf8_lossy(&response);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, body)| body)
        .ok_or("ggd: a response without a body")?;
    let reply: serde_json::Value =
        serde_json::from_str(body).map_err(|e| format!("ggd: undecodable response: {e}"))?;
    if let Some(error) = reply.get("error") {
        return Err(error["message"].as_str().unwrap_or("error").to_string());
    }
    Ok(reply["result"].clone())
}

/// Copies ggd's log to this process's standard error and sends the port of its first
/// `ggd serving` record.
fn copy_log(stderr: impl std::io::Read, port: mpsc::Sender<u16>) {
    let mut port = Some(port);
    let mut out = std::io::stderr();
    for line in BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        if let Some(found) = serving_port(&line)
            && let Some(sender) = port.take()
        {
            let _ = sender.send(found);
        }
        let _ = writeln!(out, "{line}");
    }
}

/// The port of a `{"fields":{"message":"ggd serving","addr":"127.0.0.1:PORT"}}` record.
fn serving_port(line: &str) -> Option<u16> {
    let record: serde_json::Value = serde_json::from_str(line).ok()?;
    if record["fields"]["message"] != "ggd serving" {
        return None;
    }
    let addr: SocketAddr = record["fields"]["addr"].as_str()?.parse().ok()?;
    Some(addr.port())
}

fn wait_for(
    mut child: Child,
    exited: Arc<(Mutex<Option<String>>, std::sync::Condvar)>,
    on_exit: impl FnOnce(String),
) {
    let how = match child.wait() {
        Ok(status) => status.to_string(),
        Err(e) => format!("lost track of it: {e}"),
    };
    let (lock, condvar) = &*exited;
    if let Ok(mut state) = lock.lock() {
        *state = Some(how.clone());
    }
    condvar.notify_all();
    on_exit(how);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_read_from_the_serving_record_only() {
        let serving = r#"{"level":"INFO","fields":{"message":"ggd serving","mode":"http","addr":"127.0.0.1:43210"}}"#;
        assert_eq!(serving_port(serving), Some(43210));
        assert_eq!(
            serving_port(r#"{"fields":{"message":"other","addr":"127.0.0.1:1"}}"#),
            None
        );
        assert_eq!(serving_port("not json"), None);
        assert_eq!(
            serving_port(r#"{"fields":{"message":"ggd serving","addr":"nonsense"}}"#),
            None
        );
    }

    #[test]
    fn tokens_are_fresh_256_bit_hex() {
        let a = fresh_token().unwrap();
        let b = fresh_token().unwrap();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
