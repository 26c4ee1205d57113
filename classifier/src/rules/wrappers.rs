//! Wrappers run another command: the payload is classified as the command it is. Each wrapper's
//! options are parsed from a table so that the payload starts at the right word.

use super::args::{Opt, split_option, tail};
use super::{Outcome, check_write_target, run_code, run_payload};
use crate::Class;
use crate::ids::RuleId;
use crate::walk::{Cmd, Flow, Walker};
use crate::word::Word;

/// What running the wrapper itself means, apart from its payload.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stance {
    /// Only changes scheduling, timing or buffering: read-only when the payload is.
    Transparent,
    /// Not read-only by itself (writes a file, repeats, traces, feeds unknown arguments).
    Normal(&'static str),
    /// Runs the payload with other privileges.
    Privilege,
}

struct Spec {
    name: &'static str,
    stance: Stance,
    /// Options that take a separate value (`-u USER`). Long options may also use `--opt=value`.
    with_value: &'static [&'static str],
    /// Options whose value is optional and therefore only ever attached (`env --block-signal`,
    /// `--block-signal=INT`; `xargs -i`, `-iR`; `nsenter -r`, `-r/dir`): written alone they
    /// never take the next word, which is the payload. Each entry was checked against the real
    /// tool's getopt table (`[=ARG]` in `--help`).
    optional: &'static [&'static str],
    /// Positional words before the payload (`timeout DURATION`, `chrt PRIORITY`).
    positionals: usize,
    /// Accepts `NAME=value` words before the payload (`env`, `sudo`).
    assignments: bool,
}

const fn spec(
    name: &'static str,
    stance: Stance,
    with_value: &'static [&'static str],
    positionals: usize,
) -> Spec {
    Spec {
        name,
        stance,
        with_value,
        optional: &[],
        positionals,
        assignments: false,
    }
}

impl Spec {
    /// The same wrapper with options whose value may only be attached (see [`Spec::optional`]).
    const fn optional(self, optional: &'static [&'static str]) -> Spec {
        Spec { optional, ..self }
    }
}

