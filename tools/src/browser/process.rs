//! Finding and launching Chromium: a fresh private profile, the DevTools pipe on the child's
//! stdin/stdout, every request through the guard's proxy, and (with the sandbox on) the whole
//! browser inside the sandbox with only its profile writable.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use rustix::process::{Pid, Signal, kill_process, kill_process_group, test_kill_process_group};

use crate::proc_stat::ProcStat;

use super::cdp::Cdp;
use crate::network::proxy::ProxyHandle;
use crate::registry::SandboxSetting;

/// Names searched on `PATH`, in order, when `browser.executable` is not set.
pub const CANDIDATES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

/// The Chromium to run: `configured` (config or `GG_CHROMIUM`), else the first of
/// [`CANDIDATES`] on `PATH`.
pub fn find_executable(configured: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = configured {
        return is_executable(p).then(|| p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("GG_CHROMIUM").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return is_executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    CANDIDATES.iter().find_map(|name| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| is_executable(p))
    })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Prefix of the profile directories (tests find leftover processes by it).
pub const PROFILE_PREFIX: &str = "gg-browser-";

/// How long dropping a browser waits for its processes to be gone after SIGKILL. They die in
/// well under a second; the bound only keeps a stuck kernel from holding gg's exit for ever.
const REAP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A running browser. Dropping it kills the browser and every process descending from it, waits
/// (bounded) until none of them runs, and removes the profile: gg exits only after its browser
/// has.
pub struct Process {
    pub cdp: Arc<Cdp>,
    child: tokio::process::Child,
    pgid: Option<Pid>,
    profile: PathBuf,
    /// A short private temp directory of the unsandboxed browser (removed with it).
    tmp: Option<PathBuf>,
    /// The sandbox level it runs under (`off` without the sandbox).
    pub level: String,
    _proxy: Arc<ProxyHandle>,
    _sandbox: Option<sandbox::Guard>,
    /// The profile and temp directory, removed even if a signal ends gg before `Drop` runs.
    _registered: Vec<sandbox::leftovers::Registered>,
}

impl Process {
    /// Whether the browser is still there (the pipe open and the process not exited).
    pub fn alive(&mut self) -> bool {
        !self.cdp.is_closed() && matches!(self.child.try_wait(), Ok(None))
    }

    /// What ended it, for the crash report.
    pub fn exit_status(&mut self) -> String {
        match self.child.try_wait() {
            Ok(Some(status)) => status.to_string(),
            _ => "the DevTools pipe closed".into(),
        }
    }

    /// The profile directory.
    pub fn profile(&self) -> &Path {
        &self.profile
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // Chromium's zygote starts a session of its own (setsid), so its renderers are outside
        // the browser's process group: they are found by parentage, before the kill orphans them.
        let family = self.child.id().map(descendants).unwrap_or_default();
        if let Some(pgid) = self.pgid {
            // The whole group: Chromium's utility processes; under bubblewrap, bubblewrap itself
            // (and with it the PID namespace).
            let _ = kill_process_group(pgid, Signal::KILL);
        }
        for member in &family {
            let _ = kill_process(member.pid, Signal::KILL);
        }
        let _ = self.child.start_kill();
        self.wait_until_gone(&family);
        let _ = std::fs::remove_dir_all(&self.profile);
        if let Some(tmp) = &self.tmp {
            let _ = std::fs::remove_dir_all(tmp);
        }
    }
}

impl Process {
    /// Waits, up to [`REAP_TIMEOUT`], for the browser (reaped: it is gg's child) and for every
    /// process of `family` and of its group (not gg's children) to be gone. SIGKILL takes effect
    /// asynchronously: without this wait gg returned while renderers still ran, for about a
    /// second and a half.
    fn wait_until_gone(&mut self, family: &[Member]) {
        let deadline = std::time::Instant::now() + REAP_TIMEOUT;
        let pause = std::time::Duration::from_millis(5);
        let in_time = || std::time::Instant::now() < deadline;
        while matches!(self.child.try_wait(), Ok(None)) && in_time() {
            std::thread::sleep(pause);
        }
        while family.iter().any(Member::runs) && in_time() {
            std::thread::sleep(pause);
        }
        if let Some(pgid) = self.pgid {
            while group_has_live_members(pgid) && in_time() {
                std::thread::sleep(pause);
            }
        }
    }
}

/// A process of the browser's family, known by its pid and start time (so that a pid the kernel
/// gave to someone else meanwhile is not waited for).
struct Member {
    pid: Pid,
    started: u64,
}

impl Member {
    /// Still running: there, the same process, and not a zombie (a zombie holds nothing, and the
    /// one that reaps an orphan is init, not gg).
    fn runs(&self) -> bool {
        u32::try_from(self.pid.as_raw_nonzero().get())
            .ok()
            .and_then(ProcStat::read)
            .is_some_and(|s| s.start_ticks == self.started && !s.dead)
    }
}

/// The processes descending from `root` (children, theirs, …).
fn descendants(root: u32) -> Vec<Member> {
    let all = ProcStat::live();
    let mut found: Vec<Member> = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for (pid, s) in &all {
            if s.ppid == parent
                && !found
                    .iter()
                    .any(|m| u32::try_from(m.pid.as_raw_nonzero().get()) == Ok(*pid))
                && let Some(p) = i32::try_from(*pid).ok().and_then(Pid::from_raw)
            {
                found.push(Member {
                    pid: p,
                    started: s.start_ticks,
                });
                parents.push(*pid);
            }
        }
    }
    found
}

