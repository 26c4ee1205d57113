//! How the session's shell commands run, once the chain has approved them: the choice between
//! the session's sandbox servers and a sandbox per command, the read-only sandbox of commands
//! classified read-only, the self-test that proves the level first, the scrubbed environment, and
//! the sweep of what a sandboxed command may not leave behind. The chain (`gg::agent::chain`,
//! above this crate) decides whether a command runs; this decides how.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use classifier::Class;
use policies::Mode;
use sandbox::Level;
use tokio_util::sync::CancellationToken;

use crate::bash::{self, SetupError};
use crate::registry::{Outcome, SandboxRun, SandboxSetting};

/// Runs the session's shell commands (see the module documentation). Built once per
/// conversation, with the tool box.
pub struct CommandRunner {
    cwd: PathBuf,
    sandbox: SandboxSetting,
    /// Secret-looking environment variable names that may nevertheless reach children.
    env_allow: Vec<String>,
    /// Set on every command after the scrubbed environment (replacing a variable of the same
    /// name): a host that gives commands another `HOME`, as the tests do with their fixture.
    child_env: Vec<(OsString, OsString)>,
    /// Marks every process this session's commands start, so `process_kill` can tell the
    /// session's own processes from the rest of the machine.
    session_tag: crate::computer::SessionTag,
    /// The session's sandbox (bubblewrap or the helper with a command server in it), started at
    /// the first sandboxed command; `None` when `GG_SANDBOX_NO_SERVER` asks for a sandbox per
    /// command.
    #[cfg(target_os = "linux")]
    sandbox_server: Option<Arc<sandbox::server::SessionServer>>,
    /// `GG_SANDBOX_BACKEND`: a level forced for every sandboxed command (diagnostics and the
    /// tests of each level through the agent); a value that names no backend fails every
    /// sandboxed command rather than pick one.
    backend_override: Result<Option<sandbox::Backend>, sandbox::SandboxError>,
    /// The read-only sandbox server of a session without `--sandbox`: every command classified
    /// read-only runs in it (nothing writable but a private `/tmp`, no network). With
    /// `--sandbox` they run in `sandbox_server` instead, restricted further.
    #[cfg(target_os = "linux")]
    read_only_server: Option<Arc<sandbox::server::SessionServer>>,
    /// The guard's server of a session without `--sandbox`: every normal command runs from it,
    /// on the host under the guard (`sandbox::server::SessionServer::spawn_guarded`); each
    /// guarded on its own where it cannot start, or with `GG_SANDBOX_NO_SERVER`.
    #[cfg(target_os = "linux")]
    guard_server: Option<Arc<sandbox::server::SessionServer>>,
    /// Whether commands classified read-only run under the read-only policy (always, except in
    /// the benchmark's unenforced baseline of test-hooks builds).
    enforce_read_only: bool,
    /// The session said once that no level can enforce read-only here.
    read_only_unenforced_said: std::sync::atomic::AtomicBool,
    /// Whether the session said that commands without `--sandbox` run unguarded here.
    guard_unavailable_said: std::sync::atomic::AtomicBool,
    /// The proof of the level this session's commands run at (`sandbox::self_test`): started
    /// with the warm-up, awaited by the first confined command.
    self_test: Arc<tokio::sync::OnceCell<SelfTest>>,
    /// A person is here to read a warning; without one (unattended, or no terminal) a
    /// protection that does not hold fails every confined command instead of being said.
    person_present: bool,
    /// The session said once that a protection does not hold here.
    self_test_said: std::sync::atomic::AtomicBool,
    /// The last command's sandbox policy, with what it was built from (see
    /// [`CommandRunner::sandbox_policy`]).
    /// Shared with the warm-up, which builds the first one off the session's own thread.
    kept_policy: Arc<std::sync::Mutex<Option<KeptPolicy>>>,
    /// The project's directories as the persistence sweep last saw them (read once, then only
    /// what changed).
    project_dirs: Arc<std::sync::Mutex<crate::persistence::ProjectDirs>>,
}

/// A sandbox policy kept for the next command: it is used again only while the secret files
/// it hides are the same and no directory its build looked in, and no file it read, has
/// changed since (`sandbox::watch`).
struct KeptPolicy {
    policy: sandbox::Policy,
    watched: sandbox::Watched,
    secret_files: Vec<PathBuf>,
}

/// [`CommandRunner::sandbox_policy`] for the session in `cwd`, kept in `kept`: a function of
/// its own so that the warm-up can build the first one on a blocking thread.
fn kept_sandbox_policy(
    kept: &std::sync::Mutex<Option<KeptPolicy>>,
    cwd: &Path,
) -> Result<sandbox::Policy, SetupError> {
    let secret_files = crate::secrets::secret_files();
    let Ok(mut kept) = kept.lock() else {
        return build_sandbox_policy(cwd, &secret_files);
    };
    if let Some(k) = kept.as_ref()
        && k.secret_files == secret_files
        && k.watched.unchanged()
    {
        return Ok(k.policy.clone());
    }
    let (policy, watched) = sandbox::watch(|| build_sandbox_policy(cwd, &secret_files));
    let policy = policy?;
    *kept = watched.is_reusable().then(|| KeptPolicy {
        policy: policy.clone(),
        watched,
        secret_files,
    });
    Ok(policy)
}

