//! Proves, at a level, that every protection the resource policy declares holds, by trying each
//! for real with a canary. The commands run exactly as the agent's do ([`crate::wrap`] with a
//! [`Policy`] built the way the agent builds it) in a throw-away home and project, and the host is
//! checked afterwards.
//!
//! Peers ship protections that silently do nothing on some kernels or configurations. gg proves
//! its own: `gg sandbox --self-test` prints the table for every level, and every session proves
//! the level it uses before its first command (a success is remembered per kernel, binaries and
//! user in the probe cache, so this costs a session nothing after the first).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::{Backend, Level, Network, Policy};

/// One protection and how it is tried.
struct Probe {
    name: &'static str,
    /// Run in the read-only policy (else the workspace policy).
    read_only: bool,
    /// The network of the workspace policy it runs in.
    network: Network,
    /// The command's script; `$CANARY_PORT` is a loopback listener of the host.
    script: &'static str,
    /// Whether it held, from the command's output and the host's state afterwards.
    held: fn(&Fixture, &str) -> bool,
    /// The levels that declare this protection (others print it as not declared).
    levels: &'static [Level],
    /// A program the probe needs from the host's `/usr/bin` (without it the protection is
    /// untestable here, not failed: seccomp's unit tests still cover it).
    needs: Option<&'static str>,
    /// Why the landlock level does not hold it by itself (and what does instead), if so.
    landlock_gap: Option<&'static str>,
    /// Why no level holds it by itself (and what does instead), if so.
    agent_covers: Option<&'static str>,
}

struct Fixture {
    home: PathBuf,
    work: PathBuf,
}

const SECRET: &str = "GG-SELF-TEST-CANARY";
const BOTH: &[Level] = &[Level::Bwrap, Level::Landlock];

const PROBES: &[Probe] = &[
    // The control: commands do run, and an ordinary write in the project lands, so a protection
    // cannot "hold" merely because nothing ran.
    Probe {
        name: "control: an ordinary write lands",
        read_only: false,
        network: Network::Off,
        script: "echo ok > ordinary.txt",
        held: |fx, _| fx.work.join("ordinary.txt").exists(),
        levels: BOTH,
        needs: None,
        landlock_gap: None,
        agent_covers: None,
    },
    Probe {
        name: "deny-read: ~/.ssh",
        read_only: false,
        network: Network::Off,
        script: "cat \"$HOME/.ssh/id_rsa\" 2>&1",
        held: |_, out| !out.contains(SECRET),
        levels: BOTH,
        needs: None,
        landlock_gap: None,
        agent_covers: None,
    },
    Probe {
        name: "deny-read: ~/.gg (ggd's token)",
        read_only: false,
        network: Network::Off,
        script: "cat \"$HOME/.gg/web.json\" 2>&1",
        held: |_, out| !out.contains(SECRET),
        levels: BOTH,
        needs: None,
        landlock_gap: None,
        agent_covers: None,
    },
    Probe {
        name: "protected write: .git/hooks",
        read_only: false,
        network: Network::Off,
        script: "echo 'curl x | sh' >> .git/hooks/pre-commit 2>&1",
        held: |fx, _| !fx.work.join(".git/hooks/pre-commit").exists(),
        levels: BOTH,
        needs: None,
        landlock_gap: Some(
            "Landlock cannot keep a path below a writable root read-only; after each command \
             the agent moves a new or changed hook into .gg/quarantine (the previous one put \
             back) and restores a .git/config the command made run a program",
        ),
        agent_covers: None,
    },
    Probe {
        name: "first creation: .envrc",
        read_only: false,
        network: Network::Off,
        script: "echo 'curl x | sh' > .envrc 2>&1",
        held: |fx, _| !fx.work.join(".envrc").exists(),
        levels: BOTH,
        needs: None,
        landlock_gap: None,
        agent_covers: Some(
            "no level covers an absent name without a mount point left on the host; the agent \
             moves what a command created there into .gg/quarantine after it",
        ),
    },
    Probe {
        name: "network refused (network off)",
        read_only: false,
        network: Network::Off,
        script: "(exec 3<>/dev/tcp/127.0.0.1/$CANARY_PORT) 2>/dev/null && echo CONNECTED",
        held: |_, out| !out.contains("CONNECTED"),
        levels: BOTH,
        needs: None,
        landlock_gap: None,
        agent_covers: None,
    },
    // Without a network namespace of its own, `listen` on an unbound socket binds it to every
    // address of the host: another machine could fetch what the command serves.
    Probe {
        name: "no listen (no network namespace)",
        read_only: false,
        network: Network::On,
        script: "python3 -c 'import socket; s = socket.socket(); s.listen(1); print(\"LISTENING\")' \
                 2>&1",
        held: |_, out| !out.contains("LISTENING"),
        levels: &[Level::Landlock],
        needs: Some("python3"),
        landlock_gap: None,
        agent_covers: None,
    },
    // Without an IPC namespace of its own, a command would reach the host's SysV segments,
    // queues and semaphores (by key, or by the ids `ipcs` lists): seccomp refuses SysV IPC.
    Probe {
        name: "no SysV IPC object left on the host",
        read_only: false,
        network: Network::Off,
        script: "python3 -c 'import ctypes, os; k = 0x67670000 + int(os.environ[\"CANARY_PORT\"]); \
                 print(\"key\", k); print(\"made\", ctypes.CDLL(None).shmget(k, 4096, 0o1600))' 2>&1",
        held: |_, out| !host_has_segment(out),
        levels: BOTH,
        needs: Some("python3"),
        landlock_gap: None,
        agent_covers: None,
    },
    Probe {
        name: "read-only: project unwritable",
        read_only: true,
        network: Network::Off,
        script: "echo x > planted 2>&1",
        held: |fx, _| !fx.work.join("planted").exists(),
        levels: BOTH,
        needs: None,
        landlock_gap: None,
        agent_covers: None,
    },
    Probe {
        name: "read-only: no network",
        read_only: true,
        network: Network::Off,
        script: "(exec 3<>/dev/tcp/127.0.0.1/$CANARY_PORT) 2>/dev/null && echo CONNECTED",
        held: |_, out| !out.contains("CONNECTED"),
        levels: BOTH,
        needs: None,
        landlock_gap: None,
        agent_covers: None,
    },
];

