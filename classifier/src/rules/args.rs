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
