//! The built-in tools (`read`, `list`, `grep`, `bash`, `edit`, `write`) as [`Tool`]s of the
//! chain: each reads its arguments, assesses the call and binds what it would do. The work itself
//! is in `tools::files` and `tools::bash`.

use std::sync::Arc;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::chain::{Assessment, Proposal, RunFuture, Tool};
use crate::tools::files::{self, ToolResult};
use crate::tools::paths::Workspace;
use crate::tools::registry::{self, Outcome, ToolSpec};

/// The built-in tools for one working directory, in the order the model sees them.
pub fn tools(workspace: &Arc<Workspace>) -> Vec<Arc<dyn Tool>> {
    registry::builtin_specs()
        .into_iter()
        .map(|spec| -> Arc<dyn Tool> {
            match spec.name {
                "bash" => Arc::new(Bash { spec }),
                "write" | "edit" => Arc::new(FileWrite {
                    spec,
                    workspace: Arc::clone(workspace),
                }),
                _ => Arc::new(FileRead {
                    spec,
                    workspace: Arc::clone(workspace),
                }),
            }
        })
        .collect()
}

/// File tools do blocking I/O: they run on the blocking pool, so parallel-safe calls really run
/// in parallel and never stall the runtime's workers.
fn blocking<F>(work: F) -> RunFuture
where
    F: FnOnce() -> ToolResult + Send + 'static,
{
    Box::pin(async move {
        match tokio::task::spawn_blocking(work).await {
            Ok(result) => Outcome::from_result(result),
            // Re-raise so the runner reports `tool "X" panicked: …` like any other panic.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Outcome::error(format!("tool did not finish: {e}")),
        }
    })
}

/// `bash`: the chain classifies, decides and sandboxes the script.
struct Bash {
    spec: ToolSpec,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BashArgs {
    command: String,
    /// Seconds.
    timeout: Option<f64>,
}

impl Tool for Bash {
    fn name(&self) -> &str {
        self.spec.name
    }

    fn description(&self) -> &str {
        self.spec.description
    }

    fn parameters(&self) -> serde_json::Value {
        self.spec.parameters.clone()
    }

    fn propose(&self, arguments: &str) -> Result<Proposal, String> {
        let args: BashArgs =
            serde_json::from_str(arguments).map_err(|e| format!("invalid arguments: {e}"))?;
        let timeout = registry::bash_timeout(args.timeout)?;
        Ok(Proposal::command(args.command, timeout))
    }
}

/// `read`, `list`, `grep`: read-only, confined to the working directory.
struct FileRead {
    spec: ToolSpec,
    workspace: Arc<Workspace>,
}

impl Tool for FileRead {
    fn name(&self) -> &str {
        self.spec.name
    }

    fn description(&self) -> &str {
        self.spec.description
    }

    fn parameters(&self) -> serde_json::Value {
        self.spec.parameters.clone()
    }

    fn parallel_safe(&self) -> bool {
        matches!(self.spec.name, "read" | "grep")
    }

    fn propose(&self, arguments: &str) -> Result<Proposal, String> {
        let name = self.spec.name;
        let summary = format!("{name} {}", registry::truncate(arguments, 120));
        let workspace = Arc::clone(&self.workspace);
        let args = arguments.to_string();
        Ok(Proposal::tool(
            Assessment::ReadOnly,
            summary,
            String::new(),
            String::new(),
            move |_cancel: CancellationToken| {
                blocking(move || match name {
                    "read" => files::read(&workspace, &args),
                    "list" => files::list(&workspace, &args),
                    _ => files::grep(&workspace, &args),
                })
            },
        ))
    }
}

/// `write` and `edit`: gated, except inside the agent area.
struct FileWrite {
    spec: ToolSpec,
    workspace: Arc<Workspace>,
}

impl Tool for FileWrite {
    fn name(&self) -> &str {
        self.spec.name
    }

    fn description(&self) -> &str {
        self.spec.description
    }

    fn parameters(&self) -> serde_json::Value {
        self.spec.parameters.clone()
    }

    fn propose(&self, arguments: &str) -> Result<Proposal, String> {
        let name = self.spec.name;
        let ws = &self.workspace;
        let target = files::target_path(ws, arguments).map_err(|e| e.0)?;
        let (before, after) = if name == "edit" {
            let plan = files::plan_edit(ws, arguments).map_err(|e| e.0)?;
            (plan.before, plan.after)
        } else {
            #[derive(Deserialize)]
            struct Content {
                content: String,
            }
            let c: Content =
                serde_json::from_str(arguments).map_err(|e| format!("invalid arguments: {e}"))?;
            let before = files::read_existing(ws, &target).unwrap_or_default();
            (before, c.content)
        };
        let details = crate::tools::diff::unified(target.shown(), &before, &after);
        let summary = format!("{name} {}", target.shown());
        let assessment = match files::agent_area_reason(ws, target.relative()) {
            Some(reason) => Assessment::PreApproved { reason },
            None => Assessment::Normal,
        };
        let grant_key = format!("{name}\0{arguments}");
        let workspace = Arc::clone(ws);
        let args = arguments.to_string();
        Ok(Proposal::tool(
            assessment,
            summary,
            details,
            grant_key,
            move |_cancel: CancellationToken| {
                blocking(move || match name {
                    "write" => files::write(&workspace, &args),
                    _ => files::edit(&workspace, &args),
                })
            },
        ))
    }
}
