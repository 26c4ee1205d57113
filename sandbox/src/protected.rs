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
    /// Protected at any depth, not only at the top of a writable root: what git, an agent or an
    /// editor reads from the directory it is started in, which may be any directory of the
    /// project (`sub/AGENTS.md` is the person's own instructions to an agent started in `sub`).
    /// Shell start-up files count only in the home directory, so only at the top.
    pub anywhere: bool,
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
        anywhere: true,
    },
    ProtectedPath {
        name: ".gg",
        bind: Bind::ReadOnlyTree,
        why: "inside gg's project settings (policy, tools), which decide what gg may do",
        anywhere: true,
    },
    ProtectedPath {
        name: ".bashrc",
        bind: Bind::ReadOnlyIfPresent,
        why: "a shell start-up file: it runs when a shell opens the project",
        anywhere: false,
    },
    ProtectedPath {
        name: ".bash_profile",
        bind: Bind::ReadOnlyIfPresent,
        why: "a shell start-up file: it runs when a shell opens the project",
        anywhere: false,
    },
    ProtectedPath {
        name: ".zshrc",
        bind: Bind::ReadOnlyIfPresent,
        why: "a shell start-up file: it runs when a shell opens the project",
        anywhere: false,
    },
    ProtectedPath {
        name: ".zprofile",
        bind: Bind::ReadOnlyIfPresent,
        why: "a shell start-up file: it runs when a shell opens the project",
        anywhere: false,
    },
    ProtectedPath {
        name: ".profile",
        bind: Bind::ReadOnlyIfPresent,
        why: "a shell start-up file: it runs when a shell opens the project",
        anywhere: false,
    },
    ProtectedPath {
        name: ".gitconfig",
        bind: Bind::ReadOnlyIfPresent,
        why: "git configuration: it can make git run programs",
        anywhere: false,
    },
    ProtectedPath {
        name: ".mcp.json",
        bind: Bind::Placeholder,
        why: "MCP server configuration: it starts programs when an agent or editor opens the project",
        anywhere: true,
    },
    ProtectedPath {
        name: ".envrc",
        bind: Bind::Placeholder,
        why: "direnv configuration: it runs when a shell enters the project",
        anywhere: true,
    },
    ProtectedPath {
        name: ".vscode",
        bind: Bind::Placeholder,
        why: "editor settings: they can run tasks and programs when the project is opened",
        anywhere: true,
    },
    ProtectedPath {
        name: ".idea",
        bind: Bind::Placeholder,
        why: "editor settings: they can run programs when the project is opened",
        anywhere: true,
    },
    ProtectedPath {
        name: "AGENTS.md",
        bind: Bind::Placeholder,
        why: "agent instructions: the next session (gg's or another agent's) takes them as the \
              person's own",
        anywhere: true,
    },
    ProtectedPath {
        name: "CLAUDE.md",
        bind: Bind::Placeholder,
        why: "agent instructions: the next session of another agent takes them as the person's own",
        anywhere: true,
    },
    ProtectedPath {
        name: ".claude",
        bind: Bind::Placeholder,
        why: "another agent's settings: its hooks run programs when it opens the project",
        anywhere: true,
    },
    ProtectedPath {
        name: ".cursor",
        bind: Bind::Placeholder,
        why: "editor and agent settings: they start MCP servers and rules when the project is \
              opened",
        anywhere: true,
    },
    ProtectedPath {
        name: ".agents",
        bind: Bind::Placeholder,
        why: "agent skills and instructions: the next session takes them as the person's own",
        anywhere: true,
    },
    // Other agents', editors' and tools' files of the same two classes (instructions taken as
    // the person's own; settings that run programs when the project is opened or used), found
    // by an attacker pass that planted each below the top.
    ProtectedPath {
        name: "GEMINI.md",
        bind: Bind::Placeholder,
        why: "agent instructions: the next session of another agent takes them as the person's own",
        anywhere: true,
    },
    ProtectedPath {
        name: ".gemini",
        bind: Bind::Placeholder,
        why: "another agent's settings: they start MCP servers and tools when it opens the project",
        anywhere: true,
    },
    ProtectedPath {
        name: "opencode.json",
        bind: Bind::Placeholder,
        why: "another agent's settings: they start MCP servers when it opens the project",
        anywhere: true,
    },
    ProtectedPath {
        name: "opencode.jsonc",
        bind: Bind::Placeholder,
        why: "another agent's settings: they start MCP servers when it opens the project",
        anywhere: true,
    },
    ProtectedPath {
        name: ".opencode",
        bind: Bind::Placeholder,
        why: "another agent's settings and plugins: they run when it opens the project",
        anywhere: true,
    },
    ProtectedPath {
        name: ".windsurfrules",
        bind: Bind::Placeholder,
        why: "agent instructions: the next session of another agent takes them as the person's own",
        anywhere: true,
    },
    ProtectedPath {
        name: ".windsurf",
        bind: Bind::Placeholder,
        why: "another agent's settings and rules: they run or instruct when it opens the project",
        anywhere: true,
    },
    ProtectedPath {
        name: ".clinerules",
        bind: Bind::Placeholder,
        why: "agent instructions: the next session of another agent takes them as the person's own",
        anywhere: true,
    },
    ProtectedPath {
        name: ".roo",
        bind: Bind::Placeholder,
        why: "another agent's settings and rules: they run or instruct when it opens the project",
        anywhere: true,
    },
    ProtectedPath {
        name: ".kiro",
        bind: Bind::Placeholder,
        why: "another agent's settings, hooks and steering: they run or instruct when it opens the project",
        anywhere: true,
    },
    ProtectedPath {
        name: ".continue",
        bind: Bind::Placeholder,
        why: "another agent's settings: they start MCP servers when it opens the project",
        anywhere: true,
    },
    ProtectedPath {
        name: ".aider.conf.yml",
        bind: Bind::Placeholder,
        why: "another agent's settings: they can run programs when it starts in the project",
        anywhere: true,
    },
    ProtectedPath {
        name: "copilot-instructions.md",
        bind: Bind::Placeholder,
        why: "agent instructions (`.github/copilot-instructions.md`): another agent takes them as the person's own",
        anywhere: true,
    },
    ProtectedPath {
        name: ".zed",
        bind: Bind::Placeholder,
        why: "editor settings: they can run tasks and language servers when the project is opened",
        anywhere: true,
    },
    ProtectedPath {
        name: ".helix",
        bind: Bind::Placeholder,
        why: "editor settings: they can start language servers when the project is opened",
        anywhere: true,
    },
    ProtectedPath {
        name: ".nvim.lua",
        bind: Bind::Placeholder,
        why: "editor start-up file: Neovim runs it when it opens the project (exrc)",
        anywhere: true,
    },
    ProtectedPath {
        name: ".exrc",
        bind: Bind::Placeholder,
        why: "editor start-up file: vi and Neovim run it when they open the project (exrc)",
        anywhere: true,
    },
    ProtectedPath {
        name: ".dir-locals.el",
        bind: Bind::Placeholder,
        why: "editor settings: Emacs evaluates them when it opens a file of the project",
        anywhere: true,
    },
    ProtectedPath {
        name: ".pre-commit-config.yaml",
        bind: Bind::Placeholder,
        why: "commit hooks: pre-commit runs the programs it names at the next commit",
        anywhere: true,
    },
    ProtectedPath {
        name: ".yarnrc.yml",
        bind: Bind::Placeholder,
        why: "package manager settings: `yarnPath` runs a program at every yarn command",
        anywhere: true,
    },
    ProtectedPath {
        name: ".npmrc",
        bind: Bind::Placeholder,
        why: "package manager settings: they choose programs npm runs",
        anywhere: true,
    },
    // Found by the next attacker pass (s24): more of the same classes, and two kinds the list
    // had missed, hook managers (what a hook git runs reads or runs next) and other version
    // control systems' repository directories (their configuration runs programs, as `.git`'s).
    ProtectedPath {
        name: ".hg",
        bind: Bind::Placeholder,
        why: "inside a Mercurial repository: its hgrc loads extensions and runs hooks at any hg \
              command (a shell prompt's included)",
        anywhere: true,
    },
    ProtectedPath {
        name: ".jj",
        bind: Bind::Placeholder,
        why: "inside a Jujutsu repository: its configuration chooses programs jj runs",
        anywhere: true,
    },
    ProtectedPath {
        name: ".sl",
        bind: Bind::Placeholder,
        why: "inside a Sapling repository: its configuration loads extensions and runs hooks",
        anywhere: true,
    },
    ProtectedPath {
        name: ".husky",
        bind: Bind::Placeholder,
        why: "husky's commit hooks: git runs the wrappers in `.husky/_` (its core.hooksPath), \
              and each runs the `.husky/<hook>` script of its name, at the next commit or \
              checkout",
        anywhere: true,
    },
    ProtectedPath {
        name: ".huskyrc",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: true,
    },
    ProtectedPath {
        name: ".huskyrc.json",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: true,
    },
    ProtectedPath {
        name: ".huskyrc.js",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: true,
    },
    ProtectedPath {
        name: "lefthook.yml",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: true,
    },
    ProtectedPath {
        name: "lefthook.yaml",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: true,
    },
    ProtectedPath {
        name: "lefthook.toml",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: true,
    },
    ProtectedPath {
        name: "lefthook.json",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: true,
    },
    ProtectedPath {
        name: ".lefthook.yml",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: true,
    },
    ProtectedPath {
        name: ".lefthook.yaml",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: true,
    },
    ProtectedPath {
        name: "lefthook-local.yml",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: true,
    },
    ProtectedPath {
        name: ".lefthook-local.yml",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: true,
    },
    ProtectedPath {
        name: ".lefthook",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: true,
    },
    ProtectedPath {
        name: ".lefthook-local",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: true,
    },
    ProtectedPath {
        name: ".overcommit.yml",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: true,
    },
    ProtectedPath {
        name: ".cursorrules",
        bind: Bind::Placeholder,
        why: INSTRUCTIONS,
        anywhere: true,
    },
    ProtectedPath {
        name: ".rules",
        bind: Bind::Placeholder,
        why: INSTRUCTIONS,
        anywhere: true,
    },
    ProtectedPath {
        name: "AGENT.md",
        bind: Bind::Placeholder,
        why: INSTRUCTIONS,
        anywhere: true,
    },
    ProtectedPath {
        name: "AGENTS.override.md",
        bind: Bind::Placeholder,
        why: INSTRUCTIONS,
        anywhere: true,
    },
    ProtectedPath {
        name: "CLAUDE.local.md",
        bind: Bind::Placeholder,
        why: INSTRUCTIONS,
        anywhere: true,
    },
    ProtectedPath {
        name: "QWEN.md",
        bind: Bind::Placeholder,
        why: INSTRUCTIONS,
        anywhere: true,
    },
    ProtectedPath {
        name: "CRUSH.md",
        bind: Bind::Placeholder,
        why: INSTRUCTIONS,
        anywhere: true,
    },
    ProtectedPath {
        name: ".goosehints",
        bind: Bind::Placeholder,
        why: INSTRUCTIONS,
        anywhere: true,
    },
    ProtectedPath {
        name: ".augment-guidelines",
        bind: Bind::Placeholder,
        why: INSTRUCTIONS,
        anywhere: true,
    },
    // Copilot reads `.github/instructions/*.instructions.md` of the workspace it opens: the
    // directory is protected whole, at the top (a path of two names is compared as such).
    ProtectedPath {
        name: ".github/instructions",
        bind: Bind::Placeholder,
        why: INSTRUCTIONS,
        anywhere: false,
    },
    // Copilot's prompt files, chat modes and custom agents, read from the same place.
    ProtectedPath {
        name: ".github/prompts",
        bind: Bind::Placeholder,
        why: INSTRUCTIONS,
        anywhere: false,
    },
    ProtectedPath {
        name: ".github/chatmodes",
        bind: Bind::Placeholder,
        why: INSTRUCTIONS,
        anywhere: false,
    },
    ProtectedPath {
        name: ".github/agents",
        bind: Bind::Placeholder,
        why: INSTRUCTIONS,
        anywhere: false,
    },
    ProtectedPath {
        name: ".junie",
        bind: Bind::Placeholder,
        why: AGENT_SETTINGS,
        anywhere: true,
    },
    ProtectedPath {
        name: ".qwen",
        bind: Bind::Placeholder,
        why: AGENT_SETTINGS,
        anywhere: true,
    },
    ProtectedPath {
        name: ".amazonq",
        bind: Bind::Placeholder,
        why: AGENT_SETTINGS,
        anywhere: true,
    },
    ProtectedPath {
        name: ".codex",
        bind: Bind::Placeholder,
        why: AGENT_SETTINGS,
        anywhere: true,
    },
    ProtectedPath {
        name: ".openhands",
        bind: Bind::Placeholder,
        why: AGENT_SETTINGS,
        anywhere: true,
    },
    ProtectedPath {
        name: ".crush",
        bind: Bind::Placeholder,
        why: AGENT_SETTINGS,
        anywhere: true,
    },
    ProtectedPath {
        name: ".augment",
        bind: Bind::Placeholder,
        why: AGENT_SETTINGS,
        anywhere: true,
    },
    ProtectedPath {
        name: ".kilocode",
        bind: Bind::Placeholder,
        why: AGENT_SETTINGS,
        anywhere: true,
    },
    ProtectedPath {
        name: ".trae",
        bind: Bind::Placeholder,
        why: AGENT_SETTINGS,
        anywhere: true,
    },
    ProtectedPath {
        name: ".nvimrc",
        bind: Bind::Placeholder,
        why: "editor start-up file: Vim and Neovim run it when they open the project (exrc)",
        anywhere: true,
    },
    ProtectedPath {
        name: ".vimrc",
        bind: Bind::Placeholder,
        why: "editor start-up file: Vim runs it when it opens the project (exrc)",
        anywhere: true,
    },
    ProtectedPath {
        name: ".gvimrc",
        bind: Bind::Placeholder,
        why: "editor start-up file: gVim runs it when it opens the project (exrc)",
        anywhere: true,
    },
    ProtectedPath {
        name: ".lazy.lua",
        bind: Bind::Placeholder,
        why: "editor start-up file: Neovim's lazy.nvim runs it when it opens the project",
        anywhere: true,
    },
    ProtectedPath {
        name: ".dir-locals-2.el",
        bind: Bind::Placeholder,
        why: "editor settings: Emacs evaluates them when it opens a file of the project",
        anywhere: true,
    },
    // Every workspace file, whatever its name: VS Code runs its tasks (`runOn: folderOpen`)
    // and settings when it is opened.
    ProtectedPath {
        name: "*.code-workspace",
        bind: Bind::Placeholder,
        why: "an editor workspace: its tasks and settings run programs when it is opened",
        anywhere: true,
    },
    ProtectedPath {
        name: ".devcontainer",
        bind: Bind::Placeholder,
        why: "a dev container definition: editors build and run it, with its commands, when the \
              project is opened",
        anywhere: true,
    },
    ProtectedPath {
        name: ".devcontainer.json",
        bind: Bind::Placeholder,
        why: "a dev container definition: editors build and run it, with its commands, when the \
              project is opened",
        anywhere: true,
    },
    ProtectedPath {
        name: ".yarnrc",
        bind: Bind::Placeholder,
        why: "package manager settings: `yarn-path` runs a program at every yarn command",
        anywhere: true,
    },
    ProtectedPath {
        name: ".pnpmfile.cjs",
        bind: Bind::Placeholder,
        why: "package manager hooks: pnpm runs them at every install",
        anywhere: true,
    },
    ProtectedPath {
        name: ".pnpmfile.mjs",
        bind: Bind::Placeholder,
        why: "package manager hooks: pnpm runs them at every install",
        anywhere: true,
    },
    ProtectedPath {
        name: "mise.toml",
        bind: Bind::Placeholder,
        why: TOOL_VERSIONS,
        anywhere: true,
    },
    ProtectedPath {
        name: ".mise.toml",
        bind: Bind::Placeholder,
        why: TOOL_VERSIONS,
        anywhere: true,
    },
    ProtectedPath {
        name: "mise.local.toml",
        bind: Bind::Placeholder,
        why: TOOL_VERSIONS,
        anywhere: true,
    },
    ProtectedPath {
        name: ".mise.local.toml",
        bind: Bind::Placeholder,
        why: TOOL_VERSIONS,
        anywhere: true,
    },
    // mise and lefthook read their files under `.config` too.
    ProtectedPath {
        name: ".config/mise",
        bind: Bind::Placeholder,
        why: TOOL_VERSIONS,
        anywhere: false,
    },
    ProtectedPath {
        name: ".config/mise.toml",
        bind: Bind::Placeholder,
        why: TOOL_VERSIONS,
        anywhere: false,
    },
    ProtectedPath {
        name: ".config/lefthook.yml",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: false,
    },
    ProtectedPath {
        name: ".config/lefthook.yaml",
        bind: Bind::Placeholder,
        why: HOOK_MANAGER,
        anywhere: false,
    },
    // bun's settings: `preload` scripts run before every `bun run` and `bun test`.
    ProtectedPath {
        name: "bunfig.toml",
        bind: Bind::Placeholder,
        why: "package manager settings: bun runs its preload scripts at every bun run and test",
        anywhere: true,
    },
    ProtectedPath {
        name: ".bunfig.toml",
        bind: Bind::Placeholder,
        why: "package manager settings: bun runs its preload scripts at every bun run and test",
        anywhere: true,
    }, // Found by the thirty-third session's attacker passes: start-up files of interpreters,
    // debuggers and build tools that run what they hold when the person starts the tool in the
    // project (pdb ran a planted `.pdbrc` end to end), and the toolchain and cargo settings
    // that choose which compiler binary runs.
    ProtectedPath {
        name: ".pdbrc",
        bind: Bind::Placeholder,
        why: REPL_START,
        anywhere: true,
    },
    ProtectedPath {
        name: ".irbrc",
        bind: Bind::Placeholder,
        why: REPL_START,
        anywhere: true,
    },
    ProtectedPath {
        name: ".pryrc",
        bind: Bind::Placeholder,
        why: REPL_START,
        anywhere: true,
    },
    ProtectedPath {
        name: ".Rprofile",
        bind: Bind::Placeholder,
        why: REPL_START,
        anywhere: true,
    },
    ProtectedPath {
        name: ".Renviron",
        bind: Bind::Placeholder,
        why: "interpreter settings: R reads them at every start in the directory (R_PROFILE_USER names a file it runs)",
        anywhere: true,
    },
    ProtectedPath {
        name: ".ghci",
        bind: Bind::Placeholder,
        why: REPL_START,
        anywhere: true,
    },
    ProtectedPath {
        name: ".octaverc",
        bind: Bind::Placeholder,
        why: REPL_START,
        anywhere: true,
    },
    ProtectedPath {
        name: ".rvmrc",
        bind: Bind::Placeholder,
        why: "shell hook: RVM sources it when a shell enters the directory",
        anywhere: true,
    },
    ProtectedPath {
        name: ".lldbinit",
        bind: Bind::Placeholder,
        why: "debugger start-up file: lldb runs its commands (`platform shell`, `script`) when started in the directory",
        anywhere: true,
    },
    ProtectedPath {
        name: ".gdbinit",
        bind: Bind::Placeholder,
        why: "debugger start-up file: gdb runs its commands (`shell`, `python`) where its auto-load path allows",
        anywhere: true,
    },
    ProtectedPath {
        name: ".bazelrc",
        bind: Bind::Placeholder,
        why: "build settings: `--run_under` and `--action_env` choose programs bazel runs",
        anywhere: true,
    },
    ProtectedPath {
        name: ".cargo/config.toml",
        bind: Bind::Placeholder,
        why: CARGO_CONFIG,
        anywhere: true,
    },
    ProtectedPath {
        name: ".cargo/config",
        bind: Bind::Placeholder,
        why: CARGO_CONFIG,
        anywhere: true,
    },
    ProtectedPath {
        name: "rust-toolchain.toml",
        bind: Bind::Placeholder,
        why: TOOLCHAIN_FILE,
        anywhere: true,
    },
    ProtectedPath {
        name: "rust-toolchain",
        bind: Bind::Placeholder,
        why: TOOLCHAIN_FILE,
        anywhere: true,
    },
];

