//! Step 1 of the chain, classifying: the session's [`ToolBox`] (the tools, the policy files, the
//! classifier's context and the command runner of one working directory) resolves a call to its
//! tool, which describes it; a shell command is classified by the `classifier` crate and matched
//! against the policy files' forbidden prefixes. Nothing runs here.
//!
//! The `bash` tool ([`CommandTool`]) is the chain's own and lives here too: describing its call
//! is reading `{command, timeout, writes}`, and everything else about it (the classification
//! below, the gate, the session's [`CommandRunner`] in `run.rs`) is the chain's work, so a shell
//! command's way through gg is read in the chain's files alone.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use classifier::{Class, Verdict};
use policies::EffectivePolicy;

use super::call::{Checked, Prepared};
use super::error::{PrepareError, ProposeError, ToolBoxError};
use super::tool::{Action, Assessment, Proposal, Tool, identity_from_spec};
use tools::bash::CommandRunner;
use tools::paths::Workspace;
use tools::registry::{SandboxSetting, ToolCall, ToolSpec};

/// Everything the tools need for one working directory, and the tools themselves. Built once per
/// conversation.
pub struct ToolBox {
    workspace: Arc<Workspace>,
    policy: EffectivePolicy,
    classifier_ctx: classifier::Context,
    /// Whether read-only commands run unconfined here (no sandbox level), asked of the runner at
    /// the first command: the classifier is then strict (`Context::read_only_unconfined`).
    read_only_unconfined: std::sync::OnceLock<bool>,
    tools: Vec<Arc<dyn Tool>>,
    /// How approved shell commands run (sandbox, environment).
    pub(super) commands: CommandRunner,
}

impl ToolBox {
    /// Opens `cwd` and loads the policy files and classifier inputs for it, with the built-in
    /// tools. A malformed policy file is an error: gg does not run with a half-read policy.
    pub fn new(
        cwd: &Path,
        sandbox: SandboxSetting,
        env_allow: Vec<String>,
    ) -> Result<ToolBox, ToolBoxError> {
        let mut workspace =
            Workspace::open(cwd).map_err(|source| ToolBoxError::WorkingDirectory {
                path: cwd.to_path_buf(),
                source,
            })?;
        // Every host warms the sandbox as soon as it has the tool box (a conversation opens,
        // or its sandbox changes): started here instead, before the rest of the box is read
        // (the deny-read list, the policy files, the git configuration: a few milliseconds on
        // this thread), so that bubblewrap's set-up, the longest part of a session's start,
        // overlaps them too.
        let commands = CommandRunner::new(workspace.root(), sandbox, env_allow);
        commands.warm();
        workspace.set_hidden(
            tools::paths::DenyRead::for_root(workspace.root()).map_err(ToolBoxError::Sandbox)?,
        );
        let workspace = Arc::new(workspace);
        let policy =
            tools::security::load_policy(workspace.root(), None).map_err(ToolBoxError::Policy)?;
        let classifier_ctx =
            tools::security::classifier_context(workspace.root(), policy.classifier_rules());
        let tools = crate::agent::tools::builtin::tools(&workspace);
        Ok(ToolBox {
            workspace,
            policy,
            classifier_ctx,
            read_only_unconfined: std::sync::OnceLock::new(),
            tools,
            commands,
        })
    }

    /// Whether a person is there to read a warning (see [`CommandRunner::set_person_present`]).
    pub fn set_person_present(&mut self, present: bool) {
        self.commands.set_person_present(present);
    }

    /// Starts the session's sandboxes in the background (see [`CommandRunner::warm`]).
    pub fn warm_sandbox(&self) {
        self.commands.warm();
    }

    /// The tag this session's commands carry in their environment.
    pub fn session_tag(&self) -> &tools::computer::SessionTag {
        self.commands.session_tag()
    }

    /// Sets `name` to `value` in every command's environment, after the scrubbed environment.
    pub fn set_child_env(&mut self, name: impl Into<OsString>, value: impl Into<OsString>) {
        self.commands.set_child_env(name.into(), value.into());
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

    /// What the classifier knows about the working directory (tests point `home` at a fixture).
    pub fn classifier_context_mut(&mut self) -> &mut classifier::Context {
        &mut self.classifier_ctx
    }

    /// Whether the offered tool `name` returns mail written by others
    /// ([`Tool::reads_untrusted_mail`]).
    pub fn reads_untrusted_mail(&self, name: &str) -> bool {
        self.tool(name)
            .is_some_and(|tool| tool.reads_untrusted_mail())
    }

    fn tool(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// Step 1: the tool describes the call; a shell command is classified and matched against
    /// the policy files. An error is the tool result the model receives.
    pub fn prepare(&self, call: ToolCall) -> Result<Prepared, PrepareError> {
        let tool = self
            .tool(&call.name)
            .ok_or_else(|| PrepareError::UnknownTool(call.name.clone()))?;
        let parallel_safe = tool.parallel_safe();
        let reads_untrusted_mail = tool.reads_untrusted_mail();
        let may_send_data_out = tool.may_send_data_out();
        let Proposal {
            summary,
            mut details,
            grant_key,
            action,
        } = tool
            .propose(&call.arguments)
            .map_err(|source| PrepareError::Propose {
                tool: call.name.clone(),
                source,
            })?;
        let checked = match action {
            Action::Command {
                script,
                timeout,
                writes,
            } => {
                let unconfined = *self
                    .read_only_unconfined
                    .get_or_init(|| self.commands.read_only_unconfined());
                let strict;
                let ctx = if unconfined {
                    strict = classifier::Context {
                        read_only_unconfined: true,
                        ..self.classifier_ctx.clone()
                    };
                    &strict
                } else {
                    &self.classifier_ctx
                };
                let mut verdict = classifier::classify(&script, ctx).map_err(|source| {
                    PrepareError::Classify {
                        tool: call.name.clone(),
                        source,
                    }
                })?;
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
            reads_untrusted_mail,
            may_send_data_out,
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
        if self.commands.sandboxed() {
            details.push_str("\nsandbox: on");
        }
        details
    }
}

/// `bash`: a shell command, which this step classifies, the gate decides and the session's
/// [`CommandRunner`] runs (sandboxed when the session is, with a scrubbed environment).
pub struct CommandTool {
    spec: ToolSpec,
}

impl CommandTool {
    /// The tool under `spec`'s name, description and parameters (`registry::builtin_specs`).
    pub fn new(spec: ToolSpec) -> CommandTool {
        CommandTool { spec }
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandArgs {
    command: String,
    /// Seconds.
    timeout: Option<f64>,
    /// The command must write or reach the network: run it as a normal command (approval
    /// as the mode says, the workspace sandbox) rather than read-only.
    #[serde(default)]
    writes: bool,
}

impl Tool for CommandTool {
    identity_from_spec!();

    fn propose(&self, arguments: &str) -> Result<Proposal, ProposeError> {
        let args: CommandArgs = serde_json::from_str(arguments).map_err(ProposeError::arguments)?;
        let timeout = tools::registry::bash_timeout(args.timeout)?;
        Ok(Proposal::command(args.command, timeout, args.writes))
    }
}