#[rustfmt::skip]
const WRAPPERS: &[Spec] = &[
    Spec {
        name: "sudo",
        stance: Stance::Privilege,
        with_value: &[
            "-u", "-g", "-C", "-D", "-p", "-r", "-t", "-U", "-T", "-R", "--user", "--group",
            "--chdir", "--prompt", "--role", "--type", "--other-user", "--command-timeout",
            "--close-from", "--host", "--chroot",
        ],
        // `h::` in sudo's getopt string: `-h` alone is help, `-hHOST` names a host.
        optional: &["-h"],
        positionals: 0,
        assignments: true,
    },
    spec("doas", Stance::Privilege, &["-u", "-C"], 0),
    spec("pkexec", Stance::Privilege, &["--user"], 0),
    spec("run0", Stance::Privilege, &[
        "-u", "--user", "-g", "--group", "-D", "--chdir", "--setenv", "--nice", "--unit",
        "--property", "--description", "--slice", "--machine",
    ], 0),
    Spec {
        name: "env",
        stance: Stance::Transparent,
        with_value: &[
            "-u", "--unset", "-C", "--chdir", "-P", "-S", "--split-string",
        ],
        // GNU env: `--block-signal[=SIG]`; `env --block-signal python3` runs python3.
        optional: &["--default-signal", "--ignore-signal", "--block-signal"],
        positionals: 0,
        assignments: true,
    },
    spec("command", Stance::Transparent, &[], 0),
    spec("builtin", Stance::Transparent, &[], 0),
    spec("exec", Stance::Transparent, &["-a"], 0),
    spec("nice", Stance::Transparent, &["-n", "--adjustment"], 0),
    // `-p`, `-P` and `-u` name processes to change instead of a command to run (see
    // `special_options`); their values are read here so that a pid is not taken for the payload.
    spec("ionice", Stance::Transparent, &[
        "-c", "-n", "--class", "--classdata", "-p", "-P", "-u", "--pid", "--pgid", "--uid",
    ], 0),
    spec("nohup", Stance::Normal("\"nohup\" writes nohup.out and keeps running after the session"), &[], 0),
    spec("timeout", Stance::Transparent, &["-s", "--signal", "-k", "--kill-after"], 1),
    spec("time", Stance::Transparent, &["-f", "--format", "-o", "--output"], 0),
    spec("stdbuf", Stance::Transparent, &["-i", "-o", "-e", "--input", "--output", "--error"], 0),
    spec("setsid", Stance::Transparent, &[], 0),
    spec("chrt", Stance::Transparent, &["-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"], 1),
    // `-c`/`--cpu-list` only says how the mask is written; `-p` takes a pid instead of a command.
    spec("taskset", Stance::Transparent, &[], 1),
    spec("flock", Stance::Normal("\"flock\" creates a lock file"), &[
        "-w", "--wait", "--timeout", "-E", "--conflict-exit-code", "-c", "--command",
    ], 1),
    spec("strace", Stance::Normal("\"strace\" traces another program"), &[
        "-o", "-e", "-p", "-s", "-u", "-E", "-I", "-a", "-b", "-O", "-P", "-S", "-U", "-X", "--output",
        "--env", "--attach", "--user", "--detach-on", "--interruptible", "--trace-path", "--columns",
        "--string-limit", "--const-print-style", "--summary-syscall-overhead", "--summary-sort-by",
        "--summary-columns", "--trace", "--signal", "--status", "--abbrev", "--verbose", "--raw",
        "--read", "--write", "--kvm", "--inject", "--fault", "--decode-pids",
    ], 0).optional(&[
        "--daemonize", "--quiet", "--decode-fds", "--relative-timestamps", "--absolute-timestamps",
        "--syscall-times", "--strings-in-hex", "--tips",
    ]),
    spec("ltrace", Stance::Normal("\"ltrace\" traces another program"), &[
        "-o", "-e", "-p", "-s", "-u", "-a", "-n", "-A", "-D", "-F", "-l", "-w", "-x",
    ], 0),
    // `-e[END]`, `-i[R]`, `-l[N]` and their long forms take only an attached value.
    spec("xargs", Stance::Normal("\"xargs\" appends arguments read from its input, which may be anything"), &[
        "-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s", "--arg-file", "--delimiter",
        "--max-args", "--max-procs", "--max-chars", "--process-slot-var",
    ], 0).optional(&["-e", "-i", "-l", "--eof", "--replace", "--max-lines"]),
    spec("watch", Stance::Normal("\"watch\" runs a command repeatedly"), &["-n", "--interval", "-q", "--equexit"], 0)
        .optional(&["-d", "--differences"]),
    spec("parallel", Stance::Normal("\"parallel\" runs commands built from its input"), &[
        "-j", "--jobs", "-S", "--sshlogin", "-a", "--arg-file", "-d", "--delimiter", "-I", "-n", "-N",
        "-L", "--colsep", "--joblog", "--results", "--tmpdir", "--workdir",
    ], 0),
    spec("busybox", Stance::Transparent, &[], 0),
    spec("unbuffer", Stance::Transparent, &[], 0),
    spec("caffeinate", Stance::Transparent, &["-w", "-t"], 0),
    spec("proxychains", Stance::Normal("\"proxychains\" runs a program through a proxy"), &["-f"], 0),
    spec("torsocks", Stance::Normal("\"torsocks\" runs a program through Tor"), &[], 0),
    spec("unshare", Stance::Normal("\"unshare\" runs a program in new namespaces"), &[
        "--map-user", "--map-group", "--map-users", "--map-groups", "--propagation", "--setgroups",
        "-S", "-G", "--setuid", "--setgid", "-R", "--root", "-w", "--wd", "--monotonic", "--boottime",
    ], 0).optional(&[
        "-m", "-u", "-i", "-n", "-p", "-U", "-C", "-T", "--mount", "--uts", "--ipc", "--net", "--pid",
        "--user", "--cgroup", "--time", "--kill-child", "--mount-proc",
    ]),
    spec("nsenter", Stance::Privilege, &[
        "-t", "--target", "-S", "-G", "--setuid", "--setgid", "-W", "--wdns",
    ], 0).optional(&[
        "-m", "-u", "-i", "-n", "-p", "-U", "-C", "-T", "-r", "-w", "--mount", "--uts", "--ipc",
        "--net", "--pid", "--user", "--cgroup", "--time", "--root", "--wd",
    ]),
    spec("chroot", Stance::Privilege, &["--userspec", "--groups"], 1),
    spec("runuser", Stance::Privilege, &[
        "-u", "--user", "-g", "--group", "-G", "--supp-group", "-c", "--command", "-s", "--shell",
        "-w", "--whitelist-environment", "--session-command",
    ], 0),
    spec("setpriv", Stance::Privilege, &[
        "--reuid", "--regid", "--ruid", "--euid", "--rgid", "--egid", "--groups", "--inh-caps",
        "--ambient-caps", "--bounding-set", "--securebits", "--pdeathsig", "--selinux-label",
        "--apparmor-profile", "--landlock-access", "--landlock-rule", "--rlimit",
    ], 0),
    // `capsh [OPTIONS] -- ARGS` runs `/bin/bash ARGS` (see `run`).
    spec("capsh", Stance::Privilege, &[], 0),
    spec("gosu", Stance::Privilege, &[], 1),
    spec("su-exec", Stance::Privilege, &[], 1),
    spec("ksu", Stance::Privilege, &["-n", "-c", "-C", "-l", "-z", "-Z", "-e"], 0),
];

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    let spec = WRAPPERS.iter().find(|s| s.name == prog)?;
    let args = &cmd.argv[1..];
    // `command -v NAME` only looks the name up. Only `command`'s own options count: the
    // payload's (`command git gc --aggressive`) must not.
    if prog == "command"
        && args
            .iter()
            .take_while(|a| a.is_option() && a.text != "--")
            .any(|a| !a.text.starts_with("--") && (a.text.contains('v') || a.text.contains('V')))
    {
        return Some(Outcome::read_only());
    }
    if spec.stance == Stance::Privilege {
        let msg = format!("\"{prog}\" runs a command with other privileges");
        w.reason(
            Class::Dangerous,
            privilege_rule(prog),
            msg,
            cmd.argv[0].span,
        );
    }
    let start = payload_start(spec, args);
    other_readings(w, cmd, &args[..start]);
    let mut environment = Vec::new();
    for a in &args[..start] {
        if spec.assignments
            && let Some((name, value)) = a
                .text
                .split_once('=')
                .filter(|(n, _)| is_name(n) || n.starts_with("BASH_FUNC_"))
        {
            let prefix = a.prefix.split_once('=').map_or("", |(_, v)| v);
            let value = Word {
                text: value.to_string(),
                prefix: prefix.to_string(),
                ..a.clone()
            };
            super::check_assignment(w, name, &value);
            super::environment_credential(w, name, &value);
            environment.push((name.to_string(), value));
        }
    }
    // `env X=… sh -c '… $X …'`: the payload sees the values env sets.
    let saved = super::enter_environment(w, &environment);
    let outcome = payload_outcome(w, cmd, prog, spec, start);
    super::leave_environment(w, saved);
    outcome
}