/// Why an interpreter's or debugger's start-up file in the project is protected.
const REPL_START: &str = "start-up file: the interpreter or debugger runs what it holds when \
                          the person starts it in the project";
/// Why cargo's settings in the project are protected.
const CARGO_CONFIG: &str = "build settings: `build.rustc-wrapper`, `target.*.runner` and aliases \
                            choose programs every cargo command runs (an editor's too)";
/// Why a Rust toolchain file is protected.
const TOOLCHAIN_FILE: &str = "toolchain choice: a `path` makes every rustc, cargo and rustfmt \
                              started in the project run binaries from that directory";
/// Why a hook manager's files are protected.
const HOOK_MANAGER: &str = "commit hooks: the hook git runs (husky's, lefthook's, overcommit's) \
                            runs what is written here at the next commit or checkout";
/// Why another agent's instruction file is protected.
const INSTRUCTIONS: &str =
    "agent instructions: the next session of another agent takes them as the person's own";
/// Why another agent's settings directory is protected.
const AGENT_SETTINGS: &str = "another agent's settings, rules or MCP servers: they run or \
                              instruct when it opens the project";
/// Why mise's files are protected.
const TOOL_VERSIONS: &str =
    "tool settings: mise runs their hooks and tasks when a shell enters the project";

impl ProtectedPath {
    /// Whether this entry names a class of files (`*.code-workspace`: a leading `*` matches
    /// any name with that ending) rather than one name. The binds and the sweep, which join a
    /// name to a root, see a class only through [`ProtectedPath::matches`].
    pub fn is_class(&self) -> bool {
        self.name.starts_with('*')
    }