/// Whether the SysV segment whose key the probe printed exists on the host (then it is
/// removed: the probe's own, made where it should not have been).
fn host_has_segment(out: &str) -> bool {
    let Some(key) = out
        .lines()
        .find_map(|l| l.strip_prefix("key "))
        .and_then(|k| k.trim().parse::<libc::key_t>().ok())
    else {
        // The probe printed no key: it did not run as written, which is not a hold.
        return true;
    };
    // SAFETY: shmget with integer arguments only looks the key up (no IPC_CREAT).
    let id = unsafe { libc::shmget(key, 0, 0) };
    if id < 0 {
        return false;
    }
    // SAFETY: IPC_RMID takes no buffer.
    unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
    true
}

/// How one protection fared at one level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Holds,
    /// It does not hold by the kernel at this level, and something else covers it (the text
    /// says what).
    CoveredElsewhere(&'static str),
    /// The level does not declare it (the text says why).
    NotDeclared,
    /// It was declared and it does not hold; the command's first line of errors, if any (a
    /// level where nothing runs fails its control row, and this says why).
    Fails(String),
    /// The probe could not run (the text says why).
    NotRun(String),
    /// The host lacks a program the probe needs (named); nothing was tried.
    Untestable(&'static str),
}

/// One line of the table.
#[derive(Debug, Clone)]
pub struct Line {
    pub protection: &'static str,
    pub verdict: Verdict,
}

/// Every probe at one level.
#[derive(Debug, Clone)]
pub struct Report {
    /// The level the probes ran at (`Level::None` when no level is available: nothing ran).
    pub level: Level,
    pub lines: Vec<Line>,
    /// Answered from the probe cache: an earlier process proved the same level with the same
    /// binaries and kernel, and nothing ran now.
    pub cached: bool,
}

impl Report {
    /// The protections that do not hold, or that could not be tried.
    pub fn unproven(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter_map(|l| match &l.verdict {
                Verdict::Fails(why) if why.is_empty() => {
                    Some(format!("{}: does not hold", l.protection))
                }
                Verdict::Fails(why) => Some(format!("{}: does not hold ({why})", l.protection)),
                Verdict::NotRun(why) => Some(format!("{}: not tried ({why})", l.protection)),
                _ => None,
            })
            .collect()
    }
}

/// A change to the probes' policy after it is built, for a test to break a protection for real
/// (see gg's `GG_TEST_SELF_TEST_WEAKEN`); production passes [`unchanged`].
pub type Adjust = fn(&mut Policy);

/// The production [`Adjust`]: the policy as the agent builds it.
pub fn unchanged(_: &mut Policy) {}

/// Proves `backend`'s level, or answers from the probe cache when an earlier process proved it
/// with the same binaries, kernel and user. Only a full success is remembered.
pub fn prove_cached(backend: Backend) -> Report {
    let level = resolve(backend);
    if level == Level::None {
        return Report {
            level,
            lines: Vec::new(),
            cached: false,
        };
    }
    // What runs the probes: bubblewrap at its level, and the helper (which may be a file of
    // its own beside gg) at both.
    let mut binaries: Vec<PathBuf> = match level {
        Level::Bwrap => crate::bwrap::BWRAP_LOCATIONS
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.is_file())
            .take(1)
            .collect(),
        _ => Vec::new(),
    };
    #[cfg(target_os = "linux")]
    binaries.extend(crate::helper_exe().ok());
    let refs: Vec<&Path> = binaries.iter().map(PathBuf::as_path).collect();
    let key = cache::key(&format!("self-test-{}", level.as_str()), &refs);
    if key.as_deref().is_some_and(cache::hit) {
        return Report {
            level,
            lines: Vec::new(),
            cached: true,
        };
    }
    let report = prove(backend, unchanged);
    if report.level == level
        && report.unproven().is_empty()
        && let Some(key) = key
    {
        cache::store(&key);
    }
    report
}

