//! Programs that run code: shells, interpreters, `eval`/`source`, and read-looking tools with a
//! way to run programs (`find -exec`, `tar --checkpoint-action`, `vim -c '!…'`, `man -H`,
//! `rg --pre`, `awk 'system(…)'`), plus the decoders whose output must not reach a shell.

use super::{
    Outcome, ReadOnly, check_write_target, long_is, long_value, operands, run_code, run_payload,
    short_has, value_text,
};
use crate::ids::RuleId;
use crate::walk::{Cmd, Flow, Walker};
use crate::word::Word;
use crate::{Class, Span};

#[rustfmt::skip]
pub(crate) const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash", "posh",
    "rbash", "busybox-sh",
];

#[rustfmt::skip]
const INTERPRETERS: &[&str] = &[
    "python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "irb", "node", "nodejs",
    "deno", "bun", "php", "lua", "luajit", "Rscript", "tclsh", "wish", "pwsh", "powershell",
    "osascript", "expect", "guile", "racket", "julia", "elixir", "erl", "groovy", "scala", "jshell",
];

pub(crate) fn is_interpreter(name: &str) -> bool {
    INTERPRETERS.contains(&name)
        || name
            .strip_prefix("python")
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        || name.strip_prefix("perl5").is_some()
}

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    let outcome = match prog {
        p if SHELLS.contains(&p) => shell(w, cmd, p),
        p if is_interpreter(p) => interpreter(w, cmd, p),
        "eval" => eval(w, cmd),
        "source" | "." => source(w, cmd),
        "alias" => alias(w, cmd),
        "trap" => trap(w, cmd),
        "find" => find(w, cmd),
        "tar" => tar(w, cmd),
        "vim" | "vi" | "nvim" | "gvim" | "view" | "ex" | "vimdiff" | "rvim" => editor(w, cmd),
        "man" => man(w, cmd),
        "rg" => rg(w, cmd),
        "awk" | "gawk" | "mawk" | "nawk" => awk(w, cmd),
        "base64" | "base32" | "basenc" => decoder(cmd, |a| {
            a.text == "-d"
                || a.text == "-D"
                || long_is(&a.text, "--decode")
                || short_has(&a.text, 'd')
        }),
        "rev" => decoder(cmd, |_| true),
        "zcat" | "bzcat" | "xzcat" | "zstdcat" | "lz4cat" => decoder(cmd, |_| true),
        "xxd" => xxd(w, cmd),
        "uudecode" | "gunzip" | "bunzip2" | "unxz" | "openssl" | "gpg" => {
            let flow = Flow {
                decode: true,
                ..Flow::default()
            };
            Outcome::not(
                RuleId::ReadonlyNotAllowListed,
                format!("\"{prog}\" is not on the read-only list"),
            )
            .with_flow(flow)
        }
        _ => return None,
    };
    Some(outcome)
}

// ----- shells ---------------------------------------------------------------------------------

/// Where a shell or interpreter takes its code from.
enum CodeSource<'c> {
    /// `-c CODE`, `-e CODE` …
    Argument(&'c Word),
    /// A script file operand.
    File(&'c Word),
    /// Standard input (no code argument and no script, or `-`, `/dev/stdin`).
    Stdin,
    /// `python -m module`: runs installed code.
    Module(&'c Word),
}

fn shell_source<'c>(args: &'c [Word]) -> CodeSource<'c> {
    let mut has_c = false;
    let mut stdin = false;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let t = a.text.as_str();
        if a.dynamic {
            break;
        }
        if t == "--" {
            i += 1;
            break;
        }
        if matches!(t, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            i += 2;
            continue;
        }
        if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
            if !t.starts_with("--") {
                has_c |= t.contains('c');
                stdin |= t.contains('s');
            }
            i += 1;
            continue;
        }
        break;
    }
    match args.get(i) {
        Some(code) if has_c => CodeSource::Argument(code),
        Some(file) if !stdin && !is_stdin_path(file) => CodeSource::File(file),
        _ => CodeSource::Stdin,
    }
}

fn is_stdin_path(word: &Word) -> bool {
    !word.dynamic
        && matches!(
            word.text.as_str(),
            "-" | "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0"
        )
}

