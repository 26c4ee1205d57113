//! Bash command text → [`Verdict`] (read-only, normal or dangerous) with reasons.
//!
//! This crate is the single place where gg decides what a bash command *is*. It is pure: no I/O,
//! no async, no global state. Everything it needs to know about the world (working directory,
//! home, scratch directories, the repository's git config, policy-file prefixes) arrives in
//! [`Context`].
//!
//! It is a guard against mistakes and prompt injection, not a security boundary: the sandbox is.
//!
//! Layout: `text` cleans the input (invisible characters), `walk` walks the tree-sitter tree and
//! finds every command with what feeds its input, `word` normalises words, `paths` resolves
//! write targets, `rules` holds the rule families (one module each, table-driven; `rules::args`
//! parses options the way getopt does, `rules::interp` reads Python and JavaScript one-liners with
//! their grammars), `ids` lists every rule id,
//! `gitconfig` reads repository config, `fallback` scans text that does not parse.
#![forbid(unsafe_code)]

mod evaluation;
mod fallback;
mod gitconfig;
mod ids;
mod paths;
mod pattern;
mod rules;
mod text;
mod walk;
mod word;

use std::path::{Path, PathBuf};

use ids::RuleId;

/// How much care a command needs. Ordered: a script's class is the maximum over its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// Clearly side-effect free; never asks in any mode.
    ReadOnly,
    /// Everything else; follows the approval mode.
    Normal,
    /// Always needs a person to confirm.
    Dangerous,
}

impl Class {
    /// The stable name used in JSON and human output: `read-only`, `normal`, `dangerous`.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::ReadOnly => "read-only",
            Class::Normal => "normal",
            Class::Dangerous => "dangerous",
        }
    }
}

/// Why a verdict is what it is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Reason {
    /// Stable rule id, e.g. `rm.recursive-force-root`, `download.pipe-to-shell`.
    pub rule: String,
    /// The class this reason pushes the script to.
    #[serde(skip)]
    pub class: Class,
    /// Human explanation.
    pub message: String,
    /// Byte span `[start, end)` in the original input that triggered the rule.
    pub span: (usize, usize),
}

/// One simple command the text can run, after normalisation and wrapper unwrapping.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FoundCommand {
    /// Normalised argv (quotes removed, `$'..'` decoded, program path reduced to its base name
    /// where that is how rules match it). A word that could not be resolved statically keeps its
    /// source text.
    pub argv: Vec<String>,
    /// Byte span of the command in the original input.
    pub span: (usize, usize),
}

/// The classifier's answer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Verdict {
    /// The highest class among `reasons`; read-only when there are none.
    pub class: Class,
    /// Why, most severe first. Empty for a read-only verdict; otherwise at least one reason has
    /// the verdict's class.
    pub reasons: Vec<Reason>,
    /// Every simple command found, wrapper payloads included, in source order.
    pub commands: Vec<FoundCommand>,
}

