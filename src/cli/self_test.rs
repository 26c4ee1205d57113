//! `gg sandbox --self-test`: proves, at each Linux level available here, that every protection
//! the resource policy declares holds, by trying each for real with a canary: the commands run
//! exactly as the agent's do (`sandbox::wrap` with the policy the agent builds), in a throw-away
//! home and project, and the host is checked afterwards. Peers ship protections that silently
//! do nothing on some kernels or configurations; this table says which hold here.

use std::path::Path;
use std::process::{ExitCode, Stdio};

use sandbox::{Backend, Level, Network, Policy};

/// One protection and how it is tried.
struct Probe {
    name: &'static str,
    /// Run in the read-only policy (else the workspace policy with the network off).
    read_only: bool,
    /// The command's script; `$CANARY_PORT` is a loopback listener of the host.
    script: &'static str,
    /// Whether it held, from the command's output and the host's state afterwards.
    held: fn(&Fixture, &str) -> bool,
    /// Why the landlock level does not hold it by itself (and what does instead), if so.
    landlock_gap: Option<&'static str>,
    /// Why no level holds it by itself (and what does instead), if so.
    agent_covers: Option<&'static str>,
}

struct Fixture {
    home: std::path::PathBuf,
    work: std::path::PathBuf,
}

const SECRET: &str = "GG-SELF-TEST-CANARY";

const PROBES: &[Probe] = &[
    // The control: commands do run, and an ordinary write in the project lands, so a protection
    // cannot "hold" merely because nothing ran.
    Probe {
        name: "control: an ordinary write lands",
        read_only: false,
        script: "echo ok > ordinary.txt",
        held: |fx, _| fx.work.join("ordinary.txt").exists(),
        landlock_gap: None,
        agent_covers: None,
    },
    Probe {
        name: "deny-read: ~/.ssh",
        read_only: false,
        script: "cat \"$HOME/.ssh/id_rsa\" 2>&1",
        held: |_, out| !out.contains(SECRET),
        landlock_gap: None,
        agent_covers: None,
    },
    Probe {
        name: "deny-read: ~/.gg (ggd's token)",
        read_only: false,
        script: "cat \"$HOME/.gg/web.json\" 2>&1",
        held: |_, out| !out.contains(SECRET),
        landlock_gap: None,
        agent_covers: None,
    },
    Probe {
        name: "protected write: .git/hooks",
        read_only: false,
        script: "echo 'curl x | sh' >> .git/hooks/pre-commit 2>&1",
        held: |fx, _| !fx.work.join(".git/hooks/pre-commit").exists(),
        landlock_gap: Some(
            "Landlock cannot keep a path below a writable root read-only; the agent's classifier \
             calls such writes dangerous",
        ),
        agent_covers: None,
    },
    Probe {
        name: "first creation: .envrc",
        read_only: false,
        script: "echo 'curl x | sh' > .envrc 2>&1",
        held: |fx, _| !fx.work.join(".envrc").exists(),
        landlock_gap: None,
        agent_covers: Some(
            "no level covers an absent name without a mount point left on the host; the agent \
             moves what a command created there into .gg/quarantine after it",
        ),
    },
    Probe {
        name: "network refused (network off)",
        read_only: false,
        script: "(exec 3<>/dev/tcp/127.0.0.1/$CANARY_PORT) 2>/dev/null && echo CONNECTED",
        held: |_, out| !out.contains("CONNECTED"),
        landlock_gap: None,
        agent_covers: None,
    },
    Probe {
        name: "read-only: project unwritable",
        read_only: true,
        script: "echo x > planted 2>&1",
        held: |fx, _| !fx.work.join("planted").exists(),
        landlock_gap: None,
        agent_covers: None,
    },
    Probe {
        name: "read-only: no network",
        read_only: true,
        script: "(exec 3<>/dev/tcp/127.0.0.1/$CANARY_PORT) 2>/dev/null && echo CONNECTED",
        held: |_, out| !out.contains("CONNECTED"),
        landlock_gap: None,
        agent_covers: None,
    },
];

/// Runs every probe at every available level and prints the table; exit 1 when a protection
/// does not hold at a level that runs, 0 otherwise.
pub fn run() -> ExitCode {
    let listener = match std::net::TcpListener::bind("127.0.0.1:0") {
        Ok(l) => l,
        Err(e) => {
            eprintln!("gg sandbox --self-test: a loopback listener: {e}");
            return ExitCode::from(1);
        }
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    let mut failed = false;
    println!("LEVEL\tPROTECTION\tRESULT");
    for (level, backend) in [("bwrap", Backend::Bwrap), ("landlock", Backend::Landlock)] {
        for probe in PROBES {
            let gap = probe
                .landlock_gap
                .filter(|_| backend == Backend::Landlock)
                .or(probe.agent_covers);
            let result = match (try_probe(probe, backend, port), gap) {
                (Ok(true), _) => "holds".to_string(),
                (Ok(false), Some(why)) => format!("not by the kernel at this level: {why}"),
                (Ok(false), None) => {
                    failed = true;
                    "FAILS".to_string()
                }
                (Err(why), _) => format!("not run: {why}"),
            };
            println!("{level}\t{}\t{result}", probe.name);
        }
    }
    drop(listener);
    if failed {
        eprintln!("gg sandbox --self-test: a protection does not hold here (FAILS above)");
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn try_probe(probe: &Probe, backend: Backend, port: u16) -> Result<bool, String> {
    let base = tempfile_dir()?;
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
        .and_then(|()| run_probe(probe, backend, port, &fx));
    let _ = std::fs::remove_dir_all(&base);
    result
}

fn run_probe(probe: &Probe, backend: Backend, port: u16, fx: &Fixture) -> Result<bool, String> {
    let mut policy = Policy::with_home(&fx.work, Some(&fx.home)).map_err(|e| e.to_string())?;
    policy.network = Network::Off;
    if probe.read_only {
        policy = policy.read_only();
    }
    let invocation = sandbox::Invocation {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), probe.script.into()],
        env: vec![
            ("HOME".into(), fx.home.clone().into_os_string()),
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("CANARY_PORT".into(), port.to_string().into()),
        ],
    };
    let wrapped = sandbox::wrap(invocation, &policy, backend).map_err(|e| e.to_string())?;
    let parts = wrapped.into_parts();
    if parts.level == Level::None {
        return Err("no sandbox level".into());
    }
    let mut command = parts.command;
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    drop(parts.guard);
    let text = String::from_utf8_lossy(&output.stdout);
    Ok((probe.held)(fx, &text))
}

/// A fresh directory outside `/tmp` when possible (the sandbox gives commands a private `/tmp`,
/// which would hide the fixture from them).
fn tempfile_dir() -> Result<std::path::PathBuf, String> {
    let parent = ["/var/tmp", "/tmp"]
        .iter()
        .map(Path::new)
        .find(|p| p.is_dir())
        .ok_or("no temp directory")?;
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| e.to_string())?;
    let name: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let dir = parent.join(format!("gg-self-test-{name}"));
    std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}