/// Whether a process of group `pgid` still runs (zombies aside, as for [`Member::runs`]).
fn group_has_live_members(pgid: Pid) -> bool {
    test_kill_process_group(pgid).is_ok()
        && ProcStat::live()
            .iter()
            .any(|(_, s)| u32::try_from(pgid.as_raw_nonzero().get()) == Ok(s.pgrp))
}

/// The last lines of the browser's log (its stderr), for a start-up failure; empty when there
/// is none.
pub fn log_tail(profile: &Path) -> String {
    let Ok(text) = std::fs::read_to_string(profile.join("chromium.log")) else {
        return String::new();
    };
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("unexpected operator"))
        .collect();
    let tail = lines[lines.len().saturating_sub(8)..].join("\n");
    if tail.is_empty() {
        String::new()
    } else {
        format!("\nbrowser log:\n{}", termsafe::visible(&tail))
    }
}

/// A fresh 0700 profile directory under the temp directory.
fn profile_dir() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let mut last = String::new();
    for base in [std::env::temp_dir(), PathBuf::from("/tmp")] {
        let mut bytes = [0u8; 8];
        let _ = getrandom::fill(&mut bytes);
        let name: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let dir = base.join(format!("{PROFILE_PREFIX}{name}"));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return std::fs::canonicalize(&dir).map_err(|e| e.to_string()),
            Err(e) => last = format!("{}: {e}", dir.display()),
        }
    }
    Err(format!("browser profile directory: {last}"))
}

/// The flags every launch uses. Background networking, component updates, sync, crash
/// reporting and QUIC are off (they would call home past the guard, or hammer a closed network);
/// the proxy takes every request including loopback (`<-loopback>` removes Chromium's implicit
/// bypass); no host name is resolved by Chromium itself; WebRTC may not send UDP around the
/// proxy; downloads are refused over CDP after start.
fn flags(profile: &Path, proxy_port: u16) -> Vec<OsString> {
    let mut v: Vec<OsString> = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-breakpad",
        "--disable-crash-reporter",
        "--disable-extensions",
        "--disable-default-apps",
        "--disable-client-side-phishing-detection",
        "--disable-component-extensions-with-background-pages",
        "--disable-domain-reliability",
        "--disable-field-trial-config",
        "--disable-search-engine-choice-screen",
        "--metrics-recording-only",
        "--no-pings",
        "--safebrowsing-disable-auto-update",
        "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,\
CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions,SignInProfileCreation,\
AccountConsistency,DiceWebSigninInterception,PushMessaging",
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--mute-audio",
        "--hide-scrollbars",
        "--password-store=basic",
        "--use-mock-keychain",
        "--remote-debugging-pipe",
        "--window-size=1280,800",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    v.push(format!("--user-data-dir={}", profile.display()).into());
    v.push(format!("--proxy-server=http://127.0.0.1:{proxy_port}").into());
    v.push("--proxy-bypass-list=<-loopback>".into());
    v.push("--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1".into());
    v.push("about:blank".into());
    v
}

