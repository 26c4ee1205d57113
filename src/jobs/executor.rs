//! The executor that runs a firing as one agent turn in a fresh, named session, under the
//! unattended policy, with the job's timeout.

use std::path::PathBuf;
use std::sync::Arc;

use policies::{Mode, Terminal};
use tokio_util::sync::CancellationToken;

use super::scheduler::{ExecutionFuture, JobExecutor};
use super::{Job, RunStatus};
use crate::agent::{AgentEvent, NobodyToAsk, TurnError};
use crate::app::config::{Config, Overrides};
use crate::app::service::{Conversation, ServiceOptions, Submitted};
use crate::session::{Session, paths};
use tools::registry::SandboxSetting;

/// How a firing ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    /// `ok`, `error`, `timeout` or `interrupted`.
    pub status: RunStatus,
    /// The final assistant text, or the error.
    pub summary: String,
    /// The session file; empty when the session could not be created.
    pub session_path: String,
}

/// Runs firings through a [`Conversation`] built from `~/.gg/config.json` for the job's
/// directory, like `gg -p` does, but with nobody to ask.
#[derive(Debug, Clone, Default)]
pub struct ConversationExecutor {
    /// The home whose `.gg/config.json` and credentials are used.
    pub home: PathBuf,
    /// `--session-dir`; else `GG_SESSION_DIR`, else `~/.gg/sessions`.
    pub session_dir: Option<PathBuf>,
    /// The daemon's `--model`, `--api-key`, `--base-url`.
    pub overrides: Overrides,
    pub context_files: bool,
    pub skills: bool,
    /// The daemon's `--no-memory`.
    pub no_memory: bool,
}

impl ConversationExecutor {
    /// An executor with the default session root and no overrides.
    pub fn new(home: PathBuf) -> ConversationExecutor {
        ConversationExecutor {
            home,
            session_dir: None,
            overrides: Overrides::default(),
            context_files: true,
            skills: true,
            no_memory: false,
        }
    }

    async fn run(&self, job: &Job, session_name: String, cancel: CancellationToken) -> Execution {
        let mut session_path = String::new();
        let result = self
            .run_inner(job, session_name, &cancel, &mut session_path)
            .await;
        let (status, summary) = match result {
            Ok(text) => (RunStatus::Ok, text),
            Err(failure) => failure,
        };
        Execution {
            status,
            summary,
            session_path,
        }
    }

    async fn run_inner(
        &self,
        job: &Job,
        session_name: String,
        shutdown: &CancellationToken,
        session_path: &mut String,
    ) -> Result<String, (RunStatus, String)> {
        let error = |message: String| (RunStatus::Error, message);
        let cwd = std::fs::canonicalize(&job.workspace)
            .map_err(|e| error(format!("job directory {}: {e}", job.workspace)))?;
        let config = Config::load(&self.home).map_err(error)?;
        let mode = job
            .network
            .as_deref()
            .map(str::parse::<tools::network::NetworkMode>)
            .transpose()
            .map_err(error)?;
        let (network, _) =
            tools::network::session_policy(&config.network, mode, &job.allow_domains, &cwd)
                .map_err(|e| error(e.to_string()))?;
        // Fired from a command of a gg session (`gg job run`), the job is held to that session's
        // ceiling, as a nested gg is: it must not run looser than the session that started it.
        if let Some(ceiling) = tools::ceiling::Ceiling::from_env() {
            super::manage::within_ceiling(&ceiling, job.sandbox, job.auto_approve, network.mode)
                .map_err(error)?;
        }
        let sandbox = SandboxSetting::with_network(job.sandbox, network);
        let root = crate::app::session_root(self.session_dir.as_deref())
            .map_err(|e| error(e.to_string()))?;
        let dir = paths::project_dir(&root, &cwd).map_err(|e| error(e.to_string()))?;
        let mut session =
            Session::create(&dir, &cwd.display().to_string()).map_err(|e| error(e.to_string()))?;
        *session_path = session.path().display().to_string();
        session
            .set_name(&session_name)
            .map_err(|e| error(e.to_string()))?;
        let options = ServiceOptions {
            cwd,
            home: self.home.clone(),
            config,
            overrides: self.overrides.clone(),
            mode: Mode::Unattended {
                allow_all: job.auto_approve,
            },
            terminal: Terminal::Absent,
            // The policy table never asks in unattended mode; should it ever, nobody answers.
            approver: Arc::new(NobodyToAsk),
            sandbox,
            context_files: self.context_files,
            skills: self.skills,
            no_memory: self.no_memory,
            // MCP servers are not started for a job: their tools would need the daemon's
            // connections, and a job should not spawn servers on its own.
            external_tools: Vec::new(),
            early_tools: None,
        };
        let mut conversation = Conversation::open(options, session).map_err(error)?;
        if conversation.selection().api_key.is_empty() {
            return Err(error(crate::app::config::MISSING_API_KEY.to_string()));
        }
        let prompt = unattended_prompt(job);
        let turn_cancel = shutdown.child_token();
        let sink = |_event: AgentEvent| {};
        let timed_out = {
            let submit = conversation.submit(&prompt, &sink, &turn_cancel);
            tokio::pin!(submit);
            tokio::select! {
                result = &mut submit => Err(result),
                () = tokio::time::sleep(job.timeout()) => {
                    // Cancel and let the turn record its cancellation in the session.
                    turn_cancel.cancel();
                    Ok(submit.await)
                }
            }
        };
        match timed_out {
            Err(Ok(Submitted::Turn(outcome))) => Ok(outcome.final_text),
            Err(Ok(Submitted::Control(text))) => Ok(text),
            Err(Err(TurnError::Canceled)) => Err((
                RunStatus::Interrupted,
                "interrupted: the scheduler stopped during the run".to_string(),
            )),
            Err(Err(e)) => Err(error(e.to_string())),
            Ok(_) => Err((
                RunStatus::Timeout,
                format!(
                    "timeout: the run exceeded {}",
                    super::schedule::format_duration(job.timeout())
                ),
            )),
        }
    }
}

impl JobExecutor for ConversationExecutor {
    fn execute<'a>(
        &'a self,
        job: &'a Job,
        session_name: String,
        cancel: CancellationToken,
    ) -> ExecutionFuture<'a> {
        Box::pin(self.run(job, session_name, cancel))
    }
}

/// The job's prompt behind a notice that says when it fired and that nobody is watching.
pub fn unattended_prompt(job: &Job) -> String {
    let now = jiff::Timestamp::now();
    let local = super::schedule::time_zone(&job.timezone)
        .map(|tz| now.to_zoned(tz).strftime("%Y-%m-%d %H:%M %Z").to_string())
        .unwrap_or_else(|_| now.to_string());
    format!(
        "[Scheduled job \"{}\" fired at {local} ({}). It runs unattended: nobody can answer approval \
         prompts, so only tools the policy permits will execute and dangerous commands are denied. \
         Finish with a concise summary of what you did.]\n\n{}",
        job.name, job.timezone, job.prompt
    )
}
