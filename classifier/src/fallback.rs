//! When the text does not parse cleanly, tree-sitter's error recovery may hide commands. This
//! rough scan splits the text on shell operators and runs the rules on each piece, keeping only
//! dangerous findings, so that a broken script carrying a dangerous pattern is still dangerous.

use crate::walk::{Cmd, Flow, Walker};
use crate::word::{Word, unescape_unquoted};
use crate::{Span, rules};

/// Longest text scanned; beyond it the parse-error reason alone keeps the verdict normal.
const MAX_SCAN: usize = 64 * 1024;

pub(crate) fn scan(w: &mut Walker, text: &str, span: Span) {
    if text.len() > MAX_SCAN {
        return;
    }
    w.keep_dangerous("seen in text that does not parse cleanly", |w| {
        for statement in text.split([';', '&', '\n', '(', ')', '{', '}', '`']) {
            let mut input = Flow::default();
            for stage in statement.split('|') {
                let argv: Vec<Word> = stage
                    .split_whitespace()
                    .map(|t| t.replace(['\'', '"'], ""))
                    .map(|t| unescape_unquoted(t.strip_prefix('$').unwrap_or(&t)))
                    .filter(|t| !t.is_empty())
                    .map(|t| Word::literal(&t, span))
                    .collect();
                if argv.is_empty() {
                    continue;
                }
                let cmd = Cmd {
                    argv,
                    assigns: Vec::new(),
                    redirects: Vec::new(),
                    input: input.clone(),
                    span,
                };
                let out = rules::run(w, cmd);
                input = Flow { fed: true, ..out };
            }
        }
    });
}
