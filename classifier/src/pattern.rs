//! Shell patterns in path words, for the rules that protect fixed paths (credential stores,
//! secret files): brace expansion, and glob components matched one by one against the
//! protected path's components.
//!
//! Apart because a literal comparison (`resolved.starts_with(store)`) never sees
//! `~/.[a]ws/credentials` or `~/.{aws,x}/credentials` as `~/.aws/credentials`, which is what
//! bash makes of them. The matching errs towards "may match": an extended glob matches
//! anything, `**` any number of components, and a brace sequence (`{a..z}`) any text.

/// How many words a brace expression may expand to before the word is taken to match anything
/// (`{a,b}{a,b}…` doubles with every group).
const MAX_ALTERNATIVES: usize = 256;

/// Stands for the text of a brace sequence (`{-..0}` holds `.`): any characters within one
/// component, a leading dot included.
const ANY_TEXT: char = '\u{1}';

/// Whether bash may expand `text` into other words: a glob character or a brace.
pub(crate) fn has_pattern(text: &str) -> bool {
    text.contains(['*', '?', '[', '{'])
}

/// A pattern for a word whose text after `known` is computed at run time (`~/.a$X`, `~/$D/x`):
/// any text in the component `known` ends in, then any number of components.
pub(crate) fn completed_at_run_time(known: &str) -> String {
    format!("{known}{ANY_TEXT}/**")
}

/// The directory where bash's expansion of `text` starts: the text before its first pattern
/// character (or computed part, see [`completed_at_run_time`]) up to its last `/` (`~` alone is
/// home, nothing is the working directory). Every path the word may become lies at or below it.
/// `None` when that does not hold: a brace before any `/` (whose choices may be whole paths,
/// `{~/.aws/credentials,x}`) or a `..` after the pattern (which climbs out of it).
pub(crate) fn expansion_directory(text: &str) -> Option<&str> {
    let first = text.find(['*', '?', '[', '{', ANY_TEXT])?;
    let (head, rest) = text.split_at(first);
    if rest.contains("..") {
        return None;
    }
    match head.rfind('/') {
        Some(slash) => Some(&head[..=slash]),
        None if rest.starts_with('{') => None,
        None if head.starts_with('~') => Some("~"),
        None => Some("."),
    }
}

/// Whether `text` holds a glob character (after brace expansion).
pub(crate) fn has_glob(text: &str) -> bool {
    text.contains(['*', '?', '[', ANY_TEXT])
}

/// The words bash's brace expansion makes of `text`, in order; `None` when there would be more
/// than [`MAX_ALTERNATIVES`] (the caller then assumes the worst). A sequence (`{1..9}`,
/// `{a..z}`) becomes [`ANY_TEXT`].
pub(crate) fn brace_alternatives(text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    expand_into(text, &mut out).then_some(out)
}

fn expand_into(text: &str, out: &mut Vec<String>) -> bool {
    expand_at(text, out, 0)
}

/// Most brace groups expanded one inside another's result: each level costs a pass over the
/// word, and 100,000 one-choice groups (`{1..1}`) would recurse as deep. Past it the word is
/// taken to match anything (the caller assumes the worst).
const MAX_GROUPS: usize = 64;

fn expand_at(text: &str, out: &mut Vec<String>, depth: usize) -> bool {
    let Some((open, close, choices)) = first_brace_group(text) else {
        out.push(text.to_string());
        return out.len() <= MAX_ALTERNATIVES;
    };
    if depth >= MAX_GROUPS {
        return false;
    }
    let (before, after) = (&text[..open], &text[close + 1..]);
    choices.iter().all(|choice| {
        let joined = format!("{before}{choice}{after}");
        expand_at(&joined, out, depth + 1)
    })
}

/// A `{` of a word, with the `}` that closes it (none if unclosed) and whether a comma stands
/// at its own level.
pub(crate) struct BraceGroup {
    pub(crate) open: usize,
    pub(crate) close: Option<usize>,
    pub(crate) comma: bool,
}

