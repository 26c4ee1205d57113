//! What a sandboxed command may touch: the one object every backend renders.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::SandboxError;
use crate::protected::{Bind, PROTECTED_IN_ROOT};
use crate::watch;

/// Whether the sandboxed command may use the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// Network is not isolated (the default: the sandbox protects the filesystem and processes).
    On,
    /// No network: empty network namespace, no non-Unix sockets, host sockets hidden.
    Off,
    /// No route out except TCP to the host's HTTP proxy named by [`Policy::proxy`] (which enforces
    /// the allow-list); otherwise as [`Network::Off`]. See [`crate::netfwd`].
    Proxy,
}

impl Network {
    /// Whether the command gets no direct route out (an empty namespace, host sockets hidden).
    pub fn isolated(self) -> bool {
        self != Network::On
    }
}

/// Files under the home directory that a sandboxed command must never read.
pub const DEFAULT_DENY_READ_IN_HOME: &[&str] = crate::protected::DENY_READ_IN_HOME;

/// A sandbox policy. Paths are absolute and canonical; build it with [`Policy::new`] so the
/// defaults of the issue (git carve-outs, `.gg/` read-only, deny-read list, private `/tmp`) apply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// The working directory: the command's current directory, and writable unless
    /// [`Policy::workdir_writable`] says otherwise.
    pub workdir: PathBuf,
    /// Whether the working directory is writable. False only in a [`Policy::read_only`]
    /// policy, where nothing but the private `/tmp` is.
    #[serde(default = "yes")]
    pub workdir_writable: bool,
    /// Further writable directories.
    pub writable_roots: Vec<PathBuf>,
    /// Paths inside writable roots that stay read-only. A path that does not exist when the
    /// command starts is covered by an empty read-only directory so it cannot be planted.
    pub read_only: Vec<PathBuf>,
    /// Directories inside writable roots bound onto themselves so they cannot be renamed away
    /// (a mount point gives `EBUSY`), which would otherwise defeat read-only carve-outs below them.
    pub pinned: Vec<PathBuf>,
    /// Paths hidden from the command (empty directory or empty file in their place).
    pub deny_read: Vec<PathBuf>,
    /// Network access.
    pub network: Network,
    /// The proxy route when `network` is [`Network::Proxy`] (required then, ignored otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxyRoute>,
    /// Whether `/tmp` and `/dev/shm` are private to the command (`TMPDIR` points inside).
    pub private_tmp: bool,
    /// Read-only directories that are created empty on the host before a bubblewrap run when
    /// absent (`.gg/`, `.git/hooks`), so they can be bound read-only and cannot be planted. An
    /// empty directory left in place is cheaper than a temporary mount point: removing one that
    /// served as a mount point in the finished sandbox's namespace costs milliseconds.
    pub create_if_missing: Vec<PathBuf>,
    /// Host Unix sockets to hide besides the fixed list of [`crate::bwrap::escalation_sockets`]:
    /// the ssh agent's. Filled from `SSH_AUTH_SOCK` when the environment still has it; a host
    /// that keeps secrets out of its own environment passes it with [`Policy::hide_socket`].
    #[serde(default)]
    pub sockets: Vec<PathBuf>,
    /// With an isolated network: still allow creating Unix sockets (`socket(AF_UNIX)`), for
    /// programs that need local IPC through a named socket (Chromium's profile lock). Honoured
    /// only at the bubblewrap level, where the empty network namespace hides abstract sockets
    /// and `/run` is covered, so no host service socket is reachable; the helper-only level
    /// refuses such a policy rather than open the host's sockets.
    #[serde(default)]
    pub local_sockets: bool,
}

