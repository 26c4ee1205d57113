//! What a command writes to its standard output, for the next pipeline stage and for files it
//! redirects to: statically known text (`echo`, `printf`, `tr`), input passed through (`cat`,
//! `tee`), downloads and credentials carried along. Apart from the dispatch in `mod.rs` because
//! it runs after a family's rules and only reads their conclusion.

use super::secrets::{
    directory_holds_credentials, names_credentials, names_process_secrets_at, names_saved_secrets,
    prints_environment, ps_shows_environment,
};
use super::{net, operands};
use crate::Class;
use crate::ids::RuleId;
use crate::paths;
use crate::walk::{Cmd, Flow, Walker};
use crate::word::Word;

/// What the command writes to its output, for the next pipeline stage; records downloads and
/// credential reads on the way.
pub(super) fn output_flow(w: &mut Walker, cmd: &Cmd, prog: &str, mut flow: Flow) -> Flow {
    if flow.download {
        let writes = cmd
            .redirects
            .iter()
            .filter(|r| r.op.starts_with('>') || r.op.starts_with("&>"));
        for target in writes.filter_map(|r| r.target.as_ref()) {
            net::remember_download(w, target);
        }
    }
    if let Some(printed) = printed_text(w, prog, &cmd.argv[1..]) {
        flow.decode |= printed.decoded;
        flow.text = Some(printed.text);
    }
    if let Some(text) = &cmd.input.text
        && TRANSFORMERS.contains(&prog)
    {
        // Known text turned into other text: a shell reading it runs something no one wrote
        // down (`echo 'ez -es ~' | tr a-z n-za-m | sh`). `tr` is worked out; the rest count as
        // decoders.
        match tr_output(prog, &cmd.argv[1..], text) {
            Some(out) => flow.text = Some(out),
            None => flow.decode = true,
        }
    }
    if passes_input_through(prog, &cmd.argv[1..]) {
        let produced = flow.clone();
        flow = cmd.input.clone();
        flow.merge(&produced);
        flow.text = cmd.input.text.clone();
    }
    if credential_reads(w, cmd, prog) {
        flow.credentials = true;
    }
    // `cat e.txt` after `env > e.txt`: the output is the saved environment.
    let inputs = cmd.redirects.iter().filter(|r| r.op.starts_with('<'));
    if cmd
        .argv
        .get(1..)
        .unwrap_or_default()
        .iter()
        .any(|a| names_saved_secrets(w, a))
        || inputs
            .filter_map(|r| r.target.as_ref())
            .any(|t| names_saved_secrets(w, t))
    {
        flow.credentials = true;
    }
    if w.ctx.read_only_unconfined
        && let Some(word) = unchecked_path(w, prog, cmd)
    {
        let msg = format!(
            "\"{prog}\" is given {word}, a path no check can see before it runs; with no sandbox \
             level here to enforce read-only, it may name a credential store"
        );
        w.reason(Class::Normal, RuleId::SecretsUncheckedPath, msg, cmd.span);
    }
    if let Some((dir, process)) = recursive_secret_read(w, prog, &cmd.argv[1..]) {
        flow.credentials = true;
        if process {
            let msg = format!(
                "\"{prog}\" reads {dir} recursively, which holds other processes' environments \
                 and command lines"
            );
            w.reason(Class::Normal, RuleId::SecretsProcess, msg, cmd.span);
        } else {
            let msg = format!(
                "\"{prog}\" reads {dir} recursively, which holds credential stores (~/.ssh, \
                 ~/.aws, …); their content would reach the model"
            );
            w.reason(
                Class::Dangerous,
                RuleId::SecretsCredentialFile,
                msg,
                cmd.span,
            );
        }
    }
    if prog == "ps" && ps_shows_environment(&cmd.argv[1..]) {
        flow.credentials = true;
        let msg = "\"ps e\" shows other processes' environments, which hold secrets";
        w.reason(Class::Normal, RuleId::SecretsProcessList, msg, cmd.span);
    }
    if prints_environment(prog, &cmd.argv[1..]) {
        // Reading one's own environment is fine; sending it anywhere is not.
        flow.credentials = true;
    }
    flow.no_dash = output_never_dashed(prog, &cmd.argv[1..]);
    flow
}

