//! Read-looking tools with a way to run programs or write files: `find -exec`,
//! `tar --checkpoint-action`, `vim -c '!…'`, `man -H`, `rg --pre`, `awk 'system(…)'`.

use super::args::split_option_with;
use super::exec::{embedded_shell_commands, join_spans, quoted_prefix};
use super::scripts::awk_effects;
use super::{
    Outcome, check_write_target, long_is, long_value, run_code, run_payload, short_has, value_text,
};
use crate::ids::RuleId;
use crate::walk::{Cmd, Flow, Walker};
use crate::word::Word;
use crate::{Class, Span};

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    let outcome = match prog {
        "find" => find(w, cmd),
        "tar" => tar(w, cmd),
        "vim" | "vi" | "nvim" | "gvim" | "view" | "ex" | "vimdiff" | "rvim" => editor(w, cmd),
        "emacs" | "emacs-nox" | "nano" | "rnano" | "pico" | "micro" | "kak" | "hx" | "helix"
        | "joe" | "jmacs" | "jstar" | "rjoe" | "jed" | "mcedit" | "ne" | "mg" | "zile" | "jove"
        | "vis" | "dte" | "amp" | "kibi" | "elvis" | "nvi" | "levee" | "le" => {
            if matches!(prog, "emacs" | "emacs-nox") {
                emacs_code(w, &cmd.argv[1..], false);
            }
            edited_files(w, &cmd.argv[1..], &[], prog);
            Outcome::not(
                RuleId::ReadonlyNotAllowListed,
                format!("\"{prog}\" is an editor: it writes the files it is given"),
            )
        }
        "emacsclient" => {
            // `emacsclient -e EXPR…` evaluates in the person's running Emacs, outside any
            // sandbox; `emacsclient FILE` opens FILE there for editing.
            if emacs_code(w, &cmd.argv[1..], true) {
                let msg = "\"emacsclient -e\" evaluates Lisp in the person's running Emacs, \
                           a process outside any sandbox gg sets up";
                w.reason(Class::Dangerous, RuleId::ExecInterpreterCode, msg, cmd.span);
                return Some(Outcome::not(
                    RuleId::ExecInterpreterCode,
                    "\"emacsclient -e\" evaluates Lisp in a running Emacs",
                ));
            }
            edited_files(w, &cmd.argv[1..], EMACSCLIENT_WITH_VALUE, prog);
            Outcome::not(
                RuleId::ReadonlyNotAllowListed,
                "\"emacsclient\" opens files in a running Emacs, which writes them",
            )
        }
        "man" => man(w, cmd),
        "rg" => rg(w, cmd),
        "awk" | "gawk" | "mawk" | "nawk" => awk(w, cmd),
        _ => return None,
    };
    Some(outcome)
}

// ----- find -----------------------------------------------------------------------------------

const FIND_EXEC: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];
const FIND_WRITE: &[&str] = &["-fprint", "-fprint0", "-fprintf", "-fls"];

