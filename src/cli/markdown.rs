//! The model's markdown for a colour terminal, rendered as it streams: headings, `**bold**`,
//! `*emphasis*`, `` `code` ``, lists, quotes, and fenced code blocks with their language tag.
//!
//! Text is made terminal-safe ([`crate::display::visible`]) before it is read as markdown, so the
//! only escape sequences written are gg's own styles. A line's start is held back only until
//! its kind is known (a `#` may start a heading), so a reply still appears word by word; the
//! style is reset at the end of every line, so an unclosed marker cannot colour what follows.
//! Without colour the text is written as it came (markdown is readable as it is).

const RESET: &str = "\x1b[0m";
const BOLD_ON: &str = "\x1b[1m";
const BOLD_OFF: &str = "\x1b[22m";
const ITALIC_ON: &str = "\x1b[3m";
const ITALIC_OFF: &str = "\x1b[23m";
const CODE_ON: &str = "\x1b[36m";
const CODE_OFF: &str = "\x1b[39m";
const DIM: &str = "\x1b[2m";

/// How a line starts.
#[derive(Debug, PartialEq, Eq)]
enum Start {
    /// Not known yet: more characters are needed.
    Undecided,
    Heading {
        level: usize,
        skip: usize,
    },
    Bullet {
        indent: usize,
        skip: usize,
    },
    Quote {
        skip: usize,
    },
    /// A code fence: the whole line is needed (its language tag).
    Fence,
    Plain,
}

fn classify(head: &str, line_complete: bool) -> Start {
    let indent = head.len() - head.trim_start_matches(' ').len();
    let rest = &head[indent..];
    if rest.is_empty() {
        return if line_complete {
            Start::Plain
        } else {
            Start::Undecided
        };
    }
    if rest.starts_with("```") {
        return Start::Fence;
    }
    if "```".starts_with(rest) && !line_complete {
        return Start::Undecided;
    }
    let hashes = rest.len() - rest.trim_start_matches('#').len();
    if hashes > 0 && hashes <= 6 {
        return match rest[hashes..].chars().next() {
            Some(' ') => Start::Heading {
                level: hashes,
                skip: indent + hashes + 1,
            },
            None if !line_complete => Start::Undecided,
            _ => Start::Plain,
        };
    }
    for bullet in ["- ", "* ", "+ "] {
        if rest.starts_with(bullet) {
            return Start::Bullet {
                indent,
                skip: indent + 2,
            };
        }
        if rest.len() < 2 && bullet.starts_with(rest) && !line_complete {
            return Start::Undecided;
        }
    }
    if let Some(after) = rest.strip_prefix('>') {
        return Start::Quote {
            skip: indent + 1 + usize::from(after.starts_with(' ')),
        };
    }
    Start::Plain
}

/// The renderer of one reply.
#[derive(Default)]
pub struct Markdown {
    /// The current line's start, held until [`classify`] decides.
    head: String,
    decided: bool,
    in_fence: bool,
    heading: bool,
    bold: bool,
    italic: bool,
    code: bool,
    /// `*`s seen and not yet resolved (bold, emphasis or a literal star).
    stars: usize,
    /// The last character written on this line (an emphasis closes after a non-space).
    previous: Option<char>,
}

impl Markdown {
    /// Renders what is complete of `delta` (already terminal-safe text is not expected: this
    /// makes it safe itself).
    pub fn push(&mut self, delta: &str) -> String {
        let safe = crate::display::visible(delta);
        let mut out = String::new();
        for c in safe.chars() {
            if c == '\n' {
                self.end_line(&mut out);
                out.push('\n');
                continue;
            }
            if self.decided {
                self.inline(c, &mut out);
                continue;
            }
            self.head.push(c);
            self.decide(false, &mut out);
        }
        out
    }

