//! The rules of each git subcommand: which ones only read, the options that make a reading
//! subcommand write files or run programs (`--output`, `--ext-diff`, `grep -O`, signature
//! checks), commands given to `rebase --exec` and friends, and what git cannot give back
//! (`reset --hard`, `clean -f`, forced pushes).

use super::config::config;
use crate::Class;
use crate::ids::RuleId;
use crate::rules::args::split_option;
use crate::rules::escapes::program_option;
use crate::rules::{Outcome, check_write_target, long_is, run_code, short_has, value_text};
use crate::walk::{Flow, Walker};
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

/// Subcommand options that run programs or write, whatever the subcommand.
#[rustfmt::skip]
const RUNS_PROGRAMS: &[&str] = &[
    "--ext-diff", "--textconv", "--open-files-in-pager", "--upload-pack", "--receive-pack",
    "--exec", "--filters",
];

pub(super) fn subcommand(w: &mut Walker, sub: &str, args: &[Word]) -> Outcome {
    transport_programs(w, sub, args);
    match sub {
        "push" => return push(w, args),
        "config" => return config(w, args),
        _ => {}
    }
    run_command_options(w, sub, args);
    destructive(w, sub, args);
    paths_written(w, sub, args);
    if let Some(outcome) = files_written(w, sub, args) {
        return outcome;
    }
    templates_and_persisted_config(w, sub, args);
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
                crate::rules::args::tail(a, 2)
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
                crate::rules::args::tail(a, at)
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

/// History and work that git cannot give back: discarded uncommitted changes, deleted
/// untracked files, dropped stashes, force-deleted branches, expired reflogs, pruned objects,
/// rewritten history. Each needs a person.
fn destructive(w: &mut Walker, sub: &str, args: &[Word]) {
    let opts: Vec<&str> = crate::rules::options(args)
        .map(|a| a.text.as_str())
        .collect();
    let has = |short: char, long: &str| {
        opts.iter()
            .any(|o| (short != ' ' && short_has(o, short)) || long_is(o, long))
    };
    let ops = crate::rules::operands(args);
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
        let span = crate::rules::exec::join_spans(args);
        w.reason(Class::Dangerous, RuleId::GitDestructive, msg, span);
    }
}