/// The read checks of a statement with redirections only (`$(<f)`): credentials and other
/// processes' files, and, with no sandbox level to enforce read-only, a path no check can see.
pub(super) fn redirect_only_reads(w: &mut Walker, cmd: &Cmd) {
    // `$(<f)` is `$(cat f)` as far as what reaches the output goes.
    let prog = "<";
    credential_reads(w, cmd, prog);
    if w.ctx.read_only_unconfined
        && let Some(word) = unchecked_path(w, prog, cmd)
    {
        let msg = format!(
            "the redirection reads {word}, a path no check can see before it runs; with no \
             sandbox level here to enforce read-only, it may name a credential store"
        );
        w.reason(Class::Normal, RuleId::SecretsUncheckedPath, msg, cmd.span);
    }
}

/// Whether `prog` reads a credential, through an operand or an input redirection (`< f`, `0<f`,
/// `{fd}<f`, `<>f`, and a redirection with no program at all, `$(<f)`), with the reason added.
/// One check for every way a file reaches a command, so `$(<~/.ssh/id_rsa)` is judged as `cat
/// ~/.ssh/id_rsa` is.
pub(super) fn credential_reads(w: &mut Walker, cmd: &Cmd, prog: &str) -> bool {
    let operands = cmd.argv.get(1..).unwrap_or_default();
    let inputs: Vec<&Word> = cmd
        .redirects
        .iter()
        .filter(|r| r.op.starts_with('<') && !r.op.starts_with("<<"))
        .filter_map(|r| r.target.as_ref())
        .collect();
    let reads_credentials = operands.iter().any(|a| names_credentials(w, a))
        || inputs.iter().any(|t| names_credentials(w, t));
    if !reads_credentials {
        return false;
    }
    let process = operands.iter().any(|a| names_process_secrets_at(w, a))
        || inputs.iter().any(|t| names_process_secrets_at(w, t));
    if process {
        let msg = format!(
            "\"{prog}\" reads another process's environment, command line or memory, which hold secrets"
        );
        w.reason(Class::Normal, RuleId::SecretsProcess, msg, cmd.span);
    } else {
        let msg = format!("\"{prog}\" reads a credential file; its content would reach the model");
        w.reason(
            Class::Dangerous,
            RuleId::SecretsCredentialFile,
            msg,
            cmd.span,
        );
    }
    true
}