/// Every `{` of `text` in order (a backslash escaping the next byte when `escapes`), matched
/// in one pass. Scanning from each `{` to its `}` instead was quadratic in the nesting: `echo
/// {{{…}}}` of 200 KB took 14 s in a release build.
pub(crate) fn brace_groups(text: &str, escapes: bool) -> Vec<BraceGroup> {
    let bytes = text.as_bytes();
    let mut groups: Vec<BraceGroup> = Vec::new();
    let mut unclosed: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if escapes => i += 1,
            b'{' => {
                unclosed.push(groups.len());
                groups.push(BraceGroup {
                    open: i,
                    close: None,
                    comma: false,
                });
            }
            b'}' => {
                if let Some(group) = unclosed.pop().and_then(|g| groups.get_mut(g)) {
                    group.close = Some(i);
                }
            }
            b',' => {
                if let Some(group) = unclosed.last().and_then(|&g| groups.get_mut(g)) {
                    group.comma = true;
                }
            }
            _ => {}
        }
        i += 1;
    }
    groups
}

/// The text between the commas at the own level of the group from `open` to `close`.
pub(crate) fn brace_choices(text: &str, open: usize, close: usize, escapes: bool) -> Vec<String> {
    let bytes = text.as_bytes();
    let (mut depth, mut from, mut choices) = (0usize, open + 1, Vec::new());
    let mut i = open + 1;
    while i < close {
        match bytes[i] {
            b'\\' if escapes => i += 1,
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                choices.push(text[from..i].to_string());
                from = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    choices.push(text[from..close].to_string());
    choices
}

/// For each offset of `text`, how many bytes before it cannot be in a numeric sequence
/// (`0-9`, `+`, `-`, `.`): a group whose body holds more than [`SEQUENCE_OTHER_BYTES`] such
/// bytes is no sequence, told without reading the body (nested groups would read it again and
/// again).
pub(crate) fn non_numeric_before(text: &str) -> Vec<usize> {
    let mut counts = Vec::with_capacity(text.len() + 1);
    let mut count = 0usize;
    counts.push(0);
    for b in text.bytes() {
        if !(b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.')) {
            count += 1;
        }
        counts.push(count);
    }
    counts
}

/// A sequence's ends are numbers or single characters (up to 4 bytes each).
pub(crate) const SEQUENCE_OTHER_BYTES: usize = 8;

/// Whether the body of a group from `open` to `close` may be a sequence (see
/// [`non_numeric_before`]).
pub(crate) fn may_be_sequence(counts: &[usize], open: usize, close: usize) -> bool {
    match (counts.get(open + 1), counts.get(close)) {
        (Some(before), Some(upto)) => upto.saturating_sub(*before) <= SEQUENCE_OTHER_BYTES,
        _ => true,
    }
}

/// The first `{…}` bash expands in `text`: its byte range and its choices. A group needs a
/// comma at its own level or the form of a sequence; `{x}` and `{}` stay as written.
fn first_brace_group(text: &str) -> Option<(usize, usize, Vec<String>)> {
    let bytes = text.as_bytes();
    if !text.contains('{') {
        return None;
    }
    let counts = non_numeric_before(text);
    for group in brace_groups(text, true) {
        let open = group.open;
        if open > 0 && bytes[open - 1] == b'\\' {
            continue;
        }
        let Some(close) = group.close else {
            continue;
        };
        if group.comma {
            return Some((open, close, brace_choices(text, open, close, true)));
        }
        if may_be_sequence(&counts, open, close)
            && let Some(choices) = sequence_choices(&text[open + 1..close])
        {
            return Some((open, close, choices));
        }
    }
    None
}

/// The words of a sequence `x..y` or `x..y..step` (single characters or integers at the
/// ends), or `None` when `body` is not one. Characters are listed one by one (`{-..0}` holds
/// `.`, two of them make `..`); a long run of numbers, which holds neither `.` nor `/`, is any
/// text.
fn sequence_choices(body: &str) -> Option<Vec<String>> {
    let parts: Vec<&str> = body.split("..").collect();
    if !matches!(parts.len(), 2 | 3) {
        return None;
    }
    let step = match parts.get(2) {
        Some(step) => step.parse::<i64>().ok()?.unsigned_abs().max(1),
        None => 1,
    };
    let number = |p: &str| p.parse::<i64>().ok();
    if let (Some(from), Some(to)) = (number(parts[0]), number(parts[1])) {
        let count = from.abs_diff(to) / step + 1;
        if count > 64 {
            return Some(vec![ANY_TEXT.to_string()]);
        }
        let (low, high) = (from.min(to), from.max(to));
        return Some(
            (0..count)
                .map(|i| (low + (i * step) as i64).min(high).to_string())
                .collect(),
        );
    }
    let single = |p: &str| {
        let mut chars = p.chars();
        chars.next().filter(|_| chars.next().is_none())
    };
    let (from, to) = (single(parts[0])? as u32, single(parts[1])? as u32);
    let (low, high) = (from.min(to), from.max(to));
    Some(
        (low..=high)
            .step_by(usize::try_from(step).unwrap_or(usize::MAX))
            .filter_map(char::from_u32)
            .map(String::from)
            .collect(),
    )
}

/// One piece of a glob component.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    /// `?`
    One,
    /// `*` (and [`ANY_TEXT`])
    Many,
    /// `[…]`: ranges, negated with `!` or `^`.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

fn tokens(pattern: &str) -> Vec<Token> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                out.push(Token::Literal(chars[i + 1]));
                i += 2;
                continue;
            }
            '?' => out.push(Token::One),
            '*' | ANY_TEXT => out.push(Token::Many),
            '[' => match bracket(&chars[i + 1..]) {
                Some((token, used)) => {
                    out.push(token);
                    i += used + 1;
                    continue;
                }
                // An unterminated `[` is itself.
                None => out.push(Token::Literal('[')),
            },
            c => out.push(Token::Literal(c)),
        }
        i += 1;
    }
    out
}

