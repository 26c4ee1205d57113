//! File-system writes: deletes, copies, moves, links, permission changes and in-place edits.
//! A target outside the working and scratch directories is dangerous; `rm -rf` aimed at `/`,
//! home or above has rules of its own.

use super::args::{Arg, getopt_args, split_option};
use super::basename;
use super::escapes::program_option;
use super::scripts::sed_effects;
use super::{Outcome, check_write_target, long_is, long_value, operands, short_has, value_text};
use crate::Class;
use crate::ids::RuleId;
use crate::paths::{Place, place_of};
use crate::walk::{Cmd, Walker};
use crate::word::Word;

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    let args = &cmd.argv[1..];
    let outcome = match prog {
        "rm" => rm(w, args),
        "rmdir" | "unlink" | "touch" | "mkdir" | "truncate" | "chown" | "chgrp" | "chattr"
        | "setfacl" | "mkfifo" | "mknod" => {
            all_operands(w, prog, args, skip_first_operand(prog, args))
        }
        "chmod" => chmod(w, args),
        "shred" => shred(w, args),
        "tee" => all_operands(w, prog, args, 0),
        "cp" | "install" | "ln" | "link" => destination(w, prog, args),
        "mv" => all_operands(w, prog, args, 0),
        "rsync" => rsync(w, args),
        "sed" => sed(w, cmd),
        "sort" => match sort(w, args) {
            Some(outcome) => outcome,
            None => unknown_option("sort", &super::args::getopt(args, &sort_spec()))?,
        },
        "uniq" => uniq(w, args)?,
        "dd" => dd(w, args),
        "sponge" => all_operands(w, prog, args, 0),
        "patch" => patch(w, cmd),
        "ed" | "red" => {
            // `ed [-s] [-p PROMPT] FILE`: whatever script it reads (a file on its input, a
            // heredoc) may write FILE.
            super::escapes::edited_files(w, args, &["-p"], prog);
            let file = operands(args).first().map(|f| (*f).clone());
            if let Some(text) = &cmd.input.text {
                ed_script(w, text, file.as_ref(), cmd.span, prog);
            }
            Outcome::not(RuleId::ReadonlyNotAllowListed, "\"ed\" edits files")
        }
        "cpio" => cpio(w, cmd, prog),
        "pax" => pax(w, cmd),
        "bsdtar" => bsdtar(w, cmd),
        _ => return None,
    };
    Some(outcome)
}

/// The mode letters of an archiver's bundled short options (`-idmv`, `-rw`), up to the first
/// one that takes a value (`takes_value`), and the long options as written (`--extr`, value
/// cut off), to be matched with [`long_is`]: getopt takes any unambiguous prefix.
fn archiver_flags(args: &[Word], takes_value: &str) -> (String, Vec<String>) {
    let mut letters = String::new();
    let mut long = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if t == "--" {
            break;
        }
        if t.starts_with("--") {
            long.push(t.split_once('=').map_or(t, |(n, _)| n).to_string());
        } else if let Some(bundle) = t.strip_prefix('-').filter(|b| !b.is_empty()) {
            for (at, c) in bundle.char_indices() {
                letters.push(c);
                if takes_value.contains(c) {
                    // The value is the rest of the bundle or the next word.
                    if at + c.len_utf8() == bundle.len() {
                        i += 1;
                    }
                    break;
                }
            }
        }
        i += 1;
    }
    (letters, long)
}

/// `cpio -i` (copy-in) writes each member where its name says: GNU cpio keeps absolute names
/// and `..` unless told `--no-absolute-filenames`, so an archive the model wrote reaches
/// `~/.bashrc`. `cpio -p DIR` (pass-through) writes into DIR; `-D`, `-F`, `-O` are checked with
/// the other tools' output options.
fn cpio(w: &mut Walker, cmd: &Cmd, prog: &str) -> Outcome {
    let args = &cmd.argv[1..];
    let (letters, long) = archiver_flags(args, "CDEFHIMORs");
    let has_long = |full: &str| long.iter().any(|l| long_is(l, full));
    // The exemption only as written in full: a prefix may be another option's.
    let kept_below = long.iter().any(|l| l == "--no-absolute-filenames");
    if (letters.contains('i') || has_long("--extract")) && !kept_below {
        let msg = format!(
            "\"{prog} -i\" writes members with absolute or \"..\" names wherever they say \
             (without --no-absolute-filenames)"
        );
        w.reason(Class::Dangerous, RuleId::ArchiveOutside, msg, cmd.span);
    }
    if (letters.contains('p') || has_long("--pass-through"))
        && let Some(dir) = operands(args).last()
    {
        check_write_target(w, dir, &format!("{prog} -p"), dir.span);
    }
    Outcome::not(
        RuleId::ReadonlyNotAllowListed,
        format!("\"{prog}\" writes files"),
    )
}

