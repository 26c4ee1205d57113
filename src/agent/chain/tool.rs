//! What a tool is to the chain: it describes a call ([`Tool::propose`]) with what it would do
//! bound into the [`Proposal`], and assesses it ([`Assessment`]); it cannot run one.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::ProposeError;
use tools::registry::Outcome;

/// A tool the model can call: built-in (`read`, `bash`, `write`, …), MCP, and the tools to come.
///
/// A tool only *describes* calls. What it would do is bound into the [`Proposal`] it returns, and
/// that action runs only when the chain hands the call back as [`Approved`](super::Approved).
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;
    /// The description the model sees.
    fn description(&self) -> &str;
    /// The JSON schema of its arguments.
    fn parameters(&self) -> serde_json::Value;
    /// Reads the arguments and describes the call. Nothing may run or change here. An error
    /// becomes the tool result `approval request for tool "X" failed: <err>`.
    fn propose(&self, arguments: &str) -> Result<Proposal, ProposeError>;
    /// Whether the call may run alongside other calls (only pure reads: `read`, `grep`).
    fn parallel_safe(&self) -> bool {
        false
    }
    /// Whether what the call returns is mail (or invitations) written by other people: once
    /// such a call is approved, the rest of the turn is tainted (see
    /// [`Prepared::after_untrusted_mail`](super::Prepared::after_untrusted_mail)).
    fn reads_untrusted_mail(&self) -> bool {
        false
    }
    /// Whether a call could carry data out of the project: to the network (other than reading
    /// the person's own account) or to files outside the working directory. Unknown tools (MCP,
    /// the browser, memory) are assumed to; only tools that know better say no.
    fn may_send_data_out(&self) -> bool {
        true
    }
}

/// The identity of a [`Tool`] whose name, description and parameters are its `spec` field (a
/// `tools::registry::ToolSpec`, as `registry::builtin_specs` gives them): the three methods,
/// written once for every built-in tool instead of once per tool. Used inside `impl Tool for X`.
macro_rules! identity_from_spec {
    () => {
        fn name(&self) -> &str {
            self.spec.name
        }

        fn description(&self) -> &str {
            self.spec.description
        }

        fn parameters(&self) -> serde_json::Value {
            self.spec.parameters.clone()
        }
    };
}
pub(crate) use identity_from_spec;

impl std::fmt::Debug for dyn Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool").field("name", &self.name()).finish()
    }
}

/// What a tool's bound action returns when it runs.
pub type RunFuture = Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// A tool's bound action: runs once, with the call's cancellation token.
pub(super) type Run = Box<dyn FnOnce(CancellationToken) -> RunFuture + Send>;

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
    pub(super) summary: String,
    pub(super) details: String,
    pub(super) grant_key: String,
    pub(super) action: Action,
}

pub(super) enum Action {
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
            summary: format!("bash {}", tools::registry::truncate(&script, 120)),
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