/// What the classifier may know about the world. Built by the caller, which does the I/O.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The working directory that relative paths resolve against.
    pub cwd: PathBuf,
    /// The user's home directory (`~`, `$HOME`).
    pub home: PathBuf,
    /// Directories where writes are harmless (`/tmp`, `$TMPDIR`).
    pub scratch_dirs: Vec<PathBuf>,
    /// The repository's git configuration as read by the caller (`.git/config` and its includes).
    pub git_config: GitConfig,
    /// Extra rules from policy files.
    pub rules: ExtraRules,
    /// Paths whose modification needs a person (the repository's `.git/`, gg's `.gg/` settings).
    /// The caller derives them from the same list the sandbox binds read-only, so the bash
    /// classifier, the file tools and the sandbox cannot drift apart. Empty means none.
    pub protected: Vec<Protected>,
    /// Programs that the repository itself decides the binary of, with why: `cargo` under a
    /// `rust-toolchain.toml` naming a path toolchain, anything found through a relative `PATH`
    /// entry. The caller finds them (it does the I/O); running one is never read-only.
    pub repo_programs: Vec<(String, String)>,
    /// Where git, run in a directory below `cwd` (`cd sub && git diff`, `git -C sub log`), may
    /// find a repository other than the one `git_config` was read from: every directory below
    /// `cwd` that holds a `.git` entry (a nested repository, a submodule) or looks like a git
    /// directory itself (a `HEAD` entry: git takes such a directory for a bare repository), every
    /// symbolic link (the classifier resolves paths lexically and cannot follow one) and every
    /// directory the caller did not read. Absolute paths; git in a directory at or below any of
    /// them is not trusted. `None` (the default): the caller did not look, and git is trusted in
    /// `cwd` only.
    pub nested_git: Option<Vec<PathBuf>>,
    /// Symbolic links below `cwd` the caller found, each with where it points (absolute,
    /// lexically normalised; a relative target taken from the link's directory). A path at or
    /// below one is judged where it leads, as the kernel will open it: a cloned repository's
    /// `shellrc -> ~/.bashrc` makes `echo x >> shellrc` a write to `~/.bashrc`, and
    /// `docs -> ~/.aws` makes `cat docs/credentials` a credential read. Links made later in the
    /// session are not here (making one takes a command that is not read-only).
    pub links: Vec<(PathBuf, PathBuf)>,
    /// Files this session read a secret from (`--api-key-file`, `--token-file`, …), absolute:
    /// naming one is a credential read, as naming `~/.ssh/id_rsa` is, wherever it lies.
    pub secret_files: Vec<PathBuf>,
    /// Credential stores under [`Context::home`] (relative paths: `.ssh`, `.aws`, `.pgpass`, …):
    /// naming one, or anything inside one, is a credential read. The caller passes the one list
    /// every actor keeps out of (`sandbox::protected::DENY_READ_IN_HOME`), so the classifier
    /// cannot know a secret the file tools, the browser or the sandbox do not, nor the other way
    /// round. Empty means none: a context built without it finds credential stores only by the
    /// names of key files.
    pub home_credentials: &'static [&'static str],
    /// Read-only verdicts will not be enforced: no sandbox level exists where the command runs,
    /// so a read-only command runs unconfined, on this verdict alone. A path the classifier
    /// cannot check against the deny-read list (computed at run time, relative to a directory
    /// it cannot know, or through a symbolic link or directory [`Context::nested_git`] lists)
    /// then makes the command not read-only. `false` (the default): read-only commands run in
    /// the kernel's read-only sandbox, which hides the stores whatever the path turns out to be.
    pub read_only_unconfined: bool,
}

/// `path` with `.` removed and `..` resolved lexically (never above `/`), as the classifier
/// compares paths: callers building a [`Context`] normalise with it so both sides agree.
pub fn normalize_path(path: &Path) -> PathBuf {
    paths::normalize(path)
}

/// A protected tree: writing anywhere below `path` (absolute) is dangerous, except below one of
/// `except` (e.g. `.gg/agent`, the agent's own scratch area).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Protected {
    pub path: PathBuf,
    pub except: Vec<PathBuf>,
    /// Why it is protected, for the reason shown to a person.
    pub why: String,
    /// Protected wherever its name appears below `path`'s parent, not only at `path`: what an
    /// agent, editor or git started in a subdirectory reads (`sub/AGENTS.md`, `sub/.git`).
    pub anywhere: bool,
}

impl Protected {
    /// Whether `path` (absolute and normalised) lies in this tree, or, for a tree protected
    /// anywhere, in one of its name below the same parent; never below an exception. A last
    /// component `*ENDING` (`*.code-workspace`) names a class: any name with that ending.
    pub fn covers(&self, path: &Path) -> bool {
        self.covers_known(path, &paths::Names::of(path))
    }

