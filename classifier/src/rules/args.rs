//! Option parsing helpers shared by the rule families: GNU-style long options with `=` values
//! and abbreviations, clustered short flags, operands.

use crate::word::Word;

/// Whether `arg` is the long option `full` or an abbreviation of it (GNU getopt accepts any
/// unambiguous prefix; every prefix is treated as a match, which errs on the side of caution).
pub(crate) fn long_is(arg: &str, full: &str) -> bool {
    let name = arg.split_once('=').map_or(arg, |(n, _)| n);
    name.len() >= 3 && name.starts_with("--") && full.starts_with(name)
}

/// Whether the short-option cluster `arg` (`-rf`) contains `flag`.
pub(crate) fn short_has(arg: &str, flag: char) -> bool {
    arg.len() > 1 && arg.starts_with('-') && !arg.starts_with("--") && arg[1..].contains(flag)
}

/// Value of `--name=value` or of `--name value` at `args[i]`.
pub(crate) fn long_value<'w>(args: &'w [Word], i: usize, full: &str) -> Option<&'w Word> {
    let arg = &args[i];
    if !long_is(&arg.text, full) {
        return None;
    }
    if arg.text.contains('=') {
        Some(arg)
    } else {
        args.get(i + 1)
    }
}

/// The text after `=` in `--name=value`, or the whole word.
pub(crate) fn value_text(word: &Word) -> String {
    match word.text.split_once('=') {
        Some((name, value)) if name.starts_with("--") => value.to_string(),
        _ => word.text.clone(),
    }
}

/// Operands: arguments that are not options (everything after `--` counts as operand).
pub(crate) fn operands(args: &[Word]) -> Vec<&Word> {
    let mut out = Vec::new();
    let mut ended = false;
    for a in args {
        if !ended && a.text == "--" && !a.dynamic {
            ended = true;
        } else if ended || !a.is_option() {
            out.push(a);
        }
    }
    out
}

/// Options until `--` (operands excluded).
pub(crate) fn options(args: &[Word]) -> impl Iterator<Item = &Word> {
    args.iter()
        .take_while(|a| a.dynamic || a.text != "--")
        .filter(|a| a.is_option())
}

/// The part of an option word from byte `offset` on (`-S'rm …'` → `rm …`, `--opt=v` → `v`),
/// still computed when the word is. When the part is exactly a process substitution whose text
/// is known (`-K<(echo …)`), that text is the part's content, as it is for the substitution
/// written as a word of its own.
pub(crate) fn tail(word: &Word, offset: usize) -> Word {
    let mut part = Word {
        text: word.text.get(offset..).unwrap_or("").to_string(),
        prefix: word.prefix.get(offset..).unwrap_or("").to_string(),
        attached_text: None,
        ..word.clone()
    };
    if word.dynamic && offset == word.prefix.len() && word.attached_text.is_some() {
        part.flow.text.clone_from(&word.attached_text);
    }
    part
}

/// One option as the program's getopt sees it, wherever its value was written.
#[derive(Debug, Clone)]
pub(crate) struct Opt {
    /// `-c`, or the full long name (`--split-string` for `--split=…`).
    pub name: String,
    /// The value: attached (`-c0`, `-S'…'`, `--opt=v`) or the next word.
    pub value: Option<Word>,
}

/// Splits the option word `args[i]` the way getopt does: a short cluster `-iS'…'` is `-i` and
/// `-S` with an attached value; `--name=value` carries its value; an option in `with_value`
/// written alone takes the next word. Returns the options and how many words they use.
pub(crate) fn split_option(args: &[Word], i: usize, with_value: &[&str]) -> (Vec<Opt>, usize) {
    split_option_with(args, i, with_value, &[])
}

