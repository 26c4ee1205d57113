//! The `bash` tool's process handling: run a script in its own process group, keep the tail of
//! its output, kill the whole tree on timeout or cancellation, and keep secrets out of its
//! environment.
//!
//! Deciding *whether* to run is not here: the agent runs the classifier and the approval policy
//! first (see `agent::chain`); this module only runs what was allowed, under the sandbox the
//! caller asked for.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

/// How much output the model sees: the last 50 KiB.
pub const OUTPUT_TAIL_BYTES: usize = 50 * 1024;
/// How long a sandbox wrapper gets to clean up after SIGTERM before the group is killed.
const TERM_GRACE: Duration = Duration::from_millis(300);
/// The default timeout of a bash call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

// The secret patterns and the child environment are one list for every child gg starts.
pub use crate::secrets::{SECRET_ENV_PATTERNS, is_secret_env, is_secret_var, scrubbed_env};
pub use runner::CommandRunner;
pub use setup_error::SetupError;

pub mod runner;
mod setup_error;

/// Git settings forced onto commands that run without approval (read-only verdicts), so that a
/// planted repository cannot make `git status` or `git diff` run its programs. The classifier
/// already refuses read-only for repositories whose config sets such keys; this closes the gap
/// between that check and the run.
pub const GIT_PROTECTIVE_CONFIG: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.pager", "cat"),
    ("core.hooksPath", "/dev/null"),
    ("diff.external", ""),
    ("safe.bareRepository", "explicit"),
    ("core.sshCommand", "false"),
    ("credential.helper", ""),
    ("protocol.ext.allow", "never"),
    // Attributes from the empty tree: a planted `.gitattributes` cannot select a diff driver,
    // so `diff.<driver>.textconv` and `diff.<driver>.command` never run (git >= 2.42).
    ("attr.tree", "4b825dc642cb6eb9a060e54bf8d69288fbee4904"),
    ("core.attributesFile", "/dev/null"),
];

/// Environment entries that apply [`GIT_PROTECTIVE_CONFIG`] through `GIT_CONFIG_COUNT`, which git
/// reads after every config file, so they win over the repository's own settings.
pub fn git_protective_env() -> Vec<(String, String)> {
    let mut env = vec![
        (
            "GIT_CONFIG_COUNT".to_string(),
            GIT_PROTECTIVE_CONFIG.len().to_string(),
        ),
        ("GIT_PAGER".to_string(), "cat".to_string()),
        ("PAGER".to_string(), "cat".to_string()),
        ("GIT_EXTERNAL_DIFF".to_string(), String::new()),
        ("GIT_TERMINAL_PROMPT".to_string(), "0".to_string()),
        // Read-only commands must not write: `git status` would otherwise refresh the index.
        ("GIT_OPTIONAL_LOCKS".to_string(), "0".to_string()),
    ];
    for (i, (key, value)) in GIT_PROTECTIVE_CONFIG.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}"), (*key).to_string()));
        env.push((format!("GIT_CONFIG_VALUE_{i}"), (*value).to_string()));
    }
    env
}

/// Where bash is looked for, in this order: fixed system paths only, never `PATH` (a planted
/// `node_modules/.bin/bash` or `~/.local/bin/bash` must not become the shell).
const BASH_PATHS: &[&str] = &[
    "/bin/bash",
    "/usr/bin/bash",
    "/usr/local/bin/bash",
    "/opt/homebrew/bin/bash",
];

/// The shell that runs scripts: bash from a fixed system path, else `/bin/sh`.
///
/// Not `$SHELL`: the classifier reads bash, and another shell reads the same text differently
/// (zsh's `=cmd` expansion, `>!`); and zsh sources `~/.zshenv` for every shell, so a planted
/// start-up file would run with each command.
pub fn shell() -> PathBuf {
    BASH_PATHS
        .iter()
        .map(Path::new)
        .find(|p| p.is_file())
        .unwrap_or(Path::new("/bin/sh"))
        .to_path_buf()
}

/// The shell's arguments for `script`: a non-login, non-interactive shell. A login shell
/// (`-l`) would source the person's profile files (`~/.bash_profile`, `~/.profile`) before each
/// command, so a profile planted by an earlier command would run in every later one, the
/// unsandboxed ones included. gg's own environment (its `PATH`) is what commands get instead;
/// the variables that make a non-interactive shell read a file are removed
/// ([`is_shell_startup_var`]).
pub fn shell_args(script: &str) -> Vec<std::ffi::OsString> {
    vec!["-c".into(), script.into()]
}

