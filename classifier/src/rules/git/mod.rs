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
    // The directories `-C`, `--git-dir` and `--work-tree` name: where a writing subcommand
    // writes.
    let mut git_dirs: Vec<Word> = Vec::new();
    // The work trees and git directories named (`--work-tree`, `--git-dir`, `-c
    // core.worktree=…`), each with the directories it is relative to: a writing subcommand
    // writes there.
    let mut work_trees: Vec<(Word, Cwds, bool)> = Vec::new();
    // `-c init.templateDir=…`: the template `git init`/`git clone` copies hooks from.
    let mut template: Option<Word> = None;
    config::environment_overrides(w, cmd.span);
    let mut i = 0;
    while i < args.len() && args[i].is_option() {
        // `-ccore.pager=…` and `-C/dir` attach their values, as getopt allows.
        let (parsed, used) = split_option(args, i, GLOBAL_WITH_VALUE);
        for opt in parsed {
            if matches!(opt.name.as_str(), "-C" | "--git-dir" | "--work-tree")
                && let Some(value) = &opt.value
            {
                git_dirs.push(value.clone());
            }
            if matches!(opt.name.as_str(), "--git-dir" | "--work-tree") {
                let value = opt
                    .value
                    .clone()
                    .unwrap_or_else(|| Word::computed("", "", args[i].span));
                work_trees.push((value, dirs.clone(), opt.name == "--git-dir"));
            }
            if opt.name == "-c"
                && let Some(value) = &opt.value
            {
                let (key, setting) = value.text.split_once('=').unwrap_or((&value.text, ""));
                match key.to_ascii_lowercase().as_str() {
                    "core.worktree" => {
                        let tree = Word {
                            text: setting.to_string(),
                            prefix: value.prefix.split_once('=').map_or("", |(_, v)| v).into(),
                            ..value.clone()
                        };
                        work_trees.push((tree, dirs.clone(), false));
                    }
                    "init.templatedir" if !setting.is_empty() || value.dynamic => {
                        template = Some(value.clone());
                    }
                    _ => {}
                }
            }
            if opt.name == "-C" {
                // Judged lexically as well: `git -C ..` is the project's parent, although git
                // resolving `..` physically leaves its configuration unread.
                if let Some(value) = &opt.value {
                    work_trees.push((value.clone(), dirs.clone(), false));
                }
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
    // The subcommand's paths are relative to where git runs (`git -C sub checkout HEAD --
    // ../.git/hooks/x` writes the hooks). Where `-C` made that unknown (a `..`, a computed
    // directory), they keep the script's directory, whose judgement is the closest known.
    let script_dirs = w.cwds.clone();
    if dirs.all_known().is_some() {
        w.cwds = dirs.clone();
    }
    let outcome = subcommand(w, sub.text.as_str(), sub_args);
    w.cwds = script_dirs;
    if let Some(value) = template.filter(|_| matches!(sub.text.as_str(), "init" | "clone")) {
        let msg = format!(
            "\"git -c {}\" makes \"git {}\" install that template's hooks, which run on later \
             git commands",
            value.text, sub.text
        );
        w.reason(
            Class::Dangerous,
            RuleId::GitConfigOverrideProgram,
            msg,
            value.span,
        );
    }
    if outcome.read_only != super::ReadOnly::Yes {
        work_tree_outside(w, &sub.text, &dirs, &work_trees, cmd.span);
    }
    // The directory a subcommand creates or fills, judged from where git runs (after `-C`):
    // `git clone URL ~/.config/systemd/user` plants units, `git init ~` makes `~/.git`. Only
    // the places whose content runs later count (a sibling worktree, `../wt`, is ordinary).
    let saved = std::mem::replace(&mut w.cwds, dirs.clone());
    for target in created_directories(sub.text.as_str(), sub_args) {
        created_in_persistence(w, &target, &sub.text);
    }
    w.cwds = saved;
    if outcome.read_only != super::ReadOnly::Yes {
        for dir in &git_dirs {
            if let Some(why) = super::persistence_named(w, dir) {
                let msg = format!(
                    "git {} works in {}, in {why}: what it writes there runs later",
                    sub.text, dir.text
                );
                w.reason(Class::Dangerous, RuleId::WriteOutsideCwd, msg, dir.span);
            }
        }
    }
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

/// A subcommand that is not read-only writes in its work tree and git directory (a checkout,
/// a stash, a pull, a reset, hooks run from there): where git runs (after `cd` and `-C`), a
/// `--work-tree`/`--git-dir`/`-c core.worktree=` it is given, and `GIT_WORK_TREE`/`GIT_DIR`
/// in its environment. Each is judged as a write target: outside the project (`cd ~ && git
/// stash`, `git -C .. checkout .`, `GIT_WORK_TREE=~ git checkout -- .`) it is dangerous, as
/// writing there with any other program is; computed, it is not read-only.
fn work_tree_outside(
    w: &mut Walker,
    sub: &str,
    dirs: &Cwds,
    named: &[(Word, Cwds, bool)],
    span: crate::Span,
) {
    let what = format!("git {sub} (its work tree or git directory)");
    let saved = w.cwds.clone();
    for (tree, relative_to, git_dir) in named {
        w.cwds = relative_to.clone();
        if !(*git_dir && own_git_dir(w, tree)) {
            super::check_write_target(w, tree, &what, tree.span);
        }
    }
    w.cwds = dirs.clone();
    for name in ["GIT_WORK_TREE", "GIT_DIR"] {
        if let Some(value) = w.vars.get(name).cloned() {
            let tree = Word::literal(&value, span);
            if !(name == "GIT_DIR" && own_git_dir(w, &tree)) {
                super::check_write_target(w, &tree, &what, span);
            }
        }
    }
    if let Some((known, _)) = dirs.all_known() {
        let known: Vec<_> = known.to_vec();
        for dir in known {
            let here = Word::literal(&dir.to_string_lossy(), span);
            super::check_write_target(w, &here, &what, span);
        }
    }
    w.cwds = saved;
}

/// Whether `dir` is the project's own git directory (`--git-dir=.git`, `GIT_DIR=.git`): git
/// writing there is what every writing git command does, not a write into a protected tree.
fn own_git_dir(w: &Walker, dir: &Word) -> bool {
    if dir.dynamic || !w.ctx.cwd.is_absolute() {
        return false;
    }
    let own = paths::normalize(&w.ctx.cwd.join(".git"));
    let resolved = paths::resolve_all(dir, &w.cwds, w.ctx);
    !resolved.is_empty() && resolved.iter().all(|p| *p == own)
}

/// A directory git creates or fills at `target`: dangerous in a protected tree, at home or
/// above (`git init ~` makes `~/.git`), or in the home's configuration or a credential store.
fn created_in_persistence(w: &mut Walker, target: &Word, sub: &str) {
    let what = format!("git {sub}");
    match paths::place_of(target, &w.cwds, w.ctx) {
        paths::Place::Protected(index) => {
            super::protected_write(w, index, target, &what, target.span);
        }
        paths::Place::Root | paths::Place::HomeOrAbove(_) => {
            let msg = format!(
                "{what} makes a repository at {} (home or above)",
                target.text
            );
            w.reason(Class::Dangerous, RuleId::WriteOutsideCwd, msg, target.span);
        }
        _ => {
            if let Some(why) = super::persistence_named(w, target) {
                let msg = format!("{what} writes {}, in {why}", target.text);
                w.reason(Class::Dangerous, RuleId::WriteOutsideCwd, msg, target.span);
            }
        }
    }
}

/// The directories `git SUB ARGS` creates or writes into: `clone REPO DIR`, `init DIR`,
/// `worktree add PATH`, `submodule add REPO PATH`, and `--separate-git-dir DIR`. Options are
/// skipped with their values where they take one; every other word after the ones that are
/// not directories counts (fail closed: a commit-ish of `worktree add` resolves inside the
/// project and costs nothing).
fn created_directories(sub: &str, args: &[Word]) -> Vec<Word> {
    #[rustfmt::skip]
    const WITH_VALUE: &[&str] = &[
        "-o", "--origin", "-b", "--branch", "-u", "--upload-pack", "--reference",
        "--reference-if-able", "--separate-git-dir", "--depth", "--shallow-since",
        "--shallow-exclude", "-c", "--config", "--server-option", "-j", "--jobs", "--filter",
        "--template", "--bundle-uri", "--initial-branch", "--object-format", "--ref-format", "-B",
        "--reason", "--name",
    ];
    let (skip, rest) = match (sub, args.first().map(|a| a.text.as_str())) {
        ("clone", _) => (1, args),
        ("init", _) => (0, args),
        ("worktree", Some("add")) | ("submodule", Some("add")) => {
            (usize::from(sub == "submodule"), &args[1..])
        }
        _ => return Vec::new(),
    };
    let mut found = Vec::new();
    let mut operands = Vec::new();
    let mut i = 0;
    let mut ended = false;
    while i < rest.len() {
        let a = &rest[i];
        i += 1;
        if !ended && a.text == "--" && !a.dynamic {
            ended = true;
        } else if !ended && a.is_option() {
            let name = a.text.split_once('=').map_or(a.text.as_str(), |(n, _)| n);
            let value = match a.text.split_once('=') {
                Some(_) => Some(super::args::tail(a, name.len() + 1)),
                None if WITH_VALUE.contains(&name) => {
                    i += 1;
                    rest.get(i - 1).cloned()
                }
                None => None,
            };
            if name == "--separate-git-dir"
                && let Some(v) = value
            {
                found.push(v);
            }
        } else {
            operands.push(a.clone());
        }
    }
    found.extend(operands.into_iter().skip(skip));
    found
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
        // Whether `dir` is normal, and its names, for the tests below.
        let names = paths::Names::of(dir);
        let dir_normal = names.normal;
        let nested = hazards.iter().any(|h| {
            if dir_normal && !paths::may_lead_to(h, &names.names) {
                return false;
            }
            if dir_normal && paths::is_normal(h) {
                paths::starts_with_as_text(dir, h)
            } else {
                dir.starts_with(paths::normalize(&start.join(h)))
            }
        });
        // Exceptions (the agent area) included: git there is not trusted either.
        let protected = ctx.protected.iter().any(|tree| {
            !tree.path.is_absolute()
                || if dir_normal && paths::is_normal(&tree.path) {
                    paths::starts_with_as_text(dir, &tree.path)
                } else {
                    dir.starts_with(paths::normalized(&tree.path))
                }
                || tree.covers_known(dir, &names)
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
            // An included file's name from the environment may name any configuration.
            if entry
                .as_ref()
                .is_some_and(|e| gitconfig::runs_program(e) || config::includes_file(e))
            {
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