fn build_sandbox_policy(
    cwd: &Path,
    secret_files: &[PathBuf],
) -> Result<sandbox::Policy, SetupError> {
    let mut policy = sandbox::Policy::new(cwd)?;
    for file in secret_files {
        policy.add_deny_read(file)?;
    }
    // gg keeps the agent socket out of its own environment: hide it by the value it holds.
    if let Some(sock) = crate::secrets::var("SSH_AUTH_SOCK") {
        policy.hide_socket(std::path::Path::new(&sock));
    }
    Ok(policy)
}

/// What the self-test of the session's level found: `Err` names the protections that do not
/// hold (or could not be tried) and the level.
type SelfTest = Result<(), String>;

impl CommandRunner {
    /// The runner for commands in `cwd` under `sandbox`, with the environment's sandbox knobs
    /// read once here: `GG_SANDBOX_NO_SERVER` (a sandbox per command) and `GG_SANDBOX_BACKEND`.
    pub fn new(cwd: &Path, sandbox: SandboxSetting, env_allow: Vec<String>) -> CommandRunner {
        #[cfg(target_os = "linux")]
        let served =
            std::env::var_os("GG_SANDBOX_NO_SERVER").is_none_or(|v| v.is_empty() || v == "0");
        CommandRunner {
            cwd: cwd.to_path_buf(),
            sandbox,
            env_allow,
            child_env: Vec::new(),
            session_tag: crate::computer::SessionTag::new(),
            #[cfg(target_os = "linux")]
            sandbox_server: served.then(|| Arc::new(sandbox::server::SessionServer::new())),
            backend_override: match std::env::var("GG_SANDBOX_BACKEND") {
                Ok(name) if !name.is_empty() => name.parse().map(Some),
                _ => Ok(None),
            },
            #[cfg(target_os = "linux")]
            read_only_server: served.then(|| Arc::new(sandbox::server::SessionServer::new())),
            #[cfg(target_os = "linux")]
            guard_server: served.then(|| Arc::new(sandbox::server::SessionServer::new())),
            enforce_read_only: enforce_read_only(),
            read_only_unenforced_said: std::sync::atomic::AtomicBool::new(false),
            guard_unavailable_said: std::sync::atomic::AtomicBool::new(false),
            self_test: Arc::new(tokio::sync::OnceCell::new()),
            person_present: false,
            self_test_said: std::sync::atomic::AtomicBool::new(false),
            kept_policy: Arc::default(),
            project_dirs: Arc::new(std::sync::Mutex::new(crate::persistence::ProjectDirs::new())),
        }
    }

    /// The working directory commands run in.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Whether `--sandbox` is on for this session.
    pub fn sandboxed(&self) -> bool {
        matches!(self.sandbox, SandboxSetting::On { .. })
    }

    /// The tag this session's commands carry in their environment.
    pub fn session_tag(&self) -> &crate::computer::SessionTag {
        &self.session_tag
    }

    /// Sets `name` to `value` in every command's environment (see `child_env`).
    pub fn set_child_env(&mut self, name: OsString, value: OsString) {
        self.child_env.retain(|(n, _)| *n != name);
        self.child_env.push((name, value));
    }

    /// Whether a person is there to read a warning. Without one (unattended runs, no terminal),
    /// a protection the self-test finds not holding fails every confined command.
    pub fn set_person_present(&mut self, present: bool) {
        self.person_present = present;
    }

    /// Whether commands classified read-only run unconfined here: no level exists (or
    /// `GG_SANDBOX_BACKEND=none` asks for none), so the classifier's verdict is all there is and
    /// it must be strict (`classifier::Context::read_only_unconfined`). A level that cannot be
    /// chosen counts as none. Probes the levels once per process (cached).
    pub fn read_only_unconfined(&self) -> bool {
        if !self.enforce_read_only {
            return true;
        }
        match self.confining_backend() {
            Ok(backend) => {
                sandbox::level_for(backend).map_or(true, |(level, _)| level == sandbox::Level::None)
            }
            Err(_) => true,
        }
    }

    /// The level every confined command of this session asks for: `GG_SANDBOX_BACKEND`, else
    /// `--sandbox`'s, else (read-only commands of a session without it) the strongest there is.
    fn confining_backend(&self) -> Result<sandbox::Backend, SetupError> {
        let asked = match &self.sandbox {
            SandboxSetting::On { backend, .. } => *backend,
            // Without --sandbox the person chose no level, so the strongest there is.
            SandboxSetting::Off => sandbox::Backend::Auto,
        };
        match &self.backend_override {
            Ok(forced) => Ok(forced.unwrap_or(asked)),
            Err(e) => Err(SetupError::BackendOverride(e.clone())),
        }
    }

    /// What a confined command meets after the self-test of `backend`'s level (run once per
    /// session, in the background from the warm-up or here by the first confined command, and
    /// remembered across sessions when it holds): an error when a protection does not hold and
    /// no person is here, once a loud note when one is, nothing when all hold.
    async fn after_self_test(
        &self,
        backend: sandbox::Backend,
    ) -> Result<Option<String>, SetupError> {
        let Err(unproven) = self_test_once(&self.self_test, backend).await else {
            return Ok(None);
        };
        if !self.person_present {
            return Err(SetupError::Unproven {
                finding: unproven.clone(),
            });
        }
        let first = !self
            .self_test_said
            .swap(true, std::sync::atomic::Ordering::SeqCst);
        Ok(first.then(|| {
            let note = format!(
                "[gg: WARNING: {unproven}. Commands still run because a person is here; see `gg \
                 sandbox --self-test`]"
            );
            tracing::warn!("{note}");
            note
        }))
    }
}