/// [`split_option`] where `flags` are long options without a value that must not be read as
/// abbreviations of longer ones (`tar --list` is not `--listed-incremental`).
pub(crate) fn split_option_with(
    args: &[Word],
    i: usize,
    with_value: &[&str],
    flags: &[&str],
) -> (Vec<Opt>, usize) {
    let word = &args[i];
    let text = if word.dynamic {
        word.prefix.as_str()
    } else {
        word.text.as_str()
    };
    if let Some(long) = text.strip_prefix("--") {
        let name = long.split_once('=').map_or(long, |(n, _)| n);
        let arg = format!("--{name}");
        if flags.contains(&arg.as_str()) {
            return (
                vec![Opt {
                    name: arg,
                    value: None,
                }],
                1,
            );
        }
        let full = with_value
            .iter()
            .find(|f| **f == arg)
            .or_else(|| with_value.iter().find(|f| long_is(&arg, f)))
            .copied();
        return match (long.split_once('='), full) {
            (Some(_), _) => {
                let value = tail(word, 2 + name.len() + 1);
                let name = full.map_or(arg, str::to_string);
                (
                    vec![Opt {
                        name,
                        value: Some(value),
                    }],
                    1,
                )
            }
            (None, Some(full)) => (
                vec![Opt {
                    name: full.to_string(),
                    value: args.get(i + 1).cloned(),
                }],
                2,
            ),
            (None, None) => (
                vec![Opt {
                    name: arg,
                    value: None,
                }],
                1,
            ),
        };
    }
    let mut out = Vec::new();
    for (pos, c) in text.char_indices().skip(1) {
        let name = format!("-{c}");
        if with_value.contains(&name.as_str()) {
            let offset = pos + c.len_utf8();
            if offset < word.text.len() {
                out.push(Opt {
                    name,
                    value: Some(tail(word, offset)),
                });
                return (out, 1);
            }
            out.push(Opt {
                name,
                value: args.get(i + 1).cloned(),
            });
            return (out, 2);
        }
        out.push(Opt { name, value: None });
    }
    (out, 1)
}

/// One step of [`split_args`]: a word that is not an option, or an option word with what it holds.
pub(crate) enum Arg<'w> {
    /// A word that is not an option (`--` is not special: it is an option word).
    Operand(&'w Word),
    /// An option word (for its span) and its options as [`split_option`] reads them; a value in
    /// the next word is taken with it.
    Options(&'w Word, Vec<Opt>),
}

/// The words of `args` in order as getopt reads them, each option word split by
/// [`split_option`] with `with_value` (and the word its value uses skipped).
pub(crate) fn split_args<'w>(
    args: &'w [Word],
    with_value: &'w [&'w str],
) -> impl Iterator<Item = Arg<'w>> {
    let mut i = 0;
    std::iter::from_fn(move || {
        let word = args.get(i)?;
        if !word.is_option() {
            i += 1;
            return Some(Arg::Operand(word));
        }
        let (options, used) = split_option(args, i, with_value);
        i += used;
        Some(Arg::Options(word, options))
    })
}

/// Whether getopt reads `word` as an option word: a literal `-x`, or a computed word whose
/// known start is one (`-t"$D"`).
pub(crate) fn option_like(word: &Word) -> bool {
    word.is_option() || (word.dynamic && word.prefix.len() > 1 && word.prefix.starts_with('-'))
}

/// [`split_args`] as a program that ends its options at `--` reads its words: every word after
/// a literal `--` is an operand, and a computed word whose known start is an option is an
/// option word ([`option_like`]).
pub(crate) fn getopt_args<'w>(
    args: &'w [Word],
    with_value: &'w [&'w str],
) -> impl Iterator<Item = Arg<'w>> {
    let mut i = 0;
    let mut options_ended = false;
    std::iter::from_fn(move || {
        let word = args.get(i)?;
        if !options_ended && !word.dynamic && word.text == "--" {
            options_ended = true;
            i += 1;
            return args.get(i).map(|next| {
                i += 1;
                Arg::Operand(next)
            });
        }
        if options_ended || !option_like(word) {
            i += 1;
            return Some(Arg::Operand(word));
        }
        let (options, used) = split_option(args, i, with_value);
        i += used;
        Some(Arg::Options(word, options))
    })
}

