//! Brace expansion and globs in the command position (`{rm,-rf,~}`, `r{m,} -rf ~`,
//! `/bin/r? -rf ~`). Bash expands them before it looks the program up, so the command that runs
//! is one of the expansions: each is classified, and a dangerous one makes the command dangerous.
//!
//! Globs are matched against the names of programs the rules know to be dangerous in some use
//! (no file system access: the crate is pure), so `/bin/r?` is read as `rm`, `rd`, … in turn.

use super::{basename, probe_is_dangerous};
use crate::Class;
use crate::ids::RuleId;
use crate::walk::{Cmd, Walker};
use crate::word::Word;

/// How many expansions of one word are considered.
const MAX_EXPANSIONS: usize = 32;

/// Programs a glob in the command position is tried as.
#[rustfmt::skip]
const GLOB_CANDIDATES: &[&str] = &[
    "rm", "rmdir", "dd", "shred", "mkfs", "mkfs.ext4", "chmod", "chown", "mv", "cp", "tee", "sh",
    "bash", "dash", "zsh", "ksh", "python", "python3", "perl", "ruby", "node", "php", "curl",
    "wget", "nc", "ncat", "socat", "sudo", "su", "doas", "shutdown", "reboot", "poweroff", "halt",
    "kill", "pkill", "killall", "truncate", "wipefs", "fdisk", "mount", "crontab", "eval", "git",
    "find", "xargs", "env", "tar", "unzip", "docker", "podman", "ln", "install", "rsync", "scp",
    "ssh", "iptables", "systemctl", "useradd", "passwd", "chattr", "setcap",
];

/// The command after brace expansion of its first word, when that changes it: bash runs
/// exactly this (`r{m,} -rf ~` is `rm r -rf ~`).
pub(crate) fn braced_command(w: &Walker, cmd: &Cmd) -> Option<Vec<Word>> {
    let first = cmd.argv.first().filter(|f| !f.dynamic)?;
    let text = first.text.as_str();
    let expanded: Vec<String> = if text.contains('{') && text.contains('}') {
        brace_expand(text)
    } else if text.contains(',') && !text.starts_with(',') && !text.contains(['*', '?', '[']) {
        // The fallback scan of unparsable text drops braces: `{rm,-rf,~}` arrives as
        // `rm,-rf,~`. A program name with a comma is rare enough to read it as the expansion.
        // The scan also dropped the `$` quoting context: `$HOME` is looked up here.
        text.split(',')
            .map(|piece| {
                let name = piece.trim_start_matches('$').trim_matches(['{', '}']);
                match w.vars.get(name).filter(|_| piece.starts_with('$')) {
                    Some(value) => value.clone(),
                    None => piece.to_string(),
                }
            })
            .collect()
    } else {
        return None;
    };
    let expanded: Vec<String> = expanded.into_iter().filter(|s| !s.is_empty()).collect();
    if expanded.is_empty() || expanded.len() == 1 && expanded[0] == text {
        return None;
    }
    let mut argv: Vec<Word> = expanded
        .iter()
        .map(|e| Word::literal(e, first.span))
        .collect();
    argv.extend(cmd.argv[1..].iter().cloned());
    Some(argv)
}

/// Classifies the commands a glob in the first word could run; a dangerous one is reported.
pub(crate) fn command_position(w: &mut Walker, cmd: &Cmd) {
    let Some(first) = cmd.argv.first().filter(|f| !f.dynamic) else {
        return;
    };
    let text = first.text.as_str();
    if !text.contains(['*', '?', '[']) || w.in_final_scan() {
        return;
    }
    let mut candidates: Vec<Vec<Word>> = Vec::new();
    for expanded in [vec![text.to_string()]] {
        let expanded: Vec<String> = expanded.into_iter().filter(|s| !s.is_empty()).collect();
        let Some((program, rest)) = expanded.split_first() else {
            continue;
        };
        let programs: Vec<String> = if program.contains(['*', '?', '[']) {
            // A globbed directory (`/???/r?`) is dropped: the rules match on the base name, and
            // the candidate must not be globbed again.
            let (dir, name) = match program.rsplit_once('/') {
                Some((d, n)) if !d.contains(['*', '?', '[']) => (format!("{d}/"), n),
                Some((_, n)) => (String::new(), n),
                None => (String::new(), program.as_str()),
            };
            GLOB_CANDIDATES
                .iter()
                .filter(|c| glob_matches(name, c))
                .map(|c| format!("{dir}{c}"))
                .collect()
        } else {
            vec![program.clone()]
        };
        for p in programs {
            let mut argv = vec![Word::literal(&p, first.span)];
            argv.extend(rest.iter().map(|r| Word::literal(r, first.span)));
            argv.extend(cmd.argv[1..].iter().cloned());
            candidates.push(argv);
        }
    }
    for argv in candidates.into_iter().take(MAX_EXPANSIONS) {
        let shown: Vec<&str> = argv.iter().map(|a| a.text.as_str()).collect();
        let shown = shown.join(" ");
        let probe = Cmd {
            argv,
            assigns: Vec::new(),
            redirects: cmd.redirects.clone(),
            input: cmd.input.clone(),
            span: cmd.span,
        };
        if probe_is_dangerous(w, probe) {
            let msg = format!(
                "{} expands to \"{shown}\", which is dangerous",
                basename(text)
            );
            w.reason(Class::Dangerous, RuleId::ExpansionCommand, msg, first.span);
            return;
        }
    }
}

