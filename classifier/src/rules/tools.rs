//! Exec and write primitives of common tools (the GTFOBins families): debuggers, database
//! shells, macro processors, build tools and test runners that run commands or write files
//! named in their arguments or input. A dangerous payload makes the command dangerous; a write
//! target outside the project is judged like any other.

use super::args::{Arg, split_args};
use super::escapes::program_option;
use super::exec::shell_strings;
use super::{Outcome, check_write_target, run_code};
use crate::Class;
use crate::ids::RuleId;
use crate::walk::{Cmd, Flow, Walker};
use crate::word::Word;

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    let args = &cmd.argv[1..];
    runner_interpreter(w, cmd, prog);
    match prog {
        "gdb" | "cgdb" | "gdb-multiarch" => {
            gdb(w, cmd);
            if option_reads_stdin(
                args,
                &["-x", "--command", "-command", "-ix", "--init-command"],
            ) {
                super::exec::stdin_code(w, cmd, prog, false);
            }
        }
        "uv" if args.first().is_some_and(|a| a.text == "run") && args.iter().any(is_stdin) => {
            super::exec::stdin_code(w, cmd, prog, false);
        }
        "sqlite3" | "sqlite" => {
            sqlite(w, cmd);
            if prog == "sqlite3" && sqlite_read_only(cmd, w.ctx.read_only_unconfined) {
                return Some(Outcome::read_only());
            }
        }
        "m4" => m4(w, cmd),
        "make" | "gmake" => {
            make(w, args);
            if option_reads_stdin(args, &["-f", "--file", "--makefile"]) {
                super::exec::stdin_code(w, cmd, prog, false);
            }
        }
        "split" | "csplit" => split(w, args, prog),
        "script" => return Some(script(w, cmd)),
        "pip" | "pip3" => pip(w, args),
        "npm" | "pnpm" | "yarn" | "bun" => package_scripts(w, cmd, prog),
        _ => {}
    }
    report_paths(w, prog, args);
    None
}

/// Project and package runners (`uv run`, `npx`, `poetry run`, `bundle exec` …) in front of an
/// interpreter: `uv run python -c CODE` runs CODE as `python -c CODE` does, so the interpreter's
/// command is read as one (its dangerous findings kept; the runner itself is never read-only).
/// Only from the first word that is an interpreter's name, which runners pass on unchanged.
fn runner_interpreter(w: &mut Walker, cmd: &Cmd, prog: &str) {
    #[rustfmt::skip]
    const RUNNERS: &[&str] = &[
        "uv", "uvx", "npx", "pnpx", "bunx", "pnpm", "yarn", "poetry", "pipenv", "pdm", "rye",
        "hatch", "conda", "mamba", "micromamba", "pixi", "bundle", "pipx", "devbox", "mise",
        "asdf", "direnv", "nix-shell", "rtx",
    ];
    if !RUNNERS.contains(&prog) || w.in_final_scan() {
        return;
    }
    let args = &cmd.argv[1..];
    let Some(at) = args
        .iter()
        .position(|a| !a.dynamic && super::exec::is_interpreter(super::basename(&a.text)))
    else {
        return;
    };
    w.keep_dangerous("run by a project runner", |w| {
        super::run(
            w,
            Cmd::of_words(args[at..].to_vec(), cmd.input.clone(), cmd.span),
        );
    });
}

/// `-`, `/dev/stdin` and its aliases: the program reads that file from its input.
pub(crate) fn is_stdin(word: &Word) -> bool {
    !word.dynamic
        && matches!(
            word.text.as_str(),
            "-" | "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0"
        )
}

/// Whether one of `opts` (separate, `=` or attached value) names standard input: `make -f -`,
/// `gdb -x /dev/stdin`.
fn option_reads_stdin(args: &[Word], opts: &[&str]) -> bool {
    args.iter().enumerate().any(|(i, a)| {
        let t = a.text.as_str();
        opts.iter().any(|o| {
            (t == *o && args.get(i + 1).is_some_and(is_stdin))
                || t.strip_prefix(o).is_some_and(|rest| {
                    let rest = rest.strip_prefix('=').unwrap_or(rest);
                    !rest.is_empty() && is_stdin(&Word::literal(rest, a.span))
                })
        })
    })
}