/// `pax -r` extracts members where their names say, absolute ones included (POSIX keeps them;
/// only `-s` can rewrite them, which gg does not follow); `pax -rw … DIR` copies into DIR.
fn pax(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    let (letters, _) = archiver_flags(args, "bfopsxBDEGTU");
    let read = letters.contains('r');
    let write = letters.contains('w');
    if read && write {
        if let Some(dir) = operands(args).last() {
            check_write_target(w, dir, "pax -rw", dir.span);
        }
    } else if read {
        let msg = "\"pax -r\" writes members with absolute names wherever they say";
        w.reason(Class::Dangerous, RuleId::ArchiveOutside, msg, cmd.span);
    }
    Outcome::not(
        RuleId::ReadonlyNotAllowListed,
        "\"pax\" is not on the read-only list",
    )
}

/// `bsdtar -x` with `-P` (`--absolute-paths`, `--insecure`) keeps absolute names and `..`, and
/// `-s` renames members anywhere; `-C DIR` extracts into DIR.
fn bsdtar(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    // The first word may be a bundle without its dash (`bsdtar xPf a.tar`).
    let (mut letters, long) = archiver_flags(args, "bCfIsTWX");
    if let Some(first) = args.first().filter(|a| !a.text.starts_with('-')) {
        letters.push_str(&first.text);
    }
    let has_long = |full: &str| long.iter().any(|l| long_is(l, full));
    if letters.contains('x') || has_long("--extract") {
        let absolute =
            letters.contains('P') || has_long("--absolute-paths") || has_long("--insecure");
        let renames = letters.contains('s');
        if absolute || renames {
            let msg = "\"bsdtar -x\" with -P or -s writes members wherever their names say";
            w.reason(Class::Dangerous, RuleId::ArchiveOutside, msg, cmd.span);
        }
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text.as_str();
            let directory = t == "-C" || long_is(t, "--cd") || long_is(t, "--directory");
            let dir = if !directory {
                None
            } else if let Some((_, value)) = t.split_once('=') {
                Some(Word::literal(value, args[i].span))
            } else {
                i += 1;
                args.get(i).cloned()
            };
            if let Some(dir) = dir {
                check_write_target(w, &dir, "bsdtar -x -C", dir.span);
            }
            i += 1;
        }
    }
    Outcome::not(
        RuleId::ReadonlyNotAllowListed,
        "\"bsdtar\" is not on the read-only list",
    )
}

/// GNU patch's options that take a value (attached, `-oFILE`, or in the next word; long ones
/// also after `=` and in any unambiguous abbreviation).
#[rustfmt::skip]
const PATCH_VALUE: &[&str] = &[
    "-B", "-d", "-D", "-F", "-g", "-i", "-o", "-p", "-r", "-V", "-Y", "-z",
    "--prefix", "--directory", "--ifdef", "--fuzz", "--get", "--input", "--output", "--strip",
    "--reject-file", "--version-control", "--basename-prefix", "--suffix", "--quoting-style",
    "--reject-format",
];

/// `patch [FILE]`: FILE, or the files the patch names (`+++ path`, with `-pN` components
/// removed; without `-p`, GNU patch uses the base name) when its text is known; all of them
/// in the directory of `-d DIR` (`-dDIR`, `--directory=DIR`, `--dir=DIR`), which is itself a
/// write target. `-o FILE`, `-r FILE` and the backup prefix `-B PREFIX` are written too.
fn patch(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    let mut strip: Option<usize> = None;
    let mut directory: Option<Word> = None;
    let mut written: Vec<(Word, String)> = Vec::new();
    let mut ops = Vec::new();
    for arg in getopt_args(args, PATCH_VALUE) {
        let (a, parsed) = match arg {
            Arg::Operand(op) => {
                ops.push(op);
                continue;
            }
            Arg::Options(a, parsed) => (a, parsed),
        };
        for opt in parsed {
            let value = opt.value.unwrap_or_else(|| Word::computed("", "", a.span));
            match opt.name.as_str() {
                "-p" | "--strip" => strip = value.text.parse().ok(),
                "-d" | "--directory" => directory = Some(value),
                // `-o -` writes to standard output.
                "-o" | "--output" | "-r" | "--reject-file" | "-B" | "--prefix"
                    if value.dynamic || value.text != "-" =>
                {
                    written.push((value, format!("patch {}", opt.name)));
                }
                _ => {}
            }
        }
    }
    for (target, what) in &written {
        check_write_target(w, target, what, target.span);
    }
    let saved = w.cwds.clone();
    if let Some(dir) = &directory {
        check_write_target(w, dir, "patch -d", dir.span);
        w.cwds = w.cwds.after_cd(Some(dir), w.ctx);
    }
    if let Some(file) = ops.first() {
        check_write_target(w, file, "patch", file.span);
    } else if let Some(text) = &cmd.input.text {
        for line in text.lines() {
            let Some(path) = line.strip_prefix("+++ ") else {
                continue;
            };
            let path = path.split('\t').next().unwrap_or("").trim();
            if path == "/dev/null" {
                continue;
            }
            let target = match strip {
                None => basename(path).to_string(),
                Some(n) => path.splitn(n + 1, '/').nth(n).unwrap_or("").to_string(),
            };
            check_write_target(w, &Word::literal(&target, cmd.span), "patch", cmd.span);
        }
    }
    w.cwds = saved;
    Outcome::not(RuleId::ReadonlyNotAllowListed, "\"patch\" writes files")
}