/// A directory that `prog ARGS` reads recursively and that holds secrets: a credential store
/// or one above it (the home directory, `/`), as written, with `true` when it is `/proc`
/// (other processes' environments) rather than a credential store. Programs that only list
/// names (`ls -R`, `du`, `tree`, `fd`, `find` without `-exec`) do not count. With no directory
/// named, the ones that search the working directory search where the script `cd`'d to
/// (`cd ~ && grep -r x`).
fn recursive_secret_read(w: &Walker, prog: &str, args: &[Word]) -> Option<(String, bool)> {
    use super::{long_is, short_has};
    let opts: Vec<&str> = super::options(args).map(|a| a.text.as_str()).collect();
    let has = |short: &[char], long: &[&str]| {
        opts.iter()
            .any(|o| short.iter().any(|c| short_has(o, *c)) || long.iter().any(|l| long_is(o, l)))
    };
    // Whether the first operand is a pattern (not a path) and whether the working directory
    // is searched when no path is named.
    let (pattern_first, searches_cwd) = match prog {
        // `rg --files` lists names only.
        "rg" if opts.contains(&"--files") => return None,
        "rg" | "ag" | "ack" | "ack-grep" => (true, true),
        "grep" | "egrep" | "fgrep" | "ugrep" | "zgrep" => {
            let recursive = has(&['r', 'R'], &["--recursive", "--dereference-recursive"])
                || opts.iter().any(|o| {
                    o.ends_with("recurse") && (o.starts_with("-d") || long_is(o, "--directories"))
                })
                || args
                    .windows(2)
                    .any(|p| p[0].text == "-d" && p[1].text == "recurse");
            if !recursive {
                return None;
            }
            (true, true)
        }
        // `find` itself lists names; what it runs on each file reads them.
        "find"
            if args
                .iter()
                .any(|a| matches!(a.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")) =>
        {
            (false, true)
        }
        "tar" | "bsdtar" | "rsync" | "7z" | "7za" | "7zr" => (false, false),
        "zip" if has(&['r', 'R'], &["--recurse-paths", "--recurse-patterns"]) => (false, false),
        "cp" if has(&['r', 'R', 'a'], &["--recursive", "--archive"]) => (false, false),
        "scp" if has(&['r'], &[]) => (false, false),
        "diff" if has(&['r'], &["--recursive"]) => (false, false),
        _ => return None,
    };
    let explicit_pattern = has(&['e', 'f'], &["--regexp", "--file"]);
    let mut operands = super::operands(args).into_iter();
    if pattern_first && !explicit_pattern {
        operands.next();
    }
    // `find`'s paths come before its expression.
    let operands: Vec<&Word> = if prog == "find" {
        args.iter()
            .take_while(|a| !a.text.starts_with(['-', '(', '!']) || a.text == "-")
            .collect()
    } else {
        operands.collect()
    };
    let judge = |text: &str, shown: &str| -> Option<(String, bool)> {
        let dirs = super::secrets::absolutes_for_match(w, text);
        if dirs.iter().any(|d| directory_holds_credentials(w, d)) {
            return Some((shown.to_string(), false));
        }
        dirs.iter()
            .any(|d| d == std::path::Path::new("/proc"))
            .then(|| (shown.to_string(), true))
    };
    if operands.is_empty() && searches_cwd {
        return judge(".", "the working directory");
    }
    operands.into_iter().find_map(|a| {
        if a.dynamic || crate::pattern::has_pattern(&a.text) {
            let known = if a.dynamic { &a.prefix } else { &a.text };
            return super::secrets::pattern_may_hold_credentials(w, known, a.dynamic)
                .then(|| (a.text.clone(), false));
        }
        (!a.text.is_empty())
            .then(|| judge(&a.text, &a.text))
            .flatten()
    })
}

/// Builtins and programs that never open a file their arguments name.
#[rustfmt::skip]
const NEVER_OPENS_OPERANDS: &[&str] = &[
    "echo", "printf", "test", "[", "true", "false", ":", "basename", "dirname", "expr", "seq",
    "sleep", "exit", "return", "shift", "local", "export", "declare", "typeset", "readonly",
    "let", "set", "unset", "break", "continue", "cd", "pushd", "popd", "read", "shopt",
];

/// Programs that read more arguments, file names among them, from `@FILE` (binutils, compilers).
#[rustfmt::skip]
pub(super) const RESPONSE_FILES: &[&str] = &[
    "strings", "readelf", "objdump", "nm", "size", "addr2line", "c++filt", "ar", "ranlib",
    "objcopy", "strip", "elfedit", "gcc", "g++", "cc", "c++", "clang", "clang++", "ld", "javac",
    "java",
];

/// For [`crate::Context::read_only_unconfined`]: the first argument or input redirect of `cmd`
/// whose path the deny-read list cannot be checked against before the command runs: computed at
/// run time (`cat $(cat list)`), relative while the working directory is unknown (after
/// `cd "$D"`), or at or below a symbolic link or an unread directory the caller listed
/// (`cat docs/key` where `docs` links to `~/.ssh`).
fn unchecked_path(w: &Walker, prog: &str, cmd: &Cmd) -> Option<String> {
    if NEVER_OPENS_OPERANDS.contains(&prog) {
        return None;
    }
    // File names read from a file or from input: the names themselves are never seen.
    let operands = cmd.argv.get(1..).unwrap_or_default();
    let list_option = operands.iter().find(|word| {
        let text = word.text.as_str();
        text.starts_with("--files0-from")
            || text.starts_with("--files-from")
            || (text.starts_with('@') && text.len() > 1 && RESPONSE_FILES.contains(&prog))
    });
    if let Some(word) = list_option {
        return Some(format!(
            "\"{}\", whose file names come from a file or the input",
            word.text
        ));
    }
    let inputs = cmd.redirects.iter().filter(|r| r.op.starts_with('<'));
    let words = operands
        .iter()
        .chain(inputs.filter_map(|r| r.target.as_ref()));
    words
        .filter(|word| !word.is_option() || word.text.contains('='))
        .find_map(|word| {
            if word.dynamic {
                return Some(format!("\"{}\", computed at run time", word.text));
            }
            let text = word
                .text
                .split_once('=')
                .map_or(word.text.as_str(), |(opt, value)| {
                    if opt.starts_with('-') {
                        value
                    } else {
                        word.text.as_str()
                    }
                });
            if text.is_empty() || text.starts_with('-') {
                return None;
            }
            if !text.starts_with(['/', '~']) && w.cwds.is_unknown() {
                return Some(format!(
                    "\"{text}\", relative to a directory known only at run time"
                ));
            }
            let hazards = w.ctx.nested_git.as_deref()?;
            let through = super::secrets::absolutes_for_match(w, text)
                .into_iter()
                .find(|p| hazards.iter().any(|h| p.starts_with(paths::normalize(h))))?;
            Some(format!(
                "\"{text}\", which goes through {} (a symbolic link, another repository or a \
                 directory not read)",
                through.display()
            ))
        })
}

/// Whether every word `prog ARGS` prints is known not to start with `-`, so that substituting
/// it as an argument cannot make an option: commit ids (`git merge-base`, `git rev-parse REV`,
/// `git rev-list`), branch names (`git branch --show-current`, `git symbolic-ref --short`,
/// `git rev-parse --abbrev-ref`; git refuses names starting with `-`), paths under a named
/// directory (`git ls-files src`), absolute paths (`pwd`, `git rev-parse --show-toplevel`),
/// numbers (`nproc`, `id -u`).
fn output_never_dashed(prog: &str, args: &[Word]) -> bool {
    if args.iter().any(|a| a.dynamic || a.glob) {
        return false;
    }
    let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
    let plain_operands = |allowed: &[&str], rest: &[&str]| {
        rest.iter()
            .all(|t| !t.starts_with('-') || allowed.contains(t))
    };
    match prog {
        "pwd" | "nproc" => texts.iter().all(|t| matches!(*t, "-P" | "-L")),
        "id" => matches!(texts.as_slice(), ["-u" | "-g" | "-ur" | "-gr"]),
        "git" => match texts.as_slice() {
            ["merge-base", rest @ ..] => {
                plain_operands(&["--fork-point", "--octopus", "--all"], rest)
            }
            ["rev-parse", rest @ ..] => {
                !rest.is_empty()
                    && !rest.contains(&"--")
                    && plain_operands(
                        &[
                            "--verify",
                            "-q",
                            "--quiet",
                            "--short",
                            "--abbrev-ref",
                            "--symbolic-full-name",
                            "--show-toplevel",
                            "--absolute-git-dir",
                        ],
                        rest,
                    )
            }
            ["rev-list", rest @ ..] => {
                plain_operands(
                    &[
                        "--reverse",
                        "--first-parent",
                        "--no-merges",
                        "--merges",
                        "--count",
                        "--all",
                        "--topo-order",
                        "--date-order",
                    ],
                    rest,
                ) && !rest.contains(&"--")
            }
            ["branch", "--show-current"] => true,
            ["symbolic-ref", "--short" | "-q", ..] => texts.len() <= 4,
            ["ls-files", rest @ ..] => {
                let (options, paths): (Vec<&&str>, Vec<&&str>) =
                    rest.iter().partition(|t| t.starts_with('-'));
                !paths.is_empty()
                    && options.iter().all(|o| {
                        matches!(
                            **o,
                            "--cached"
                                | "-c"
                                | "--modified"
                                | "-m"
                                | "--others"
                                | "-o"
                                | "--exclude-standard"
                                | "--deleted"
                                | "-d"
                        )
                    })
                    && paths.iter().all(|p| {
                        p.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                            && !p.contains(['*', '?', '[', ':'])
                    })
            }
            _ => false,
        },
        _ => false,
    }
}

/// Records files written with statically known text, so that running them later is read.
pub(super) fn remember_written(w: &mut Walker, cmd: &Cmd, prog: &str, flow: &Flow) {
    if flow.credentials {
        // `env > e.txt`, `printenv | tee e.txt`: the file now holds secrets.
        let targets = written_targets(cmd, prog);
        for target in targets {
            for path in paths::resolve_all(target, &w.cwds, w.ctx) {
                w.secrets_written.push(path);
            }
        }
        w.secrets_written.truncate(32);
    }
    let Some(text) = &flow.text else { return };
    for target in written_targets(cmd, prog) {
        for path in paths::resolve_all(target, &w.cwds, w.ctx) {
            w.written.retain(|(p, _)| *p != path);
            w.written.push((path, text.clone()));
        }
    }
    w.written.truncate(32);
}

/// The files a command's output goes to: its `>` redirections, and `tee`'s operands.
fn written_targets<'c>(cmd: &'c Cmd, prog: &str) -> Vec<&'c Word> {
    let mut targets: Vec<&Word> = cmd
        .redirects
        .iter()
        .filter(|r| matches!(r.op.as_str(), ">" | ">|" | "&>"))
        .filter_map(|r| r.target.as_ref())
        .collect();
    if prog == "tee" {
        targets.extend(operands(&cmd.argv[1..]));
    }
    targets
}