/// The rest of [`run`]: the wrapper's special options and its payload (`start` in the
/// arguments), run with the wrapper's environment in place.
fn payload_outcome(
    w: &mut Walker,
    cmd: &Cmd,
    prog: &str,
    spec: &Spec,
    start: usize,
) -> Option<Outcome> {
    let args = &cmd.argv[1..];
    let extra = special_options(w, cmd, prog, &args[..start]);
    if let Some(outcome) = extra {
        return Some(outcome);
    }
    let mut payload: Vec<Word> = args[start..].to_vec();
    if prog == "capsh" {
        // Everything after `--` is handed to bash.
        payload = match args.iter().position(|a| !a.dynamic && a.text == "--") {
            Some(dashes) => std::iter::once(Word::literal("bash", cmd.argv[0].span))
                .chain(args[dashes + 1..].iter().cloned())
                .collect(),
            None => Vec::new(),
        };
    }
    if prog == "parallel" && payload.is_empty() {
        // Without a command, parallel runs each input line as a command.
        let outcome = super::exec::stdin_code(w, cmd, prog, true);
        return Some(
            Outcome::not(RuleId::ExecWrapper, "\"parallel\" runs its input")
                .with_flow(outcome.flow),
        );
    }
    let flow = match prog {
        "watch" | "parallel" => joined_code(w, cmd, &payload),
        "xargs" => xargs(w, cmd, spec, &args[..start], payload.clone()),
        "busybox" => run_payload(w, cmd, payload).0,
        _ if payload.is_empty() => return Some(no_payload(spec, prog)),
        _ => run_payload(w, cmd, payload).0,
    };
    let outcome = match spec.stance {
        Stance::Normal(why) => Outcome::not(RuleId::ExecWrapper, why),
        Stance::Privilege => Outcome::not(
            RuleId::PrivilegeWrapper,
            format!("\"{prog}\" changes privileges"),
        ),
        Stance::Transparent => Outcome::read_only(),
    };
    Some(outcome.with_flow(flow))
}

