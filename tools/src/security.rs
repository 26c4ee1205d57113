//! The I/O half of the security chain.
//!
//! `classifier` and `policies` are pure: they never touch the disk. This module reads what they
//! need (the environment, the repository's git config, the policy files) and hands it over, so
//! the CLI's `gg classify` and the bash tool decide with exactly the same inputs.

use std::path::{Path, PathBuf};

use classifier::{Context, ExtraRules, GitConfig};
use policies::{EffectivePolicy, Layer, PolicyError, parse_policy};

/// The user's home directory: `$HOME`, else the passwd entry of the current uid.
///
/// Falls back to `/` only when neither exists, which makes "the home directory or above" cover
/// everything: the fail-closed direction for `rm -rf` targets.
pub fn home_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(home);
    }
    passwd_home().unwrap_or_else(|| PathBuf::from("/"))
}

fn passwd_home() -> Option<PathBuf> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.len() >= 6 && fields[2] == uid).then(|| PathBuf::from(fields[5]))
    })
}

/// Directories where writes are harmless: `/tmp` and `$TMPDIR`.
pub fn scratch_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from("/tmp")];
    if let Some(tmp) = std::env::var_os("TMPDIR").filter(|t| !t.is_empty()) {
        let tmp = PathBuf::from(tmp);
        if tmp.is_absolute() && !dirs.contains(&tmp) {
            dirs.push(tmp);
        }
    }
    dirs
}

/// The repository containing `cwd`: the nearest ancestor with a `.git` entry.
pub fn repo_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// The git directory of the repository at `root`: `.git` itself, or where a `.git` pointer file
/// (worktrees, submodules) says it is.
pub fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    // `metadata` follows a symlinked `.git`, as git does.
    let meta = dot_git.metadata().ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    let pointer = sandbox::protected::read_settings_text(&dot_git).ok()?;
    let target = pointer
        .lines()
        .find_map(|l| l.strip_prefix("gitdir:"))?
        .trim();
    Some(root.join(target))
}

/// Everything the classifier needs to know about `cwd`, read from disk now.
pub fn classifier_context(cwd: &Path, rules: ExtraRules) -> Context {
    let home = home_dir();
    let git_config = match repo_root(cwd) {
        Some(root) => match git_dir(&root) {
            Some(dir) => GitConfig::load_repository(&dir, Some(&home), |path| {
                match sandbox::protected::read_settings_text(path) {
                    Ok(text) => Some(text),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                    // A FIFO, a device, a huge or non-UTF-8 file: what git would make of it is
                    // unknown, so git is not trusted there.
                    Err(_) => Some("[core]\n\tfsmonitor = \"(unreadable config)\"\n".to_string()),
                }
            }),
            // A `.git` entry git may follow but we cannot: its config is unknown.
            None => GitConfig {
                files: vec!["[core]\n\tfsmonitor = \"(unreadable .git entry)\"\n".to_string()],
            },
        },
        None => GitConfig::default(),
    };
    let nested = nested_git(cwd, NESTED_GIT_ENTRY_LIMIT);
    Context {
        cwd: cwd.to_path_buf(),
        home,
        scratch_dirs: scratch_dirs(),
        git_config,
        rules,
        protected: protected_trees(cwd),
        repo_programs: repo_programs(cwd, std::env::var_os("PATH").as_deref()),
        links: nested.as_deref().map(links_among).unwrap_or_default(),
        nested_git: nested,
        secret_files: crate::secrets::secret_files(),
        home_credentials: sandbox::protected::DENY_READ_IN_HOME,
        // Known only when the first command runs (the session's level); the agent sets it.
        read_only_unconfined: false,
    }
}

/// The symbolic links among `places` (what [`nested_git`] found), each with its target made
/// absolute against the link's directory and lexically normalised (see
/// `classifier::Context::links`).
pub fn links_among(places: &[PathBuf]) -> Vec<(PathBuf, PathBuf)> {
    places
        .iter()
        .filter_map(|place| {
            let target = std::fs::read_link(place).ok()?;
            let dir = place.parent()?;
            Some((
                classifier::normalize_path(place),
                classifier::normalize_path(&dir.join(target)),
            ))
        })
        .collect()
}

/// How many directory entries [`nested_git`] reads before it stops looking: it runs at every
/// session's start and every `gg classify`, so it is held to about a millisecond (breadth
/// first, the shallow directories where `cd sub` goes are read; deeper ones are listed as
/// unread, and git there stays not read-only).
const NESTED_GIT_ENTRY_LIMIT: usize = 2_000;
/// How many places [`nested_git`] lists before it gives up on the whole tree.
const NESTED_GIT_PLACE_LIMIT: usize = 4_000;