fn find(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    // Global options come before the roots: `-H`, `-L`, `-P`, `-D LIST`, `-O LEVEL`, `--`.
    let mut start = 0;
    while let Some(a) = args.get(start).filter(|a| !a.dynamic) {
        match a.text.as_str() {
            "-H" | "-L" | "-P" | "--" => start += 1,
            "-D" => start += 2,
            t if t.starts_with("-O") || (t.starts_with("-D") && t.len() > 2) => start += 1,
            _ => break,
        }
    }
    let start = start.min(args.len());
    let roots_end = args[start..]
        .iter()
        .position(|a| !a.dynamic && (a.text.starts_with('-') || a.text == "(" || a.text == "!"))
        .map_or(args.len(), |p| start + p);
    let mut roots: Vec<Word> = args[start..roots_end].to_vec();
    if roots.is_empty() {
        roots.push(Word::literal(".", cmd.span));
    }
    roots.truncate(4);
    let mut outcome = Outcome::read_only();
    let mut i = roots_end;
    while i < args.len() {
        let t = args[i].text.as_str();
        if FIND_EXEC.contains(&t) {
            let end = args[i + 1..]
                .iter()
                .position(|a| !a.dynamic && (a.text == ";" || a.text == "+"))
                .map_or(args.len(), |p| i + 1 + p);
            find_exec(w, cmd, &roots, &args[i + 1..end], t);
            outcome = Outcome::not(
                RuleId::ReadonlyFindExec,
                format!("\"find {t}\" runs a program on each match"),
            );
            i = end + 1;
            continue;
        }
        if t == "-delete" {
            // Only what a name or path test picks (`-name '*.o'`) or everything below the root.
            let picked = args[roots_end..i].iter().any(|a| {
                matches!(
                    a.text.as_str(),
                    "-name"
                        | "-iname"
                        | "-path"
                        | "-ipath"
                        | "-wholename"
                        | "-iwholename"
                        | "-regex"
                        | "-iregex"
                        | "-lname"
                        | "-ilname"
                )
            });
            for root in &roots {
                find_delete(w, root, args[i].span, picked);
            }
            outcome = Outcome::not(RuleId::ReadonlyFlagWrites, "\"find -delete\" deletes files");
        }
        if FIND_WRITE.contains(&t) {
            if let Some(target) = args.get(i + 1) {
                check_write_target(w, target, &format!("find {t}"), target.span);
            }
            outcome = Outcome::not(
                RuleId::ReadonlyFlagWrites,
                format!("\"find {t}\" writes a file"),
            );
        } else if let Some(values) = find_known(t) {
            i += 1 + values;
            continue;
        } else if !args[i].dynamic
            && t.starts_with('-')
            && t != "-delete"
            && outcome.read_only == super::ReadOnly::Yes
        {
            outcome = Outcome::not(
                RuleId::ReadonlyFlagWrites,
                format!("\"find {t}\" is not a known read-only part of a find expression"),
            );
        }
        i += 1;
    }
    outcome
}

/// The positive model of a find expression: tests, options, read-only actions and operators,
/// with how many value words each takes. `None` for anything else.
fn find_known(word: &str) -> Option<usize> {
    #[rustfmt::skip]
    const NO_VALUE: &[&str] = &[
        "-empty", "-executable", "-readable", "-writable", "-nouser", "-nogroup", "-true", "-false",
        "-depth", "-d", "-mount", "-xdev", "-follow", "-noleaf", "-ignore_readdir_race",
        "-noignore_readdir_race", "-daystart", "-warn", "-nowarn", "-help", "--help", "-version",
        "--version", "-print", "-print0", "-ls", "-prune", "-quit", "-not", "-a", "-and", "-o",
        "-or", "(", ")", "!", ",", "-s", "-x",
    ];
    #[rustfmt::skip]
    const ONE_VALUE: &[&str] = &[
        "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
        "-type", "-xtype", "-size", "-newer", "-anewer", "-cnewer", "-mtime", "-mmin", "-atime",
        "-amin", "-ctime", "-cmin", "-used", "-user", "-group", "-uid", "-gid", "-perm", "-links",
        "-inum", "-samefile", "-lname", "-ilname", "-fstype", "-context", "-maxdepth", "-mindepth",
        "-regextype", "-printf", "-files0-from", "-Bmin", "-Btime", "-Bnewer", "-flags",
    ];
    if NO_VALUE.contains(&word) {
        return Some(0);
    }
    if ONE_VALUE.contains(&word) || (word.starts_with("-newer") && word.len() == 8) {
        return Some(1);
    }
    None
}

/// `find … -exec CMD {} ;`: the payload runs once per match, with `{}` standing for paths under
/// each search root.
fn find_exec(w: &mut Walker, cmd: &Cmd, roots: &[Word], payload: &[Word], flag: &str) {
    if payload.is_empty() {
        return;
    }
    for root in roots {
        let prefix = if root.dynamic {
            String::new()
        } else {
            format!("{}/", root.text.trim_end_matches('/'))
        };
        let argv: Vec<Word> = payload
            .iter()
            .map(|a| {
                if !a.dynamic && a.text.contains("{}") {
                    Word::computed(&a.text, &prefix, a.span)
                } else {
                    a.clone()
                }
            })
            .collect();
        let (_, risky) = run_payload(w, cmd, argv);
        if risky {
            let msg = format!(
                "\"find {flag}\" runs {}, a shell or dangerous command",
                payload[0].text
            );
            w.reason(
                Class::Dangerous,
                RuleId::ExecFindExecShell,
                msg,
                join_spans(payload),
            );
            break;
        }
    }
}

