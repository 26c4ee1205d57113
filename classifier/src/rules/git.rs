//! git: a few listing subcommands are read-only, unless options or the repository's own config
//! make git run programs. Remote history rewrites and user-level config writes are dangerous.

use super::args::{Opt, split_option};
use super::escapes::program_option;
use super::{Outcome, check_write_target, long_is, run_code, short_has, value_text};
use crate::Class;
use crate::gitconfig::{self, Entry};
use crate::ids::RuleId;
use crate::paths::Cwds;
use crate::walk::{Cmd, Flow, Walker};
use crate::word::Word;

/// Subcommands that only read, with their options checked below.
#[rustfmt::skip]
const READ_ONLY_SUBCOMMANDS: &[&str] = &[
    "status", "diff", "log", "show", "branch", "rev-parse", "ls-files", "blame", "remote",
    "ls-tree", "describe", "shortlog", "rev-list", "cat-file", "merge-base", "show-ref",
    "whatchanged", "reflog", "grep", "stash", "tag", "for-each-ref", "diff-tree", "diff-index",
    "diff-files", "check-ignore", "check-attr", "version", "symbolic-ref", "submodule",
    "name-rev", "count-objects", "cherry",
];

/// Global options (before the subcommand) that take a separate value.
#[rustfmt::skip]
const GLOBAL_WITH_VALUE: &[&str] = &[
    "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
    "--list-cmds", "--attr-source",
];

