//! When the text does not parse cleanly, tree-sitter's error recovery may hide commands. This
//! rough scan splits the text on shell operators and runs the rules on each piece, keeping only
//! dangerous findings, so that a broken script carrying a dangerous pattern is still dangerous.

use crate::walk::{Cmd, Flow, Walker};
use crate::word::Word;
use crate::{Span, rules};

/// Longest statement scanned; beyond it the reason that led to the scan keeps the verdict
/// normal. The text as a whole has no limit: the scan is linear.
const MAX_SCAN: usize = 64 * 1024;

pub(crate) fn scan(w: &mut Walker, text: &str, span: Span) -> Flow {
    let mut output = Flow::default();
    w.keep_dangerous("seen in text that does not parse cleanly", |w| {
        let text = group_braces_as_separators(text);
        for statement in text.split([';', '&', '\n', '(', ')', '`']) {
            if statement.len() > MAX_SCAN {
                // One piece this long is not a command anyone runs; the verdict is already
                // at least normal, and scanning it would cost more than it could find.
                continue;
            }
            let mut input = Flow::default();
            for stage in statement.split('|') {
                let tokens: Vec<String> = stage.split_whitespace().map(home_token).collect();
                let argv: Vec<Word> = tokens
                    .iter()
                    // Quotes and backslashes (`r\m` is `rm`) are dropped, whatever their nesting.
                    .map(|t| t.replace(['\'', '"', '\\'], ""))
                    .map(|t| t.strip_prefix('$').map(str::to_string).unwrap_or(t))
                    .filter(|t| !t.is_empty())
                    .map(|t| Word::literal(&t, span))
                    .collect();
                if argv.is_empty() {
                    continue;
                }
                let nested = suffixes(w, &tokens, &input, span);
                let mut out = rules::run(w, Cmd::of_words(argv, input.clone(), span));
                out.merge(&nested);
                input = Flow { fed: true, ..out };
            }
            output.merge(&input);
        }
    });
    output
}

/// A `{` or `}` that opens or closes a group (`{ rm -rf ~; }`) separates statements; one inside
/// a word (`{r,}m`, `${HOME}`, `a{b,c}`) does not, so the rules see the word whole and expand it
/// as bash would.
fn group_braces_as_separators(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    chars
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let before = i.checked_sub(1).map(|j| chars[j]);
            let after = chars.get(i + 1).copied();
            let boundary =
                |c: Option<char>| c.is_none_or(|c| c.is_whitespace() || ";&|()".contains(c));
            match c {
                '{' if boundary(after) => ';',
                '}' if boundary(before) => ';',
                other => other,
            }
        })
        .collect()
}

/// `$HOME`, `${HOME}` and `"$HOME"` at the start of a token read as `~`, which the rules resolve
/// to the home directory; the raw scan has no variable values.
fn home_token(token: &str) -> String {
    let bare = token.trim_start_matches(['\'', '"', '\\']);
    for name in ["${HOME}", "$HOME"] {
        if let Some(rest) = bare.strip_prefix(name)
            && !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        {
            return format!("~{rest}");
        }
    }
    // Inside a brace expansion each alternative is a word of its own: `{rm,-fr,$HOME}`.
    let mut out = String::with_capacity(token.len());
    let mut rest = token;
    while let Some(at) = rest.find('$') {
        let (head, tail) = rest.split_at(at);
        out.push_str(head);
        let starts_word = (head.is_empty() && out.is_empty())
            || head.ends_with(['{', ','])
            || (head.is_empty() && out.ends_with(['{', ',']));
        let name = ["${HOME}", "$HOME"].into_iter().find(|name| {
            tail.strip_prefix(name).is_some_and(|after| {
                !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            })
        });
        match name {
            Some(name) if starts_word => {
                out.push('~');
                rest = &tail[name.len()..];
            }
            _ => {
                out.push('$');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Words after which the rest of a statement is itself a command (`eval …`, `bash -c …`,
/// `sudo …`). Quotes and backslashes are dropped in this scan, so a command nested in layers of
/// quoting, beyond the re-parse depth limit, appears as a suffix after one of these.
#[rustfmt::skip]
const RUNNERS: &[&str] = &[
    "eval", "exec", "command", "builtin", "sudo", "doas", "env", "xargs", "nohup", "time", "-c",
    "then", "do", "else", "if", "while", "until", "!", "nice", "setsid", "stdbuf",
];
/// How many suffixes of one statement are tried.
const MAX_SUFFIXES: usize = 32;

/// Runs the rules on every suffix of `tokens` that starts after a runner word; returns what
/// their output carries.
fn suffixes(w: &mut Walker, tokens: &[String], input: &Flow, span: Span) -> Flow {
    let mut output = Flow::default();
    let clean: Vec<String> = tokens
        .iter()
        .map(|t| t.replace(['\'', '"', '\\'], ""))
        .map(|t| t.strip_prefix('$').map(str::to_string).unwrap_or(t))
        .collect();
    let starts: Vec<usize> = (1..clean.len())
        .filter(|&i| {
            RUNNERS.contains(&clean[i - 1].as_str()) && !RUNNERS.contains(&clean[i].as_str())
        })
        .take(MAX_SUFFIXES)
        .collect();
    for start in starts {
        let argv: Vec<Word> = clean[start..]
            .iter()
            .filter(|t| !t.is_empty())
            .map(|t| Word::literal(t, span))
            .collect();
        if !argv.is_empty() {
            output.merge(&rules::run(w, Cmd::of_words(argv, input.clone(), span)));
        }
    }
    output
}