fn find_delete(w: &mut Walker, root: &Word, span: Span, picked: bool) {
    use crate::paths::{Place, place_of};
    match place_of(root, &w.cwds, w.ctx) {
        Place::Inside => {}
        Place::Project(_) if picked => {}
        Place::Project(p) => {
            // `cd ..; find proj -delete`: the whole project, its git directory included.
            let msg = format!(
                "\"find {} -delete\" deletes the project itself ({})",
                root.text,
                p.display()
            );
            w.reason(Class::Dangerous, RuleId::RmProject, msg, span);
        }
        Place::Unknown if super::fs::relative_in_unknown_directory(w, root) => {
            let msg = format!(
                "\"find -delete\" under {}, a relative path after a change to a directory \
                 that cannot be resolved statically (the project, its parent or home)",
                root.text
            );
            w.reason(Class::Dangerous, RuleId::RmRecursiveForceOutside, msg, span);
        }
        Place::Protected(index) => {
            super::protected_write(w, index, root, "\"find -delete\"", span);
        }
        Place::Unknown => {
            let msg = format!(
                "\"find -delete\" under {}, which cannot be resolved statically",
                root.text
            );
            w.reason(Class::Normal, RuleId::WriteUnknownTarget, msg, span);
        }
        _ => {
            let msg = format!(
                "\"find -delete\" deletes files under {}, outside the working directory",
                root.text
            );
            w.reason(Class::Dangerous, RuleId::FindDeleteOutside, msg, span);
        }
    }
}

// ----- tools with program options -------------------------------------------------------------

/// Runs `program` (the value of a tool's program option) and reports it as dangerous when it
/// is a shell or dangerous itself.
pub(crate) fn program_option(w: &mut Walker, program: &str, span: Span, rule: RuleId, tool: &str) {
    let (_, risky) = run_code(w, program, span, &Flow::default());
    if risky {
        let shown = if program.is_empty() {
            "a program from the environment"
        } else {
            program
        };
        let msg = format!("\"{tool}\" is made to run {shown}, a shell or dangerous command");
        w.reason(Class::Dangerous, rule, msg, span);
    }
}

