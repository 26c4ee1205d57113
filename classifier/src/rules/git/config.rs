//! git configuration given on the command line (`git -c key=value`) or written by `git config`:
//! a key that makes git run a program (`core.pager`, `alias.x = !cmd`, `core.sshCommand` …) is
//! read as the command it runs. Apart because both the global options and the `config`
//! subcommand parse keys the same way.

use crate::Class;
use crate::gitconfig::{self, Entry};
use crate::ids::RuleId;
use crate::rules::{Outcome, check_write_target, run_code, value_text};
use crate::walk::{Flow, Walker};
use crate::word::Word;

/// `git -c key=value`: a program-running key with a dangerous or shell payload is dangerous.
pub(super) fn config_override(w: &mut Walker, setting: &str, word: &Word) -> Outcome {
    let (key, value) = setting.split_once('=').unwrap_or((setting, "true"));
    let Some(entry) = dotted_entry(key, Some(value)) else {
        return Outcome::not(
            RuleId::GitConfigOverride,
            "\"git -c\" overrides configuration",
        );
    };
    // `protocol.ext.allow=always` (or `protocol.allow=always`) enables the `ext::` transport,
    // whose URL is a command line.
    if entry.section == "protocol"
        && entry.key == "allow"
        && matches!(value.to_ascii_lowercase().as_str(), "always" | "user")
        && entry
            .subsection
            .as_deref()
            .is_none_or(|s| s.eq_ignore_ascii_case("ext"))
    {
        let msg = format!("\"git -c {key}={value}\" lets ext:: URLs run commands");
        w.reason(
            Class::Dangerous,
            RuleId::GitTransportProgram,
            msg,
            word.span,
        );
    }
    if includes_file(&entry) {
        included_file(w, key, value, word);
    }
    if entry.section == "core" && entry.key == "hookspath" {
        hooks_directory(w, key, value, word);
        return Outcome::not(
            RuleId::GitConfigOverride,
            format!("\"git -c {key}\" moves where git runs hooks from"),
        );
    }
    if gitconfig::runs_program(&entry) {
        let program = value.trim_start_matches('!').to_string();
        let (_, risky) = run_code(w, &program, word.span, &Flow::default());
        if risky || word.dynamic {
            let msg =
                format!("\"git -c {key}\" makes git run {program}, a shell or dangerous command");
            w.reason(
                Class::Dangerous,
                RuleId::GitConfigOverrideProgram,
                msg,
                word.span,
            );
        }
        return Outcome::not(
            RuleId::GitConfigOverride,
            format!("\"git -c {key}\" makes git run a program"),
        );
    }
    Outcome::not(
        RuleId::GitConfigOverride,
        "\"git -c\" overrides configuration",
    )
}

/// `git -c core.hooksPath=DIR`: git then runs `DIR/pre-commit`, `DIR/post-checkout`,
/// `DIR/reference-transaction` … on commits, checkouts, merges, pushes and any ref update, and
/// none of them is named in the command. The repository's own `.git/hooks` is protected because
/// of that, so any other directory, inside the project or not, is dangerous: a hook planted in
/// `/tmp` or in a project file runs unseen. Only the repository's own hooks directory and
/// `/dev/null` (the usual way to turn hooks off: no file can be found below it) are not.
fn hooks_directory(w: &mut Walker, key: &str, value: &str, word: &Word) {
    let dir = Word {
        text: value.to_string(),
        prefix: word.prefix.split_once('=').map_or("", |(_, v)| v).into(),
        ..word.clone()
    };
    let resolved = crate::paths::resolve_all(&dir, &w.cwds, w.ctx);
    let own_or_none = !resolved.is_empty()
        && resolved.iter().all(|path| {
            path == std::path::Path::new("/dev/null")
                || w.cwds
                    .known()
                    .iter()
                    .any(|cwd| *path == crate::paths::normalize(&cwd.join(".git/hooks")))
        });
    if own_or_none {
        return;
    }
    let msg = format!(
        "\"git -c {key}={value}\" makes git run hooks from {value}, programs the command does \
         not show"
    );
    w.reason(
        Class::Dangerous,
        RuleId::GitConfigOverrideProgram,
        msg,
        word.span,
    );
}