    /// Whatever is held back, with the styles reset: the reply ended (or was cut off).
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        if !self.decided && !self.head.is_empty() {
            self.decide(true, &mut out);
        }
        self.flush_stars(None, &mut out);
        if self.bold || self.italic || self.code || self.heading {
            out.push_str(RESET);
        }
        self.reset_line();
        self.in_fence = false;
        out
    }

    fn decide(&mut self, line_complete: bool, out: &mut String) {
        if self.in_fence {
            let trimmed = self.head.trim_start();
            if trimmed.starts_with("```") {
                if line_complete {
                    out.push_str(DIM);
                    out.push_str("```");
                    out.push_str(RESET);
                    self.in_fence = false;
                    self.head.clear();
                    self.decided = true;
                }
                return;
            }
            if "```".starts_with(trimmed) && !line_complete {
                return;
            }
            out.push_str(CODE_ON);
            out.push_str(&self.head);
            self.head.clear();
            self.code = true;
            self.decided = true;
            return;
        }
        match classify(&self.head, line_complete) {
            Start::Undecided => {}
            Start::Fence if !line_complete => {}
            Start::Fence => {
                let language = self.head.trim_start().trim_start_matches('`').trim();
                out.push_str(DIM);
                out.push_str("```");
                out.push_str(RESET);
                if !language.is_empty() {
                    out.push_str(BOLD_ON);
                    out.push_str(language);
                    out.push_str(RESET);
                }
                self.in_fence = true;
                self.head.clear();
                self.decided = true;
            }
            start => {
                let head = std::mem::take(&mut self.head);
                let rest = match start {
                    Start::Heading { level, skip } => {
                        // The level stays visible: `##` headings under a `#` one.
                        out.push_str(if level == 1 { "\x1b[1;4m" } else { BOLD_ON });
                        self.heading = true;
                        head.get(skip..).unwrap_or("").to_string()
                    }
                    Start::Bullet { indent, skip } => {
                        out.push_str(&" ".repeat(indent));
                        out.push_str("• ");
                        head.get(skip..).unwrap_or("").to_string()
                    }
                    Start::Quote { skip } => {
                        out.push_str(DIM);
                        out.push_str("│ ");
                        out.push_str(RESET);
                        head.get(skip..).unwrap_or("").to_string()
                    }
                    _ => head,
                };
                self.decided = true;
                for c in rest.chars() {
                    self.inline(c, out);
                }
            }
        }
    }

    fn inline(&mut self, c: char, out: &mut String) {
        if self.in_fence {
            out.push(c);
            return;
        }
        if c == '*' && !self.code {
            self.stars += 1;
            return;
        }
        self.flush_stars(Some(c), out);
        if c == '`' {
            self.code = !self.code;
            out.push_str(if self.code { CODE_ON } else { CODE_OFF });
        } else {
            out.push(c);
        }
        self.previous = Some(c);
    }

    /// Resolves pending stars now that `next` follows them (`None`: the line ended).
    fn flush_stars(&mut self, next: Option<char>, out: &mut String) {
        let stars = std::mem::take(&mut self.stars);
        let after_word = self.previous.is_some_and(|p| !p.is_whitespace());
        let before_word = next.is_some_and(|n| !n.is_whitespace());
        match stars {
            0 => {}
            2 if self.bold && after_word => {
                self.bold = false;
                out.push_str(BOLD_OFF);
                if self.heading {
                    out.push_str(BOLD_ON);
                }
            }
            2 if !self.bold && before_word => {
                self.bold = true;
                out.push_str(BOLD_ON);
            }
            1 if self.italic && after_word => {
                self.italic = false;
                out.push_str(ITALIC_OFF);
            }
            1 if !self.italic && before_word => {
                self.italic = true;
                out.push_str(ITALIC_ON);
            }
            n => out.push_str(&"*".repeat(n)),
        }
    }

    fn end_line(&mut self, out: &mut String) {
        if !self.decided {
            self.decide(true, out);
        }
        if !self.decided && self.in_fence {
            // A fence line that is only the start of "```" was held to the end: it is code.
            out.push_str(&self.head);
        }
        self.flush_stars(None, out);
        if self.bold || self.italic || self.code || self.heading {
            out.push_str(RESET);
        }
        self.reset_line();
    }

    fn reset_line(&mut self) {
        self.head.clear();
        self.decided = false;
        self.heading = false;
        self.bold = false;
        self.italic = false;
        self.code = false;
        self.stars = 0;
        self.previous = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(chunks: &[&str]) -> String {
        let mut md = Markdown::default();
        let mut out: String = chunks.iter().map(|c| md.push(c)).collect();
        out.push_str(&md.finish());
        out
    }

    /// The text with gg's styles taken out.
    fn unstyled(text: &str) -> String {
        let mut out = String::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for c in chars.by_ref() {
                    if c == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn headings_emphasis_lists_and_code_are_styled() {
        let out = render(&[
            "# Ti",
            "tle\nSome **bo",
            "ld** and *it* and `co",
            "de`.\n- one\n",
        ]);
        assert!(out.contains("\x1b[1;4mTitle\x1b[0m\n"), "{out:?}");
        assert!(out.contains("\x1b[1mbold\x1b[22m"), "{out:?}");
        assert!(out.contains("\x1b[3mit\x1b[23m"), "{out:?}");
        assert!(out.contains("\x1b[36mcode\x1b[39m"), "{out:?}");
        assert_eq!(unstyled(&out), "Title\nSome bold and it and code.\n• one\n");
    }

    #[test]
    fn a_code_block_shows_its_language_and_keeps_its_text() {
        let out = render(&["```ru", "st\nlet x = a * b;\n", "```\nafter\n"]);
        assert_eq!(unstyled(&out), "```rust\nlet x = a * b;\n```\nafter\n");
        assert!(out.contains("\x1b[1mrust\x1b[0m"), "{out:?}");
    }

    #[test]
    fn stars_that_are_not_emphasis_stay() {
        let out = render(&["2 * 3 = 6 and a** b\n"]);
        assert_eq!(unstyled(&out), "2 * 3 = 6 and a** b\n");
    }

    #[test]
    fn an_unclosed_marker_is_reset_at_the_end_of_its_line() {
        let out = render(&["**never closed\nplain\n"]);
        let (first, second) = out.split_once('\n').unwrap();
        assert!(first.ends_with(RESET), "{out:?}");
        assert_eq!(second, "plain\n");
    }

    #[test]
    fn escape_sequences_from_the_model_are_shown_not_obeyed() {
        let out = render(&["**hi**\x1b[2J\x1b]0;title\x07\n"]);
        let ours = ["\x1b[1m", "\x1b[22m"];
        let mut rest = out.clone();
        for ours in ours {
            rest = rest.replacen(ours, "", 1);
        }
        assert!(!rest.contains('\x1b'), "{out:?}");
        assert!(rest.contains("\\x1b[2J"), "{out:?}");
    }

    #[test]
    fn plain_text_streams_without_waiting_for_the_end_of_the_line() {
        let mut md = Markdown::default();
        assert_eq!(md.push("partial words"), "partial words");
        assert_eq!(md.push("\n#"), "\n", "a line's start waits for its kind");
        assert_eq!(md.finish(), "#");
    }
}