fn tar(w: &mut Walker, cmd: &Cmd) -> Outcome {
    #[rustfmt::skip]
    const PROGRAM_OPTS: &[&str] = &[
        "--to-command", "--use-compress-program", "--rsh-command", "--info-script",
        "--new-volume-script", "--rmt-command",
    ];
    #[rustfmt::skip]
    const WITH_VALUE: &[&str] = &[
        "-I", "-F", "-f", "-C", "-b", "-H", "-K", "-L", "-N", "-T", "-V", "-X", "-g", "--file",
        "--directory", "--transform", "--xform", "--index-file", "--listed-incremental",
        "--to-command", "--use-compress-program", "--rsh-command", "--info-script",
        "--new-volume-script", "--exclude", "--files-from", "--exclude-from", "--format",
        "--owner", "--group", "--mode", "--mtime", "--label", "--blocking-factor",
        "--tape-length", "--starting-file", "--newer", "--after-date", "--volno-file",
        "--checkpoint-action", "--strip-components", "--backup", "--suffix", "--rmt-command",
    ];
    #[rustfmt::skip]
    const FLAGS: &[&str] = &[
        "--list", "--extract", "--get", "--create", "--append", "--update", "--diff", "--compare",
        "--delete", "--to-stdout", "--absolute-names", "--catenate", "--concatenate",
    ];
    let mut args = cmd.argv[1..].to_vec();
    // Old-style first argument: `tar xzf a.tgz` is `tar -x -z -f a.tgz`, and each letter that
    // takes a value takes the next word in turn (`tar tfI a.tar CMD` runs CMD as `-I`).
    if let Some(first) = args
        .first()
        .filter(|a| !a.dynamic && !a.text.starts_with('-'))
        .cloned()
    {
        let mut expanded = Vec::new();
        let mut rest = args[1..].iter();
        for c in first.text.chars() {
            let name = format!("-{c}");
            expanded.push(Word::literal(&name, first.span));
            if WITH_VALUE.contains(&name.as_str())
                && let Some(value) = rest.next()
            {
                expanded.push(value.clone());
            }
        }
        expanded.extend(rest.cloned());
        args = expanded;
    }
    let mut mode = None;
    let mut directories = Vec::new();
    let mut archive = None;
    let mut absolute = false;
    let mut to_stdout = false;
    let mut runs_program = false;
    let mut transforms = Vec::new();
    let mut other_writes = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.dynamic || !a.text.starts_with('-') || a.text == "-" {
            i += 1;
            continue;
        }
        if a.text == "--" {
            break;
        }
        let (parsed, used) = split_option_with(&args, i, WITH_VALUE, FLAGS);
        for opt in parsed {
            let name = opt.name.as_str();
            let value = opt.value.clone();
            let value_text = value.as_ref().map(|v| v.text.clone()).unwrap_or_default();
            match name {
                "-x" | "--extract" | "--get" => mode = Some('x'),
                "-t" | "--list" => mode = mode.or(Some('t')),
                "-c" | "--create" | "-r" | "--append" | "-u" | "--update" | "-A" | "--catenate"
                | "--concatenate" | "--delete" => mode = Some('c'),
                "-d" | "--diff" | "--compare" => mode = mode.or(Some('t')),
                "-C" | "--directory" => directories.extend(value),
                "-f" | "--file" => archive = value,
                "-P" | "--absolute-names" => absolute = true,
                "-O" | "--to-stdout" => to_stdout = true,
                "--transform" | "--xform" => transforms.push(value_text),
                "-g" | "--listed-incremental" | "--index-file" | "--volno-file" => {
                    other_writes.extend(value)
                }
                "-I" | "-F" => {
                    runs_program = true;
                    program_option(w, &value_text, a.span, RuleId::ExecTarProgram, name);
                }
                "--checkpoint-action" => {
                    let program = value_text
                        .strip_prefix("exec=")
                        .or_else(|| value_text.strip_prefix("exec:"));
                    if let Some(p) = program {
                        runs_program = true;
                        program_option(
                            w,
                            p,
                            a.span,
                            RuleId::ExecTarProgram,
                            "tar --checkpoint-action",
                        );
                    }
                }
                _ if PROGRAM_OPTS.contains(&name) => {
                    runs_program = true;
                    program_option(w, &value_text, a.span, RuleId::ExecTarProgram, name);
                }
                _ => {}
            }
        }
        i += used;
    }
    for target in &other_writes {
        check_write_target(w, target, "tar", target.span);
    }
    match mode {
        Some('x') if !to_stdout => {
            for dir in &directories {
                check_write_target(w, dir, "tar -x -C", dir.span);
            }
            if absolute {
                let msg = "\"tar -x -P\" writes members with absolute names wherever they say";
                w.reason(Class::Dangerous, RuleId::ArchiveOutside, msg, cmd.span);
            }
            for expr in &transforms {
                if transform_escapes(expr) {
                    let msg = format!(
                        "\"tar --transform {expr}\" renames members to outside the target directory"
                    );
                    w.reason(Class::Dangerous, RuleId::ArchiveOutside, msg, cmd.span);
                }
            }
        }
        Some('c') => {
            if let Some(file) = archive.as_ref().filter(|f| f.text != "-") {
                check_write_target(w, file, "tar", file.span);
            }
        }
        _ => {}
    }
    // `-f host:file` is a remote archive: tar runs rsh/ssh (unless --force-local).
    let remote = archive
        .as_ref()
        .is_some_and(|a| a.dynamic || a.text.contains(':'))
        && !cmd.argv.iter().any(|a| a.text == "--force-local");
    runs_program |= remote;
    let lists = mode == Some('t') || (mode == Some('x') && to_stdout);
    if lists && !runs_program && other_writes.is_empty() {
        return Outcome::read_only();
    }
    Outcome::not(RuleId::ReadonlyNotAllowListed, "\"tar\" writes files")
}