/// An ed (or ex) script: `w FILE` writes FILE (the edited file without a name), `!cmd`,
/// `r !cmd`, `w !cmd`, `e !cmd` run shell commands.
pub(crate) fn ed_script(
    w: &mut Walker,
    text: &str,
    file: Option<&Word>,
    span: crate::Span,
    prog: &str,
) {
    for line in text.lines() {
        let line = line.trim_start_matches(|c: char| c.is_ascii_digit() || ",.$;'+-/ ".contains(c));
        let line = line.trim_start_matches(':');
        if let Some(code) = line.strip_prefix('!').or_else(|| {
            // `w !cmd` pipes to cmd; in ex, `w! file` (no blank) forces the write.
            line.split_once('!')
                .filter(|(c, _)| {
                    matches!(c.trim(), "r" | "w" | "e" | "W" | "E")
                        && (matches!(prog, "ed" | "red") || c.ends_with(' '))
                })
                .map(|(_, c)| c)
        }) {
            super::escapes::program_option(w, code, span, RuleId::ExecToolCommand, prog);
            continue;
        }
        let (command, rest) = line.split_once(' ').unwrap_or((line, ""));
        if matches!(
            command,
            "w" | "wq" | "W" | "x" | "wq!" | "w!" | "write" | "saveas" | "sav"
        ) {
            let target = rest.trim();
            if target.is_empty() {
                if let Some(f) = file {
                    check_write_target(w, f, &format!("{prog} w"), span);
                }
            } else {
                check_write_target(w, &Word::literal(target, span), &format!("{prog} w"), span);
            }
        }
    }
}

fn writes(prog: &str) -> Outcome {
    Outcome::not(
        RuleId::ReadonlyNotAllowListed,
        format!("\"{prog}\" changes files"),
    )
}

/// `chmod MODE FILE…`, `chown OWNER FILE…`, `truncate -s SIZE FILE…`: the first operand is not
/// a file unless given with `--reference`.
fn skip_first_operand(prog: &str, args: &[Word]) -> usize {
    let by_reference = args.iter().any(|a| long_is(&a.text, "--reference"));
    usize::from(matches!(prog, "chown" | "chgrp" | "setfacl") && !by_reference)
}

fn all_operands(w: &mut Walker, prog: &str, args: &[Word], skip: usize) -> Outcome {
    let mut ops = operands(args);
    let value_opts: &[&str] = match prog {
        "truncate" => &["-s", "-r", "--size", "--reference"],
        "touch" => &["-r", "-d", "-t", "--reference", "--date"],
        "setfacl" => &["-m", "-x", "-M", "-X", "--modify", "--remove", "--set"],
        "mkdir" | "mkfifo" | "mknod" => &["-m", "--mode", "-Z", "--context"],
        "tee" => &["--output-error"],
        "mv" => &["-t", "--target-directory", "-S", "--suffix"],
        _ => &[],
    };
    ops.retain(|o| !is_value_of(args, o, value_opts));
    if prog == "mv" {
        // The last operand (or `-t DIR`) may be a directory the others move into.
        match target_directory(prog, args) {
            Some(dir) => into_directory(w, prog, &dir, &ops),
            None if ops.len() > 1 => {
                into_directory(w, prog, ops[ops.len() - 1], &ops[..ops.len() - 1])
            }
            None => {}
        }
    }
    for target in ops.into_iter().skip(skip) {
        check_write_target(w, target, prog, target.span);
    }
    writes(prog)
}

/// Whether `word` is the separate value of one of `opts` in `args`.
fn is_value_of(args: &[Word], word: &Word, opts: &[&str]) -> bool {
    args.windows(2)
        .any(|p| std::ptr::eq(&p[1], word) && opts.contains(&p[0].text.as_str()))
}

/// Options of cp, mv, install and ln (GNU coreutils) that take a value, in the next word or
/// attached (`-S~`, `--suffix=~`). Optional values (`--backup[=C]`, `--preserve[=L]`) are only
/// ever attached, so those are read as flags.
fn copy_value_options(prog: &str) -> &'static [&'static str] {
    match prog {
        "install" => &[
            "-t",
            "-S",
            "-g",
            "-m",
            "-o",
            "--target-directory",
            "--suffix",
            "--group",
            "--mode",
            "--owner",
            "--strip-program",
        ],
        "cp" => &[
            "-t",
            "-S",
            "--target-directory",
            "--suffix",
            "--sparse",
            "--no-preserve",
        ],
        _ => &["-t", "-S", "--target-directory", "--suffix"],
    }
}