impl CommandRunner {
    /// Runs `script` as the session's commands run: in the read-only sandbox when `class` is
    /// read-only, else in the workspace sandbox with `--sandbox` or unconfined without it; with the
    /// scrubbed environment, the session tag and the approval ceiling (`mode`).
    pub async fn run(
        &self,
        script: &str,
        class: Class,
        mode: Option<Mode>,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Outcome {
        let shell = bash::shell();
        let mut env = bash::scrubbed_env(&self.env_allow);
        env.retain(|(name, _)| {
            !bash::is_shell_startup_var(name) && !self.child_env.iter().any(|(n, _)| n == name)
        });
        env.extend(self.child_env.iter().cloned());
        let (tag_name, tag_value) = self.session_tag.env();
        env.push((tag_name.into(), tag_value.into()));
        // A gg this command starts can never run looser than this session (an unknown mode is
        // the strictest ceiling).
        let ceiling = crate::ceiling::Ceiling {
            mode: mode.unwrap_or(Mode::Unattended { allow_all: false }),
            sandbox: matches!(self.sandbox, SandboxSetting::On { .. }),
            network: match &self.sandbox {
                SandboxSetting::On { network, .. } => network.policy.mode,
                SandboxSetting::Off => crate::network::NetworkMode::On,
            },
        };
        env.push((crate::ceiling::ENV.into(), ceiling.encode().into()));
        if class == Class::ReadOnly {
            // Commands that ran without approval cannot make git run the repository's programs.
            env.extend(
                bash::git_protective_env()
                    .into_iter()
                    .map(|(k, v)| (k.into(), v.into())),
            );
        }
        let invocation = sandbox::Invocation {
            program: shell.clone().into_os_string(),
            args: bash::shell_args(script),
            env,
        };
        // What a command may not leave behind although no mount covers it (persistence
        // vectors: `.envrc`, a new `.git/commondir`, a hook, a planted submodule's git
        // directory, …) is looked at before it starts (a served command runs as soon as it is
        // handed over) and moved aside or put back after it ([`Sweep::decide`]).
        let before = match Sweep::decide(
            class,
            matches!(self.sandbox, SandboxSetting::On { .. }),
            self.enforce_read_only,
            self.confining_backend()
                .ok()
                .and_then(|backend| sandbox::level_for(backend).ok())
                .map(|(level, _)| level),
        ) {
            Sweep::Not => None,
            Sweep::Project { protected_writable } => match crate::persistence::Before::look(
                self.cwd(),
                Arc::clone(&self.project_dirs),
                protected_writable,
            ) {
                Ok(before) => Some(before),
                Err(refused) if self.sandboxed() => {
                    return Outcome::error(format!("sandbox could not be set up: {refused}"));
                }
                Err(refused) => {
                    return Outcome::error(format!(
                        "the command was not run: {refused}; with --sandbox at the bubblewrap \
                         level they are read-only to commands and need no copy"
                    ));
                }
            },
        };
        let confined = if class == Class::ReadOnly && self.enforce_read_only {
            self.confine_read_only(invocation).await
        } else {
            self.confine_workspace(invocation, class).await
        };
        let Confined {
            launch,
            level,
            warning,
            scope,
            network_mode,
            notes,
            read_only,
            guarded,
        } = match confined {
            Ok(c) => c,
            Err(e) => return Outcome::error(format!("sandbox could not be set up: {e}")),
        };
        let log_dir = crate::registry::outputs_dir(self.cwd());
        let result = match launch {
            Launch::Command(command, _guard) => {
                bash::run(*command, timeout, cancel, &log_dir).await
            }
            #[cfg(target_os = "linux")]
            Launch::Guarded(command) => {
                bash::run(bash::ToSpawn::Guarded(*command), timeout, cancel, &log_dir).await
            }
            #[cfg(target_os = "linux")]
            Launch::Served(command) => bash::run_served(command, timeout, cancel, &log_dir).await,
        };
        let network_refused = scope
            .map(crate::network::CallScope::finish)
            .unwrap_or_default();
        let (text, is_error) = match result {
            Ok(output) => (
                Self::result_text(
                    &output,
                    warning.as_deref(),
                    &notes,
                    &network_refused,
                    read_only,
                    guarded,
                    before,
                ),
                output.is_error(),
            ),
            Err(e) => (format!("failed to start {}: {e}", shell.display()), true),
        };
        Outcome {
            text,
            is_error,
            sandbox: Some(SandboxRun {
                level,
                read_only,
                guarded,
                warning,
            }),
            network_mode,
            network_refused,
            browser: None,
            image: None,
        }
    }

    /// What the model reads of a command that ran: the sandbox's warning and notes, the output,
    /// what the network policy refused, why a read-only command failed, and what the sweep moved
    /// aside.
    fn result_text(
        output: &bash::BashOutput,
        warning: Option<&str>,
        notes: &[String],
        network_refused: &[crate::network::Refusal],
        read_only: bool,
        guarded: bool,
        before: Option<crate::persistence::Before>,
    ) -> String {
        let mut text = String::new();
        if let Some(w) = warning {
            text.push_str(w);
            text.push('\n');
        }
        for note in notes {
            text.push_str(note);
            text.push('\n');
        }
        text.push_str(&output.text);
        for r in network_refused {
            text.push_str(&format!(
                "\n[gg: network policy refused {}:{} ({}); the user can {}]",
                r.host,
                r.port,
                r.rule,
                r.how_to_allow()
            ));
        }
        if read_only && output.is_error() && bash::looks_refused(&output.text) {
            text.push_str(READ_ONLY_REFUSED);
        }
        if guarded && output.is_error() && bash::looks_refused_a_file(&output.text) {
            text.push_str(GUARD_REFUSED);
        }
        for line in before
            .map(crate::persistence::Before::sweep)
            .unwrap_or_default()
        {
            text.push('\n');
            text.push_str(&line);
        }
        text
    }

    /// How a command classified read-only runs: in the session's read-only sandbox, at the
    /// level the session's sandbox setting asks for (the strongest available without
    /// `--sandbox`), with nothing writable but a private `/tmp`, no network and the deny-read
    /// policy. Where no level exists it runs unconfined, and the session says so once.
    async fn confine_read_only(
        &self,
        invocation: sandbox::Invocation,
    ) -> Result<Confined, SetupError> {
        let backend = self.confining_backend()?;
        let proof = self.after_self_test(backend).await?;
        // Built once: the read-only policy is this session's policy with writes and network
        // taken away.
        let session_policy = self.sandbox_policy()?;
        let policy = session_policy.clone().read_only();
        // With --sandbox the command runs in the session's workspace sandbox, restricted further
        // on its own (the server's mounts and /tmp, the read-only policy's Landlock ruleset and
        // no sockets): what a normal command left in /tmp stays readable. Without it, in the
        // session's read-only sandbox.
        let (which, server_policy) = match &self.sandbox {
            SandboxSetting::On { network, .. } => {
                let mut workspace = session_policy;
                network.route(&mut workspace)?;
                (ServerFor::Workspace, workspace)
            }
            SandboxSetting::Off => (ServerFor::ReadOnly, policy.clone()),
        };
        let (served, mut notes) = self
            .spawn_served(which, &invocation, &server_policy, &policy, backend)
            .await;
        notes.splice(0..0, proof);
        let network_mode = Some("off".to_string());
        #[cfg(target_os = "linux")]
        if let Some(served) = served {
            return Ok(Confined::served(served, None, network_mode, notes, true));
        }
        #[cfg(not(target_os = "linux"))]
        let _ = served;
        let wrapped = sandbox::wrap(invocation, &policy, backend)?;
        let parts = wrapped.into_parts();
        if parts.level == sandbox::Level::None {
            // Nothing can enforce it here: the classifier's verdict is all there is. Said once
            // per session, not on every read.
            let first = !self
                .read_only_unenforced_said
                .swap(true, std::sync::atomic::Ordering::SeqCst);
            if first {
                notes.push(READ_ONLY_UNENFORCED.to_string());
            }
            return Ok(Confined::on_host(
                Launch::Command(Box::new(parts.command), Some(parts.guard)),
                notes,
                false,
            ));
        }
        Ok(Confined {
            launch: Launch::Command(Box::new(parts.command), Some(parts.guard)),
            level: Some(parts.level),
            warning: None,
            scope: None,
            network_mode,
            notes,
            read_only: true,
            guarded: false,
        })
    }

    /// How a command runs without `--sandbox`: on the host, under the guard where Landlock is
    /// enforced (`sandbox::guard`: the one policy's secrets hidden, nothing writable but the
    /// project, the temporary directories and the home's package caches), so that a verdict of
    /// "normal" on words that hide a secret read or a start-up file's write cannot act on it.
    /// The project the guard is given is the session's workspace root (`self.cwd()`, what
    /// [`CommandRunner::new`] was made with: the workspace's canonical root), which is also
    /// where every command starts: a `cd` inside one command does not move the next. A command a person confirmed as dangerous runs
    /// as they saw it, unguarded. Where Landlock is not enforced the command runs unconfined,
    /// and the session says why once; where it is but the guard's ruleset or the policy it
    /// hides cannot be built, the command is refused (fail closed: what the guard would have
    /// kept from it is unknown).
    async fn guarded(
        &self,
        invocation: &sandbox::Invocation,
        class: Class,
    ) -> Result<Confined, SetupError> {
        let unconfined = |notes: Vec<String>| {
            Confined::on_host(
                Launch::Command(Box::new(invocation.unsandboxed(self.cwd())), None),
                notes,
                false,
            )
        };
        // A read-only verdict reaches here only as the test-hooks baseline that trusts it.
        if class != Class::Normal || !guard_wanted() {
            return Ok(unconfined(Vec::new()));
        }
        #[cfg(target_os = "linux")]
        let setup = {
            let policy = self.sandbox_policy()?;
            let launched = match self.guard_served(invocation, &policy.deny_read).await {
                Ok(Ok((served, notes))) => Ok((Launch::Served(served.command), notes)),
                // No server for it: guarded on its own, with the server's note if any.
                Ok(Err(notes)) => sandbox::guard(invocation, self.cwd(), &policy.deny_read)
                    .map(|command| (Launch::Guarded(Box::new(command)), notes)),
                Err(e) => Err(e),
            };
            match launched {
                Ok(launch) => Ok(launch),
                Err(e @ sandbox::SandboxError::Unavailable { .. }) => Err(e.to_string()),
                Err(e) => return Err(SetupError::Sandbox(e)),
            }
        };
        #[cfg(not(target_os = "linux"))]
        let setup: Result<(Launch, Vec<String>), String> =
            Err("the guard needs Linux's Landlock".to_string());
        Ok(match setup {
            Ok((launch, notes)) => Confined::on_host(launch, notes, true),
            Err(why) => {
                let first = !self
                    .guard_unavailable_said
                    .swap(true, std::sync::atomic::Ordering::SeqCst);
                unconfined(if first {
                    vec![format!(
                        "[gg: commands run without --sandbox are not guarded here ({why}): \
                         nothing but the classifier keeps them from gg's secrets, the \
                         home's start-up files and the rest of the system; run gg with \
                         --sandbox to confine them]"
                    )]
                } else {
                    Vec::new()
                })
            }
        })
    }

    /// Hands a guarded command to the session's guard server (see [`CommandRunner::guarded`]):
    /// `Ok(Err(notes))` when it is to be guarded on its own instead (no server for this
    /// session, or it could not start), with what to say about it.
    #[cfg(target_os = "linux")]
    async fn guard_served(
        &self,
        invocation: &sandbox::Invocation,
        deny_read: &[PathBuf],
    ) -> Result<Result<(ServedCommand, Vec<String>), Vec<String>>, sandbox::SandboxError> {
        let Some(server) = self.guard_server.clone() else {
            return Ok(Err(Vec::new()));
        };
        hand_to(
            server,
            |server| server.spawn_guarded_now(invocation, self.cwd(), deny_read),
            || {
                let (invocation, cwd, deny_read) =
                    (invocation.clone(), self.cwd.clone(), deny_read.to_vec());
                move |server: &sandbox::server::SessionServer| {
                    server.spawn_guarded(&invocation, &cwd, &deny_read)
                }
            },
        )
        .await
    }

    /// How any other command runs: unconfined without `--sandbox`, otherwise in the session's
    /// workspace sandbox (the working directory writable, the network policy applied).
    async fn confine_workspace(
        &self,
        invocation: sandbox::Invocation,
        class: Class,
    ) -> Result<Confined, SetupError> {
        let network = match &self.sandbox {
            SandboxSetting::Off => return self.guarded(&invocation, class).await,
            SandboxSetting::On { network, .. } => network,
        };
        let backend = self.confining_backend()?;
        let proof = self.after_self_test(backend).await?;
        let network_mode = Some(network.policy.mode.as_str().to_string());
        // The network policy: for the allow-list, this call's proxy variables and the scope
        // that collects what the proxy refuses during it.
        let mut invocation = invocation;
        let mut policy = self.sandbox_policy()?;
        refuse_home_as_writable_root(&policy)?;
        let scope = network.prepare(&mut policy, &mut invocation.env)?;
        let (served, mut notes) = self
            .spawn_served(ServerFor::Workspace, &invocation, &policy, &policy, backend)
            .await;
        notes.splice(0..0, proof);
        #[cfg(target_os = "linux")]
        if let Some(served) = served {
            return Ok(Confined::served(served, scope, network_mode, notes, false));
        }
        #[cfg(not(target_os = "linux"))]
        let _ = served;
        let wrapped = sandbox::wrap(invocation, &policy, backend)?;
        let parts = wrapped.into_parts();
        let mut warning = parts.warning;
        if let (Some(w), Some(line)) = (&mut warning, network.policy.unenforced_warning()) {
            w.push_str(&format!("\n[{line}]"));
        }
        Ok(Confined {
            launch: Launch::Command(Box::new(parts.command), Some(parts.guard)),
            level: Some(parts.level),
            warning,
            scope,
            network_mode,
            notes,
            read_only: false,
            guarded: false,
        })
    }
}

/// Whether a command's effects on the project's persistence vectors are compared before and
/// after it, and how.
#[derive(Debug, PartialEq, Eq)]
enum Sweep {
    /// It runs read-only (the kernel refuses its writes), or a person confirmed it as dangerous
    /// without `--sandbox` (they were shown what it writes and why that is dangerous).
    Not,
    /// Looked at; `protected_writable`: nothing keeps the command from writing the protected
    /// entries that exist (`.gg`, `AGENTS.md`, `.vscode/`, …), so a copy of each is kept to put
    /// back what it changes (the landlock level, which cannot carve them out, and no level).
    Project { protected_writable: bool },
}

impl Sweep {
    /// `level`: the one this session's commands get, `None` when none could be chosen.
    ///
    /// A command that runs on the host unconfined is swept too: a normal command's verdict
    /// says nothing of what its data writes (`tar xf`, `patch`, `git apply` of a file the model
    /// wrote can make `.git/hooks/pre-commit` or `.envrc`), and what the classifier got wrong
    /// is caught here, at run time, whatever it was.
    fn decide(
        class: Class,
        sandboxed: bool,
        enforce_read_only: bool,
        level: Option<Level>,
    ) -> Self {
        let confining = level.filter(|l| *l != Level::None);
        // Read-only verdicts run in the read-only sandbox where a level exists; the test-hooks
        // baseline that trusts them (`enforce_read_only` off) is not swept either, being the
        // measure of a turn without any of gg's protections.
        let runs_read_only =
            class == Class::ReadOnly && (confining.is_some() || !enforce_read_only);
        if runs_read_only {
            return Sweep::Not;
        }
        if !sandboxed && class == Class::Dangerous {
            return Sweep::Not;
        }
        let confined = sandboxed && confining.is_some();
        Sweep::Project {
            protected_writable: !confined
                || confining.is_some_and(|l| !matches!(l, Level::Bwrap | Level::Seatbelt)),
        }
    }
}

/// Proves `backend`'s level once into `cell`, on a blocking thread (the probes start sandboxes).
async fn self_test_once(
    cell: &tokio::sync::OnceCell<SelfTest>,
    backend: sandbox::Backend,
) -> &SelfTest {
    cell.get_or_init(|| async move {
        tokio::task::spawn_blocking(move || prove_level(backend))
            .await
            .unwrap_or_else(|e| Err(format!("the sandbox self-test did not finish: {e}")))
    })
    .await
}

/// The self-test of `backend`'s level, in one line when something does not hold.
fn prove_level(backend: sandbox::Backend) -> SelfTest {
    // A test of what the session does when the server itself fails (a helper that dies when
    // started as the server, which the probes would find first) skips the proof.
    #[cfg(feature = "test-hooks")]
    if std::env::var_os("GG_TEST_SELF_TEST_SKIP").is_some_and(|v| v == "1") {
        return Ok(());
    }
    let report = match weakened_self_test() {
        Some(adjust) => sandbox::self_test::prove(backend, adjust),
        None => sandbox::self_test::prove_cached(backend),
    };
    let unproven = report.unproven();
    if unproven.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the sandbox self-test at level {} found protections that do not hold here: {}",
        report.level.as_str(),
        unproven.join("; ")
    ))
}

