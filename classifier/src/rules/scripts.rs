//! Small languages that read-looking tools run: sed scripts and awk programs. Each is read far
//! enough to find what can run commands or write files (sed `e`, `s///e`, `w`; awk `system`,
//! `print > file`, `print | "cmd"`, `"cmd" | getline`); anything the reader does not fully
//! understand is never read-only.

/// What a sed script does besides printing.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SedEffects {
    /// Commands run: `e CMD` gives `Some(CMD)`; `e` alone and `s///e` run the pattern space,
    /// which is `None`.
    pub exec: Vec<Option<String>>,
    /// Files written by `w FILE`, `W FILE`, `s///w FILE`.
    pub writes: Vec<String>,
    /// Files read by `r FILE`, `R FILE` (their content reaches the output).
    pub reads: Vec<String>,
    /// The whole script was parsed; when false, treat it as doing anything.
    pub understood: bool,
}

/// Commands that take no argument (or an optional number) and only edit or print.
const SED_SIMPLE: &str = "pPdDnNgGhHxz=lFqQ";

/// Reads a GNU sed script.
pub(crate) fn sed_effects(script: &str) -> SedEffects {
    let mut fx = SedEffects::default();
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let rest_of_line = |i: usize| -> (String, usize) {
        let end = chars[i..]
            .iter()
            .position(|c| *c == '\n')
            .map_or(chars.len(), |p| i + p);
        (chars[i..end].iter().collect(), end)
    };
    loop {
        while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ';') {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        // Addresses: `N`, `$`, `/re/`, `\cREc`, `first~step`, `addr1,addr2`, `addr,+N`, `!`.
        for _ in 0..2 {
            match chars[i] {
                c if c.is_ascii_digit() || c == '$' => {
                    while i < chars.len() && (chars[i].is_ascii_digit() || "$~+".contains(chars[i]))
                    {
                        i += 1;
                    }
                }
                '/' | '\\' => {
                    let delim = if chars[i] == '\\' {
                        i += 1;
                        match chars.get(i) {
                            Some(d) => *d,
                            None => return fx,
                        }
                    } else {
                        '/'
                    };
                    match skip_delimited(&chars, i + 1, delim, true) {
                        Some(end) => i = end,
                        None => return fx,
                    }
                    while i < chars.len() && "IM".contains(chars[i]) {
                        i += 1;
                    }
                }
                _ => {}
            }
            while i < chars.len() && chars[i] == ' ' {
                i += 1;
            }
            if i < chars.len() && chars[i] == ',' {
                i += 1;
                while i < chars.len() && chars[i] == ' ' {
                    i += 1;
                }
                if i < chars.len() && chars[i] == '+' {
                    i += 1;
                }
                continue;
            }
            break;
        }
        while i < chars.len() && (chars[i] == '!' || chars[i] == ' ') {
            i += 1;
        }
        let Some(&command) = chars.get(i) else {
            return fx;
        };
        i += 1;
        match command {
            // A block opens a new command list: no separator needed after it.
            '{' => continue,
            '}' => {}
            '#' => i = rest_of_line(i).1,
            c if SED_SIMPLE.contains(c) => {
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == ' ') {
                    i += 1;
                }
            }
            ':' | 'b' | 't' | 'T' | 'v' => {
                // GNU sed reads a label up to a blank or `;` and consumes that character: what
                // follows a blank is the next command (`b x w FILE` writes FILE).
                while i < chars.len() && matches!(chars[i], ' ' | '\t') {
                    i += 1;
                }
                while i < chars.len() && !chars[i].is_whitespace() && chars[i] != ';' {
                    i += 1;
                }
                i += 1;
                continue;
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line; `a\` continues on the next lines.
                loop {
                    let (line, end) = rest_of_line(i);
                    i = end + 1;
                    if !line.ends_with('\\') || i >= chars.len() {
                        break;
                    }
                }
            }
            'r' | 'R' => {
                let (file, end) = rest_of_line(i);
                fx.reads.push(file.trim().to_string());
                i = end;
            }
            'w' | 'W' => {
                let (file, end) = rest_of_line(i);
                fx.writes.push(file.trim().to_string());
                i = end;
            }
            'e' => {
                let (cmd, end) = rest_of_line(i);
                let cmd = cmd.trim().to_string();
                fx.exec.push((!cmd.is_empty()).then_some(cmd));
                i = end;
            }
            's' | 'y' => {
                let Some(&delim) = chars.get(i) else {
                    return fx;
                };
                if delim == '\n' || delim == '\\' {
                    return fx;
                }
                let Some(mid) = skip_delimited(&chars, i + 1, delim, command == 's') else {
                    return fx;
                };
                let Some(end) = skip_delimited(&chars, mid, delim, false) else {
                    return fx;
                };
                i = end;
                if command == 's' {
                    while i < chars.len() {
                        match chars[i] {
                            'e' => fx.exec.push(None),
                            'w' => {
                                let (file, end) = rest_of_line(i + 1);
                                fx.writes.push(file.trim().to_string());
                                i = end;
                                break;
                            }
                            c if c.is_ascii_digit() || "gpiImM".contains(c) => {}
                            _ => break,
                        }
                        i += 1;
                    }
                }
            }
            _ => return fx,
        }
        while i < chars.len() && chars[i] == ' ' {
            i += 1;
        }
        if i < chars.len() && !matches!(chars[i], ';' | '\n' | '}' | '#') {
            return fx;
        }
    }
    fx.understood = true;
    fx
}

/// Index just past the next unescaped `delim` from `start`. In a regular expression (`regex`),
/// a bracket expression hides the delimiter, as GNU and BSD sed read it (`s/[/]/x/w f` writes f).
fn skip_delimited(chars: &[char], start: usize, delim: char, regex: bool) -> Option<usize> {
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == delim => return Some(i + 1),
            '\n' => return None,
            '[' if regex => i = skip_bracket(chars, i + 1)?,
            _ => i += 1,
        }
    }
    None
}

/// Index just past the `]` closing the bracket expression whose content starts at `start`:
/// a leading `^`, a leading `]`, and `[:class:]`, `[=e=]`, `[.c.]` are part of it.
fn skip_bracket(chars: &[char], start: usize) -> Option<usize> {
    let mut i = start;
    if chars.get(i) == Some(&'^') {
        i += 1;
    }
    if chars.get(i) == Some(&']') {
        i += 1;
    }
    while i < chars.len() {
        match chars[i] {
            ']' => return Some(i + 1),
            '\n' => return None,
            '[' if matches!(chars.get(i + 1), Some(':' | '=' | '.')) => {
                let kind = chars[i + 1];
                let close = (i + 2..chars.len().saturating_sub(1))
                    .find(|&j| chars[j] == kind && chars[j + 1] == ']')?;
                i = close + 2;
            }
            _ => i += 1,
        }
    }
    None
}

/// What an awk program does besides reading its input and printing.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct AwkEffects {
    /// `system(…)` is called.
    pub system: bool,
    /// Output redirected to a file (`print > "f"`, `printf … >> f`).
    pub redirect: bool,
    /// The redirection targets: the file name when it is a string literal.
    pub targets: Vec<Option<String>>,
    /// A command pipe (`print | "cmd"`, `"cmd" | getline`).
    pub pipe: bool,
    /// `@load`, `@include`, `ENVIRON`, `PROCINFO`: extensions or the environment; `ARGV`, whose
    /// elements name the files awk reads next; gawk's `/inet/…` special files (network).
    pub other: bool,
    /// `getline < FILE` where FILE is not one string literal, or a `<` the reader cannot tell
    /// from one in a program that calls `getline`: a file whose name is not known.
    pub reads_computed_file: bool,
    /// The files `getline < "FILE"` reads, as written.
    pub reads: Vec<String>,
    /// Every string literal of the program (escapes decoded): any of them may end up naming a
    /// file.
    pub strings: Vec<String>,
    /// A regex literal that may be code misread as one (`4. / 2; system(c); y = 1 / 1` read
    /// with the wrong grammar): what it hides is not known.
    pub unreadable: bool,
}

impl AwkEffects {
    pub fn any(&self) -> bool {
        self.system
            || self.redirect
            || self.pipe
            || self.other
            || self.reads_computed_file
            || self.unreadable
    }
}

/// The string literals of `program`, located through `masked` (the same text with their
/// contents blanked, quotes kept), with `\"`, `\\` and `\/` decoded.
fn awk_strings(program: &str, masked: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let bytes = masked.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'"' {
            at += 1;
            continue;
        }
        let Some(len) = masked[at + 1..].find('"') else {
            break;
        };
        let end = at + 1 + len;
        let raw = program.get(at + 1..end).unwrap_or("");
        let mut text = String::with_capacity(raw.len());
        let mut chars = raw.chars();
        while let Some(c) = chars.next() {
            match (c, chars.clone().next()) {
                ('\\', Some(next @ ('"' | '\\' | '/'))) => {
                    text.push(next);
                    chars.next();
                }
                _ => text.push(c),
            }
        }
        out.push((at, text));
        at = end + 1;
    }
    out
}