    /// [`Protected::covers`], told what `path` is made of (the caller works it out once for
    /// all the trees it asks about). When `path` is normal, and the tree's paths are normal
    /// too (the caller's are), the answer is worked out on the text, without parsing either
    /// path into components or copying it: this runs for every written path and every tree,
    /// two dozen trees per path.
    pub(crate) fn covers_known(&self, path: &Path, names: &paths::Names) -> bool {
        // Inside the tree or (anywhere) below one of its name, `path` has the tree's last name
        // among its own; most trees' names are not, which the names alone show. Not for a
        // class (`*.code-workspace`), whose members' names only end like it.
        // The last name found once and looked up directly (`paths::may_lead_to`'s test, which
        // would find it again): this runs for each of some sixty trees per written path.
        let root = self.path.as_os_str().as_encoded_bytes();
        // First by the tree's last byte alone, before its last name is looked for (most trees
        // stop here; finding the name byte by byte from the end was half of this function's
        // cost, 3 % of `gg classify`'s instructions). Unless the tree's last name may be empty,
        // `.`, `..` or a class of any name (`*`), that name is not empty and ends with this
        // byte, and so do a path's name equal to it and, without regard to ASCII case, a
        // name of its class (`*.code-workspace`: a name ending with `.code-workspace`).
        if let Some(&end) = root.last()
            && !matches!(end, b'/' | b'.' | b'*')
            && !names.may_end_with(end)
        {
            return false;
        }
        let last = match root.iter().rposition(|&b| b == b'/') {
            Some(cut) => &root[cut + 1..],
            None => root,
        };
        if !matches!(last, [b'*', ..] | b"" | b"." | b"..") && !names.contains(last) {
            return false;
        }
        if names.normal
            && let Some(answer) = self.covers_as_text(path)
        {
            return answer;
        }
        self.covers_by_components(path)
    }

    /// [`Protected::covers`] for a normal `path`, on the text: `None` when some path of the
    /// tree is not normal (then only the component-wise reading applies). The names of a normal
    /// path are what lies between its `/`s, so "a component is `name`" is "a `/`-separated
    /// segment is `name`", and `starts_with` is [`paths::starts_with_as_text`].
    fn covers_as_text(&self, path: &Path) -> Option<bool> {
        let root = self.path.as_os_str().as_encoded_bytes();
        if !paths::is_normal(&self.path) || !self.except.iter().all(|e| paths::is_normal(e)) {
            return None;
        }
        // A normal path is absolute; its last name follows its last `/` (none for `/`).
        let (parent, name) = match root.iter().rposition(|&b| b == b'/') {
            _ if root == b"/" => (None, None),
            Some(0) => (Some(&b"/"[..]), Some(&root[1..])),
            Some(cut) => (Some(&root[..cut]), Some(&root[cut + 1..])),
            None => return None,
        };
        let text = path.as_os_str().as_encoded_bytes();
        // The `*` first: most names are not a class, and need no UTF-8 check.
        if let Some(ending) = name
            .and_then(|n| n.strip_prefix(b"*"))
            .and_then(|n| std::str::from_utf8(n).ok())
        {
            // As `class_covers` (below): the names below the parent.
            let Some(below) = parent.and_then(|p| paths::below_as_text(text, p)) else {
                return Some(false);
            };
            let of_class = |c: &[u8]| {
                c.len() >= ending.len()
                    && c[c.len() - ending.len()..].eq_ignore_ascii_case(ending.as_bytes())
            };
            let mut names = below.split(|&b| b == b'/').filter(|c| !c.is_empty());
            return Some(if self.anywhere {
                names.any(of_class)
            } else {
                names.next().is_some_and(of_class)
            });
        }
        let inside = paths::starts_with_as_text(path, &self.path)
            || self.anywhere
                && parent.zip(name).is_some_and(|(parent, name)| {
                    paths::below_as_text(text, parent).is_some_and(|below| {
                        below
                            .split(|&b| b == b'/')
                            .filter(|c| !c.is_empty())
                            .any(|c| c == name)
                    })
                });
        Some(
            inside
                && !self
                    .except
                    .iter()
                    .any(|e| paths::starts_with_as_text(path, e)),
        )
    }

