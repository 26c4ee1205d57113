//! Wrappers run another command: the payload is classified as the command it is. Each wrapper's
//! options are parsed from a table so that the payload starts at the right word.

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
        positionals,
        assignments: false,
    }
}

#[rustfmt::skip]
const WRAPPERS: &[Spec] = &[
    Spec {
        name: "sudo",
        stance: Stance::Privilege,
        with_value: &[
            "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R", "--user", "--group",
            "--chdir", "--prompt", "--role", "--type", "--other-user", "--command-timeout",
            "--close-from", "--host", "--chroot",
        ],
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
            "-u", "--unset", "-C", "--chdir", "-P", "-S", "--split-string", "--default-signal",
            "--ignore-signal", "--block-signal",
        ],
        positionals: 0,
        assignments: true,
    },
    spec("command", Stance::Transparent, &[], 0),
    spec("builtin", Stance::Transparent, &[], 0),
    spec("exec", Stance::Transparent, &["-a"], 0),
    spec("nice", Stance::Transparent, &["-n", "--adjustment"], 0),
    spec("ionice", Stance::Transparent, &["-c", "-n", "--class", "--classdata"], 0),
    spec("nohup", Stance::Normal("\"nohup\" writes nohup.out and keeps running after the session"), &[], 0),
    spec("timeout", Stance::Transparent, &["-s", "--signal", "-k", "--kill-after"], 1),
    spec("time", Stance::Transparent, &["-f", "--format", "-o", "--output"], 0),
    spec("stdbuf", Stance::Transparent, &["-i", "-o", "-e", "--input", "--output", "--error"], 0),
    spec("setsid", Stance::Transparent, &[], 0),
    spec("chrt", Stance::Transparent, &["-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"], 1),
    spec("taskset", Stance::Transparent, &["--cpu-list"], 1),
    spec("flock", Stance::Normal("\"flock\" creates a lock file"), &[
        "-w", "--wait", "--timeout", "-E", "--conflict-exit-code", "-c", "--command",
    ], 1),
    spec("strace", Stance::Normal("\"strace\" traces another program"), &[
        "-o", "-e", "-p", "-s", "-u", "-E", "-I", "-a", "-b", "-O", "-P", "-S", "-X", "--output",
    ], 0),
    spec("ltrace", Stance::Normal("\"ltrace\" traces another program"), &["-o", "-e", "-p", "-s", "-u", "-a", "-n"], 0),
    spec("xargs", Stance::Normal("\"xargs\" appends arguments read from its input, which may be anything"), &[
        "-a", "-d", "-E", "-e", "-I", "-i", "-L", "-l", "-n", "-P", "-s", "--arg-file", "--delimiter",
        "--max-args", "--max-procs", "--max-chars", "--max-lines", "--replace", "--eof",
        "--process-slot-var",
    ], 0),
    spec("watch", Stance::Normal("\"watch\" runs a command repeatedly"), &["-n", "--interval", "-d", "-q", "--equexit"], 0),
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
        "--map-user", "--map-group", "--propagation", "--setgroups", "-S", "-G", "--setuid",
        "--setgid", "-R", "--root", "-w", "--wd",
    ], 0),
    spec("nsenter", Stance::Privilege, &["-t", "--target", "-S", "-G", "--setuid", "--setgid", "-r", "-w"], 0),
    spec("chroot", Stance::Privilege, &["--userspec", "--groups"], 1),
];

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    let spec = WRAPPERS.iter().find(|s| s.name == prog)?;
    let args = &cmd.argv[1..];
    if prog == "command"
        && super::options(args).any(|a| a.text.contains('v') || a.text.contains('V'))
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
    for a in &args[..start] {
        if spec.assignments
            && let Some((name, value)) = a.text.split_once('=').filter(|(n, _)| is_name(n))
        {
            let prefix = a.prefix.split_once('=').map_or("", |(_, v)| v);
            let value = Word {
                text: value.to_string(),
                prefix: prefix.to_string(),
                ..a.clone()
            };
            super::check_assignment(w, name, &value);
        }
    }
    let extra = special_options(w, cmd, prog, &args[..start]);
    if let Some(outcome) = extra {
        return Some(outcome);
    }
    let payload: Vec<Word> = args[start..].to_vec();
    let flow = match prog {
        "watch" | "parallel" => joined_code(w, cmd, &payload),
        "xargs" => {
            // The arguments xargs appends are unknown: make that visible to path rules.
            let mut argv = payload.clone();
            if argv.is_empty() {
                argv.push(Word::literal("echo", cmd.span));
            }
            // Statically known input (`echo / | xargs rm -rf`) is read as those arguments.
            match &cmd.input.text {
                Some(text) if cmd.input.fed => {
                    argv.extend(
                        text.split_whitespace()
                            .take(64)
                            .map(|t| Word::literal(t, cmd.span)),
                    );
                }
                _ => argv.push(Word::computed("<input>", "", cmd.span)),
            }
            run_payload(w, cmd, argv).0
        }
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
        if spec.assignments && t.split_once('=').is_some_and(|(n, _)| is_name(n)) {
            i += 1;
            continue;
        }
        if t.starts_with('-') && t.len() > 1 {
            i += 1 + usize::from(takes_separate_value(spec, t));
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

fn takes_separate_value(spec: &Spec, opt: &str) -> bool {
    if opt.starts_with("--") {
        return !opt.contains('=') && spec.with_value.contains(&opt);
    }
    // In a short cluster, the first option that takes a value consumes the rest of the cluster,
    // or the next word when it is last.
    for (pos, c) in opt[1..].char_indices() {
        let flag = format!("-{c}");
        if spec.with_value.contains(&flag.as_str()) {
            return pos + c.len_utf8() == opt.len() - 1;
        }
    }
    false
}

/// Options of some wrappers that carry a command or a file of their own.
fn special_options(w: &mut Walker, cmd: &Cmd, prog: &str, opts: &[Word]) -> Option<Outcome> {
    for (i, a) in opts.iter().enumerate() {
        let t = a.text.as_str();
        let value = || {
            opts.get(i + 1)
                .cloned()
                .or_else(|| t.split_once('=').map(|(_, v)| Word::literal(v, a.span)))
        };
        match (prog, t) {
            ("env", "-S")
            | ("env", "--split-string")
            | ("flock", "-c")
            | ("flock", "--command") => {
                if let Some(code) = value() {
                    let text = code.text.clone();
                    let (flow, _) = run_code(w, &text, code.span, &cmd.input);
                    return Some(
                        Outcome::not(
                            RuleId::ExecWrapper,
                            format!("\"{prog} {t}\" runs a command string"),
                        )
                        .with_flow(flow),
                    );
                }
            }
            ("env", "-C") | ("env", "--chdir") | ("sudo", "-D") | ("sudo", "--chdir") => {
                let spec = WRAPPERS.iter().find(|s| s.name == prog)?;
                return Some(unknown_directory(w, cmd, spec, opts, i));
            }
            ("time", "-o")
            | ("time", "--output")
            | ("strace", "-o")
            | ("strace", "--output")
            | ("ltrace", "-o") => {
                if let Some(target) = value() {
                    check_write_target(w, &target, &format!("{prog} {t}"), target.span);
                }
                let spec = WRAPPERS.iter().find(|s| s.name == prog)?;
                let start = payload_start(spec, &cmd.argv[1..]);
                let (flow, _) = run_payload(w, cmd, cmd.argv[1 + start..].to_vec());
                let msg = format!("\"{prog} {t}\" writes a file");
                return Some(Outcome::not(RuleId::ReadonlyFlagWrites, msg).with_flow(flow));
            }
            _ => {}
        }
    }
    None
}

/// `env -C DIR cmd`: the payload runs elsewhere; relative paths in it cannot be resolved.
fn unknown_directory(w: &mut Walker, cmd: &Cmd, spec: &Spec, opts: &[Word], at: usize) -> Outcome {
    let prog = spec.name;
    let saved = w.cwds.clone();
    let dir = opts.get(at + 1);
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
