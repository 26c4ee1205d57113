//! The security chain. Every tool call the model makes goes through this module, in this order:
//!
//! 1. **classify** ([`ToolBox::prepare`]): the tool reads its arguments and describes the call
//!    ([`Tool::propose`]); a shell command is classified by the `classifier` crate and matched
//!    against the policy files' forbidden prefixes, every other tool assesses its own call
//!    ([`Assessment`]: read-only, pre-approved, normal or dangerous, with reasons). Nothing runs.
//! 2. **decide** ([`Gate::check`]): the exhaustive table of `policies::decide` (mode × terminal ×
//!    call × session grant) answers allow, deny or ask; when it asks, a person answers. The only
//!    way to obtain an [`Approved`] call is this step: its fields are private to this module.
//! 3. **wrap and run** ([`ToolBox::execute`]): an [`Approved`] call is consumed; a shell command is
//!    wrapped in the sandbox with an explicit, scrubbed environment and run; any other tool runs
//!    the action it bound when it described the call, so what runs is exactly what was shown.
//!
//! Adding a tool means implementing [`Tool`]: it can describe calls, but it cannot run one
//! without an [`Approved`] call, and only [`Gate::check`] makes those.

use std::collections::HashSet;
use std::ffi::OsString;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use classifier::{Class, Verdict};
use policies::{Decision, EffectivePolicy, Forbidden, Granted, Mode, Request, Terminal, decide};
use tokio_util::sync::CancellationToken;

use super::approval::{Answer, ApprovalPrompt, Approver};
use crate::session::audit;
use crate::tools::bash;
use crate::tools::paths::Workspace;
use crate::tools::registry::{Outcome, SandboxSetting, ToolCall};

// ---------------------------------------------------------------------------------------------
// The tool interface
// ---------------------------------------------------------------------------------------------

/// A tool the model can call: built-in (`read`, `bash`, `write`, …), MCP, and the tools to come.
///
/// A tool only *describes* calls. What it would do is bound into the [`Proposal`] it returns, and
/// that action runs only when the chain hands the call back as [`Approved`].
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;
    /// The description the model sees.
    fn description(&self) -> &str;
    /// The JSON schema of its arguments.
    fn parameters(&self) -> serde_json::Value;
    /// Reads the arguments and describes the call. Nothing may run or change here. An error
    /// becomes the tool result `approval request for tool "X" failed: <err>`.
    fn propose(&self, arguments: &str) -> Result<Proposal, String>;
    /// Whether the call may run alongside other calls (only pure reads: `read`, `grep`).
    fn parallel_safe(&self) -> bool {
        false
    }
}

impl std::fmt::Debug for dyn Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool").field("name", &self.name()).finish()
    }
}

/// What a tool's bound action returns when it runs.
pub type RunFuture = Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// A tool's bound action: runs once, with the call's cancellation token.
type Run = Box<dyn FnOnce(CancellationToken) -> RunFuture + Send>;

/// One reason for an assessment, shown to the person asked and in denials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    /// A stable id, e.g. `protected.git-dir`.
    pub rule: String,
    pub message: String,
}

/// A tool's own assessment of one call (shell commands are assessed by the classifier instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assessment {
    /// Reads only; runs without asking in every mode.
    ReadOnly,
    /// The tool's own check pre-approves it (a write inside the agent area).
    PreApproved { reason: String },
    /// Follows the approval mode.
    Normal,
    /// Always needs a person: asked with a terminal, denied without one, in every mode.
    Dangerous { reasons: Vec<Reason> },
}

impl Assessment {
    /// A tool's own three-way verdict (`classifier::Class`) as an assessment; a dangerous one
    /// carries `rule` and `message` as its single reason.
    pub fn from_class(class: classifier::Class, rule: String, message: String) -> Assessment {
        match class {
            classifier::Class::ReadOnly => Assessment::ReadOnly,
            classifier::Class::Normal => Assessment::Normal,
            classifier::Class::Dangerous => Assessment::Dangerous {
                reasons: vec![Reason { rule, message }],
            },
        }
    }
}

/// A described call, as a tool returns it from [`Tool::propose`].
pub struct Proposal {
    summary: String,
    details: String,
    grant_key: String,
    action: Action,
}

enum Action {
    /// A shell script: the chain classifies it, wraps it in the sandbox and runs it.
    Command {
        script: String,
        timeout: Duration,
        writes: bool,
    },
    /// Any other call: the tool's assessment and its bound action.
    Tool { assessment: Assessment, run: Run },
}

impl Proposal {
    /// A call the tool assessed itself. `summary` is one line for lists and events; `details` is
    /// what a person needs to decide (a diff, the arguments); `grant_key` is the exact thing a
    /// "yes, for this session" answer covers. `run` is what executes if the call is approved.
    pub fn tool<F>(
        assessment: Assessment,
        summary: String,
        details: String,
        grant_key: String,
        run: F,
    ) -> Proposal
    where
        F: FnOnce(CancellationToken) -> RunFuture + Send + 'static,
    {
        Proposal {
            summary,
            details,
            grant_key,
            action: Action::Tool {
                assessment,
                run: Box::new(run),
            },
        }
    }