    /// [`Protected::covers`] component by component, for any paths.
    fn covers_by_components(&self, path: &Path) -> bool {
        if !self.path.is_absolute() {
            return false;
        }
        if let Some(ending) = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix('*'))
        {
            return self.class_covers(ending, path);
        }
        // Without a copy when the caller's paths are normal already (they are): this runs for
        // every written path and every tree.
        let root = paths::normalized(&self.path);
        // Both normal (as the classifier's paths are): compared as text, without parsing them.
        let path_normal = paths::is_normal(path);
        let starts_with = |prefix: &Path| {
            if path_normal && paths::is_normal(prefix) {
                paths::starts_with_as_text(path, prefix)
            } else {
                path.starts_with(prefix)
            }
        };
        let inside = starts_with(&root)
            || self.anywhere
                && root
                    .parent()
                    .zip(root.file_name())
                    .is_some_and(|(parent, name)| {
                        path.strip_prefix(parent)
                            .is_ok_and(|below| below.iter().any(|c| c == name))
                    });
        inside
            && !self
                .except
                .iter()
                .any(|e| starts_with(&paths::normalized(e)))
    }

    /// [`Protected::covers`] for a class: the component just below the parent (or, anywhere,
    /// any component below it) ends with `ending`, in any case.
    fn class_covers(&self, ending: &str, path: &Path) -> bool {
        let Some(parent) = self.path.parent() else {
            return false;
        };
        let Ok(below) = path.strip_prefix(paths::normalized(parent)) else {
            return false;
        };
        // As the sandbox's list matches a class: by the ending without regard to case, the
        // bare ending too (fail closed: whether an editor takes either is its to decide).
        let of_class = |c: &std::ffi::OsStr| {
            let c = c.as_encoded_bytes();
            c.len() >= ending.len()
                && c[c.len() - ending.len()..].eq_ignore_ascii_case(ending.as_bytes())
        };
        if self.anywhere {
            below.iter().any(of_class)
        } else {
            below.iter().next().is_some_and(of_class)
        }
    }
}

/// Git configuration text the caller read from disk; the classifier only parses it.
#[derive(Debug, Clone, Default)]
pub struct GitConfig {
    /// Each file's text, main config first, then includes, in the order git would read them.
    pub files: Vec<String>,
}

/// Command-prefix rules that come from policy files (see the `policies` crate).
///
/// A prefix is a list of words matched against the start of a found command's argv.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtraRules {
    /// Commands treated as if they were on the read-only allow-list.
    pub read_only_prefixes: Vec<Vec<String>>,
    /// Commands that are always dangerous (always ask).
    pub dangerous_prefixes: Vec<Vec<String>>,
}

/// Input the classifier refuses to give a verdict on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClassifyError {
    /// Empty or whitespace-only input.
    Empty,
}

impl std::fmt::Display for ClassifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClassifyError::Empty => f.write_str("empty command"),
        }
    }
}

impl std::error::Error for ClassifyError {}

/// Byte span `[start, end)` in the caller's input.
pub(crate) type Span = (usize, usize);

/// Reuses one tree-sitter parser for many classifications (batch audits).
///
/// [`classify`] keeps one per thread; use this type to hold one explicitly.
pub struct Classifier {
    parser: Option<tree_sitter::Parser>,
}

impl Default for Classifier {
    fn default() -> Self {
        Self::new()
    }
}

impl Classifier {
    /// Creates a classifier with its own bash parser.
    pub fn new() -> Classifier {
        let mut parser = tree_sitter::Parser::new();
        let ok = parser
            .set_language(&tree_sitter_bash::LANGUAGE.into())
            .is_ok();
        Classifier {
            parser: ok.then_some(parser),
        }
    }

