//! The one chain adapter of the tool families whose tools share one state and describe their own
//! calls: the browser (one Chromium per session) and the computer (one desktop session). Such a
//! family only says how a described call is assessed and how an approved one runs
//! ([`Family`]); presenting each of its tools to the chain is the same for all of them, and is
//! here once.

use std::future::Future;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tools::registry::Outcome;

use crate::agent::chain::{Assessment, Proposal, ProposeError, Tool};

/// A family of tools sharing one state, as the chain needs it.
pub trait Family: Send + Sync + 'static {
    /// A call as the family described it, with everything its run needs bound.
    type Call: Send + 'static;

    /// Reads the arguments of the family's tool `name` and describes the call with its
    /// assessment. Nothing may run or change here.
    fn assess(
        &self,
        name: &'static str,
        arguments: &str,
    ) -> Result<Described<Self::Call>, ProposeError>;

    /// Runs a call the gate approved.
    fn run(
        self: Arc<Self>,
        call: Self::Call,
        cancel: CancellationToken,
    ) -> impl Future<Output = Outcome> + Send;
}

/// A described call: what the chain shows and decides on, and the call that runs if approved.
pub struct Described<C> {
    pub assessment: Assessment,
    /// One line for lists and events.
    pub summary: String,
    /// What a person needs to decide.
    pub details: String,
    /// What a "yes, for this session" answer covers.
    pub grant_key: String,
    pub call: C,
}

/// The family's tools named by `specs` (name, description, JSON schema of the arguments), all
/// sharing `family`.
pub fn tools<F: Family>(
    family: Arc<F>,
    specs: impl IntoIterator<Item = (&'static str, &'static str, serde_json::Value)>,
) -> Vec<Arc<dyn Tool>> {
    specs
        .into_iter()
        .map(|(name, description, parameters)| {
            Arc::new(FamilyTool {
                name,
                description,
                parameters,
                family: Arc::clone(&family),
            }) as Arc<dyn Tool>
        })
        .collect()
}

/// One tool of a family as the chain sees it.
struct FamilyTool<F> {
    name: &'static str,
    description: &'static str,
    parameters: serde_json::Value,
    family: Arc<F>,
}

impl<F: Family> Tool for FamilyTool<F> {
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
        let described = self.family.assess(self.name, arguments)?;
        let family = Arc::clone(&self.family);
        Ok(Proposal::tool(
            described.assessment,
            described.summary,
            described.details,
            described.grant_key,
            move |cancel| Box::pin(family.run(described.call, cancel)),
        ))
    }
}