/// Reads an awk program with its strings and regex literals masked, so that `/a|b/` and
/// `x || y` are not pipes and `$3 > 5` is not a redirection.
pub(crate) fn awk_effects(program: &str) -> AwkEffects {
    let (code, hides_code) = mask_awk_literals(program);
    let mut fx = AwkEffects {
        unreadable: hides_code,
        ..AwkEffects::default()
    };
    let words: Vec<(usize, &str)> = word_positions(&code);
    let mut getline = false;
    for (_, word) in &words {
        match *word {
            "system" => fx.system = true,
            // `ARGV[1] = "~/.aws/credentials"` makes awk read that file next, as if named on
            // the command line; any use of the array counts (`split(s, ARGV)`, `sub(…, ARGV[1])`).
            "ENVIRON" | "PROCINFO" | "ARGV" => fx.other = true,
            "getline" => getline = true,
            _ => {}
        }
    }
    let strings = awk_strings(program, &code);
    // gawk's `/inet/tcp/…` special files open network connections.
    fx.other |= strings.iter().any(|(_, s)| s.contains("/inet"));
    if getline {
        // `getline [VAR] < FILE`: with a string literal the file is known; anything else (a
        // variable, a concatenation, a parenthesised expression) is not. A `<` that compares is
        // not told apart from one that reads: fail closed.
        for (at, b) in code.bytes().enumerate() {
            if b != b'<' || code.as_bytes().get(at + 1) == Some(&b'=') {
                continue;
            }
            let operand = code[at + 1..].trim_start();
            let start = code.len() - operand.len();
            match strings.iter().find(|(s, _)| *s == start) {
                Some((_, file)) => fx.reads.push(file.clone()),
                None => fx.reads_computed_file = true,
            }
        }
    }
    fx.strings = strings.into_iter().map(|(_, s)| s).collect();
    // gawk's `@load`, `@include`, `@namespace`, and indirect calls (`f = "system"; @f(…)`),
    // which hide the called name in a string.
    fx.other |= code.contains('@');
    let bytes = code.as_bytes();
    for (at, b) in bytes.iter().enumerate() {
        if *b == b'|' {
            let doubled = bytes.get(at + 1) == Some(&b'|') || at > 0 && bytes[at - 1] == b'|';
            let coprocess = bytes.get(at + 1) == Some(&b'&');
            if !doubled || coprocess {
                fx.pipe = true;
            }
        }
    }
    // `>` redirects only inside an unparenthesised print/printf statement.
    for (start, word) in &words {
        if *word != "print" && *word != "printf" {
            continue;
        }
        let mut depth = 0i32;
        for (offset, b) in bytes.iter().enumerate().skip(start + word.len()) {
            match b {
                b'(' => depth += 1,
                b')' => depth -= 1,
                b';' | b'\n' | b'}' => break,
                b'>' if depth <= 0 => {
                    fx.redirect = true;
                    let at = offset;
                    let after = program[at..].trim_start_matches(['>', ' ', '\t']);
                    let target = after
                        .strip_prefix('"')
                        .and_then(|t| t.split_once('"'))
                        .map(|(name, _)| name.to_string());
                    fx.targets.push(target);
                    break;
                }
                _ => {}
            }
            if depth < 0 {
                break;
            }
        }
    }
    fx
}