/// Where git, run in a directory below `cwd`, may find a repository other than `cwd`'s (see
/// `classifier::Context::nested_git`): directories holding a `.git` entry or a `HEAD` (git takes
/// such a directory for a bare repository), symbolic links, and the directories left unread
/// once `limit` entries have been read (breadth first, so the shallow ones are read). `None`
/// when `cwd` itself cannot be read or the list grows too long: git is then trusted in `cwd`
/// only.
///
/// Read when the context is built: a repository created below `cwd` later in the session is not
/// in the list, but creating one takes a command or a file write that is not read-only, and a
/// read-only command runs in the read-only sandbox.
pub fn nested_git(cwd: &Path, limit: usize) -> Option<Vec<PathBuf>> {
    let mut found = Vec::new();
    let mut queue = std::collections::VecDeque::from([cwd.to_path_buf()]);
    let mut read = 0usize;
    while let Some(dir) = queue.pop_front() {
        if read >= limit {
            found.push(dir);
            found.extend(queue.drain(..));
            break;
        }
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(_) if dir == cwd => return None,
            Err(_) => {
                found.push(dir);
                continue;
            }
        };
        let mut complete = true;
        for entry in entries {
            if read >= limit {
                // The rest of this directory stays unread: it is listed itself.
                complete = false;
                break;
            }
            let Ok(entry) = entry else {
                complete = false;
                continue;
            };
            read += 1;
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else {
                found.push(entry.path());
                continue;
            };
            if dir != cwd && (name == ".git" || name == "HEAD") {
                // The directory is (or holds) another repository; git stops there, and so does
                // this search.
                found.push(dir.clone());
                queue.retain(|q| !q.starts_with(&dir));
                complete = true;
                break;
            }
            if name == ".git" {
                continue;
            }
            if kind.is_symlink() {
                found.push(entry.path());
            } else if kind.is_dir() {
                queue.push_back(entry.path());
            }
        }
        if !complete && !found.contains(&dir) {
            found.push(dir);
        }
        if found.len() > NESTED_GIT_PLACE_LIMIT {
            return None;
        }
    }
    Some(found)
}

/// Program names rustup's proxies resolve through a `rust-toolchain` file.
const RUSTUP_PROXIES: &[&str] = &[
    "cargo",
    "rustc",
    "rustup",
    "rustdoc",
    "rustfmt",
    "cargo-fmt",
    "cargo-clippy",
    "clippy-driver",
    "rust-gdb",
    "rust-lldb",
    "rust-analyzer",
];

/// Programs whose binary the directory tree decides (see `classifier::Context::repo_programs`):
/// rustup's proxies when a `rust-toolchain(.toml)` exists in `cwd` or above (it may name a path
/// toolchain, or a channel whose installation writes outside the project), and every executable
/// in a relative or empty `PATH` entry, which resolves against the working directory.
pub fn repo_programs(cwd: &Path, path_var: Option<&std::ffi::OsStr>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let toolchain_file = cwd.ancestors().find_map(|dir| {
        ["rust-toolchain.toml", "rust-toolchain"]
            .iter()
            .map(|name| dir.join(name))
            .find(|p| p.symlink_metadata().is_ok())
    });
    if let Some(file) = toolchain_file {
        let why = format!(
            "{} chooses the toolchain rustup runs (a path toolchain runs the repository's \
             binaries)",
            file.display()
        );
        out.extend(RUSTUP_PROXIES.iter().map(|p| (p.to_string(), why.clone())));
    }
    if let Some(path_var) = path_var {
        for entry in std::env::split_paths(path_var) {
            if entry.is_absolute() {
                continue;
            }
            let dir = cwd.join(&entry);
            let Ok(read) = std::fs::read_dir(&dir) else {
                continue;
            };
            let why = format!(
                "PATH has the relative entry \"{}\", which resolves inside the working directory",
                entry.display()
            );
            for item in read.flatten().take(4096) {
                let name = item.file_name().to_string_lossy().into_owned();
                if !out.iter().any(|(p, _)| *p == name) {
                    out.push((name, why.clone()));
                }
            }
        }
    }
    out
}

/// Where the user policy lives: `~/.gg/policy.toml`.
pub fn user_policy_path() -> PathBuf {
    home_dir().join(".gg").join("policy.toml")
}

/// Where the project policy lives: `<repo>/.gg/policy.toml`, or `<cwd>/.gg/policy.toml` outside
/// a repository.
pub fn project_policy_path(cwd: &Path) -> PathBuf {
    repo_root(cwd)
        .unwrap_or_else(|| cwd.to_path_buf())
        .join(".gg")
        .join("policy.toml")
}