/// Variables that make a shell read and run a file or code before the script: never passed to
/// commands.
pub fn is_shell_startup_var(name: &std::ffi::OsStr) -> bool {
    let name = name.as_encoded_bytes();
    matches!(
        name,
        b"BASH_ENV" | b"ENV" | b"SHELLOPTS" | b"BASHOPTS" | b"PROMPT_COMMAND" | b"PS4" | b"ZDOTDIR"
    ) || name.starts_with(b"BASH_FUNC_")
}

/// What the kernel answers when it refuses a file access: a read-only mount, Landlock and
/// seccomp alike.
const REFUSED_FILE_ACCESS: &[&str] = &["Permission denied", "Operation not permitted"];

/// Whether a failed command's output reads like a refused write or connection (what a
/// read-only filesystem and an absent network answer), so its result can say why.
pub fn looks_refused(output: &str) -> bool {
    const SIGNS: &[&str] = &[
        "Read-only file system",
        "Network is unreachable",
        "Could not resolve host",
        "Temporary failure in name resolution",
        "Address family not supported",
        "Name or service not known",
    ];
    mentions_any(output, REFUSED_FILE_ACCESS) || mentions_any(output, SIGNS)
}

/// Whether `output` reads like a file access the kernel refused (the guard's Landlock answers
/// `EACCES`, and `EXDEV` for a rename or link across its rules); the guard leaves the network as
/// it is, so [`looks_refused`]'s network signs are not its.
pub fn looks_refused_a_file(output: &str) -> bool {
    mentions_any(output, REFUSED_FILE_ACCESS) || output.contains("Invalid cross-device link")
}

fn mentions_any(output: &str, signs: &[&str]) -> bool {
    signs.iter().any(|sign| output.contains(sign))
}

/// How a bash run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    Exited(i32),
    Signalled(i32),
    TimedOut(Duration),
    Cancelled,
}

/// What the model is told about a run.
#[derive(Debug, Clone)]
pub struct BashOutput {
    pub ending: Ending,
    /// The tool result text: the output tail, the truncation header and the ending line.
    pub text: String,
    /// Where the full output was saved when it was truncated.
    pub full_log: Option<PathBuf>,
}

impl BashOutput {
    pub fn is_error(&self) -> bool {
        self.ending != Ending::Exited(0)
    }
}

/// Keeps the last `cap` bytes of a stream, and everything in a log file when asked.
struct Tail {
    cap: usize,
    buf: Vec<u8>,
    total: u64,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        self.buf.extend_from_slice(chunk);
        if self.buf.len() > 2 * self.cap {
            let cut = self.buf.len() - self.cap;
            self.buf.drain(..cut);
        }
    }

    fn finish(mut self) -> (Vec<u8>, u64) {
        if self.buf.len() > self.cap {
            let cut = self.buf.len() - self.cap;
            self.buf.drain(..cut);
        }
        (self.buf, self.total)
    }
}

/// A process [`run`] starts: as it is, or under the guard (`sandbox::guard`), whose spawn
/// happens on a thread of its own.
pub enum ToSpawn {
    Plain(std::process::Command),
    #[cfg(target_os = "linux")]
    Guarded(sandbox::GuardedCommand),
}

impl From<std::process::Command> for ToSpawn {
    fn from(command: std::process::Command) -> Self {
        ToSpawn::Plain(command)
    }
}

/// Runs `command` (already configured: program, args, environment, working directory, sandbox
/// wrapping) in its own process group with stdin closed, stdout and stderr captured together.
///
/// `log_dir` receives the full output when it exceeds [`OUTPUT_TAIL_BYTES`].
pub async fn run(
    command: impl Into<ToSpawn>,
    timeout: Duration,
    cancel: &CancellationToken,
    log_dir: &Path,
) -> std::io::Result<BashOutput> {
    use std::os::unix::process::CommandExt;
    fn configure(command: &mut std::process::Command) {
        command
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
    }
    fn spawn(command: std::process::Command) -> std::io::Result<tokio::process::Child> {
        let mut command = tokio::process::Command::from(command);
        command.kill_on_drop(true);
        command.spawn()
    }
    let mut child = match command.into() {
        ToSpawn::Plain(mut command) => {
            configure(&mut command);
            spawn(command)?
        }
        #[cfg(target_os = "linux")]
        ToSpawn::Guarded(mut guarded) => {
            configure(guarded.command_mut());
            // The spawning thread is not one of the runtime's: the child is registered with
            // this runtime's reaper through its handle.
            let runtime = tokio::runtime::Handle::current();
            guarded.spawn_with(move |command| {
                let _in_runtime = runtime.enter();
                spawn(command)
            })?
        }
    };
    // Taken now: once the child is reaped its id is gone, and the group may live on.
    let pgid = child
        .id()
        .and_then(|id| rustix::process::Pid::from_raw(id as i32));
    let readers = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn AsyncRead + Unpin + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn AsyncRead + Unpin + Send>),
    ];
    watch(
        Running::Process(child, pgid),
        readers,
        timeout,
        cancel,
        log_dir,
    )
    .await
}