/// cp, mv, install and ln read as getopt reads them: the directory of `-t DIR`, `-tDIR`,
/// `-vt DIR`, `--target-directory=DIR` or any unambiguous abbreviation (`--target=DIR`, `--t
/// DIR`), the last given, and the operands (option values are not operands; after `--`
/// everything is one).
fn copy_arguments<'w>(prog: &str, args: &'w [Word]) -> (Option<Word>, Vec<&'w Word>) {
    let with_value = copy_value_options(prog);
    let mut explicit = None;
    let mut ops = Vec::new();
    for arg in getopt_args(args, with_value) {
        let (word, opts) = match arg {
            Arg::Operand(op) => {
                ops.push(op);
                continue;
            }
            Arg::Options(word, opts) => (word, opts),
        };
        for opt in opts {
            if opt.name == "-t" || opt.name == "--target-directory" {
                // A computed value keeps its source text: the target is then unknown.
                explicit = Some(
                    opt.value
                        .unwrap_or_else(|| Word::computed("", "", word.span)),
                );
            }
        }
    }
    (explicit, ops)
}

/// The directory of `-t DIR` (every spelling getopt accepts; see [`copy_arguments`]).
fn target_directory(prog: &str, args: &[Word]) -> Option<Word> {
    copy_arguments(prog, args).0
}

fn destination(w: &mut Walker, prog: &str, args: &[Word]) -> Outcome {
    let (explicit, ops) = copy_arguments(prog, args);
    let has_explicit = explicit.is_some();
    let directory_mode = prog == "install"
        && args
            .iter()
            .any(|a| a.text == "-d" || long_is(&a.text, "--directory"));
    let targets: Vec<Word> = match explicit {
        Some(t) => vec![t],
        None if directory_mode => ops.iter().map(|o| (*o).clone()).collect(),
        None if prog == "ln" && ops.len() == 1 => vec![Word::literal(".", ops[0].span)],
        None => ops.last().map(|t| vec![(*t).clone()]).unwrap_or_default(),
    };
    for t in &targets {
        check_write_target(w, t, prog, t.span);
    }
    if !directory_mode {
        // A target that is a directory receives each source under its own name (`cp
        // a.code-workspace sub/` writes `sub/a.code-workspace`); which it is, is the file
        // system's to say, so both are checked.
        let sources: Vec<&Word> = if has_explicit || (prog == "ln" && ops.len() == 1) {
            ops
        } else if ops.len() > 1 {
            ops[..ops.len() - 1].to_vec()
        } else {
            Vec::new()
        };
        if let Some(dir) = targets.first() {
            into_directory(w, prog, dir, &sources);
        }
        if matches!(prog, "ln" | "link") {
            let symbolic = args
                .iter()
                .any(|a| short_has(&a.text, 's') || long_is(&a.text, "--symbolic"));
            linked_sources(
                w,
                prog,
                &sources,
                symbolic.then(|| targets.first()).flatten(),
            );
        }
    }
    writes(prog)
}

/// `ln SOURCE… NAME`: a link is a second name for what it leads to, and a write through that
/// name (`d2/agents.md` with `d2 -> docs`, `g/pre-commit` with `g -> .git/hooks`) is not one the
/// classifier sees as a write of the protected tree. So a link to a protected tree, into one
/// or to a directory that holds one (the project itself, `docs` holding where `AGENTS.md`
/// leads) is dangerous, and so is a link to a place computed at run time or named by a pattern
/// that may match one. A relative symbolic link leads from its own directory: the target
/// operand's parent when the target is the link's name (`ln -s ../.git/hooks sub/g`), the
/// target itself when it is a directory the link is made in (`ln -s ../.git/hooks sub/`, `-t
/// sub`). Which it is, is the file system's to say, so every reading is judged.
fn linked_sources(w: &mut Walker, prog: &str, sources: &[&Word], target: Option<&Word>) {
    for source in sources {
        let mut readings = vec![(*source).clone()];
        if let Some(target) = target.filter(|t| !t.dynamic)
            && !source.dynamic
            && !source.text.starts_with('/')
            && !source.text.starts_with('~')
        {
            let target = target.text.trim_end_matches('/');
            let parent = match target.rsplit_once('/') {
                Some((parent, _)) if !parent.is_empty() => parent,
                _ => ".",
            };
            for dir in [parent, target] {
                readings.push(Word::literal(
                    &format!("{dir}/{}", source.text),
                    source.span,
                ));
            }
        }
        for reading in &readings {
            let why = match place_of(reading, &w.cwds, w.ctx) {
                Place::Protected(index) => Some(format!(
                    "it leads into the protected {} ({})",
                    w.ctx.protected[index].path.display(),
                    w.ctx.protected[index].why
                )),
                Place::Unknown => Some("where it leads is computed at run time".to_string()),
                _ => crate::paths::resolve_all(reading, &w.cwds, w.ctx)
                    .iter()
                    .find_map(|at| {
                        w.ctx
                            .protected
                            .iter()
                            .find(|tree| tree.path.starts_with(at) && tree.path != *at)
                    })
                    .map(|tree| {
                        format!(
                            "it leads to a directory holding the protected {} ({})",
                            tree.path.display(),
                            tree.why
                        )
                    }),
            };
            if let Some(why) = why {
                let msg = format!(
                    "\"{prog} {}\" makes a second name for a protected place: {why}; a write \
                     through the link is one of the protected place",
                    source.text
                );
                w.reason(Class::Dangerous, RuleId::WriteProtected, msg, source.span);
                break;
            }
        }
    }
}