/// `gdb -ex '!cmd'`, `-ex 'shell cmd'`, `-ex 'python os.system(…)'`, `-iex`, `--eval-command`.
fn gdb(w: &mut Walker, cmd: &Cmd) {
    let args = &cmd.argv[1..];
    let mut commands: Vec<Word> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        let long = t.trim_start_matches('-');
        if args[i].is_option()
            && matches!(
                long.split('=').next(),
                Some("ex" | "iex" | "eval-command" | "init-eval-command")
            )
        {
            match t.split_once('=') {
                Some((_, v)) => commands.push(Word::literal(v, args[i].span)),
                None => commands.extend(args.get(i + 1).cloned()),
            }
        }
        i += 1;
    }
    if let Some(text) = &cmd.input.text {
        commands.extend(text.lines().map(|l| Word::literal(l, cmd.span)));
    }
    for c in commands {
        debugger_command(w, &c, "gdb");
    }
}

fn debugger_command(w: &mut Walker, c: &Word, tool: &str) {
    let text = c.text.trim();
    let shell = text
        .strip_prefix('!')
        .or_else(|| text.strip_prefix("shell "))
        .or_else(|| text.strip_prefix("pipe "))
        .map(str::to_string);
    if let Some(code) = shell {
        program_option(w, &code, c.span, RuleId::ExecToolCommand, tool);
    } else if text.starts_with("python") || text.starts_with("pi ") {
        for s in shell_strings(text) {
            program_option(w, &s, c.span, RuleId::ExecToolCommand, tool);
        }
    } else if c.dynamic {
        w.reason(
            Class::Normal,
            RuleId::DynamicShellCode,
            format!("{tool} runs a computed command"),
            c.span,
        );
    }
}

/// `sqlite3 db '.shell cmd'`, `.system`, `.output FILE`, `.once FILE|'|cmd'`, `-cmd`, stdin; the
/// CLI's SQL functions `readfile()`, `writefile()`, `edit()`, `load_extension()`, which work
/// whatever the database (`:memory:` too) and `-readonly` does not stop.
fn sqlite(w: &mut Walker, cmd: &Cmd) {
    let args = &cmd.argv[1..];
    let mut lines: Vec<(String, crate::Span)> = Vec::new();
    let mut texts: Vec<(String, crate::Span)> = Vec::new();
    let mut i = 0;
    let mut operands = 0;
    while i < args.len() {
        let a = &args[i];
        if a.text == "-cmd" {
            if let Some(v) = args.get(i + 1) {
                lines.push((v.text.clone(), v.span));
                texts.push((v.text.clone(), v.span));
            }
            i += 2;
            continue;
        }
        if !a.is_option() {
            operands += 1;
            if operands >= 2 {
                lines.extend(a.text.split(['\n', ';']).map(|l| (l.to_string(), a.span)));
                texts.push((a.text.clone(), a.span));
            }
        }
        i += 1;
    }
    if let Some(text) = &cmd.input.text {
        lines.extend(text.split(['\n', ';']).map(|l| (l.to_string(), cmd.span)));
        texts.push((text.clone(), cmd.span));
    }
    // `readfile('~/.ssh/id_rsa')`, `.import ~/.aws/credentials t`, `.read`: any credential
    // store the SQL or a dot-command names can be read and printed.
    for (text, span) in &texts {
        if let Some(path) = super::interp::names_credential_store(w, text, *span) {
            let msg = format!("sqlite3 is given text that names the credential store {path}");
            w.reason(Class::Dangerous, RuleId::SecretsCredentialFile, msg, *span);
        }
    }
    // `.cd DIR` moves the CLI: a relative file written later is in DIR.
    let mut dir: Option<String> = None;
    for (line, span) in lines {
        let line = line.trim();
        let Some((dot, rest)) = line.split_once(char::is_whitespace).or(Some((line, ""))) else {
            continue;
        };
        let rest = rest.trim().trim_matches(['\'', '"']);
        let target = |file: &str| -> Word {
            match &dir {
                Some(d) if !file.starts_with(['/', '~']) => {
                    Word::literal(&format!("{}/{file}", d.trim_end_matches('/')), span)
                }
                _ => Word::literal(file, span),
            }
        };
        match dot {
            ".shell" | ".system" => {
                program_option(w, rest, span, RuleId::ExecToolCommand, "sqlite3")
            }
            ".cd" => dir = Some(rest.to_string()),
            ".output" | ".once" | ".log" | ".save" | ".backup" | ".clone" | ".trace"
            | ".iotrace" | ".dump"
                if !rest.is_empty() =>
            {
                let rest = rest.trim_start_matches("-x ").trim_start_matches("-e ");
                if let Some(program) = rest.strip_prefix('|') {
                    program_option(w, program, span, RuleId::ExecToolCommand, "sqlite3 pipe");
                } else if dot != ".dump" {
                    // `.backup ?DB? FILE`, `.save ?DB? FILE`: the file is the last word.
                    let file = rest
                        .rsplit(char::is_whitespace)
                        .next()
                        .unwrap_or(rest)
                        .trim_matches(['\'', '"']);
                    check_write_target(w, &target(file), &format!("sqlite3 {dot}"), span);
                }
            }
            ".read" | ".import" => {
                // `.read '|cmd'`, `.import '|cmd' t`: the CLI runs the command.
                if let Some(program) = rest.strip_prefix('|') {
                    let program = program.trim_end_matches(|c: char| c != '\'' && c != '"');
                    let program = program.trim_end_matches(['\'', '"']);
                    let program = if program.is_empty() {
                        rest.trim_start_matches('|')
                    } else {
                        program
                    };
                    program_option(w, program, span, RuleId::ExecToolCommand, "sqlite3 pipe");
                }
            }
            ".load" => {
                let msg = "sqlite3 .load loads a native extension";
                w.reason(Class::Normal, RuleId::ExecToolCommand, msg, span);
            }
            ".excel" | ".www" => {
                let msg = format!("sqlite3 {dot} opens the output in another program");
                w.reason(Class::Normal, RuleId::ExecToolCommand, msg, span);
            }
            _ => {
                let upper = line.to_ascii_uppercase();
                if let Some(at) = upper.find("ATTACH") {
                    let quoted = super::exec::quoted_prefix(
                        line[at..]
                            .split_once(char::is_whitespace)
                            .map_or("", |(_, r)| r)
                            .trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == ' ')
                            .trim(),
                    );
                    if let Some(file) = quoted {
                        check_write_target(w, &target(&file), "sqlite3 ATTACH", span);
                    }
                }
                sql_functions(w, line, span, &target);
            }
        }
    }
}

