//! Rules applied to each simple command: what the program does given its arguments,
//! redirections, prefix assignments and standard input.
//!
//! Every family module exposes `run(w, cmd, prog) -> Option<Outcome>`; `None` means "not a
//! program of this family". Families add dangerous (or normal) reasons themselves and report
//! whether the command could still be read-only; [`run`] turns a "no" into a normal reason.
//!
//! Beside the families, shared by all of them: `args` (options read the way getopt does),
//! `output` (what a command prints, for the next pipeline stage), `redirects` (redirections,
//! devices and write targets) and `secrets` (credential files and environments).

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
mod output;
mod readonly;
mod redirects;
mod scripts;
mod secrets;
mod speculative;
mod system;
mod tools;
mod vimscript;
mod wrappers;

use crate::ids::RuleId;
use crate::paths;
use crate::walk::{Cmd, Flow, Walker};
use crate::word::Word;
use crate::{Class, FoundCommand};

pub(crate) use args::{long_is, long_value, operands, options, short_has, value_text};
pub(crate) use net::{is_download_tool, is_network_tool};
pub(crate) use output::written_text;
pub(crate) use readonly::is_read_only_program;
pub(crate) use redirects::{
    alternatives, check_redirects, check_write_target, is_network_device, persistence_named,
    protected_write,
};
pub(crate) use secrets::{names_credentials, prints_environment};

use output::{output_flow, remember_written};
use redirects::check_device_reads;

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
    // On the bytes: asked several times of every command (the rules, the pipeline's feed, the
    // device and code-runner checks), where `rsplit('/')` cost a character searcher each time.
    // Cutting at an ASCII `/` keeps the text valid UTF-8.
    let bytes = text.as_bytes();
    let end = bytes.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
    let start = bytes[..end]
        .iter()
        .rposition(|&b| b == b'/')
        .map_or(0, |i| i + 1);
    text.get(start..end).unwrap_or(text)
}

/// Classifies one simple command (and, through wrappers, what it runs).
pub(crate) fn run(w: &mut Walker, cmd: Cmd) -> Flow {
    if !w.spend(0, 1 + cmd.argv.len(), cmd.span) {
        return Flow::default();
    }
    if let Some(argv) = expand::braced_command(w, &cmd) {
        return run(w, Cmd { argv, ..cmd });
    }
    if let Some(argv) = output::response_file_argv(&cmd) {
        // The input is used up as arguments; the command reads nothing more from it.
        let input = Flow {
            fed: true,
            ..Flow::default()
        };
        return run(w, Cmd { argv, input, ..cmd });
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
        if !cmd.argv.is_empty() {
            environment_credential(w, name, value);
        }
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
    output::names_from_input(w, &cmd, &prog);
    let policy_allowed = apply_policy(w, &cmd, &prog);
    // `X=… sh -c '… $X …'`, `X=… python3 -c '…os.environ["X"]…'`: what the command runs sees
    // the values of its prefix assignments.
    let saved = enter_environment(w, &cmd.assigns);
    let mut outcome = dispatch(w, &cmd, &prog);
    leave_environment(w, saved);
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

/// A statement made of redirections only (`< f`, `> f`, and `$(<f)`, bash's way of reading a
/// file into a word): no program runs, but the inputs are opened and their content may become
/// a word, so they get the checks a reading program's operands get (credentials, other
/// processes' files, devices, paths no check can see), not only the write checks.
pub(crate) fn check_redirect_only(w: &mut Walker, cmd: &Cmd) {
    check_redirects(w, cmd);
    let mut outcome = Outcome::read_only();
    check_device_reads(w, cmd, &mut outcome);
    if let ReadOnly::No { rule, message } = outcome.read_only {
        w.reason(Class::Normal, rule, message, cmd.span);
    }
    output::redirect_only_reads(w, cmd);
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
    speculative::persistence_arguments(w, cmd, prog);
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
        if probe_is_dangerous(w, Cmd::of_words(argv, cmd.input.clone(), cmd.span)) {
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
    let payload = Cmd::of_words(argv, cmd.input.clone(), span);
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
    exec::SHELLS.contains(name) || exec::is_interpreter(name)
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
/// `KUBECONFIG=~/.kube/config python3 x.py`, `env X=~/.ssh/id_rsa node x.js`: a credential
/// store's path in a program's environment is handed to that program as an argument naming it
/// is (`--kubeconfig ~/.kube/config`), and whatever code the program runs can look it up.
pub(crate) fn environment_credential(w: &mut Walker, name: &str, value: &Word) {
    if names_credentials(w, value) {
        let msg = format!(
            "{name}= hands the program the path of a credential store ({}); it can read it",
            value.text
        );
        w.reason(
            Class::Dangerous,
            RuleId::SecretsCredentialFile,
            msg,
            value.span,
        );
    }
}

/// The variables a command's environment assignments (`X=v cmd`, `env X=v cmd`) set for what
/// the command runs, put in place: each static value replaces the script's, each computed one
/// makes the variable unknown. `PWD` and `OLDPWD` keep the script's values (paths are resolved
/// with them; a child shell resets `PWD` anyway). `HOME` is the command's too: the words were
/// expanded already, and what it runs (`HOME=/home bash -c 'cat ~/u/.aws/credentials'`, vim,
/// an interpreter's `expanduser`) expands `~` with the new value. Returns what
/// [`leave_environment`] restores.
pub(crate) fn enter_environment(
    w: &mut Walker,
    assigns: &[(String, Word)],
) -> Vec<(String, Option<String>)> {
    let mut saved = Vec::new();
    for (name, value) in assigns {
        if name.contains('[') || matches!(name.as_str(), "PWD" | "OLDPWD") {
            continue;
        }
        saved.push((name.clone(), w.vars.get(name).cloned()));
        match value.known() {
            Some(text) => w.vars.insert(name.clone(), text.to_string()),
            None => w.vars.remove(name),
        };
    }
    saved
}

/// Undoes [`enter_environment`], last assignment first (`X=a X=b cmd` restores the first).
pub(crate) fn leave_environment(w: &mut Walker, saved: Vec<(String, Option<String>)>) {
    for (name, old) in saved.into_iter().rev() {
        match old {
            Some(value) => w.vars.insert(name, value),
            None => w.vars.remove(&name),
        };
    }
}

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