/// `NAME=value`, where the value may be computed (`PATH=$PATH`).
fn is_assignment(word: &Word) -> bool {
    let known = if word.dynamic {
        &word.prefix
    } else {
        &word.text
    };
    known.split_once('=').is_some_and(|(n, _)| is_name(n))
}

fn is_name(text: &str) -> bool {
    !text.is_empty()
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !text.starts_with(|c: char| c.is_ascii_digit())
}

fn no_payload(spec: &Spec, prog: &str) -> Outcome {
    match (spec.stance, prog) {
        (Stance::Privilege, _) => Outcome::not(
            RuleId::PrivilegeWrapper,
            format!("\"{prog}\" starts a privileged shell"),
        ),
        (_, "env") => Outcome::read_only(),
        (_, "exec") => Outcome::read_only(),
        _ => Outcome::not(
            RuleId::ReadonlyNotAllowListed,
            format!("\"{prog}\" without a command"),
        ),
    }
}

/// Index in `args` where the payload command starts.
fn payload_start(spec: &Spec, args: &[Word]) -> usize {
    let mut i = 0;
    let mut positionals = spec.positionals;
    while i < args.len() {
        let a = &args[i];
        let t = a.text.as_str();
        if spec.assignments && is_assignment(a) {
            i += 1;
            continue;
        }
        if a.dynamic {
            break;
        }
        if t == "--" {
            i += 1;
            break;
        }
        // env reads any word with `=` as a setting: `'BASH_FUNC_ls%%=() { …; }'` too.
        if spec.assignments && t.split_once('=').is_some_and(|(n, _)| !n.is_empty()) {
            i += 1;
            continue;
        }
        if t.starts_with('-') && t.len() > 1 {
            i += split_wrapper_option(spec, args, i).1;
            continue;
        }
        if positionals > 0 {
            positionals -= 1;
            i += 1;
            continue;
        }
        break;
    }
    i.min(args.len())
}