/// `GIT_CONFIG_COUNT=N` with `GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>` in git's
/// environment, and `GIT_CONFIG_PARAMETERS` (git's own way of handing `-c` to the programs it
/// runs): the same settings as `git -c KEY=VALUE`, judged the same way
/// (`GIT_CONFIG_KEY_0=core.hooksPath GIT_CONFIG_VALUE_0=/tmp/h git commit`). A computed key or
/// value is already not read-only (`env.program-override`).
pub(super) fn environment_overrides(w: &mut Walker, span: crate::Span) {
    let mut settings = w
        .vars
        .get("GIT_CONFIG_PARAMETERS")
        .map(|text| quoted_parameters(text))
        .unwrap_or_default();
    let count = w
        .vars
        .get("GIT_CONFIG_COUNT")
        .and_then(|c| c.trim().parse::<usize>().ok())
        .unwrap_or(0);
    // git reads as many pairs as the count says; past a hand-written handful, the rest are
    // judged by `env.program-override` alone.
    for n in 0..count.min(crate::walk::MAX_MAYBE_VALUES) {
        if let (Some(key), Some(value)) = (
            w.vars.get(&format!("GIT_CONFIG_KEY_{n}")),
            w.vars.get(&format!("GIT_CONFIG_VALUE_{n}")),
        ) {
            settings.push(format!("{key}={value}"));
        }
    }
    for setting in settings {
        config_override(w, &setting, &Word::literal(&setting, span));
    }
    config_files_moved(w, span);
}

