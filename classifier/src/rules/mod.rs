//! Rules applied to each simple command: what the program does given its arguments,
//! redirections, prefix assignments and standard input.
//!
//! Every family module exposes `run(w, cmd, prog) -> Option<Outcome>`; `None` means "not a
//! program of this family". Families add dangerous (or normal) reasons themselves and report
//! whether the command could still be read-only; [`run`] turns a "no" into a normal reason.

mod archives;
mod args;
mod containers;
mod decoders;
mod escapes;
mod exec;
mod expand;
mod fs;
mod gg;
pub(crate) mod git;
mod inspect;
mod interp;
mod net;
mod readonly;
mod scripts;
mod speculative;
mod system;
mod tools;
mod wrappers;

use crate::ids::RuleId;
use crate::paths::{self, Place};
use crate::walk::{Cmd, Flow, Walker};
use crate::word::Word;
use crate::{Class, FoundCommand};

pub(crate) use args::{long_is, long_value, operands, options, short_has, value_text};
pub(crate) use net::{is_download_tool, is_network_tool};
pub(crate) use readonly::is_read_only_program;

/// Whether a command may still be read-only after its family's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReadOnly {
    Yes,
    No { rule: RuleId, message: String },
}

/// What a family's rules concluded about one command.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub flow: Flow,
    pub read_only: ReadOnly,
}

impl Outcome {
    pub fn read_only() -> Outcome {
        Outcome {
            flow: Flow::default(),
            read_only: ReadOnly::Yes,
        }
    }

    pub fn not(rule: RuleId, message: impl Into<String>) -> Outcome {
        Outcome {
            flow: Flow::default(),
            read_only: ReadOnly::No {
                rule,
                message: message.into(),
            },
        }
    }

    pub fn with_flow(mut self, flow: Flow) -> Outcome {
        self.flow = flow;
        self
    }
}

/// The program name rules match on: the base name of `argv[0]` (`/bin/rm`, `./rm` → `rm`).
pub(crate) fn basename(text: &str) -> &str {
    text.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(text)
}

/// Classifies one simple command (and, through wrappers, what it runs).
pub(crate) fn run(w: &mut Walker, cmd: Cmd) -> Flow {
    if !w.spend(0, 1 + cmd.argv.len(), cmd.span) {
        return Flow::default();
    }
    if let Some(argv) = expand::braced_command(w, &cmd) {
        return run(w, Cmd { argv, ..cmd });
    }
    record(w, &cmd);
    if let Some(first) = cmd.argv.first().filter(|f| !f.dynamic) {
        crate::evaluation::check_command(w, &cmd, basename(&first.text));
    }
    // `IFS=, read a b`, `IFS= read -r line`: the prefix only changes how this builtin splits.
    let splits_only = cmd
        .argv
        .first()
        .is_some_and(|f| !f.dynamic && matches!(f.text.as_str(), "read" | "mapfile" | "readarray"));
    for (name, value) in &cmd.assigns {
        if splits_only && name == "IFS" {
            continue;
        }
        check_assignment(w, name, value);
    }
    check_redirects(w, &cmd);
    let Some(first) = cmd.argv.first() else {
        return Flow::default();
    };
    if first.dynamic {
        return dynamic_name(w, &cmd);
    }
    let prog = basename(&first.text).to_string();
    expand::command_position(w, &cmd);
    if first.text.contains('/') {
        path_invoked(w, first);
    }
    let policy_allowed = apply_policy(w, &cmd, &prog);
    let mut outcome = dispatch(w, &cmd, &prog);
    computed_options(&mut outcome, &cmd, &prog);
    check_device_reads(w, &cmd, &mut outcome);
    if let ReadOnly::No { rule, message } = &outcome.read_only
        && !policy_allowed
    {
        w.reason(Class::Normal, *rule, message.clone(), cmd.span);
    }
    let flow = output_flow(w, &cmd, &prog, outcome.flow);
    remember_written(w, &cmd, &prog, &flow);
    flow
}

/// Directories whose programs are the system's own tools: `/usr/bin/grep` is `grep`, while
/// `./grep`, `bin/grep`, `/tmp/grep` or `node_modules/.bin/jq` are whatever the repository (or
/// anyone who can write there) put there.
const SYSTEM_BIN_DIRS: &[&str] = &[
    "/bin",
    "/usr/bin",
    "/usr/local/bin",
    "/sbin",
    "/usr/sbin",
    "/usr/local/sbin",
    "/opt/homebrew/bin",
    "/run/current-system/sw/bin",
];

/// A program run by path (`./x.sh`): not the system tool of that name unless it lives in a
/// system directory; running a file this script wrote or downloaded.
fn path_invoked(w: &mut Walker, program: &Word) {
    let name = basename(&program.text);
    if is_read_only_program(name) {
        let path = paths::normalize(std::path::Path::new(&program.text));
        let system = program.text.starts_with('/')
            && path.parent().is_some_and(|dir| {
                SYSTEM_BIN_DIRS
                    .iter()
                    .any(|d| dir == std::path::Path::new(d))
            });
        if !system {
            let msg = format!(
                "{} is run by its path, so it is the file there, not the system's \"{name}\"",
                program.text
            );
            w.reason(
                Class::Normal,
                RuleId::ReadonlyProgramPath,
                msg,
                program.span,
            );
        }
    }
    exec::run_written_script(w, program);
    if net::was_downloaded(w, program) {
        let msg = format!(
            "{} was downloaded earlier in this script and is now run",
            program.text
        );
        w.reason(
            Class::Dangerous,
            RuleId::DownloadThenExecute,
            msg,
            program.span,
        );
    }
}