/// Watches a command that runs in the session's sandbox server (see `sandbox::server`): the
/// same output handling, timeout and cancellation as [`run`]; stopping it closes its channel, on
/// which the server kills the command's whole tree and then closes its end.
#[cfg(target_os = "linux")]
pub async fn run_served(
    command: sandbox::server::ServerCommand,
    timeout: Duration,
    cancel: &CancellationToken,
    log_dir: &Path,
) -> std::io::Result<BashOutput> {
    let sandbox::server::ServerCommand {
        output,
        channel,
        ticket,
    } = command;
    let output = tokio::net::unix::pipe::Receiver::from_owned_fd(output)?;
    channel.set_nonblocking(true)?;
    let channel = tokio::net::UnixStream::from_std(channel)?;
    let readers = [
        Some(Box::new(output) as Box<dyn AsyncRead + Unpin + Send>),
        None,
    ];
    let running = Running::Served {
        channel,
        report: Vec::new(),
        ticket: Some(ticket),
    };
    watch(running, readers, timeout, cancel, log_dir).await
}

/// What [`watch`] waits for.
enum Running {
    /// A process gg spawned (directly, or bubblewrap / the helper around the command), and its
    /// process group.
    Process(tokio::process::Child, Option<rustix::process::Pid>),
    /// A command in the session's sandbox server: its channel gives the report.
    #[cfg(target_os = "linux")]
    Served {
        channel: tokio::net::UnixStream,
        report: Vec<u8>,
        /// Given back once the report is read (the server has taken the tree down by then).
        ticket: Option<sandbox::server::Ticket>,
    },
}

impl Running {
    /// Waits for the end (cancel-safe: what was read stays in `self`).
    async fn wait(&mut self) -> std::io::Result<Ending> {
        use std::os::unix::process::ExitStatusExt;
        match self {
            Running::Process(child, _) => {
                let s = child.wait().await?;
                Ok(match (s.code(), s.signal()) {
                    (Some(code), _) => Ending::Exited(code),
                    (None, Some(sig)) => Ending::Signalled(sig),
                    (None, None) => Ending::Exited(-1),
                })
            }
            #[cfg(target_os = "linux")]
            Running::Served {
                channel,
                report,
                ticket,
            } => {
                let mut buf = [0u8; 64];
                loop {
                    let n = channel.read(&mut buf).await?;
                    if n == 0 || report.len() > 256 {
                        break;
                    }
                    report.extend_from_slice(&buf[..n]);
                }
                let ended = sandbox::server::Ended::parse(report);
                if !matches!(ended, sandbox::server::Ended::Stopped)
                    && let Some(ticket) = ticket.take()
                {
                    ticket.ended();
                }
                Ok(match ended {
                    sandbox::server::Ended::Exited(code) => Ending::Exited(code),
                    sandbox::server::Ended::Signalled(sig) => Ending::Signalled(sig),
                    // No report: the server went away (it was killed).
                    sandbox::server::Ended::Stopped => Ending::Signalled(9),
                })
            }
        }
    }

    /// After the script itself ended: background jobs of the script would hold the pipes open
    /// forever; the tool returns when the script is done. (A served command's server has
    /// already killed its tree when it reports.)
    fn after_exit(&self) {
        if let Running::Process(_, pgid) = self {
            kill_group(*pgid);
        }
    }