    /// Whether `name`, one path component, is this entry (of a one-name entry: the same name;
    /// of a class: any name of it). An entry of two names (`.github/instructions`) matches no
    /// single component: [`protected_entry`] compares it as a path.
    pub fn matches(&self, name: &std::ffi::OsStr) -> bool {
        match self.name.strip_prefix('*') {
            // Without regard to case: a file system that folds case, or an editor that does
            // when it opens `X.CODE-WORKSPACE`, takes it for one of the class.
            Some(ending) => {
                name.as_encoded_bytes().len() >= ending.len()
                    && name.as_encoded_bytes()[name.as_encoded_bytes().len() - ending.len()..]
                        .eq_ignore_ascii_case(ending.as_bytes())
            }
            None => name == self.name,
        }
    }
}

/// The entry of the list that `name`, one component of a path, is; `at_top`: it lies at the
/// top of a writable root, where entries that count only there count too. For actors that look
/// at one name at a time (the sweep's walk).
pub fn entry_named(name: &std::ffi::OsStr, at_top: bool) -> Option<&'static ProtectedPath> {
    PROTECTED_IN_ROOT
        .iter()
        .find(|p| (p.anywhere || at_top) && p.matches(name))
}

/// Whether `name`, one path component, is of a protected class (`*.code-workspace`): what no
/// placeholder stands for, so the binds and the sweep look for it by listing a directory.
pub fn of_a_class(name: &std::ffi::OsStr) -> bool {
    PROTECTED_IN_ROOT
        .iter()
        .any(|entry| entry.is_class() && entry.matches(name))
}

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
/// paths. A class (`*.code-workspace`) has no one path: it is left out here, and found by
/// [`ProtectedPath::matches`] among the names a command created.
pub fn placeholders(root: &Path) -> impl Iterator<Item = std::path::PathBuf> + '_ {
    placeholder_entries().map(move |entry| root.join(entry.name))
}

/// The [`placeholders`] of `root` that may exist: a superset of those that do, from one listing
/// of each directory they lie in (the root, `.github`, `.config`), where a `stat` of each of the
/// ninety-odd names before and after every command used to answer. A name counts when its
/// directory holds an entry of the same name in any case (a case-insensitive file system finds
/// `.ENVRC` for `.envrc`); a directory whose listing cannot be read, or that holds a name outside
/// ASCII (which Unicode case folding or normalisation might match to one of them), leaves every
/// name in it to its `stat`. What is returned still needs its own `stat` to be known present.
pub fn placeholders_that_may_exist(root: &Path) -> Vec<std::path::PathBuf> {
    placeholder_entries_that_may_exist(root)
        .into_iter()
        .map(|entry| root.join(entry.name))
        .collect()
}

/// The entries behind [`placeholders_that_may_exist`].
fn placeholder_entries_that_may_exist(root: &Path) -> Vec<&'static ProtectedPath> {
    use std::collections::{HashMap, HashSet};
    use std::os::unix::ffi::OsStrExt;
    /// The entries of one directory, ASCII-lowercased; `None`: anything may be there.
    fn listing(dir: &Path) -> Option<HashSet<Vec<u8>>> {
        let mut names = HashSet::new();
        for entry in std::fs::read_dir(dir).ok()? {
            let name = entry.ok()?.file_name();
            let bytes = name.as_bytes();
            if !bytes.is_ascii() {
                return None;
            }
            names.insert(bytes.to_ascii_lowercase());
        }
        Some(names)
    }
    let mut listings: HashMap<std::path::PathBuf, Option<HashSet<Vec<u8>>>> = HashMap::new();
    placeholder_entries()
        .filter(|entry| {
            // Each directory on the way must hold the next name (`.github`, then `agents`).
            let mut dir = std::path::PathBuf::new();
            for name in Path::new(entry.name).iter() {
                let held = listings
                    .entry(dir.clone())
                    .or_insert_with(|| listing(&root.join(&dir)))
                    .as_ref()
                    .is_none_or(|names| names.contains(&name.as_bytes().to_ascii_lowercase()));
                if !held {
                    return false;
                }
                dir.push(name);
            }
            true
        })
        .collect()
}

/// The entries of [`PROTECTED_IN_ROOT`] that [`placeholders`] joins to a root.
fn placeholder_entries() -> impl Iterator<Item = &'static ProtectedPath> {
    PROTECTED_IN_ROOT
        .iter()
        .filter(|entry| entry.bind == Bind::Placeholder && !entry.is_class())
}

/// A placeholder of a project that is a symbolic link leading to a place inside the project
/// (`AGENTS.md -> docs/agents.md`, `.vscode -> ide/vscode`): what it leads to is read, run or
/// followed as the placeholder itself is, so every actor that writes treats it as protected
/// too (the file tools, the classifier through `classifier::Context::protected`, and the sweep,
/// which puts it back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkedPlaceholder {
    /// The placeholder, relative to the project (`AGENTS.md`).
    pub link: &'static str,
    /// Where it leads, relative to the project's real path (`docs/agents.md`).
    pub leads_to: std::path::PathBuf,
    /// Why the placeholder is protected.
    pub why: &'static str,
}

/// The placeholders of `root` that are symbolic links leading inside it (see
/// [`LinkedPlaceholder`]). One `lstat` per placeholder a listing does not rule out
/// ([`placeholders_that_may_exist`]), and one `realpath` per link found.
pub fn where_placeholders_lead(root: &Path) -> Vec<LinkedPlaceholder> {
    let Ok(canonical_root) = std::fs::canonicalize(root) else {
        return Vec::new();
    };
    placeholder_entries_that_may_exist(root)
        .into_iter()
        .filter_map(|entry| {
            let path = root.join(entry.name);
            let meta = std::fs::symlink_metadata(&path).ok()?;
            if !meta.file_type().is_symlink() {
                return None;
            }
            let resolved = std::fs::canonicalize(&path).ok()?;
            Some(LinkedPlaceholder {
                link: entry.name,
                leads_to: inside_project(&canonical_root, &resolved)?,
                why: entry.why,
            })
        })
        .collect()
}

/// `resolved`, where a link leads, relative to `root` (both canonical) when it lies inside it:
/// not in the project's `.git` or `.gg`, which have checks of their own, and not the project
/// itself (a placeholder leading to the whole project protects nothing in particular; the sweep
/// watches the link itself).
pub fn inside_project(root: &Path, resolved: &Path) -> Option<std::path::PathBuf> {
    let rel = resolved.strip_prefix(root).ok()?;
    let first = rel.components().next()?;
    (first != Component::Normal(".git".as_ref()) && first != Component::Normal(".gg".as_ref()))
        .then(|| rel.to_path_buf())
}

/// Files under the home directory that no actor may read: a sandboxed command, a command run
/// read-only, gg's file tools, the browser, `kb add`/`library add`, and the bash classifier,
/// which calls naming one a credential read (it gets this list as
/// `classifier::Context::home_credentials`: one list, so no actor knows a secret another does
/// not). By class:
/// - **gg's own state**, all of `~/.gg`: ggd's bearer token (`web.json`), provider keys
///   (`config.json`, `credentials.json`), MCP and connector credentials, and past sessions, whose
///   tool outputs can hold secrets;
/// - **credential stores**: ssh, gpg, cloud and container registries, package registries, git
///   credentials, database clients, password managers and keyrings, other coding agents' logins;
/// - **browser profiles** (cookies and saved passwords);
/// - **shell and REPL history**, which holds what people typed (tokens on command lines
///   included).
#[rustfmt::skip]
pub const DENY_READ_IN_HOME: &[&str] = &[
    // gg's own state. The units `ggd install-service` writes hold ggd's token too.
    ".gg", ".config/gg", ".config/systemd/user/ggd.service",
    "Library/LaunchAgents/com.gg.ggd.plist",
    // Keys and cloud, container and registry credentials.
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".oci", ".config/doctl",
    ".config/hcloud", ".fly", ".docker", ".config/containers/auth.json", ".kube",
    ".terraform.d/credentials.tfrc.json", ".vault-token", ".s3cfg", ".config/rclone",
    ".config/sops",
    // Git hosts and git's own credential store.
    ".config/gh", ".config/hub", ".netrc", ".git-credentials", ".config/git/credentials",
    // Package registries.
    ".npmrc", ".yarnrc.yml", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
    ".gem/credentials", ".m2/settings.xml", ".m2/settings-security.xml",
    // Database clients.
    ".pgpass", ".my.cnf",
    // Password managers and keyrings.
    ".password-store", ".local/share/keyrings", ".config/op",
    // Other coding agents' and assistants' logins.
    ".claude/.credentials.json", ".codex/auth.json", ".gemini/oauth_creds.json",
    ".config/github-copilot", ".config/gh-copilot", ".local/share/opencode/auth.json",
    // A home-wide `.env`.
    ".env",
    // Browser profiles.
    ".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware",
    ".config/microsoft-edge",
    // Shell and REPL history.
    ".bash_history", ".zsh_history", ".zhistory", ".history", ".sh_history",
    ".local/share/fish/fish_history", ".python_history", ".node_repl_history", ".psql_history",
    ".mysql_history", ".sqlite_history", ".rediscli_history", ".lesshst",
    // Found by the thirty-third session's attacker passes, read by a read-only `cat`: more
    // histories (zsh's other default names, atuin's key and database, REPLs', fish's universal
    // variables, which hold exported tokens, and vim's registers) and more services' tokens.
    ".histfile", ".zsh_sessions", ".local/share/zsh", ".local/share/atuin", ".irb_history",
    ".pry_history", ".dbshell", ".viminfo", ".config/fish/fish_variables",
    ".boto", ".databrickscfg", ".pulumi/credentials.json", ".cache/huggingface/token",
    ".huggingface/token", ".kaggle/kaggle.json", ".config/glab-cli",
    ".config/configstore/firebase-tools.json", ".sentryclirc", ".terraformrc",
    ".dbt/profiles.yml", ".config/ngrok", ".ngrok2", ".wrangler", ".config/stripe",
    ".config/netlify", ".config/linode-cli", ".ollama/id_ed25519", ".cloudflared",
    ".gradle/gradle.properties", ".config/heroku", ".local/share/jupyter/runtime",
];

