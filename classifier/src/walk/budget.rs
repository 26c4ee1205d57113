//! The walk's work budget: how much one classification may do, what happens when it runs out
//! (a `parse.too-complex` reason and the linear raw-text scan of the whole input), and the
//! limits that keep that scan linear. Apart because it bounds every other part of the walk.

use super::Walker;
use crate::ids::RuleId;
use crate::{Class, Span};

/// The rule id of a classification whose work budget ran out.
const TOO_COMPLEX: RuleId = RuleId::ParseTooComplex;

/// How much work one classification may do. Re-parsing (`eval`, `bash -c`, substitutions inside
/// those) can multiply work far beyond the input's size; without a bound a 1 KiB command took
/// 28 s (found by fuzzing). The bounds are generous multiples of the input, so ordinary scripts
/// never reach them.
pub(super) struct Budget {
    reparsed_bytes: usize,
    max_reparsed_bytes: usize,
    pub(super) steps: usize,
    max_steps: usize,
    pub(super) exhausted: bool,
    /// Set while the last-resort scan of the whole input runs: rules still run on each piece,
    /// but nothing re-parses or speculates, and payloads unwrap only a few levels, so the scan
    /// stays linear.
    pub(super) final_scan: bool,
    payload_depth: usize,
}

impl Budget {
    pub(super) fn for_input(len: usize) -> Budget {
        Budget {
            reparsed_bytes: 0,
            max_reparsed_bytes: (256 * 1024).max(len.saturating_mul(8)),
            steps: 0,
            max_steps: 200_000usize.max(len.saturating_mul(64)),
            exhausted: false,
            final_scan: false,
            payload_depth: 0,
        }
    }
}

impl Walker<'_> {
    /// Charges work against the budget. The first time it runs out, the verdict becomes at
    /// least normal (`parse.too-complex`) and the whole input gets the linear raw-text scan, so a
    /// dangerous command placed after a complexity bomb is still found; from then on the walk
    /// does nothing more. Returns whether the caller may go on.
    pub(crate) fn spend(&mut self, reparsed_bytes: usize, steps: usize, span: Span) -> bool {
        if self.budget.final_scan {
            // Rules on the scan's pieces run; re-parsing never does (see `reparse`).
            return reparsed_bytes == 0;
        }
        if self.budget.exhausted {
            return false;
        }
        self.budget.reparsed_bytes = self.budget.reparsed_bytes.saturating_add(reparsed_bytes);
        self.budget.steps = self.budget.steps.saturating_add(steps);
        if self.budget.reparsed_bytes <= self.budget.max_reparsed_bytes
            && self.budget.steps <= self.budget.max_steps
        {
            return true;
        }
        self.budget.exhausted = true;
        self.reason(
            Class::Normal,
            TOO_COMPLEX,
            "command text too complex to inspect completely",
            span,
        );
        let whole = self.prepared.text.clone();
        let saved_span = self.fixed_span.take();
        let whole_span = self.map_span(0, whole.len());
        let saved_src = std::mem::replace(&mut self.src, whole.clone());
        self.budget.final_scan = true;
        crate::fallback::scan(self, &whole, whole_span);
        self.budget.final_scan = false;
        self.src = saved_src;
        self.fixed_span = saved_span;
        false
    }

    /// Spends the rest of the budget: for work known to be too much before it is done (a
    /// grammar's tree nested too deeply to evaluate), with what running out always gives.
    pub(crate) fn exhaust(&mut self, span: Span) {
        if !self.budget.final_scan {
            self.spend(0, usize::MAX, span);
        }
    }

    /// Runs `trial` and keeps only the dangerous reasons it produced (each message noted with
    /// `note`), plus a `parse.too-complex` reason should the budget run out inside it: the
    /// verdict must show that, too. Its commands, `cd`s and assignments are dropped.
    pub(crate) fn keep_dangerous(&mut self, note: &str, trial: impl FnOnce(&mut Walker)) {
        let (reasons, commands) = (self.reasons.len(), self.commands.len());
        let state = (self.cwds.clone(), self.vars.clone());
        trial(self);
        self.commands.truncate(commands);
        let mut kept: Vec<_> = self
            .reasons
            .drain(reasons..)
            .filter(|r| r.class == Class::Dangerous || r.rule == TOO_COMPLEX.as_str())
            .collect();
        for r in kept.iter_mut().filter(|r| r.class == Class::Dangerous) {
            r.message = format!("{} ({note})", r.message);
        }
        self.reasons.extend(kept);
        (self.cwds, self.vars) = state;
    }

    /// Whether the last-resort scan is running (speculation is skipped during it).
    pub(crate) fn in_final_scan(&self) -> bool {
        self.budget.final_scan
    }

    /// Enters one payload level during the last-resort scan; `false` past the limit.
    pub(crate) fn enter_payload(&mut self) -> bool {
        if !self.budget.final_scan {
            return true;
        }
        if self.budget.payload_depth >= 3 {
            return false;
        }
        self.budget.payload_depth += 1;
        true
    }

    pub(crate) fn leave_payload(&mut self) {
        if self.budget.final_scan {
            self.budget.payload_depth = self.budget.payload_depth.saturating_sub(1);
        }
    }

    /// Only the raw-text scan for dangerous patterns, without parsing (over-large input).
    pub(crate) fn scan_only(&mut self) {
        self.distrust_tree();
    }

    /// The tree cannot be trusted (nested beyond the depth limit): the whole input gets the
    /// raw-text scan for dangerous patterns, once.
    pub(super) fn distrust_tree(&mut self) {
        if self.distrusted {
            return;
        }
        self.distrusted = true;
        let whole = self.prepared.text.clone();
        let saved_span = self.fixed_span.take();
        let whole_span = self.map_span(0, whole.len());
        let saved_src = std::mem::replace(&mut self.src, whole.clone());
        let saved_scan = self.budget.final_scan;
        self.budget.final_scan = true;
        self.keep_dangerous("in text nested too deeply to parse reliably", |w| {
            crate::fallback::scan(w, &whole, whole_span);
        });
        self.budget.final_scan = saved_scan;
        self.src = saved_src;
        self.fixed_span = saved_span;
    }
}