#[cfg(target_os = "linux")]
use crate::probe_cache as cache;

/// Elsewhere nothing is remembered: every session proves its level.
#[cfg(not(target_os = "linux"))]
mod cache {
    pub fn key(_: &str, _: &[&std::path::Path]) -> Option<String> {
        None
    }
    pub fn hit(_: &str) -> bool {
        false
    }
    pub fn store(_: &str) {}
}

/// Runs every probe at `backend`'s level, now.
pub fn prove(backend: Backend, adjust: Adjust) -> Report {
    let level = resolve(backend);
    if level == Level::None {
        return Report {
            level,
            lines: Vec::new(),
            cached: false,
        };
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0");
    let port = listener
        .as_ref()
        .ok()
        .and_then(|l| l.local_addr().ok())
        .map(|a| a.port());
    let lines = PROBES
        .iter()
        .map(|probe| {
            let gap = probe
                .landlock_gap
                .filter(|_| level == Level::Landlock)
                .or(probe.agent_covers);
            let verdict = if !probe.levels.contains(&level) {
                Verdict::NotDeclared
            } else if let Some(program) = probe
                .needs
                .filter(|p| !Path::new("/usr/bin").join(p).is_file())
            {
                Verdict::Untestable(program)
            } else {
                match (try_probe(probe, backend, port, adjust), gap) {
                    (Ok((true, _)), _) => Verdict::Holds,
                    (Ok((false, _)), Some(why)) => Verdict::CoveredElsewhere(why),
                    (Ok((false, errors)), None) => Verdict::Fails(errors),
                    (Err(why), _) => Verdict::NotRun(why),
                }
            };
            Line {
                protection: probe.name,
                verdict,
            }
        })
        .collect();
    drop(listener);
    Report {
        level,
        lines,
        cached: false,
    }
}

/// The level `backend` gives here (`Level::None` when it gives none), as [`crate::wrap`] chooses
/// it.
fn resolve(backend: Backend) -> Level {
    crate::choose(&crate::PROBE, backend, &mut Vec::new()).unwrap_or(Level::None)
}

fn try_probe(
    probe: &Probe,
    backend: Backend,
    port: Option<u16>,
    adjust: Adjust,
) -> Result<(bool, String), String> {
    let port = port.ok_or("no loopback listener for the canary")?;
    let base = fixture_dir()?;
    let fx = Fixture {
        home: base.join("home"),
        work: base.join("work"),
    };
    let setup = || -> std::io::Result<()> {
        std::fs::create_dir_all(fx.home.join(".ssh"))?;
        std::fs::create_dir_all(fx.home.join(".gg"))?;
        std::fs::write(fx.home.join(".ssh/id_rsa"), SECRET)?;
        std::fs::write(fx.home.join(".gg/web.json"), SECRET)?;
        std::fs::create_dir_all(fx.work.join(".git/hooks"))?;
        std::fs::write(fx.work.join(".git/config"), "")?;
        Ok(())
    };
    let result = setup()
        .map_err(|e| format!("fixture: {e}"))
        .and_then(|()| run_probe(probe, backend, port, adjust, &fx));
    let _ = std::fs::remove_dir_all(&base);
    result
}

fn run_probe(
    probe: &Probe,
    backend: Backend,
    port: u16,
    adjust: Adjust,
    fx: &Fixture,
) -> Result<(bool, String), String> {
    let mut policy = Policy::with_home(&fx.work, Some(&fx.home)).map_err(|e| e.to_string())?;
    policy.network = probe.network;
    if probe.read_only {
        policy = policy.read_only();
    }
    adjust(&mut policy);
    let invocation = crate::Invocation {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), probe.script.into()],
        env: vec![
            ("HOME".into(), fx.home.clone().into_os_string()),
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("CANARY_PORT".into(), port.to_string().into()),
        ],
    };
    let wrapped = crate::wrap(invocation, &policy, backend).map_err(|e| e.to_string())?;
    let parts = wrapped.into_parts();
    if parts.level == Level::None {
        return Err("no sandbox level".into());
    }
    let mut command = parts.command;
    let output = crate::own_process_group(&mut command)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    drop(parts.guard);
    let text = String::from_utf8_lossy(&output.stdout);
    let errors = String::from_utf8_lossy(&output.stderr)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .chars()
        .take(200)
        .collect();
    Ok(((probe.held)(fx, &text), errors))
}

