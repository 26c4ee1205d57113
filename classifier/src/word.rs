//! Words: turning tree-sitter word nodes into the text bash would pass as arguments, as far as
//! that is statically knowable (quote removal, backslashes, `$'…'`, `${IFS}`, `~`, variables
//! assigned earlier in the script, `$(echo …)`).

use tree_sitter::Node;

use crate::Span;
use crate::walk::{Flow, Walker, kind};

/// One argument after normalisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The normalised text; for a computed word, its source text.
    pub text: String,
    /// The statically known text before the first computed part (all of `text` when literal).
    pub prefix: String,
    /// Part of the word is only known at run time (`$VAR`, `$(cmd)`, `${x:-y}` …).
    pub dynamic: bool,
    pub span: Span,
    /// What the substitutions inside the word did (downloads, decoders …).
    pub flow: Flow,
    /// The word starts with an unquoted glob pattern (`*`, `?`, `[…]`): bash replaces it with
    /// file names, any of which may start with `-` and be read as an option.
    pub glob: bool,
    /// Part of the text came from a variable, a command substitution or `~+`/`~-` whose value
    /// the classifier worked out, rather than from the source: git is not trusted in a
    /// directory named this way (`cd "$D"`, `git -C "$D"`; see `git::same_repository`).
    pub expanded: bool,
    /// The known text of a process substitution that ends the word after literal text only
    /// (`-K<(echo …)`, `--config=<(printf …)`): the file an attached option value names, whose
    /// content [`crate::rules::args::tail`] hands on as the value's own, so the attached
    /// spelling is read as the separate one (`-K <(echo …)`) is.
    pub attached_text: Option<String>,
}

impl Word {
    pub fn literal(text: &str, span: Span) -> Word {
        Word {
            text: text.to_string(),
            prefix: text.to_string(),
            dynamic: false,
            span,
            flow: Flow::default(),
            glob: false,
            expanded: false,
            attached_text: None,
        }
    }

    pub fn computed(source: &str, prefix: &str, span: Span) -> Word {
        Word {
            text: source.to_string(),
            prefix: prefix.to_string(),
            dynamic: true,
            span,
            flow: Flow::default(),
            glob: false,
            expanded: false,
            attached_text: None,
        }
    }

    /// The statically known text, if the whole word is known.
    pub fn known(&self) -> Option<&str> {
        (!self.dynamic).then_some(self.text.as_str())
    }

    /// Whether this is a literal option word (`-x`, `--long`), as opposed to an operand.
    pub fn is_option(&self) -> bool {
        !self.dynamic && self.text.len() > 1 && self.text.starts_with('-')
    }

    /// Whether the argument bash passes may start with `-` although the text does not show one:
    /// a leading glob (a file named `--pre=sh` matches `*`), or a computed word without a known
    /// first character (`$f`, `"$(cmd)"`) whose substitutions are not known to print words that
    /// never start with `-`. `<(…)` is a `/dev/fd/N` path.
    pub fn may_be_option(&self) -> bool {
        if self.glob {
            return true;
        }
        if self.is_numeric_special() {
            return false;
        }
        self.dynamic
            && (self.prefix.is_empty() || self.prefix.starts_with('-'))
            && !self.text.starts_with(['<', '>'])
            && !(self.prefix.is_empty() && self.flow.no_dash)
    }
}

impl Word {
    /// `$$`, `$PPID`, `$UID` …: shell variables that always hold a non-negative number.
    pub fn is_numeric_special(&self) -> bool {
        let t = self.text.trim_matches('"');
        let name = t
            .strip_prefix("${")
            .and_then(|r| r.strip_suffix('}'))
            .or_else(|| t.strip_prefix('$'))
            .unwrap_or("");
        self.dynamic
            && matches!(
                name,
                "$" | "!"
                    | "#"
                    | "?"
                    | "PPID"
                    | "UID"
                    | "EUID"
                    | "BASHPID"
                    | "RANDOM"
                    | "SECONDS"
                    | "LINENO"
                    | "SHLVL"
                    | "OPTIND"
            )
    }
}