/// An argument that bash may turn into an option (a leading glob such as `*`, which matches a
/// file named `--pre=sh`; a computed word such as `"$f"` or `$(cmd)`) makes an otherwise
/// read-only command normal, unless every option of the program is harmless. `--` ends the
/// options (not for `find`, whose expression may follow it); `printf` only reads options
/// before its format.
fn computed_options(outcome: &mut Outcome, cmd: &Cmd, prog: &str) {
    if outcome.read_only != ReadOnly::Yes || HARMLESS_OPTIONS.contains(&prog) {
        return;
    }
    let mut args = &cmd.argv[1..];
    if prog == "printf" {
        args = &args[..args.len().min(1)];
    }
    if TRANSPARENT_WRAPPERS.contains(&prog) {
        // The payload was judged as a command of its own; only the wrapper's own options
        // (before the first plain word) are the wrapper's. `command -v` only looks names up.
        if prog == "command"
            && args
                .first()
                .is_some_and(|a| matches!(a.text.as_str(), "-v" | "-V"))
        {
            return;
        }
        let own = args
            .iter()
            .take_while(|a| a.is_option() || a.dynamic || a.glob)
            .count();
        args = &args[..own];
    }
    let computed = args
        .iter()
        .take_while(|a| prog == "find" || a.dynamic || a.glob || a.text != "--")
        .find(|a| a.may_be_option());
    if let Some(arg) = computed {
        let (what, rule) = if arg.glob {
            (
                "a glob that may match a file named like an option",
                RuleId::ReadonlyGlobArgument,
            )
        } else {
            (
                "computed and could be an option",
                RuleId::ReadonlyDynamicArgument,
            )
        };
        let message = format!(
            "the argument {} of \"{prog}\" is {what} that writes files, runs programs or \
             changes the shell; put it after \"--\" or give it a fixed prefix such as \"./\"",
            arg.text
        );
        outcome.read_only = ReadOnly::No { rule, message };
    }
}

/// Wrappers whose payload is classified as a command of its own.
#[rustfmt::skip]
const TRANSPARENT_WRAPPERS: &[&str] = &[
    "env", "command", "builtin", "exec", "nice", "ionice", "time", "timeout", "stdbuf", "setsid",
    "chrt", "taskset", "busybox", "unbuffer", "caffeinate",
];

/// Allow-listed programs none of whose options write files, run programs or change the shell's
/// state: an option word smuggled in by a glob or a substitution cannot do harm. Every other
/// allow-listed program is treated as if it had such options (fail closed).
#[rustfmt::skip]
const HARMLESS_OPTIONS: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "pwd", "echo", "which", "stat",
    "du", "df", "cut", "tr", "basename", "dirname", "realpath", "readlink", "id", "whoami",
    "uname", "printenv", "true", "false", "seq", "cmp", ":", "test", "[", "nl", "tac", "comm",
    "join", "paste", "fold", "column", "od", "hexdump", "strings", "md5sum", "sha1sum",
    "sha256sum", "sha512sum", "b2sum", "cksum", "type", "jq", "nproc", "arch", "groups", "tty",
    "locale", "sleep", "exit", "return", "shift", "cd", "pushd", "dirs", "rev",
];

