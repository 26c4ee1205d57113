//! Approval policy: given who is asking and what the classifier said, allow, ask or deny, and
//! say why.
//!
//! Two parts, both pure (no I/O, no async):
//! - [`decision`]: the approval table (docs/security-model.md) as an explicit state machine;
//! - [`file`]: the policy-file format and its layering (builtin → user → project, where a
//!   project file may only tighten);
//! - [`web`]: where the browser tools may go (URL and address classes).
#![forbid(unsafe_code)]

pub mod decision;
pub mod file;
pub mod web;

// The tests of the public API (decision table, policy files, fuzz corpus): src/tests/.
#[cfg(test)]
mod tests;

pub use decision::{
    Call, Decision, Forbidden, Granted, Mode, Request, Rule, StartupError, Terminal, check_startup,
    decide,
};
pub use file::{
    BUILTIN_POLICY, EffectivePolicy, Layer, ParsedPolicy, PolicyError, PolicyRule, RuleKind,
    parse_policy,
};