/// Whether a `--transform` sed expression can rename members to absolute paths or upwards.
fn transform_escapes(expr: &str) -> bool {
    let mut chars = expr.chars();
    if chars.next() != Some('s') {
        return true;
    }
    let Some(delim) = chars.next() else {
        return true;
    };
    let rest: String = chars.collect();
    let parts: Vec<&str> = rest.split(delim).collect();
    let Some(replacement) = parts.get(1) else {
        return true;
    };
    replacement.starts_with('/') || replacement.contains("..") || replacement.contains('~')
}

/// vim's options that take the next word as their value (`-c CMD`, `-u VIMRC`, …).
const VIM_WITH_VALUE: &[&str] = &[
    "-c",
    "--cmd",
    "-S",
    "-u",
    "-U",
    "-i",
    "-T",
    "-s",
    "-t",
    "-q",
    "-w",
    "-W",
    "--servername",
    "--remote-send",
    "--remote-expr",
    "--startuptime",
    "--log",
];

/// An editor may write every file it is given (a script from a file, `-c wq`, or an ex
/// command on its input does it without a trace on the command line), so each file operand is
/// a write target: outside the project (`ed -s ~/.bashrc < x.ed`, `vim -es … ~/.bashrc`) it is
/// dangerous, as `echo >> ~/.bashrc` is. `+CMD` and `-` (the input) are no files; the values of
/// `with_value` options are skipped, except the files vim writes (`-w`, `-W`, `-i`).
pub(crate) fn edited_files(w: &mut Walker, args: &[Word], with_value: &[&str], prog: &str) {
    let mut i = 0;
    let mut ended = false;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if !ended && !a.dynamic && a.text == "--" {
            ended = true;
            continue;
        }
        if !ended && a.is_option() {
            if with_value.contains(&a.text.as_str()) {
                if let Some(value) = args.get(i)
                    && matches!(a.text.as_str(), "-w" | "-W" | "-i")
                {
                    check_write_target(w, value, prog, value.span);
                }
                i += 1;
            }
            continue;
        }
        if !ended && (a.text.starts_with('+') || a.text == "-") {
            continue;
        }
        check_write_target(w, a, prog, a.span);
    }
}