impl Policy {
    /// The default policy for `workdir`, with the home directory taken from `$HOME`.
    pub fn new(workdir: &Path) -> Result<Policy, SandboxError> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        Policy::with_home(workdir, home.as_deref())
    }

    /// The default policy for `workdir` with an explicit home directory (`None`: no home-based
    /// deny-read entries).
    pub fn with_home(workdir: &Path, home: Option<&Path>) -> Result<Policy, SandboxError> {
        let workdir = Policy::workdir_of(workdir)?;
        let mut policy = Policy {
            workdir: workdir.clone(),
            workdir_writable: true,
            writable_roots: Vec::new(),
            read_only: Vec::new(),
            pinned: Vec::new(),
            deny_read: Vec::new(),
            network: Network::On,
            proxy: None,
            private_tmp: true,
            create_if_missing: Vec::new(),
            sockets: Vec::new(),
            local_sockets: false,
        };
        if let Some(sock) = std::env::var_os("SSH_AUTH_SOCK") {
            policy.hide_socket(Path::new(&sock));
        }
        policy.add_root_carve_outs(&workdir);
        for entry in PROTECTED_IN_ROOT {
            if entry.bind == Bind::ReadOnlyTree {
                policy.push_read_only(workdir.join(entry.name));
                policy.create_if_missing.push(workdir.join(entry.name));
            }
        }
        // An absent home directory has none of them.
        if let Some(home) = home
            .filter(|h| h.is_absolute())
            .and_then(canonicalize_if_present)
        {
            for rel in DEFAULT_DENY_READ_IN_HOME {
                policy.add_deny_read_lenient(canonicalize_below(&home, Path::new(rel)));
            }
        }
        Ok(policy)
    }

    /// The canonical working directory a policy for `workdir` would have, or why there can be
    /// none (not a directory, or `/`, which would make everything writable): the question
    /// [`Policy::new`] answers first, without the rest of its work (a `stat` of every protected
    /// name, the git configuration's hooks), for actors that only need to know whether the
    /// sandbox would accept the directory.
    pub fn workdir_of(workdir: &Path) -> Result<PathBuf, SandboxError> {
        let workdir = canonical_dir(workdir)?;
        if workdir == Path::new("/") {
            return Err(SandboxError::InvalidPolicy(
                "the working directory cannot be / (everything would be writable)".into(),
            ));
        }
        Ok(workdir)
    }

    /// Makes `path` (an existing directory) writable, with the same git carve-outs as the
    /// working directory.
    pub fn add_writable(&mut self, path: &Path) -> Result<(), SandboxError> {
        let root = canonical_dir(path)?;
        if root == Path::new("/") {
            return Err(SandboxError::InvalidPolicy("/ cannot be writable".into()));
        }
        if !self.writable_roots.contains(&root) && root != self.workdir {
            self.writable_roots.push(root);
            // A `.git` pointer in one root may lead into another: recompute for every root.
            let roots: Vec<PathBuf> = self.all_writable().map(Path::to_path_buf).collect();
            for r in &roots {
                self.add_root_carve_outs(r);
            }
        }
        Ok(())
    }

    /// Hides `path` from the command. A path that does not exist yet is accepted (its existing
    /// ancestor is resolved) and stays hidden if it appears: inside a writable root it is covered
    /// by an empty read-only directory, elsewhere Landlock grants nothing on it.
    pub fn add_deny_read(&mut self, path: &Path) -> Result<(), SandboxError> {
        let resolved = resolve_maybe_absent(path).map_err(|e| {
            SandboxError::InvalidPolicy(format!("deny-read path {}: {e}", path.display()))
        })?;
        if resolved == Path::new("/") {
            return Err(SandboxError::InvalidPolicy("/ cannot be hidden".into()));
        }
        if !self.deny_read.contains(&resolved) {
            self.deny_read.push(resolved);
        }
        Ok(())
    }

    /// Hides the host socket at `path` (an absolute path; anything else is ignored).
    pub fn hide_socket(&mut self, path: &Path) {
        if path.is_absolute() && !self.sockets.iter().any(|s| s == path) {
            self.sockets.push(path.to_path_buf());
        }
    }

    /// All writable directories: the working directory first (when it is writable).
    pub fn all_writable(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.workdir.as_path())
            .filter(|_| self.workdir_writable)
            .chain(self.writable_roots.iter().map(|p| p.as_path()))
    }

    /// The policy a command classified read-only runs under: the same view of the filesystem
    /// with the same secrets hidden, but nothing writable except its private `/tmp`, and no
    /// network at all (no proxy, no host sockets). The classifier's verdict becomes a
    /// capability the kernel enforces: a "read-only" command that would write or run code
    /// through an option nobody listed meets a read-only filesystem instead.
    ///
    /// The carve-outs of the writable policy go (nothing under the working directory is
    /// writable, so there is nothing to pin or bind read-only, and no empty directory needs to
    /// be created on the host), while the deny-read list stays whole.
    pub fn read_only(mut self) -> Policy {
        self.workdir_writable = false;
        self.writable_roots.clear();
        self.read_only.clear();
        self.pinned.clear();
        self.create_if_missing.clear();
        self.network = Network::Off;
        self.proxy = None;
        self.local_sockets = false;
        self.private_tmp = true;
        self
    }

    /// Whether `path` lies inside one of the writable directories.
    pub fn is_inside_writable(&self, path: &Path) -> bool {
        self.all_writable().any(|root| path.starts_with(root))
    }

    /// Hides a default secret: `canonical` is its canonical form, `None` when it does not exist
    /// (defaults name files that usually do not exist; only existing ones can be hidden).
    fn add_deny_read_lenient(&mut self, canonical: Option<PathBuf>) {
        if let Some(canonical) = canonical
            && canonical != Path::new("/")
            && !self.deny_read.contains(&canonical)
        {
            self.deny_read.push(canonical);
        }
    }

    /// What protects the present carve-out `path`: the path itself, or for a link (`AGENTS.md ->
    /// CLAUDE.md`) the file it leads to, and only when that lies inside a writable root:
    /// elsewhere it is read-only already, and a mount through the link would follow it out
    /// (the bubblewrap renderer resolves again when it mounts). `None` when absent or leading
    /// nowhere. The link itself stays replaceable: its directory is the writable root, which no
    /// mount can make read-only for one name; the persistence sweep answers for it.
    fn carve_out_target(&self, path: &Path) -> Option<PathBuf> {
        let meta = watch::symlink_metadata(path).ok()?;
        if !meta.file_type().is_symlink() {
            return Some(path.to_path_buf());
        }
        watch::canonicalize(path)
            .ok()
            .filter(|target| self.is_inside_writable(target))
    }

    fn push_read_only(&mut self, path: PathBuf) {
        if !self.read_only.contains(&path) {
            self.read_only.push(path);
        }
    }

    fn add_root_carve_outs(&mut self, root: &Path) {
        for entry in PROTECTED_IN_ROOT {
            let p = root.join(entry.name);
            match entry.bind {
                Bind::ReadOnlyIfPresent | Bind::Placeholder if entry.is_class() => {}
                Bind::ReadOnlyIfPresent | Bind::Placeholder => {
                    if let Some(target) = self.carve_out_target(&p) {
                        self.push_read_only(target);
                    }
                }
                Bind::GitDir | Bind::ReadOnlyTree => {}
            }
        }
        // A class (`*.code-workspace`) is no one path: the members the top holds now are
        // carved out as the named entries are (a new one is the sweep's to move aside).
        if let Ok(listing) = watch::read_dir(root) {
            for name in listing.flatten().map(|e| e.file_name()) {
                if crate::protected::of_a_class(&name)
                    && let Some(target) = self.carve_out_target(&root.join(&name))
                {
                    self.push_read_only(target);
                }
            }
        }
        // A hooks directory in the work tree (`core.hooksPath`: husky's `.husky/_`, `.githooks`)
        // runs at the person's next commit as `.git/hooks` would. Its config is watched, so a
        // kept policy is rebuilt when the setting changes.
        let _ = watch::symlink_metadata(root.join(".git/config"));
        if let Some(hooks) = crate::protected::hooks_dir(root)
            && watch::symlink_metadata(&hooks).is_ok()
        {
            self.push_read_only(hooks);
        }
        let named_git = root.join(PROTECTED_IN_ROOT[0].name);
        // git follows a `.git` that is a link (`.git -> .gitrepo`): its target is protected as
        // the git directory, when it lies inside a writable root.
        let dot_git = match self.carve_out_target(&named_git) {
            Some(target) => target,
            None => named_git,
        };
        match watch::symlink_metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => {
                if !self.pinned.contains(&dot_git) {
                    self.pinned.push(dot_git.clone());
                }
                self.protect_git_dir(&dot_git, 0);
            }
            Ok(meta) if meta.is_file() => {
                // A worktree or submodule: `.git` is a pointer file. Keep it, and the hooks and
                // config of the repository it points to, read-only.
                self.push_read_only(dot_git.clone());
                if let Some(git_dir) = read_gitdir_pointer(&dot_git, root) {
                    self.protect_git_dir(&git_dir, 0);
                    if let Some(common) = read_commondir(&git_dir) {
                        self.protect_git_dir(&common, 0);
                    }
                }
            }
            _ => {}
        }
    }

    /// Hooks, config (`config.worktree` too) and `info/attributes` of a git directory, and of
    /// every submodule repository stored inside it.
    fn protect_git_dir(&mut self, git_dir: &Path, depth: usize) {
        if depth > 8 || !self.is_inside_writable(git_dir) {
            // Outside every writable root it is read-only anyway.
            return;
        }
        self.push_read_only(git_dir.join("hooks"));
        if !self.create_if_missing.contains(&git_dir.join("hooks")) {
            self.create_if_missing.push(git_dir.join("hooks"));
        }
        self.push_read_only(git_dir.join("config"));
        for file in ["config.worktree", "info/attributes"] {
            if watch::exists(git_dir.join(file)) {
                self.push_read_only(git_dir.join(file));
            }
        }
        if let Ok(entries) = watch::read_dir(git_dir.join("modules")) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    self.protect_git_dir(&entry.path(), depth + 1);
                }
            }
        }
    }
}