/// Credential stores a variable moves out of the home (`XDG_CONFIG_HOME=/srv/cfg` puts `gh`'s
/// token in `/srv/cfg/gh/hosts.yml`): each variable, and what of it is secret: `""` for all of
/// what it names (a directory or a file; a `:`-separated list for `KUBECONFIG`), else the entry
/// below it. `XDG_CONFIG_HOME` and `XDG_DATA_HOME` take the home list's `.config/` and
/// `.local/share/` entries ([`relocated_credential_stores`]).
pub const RELOCATED_CREDENTIALS: &[(&str, &str)] = &[
    ("GNUPGHOME", ""),
    ("GH_CONFIG_DIR", ""),
    ("DOCKER_CONFIG", ""),
    ("PASSWORD_STORE_DIR", ""),
    ("AZURE_CONFIG_DIR", ""),
    ("CLOUDSDK_CONFIG", ""),
    ("KUBECONFIG", ""),
    ("AWS_SHARED_CREDENTIALS_FILE", ""),
    ("AWS_CONFIG_FILE", ""),
    ("GOOGLE_APPLICATION_CREDENTIALS", ""),
    ("NETRC", ""),
    ("NPM_CONFIG_USERCONFIG", ""),
    ("npm_config_userconfig", ""),
    ("REGISTRY_AUTH_FILE", ""),
    ("RCLONE_CONFIG", ""),
    ("TF_CLI_CONFIG_FILE", ""),
    ("PGPASSFILE", ""),
    ("SOPS_AGE_KEY_FILE", ""),
    ("VAULT_CONFIG_PATH", ""),
    ("HISTFILE", ""),
    ("CARGO_HOME", "credentials"),
    ("CARGO_HOME", "credentials.toml"),
    ("CODEX_HOME", "auth.json"),
    ("CLAUDE_CONFIG_DIR", ".credentials.json"),
];

/// The credential stores that variables (read through `var`) move out of `home`, as absolute
/// paths; a variable naming `/`, the home or a directory above it names no store and is left
/// out (hiding it would hide everything).
pub fn relocated_credential_stores(
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
    home: Option<&Path>,
) -> Vec<std::path::PathBuf> {
    let mut found: Vec<std::path::PathBuf> = Vec::new();
    let mut add = |path: std::path::PathBuf| {
        let too_wide = path == Path::new("/") || home.is_some_and(|h| h.starts_with(&path));
        if path.is_absolute() && !too_wide && !found.contains(&path) {
            found.push(path);
        }
    };
    for (name, below) in RELOCATED_CREDENTIALS {
        let Some(value) = var(name).filter(|v| !v.is_empty()) else {
            continue;
        };
        let values: Vec<std::path::PathBuf> = if *name == "KUBECONFIG" {
            std::env::split_paths(&value).collect()
        } else {
            vec![std::path::PathBuf::from(value)]
        };
        for value in values {
            add(if below.is_empty() {
                value
            } else {
                value.join(below)
            });
        }
    }
    for (name, prefix) in [
        ("XDG_CONFIG_HOME", ".config/"),
        ("XDG_DATA_HOME", ".local/share/"),
    ] {
        let Some(base) = var(name)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
        else {
            continue;
        };
        for rel in DENY_READ_IN_HOME {
            if let Some(rest) = rel.strip_prefix(prefix) {
                add(base.join(rest));
            }
        }
    }
    found
}

/// What the guard of a command run without a sandbox keeps read-only in the home directory
/// where the project is the home or lies above it (`sandbox::guard_writes`; elsewhere the
/// whole home but the project and the caches is read-only to such a command), besides every
/// dot-entry at its top: what a shell, a session, git or an editor reads and runs later,
/// outside any sandbox, named where it may not exist yet (`~/bin` is no dot-entry). Each one
/// also makes the directory holding it list-only to the command: nothing new at the home's
/// top, in `~/.config` or in `~/.local`, so a start-up file absent today cannot be made either.
/// Outside that case the guard also never lets a writable root hold one of them (a cache or
/// `$TMPDIR` around `~/.local/bin`).
pub const KEPT_IN_HOME: &[&str] = &[
    // Shells and sessions.
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".inputrc",
    ".pam_environment",
    ".xprofile",
    ".xsession",
    ".xsessionrc",
    ".xinitrc",
    ".config/fish",
    ".config/environment.d",
    ".config/autostart",
    ".config/systemd",
    ".config/upstart",
    ".local/bin",
    "bin",
    // Tools that run what their configuration names.
    ".gitconfig",
    ".config/git",
    ".vimrc",
    ".gvimrc",
    ".exrc",
    ".vim",
    ".config/nvim",
    ".emacs",
    ".emacs.d",
    ".tmux.conf",
    ".screenrc",
    ".curlrc",
    ".wgetrc",
    ".pdbrc",
    ".pythonrc",
    ".irbrc",
    ".Rprofile",
    ".mailcap",
];

/// The home's package caches a command run without a sandbox may write (`sandbox::guard`),
/// where they exist: the only writable places in the home outside the project. Everything
/// else of the home is read-only to such a command, because no list of the files a shell, a
/// session, a language or an editor reads and runs at start can be complete (`.pth` files in
/// `~/.local/lib`, systemd user units in `~/.local/share`, `~/.cargo/config.toml`,
/// `~/.ipython/profile_default/startup`, `~/.bashrc.d`, an application's own `~/.config`
/// directory: an attacker pass planted each one past a named list).
///
/// What these hold is downloads (packages, their sources and builds) and state, not start-up
/// files: a package manager, a build or a language server must write them for ordinary work
/// (`npm install`, `cargo build`, `go mod download`, `mvn`, `pip`'s and most tools' `~/.cache`,
/// `~/.local/state` for histories and logs), and refusing them would push the person to
/// `--sandbox`-less workarounds. `~/.cache` is `$XDG_CACHE_HOME` where that is set.
///
/// Residual risk, accepted and documented (docs/security-model.md): a cache's contents are
/// compiled or run later by the person's own tools (a crate's sources in `~/.cargo/registry`
/// are built by the next `cargo build` of a project that depends on it, a module in
/// `~/go/pkg/mod` likewise, `~/.cache` holds tools' downloaded programs), so a command can
/// plant code there that runs later on the host. Package managers check hashes of what they
/// download again on some paths but not all; only `--sandbox` (where the caches are not
/// writable) closes it.
pub const WRITABLE_CACHES_IN_HOME: &[&str] = &[
    ".cache",
    ".npm",
    ".cargo/registry",
    ".cargo/git",
    ".m2/repository",
    ".gradle/caches",
    "go/pkg/mod",
    ".pnpm-store",
    ".bun/install/cache",
    ".nuget/packages",
    ".local/state",
];

/// The home's entries the guard keeps read-only ([`KEPT_IN_HOME`], and every dot-file at the
/// top of `home`, the canonical file where one is a link), as absolute paths.
pub fn kept_in_home(home: &Path) -> Vec<std::path::PathBuf> {
    let mut kept: Vec<std::path::PathBuf> = KEPT_IN_HOME.iter().map(|rel| home.join(rel)).collect();
    for entry in crate::watch::read_dir(home).into_iter().flatten().flatten() {
        let is_dot = entry.file_name().as_encoded_bytes().first() == Some(&b'.');
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if !is_dot || kind.is_dir() {
            continue;
        }
        let path = entry.path();
        if kind.is_symlink() {
            // Granted where it leads: a dotfiles repository's file stays read-only too.
            if let Ok(target) = crate::watch::canonicalize(&path)
                && crate::watch::metadata(&target).is_ok_and(|m| m.is_file())
                && !kept.contains(&target)
            {
                kept.push(target);
            }
        }
        if !kept.contains(&path) {
            kept.push(path);
        }
    }
    // The named ones that are links: where they lead, too.
    let targets: Vec<std::path::PathBuf> = KEPT_IN_HOME
        .iter()
        .map(|rel| home.join(rel))
        .filter(|p| crate::watch::symlink_metadata(p).is_ok_and(|m| m.is_symlink()))
        .filter_map(|p| crate::watch::canonicalize(p).ok())
        .collect();
    for target in targets {
        if !kept.contains(&target) && target != home && !home.starts_with(&target) {
            kept.push(target);
        }
    }
    kept
}

/// Whether writing `relative` (a path relative to a writable root, symlinks already resolved)
/// changes a protected entry, and which: a top-level entry, or an entry protected
/// [anywhere](ProtectedPath::anywhere) as any component (a nested repository's hooks run as
/// well, `sub/AGENTS.md` instructs an agent started in `sub`). The agent area is not protected
/// itself, but what is protected anywhere stays protected inside it.
pub fn protected_entry(relative: &Path) -> Option<&'static ProtectedPath> {
    let in_agent_area = relative.starts_with(AGENT_AREA) && relative != Path::new(AGENT_AREA);
    let names: Vec<&std::ffi::OsStr> = relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    (0..names.len())
        // The agent area's own `.gg`.
        .filter(|depth| !(in_agent_area && *depth == 0))
        .find_map(|depth| {
            PROTECTED_IN_ROOT.iter().find(|p| {
                (p.anywhere || depth == 0) && {
                    // An entry of several names (`.github/instructions`) is those names in a
                    // row; one of a single name or a class is that one name.
                    let parts: Vec<&str> = p.name.split('/').collect();
                    match parts.as_slice() {
                        [_] => p.matches(names[depth]),
                        parts => names
                            .get(depth..depth + parts.len())
                            .is_some_and(|here| here.iter().zip(parts).all(|(n, p)| n == p)),
                    }
                }
            })
        })
}