/// The child's environment: the scrubbed one, with every home-like directory inside the profile
/// so nothing is written elsewhere, and `tmp` as its temp directory.
fn environment(profile: &Path, tmp: &Path) -> Vec<(OsString, OsString)> {
    let mut env = crate::secrets::scrubbed_env(&[]);
    let set = [
        "HOME",
        "XDG_CONFIG_HOME",
        "XDG_CACHE_HOME",
        "XDG_DATA_HOME",
        "TMPDIR",
    ];
    env.retain(|(k, _)| {
        !set.iter().any(|s| k == s)
            && k != "DBUS_SESSION_BUS_ADDRESS"
            && !k.to_string_lossy().ends_with("_PROXY")
            && !k.to_string_lossy().ends_with("_proxy")
    });
    for name in set {
        let dir = if name == "TMPDIR" { tmp } else { profile };
        env.push((name.into(), dir.as_os_str().to_os_string()));
    }
    env
}

/// A short 0700 directory under `/tmp` for the unsandboxed browser's temp files: Chromium puts
/// its profile-lock socket there, and a socket path must fit in 107 bytes, which a profile under
/// a deep `$TMPDIR` may not.
fn short_tmp() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let mut bytes = [0u8; 6];
    let _ = getrandom::fill(&mut bytes);
    let name: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let dir = PathBuf::from("/tmp").join(format!("ggb-{name}"));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

/// The shell line that moves the pipe onto descriptors 3 and 4 and runs the browser: commands
/// arrive on stdin (fd 0 → 3), answers leave on stdout (fd 1 → 4). Stdio needs no `pre_exec`,
/// and the sandbox keeps the standard descriptors while closing every other one.
const EXEC_WITH_PIPE: &str = "exec \"$0\" \"$@\" 3<&0 4>&1 0</dev/null 1>&2";

/// Starts `executable` with its profile, through `proxy`, under `sandbox`.
pub(super) fn launch(
    executable: &Path,
    proxy: Arc<ProxyHandle>,
    setting: &SandboxSetting,
) -> Result<Process, String> {
    let profile = profile_dir()?;
    let mut registered = vec![sandbox::leftovers::register(
        &profile,
        sandbox::leftovers::Removal::Tree,
    )];
    // In the sandbox `/tmp` is already private to the browser.
    let tmp = match setting {
        SandboxSetting::Off => match short_tmp() {
            Ok(t) => {
                registered.push(sandbox::leftovers::register(
                    &t,
                    sandbox::leftovers::Removal::Tree,
                ));
                Some(t)
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&profile);
                return Err(format!("browser temp directory: {e}"));
            }
        },
        SandboxSetting::On { .. } => None,
    };
    let tmp_for_child = tmp.clone().unwrap_or_else(|| PathBuf::from("/tmp"));
    let launched = spawn(executable, &proxy, setting, &profile, &tmp_for_child);
    match launched {
        Ok((child, level, guard)) => {
            let mut child = child;
            let pgid = child.id().and_then(|id| Pid::from_raw(id as i32));
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                let _ = std::fs::remove_dir_all(&profile);
                if let Some(t) = &tmp {
                    let _ = std::fs::remove_dir_all(t);
                }
                return Err("the browser's DevTools pipe was not set up".into());
            };
            Ok(Process {
                cdp: Cdp::new(stdout, stdin),
                child,
                pgid,
                profile,
                tmp,
                level,
                _proxy: proxy,
                _sandbox: guard,
                _registered: registered,
            })
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&profile);
            if let Some(t) = &tmp {
                let _ = std::fs::remove_dir_all(t);
            }
            Err(e)
        }
    }
}

