//! `gg sandbox`: runs one command under exactly the sandbox the bash tool uses.
//!
//! Output contract: at level none the warning line is printed to **stderr** before the command
//! starts (stdout stays the command's own); `--explain` prints JSON to stderr too. The exit status
//! is the command's (128 + signal when it was killed); 2 for usage errors and for an explicitly
//! requested backend that is unavailable.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitCode;

use sandbox::{Backend, Policy, SandboxError};

use tools::network::{NetworkMode, NetworkPolicy, SessionNetwork};

/// Arguments of `gg sandbox`.
#[derive(clap::Args, Debug)]
pub struct SandboxArgs {
    /// Isolation level: the strongest available, or exactly the one named.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    pub backend: BackendArg,
    /// Network access inside the sandbox (default: `"network"` in ~/.gg/config.json, else
    /// allow-list).
    #[arg(long, value_enum)]
    pub network: Option<NetworkArg>,
    /// A further host the allow-list lets through (repeatable; `*.example.com` for subdomains).
    #[arg(long = "allow-domain", value_name = "HOST")]
    pub allow_domain: Vec<String>,
    /// A further writable directory (repeatable).
    #[arg(long, value_name = "PATH")]
    pub writable: Vec<PathBuf>,
    /// A path to hide from the command (repeatable).
    #[arg(long = "deny-read", value_name = "PATH")]
    pub deny_read: Vec<PathBuf>,
    /// The policy of commands classified read-only: nothing writable but a private temp
    /// directory, no network, the same secrets hidden.
    #[arg(long, conflicts_with_all = ["writable", "network", "allow_domain"])]
    pub read_only: bool,
    /// Print the chosen level, fallback reasons and effective policy as JSON on stderr.
    #[arg(long)]
    pub explain: bool,
    /// Prove each protection of the resource policy at every Linux level available here, with
    /// canaries, and print the table (exit 1 when one does not hold).
    #[arg(long, conflicts_with_all = ["command", "explain", "read_only"])]
    pub self_test: bool,
    /// The command to run, after `--`.
    #[arg(
        last = true,
        required_unless_present = "self_test",
        value_name = "COMMAND"
    )]
    pub command: Vec<OsString>,
}

/// `--backend` values.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendArg {
    Auto,
    Bwrap,
    Landlock,
    None,
}

/// `--network` values.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetworkArg {
    On,
    Off,
    AllowList,
}

impl From<NetworkArg> for NetworkMode {
    fn from(n: NetworkArg) -> NetworkMode {
        match n {
            NetworkArg::On => NetworkMode::On,
            NetworkArg::Off => NetworkMode::Off,
            NetworkArg::AllowList => NetworkMode::AllowList,
        }
    }
}

const USAGE_ERROR: u8 = 2;
const SETUP_ERROR: u8 = 125;

/// Runs `gg sandbox`.
pub fn run(args: SandboxArgs) -> ExitCode {
    if args.self_test {
        return super::self_test::run();
    }
    match run_inner(args) {
        Ok(code) => code,
        Err((code, message)) => {
            eprintln!("gg sandbox: {message}");
            ExitCode::from(code)
        }
    }
}