/// Bash brace expansion of one word: `r{m,}` → `rm`, `r`; `{a,b}{1,2}` → four words; `{1..3}`.
/// Words a rule cannot expand (unbalanced braces) come back as they are.
pub(crate) fn brace_expand(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    expand_into(text, &mut out, 0);
    out.truncate(MAX_EXPANSIONS);
    out
}

fn expand_into(text: &str, out: &mut Vec<String>, depth: usize) {
    if out.len() >= MAX_EXPANSIONS {
        return;
    }
    let Some((open, close, parts)) = first_group(text).filter(|_| depth < 8) else {
        out.push(text.to_string());
        return;
    };
    let (before, after) = (&text[..open], &text[close + 1..]);
    for part in parts {
        expand_into(&format!("{before}{part}{after}"), out, depth + 1);
        if out.len() >= MAX_EXPANSIONS {
            return;
        }
    }
}

/// The first expandable `{…}`: its byte range and alternatives (comma list or sequence).
fn first_group(text: &str) -> Option<(usize, usize, Vec<String>)> {
    use crate::pattern::{brace_choices, brace_groups, may_be_sequence, non_numeric_before};
    if !text.contains('{') {
        return None;
    }
    // Every group matched in one pass (see `brace_groups`), taken in order as bash would.
    let counts = non_numeric_before(text);
    for group in brace_groups(text, false) {
        let (open, close) = (group.open, group.close?);
        if group.comma {
            return Some((open, close, brace_choices(text, open, close, false)));
        }
        if may_be_sequence(&counts, open, close)
            && let Some(parts) = sequence(&text[open + 1..close])
        {
            return Some((open, close, parts));
        }
    }
    None
}

/// `{a..e}`, `{1..5}`: short sequences only.
fn sequence(inner: &str) -> Option<Vec<String>> {
    let (a, b) = inner.split_once("..")?;
    if let (Ok(x), Ok(y)) = (a.parse::<i64>(), b.parse::<i64>()) {
        let (lo, hi) = (x.min(y), x.max(y));
        if hi - lo > MAX_EXPANSIONS as i64 {
            return None;
        }
        return Some((lo..=hi).map(|n| n.to_string()).collect());
    }
    let (mut ca, mut cb) = (a.chars(), b.chars());
    let (Some(x), None, Some(y), None) = (ca.next(), ca.next(), cb.next(), cb.next()) else {
        return None;
    };
    let (lo, hi) = (x.min(y) as u32, x.max(y) as u32);
    if hi - lo > MAX_EXPANSIONS as u32 {
        return None;
    }
    Some(
        (lo..=hi)
            .filter_map(char::from_u32)
            .map(String::from)
            .collect(),
    )
}

/// Shell pattern matching of one path component: `*`, `?`, `[…]` (with `!`/`^` negation).
pub(crate) fn glob_matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    matches_from(&p, &n)
}

fn matches_from(p: &[char], n: &[char]) -> bool {
    match p.first() {
        None => n.is_empty(),
        Some('*') => (0..=n.len()).any(|i| matches_from(&p[1..], &n[i..])),
        Some('?') => !n.is_empty() && matches_from(&p[1..], &n[1..]),
        Some('[') => {
            let Some(end) = p.iter().skip(2).position(|c| *c == ']').map(|e| e + 2) else {
                return n.first() == Some(&'[') && matches_from(&p[1..], &n[1..]);
            };
            let Some(c) = n.first() else { return false };
            let class = &p[1..end];
            let (negated, class) = match class.first() {
                Some('!' | '^') => (true, &class[1..]),
                _ => (false, class),
            };
            let mut hit = false;
            let mut i = 0;
            while i < class.len() {
                if i + 2 < class.len() && class[i + 1] == '-' {
                    hit |= (class[i]..=class[i + 2]).contains(c);
                    i += 3;
                } else {
                    hit |= class[i] == *c;
                    i += 1;
                }
            }
            hit != negated && matches_from(&p[end + 1..], &n[1..])
        }
        Some(c) => n.first() == Some(c) && matches_from(&p[1..], &n[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_braces_like_bash() {
        assert_eq!(brace_expand("{rm,-rf,~}"), ["rm", "-rf", "~"]);
        assert_eq!(brace_expand("r{m,}"), ["rm", "r"]);
        assert_eq!(brace_expand("{a,b}{1,2}"), ["a1", "a2", "b1", "b2"]);
        assert_eq!(brace_expand("x{1..3}"), ["x1", "x2", "x3"]);
        assert_eq!(brace_expand("{a..c}"), ["a", "b", "c"]);
        assert_eq!(brace_expand("{single}"), ["{single}"]);
        assert_eq!(brace_expand("{a,{b,c}}"), ["a", "b", "c"]);
    }

    #[test]
    fn matches_globs() {
        assert!(glob_matches("r?", "rm"));
        assert!(glob_matches("[r]m", "rm"));
        assert!(glob_matches("r*", "rm"));
        assert!(glob_matches("*", "rm"));
        assert!(glob_matches("[!a]m", "rm"));
        assert!(!glob_matches("[!r]m", "rm"));
        assert!(glob_matches("[a-z]m", "rm"));
        assert!(!glob_matches("r?", "rmdir"));
    }
}