/// A write that plants something no name shows, found by looking at the disk: why writing
/// `relative` (below `root`, symlinks resolved) is a persistence vector, or `None`. `home` is
/// the person's home directory.
/// - **The repository's git directory by another name**: `.git` is a file (`gitdir: gd`, a
///   worktree or `git init --separate-git-dir`) naming a directory inside the project.
/// - **A new git directory**: a directory with `HEAD`, `objects` and `refs` is a repository to
///   git, which then obeys the `config` beside them (`core.fsmonitor` runs a program at the next
///   `git status` there, a shell prompt's included). Writing what completes the three, or
///   anything inside such a directory, is refused.
/// - **The home's configuration**, when the writable root is the home directory or above it:
///   every dot-file and dot-directory of home (shells, `~/.config/autostart`, systemd user units,
///   git, editors: programs read them at login or start, and many run them), and `~/bin`, which
///   a login puts on `PATH`. Deny by default: no list of such files is complete.
pub fn planted(root: &Path, relative: &Path, home: Option<&Path>) -> Option<String> {
    let target = root.join(relative);
    if let Some(git_dir) = pointed_git_dir(root)
        && target.starts_with(&git_dir)
    {
        return Some(format!(
            "inside the repository's git directory ({}, named by .git): its config and hooks \
             make git run programs on the host",
            git_dir.display()
        ));
    }
    let mut child = relative
        .components()
        .next_back()?
        .as_os_str()
        .to_os_string();
    for dir in target.ancestors().skip(1) {
        // The root itself too where it has no `.git` (an attacker pass made the project a bare
        // repository with the file tools: `HEAD`, `objects/`, `refs/` and a `config` with a
        // pager); with one, git takes `.git` and never the root.
        let top = dir == root;
        if !dir.starts_with(root) || (top && std::fs::symlink_metadata(root.join(".git")).is_ok()) {
            break;
        }
        let present =
            |name: &str| child == name || std::fs::symlink_metadata(dir.join(name)).is_ok();
        // A git directory once the write lands: git then obeys its config.
        if is_git_dir_layout(present) {
            return Some(format!(
                "inside {}, a git directory (HEAD with objects and refs, or with a commondir): \
                 git obeys its config and hooks, running programs on the host",
                if top {
                    Path::new(".")
                } else {
                    dir.strip_prefix(root).unwrap_or(dir)
                }
                .display()
            ));
        }
        if top {
            break;
        }
        child = dir
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
    }
    // `.git/config` or `.git/hooks` made a symbolic link into the work tree: what lies behind it
    // is git's, dangling or not (a later write fills it).
    for name in ["config", "config.worktree", "hooks"] {
        let link = root.join(".git").join(name);
        if let Ok(to) = std::fs::read_link(&link) {
            let behind = link.parent().map(|p| p.join(&to)).unwrap_or(to);
            let behind = match (behind.parent(), behind.file_name()) {
                (Some(dir), Some(last)) => std::fs::canonicalize(dir)
                    .map(|d| d.join(last))
                    .unwrap_or_else(|_| behind.clone()),
                _ => behind,
            };
            let canonical_target = target
                .parent()
                .and_then(|d| std::fs::canonicalize(d).ok())
                .zip(target.file_name())
                .map(|(d, n)| d.join(n))
                .unwrap_or_else(|| target.clone());
            if canonical_target.starts_with(&behind) {
                return Some(format!(
                    "behind .git/{name}, a symbolic link to {}: git obeys what is there",
                    behind.display()
                ));
            }
        }
    }
    if let Some(hooks) = hooks_dir(root)
        && target.starts_with(&hooks)
    {
        return Some(format!(
            "inside the repository's hooks directory ({}, git's core.hooksPath): git runs them \
             on the host",
            hooks.strip_prefix(root).unwrap_or(&hooks).display()
        ));
    }
    if let Some(included) = included_configs(root)
        .into_iter()
        .find(|included| target == *included)
    {
        return Some(format!(
            "{}, which the repository's git configuration includes: git obeys it as it obeys \
             .git/config, running the programs it names",
            included.strip_prefix(root).unwrap_or(&included).display()
        ));
    }
    // Compared canonical: `root` is, and a home reached through a symlink (`/home -> usr/home`)
    // must not turn the rule off.
    let home = home
        .filter(|h| h.is_absolute())
        .map(|h| std::fs::canonicalize(h).unwrap_or_else(|_| h.to_path_buf()))?;
    let canonical_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    if let Some(config) = home_config_dir(&canonical_root, &home) {
        return Some(format!(
            "in your home's configuration ({config}, where the project is): programs read it at \
             login or start, and many run it"
        ));
    }
    if !home.starts_with(&canonical_root) {
        return None;
    }
    let below = canonical_root
        .join(relative)
        .strip_prefix(&home)
        .ok()?
        .to_path_buf();
    home_config_name(&below).map(|first| {
        format!(
            "in your home's configuration (~/{first}): programs read it at login or start, and \
             many run it"
        )
    })
}

/// The first name of `below` (a path below home) when it is the home's configuration: a
/// dot-file or dot-directory, or `bin`.
fn home_config_name(below: &Path) -> Option<&str> {
    let first = below
        .components()
        .next()?
        .as_os_str()
        .to_str()
        .unwrap_or(".");
    (first.starts_with('.') || first == "bin").then_some(first)
}

/// git's own test of a git directory (`is_git_directory`), given which names are present:
/// `HEAD`, and `objects` and `refs` beside it or in the directory a `commondir` file names.
/// Shared by the file tools' check here and the sandbox sweep (`tools::persistence`).
pub fn is_git_dir_layout(present: impl Fn(&str) -> bool) -> bool {
    present("HEAD") && (present("commondir") || present("objects") && present("refs"))
}

/// The home dot-directory (or `~/bin`) that `root` lies in, as `~/.config`: a project there is
/// the home's configuration itself (`~/.config/git/config` is git's global configuration,
/// `~/.config/autostart` runs at login), so every write in it is a persistence vector. `home`
/// canonical.
pub fn home_config_dir(root: &Path, home: &Path) -> Option<String> {
    let below = root.strip_prefix(home).ok()?;
    // gg's own stores (`~/.gg/memory`, `~/.gg/artifacts`), written only by gg's tools, under
    // their own rules, and hidden from every command.
    if below.starts_with(".gg") {
        return None;
    }
    home_config_name(below).map(|first| format!("~/{first}"))
}

/// The hooks directory git uses for the repository at `root` when it is not the git
/// directory's own `hooks` (`core.hooksPath`, as husky and lefthook set it: `.husky/_`,
/// `.githooks`) and lies inside `root`: what is written there runs at the person's next
/// commit. Asked of git itself (`git rev-parse --git-path hooks`), so that includes, the global
/// configuration and worktrees count as git counts them; `None` without git or a repository.
pub fn hooks_dir(root: &Path) -> Option<std::path::PathBuf> {
    // git would block opening a config that is a FIFO: not asked (the bounded wait below is
    // for what this does not see, such as an include).
    if std::fs::metadata(root.join(".git/config")).is_ok_and(|m| !m.is_file()) {
        return None;
    }
    let git_variables = std::env::vars_os().any(|(name, _)| moves_git_configuration(&name));
    if hooks_are_the_git_dirs_own(root, &|name| std::env::var_os(name), git_variables) {
        return None;
    }
    // gg's own git runs unconfined: never one a command could have planted in a `PATH`
    // directory it writes (an attacker pass put `git` in the project's `node_modules/.bin`,
    // on `PATH` as a relative entry, and this query ran it with every secret in reach).
    let git = crate::host_program::find("git", &[root])?;
    let text = git_output_within(
        std::process::Command::new(git)
            .env("PATH", crate::host_program::trusted_path(&[root]))
            .arg("-C")
            .arg(root)
            .args(["rev-parse", "--git-path", "hooks"]),
        GIT_QUERY_TIMEOUT,
    )?;
    let path = root.join(text.trim_end_matches('\n'));
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    let relative = path.strip_prefix(std::fs::canonicalize(root).ok()?).ok()?;
    // The git directory's own hooks are protected by name.
    if relative
        .components()
        .next()
        .is_some_and(|c| c.as_os_str() == ".git")
    {
        return None;
    }
    // Joined to `root` as given, which the caller joins paths to.
    Some(root.join(relative))
}

/// Whether git at `root` can only answer `rev-parse --git-path hooks` with the git directory's
/// own `hooks` (protected by name, so [`hooks_dir`] has nothing to add), proven without starting
/// git: no configuration file git reads mentions `hooksPath`, and nothing could bring in one
/// that is not read here. Asking git costs a process (1–2 ms, the largest piece of gg's own part
/// of `gg sandbox -- true`), and nearly every repository sets no hooks directory.
///
/// Every doubt answers false, and git is asked: a `GIT_*` variable (`GIT_CONFIG_*`, `GIT_DIR`
/// and the like move or add configuration), a `.git` that is not a plain directory or has a
/// `commondir` (worktrees, planted layouts), any `include`/`includeIf` or `worktreeConfig` in a
/// file git reads (more files), a file that cannot be read, a `PATH` with a relative entry
/// before git, or a `git` not installed as `PREFIX/bin/git`. git reads its system file at
/// `/etc/gitconfig` for the prefix `/usr`, else `PREFIX/etc/gitconfig` (its Makefile's rule);
/// both are read here whatever the prefix. Then the global files (`~/.gitconfig` and
/// `$XDG_CONFIG_HOME/git/config`, or `~/.config/git/config`) and `.git/config`. A key cannot be
/// split across lines, so the word's absence is the key's.
fn hooks_are_the_git_dirs_own(
    root: &Path,
    var: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    git_variables: bool,
) -> bool {
    if git_variables {
        return false;
    }
    let git_dir = root.join(".git");
    if !std::fs::symlink_metadata(&git_dir).is_ok_and(|m| m.is_dir())
        || std::fs::symlink_metadata(git_dir.join("commondir")).is_ok()
    {
        return false;
    }
    let Some(home) = var("HOME")
        .map(std::path::PathBuf::from)
        .filter(|h| h.is_absolute())
    else {
        return false;
    };
    let xdg_config = match var("XDG_CONFIG_HOME").filter(|x| !x.is_empty()) {
        Some(x) if Path::new(&x).is_absolute() => std::path::PathBuf::from(x),
        Some(_) => return false,
        None => home.join(".config"),
    };
    let Some(prefix) = git_prefix(var("PATH")) else {
        return false;
    };
    let system = if prefix == Path::new("/usr") {
        None
    } else {
        Some(prefix.join("etc/gitconfig"))
    };
    [
        Some(std::path::PathBuf::from("/etc/gitconfig")),
        system,
        Some(home.join(".gitconfig")),
        Some(xdg_config.join("git/config")),
        Some(git_dir.join("config")),
    ]
    .into_iter()
    .flatten()
    .all(|file| says_nothing_of_hooks(&file))
}