/// Whether the unquoted word text `raw`, following the literal text `before` of the same word,
/// holds a glob pattern (`*`, `?`, `[…]`, extglob `@(…)`) that can decide the word's first
/// character or follows a leading `-`: then its expansion may be an option. Backslash-escaped
/// characters are literal.
pub(crate) fn glob_lead(before: &str, raw: &str) -> bool {
    if !(before.is_empty() || before.starts_with('-')) {
        return false;
    }
    let bytes = raw.as_bytes();
    // The first character of the literal text before the glob, if any.
    let mut first = before.bytes().next();
    let mut i = 0;
    while i < bytes.len() {
        let glob = match bytes[i] {
            b'\\' => {
                first = first.or(bytes.get(i + 1).copied());
                i += 2;
                continue;
            }
            b'*' | b'?' => true,
            // tree-sitter splits `[a-z]*` into `[`, `a-z`, `]`, `*`: a lone `[` counts too.
            b'[' => raw[i + 1..].contains(']') || i + 1 == raw.len(),
            b'@' | b'!' | b'+' => raw[i + 1..].starts_with('('),
            _ => false,
        };
        if glob {
            return first.is_none_or(|c| c == b'-');
        }
        first = first.or(Some(bytes[i]));
        if first != Some(b'-') {
            return false;
        }
        i += 1;
    }
    false
}

/// Accumulates the pieces of one source word, which `${IFS}` or an unquoted expansion may
/// split into several arguments.
#[derive(Default)]
pub(crate) struct Builder {
    words: Vec<Word>,
    prefix: String,
    dynamic: bool,
    range: Option<(usize, usize)>,
    flow: Flow,
    /// The word so far starts with an unquoted glob (see [`Word::glob`]).
    glob: bool,
    /// tree-sitter sometimes splits `$NAME` into a `$` token ending one node and `NAME…`
    /// starting the next, adjacent one.
    pending_dollar: bool,
    /// See [`Word::expanded`].
    expanded: bool,
    /// See [`Word::attached_text`].
    attached_text: Option<String>,
}

impl Builder {
    fn touch(&mut self, start: usize, end: usize) {
        self.range = Some(match self.range {
            Some((s, e)) => (s.min(start), e.max(end)),
            None => (start, end),
        });
    }

    fn literal(&mut self, text: &str, start: usize, end: usize) {
        // Text after a substitution: the substitution no longer ends the word.
        self.attached_text = None;
        if !self.dynamic {
            self.prefix.push_str(text);
        }
        self.touch(start, end);
    }

    fn computed(&mut self, start: usize, end: usize, flow: &Flow) {
        // Only the part that starts the word decides whether it can start with `-`.
        let leading = !self.dynamic && self.prefix.is_empty();
        let kept = self.flow.no_dash;
        // Known text after literal text only (`-K<(echo …)`); a later part clears it again.
        self.attached_text = if !self.dynamic && !self.is_empty() {
            flow.text.clone()
        } else {
            None
        };
        if self.is_empty() {
            // A word that is one substitution keeps what it knows (`<(echo …)` has known text).
            self.flow = flow.clone();
        } else {
            self.flow.merge(flow);
        }
        self.flow.no_dash = if leading { flow.no_dash } else { kept };
        self.dynamic = true;
        self.touch(start, end);
    }

    fn is_empty(&self) -> bool {
        self.range.is_none()
    }

    fn split(&mut self, w: &Walker) {
        let Some((start, end)) = self.range.take() else {
            return;
        };
        let span = w.map_span(start, end);
        let text = if self.dynamic {
            w.source(start, end).to_string()
        } else {
            self.prefix.clone()
        };
        let prefix = std::mem::take(&mut self.prefix);
        let flow = std::mem::take(&mut self.flow);
        self.words.push(Word {
            text,
            prefix,
            dynamic: self.dynamic,
            span,
            flow,
            glob: std::mem::take(&mut self.glob),
            expanded: std::mem::take(&mut self.expanded),
            attached_text: self.attached_text.take(),
        });
        self.dynamic = false;
    }

    /// Appends `text` as literal pieces split on whitespace (unquoted expansion of known text).
    fn split_literal(&mut self, w: &Walker, text: &str, start: usize, end: usize) {
        let mut first = true;
        for piece in text.split([' ', '\t', '\n']) {
            if !first {
                self.split(w);
            }
            first = false;
            if !piece.is_empty() {
                if glob_lead(&self.prefix, piece) {
                    self.glob = true;
                }
                self.literal(piece, start, end);
            }
        }
    }
}

