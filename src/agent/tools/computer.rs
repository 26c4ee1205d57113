//! The computer tools (`tools::computer`) as the chain sees them: each call is described with
//! its class from `ComputerTools::describe`, and runs only once the gate approved it.

use std::path::Path;
use std::sync::Arc;

use crate::agent::chain::{Assessment, Proposal, ProposeError, Tool};
use tools::computer::{ComputerTools, SessionTag, specs};
use tools::registry::Outcome;

/// The seven tools for one session, sharing its state. `tag` is the one the session's commands
/// carry ([`crate::agent::chain::ToolBox::session_tag`]).
pub fn tools(cwd: &Path, tag: SessionTag) -> Vec<Arc<dyn Tool>> {
    let shared = Arc::new(ComputerTools::new(cwd, tag));
    specs()
        .into_iter()
        .map(|(name, description, parameters)| {
            Arc::new(ComputerTool {
                name,
                description,
                parameters,
                shared: Arc::clone(&shared),
            }) as Arc<dyn Tool>
        })
        .collect()
}

/// One computer tool as the chain sees it.
struct ComputerTool {
    name: &'static str,
    description: &'static str,
    parameters: serde_json::Value,
    shared: Arc<ComputerTools>,
}

impl Tool for ComputerTool {
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        self.description
    }

    fn parameters(&self) -> serde_json::Value {
        self.parameters.clone()
    }

    fn propose(&self, arguments: &str) -> Result<Proposal, ProposeError> {
        let call = self.shared.describe(self.name, arguments)?;
        let assessment = Assessment::from_class(
            call.class,
            format!("computer.{}", self.name),
            call.reason.clone(),
        );
        // A session grant of `clipboard_read` covers later reads; anything else is granted for
        // its exact arguments only.
        let grant_key = match self.name {
            "clipboard_read" => "clipboard_read".to_string(),
            name => format!("{name}\0{arguments}"),
        };
        let details = if call.details.is_empty() {
            call.reason.clone()
        } else {
            call.details.clone()
        };
        let summary = call.summary.clone();
        let shared = Arc::clone(&self.shared);
        Ok(Proposal::tool(
            assessment,
            summary,
            details,
            grant_key,
            move |cancel| {
                Box::pin(async move {
                    match shared.execute(&call, &cancel).await {
                        Ok(text) => Outcome::text(text),
                        Err(e) => Outcome::error(e.to_string()),
                    }
                })
            },
        ))
    }
}