    /// Classifies `command` (a whole bash script) in `ctx`. See [`classify`].
    pub fn classify(&mut self, command: &str, ctx: &Context) -> Result<Verdict, ClassifyError> {
        if command.trim().is_empty() {
            return Err(ClassifyError::Empty);
        }
        let Some(parser) = self.parser.as_mut() else {
            // The grammar failed to load: a build problem. Nothing can be read-only then.
            let reason = Reason {
                rule: RuleId::ParseError.as_str().into(),
                class: Class::Normal,
                message: "the bash grammar could not be loaded".into(),
                span: (0, command.len()),
            };
            return Ok(Verdict {
                class: Class::Normal,
                reasons: vec![reason],
                commands: Vec::new(),
            });
        };
        if command.len() > MAX_COMMAND_BYTES {
            return Ok(too_large(parser, command, ctx));
        }
        let mut walker = walk::Walker::new(ctx, parser, command);
        walker.run();
        Ok(finish(walker.reasons, walker.commands))
    }
}

/// The longest command that gets a full classification. Nobody runs a megabyte of shell in one
/// tool call; a longer text is never read-only and only gets the linear raw-text scan for
/// dangerous patterns, piece by piece, so memory stays bounded by the piece size.
pub const MAX_COMMAND_BYTES: usize = 1 << 20;

fn too_large(parser: &mut tree_sitter::Parser, command: &str, ctx: &Context) -> Verdict {
    let mut reasons = vec![Reason {
        rule: RuleId::InputTooLarge.as_str().to_string(),
        class: Class::Normal,
        message: format!(
            "the command is {} bytes long, more than the {MAX_COMMAND_BYTES} bytes inspected in \
             full; it was only scanned for dangerous patterns",
            command.len()
        ),
        span: (0, command.len()),
    }];
    let mut start = 0;
    while start < command.len() {
        let mut end = (start + MAX_COMMAND_BYTES).min(command.len());
        if end < command.len()
            && let Some(newline) = command[start..end].rfind('\n')
            && newline > 0
        {
            end = start + newline + 1;
        }
        while !command.is_char_boundary(end) {
            end -= 1;
        }
        let mut walker = walk::Walker::new(ctx, parser, &command[start..end]);
        walker.scan_only();
        reasons.extend(walker.reasons.into_iter().map(|mut r| {
            r.span = (r.span.0 + start, r.span.1 + start);
            r
        }));
        start = end;
    }
    finish(reasons, Vec::new())
}

/// Orders the findings and derives the class: the highest class among the reasons, read-only
/// when there is none.
fn finish(mut reasons: Vec<Reason>, mut commands: Vec<FoundCommand>) -> Verdict {
    reasons.sort_by(|a, b| {
        b.class
            .cmp(&a.class)
            .then(a.span.cmp(&b.span))
            .then(a.rule.cmp(&b.rule))
    });
    reasons.dedup_by(|a, b| a.rule == b.rule && a.span == b.span);
    commands.sort_by_key(|c| c.span.0);
    let class = reasons
        .iter()
        .map(|r| r.class)
        .max()
        .unwrap_or(Class::ReadOnly);
    Verdict {
        class,
        reasons,
        commands,
    }
}

thread_local! {
    static CLASSIFIER: std::cell::RefCell<Classifier> = std::cell::RefCell::new(Classifier::new());
}

/// Classifies `command` (a whole bash script) in `ctx`.
///
/// The class is the highest class of any part of the script. A read-only verdict has no
/// reasons; a normal or dangerous one has at least one reason of that class. Empty or
/// whitespace-only input is an error, not a verdict.
pub fn classify(command: &str, ctx: &Context) -> Result<Verdict, ClassifyError> {
    CLASSIFIER.with(|c| match c.try_borrow_mut() {
        Ok(mut classifier) => classifier.classify(command, ctx),
        // Re-entrant use on one thread (not possible today): use a fresh parser.
        Err(_) => Classifier::new().classify(command, ctx),
    })
}