fn shell(w: &mut Walker, cmd: &Cmd, prog: &str) -> Outcome {
    let args = &cmd.argv[1..];
    match shell_source(args) {
        CodeSource::Argument(code) => {
            let after = args
                .iter()
                .position(|a| std::ptr::eq(a, code))
                .map_or(args.len(), |p| p + 1);
            code_argument(w, code, prog, &args[after..])
        }
        CodeSource::File(file) | CodeSource::Module(file) => script_file(w, file, prog),
        CodeSource::Stdin => stdin_code(w, cmd, prog, true),
    }
}

/// A code string given as an argument: read it when static, judge its origin when computed.
/// `positional` are the words after it, which the code sees as `$0`, `$1` …
fn code_argument(w: &mut Walker, code: &Word, prog: &str, positional: &[Word]) -> Outcome {
    if let Some(text) = code.known() {
        let text = text.to_string();
        let saved = w.vars.clone();
        for i in 0..10 {
            w.vars.remove(&i.to_string());
        }
        for (i, word) in positional.iter().take(10).enumerate() {
            if let Some(value) = word.known() {
                w.vars.insert(i.to_string(), value.to_string());
            }
        }
        let (flow, _) = run_code(w, &text, code.span, &Flow::default());
        w.vars = saved;
        return Outcome::read_only().with_flow(flow);
    }
    untrusted_code_word(w, code, prog);
    // Read the code as written: expansions in it stay computed, the rest is still seen
    // (`sh -c "$X -rf /"`).
    if let Some(inner) = code
        .text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
    {
        let inner = inner.to_string();
        run_code(w, &inner, code.span, &Flow::default());
    }
    Outcome::not(
        RuleId::DynamicShellCode,
        format!("\"{prog}\" runs code computed at run time: {}", code.text),
    )
}

fn untrusted_code_word(w: &mut Walker, code: &Word, prog: &str) {
    if code.flow.untrusted() {
        let msg = format!(
            "\"{prog}\" runs downloaded or decoded code from {}",
            code.text
        );
        w.reason(
            Class::Dangerous,
            RuleId::DownloadExecSubstitution,
            msg,
            code.span,
        );
    }
}

/// Runs a script this text wrote earlier with known content (`echo 'rm -rf /' > x.sh; sh x.sh`).
pub(crate) fn run_written_script(w: &mut Walker, file: &Word) {
    if let Some(text) = super::written_text(w, file) {
        run_code(w, &text, file.span, &Flow::default());
    }
}

fn script_file(w: &mut Walker, file: &Word, prog: &str) -> Outcome {
    untrusted_code_word(w, file, prog);
    run_written_script(w, file);
    if let Some(text) = &file.flow.text {
        // `bash <(echo …)`: the script's text is known.
        let text = text.clone();
        run_code(w, &text, file.span, &Flow::default());
    }
    if super::net::was_downloaded(w, file) {
        let msg = format!(
            "\"{prog}\" runs {}, downloaded earlier in this script",
            file.text
        );
        w.reason(
            Class::Dangerous,
            RuleId::DownloadThenExecute,
            msg,
            file.span,
        );
    }
    Outcome::not(
        RuleId::ExecScriptFile,
        format!(
            "\"{prog}\" runs the script {}, whose content is not inspected",
            file.text
        ),
    )
}

/// Code read from standard input: a heredoc or echoed text is read; downloads are dangerous.
fn stdin_code(w: &mut Walker, cmd: &Cmd, prog: &str, is_shell: bool) -> Outcome {
    let input = &cmd.input;
    let span = cmd.span;
    let shell_flow = Flow {
        shell: true,
        ..Flow::default()
    };
    if input.download || input.network {
        let msg = format!("content from the network is run by \"{prog}\"");
        w.reason(
            Class::Dangerous,
            RuleId::DownloadPipeToInterpreter,
            msg,
            span,
        );
    } else if input.decode {
        let msg = format!("decoded content is run by \"{prog}\"");
        w.reason(Class::Dangerous, RuleId::DecodePipeToInterpreter, msg, span);
    }
    if let (Some(text), false) = (&input.text, is_shell) {
        let code = Word::literal(text, span);
        embedded_shell_commands(w, &code, prog);
    }
    if let (Some(text), true) = (&input.text, is_shell) {
        let text = text.clone();
        let (flow, _) = run_code(w, &text, span, &Flow::default());
        let mut out = Outcome::read_only().with_flow(flow);
        out.flow.shell = true;
        return out;
    }
    if input.fed {
        return Outcome::not(
            RuleId::ExecStdinCode,
            format!("\"{prog}\" runs code read from its input"),
        )
        .with_flow(shell_flow);
    }
    Outcome::not(
        RuleId::ExecInteractiveShell,
        format!("\"{prog}\" starts an interactive interpreter"),
    )
    .with_flow(shell_flow)
}