    /// Stops the tree on timeout or cancellation and waits until it is gone.
    async fn stop(&mut self, exited: bool) {
        match self {
            Running::Process(child, pgid) => {
                if !exited {
                    // A sandbox wrapper (bwrap, or gg's helper) tears down what it started when it
                    // gets SIGTERM; SIGKILL alone would leave a process the command detached with
                    // `setsid` running. So: TERM the wrapper, give it a moment, then KILL the
                    // whole group.
                    if let Some(pid) = child
                        .id()
                        .and_then(|id| rustix::process::Pid::from_raw(id as i32))
                    {
                        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
                    }
                    let _ = tokio::time::timeout(TERM_GRACE, child.wait()).await;
                }
                kill_group(*pgid);
                // Reap the killed child.
                let _ = child.wait().await;
            }
            #[cfg(target_os = "linux")]
            Running::Served { channel, .. } => {
                use tokio::io::AsyncWriteExt;
                // The server kills the tree when its channel is closed, then closes it.
                let _ = channel.shutdown().await;
                let mut buf = [0u8; 64];
                let _ = tokio::time::timeout(Duration::from_secs(10), async {
                    while let Ok(n) = channel.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                    }
                })
                .await;
            }
        }
    }
}

fn kill_group(pgid: Option<rustix::process::Pid>) {
    if let Some(pgid) = pgid {
        let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    }
}

/// Collects the output of a started command until it ends, times out or is cancelled.
async fn watch(
    mut running: Running,
    readers: [Option<Box<dyn AsyncRead + Unpin + Send>>; 2],
    timeout: Duration,
    cancel: &CancellationToken,
    log_dir: &Path,
) -> std::io::Result<BashOutput> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(64);
    for reader in readers.into_iter().flatten() {
        let tx = tx.clone();
        tokio::spawn(pump(reader, tx));
    }
    drop(tx);

    let mut log = LogFile::new(log_dir);
    let mut tail = Tail {
        cap: OUTPUT_TAIL_BYTES,
        buf: Vec::new(),
        total: 0,
    };
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut status = None;
    let mut ending = None;
    let mut output_open = true;
    // After the script exits and its group is killed, a process that left the group (setsid)
    // may still hold the pipes; its output is not waited for beyond this grace period.
    let grace = tokio::time::sleep(Duration::from_secs(3600));
    tokio::pin!(grace);
    let mut grace_armed = false;
    while ending.is_none() && (status.is_none() || output_open) {
        tokio::select! {
            chunk = rx.recv(), if output_open => match chunk {
                Some(chunk) => {
                    log.write(&chunk);
                    tail.push(&chunk);
                }
                None => output_open = false,
            },
            result = running.wait(), if status.is_none() => {
                status = Some(result?);
                running.after_exit();
                grace.as_mut().reset(tokio::time::Instant::now() + Duration::from_millis(500));
                grace_armed = true;
            }
            () = &mut grace, if grace_armed => output_open = false,
            () = &mut deadline => ending = Some(Ending::TimedOut(timeout)),
            () = cancel.cancelled() => ending = Some(Ending::Cancelled),
        }
    }
    if ending.is_some() {
        running.stop(status.is_some()).await;
        // Drain whatever it wrote before dying.
        while let Ok(chunk) = rx.try_recv() {
            log.write(&chunk);
            tail.push(&chunk);
        }
    }
    let ending = ending.unwrap_or_else(|| status.unwrap_or(Ending::Exited(-1)));

    let (shown, total) = tail.finish();
    let truncated = total > shown.len() as u64;
    let full_log = log.keep(truncated);
    let mut text = String::new();
    if truncated {
        text.push_str(&format!(
            "... output truncated: omitted {} bytes; showing last {} bytes ...\n",
            total - shown.len() as u64,
            shown.len()
        ));
        match &full_log {
            Some(path) => text.push_str(&format!("Full output saved to: {}\n", path.display())),
            None => text.push_str("Full output could not be saved.\n"),
        }
    }
    text.push_str(&String::from_utf8_lossy(&shown));
    let ending_line = match &ending {
        Ending::Exited(0) => None,
        Ending::Exited(code) => Some(format!("exit code {code}")),
        Ending::Signalled(sig) => Some(format!("killed by signal {sig}")),
        Ending::TimedOut(d) => Some(format!("command timed out after {}", format_duration(*d))),
        Ending::Cancelled => Some("command canceled".to_string()),
    };
    if let Some(line) = ending_line {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&line);
    }
    Ok(BashOutput {
        ending,
        text,
        full_log,
    })
}

