//! The browser tools (`tools::browser`) as the chain sees them: each call is described with its
//! class by `BrowserTools::describe` and runs only once the gate approved it. Page-controlled
//! text (titles, page text, eval results) is wrapped as untrusted content here.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tools::browser::{BrowserCall, BrowserTools, spec};
use tools::registry::Outcome;

use super::family::{self, Described, Family};
use crate::agent::chain::{Assessment, ProposeError, Tool};
use crate::agent::untrusted;

/// The enabled browser tools of one session, sharing one browser.
pub fn tools(shared: BrowserTools) -> Vec<Arc<dyn Tool>> {
    let specs: Vec<_> = shared.tool_names().into_iter().filter_map(spec).collect();
    family::tools(Arc::new(shared), specs)
}

impl Family for BrowserTools {
    type Call = BrowserCall;

    fn assess(
        &self,
        name: &'static str,
        arguments: &str,
    ) -> Result<Described<BrowserCall>, ProposeError> {
        let call = self.describe(name, arguments)?;
        Ok(Described {
            assessment: Assessment::from_class(call.class, call.rule.clone(), call.reason.clone()),
            summary: call.summary.clone(),
            details: call.details.clone(),
            grant_key: call.grant_key.clone(),
            call,
        })
    }

    async fn run(self: Arc<Self>, call: BrowserCall, cancel: CancellationToken) -> Outcome {
        match self.execute(&call, &cancel).await {
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
    }
}