/// The CLI's own SQL functions in one statement: `writefile(FILE, data)` writes FILE,
/// `edit(text, EDITOR)` runs EDITOR (or `$EDITOR`), `load_extension(LIB)` loads native code.
fn sql_functions(w: &mut Walker, line: &str, span: crate::Span, target: &dyn Fn(&str) -> Word) {
    let lower = line.to_ascii_lowercase();
    for (at, _) in lower.match_indices("writefile") {
        let args = sql_call_args(&line[at + "writefile".len()..]);
        match args.first().and_then(|a| sql_string(a)) {
            Some(file) => check_write_target(w, &target(&file), "sqlite3 writefile()", span),
            None if !args.is_empty() => {
                let msg = "sqlite3 writefile() writes a path computed by the query";
                w.reason(Class::Normal, RuleId::WriteUnknownTarget, msg, span);
            }
            None => {}
        }
    }
    for (at, _) in lower.match_indices("edit") {
        // `edit(` as a call, not `credit(` or a column named `edits`.
        let before = lower[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let args = sql_call_args(&line[at + "edit".len()..]);
        if args.is_empty() {
            continue;
        }
        match args.get(1).map(|a| sql_string(a)) {
            Some(Some(editor)) => {
                program_option(w, &editor, span, RuleId::ExecToolCommand, "sqlite3 edit()")
            }
            _ => {
                let msg = "sqlite3 edit() runs an editor program";
                w.reason(Class::Normal, RuleId::ExecToolCommand, msg, span);
            }
        }
    }
    for (at, _) in lower.match_indices("fsdir") {
        // `select data from fsdir('/home/u')` reads every file below the directory, like
        // `grep -r x ~`: a directory holding a store is a credential read.
        let args = sql_call_args(&line[at + "fsdir".len()..]);
        let Some(dir) = args.first().and_then(|a| sql_string(a)) else {
            continue;
        };
        let holds = super::secrets::absolutes_for_match(w, &dir)
            .iter()
            .any(|d| super::secrets::directory_holds_credentials(w, d));
        if holds {
            let msg =
                format!("sqlite3 fsdir() reads every file below {dir}, credential stores too");
            w.reason(Class::Dangerous, RuleId::SecretsCredentialFile, msg, span);
        }
    }
    if lower.contains("load_extension") {
        let msg = "sqlite3 load_extension() loads native code";
        w.reason(Class::Normal, RuleId::ExecToolCommand, msg, span);
    }
}

/// The top-level arguments of the call whose `(` starts `rest` (after blanks); empty when
/// `rest` is not a call.
fn sql_call_args(rest: &str) -> Vec<&str> {
    let Some(inner) = rest.trim_start().strip_prefix('(') else {
        return Vec::new();
    };
    let mut args = Vec::new();
    let (mut depth, mut quote, mut start) = (0usize, None::<char>, 0usize);
    for (i, c) in inner.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') if depth == 0 => {
                args.push(inner[start..i].trim());
                return args;
            }
            (None, ')') => depth -= 1,
            (None, ',') if depth == 0 => {
                args.push(inner[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    // No closing parenthesis: what there is.
    args.push(inner[start..].trim());
    args
}

/// A SQL string literal's value (`'a''b'` is `a'b`); `None` for any other expression.
fn sql_string(arg: &str) -> Option<String> {
    let inner = arg.strip_prefix('\'')?.strip_suffix('\'')?;
    if inner.replace("''", "").contains('\'') {
        return None;
    }
    Some(inner.replace("''", "'"))
}

/// `sqlite3 -readonly DB 'SQL'` with only display options, and SQL without dot commands other
/// than listing ones, without `ATTACH`, `VACUUM`, `load_extension`, the CLI's `writefile`,
/// `readfile`, `edit` and its file-system tables: it only prints (issue 36 §2 asks for it).
///
/// The SQL text is not all that runs: the database's own views and triggers are repository
/// content, and a view may call the CLI's `edit()`, which runs `$EDITOR` or its second argument
/// as a command. Where read-only verdicts are enforced (the default) that program runs as the
/// command does, unable to write or reach the network, so the verdict costs nothing. Where they
/// are not ([`crate::Context::read_only_unconfined`]) `-safe` is required too: safe mode makes
/// the CLI refuse `edit()`, `readfile()`, `writefile()`, `load_extension()`, `ATTACH` and the
/// dot-commands that run programs or open files, wherever they come from.
fn sqlite_read_only(cmd: &Cmd, safe_required: bool) -> bool {
    #[rustfmt::skip]
    const FLAGS: &[&str] = &[
        "-readonly", "-header", "-noheader", "-csv", "-json", "-line", "-list", "-column", "-box",
        "-markdown", "-table", "-tabs", "-html", "-quote", "-batch", "-bail", "-safe",
    ];
    const WITH_VALUE: &[&str] = &["-separator", "-newline", "-nullvalue"];
    #[rustfmt::skip]
    const DOT: &[&str] = &[
        ".tables", ".schema", ".indexes", ".indices", ".headers", ".mode", ".databases", ".show",
        ".fullschema", ".width", ".nullvalue", ".separator", ".timer", ".changes", ".stats",
        ".dbinfo", ".print",
    ];
    if cmd.input.fed && cmd.input.text.is_none() {
        return false;
    }
    let args = &cmd.argv[1..];
    let mut readonly = false;
    let mut safe = false;
    let mut operands = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.dynamic {
            return false;
        }
        let t = a.text.trim_start_matches('-');
        let t = format!("-{t}");
        if a.text.starts_with('-') {
            if WITH_VALUE.contains(&t.as_str()) {
                i += 2;
                continue;
            }
            if !FLAGS.contains(&t.as_str()) {
                return false;
            }
            readonly |= t == "-readonly";
            safe |= t == "-safe";
        } else {
            operands.push(a.text.as_str());
        }
        i += 1;
    }
    let input = cmd.input.text.as_deref().unwrap_or("");
    let sql: Vec<&str> = operands.iter().skip(1).copied().chain([input]).collect();
    readonly
        && (safe || !safe_required)
        && !operands.is_empty()
        && sql.iter().all(|text| {
            let lower = text.to_ascii_lowercase();
            ![
                "attach",
                "vacuum",
                "load_extension",
                "writefile",
                "readfile",
                "edit(",
                // The CLI's file-system tables: `fsdir` reads any file even in safe mode.
                "fsdir",
                "zipfile",
                "sqlar",
            ]
            .iter()
            .any(|w| lower.contains(w))
                && text.split(['\n', ';']).all(|line| {
                    let line = line.trim();
                    !line.starts_with('.')
                        || DOT.contains(&line.split_whitespace().next().unwrap_or(""))
                })
        })
}

/// `m4` runs `syscmd(…)`/`esyscmd(…)` from its input or arguments.
fn m4(w: &mut Walker, cmd: &Cmd) {
    let mut texts: Vec<(String, crate::Span)> = cmd.argv[1..]
        .iter()
        .filter(|a| a.text.contains("syscmd"))
        .map(|a| (a.text.clone(), a.span))
        .collect();
    if let Some(t) = &cmd.input.text {
        texts.push((t.clone(), cmd.span));
    }
    for (text, span) in texts {
        for (at, _) in text.match_indices("syscmd(") {
            let rest = &text[at + "syscmd(".len()..];
            let inner = rest
                .split(')')
                .next()
                .unwrap_or("")
                .trim_matches(['`', '\'', '"']);
            program_option(w, inner, span, RuleId::ExecToolCommand, "m4 syscmd");
        }
    }
}

/// `make --eval='…$(shell cmd)…'`, `$(file >PATH,…)`; `-f`/`-C` elsewhere are ordinary.
fn make(w: &mut Walker, args: &[Word]) {
    const WITH_VALUE: &[&str] = &[
        "-E",
        "--eval",
        "-f",
        "--file",
        "-C",
        "--directory",
        "-I",
        "-o",
        "-W",
        "-j",
        "-l",
    ];
    for arg in split_args(args, WITH_VALUE) {
        match arg {
            // `VAR=value` on the command line is like --eval of an assignment.
            Arg::Operand(word) => {
                if word.text.contains("$(") {
                    make_text(w, word);
                }
            }
            Arg::Options(_, options) => {
                for opt in options {
                    if matches!(opt.name.as_str(), "-E" | "--eval")
                        && let Some(v) = &opt.value
                    {
                        make_text(w, v);
                    }
                }
            }
        }
    }
}

fn make_text(w: &mut Walker, word: &Word) {
    let text = &word.text;
    for (at, _) in text.match_indices("$(shell ") {
        let inner = balanced(&text[at + "$(shell ".len()..]);
        program_option(
            w,
            &inner,
            word.span,
            RuleId::ExecToolCommand,
            "make $(shell)",
        );
    }
    for (at, _) in text.match_indices("$(file ") {
        let inner = balanced(&text[at + "$(file ".len()..]);
        let path = inner
            .trim_start_matches(['>', '<'])
            .split(',')
            .next()
            .unwrap_or("")
            .trim();
        if inner.starts_with('>') {
            check_write_target(
                w,
                &Word::literal(path, word.span),
                "make $(file)",
                word.span,
            );
        }
    }
    // A recipe in --eval (`all: ; cmd`) runs as shell code.
    if let Some((_, recipe)) = text.split_once(": ;") {
        program_option(
            w,
            recipe.trim(),
            word.span,
            RuleId::ExecToolCommand,
            "make --eval recipe",
        );
    }
}

/// Text up to the parenthesis closing an already opened `$(`.
fn balanced(text: &str) -> String {
    let mut depth = 1;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return text[..i].to_string();
                }
            }
            _ => {}
        }
    }
    text.to_string()
}