/// Serde's default for [`Policy::workdir_writable`] (policies written before the field).
fn yes() -> bool {
    true
}

/// `std::fs::canonicalize` for a path that usually does not exist (the default secrets, the
/// host's sockets), built again for every sandboxed command: one `lstat` answers "absent" where
/// `realpath` first reads the link of every component on the way (four system calls for
/// `~/.aws`). The answer is the same: a path whose `lstat` finds nothing has no canonical form.
pub(crate) fn canonicalize_if_present(path: &Path) -> Option<PathBuf> {
    match watch::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        _ => watch::canonicalize(path).ok(),
    }
}

/// [`canonicalize_if_present`] of `base.join(rel)` for a `base` that is already canonical (the
/// home directory, below which every default secret lies): one `lstat` per name of `rel`, where
/// `realpath` reads the link of every component of the whole path, the home directory's own
/// again for each secret. A link (or `.`, `..`) on the way leaves it to `realpath`. Public for
/// the other actors that list the home's secrets (`tools::paths::DenyRead`), every one of which
/// builds that list again for each session and most of whose names do not exist.
pub fn canonicalize_below(base: &Path, rel: &Path) -> Option<PathBuf> {
    let whole = || canonicalize_if_present(&base.join(rel));
    let mut out = base.to_path_buf();
    for component in rel.components() {
        let std::path::Component::Normal(name) = component else {
            return whole();
        };
        out.push(name);
        match watch::symlink_metadata(&out) {
            Ok(meta) if !meta.file_type().is_symlink() => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Ok(_) | Err(_) => return whole(),
        }
    }
    Some(out)
}

