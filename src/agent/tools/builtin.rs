//! The built-in file tools (`read`, `list`, `grep`, `edit`, `write`) as [`Tool`]s of the chain:
//! each reads its arguments, assesses the call and binds what it would do; the work itself is in
//! `tools::files`. `bash` is listed here in its place but is the chain's own tool
//! ([`CommandTool`], in `chain/classify.rs`, beside the classification of its commands).

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::agent::chain::{
    Assessment, CommandTool, Proposal, ProposeError, Reason, RunFuture, Tool, identity_from_spec,
};
use tools::files::{self, ToolResult};
use tools::paths::{Workspace, WriteTarget};
use tools::registry::{self, AGENT_AREA, Outcome, ToolSpec};

/// The built-in tools for one working directory, in the order the model sees them.
pub fn tools(workspace: &Arc<Workspace>) -> Vec<Arc<dyn Tool>> {
    registry::builtin_specs()
        .into_iter()
        .map(|spec| -> Arc<dyn Tool> {
            match spec.name {
                "bash" => Arc::new(CommandTool::new(spec)),
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

/// `read`, `list`, `grep`: read-only, confined to the working directory.
struct FileRead {
    spec: ToolSpec,
    workspace: Arc<Workspace>,
}

impl Tool for FileRead {
    identity_from_spec!();

    fn parallel_safe(&self) -> bool {
        matches!(self.spec.name, "read" | "grep")
    }

    fn may_send_data_out(&self) -> bool {
        // Confined to the working directory, and they reach no network.
        false
    }

    fn propose(&self, arguments: &str) -> Result<Proposal, ProposeError> {
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
    identity_from_spec!();

    fn may_send_data_out(&self) -> bool {
        // The resolved target is inside the working directory (`Workspace::resolve_write`).
        false
    }

    fn propose(&self, arguments: &str) -> Result<Proposal, ProposeError> {
        let name = self.spec.name;
        let ws = &self.workspace;
        let plan = if name == "edit" {
            files::plan_edit(ws, arguments)
        } else {
            files::plan_write(ws, arguments)
        }?;
        let shown = plan.target.shown().to_string();
        let details = tools::diff::unified(&shown, &plan.before, &plan.after);
        let summary = format!("{name} {shown}");
        let assessment = assess_write(&plan.target, ws.root());
        let grant_key = format!("{name}\0{arguments}");
        let workspace = Arc::clone(ws);
        Ok(Proposal::tool(
            assessment,
            summary,
            details,
            grant_key,
            move |_cancel: CancellationToken| blocking(move || files::commit(&workspace, plan)),
        ))
    }
}

/// A write is judged by where it really lands (symlinks resolved), from the one protected list
/// the sandbox binds: inside a protected entry (`.git/`, `.gg/`, shell and editor start-up files,
/// agent instructions at any depth), through a link that is one, where a protected link of the
/// project leads, or planting one that no name shows (a git directory under another name, the
/// home's configuration when gg runs in home), dangerous; inside the agent area
/// and reached without any symlink, pre-approved; anything else follows the approval mode.
fn assess_write(target: &WriteTarget, root: &Path) -> Assessment {
    let real = target.relative();
    let lands = if Path::new(target.shown()) == real {
        String::new()
    } else {
        format!(" (it resolves to {})", real.display())
    };
    let dangerous = |rule: String, why: &str| Assessment::Dangerous {
        reasons: vec![Reason {
            rule,
            message: format!("{}{lands} is {why}", target.shown()),
        }],
    };
    if let Some(entry) = sandbox::protected::protected_entry(&real) {
        return dangerous(format!("write.protected:{}", entry.name), entry.why);
    }
    // Asked of a protected name that is a link (`AGENTS.md -> docs/agents.md`): the write
    // changes what that name shows, whatever the file behind it is called.
    for hop in target.links_followed() {
        if let Some(entry) = sandbox::protected::protected_entry(hop) {
            let why = format!("written through {}: {}", hop.display(), entry.why);
            return dangerous(format!("write.protected:{}", entry.name), &why);
        }
    }
    // What a protected link of the project leads to is read as the link is, under another name.
    for linked in sandbox::protected::where_placeholders_lead(root) {
        if real.starts_with(&linked.leads_to) {
            let why = format!("where {} leads: {}", linked.link, linked.why);
            return dangerous(format!("write.protected:{}", linked.link), &why);
        }
    }
    let home = tools::security::home_dir();
    if let Some(why) = sandbox::protected::planted(root, &real, Some(&home)) {
        return dangerous("write.protected:planted".to_string(), &why);
    }
    let in_agent_area = real.starts_with(AGENT_AREA) && real != Path::new(AGENT_AREA);
    if in_agent_area && target.symlink_free() {
        return Assessment::PreApproved {
            reason: "agent area".to_string(),
        };
    }
    Assessment::Normal
}