/// [`split_option`] for a wrapper's table, with the options of [`Spec::optional`] read as getopt
/// reads an optional argument: a long one carries a value only after `=`, a short one only in
/// the rest of its word (`-iR`), and neither ever takes the next word.
fn split_wrapper_option(spec: &Spec, args: &[Word], i: usize) -> (Vec<Opt>, usize) {
    if spec.optional.is_empty() {
        return split_option(args, i, spec.with_value);
    }
    let word = &args[i];
    let text = if word.dynamic {
        word.prefix.as_str()
    } else {
        word.text.as_str()
    };
    if let Some(long) = text.strip_prefix("--") {
        let name = long.split_once('=').map_or(long, |(n, _)| n);
        let arg = &text[..2 + name.len()];
        // An exact name first, then a unique abbreviation among all the long options; an
        // ambiguous one is an error for getopt (nothing runs), so either reading will do.
        let exact = spec
            .optional
            .iter()
            .chain(spec.with_value)
            .find(|o| **o == arg);
        let abbreviated = || {
            let mut hits = spec
                .optional
                .iter()
                .chain(spec.with_value)
                .filter(|o| o.starts_with("--") && o.starts_with(arg));
            let first = hits.next()?;
            hits.next().is_none().then_some(first)
        };
        let Some(full) = exact
            .or_else(abbreviated)
            .filter(|full| spec.optional.contains(full))
        else {
            return split_option(args, i, spec.with_value);
        };
        let value = (name.len() < long.len()).then(|| tail(word, 2 + name.len() + 1));
        let opt = Opt {
            name: (*full).to_string(),
            value,
        };
        return (vec![opt], 1);
    }
    let mut out = Vec::new();
    for (pos, c) in text.char_indices().skip(1) {
        let mut buffer = [b'-'; 5];
        let len = 1 + c.encode_utf8(&mut buffer[1..]).len();
        let name = std::str::from_utf8(&buffer[..len]).unwrap_or("-");
        if spec.with_value.contains(&name) {
            // The first option with a value ends the cluster the way `split_option` reads it.
            return split_option(args, i, spec.with_value);
        }
        if spec.optional.contains(&name) {
            let offset = pos + c.len_utf8();
            let value = (offset < word.text.len()).then(|| tail(word, offset));
            out.push(Opt {
                name: name.to_string(),
                value,
            });
            return (out, 1);
        }
        out.push(Opt {
            name: name.to_string(),
            value: None,
        });
    }
    (out, 1)
}

/// Options of some wrappers that carry a command or a file of their own, in every spelling
/// getopt accepts (`-S'…'`, `-iS '…'`, `--split-string=…`, `--split …`).
fn special_options(w: &mut Walker, cmd: &Cmd, prog: &str, opts: &[Word]) -> Option<Outcome> {
    let spec = WRAPPERS.iter().find(|s| s.name == prog)?;
    let mut i = 0;
    while i < opts.len() {
        if !opts[i].text.starts_with('-') && !opts[i].prefix.starts_with('-') {
            i += 1;
            continue;
        }
        let (parsed, used) = split_wrapper_option(spec, opts, i);
        i += used;
        for opt in parsed {
            let t = opt.name.as_str();
            match (prog, t) {
                ("env", "-S")
                | ("env", "--split-string")
                | ("flock", "-c")
                | ("flock", "--command") => {
                    let Some(code) = opt.value else { continue };
                    return Some(command_string(w, cmd, prog, t, &code));
                }
                // These change the scheduling of processes that are already running (another
                // program's, the person's), which no sandbox level stops: never read-only.
                _ if acts_on_other_processes(prog, t) => {
                    let msg = format!("\"{prog} {t}\" changes processes that are already running");
                    return Some(Outcome::not(RuleId::SystemOtherProcess, msg));
                }
                ("env", "-C") | ("env", "--chdir") | ("sudo", "-D") | ("sudo", "--chdir") => {
                    return Some(unknown_directory(w, cmd, spec, opt.value.as_ref()));
                }
                ("time", "-o")
                | ("time", "--output")
                | ("strace", "-o")
                | ("strace", "--output")
                | ("ltrace", "-o") => {
                    if let Some(target) = &opt.value {
                        check_write_target(w, target, &format!("{prog} {t}"), target.span);
                    }
                    let start = payload_start(spec, &cmd.argv[1..]);
                    let (flow, _) = run_payload(w, cmd, cmd.argv[1 + start..].to_vec());
                    let msg = format!("\"{prog} {t}\" writes a file");
                    return Some(Outcome::not(RuleId::ReadonlyFlagWrites, msg).with_flow(flow));
                }
                _ => {}
            }
        }
    }
    None
}