/// The canonical form of `path`, or for a path that does not exist, the canonical form of its
/// deepest existing ancestor followed by the missing names (`..` among them is refused: it could
/// not be resolved without the directories).
fn resolve_maybe_absent(path: &Path) -> std::io::Result<PathBuf> {
    let absolute = std::path::absolute(path)?;
    match watch::canonicalize(&absolute) {
        Ok(c) => return Ok(c),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        Err(_) => {}
    }
    let mut missing = Vec::new();
    let mut cursor = absolute.as_path();
    loop {
        match watch::canonicalize(cursor) {
            Ok(base) => {
                let mut out = base;
                for name in missing.iter().rev() {
                    out.push(name);
                }
                return Ok(out);
            }
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            Err(_) => {}
        }
        let name = cursor.file_name().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "cannot be resolved")
        })?;
        missing.push(name.to_os_string());
        cursor = cursor.parent().ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "cannot be resolved")
        })?;
        if cursor.ends_with("..") || cursor.ends_with(".") {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "`..` or `.` before a missing directory",
            ));
        }
    }
}

fn canonical_dir(path: &Path) -> Result<PathBuf, SandboxError> {
    let canonical = watch::canonicalize(path)
        .map_err(|e| SandboxError::InvalidPolicy(format!("{}: {e}", path.display())))?;
    if !canonical.is_dir() {
        return Err(SandboxError::InvalidPolicy(format!(
            "{} is not a directory",
            path.display()
        )));
    }
    Ok(canonical)
}