/// Whether a variable of this name may change which configuration git reads or what it holds
/// (`GIT_CONFIG_*`, `GIT_DIR`, `GIT_COMMON_DIR` …): every `GIT_*` but those known only to pick
/// an editor, pager, transport setting, trace or identity (`GIT_SSL_CAINFO` is set by many
/// systems' profiles).
fn moves_git_configuration(name: &std::ffi::OsStr) -> bool {
    const HARMLESS: &[&str] = &[
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "GIT_PAGER",
        "GIT_ASKPASS",
        "GIT_TERMINAL_PROMPT",
        "GIT_MERGE_AUTOEDIT",
        "GIT_MERGE_VERBOSITY",
    ];
    const HARMLESS_FAMILIES: &[&str] = &[
        "GIT_SSH",
        "GIT_SSL_",
        "GIT_HTTP_",
        "GIT_CURL_",
        "GIT_TRACE",
        "GIT_AUTHOR_",
        "GIT_COMMITTER_",
    ];
    let Some(name) = name.to_str() else {
        return name.as_encoded_bytes().starts_with(b"GIT_");
    };
    name.starts_with("GIT_")
        && !HARMLESS.contains(&name)
        && !HARMLESS_FAMILIES.iter().any(|f| name.starts_with(f))
}

/// The prefix of the `git` a command named `git` starts (`/usr` for `/usr/bin/git`): the first
/// one on `path`, resolved; `None` where that is not certain.
fn git_prefix(path: Option<std::ffi::OsString>) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    for dir in std::env::split_paths(&path?) {
        if !dir.is_absolute() {
            return None;
        }
        let candidate = dir.join("git");
        match std::fs::metadata(&candidate) {
            Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => {
                let real = std::fs::canonicalize(&candidate).ok()?;
                let bin = real.parent()?;
                return (bin.file_name()? == "bin").then(|| bin.parent().map(Path::to_path_buf))?;
            }
            _ => continue,
        }
    }
    None
}

/// Whether the git configuration file at `path` is absent, or a readable file that names no
/// hooks directory and brings in no other file. Read as every settings file is
/// ([`read_regular`]): a FIFO or device put in its place cannot hang or trigger anything.
fn says_nothing_of_hooks(path: &Path) -> bool {
    match read_regular(path, SETTINGS_LIMIT, LastLink::Follow) {
        Err(Unreadable::Absent(_)) => true,
        Err(_) => false,
        Ok(text) => {
            let text = text.to_ascii_lowercase();
            ["hookspath", "include", "worktreeconfig"]
                .iter()
                .all(|word| !text.windows(word.len()).any(|w| w == word.as_bytes()))
        }
    }
}

/// The files inside `root`'s work tree that the repository's git configuration includes
/// (`[include] path =`, `[includeIf "…"] path =`, whatever the condition, followed through the
/// files they name, as git does, ten deep), present or not: git obeys them as it obeys
/// `.git/config` (an attacker pass wrote `core.fsmonitor` into `team.gitconfig`, which the
/// person's `include.path = ../team.gitconfig` named). Not those inside the git directory,
/// protected by name.
pub fn included_configs(root: &Path) -> Vec<std::path::PathBuf> {
    let Some(git_dir) = pointed_git_dir(root).or_else(|| {
        std::fs::symlink_metadata(root.join(".git"))
            .is_ok_and(|m| m.is_dir())
            .then(|| root.join(".git"))
    }) else {
        return Vec::new();
    };
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let Ok(real_root) = std::fs::canonicalize(root) else {
        return Vec::new();
    };
    let real_git = std::fs::canonicalize(&git_dir).unwrap_or(git_dir.clone());
    let mut seen: Vec<std::path::PathBuf> = Vec::new();
    let mut found = Vec::new();
    let mut queue: Vec<(std::path::PathBuf, usize)> = vec![
        (git_dir.join("config"), 0),
        (git_dir.join("config.worktree"), 0),
    ];
    while let Some((file, depth)) = queue.pop() {
        if depth > 10 || seen.contains(&file) {
            continue;
        }
        seen.push(file.clone());
        if depth > 0 {
            // Where it really lies (its directory resolved; the file itself may not exist).
            let real = match (file.parent(), file.file_name()) {
                (Some(dir), Some(name)) => std::fs::canonicalize(dir)
                    .map(|d| d.join(name))
                    .unwrap_or_else(|_| file.clone()),
                _ => file.clone(),
            };
            if !real.starts_with(&real_git)
                && let Ok(below) = real.strip_prefix(&real_root)
            {
                let path = root.join(below);
                if !found.contains(&path) {
                    found.push(path);
                }
            }
        }
        let Ok(text) = read_settings_text(&file) else {
            continue;
        };
        let base = file.parent().unwrap_or(Path::new("/")).to_path_buf();
        for include in include_paths(&text) {
            let target = if let Some(rest) = include.strip_prefix("~/") {
                match &home {
                    Some(h) => h.join(rest),
                    None => continue,
                }
            } else {
                base.join(&include)
            };
            queue.push((target, depth + 1));
        }
    }
    found
}

/// The values of `path` in `[include]` and `[includeIf …]` sections of a git configuration
/// text (quotes removed; enough of git's syntax for the paths people write).
fn include_paths(text: &str) -> Vec<String> {
    let mut in_include = false;
    let mut paths = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let name = header
                .split(|c: char| c == ']' || c == '"' || c.is_whitespace() || c == '.')
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            in_include = name == "include" || name == "includeif";
            continue;
        }
        if !in_include {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim().eq_ignore_ascii_case("path") {
            let value = value.split(['#', ';']).next().unwrap_or("").trim();
            let value = value.trim_matches('"');
            if !value.is_empty() {
                paths.push(value.to_string());
            }
        }
    }
    paths
}

/// Whether [`read_regular`] follows a symbolic link at the path's last component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LastLink {
    /// Followed, as git and editors follow a linked config.
    Follow,
    /// Refused: the file itself must be regular (gg's own stores, git's files in the sweep).
    Refuse,
}

/// Why [`read_regular`] read nothing.
#[derive(Debug)]
pub enum Unreadable {
    /// Nothing at the path, or a parent is not a directory.
    Absent(std::io::Error),
    /// Something other than a regular file: what it is ("a FIFO", "a device", ...).
    NotRegular(&'static str),
    /// More than the limit, in bytes.
    TooLarge(u64),
    /// Any other failure of the look, the open or the read.
    Failed(std::io::Error),
}

impl Unreadable {
    /// As an `io::Error`: the system's own error as it is (`NotFound` stays `NotFound`); a file
    /// that is not regular is `InvalidInput` and too large is `FileTooLarge`, both naming `path`.
    pub fn into_io(self, path: &Path) -> std::io::Error {
        use std::io::{Error, ErrorKind};
        let shown = path.display();
        match self {
            Unreadable::Absent(e) | Unreadable::Failed(e) => e,
            Unreadable::NotRegular(kind) => Error::new(
                ErrorKind::InvalidInput,
                format!("{shown} is {kind}, not a regular file"),
            ),
            Unreadable::TooLarge(limit) => Error::new(
                ErrorKind::FileTooLarge,
                format!("{shown} is larger than {limit} bytes"),
            ),
        }
    }
}

/// Reads a file a command may have made or replaced, so that it can neither hang gg nor do
/// anything on open: a FIFO blocked gg's start forever (every later run in the project, and
/// ggd) and the sweep after a command, a device would never end, and opening some devices does
/// something (`/dev/watchdog` arms the watchdog). The one reader of such files (settings,
/// instructions, skills, git's config and pointers, the sweep's snapshots, gg's own stores):
/// - the path is looked at first, and anything but a regular file is never opened;
/// - the open does not wait (`O_NONBLOCK`, `O_NOCTTY`), and with [`LastLink::Refuse`] does not
///   follow a link (`O_NOFOLLOW`);
/// - what was opened is looked at again (it may have been swapped in between);
/// - more than `limit` bytes is an error, not a truncated read.
pub fn read_regular(path: &Path, limit: u64, links: LastLink) -> Result<Vec<u8>, Unreadable> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let kind = |file_type: std::fs::FileType| {
        if file_type.is_file() {
            None
        } else if file_type.is_symlink() {
            Some("a symbolic link")
        } else if file_type.is_fifo() {
            Some("a FIFO")
        } else if file_type.is_dir() {
            Some("a directory")
        } else if file_type.is_socket() {
            Some("a socket")
        } else if file_type.is_char_device() || file_type.is_block_device() {
            Some("a device")
        } else {
            Some("something else")
        }
    };
    let absent_or_failed = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) {
            Unreadable::Absent(e)
        } else {
            Unreadable::Failed(e)
        }
    };
    let look = match links {
        LastLink::Follow => std::fs::metadata(path),
        LastLink::Refuse => std::fs::symlink_metadata(path),
    };
    if let Some(kind) = kind(look.map_err(absent_or_failed)?.file_type()) {
        return Err(Unreadable::NotRegular(kind));
    }
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
    if links == LastLink::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) && links == LastLink::Refuse => {
            return Err(Unreadable::NotRegular("a symbolic link"));
        }
        Err(e) => return Err(absent_or_failed(e)),
    };
    let meta = file.metadata().map_err(Unreadable::Failed)?;
    if let Some(kind) = kind(meta.file_type()) {
        return Err(Unreadable::NotRegular(kind));
    }
    // Room for what the file holds, and the byte past the limit that tells it is too large:
    // read through `take`, an empty vector grew from 32 bytes, a `read` a step (four for a
    // 92-byte `.git/config`); with room, one `read` and one that finds the end.
    let room = usize::try_from(meta.len().min(limit).saturating_add(1)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(room);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Unreadable::Failed)?;
    if bytes.len() as u64 > limit {
        return Err(Unreadable::TooLarge(limit));
    }
    Ok(bytes)
}

/// A file gg takes settings or instructions from (the project's `.gg/settings.json` and
/// `.gg/policy.toml`, `AGENTS.md`, a skill, git's config and `.git` pointer), read with
/// [`read_regular`], links followed as git and editors follow them.
pub fn read_settings_file(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    read_regular(path, limit, LastLink::Follow).map_err(|e| e.into_io(path))
}

