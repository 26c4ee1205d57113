//! Unknown programs may be wrappers the tables do not know (`firejail rm -rf /`) or take a
//! command string (`mytool -c 'rm -rf /'`). Their arguments are read as commands on a trial
//! basis; only dangerous findings are kept, so an ordinary argument cannot raise a false
//! "normal" and the verdict of the unknown program itself stays what it was.

use super::{basename, persistence_named, run};
use crate::Class;
use crate::ids::RuleId;
use crate::walk::{Cmd, Walker};
use crate::word::Word;

/// Programs whose appearance as an argument of an unknown program is worth a trial.
const TRIAL_PROGRAMS: &[&str] = &[
    "rm", "dd", "shred", "sudo", "doas", "su", "chmod", "chown", "mv", "cp", "tee", "sh", "bash",
    "zsh", "dash", "curl", "wget", "nc", "ncat", "socat", "shutdown", "reboot", "poweroff", "halt",
    "kill", "find", "truncate", "wipefs", "fdisk", "mount", "crontab", "eval",
];

/// Options that commonly introduce a command string.
const CODE_OPTIONS: &[&str] = &["-c", "--command", "--cmd", "-e", "--exec", "--run"];

/// How many trial payloads one command may start.
const MAX_TRIALS: usize = 3;

pub(crate) fn trial_payloads(w: &mut Walker, cmd: &Cmd) {
    if w.in_final_scan() {
        return;
    }
    let args = &cmd.argv[1..];
    let mut trials = 0;
    for (i, a) in args.iter().enumerate() {
        if trials >= MAX_TRIALS {
            break;
        }
        if a.dynamic {
            continue;
        }
        let name = basename(&a.text);
        if TRIAL_PROGRAMS.contains(&name) || name.starts_with("mkfs") {
            trials += 1;
            w.keep_dangerous("in the arguments of an unknown program", |w| {
                let probe = Cmd::of_words(args[i..].to_vec(), cmd.input.clone(), cmd.span);
                run(w, probe);
            });
        } else if a.text.contains(' ')
            && a.text
                .split_whitespace()
                .next()
                .is_some_and(|p| TRIAL_PROGRAMS.contains(&basename(p)))
        {
            // A quoted command line such as `tmux new -d 'rm -rf ~'`.
            trials += 1;
            let code = a.text.clone();
            w.keep_dangerous("in the arguments of an unknown program", |w| {
                w.reparse(&code, a.span, &cmd.input, true);
            });
        } else if CODE_OPTIONS.contains(&a.text.as_str())
            && let Some(code) = args.get(i + 1).and_then(Word::known)
        {
            trials += 1;
            let code = code.to_string();
            let span = args[i + 1].span;
            w.keep_dangerous("in the arguments of an unknown program", |w| {
                w.reparse(&code, span, &cmd.input, true);
            });
        }
    }
}

/// A program with no table may write any path it is given (`tool install ~/.bashrc`, `tool
/// --dest=~/.config/autostart`): an argument, or the value of a `--opt=value`, that names the
/// home's configuration or a credential store makes it dangerous, as a shell write there is.
/// Deny by default: what the program does with the path is not known.
pub(crate) fn persistence_arguments(w: &mut Walker, cmd: &Cmd, prog: &str) {
    for a in &cmd.argv[1..] {
        let value = match a.text.split_once('=') {
            Some((opt, v)) if opt.starts_with('-') => Word {
                text: v.to_string(),
                prefix: v.to_string(),
                ..a.clone()
            },
            _ => a.clone(),
        };
        if let Some(why) = persistence_named(w, &value) {
            let msg = format!(
                "\"{prog}\", a program without a table, is given {}, in {why}; it may write there",
                value.text
            );
            w.reason(Class::Dangerous, RuleId::WriteOutsideCwd, msg, a.span);
            return;
        }
    }
}