fn editor(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    let prog = cmd.argv.first().map_or("vim", |p| super::basename(&p.text));
    edited_files(w, args, VIM_WITH_VALUE, prog);
    // The first file operand: not an option's value (`-c 'so %' x.vim` edits x.vim).
    let file = args
        .iter()
        .enumerate()
        .find(|(n, a)| {
            !a.is_option()
                && !a.text.starts_with('+')
                && n.checked_sub(1)
                    .and_then(|p| args.get(p))
                    .is_none_or(|p| !VIM_WITH_VALUE.contains(&p.text.as_str()))
        })
        .map(|(_, a)| a.clone());
    // `--remote-send KEYS`, `--remote-expr EXPR` act in the person's running vim server, a
    // process outside any sandbox gg sets up (`--remote FILE` only opens a file there, judged
    // as any file operand is).
    if let Some(remote) = args
        .iter()
        .take_while(|a| a.dynamic || a.text != "--")
        .find(|a| matches!(a.text.as_str(), "--remote-send" | "--remote-expr"))
    {
        let msg = format!(
            "\"{prog} {}\" makes the person's running vim do it, outside any sandbox",
            remote.text
        );
        w.reason(Class::Dangerous, RuleId::ExecEditorShell, msg, remote.span);
    }
    // `VIMINIT='…' vim`, `EXINIT='…' ex`: vim runs the variable's value as ex commands at
    // startup (VIMINIT first, then EXINIT; both are read, failing closed).
    for name in ["VIMINIT", "EXINIT"] {
        if let Some(init) = w.vars.get(name).cloned() {
            super::vimscript::ex_line(w, &init, file.as_ref(), cmd.span);
        }
    }
    // `ex f`, `vim -es f` read ex commands from their input.
    if let Some(text) = &cmd.input.text {
        for line in text.lines() {
            super::vimscript::ex_line(w, line, file.as_ref(), cmd.span);
        }
    }
    let ex_mode = prog.starts_with("ex")
        || args
            .iter()
            .any(|a| matches!(a.text.as_str(), "-e" | "-E" | "-es" | "-Es"));
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if !a.dynamic && a.text == "--" {
            break;
        }
        // `-c CMD`, `-cCMD` (vim takes the rest of the word), `--cmd CMD`, `+CMD`.
        let command = match a.text.as_str() {
            "-c" | "--cmd" => {
                i += 1;
                args.get(i - 1).cloned()
            }
            t if t.starts_with("-c") && t.len() > 2 && !a.dynamic => Some(super::args::tail(a, 2)),
            t if t.starts_with('+') && t.len() > 1 => Some(super::args::tail(a, 1)),
            // `-S FILE` (a session or any script), `-u FILE` (the vimrc), `-U FILE` (the
            // gvimrc) run vim script; `-u NONE`, `NORC`, `DEFAULTS` name none.
            // `-S` with no file after it (the end, or an option next) sources `Session.vim`.
            "-S" if args.get(i).is_none_or(|next| next.is_option()) => {
                let script = Word::literal("Session.vim", a.span);
                let input = &cmd.input;
                super::vimscript::sourced_script(w, &script, Some(input), file.as_ref(), 0);
                None
            }
            "-S" | "-u" | "-U" => {
                i += 1;
                if let Some(script) = args
                    .get(i - 1)
                    .filter(|s| !matches!(s.text.as_str(), "NONE" | "NORC" | "DEFAULTS" | ""))
                {
                    let input = &cmd.input;
                    super::vimscript::sourced_script(w, script, Some(input), file.as_ref(), 0);
                }
                None
            }
            // `nvim -l FILE` runs FILE as Lua (the arguments after it are the script's).
            "-l" if prog.starts_with("nvim") => {
                if let Some(script) = args.get(i) {
                    super::vimscript::foreign_script(w, "lua", script);
                    let msg = format!("{prog} -l runs the Lua script {}", script.text);
                    w.reason(Class::Normal, RuleId::ExecScriptFile, msg, script.span);
                }
                break;
            }
            // `-s FILE` types FILE's text as normal-mode keys (outside Ex mode, where `-s`
            // means silent).
            "-s" if !ex_mode => {
                i += 1;
                if let Some(keys) = args.get(i - 1) {
                    match super::output::visible_file_text(w, &cmd.input, keys) {
                        Some(text) => {
                            super::vimscript::typed_keys(w, &text, file.as_ref(), keys.span, 0)
                        }
                        None => {
                            let msg = format!(
                                "{prog} -s types the keys in {}, whose content is not inspected",
                                keys.text
                            );
                            w.reason(Class::Normal, RuleId::ExecScriptFile, msg, keys.span);
                        }
                    }
                }
                None
            }
            t if VIM_WITH_VALUE.contains(&t) => {
                i += 1;
                None
            }
            _ => None,
        };
        let Some(c) = command else { continue };
        if c.dynamic {
            w.reason(
                Class::Normal,
                RuleId::DynamicShellCode,
                "editor command computed at run time",
                c.span,
            );
            continue;
        }
        // `-c 'w ~/.bashrc'` writes where the command says, `-c '!cmd'` runs cmd.
        super::vimscript::ex_line(w, &c.text, file.as_ref(), c.span);
    }
    Outcome::not(
        RuleId::ReadonlyNotAllowListed,
        "editors are not on the read-only list",
    )
}

/// emacsclient's options that take the next word as their value.
#[rustfmt::skip]
const EMACSCLIENT_WITH_VALUE: &[&str] = &[
    "-a", "--alternate-editor", "-s", "--socket-name", "-f", "--server-file", "-d", "--display",
    "-T", "--tramp", "-F", "--frame-parameters",
];

