//! The security chain. Every tool call the model makes goes through this module, in this order:
//!
//! 1. **classify** ([`ToolBox::prepare`], `classify.rs`): the tool reads its arguments and describes the call
//!    ([`Tool::propose`]); a shell command is classified by the `classifier` crate and matched
//!    against the policy files' forbidden prefixes, every other tool assesses its own call
//!    ([`Assessment`]: read-only, pre-approved, normal or dangerous, with reasons). Nothing runs.
//! 2. **decide** ([`Gate::check`], `gate.rs`): the exhaustive table of `policies::decide` (mode × terminal ×
//!    call × session grant) answers allow, deny or ask; when it asks, a person answers. The only
//!    way to obtain an [`Approved`] call is this step: its fields are private to `gate.rs`.
//! 3. **wrap and run** ([`ToolBox::execute`], `run.rs`): an [`Approved`] call is consumed; a shell
//!    command goes to the session's [`CommandRunner`](tools::bash::CommandRunner), which
//!    wraps it in the sandbox with an explicit, scrubbed environment and runs it; any other tool
//!    runs the action it bound when it described the call, so what runs is exactly what was shown.
//!
//! Adding a tool means implementing [`Tool`]: it can describe calls, but it cannot run one
//! without an [`Approved`] call, and only [`Gate::check`] makes those.
//!
//! The states of a call live in `call.rs` ([`Prepared`], [`Denied`]) and the tool interface in
//! `tool.rs` ([`Tool`], [`Proposal`], [`Assessment`]); what can go wrong before the gate, typed, in
//! `error.rs` ([`ProposeError`], [`PrepareError`], [`ToolBoxError`]).

mod call;
mod classify;
mod error;
mod gate;
mod run;
mod tool;

pub use call::{CANCELLED, CallRecord, Denied, Prepared};
pub use classify::{CommandTool, ToolBox};
pub use error::{PrepareError, ProposeError, ToolBoxError};
pub use gate::{Approved, Gate, GateObserver};
pub(crate) use tool::identity_from_spec;
pub use tool::{Assessment, Proposal, Reason, RunFuture, Tool};