/// Whether `program` (a base name) is on the read-only allow-list at all. A read-only verdict
/// only ever contains commands for which this is true (or that a policy's read-only prefix
/// allows).
pub fn is_read_only_program(program: &str) -> bool {
    rules::is_read_only_program(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(path: &str, except: &[&str], anywhere: bool) -> Protected {
        Protected {
            path: path.into(),
            except: except.iter().map(PathBuf::from).collect(),
            why: String::new(),
            anywhere,
        }
    }

    /// The text reading of `covers` gives the component-wise answer whenever it gives one, and
    /// gives one whenever the paths are normal.
    fn check_covers(tree: &Protected, path: &str) {
        let path = Path::new(path);
        let by_components = tree.covers_by_components(path);
        if paths::is_normal(path) {
            let as_text = tree.covers_as_text(path);
            if paths::is_normal(&tree.path) && tree.except.iter().all(|e| paths::is_normal(e)) {
                assert_eq!(as_text, Some(by_components), "{tree:?} {path:?}");
            } else {
                assert_eq!(as_text, None, "{tree:?} {path:?}");
            }
        }
        assert_eq!(tree.covers(path), by_components, "{tree:?} {path:?}");
    }

    #[test]
    fn covers_as_text_cases() {
        let trees = [
            tree("/p/.git", &[], true),
            tree("/p/.gg", &["/p/.gg/agent"], true),
            tree("/p/.bashrc", &[], false),
            tree("/p/*.code-workspace", &[], false),
            tree("/p/*.code-workspace", &[], true),
            tree("/*.x", &[], true),
            tree("/", &[], false),
            tree("/.git", &[], true),
            tree("/p/./.git", &[], true),
            tree("/p/.gg/", &["/p/.gg/agent"], false),
            tree("p/.git", &[], true),
        ];
        let paths = [
            "/",
            "/p",
            "/p/.git",
            "/p/.git/config",
            "/p/.gitx",
            "/p/sub/.git/hooks/x",
            "/q/.git",
            "/p/.gg/agent",
            "/p/.gg/agent/notes",
            "/p/.gg/agentx",
            "/p/.gg/policy.toml",
            "/p/sub/.gg/agent/x",
            "/p/.bashrc",
            "/p/sub/.bashrc",
            "/p/A.Code-Workspace",
            "/p/sub/a.code-workspace",
            "/p/.code-workspace",
            "/a.x/b",
            "/.git",
            "/p//.git",
            "/p/./.git",
            "/p/sub/../.git",
            "/p/.git/",
        ];
        for t in &trees {
            for p in paths {
                check_covers(t, p);
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn covers_as_text_agrees(
            root in "/[abB*./]{0,8}",
            except in proptest::collection::vec("/[ab./]{0,10}", 0..3),
            anywhere: bool,
            path in "/[abA*./]{0,12}",
        ) {
            let except: Vec<&str> = except.iter().map(String::as_str).collect();
            let t = tree(&root, &except, anywhere);
            check_covers(&t, &path);
            // A path at or below the tree, so that matches are tried as well as misses.
            check_covers(&t, &format!("{root}/{path}"));
            check_covers(&t, &format!("{root}{path}"));
            // The same tree with normal paths (the caller's are), where the text reading
            // answers: most generated roots are not normal.
            let normal = |p: &str| paths::normalize(Path::new(p)).to_string_lossy().into_owned();
            let except: Vec<String> = except.iter().map(|e| normal(e)).collect();
            let except: Vec<&str> = except.iter().map(String::as_str).collect();
            let root = normal(&root);
            let t = tree(&root, &except, anywhere);
            check_covers(&t, &path);
            check_covers(&t, &normal(&format!("{root}/{path}")));
            check_covers(&t, &normal(&format!("{root}{path}")));
            if let Some(e) = except.first() {
                check_covers(&t, &normal(&format!("{e}/{path}")));
            }
        }
    }
}