// ----- interpreters ---------------------------------------------------------------------------

/// Short flags that take inline code, per interpreter family.
fn code_flags(prog: &str) -> (&'static [char], &'static [&'static str]) {
    match prog {
        p if p.starts_with("python") || p.starts_with("pypy") => (&['c'], &[]),
        "perl" | "ruby" => (&['e', 'E'], &[]),
        "node" | "nodejs" | "deno" | "bun" => (&['e', 'p'], &["--eval", "--print"]),
        "php" => (&['r'], &[]),
        "pwsh" | "powershell" => (&['c'], &["-command", "-encodedcommand", "-enc"]),
        _ => (&['e', 'c'], &[]),
    }
}

fn interpreter_source<'c>(prog: &str, args: &'c [Word]) -> (CodeSource<'c>, usize) {
    let (shorts, longs) = code_flags(prog);
    let python = prog.starts_with("python") || prog.starts_with("pypy");
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if args[i].dynamic || !t.starts_with('-') || t == "-" {
            break;
        }
        if t == "--" {
            i += 1;
            break;
        }
        let lower = t.to_ascii_lowercase();
        if longs
            .iter()
            .any(|l| lower == *l || lower.starts_with(&format!("{l}=")))
        {
            return match args.get(i + 1).filter(|_| !t.contains('=')) {
                Some(code) => (CodeSource::Argument(code), i + 2),
                None => (CodeSource::Argument(&args[i]), i + 1),
            };
        }
        if python && t == "-m" {
            return match args.get(i + 1) {
                Some(m) => (CodeSource::Module(m), i + 2),
                None => (CodeSource::Stdin, i + 1),
            };
        }
        if !t.starts_with("--")
            && let Some(pos) = t[1..].find(|c: char| shorts.contains(&c))
        {
            // `-e CODE` or `-eCODE`: perl allows code attached to the flag cluster.
            let rest = &t[pos + 2..];
            if rest.is_empty() {
                return match args.get(i + 1) {
                    Some(code) => (CodeSource::Argument(code), i + 2),
                    None => (CodeSource::Stdin, i + 1),
                };
            }
            return (CodeSource::Argument(&args[i]), i + 1);
        }
        i += 1;
    }
    match args.get(i) {
        Some(f) if !is_stdin_path(f) => (CodeSource::File(f), i + 1),
        Some(_) => (CodeSource::Stdin, i + 1),
        None => (CodeSource::Stdin, i),
    }
}

fn interpreter(w: &mut Walker, cmd: &Cmd, prog: &str) -> Outcome {
    let args = &cmd.argv[1..];
    let (source, rest) = interpreter_source(prog, args);
    if matches!(prog, "perl" | "ruby") && super::options(args).any(|a| short_has(&a.text, 'i')) {
        for target in args[rest.min(args.len())..]
            .iter()
            .filter(|a| !a.is_option())
        {
            check_write_target(w, target, &format!("{prog} -i"), target.span);
        }
    }
    match source {
        CodeSource::Argument(code) => {
            untrusted_code_word(w, code, prog);
            embedded_shell_commands(w, code, prog);
            Outcome::not(
                RuleId::ExecInterpreterCode,
                format!("\"{prog}\" runs inline code that is not inspected"),
            )
        }
        CodeSource::Module(m) => Outcome::not(
            RuleId::ExecInterpreterCode,
            format!("\"{prog}\" runs the module {}", m.text),
        ),
        CodeSource::File(f) => script_file(w, f, prog),
        CodeSource::Stdin => stdin_code(w, cmd, prog, false),
    }
}