/// Whether option `name` of the wrapper `prog` makes it change running processes (`ionice -p
/// PID`, `taskset -p MASK PID`, `chrt -p PRIO PID`) rather than run a command. Long options in
/// any abbreviation getopt accepts.
fn acts_on_other_processes(prog: &str, name: &str) -> bool {
    let (short, long): (&[&str], &[&str]) = match prog {
        "ionice" => (&["-p", "-P", "-u"], &["--pid", "--pgid", "--uid"]),
        "taskset" | "chrt" => (&["-p", "-a"], &["--pid", "--all-tasks"]),
        _ => return false,
    };
    short.contains(&name) || long.iter().any(|l| super::long_is(name, l))
}

/// `env -S CODE`, `flock -c CODE`: the string is split (env) or run by a shell (flock); either
/// way it is read as a command line.
fn command_string(w: &mut Walker, cmd: &Cmd, prog: &str, opt: &str, code: &Word) -> Outcome {
    let flow = if code.dynamic {
        if code.flow.untrusted() {
            let msg = format!("\"{prog} {opt}\" runs downloaded or decoded text");
            w.reason(
                Class::Dangerous,
                RuleId::DownloadExecSubstitution,
                msg,
                code.span,
            );
        }
        Flow::default()
    } else {
        let text = code.text.clone();
        run_code(w, &text, code.span, &cmd.input).0
    };
    Outcome::not(
        RuleId::ExecWrapper,
        format!("\"{prog} {opt}\" runs a command string"),
    )
    .with_flow(flow)
}

/// `env -C DIR cmd`: the payload runs elsewhere; relative paths in it cannot be resolved.
fn unknown_directory(w: &mut Walker, cmd: &Cmd, spec: &Spec, dir: Option<&Word>) -> Outcome {
    let prog = spec.name;
    let saved = w.cwds.clone();
    w.cwds = w.cwds.after_cd(dir, w.ctx);
    let start = payload_start(spec, &cmd.argv[1..]);
    let (flow, _) = run_payload(w, cmd, cmd.argv[1 + start..].to_vec());
    w.cwds = saved;
    Outcome::not(
        RuleId::ExecWrapper,
        format!("\"{prog}\" runs a command in another directory"),
    )
    .with_flow(flow)
}

/// `watch` and `parallel` hand their words to a shell as one command line.
fn joined_code(w: &mut Walker, cmd: &Cmd, payload: &[Word]) -> Flow {
    // `parallel CMD ::: ARGS`: each argument is appended to the command line.
    let words: Vec<Word> = payload
        .iter()
        .filter(|a| a.text != ":::" && a.text != "::::")
        .cloned()
        .collect();
    let words = &words[..];
    if words.is_empty() {
        return Flow::default();
    }
    if words.iter().any(|a| a.dynamic) {
        return run_payload(w, cmd, words.to_vec()).0;
    }
    let code: Vec<&str> = words.iter().map(|a| a.text.as_str()).collect();
    let span = super::exec::join_spans(words);
    run_code(w, &code.join(" "), span, &cmd.input).0
}

/// The rule id of a privilege wrapper (each has its own, so policies and audits can tell them
/// apart).
fn privilege_rule(prog: &str) -> RuleId {
    match prog {
        "doas" => RuleId::PrivilegeDoas,
        "pkexec" => RuleId::PrivilegePkexec,
        "run0" => RuleId::PrivilegeRun0,
        "nsenter" => RuleId::PrivilegeNsenter,
        "chroot" => RuleId::PrivilegeChroot,
        "sudo" => RuleId::PrivilegeSudo,
        _ => RuleId::PrivilegeWrapper,
    }
}