impl Walker<'_> {
    /// Normalises a word-like node (argument, command name, redirect target) into arguments.
    pub(crate) fn words(&mut self, node: Node) -> Vec<Word> {
        let mut b = Builder::default();
        self.word_part(node, &mut b, false);
        b.split(self);
        b.words
    }

    /// Normalises adjacent nodes that bash reads as one word (tree-sitter sometimes splits a
    /// word in two, e.g. after `$IFS`).
    pub(crate) fn words_of_group(&mut self, nodes: &[Node]) -> Vec<Word> {
        let mut b = Builder::default();
        for node in nodes {
            self.word_part(*node, &mut b, false);
        }
        b.split(self);
        b.words
    }

    /// Normalises a node that is one argument whatever its content (assignment value, quoted
    /// redirect target): splitting is not applied.
    pub(crate) fn single_word(&mut self, node: Node) -> Word {
        let mut words = self.words(node);
        if words.len() == 1 {
            return words.remove(0);
        }
        let (s, e) = (node.start_byte(), node.end_byte());
        let mut flow = Flow::default();
        for w in &words {
            flow.merge(&w.flow);
        }
        let prefix = words.first().map(|w| w.prefix.clone()).unwrap_or_default();
        let mut word = Word::computed(self.source(s, e), &prefix, self.map_span(s, e));
        word.flow = flow;
        if words.iter().all(|w| !w.dynamic) {
            let joined: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
            word = Word::literal(&joined.join(" "), word.span);
        }
        word
    }

    fn word_part(&mut self, node: Node, b: &mut Builder, quoted: bool) {
        let (s, e) = (node.start_byte(), node.end_byte());
        match kind(node) {
            "word" if b.pending_dollar => {
                b.pending_dollar = false;
                let raw = self.source(s, e).to_string();
                let name_len = raw
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(raw.len());
                self.expand_name(&raw[..name_len], b, quoted, s, s + name_len);
                b.literal(&unescape_unquoted(&raw[name_len..]), s + name_len, e);
            }
            "word" | "number" if node.named_child_count() == 0 => {
                // Borrowed from the source unless a `~` or a backslash changes it: most words
                // are neither, and this runs for every plain word of every command.
                let raw = self.source(s, e);
                if !quoted && !b.dynamic && glob_lead(&b.prefix, raw) {
                    b.glob = true;
                }
                let text = if !quoted && b.is_empty() {
                    let expanded = self.expand_tilde(raw);
                    b.expanded |= raw.starts_with("~+") || raw.starts_with("~-");
                    expanded
                } else {
                    std::borrow::Cow::Borrowed(raw)
                };
                b.literal(&unescape_unquoted(&text), s, e);
            }
            "raw_string" => {
                let raw = self.source(s, e);
                let inner = raw
                    .strip_prefix('\'')
                    .and_then(|r| r.strip_suffix('\''))
                    .unwrap_or(raw);
                let inner = inner.to_string();
                b.literal(&inner, s, e);
            }
            "ansi_c_string" => {
                let raw = self.source(s, e);
                let inner = raw
                    .strip_prefix("$'")
                    .and_then(|r| r.strip_suffix('\''))
                    .unwrap_or(raw);
                let decoded = decode_escapes(inner, Escapes::AnsiC);
                // Arguments are C strings: bash cuts `$'/\0tmp'` at the NUL, to `/`.
                let decoded = decoded.split('\0').next().unwrap_or("");
                b.literal(decoded, s, e);
            }
            "string" => self.string_parts(node, b),
            "translated_string" | "concatenation" | "command_name" => {
                let mut cursor = node.walk();
                let children: Vec<Node> = node.children(&mut cursor).collect();
                for child in children {
                    if child.is_named() {
                        self.word_part(child, b, quoted);
                    } else if kind(child) == "$" {
                        b.pending_dollar = true;
                        b.touch(child.start_byte(), child.end_byte());
                    }
                }
            }
            "simple_expansion" | "expansion" => self.expansion(node, b, quoted),
            "command_substitution" => {
                let flow = self.substitution(node);
                b.expanded |= flow.text.is_some();
                match flow.text.clone() {
                    Some(text) if !quoted => {
                        b.split_literal(self, text.trim_end_matches('\n'), s, e);
                    }
                    Some(text) => b.literal(text.trim_end_matches('\n'), s, e),
                    None => b.computed(s, e, &flow),
                }
            }
            _ => {
                // Process substitution, arithmetic, arrays, brace expressions, parse errors:
                // computed. Any command inside still runs, so walk it.
                let flow = self.substitution(node);
                b.computed(s, e, &flow);
            }
        }
    }

    /// Double-quoted string: literal pieces keep their text, expansions are looked up.
    fn string_parts(&mut self, node: Node, b: &mut Builder) {
        let (s, e) = (node.start_byte(), node.end_byte());
        // Empty `""` is still an argument.
        b.literal("", s, e);
        let mut pos = s + 1;
        let end = e.saturating_sub(1).max(pos);
        let mut cursor = node.walk();
        let children: Vec<Node> = node.named_children(&mut cursor).collect();
        for child in children {
            let (cs, ce) = (child.start_byte(), child.end_byte());
            if cs > pos {
                let gap = unescape_double_quoted(self.source(pos, cs));
                b.literal(&gap, pos, cs);
            }
            if kind(child) == "string_content" {
                let text = unescape_double_quoted(self.source(cs, ce));
                b.literal(&text, cs, ce);
            } else {
                self.word_part(child, b, true);
            }
            pos = ce;
        }
        if end > pos {
            let gap = unescape_double_quoted(self.source(pos, end));
            b.literal(&gap, pos, end);
        }
    }

    fn expansion(&mut self, node: Node, b: &mut Builder, quoted: bool) {
        let (s, e) = (node.start_byte(), node.end_byte());
        let raw = self.source(s, e);
        let name = raw
            .strip_prefix("${")
            .and_then(|r| r.strip_suffix('}'))
            .or_else(|| raw.strip_prefix('$'))
            .unwrap_or("")
            .to_string();
        let is_name =
            |n: &str| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        // `${VAR:?}`, `${VAR:-x}`, `${VAR:=x}` (and the forms without `:`) are VAR when it is set.
        let guarded = name.split_once(['?', '-', '=']).and_then(|(n, _)| {
            let n = n.strip_suffix(':').unwrap_or(n);
            (is_name(n) && self.vars.contains_key(n)).then(|| n.to_string())
        });
        if let Some(var) = guarded {
            self.expand_name(&var, b, quoted, s, e);
            return;
        }
        // `${PWD%/*}`, `${f##*/}`: a known value with a static pattern removed.
        if let Some(value) = self.trimmed_value(&name) {
            b.expanded = true;
            if quoted {
                b.literal(&value, s, e);
            } else {
                b.split_literal(self, &value, s, e);
            }
            return;
        }
        if !is_name(&name) {
            let flow = self.substitution(node);
            b.computed(s, e, &flow);
            return;
        }
        self.expand_name(&name, b, quoted, s, e);
    }

    /// The value of `NAME%PATTERN`, `NAME%%PATTERN`, `NAME#PATTERN`, `NAME##PATTERN` (the inside
    /// of `${…}`) when NAME is known and PATTERN is static (`*`, `?` and literal characters).
    fn trimmed_value(&self, inner: &str) -> Option<String> {
        let at = inner.find(['%', '#'])?;
        let (name, op) = inner.split_at(at);
        let value = self.vars.get(name)?;
        let (suffix, longest, pattern) = match op.as_bytes() {
            [b'%', b'%', ..] => (true, true, &op[2..]),
            [b'%', ..] => (true, false, &op[1..]),
            [b'#', b'#', ..] => (false, true, &op[2..]),
            _ => (false, false, &op[1..]),
        };
        if pattern.contains(['$', '`', '"', '\'', '\\', '[', '(']) || name.is_empty() {
            return None;
        }
        let cuts: Vec<usize> = (0..=value.len())
            .filter(|i| value.is_char_boundary(*i))
            .collect();
        let matching = |i: &usize| {
            let part = if suffix { &value[*i..] } else { &value[..*i] };
            glob_match(pattern, part)
        };
        // Shortest suffix starts latest; longest starts earliest (the reverse for prefixes).
        let cut = match (suffix, longest) {
            (true, false) | (false, true) => cuts.iter().rev().find(|i| matching(i)),
            (true, true) | (false, false) => cuts.iter().find(|i| matching(i)),
        };
        Some(match cut {
            Some(&i) if suffix => value[..i].to_string(),
            Some(&i) => value[i..].to_string(),
            None => value.clone(),
        })
    }

    /// Expands `$name` spanning `s..e`: `IFS` splits, known variables give their value.
    fn expand_name(&mut self, name: &str, b: &mut Builder, quoted: bool, s: usize, e: usize) {
        let plain = !name.is_empty();
        if plain && name == "IFS" && !self.vars.contains_key("IFS") {
            if quoted {
                b.literal(" ", s, e);
            } else {
                b.split(self);
            }
            return;
        }
        let value = self.vars.get(name).filter(|_| plain).cloned();
        b.expanded |= value.is_some();
        match value {
            Some(value) if quoted => b.literal(&value, s, e),
            Some(value) => b.split_literal(self, &value, s, e),
            None => b.computed(s, e, &Flow::default()),
        }
    }

    /// `~` and `~/…` at the start of an unquoted word mean the home directory; `~+` is `$PWD`,
    /// `~-` is `$OLDPWD`.
    fn expand_tilde<'r>(&self, raw: &'r str) -> std::borrow::Cow<'r, str> {
        use std::borrow::Cow;
        let Some(rest) = raw.strip_prefix('~') else {
            return Cow::Borrowed(raw);
        };
        for (sign, var) in [('+', "PWD"), ('-', "OLDPWD")] {
            if let Some(after) = rest.strip_prefix(sign)
                && (after.is_empty() || after.starts_with('/'))
                && let Some(dir) = self.vars.get(var)
            {
                return Cow::Owned(format!("{dir}{after}"));
            }
        }
        let Some(home) = self.vars.get("HOME") else {
            return Cow::Borrowed(raw);
        };
        if rest.is_empty() || rest.starts_with('/') {
            Cow::Owned(format!("{home}{rest}"))
        } else {
            Cow::Borrowed(raw)
        }
    }
}