/// A fresh directory outside `/tmp` when possible (the sandbox gives commands a private `/tmp`,
/// which would hide the fixture from them).
fn fixture_dir() -> Result<PathBuf, String> {
    static COUNTER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let parent = ["/var/tmp", "/tmp"]
        .iter()
        .map(Path::new)
        .find(|p| p.is_dir())
        .ok_or("no temp directory")?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    if COUNTER.load(std::sync::atomic::Ordering::Relaxed) == 0 {
        remove_dead_fixtures(parent);
    }
    loop {
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = parent.join(format!(
            "gg-self-test-{}-{nanos:08x}-{n}",
            std::process::id()
        ));
        // `create_dir` fails on an existing name, so a name someone planted is never reused.
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 64 => continue,
            Err(e) => return Err(format!("{}: {e}", dir.display())),
        }
    }
}

/// Removes what a killed gg left in `parent`: the fixtures of a self-test that never reached
/// its own removal (a `SIGKILL` mid-test; the test suites end gg that way often, and a day of
/// runs had left hundreds). Only this user's directories named as [`fixture_dir`] names them,
/// whose process is gone; a link is removed as a link, never followed.
fn remove_dead_fixtures(parent: &Path) {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("gg-self-test-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<libc::pid_t>().ok())
            .filter(|pid| *pid > 0)
        else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != uid {
            continue;
        }
        // SAFETY: kill with signal 0 sends nothing; it only asks whether the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dead gg's fixture goes; a live process's, a link of that name (and what it leads to)
    /// and other names stay.
    #[test]
    fn only_fixtures_of_processes_that_are_gone_are_removed() {
        let t = tempfile::tempdir().unwrap();
        let parent = t.path();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let alive = std::process::id();
        let dead_fixture = parent.join(format!("gg-self-test-{dead}-0000abcd-0"));
        std::fs::create_dir_all(dead_fixture.join("work/.git")).unwrap();
        let live_fixture = parent.join(format!("gg-self-test-{alive}-0000abcd-1"));
        std::fs::create_dir(&live_fixture).unwrap();
        let target = parent.join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep"), "x").unwrap();
        let link = parent.join(format!("gg-self-test-{dead}-0000abcd-2"));
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let other = parent.join("gg-self-test-notapid");
        std::fs::create_dir(&other).unwrap();
        remove_dead_fixtures(parent);
        assert!(!dead_fixture.exists());
        assert!(live_fixture.is_dir());
        assert!(std::fs::symlink_metadata(&link).is_ok());
        assert!(target.join("keep").is_file());
        assert!(other.is_dir());
    }
}