/// Parses a `.git` pointer file (`gitdir: PATH`, relative to the file's directory).
fn read_gitdir_pointer(dot_git: &Path, root: &Path) -> Option<PathBuf> {
    let text = watch::read_to_string(dot_git).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    if target.is_empty() {
        return None;
    }
    watch::canonicalize(root.join(target)).ok()
}

/// The `commondir` of a linked worktree's git directory (where hooks and config live).
fn read_commondir(git_dir: &Path) -> Option<PathBuf> {
    let text = watch::read_to_string(git_dir.join("commondir")).ok()?;
    let target = text.lines().next()?.trim();
    if target.is_empty() {
        return None;
    }
    watch::canonicalize(git_dir.join(target)).ok()
}

/// Where the proxy is, as the host sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyRoute {
    /// The host proxy's Unix socket (bound into the bubblewrap namespace).
    pub socket: PathBuf,
    /// The proxy's TCP port on the host's 127.0.0.1, and the forwarder's port inside the
    /// namespace: the command's `HTTP_PROXY` is `http://127.0.0.1:<port>` at every level.
    pub port: u16,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_protect_git_and_gg_and_hide_home_secrets() {
        let w = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(w.path().join(".git/hooks")).unwrap();
        std::fs::write(w.path().join(".git/config"), "").unwrap();
        std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
        std::fs::create_dir_all(home.path().join(".gg")).unwrap();
        std::fs::write(home.path().join(".gg/config.json"), "{}").unwrap();
        let p = Policy::with_home(w.path(), Some(home.path())).unwrap();
        let wd = std::fs::canonicalize(w.path()).unwrap();
        let hd = std::fs::canonicalize(home.path()).unwrap();
        assert_eq!(p.workdir, wd);
        assert_eq!(p.pinned, vec![wd.join(".git")]);
        assert!(p.read_only.contains(&wd.join(".git/hooks")));
        assert!(p.read_only.contains(&wd.join(".git/config")));
        assert!(p.read_only.contains(&wd.join(".gg")));
        assert_eq!(
            p.create_if_missing,
            vec![wd.join(".git/hooks"), wd.join(".gg")]
        );
        assert_eq!(p.deny_read, vec![hd.join(".gg"), hd.join(".ssh")]);
        assert_eq!(p.network, Network::On);
        assert!(p.private_tmp);
    }

    /// A policy built under [`crate::watch`] from settled trees may be kept; it looks in a
    /// dozen directories where the build looks up ~45 paths, and it is no longer current once
    /// a default secret, a protected file or a submodule's git directory appears.
    #[test]
    fn a_watched_policy_notices_a_new_secret_protected_file_or_git_directory() {
        use std::time::{Duration, SystemTime};
        for (made, dir) in [
            ("home/.aws", "home"),
            ("home/.config/gh", "home/.config"),
            ("w/.envrc", "w"),
            ("w/.git/modules/sub", "w/.git"),
        ] {
            let t = tempfile::tempdir().unwrap();
            let root = std::fs::canonicalize(t.path()).unwrap();
            let (w, home) = (root.join("w"), root.join("home"));
            std::fs::create_dir_all(w.join(".git/hooks")).unwrap();
            std::fs::write(w.join(".git/config"), "").unwrap();
            std::fs::create_dir_all(home.join(".ssh")).unwrap();
            std::fs::create_dir_all(home.join(".config")).unwrap();
            // Directory times an hour back, judged an hour ahead: settled, and a change made
            // now is a different time whatever the clock's grain (ctime cannot be set back).
            let past = SystemTime::now() - Duration::from_secs(3600);
            for d in [&root, &w, &w.join(".git"), &home, &home.join(".config")] {
                std::fs::File::open(d).unwrap().set_modified(past).unwrap();
            }
            let later = SystemTime::now() + Duration::from_secs(3600);
            let (policy, watched) =
                crate::watch::watch_at(later, || Policy::with_home(&w, Some(&home)).unwrap());
            assert!(watched.is_reusable(), "{made}: {watched:?}");
            assert!(watched.len() <= 16, "{made}: {watched:?}");
            assert!(
                watched.changed().iter().all(|p| !p.starts_with(&root)),
                "{made}"
            );
            if made.ends_with("/sub") {
                std::fs::create_dir_all(root.join(made).join("hooks")).unwrap();
            } else if made.ends_with(".envrc") {
                std::fs::write(root.join(made), "export A=1\n").unwrap();
            } else {
                std::fs::create_dir(root.join(made)).unwrap();
            }
            assert!(
                watched.changed().contains(&root.join(dir).as_path()),
                "{made}: {watched:?}"
            );
            assert!(!watched.unchanged(), "{made}");
            let rebuilt = Policy::with_home(&w, Some(&home)).unwrap();
            assert_ne!(rebuilt, policy, "{made}: the change matters to the policy");
        }
    }

    /// The short cuts answer exactly as `canonicalize` does: for a file, an absent path, a
    /// dangling link, a link to a directory, a path through a linked parent, an absent name
    /// below a link, `..` and `.` on the way, and a name below a file.
    #[test]
    fn canonicalize_if_present_agrees_with_canonicalize() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir(root.join("dir")).unwrap();
        std::fs::write(root.join("dir/file"), "").unwrap();
        std::os::unix::fs::symlink(root.join("dir"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling")).unwrap();
        std::fs::write(root.join("file"), "").unwrap();
        for rel in [
            "dir/file",
            "absent",
            "absent/below",
            "dangling",
            "link",
            "link/file",
            "link/absent",
            "dir/../dir/file",
            "./dir",
            "file/below",
        ] {
            let path = root.join(rel);
            let expected = std::fs::canonicalize(&path).ok();
            assert_eq!(canonicalize_if_present(&path), expected, "{rel}");
            assert_eq!(canonicalize_below(&root, Path::new(rel)), expected, "{rel}");
        }
        assert_eq!(
            canonicalize_below(&root, Path::new("link/file")),
            Some(root.join("dir/file"))
        );
    }

    /// The binds come from the one protected list: every entry of it is protected in a root
    /// where it exists, each the way its `bind` says.
    #[test]
    fn every_entry_of_the_protected_list_is_bound() {
        let w = tempfile::tempdir().unwrap();
        for entry in PROTECTED_IN_ROOT {
            std::fs::create_dir_all(w.path().join(entry.name)).unwrap();
        }
        let p = Policy::with_home(w.path(), None).unwrap();
        let wd = std::fs::canonicalize(w.path()).unwrap();
        for entry in PROTECTED_IN_ROOT {
            let path = wd.join(entry.name);
            match entry.bind {
                Bind::GitDir => {
                    assert!(p.pinned.contains(&path));
                    assert!(p.read_only.contains(&path.join("hooks")));
                    assert!(p.read_only.contains(&path.join("config")));
                }
                Bind::ReadOnlyTree => {
                    assert!(p.read_only.contains(&path), "{}", entry.name);
                    assert!(p.create_if_missing.contains(&path), "{}", entry.name);
                }
                Bind::ReadOnlyIfPresent | Bind::Placeholder => {
                    assert!(p.read_only.contains(&path), "{}", entry.name)
                }
            }
        }
    }

    /// A class has no one path: the members the top holds (in any case) are carved out by
    /// name, and other names are not.
    #[test]
    fn the_members_of_a_class_at_the_top_are_bound() {
        let w = tempfile::tempdir().unwrap();
        for name in ["app.code-workspace", "X.CODE-WORKSPACE", "notes.md"] {
            std::fs::write(w.path().join(name), "{}").unwrap();
        }
        let p = Policy::with_home(w.path(), None).unwrap();
        let wd = std::fs::canonicalize(w.path()).unwrap();
        assert!(p.read_only.contains(&wd.join("app.code-workspace")));
        assert!(p.read_only.contains(&wd.join("X.CODE-WORKSPACE")));
        assert!(!p.read_only.contains(&wd.join("notes.md")));
    }

    /// What must not be created is not mounted over when absent (a mount point would stand on
    /// the host as an empty directory named `.envrc` or `AGENTS.md` for the whole session): the
    /// agent moves what a command created there aside after it instead.
    #[test]
    fn absent_placeholders_leave_nothing_on_the_host() {
        let w = tempfile::tempdir().unwrap();
        let p = Policy::with_home(w.path(), None).unwrap();
        let wd = std::fs::canonicalize(w.path()).unwrap();
        for name in [
            ".envrc",
            ".vscode",
            ".idea",
            ".mcp.json",
            "AGENTS.md",
            ".agents",
        ] {
            assert!(!p.read_only.contains(&wd.join(name)), "{name}");
            assert!(!p.create_if_missing.contains(&wd.join(name)), "{name}");
            assert!(!wd.join(name).exists(), "{name} created on the host");
        }
    }

    #[test]
    fn worktree_pointer_is_followed() {
        let w = tempfile::tempdir().unwrap();
        let main_git = w.path().join("main/.git");
        std::fs::create_dir_all(main_git.join("worktrees/wt")).unwrap();
        std::fs::write(main_git.join("worktrees/wt/commondir"), "../..\n").unwrap();
        std::fs::create_dir_all(w.path().join("wt")).unwrap();
        std::fs::write(
            w.path().join("wt/.git"),
            format!("gitdir: {}\n", main_git.join("worktrees/wt").display()),
        )
        .unwrap();
        // The worktree is the working directory; the main repository is an extra writable root.
        let mut p = Policy::with_home(&w.path().join("wt"), None).unwrap();
        p.add_writable(&w.path().join("main")).unwrap();
        let mg = std::fs::canonicalize(&main_git).unwrap();
        let wt = std::fs::canonicalize(w.path().join("wt")).unwrap();
        assert!(p.read_only.contains(&wt.join(".git")));
        assert!(p.read_only.contains(&mg.join("hooks")));
        assert!(p.read_only.contains(&mg.join("config")));
        assert!(p.pinned.contains(&mg));
    }

    #[test]
    fn submodule_git_dirs_are_protected() {
        let w = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(w.path().join(".git/modules/sub/hooks")).unwrap();
        let p = Policy::with_home(w.path(), None).unwrap();
        let wd = std::fs::canonicalize(w.path()).unwrap();
        assert!(p.read_only.contains(&wd.join(".git/modules/sub/hooks")));
        assert!(p.read_only.contains(&wd.join(".git/modules/sub/config")));
    }

    #[test]
    fn bad_paths_are_errors() {
        assert!(Policy::with_home(Path::new("/definitely/not/here"), None).is_err());
        assert!(Policy::with_home(Path::new("/"), None).is_err());
        let w = tempfile::tempdir().unwrap();
        let mut p = Policy::with_home(w.path(), None).unwrap();
        assert!(p.add_deny_read(Path::new("/")).is_err());
        assert!(p.add_deny_read(Path::new("/definitely/../x/y")).is_err());
        assert!(p.add_writable(Path::new("/")).is_err());
    }

    #[test]
    fn absent_deny_read_paths_resolve_through_their_existing_ancestor() {
        let w = tempfile::tempdir().unwrap();
        let wd = std::fs::canonicalize(w.path()).unwrap();
        let mut p = Policy::with_home(w.path(), None).unwrap();
        p.add_deny_read(&w.path().join("not/yet")).unwrap();
        assert_eq!(p.deny_read, vec![wd.join("not/yet")]);
    }

    proptest::proptest! {
        /// A `.git` pointer file is repository content (untrusted): any bytes are handled
        /// without panicking, and whatever it names is only followed when it exists.
        #[test]
        fn any_gitdir_pointer_is_handled(content in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let w = tempfile::tempdir().unwrap();
            std::fs::write(w.path().join(".git"), &content).unwrap();
            let p = Policy::with_home(w.path(), None).unwrap();
            let wd = std::fs::canonicalize(w.path()).unwrap();
            proptest::prop_assert!(p.read_only.contains(&wd.join(".git")));
            for path in &p.read_only {
                proptest::prop_assert!(path.is_absolute());
            }
        }
    }
}