async fn pump(
    mut reader: Box<dyn AsyncRead + Unpin + Send>,
    tx: tokio::sync::mpsc::Sender<Vec<u8>>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if tx.send(buf[..n].to_vec()).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// The full-output log: written as output arrives, kept only when the tail was truncated.
struct LogFile {
    path: Option<PathBuf>,
    file: Option<std::fs::File>,
    /// Bytes written so far; past `limit` ([`MAX_LOG_BYTES`]) the rest is dropped.
    written: u64,
    limit: u64,
}

/// The most of one command's output kept on disk. A command that prints without end (`cat
/// /dev/zero`, run read-only and so unasked) must not fill the person's disk through gg's own
/// log: an attacker pass wrote 1 GB in eight seconds, and a call may last a day.
const MAX_LOG_BYTES: u64 = 64 * 1024 * 1024;

impl LogFile {
    fn new(dir: &Path) -> LogFile {
        let name = format!(
            "bash-{}-{:08x}.log",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or_default(),
            fastrand::u32(..)
        );
        let path = dir.join(&name);
        let file = private_log(dir, &name).ok();
        LogFile {
            path: file.as_ref().map(|_| path),
            file,
            written: 0,
            limit: MAX_LOG_BYTES,
        }
    }

    fn write(&mut self, chunk: &[u8]) {
        use std::io::Write;
        let Some(file) = &mut self.file else {
            return;
        };
        if self.written >= self.limit {
            return;
        }
        let room = (self.limit - self.written).min(chunk.len() as u64) as usize;
        let mut ok = file.write_all(&chunk[..room]).is_ok();
        self.written += room as u64;
        if ok && self.written >= self.limit {
            ok = file
                .write_all(
                    format!(
                        "\n[gg: the output went on; only its first {} MiB are kept]\n",
                        self.limit >> 20
                    )
                    .as_bytes(),
                )
                .is_ok();
        }
        if !ok {
            self.file = None;
        }
    }

    fn keep(mut self, truncated: bool) -> Option<PathBuf> {
        let complete = self.file.take().is_some();
        let path = self.path.take()?;
        if truncated && complete {
            Some(path)
        } else {
            let _ = std::fs::remove_file(&path);
            None
        }
    }
}

/// Creates `name` in the outputs directory `dir`, mode 0600 from its creation, after making `dir`
/// 0700: full outputs hold whatever the commands printed (secrets included), and the project is
/// often readable by other local users. A `dir` that exists with a wider mode (made by an older gg,
/// or by hand) is narrowed. `dir` is `<project>/.gg/outputs` ([`crate::registry::outputs_dir`]):
/// `.gg` and `outputs` are opened (and made where missing) beneath the project with no link
/// followed, as the memory store opens `.gg/memory`, so a link at either (made by a command at the
/// landlock level, or committed in a cloned repository) neither receives the log nor has a mode
/// changed through it.
fn private_log(dir: &Path, name: &str) -> std::io::Result<std::fs::File> {
    use rustix::fs::{Mode, OFlags};
    let invalid = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not <project>/.gg/outputs",
        )
    };
    let gg = dir.parent().ok_or_else(invalid)?;
    let project = gg.parent().ok_or_else(invalid)?;
    let relative =
        Path::new(gg.file_name().ok_or_else(invalid)?).join(dir.file_name().ok_or_else(invalid)?);
    let ws = crate::paths::Workspace::open(project)?;
    let confined = ws
        .confine(relative.to_str().ok_or_else(invalid)?)
        .map_err(std::io::Error::other)?;
    let dir_fd = ws
        .open_dir_strict(&confined, Some(0o700))
        .map_err(std::io::Error::other)?
        .ok_or_else(invalid)?;
    let stat = rustix::fs::fstat(&dir_fd)?;
    if stat.st_mode & 0o077 != 0 {
        rustix::fs::fchmod(&dir_fd, Mode::from_raw_mode(0o700))?;
    }
    let file = rustix::fs::openat(
        &dir_fd,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    Ok(std::fs::File::from(file))
}

use crate::duration::unit as format_duration;

#[cfg(test)]
mod tests {
    use super::*;

    /// A command that prints without end leaves at most the limit on disk, and says where the
    /// rest went.
    #[test]
    fn the_full_output_log_stops_at_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = LogFile::new(&dir.path().join(".gg/outputs"));
        log.limit = 1 << 20;
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..64 {
            log.write(&chunk);
        }
        let path = log.keep(true).unwrap();
        let text = std::fs::read(&path).unwrap();
        assert!(text.len() < (1 << 20) + 100, "{}", text.len());
        assert!(String::from_utf8_lossy(&text[1 << 20..]).contains("first 1 MiB are kept"));
    }
}
