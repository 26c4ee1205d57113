//! Input clean-up before parsing: invisible and unusual characters that would make the text look
//! different to a person (or to the rules) than to bash.

/// The text the parser sees, and a map back to byte offsets in the caller's input.
pub(crate) struct Prepared {
    pub text: String,
    /// `offsets[i]` is the input offset of byte `i` of `text`; one extra entry for the end.
    /// Empty when nothing was removed or replaced (see [`prepare`]): then byte `i` of `text` is
    /// byte `i` of the input.
    offsets: Vec<usize>,
    /// Whether any character was removed or replaced.
    pub changed: bool,
}

impl Prepared {
    /// Maps a byte span of `text` back to the caller's input.
    pub fn map_span(&self, start: usize, end: usize) -> (usize, usize) {
        if self.offsets.is_empty() {
            // The identity, ending at the end of the input as the table's last entry does.
            let len = self.text.len();
            return (start.min(len), end.min(len));
        }
        let at = |i: usize| {
            self.offsets
                .get(i)
                .copied()
                .unwrap_or(self.offsets[self.offsets.len() - 1])
        };
        (at(start), at(end))
    }
}

/// Characters that render as nothing. They are dropped, so `r\u{200b}m` reads as `rm`.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00ad}' | '\u{034f}' | '\u{061c}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
            | '\u{180b}'..='\u{180e}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}' | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}'
            | '\u{ffa0}' | '\u{fff9}'..='\u{fffb}'
    )
}

/// Whitespace other than space, tab and newline. Read as a plain space, so that
/// `rm\u{a0}-rf` is seen as two words, the reading that errs on the side of caution.
fn is_unusual_space(c: char) -> bool {
    c != ' ' && c != '\t' && c != '\n' && (c.is_whitespace() || c == '\u{2800}')
}

/// Whether `input` is plain ASCII that [`prepare`] and [`clean`] return unchanged: no
/// character there is invisible, and among ASCII characters only NUL is dropped and vertical
/// tab and form feed are unusual spaces (carriage return is kept). Checked byte by byte first
/// because almost every command is such text, and building the offset table (eight bytes per
/// input byte) cost more than the check.
fn unchanged_ascii(input: &str) -> bool {
    input
        .bytes()
        .all(|b| b.is_ascii() && !matches!(b, b'\0' | b'\x0b' | b'\x0c'))
}

/// Prepares `input` for parsing.
pub(crate) fn prepare(input: &str) -> Prepared {
    if unchanged_ascii(input) {
        return Prepared {
            text: input.to_string(),
            offsets: Vec::new(),
            changed: false,
        };
    }
    prepare_in_full(input)
}

/// [`prepare`] character by character, with the offset table.
fn prepare_in_full(input: &str) -> Prepared {
    let mut text = String::with_capacity(input.len());
    let mut offsets = Vec::with_capacity(input.len() + 1);
    let mut changed = false;
    for (at, c) in input.char_indices() {
        if is_invisible(c) || c == '\0' {
            changed = true;
            continue;
        }
        let c = if is_unusual_space(c) && c != '\r' {
            changed = true;
            ' '
        } else {
            c
        };
        let before = text.len();
        text.push(c);
        offsets.extend(std::iter::repeat_n(at, text.len() - before));
    }
    offsets.push(input.len());
    Prepared {
        text,
        offsets,
        changed,
    }
}

/// The same clean-up for nested text (a `bash -c` string), where spans are not mapped.
pub(crate) fn clean(input: &str) -> String {
    if unchanged_ascii(input) {
        return input.to_string();
    }
    clean_in_full(input)
}

/// [`clean`] character by character.
fn clean_in_full(input: &str) -> String {
    input
        .chars()
        .filter(|&c| !is_invisible(c) && c != '\0')
        .map(|c| {
            if is_unusual_space(c) && c != '\r' {
                ' '
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_invisible_and_maps_spans_back() {
        let input = "r\u{200b}m\u{a0}-rf";
        let p = prepare(input);
        assert_eq!(p.text, "rm -rf");
        assert!(p.changed);
        // "-rf" starts after the NBSP (2 bytes) in the input.
        assert_eq!(p.map_span(3, 6), (input.len() - 3, input.len()));
    }

    /// The ASCII shortcut gives what the character-by-character preparation gives: the same
    /// text, the same `changed`, the same span for every offset (past the end too).
    fn same_as_in_full(input: &str) {
        let (quick, full) = (prepare(input), prepare_in_full(input));
        assert_eq!(quick.text, full.text, "{input:?}");
        assert_eq!(quick.changed, full.changed, "{input:?}");
        for start in 0..input.len() + 3 {
            for end in start..input.len() + 3 {
                assert_eq!(
                    quick.map_span(start, end),
                    full.map_span(start, end),
                    "{input:?} {start}..{end}"
                );
            }
        }
        assert_eq!(clean(input), clean_in_full(input), "{input:?}");
    }

    #[test]
    fn the_ascii_shortcut_changes_nothing() {
        for input in [
            "",
            "ls -la",
            "a\r\nb\tc",
            "x\x0by",
            "x\x0cy",
            "a\0b",
            "\x7f\x01\x1c\x1f",
            "r\u{200b}m",
            "é",
            "rm\u{a0}-rf",
        ] {
            same_as_in_full(input);
        }
    }

    proptest::proptest! {
        #[test]
        fn the_ascii_shortcut_agrees_on_any_text(input in "[\\x00-\\x7f\u{a0}\u{200b}é]{0,12}") {
            same_as_in_full(&input);
        }
    }

    #[test]
    fn plain_text_is_unchanged() {
        let p = prepare("ls -la\n");
        assert!(!p.changed);
        assert_eq!(p.map_span(0, 2), (0, 2));
    }
}