/// A test-hooks build can break one protection for real in the self-test's own probes
/// (`GG_TEST_SELF_TEST_WEAKEN=1`: no deny-read), to show what a session does when one does not
/// hold. Nothing else changes: the session's commands keep the full policy.
fn weakened_self_test() -> Option<sandbox::self_test::Adjust> {
    #[cfg(feature = "test-hooks")]
    if std::env::var_os("GG_TEST_SELF_TEST_WEAKEN").is_some_and(|v| v == "1") {
        return Some(|policy| policy.deny_read.clear());
    }
    None
}

/// Whether read-only commands are confined. Always in release builds; a test-hooks build lets
/// the benchmark measure the unenforced baseline side by side (`GG_TEST_READ_ONLY_UNENFORCED=1`).
fn enforce_read_only() -> bool {
    #[cfg(feature = "test-hooks")]
    if std::env::var_os("GG_TEST_READ_ONLY_UNENFORCED").is_some_and(|v| v == "1") {
        return false;
    }
    true
}

/// Whether commands run without `--sandbox` get the guard. Always in release builds; a
/// test-hooks build lets the benchmark and the tests of what the classifier alone decides run
/// them bare (`GG_TEST_UNGUARDED=1`).
fn guard_wanted() -> bool {
    #[cfg(feature = "test-hooks")]
    if std::env::var_os("GG_TEST_UNGUARDED").is_some_and(|v| v == "1") {
        return false;
    }
    true
}

