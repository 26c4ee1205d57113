//! The computer tools (`tools::computer`) as the chain sees them: each call is described with
//! its class from `ComputerTools::describe`, and runs only once the gate approved it.

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tools::computer::{ComputerCall, ComputerTools, SessionTag, specs};
use tools::registry::Outcome;

use super::family::{self, Described, Family};
use crate::agent::chain::{Assessment, ProposeError, Tool};

/// The seven tools for one session, sharing its state. `tag` is the one the session's commands
/// carry ([`crate::agent::chain::ToolBox::session_tag`]).
pub fn tools(cwd: &Path, tag: SessionTag) -> Vec<Arc<dyn Tool>> {
    family::tools(Arc::new(ComputerTools::new(cwd, tag)), specs())
}

impl Family for ComputerTools {
    type Call = ComputerCall;

    fn assess(
        &self,
        name: &'static str,
        arguments: &str,
    ) -> Result<Described<ComputerCall>, ProposeError> {
        let call = self.describe(name, arguments)?;
        let assessment =
            Assessment::from_class(call.class, format!("computer.{name}"), call.reason.clone());
        // A session grant of `clipboard_read` covers later reads; anything else is granted for
        // its exact arguments only.
        let grant_key = match name {
            "clipboard_read" => "clipboard_read".to_string(),
            name => format!("{name}\0{arguments}"),
        };
        let details = if call.details.is_empty() {
            call.reason.clone()
        } else {
            call.details.clone()
        };
        Ok(Described {
            assessment,
            summary: call.summary.clone(),
            details,
            grant_key,
            call,
        })
    }

    async fn run(self: Arc<Self>, call: ComputerCall, cancel: CancellationToken) -> Outcome {
        match self.execute(&call, &cancel).await {
            Ok(text) => Outcome::text(text),
            Err(e) => Outcome::error(e.to_string()),
        }
    }
}