/// Checks `dir/NAME` for the base name of each of `sources` (`mv a b dir`, `cp -t dir a`).
fn into_directory(w: &mut Walker, prog: &str, dir: &Word, sources: &[&Word]) {
    if dir.dynamic {
        return;
    }
    for source in sources.iter().filter(|s| !s.dynamic) {
        let name = basename(source.text.trim_end_matches('/'));
        if name.is_empty() || name == "." || name == ".." {
            continue;
        }
        let inside = format!("{}/{name}", dir.text.trim_end_matches('/'));
        check_write_target(w, &Word::literal(&inside, source.span), prog, source.span);
    }
}

/// rsync options that name a local file or directory it writes (`--log-file`, `--write-batch`,
/// `--only-write-batch`, `--backup-dir`, `--partial-dir`, `--temp-dir`/`-T`), with the short
/// options that take a value so a cluster is read right; `--partial` and `--backup` are flags,
/// not abbreviations of the `-dir` options.
#[rustfmt::skip]
const RSYNC_VALUE: &[&str] = &[
    "-T", "-e", "-f", "-M", "-B", "--log-file", "--write-batch", "--only-write-batch",
    "--backup-dir", "--partial-dir", "--temp-dir",
];

fn rsync(w: &mut Walker, args: &[Word]) -> Outcome {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if !a.dynamic && a.text == "--" {
            break;
        }
        if !a.is_option() {
            i += 1;
            continue;
        }
        let (parsed, used) =
            super::args::split_option_with(args, i, RSYNC_VALUE, &["--partial", "--backup"]);
        i += used;
        for opt in parsed {
            if matches!(
                opt.name.as_str(),
                "-T" | "--log-file"
                    | "--write-batch"
                    | "--only-write-batch"
                    | "--backup-dir"
                    | "--partial-dir"
                    | "--temp-dir"
            ) {
                let target = opt.value.unwrap_or_else(|| Word::computed("", "", a.span));
                check_write_target(w, &target, &format!("rsync {}", opt.name), target.span);
            }
        }
    }
    let ops = operands(args);
    if let Some(dest) = ops.last().filter(|d| !is_remote(d)) {
        check_write_target(w, dest, "rsync", dest.span);
    }
    if args
        .iter()
        .any(|a| long_is(&a.text, "--remove-source-files"))
    {
        for src in ops
            .iter()
            .take(ops.len().saturating_sub(1))
            .filter(|s| !is_remote(s))
        {
            check_write_target(w, src, "rsync --remove-source-files", src.span);
        }
    }
    writes("rsync")
}

/// `host:path` or `user@host:path` (and `rsync://`).
pub(crate) fn is_remote(word: &Word) -> bool {
    let t = if word.dynamic {
        &word.prefix
    } else {
        &word.text
    };
    if t.contains("://") {
        return true;
    }
    match t.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/'),
        None => false,
    }
}

// ----- rm -------------------------------------------------------------------------------------

fn rm(w: &mut Walker, args: &[Word]) -> Outcome {
    let opts: Vec<&Word> = super::options(args).collect();
    let recursive = opts.iter().any(|a| {
        short_has(&a.text, 'r') || short_has(&a.text, 'R') || long_is(&a.text, "--recursive")
    });
    for target in operands(args) {
        // `-r` alone deletes a tree just as well (it only asks about write-protected files).
        if recursive {
            rm_recursive_force(w, target);
        } else {
            check_write_target(w, target, "rm", target.span);
        }
    }
    writes("rm")
}

/// Whether `target` is a plain relative path and the shell's working directory is no longer
/// known (`cd "$X"`, `printf -v d ..; cd $d`, `cd "$(git rev-parse --show-cdup)../"`): a tree
/// deletion there may delete the project from its parent, or home (attacker pass s26, r3c).
pub(crate) fn relative_in_unknown_directory(w: &Walker, target: &Word) -> bool {
    !target.dynamic
        && !target.text.starts_with('/')
        && !target.text.starts_with('~')
        && w.cwds.all_known().is_none()
}