/// The line a read-only command's output gets when it failed the way a refused write or
/// connection fails, so the model knows why and what to do.
const READ_ONLY_REFUSED: &str = "\n[gg: ran read-only: writes and network are refused; if the \
    command must write, ask again with \"writes\": true, as a normal command]";

/// Added to the output of a guarded command that failed on a refused file access: the model
/// reads why, rather than taking the refusal for a permission problem to work around (`sudo`,
/// `chmod`, another path to the same file), and what it can do instead: work where the guard
/// allows writes, or leave a change outside them to the person. What it says is
/// `sandbox::guard_writes`' rule: the project, the temporary directories and the home's package
/// caches (`sandbox::protected::WRITABLE_CACHES_IN_HOME`) are writable, nothing else is.
const GUARD_REFUSED: &str = "\n[gg: ran without --sandbox, under the guard: gg's secrets \
    cannot be read, and nothing outside the project, the temporary directories (/tmp, /var/tmp, \
    /dev/shm, $TMPDIR) and the home's existing package caches (~/.cache, ~/.npm, \
    ~/.cargo/registry, ~/go/pkg/mod and the like) can be written, made or removed: not the \
    home's configuration or start-up files, its other directories, installed programs or the \
    system; and only the processes the command started can be signalled (not gg or the \
    person's other programs). A refusal there is the guard's, not a permission problem to \
    work around (sudo, chmod, another path to the same place): keep the work in the project or a temporary \
    directory (a tool that makes its own directory in the home on a first run can be pointed \
    at one there, as npm is with npm_config_cache), and where something outside them must \
    change, ask the person, who can run that command themselves]";

