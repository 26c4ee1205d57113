//! git: a few listing subcommands are read-only, unless options or the repository's own config
//! make git run programs. Remote history rewrites and user-level config writes are dangerous.
//!
//! This file reads git's global options (`-C`, `-c`, `--git-dir` …) and decides which
//! repository's config applies; [`subcommands`] holds the rules of each subcommand, and
//! [`config`] the program-running configuration keys (`git -c`, `git config`).

mod config;
mod subcommands;

use super::Outcome;
use super::args::{Opt, split_option};
use crate::Class;
use crate::gitconfig;
use crate::ids::RuleId;
use crate::paths::{self, Cwds};
use crate::walk::{Cmd, Walker};
use crate::word::Word;
use config::{config_override, dotted_entry};
use subcommands::subcommand;

/// Global options (before the subcommand) that take a separate value.
#[rustfmt::skip]
const GLOBAL_WITH_VALUE: &[&str] = &[
    "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
    "--list-cmds", "--attr-source",
];

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    if prog != "git" {
        return None;
    }
    let args = &cmd.argv[1..];
    let mut not_read_only: Option<Outcome> = None;
    // Where git runs: the script's directory, moved by each `-C` in turn.
    let mut dirs = w.cwds.clone();
    let mut i = 0;
    while i < args.len() && args[i].is_option() {
        // `-ccore.pager=…` and `-C/dir` attach their values, as getopt allows.
        let (parsed, used) = split_option(args, i, GLOBAL_WITH_VALUE);
        for opt in parsed {
            if opt.name == "-C" {
                dirs = change_directory(w, &dirs, opt.value.as_ref());
                if !same_repository(w, &dirs) {
                    not_read_only.get_or_insert(Outcome::not(
                        RuleId::GitOtherRepository,
                        "git runs on another repository, whose config was not read",
                    ));
                }
                continue;
            }
            if let Some(o) = global_option(w, &opt, &args[i]) {
                not_read_only.get_or_insert(o);
            }
        }
        i += used;
    }
    if i < args.len() && args[i].dynamic {
        return Some(Outcome::not(
            RuleId::DynamicCommandName,
            format!("git subcommand {} is computed", args[i].text),
        ));
    }
    let Some(sub) = args.get(i) else {
        return Some(Outcome::read_only());
    };
    let sub_args = &args[i + 1..];
    let outcome = subcommand(w, sub.text.as_str(), sub_args);
    if let Some(o) = not_read_only {
        return Some(o);
    }
    if outcome.read_only == super::ReadOnly::Yes {
        let keys = w.git_program_keys(&dirs);
        if !keys.is_empty() {
            let msg = format!(
                "the repository's git config runs programs ({})",
                keys.join(", ")
            );
            return Some(Outcome::not(RuleId::GitRepoConfigRunsPrograms, msg));
        }
    }
    Some(outcome)
}

/// The directories after `git -C DIR`. Only a plain literal path is followed: an empty,
/// computed, expanded, globbed or `~` value, or one with a `..` component (git changes directory
/// physically, through symbolic links), makes the directory unknown, so git's config there
/// counts as unread.
fn change_directory(w: &Walker, dirs: &Cwds, value: Option<&Word>) -> Cwds {
    match value {
        Some(v)
            if !v.dynamic
                && !v.expanded
                && !v.text.is_empty()
                && !v.text.starts_with('~')
                && !v.text.split('/').any(|c| c == "..") =>
        {
            dirs.after_cd(Some(v), w.ctx)
        }
        _ => Cwds::unknown(),
    }
}

/// Whether git run in each of `dirs` finds the repository whose config the caller read: each
/// is the starting directory, or a directory below it reached by a plain path that the caller
/// looked at ([`crate::Context::nested_git`]) and found no other repository on the way to (no
/// `.git` entry, bare-repository-like directory, symbolic link or unread directory), and that
/// is not the git directory, another protected tree or a credential store.
///
/// The starting directory is trusted however a `cd` got back to it (`cd sub/..`, `cd -`): bash
/// changes to the lexical path, which exists. Only when that fails does it retry the path
/// physically, which is why a `..` anywhere else is not trusted.
pub(crate) fn same_repository(w: &Walker, dirs: &Cwds) -> bool {
    let ctx = w.ctx;
    if !ctx.cwd.is_absolute() {
        return false;
    }
    let start = paths::normalize(&ctx.cwd);
    let Some((known, indirect)) = dirs.all_known() else {
        return false;
    };
    known.iter().all(|dir| {
        if *dir == start {
            return true;
        }
        if indirect {
            return false;
        }
        let Some(hazards) = &ctx.nested_git else {
            return false;
        };
        let inside = dir.starts_with(&start)
            && !dir
                .strip_prefix(&start)
                .is_ok_and(|rest| rest.iter().any(|c| c == ".git"));
        // The caller may list a thousand places or more (a large build directory), and this
        // runs for every git command in another directory: a place that is absolute and normal
        // (as the caller's are: `start.join(h)` is `h` then, and normalising it changes nothing)
        // is compared as text, without a copy; any other as before.
        let dir_normal = paths::is_normal(dir);
        let nested = hazards.iter().any(|h| {
            if dir_normal && paths::is_normal(h) {
                paths::starts_with_as_text(dir, h)
            } else {
                dir.starts_with(paths::normalize(&start.join(h)))
            }
        });
        // Exceptions (the agent area) included: git there is not trusted either.
        let protected = ctx.protected.iter().any(|tree| {
            !tree.path.is_absolute()
                || dir.starts_with(paths::normalized(&tree.path))
                || tree.covers(dir)
        });
        let word = Word::literal(&dir.to_string_lossy(), (0, 0));
        inside && !nested && !protected && !super::names_credentials(w, &word)
    })
}

fn global_option(w: &mut Walker, opt: &Opt, a: &Word) -> Option<Outcome> {
    let val = || {
        opt.value
            .as_ref()
            .map(|v| v.text.clone())
            .unwrap_or_default()
    };
    match opt.name.as_str() {
        "-c" => Some(config_override(w, &val(), opt.value.as_ref().unwrap_or(a))),
        "--config-env" => {
            let key = val()
                .split_once('=')
                .map(|(k, _)| k.to_string())
                .unwrap_or_default();
            let entry = dotted_entry(&key, None);
            if entry.as_ref().is_some_and(gitconfig::runs_program) {
                let msg = format!(
                    "\"git --config-env {key}\" sets a program-running key from the environment"
                );
                w.reason(
                    Class::Dangerous,
                    RuleId::GitConfigOverrideProgram,
                    msg,
                    a.span,
                );
            }
            Some(Outcome::not(
                RuleId::GitConfigOverride,
                "\"git --config-env\" overrides configuration",
            ))
        }
        "--exec-path" => Some(Outcome::not(
            RuleId::GitExecPath,
            "\"git --exec-path\" changes where git finds its programs",
        )),
        "-p" | "--paginate" => Some(Outcome::not(
            RuleId::GitPaginate,
            "\"git --paginate\" runs a pager",
        )),
        "--attr-source" => Some(Outcome::not(
            RuleId::GitConfigOverride,
            "\"git --attr-source\" reads attributes from a tree, which can select diff and \
             textconv drivers",
        )),
        "--git-dir" | "--work-tree" | "--bare" => Some(Outcome::not(
            RuleId::GitOtherRepository,
            "git runs on another repository, whose config was not read",
        )),
        _ => None,
    }
}