/// Shell commands quoted inside interpreter or awk code (`system("…")`, `os.system('…')`,
/// backticks): they are read so that `perl -e 'system("rm -rf /")'` is seen.
fn embedded_shell_commands(w: &mut Walker, code: &Word, prog: &str) {
    if code.dynamic {
        return;
    }
    for text in shell_strings(&code.text) {
        let (_, risky) = run_code(w, &text, code.span, &Flow::default());
        if risky {
            let msg = format!("\"{prog}\" code runs a shell command: {text}");
            w.reason(Class::Dangerous, RuleId::ExecEmbeddedShell, msg, code.span);
        }
    }
}

/// String literals passed to `system`, `popen`, `exec`, `spawn`, `call`, `run`, and backtick
/// strings.
fn shell_strings(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for marker in [
        "system",
        "popen",
        "exec",
        "spawn",
        "call",
        "run",
        "check_output",
        "Popen",
        "execSync",
    ] {
        let mut rest = code;
        while let Some(pos) = rest.find(marker) {
            rest = &rest[pos + marker.len()..];
            let trimmed = rest.trim_start_matches([' ', '(', '[']);
            if let Some(lit) = quoted_prefix(trimmed) {
                out.push(lit);
            }
        }
    }
    let mut parts = code.split('`');
    parts.next();
    while let (Some(inner), Some(_)) = (parts.next(), parts.next()) {
        out.push(inner.to_string());
    }
    out.truncate(16);
    out
}