/// The text a script file was given earlier in this script, if it was.
pub(crate) fn written_text(w: &Walker, file: &Word) -> Option<String> {
    let paths = paths::resolve_all(file, &w.cwds, w.ctx);
    w.written
        .iter()
        .rev()
        .find(|(p, _)| paths.contains(p))
        .map(|(_, t)| t.clone())
}

/// The text a program gets when it opens `file`, where the script shows it: the known input
/// for `-`, `/dev/stdin` and its aliases (a heredoc, a here-string, `printf … |`), a process
/// substitution's output (`<(printf …)`), or a file written earlier with known text.
pub(crate) fn visible_file_text(w: &Walker, input: &Flow, file: &Word) -> Option<String> {
    if super::tools::is_stdin(file) {
        return input.text.clone();
    }
    file.flow.text.clone().or_else(|| written_text(w, file))
}

/// What `echo` or `printf` prints, when statically known.
struct Printed {
    text: String,
    /// Escape sequences were decoded: an obfuscated payload.
    decoded: bool,
}

fn printed_text(w: &Walker, prog: &str, args: &[Word]) -> Option<Printed> {
    use crate::word::{Escapes, decode_escapes};
    if args.iter().any(|a| a.dynamic) {
        return None;
    }
    let has_escapes = |t: &str| {
        t.contains("\\x")
            || t.contains("\\u")
            || t.contains("\\0")
            || t.chars()
                .zip(t.chars().skip(1))
                .any(|(a, b)| a == '\\' && b.is_digit(8))
    };
    match prog {
        // `$(dirname "$PWD")`, `$(realpath ..)`, `$(readlink -f ..)`: paths computed from the
        // working directory are worked out, so `rm -rf "$(dirname "$(pwd)")"` is judged as
        // `rm -rf ~` when the project sits in home, instead of as an unknown target.
        "dirname" => {
            let mut text = String::new();
            for arg in args {
                if arg.is_option() {
                    // `-z` changes the separator; anything else is not modelled.
                    return None;
                }
                text.push_str(&dirname_of(&arg.text));
                text.push('\n');
            }
            (!text.is_empty()).then_some(Printed {
                text,
                decoded: false,
            })
        }
        "realpath" | "readlink" => {
            let (opts, names): (Vec<&Word>, Vec<&Word>) = args.iter().partition(|a| a.is_option());
            // Only the canonicalising forms print a path made from the operand; `readlink`
            // alone prints a link's content, which is not known.
            let canonical = |o: &&Word| match prog {
                "realpath" => matches!(o.text.as_str(), "-e" | "-m" | "-s" | "-L" | "-P" | "-q"),
                _ => matches!(o.text.as_str(), "-f" | "-e" | "-m" | "-n" | "-q" | "-s"),
            };
            let canonicalising = prog == "realpath"
                || opts
                    .iter()
                    .any(|o| o.text != "-n" && o.text != "-q" && o.text != "-s");
            if !opts.iter().all(canonical) || !canonicalising || names.is_empty() {
                return None;
            }
            let mut text = String::new();
            for name in names {
                let resolved = paths::resolve_all(name, &w.cwds, w.ctx);
                let [path] = resolved.as_slice() else {
                    return None;
                };
                text.push_str(&path.to_string_lossy());
                text.push('\n');
            }
            Some(Printed {
                text,
                decoded: false,
            })
        }
        "pwd" => {
            let dir = w.cwds.single()?;
            Some(Printed {
                text: format!("{}\n", dir.display()),
                decoded: false,
            })
        }
        "echo" => {
            let mut i = 0;
            let mut escapes = false;
            let mut newline = true;
            while let Some(opt) = args.get(i).filter(|a| {
                a.text.len() > 1
                    && a.text.starts_with('-')
                    && a.text[1..].chars().all(|c| "neE".contains(c))
            }) {
                escapes |= opt.text.contains('e');
                newline &= !opt.text.contains('n');
                i += 1;
            }
            let joined: Vec<&str> = args[i..].iter().map(|a| a.text.as_str()).collect();
            let raw = joined.join(" ");
            // dash's echo (and bash's with `xpg_echo`) decodes escapes without `-e`: a text
            // with escape sequences is obfuscated content either way.
            let decoded = has_escapes(&raw);
            let mut text = if escapes {
                decode_escapes(&raw, Escapes::Printf)
            } else {
                raw
            };
            if newline {
                text.push('\n');
            }
            Some(Printed { text, decoded })
        }
        "printf" => {
            let format = args.first()?;
            if format.text.starts_with('-') {
                return None;
            }
            // Only `%s` and `%%` are worked out (`printf 'output=%s\n' ~/.bashrc`): the format
            // is repeated while arguments remain, as printf does; any other conversion is not.
            let pieces: Vec<String> = format
                .text
                .split("%s")
                .map(|p| p.replace("%%", "\u{e000}"))
                .collect();
            if pieces.iter().any(|p| p.contains('%')) {
                return None;
            }
            let pieces: Vec<String> = pieces
                .iter()
                .map(|p| decode_escapes(p, Escapes::Printf).replace('\u{e000}', "%"))
                .collect();
            let values: Vec<&str> = args[1..].iter().map(|a| a.text.as_str()).collect();
            let per_round = pieces.len() - 1;
            let mut text = String::new();
            let mut next = 0;
            loop {
                for (n, piece) in pieces.iter().enumerate() {
                    text.push_str(piece);
                    if n < per_round {
                        text.push_str(values.get(next).copied().unwrap_or(""));
                        next += 1;
                    }
                }
                if per_round == 0 || next >= values.len() {
                    break;
                }
            }
            Some(Printed {
                text,
                decoded: has_escapes(&format.text),
            })
        }
        _ => None,
    }
}