/// A program's option table, for the positive models of read-only programs: every option the
/// program accepts that is known to be harmless, plus the risky ones the caller wants to see.
/// Anything else is reported as [`Item::Unknown`], which callers treat as not read-only.
#[derive(Default)]
pub(crate) struct Spec<'s> {
    /// Short options without a value (`"cdu"`).
    pub short_flags: &'s str,
    /// Short options with a value, attached or in the next word (`"dfr"`).
    pub short_value: &'s str,
    /// Short options with an optional value, attached only (`date -I[FMT]`).
    pub short_optional: &'s str,
    /// Long options without a value.
    pub long_flags: &'s [&'s str],
    /// Long options with a value (`--name=v` or `--name v`).
    pub long_value: &'s [&'s str],
    /// Long options with an optional value, after `=` only.
    pub long_optional: &'s [&'s str],
}

/// One item of a command line read with a [`Spec`].
#[derive(Debug, Clone)]
pub(crate) enum Item<'w> {
    /// A known option by its canonical name (`-d`, `--date`), with its value.
    Opt { name: String, value: Option<Word> },
    /// An option word the table does not know, or an ambiguous abbreviation.
    Unknown(&'w Word),
    /// An operand (everything after `--` too).
    Operand(&'w Word),
}

/// The long option `name` (`--out`) stands for: an exact entry, or the only entry it is a prefix
/// of (GNU getopt accepts unique abbreviations). `None` when unknown or ambiguous.
pub(crate) fn resolve_long<'s>(name: &str, table: &[&'s str]) -> Option<&'s str> {
    if let Some(exact) = table.iter().find(|t| **t == name) {
        return Some(exact);
    }
    let mut found = table.iter().filter(|t| t.starts_with(name));
    let first = found.next()?;
    found.next().is_none().then_some(*first)
}

/// Reads `args` the way GNU getopt does (options and operands in any order, `--` ends options,
/// clusters, attached values, unique long abbreviations), by `spec`.
pub(crate) fn getopt<'w>(args: &'w [Word], spec: &Spec) -> Vec<Item<'w>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a.dynamic || !a.is_option() {
            out.push(Item::Operand(a));
            continue;
        }
        let t = a.text.as_str();
        if t == "--" {
            out.extend(args[i..].iter().map(Item::Operand));
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let name = format!("--{name}");
            let all: Vec<&str> = spec
                .long_flags
                .iter()
                .chain(spec.long_value)
                .chain(spec.long_optional)
                .copied()
                .collect();
            let Some(full) = resolve_long(&name, &all) else {
                out.push(Item::Unknown(a));
                continue;
            };
            let offset = t.len() - attached.map_or(0, str::len);
            let value = if spec.long_value.contains(&full) {
                match attached {
                    Some(_) => Some(tail(a, offset)),
                    None => {
                        i += 1;
                        args.get(i - 1).cloned()
                    }
                }
            } else if spec.long_optional.contains(&full) {
                attached.map(|_| tail(a, offset))
            } else if attached.is_some() {
                // `--flag=x` for a flag: getopt rejects it; nothing runs.
                out.push(Item::Unknown(a));
                continue;
            } else {
                None
            };
            out.push(Item::Opt {
                name: full.to_string(),
                value,
            });
            continue;
        }
        for (pos, c) in t.char_indices().skip(1) {
            let name = format!("-{c}");
            let rest = pos + c.len_utf8();
            if spec.short_value.contains(c) {
                let value = if rest < t.len() {
                    Some(tail(a, rest))
                } else {
                    i += 1;
                    args.get(i - 1).cloned()
                };
                out.push(Item::Opt { name, value });
                break;
            }
            if spec.short_optional.contains(c) {
                let value = (rest < t.len()).then(|| tail(a, rest));
                out.push(Item::Opt { name, value });
                break;
            }
            if spec.short_flags.contains(c) {
                out.push(Item::Opt { name, value: None });
            } else {
                out.push(Item::Unknown(a));
                break;
            }
        }
    }
    out
}