/// Identifier-like words with their byte offsets.
fn word_positions(code: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in code.char_indices() {
        let part = c.is_ascii_alphanumeric() || c == '_';
        match (part, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, &code[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &code[s..]));
    }
    out
}

/// The program with the contents of strings and regex literals replaced by spaces (same byte
/// length), and whether a masked regex could be code misread as one (see
/// [`regex_may_hide_code`]). A `/` starts a regex unless it follows the end of an operand, as in
/// awk's grammar: a number (`4. / 2`, `1e3 / 2`, `.5 / 2`), a name, `$`, `)`, `]`, a string or a
/// regex, or a postfix `++`/`--`; then it divides.
fn mask_awk_literals(program: &str) -> (String, bool) {
    let mut out = String::with_capacity(program.len());
    let mut chars = program.char_indices().peekable();
    let mut last_significant: Option<char> = None;
    // The one before it: `x++ / 2` divides (a `/` after `++` or `--` follows an operand).
    let mut before_last: Option<char> = None;
    let mut hides_code = false;
    while let Some((at, c)) = chars.next() {
        let after_increment =
            matches!(last_significant, Some('+' | '-')) && before_last == last_significant;
        let regex = c == '/'
            && !after_increment
            && !last_significant.is_some_and(|p| {
                p.is_ascii_alphanumeric() || matches!(p, '_' | ')' | ']' | '$' | '.')
            });
        if c == '"' || regex {
            out.push(c);
            let mut escaped = false;
            let mut end = program.len();
            for (i, d) in chars.by_ref() {
                if escaped {
                    escaped = false;
                    out.push_str(&" ".repeat(d.len_utf8()));
                    continue;
                }
                if d == '\\' {
                    escaped = true;
                    out.push(' ');
                    continue;
                }
                if d == c {
                    out.push(d);
                    end = i;
                    break;
                }
                out.push_str(&" ".repeat(d.len_utf8()));
            }
            if regex {
                hides_code |= regex_may_hide_code(program.get(at + 1..end).unwrap_or(""));
            }
            before_last = last_significant;
            last_significant = Some('a');
            continue;
        }
        if c == '#' {
            for (_, d) in chars.by_ref() {
                if d == '\n' {
                    out.push('\n');
                    break;
                }
                out.push_str(&" ".repeat(d.len_utf8()));
            }
            continue;
        }
        out.push(c);
        if !c.is_whitespace() {
            before_last = last_significant;
            last_significant = Some(c);
        }
    }
    (out, hides_code)
}