/// A bracket expression after its `[`: the token and how many characters it took, `]`
/// included. `None` when it is not closed. Character classes (`[[:alpha:]]`) match any
/// character: erring towards a match.
fn bracket(chars: &[char]) -> Option<(Token, usize)> {
    let mut i = 0;
    let negated = matches!(chars.first(), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let first = i;
    while i < chars.len() {
        let c = chars[i];
        if c == ']' && i > first {
            return Some((Token::Class { negated, ranges }, i + 1));
        }
        if c == '[' && matches!(chars.get(i + 1), Some(':' | '=' | '.')) {
            // `[:alpha:]`, `[=a=]`, `[.a.]`: any character.
            ranges.push((char::MIN, char::MAX));
            let kind = chars[i + 1];
            let mut j = i + 2;
            while j + 1 < chars.len() && !(chars[j] == kind && chars[j + 1] == ']') {
                j += 1;
            }
            i = j + 2;
            continue;
        }
        let c = if c == '\\' && i + 1 < chars.len() {
            i += 1;
            chars[i]
        } else {
            c
        };
        if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|e| *e != ']') {
            ranges.push((c, chars[i + 2]));
            i += 3;
        } else {
            ranges.push((c, c));
            i += 1;
        }
    }
    None
}

fn token_matches(token: &Token, c: char) -> bool {
    match token {
        Token::Literal(l) => *l == c,
        Token::One | Token::Many => true,
        Token::Class { negated, ranges } => {
            ranges.iter().any(|(lo, hi)| *lo <= c && c <= *hi) != *negated
        }
    }
}