/// Programs whose output is their input transformed character by character or field by field.
#[rustfmt::skip]
const TRANSFORMERS: &[&str] = &[
    "tr", "sed", "awk", "gawk", "mawk", "nawk", "rev", "cut", "fold", "paste", "perl", "iconv",
    "dd", "xxd", "od", "fmt", "column", "expand", "unexpand", "sort", "tac", "nl", "jq", "yq",
    "python", "python3", "ruby", "node", "base32", "basenc",
];

/// What `tr SET1 SET2` (or `tr -d SET`) prints for `text`, when the sets are simple (ranges,
/// `[:lower:]`, `[:upper:]`, escapes); `None` otherwise.
fn tr_output(prog: &str, args: &[Word], text: &str) -> Option<String> {
    if prog != "tr" || args.iter().any(|a| a.dynamic) {
        return None;
    }
    let (delete, sets) = match args {
        [opt, rest @ ..] if opt.text == "-d" => (true, rest),
        _ => (false, args),
    };
    if sets.iter().any(|a| a.is_option()) {
        return None;
    }
    let set1 = tr_set(&sets.first()?.text)?;
    if delete {
        if sets.len() != 1 {
            return None;
        }
        return Some(text.chars().filter(|c| !set1.contains(c)).collect());
    }
    let [_, second] = sets else { return None };
    let set2 = tr_set(&second.text)?;
    let last = *set2.last()?;
    Some(
        text.chars()
            .map(|c| match set1.iter().rposition(|s| *s == c) {
                Some(i) => set2.get(i).copied().unwrap_or(last),
                None => c,
            })
            .collect(),
    )
}