/// Said once per session when read-only commands cannot be confined.
const READ_ONLY_UNENFORCED: &str = "[gg: no sandbox level is available here (bubblewrap, \
    Landlock); commands classified read-only run unconfined, on the classifier's word alone]";

/// A command made ready to run: how, at which level, and what to say about it.
struct Confined {
    launch: Launch,
    /// The level it runs at; `None`: unconfined.
    level: Option<sandbox::Level>,
    warning: Option<String>,
    scope: Option<crate::network::CallScope>,
    network_mode: Option<String>,
    notes: Vec<String>,
    /// Run under the read-only policy.
    read_only: bool,
    /// Run unconfined but under the guard (`sandbox::guard`).
    guarded: bool,
}

impl Confined {
    /// A command run on the host, under no sandbox level: unconfined, or under the guard
    /// (`guarded`).
    fn on_host(launch: Launch, notes: Vec<String>, guarded: bool) -> Confined {
        Confined {
            launch,
            level: None,
            warning: None,
            scope: None,
            network_mode: None,
            notes,
            read_only: false,
            guarded,
        }
    }

    /// A command the session's server took.
    #[cfg(target_os = "linux")]
    fn served(
        served: ServedCommand,
        scope: Option<crate::network::CallScope>,
        network_mode: Option<String>,
        notes: Vec<String>,
        read_only: bool,
    ) -> Confined {
        Confined {
            launch: Launch::Served(served.command),
            level: Some(served.level),
            warning: None,
            scope,
            network_mode,
            notes,
            read_only,
            guarded: false,
        }
    }
}