/// `emacs --eval EXPR` (`-eval`, `--eval=EXPR`, also in `-batch`/`--batch`) evaluates Lisp;
/// `-l FILE`/`--load`, `--script FILE` and `-f FUNCTION`/`--funcall` run Lisp from a file or
/// a function: code execution either way. For emacsclient (`client`), `-e`/`--eval` makes
/// every operand an expression; returns whether it did.
fn emacs_code(w: &mut Walker, args: &[Word], client: bool) -> bool {
    if client {
        let evaluates = args
            .iter()
            .take_while(|a| a.text != "--")
            .any(|a| a.text == "-e" || long_is(&a.text, "--eval"));
        if evaluates {
            let mut i = 0;
            while i < args.len() {
                let a = &args[i];
                i += 1;
                if EMACSCLIENT_WITH_VALUE.contains(&a.text.as_str()) {
                    i += 1;
                } else if !a.is_option() {
                    super::vimscript::emacs_lisp(w, a, a.span);
                }
            }
        }
        return evaluates;
    }
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let t = a.text.as_str();
        let name = t.split_once('=').map_or(t, |(n, _)| n);
        let long = name.trim_start_matches('-');
        let value = match t.split_once('=') {
            Some(_) if t.starts_with("--") => Some(super::args::tail(a, name.len() + 1)),
            _ => args.get(i).cloned(),
        };
        if !(a.is_option() && long.len() > 1 || t == "-l" || t == "-f") {
            continue;
        }
        if matches!(long, "eval" | "execute") {
            if !t.contains('=') {
                i += 1;
            }
            if let Some(code) = value {
                super::vimscript::emacs_lisp(w, &code, code.span);
            }
        } else if matches!(
            long,
            "l" | "load" | "script" | "scriptload" | "f" | "funcall" | "x"
        ) {
            if !t.contains('=') {
                i += 1;
            }
            let msg = format!("\"emacs {t}\" runs Lisp code");
            w.reason(Class::Normal, RuleId::ExecInterpreterCode, msg, a.span);
        }
    }
    false
}

fn man(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        let program = if let Some(browser) = t.strip_prefix("-H") {
            Some(browser.to_string())
        } else if long_is(t, "--html") {
            Some(
                t.split_once('=')
                    .map(|(_, v)| v.to_string())
                    .unwrap_or_default(),
            )
        } else if t == "-P" {
            Some(args.get(i + 1).map(|v| v.text.clone()).unwrap_or_default())
        } else if let Some(p) = t.strip_prefix("-P") {
            Some(p.to_string())
        } else if long_is(t, "--pager") {
            Some(
                long_value(args, i, "--pager")
                    .map(value_text)
                    .unwrap_or_default(),
            )
        } else {
            None
        };
        if let Some(p) = program {
            program_option(w, &p, a.span, RuleId::ExecManProgram, "man");
        }
    }
    Outcome::not(
        RuleId::ReadonlyNotAllowListed,
        "\"man\" starts a pager, which can run commands",
    )
}

fn rg(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    let mut outcome = Outcome::read_only();
    let options_end = args
        .iter()
        .position(|a| !a.dynamic && a.text == "--")
        .unwrap_or(args.len());
    for i in 0..options_end {
        let a = &args[i];
        if !a.is_option() {
            continue;
        }
        let t = a.text.as_str();
        for opt in ["--pre", "--hostname-bin"] {
            if long_is(t, opt) && !t.starts_with("--pre-") {
                let value = long_value(args, i, opt).map(value_text).unwrap_or_default();
                program_option(w, &value, a.span, RuleId::ExecRgPre, "rg --pre");
                outcome = Outcome::not(
                    RuleId::ReadonlyFlagWrites,
                    format!("\"rg {opt}\" runs a program on each file"),
                );
            }
        }
        if long_is(t, "--search-zip") || short_has(t, 'z') {
            outcome = Outcome::not(
                RuleId::ReadonlyFlagWrites,
                "\"rg --search-zip\" runs decompression programs",
            );
        }
    }
    outcome
}