/// `GIT_CONFIG_GLOBAL=F`, `GIT_CONFIG_SYSTEM=F`, `XDG_CONFIG_HOME=D` or a `HOME` other than the
/// person's own in git's environment: git reads a configuration file the command does not show,
/// and that file can set `core.hooksPath`, a pager or an alias as `-c include.path` can
/// (`HOME=/tmp/h git commit` after writing `/tmp/h/.gitconfig`). Only `/dev/null` (an empty
/// configuration) is not dangerous; a `HOME` whose value is not known counts as moved.
fn config_files_moved(w: &mut Walker, span: crate::Span) {
    let home = w.ctx.home.to_string_lossy().into_owned();
    let mut moved: Vec<String> = ["GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "XDG_CONFIG_HOME"]
        .into_iter()
        .filter(|name| w.vars.get(name).is_some_and(|v| v != "/dev/null"))
        .map(str::to_string)
        .collect();
    let home_moved = match w.vars.get("HOME") {
        Some(value) => crate::paths::normalize(std::path::Path::new(value)) != w.ctx.home,
        None => w.ctx.home.is_absolute(),
    };
    if home_moved {
        moved.push("HOME".to_string());
    }
    if let Some(name) = moved.first() {
        let msg = format!(
            "{name} in git's environment makes git read a configuration file the command does \
             not show (it can set hooks, a pager or aliases; home is {home})"
        );
        w.reason(
            Class::Dangerous,
            RuleId::GitConfigOverrideProgram,
            msg,
            span,
        );
    }
}

/// `include.path` and `includeIf.<condition>.path`: a configuration file git reads too.
pub(super) fn includes_file(entry: &Entry) -> bool {
    matches!(entry.section.as_str(), "include" | "includeif") && entry.key == "path"
}

/// `git -c include.path=F` (or `includeIf.<condition>.path=F`): git reads F as configuration,
/// which can set `core.hooksPath`, a pager or an alias the command does not show. Only
/// `/dev/null` adds nothing.
fn included_file(w: &mut Walker, key: &str, value: &str, word: &Word) {
    if value == "/dev/null" {
        return;
    }
    let msg = format!(
        "\"git -c {key}={value}\" makes git read {value} as configuration, which can make it run \
         programs the command does not show"
    );
    w.reason(
        Class::Dangerous,
        RuleId::GitConfigOverrideProgram,
        msg,
        word.span,
    );
}

/// The settings of a `GIT_CONFIG_PARAMETERS` value as `key=value`: single-quoted words
/// (`'\''` stands for a quote), each `'key'='value'` or `'key=value'`, separated by blanks.
/// Where the text stops following that form git refuses it, so what came before is all.
fn quoted_parameters(text: &str) -> Vec<String> {
    let mut settings = Vec::new();
    let mut rest = text.trim_start();
    while let Some((key, after)) = single_quoted(rest) {
        let (setting, after) = match after.strip_prefix('=').and_then(single_quoted) {
            Some((value, after)) => (format!("{key}={value}"), after),
            None => (key, after),
        };
        settings.push(setting);
        rest = after.trim_start();
        if settings.len() >= crate::walk::MAX_MAYBE_VALUES {
            break;
        }
    }
    settings
}

/// A shell single-quoted word at the start of `text` (`'a'\''b'` is `a'b`) and what follows.
fn single_quoted(text: &str) -> Option<(String, &str)> {
    let mut word = String::new();
    let mut rest = text.strip_prefix('\'')?;
    loop {
        let (part, after) = rest.split_once('\'')?;
        word.push_str(part);
        match after.strip_prefix("\\''") {
            Some(more) => {
                word.push('\'');
                rest = more;
            }
            None => return Some((word, after)),
        }
    }
}

pub(super) fn dotted_entry(key: &str, value: Option<&str>) -> Option<Entry> {
    let (section, rest) = key.split_once('.')?;
    let (subsection, name) = match rest.rsplit_once('.') {
        Some((sub, name)) => (Some(sub.to_string()), name),
        None => (None, rest),
    };
    Some(Entry {
        section: section.to_ascii_lowercase(),
        subsection,
        key: name.to_ascii_lowercase(),
        value: value.map(str::to_string),
    })
}

pub(super) fn config(w: &mut Walker, args: &[Word]) -> Outcome {
    let scope_global = args
        .iter()
        .any(|a| matches!(a.text.as_str(), "--global" | "--system"));
    let file = args
        .iter()
        .position(|a| a.text == "-f" || a.text == "--file" || a.text.starts_with("--file="));
    let reading = args.iter().any(|a| {
        matches!(
            a.text.as_str(),
            "--get"
                | "--get-all"
                | "--get-regexp"
                | "-l"
                | "--list"
                | "--get-urlmatch"
                | "--show-origin"
                | "get"
                | "list"
        )
    });
    let positional: Vec<&Word> = args.iter().filter(|a| !a.is_option()).collect();
    let writes = !reading && positional.len() >= 2
        || args.iter().any(|a| {
            a.text.starts_with("--unset")
                || a.text == "--add"
                || a.text == "--edit"
                || a.text == "-e"
                || a.text == "set"
                || a.text == "edit"
                || a.text.starts_with("--rename")
                || a.text.starts_with("--remove")
        });
    if let Some(pos) = file
        && writes
    {
        let target = if args[pos].text.contains('=') {
            Word {
                text: value_text(&args[pos]),
                ..args[pos].clone()
            }
        } else {
            args.get(pos + 1)
                .cloned()
                .unwrap_or_else(|| args[pos].clone())
        };
        check_write_target(w, &target, "git config --file", target.span);
    }
    if scope_global && writes {
        let span = args.first().map_or((0, 0), |a| a.span);
        w.reason(
            Class::Dangerous,
            RuleId::SystemUserConfig,
            "\"git config --global\" changes user-level git configuration",
            span,
        );
    }
    if writes {
        let mut named = positional.iter().filter(|p| p.text != "set");
        let key = named.next().map(|p| p.text.clone()).unwrap_or_default();
        // `alias.x '!cmd'` runs a shell, `alias.st status` does not: the value decides.
        let value = named
            .next()
            .map_or("!", |v| if v.dynamic { "!" } else { v.text.as_str() });
        // `include.path`, `includeIf.<cond>.path`: git then reads another file, which can
        // hold any of the keys that run programs, and which a later command can change.
        if dotted_entry(&key, Some(value)).as_ref().is_some_and(|e| {
            gitconfig::runs_program(e)
                || (matches!(e.section.as_str(), "include" | "includeif") && e.key == "path")
        }) {
            let span = args.first().map_or((0, 0), |a| a.span);
            let msg = format!("\"git config {key}\" sets a key that makes git run a program");
            w.reason(Class::Dangerous, RuleId::GitConfigProgramKey, msg, span);
        }
        // A section renamed or copied carries its keys under the new name: `a.fsmonitor`
        // set first, then `--rename-section a core`, is `core.fsmonitor` (found by an attacker
        // pass). Which keys move is not in the command, so any rename or copy is judged as
        // setting a program key.
        if args.iter().any(|a| {
            a.text.starts_with("--rename-section")
                || a.text.starts_with("--copy-section")
                || a.text == "rename-section"
                || a.text == "copy-section"
        }) {
            let span = args.first().map_or((0, 0), |a| a.span);
            w.reason(
                Class::Dangerous,
                RuleId::GitConfigProgramKey,
                "\"git config\" renames or copies a section: its keys (an fsmonitor, a pager) \
                 take effect under the new name",
                span,
            );
        }
        return Outcome::not(
            RuleId::GitConfigWrite,
            "\"git config\" changes configuration",
        );
    }
    if args.iter().any(|a| a.dynamic) || positional.len() > 1 && !reading {
        return Outcome::not(
            RuleId::ReadonlyNotAllowListed,
            "\"git config\" with these arguments may change configuration",
        );
    }
    // `--get`, `--list`, `get`, `list` or a bare key: reading configuration.
    Outcome::read_only()
}