/// A writable sandbox root at or above the home directory would make every dotfile of the
/// person's writable: shell start-up files, `~/.config/autostart`, `~/.config/systemd/user`,
/// `~/.local/bin` — each runs later on the host, outside any sandbox. So would one inside a
/// dot-directory of home (`~/.config` kept as a dotfiles repository holds `git/config`, git's
/// global configuration). Refused, with the way out. (Commands classified read-only still run
/// there: nothing is writable to them.)
fn refuse_home_as_writable_root(policy: &sandbox::Policy) -> Result<(), SetupError> {
    let Some(home) = std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .and_then(|h| std::fs::canonicalize(h).ok())
    else {
        return Ok(());
    };
    match policy.all_writable().find(|root| {
        home.starts_with(root) || sandbox::protected::home_config_dir(root, &home).is_some()
    }) {
        Some(root) => Err(SetupError::HomeWritable {
            root: root.to_path_buf(),
        }),
        None => Ok(()),
    }
}

/// Which of the session's two sandbox servers a command goes to.
#[derive(Clone, Copy)]
enum ServerFor {
    /// The workspace sandbox of `--sandbox`: every command of such a session (read-only ones
    /// restricted further).
    Workspace,
    /// The read-only sandbox of sessions without `--sandbox`, for commands classified read-only.
    ReadOnly,
}

/// How [`CommandRunner::run`] runs the script.
enum Launch {
    /// A process to spawn (unsandboxed, or wrapped per command), with the wrapper's cleanup.
    /// (Boxed: the served variant is two descriptors.)
    Command(Box<std::process::Command>, Option<sandbox::Guard>),
    /// A process to spawn on the host under the guard (`sandbox::guard`).
    #[cfg(target_os = "linux")]
    Guarded(Box<sandbox::GuardedCommand>),
    /// Already running in the session's sandbox server.
    #[cfg(target_os = "linux")]
    Served(sandbox::server::ServerCommand),
}

#[cfg(target_os = "linux")]
type ServedCommand = sandbox::server::Served;
#[cfg(not(target_os = "linux"))]
type ServedCommand = std::convert::Infallible;

impl CommandRunner {
    /// The sandbox policy of this session's commands, before the network's part.
    ///
    /// Built for every command, because a secret, a placeholder or a protected file may have
    /// appeared since the last one; but the build looks up about eighty paths, and they lie
    /// in a dozen directories. So the last command's policy is used again while none of those
    /// directories has gained, lost or renamed an entry and no file the build read has changed
    /// (a dozen `stat`s). A build from a directory changed in the last two seconds is not kept
    /// (see `sandbox::watch`).
    fn sandbox_policy(&self) -> Result<sandbox::Policy, SetupError> {
        kept_sandbox_policy(&self.kept_policy, self.cwd())
    }

    /// Starts the session's sandboxes in the background when the conversation opens (and, for
    /// a host that opens none, when a turn begins), so the first command finds them running:
    /// the model's answer takes longer than bubblewrap and the helper take to start. The
    /// read-only sandbox always (read-only commands run in it in every mode), the workspace
    /// sandbox with `--sandbox`. Nothing happens with a sandbox per command or after the
    /// session's first warm-up; whatever goes wrong here is left for the first command to meet
    /// and report. (The guard's server is not started ahead: many sessions run no normal
    /// command, and starting it and building its ruleset beside the first turn slowed the
    /// read-only turn measurably; the first guarded command starts it.)
    pub fn warm(&self) {
        let confines = matches!(self.sandbox, SandboxSetting::On { .. }) || self.enforce_read_only;
        if !confines {
            return;
        }
        let (Ok(backend), Ok(runtime)) = (
            self.confining_backend(),
            tokio::runtime::Handle::try_current(),
        ) else {
            return;
        };
        // The level is proven alongside (every confined command waits for the proof).
        if !self.self_test.initialized() {
            let cell = Arc::clone(&self.self_test);
            runtime.spawn(async move {
                self_test_once(&cell, backend).await;
            });
        }
        #[cfg(target_os = "linux")]
        {
            // The policy is built on the blocking thread too (a `stat` of every deny-read
            // path, the git configuration's hooks): off the session's thread, which meanwhile
            // sends the model its first request. The first command finds it kept.
            let warm =
                |server: &Option<Arc<sandbox::server::SessionServer>>,
                 network: Option<Arc<crate::network::SessionNetwork>>| {
                    let Some(server) = server.clone() else {
                        return;
                    };
                    // Once per session (a warm-up that could not begin is left to the first
                    // command), and without taking the server's lock: a start in progress holds it
                    // for as long as bubblewrap takes, and this runs on the async thread.
                    if !server.begin_warm() {
                        return;
                    }
                    let kept = Arc::clone(&self.kept_policy);
                    let cwd = self.cwd.clone();
                    runtime.spawn_blocking(move || {
                        let policy = kept_sandbox_policy(&kept, &cwd).and_then(|mut policy| {
                            match &network {
                                // Read-only commands run in this one too, restricted further.
                                Some(network) => {
                                    network.route(&mut policy)?;
                                }
                                None => policy = policy.read_only(),
                            }
                            Ok(policy)
                        });
                        let Ok(policy) = policy else {
                            return;
                        };
                        if let Err(e) = server.warm(&policy, backend) {
                            tracing::debug!("sandbox warm-up: {e}");
                        }
                    });
                };
            match &self.sandbox {
                SandboxSetting::On { network, .. } => {
                    warm(&self.sandbox_server, Some(Arc::clone(network)));
                }
                SandboxSetting::Off => warm(&self.read_only_server, None),
            }
        }
    }