pub(crate) fn rm_recursive_force(w: &mut Walker, target: &Word) {
    for alt in super::alternatives(w, target) {
        rm_recursive_force(w, &alt);
    }
    let span = target.span;
    let shown = &target.text;
    match place_of(target, &w.cwds, w.ctx) {
        Place::Root => {
            let msg = format!("\"rm -rf {shown}\" deletes the root of the file system");
            w.reason(Class::Dangerous, RuleId::RmRecursiveForceRoot, msg, span);
        }
        Place::HomeOrAbove(p) => {
            let msg = format!(
                "\"rm -rf {shown}\" deletes {} (the home directory or above)",
                p.display()
            );
            w.reason(Class::Dangerous, RuleId::RmRecursiveForceHome, msg, span);
        }
        Place::Outside(p) => {
            let msg = format!(
                "\"rm -rf {shown}\" deletes {} outside the working directory",
                p.display()
            );
            w.reason(Class::Dangerous, RuleId::RmRecursiveForceOutside, msg, span);
        }
        Place::Unknown if target.flow.untrusted() => {
            let msg =
                format!("\"rm -rf {shown}\": the target is downloaded or decoded at run time");
            w.reason(
                Class::Dangerous,
                RuleId::RmRecursiveForceObfuscated,
                msg,
                span,
            );
        }
        Place::Unknown
            if ["OLDPWD", "DIRSTACK", "PWD"]
                .iter()
                .any(|v| target.text.contains(v))
                || target.text.starts_with("~-")
                || (target.text.starts_with('~')
                    && target.text[1..].starts_with(|c: char| c.is_ascii_digit())) =>
        {
            let msg = format!(
                "\"rm -rf {shown}\" deletes a directory the shell was in (or its parent), \
                 which is the project or outside it"
            );
            w.reason(Class::Dangerous, RuleId::RmRecursiveForceOutside, msg, span);
        }
        Place::Unknown if relative_in_unknown_directory(w, target) => {
            let msg = format!(
                "\"rm -rf {shown}\": a relative path after a change to a directory that cannot \
                 be resolved statically (the project, its parent or home)"
            );
            w.reason(Class::Dangerous, RuleId::RmRecursiveForceOutside, msg, span);
        }
        Place::Unknown => {
            let msg = format!("\"rm -rf {shown}\": the target cannot be resolved statically");
            w.reason(Class::Normal, RuleId::RmUnknownTarget, msg, span);
        }
        Place::Protected(index) => {
            super::protected_write(w, index, target, "\"rm -rf\"", span);
        }
        Place::Project(p) => {
            let msg = format!(
                "\"rm -rf {shown}\" deletes the project itself ({})",
                p.display()
            );
            w.reason(Class::Dangerous, RuleId::RmProject, msg, span);
        }
        Place::Inside => {}
    }
}

// ----- permissions ----------------------------------------------------------------------------

fn chmod(w: &mut Walker, args: &[Word]) -> Outcome {
    let by_reference = args.iter().any(|a| long_is(&a.text, "--reference"));
    let ops = operands(args);
    // Symbolic modes such as `-x` or `-w` look like options; chmod reads them as modes.
    let mode = if by_reference {
        None
    } else {
        args.iter()
            .find(|a| !a.dynamic && is_mode(&a.text))
            .or(ops.first().copied())
    };
    if let Some(m) = mode
        && sets_id_bits(&m.text)
    {
        let msg = format!(
            "\"chmod {}\" sets the set-user-ID or set-group-ID bit",
            m.text
        );
        w.reason(Class::Dangerous, RuleId::PrivilegeSetuid, msg, m.span);
    }
    for target in ops
        .into_iter()
        .filter(|o| mode.is_none_or(|m| !std::ptr::eq(*o, m)))
    {
        check_write_target(w, target, "chmod", target.span);
    }
    writes("chmod")
}

fn is_mode(text: &str) -> bool {
    let symbolic = text.split(',').all(|part| {
        let ops = part.trim_start_matches(['u', 'g', 'o', 'a']);
        ops.starts_with(['+', '-', '=']) && ops[1..].chars().all(|c| "rwxXstugo+-=".contains(c))
    });
    (symbolic && !text.is_empty()) || (!text.is_empty() && text.chars().all(|c| c.is_digit(8)))
}

fn sets_id_bits(mode: &str) -> bool {
    if mode.chars().all(|c| c.is_digit(8)) && mode.len() >= 4 {
        let special = &mode[..mode.len() - 3];
        return u32::from_str_radix(special, 8).is_ok_and(|v| v & 0o6 != 0);
    }
    mode.split(',').any(|part| {
        let who_end = part.find(['+', '=']);
        who_end.is_some_and(|i| part[i..].contains('s'))
    })
}

