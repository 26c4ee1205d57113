//! What a person sees when a tool call ends: its output folded to its first and last lines,
//! then one status line (exit status, duration, sandbox level, output size). In the interactive
//! mode the whole output is one `/output` away; `gg -p` on a terminal shows the same lines without
//! that hint. An output too long for the model names the log it was saved to.

use std::time::Instant;

/// Lines shown from each end of a long output.
const FOLD_EDGE: usize = 2;
/// A shown line is cut at this many characters.
const LINE_MAX: usize = 160;

const TRUNCATED: &str = "... output truncated: omitted ";
const SAVED: &str = "Full output saved to: ";

/// Where the lines a fold hides can be seen, if anywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfold {
    /// The interactive mode: `/output` prints the last call's whole output.
    OutputCommand,
    /// `gg -p`: nothing to type; the fold only says how much it hides.
    Nowhere,
}

/// The folded output and the status line, terminal-safe, each line ending in `\n`.
pub fn render(
    name: &str,
    is_error: bool,
    text: &str,
    sandbox_level: Option<&str>,
    ran: Option<(Instant, Instant)>,
    unfold: Unfold,
) -> String {
    let mut body: Vec<&str> = text.lines().collect();
    let mut saved = None;
    let mut size = text.len() as u64;
    // bash's own header of a long output: its full size and where it was saved.
    if body.first().is_some_and(|l| l.starts_with(TRUNCATED)) {
        size = full_size(body[0]).unwrap_or(size);
        body.remove(0);
        if body.first().is_some_and(|l| l.starts_with(SAVED)) {
            saved = body.first().and_then(|l| l.strip_prefix(SAVED));
            body.remove(0);
        } else if body
            .first()
            .is_some_and(|l| l.starts_with("Full output could not be saved"))
        {
            body.remove(0);
        }
    }
    let status = if name == "bash" {
        match body.last().copied().and_then(ending) {
            Some(end) => {
                body.pop();
                end
            }
            None if is_error => "error".to_string(),
            None => "exit 0".to_string(),
        }
    } else if is_error {
        "error".to_string()
    } else {
        "ok".to_string()
    };
    let mut out = String::new();
    let hidden = body.len().saturating_sub(2 * FOLD_EDGE + 1);
    for (index, line) in body.iter().enumerate() {
        if hidden > 0 && index == FOLD_EDGE {
            let hint = match unfold {
                Unfold::OutputCommand => " (/output shows all)",
                Unfold::Nowhere => "",
            };
            out.push_str(&format!("  │ … {hidden} more lines{hint}\n"));
        }
        if hidden > 0 && index >= FOLD_EDGE && index < FOLD_EDGE + hidden {
            continue;
        }
        let line = tools::registry::truncate_chars(line, LINE_MAX);
        out.push_str(&format!("  │ {}\n", crate::display::visible_inline(&line)));
    }
    let mut parts = vec![format!("{} {status}", crate::display::visible_inline(name))];
    if let Some((start, end)) = ran {
        parts.push(tools::duration::compact(end.duration_since(start)));
    }
    if name == "bash" {
        parts.push(format!("sandbox {}", sandbox_level.unwrap_or("off")));
    }
    parts.push(bytes(size));
    out.push_str(&format!("  └ {}\n", parts.join(" · ")));
    if let Some(path) = saved {
        out.push_str(&format!(
            "    full output: {}\n",
            crate::display::visible_inline(path)
        ));
    }
    out
}

/// bash's last line when the command did not exit 0.
fn ending(line: &str) -> Option<String> {
    if let Some(code) = line.strip_prefix("exit code ") {
        return Some(format!("exit {code}"));
    }
    [
        "killed by signal",
        "command timed out after",
        "command canceled",
    ]
    .iter()
    .any(|p| line.starts_with(p))
    .then(|| line.to_string())
}

/// `... output truncated: omitted X bytes; showing last Y bytes ...` → X + Y.
fn full_size(header: &str) -> Option<u64> {
    let rest = header.strip_prefix(TRUNCATED)?;
    let (omitted, rest) = rest.split_once(" bytes; showing last ")?;
    let (shown, _) = rest.split_once(" bytes")?;
    Some(omitted.parse::<u64>().ok()? + shown.parse::<u64>().ok()?)
}

fn bytes(n: u64) -> String {
    match n {
        n if n < 1024 => format!("{n} B"),
        n if n < 1024 * 1024 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_output_is_shown_whole_with_its_status() {
        let out = render(
            "bash",
            false,
            "one\ntwo\n",
            Some("bwrap"),
            None,
            Unfold::OutputCommand,
        );
        assert_eq!(
            out,
            "  │ one\n  │ two\n  └ bash exit 0 · sandbox bwrap · 8 B\n"
        );
    }

    #[test]
    fn a_long_output_is_folded_and_names_its_log() {
        let lines: Vec<String> = (1..=20).map(|i| format!("line {i}")).collect();
        let text = format!(
            "... output truncated: omitted 5000 bytes; showing last 120 bytes ...\n\
             Full output saved to: /w/.gg/outputs/x.log\n{}\nexit code 2",
            lines.join("\n")
        );
        let out = render("bash", true, &text, None, None, Unfold::OutputCommand);
        assert!(
            out.starts_with("  │ line 1\n  │ line 2\n  │ … 15 more lines"),
            "{out}"
        );
        assert!(
            out.contains("  │ line 20\n  └ bash exit 2 · sandbox off · 5.0 KiB\n"),
            "{out}"
        );
        assert!(
            out.ends_with("    full output: /w/.gg/outputs/x.log\n"),
            "{out}"
        );
    }

    #[test]
    fn the_model_cannot_write_escapes_through_a_tool_output() {
        let out = render(
            "read",
            false,
            "\x1b[2Jhi",
            None,
            None,
            Unfold::OutputCommand,
        );
        assert!(!out.contains('\x1b'), "{out:?}");
        assert!(out.contains("read ok"), "{out}");
    }
}