/// Whether the text read as a regex literal looks like code instead: a division misread as a
/// regex would blank everything up to the next `/`, hiding `system(…)`, a pipe or a redirection
/// from the checks. A statement separator, a string, gawk's `@` or a name of an awk function
/// with effects does not belong in an ordinary regex; the reader fails closed on them.
fn regex_may_hide_code(regex: &str) -> bool {
    regex.contains([';', '\n', '"', '@'])
        || [
            "system", "getline", "print", "close", "fflush", "ENVIRON", "PROCINFO", "ARGV",
        ]
        .iter()
        .any(|word| regex.contains(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_scripts() {
        let ro = |s: &str| {
            let fx = sed_effects(s);
            fx.understood && fx.exec.is_empty() && fx.writes.is_empty()
        };
        assert!(ro("s/a/b/g"));
        assert!(ro("/re/p"));
        assert!(ro("/a|b/p"));
        assert!(ro("1,5d;s|x|y|"));
        assert!(ro("$!N; /^\\(.*\\)\\n\\1$/!P; D"));
        assert!(ro("/start/,/end/{s/a/b/;p}"));
        assert!(ro("s/a;b/c/"));
        assert_eq!(
            sed_effects("e rm -rf ~").exec,
            [Some("rm -rf ~".to_string())]
        );
        assert_eq!(sed_effects("1e id").exec, [Some("id".to_string())]);
        assert_eq!(sed_effects("s/x/y/e").exec, [None]);
        assert_eq!(sed_effects("e").exec, [None]);
        assert_eq!(sed_effects("w /etc/x").writes, ["/etc/x"]);
        assert_eq!(sed_effects("s/a/b/w /tmp/o").writes, ["/tmp/o"]);
        assert_eq!(sed_effects("/x/W out").writes, ["out"]);
        assert!(!sed_effects("s/a/b").understood);
        assert!(!sed_effects("k").understood);
        assert!(ro("s/[^/]*$//"));
        assert!(ro("/[/]/p"));
        assert_eq!(sed_effects("s/[/]/x/w /etc/x").writes, ["/etc/x"]);
        assert_eq!(sed_effects("s/[]/]/x/e").exec, [None]);
        assert_eq!(sed_effects("s/[[:punct:]/]/x/w f").writes, ["f"]);
        assert_eq!(sed_effects("b x w /etc/x").writes, ["/etc/x"]);
        assert_eq!(sed_effects(":a w /etc/x").writes, ["/etc/x"]);
        assert!(ro(":a;N;$!ba;s/\\n/ /g"));
        assert!(ro("/x/{b end};p;:end"));
    }

    #[test]
    fn awk_programs() {
        assert!(!awk_effects("/a|b/ { print $1 }").any());
        assert!(!awk_effects("$3 > 5 { print $1 }").any());
        assert!(!awk_effects("NR > 1 || x { print }").any());
        assert!(!awk_effects("{ print \"a|b>c\" }").any());
        assert!(!awk_effects("{ print ($1 > 2) }").any());
        assert!(!awk_effects("{ x = a / b; y = c / d; print x }").any());
        assert!(awk_effects("{ print > \"/etc/x\" }").redirect);
        assert!(awk_effects("{ printf \"%s\", $0 >> f }").redirect);
        assert!(awk_effects("{ print | \"sh\" }").pipe);
        assert!(awk_effects("{ \"date\" | getline d }").pipe);
        assert!(awk_effects("BEGIN { system(\"id\") }").system);
        assert!(awk_effects("BEGIN { print ENVIRON[\"HOME\"] }").other);
        assert!(awk_effects("BEGIN { f = \"system\"; @f(\"id\") }").other);
        assert!(awk_effects("{ x++ / 2; system(\"id\") / 1 }").system);
        assert!(awk_effects("{ x-- / 2; print > \"/etc/x\" / 1 }").redirect);
        assert!(!awk_effects("{ n++ } /a|b/ { print }").any());
        assert!(!awk_effects("NR < 5 { print }").any());
    }

    #[test]
    fn awk_file_reads() {
        let fx = awk_effects("BEGIN { while ((getline l < \"/etc/hosts\") > 0) print l }");
        assert!(!fx.any());
        assert_eq!(fx.reads, ["/etc/hosts"]);
        assert_eq!(fx.strings, ["/etc/hosts"]);
        assert!(awk_effects("BEGIN { getline l < f; print l }").reads_computed_file);
        assert!(awk_effects("BEGIN { getline l < (\"/a\" \"b\"); print l }").reads_computed_file);
        assert!(awk_effects("{ getline; if (NR < 5) print }").reads_computed_file);
        assert!(awk_effects("BEGIN { ARGV[1] = \"x\"; ARGC = 2 } { print }").other);
        assert!(awk_effects("BEGIN { s = \"/inet/tcp/0/h/80\"; getline x < s }").other);
        assert_eq!(
            awk_effects("{ print \"a\\\"b\", \"c\" }").strings,
            ["a\"b", "c"]
        );
    }
}