    /// Hands the command to the session's sandbox server (starting or replacing it); `None`
    /// when it runs in a sandbox of its own instead, with the notes for its output either way.
    async fn spawn_served(
        &self,
        which: ServerFor,
        invocation: &sandbox::Invocation,
        policy: &sandbox::Policy,
        command_policy: &sandbox::Policy,
        backend: sandbox::Backend,
    ) -> (Option<ServedCommand>, Vec<String>) {
        #[cfg(target_os = "linux")]
        {
            let server = match which {
                ServerFor::Workspace => &self.sandbox_server,
                ServerFor::ReadOnly => &self.read_only_server,
            };
            let Some(server) = server.clone() else {
                return (None, Vec::new());
            };
            let handed = hand_to(
                server,
                |server| server.spawn_now(invocation, policy, command_policy, backend),
                || {
                    let (invocation, policy, command_policy) =
                        (invocation.clone(), policy.clone(), command_policy.clone());
                    move |server: &sandbox::server::SessionServer| {
                        server.spawn(&invocation, &policy, &command_policy, backend)
                    }
                },
            )
            .await;
            match handed {
                Ok(Ok((served, notes))) => (Some(served), notes),
                Ok(Err(notes)) => (None, notes),
                // The per-command path reports the same error in its own words.
                Err(e) => {
                    tracing::debug!("sandbox server: {e}");
                    (None, Vec::new())
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (which, invocation, policy, command_policy, backend);
            (None, Vec::new())
        }
    }
}

/// Hands a command to one of the session's servers: at once where it can take it without
/// blocking (`now`), else on a blocking thread (the job `later` makes, which may start the
/// server; made only then, so the fast path copies nothing). `Ok(Ok((command, notes)))` when it
/// runs there, `Ok(Err(notes))` when it is to run another way (with what to say about it; no
/// notes when that thread did not finish), `Err` what the server's side refused.
#[cfg(target_os = "linux")]
async fn hand_to<Job>(
    server: Arc<sandbox::server::SessionServer>,
    now: impl FnOnce(
        &sandbox::server::SessionServer,
    ) -> Option<Result<sandbox::server::Spawned, sandbox::SandboxError>>,
    later: impl FnOnce() -> Job,
) -> Result<Result<(ServedCommand, Vec<String>), Vec<String>>, sandbox::SandboxError>
where
    Job: FnOnce(
            &sandbox::server::SessionServer,
        ) -> Result<sandbox::server::Spawned, sandbox::SandboxError>
        + Send
        + 'static,
{
    let spawned = match now(&server) {
        Some(now) => now?,
        None => {
            let job = later();
            match tokio::task::spawn_blocking(move || job(&server)).await {
                Ok(spawned) => spawned?,
                Err(_) => return Ok(Err(Vec::new())),
            }
        }
    };
    Ok(match spawned {
        sandbox::server::Spawned::Served(mut served) => {
            let notes = std::mem::take(&mut served.notes);
            Ok((served, notes))
        }
        sandbox::server::Spawned::PerCommand { note } => Err(note.into_iter().collect()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEPT: Sweep = Sweep::Project {
        protected_writable: true,
    };
    const LOOKED_AT: Sweep = Sweep::Project {
        protected_writable: false,
    };

    #[test]
    fn read_only_commands_are_swept_only_where_nothing_confines_them() {
        for level in [Level::Bwrap, Level::Landlock, Level::Seatbelt] {
            for sandboxed in [false, true] {
                let sweep = Sweep::decide(Class::ReadOnly, sandboxed, true, Some(level));
                assert_eq!(sweep, Sweep::Not, "{level:?} {sandboxed}");
            }
        }
        for level in [None, Some(Level::None)] {
            for sandboxed in [false, true] {
                let sweep = Sweep::decide(Class::ReadOnly, sandboxed, true, level);
                assert_eq!(sweep, KEPT, "{level:?} {sandboxed}");
            }
        }
        // The benchmark's baseline: read-only verdicts trusted, as before they were enforced.
        assert_eq!(
            Sweep::decide(Class::ReadOnly, false, false, None),
            Sweep::Not
        );
    }

    #[test]
    fn unconfined_commands_are_swept_with_copies_of_what_they_could_change() {
        for level in [
            None,
            Some(Level::None),
            Some(Level::Bwrap),
            Some(Level::Landlock),
        ] {
            assert_eq!(Sweep::decide(Class::Normal, false, true, level), KEPT);
            // A level that could not be set up runs a --sandbox command unconfined.
            if level.is_none_or(|l| l == Level::None) {
                assert_eq!(Sweep::decide(Class::Normal, true, true, level), KEPT);
            }
        }
        // A person confirmed it, shown what it writes and why that is dangerous.
        assert_eq!(
            Sweep::decide(Class::Dangerous, false, true, Some(Level::Bwrap)),
            Sweep::Not
        );
    }

    #[test]
    fn sandboxed_commands_are_swept_as_their_level_needs() {
        for class in [Class::Normal, Class::Dangerous] {
            assert_eq!(
                Sweep::decide(class, true, true, Some(Level::Bwrap)),
                LOOKED_AT
            );
            assert_eq!(
                Sweep::decide(class, true, true, Some(Level::Seatbelt)),
                LOOKED_AT
            );
            assert_eq!(
                Sweep::decide(class, true, true, Some(Level::Landlock)),
                KEPT
            );
        }
    }
}
