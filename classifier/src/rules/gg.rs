//! gg's own commands (issue 35 item 15), classified by what they do: inspecting (`gg classify`,
//! `gg --version`, `gg audit`, `gg sessions list`) is read-only; scheduling work that runs later
//! without anyone watching (`gg job add`, `ggd install-service`), starting the daemon from
//! inside a session (`gg web`, `ggd`), and handing a secret directory to the library or a
//! knowledge base (`gg library add ~/.ssh`) need a person; anything else (a nested agent, with
//! `--yolo` or not) is normal: the runtime caps what a nested agent may do.

use super::{Outcome, names_credentials, run_payload};
use crate::Class;
use crate::ids::RuleId;
use crate::walk::{Cmd, Walker};
use crate::word::Word;

/// Top-level options of `gg` that take a value in the next word.
const GG_WITH_VALUE: &[&str] = &[
    "--approval",
    "--network",
    "--allow-domain",
    "-C",
    "--cwd",
    "--session",
    "--session-dir",
    "-n",
    "--name",
    "--color",
    "--model",
    "--base-url",
    "--api-key",
    "--api-key-file",
];

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    match prog {
        "gg" => Some(gg(w, cmd)),
        "ggd" => Some(ggd(w, cmd)),
        _ => None,
    }
}

/// The words of `args` that are not options (nor option values), in order.
fn positionals(args: &[Word]) -> Vec<&Word> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.dynamic || !a.text.starts_with('-') || a.text == "-" {
            out.push(a);
        } else if a.text == "--" {
            out.extend(&args[i + 1..]);
            break;
        } else if !a.text.contains('=') && GG_WITH_VALUE.contains(&a.text.as_str()) {
            i += 1;
        }
        i += 1;
    }
    out
}

fn gg(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    let words = positionals(args);
    let texts: Vec<&str> = words.iter().map(|a| a.text.as_str()).collect();
    let flag = |f: &str| args.iter().any(|a| !a.dynamic && a.text == f);
    let only_flag = |fs: &[&str]| args.len() == 1 && fs.contains(&args[0].text.as_str());
    if only_flag(&["--version", "-v", "--help", "-h"]) {
        return Outcome::read_only();
    }
    let help = flag("--help") || flag("-h");
    match texts.as_slice() {
        // `gg help me out` is a prompt; `gg help` alone prints help.
        ["classify", ..] | ["audit", ..] | ["man"] | ["completions", ..] | ["help"] => {
            return Outcome::read_only();
        }
        ["sessions", "list"] | ["policy", "show"] => {
            return Outcome::read_only();
        }
        _ if help && words.len() <= 2 => return Outcome::read_only(),
        ["job", "add", ..] | ["job", "resume", ..] => {
            let msg = format!(
                "\"gg job {}\" schedules an agent run that ggd starts later, unattended",
                texts[1]
            );
            w.reason(Class::Dangerous, RuleId::GgPersistence, msg, cmd.span);
        }
        ["web", ..] => {
            let msg = "\"gg web\" starts the gg daemon, which outlives this session";
            w.reason(Class::Dangerous, RuleId::GgDaemon, msg, cmd.span);
        }
        ["library" | "kb", "add", ..] => {
            for path in &words[2..] {
                secret_source(w, path, texts[0]);
            }
        }
        ["sandbox", ..] => {
            // `gg sandbox [OPTIONS] -- CMD…` runs CMD: judge it as the command it is.
            if let Some(dashes) = args.iter().position(|a| !a.dynamic && a.text == "--")
                && dashes + 1 < args.len()
            {
                run_payload(w, cmd, args[dashes + 1..].to_vec());
            }
        }
        _ => {}
    }
    let what = if flag("--yolo")
        || args.iter().any(|a| {
            matches!(
                a.text.as_str(),
                "--approval=yolo" | "--approval=never" | "yolo" | "never"
            )
        }) {
        "a nested gg agent that approves its own commands"
    } else {
        "gg runs an agent or changes gg's state"
    };
    Outcome::not(RuleId::ReadonlyNotAllowListed, what)
}

/// `gg library add PATH`, `gg kb add PATH`: the agent can read the library and knowledge bases
/// from any workspace, so adding a secret store (or a directory holding them) hands it over.
fn secret_source(w: &mut Walker, path: &Word, what: &str) {
    let home = w.ctx.home.clone();
    let resolved = if path.dynamic {
        None
    } else if let Some(rest) = path.text.strip_prefix("~/") {
        Some(crate::paths::normalize(&home.join(rest)))
    } else if path.text == "~" {
        Some(crate::paths::normalize(&home))
    } else {
        Some(crate::paths::normalize(&w.ctx.cwd.join(&path.text)))
    };
    let holds_secrets = match &resolved {
        None => false,
        Some(p) => {
            (home.is_absolute() && home.starts_with(p))
                || p.starts_with("/etc")
                || p == std::path::Path::new("/proc")
        }
    };
    if names_credentials(w, path) || holds_secrets {
        let msg = format!(
            "\"gg {what} add {}\" makes a secret store readable by the agent everywhere",
            path.text
        );
        w.reason(Class::Dangerous, RuleId::GgSecretSource, msg, path.span);
    } else if path.dynamic {
        let msg = format!("\"gg {what} add\" of a computed path {}", path.text);
        w.reason(Class::Normal, RuleId::WriteUnknownTarget, msg, path.span);
    }
}

fn ggd(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    let first = args
        .iter()
        .find(|a| a.dynamic || !a.text.starts_with('-'))
        .map(|a| a.text.as_str());
    let only_info = args.len() == 1
        && matches!(
            args[0].text.as_str(),
            "--version" | "-V" | "-v" | "--help" | "-h"
        );
    match first {
        _ if only_info => return Outcome::read_only(),
        Some("status") => return Outcome::read_only(),
        Some("install-service") => {
            let msg = "\"ggd install-service\" installs a service that starts gg at every login";
            w.reason(Class::Dangerous, RuleId::GgPersistence, msg, cmd.span);
        }
        Some("uninstall-service") => {}
        _ => {
            let msg = "\"ggd\" starts the gg daemon, which outlives this session";
            w.reason(Class::Dangerous, RuleId::GgDaemon, msg, cmd.span);
        }
    }
    Outcome::not(RuleId::ReadonlyNotAllowListed, "ggd changes gg's state")
}