fn shred(w: &mut Walker, args: &[Word]) -> Outcome {
    for target in operands(args) {
        if !target.dynamic && target.text.starts_with("/dev/") {
            let msg = format!("\"shred {}\" overwrites a device", target.text);
            w.reason(Class::Dangerous, RuleId::DiskShredDevice, msg, target.span);
        } else {
            check_write_target(w, target, "shred", target.span);
        }
    }
    writes("shred")
}

// ----- text tools that can write --------------------------------------------------------------

/// `sed` is read-only only as `sed -n Np` (print selected lines).
fn sed(w: &mut Walker, cmd: &Cmd) -> Outcome {
    const WITH_VALUE: &[&str] = &[
        "-e",
        "-f",
        "-l",
        "--expression",
        "--file",
        "--line-length",
        "-i",
        "--in-place",
    ];
    let args = &cmd.argv[1..];
    let mut scripts: Vec<Word> = Vec::new();
    let mut files: Vec<&Word> = Vec::new();
    let mut in_place = false;
    let mut other_option = false;
    let mut explicit_script = false;
    let mut i = 0;
    let mut ended = false;
    while i < args.len() {
        let a = &args[i];
        if !ended && a.text == "--" && !a.dynamic {
            ended = true;
            i += 1;
            continue;
        }
        if ended || !a.is_option() {
            if scripts.is_empty() && !explicit_script && !other_option {
                scripts.push(a.clone());
            } else {
                files.push(a);
            }
            i += 1;
            continue;
        }
        // `-i` is listed so that `-i.bak` keeps its suffix together; it never takes the next
        // word (see below).
        let (parsed, mut used) = split_option(args, i, WITH_VALUE);
        for opt in parsed {
            match opt.name.as_str() {
                "-e" | "--expression" => {
                    explicit_script = true;
                    scripts.extend(opt.value);
                }
                "-f" | "--file" => other_option = true,
                "-i" | "--in-place" => {
                    // `-i[SUFFIX]`: the suffix is attached or absent, never the next word.
                    in_place = true;
                    used = 1;
                }
                "-s" | "--separate" => {}
                "-n" | "--quiet" | "--silent" | "-E" | "-r" | "--regexp-extended" | "-u"
                | "--unbuffered" | "-z" | "--null-data" | "--posix" | "--debug" | "--sandbox" => {}
                "-l" | "--line-length" => {}
                _ => other_option = true,
            }
        }
        i += used;
    }
    if in_place {
        for f in &files {
            check_write_target(w, f, "sed -i", f.span);
        }
    }
    let mut outcome = if in_place {
        Outcome::not(
            RuleId::ReadonlyFlagWrites,
            "\"sed -i\" edits files in place",
        )
    } else {
        Outcome::read_only()
    };
    for script in &scripts {
        if script.dynamic {
            outcome = Outcome::not(
                RuleId::DynamicShellCode,
                "the sed script is computed at run time",
            );
            continue;
        }
        let fx = sed_effects(&script.text);
        for exec in &fx.exec {
            match exec {
                Some(command) => {
                    program_option(w, command, script.span, RuleId::ExecSed, "sed e");
                }
                None if cmd.input.untrusted() => {
                    let msg = "sed executes downloaded or decoded input as commands";
                    w.reason(
                        Class::Dangerous,
                        RuleId::DownloadPipeToInterpreter,
                        msg,
                        script.span,
                    );
                }
                None => {}
            }
        }
        for file in &fx.reads {
            let source = Word::literal(file, script.span);
            if super::names_credentials(w, &source) && outcome.read_only == super::ReadOnly::Yes {
                outcome = Outcome::not(
                    RuleId::SecretsCredentialFile,
                    format!("the sed script reads the credential file {file}"),
                );
            }
        }
        for file in &fx.writes {
            let target = Word::literal(file, script.span);
            check_write_target(w, &target, "sed w", script.span);
        }
        if !fx.exec.is_empty() {
            outcome = Outcome::not(RuleId::ExecSed, "the sed script runs commands (e)");
        } else if !fx.writes.is_empty() {
            outcome = Outcome::not(
                RuleId::ReadonlyFlagWrites,
                "the sed script writes files (w)",
            );
        } else if !fx.understood && outcome.read_only == super::ReadOnly::Yes {
            outcome = Outcome::not(
                RuleId::ReadonlySedScript,
                "the sed script is not understood well enough to prove it only prints",
            );
        }
    }
    if other_option && outcome.read_only == super::ReadOnly::Yes {
        outcome = Outcome::not(
            RuleId::ReadonlySedScript,
            "sed reads its script from a file or has options that are not known to be read-only",
        );
    }
    if scripts.is_empty() && outcome.read_only == super::ReadOnly::Yes {
        outcome = Outcome::not(RuleId::ReadonlySedScript, "sed without a script");
    }
    outcome
}