/// Subcommand options that run programs or write, whatever the subcommand.
#[rustfmt::skip]
const RUNS_PROGRAMS: &[&str] = &[
    "--ext-diff", "--textconv", "--open-files-in-pager", "--upload-pack", "--receive-pack",
    "--exec", "--filters",
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
    let start = crate::paths::normalize(&ctx.cwd);
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
        let nested = hazards
            .iter()
            .any(|h| dir.starts_with(crate::paths::normalize(&start.join(h))));
        let protected = ctx.protected.iter().any(|tree| {
            !tree.path.is_absolute() || dir.starts_with(crate::paths::normalize(&tree.path))
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

/// `git -c key=value`: a program-running key with a dangerous or shell payload is dangerous.
fn config_override(w: &mut Walker, setting: &str, word: &Word) -> Outcome {
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

fn dotted_entry(key: &str, value: Option<&str>) -> Option<Entry> {
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

fn subcommand(w: &mut Walker, sub: &str, args: &[Word]) -> Outcome {
    transport_programs(w, sub, args);
    match sub {
        "push" => return push(w, args),
        "config" => return config(w, args),
        _ => {}
    }
    run_command_options(w, sub, args);
    destructive(w, sub, args);
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        let output_dir = match sub {
            "format-patch" => {
                long_is(t, "--output-directory") || (t.starts_with("-o") && !t.starts_with("--"))
            }
            "archive" => t.starts_with("-o") && !t.starts_with("--"),
            _ => false,
        };
        if output_dir {
            let target = if let Some((_, v)) = t.split_once('=') {
                Word::literal(v, a.span)
            } else if t.len() > 2 && !t.starts_with("--") {
                super::args::tail(a, 2)
            } else {
                args.get(i + 1).cloned().unwrap_or_else(|| a.clone())
            };
            check_write_target(w, &target, &format!("git {sub} -o"), a.span);
            return Outcome::not(
                RuleId::ReadonlyFlagWrites,
                format!("\"git {sub} -o\" writes files"),
            );
        }
        if long_is(t, "--output") && !t.starts_with("--output-") {
            let target = if t.contains('=') {
                Word {
                    text: value_text(a),
                    ..a.clone()
                }
            } else {
                args.get(i + 1).cloned().unwrap_or_else(|| a.clone())
            };
            check_write_target(w, &target, "git --output", a.span);
            return Outcome::not(RuleId::ReadonlyFlagWrites, "\"git --output\" writes a file");
        }
        if t == "--text" {
            continue;
        }
        // `-O` takes its program attached (`-Ovim`, `-iO'sh -c …'` inside a cluster) or none.
        let clustered_o = (sub == "grep" && a.is_option() && !t.starts_with("--"))
            .then(|| grep_cluster_pager(t))
            .flatten();
        if sub == "grep" && (clustered_o.is_some() || long_is(t, "--open-files-in-pager")) {
            let program = if let Some(p) = clustered_o {
                p
            } else {
                t.split_once('=')
                    .map(|(_, v)| v.to_string())
                    .unwrap_or_default()
            };
            if !program.is_empty() {
                program_option(w, &program, a.span, RuleId::GitGrepPager, "git grep -O");
            }
            return Outcome::not(
                RuleId::ReadonlyFlagWrites,
                "\"git grep -O\" opens files in a pager",
            );
        }
        // Signature checks run gpg (`gpg.program`), which writes its trust database.
        if long_is(t, "--show-signature")
            || (t.len() > 2 && long_is(t, "--verify-signatures"))
            || t.contains("%G")
            || t.contains("%(signature")
        {
            return Outcome::not(
                RuleId::ReadonlyFlagWrites,
                format!("\"git {sub} {t}\" verifies signatures with gpg"),
            );
        }
        if let Some(opt) = RUNS_PROGRAMS.iter().find(|o| long_is(t, o)) {
            return Outcome::not(
                RuleId::ReadonlyFlagWrites,
                format!("\"git {sub} {opt}\" runs external programs"),
            );
        }
    }
    if !READ_ONLY_SUBCOMMANDS.contains(&sub) {
        return Outcome::not(
            RuleId::ReadonlyNotAllowListed,
            format!("\"git {sub}\" is not on the read-only list"),
        );
    }
    match sub {
        "branch" => branch(args),
        "stash" => stash(args),
        "tag" => tag(args),
        "remote" => remote(args),
        // `git symbolic-ref [-q] [--short] NAME` reads; a second operand or `-d` changes it.
        "symbolic-ref"
            if args.iter().filter(|a| !a.is_option()).count() > 1
                || args
                    .iter()
                    .any(|a| a.text == "-d" || long_is(&a.text, "--delete")) =>
        {
            Outcome::not(
                RuleId::GitBranchChange,
                "\"git symbolic-ref NAME REF\" changes a reference",
            )
        }
        // Only `git submodule status` (and `summary`) read.
        "submodule"
            if !args
                .iter()
                .find(|a| !a.is_option())
                .is_some_and(|a| matches!(a.text.as_str(), "status" | "summary")) =>
        {
            Outcome::not(
                RuleId::ReadonlyNotAllowListed,
                "\"git submodule\" other than status changes submodules",
            )
        }
        "reflog"
            if args
                .first()
                .is_some_and(|a| !a.is_option() && a.text != "show") =>
        {
            Outcome::not(
                RuleId::ReadonlyNotAllowListed,
                "\"git reflog\" subcommands other than show change the reflog",
            )
        }
        _ => Outcome::read_only(),
    }
}

/// The program of `-O` inside a `git grep` short-option cluster (`-iOsh` is `-i -O sh`), when
/// the cluster has one: letters before it may not take a value.
fn grep_cluster_pager(cluster: &str) -> Option<String> {
    for (pos, c) in cluster.char_indices().skip(1) {
        match c {
            'O' => return Some(cluster[pos + 1..].to_string()),
            'A' | 'B' | 'C' | 'e' | 'f' | 'm' | 'j' => return None,
            _ => {}
        }
    }
    None
}

/// `--upload-pack`, `--receive-pack`, `--exec` (and `clone -u`) name the program git runs for the
/// other end of a transfer; for a local or ssh remote that is an arbitrary command.
fn transport_programs(w: &mut Walker, sub: &str, args: &[Word]) {
    if sub == "rebase" {
        return;
    }
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        let long = ["--upload-pack", "--receive-pack", "--exec"]
            .iter()
            .find(|o| t.len() > 3 && long_is(t, o));
        let value = if let Some(opt) = long {
            Some(if t.contains('=') {
                Word::literal(&value_text(a), a.span)
            } else {
                args.get(i + 1).cloned().unwrap_or_else(|| a.clone())
            })
            .map(|v| (v, *opt))
        } else if sub == "clone" && a.is_option() && !t.starts_with("--") && t.contains('u') {
            let at = t.find('u').map_or(t.len(), |p| p + 1);
            Some(if at < t.len() {
                super::args::tail(a, at)
            } else {
                args.get(i + 1).cloned().unwrap_or_else(|| a.clone())
            })
            .map(|v| (v, "-u"))
        } else {
            None
        };
        if let Some((program, opt)) = value {
            if !program.dynamic {
                run_code(w, &program.text, program.span, &Flow::default());
            }
            let msg = format!(
                "\"git {sub} {opt} {}\" runs that command as the other end of the transfer",
                program.text
            );
            w.reason(Class::Dangerous, RuleId::GitTransportProgram, msg, a.span);
        }
    }
}

/// Subcommands that run a shell command given as an option or operands: that command is read
/// like any other (`git rebase --exec 'rm -rf ~'`).
fn run_command_options(w: &mut Walker, sub: &str, args: &[Word]) {
    let mut codes: Vec<Word> = Vec::new();
    let with_value: &[&str] = match sub {
        "rebase" => &[
            "-x",
            "--exec",
            "-s",
            "--strategy",
            "-X",
            "--strategy-option",
            "--onto",
        ],
        "difftool" | "mergetool" => &["-x", "--extcmd", "-t", "--tool"],
        "filter-branch" => &[
            "--env-filter",
            "--tree-filter",
            "--index-filter",
            "--parent-filter",
            "--msg-filter",
            "--commit-filter",
            "--tag-name-filter",
            "--subdirectory-filter",
        ],
        _ => &[],
    };
    let mut i = 0;
    while i < args.len() {
        if !args[i].is_option() {
            i += 1;
            continue;
        }
        let (parsed, used) = split_option(args, i, with_value);
        i += used;
        for opt in parsed {
            let t = opt.name.as_str();
            let takes_command = match sub {
                "rebase" => matches!(t, "-x" | "--exec"),
                "difftool" | "mergetool" => matches!(t, "-x" | "--extcmd"),
                "filter-branch" => t.ends_with("-filter") && t != "--subdirectory-filter",
                _ => false,
            };
            if takes_command {
                codes.extend(opt.value);
            }
        }
    }
    let joined_from = match (sub, args.first().map(|a| a.text.as_str())) {
        ("submodule", Some("foreach")) | ("bisect", Some("run")) => Some(1),
        _ => None,
    };
    for code in codes.iter().filter(|c| !c.dynamic) {
        let text = code.text.clone();
        run_code(w, &text, code.span, &Flow::default());
    }
    if let Some(from) = joined_from {
        // Options of the subcommand itself come first (`foreach --recursive CMD`).
        let start = args[from..]
            .iter()
            .position(|a| !a.is_option())
            .map_or(args.len(), |p| from + p);
        let command = &args[start..];
        if let (Some(first), Some(last)) = (command.first(), command.last()) {
            let words: Vec<&str> = command.iter().map(|a| a.text.as_str()).collect();
            run_code(
                w,
                &words.join(" "),
                (first.span.0, last.span.1),
                &Flow::default(),
            );
        }
    }
}

/// `git branch` lists unless it is given a name to create, or an option that changes branches.
fn branch(args: &[Word]) -> Outcome {
    #[rustfmt::skip]
    const LISTING: &[&str] = &[
        "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "-l", "--list",
        "--show-current", "--no-color", "--color", "--column", "--no-column", "-i", "--ignore-case",
        "--omit-empty",
    ];
    // `--abbrev`, `--color`, `--column` take a value only after `=`.
    #[rustfmt::skip]
    const WITH_VALUE: &[&str] = &[
        "--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort",
        "--format",
    ];
    let listing_mode = args.iter().any(|a| a.text == "-l" || a.text == "--list");
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        let name = t.split_once('=').map_or(t, |(n, _)| n);
        if WITH_VALUE.contains(&name) {
            let next_is_value = args.get(i + 1).is_some_and(|n| !n.is_option());
            i += 1 + usize::from(!t.contains('=') && next_is_value);
            continue;
        }
        if !(LISTING.contains(&name)
            || name.starts_with("--color")
            || name.starts_with("--abbrev")
            || (listing_mode && !args[i].is_option()))
        {
            return Outcome::not(
                RuleId::GitBranchChange,
                format!("\"git branch {t}\" creates, deletes or changes branches"),
            );
        }
        i += 1;
    }
    Outcome::read_only()
}

fn remote(args: &[Word]) -> Outcome {
    let get_url = args.first().is_some_and(|a| a.text == "get-url")
        && args[1..]
            .iter()
            .all(|a| !a.is_option() || matches!(a.text.as_str(), "--push" | "--all"));
    if get_url || args.iter().all(|a| a.text == "-v" || a.text == "--verbose") {
        Outcome::read_only()
    } else {
        Outcome::not(
            RuleId::GitRemoteChange,
            "only \"git remote -v\" is read-only",
        )
    }
}

fn push(w: &mut Walker, args: &[Word]) -> Outcome {
    for a in args {
        let t = a.text.as_str();
        let forced = if a.is_option() {
            (short_has(t, 'f') || short_has(t, 'd'))
                || [
                    "--force",
                    "--mirror",
                    "--delete",
                    "--prune",
                    "--force-with-lease",
                    "--force-if-includes",
                ]
                .iter()
                .any(|o| long_is(t, o))
        } else {
            (t.starts_with('+') && t.len() > 1) || (t.starts_with(':') && t.len() > 1)
        };
        if forced {
            let msg = format!("\"git push {t}\" rewrites or deletes history on the remote");
            w.reason(Class::Dangerous, RuleId::GitPushForce, msg, a.span);
        }
    }
    Outcome::not(RuleId::GitPush, "\"git push\" changes a remote repository")
}

fn config(w: &mut Walker, args: &[Word]) -> Outcome {
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
        if dotted_entry(&key, Some(value))
            .as_ref()
            .is_some_and(gitconfig::runs_program)
        {
            let span = args.first().map_or((0, 0), |a| a.span);
            let msg = format!("\"git config {key}\" sets a key that makes git run a program");
            w.reason(Class::Dangerous, RuleId::GitConfigProgramKey, msg, span);
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

/// History and work that git cannot give back: discarded uncommitted changes, deleted
/// untracked files, dropped stashes, force-deleted branches, expired reflogs, pruned objects,
/// rewritten history. Each needs a person.
fn destructive(w: &mut Walker, sub: &str, args: &[Word]) {
    let opts: Vec<&str> = super::options(args).map(|a| a.text.as_str()).collect();
    let has = |short: char, long: &str| {
        opts.iter()
            .any(|o| (short != ' ' && short_has(o, short)) || long_is(o, long))
    };
    let ops = super::operands(args);
    let whole_tree = |ops: &[&Word]| {
        ops.iter().any(|o| {
            o.dynamic
                || matches!(
                    o.text.trim_end_matches('/'),
                    "." | "" | ":/" | ":" | "*" | ":(top)" | ":/*" | "./*"
                )
        })
    };
    let what: Option<String> = match sub {
        "reset" if has(' ', "--hard") || has(' ', "--merge") || has(' ', "--keep") => {
            Some("\"git reset --hard\" discards uncommitted changes".into())
        }
        "clean"
            if !has('n', "--dry-run") && (has('f', "--force") || has('x', "") || has('d', "")) =>
        {
            Some("\"git clean\" deletes untracked files, which git cannot restore".into())
        }
        "checkout" if has('f', "--force") => {
            Some("\"git checkout --force\" discards uncommitted changes".into())
        }
        "checkout" if after_dashes(args).is_some_and(|p| whole_tree(&p)) || whole_tree(&ops) => {
            Some("\"git checkout\" of the whole tree discards uncommitted changes".into())
        }
        "restore" if (has('W', "--worktree") || !has('S', "--staged")) && whole_tree(&ops) => {
            Some("\"git restore\" of the whole work tree discards uncommitted changes".into())
        }
        "stash" if matches!(ops.first().map(|o| o.text.as_str()), Some("drop" | "clear")) => {
            Some("\"git stash drop/clear\" deletes stashed work".into())
        }
        "branch"
            if opts.iter().any(|o| short_has(o, 'D'))
                || (has('d', "--delete") && has('f', "--force")) =>
        {
            Some("\"git branch -D\" deletes a branch even if it is not merged".into())
        }
        "reflog"
            if matches!(
                ops.first().map(|o| o.text.as_str()),
                Some("expire" | "delete")
            ) =>
        {
            Some(
                "\"git reflog expire/delete\" removes the record that recovers lost commits".into(),
            )
        }
        "gc" if opts
            .iter()
            .any(|o| o.starts_with("--prune=") && !o.ends_with("=never") || *o == "--prune")
            || has(' ', "--aggressive") && has(' ', "--prune") =>
        {
            Some("\"git gc --prune\" deletes unreachable commits for good".into())
        }
        "prune" if !has('n', "--dry-run") => {
            Some("\"git prune\" deletes unreachable commits for good".into())
        }
        "filter-branch" | "filter-repo" => Some(format!("\"git {sub}\" rewrites history")),
        "update-ref" if has('d', "") => Some("\"git update-ref -d\" deletes a ref".into()),
        "symbolic-ref" if has('d', "--delete") => {
            Some("\"git symbolic-ref -d\" deletes a ref".into())
        }
        "worktree" if ops.first().is_some_and(|o| o.text == "remove") && has('f', "--force") => {
            Some("\"git worktree remove --force\" deletes a work tree with changes".into())
        }
        _ => None,
    };
    if let Some(msg) = what {
        let span = super::exec::join_spans(args);
        w.reason(Class::Dangerous, RuleId::GitDestructive, msg, span);
    }
}

/// The words after `--`, if there is one.
fn after_dashes(args: &[Word]) -> Option<Vec<&Word>> {
    let at = args.iter().position(|a| !a.dynamic && a.text == "--")?;
    Some(args[at + 1..].iter().collect())
}

/// `git stash list|show` read; everything else changes the stash or the work tree.
fn stash(args: &[Word]) -> Outcome {
    match args.first().map(|a| a.text.as_str()) {
        Some("list" | "show") if !args.iter().any(|a| a.dynamic) => Outcome::read_only(),
        _ => Outcome::not(
            RuleId::GitStashChange,
            "\"git stash\" other than list/show changes the stash or the work tree",
        ),
    }
}

/// `git tag` lists with no operand or with `-l`; otherwise it creates, deletes or verifies
/// (which runs gpg).
fn tag(args: &[Word]) -> Outcome {
    #[rustfmt::skip]
    const LISTING: &[&str] = &[
        "-l", "--list", "-n", "--column", "--no-column", "-i", "--ignore-case", "--omit-empty",
        "--color", "--no-color",
    ];
    #[rustfmt::skip]
    const WITH_VALUE: &[&str] = &[
        "--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort",
        "--format",
    ];
    let listing_mode = args
        .iter()
        .any(|a| a.text == "-l" || long_is(&a.text, "--list"));
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let t = a.text.as_str();
        let name = t.split_once('=').map_or(t, |(n, _)| n);
        if a.dynamic {
            break;
        }
        if WITH_VALUE.contains(&name) {
            i += 1 + usize::from(!t.contains('='));
            continue;
        }
        let numbered = t
            .strip_prefix("-n")
            .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()));
        if LISTING.contains(&name)
            || numbered
            || name.starts_with("--column")
            || name.starts_with("--color")
            || (listing_mode && !a.is_option())
        {
            i += 1;
            continue;
        }
        return Outcome::not(
            RuleId::GitTagChange,
            format!("\"git tag {t}\" creates, deletes or verifies tags"),
        );
    }
    if i < args.len() {
        return Outcome::not(RuleId::GitTagChange, "\"git tag\" with computed arguments");
    }
    Outcome::read_only()
}