/// Whether the glob `pattern` may match the file name `name`. A name starting with `.` needs a
/// pattern starting with a literal `.` unless `dotglob` may be set. Extended globs (`@(…)`,
/// `!(…)`, …) match anything.
pub(crate) fn component_may_match(pattern: &str, name: &str, dotglob: bool) -> bool {
    // Most components are plain names: compared as text, with nothing built.
    if !pattern.contains(['*', '?', '[', '\\', '(', ANY_TEXT]) {
        return pattern == name;
    }
    let extglob = pattern
        .as_bytes()
        .windows(2)
        .any(|pair| matches!(pair[0], b'?' | b'*' | b'+' | b'@' | b'!') && pair[1] == b'(');
    if extglob {
        return true;
    }
    let tokens = tokens(pattern);
    if name.starts_with('.')
        && !dotglob
        && !matches!(tokens.first(), Some(Token::Literal('.')))
        && !pattern.starts_with(ANY_TEXT)
    {
        return false;
    }
    let name: Vec<char> = name.chars().collect();
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match tokens.get(p) {
            Some(Token::Many) => {
                star = Some((p, n));
                p += 1;
            }
            Some(t) if token_matches(t, name[n]) => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    tokens[p..].iter().all(|t| *t == Token::Many)
}

/// [`may_be_at_or_below`] with `target` a relative path's text (`.config/gh`), split as it goes.
pub(crate) fn may_be_at_or_below_text(pattern: &[&str], target: &str, dotglob: bool) -> bool {
    let target = target.trim_start_matches('/');
    if target.is_empty() {
        return true;
    }
    let (name, rest) = target.split_once('/').unwrap_or((target, ""));
    match pattern.split_first() {
        None => false,
        Some((&"**", pattern_rest)) => {
            may_be_at_or_below_text(pattern_rest, target, dotglob)
                || may_be_at_or_below_text(pattern, rest, dotglob)
        }
        Some((first, pattern_rest)) => {
            component_may_match(first, name, dotglob)
                && may_be_at_or_below_text(pattern_rest, rest, dotglob)
        }
    }
}

/// Whether a path matching `pattern` (components) may be `target` (components) or lie below it.
pub(crate) fn may_be_at_or_below(pattern: &[&str], target: &[&str], dotglob: bool) -> bool {
    match (pattern.split_first(), target.split_first()) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some((&"**", rest)), Some((_, target_rest))) => {
            may_be_at_or_below(rest, target, dotglob)
                || may_be_at_or_below(pattern, target_rest, dotglob)
        }
        (Some((first, rest)), Some((name, target_rest))) => {
            component_may_match(first, name, dotglob)
                && may_be_at_or_below(rest, target_rest, dotglob)
        }
    }
}

/// Whether a path matching `pattern` may be `target`, lie below it or above it: what a
/// recursive reader given the pattern may read of `target`.
pub(crate) fn may_overlap(pattern: &[&str], target: &[&str], dotglob: bool) -> bool {
    match (pattern.split_first(), target.split_first()) {
        (None, _) | (_, None) => true,
        (Some((&"**", _)), Some(_)) => true,
        (Some((first, rest)), Some((name, target_rest))) => {
            component_may_match(first, name, dotglob) && may_overlap(rest, target_rest, dotglob)
        }
    }
}

