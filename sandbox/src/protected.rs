//! The one list of protected paths: what no tool may change without a person, and what no
//! sandboxed command may read. Pure data, shared by the sandbox's binds ([`crate::Policy`]), the
//! file tools (a write there is dangerous) and the command classifier (a command writing there is
//! dangerous), so the three cannot drift apart.

use std::path::{Component, Path};

/// How the sandbox keeps a protected entry of a writable root from being changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bind {
    /// The git directory: pinned in place (it cannot be renamed away), its `config`, `hooks` and
    /// those of every submodule read-only; the rest stays writable so git itself works.
    GitDir,
    /// Read-only as a whole, created empty on the host when absent so it cannot be planted.
    ReadOnlyTree,
    /// Read-only when it exists.
    ReadOnlyIfPresent,
    /// Read-only when it exists, and not to be created: files that run code, or become
    /// instructions, when a person or a tool opens the project. A mount cannot cover an absent
    /// name without leaving its mount point on the host (an empty directory named `.envrc` for
    /// the whole session), and Landlock cannot cover a name at all, so the agent moves what a
    /// sandboxed command created there aside after the command ([`placeholders`]).
    Placeholder,
}

/// One protected entry, relative to a working directory (or any writable root).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtectedPath {
    /// A single path component: `.git`, `.gg`, `.bashrc`, …
    pub name: &'static str,
    /// How the sandbox binds it.
    pub bind: Bind,
    /// Why it is protected, for the person asked and for denials.
    pub why: &'static str,
}

/// gg's own scratch area inside `.gg`: the one part of a protected tree the agent may write
/// without asking (see the file tools' pre-approval).
pub const AGENT_AREA: &str = ".gg/agent";

/// The protected entries of every writable root.
pub const PROTECTED_IN_ROOT: &[ProtectedPath] = &[
    ProtectedPath {
        name: ".git",
        bind: Bind::GitDir,
        why: "inside the git directory: its config and hooks make git run programs on the host",
    },
    ProtectedPath {
        name: ".gg",
        bind: Bind::ReadOnlyTree,
        why: "inside gg's project settings (policy, tools), which decide what gg may do",
    },
    ProtectedPath {
        name: ".bashrc",
        bind: Bind::ReadOnlyIfPresent,
        why: "a shell start-up file: it runs when a shell opens the project",
    },
    ProtectedPath {
        name: ".bash_profile",
        bind: Bind::ReadOnlyIfPresent,
        why: "a shell start-up file: it runs when a shell opens the project",
    },
    ProtectedPath {
        name: ".zshrc",
        bind: Bind::ReadOnlyIfPresent,
        why: "a shell start-up file: it runs when a shell opens the project",
    },
    ProtectedPath {
        name: ".zprofile",
        bind: Bind::ReadOnlyIfPresent,
        why: "a shell start-up file: it runs when a shell opens the project",
    },
    ProtectedPath {
        name: ".profile",
        bind: Bind::ReadOnlyIfPresent,
        why: "a shell start-up file: it runs when a shell opens the project",
    },
    ProtectedPath {
        name: ".gitconfig",
        bind: Bind::ReadOnlyIfPresent,
        why: "git configuration: it can make git run programs",
    },
    ProtectedPath {
        name: ".mcp.json",
        bind: Bind::Placeholder,
        why: "MCP server configuration: it starts programs when an agent or editor opens the project",
    },
    ProtectedPath {
        name: ".envrc",
        bind: Bind::Placeholder,
        why: "direnv configuration: it runs when a shell enters the project",
    },
    ProtectedPath {
        name: ".vscode",
        bind: Bind::Placeholder,
        why: "editor settings: they can run tasks and programs when the project is opened",
    },
    ProtectedPath {
        name: ".idea",
        bind: Bind::Placeholder,
        why: "editor settings: they can run programs when the project is opened",
    },
    ProtectedPath {
        name: "AGENTS.md",
        bind: Bind::Placeholder,
        why: "agent instructions: the next session (gg's or another agent's) takes them as the \
              person's own",
    },
    ProtectedPath {
        name: ".agents",
        bind: Bind::Placeholder,
        why: "agent skills and instructions: the next session takes them as the person's own",
    },
];

/// What git's ordinary work writes at the top of a git directory: everything else there is
/// configuration git obeys (`commondir` redirects the whole repository, with its config and
/// hooks, to another directory; `config.worktree`), so a new entry of any other name made by a
/// sandboxed command is moved aside after it. Lock files (`*.lock`) and the `*_HEAD` family are
/// matched by [`git_entry_allowed`].
pub const GIT_DIR_WRITABLE: &[&str] = &[
    "objects",
    "refs",
    "logs",
    "index",
    "HEAD",
    "COMMIT_EDITMSG",
    "MERGE_MSG",
    "MERGE_MODE",
    "MERGE_RR",
    "SQUASH_MSG",
    "TAG_EDITMSG",
    "EDIT_DESCRIPTION",
    "NOTES_MERGE_PARTIAL",
    "NOTES_MERGE_REF",
    "NOTES_MERGE_WORKTREE",
    "BISECT_LOG",
    "BISECT_NAMES",
    "BISECT_START",
    "BISECT_TERMS",
    "BISECT_EXPECTED_REV",
    "BISECT_ANCESTORS_OK",
    "BISECT_RUN",
    "AUTO_MERGE",
    "packed-refs",
    "description",
    "branches",
    "info",
    "rr-cache",
    "rebase-merge",
    "rebase-apply",
    "sequencer",
    "worktrees",
    "modules",
    "lfs",
    "shallow",
    "gc.log",
    "gc.pid",
    "sparse-checkout",
    "FETCH_PACK",
];