/// Whether `text` matches the glob `pattern` (only `*`, `?` and literal characters).
fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Removes unquoted backslashes: `\r\m` is `rm`, a backslash-newline disappears.
pub(crate) fn unescape_unquoted(text: &str) -> std::borrow::Cow<'_, str> {
    // Without a backslash the text is its own unescaping (no copy: every plain word).
    if !text.contains('\\') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Inside double quotes a backslash only escapes `$`, `` ` ``, `"`, `\` and newline.
fn unescape_double_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    out.extend(chars.next());
                }
                Some('\n') => {
                    chars.next();
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Which escape dialect to decode.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Escapes {
    /// `$'…'` strings.
    AnsiC,
    /// `printf` formats and `echo -e`.
    Printf,
}

/// Decodes backslash escapes (`\x72`, `\162`, `\u0072`, `\n` …).
pub(crate) fn decode_escapes(text: &str, dialect: Escapes) -> String {
    let mut out = String::with_capacity(text.len());
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' || i >= chars.len() {
            out.push(c);
            continue;
        }
        let e = chars[i];
        i += 1;
        if e == 'c' && dialect == Escapes::AnsiC && i < chars.len() {
            // `\cX` is control-X (`\c@` is NUL).
            out.push(char::from((chars[i] as u32 & 0x1f) as u8));
            i += 1;
            continue;
        }
        let simple = match e {
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'v' => Some('\x0b'),
            '\\' => Some('\\'),
            '\'' => Some('\''),
            '"' => Some('"'),
            '?' => Some('?'),
            _ => None,
        };
        if let Some(ch) = simple {
            out.push(ch);
            continue;
        }
        let (radix, max, skip_zero) = match e {
            'x' => (16, 2, false),
            'u' => (16, 4, false),
            'U' => (16, 8, false),
            '0'..='7' => (8, 3, dialect == Escapes::Printf && e == '0'),
            _ => {
                out.push('\\');
                out.push(e);
                continue;
            }
        };
        let digits_start = if radix == 8 && !skip_zero { i - 1 } else { i };
        let mut j = digits_start;
        while j < chars.len() && j - digits_start < max && chars[j].is_digit(radix) {
            j += 1;
        }
        if j == digits_start {
            out.push('\\');
            out.push(e);
            continue;
        }
        let digits: String = chars[digits_start..j].iter().collect();
        let decoded = u32::from_str_radix(&digits, radix)
            .ok()
            .and_then(char::from_u32);
        out.push(decoded.unwrap_or('\u{fffd}'));
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_ansi_c_escapes() {
        assert_eq!(decode_escapes(r"\x72m", Escapes::AnsiC), "rm");
        assert_eq!(decode_escapes(r"\162\155", Escapes::AnsiC), "rm");
        assert_eq!(decode_escapes(r"\u0072m\q", Escapes::AnsiC), "rm\\q");
        assert_eq!(decode_escapes(r"\0162", Escapes::Printf), "r");
    }

    #[test]
    fn unescapes() {
        assert_eq!(unescape_unquoted(r"\r\m"), "rm");
        assert_eq!(unescape_unquoted("a\\\nb\\"), "ab");
        assert_eq!(unescape_unquoted("rm -rf ~/é"), "rm -rf ~/é");
        assert_eq!(unescape_double_quoted(r#"a\$b\n"#), "a$b\\n");
    }
}