/// The normal components of an absolute, normalised path, as text.
pub(crate) fn components(path: &std::path::Path) -> Vec<std::borrow::Cow<'_, str>> {
    path.components()
        .filter_map(|c| match c {
            std::path::Component::Normal(n) => Some(n.to_string_lossy()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alts(text: &str) -> Vec<String> {
        brace_alternatives(text).unwrap_or_default()
    }

    #[test]
    fn braces_expand_as_bash_does() {
        assert_eq!(alts("~/.{aws,x}/c"), ["~/.aws/c", "~/.x/c"]);
        assert_eq!(alts("~/.a{w,}s"), ["~/.aws", "~/.as"]);
        assert_eq!(alts("{~/.aws/credentials,x}"), ["~/.aws/credentials", "x"]);
        assert_eq!(alts("a{b,{c,d}}e"), ["abe", "ace", "ade"]);
        assert_eq!(alts("{x}"), ["{x}"]);
        assert_eq!(alts("{}"), ["{}"]);
        assert_eq!(alts("\\{a,b}"), ["\\{a,b}"]);
        assert_eq!(
            alts("~/{-..0}aws"),
            ["~/-aws", "~/.aws", "~//aws", "~/0aws"]
        );
        assert_eq!(alts("{1..3}"), ["1", "2", "3"]);
        assert_eq!(alts("x{1..1000}"), [format!("x{ANY_TEXT}")]);
        assert!(alts("{-..0}{-..0}").contains(&"..".to_string()));
        assert!(brace_alternatives(&"{a,b}".repeat(9)).is_none());
        // Groups inside groups, escapes, unclosed groups: matched in one pass as a scan from
        // each `{` would.
        assert_eq!(alts("{{x}}{a,b}"), ["{{x}}a", "{{x}}b"]);
        assert_eq!(alts("{a{b,c}"), ["{ab", "{ac"]);
        assert_eq!(alts("\\\\{a,b}"), ["\\\\{a,b}"]);
        assert_eq!(alts("{a,\\}b}"), ["a", "\\}b"]);
        assert_eq!(alts("{{..}}"), ["{", "|", "}"]);
    }

    /// Each group a word's expansion goes through costs a pass over the word: past
    /// MAX_GROUPS of them (100,000 one-choice `{1..1}` recursed as deep, and overflowed the
    /// stack) the word is taken to match anything.
    #[test]
    fn too_many_brace_groups_match_anything() {
        assert!(brace_alternatives(&"{1..1}".repeat(MAX_GROUPS + 1)).is_none());
        assert_eq!(alts(&"{1..1}".repeat(MAX_GROUPS)), ["1".repeat(MAX_GROUPS)]);
    }

    #[test]
    fn components_match_as_bash_globs_do() {
        for (pattern, name, dotglob, expected) in [
            (".[a]ws", ".aws", false, true),
            (".a*", ".aws", false, true),
            (".aw?", ".aws", false, true),
            ("*", ".aws", false, false),
            ("*", ".aws", true, true),
            ("?aws", ".aws", false, false),
            ("[.]aws", ".aws", false, false),
            (".[!a]ws", ".aws", false, false),
            (".[^b]ws", ".aws", false, true),
            (".[a-c]ws", ".aws", false, true),
            (".[[:alpha:]]ws", ".aws", false, true),
            ("g?", "gh", false, true),
            ("@(x)", ".aws", false, true),
            ("\\*", "*", false, true),
            ("\\*", "a", false, false),
            ("[", "[", false, true),
            ("*.rs", "main.rs", false, true),
            ("*.rs", ".aws", false, false),
        ] {
            assert_eq!(
                component_may_match(pattern, name, dotglob),
                expected,
                "{pattern} {name} {dotglob}"
            );
        }
        assert!(component_may_match(
            &format!("{ANY_TEXT}aws"),
            ".aws",
            false
        ));
    }

    #[test]
    fn the_expansion_starts_below_the_fixed_directory() {
        assert_eq!(expansion_directory("src/*.rs"), Some("src/"));
        assert_eq!(expansion_directory("*.rs"), Some("."));
        assert_eq!(expansion_directory("~/.[a]ws/x"), Some("~/"));
        assert_eq!(expansion_directory(&completed_at_run_time("~")), Some("~"));
        assert_eq!(expansion_directory(&completed_at_run_time("")), Some("."));
        assert_eq!(expansion_directory("/a/b/{c,d}/e"), Some("/a/b/"));
        assert_eq!(expansion_directory("{~/.aws/credentials,x}"), None);
        assert_eq!(expansion_directory("src/*/../../x"), None);
        assert_eq!(expansion_directory("plain"), None);
    }

    #[test]
    fn paths_match_component_by_component() {
        let store = ["home", "u", ".config", "gh"];
        assert!(may_be_at_or_below(
            &["home", "u", ".config", "*", "hosts.yml"],
            &store,
            false
        ));
        assert!(may_be_at_or_below(
            &["home", "u", "**", "hosts.yml"],
            &store,
            false
        ));
        assert!(!may_be_at_or_below(&["home", "u", ".c*"], &store, false));
        assert!(may_overlap(&["home", "u", ".c*"], &store, false));
        assert!(!may_overlap(&["home", "u", "src", "*"], &store, false));
        assert!(!may_be_at_or_below(&["home", "u", "*", "x"], &store, false));
    }
}