fn run_inner(args: SandboxArgs) -> Result<ExitCode, (u8, String)> {
    let cwd =
        std::env::current_dir().map_err(|e| (SETUP_ERROR, format!("current directory: {e}")))?;
    let mut policy = Policy::new(&cwd).map_err(error)?;
    // gg keeps the agent socket out of its own environment; hide it by the value it holds.
    if let Some(sock) = tools::secrets::var("SSH_AUTH_SOCK") {
        policy.hide_socket(std::path::Path::new(&sock));
    }
    let network = network_policy(&args, &cwd)?;
    for path in &args.writable {
        policy.add_writable(path).map_err(error)?;
    }
    for path in &args.deny_read {
        policy.add_deny_read(path).map_err(error)?;
    }
    let backend = match args.backend {
        BackendArg::Auto => Backend::Auto,
        BackendArg::Bwrap => Backend::Bwrap,
        BackendArg::Landlock => Backend::Landlock,
        BackendArg::None => Backend::None,
    };
    let (program, rest) = args
        .command
        .split_first()
        .ok_or((USAGE_ERROR, "missing COMMAND after --".to_string()))?;
    // `gg sandbox` runs a command the user typed: it keeps the user's environment.
    let mut inner = sandbox::Invocation {
        program: program.clone(),
        args: rest.to_vec(),
        env: std::env::vars_os().collect(),
    };
    let session = SessionNetwork::new(network);
    let scope = if args.read_only {
        policy = policy.read_only();
        None
    } else {
        // At level none the proxy still serves the tools that honour the variables, but nothing
        // stops the others: the warning line below says so.
        let scope = session
            .apply(&mut policy)
            .map_err(|e| (SETUP_ERROR, e.to_string()))?;
        if let Some(scope) = &scope {
            tools::network::set_proxy_env(&mut inner.env, &scope.url());
        }
        scope
    };
    let _created = CreatedForTheRun::before(&policy, backend);
    let wrapped = sandbox::wrap(inner, &policy, backend).map_err(error)?;
    if args.explain {
        let mut explain = wrapped.explain().clone();
        explain["network"] = session.policy.explain();
        let json = serde_json::to_string_pretty(&explain)
            .map_err(|e| (SETUP_ERROR, format!("explain: {e}")))?;
        eprintln!("{json}");
    }
    let mut parts = wrapped.into_parts();
    if let Some(warning) = &parts.warning {
        eprintln!("{warning}");
        if let Some(line) = session.policy.unenforced_warning() {
            eprintln!("{line}");
        }
    }
    let status = parts.command.status().map_err(|e| {
        let code = if e.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        };
        (
            code,
            format!("cannot run {}: {e}", program.to_string_lossy()),
        )
    })?;
    // The guard lives until here: its drop removes the temp directory and mount stubs.
    drop(parts.guard);
    for r in scope.map(|s| s.finish()).unwrap_or_default() {
        eprintln!(
            "gg sandbox: network policy refused {}:{} ({}); {}",
            r.host,
            r.port,
            r.rule,
            r.how_to_allow()
        );
    }
    let code = match (status.code(), status.signal()) {
        (Some(c), _) => u8::try_from(c).unwrap_or(1),
        (None, Some(sig)) => 128u8.wrapping_add(u8::try_from(sig).unwrap_or(0)),
        (None, None) => 1,
    };
    Ok(ExitCode::from(code))
}

/// The read-only directories that bubblewrap needs to exist (`.gg/`, `.git/hooks`) and that were
/// absent before this run: the sandbox creates them empty and leaves them (the agent runs many
/// commands, and keeping them is cheaper), but `gg sandbox` runs one command, so it removes the
/// ones still empty on drop and leaves the working directory as it found it. Only bubblewrap
/// creates them: at a level chosen that is not it, nothing is registered.
struct CreatedForTheRun(Vec<(PathBuf, ::sandbox::leftovers::Registered)>);

impl CreatedForTheRun {
    fn before(policy: &Policy, backend: Backend) -> CreatedForTheRun {
        if matches!(backend, Backend::Landlock | Backend::None) {
            return CreatedForTheRun(Vec::new());
        }
        CreatedForTheRun(
            policy
                .create_if_missing
                .iter()
                .filter(|dir| std::fs::symlink_metadata(dir).is_err())
                .map(|dir| {
                    // Also removed if a signal ends gg before this is dropped.
                    let registered = ::sandbox::leftovers::register(
                        dir,
                        ::sandbox::leftovers::Removal::EmptyDir,
                    );
                    (dir.clone(), registered)
                })
                .collect(),
        )
    }
}

impl Drop for CreatedForTheRun {
    fn drop(&mut self) {
        for (dir, _) in self.0.iter().rev() {
            // remove_dir removes only an empty directory: anything put there stays.
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// The user's config, this command line, then the project's `.gg/settings.json`.
fn network_policy(
    args: &SandboxArgs,
    cwd: &std::path::Path,
) -> Result<NetworkPolicy, (u8, String)> {
    let home = tools::security::home_dir();
    let user =
        tools::network::load_user_settings(&home).map_err(|e| (USAGE_ERROR, e.to_string()))?;
    let project =
        tools::network::load_project_settings(cwd).map_err(|e| (USAGE_ERROR, e.to_string()))?;
    NetworkPolicy::resolve(
        &user,
        args.network.map(NetworkMode::from),
        &args.allow_domain,
        project.as_ref(),
    )
    .map_err(|e| (USAGE_ERROR, e.to_string()))
}

fn error(e: SandboxError) -> (u8, String) {
    let code = match e {
        SandboxError::InvalidPolicy(_)
        | SandboxError::Unavailable { .. }
        | SandboxError::UnknownBackend(_) => USAGE_ERROR,
        SandboxError::Setup(_) => SETUP_ERROR,
    };
    (code, e.to_string())
}