fn awk(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    let mut i = 0;
    let mut program: Option<&Word> = None;
    while i < args.len() {
        let t = args[i].text.as_str();
        if args[i].dynamic && program.is_none() {
            program = Some(&args[i]);
            break;
        }
        match t {
            "-F" | "-v" => i += 2,
            "--" => {
                program = args.get(i + 1);
                break;
            }
            "-f" | "--file" | "-E" | "--exec" => {
                return Outcome::not(
                    RuleId::ExecScriptFile,
                    "awk runs a program file that is not inspected",
                );
            }
            _ if t.starts_with("-F") || t.starts_with("-v") => i += 1,
            _ if t.starts_with('-') && t.len() > 1 => {
                return Outcome::not(
                    RuleId::ReadonlyFlagWrites,
                    format!("\"awk {t}\" is not a known read-only option"),
                );
            }
            _ => {
                program = Some(&args[i]);
                break;
            }
        }
    }
    let Some(prog) = program else {
        return Outcome::read_only();
    };
    if prog.dynamic {
        return Outcome::not(
            RuleId::DynamicShellCode,
            "the awk program is computed at run time",
        );
    }
    embedded_shell_commands(w, prog, "awk");
    for command in awk_pipe_commands(&prog.text) {
        let (_, risky) = run_code(w, &command, prog.span, &Flow::default());
        if risky {
            let msg = format!("the awk program pipes to or from the command {command}");
            w.reason(Class::Dangerous, RuleId::ExecEmbeddedShell, msg, prog.span);
        }
    }
    // `ENVIRON["X"]` with X holding a credential store's path.
    super::interp::environment_credential_lookup(w, "awk", &prog.text, prog.span);
    let fx = awk_effects(&prog.text);
    // `for (k in ENVIRON) print … |& "/inet/tcp/0/h/80"`: gawk sends the whole environment
    // over its own network special file, as `env | nc h 80` does.
    if fx.strings.iter().any(|s| s.contains("/inet"))
        && super::interp::reads_whole_environment(&prog.text)
    {
        let msg = "the awk program takes the whole environment and opens a network connection";
        w.reason(Class::Dangerous, RuleId::ExfilCredentials, msg, prog.span);
    }
    if (fx.system || fx.pipe) && cmd.input.untrusted() {
        let msg = "the awk program runs commands while reading downloaded or decoded input";
        w.reason(
            Class::Dangerous,
            RuleId::DownloadPipeToInterpreter,
            msg,
            prog.span,
        );
    }
    // A string of the program may name a credential file (`getline l < "/root/.ssh/id_rsa"`):
    // as if it were named on the command line.
    if let Some(secret) = fx
        .strings
        .iter()
        .find(|s| super::names_credentials(w, &Word::literal(s, prog.span)))
    {
        let msg = format!("the awk program names the credential file {secret}");
        w.reason(
            Class::Dangerous,
            RuleId::SecretsCredentialFile,
            msg,
            prog.span,
        );
    }
    for target in &fx.targets {
        match target {
            Some(file) => {
                let word = Word::literal(file, prog.span);
                check_write_target(w, &word, "awk print >", prog.span);
            }
            None => {
                let msg = "the awk program writes to a file whose name is computed";
                w.reason(Class::Normal, RuleId::WriteUnknownTarget, msg, prog.span);
            }
        }
    }
    if fx.any() {
        return Outcome::not(
            RuleId::ReadonlyAwkIo,
            "the awk program runs commands, writes files, uses pipes, reads the environment, \
             changes ARGV, opens a network special file or reads a file whose name is computed",
        );
    }
    // `getline < "FILE"`: the file is read like an operand, and judged like one (devices, other
    // processes' files, paths after `cd`).
    if !fx.reads.is_empty() {
        let argv = std::iter::once(Word::literal("cat", prog.span))
            .chain(fx.reads.iter().map(|f| Word::literal(f, prog.span)))
            .collect();
        let probe = Cmd::of_words(argv, Flow::default(), prog.span);
        let mut outcome = Outcome::read_only();
        super::redirects::check_device_reads(w, &probe, &mut outcome);
        if outcome.read_only != super::ReadOnly::Yes {
            return outcome;
        }
        if fx
            .reads
            .iter()
            .any(|f| super::secrets::names_process_secrets_at(w, &Word::literal(f, prog.span)))
        {
            return Outcome::not(
                RuleId::SecretsProcess,
                "the awk program reads another process's environment, command line or memory",
            );
        }
    }
    Outcome::read_only()
}

fn awk_pipe_commands(program: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = program.as_bytes();
    for (at, _) in program.match_indices('|') {
        // `||` is logical or, not a pipe.
        if bytes.get(at + 1) == Some(&b'|') || at > 0 && bytes[at - 1] == b'|' {
            continue;
        }
        if let Some(after) = quoted_prefix(program[at + 1..].trim_start()) {
            out.push(after);
        }
        let before = program[..at].trim_end();
        if let Some(quote) = before.chars().last().filter(|c| *c == '"')
            && let Some(open) = before[..before.len() - 1].rfind(quote)
        {
            out.push(before[open + 1..before.len() - 1].to_string());
        }
    }
    out.truncate(16);
    out
}