/// [`read_settings_file`] as text (invalid UTF-8 is an error), at most [`SETTINGS_LIMIT`].
pub fn read_settings_text(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read_settings_file(path, SETTINGS_LIMIT)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// How much of a settings, policy or config file gg reads: far above any real one.
pub const SETTINGS_LIMIT: u64 = 4 << 20;

/// How long gg waits for a `git rev-parse` it asks: milliseconds normally; a config a command
/// made a FIFO (git blocks opening it) must not stop gg.
const GIT_QUERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// Runs `command` (a git query) and returns its standard output when it succeeds within
/// `timeout`; kills it otherwise.
fn git_output_within(
    command: &mut std::process::Command,
    timeout: std::time::Duration,
) -> Option<String> {
    use std::io::Read;
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut text = String::new();
        let read = stdout.read_to_string(&mut text).map(|_| text);
        let _ = send.send(read);
    });
    match receive.recv_timeout(timeout) {
        Ok(Ok(text)) => child.wait().ok()?.success().then_some(text),
        _ => {
            // Stuck (or unreadable output): end it; the answer is unknown.
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    }
}

/// The git directory a `.git` pointer file at `root` names, when it lies inside `root` (a
/// `.git` directory is matched by name).
fn pointed_git_dir(root: &Path) -> Option<std::path::PathBuf> {
    let dot_git = root.join(".git");
    if !std::fs::symlink_metadata(&dot_git).ok()?.is_file() {
        return None;
    }
    let text = read_settings_text(&dot_git).ok()?;
    let pointer = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let dir = std::fs::canonicalize(root.join(pointer)).ok()?;
    let root = std::fs::canonicalize(root).ok()?;
    // Relative to `root` as given, which the caller joins paths to.
    dir.strip_prefix(&root).ok().map(|rel| root.join(rel))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The listing answers as a `stat` of each placeholder would, up to names that may exist:
    /// every placeholder that exists is among them (in any case, below `.github`), none that
    /// cannot; a directory holding a name outside ASCII leaves all of its names to their `stat`.
    #[test]
    fn placeholders_that_may_exist_hold_every_one_that_does() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        std::fs::write(root.join("AGENTS.md"), "").unwrap();
        std::fs::write(root.join(".ENVRC"), "").unwrap();
        std::fs::create_dir_all(root.join(".github/agents")).unwrap();
        std::fs::write(root.join("unrelated.txt"), "").unwrap();
        let may = placeholders_that_may_exist(root);
        for path in placeholders(root) {
            if std::fs::symlink_metadata(&path).is_ok() {
                assert!(may.contains(&path), "{}", path.display());
            }
        }
        for name in ["AGENTS.md", ".envrc", ".github/agents"] {
            assert!(may.contains(&root.join(name)), "{name}: {may:?}");
        }
        for name in [
            "CLAUDE.md",
            ".vscode",
            ".github/prompts",
            ".config/mise.toml",
        ] {
            assert!(!may.contains(&root.join(name)), "{name}: {may:?}");
        }
        std::fs::write(root.join(".github/caf\u{e9}"), "").unwrap();
        let may = placeholders_that_may_exist(root);
        assert!(may.contains(&root.join(".github/prompts")), "{may:?}");
        assert!(!may.contains(&root.join("CLAUDE.md")), "{may:?}");
    }

    /// Settings files are regular files: a FIFO (which would block the open) and a device
    /// (whose open may do something) are refused, through a link too, and a long file is an
    /// error, not a partial read.
    /// The hooks question answered without git agrees with git: wherever it says "the git
    /// directory's own", git says `.git/hooks`; every way a configuration sets or brings in a
    /// hooks directory (each checked to move git's answer) or moves the configuration makes it
    /// ask git; and a repository without a setting is answered (else it saves nothing), where
    /// this machine's system configuration is quiet.
    #[test]
    fn hooks_answered_without_git_agree_with_git() {
        let path = std::env::var_os("PATH").unwrap();
        let system_quiet = says_nothing_of_hooks(Path::new("/etc/gitconfig"))
            && git_prefix(Some(path.clone()))
                .is_some_and(|p| says_nothing_of_hooks(&p.join("etc/gitconfig")));
        let hooks_set = "[core]\n\thooksPath = .githooks\n";
        // (name, files to write relative to the case's directory, XDG_CONFIG_HOME, GIT_* set,
        // whether git's answer moves)
        #[allow(clippy::type_complexity)]
        let cases: &[(&str, &[(&str, &str)], Option<&str>, bool, bool)] = &[
            ("plain", &[], None, false, false),
            (
                "plain, other settings",
                &[(
                    "home/.gitconfig",
                    "[user]\n\tname = x\n[core]\n\tpager = less\n",
                )],
                None,
                false,
                false,
            ),
            (
                "local",
                &[("repo/.git/config", hooks_set)],
                None,
                false,
                true,
            ),
            (
                "local, other case",
                &[("repo/.git/config", "[CORE]\n\tHOOKSPATH = .githooks\n")],
                None,
                false,
                true,
            ),
            (
                "global",
                &[("home/.gitconfig", hooks_set)],
                None,
                false,
                true,
            ),
            (
                "home's config dir",
                &[("home/.config/git/config", hooks_set)],
                None,
                false,
                true,
            ),
            (
                "XDG_CONFIG_HOME",
                &[("xdg/git/config", hooks_set)],
                Some("xdg"),
                false,
                true,
            ),
            (
                "local include",
                &[
                    (
                        "repo/.git/config",
                        "[include]\n\tpath = ../team.gitconfig\n",
                    ),
                    ("repo/team.gitconfig", hooks_set),
                ],
                None,
                false,
                true,
            ),
            (
                "global includeIf",
                &[
                    (
                        "home/.gitconfig",
                        "[includeIf \"gitdir:/\"]\n\tpath = ~/more.gitconfig\n",
                    ),
                    ("home/more.gitconfig", hooks_set),
                ],
                None,
                false,
                true,
            ),
            (
                "worktree config",
                &[
                    (
                        "repo/.git/config",
                        "[extensions]\n\tworktreeConfig = true\n[core]\n\trepositoryformatversion = 1\n",
                    ),
                    ("repo/.git/config.worktree", hooks_set),
                ],
                None,
                false,
                true,
            ),
            ("a GIT_ variable", &[], None, true, false),
        ];
        for (name, files, xdg, git_variables, moves) in cases {
            let t = tempfile::tempdir().unwrap();
            let dir = std::fs::canonicalize(t.path()).unwrap();
            let (home, repo) = (dir.join("home"), dir.join("repo"));
            std::fs::create_dir_all(&home).unwrap();
            let git = |args: &[&str]| {
                let mut c = std::process::Command::new("git");
                c.env_clear()
                    .env("HOME", &home)
                    .env("PATH", &path)
                    .args(args);
                if let Some(x) = xdg {
                    c.env("XDG_CONFIG_HOME", dir.join(x));
                }
                c.output().unwrap()
            };
            assert!(
                git(&["init", "-q", repo.to_str().unwrap()])
                    .status
                    .success()
            );
            for (file, text) in *files {
                let file = dir.join(file);
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                let mut old = std::fs::read_to_string(&file).unwrap_or_default();
                old.push_str(text);
                std::fs::write(&file, old).unwrap();
            }
            let var = |n: &str| match n {
                "HOME" => Some(home.clone().into_os_string()),
                "PATH" => Some(path.clone()),
                "XDG_CONFIG_HOME" => xdg.map(|x| dir.join(x).into_os_string()),
                _ => None,
            };
            let answered = hooks_are_the_git_dirs_own(&repo, &var, *git_variables);
            let said = git(&[
                "-C",
                repo.to_str().unwrap(),
                "rev-parse",
                "--git-path",
                "hooks",
            ]);
            let said = String::from_utf8_lossy(&said.stdout).trim_end().to_string();
            if answered {
                assert_eq!(said, ".git/hooks", "{name}");
            }
            assert_eq!(
                said != ".git/hooks",
                *moves,
                "{name}: the case does what it says: {said}"
            );
            if !moves && !git_variables && system_quiet {
                assert!(answered, "{name}: answered without git");
            }
            if *moves || *git_variables {
                assert!(!answered, "{name}: git must be asked");
            }
        }
        // A `.git` file (a worktree's) and a `commondir`: git is asked.
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("wt");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::write(repo.join(".git"), "gitdir: /elsewhere\n").unwrap();
        let var = |n: &str| {
            (n == "PATH")
                .then(|| path.clone())
                .or_else(|| (n == "HOME").then(|| t.path().as_os_str().to_owned()))
        };
        assert!(!hooks_are_the_git_dirs_own(&repo, &var, false));
        std::fs::remove_file(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(repo.join(".git/commondir"), "../../main/.git\n").unwrap();
        assert!(!hooks_are_the_git_dirs_own(&repo, &var, false));
        // A FIFO in a configuration file's place is neither waited on nor taken as quiet.
        let fifo = t.path().join(".gitconfig");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert!(!says_nothing_of_hooks(&fifo));
        // Variables that pick an editor or an identity do not move the configuration.
        for harmless in [
            "GIT_EDITOR",
            "GIT_SSL_CAINFO",
            "GIT_SSH_COMMAND",
            "GIT_AUTHOR_NAME",
        ] {
            assert!(!moves_git_configuration(std::ffi::OsStr::new(harmless)));
        }
        assert!(moves_git_configuration(std::ffi::OsStr::new(
            "GIT_CONFIG_GLOBAL"
        )));
        for moving in [
            "GIT_DIR",
            "GIT_CONFIG",
            "GIT_CONFIG_COUNT",
            "GIT_COMMON_DIR",
            "GIT_X",
        ] {
            assert!(moves_git_configuration(std::ffi::OsStr::new(moving)));
        }
    }

    #[test]
    fn settings_are_read_from_regular_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("settings.json");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        let err = read_settings_file(&link, 10).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
        let big = dir.path().join("big.json");
        std::fs::write(&big, "x".repeat(11)).unwrap();
        assert!(read_settings_file(&big, 10).is_err());
        std::fs::write(&big, "x".repeat(10)).unwrap();
        assert_eq!(read_settings_file(&big, 10).unwrap().len(), 10);
    }

    /// The one reader: a FIFO, a device, a directory or (with `Refuse`) a link is named, never
    /// waited on; what is absent is `Absent` (a parent that is a file too); the limit holds.
    #[test]
    fn only_regular_files_are_read_and_nothing_waits() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        let fifo = at("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        std::os::unix::fs::symlink(&fifo, at("to-fifo")).unwrap();
        std::os::unix::fs::symlink("/dev/null", at("to-null")).unwrap();
        std::fs::write(at("file"), "12345").unwrap();
        std::os::unix::fs::symlink(at("file"), at("to-file")).unwrap();
        let kind = |path: &Path, links| match read_regular(path, 5, links) {
            Err(Unreadable::NotRegular(kind)) => Some(kind),
            _ => None,
        };
        for links in [LastLink::Follow, LastLink::Refuse] {
            assert_eq!(kind(&fifo, links), Some("a FIFO"));
            assert_eq!(kind(Path::new("/dev/null"), links), Some("a device"));
            assert_eq!(kind(dir.path(), links), Some("a directory"));
            assert!(matches!(
                read_regular(&at("absent"), 5, links),
                Err(Unreadable::Absent(_))
            ));
            assert!(matches!(
                read_regular(&at("file/below"), 5, links),
                Err(Unreadable::Absent(_))
            ));
            assert_eq!(read_regular(&at("file"), 5, links).unwrap(), b"12345");
            assert!(matches!(
                read_regular(&at("file"), 4, links),
                Err(Unreadable::TooLarge(4))
            ));
        }
        assert_eq!(kind(&at("to-fifo"), LastLink::Follow), Some("a FIFO"));
        assert_eq!(kind(&at("to-null"), LastLink::Follow), Some("a device"));
        assert_eq!(
            read_regular(&at("to-file"), 5, LastLink::Follow).unwrap(),
            b"12345"
        );
        for link in ["to-fifo", "to-null", "to-file"] {
            assert_eq!(
                kind(&at(link), LastLink::Refuse),
                Some("a symbolic link"),
                "{link}"
            );
        }
        let err = Unreadable::NotRegular("a FIFO").into_io(&fifo);
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        assert!(
            err.to_string().ends_with("is a FIFO, not a regular file"),
            "{err}"
        );
    }

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
        assert_eq!(protected_entry(Path::new(".github/workflows/ci.yml")), None);
        // What an agent, editor or git started in a subdirectory reads, at any depth.
        for (path, name) in [
            ("sub/AGENTS.md", "AGENTS.md"),
            ("a/b/.agents/skills/x/SKILL.md", ".agents"),
            ("sub/.envrc", ".envrc"),
            ("sub/.vscode/tasks.json", ".vscode"),
            ("docs/.gg/policy.toml", ".gg"),
            ("sub/.claude/settings.json", ".claude"),
            ("sub/CLAUDE.md", "CLAUDE.md"),
            // Inside the agent area too.
            (".gg/agent/w/.git/config", ".git"),
            (".gg/agent/AGENTS.md", "AGENTS.md"),
        ] {
            assert_eq!(
                protected_entry(Path::new(path)).map(|p| p.name),
                Some(name),
                "{path}"
            );
        }
        // Shell start-up files matter only in home: at the top.
        assert_eq!(protected_entry(Path::new("sub/.bashrc")), None);
        assert_eq!(
            protected_entry(Path::new(".bashrc")).map(|p| p.name),
            Some(".bashrc")
        );
    }

    /// Found by an attacker pass (s24): each of these was written by the file tools under
    /// `--yolo` and by a sandboxed command at both levels, and ran code or instructed later.
    #[test]
    fn hook_managers_other_repositories_agents_and_editors_are_protected() {
        for path in [
            ".husky/pre-commit",
            ".husky/post-checkout",
            "web/.husky/pre-commit",
            "lefthook.yml",
            ".lefthook.yml",
            "lefthook-local.yml",
            ".lefthook/pre-commit/x.sh",
            ".overcommit.yml",
            ".hg/hgrc",
            "vendor/x/.hg/hgrc",
            ".jj/repo/config.toml",
            ".cursorrules",
            "sub/.cursorrules",
            ".rules",
            "AGENT.md",
            "CLAUDE.local.md",
            "sub/CLAUDE.local.md",
            "AGENTS.override.md",
            "sub/AGENTS.override.md",
            ".github/instructions/x.instructions.md",
            ".junie/guidelines.md",
            ".qwen/settings.json",
            ".amazonq/mcp.json",
            ".codex/config.toml",
            ".openhands/setup.sh",
            ".nvimrc",
            ".vimrc",
            ".dir-locals-2.el",
            "app.code-workspace",
            "sub/x.code-workspace",
            ".devcontainer/devcontainer.json",
            ".yarnrc",
            ".pnpmfile.cjs",
        ] {
            assert!(protected_entry(Path::new(path)).is_some(), "{path}");
        }
        // A class matches by its ending only; a two-name entry only as those names in a row,
        // at the top.
        for path in [
            "code-workspace.md",
            "x.code-workspace.bak/y",
            ".github/workflows/ci.yml",
            "instructions/x.md",
            "sub/.github/instructions/x.instructions.md",
            ".github/x/instructions/y",
        ] {
            assert_eq!(protected_entry(Path::new(path)), None, "{path}");
        }
        let workspace = entry_named(std::ffi::OsStr::new("a.code-workspace"), false);
        assert_eq!(workspace.map(|p| p.name), Some("*.code-workspace"));
        assert_eq!(entry_named(std::ffi::OsStr::new(".bashrc"), false), None);
        assert!(entry_named(std::ffi::OsStr::new(".bashrc"), true).is_some());
        // Every entry joined to a root by the binds and the sweep is a relative path of plain
        // names; a class is left out of the placeholders (no one path is it).
        let root = Path::new("/r");
        for entry in PROTECTED_IN_ROOT {
            assert!(
                Path::new(entry.name)
                    .components()
                    .all(|c| matches!(c, Component::Normal(_))),
                "{}",
                entry.name
            );
        }
        assert!(placeholders(root).all(|p| !p.to_string_lossy().contains('*')));
        assert!(placeholders(root).any(|p| p == Path::new("/r/.hg")));
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
    fn planted_git_directories_and_home_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("vendor/lib/objects/info")).unwrap();
        std::fs::write(root.join("vendor/lib/HEAD"), "ref: refs/heads/main\n").unwrap();
        // HEAD and objects are there: refs completes a git directory, whatever is written in it.
        assert!(planted(root, Path::new("vendor/lib/refs/heads/.keep"), None).is_some());
        assert!(planted(root, Path::new("vendor/lib/config"), None).is_none());
        std::fs::create_dir(root.join("vendor/lib/refs")).unwrap();
        assert!(planted(root, Path::new("vendor/lib/config"), None).is_some());
        assert!(planted(root, Path::new("vendor/lib/objects/info/packs"), None).is_some());
        assert!(planted(root, Path::new("vendor/other/config"), None).is_none());
        assert!(planted(root, Path::new("src/main.rs"), None).is_none());

        // `.git` naming a directory inside the project.
        std::fs::create_dir_all(root.join("gd/hooks")).unwrap();
        std::fs::write(root.join(".git"), "gitdir: gd\n").unwrap();
        assert!(planted(root, Path::new("gd/hooks/pre-commit"), None).is_some());
        assert!(planted(root, Path::new("gd/config"), None).is_some());
        assert!(planted(root, Path::new("gdx/config"), None).is_none());

        // The home's dot-files, when the root is home or above it; not in a project below it.
        let home = root.join("home");
        std::fs::create_dir_all(home.join(".local/src/proj")).unwrap();
        for path in [
            ".config/autostart/x.desktop",
            ".bash_login",
            ".local/bin/git",
            "bin/ls",
        ] {
            assert!(
                planted(&home, Path::new(path), Some(&home)).is_some(),
                "{path}"
            );
            assert!(planted(root, &Path::new("home").join(path), Some(&home)).is_some());
        }
        assert!(planted(&home, Path::new("notes.txt"), Some(&home)).is_none());
        let project = home.join("src/proj");
        std::fs::create_dir_all(&project).unwrap();
        assert!(planted(&project, Path::new("src/x.rs"), Some(&home)).is_none());
        assert!(planted(&project, Path::new(".config/x"), Some(&home)).is_none());
        // A project inside a dot-directory of home is the home's configuration (`~/.config`
        // kept as a dotfiles repository: `git/config` there is git's global configuration):
        // deny by default, every write.
        for inside in [".config", ".local/src/proj"] {
            let project = home.join(inside);
            assert!(
                planted(&project, Path::new("git/config"), Some(&home)).is_some(),
                "{inside}"
            );
        }
        // A home reached through a symbolic link counts as the home.
        let link = root.join("homelink");
        std::os::unix::fs::symlink(&home, &link).unwrap();
        assert!(planted(&home, Path::new(".bash_login"), Some(&link)).is_some());
        // A git directory split in two: `HEAD` beside a `commondir` naming where `objects` and
        // `refs` are (git's own test), whose config git obeys.
        std::fs::create_dir_all(root.join("tools")).unwrap();
        std::fs::write(root.join("tools/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(planted(root, Path::new("tools/commondir"), None).is_some());
        std::fs::write(root.join("tools/commondir"), "../common\n").unwrap();
        assert!(planted(root, Path::new("tools/config.worktree"), None).is_some());
    }

    #[test]
    fn the_first_entry_is_the_git_directory() {
        assert_eq!(PROTECTED_IN_ROOT[0].name, ".git");
        assert_eq!(PROTECTED_IN_ROOT[0].bind, Bind::GitDir);
    }
}

#[cfg(test)]
mod kept_in_home_tests {
    use super::*;

    #[test]
    fn every_dot_file_at_the_top_and_where_a_linked_one_leads_is_kept_but_not_dot_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::write(home.join(".unknownrc"), "x").unwrap();
        std::fs::write(home.join("notes.txt"), "x").unwrap();
        std::fs::create_dir_all(home.join(".cache")).unwrap();
        std::fs::create_dir_all(home.join("dotfiles")).unwrap();
        std::fs::write(home.join("dotfiles/bashrc"), "x").unwrap();
        std::os::unix::fs::symlink("dotfiles/bashrc", home.join(".bashrc")).unwrap();
        let kept = kept_in_home(&home);
        for path in [
            ".unknownrc",
            ".bashrc",
            "dotfiles/bashrc",
            ".zshenv",
            ".config/git",
        ] {
            assert!(kept.contains(&home.join(path)), "{path}: {kept:?}");
        }
        for path in ["notes.txt", ".cache", "dotfiles"] {
            assert!(!kept.contains(&home.join(path)), "{path}: {kept:?}");
        }
    }
}