/// `split --filter=CMD` runs CMD per chunk; the output prefix is written.
fn split(w: &mut Walker, args: &[Word], prog: &str) {
    const WITH_VALUE: &[&str] = &[
        "--filter",
        "-b",
        "-l",
        "-n",
        "-a",
        "-C",
        "-t",
        "--additional-suffix",
        "-f",
        "--prefix",
    ];
    let mut ops = Vec::new();
    for arg in split_args(args, WITH_VALUE) {
        match arg {
            Arg::Operand(word) => ops.push(word),
            Arg::Options(word, options) => {
                for opt in options {
                    if opt.name == "--filter" {
                        let program = opt
                            .value
                            .as_ref()
                            .map(|v| v.text.clone())
                            .unwrap_or_default();
                        program_option(
                            w,
                            &program,
                            word.span,
                            RuleId::ExecToolCommand,
                            "split --filter",
                        );
                    }
                }
            }
        }
    }
    if prog == "split"
        && let Some(prefix) = ops.get(1)
    {
        check_write_target(w, prefix, "split", prefix.span);
    }
}

/// `script -c CMD FILE`: a wrapper that runs CMD under a pty and writes FILE.
fn script(w: &mut Walker, cmd: &Cmd) -> Outcome {
    const WITH_VALUE: &[&str] = &[
        "-c",
        "--command",
        "-E",
        "--echo",
        "-I",
        "--log-in",
        "-O",
        "--log-out",
        "-B",
        "--log-io",
        "-T",
        "--log-timing",
        "-m",
        "--logging-format",
    ];
    let mut ops = Vec::new();
    let mut flow = Flow::default();
    for arg in split_args(&cmd.argv[1..], WITH_VALUE) {
        let options = match arg {
            Arg::Operand(word) => {
                ops.push(word);
                continue;
            }
            Arg::Options(_, options) => options,
        };
        for opt in options {
            match (opt.name.as_str(), opt.value) {
                ("-c" | "--command", Some(code)) => {
                    let text = code.text.clone();
                    flow = run_code(w, &text, code.span, &cmd.input).0;
                }
                (
                    "-I" | "--log-in" | "-O" | "--log-out" | "-B" | "--log-io" | "-T"
                    | "--log-timing",
                    Some(file),
                ) => {
                    check_write_target(w, &file, "script", file.span);
                }
                _ => {}
            }
        }
    }
    if let Some(file) = ops.first() {
        check_write_target(w, file, "script", file.span);
    }
    Outcome::not(
        RuleId::ExecWrapper,
        "\"script\" runs a shell and records it",
    )
    .with_flow(flow)
}

