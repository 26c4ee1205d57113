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

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The project as it was before a sandboxed command, as far as the sweep needs it.
pub struct Before {
    root: PathBuf,
    /// Placeholders that did not exist.
    absent: Vec<PathBuf>,
    /// The git directory's names, `None` when `.git` was no directory.
    git: Option<GitNames>,
}

struct GitNames {
    top: Vec<OsString>,
    info: Vec<OsString>,
    modules: Vec<OsString>,
    worktrees: Vec<OsString>,
}

impl Before {
    /// Looks at `root` before a command.
    pub fn look(root: &Path) -> Before {
        let absent = sandbox::protected::placeholders(root)
            .filter(|p| std::fs::symlink_metadata(p).is_err())
            .collect();
        let git_dir = root.join(".git");
        let git = std::fs::symlink_metadata(&git_dir)
            .is_ok_and(|m| m.is_dir())
            .then(|| GitNames {
                top: names(&git_dir),
                info: names(&git_dir.join("info")),
                modules: names(&git_dir.join("modules")),
                worktrees: names(&git_dir.join("worktrees")),
            });
        Before {
            root: root.to_path_buf(),
            absent,
            git,
        }
    }

    /// After the command: moves aside what it created that is not allowed, and returns a line
    /// for the command's output about each.
    pub fn sweep(self) -> Vec<String> {
        const OPENS: &str = "which runs code or becomes instructions when the project is opened";
        let git_dir = self.root.join(".git");
        let mut created: Vec<(PathBuf, String)> = self
            .absent
            .into_iter()
            .map(|p| (p, OPENS.to_string()))
            .collect();
        // A git directory git would not have written, with why.
        let untrusted = |dir: &Path, worktree: bool| {
            untrusted_git_dir(dir, worktree, 0)
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
            }
            // A `.git` the command made (`git init`) stays when git would have written it.
            None => {
                if std::fs::symlink_metadata(&git_dir).is_ok_and(|m| m.is_dir())
                    && let Some(why) = untrusted(&git_dir, false)
                {
                    created.push((git_dir, why));
                }
            }
        }
        quarantine(&self.root, &created)
    }
}

/// Why `dir`, a git directory a command created, is not one git would have written (`None`
/// when it is). `worktree` allows the `commondir` a linked worktree's directory has.
fn untrusted_git_dir(dir: &Path, worktree: bool, depth: usize) -> Option<String> {
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
            .find_map(|n| untrusted_git_dir(&dir.join(n), worktree, depth + 1));
    }
    // Configuration that runs a program, includes followed (an unreadable include counts).
    let config = classifier::GitConfig::load_with(dir, |p| std::fs::read_to_string(p).ok());
    let mut programs = config.program_keys();
    if let Ok(text) = std::fs::read_to_string(dir.join("config.worktree")) {
        programs.extend(classifier::GitConfig { files: vec![text] }.program_keys());
    }
    if let Some(key) = programs.first() {
        return Some(format!("its configuration runs a program ({key})"));
    }
    if let Some(hook) = names(&dir.join("hooks"))
        .into_iter()
        .find(|n| !n.to_str().is_some_and(|n| n.ends_with(".sample")))
    {
        return Some(format!("it has a hook ({})", hook.to_string_lossy()));
    }
    if std::fs::symlink_metadata(dir.join("commondir")).is_ok() {
        // A linked worktree's directory names the main git directory, two levels up.
        let own = std::fs::read_to_string(dir.join("commondir"))
            .is_ok_and(|text| text.trim_end_matches('\n') == "../..");
        if !(worktree && own) {
            return Some("it takes its repository from elsewhere (commondir)".into());
        }
    }
    names(&dir.join("modules"))
        .into_iter()
        .find_map(|n| untrusted_git_dir(&dir.join("modules").join(n), false, depth + 1))
}

/// The names directly inside `dir` (none when it is not a directory).
fn names(dir: &Path) -> Vec<OsString> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => std::fs::read_dir(dir)
            .map(|entries| entries.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Moves each of `paths` (absent before the command) that exists now into
/// `.gg/quarantine/<time>-<name>`, out of reach of whatever opens the project, and says so with
/// its reason; nothing is deleted. `.gg` is read-only to commands, so they cannot take it back.
fn quarantine(root: &Path, paths: &[(PathBuf, String)]) -> Vec<String> {
    let mut lines = Vec::new();
    for (path, why) in paths {
        if std::fs::symlink_metadata(path).is_err() {
            continue;
        }
        // `.git/commondir` is named as such, and kept as `…-.git_commondir`.
        let name = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        let flat = name.replace('/', "_");
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let dir = root.join(".gg").join("quarantine");
        let target = dir.join(format!("{stamp}-{flat}"));
        let moved = std::fs::create_dir_all(&dir).and_then(|()| std::fs::rename(path, &target));
        lines.push(match moved {
            Ok(()) => format!(
                "[gg: the command created {name}, {why}; moved to {}]",
                target.display()
            ),
            Err(e) => format!(
                "[gg: the command created {name}, {why}, and it could not be moved aside ({e}): \
                 remove it before opening the project]"
            ),
        });
    }
    lines
}