/// What git's ordinary work writes in a git directory's `info/`: the local excludes, the sparse
/// checkout's patterns and the dumb-HTTP ref list. `attributes` there selects filter and diff
/// drivers for every checkout, so it is read-only when present and moved aside when a sandboxed
/// command creates it; so is anything else new.
pub const GIT_INFO_WRITABLE: &[&str] = &["exclude", "sparse-checkout", "refs"];

/// Whether a top-level entry of a git directory named `name` is one git's ordinary work writes.
pub fn git_entry_allowed(name: &str) -> bool {
    GIT_DIR_WRITABLE.contains(&name) || name.ends_with("_HEAD") || name.ends_with(".lock")
}

/// The entries of `root` that must not be created by a command ([`Bind::Placeholder`]), as
/// paths.
pub fn placeholders(root: &Path) -> impl Iterator<Item = std::path::PathBuf> + '_ {
    PROTECTED_IN_ROOT
        .iter()
        .filter(|entry| entry.bind == Bind::Placeholder)
        .map(move |entry| root.join(entry.name))
}

/// Files under the home directory that no actor may read: a sandboxed command, a command run
/// read-only, gg's file tools, the browser, `kb add`/`library add`. By class:
/// - **gg's own state**, all of `~/.gg`: ggd's bearer token (`web.json`), provider keys
///   (`config.json`, `credentials.json`), MCP and connector credentials, and past sessions, whose
///   tool outputs can hold secrets;
/// - **credential stores**: ssh, gpg, cloud and container registries, package registries, git
///   credentials, password managers and keyrings;
/// - **shell history**, which holds what people typed (tokens on command lines included).
pub const DENY_READ_IN_HOME: &[&str] = &[
    ".gg",
    // The units `ggd install-service` writes hold ggd's token too.
    ".config/systemd/user/ggd.service",
    "Library/LaunchAgents/com.gg.ggd.plist",
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".config/rclone",
    ".config/containers/auth.json",
    ".config/op",
    ".docker",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings.xml",
    ".s3cfg",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".password-store",
    ".local/share/keyrings",
    ".bash_history",
    ".zsh_history",
    ".python_history",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".lesshst",
];

/// Whether writing `relative` (a path relative to a writable root, symlinks already resolved)
/// changes a protected entry, and which. A `.git` component at any depth counts (a nested
/// repository's hooks run as well); the agent area is not protected.
pub fn protected_entry(relative: &Path) -> Option<&'static ProtectedPath> {
    if relative.starts_with(AGENT_AREA) && relative != Path::new(AGENT_AREA) {
        return None;
    }
    let mut components = relative.components().filter_map(|c| match c {
        Component::Normal(name) => Some(name),
        _ => None,
    });
    let first = components.next()?;
    if let Some(entry) = PROTECTED_IN_ROOT.iter().find(|p| first == p.name) {
        return Some(entry);
    }
    let git = &PROTECTED_IN_ROOT[0];
    components.any(|c| c == git.name).then_some(git)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_entries_are_found_and_the_agent_area_is_not() {
        assert_eq!(
            protected_entry(Path::new(".git/config")).map(|p| p.name),
            Some(".git")
        );
        assert_eq!(
            protected_entry(Path::new(".git")).map(|p| p.name),
            Some(".git")
        );
        assert_eq!(
            protected_entry(Path::new("vendor/lib/.git/hooks/pre-commit")).map(|p| p.name),
            Some(".git")
        );
        assert_eq!(
            protected_entry(Path::new(".gg/policy.toml")).map(|p| p.name),
            Some(".gg")
        );
        assert_eq!(
            protected_entry(Path::new(".gg/agent")).map(|p| p.name),
            Some(".gg")
        );
        assert_eq!(protected_entry(Path::new(".gg/agent/notes.md")), None);
        assert_eq!(
            protected_entry(Path::new(".vscode/tasks.json")).map(|p| p.name),
            Some(".vscode")
        );
        assert_eq!(protected_entry(Path::new("src/main.rs")), None);
        assert_eq!(protected_entry(Path::new("docs/.gg/x")), None);
        assert_eq!(protected_entry(Path::new(".github/workflows/ci.yml")), None);
    }

    #[test]
    fn git_directory_allow_list() {
        for ok in [
            "objects",
            "refs",
            "index",
            "HEAD",
            "ORIG_HEAD",
            "FETCH_HEAD",
            "index.lock",
        ] {
            assert!(git_entry_allowed(ok), "{ok}");
        }
        for planted in [
            "commondir",
            "config.worktree",
            "hooks2",
            "fsmonitor",
            "gitdir",
        ] {
            assert!(!git_entry_allowed(planted), "{planted}");
        }
    }

    #[test]
    fn the_first_entry_is_the_git_directory() {
        assert_eq!(PROTECTED_IN_ROOT[0].name, ".git");
        assert_eq!(PROTECTED_IN_ROOT[0].bind, Bind::GitDir);
    }
}