type Spawned = (tokio::process::Child, String, Option<sandbox::Guard>);

/// The browser's filesystem policy, with or without `--sandbox`: only its profile writable, the
/// home's secrets and the files gg read a secret from hidden, the ssh agent's socket hidden.
fn browser_policy(profile: &Path) -> Result<sandbox::Policy, String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut policy = sandbox::Policy::with_home(profile, home.as_deref())
        .map_err(|e| format!("browser sandbox: {e}"))?;
    for file in crate::secrets::secret_files() {
        policy
            .add_deny_read(&file)
            .map_err(|e| format!("browser sandbox: {e}"))?;
    }
    if let Some(sock) = crate::secrets::var("SSH_AUTH_SOCK") {
        policy.hide_socket(Path::new(&sock));
    }
    Ok(policy)
}

fn spawn(
    executable: &Path,
    proxy: &ProxyHandle,
    setting: &SandboxSetting,
    profile: &Path,
    tmp: &Path,
) -> Result<Spawned, String> {
    let mut args: Vec<OsString> = vec![
        "-c".into(),
        EXEC_WITH_PIPE.into(),
        executable.as_os_str().to_os_string(),
    ];
    args.extend(flags(profile, proxy.port()));
    let invocation = sandbox::Invocation {
        program: "/bin/sh".into(),
        args,
        env: environment(profile, tmp),
    };
    let log = std::fs::File::create(profile.join("chromium.log"))
        .map_err(|e| format!("browser log: {e}"))?;
    let (command, level, guard) = match setting {
        SandboxSetting::Off => {
            // Without --sandbox the browser still never reads a secret: a page the model opened
            // can frame `file:///~/.ssh/id_rsa` in any frame or load it as a subresource, and a
            // screenshot shows it. So Chromium runs under the deny-read policy at the strongest
            // level there is, with its network as without the sandbox (the guard's proxy, by
            // its flags). Only where no level exists does it run as before.
            let mut policy = browser_policy(profile)?;
            policy.network = sandbox::Network::On;
            // `GG_SANDBOX_BACKEND` forces the level, as for commands (`none`: a control run).
            let backend = std::env::var("GG_SANDBOX_BACKEND")
                .ok()
                .and_then(|b| b.parse().ok())
                .unwrap_or(sandbox::Backend::Auto);
            match sandbox::wrap(invocation.clone(), &policy, backend) {
                Ok(wrapped) if wrapped.level() != sandbox::Level::None => {
                    let parts = wrapped.into_parts();
                    (
                        parts.command,
                        format!("{}+deny-read", parts.level.as_str()),
                        Some(parts.guard),
                    )
                }
                _ => (invocation.unsandboxed(profile), "off".to_string(), None),
            }
        }
        SandboxSetting::On { backend, .. } => {
            // Only the profile is writable; the project and everything else are read-only, the
            // home directory's secrets hidden; the network is the guard's proxy and nothing else.
            let mut policy = browser_policy(profile)?;
            policy.network = sandbox::Network::Proxy;
            policy.proxy = Some(proxy.route());
            policy.local_sockets = true;
            let wrapped = sandbox::wrap(invocation, &policy, *backend).map_err(|e| {
                format!(
                    "the browser cannot run in the sandbox: {e} (it needs the bubblewrap level)"
                )
            })?;
            let parts = wrapped.into_parts();
            if parts.level == sandbox::Level::None {
                return Err(
                    "the sandbox is on but unavailable here; the browser does not run unsandboxed"
                        .into(),
                );
            }
            (
                parts.command,
                parts.level.as_str().to_string(),
                Some(parts.guard),
            )
        }
    };
    let mut command = tokio::process::Command::from(command);
    command
        .current_dir(profile)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .process_group(0)
        .kill_on_drop(true);
    let child = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", executable.display()))?;
    Ok((child, level, guard))
}