/// Commands in awk pipes: `print … | "CMD"` and `"CMD" | getline`.
fn awk_pipe_commands(program: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in program.match_indices('|') {
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

fn quoted_prefix(text: &str) -> Option<String> {
    let quote = text.chars().next().filter(|c| matches!(c, '"' | '\''))?;
    let inner = &text[1..];
    let end = inner.find(quote)?;
    Some(inner[..end].to_string())
}

// ----- eval, source, alias --------------------------------------------------------------------

fn eval(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    if args.is_empty() {
        return Outcome::read_only();
    }
    if args.iter().all(|a| !a.dynamic) {
        let code: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        let span = join_spans(args);
        // `eval` runs in the current shell: its `cd`s and assignments persist.
        let flow = w.reparse(&code.join(" "), span, &cmd.input, false);
        return Outcome::read_only().with_flow(flow);
    }
    for a in args {
        untrusted_code_word(w, a, "eval");
    }
    // Without shell syntax in the computed parts, `eval A B C` runs the command `A B C`.
    run_payload(w, cmd, args.to_vec());
    Outcome::not(
        RuleId::DynamicShellCode,
        "\"eval\" runs code computed at run time",
    )
}

fn source(w: &mut Walker, cmd: &Cmd) -> Outcome {
    match cmd.argv.get(1) {
        Some(f) if is_stdin_path(f) => stdin_code(w, cmd, "source", true),
        Some(f) => script_file(w, f, "source"),
        None => Outcome::not(RuleId::ExecScriptFile, "\"source\" without a file"),
    }
}

fn alias(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let mut defines = false;
    for a in &cmd.argv[1..] {
        if let Some((_, value)) = a.text.split_once('=') {
            defines = true;
            let value = value.to_string();
            run_code(w, &value, a.span, &Flow::default());
        }
    }
    if defines {
        Outcome::not(
            RuleId::ExecAlias,
            "\"alias\" defines a command that is not on the read-only list",
        )
    } else {
        Outcome::read_only()
    }
}

/// `trap 'CODE' SIGNAL…`: the code runs later in this shell.
fn trap(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    let Some(code) = args.iter().find(|a| !a.is_option()) else {
        return Outcome::read_only();
    };
    if code.dynamic {
        untrusted_code_word(w, code, "trap");
        return Outcome::not(
            RuleId::DynamicShellCode,
            "\"trap\" runs code computed at run time",
        );
    }
    if code.text == "-" || code.text.is_empty() {
        return Outcome::read_only();
    }
    let text = code.text.clone();
    let flow = w.reparse(&text, code.span, &Flow::default(), false);
    Outcome::read_only().with_flow(flow)
}

pub(crate) fn join_spans(words: &[Word]) -> Span {
    let start = words.first().map_or(0, |w| w.span.0);
    let end = words.iter().map(|w| w.span.1).max().unwrap_or(start);
    (start, end.max(start))
}

// ----- find -----------------------------------------------------------------------------------

const FIND_EXEC: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];
const FIND_WRITE: &[&str] = &["-fprint", "-fprint0", "-fprintf", "-fls"];

fn find(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    let roots_end = args
        .iter()
        .position(|a| !a.dynamic && (a.text.starts_with('-') || a.text == "(" || a.text == "!"))
        .unwrap_or(args.len());
    let mut roots: Vec<Word> = args[..roots_end].to_vec();
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
            for root in &roots {
                find_delete(w, root, args[i].span);
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
        }
        i += 1;
    }
    outcome
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

fn find_delete(w: &mut Walker, root: &Word, span: Span) {
    use crate::paths::{Place, place_of};
    match place_of(root, &w.cwds, w.ctx) {
        Place::Inside => {}
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
    let args = &cmd.argv[1..];
    #[rustfmt::skip]
    const PROGRAM_OPTS: &[&str] = &[
        "--to-command", "--use-compress-program", "--rsh-command", "--info-script",
        "--new-volume-script",
    ];
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        if let Some(action) = t.strip_prefix("--checkpoint-action=") {
            let program = action
                .strip_prefix("exec=")
                .or_else(|| action.strip_prefix("exec:"));
            if let Some(p) = program {
                program_option(
                    w,
                    p,
                    a.span,
                    RuleId::ExecTarProgram,
                    "tar --checkpoint-action",
                );
            }
        } else if let Some(opt) = PROGRAM_OPTS.iter().find(|o| long_is(t, o)) {
            let value = long_value(args, i, opt).map(value_text).unwrap_or_default();
            program_option(w, &value, a.span, RuleId::ExecTarProgram, opt);
        } else if (t == "-I" || t == "-F") && i + 1 < args.len() {
            let value = args[i + 1].text.clone();
            program_option(w, &value, a.span, RuleId::ExecTarProgram, t);
        }
    }
    Outcome::not(
        RuleId::ReadonlyNotAllowListed,
        "\"tar\" is not on the read-only list",
    )
}

fn editor(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    for (i, a) in args.iter().enumerate() {
        let command = match a.text.as_str() {
            "-c" | "--cmd" => args.get(i + 1),
            t if t.starts_with('+') && t.len() > 1 => Some(a),
            _ => None,
        };
        let Some(c) = command else { continue };
        let text = c
            .text
            .trim_start_matches('+')
            .trim_start_matches(':')
            .to_string();
        let shell_cmd = text.split_once('!').map(|(_, after)| after.to_string());
        let shell_cmd = shell_cmd.or_else(|| shell_strings(&text).into_iter().next());
        if c.dynamic {
            w.reason(
                Class::Normal,
                RuleId::DynamicShellCode,
                "editor command computed at run time",
                c.span,
            );
        } else if let Some(sc) = shell_cmd {
            program_option(w, &sc, c.span, RuleId::ExecEditorShell, "editor command");
        }
    }
    Outcome::not(
        RuleId::ReadonlyNotAllowListed,
        "editors are not on the read-only list",
    )
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
    let text = prog.text.as_str();
    let risky = [
        "system", "|", ">", "getline", "@load", "@include", "ENVIRON",
    ]
    .iter()
    .any(|m| text.contains(m));
    if risky {
        return Outcome::not(
            RuleId::ReadonlyAwkIo,
            "the awk program runs commands, writes files or redirects output",
        );
    }
    Outcome::read_only()
}

fn decoder(cmd: &Cmd, decodes: impl Fn(&Word) -> bool) -> Outcome {
    let decode = super::options(&cmd.argv[1..]).any(decodes)
        || cmd.argv[0].text.ends_with("cat")
        || cmd.argv[0].text == "rev";
    Outcome::read_only().with_flow(Flow {
        decode,
        ..Flow::default()
    })
}

fn xxd(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    let decode =
        super::options(args).any(|a| short_has(&a.text, 'r') || long_is(&a.text, "--revert"));
    let ops = operands(args);
    let mut out = Outcome::read_only();
    if ops.len() >= 2 {
        let target = ops[1].clone();
        check_write_target(w, &target, "xxd", target.span);
        out.read_only = ReadOnly::No {
            rule: RuleId::ReadonlyFlagWrites,
            message: "\"xxd IN OUT\" writes OUT".into(),
        };
    }
    out.with_flow(Flow {
        decode,
        ..Flow::default()
    })
}
