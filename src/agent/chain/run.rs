//! Step 3 of the chain, running: an [`Approved`] call is consumed; a shell command goes to the
//! session's [`CommandRunner`](tools::bash::CommandRunner) (sandbox, scrubbed
//! environment), any other tool runs the action it bound when it described the call, so what
//! runs is exactly what was shown.

use tokio_util::sync::CancellationToken;

use super::call::{CANCELLED, Checked};
use super::{Approved, ToolBox};
use tools::registry::Outcome;

impl ToolBox {
    /// Step 3: runs an approved call. A shell command is wrapped in the sandbox (when on) with an
    /// explicit environment; any other tool runs the action it bound in step 1.
    pub async fn execute(&self, approved: Approved, cancel: &CancellationToken) -> Outcome {
        if cancel.is_cancelled() {
            return Outcome::error(CANCELLED);
        }
        let (prepared, decision) = approved.into_parts();
        let mode = tools::ceiling::mode_named(&decision.mode);
        match prepared.checked {
            Checked::Tool { run, .. } => run(cancel.clone()).await,
            Checked::Command {
                verdict,
                script,
                timeout,
                ..
            } => {
                self.commands
                    .run(&script, verdict.class, mode, timeout, cancel)
                    .await
            }
        }
    }
}
