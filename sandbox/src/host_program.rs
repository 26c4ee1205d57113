//! Finding a program that gg itself starts on the host, outside any sandbox or guard: `git`
//! asked where the hooks are, the desktop opener and its helpers, an MCP server's command.
//!
//! Why not simply `PATH`: a person's `PATH` often holds directories a command gg ran could
//! write — a relative entry (`node_modules/.bin`, `./bin`, an empty entry, which is the
//! working directory), an activated virtual environment inside the project, a temporary
//! directory. An attacker pass planted `git` in such a directory from a sandboxed command, and
//! gg's own `git rev-parse` then ran it unconfined, with every secret in reach. What gg starts
//! unconfined is therefore looked up only in the `PATH` entries that are absolute and lie
//! outside what the session's commands may write (the project, the temporary directories);
//! the programs it starts get that same `PATH`, so a shell script such as `xdg-open` finds
//! its helpers there too.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The entries of `path` (a `PATH` value) that gg may look programs up in: absolute, and, once
/// symbolic links are resolved, neither inside one of `writable` (the session's project roots)
/// nor inside a shared temporary directory. Entries that do not exist are dropped too.
///
/// gg's own working directory counts as a project root whatever `writable` says: a query made
/// for another tree (the self-test's scratch repository) must not find a program in the
/// project's own virtual environment either (an attacker pass's planted `git` ran that way).
pub fn trusted_dirs(path: &std::ffi::OsStr, writable: &[&Path]) -> Vec<PathBuf> {
    let cwd = std::env::current_dir().ok();
    // The temporary directories every command may write, whatever the project (the guard's
    // list): never a place to find a program gg starts unconfined.
    let shared: Vec<&Path> = crate::guard::TEMP_DIRS
        .iter()
        .map(Path::new)
        .chain(cwd.as_deref())
        .collect();
    trusted_dirs_apart_from(path, &[writable, &shared].concat())
}

/// [`trusted_dirs`] with every writable place given: the roots and the temporary directories.
fn trusted_dirs_apart_from(path: &std::ffi::OsStr, writable: &[&Path]) -> Vec<PathBuf> {
    let writable: Vec<PathBuf> = writable
        .iter()
        .map(|root| std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()))
        .collect();
    let mut dirs: Vec<PathBuf> = Vec::new();
    for entry in std::env::split_paths(path) {
        if !entry.is_absolute() {
            continue;
        }
        let Ok(real) = std::fs::canonicalize(&entry) else {
            continue;
        };
        if writable.iter().any(|root| real.starts_with(root)) || dirs.contains(&entry) {
            continue;
        }
        dirs.push(entry);
    }
    dirs
}

/// The process's `PATH` with only its [`trusted_dirs`], for a program gg starts unconfined;
/// a shell's default when the result would be empty.
pub fn trusted_path(writable: &[&Path]) -> OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = trusted_dirs(&path, writable);
    if dirs.is_empty() {
        return OsString::from("/usr/local/bin:/usr/bin:/bin");
    }
    std::env::join_paths(dirs).unwrap_or_else(|_| OsString::from("/usr/local/bin:/usr/bin:/bin"))
}

/// `name` as found in the process's `PATH`'s [`trusted_dirs`]: the first regular file there
/// that is executable. A name with a slash is taken as given only when it is absolute and
/// outside `writable` and the temporary directories. `None` when there is no such program.
pub fn find(name: &str, writable: &[&Path]) -> Option<PathBuf> {
    if name.contains('/') {
        let given = Path::new(name);
        let dir = given.parent()?;
        return (given.is_absolute()
            && !trusted_dirs(dir.as_os_str(), writable).is_empty()
            && is_executable(given))
        .then(|| given.to_path_buf());
    }
    if name.is_empty() {
        return None;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    trusted_dirs(&path, writable)
        .into_iter()
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn executable(path: &Path) {
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// `temporary` stands for the shared temporary directories, so the test holds wherever
    /// the tree is (a clone under `/tmp` included).
    #[test]
    fn relative_project_and_temporary_entries_are_never_searched() {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        let (system, temporary, project) =
            (base.join("usr/bin"), base.join("tmp"), base.join("project"));
        let venv = project.join(".venv/bin");
        for dir in [&system, &temporary, &venv] {
            std::fs::create_dir_all(dir).unwrap();
            executable(&dir.join("tool"));
        }
        let path = std::env::join_paths([
            PathBuf::from("node_modules/.bin"),
            PathBuf::new(),
            venv.clone(),
            temporary.clone(),
            system.clone(),
        ])
        .unwrap();
        let dirs = trusted_dirs_apart_from(&path, &[&project, &temporary]);
        assert_eq!(dirs, vec![system.clone()]);
        // A link into the project is judged where it leads.
        let link = base.join("bin");
        std::os::unix::fs::symlink(&venv, &link).unwrap();
        assert!(trusted_dirs_apart_from(link.as_os_str(), &[&project]).is_empty());
        assert_eq!(
            trusted_dirs_apart_from(system.as_os_str(), &[&project]),
            vec![system]
        );
    }

    #[test]
    fn a_name_with_a_slash_counts_only_when_absolute_and_outside_what_commands_write() {
        let project = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(project.path()).unwrap();
        let planted = project.join("git");
        executable(&planted);
        assert_eq!(find(planted.to_str().unwrap(), &[&project]), None);
        assert_eq!(find("bin/git", &[]), None);
        assert_eq!(find("", &[]), None);
        // /bin/sh lies outside every writable place.
        assert_eq!(find("/bin/sh", &[&project]), Some(PathBuf::from("/bin/sh")));
    }
}