fn tr_set(spec: &str) -> Option<Vec<char>> {
    let spec = spec
        .replace("[:lower:]", "a-z")
        .replace("[:upper:]", "A-Z")
        .replace("[:digit:]", "0-9");
    if spec.contains("[:") || spec.contains("[=") || spec.contains('*') {
        return None;
    }
    let decoded = crate::word::decode_escapes(&spec, crate::word::Escapes::Printf);
    let chars: Vec<char> = decoded.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if i + 2 < chars.len() && chars[i + 1] == '-' && chars[i] <= chars[i + 2] {
            out.extend(chars[i]..=chars[i + 2]);
            i += 3;
        } else {
            out.push(chars[i]);
            i += 1;
        }
        if out.len() > 4096 {
            return None;
        }
    }
    Some(out)
}

/// `cat` and `tee` without file operands copy their input to their output.
fn passes_input_through(prog: &str, args: &[Word]) -> bool {
    match prog {
        "cat" => operands(args).iter().all(|o| o.text == "-"),
        "tee" => true,
        _ => false,
    }
}

/// What `dirname` prints for `path` (coreutils): the path without its last component and the
/// slashes before it; `.` when nothing is left, `/` for the root.
fn dirname_of(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return if path.is_empty() {
            ".".into()
        } else {
            "/".into()
        };
    }
    match trimmed.rfind('/') {
        None => ".".into(),
        Some(slash) => {
            let parent = trimmed[..slash].trim_end_matches('/');
            if parent.is_empty() {
                "/".into()
            } else {
                parent.into()
            }
        }
    }
}