/// Builtin defaults, then the user file (or `user_override`, e.g. `gg classify --policy`), then
/// the project file. A file that exists but cannot be read or parsed is an error: gg refuses to
/// run with a half-read policy.
pub fn load_policy(
    cwd: &Path,
    user_override: Option<&Path>,
) -> Result<EffectivePolicy, PolicyError> {
    let mut policy = EffectivePolicy::builtin()?;
    let user_path = user_override.map_or_else(user_policy_path, Path::to_path_buf);
    let project_path = project_policy_path(cwd);
    let user_required = user_override.is_some();
    for (path, layer, required) in [
        (user_path, Layer::User, user_required),
        (project_path, Layer::Project, false),
    ] {
        let origin = path.display().to_string();
        let text =
            match sandbox::protected::read_settings_file(&path, sandbox::protected::SETTINGS_LIMIT)
            {
                Ok(bytes) => String::from_utf8(bytes).map_err(|_| PolicyError {
                    origin: origin.clone(),
                    line: 0,
                    message: "policy file is not valid UTF-8".to_string(),
                })?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => continue,
                Err(e) => {
                    return Err(PolicyError {
                        origin,
                        line: 0,
                        message: format!("cannot read policy file: {e}"),
                    });
                }
            };
        policy.add(parse_policy(&text, layer, &origin)?);
    }
    Ok(policy)
}

/// The protected entries of `cwd` as the classifier wants them, from the same list the sandbox
/// binds and the file tools check (`sandbox::protected`). The agent area is the one exception.
pub fn protected_trees(cwd: &Path) -> Vec<classifier::Protected> {
    sandbox::protected::PROTECTED_IN_ROOT
        .iter()
        // A class (`*.code-workspace`) is joined to `cwd` as it is: the classifier reads a last
        // component `*ENDING` as any name with that ending.
        .map(|entry| {
            let path = cwd.join(entry.name);
            let agent_area = cwd.join(sandbox::protected::AGENT_AREA);
            classifier::Protected {
                except: if agent_area.starts_with(&path) {
                    vec![agent_area]
                } else {
                    Vec::new()
                },
                path,
                why: entry.why.to_string(),
                anywhere: entry.anywhere,
            }
        })
        // What a protected link leads to (`AGENTS.md -> docs/agents.md`): a write there is a
        // write of the link's, as the file tools and the sweep hold too.
        .chain(
            sandbox::protected::where_placeholders_lead(cwd)
                .into_iter()
                .map(|linked| classifier::Protected {
                    path: cwd.join(&linked.leads_to),
                    except: Vec::new(),
                    why: format!("where {} leads: {}", linked.link, linked.why),
                    anywhere: false,
                }),
        )
        .chain(
            sandbox::protected::included_configs(cwd)
                .into_iter()
                .map(|path| classifier::Protected {
                    path,
                    except: Vec::new(),
                    why: "a file the repository's git configuration includes: git obeys it as \
                          it obeys .git/config"
                        .to_string(),
                    anywhere: false,
                }),
        )
        .chain(sandbox::protected::hooks_dir(cwd).map(|hooks| {
            classifier::Protected {
                path: hooks,
                except: Vec::new(),
                why: "the repository's hooks directory (git's core.hooksPath): git runs what is \
                      there at the next commit"
                    .to_string(),
                anywhere: false,
            }
        }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_git_lists_other_repositories_links_and_unread_directories() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        for d in ["sub/deeper", "vendor/lib/src", "bare/objects", "big/a"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
        for f in [
            ".git",
            "vendor/lib/.git",
            "bare/HEAD",
            "big/a/1",
            "big/a/2",
            "big/a/3",
        ] {
            std::fs::write(root.join(f), "").expect("write");
        }
        std::os::unix::fs::symlink("/etc", root.join("link")).expect("symlink");
        let mut found = nested_git(root, 10_000).expect("readable");
        found.sort();
        let expected: Vec<PathBuf> = ["bare", "link", "vendor/lib"]
            .iter()
            .map(|p| root.join(p))
            .collect();
        assert_eq!(found, expected);
        // Past the limit, what was not read is listed: every directory below is covered.
        let found = nested_git(root, 3).expect("readable");
        for d in ["sub/deeper", "big/a", "vendor/lib/src"] {
            let d = root.join(d);
            assert!(found.iter().any(|f| d.starts_with(f)), "{d:?} in {found:?}");
        }
        assert_eq!(nested_git(&root.join("missing"), 10), None);
    }
}