/// What the command writes to its output, for the next pipeline stage; records downloads and
/// credential reads on the way.
fn output_flow(w: &mut Walker, cmd: &Cmd, prog: &str, mut flow: Flow) -> Flow {
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
    let reads_credentials = cmd.argv[1..].iter().any(|a| names_credentials(w, a))
        || cmd.redirects.iter().any(|r| {
            r.op.starts_with('<') && r.target.as_ref().is_some_and(|t| names_credentials(w, t))
        });
    if reads_credentials {
        flow.credentials = true;
        let process = cmd.argv[1..].iter().any(names_process_secrets)
            || cmd
                .redirects
                .iter()
                .any(|r| r.target.as_ref().is_some_and(names_process_secrets));
        if process {
            let msg = format!(
                "\"{prog}\" reads another process's environment, command line or memory, which hold secrets"
            );
            w.reason(Class::Normal, RuleId::SecretsProcess, msg, cmd.span);
        } else {
            let msg =
                format!("\"{prog}\" reads a credential file; its content would reach the model");
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
fn remember_written(w: &mut Walker, cmd: &Cmd, prog: &str, flow: &Flow) {
    let Some(text) = &flow.text else { return };
    let mut targets: Vec<&Word> = cmd
        .redirects
        .iter()
        .filter(|r| matches!(r.op.as_str(), ">" | ">|" | "&>"))
        .filter_map(|r| r.target.as_ref())
        .collect();
    if prog == "tee" {
        targets.extend(operands(&cmd.argv[1..]));
    }
    for target in targets {
        for path in paths::resolve_all(target, &w.cwds, w.ctx) {
            w.written.retain(|(p, _)| *p != path);
            w.written.push((path, text.clone()));
        }
    }
    w.written.truncate(32);
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
            if format.text.contains('%') || args.len() > 1 || format.text.starts_with('-') {
                return None;
            }
            Some(Printed {
                text: decode_escapes(&format.text, Escapes::Printf),
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

/// Known programs that run commands given as their arguments (containers, task runners):
/// their arguments get the same trial reading as unknown programs'.
#[rustfmt::skip]
const RUNS_OTHER_COMMANDS: &[&str] = &[
    "docker", "podman", "kubectl", "npx", "pnpx", "bunx", "uvx", "pipx", "cargo", "npm", "pnpm",
    "yarn", "uv", "poetry", "bundle", "nix-shell", "nix", "devbox", "direnv", "vagrant", "lxc",
    "incus", "distrobox", "toolbox",
];

/// A family's entry point: `None` when the program is not one of its own.
type Family = fn(&mut Walker, &Cmd, &str) -> Option<Outcome>;

fn dispatch(w: &mut Walker, cmd: &Cmd, prog: &str) -> Outcome {
    let families: [Family; 14] = [
        wrappers::run,
        gg::run,
        inspect::run,
        containers::run,
        tools::run,
        archives::run,
        exec::run,
        escapes::run,
        decoders::run,
        git::run,
        net::run,
        fs::run,
        system::run,
        readonly::run,
    ];
    if RUNS_OTHER_COMMANDS.contains(&prog) {
        speculative::trial_payloads(w, cmd);
    }
    for family in families {
        if let Some(outcome) = family(w, cmd, prog) {
            return outcome;
        }
    }
    if !RUNS_OTHER_COMMANDS.contains(&prog) {
        speculative::trial_payloads(w, cmd);
    }
    Outcome::not(
        RuleId::ReadonlyNotAllowListed,
        format!("\"{prog}\" is not on the read-only list"),
    )
}

fn record(w: &mut Walker, cmd: &Cmd) {
    if cmd.argv.is_empty() {
        return;
    }
    let mut argv: Vec<String> = cmd.argv.iter().map(|a| a.text.clone()).collect();
    if let Some(first) = cmd.argv.first().filter(|f| !f.dynamic) {
        argv[0] = basename(&first.text).to_string();
    }
    w.commands.push(FoundCommand {
        argv,
        span: cmd.span,
    });
}

/// Policy-file prefixes. Returns whether the command is allow-listed by policy.
fn apply_policy(w: &mut Walker, cmd: &Cmd, prog: &str) -> bool {
    let ctx = w.ctx;
    let matches = |prefix: &Vec<String>| -> bool {
        if prefix.is_empty() || prefix.len() > cmd.argv.len() {
            return false;
        }
        prefix.iter().enumerate().all(|(i, p)| {
            let word = &cmd.argv[i];
            !word.dynamic
                && if i == 0 {
                    basename(p) == prog
                } else {
                    *p == word.text
                }
        })
    };
    if let Some(prefix) = ctx.rules.dangerous_prefixes.iter().find(|p| matches(p)) {
        let msg = format!(
            "matches the policy's dangerous prefix \"{}\"",
            prefix.join(" ")
        );
        w.reason(
            Class::Dangerous,
            RuleId::PolicyDangerousPrefix,
            msg,
            cmd.span,
        );
    }
    ctx.rules.read_only_prefixes.iter().any(matches)
}

/// A computed command name: never read-only. When its arguments would be dangerous for a
/// common destructive program, or the name comes from a download or decoder, it is dangerous.
fn dynamic_name(w: &mut Walker, cmd: &Cmd) -> Flow {
    let name = &cmd.argv[0];
    let msg = format!("the command name {} is computed at run time", name.text);
    w.reason(Class::Normal, RuleId::DynamicCommandName, msg, name.span);
    if name.flow.untrusted() {
        let msg = "the command name comes from downloaded or decoded content";
        w.reason(
            Class::Dangerous,
            RuleId::DynamicCommandNameUntrusted,
            msg,
            name.span,
        );
    }
    for candidate in ["rm", "sh", "dd", "chmod"] {
        // Not a clone of the whole argv: the computed name may hold a long nested
        // substitution, and copying it for each candidate at each level of `$( $( … ) )` made
        // the work grow with the square of the depth.
        let mut argv = Vec::with_capacity(cmd.argv.len());
        argv.push(Word::literal(candidate, name.span));
        argv.extend_from_slice(&cmd.argv[1..]);
        let probe = Cmd {
            argv,
            assigns: Vec::new(),
            redirects: Vec::new(),
            input: cmd.input.clone(),
            span: cmd.span,
        };
        if probe_is_dangerous(w, probe) {
            let msg = format!("the computed command would be dangerous if it were \"{candidate}\"");
            w.reason(
                Class::Dangerous,
                RuleId::DynamicCommandNameDangerousArgs,
                msg,
                cmd.span,
            );
            break;
        }
    }
    let mut flow = Flow::default();
    flow.merge(&name.flow);
    flow
}

/// Runs the rules on a hypothetical command and discards everything they record.
pub(crate) fn probe_is_dangerous(w: &mut Walker, probe: Cmd) -> bool {
    let (reasons, commands) = (w.reasons.len(), w.commands.len());
    let state = (w.cwds.clone(), w.vars.clone());
    run(w, probe);
    let dangerous = w.reasons[reasons..]
        .iter()
        .any(|r| r.class == Class::Dangerous);
    w.reasons.truncate(reasons);
    w.commands.truncate(commands);
    (w.cwds, w.vars) = state;
    dangerous
}

/// Runs `argv` (a wrapper's payload) as a command with the same input. Returns whether the
/// payload was dangerous or is an unrestricted shell or interpreter.
pub(crate) fn run_payload(w: &mut Walker, cmd: &Cmd, argv: Vec<Word>) -> (Flow, bool) {
    if argv.is_empty() || !w.enter_payload() {
        return (Flow::default(), false);
    }
    let result = run_payload_inner(w, cmd, argv);
    w.leave_payload();
    result
}

fn run_payload_inner(w: &mut Walker, cmd: &Cmd, argv: Vec<Word>) -> (Flow, bool) {
    let span = (
        argv[0].span.0,
        argv.last()
            .map_or(argv[0].span.1, |a| a.span.1)
            .max(argv[0].span.0),
    );
    let shell = is_code_runner(&argv[0]);
    let payload = Cmd {
        argv,
        assigns: Vec::new(),
        redirects: Vec::new(),
        input: cmd.input.clone(),
        span,
    };
    let reasons = w.reasons.len();
    let flow = run(w, payload);
    let dangerous = w.reasons[reasons..]
        .iter()
        .any(|r| r.class == Class::Dangerous);
    (flow, dangerous || shell)
}

/// Parses and walks `code` run by a tool through a shell. Returns whether it was dangerous or
/// starts an unrestricted shell or interpreter.
pub(crate) fn run_code(
    w: &mut Walker,
    code: &str,
    span: crate::Span,
    input: &Flow,
) -> (Flow, bool) {
    let (reasons, commands) = (w.reasons.len(), w.commands.len());
    let flow = w.reparse(code, span, input, true);
    let dangerous = w.reasons[reasons..]
        .iter()
        .any(|r| r.class == Class::Dangerous);
    let shell = w.commands[commands..]
        .iter()
        .any(|c| c.argv.first().is_some_and(|a| is_code_runner_name(a)));
    (flow, dangerous || shell || code.trim().is_empty())
}

/// Whether `word`, as a program, is a shell or an interpreter (or computed, so could be one).
pub(crate) fn is_code_runner_word(word: &Word) -> bool {
    is_code_runner(word)
}

fn is_code_runner(word: &Word) -> bool {
    word.dynamic || is_code_runner_name(basename(&word.text))
}

fn is_code_runner_name(name: &str) -> bool {
    exec::SHELLS.contains(&name) || exec::is_interpreter(name)
}

/// Environment assignments that change which program runs or what it loads.
#[rustfmt::skip]
const PROGRAM_VARS: &[&str] = &[
    "PAGER", "GIT_PAGER", "MANPAGER", "SYSTEMD_PAGER", "BAT_PAGER", "DELTA_PAGER", "LESSOPEN",
    "LESSCLOSE", "EDITOR", "VISUAL", "GIT_EDITOR", "SUDO_ASKPASS", "SSH_ASKPASS", "GIT_ASKPASS",
    "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_PROXY_COMMAND", "BROWSER",
    "PROMPT_COMMAND",
];
#[rustfmt::skip]
const LOADER_VARS: &[&str] = &[
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "PATH", "IFS", "PYTHONPATH",
    "PYTHONSTARTUP", "PERL5LIB", "PERL5OPT", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS", "NODE_PATH",
    "SHELLOPTS", "BASHOPTS", "PS4", "CDPATH", "GLOBIGNORE", "HOME", "ZDOTDIR", "XDG_CONFIG_HOME",
    "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH", "GCONV_PATH", "LOCPATH", "MANOPT", "LESS",
];

/// Checks an assignment (statement-level or command prefix) for variables that change what runs.
pub(crate) fn check_assignment(w: &mut Walker, name: &str, value: &Word) {
    // `PATH[0]=/tmp` sets PATH itself (element 0 of a scalar); `BASH_CMDS[ls]=x` one entry.
    let name = name.split_once('[').map_or(name, |(n, _)| n);
    crate::evaluation::check_env_var(w, name, value);
    let upper = name.to_ascii_uppercase();
    if let Some(function) = name.strip_prefix("BASH_FUNC_") {
        // `env 'BASH_FUNC_ls%%=() { …; }' bash -c ls`: an exported function replaces a command.
        let function = function.trim_end_matches('%');
        let msg = format!("{name}= exports a function that replaces the command \"{function}\"");
        w.reason(Class::Normal, RuleId::EnvProgramOverride, msg, value.span);
        if !value.dynamic {
            let code = format!("f{}", value.text);
            let (_, risky) = run_code(w, &code, value.span, &Flow::default());
            if risky {
                let msg = format!("the exported function {name} runs a shell or dangerous command");
                w.reason(
                    Class::Dangerous,
                    RuleId::ExecProgramOverride,
                    msg,
                    value.span,
                );
            }
        }
        return;
    }
    if matches!(upper.as_str(), "BASH_CMDS" | "BASH_ALIASES") {
        let msg = format!("{name} entries decide which file a command name runs");
        w.reason(Class::Normal, RuleId::EnvProgramOverride, msg, value.span);
        return;
    }
    if PROGRAM_VARS.contains(&upper.as_str()) {
        let code = if value.dynamic {
            String::new()
        } else {
            value.text.clone()
        };
        let (_, risky) = run_code(w, &code, value.span, &Flow::default());
        if risky {
            let msg = format!(
                "{name} makes programs run {}, a shell or dangerous command",
                value.text
            );
            w.reason(
                Class::Dangerous,
                RuleId::ExecProgramOverride,
                msg,
                value.span,
            );
        } else {
            let msg = format!("{name}= changes which program runs");
            w.reason(Class::Normal, RuleId::EnvProgramOverride, msg, value.span);
        }
    } else if LOADER_VARS.contains(&upper.as_str())
        || upper.starts_with("GIT_")
        || upper.starts_with("LD_")
    {
        let msg = format!("{name}= changes what programs load or run");
        w.reason(Class::Normal, RuleId::EnvProgramOverride, msg, value.span);
    }
}

/// Devices that are safe to redirect to.
#[rustfmt::skip]
const HARMLESS_DEVICES: &[&str] = &[
    "/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/full",
];

pub(crate) fn is_network_device(path: &str) -> bool {
    path.starts_with("/dev/tcp/") || path.starts_with("/dev/udp/")
}

fn is_harmless_device(path: &str) -> bool {
    HARMLESS_DEVICES.contains(&path) || fd_number(path).is_some()
}

/// `N` for `/dev/fd/N` (exactly: `/dev/fd/../../etc/x` is not a descriptor).
fn fd_number(path: &str) -> Option<&str> {
    path.strip_prefix("/dev/fd/")
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// The descriptor a device path reopens: `/dev/stdin` is 0, `/dev/fd/3` is 3.
fn reopened_fd(path: &str) -> Option<&str> {
    match path {
        "/dev/stdin" => Some("0"),
        "/dev/stdout" => Some("1"),
        "/dev/stderr" => Some("2"),
        _ => fd_number(path),
    }
}

/// Devices a read-only program may read without effects. Opening others can do things
/// (`/dev/watchdog` arms the hardware watchdog, which reboots the machine when it is not fed)
/// or reads what should not be read (disks, memory, input devices).
#[rustfmt::skip]
const READABLE_DEVICES: &[&str] = &[
    "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/stdin",
    "/dev/stdout", "/dev/stderr", "/dev/tty",
];

/// A device named as an argument or input of a command: reading it is not read-only unless it
/// is one of [`READABLE_DEVICES`]; the watchdog is dangerous.
fn check_device_reads(w: &mut Walker, cmd: &Cmd, outcome: &mut Outcome) {
    // Programs that only look at names and metadata do not open what they are given.
    #[rustfmt::skip]
    const METADATA_ONLY: &[&str] = &[
        "ls", "stat", "df", "du", "readlink", "realpath", "dirname", "basename", "test", "[",
        "lsblk", "findmnt", "getfacl", "which", "type", "echo", "printf", "cd", "pushd",
    ];
    let by_name = cmd
        .argv
        .first()
        .is_some_and(|p| !p.dynamic && METADATA_ONLY.contains(&basename(&p.text)));
    let args = if by_name { &[][..] } else { &cmd.argv[1..] };
    let inputs = cmd
        .redirects
        .iter()
        .filter(|r| r.op.starts_with('<') && r.op != "<<<")
        .filter_map(|r| r.target.as_ref());
    for word in args.iter().chain(inputs) {
        let text = if word.dynamic {
            &word.prefix
        } else {
            &word.text
        };
        let Some(rest) = text.strip_prefix("/dev/") else {
            continue;
        };
        // Shared memory and message queues are ordinary files.
        if rest.starts_with("shm/") || rest.starts_with("mqueue/") {
            continue;
        }
        if is_network_device(text) || (!word.dynamic && fd_number(text).is_some()) {
            continue;
        }
        let path = paths::normalize(std::path::Path::new(text));
        let path = path.to_string_lossy();
        if !word.dynamic && READABLE_DEVICES.contains(&path.as_ref()) {
            continue;
        }
        if rest.starts_with("watchdog") || path.starts_with("/dev/watchdog") {
            let msg =
                format!("opening {text} arms the hardware watchdog, which reboots the machine");
            w.reason(Class::Dangerous, RuleId::SystemShutdown, msg, word.span);
        }
        if outcome.read_only == ReadOnly::Yes {
            outcome.read_only = ReadOnly::No {
                rule: RuleId::ReadonlyDevice,
                message: format!("opening the device {text} can have effects or expose data"),
            };
        }
    }
}

/// Output redirections: only `/dev/null`-like devices and fd duplication stay read-only.
pub(crate) fn check_redirects(w: &mut Walker, cmd: &Cmd) {
    let shell = cmd
        .argv
        .first()
        .is_some_and(|a| is_code_runner(a) || a.text == "exec");
    if cmd.argv.len() == 1 && cmd.argv[0].text == "exec" {
        for r in cmd.redirects.iter().filter(|r| r.op == "<" || r.op == "<>") {
            if let Some(target) = &r.target {
                let fd = if r.fd.is_empty() { "0" } else { r.fd.as_str() };
                w.fd_inputs.push((fd.to_string(), target.clone()));
            }
        }
        w.fd_inputs.truncate(16);
    }
    for (index, r) in cmd.redirects.iter().enumerate() {
        let Some(target) = &r.target else { continue };
        if is_network_device(&target.text) || is_network_device(&target.prefix) {
            let (rule, what) = if shell {
                (
                    RuleId::NetworkReverseShell,
                    "connects a shell to the network through",
                )
            } else {
                (RuleId::NetworkDevTcp, "opens a network connection through")
            };
            w.reason(
                Class::Dangerous,
                rule,
                format!("redirection {what} {}", target.text),
                r.span,
            );
            continue;
        }
        let reading = r.op.starts_with('<') && r.op != "<>";
        let dup = r.op.ends_with('&')
            && !target.dynamic
            && (target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit()));
        if reading || dup {
            continue;
        }
        // `>/dev/stdin` after `0<FILE` (or `exec 3<FILE` … `>/dev/fd/3`) opens FILE again, for
        // writing.
        if !target.dynamic
            && let Some(fd) = reopened_fd(&target.text)
        {
            let earlier = cmd.redirects[..index]
                .iter()
                .rev()
                .find(|e| {
                    let efd = if e.fd.is_empty() {
                        if e.op.starts_with('<') { "0" } else { "1" }
                    } else {
                        e.fd.as_str()
                    };
                    efd == fd && !e.op.starts_with("<<")
                })
                .and_then(|e| e.target.clone().filter(|_| e.op.starts_with('<')));
            let opened = earlier.or_else(|| {
                w.fd_inputs
                    .iter()
                    .rev()
                    .find(|(n, _)| n == fd)
                    .map(|(_, t)| t.clone())
            });
            if let Some(file) = opened.filter(|f| f.dynamic || !is_harmless_device(&f.text)) {
                let what = format!(
                    "output redirection to {} (reopening {})",
                    target.text, file.text
                );
                check_write_target(w, &file, &what, r.span);
                let msg = format!("output to {} writes {}", target.text, file.text);
                w.reason(Class::Normal, RuleId::ReadonlyRedirectWrite, msg, r.span);
                continue;
            }
        }
        if !target.dynamic && is_harmless_device(&target.text) {
            continue;
        }
        check_write_target(w, target, "output redirection", r.span);
        if !target.dynamic && target.text.starts_with("/dev/") {
            continue;
        }
        let msg = format!("output is redirected to {}", target.text);
        w.reason(Class::Normal, RuleId::ReadonlyRedirectWrite, msg, r.span);
    }
}

/// The values a computed word may take when it is just a variable assigned in branches
/// (`"$D"`, `${D}/x`): each possibility as a literal word.
pub(crate) fn alternatives(w: &Walker, word: &Word) -> Vec<Word> {
    if !word.dynamic || !word.prefix.is_empty() {
        return Vec::new();
    }
    let text = word.text.trim_start_matches('"');
    let Some(rest) = text.strip_prefix('$') else {
        return Vec::new();
    };
    let (name, suffix) = match rest.strip_prefix('{') {
        Some(braced) => match braced.split_once('}') {
            Some((n, s)) => (n, s),
            None => return Vec::new(),
        },
        None => {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        }
    };
    let suffix = suffix.trim_end_matches('"');
    if suffix.contains(['$', '`', '"', '\'']) {
        return Vec::new();
    }
    let Some(values) = w.maybe_vars.get(name) else {
        return Vec::new();
    };
    values
        .iter()
        .map(|v| Word::literal(&format!("{v}{suffix}"), word.span))
        .collect()
}

/// A file the command writes, deletes, moves, links or changes. Outside the working and
/// scratch directories it is dangerous; where it is cannot be known, normal.
pub(crate) fn check_write_target(w: &mut Walker, target: &Word, what: &str, span: crate::Span) {
    for alt in alternatives(w, target) {
        check_write_target(w, &alt, what, span);
    }
    if !target.dynamic && target.text.starts_with("/dev/") {
        if !is_harmless_device(&target.text) {
            let msg = format!("{what} writes to the device {}", target.text);
            w.reason(Class::Dangerous, RuleId::DiskWriteDevice, msg, span);
        }
        return;
    }
    match paths::place_of(target, &w.cwds, w.ctx) {
        Place::Inside | Place::Project(_) => {}
        Place::Protected(index) => protected_write(w, index, target, what, span),
        Place::Unknown => {
            let msg = format!(
                "{what} target {} cannot be resolved statically",
                target.text
            );
            w.reason(Class::Normal, RuleId::WriteUnknownTarget, msg, span);
        }
        Place::Root | Place::HomeOrAbove(_) | Place::Outside(_) => {
            let msg = format!(
                "{what} writes {} outside the working directory",
                target.text
            );
            w.reason(Class::Dangerous, RuleId::WriteOutsideCwd, msg, span);
        }
    }
}

/// A write into a protected tree (`.git/`, `.gg/`): git hooks and config run programs on the
/// host, gg's settings decide what runs unasked.
pub(crate) fn protected_write(
    w: &mut Walker,
    index: usize,
    target: &Word,
    what: &str,
    span: crate::Span,
) {
    let why = w
        .ctx
        .protected
        .get(index)
        .map(|p| format!("{} ({})", p.path.display(), p.why))
        .unwrap_or_default();
    let msg = format!("{what} writes {} inside the protected {why}", target.text);
    w.reason(Class::Dangerous, RuleId::WriteProtected, msg, span);
}

/// Credential stores whose content should never be sent anywhere (paths relative to home).
#[rustfmt::skip]
const HOME_CREDENTIALS: &[&str] = &[
    ".ssh", ".aws", ".gnupg", ".netrc", ".git-credentials", ".config/gh", ".docker/config.json",
    ".kube", ".npmrc", ".pypirc", ".config/gcloud", ".azure", ".password-store", ".vault-token",
    ".terraform.d/credentials.tfrc.json", ".cargo/credentials", ".cargo/credentials.toml",
    ".gg", ".config/gg", ".git-credentials", ".config/git/credentials",
    ".config/hub", ".config/op", ".local/share/keyrings", ".mozilla", ".config/google-chrome",
    ".config/chromium", ".pgpass", ".my.cnf", ".env", ".s3cfg", ".m2/settings.xml",
    ".m2/settings-security.xml", ".gem/credentials", ".config/rclone", ".config/containers/auth.json",
    ".bash_history", ".zsh_history", ".zhistory", ".history", ".sh_history",
    ".local/share/fish/fish_history", ".python_history", ".psql_history", ".mysql_history",
    ".node_repl_history", ".sqlite_history", ".rediscli_history", ".config/gh-copilot",
];
const SYSTEM_CREDENTIALS: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/sudoers",
    "/etc/ssh",
    "/etc/ssl/private",
];
#[rustfmt::skip]
const KEY_FILE_NAMES: &[&str] = &[
    "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".netrc", ".git-credentials",
];

/// Whether `word` (possibly `@file`, `<file`, `name=@file`) names a credential file.
pub(crate) fn names_credentials(w: &Walker, word: &Word) -> bool {
    let text = if word.dynamic {
        &word.prefix
    } else {
        &word.text
    };
    // `--post-file=PATH`, `-Fname=@PATH`: the path is after `=`.
    let text = match text.split_once('=') {
        Some((opt, value)) if opt.starts_with('-') => value,
        _ => text.as_str(),
    };
    let text = text
        .rsplit_once(['@', '<'])
        .map_or(text, |(_, after)| after);
    let text = text.strip_prefix("file:").unwrap_or(text);
    if text.is_empty() || !might_name_credentials(w, text) {
        return false;
    }
    let name = basename(text);
    if KEY_FILE_NAMES.contains(&name) {
        return true;
    }
    if names_process_secrets(word) {
        return true;
    }
    let Some(resolved) = absolute_for_match(w, text) else {
        return false;
    };
    // A `.env` file outside the working directory belongs to another project or the user.
    if (name == ".env" || name.starts_with(".env."))
        && w.ctx.cwd.is_absolute()
        && !resolved.starts_with(paths::normalize(&w.ctx.cwd))
    {
        return true;
    }
    if SYSTEM_CREDENTIALS.iter().any(|s| resolved.starts_with(s)) {
        return true;
    }
    let home = &w.ctx.home;
    home.is_absolute()
        && HOME_CREDENTIALS
            .iter()
            .any(|c| resolved.starts_with(home.join(c)))
}

/// Files under `/proc/<pid>/` that expose another process's secrets: its environment (API keys
/// handed to gg), its command line (`--token`), its memory.
const PROCESS_SECRETS: &[&str] = &[
    "environ", "cmdline", "mem", "maps", "smaps", "auxv", "stack",
];

/// `/proc/<pid>/environ`, `/proc/$PPID/cmdline`, `/proc/self/environ` … (computed pids too).
pub(crate) fn names_process_secrets(word: &Word) -> bool {
    let text = word.text.trim_matches(['"', '\'']);
    let Some(rest) = text.strip_prefix("/proc/") else {
        return false;
    };
    let mut parts = rest.split('/').filter(|p| !p.is_empty());
    let (Some(pid), Some(file)) = (parts.next(), parts.next()) else {
        return false;
    };
    let file = file.trim_matches(['"', '\'', '}']);
    // `/proc/self/task/TID/environ` is the same file as `/proc/self/environ`.
    let file = if file == "task" {
        parts.nth(1).unwrap_or(file).trim_matches(['"', '\'', '}'])
    } else {
        file
    };
    let own = pid == "self" || pid == "thread-self";
    let process =
        pid.contains('$') || pid.contains('*') || pid.chars().all(|c| c.is_ascii_digit()) || own;
    let own_harmless = own && file != "environ";
    process && !own_harmless && (PROCESS_SECRETS.contains(&file) || file.contains('*'))
}

/// Component names one of which every credential path contains. Lexical normalisation only
/// removes components, so a path whose text lacks all of them cannot resolve to a credential
/// store, unless it is relative and the working directory is itself inside one.
#[rustfmt::skip]
const CREDENTIAL_MARKERS: &[&str] = &[
    ".ssh", ".aws", ".gnupg", ".netrc", ".git-credentials", "gh", ".docker", ".kube", ".npmrc",
    ".pypirc", "gcloud", ".azure", ".password-store", ".vault-token", "credentials", "shadow",
    "sudoers", "id_", ".gg", ".env", "/proc/", "keyrings", ".pgpass", ".my.cnf", "/hub", "/op",
    ".mozilla", "/chrom", ".s3cfg", "settings", "rclone", "auth.json", "history", "/ssl/private",
];

/// Cheap pre-check for [`names_credentials`], which is called for every argument.
fn might_name_credentials(w: &Walker, text: &str) -> bool {
    let has_marker = |t: &str| CREDENTIAL_MARKERS.iter().any(|m| t.contains(m));
    has_marker(text) || (!text.starts_with(['/', '~']) && cwd_has_marker(&w.ctx.cwd))
}

thread_local! {
    /// The last working directory checked by [`cwd_has_marker`] and the answer: the check runs
    /// for every relative argument, the directory rarely changes.
    static CWD_MARKER: std::cell::RefCell<Option<(std::path::PathBuf, bool)>> =
        const { std::cell::RefCell::new(None) };
}

fn cwd_has_marker(cwd: &std::path::Path) -> bool {
    let compute = || {
        let text = cwd.to_string_lossy();
        CREDENTIAL_MARKERS.iter().any(|m| text.contains(m))
    };
    CWD_MARKER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut cached) => match cached.as_ref() {
            Some((path, answer)) if path == cwd => *answer,
            _ => {
                let answer = compute();
                *cached = Some((cwd.to_path_buf(), answer));
                answer
            }
        },
        Err(_) => compute(),
    })
}

fn absolute_for_match(w: &Walker, text: &str) -> Option<std::path::PathBuf> {
    // `/proc/self/root/home/u/.ssh` is `/home/u/.ssh`; `/proc/self/cwd/x` is `./x`.
    if let Some(rest) = text.strip_prefix("/proc/") {
        let mut parts = rest.splitn(3, '/');
        let (pid, link, tail) = (parts.next(), parts.next(), parts.next().unwrap_or(""));
        let any_pid = pid.is_some_and(|p| {
            p == "self"
                || p == "thread-self"
                || p.starts_with('$')
                || p.bytes().all(|b| b.is_ascii_digit())
        });
        match link {
            Some("root") if any_pid => return absolute_for_match(w, &format!("/{tail}")),
            Some("cwd") if any_pid => {
                let tail = if tail.is_empty() { "." } else { tail };
                return absolute_for_match(w, tail);
            }
            _ => {}
        }
    }
    if let Some(rest) = text.strip_prefix("~/") {
        return w
            .ctx
            .home
            .is_absolute()
            .then(|| paths::normalize(&w.ctx.home.join(rest)));
    }
    if text.starts_with('/') {
        return Some(paths::normalize(std::path::Path::new(text)));
    }
    w.ctx
        .cwd
        .is_absolute()
        .then(|| paths::normalize(&w.ctx.cwd.join(text)))
}

/// Programs whose output is the environment, which holds secrets (`env`, `printenv`, `set`):
/// piping it to the network is exfiltration.
pub(crate) fn prints_environment(prog: &str, args: &[Word]) -> bool {
    match prog {
        "printenv" => true,
        // `env` with only options and assignments prints the environment; with a command it
        // runs the command.
        "env" => args.iter().all(|a| a.is_option() || a.text.contains('=')),
        "set" => args.is_empty(),
        "export" | "declare" | "typeset" => {
            args.iter()
                .any(|a| a.text == "-p" || short_has(&a.text, 'x'))
                || args.is_empty()
        }
        "compgen" => args.iter().any(|a| a.text == "-v" || a.text == "-e"),
        // `jq -n env`, `jq -n '$ENV'`: the whole environment as JSON.
        "jq" | "gojq" | "jaq" => args.iter().any(|a| {
            !a.is_option()
                && (a.text.contains("$ENV")
                    || a.text
                        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
                        .any(|w| w == "env"))
        }),
        "awk" | "gawk" | "mawk" | "nawk" | "busybox" => {
            args.iter().any(|a| a.text.contains("ENVIRON"))
        }
        _ => false,
    }
}

/// `ps e`, `ps eww`, `ps -o environ` show other processes' environments.
pub(crate) fn ps_shows_environment(args: &[Word]) -> bool {
    args.iter().any(|a| {
        let t = a.text.as_str();
        (!t.starts_with('-')
            && !t.is_empty()
            && t.chars().all(|c| c.is_ascii_alphabetic())
            && t.contains('e'))
            || t.contains("environ")
            || t == "-E"
    })
}
