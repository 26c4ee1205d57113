//! The browser tools (`tools::browser`) as the chain sees them: each call is described with its
//! class by `BrowserTools::describe` and runs only once the gate approved it. Page-controlled
//! text (titles, page text, eval results) is wrapped as untrusted content here.

use std::path::PathBuf;
use std::sync::Arc;

use crate::agent::chain::{Assessment, Proposal, ProposeError, Tool};
use crate::agent::untrusted;
use tools::browser::{BrowserTools, spec};
use tools::registry::Outcome;

/// The enabled browser tools of one session, sharing one browser.
pub fn tools(shared: BrowserTools) -> Vec<Arc<dyn Tool>> {
    let shared = Arc::new(shared);
    shared
        .tool_names()
        .into_iter()
        .filter_map(spec)
        .map(|(name, description, parameters)| {
            Arc::new(BrowserTool {
                name,
                description,
                parameters,
                shared: Arc::clone(&shared),
            }) as Arc<dyn Tool>
        })
        .collect()
}

struct BrowserTool {
    name: &'static str,
    description: &'static str,
    parameters: serde_json::Value,
    shared: Arc<BrowserTools>,
}

impl Tool for BrowserTool {
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
        let assessment = Assessment::from_class(call.class, call.rule.clone(), call.reason.clone());
        let summary = call.summary.clone();
        let details = call.details.clone();
        let grant_key = call.grant_key.clone();
        let shared = Arc::clone(&self.shared);
        Ok(Proposal::tool(
            assessment,
            summary,
            details,
            grant_key,
            move |cancel| {
                Box::pin(async move {
                    match shared.execute(&call, &cancel).await {
                        Ok(done) => {
                            let mut text = done.text;
                            if let Some((source, label, page)) = &done.page_text {
                                text.push('\n');
                                if !label.is_empty() {
                                    text.push_str(label);
                                    text.push('\n');
                                }
                                text.push_str(&untrusted::wrap(source, page));
                            }
                            Outcome {
                                text,
                                network_mode: Some(done.network),
                                network_refused: done.refused,
                                image: done.record.screenshot.as_ref().map(PathBuf::from),
                                browser: Some(done.record),
                                ..Outcome::default()
                            }
                        }
                        // A page's exception text is page content: inside the wrapper.
                        Err(e) => {
                            let e = e.to_string();
                            match e.split_once(tools::browser::PAGE_THREW) {
                                Some((before, page)) => Outcome::error(format!(
                                    "{before}the page threw an exception:\n{}",
                                    untrusted::wrap("page exception", page)
                                )),
                                None => Outcome::error(e),
                            }
                        }
                    }
                })
            },
        ))
    }
}