/// `sort -o FILE` writes; without it, sort is judged by the read-only list.
fn sort(w: &mut Walker, args: &[Word]) -> Option<Outcome> {
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        if long_is(t, "--compress-program") {
            let program = long_value(args, i, "--compress-program")
                .map(value_text)
                .unwrap_or_default();
            let what = "sort --compress-program";
            super::escapes::program_option(
                w,
                &program,
                a.span,
                RuleId::ExecSortCompressProgram,
                what,
            );
            return Some(Outcome::not(
                RuleId::ReadonlyFlagWrites,
                format!("\"{what}\" runs a program"),
            ));
        }
        let value = if long_is(t, "--output") {
            long_value(args, i, "--output").map(|v| Word {
                text: value_text(v),
                ..v.clone()
            })
        } else if !t.starts_with("--") && short_has(t, 'o') {
            let attached = &t[t.find('o').map_or(t.len(), |p| p + 1)..];
            if attached.is_empty() {
                args.get(i + 1).cloned()
            } else {
                Some(Word {
                    text: attached.to_string(),
                    prefix: attached.to_string(),
                    ..a.clone()
                })
            }
        } else {
            None
        };
        if let Some(target) = value {
            check_write_target(w, &target, "sort -o", target.span);
            return Some(Outcome::not(
                RuleId::ReadonlyFlagWrites,
                "\"sort -o\" writes a file",
            ));
        }
    }
    None
}

/// `uniq IN OUT` writes OUT. Options are read with GNU uniq's table; any other option is not
/// read-only.
fn uniq(w: &mut Walker, args: &[Word]) -> Option<Outcome> {
    use super::args::{Item, Spec, getopt};
    let spec = Spec {
        short_flags: "cdDiuz0123456789",
        short_value: "fsw",
        long_flags: &[
            "--count",
            "--repeated",
            "--ignore-case",
            "--unique",
            "--zero-terminated",
            "--help",
            "--version",
        ],
        long_value: &["--skip-fields", "--skip-chars", "--check-chars"],
        long_optional: &["--all-repeated", "--group"],
        ..Spec::default()
    };
    let items = getopt(args, &spec);
    let ops: Vec<&Word> = items
        .iter()
        .filter_map(|i| match i {
            Item::Operand(a) => Some(*a),
            _ => None,
        })
        .collect();
    if let Some(target) = ops.get(1) {
        check_write_target(w, target, "uniq", target.span);
        return Some(Outcome::not(
            RuleId::ReadonlyFlagWrites,
            "\"uniq IN OUT\" writes OUT",
        ));
    }
    Some(unknown_option("uniq", &items).unwrap_or_else(Outcome::read_only))
}

/// The first option a positive model does not know: not read-only.
fn unknown_option(prog: &str, items: &[super::args::Item]) -> Option<Outcome> {
    items.iter().find_map(|i| match i {
        super::args::Item::Unknown(a) => Some(Outcome::not(
            RuleId::ReadonlyFlagWrites,
            format!(
                "\"{prog} {}\" is not a known read-only option of {prog}",
                a.text
            ),
        )),
        _ => None,
    })
}

/// GNU sort's options, for the positive model (`-o`/`--compress-program` are judged first).
fn sort_spec() -> super::args::Spec<'static> {
    super::args::Spec {
        short_flags: "bdfgiMhnRrVcCmsuz",
        short_value: "kSTto",
        long_flags: &[
            "--ignore-leading-blanks",
            "--dictionary-order",
            "--ignore-case",
            "--general-numeric-sort",
            "--ignore-nonprinting",
            "--month-sort",
            "--human-numeric-sort",
            "--numeric-sort",
            "--random-sort",
            "--reverse",
            "--version-sort",
            "--merge",
            "--stable",
            "--unique",
            "--zero-terminated",
            "--debug",
            "--help",
            "--version",
        ],
        long_value: &[
            "--key",
            "--buffer-size",
            "--field-separator",
            "--temporary-directory",
            "--parallel",
            "--files0-from",
            "--random-source",
            "--batch-size",
            "--sort",
            "--output",
            "--compress-program",
        ],
        long_optional: &["--check"],
        ..Default::default()
    }
}

fn dd(w: &mut Walker, args: &[Word]) -> Outcome {
    for a in args {
        let Some(target) = a.text.strip_prefix("of=") else {
            continue;
        };
        let word = Word {
            text: target.to_string(),
            prefix: a.prefix.trim_start_matches("of=").to_string(),
            ..a.clone()
        };
        if !word.dynamic
            && target.starts_with("/dev/")
            && !matches!(target, "/dev/null" | "/dev/stdout" | "/dev/stderr")
        {
            let msg = format!("\"dd of={target}\" writes to a device");
            w.reason(Class::Dangerous, RuleId::DiskDdDevice, msg, a.span);
        } else {
            check_write_target(w, &word, "dd", a.span);
        }
    }
    writes("dd")
}