/// `pip config --editor CMD edit` (and `pip --editor`): the editor runs.
fn pip(w: &mut Walker, args: &[Word]) {
    for (i, a) in args.iter().enumerate() {
        let value = if a.text == "--editor" {
            args.get(i + 1).map(|v| v.text.clone())
        } else {
            a.text.strip_prefix("--editor=").map(str::to_string)
        };
        if let Some(editor) = value {
            program_option(w, &editor, a.span, RuleId::ExecToolCommand, "pip --editor");
        }
    }
}

/// npm lifecycle scripts: a `package.json` this script wrote (or `npm pkg set scripts.X=…`)
/// runs its scripts on install, test, start, run.
fn package_scripts(w: &mut Walker, cmd: &Cmd, prog: &str) {
    let args = &cmd.argv[1..];
    let words: Vec<&str> = args
        .iter()
        .filter(|a| !a.is_option())
        .map(|a| a.text.as_str())
        .collect();
    if let ["pkg", "set", settings @ ..] = words.as_slice() {
        for s in settings {
            if let Some((key, value)) = s.split_once('=')
                && key.starts_with("scripts.")
            {
                program_option_if_dangerous(w, value, cmd.span, prog);
            }
        }
        return;
    }
    let runs_scripts = words.is_empty() && prog == "yarn"
        || matches!(
            words.first(),
            Some(
                &("install"
                    | "i"
                    | "ci"
                    | "add"
                    | "run"
                    | "run-script"
                    | "test"
                    | "t"
                    | "start"
                    | "restart"
                    | "stop"
                    | "rebuild"
                    | "pack"
                    | "publish"
                    | "exec"
                    | "x")
            )
        );
    if !runs_scripts || w.written.is_empty() {
        return;
    }
    let manifest = Word::literal("package.json", cmd.span);
    let Some(text) = super::written_text(w, &manifest) else {
        return;
    };
    for value in json_strings(&text) {
        program_option_if_dangerous(w, &value, cmd.span, prog);
    }
}