/// Words before the payload that a different reading of the options would make the payload
/// (`taskset -c0 rm -rf ~`: `rm` is the mask only if `-c0` parses as this table says). Each is
/// tried; only dangerous findings are kept.
fn other_readings(w: &mut Walker, cmd: &Cmd, before: &[Word]) {
    if w.in_final_scan() {
        return;
    }
    let candidates = before
        .iter()
        .enumerate()
        .filter(|(_, a)| !a.dynamic && !a.text.starts_with('-') && !a.text.contains('='))
        .filter(|(_, a)| {
            a.text
                .starts_with(|c: char| c.is_ascii_alphabetic() || c == '/')
        })
        .map(|(i, _)| i)
        .take(3);
    for i in candidates.collect::<Vec<_>>() {
        let argv = cmd.argv[1 + i..].to_vec();
        w.keep_dangerous("under another reading of the wrapper's options", |w| {
            run_payload(w, cmd, argv);
        });
    }
}

/// `xargs [-I R] CMD…`: CMD runs with arguments read from the input, or with each input item in
/// place of R. Statically known input (`echo / | xargs rm -rf`) is read as those arguments;
/// unknown input makes the affected words computed. Network or decoded input handed to a
/// shell or interpreter is a download run as code.
fn xargs(w: &mut Walker, cmd: &Cmd, spec: &Spec, opts: &[Word], payload: Vec<Word>) -> Flow {
    let mut replace: Option<String> = None;
    let mut i = 0;
    while i < opts.len() {
        let (parsed, used) = split_wrapper_option(spec, opts, i);
        i += used;
        for opt in parsed {
            match opt.name.as_str() {
                "-I" => replace = opt.value.map(|v| v.text),
                "-i" | "--replace" => {
                    replace = Some(opt.value.map_or_else(|| "{}".to_string(), |v| v.text));
                }
                _ => {}
            }
        }
    }
    let mut argv = payload;
    if argv.is_empty() {
        argv.push(Word::literal("echo", cmd.span));
    }
    let known_input = cmd.input.text.as_ref().filter(|_| cmd.input.fed);
    let runs_code = super::is_code_runner_word(&argv[0]);
    if runs_code && cmd.input.untrusted() {
        let msg = format!(
            "downloaded or decoded input is handed by \"xargs\" to \"{}\"",
            argv[0].text
        );
        w.reason(
            Class::Dangerous,
            RuleId::DownloadPipeToInterpreter,
            msg,
            cmd.span,
        );
    }
    match (replace.filter(|r| !r.is_empty()), known_input) {
        (Some(r), Some(text)) => {
            let mut flow = Flow::default();
            for item in text.lines().filter(|l| !l.trim().is_empty()).take(8) {
                let item = item.trim();
                let replaced: Vec<Word> = argv
                    .iter()
                    .map(|a| Word {
                        text: a.text.replace(&r, item),
                        prefix: a.prefix.replace(&r, item),
                        ..a.clone()
                    })
                    .collect();
                flow.merge(&run_payload(w, cmd, replaced).0);
            }
            flow
        }
        (Some(r), None) => {
            // In shell code the item becomes an unknown quoted value; elsewhere the word is
            // computed from the fixed text before it.
            let replaced: Vec<Word> = argv
                .iter()
                .enumerate()
                .map(|(n, a)| {
                    if a.dynamic || !a.text.contains(&r) {
                        a.clone()
                    } else if runs_code && n > 0 {
                        Word::literal(&a.text.replace(&r, "\"$xargs_item\""), a.span)
                    } else {
                        let before = a.text.split(&r).next().unwrap_or("");
                        Word::computed(&a.text, before, a.span)
                    }
                })
                .collect();
            run_payload(w, cmd, replaced).0
        }
        (None, Some(text)) => {
            argv.extend(
                text.split_whitespace()
                    .take(64)
                    .map(|t| Word::literal(t, cmd.span)),
            );
            run_payload(w, cmd, argv).0
        }
        (None, None) => {
            // The arguments xargs appends are unknown: make that visible to path rules.
            argv.push(Word::computed("<input>", "", cmd.span));
            run_payload(w, cmd, argv).0
        }
    }
}
