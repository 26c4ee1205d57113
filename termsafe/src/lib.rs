//! Text from the model or a tool, made safe to show a person on a terminal.
//!
//! A terminal obeys what it prints: `ESC[1A ESC[2K` erases the line above, `\r` returns to the
//! start of the line so what follows overwrites it, and bidi overrides reorder what is shown.
//! Content the model controls could so make an approval prompt show something other than what
//! will run. Every path that shows such content to a person — the approval prompt, diffs,
//! commands, streamed text, tool output, `gg audit`, `gg sessions list`, ggd's terminal log —
//! passes it through [`visible`] (or [`visible_inline`] for one-line fields), which writes each
//! such character as an escape a person can read (`\x1b`, `\r`, `\u{202e}`) instead. gg's own
//! colouring is added after this, so it is the only control sequence that reaches the terminal.
//!
//! A crate of its own with no dependencies, so every layer that prints — the provider crate's
//! error messages as much as gg's terminal and ggd's log — uses this one definition.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` would act on a terminal instead of being shown: C0 controls except `\n` and
/// `\t`, DEL, C1 controls, and the bidi embedding/override/isolate characters.
pub fn is_control(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Whether `text` holds a character that [`visible`] rewrites.
pub fn has_controls(text: &str) -> bool {
    text.chars().any(is_control)
}

/// `text` with every terminal control character written as a visible escape; `\n` and `\t` stay.
pub fn visible(text: &str) -> Cow<'_, str> {
    escape(text, is_control)
}

/// Like [`visible`], but `\n` and `\t` are escaped too: for fields shown on one line (a table
/// cell, a one-line summary), where a line break would forge the next row.
pub fn visible_inline(text: &str) -> Cow<'_, str> {
    escape(text, |c| is_control(c) || c == '\n' || c == '\t')
}

/// An approval reason with a warning added when the call's summary or details (the command, the
/// diff) hold control characters: they are shown escaped, and the person should know why.
pub fn flag_controls(reason: &str, shown: &[&str]) -> String {
    if !shown.iter().any(|s| has_controls(s)) {
        return reason.to_string();
    }
    let note = "contains terminal control characters (shown escaped, e.g. \\x1b, \\r)";
    if reason.is_empty() {
        note.to_string()
    } else {
        format!("{reason}; {note}")
    }
}

fn escape(text: &str, hit: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&hit) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !hit(c) {
            out.push(c);
            continue;
        }
        let _ = match c {
            '\r' => write!(out, "\\r"),
            '\n' => write!(out, "\\n"),
            '\t' => write!(out, "\\t"),
            c if (c as u32) < 0x80 => write!(out, "\\x{:02x}", c as u32),
            c => write!(out, "\\u{{{:x}}}", c as u32),
        };
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_become_readable_escapes() {
        assert_eq!(visible("a\x1b[1A\x1b[2Kb"), "a\\x1b[1A\\x1b[2Kb");
        assert_eq!(visible("rm -rf ~\r# ls"), "rm -rf ~\\r# ls");
        assert_eq!(visible("x\u{7f}\u{85}\u{9b}y"), "x\\x7f\\u{85}\\u{9b}y");
        assert_eq!(
            visible("a\u{202e}b\u{2066}c\u{2069}"),
            "a\\u{202e}b\\u{2066}c\\u{2069}"
        );
        assert_eq!(visible("\0\x07\x08\x0b\x0c"), "\\x00\\x07\\x08\\x0b\\x0c");
    }

    #[test]
    fn ordinary_text_is_untouched_and_borrowed() {
        for text in [
            "plain",
            "two\nlines\tand tab",
            "ünïcødé — 日本語 🙂",
            "\u{200f}",
            "",
        ] {
            assert!(
                matches!(visible(text), Cow::Borrowed(t) if t == text),
                "{text:?}"
            );
            assert!(!has_controls(text));
        }
    }

    #[test]
    fn reasons_flag_controls() {
        assert_eq!(flag_controls("r", &["ls", "diff"]), "r");
        let flagged = flag_controls("r", &["ls\r# x", ""]);
        assert!(
            flagged.starts_with("r; contains terminal control characters"),
            "{flagged}"
        );
        assert!(flag_controls("", &["\u{202e}"]).starts_with("contains"));
    }

    #[test]
    fn inline_escapes_line_breaks_too() {
        assert_eq!(visible_inline("a\nb\tc\x1b"), "a\\nb\\tc\\x1b");
    }

    #[test]
    fn every_char_in_the_ranges_is_caught_and_nothing_else_below_0x3000() {
        for u in 0..0x3000u32 {
            let Some(c) = char::from_u32(u) else { continue };
            let expected = (u < 0x20 && u != 0x0a && u != 0x09)
                || (0x7f..=0x9f).contains(&u)
                || (0x202a..=0x202e).contains(&u)
                || (0x2066..=0x2069).contains(&u);
            assert_eq!(is_control(c), expected, "U+{u:04X}");
            let shown = visible(&c.to_string()).into_owned();
            assert!(!shown.chars().any(is_control), "U+{u:04X}");
        }
    }
}