/// `strings @/dev/stdin <<< ~/.ssh/id_rsa`: a program that reads more arguments from `@FILE`,
/// with FILE its standard input and that input known, is the command with those words in
/// place of `@FILE` (split at blanks as libiberty's `buildargv` does, quotes removed). `None`
/// when nothing is to be spliced.
pub(super) fn response_file_argv(cmd: &Cmd) -> Option<Vec<Word>> {
    let first = cmd.argv.first().filter(|f| !f.dynamic)?;
    if !RESPONSE_FILES.contains(&super::basename(&first.text)) {
        return None;
    }
    let text = cmd.input.text.as_ref()?;
    let at = cmd.argv.iter().position(|a| {
        !a.dynamic
            && matches!(
                a.text.as_str(),
                "@/dev/stdin" | "@/dev/fd/0" | "@/proc/self/fd/0" | "@/proc/thread-self/fd/0"
            )
    })?;
    let span = cmd.argv[at].span;
    let words = text
        .split_whitespace()
        .map(|w| Word::literal(&w.replace(['\'', '"', '\\'], ""), span));
    let mut argv = cmd.argv[..at].to_vec();
    argv.extend(words);
    argv.extend(cmd.argv[at + 1..].iter().cloned());
    Some(argv)
}

/// Whether `prog ARGS` reads the names of files to open from its standard input: `tar -T -`
/// (`--files-from=-`, `/dev/stdin`), `cpio -o`/`-p`, `zip -@`, `pax -w` with no operand,
/// `--files0-from=-` (sort, wc, du), `rsync --files-from=-`, `file -f -`.
fn reads_names_from_input(prog: &str, args: &[Word]) -> bool {
    let stdin = |v: &str| matches!(v, "-" | "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0");
    let valued = |short: &str, long: &str| {
        args.iter().enumerate().any(|(i, a)| {
            let t = a.text.as_str();
            let next = || args.get(i + 1).is_some_and(|n| stdin(&n.text));
            (!short.is_empty() && t == short && next())
                || (!short.is_empty() && t.strip_prefix(short).is_some_and(stdin))
                || t.split_once('=')
                    .is_some_and(|(n, v)| n.len() > 3 && long.starts_with(n) && stdin(v))
                || (t.len() > 3 && long.starts_with(t) && next())
        })
    };
    match prog {
        "tar" | "bsdtar" | "gtar" => valued("-T", "--files-from"),
        "rsync" => valued("", "--files-from"),
        "sort" | "wc" | "du" => valued("", "--files0-from"),
        "file" => valued("-f", "--files-from"),
        "zip" => args
            .iter()
            .any(|a| a.text == "-@" || a.text == "--names-stdin"),
        "cpio" => args.iter().any(|a| {
            a.is_option()
                && (!a.text.starts_with("--") && (a.text.contains('o') || a.text.contains('p'))
                    || super::long_is(&a.text, "--create")
                    || super::long_is(&a.text, "--pass-through"))
        }),
        "pax" => {
            args.iter().any(|a| a.is_option() && a.text.contains('w'))
                && !super::operands(args)
                    .iter()
                    .any(|o| !o.text.starts_with('-'))
        }
        _ => false,
    }
}

/// `tar -cf out.tar -T - <<< ~/.ssh/id_rsa`, `zip out.zip -@ <<< ~/.ssh/id_rsa`: a program
/// that reads the names of the files it opens from its input, with that input known, reads
/// each name given there; one that names a credential store is a credential read.
pub(super) fn names_from_input(w: &mut Walker, cmd: &Cmd, prog: &str) {
    let Some(text) = &cmd.input.text else {
        return;
    };
    if !reads_names_from_input(prog, cmd.argv.get(1..).unwrap_or_default()) {
        return;
    }
    let named = text
        .split(['\n', '\0'])
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .find(|name| names_credentials(w, &Word::literal(name, cmd.span)));
    if let Some(name) = named {
        let msg = format!(
            "\"{prog}\" reads the names of the files it opens from its input, which names the \
             credential file {name}"
        );
        w.reason(
            Class::Dangerous,
            RuleId::SecretsCredentialFile,
            msg,
            cmd.span,
        );
    }
}