/// Like `program_option`, but a plain shell (`"sh"`) in a manifest is not reported: only
/// payloads that are dangerous themselves.
fn program_option_if_dangerous(w: &mut Walker, code: &str, span: crate::Span, prog: &str) {
    let before = w.reasons.len();
    let (_, _) = run_code(w, code, span, &Flow::default());
    let dangerous = w.reasons[before..]
        .iter()
        .any(|r| r.class == Class::Dangerous);
    if dangerous {
        let msg = format!("\"{prog}\" runs a package script written by this command: {code}");
        w.reason(Class::Dangerous, RuleId::ExecPackageScript, msg, span);
    }
}

/// String values of a JSON text (after a `:`), unescaped enough to read commands.
fn json_strings(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(colon) = rest.find(':') {
        rest = rest[colon + 1..].trim_start();
        if let Some(body) = rest.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = body.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
            out.push(value);
        }
        if out.len() >= 32 {
            break;
        }
    }
    out
}

/// Report and output paths of linters, test runners and compilers (`eslint -o`, `pytest
/// --junitxml=`, `go test -coverprofile=`): a path outside the project is a write there.
fn report_paths(w: &mut Walker, prog: &str, args: &[Word]) {
    #[rustfmt::skip]
    const FLAGS: &[(&str, &[&str])] = &[
        ("eslint", &["-o", "--output-file"]),
        ("stylelint", &["-o", "--output-file"]),
        ("pytest", &["--junitxml", "--junit-xml", "--html", "--result-log", "--log-file", "--resultlog", "--basetemp", "--report-log"]),
        ("py.test", &["--junitxml", "--junit-xml", "--html", "--log-file"]),
        ("jest", &["--outputFile", "--coverageDirectory"]),
        ("vitest", &["--outputFile"]),
        ("mocha", &["--reporter-option"]),
        ("ruff", &["-o", "--output-file", "--cache-dir"]),
        ("mypy", &["--junit-xml", "--html-report", "--txt-report", "--xml-report", "--cache-dir"]),
        ("flake8", &["--output-file"]),
        ("pylint", &["--output"]),
        ("coverage", &["-o", "--data-file"]),
        ("phpunit", &["--log-junit", "--coverage-html", "--coverage-clover"]),
        ("rspec", &["-o", "--out"]),
        ("tsc", &["--outDir", "--outFile", "--tsBuildInfoFile"]),
        ("go", &["-o", "-coverprofile", "-cpuprofile", "-memprofile", "-trace", "-outputdir", "-blockprofile", "-mutexprofile"]),
        ("cargo", &["--target-dir", "--out-dir", "--artifact-dir"]),
        ("prettier", &["--cache-location"]),
        ("black", &["--cache-dir"]),
        ("gcc", &["-o"]), ("cc", &["-o"]), ("clang", &["-o"]), ("g++", &["-o"]), ("rustc", &["-o", "--out-dir"]),
        ("pandoc", &["-o", "--output", "--extract-media"]),
        ("openssl", &["-out", "-keyout", "-signature"]),
        ("csplit", &["-f", "--prefix"]),
        ("cpio", &["-D", "--directory", "-O", "-F", "--file"]),
        ("patch", &["-o", "--output", "-d", "--directory", "-r", "--reject-file"]),
    ];
    let Some((_, flags)) = FLAGS.iter().find(|(p, _)| *p == prog) else {
        return;
    };
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        let name = t.split_once('=').map_or(t, |(n, _)| n);
        let bare = name.trim_start_matches('-');
        let Some(flag) = flags
            .iter()
            .find(|f| f.trim_start_matches('-') == bare && name.starts_with('-'))
        else {
            // Attached short form, as getopt reads it: `-o/etc/x`, `csplit -f/etc/x` (only
            // `-o` for the programs with parsers of their own, which read `-out…` as a name).
            let attached = flags.iter().find(|f| {
                f.len() == 2
                    && !t.starts_with("--")
                    && t.len() > 2
                    && t.starts_with(**f)
                    && (**f == "-o" || !matches!(prog, "openssl" | "go"))
            });
            if let Some(flag) = attached {
                let v = &t[2..];
                check_write_target(
                    w,
                    &Word::literal(v, a.span),
                    &format!("{prog} {flag}"),
                    a.span,
                );
            }
            continue;
        };
        let target = match t.split_once('=') {
            Some((_, v)) => Some(super::args::tail(a, t.len() - v.len())),
            None => args.get(i + 1).cloned(),
        };
        if let Some(target) = target {
            // `--cov-report=xml:PATH`, `--reporter-option output=PATH`.
            let path = target
                .text
                .rsplit_once(['=', ':'])
                .map_or(target.text.clone(), |(_, p)| p.to_string());
            let word = if target.dynamic {
                target.clone()
            } else {
                Word::literal(&path, target.span)
            };
            check_write_target(w, &word, &format!("{prog} {flag}"), a.span);
        }
    }
}