/// The work-tree paths a subcommand writes from what git holds (attacker pass s26, r3c:
/// `git checkout REF -- AGENTS.md` and `git update-index --cacheinfo …,AGENTS.md` then
/// `git checkout -- AGENTS.md` wrote the person's instructions): each named path is judged as
/// any write is, so a protected one is dangerous. `git apply`/`git am` write the paths their
/// patch names, which only the patch shows: out of the work tree (`--unsafe-paths`, a
/// `--directory` that climbs) they are dangerous.
fn paths_written(w: &mut Walker, sub: &str, args: &[Word]) {
    let paths: Vec<&Word> = match sub {
        "checkout" => after_dashes(args).unwrap_or_default(),
        "restore" => crate::rules::operands(args),
        "update-index" => {
            if args.iter().any(|a| long_is(&a.text, "--index-info")) {
                let msg = "\"git update-index --index-info\" stages paths and contents read at \
                           run time, which a checkout then writes";
                w.reason(Class::Dangerous, RuleId::WriteProtected, msg, args[0].span);
            }
            let mut paths = Vec::new();
            for (i, a) in args.iter().enumerate() {
                if long_is(&a.text, "--cacheinfo") {
                    match args.get(i + 1) {
                        // `--cacheinfo MODE,SHA,PATH` or `--cacheinfo MODE SHA PATH`.
                        Some(v) if v.text.contains(',') => paths.push(v),
                        _ => paths.extend(args.get(i + 3)),
                    }
                }
            }
            paths
        }
        "apply" | "am" => {
            let climbs = |v: &str| v.starts_with('/') || v.split('/').any(|c| c == "..");
            for (i, a) in args.iter().enumerate() {
                let directory = crate::rules::long_value(args, i, "--directory").map(value_text);
                if long_is(&a.text, "--unsafe-paths") || directory.as_deref().is_some_and(climbs) {
                    let msg = format!(
                        "\"git {sub} {}\" writes the patch's paths outside the work tree",
                        a.text
                    );
                    w.reason(Class::Dangerous, RuleId::WriteOutsideCwd, msg, a.span);
                }
            }
            Vec::new()
        }
        _ => Vec::new(),
    };
    for path in paths {
        let path = match path.text.rsplit_once(',') {
            Some((_, name)) if sub == "update-index" => Word::literal(name, path.span),
            _ => path.clone(),
        };
        if path.dynamic || !path.text.starts_with(':') {
            check_write_target(w, &path, &format!("git {sub}"), path.span);
        }
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

/// Subcommands that write files or directories named by an option or operand, as getopt (git's
/// parse-options: attached or separate values, unambiguous long prefixes) reads them:
/// `checkout-index --prefix=DIR/` checks files out under DIR, `bundle create FILE` writes FILE,
/// `bugreport -o DIR` writes a report into DIR. Each is a write target.
fn files_written(w: &mut Walker, sub: &str, args: &[Word]) -> Option<Outcome> {
    let (with_value, wanted): (&[&str], &[&str]) = match sub {
        "checkout-index" => (&["--prefix", "--stage"], &["--prefix"]),
        "bugreport" => (
            &["-o", "--output-directory", "-s", "--suffix"],
            &["-o", "--output-directory"],
        ),
        "bundle" if args.first().is_some_and(|a| a.text == "create") => {
            let file = args[1..].iter().find(|a| !a.is_option() || a.text == "-");
            match file {
                Some(f) if f.text != "-" => {
                    check_write_target(w, f, "git bundle create", f.span);
                }
                Some(_) => {}
                None => {
                    let msg = "\"git bundle create\" with no file named".to_string();
                    w.reason(Class::Normal, RuleId::WriteUnknownTarget, msg, args[0].span);
                }
            }
            return Some(Outcome::not(
                RuleId::ReadonlyFlagWrites,
                "\"git bundle create\" writes a file",
            ));
        }
        _ => return None,
    };
    let mut i = 0;
    while i < args.len() {
        if !args[i].is_option() && !args[i].prefix.starts_with('-') {
            i += 1;
            continue;
        }
        if args[i].text == "--" {
            break;
        }
        let (parsed, used) = split_option(args, i, with_value);
        for opt in parsed {
            if !wanted.contains(&opt.name.as_str()) {
                continue;
            }
            let target = opt
                .value
                .unwrap_or_else(|| Word::computed("", "", args[i].span));
            check_write_target(w, &target, &format!("git {sub} {}", opt.name), target.span);
        }
        i += used;
    }
    Some(Outcome::not(
        RuleId::ReadonlyNotAllowListed,
        format!("\"git {sub}\" writes files"),
    ))
}

/// `git init`/`git clone` copy a template directory into the new repository's git directory:
/// its `hooks/` then run on the next commit, checkout or merge, so naming one (`--template=DIR`,
/// `GIT_TEMPLATE_DIR`, `-c init.templateDir=…` given to git itself or to clone) is running
/// code from there. `git clone -c KEY=VALUE` writes the setting into the new repository's
/// config, where a program-running key (`core.sshCommand`, `core.fsmonitor`, `core.hooksPath`,
/// an alias …) runs on every later git command there.
fn templates_and_persisted_config(w: &mut Walker, sub: &str, args: &[Word]) {
    if !matches!(sub, "init" | "clone") {
        return;
    }
    let span = crate::rules::exec::join_spans(args);
    if let Some(dir) = w.vars.get("GIT_TEMPLATE_DIR").filter(|d| !d.is_empty()) {
        let msg = format!(
            "GIT_TEMPLATE_DIR={dir} makes \"git {sub}\" install that template's hooks, which \
             run on later git commands"
        );
        w.reason(
            Class::Dangerous,
            RuleId::GitConfigOverrideProgram,
            msg,
            span,
        );
    }
    const WITH_VALUE: &[&str] = &[
        "--template",
        "-c",
        "--config",
        "-o",
        "--origin",
        "-b",
        "--branch",
        "-u",
        "--upload-pack",
        "--reference",
        "--reference-if-able",
        "--separate-git-dir",
        "--depth",
        "--shallow-since",
        "--shallow-exclude",
        "--server-option",
        "-j",
        "--jobs",
        "--filter",
        "--bundle-uri",
        "--initial-branch",
        "--object-format",
        "--ref-format",
        "--shared",
    ];
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.text == "--" && !a.dynamic {
            break;
        }
        if !(a.is_option() || (a.dynamic && a.prefix.starts_with('-'))) {
            i += 1;
            continue;
        }
        let (parsed, used) = split_option(args, i, WITH_VALUE);
        for opt in parsed {
            let value = opt.value.as_ref();
            match opt.name.as_str() {
                "--template" if value.is_some_and(|v| v.dynamic || !v.text.is_empty()) => {
                    let shown = value.map_or("", |v| v.text.as_str());
                    let msg = format!(
                        "\"git {sub} --template={shown}\" installs that template's hooks, which \
                         run on later git commands"
                    );
                    w.reason(
                        Class::Dangerous,
                        RuleId::GitConfigOverrideProgram,
                        msg,
                        a.span,
                    );
                }
                "-c" | "--config" if sub == "clone" => {
                    let setting = value.map_or(String::new(), |v| v.text.clone());
                    let (key, val) = setting.split_once('=').unwrap_or((&setting, "true"));
                    let entry = super::config::dotted_entry(key, Some(val));
                    let persists_program = value.is_none_or(|v| v.dynamic)
                        || entry.as_ref().is_none_or(|e| {
                            crate::gitconfig::runs_program(e)
                                || (e.section == "init" && e.key == "templatedir")
                        });
                    if persists_program {
                        let msg = format!(
                            "\"git clone -c {setting}\" writes a setting that runs programs (or \
                             one that cannot be read) into the new repository's config"
                        );
                        w.reason(
                            Class::Dangerous,
                            RuleId::GitConfigOverrideProgram,
                            msg,
                            a.span,
                        );
                    }
                }
                _ => {}
            }
        }
        i += used;
    }
}