    /// One line for lists and events.
    pub fn summary(&self) -> &str {
        &self.summary
    }

    /// A shell script to run in the working directory: classified, decided and sandboxed by the
    /// chain. The grant key is the script itself. `writes`: the caller says it must write, so
    /// a read-only verdict is raised to normal (it would meet a read-only filesystem).
    pub fn command(script: String, timeout: Duration, writes: bool) -> Proposal {
        Proposal {
            summary: format!("bash {}", truncate(&script, 120)),
            details: String::new(),
            grant_key: format!("bash\0{script}"),
            action: Action::Command {
                script,
                timeout,
                writes,
            },
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The states of a call: Prepared → Approved | Denied
// ---------------------------------------------------------------------------------------------

/// A call resolved and described, ready for the gate. Not cloneable: it is consumed by
/// [`Gate::check`].
pub struct Prepared {
    call: ToolCall,
    summary: String,
    details: String,
    grant_key: String,
    parallel_safe: bool,
    checked: Checked,
}

enum Checked {
    Command {
        verdict: Verdict,
        forbidden: Option<Forbidden>,
        script: String,
        timeout: Duration,
    },
    Tool {
        assessment: Assessment,
        run: Run,
    },
}

impl Prepared {
    pub fn call(&self) -> &ToolCall {
        &self.call
    }

    /// One line for lists and events.
    pub fn summary(&self) -> &str {
        &self.summary
    }

    /// What a person needs to decide.
    pub fn details(&self) -> &str {
        &self.details
    }

    /// The classifier's verdict, for a shell command.
    pub fn verdict(&self) -> Option<&Verdict> {
        match &self.checked {
            Checked::Command { verdict, .. } => Some(verdict),
            Checked::Tool { .. } => None,
        }
    }

    /// Whether the call is dangerous (asked every time, never covered by a session grant).
    pub fn dangerous(&self) -> bool {
        match &self.checked {
            Checked::Command { verdict, .. } => verdict.class == Class::Dangerous,
            Checked::Tool { assessment, .. } => matches!(assessment, Assessment::Dangerous { .. }),
        }
    }

    /// The call as the decision table sees it.
    fn policy_call(&self) -> policies::Call<'_> {
        let tool = self.call.name.as_str();
        match &self.checked {
            Checked::Command {
                verdict, forbidden, ..
            } => policies::Call::Bash {
                class: verdict.class,
                forbidden: forbidden.as_ref(),
            },
            Checked::Tool { assessment, .. } => match assessment {
                Assessment::ReadOnly => policies::Call::ReadType { tool },
                Assessment::PreApproved { reason } => policies::Call::PreApproved { tool, reason },
                Assessment::Normal => policies::Call::Gated { tool },
                Assessment::Dangerous { .. } => policies::Call::DangerousTool { tool },
            },
        }
    }

    /// Why a dangerous tool call is dangerous, as one clause for denials.
    fn danger_reasons(&self) -> Option<String> {
        match &self.checked {
            Checked::Tool {
                assessment: Assessment::Dangerous { reasons },
                ..
            } if !reasons.is_empty() => Some(
                reasons
                    .iter()
                    .map(|r| r.message.as_str())
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            _ => None,
        }
    }

    fn record(&self, decision: Option<audit::Decision>) -> CallRecord {
        CallRecord {
            call: self.call.clone(),
            verdict: self.verdict().cloned(),
            classification: Some(self.classification()),
            decision,
        }
    }

    /// The class of the call as the audit trail keeps it: the classifier's verdict for a shell
    /// command, the tool's own assessment for any other tool.
    fn classification(&self) -> audit::Classification {
        let reason = |rule: &str, message: &str| audit::Reason {
            rule: rule.to_string(),
            message: message.to_string(),
        };
        match &self.checked {
            Checked::Command { verdict, .. } => audit::Classification {
                verdict: verdict.class.as_str().to_string(),
                reasons: verdict
                    .reasons
                    .iter()
                    .map(|r| reason(&r.rule, &r.message))
                    .collect(),
            },
            Checked::Tool { assessment, .. } => {
                let (verdict, reasons) = match assessment {
                    Assessment::ReadOnly => ("read-only", Vec::new()),
                    Assessment::PreApproved { reason: why } => {
                        ("pre-approved", vec![reason("pre-approved", why)])
                    }
                    Assessment::Normal => ("normal", Vec::new()),
                    Assessment::Dangerous { reasons } => (
                        "dangerous",
                        reasons
                            .iter()
                            .map(|r| reason(&r.rule, &r.message))
                            .collect(),
                    ),
                };
                audit::Classification {
                    verdict: verdict.to_string(),
                    reasons,
                }
            }
        }
    }
}

/// What the session keeps about a call, whatever became of it.
#[derive(Debug, Clone)]
pub struct CallRecord {
    pub call: ToolCall,
    /// For a shell command: the classifier's verdict.
    pub verdict: Option<Verdict>,
    /// The call's class for the audit trail (every tool); `None` for a call that was never
    /// described (unknown tool, arguments that did not parse).
    pub classification: Option<audit::Classification>,
    /// Who decided and how; `None` for a call that never reached the gate.
    pub decision: Option<audit::Decision>,
}

/// A call the gate allowed. Only [`Gate::check`] makes one; [`ToolBox::execute`] consumes it.
pub struct Approved {
    prepared: Prepared,
    decision: audit::Decision,
}

impl Approved {
    pub fn call(&self) -> &ToolCall {
        &self.prepared.call
    }

    /// Whether it may run alongside other calls.
    pub fn parallel_safe(&self) -> bool {
        self.prepared.parallel_safe
    }

    /// What the session records about it.
    pub fn record(&self) -> CallRecord {
        self.prepared.record(Some(self.decision.clone()))
    }
}

/// A call that must not run, with the error the model receives and the audit record.
#[derive(Debug, Clone)]
pub struct Denied {
    /// Boxed: a denial travels in `Result`s, and the record is large.
    pub record: Box<CallRecord>,
    /// The tool error the model receives.
    pub message: String,
}

impl Denied {
    /// A call that never reached the gate (its arguments did not parse, the tool is unknown).
    pub fn unprepared(call: ToolCall, message: String) -> Denied {
        Denied {
            record: Box::new(CallRecord {
                call,
                verdict: None,
                classification: None,
                decision: None,
            }),
            message,
        }
    }

    /// A call the turn's cancellation stopped before it was decided.
    pub fn cancelled_before_gate(call: ToolCall, mode: Mode) -> Denied {
        Denied {
            record: Box::new(CallRecord {
                call,
                verdict: None,
                classification: None,
                decision: Some(cancelled_record(None, mode)),
            }),
            message: CANCELLED.to_string(),
        }
    }
}

/// The tool result of a call stopped by cancellation.
pub const CANCELLED: &str = "tool not executed: context canceled";

fn cancelled_record(rule: Option<String>, mode: Mode) -> audit::Decision {
    audit::Decision {
        action: audit::action::CANCELLED.to_string(),
        rule,
        decided_by: audit::decided_by::USER.to_string(),
        mode: mode.as_str().to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Step 1: classify
// ---------------------------------------------------------------------------------------------

/// Everything the tools need for one working directory, and the tools themselves. Built once per
/// conversation.
pub struct ToolBox {
    workspace: Arc<Workspace>,
    policy: EffectivePolicy,
    classifier_ctx: classifier::Context,
    sandbox: SandboxSetting,
    /// Secret-looking environment variable names that may nevertheless reach children.
    env_allow: Vec<String>,
    /// Set on every command after the scrubbed environment (replacing a variable of the same
    /// name): a host that gives commands another `HOME`, as the tests do with their fixture.
    child_env: Vec<(OsString, OsString)>,
    tools: Vec<Arc<dyn Tool>>,
    /// Marks every process this session's commands start, so `process_kill` can tell the
    /// session's own processes from the rest of the machine.
    session_tag: crate::tools::computer::SessionTag,
    /// The session's sandbox (bubblewrap or the helper with a command server in it), started at
    /// the first sandboxed command; `None` when `GG_SANDBOX_NO_SERVER` asks for a sandbox per
    /// command.
    #[cfg(target_os = "linux")]
    sandbox_server: Option<Arc<sandbox::server::SessionServer>>,
    /// `GG_SANDBOX_BACKEND`: a level forced for every sandboxed command (diagnostics and the
    /// tests of each level through the agent); a value that names no backend fails every
    /// sandboxed command rather than pick one.
    backend_override: Result<Option<sandbox::Backend>, String>,
    /// The read-only sandbox server of a session without `--sandbox`: every command classified
    /// read-only runs in it (nothing writable but a private `/tmp`, no network). With
    /// `--sandbox` they run in `sandbox_server` instead, restricted further.
    #[cfg(target_os = "linux")]
    read_only_server: Option<Arc<sandbox::server::SessionServer>>,
    /// Whether commands classified read-only run under the read-only policy (always, except in
    /// the benchmark's unenforced baseline of test-hooks builds).
    enforce_read_only: bool,
    /// The session said once that no level can enforce read-only here.
    read_only_unenforced_said: std::sync::atomic::AtomicBool,
    /// The proof of the level this session's commands run at (`sandbox::self_test`): started
    /// with the warm-up, awaited by the first confined command.
    self_test: Arc<tokio::sync::OnceCell<SelfTest>>,
    /// A person is here to read a warning; without one (unattended, or no terminal) a
    /// protection that does not hold fails every confined command instead of being said.
    person_present: bool,
    /// The session said once that a protection does not hold here.
    self_test_said: std::sync::atomic::AtomicBool,
}

/// What the self-test of the session's level found: `Err` names the protections that do not
/// hold (or could not be tried) and the level.
type SelfTest = Result<(), String>;

impl ToolBox {
    /// Opens `cwd` and loads the policy files and classifier inputs for it, with the built-in
    /// tools. A malformed policy file is an error: gg does not run with a half-read policy.
    pub fn new(
        cwd: &Path,
        sandbox: SandboxSetting,
        env_allow: Vec<String>,
    ) -> Result<ToolBox, String> {
        let mut workspace = Workspace::open(cwd)
            .map_err(|e| format!("working directory {}: {e}", cwd.display()))?;
        workspace.set_hidden(crate::tools::paths::DenyRead::for_root(workspace.root())?);
        let workspace = Arc::new(workspace);
        let policy = crate::tools::security::load_policy(workspace.root(), None)
            .map_err(|e| e.to_string())?;
        let classifier_ctx =
            crate::tools::security::classifier_context(workspace.root(), policy.classifier_rules());
        let tools = super::builtin::tools(&workspace);
        Ok(ToolBox {
            workspace,
            policy,
            classifier_ctx,
            sandbox,
            env_allow,
            child_env: Vec::new(),
            #[cfg(target_os = "linux")]
            sandbox_server: std::env::var_os("GG_SANDBOX_NO_SERVER")
                .is_none_or(|v| v.is_empty() || v == "0")
                .then(|| Arc::new(sandbox::server::SessionServer::new())),
            backend_override: match std::env::var("GG_SANDBOX_BACKEND") {
                Ok(name) if !name.is_empty() => name
                    .parse()
                    .map(Some)
                    .map_err(|e| format!("GG_SANDBOX_BACKEND: {e}")),
                _ => Ok(None),
            },
            #[cfg(target_os = "linux")]
            read_only_server: std::env::var_os("GG_SANDBOX_NO_SERVER")
                .is_none_or(|v| v.is_empty() || v == "0")
                .then(|| Arc::new(sandbox::server::SessionServer::new())),
            enforce_read_only: enforce_read_only(),
            read_only_unenforced_said: std::sync::atomic::AtomicBool::new(false),
            self_test: Arc::new(tokio::sync::OnceCell::new()),
            person_present: false,
            self_test_said: std::sync::atomic::AtomicBool::new(false),
            tools,
            session_tag: crate::tools::computer::SessionTag::new(),
        })
    }

    /// Whether a person is there to read a warning. Without one (unattended runs, no terminal),
    /// a protection the self-test finds not holding fails every confined command.
    pub fn set_person_present(&mut self, present: bool) {
        self.person_present = present;
    }

    /// The level every confined command of this session asks for: `GG_SANDBOX_BACKEND`, else
    /// `--sandbox`'s, else (read-only commands of a session without it) the strongest there is.
    fn confining_backend(&self) -> Result<sandbox::Backend, String> {
        let asked = match &self.sandbox {
            SandboxSetting::On { backend, .. } => *backend,
            // Without --sandbox the person chose no level, so the strongest there is.
            SandboxSetting::Off => sandbox::Backend::Auto,
        };
        match &self.backend_override {
            Ok(forced) => Ok(forced.unwrap_or(asked)),
            Err(e) => Err(e.clone()),
        }
    }

    /// What a confined command meets after the self-test of `backend`'s level (run once per
    /// session, in the background from the warm-up or here by the first confined command, and
    /// remembered across sessions when it holds): an error when a protection does not hold and
    /// no person is here, once a loud note when one is, nothing when all hold.
    async fn after_self_test(&self, backend: sandbox::Backend) -> Result<Option<String>, String> {
        let Err(unproven) = self_test_once(&self.self_test, backend).await else {
            return Ok(None);
        };
        if !self.person_present {
            return Err(format!(
                "{unproven}; no person is here to decide, so no command runs (see `gg sandbox \
                 --self-test`)"
            ));
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

    /// The tag this session's commands carry in their environment.
    pub fn session_tag(&self) -> &crate::tools::computer::SessionTag {
        &self.session_tag
    }

    /// Adds tools after the built-ins (MCP servers, tests). A name already taken keeps its first
    /// owner.
    pub fn add_tools(&mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) {
        self.tools.extend(tools);
    }

    /// Every tool definition the model sees, built-ins first: (name, description, parameters).
    pub fn specs(&self) -> Vec<(String, String, serde_json::Value)> {
        self.tools
            .iter()
            .map(|t| {
                (
                    t.name().to_string(),
                    t.description().to_string(),
                    t.parameters(),
                )
            })
            .collect()
    }

    pub fn cwd(&self) -> &Path {
        self.workspace.root()
    }

    /// Sets `name` to `value` in every command's environment (see `child_env`).
    pub fn set_child_env(&mut self, name: impl Into<OsString>, value: impl Into<OsString>) {
        let name = name.into();
        self.child_env.retain(|(n, _)| *n != name);
        self.child_env.push((name, value.into()));
    }

    /// What the classifier knows about the working directory (tests point `home` at a fixture).
    pub fn classifier_context_mut(&mut self) -> &mut classifier::Context {
        &mut self.classifier_ctx
    }

    fn tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// Step 1: the tool describes the call; a shell command is classified and matched against
    /// the policy files. An error is the tool result the model receives.
    pub fn prepare(&self, call: ToolCall) -> Result<Prepared, String> {
        let failed = |e: String| format!("approval request for tool \"{}\" failed: {e}", call.name);
        let tool = self
            .tool(&call.name)
            .ok_or_else(|| format!("unknown tool \"{}\"", call.name))?;
        let parallel_safe = tool.parallel_safe();
        let Proposal {
            summary,
            mut details,
            grant_key,
            action,
        } = tool.propose(&call.arguments).map_err(failed)?;
        let checked = match action {
            Action::Command {
                script,
                timeout,
                writes,
            } => {
                let mut verdict = classifier::classify(&script, &self.classifier_ctx)
                    .map_err(|e| failed(e.to_string()))?;
                #[cfg(feature = "test-hooks")]
                if std::env::var_os("GG_TEST_CLASSIFY_READ_ONLY").is_some_and(|v| v == "1") {
                    // Test-hooks builds only: a classifier that calls everything read-only, so
                    // the tests can show that what runs read-only cannot write, whatever the
                    // classifier missed.
                    verdict.class = Class::ReadOnly;
                    verdict.reasons.clear();
                }
                if writes && verdict.class == Class::ReadOnly {
                    verdict.class = Class::Normal;
                    verdict.reasons.push(classifier::Reason {
                        rule: "request.writes".into(),
                        class: Class::Normal,
                        message: "the call asks to write or use the network, which read-only \
                                  commands cannot"
                            .into(),
                        span: (0, script.len()),
                    });
                }
                let forbidden = self.policy.forbidden_match(&verdict);
                details = self.command_details(&script, &verdict, timeout);
                Checked::Command {
                    verdict,
                    forbidden,
                    script,
                    timeout,
                }
            }
            Action::Tool { assessment, run } => {
                if let Assessment::Dangerous { reasons } = &assessment {
                    let mut why = String::from("dangerous:\n");
                    for r in reasons {
                        why.push_str(&format!("  - {}: {}\n", r.rule, r.message));
                    }
                    details = format!("{why}{details}");
                }
                Checked::Tool { assessment, run }
            }
        };
        Ok(Prepared {
            call,
            summary,
            details,
            grant_key,
            parallel_safe,
            checked,
        })
    }

    fn command_details(&self, script: &str, verdict: &Verdict, timeout: Duration) -> String {
        let mut details = format!(
            "command: {script}\nclassification: {}\n",
            verdict.class.as_str()
        );
        for reason in &verdict.reasons {
            // The span as `gg classify` prints it; the web UI highlights it in the command.
            details.push_str(&format!(
                "  - {}: {} [{}..{}]\n",
                reason.rule, reason.message, reason.span.0, reason.span.1
            ));
        }
        details.push_str(&format!(
            "cwd: {}\ntimeout: {}s",
            self.cwd().display(),
            timeout.as_secs()
        ));
        if let SandboxSetting::On { .. } = self.sandbox {
            details.push_str("\nsandbox: on");
        }
        details
    }
}

// ---------------------------------------------------------------------------------------------
// Step 2: decide
// ---------------------------------------------------------------------------------------------

/// Mode, terminal, the approver, and the calls a person allowed for the rest of the session.
///
/// The approver is always passed explicitly. Modes in which nobody can answer get
/// [`NobodyToAsk`](super::approval::NobodyToAsk), which denies: the table never asks in those
/// modes, so reaching it is a bug, and a bug here must fail closed.
pub struct Gate {
    mode: Mode,
    terminal: Terminal,
    approver: Arc<dyn Approver>,
    grants: Mutex<HashSet<String>>,
}

impl Gate {
    pub fn new(mode: Mode, terminal: Terminal, approver: Arc<dyn Approver>) -> Gate {
        Gate {
            mode,
            terminal,
            approver,
            grants: Mutex::new(HashSet::new()),
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The table's decision for a call, session grants included, before any person is asked.
    pub fn decision(&self, prepared: &Prepared) -> Decision {
        let granted = if self.granted(&prepared.grant_key) {
            Granted::ForSession
        } else {
            Granted::No
        };
        decide(&Request {
            mode: self.mode,
            terminal: self.terminal,
            granted,
            call: prepared.policy_call(),
        })
    }

    /// Step 2: decides one call, asking the approver when the table says so. `on_ask` sees the
    /// prompt just before a person is asked (a UI's `approval_requested` event). Cancellation
    /// while a person is asked ends the wait: the call is recorded as `cancelled`.
    pub async fn check(
        &self,
        prepared: Prepared,
        on_ask: &(dyn Fn(&ApprovalPrompt) + Sync),
        cancel: &CancellationToken,
    ) -> Result<Approved, Denied> {
        let decision = self.decision(&prepared);
        let rule = decision.rule().id().to_string();
        let record = |action: &str, by: &str| audit::Decision {
            action: action.to_string(),
            rule: Some(rule.clone()),
            decided_by: by.to_string(),
            mode: self.mode.as_str().to_string(),
        };
        let tool = prepared.call.name.clone();
        let deny = |prepared: Prepared, message: String, decision: audit::Decision| {
            Err(Denied {
                record: Box::new(prepared.record(Some(decision))),
                message,
            })
        };
        let prompt = match decision {
            Decision::Allow {
                rule: policies::Rule::SessionGrant,
            } => {
                let decision = record(audit::action::ALLOW, audit::decided_by::SESSION_RULE);
                return Ok(Approved { prepared, decision });
            }
            Decision::Allow { .. } => {
                let decision = record(audit::action::ALLOW, audit::decided_by::POLICY);
                return Ok(Approved { prepared, decision });
            }
            Decision::Deny { message, .. } => {
                let why = prepared
                    .danger_reasons()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default();
                let message = format!("tool call \"{tool}\" denied by policy: {message}{why}");
                let decision = record(audit::action::DENY, audit::decided_by::POLICY);
                return deny(prepared, message, decision);
            }
            Decision::Ask { prompt, .. } => prompt,
        };
        let dangerous = prepared.dangerous();
        let question = ApprovalPrompt {
            call_id: prepared.call.id.clone(),
            tool: tool.clone(),
            summary: prepared.summary.clone(),
            details: prepared.details.clone(),
            // Control characters in what is shown are escaped there; the reason says so.
            reason: crate::display::flag_controls(&prompt, &[&prepared.summary, &prepared.details]),
            dangerous,
        };
        on_ask(&question);
        let answer = tokio::select! {
            answer = self.approver.ask(&question) => answer,
            () = cancel.cancelled() => {
                let decision = cancelled_record(Some(rule.clone()), self.mode);
                return deny(prepared, CANCELLED.to_string(), decision);
            }
        };
        match answer {
            Ok(Answer::Allow) => {
                let decision = record(audit::action::ALLOW, audit::decided_by::USER);
                Ok(Approved { prepared, decision })
            }
            Ok(Answer::AllowForSession) => {
                // A dangerous call is confirmed once, never for the session.
                let action = if dangerous {
                    audit::action::ALLOW
                } else {
                    self.grant(&prepared.grant_key);
                    audit::action::ALLOW_SESSION
                };
                let decision = record(action, audit::decided_by::USER);
                Ok(Approved { prepared, decision })
            }
            Ok(Answer::Deny) => {
                let decision = record(audit::action::DENY, audit::decided_by::USER);
                deny(
                    prepared,
                    format!("tool call \"{tool}\" denied by user"),
                    decision,
                )
            }
            Err(e) => {
                let decision = record(audit::action::DENY, audit::decided_by::POLICY);
                let message = format!("approval failed for tool \"{tool}\": {e}");
                deny(prepared, message, decision)
            }
        }
    }

    fn granted(&self, key: &str) -> bool {
        self.grants.lock().map(|g| g.contains(key)).unwrap_or(false)
    }

    fn grant(&self, key: &str) {
        if let Ok(mut grants) = self.grants.lock() {
            grants.insert(key.to_string());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Step 3: wrap and run
// ---------------------------------------------------------------------------------------------

impl ToolBox {
    /// Step 3: runs an approved call. A shell command is wrapped in the sandbox (when on) with an
    /// explicit environment; any other tool runs the action it bound in step 1.
    pub async fn execute(&self, approved: Approved, cancel: &CancellationToken) -> Outcome {
        if cancel.is_cancelled() {
            return Outcome::error(CANCELLED);
        }
        let mode = crate::app::ceiling::mode_named(&approved.decision.mode);
        match approved.prepared.checked {
            Checked::Tool { run, .. } => run(cancel.clone()).await,
            Checked::Command {
                verdict,
                script,
                timeout,
                ..
            } => {
                self.run_command(&script, verdict.class, mode, timeout, cancel)
                    .await
            }
        }
    }

    async fn run_command(
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
        let ceiling = crate::app::ceiling::Ceiling {
            mode: mode.unwrap_or(Mode::Unattended { allow_all: false }),
            sandbox: matches!(self.sandbox, SandboxSetting::On { .. }),
            network: match &self.sandbox {
                SandboxSetting::On { network, .. } => network.policy.mode,
                SandboxSetting::Off => crate::tools::network::NetworkMode::On,
            },
        };
        env.push((crate::app::ceiling::ENV.into(), ceiling.encode().into()));
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
        // What a sandboxed command may not leave behind although no mount can cover it
        // (persistence vectors: `.envrc`, a new `.git/commondir`, a planted submodule's git
        // directory, …) is looked at before it starts (a served command runs as soon as it is
        // handed over) and moved aside after it. A command run read-only can create nothing.
        let before = (matches!(self.sandbox, SandboxSetting::On { .. })
            && !(class == Class::ReadOnly && self.enforce_read_only))
            .then(|| crate::tools::persistence::Before::look(self.cwd()));
        let confined = if class == Class::ReadOnly && self.enforce_read_only {
            self.confine_read_only(invocation).await
        } else {
            self.confine_workspace(invocation).await
        };
        let Confined {
            launch,
            level,
            warning,
            scope,
            network_mode,
            notes,
            read_only,
        } = match confined {
            Ok(c) => c,
            Err(e) => return Outcome::error(format!("sandbox could not be set up: {e}")),
        };
        let log_dir = crate::tools::registry::outputs_dir(self.cwd());
        let result = match launch {
            Launch::Command(command, _guard) => {
                bash::run(*command, timeout, cancel, &log_dir).await
            }
            #[cfg(target_os = "linux")]
            Launch::Served(command) => bash::run_served(command, timeout, cancel, &log_dir).await,
        };
        let network_refused = scope
            .map(crate::tools::network::CallScope::finish)
            .unwrap_or_default();
        let output = match result {
            Ok(o) => o,
            Err(e) => {
                return Outcome {
                    text: format!("failed to start {}: {e}", shell.display()),
                    is_error: true,
                    sandbox_level: Some(level),
                    sandbox_warning: warning,
                    network_mode,
                    network_refused,
                    browser: None,
                    image: None,
                };
            }
        };
        let mut text = String::new();
        if let Some(w) = &warning {
            text.push_str(w);
            text.push('\n');
        }
        for note in &notes {
            text.push_str(note);
            text.push('\n');
        }
        text.push_str(&output.text);
        for r in &network_refused {
            text.push_str(&format!(
                "\n[gg: network policy refused {}:{} ({})]",
                r.host, r.port, r.rule
            ));
        }
        if read_only && output.is_error() && bash::looks_refused(&output.text) {
            text.push_str(READ_ONLY_REFUSED);
        }
        for line in before
            .map(crate::tools::persistence::Before::sweep)
            .unwrap_or_default()
        {
            text.push('\n');
            text.push_str(&line);
        }
        Outcome {
            text,
            is_error: output.is_error(),
            sandbox_level: Some(level),
            sandbox_warning: warning,
            network_mode,
            network_refused,
            browser: None,
            image: None,
        }
    }

    /// How a command classified read-only runs: in the session's read-only sandbox, at the
    /// level the session's sandbox setting asks for (the strongest available without
    /// `--sandbox`), with nothing writable but a private `/tmp`, no network and the deny-read
    /// policy. Where no level exists it runs unconfined, and the session says so once.
    async fn confine_read_only(&self, invocation: sandbox::Invocation) -> Result<Confined, String> {
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
            return Ok(Confined {
                launch: Launch::Served(served.command),
                level: format!("{}{READ_ONLY_SUFFIX}", served.level.as_str()),
                warning: None,
                scope: None,
                network_mode,
                notes,
                read_only: true,
            });
        }
        #[cfg(not(target_os = "linux"))]
        let _ = served;
        let wrapped = sandbox::wrap(invocation, &policy, backend).map_err(|e| e.to_string())?;
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
            return Ok(Confined {
                launch: Launch::Command(Box::new(parts.command), Some(parts.guard)),
                level: "off".to_string(),
                warning: None,
                scope: None,
                network_mode: None,
                notes,
                read_only: false,
            });
        }
        Ok(Confined {
            launch: Launch::Command(Box::new(parts.command), Some(parts.guard)),
            level: format!("{}{READ_ONLY_SUFFIX}", parts.level.as_str()),
            warning: None,
            scope: None,
            network_mode,
            notes,
            read_only: true,
        })
    }

    /// How any other command runs: unconfined without `--sandbox`, otherwise in the session's
    /// workspace sandbox (the working directory writable, the network policy applied).
    async fn confine_workspace(&self, invocation: sandbox::Invocation) -> Result<Confined, String> {
        let network = match &self.sandbox {
            SandboxSetting::Off => {
                let command = invocation.unsandboxed(self.cwd());
                return Ok(Confined {
                    launch: Launch::Command(Box::new(command), None),
                    level: "off".to_string(),
                    warning: None,
                    scope: None,
                    network_mode: None,
                    notes: Vec::new(),
                    read_only: false,
                });
            }
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
            return Ok(Confined {
                launch: Launch::Served(served.command),
                level: served.level.as_str().to_string(),
                warning: None,
                scope,
                network_mode,
                notes,
                read_only: false,
            });
        }
        #[cfg(not(target_os = "linux"))]
        let _ = served;
        let wrapped = sandbox::wrap(invocation, &policy, backend).map_err(|e| e.to_string())?;
        let parts = wrapped.into_parts();
        let mut warning = parts.warning;
        if let (Some(w), Some(line)) = (&mut warning, network.policy.unenforced_warning()) {
            w.push_str(&format!("\n[{line}]"));
        }
        Ok(Confined {
            launch: Launch::Command(Box::new(parts.command), Some(parts.guard)),
            level: parts.level.as_str().to_string(),
            warning,
            scope,
            network_mode,
            notes,
            read_only: false,
        })
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

/// The audit's sandbox level of a command run read-only (`bwrap+read-only`, …).
pub const READ_ONLY_SUFFIX: &str = "+read-only";

/// The line a read-only command's output gets when it failed the way a refused write or
/// connection fails, so the model knows why and what to do.
const READ_ONLY_REFUSED: &str = "\n[gg: ran read-only: writes and network are refused; if the \
    command must write, ask again with \"writes\": true, as a normal command]";

/// Said once per session when read-only commands cannot be confined.
const READ_ONLY_UNENFORCED: &str = "[gg: no sandbox level is available here (bubblewrap, \
    Landlock); commands classified read-only run unconfined, on the classifier's word alone]";

/// A command made ready to run: how, at which level, and what to say about it.
struct Confined {
    launch: Launch,
    /// The audit's level: `off`, `bwrap`, `landlock`, …, with [`READ_ONLY_SUFFIX`] when run
    /// read-only.
    level: String,
    warning: Option<String>,
    scope: Option<crate::tools::network::CallScope>,
    network_mode: Option<String>,
    notes: Vec<String>,
    /// Run under the read-only policy.
    read_only: bool,
}

/// A writable sandbox root at or above the home directory would make every dotfile of the
/// person's writable: shell start-up files, `~/.config/autostart`, `~/.config/systemd/user`,
/// `~/.local/bin` — each runs later on the host, outside any sandbox. Refused, with the way out.
/// (Commands classified read-only still run there: nothing is writable to them.)
fn refuse_home_as_writable_root(policy: &sandbox::Policy) -> Result<(), String> {
    let Some(home) = std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .and_then(|h| std::fs::canonicalize(h).ok())
    else {
        return Ok(());
    };
    match policy.all_writable().find(|root| home.starts_with(root)) {
        Some(root) => Err(format!(
            "{} is the home directory or contains it: a sandboxed command could write the \
             person's start-up files there, which run outside the sandbox later; start gg in a \
             project directory",
            root.display()
        )),
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

/// How `run_command` runs the script.
enum Launch {
    /// A process to spawn (unsandboxed, or wrapped per command), with the wrapper's cleanup.
    /// (Boxed: the served variant is two descriptors.)
    Command(Box<std::process::Command>, Option<sandbox::Guard>),
    /// Already running in the session's sandbox server.
    #[cfg(target_os = "linux")]
    Served(sandbox::server::ServerCommand),
}

#[cfg(target_os = "linux")]
type ServedCommand = sandbox::server::Served;
#[cfg(not(target_os = "linux"))]
type ServedCommand = std::convert::Infallible;

impl ToolBox {
    /// The sandbox policy of this session's commands, before the network's part.
    fn sandbox_policy(&self) -> Result<sandbox::Policy, String> {
        let mut policy = sandbox::Policy::new(self.cwd()).map_err(|e| e.to_string())?;
        for file in crate::secrets::secret_files() {
            policy.add_deny_read(&file).map_err(|e| e.to_string())?;
        }
        // gg keeps the agent socket out of its own environment: hide it by the value it holds.
        if let Some(sock) = crate::secrets::var("SSH_AUTH_SOCK") {
            policy.hide_socket(std::path::Path::new(&sock));
        }
        Ok(policy)
    }

    /// Starts the session's sandboxes in the background when the conversation opens (and, for
    /// a host that opens none, when a turn begins), so the first command finds them running:
    /// the model's answer takes longer than bubblewrap and the helper take to start. The
    /// read-only sandbox always (read-only commands run in it in every mode), the workspace
    /// sandbox with `--sandbox`. Nothing happens with a sandbox per command or after the
    /// session's first warm-up; whatever goes wrong here is left for the first command to meet
    /// and report.
    pub fn warm_sandbox(&self) {
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
            let warm = |server: &Option<Arc<sandbox::server::SessionServer>>,
                        policy: Result<sandbox::Policy, String>| {
                let Some(server) = server.clone() else {
                    return;
                };
                // Once per session (a warm-up that could not begin is left to the first
                // command), and without taking the server's lock: a start in progress holds it
                // for as long as bubblewrap takes, and this runs on the async thread.
                if !server.begin_warm() {
                    return;
                }
                let Ok(policy) = policy else {
                    return;
                };
                runtime.spawn_blocking(move || {
                    if let Err(e) = server.warm(&policy, backend) {
                        tracing::debug!("sandbox warm-up: {e}");
                    }
                });
            };
            match &self.sandbox {
                SandboxSetting::On { network, .. } => {
                    let workspace = self.sandbox_policy().and_then(|mut policy| {
                        network.route(&mut policy)?;
                        Ok(policy)
                    });
                    // Read-only commands run in this one too, restricted further.
                    warm(&self.sandbox_server, workspace);
                }
                SandboxSetting::Off => {
                    let read_only = self.sandbox_policy().map(sandbox::Policy::read_only);
                    warm(&self.read_only_server, read_only);
                }
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
            let spawned = match server.spawn_now(invocation, policy, command_policy, backend) {
                Some(now) => Ok(now),
                None => {
                    let (invocation, policy, command_policy) =
                        (invocation.clone(), policy.clone(), command_policy.clone());
                    tokio::task::spawn_blocking(move || {
                        server.spawn(&invocation, &policy, &command_policy, backend)
                    })
                    .await
                }
            };
            match spawned {
                Ok(Ok(sandbox::server::Spawned::Served(mut served))) => {
                    let notes = std::mem::take(&mut served.notes);
                    (Some(served), notes)
                }
                Ok(Ok(sandbox::server::Spawned::PerCommand { note })) => {
                    (None, note.into_iter().collect())
                }
                // The per-command path reports the same error in its own words.
                Ok(Err(e)) => {
                    tracing::debug!("sandbox server: {e}");
                    (None, Vec::new())
                }
                Err(_) => (None, Vec::new()),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (which, invocation, policy, command_policy, backend);
            (None, Vec::new())
        }
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}
