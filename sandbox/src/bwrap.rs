//! Rendering a [`Policy`] as a bubblewrap argument vector.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::policy::{Network, Policy};

/// Places where system bubblewrap is looked for, in order. Never `$PATH`: a `bwrap` planted in
/// the working directory (or anywhere the command can write) must not be picked.
pub const BWRAP_LOCATIONS: &[&str] = &["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"];

/// Namespace and privilege flags used for every bubblewrap invocation, probe included.
pub const ISOLATION_FLAGS: &[&str] = &[
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--disable-userns",
    "--cap-drop",
    "ALL",
    "--new-session",
    "--die-with-parent",
];

/// What the installed bubblewrap supports (found by the probe).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BwrapInfo {
    /// Absolute path of the binary.
    pub path: PathBuf,
    /// `--disable-userns` works (bubblewrap ≥ 0.8.0 on a kernel that allows it). Without it the
    /// seccomp filter alone refuses new user namespaces.
    pub disable_userns: bool,
}

/// The isolation flags for this bubblewrap.
pub fn isolation_flags(info: &BwrapInfo) -> impl Iterator<Item = &'static str> {
    let disable = info.disable_userns;
    ISOLATION_FLAGS
        .iter()
        .copied()
        .filter(move |f| disable || *f != "--disable-userns")
}

/// The bubblewrap command line for a policy, and the mount points bubblewrap will create on the
/// host (inside writable roots) that the caller removes afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BwrapPlan {
    /// Arguments after the bwrap program name, ending with `--` and `inner`.
    pub args: Vec<OsString>,
    /// Read-only paths that did not exist and are covered by an empty read-only directory; the
    /// directory bubblewrap creates for them on the host is removed after the run if still empty.
    pub stubs: Vec<PathBuf>,
    /// Carve-outs not mounted (a link leading out of the writable directories or nowhere), for
    /// `--explain`.
    pub skipped: Vec<SkippedCarveOut>,
}

/// Renders `policy` as bubblewrap arguments that run `inner` (argv, program first).
///
/// The order matters: bubblewrap applies mounts in argument order, so `/tmp` is made private
/// before a working directory under `/tmp` is bound, writable roots come before the read-only
/// carve-outs inside them, and carve-outs are applied parents first.
pub fn render(policy: &Policy, info: &BwrapInfo, inner: &[OsString]) -> BwrapPlan {
    render_assuming(policy, info, inner, &[])
}

/// [`render`], treating the read-only paths in `absent` as absent although they exist: they are
/// the empty mount points an earlier rendering of the same policy made bubblewrap create (its
/// `stubs`), so a policy rendered again while that sandbox runs gives the same arguments.
pub fn render_assuming(
    policy: &Policy,
    info: &BwrapInfo,
    inner: &[OsString],
    absent: &[PathBuf],
) -> BwrapPlan {
    let mut a = Args::default();
    for flag in isolation_flags(info) {
        a.push(flag);
    }
    if policy.network.isolated() {
        a.push("--unshare-net");
    }
    a.push3("--ro-bind", "/", "/");
    a.push2("--dev", "/dev");
    a.push2("--proc", "/proc");
    if policy.private_tmp {
        a.push2("--tmpfs", "/tmp");
    }
    if policy.network == Network::Proxy
        && let Some(route) = &policy.proxy
    {
        a.0.extend(crate::netfwd::bwrap_bind(route, policy.private_tmp));
    }
    // Pathname Unix sockets ignore read-only mounts, and `/run` holds host services' sockets
    // nobody can list in full (docker, D-Bus, systemd, tmux under /run/lock, screen, libvirt,
    // snapd...): it is hidden whatever the network, and with a network only what name
    // resolution needs comes back.
    for dir in RUN_DIRS {
        if crate::watch::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
            a.push_tmpfs_ro(Path::new(dir));
        }
    }
    if !policy.network.isolated() {
        for dir in name_resolution_dirs() {
            a.push_bind("--ro-bind", &dir, &dir);
        }
    }
    // A hidden path that contains a writable root (working inside ~/.ssh) is hidden first, and
    // the root is bound on top, so only the rest of it disappears.
    let (deny_outer, deny_inner): (Vec<&PathBuf>, Vec<&PathBuf>) = policy
        .deny_read
        .iter()
        .partition(|d| policy.all_writable().any(|root| root.starts_with(d)));
    // bubblewrap creates the roots' mount points inside that tmpfs, so it is made read-only only
    // after the binds (a remount does not affect the mounts below it).
    let outer_dirs: Vec<&PathBuf> = deny_outer
        .into_iter()
        .filter(|d| {
            !hidden_by_tmpfs(policy, d) && crate::watch::metadata(d).is_ok_and(|m| m.is_dir())
        })
        .collect();
    for dir in &outer_dirs {
        a.push2("--tmpfs", dir.as_os_str());
    }
    for root in policy.all_writable() {
        a.push_bind("--bind", root, root);
    }
    // A working directory the private `/tmp` covered and no writable root brought back (the
    // read-only policy of a project under `/tmp`) is bound again read-only: the command must
    // find the project it was asked to read.
    if workdir_rebound_read_only(policy) {
        a.push_bind("--ro-bind", &policy.workdir, &policy.workdir);
    }
    for dir in &outer_dirs {
        a.push2("--remount-ro", dir.as_os_str());
    }

    let mut stubs = Vec::new();
    let mut skipped = Vec::new();
    // Each carve-out is resolved here, when bubblewrap is about to mount it, and bound at its
    // canonical place: bubblewrap follows links on both sides of a bind, so a carve-out that a
    // command turned into a link (`AGENTS.md -> d/tmp`, then `d -> ../../..`) would otherwise
    // mount the host's directory the link leads to over the private one of the same name.
    let mut carve_outs: Vec<(PathBuf, bool, Mount)> = Vec::new();
    for (path, pinned) in policy
        .pinned
        .iter()
        .map(|p| (p, true))
        .chain(policy.read_only.iter().map(|p| (p, false)))
    {
        match carve_out_mount(policy, path, absent.contains(path)) {
            Ok(mount) => {
                let at = match &mount {
                    Mount::Bind(at) => at.clone(),
                    Mount::Stub => path.clone(),
                };
                if !carve_outs
                    .iter()
                    .any(|(p, pin, _)| *p == at && *pin == pinned)
                {
                    carve_outs.push((at, pinned, mount));
                }
            }
            Err(why) => skipped.push(SkippedCarveOut {
                path: path.clone(),
                why,
            }),
        }
    }
    // Parents first; at equal depth pins before read-only binds. Stable sort keeps input order.
    carve_outs.sort_by_key(|(p, pinned, _)| (p.components().count(), !*pinned));
    for (at, pinned, mount) in carve_outs {
        match (mount, pinned) {
            (Mount::Bind(_), true) => a.push_bind("--bind", &at, &at),
            (Mount::Bind(_), false) => a.push_bind("--ro-bind", &at, &at),
            // Pinning an absent directory holds nothing below it.
            (Mount::Stub, true) => {}
            (Mount::Stub, false) => {
                a.push_tmpfs_ro(&at);
                stubs.push(at);
            }
        }
    }

    // Everything that hides comes after every bind: a bind applied later would bring back what
    // a hide covered (a working directory under the private /tmp, a writable root that contains
    // a deny-read path or the ssh-agent socket).
    for socket in escalation_sockets(&policy.sockets) {
        if hidden_by_tmpfs(policy, &socket) {
            continue;
        }
        match crate::watch::symlink_metadata(&socket) {
            Ok(m) if m.is_dir() => a.push_tmpfs_ro(&socket),
            Ok(_) => a.push_bind_null(&socket),
            Err(_) => {}
        }
    }
    stubs.extend(push_deny_read(&mut a, policy, deny_inner));
    if policy.private_tmp {
        a.push3("--setenv", "TMPDIR", "/tmp");
    }
    a.push2("--chdir", policy.workdir.as_os_str());
    a.push("--");
    a.0.extend(inner.iter().cloned());
    BwrapPlan {
        args: a.0,
        stubs,
        skipped,
    }
}

/// The directories where host services put their sockets, covered by an empty tmpfs.
const RUN_DIRS: [&str; 2] = ["/run", "/var/run"];

/// Mount points bubblewrap makes private (or hides): nothing from the host is ever bound onto
/// one of them, nor onto a directory above one, nor below `/proc` and `/dev`.
const PRIVATE_MOUNTS: [&str; 5] = ["/tmp", "/run", "/var/run", "/dev", "/proc"];

/// How a carve-out is mounted.
#[derive(Debug)]
enum Mount {
    /// The existing path, at its canonical place (no link left on the way).
    Bind(PathBuf),
    /// Absent: covered by an empty read-only directory at the path, which has no link on the
    /// way.
    Stub,
}

/// A carve-out of the policy that [`render_assuming`] did not mount, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SkippedCarveOut {
    pub path: PathBuf,
    pub why: &'static str,
}

/// Where the carve-out `path` is mounted: at its canonical place, and only inside a writable
/// root (outside them everything is read-only already, and a bind there could only bring back
/// a host directory that a private mount hid). A link that leads nowhere (dangling, a loop) is
/// not mounted: an error here would make every later sandbox fail to start.
fn carve_out_mount(
    policy: &Policy,
    path: &Path,
    taken_for_absent: bool,
) -> Result<Mount, &'static str> {
    let mount = if taken_for_absent {
        Mount::Stub
    } else {
        match crate::watch::symlink_metadata(path) {
            Ok(_) => match crate::watch::canonicalize(path) {
                Ok(canonical) => Mount::Bind(canonical),
                Err(_) => return Err("a link that leads nowhere (dangling or a loop)"),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // bubblewrap makes the stub's directory where the path is, following links:
                // only in an existing parent with no link on the way (a dangling one would
                // fail the whole sandbox's start).
                let parent_is_canonical = path.parent().is_some_and(|parent| {
                    crate::watch::canonicalize(parent).is_ok_and(|c| c == parent)
                });
                if !parent_is_canonical {
                    return Err("absent, below a link or a missing directory");
                }
                Mount::Stub
            }
            Err(_) => return Err("cannot be looked at"),
        }
    };
    let at = match &mount {
        Mount::Bind(at) => at.as_path(),
        Mount::Stub => path,
    };
    if !policy.is_inside_writable(at) {
        return Err("leads outside the writable directories (read-only there already)");
    }
    if onto_a_private_mount(at) {
        return Err("leads onto a mount the sandbox makes private");
    }
    Ok(mount)
}

/// Whether a bind at `path` would cover (part of) a mount the sandbox makes private.
fn onto_a_private_mount(path: &Path) -> bool {
    PRIVATE_MOUNTS
        .iter()
        .any(|m| Path::new(m).starts_with(path))
        || path.starts_with("/proc")
        || path.starts_with("/dev")
}

/// The directories under `/run` that name resolution reads, bound back (read-only) over the
/// hidden `/run` when the command has a network: the directory holding the target of
/// `/etc/resolv.conf` (systemd-resolved's `/run/systemd/resolve`, NetworkManager's,
/// resolvconf's), whose files are replaced by rename, so the directory rather than the file.
/// Nothing else under `/run` comes back (nscd's socket neither: without it glibc resolves
/// itself).
fn name_resolution_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for file in ["/etc/resolv.conf", "/etc/hosts"] {
        let Ok(target) = crate::watch::canonicalize(file) else {
            continue;
        };
        let Some(dir) = target.parent() else {
            continue;
        };
        let under_run = RUN_DIRS
            .iter()
            .any(|run| dir.starts_with(run) && dir != Path::new(run));
        if under_run && !dirs.iter().any(|d| d == dir) {
            dirs.push(dir.to_path_buf());
        }
    }
    dirs
}

/// Hides each path: an empty read-only tmpfs over a directory, `/dev/null` over a file. A path
/// that does not exist inside a writable root is covered by an empty read-only directory, so
/// neither the command nor a host process creating it later exposes it; the directories
/// bubblewrap creates on the host for that are returned for removal after the run. (Outside the
/// writable roots an absent path cannot be mounted over; the helper's Landlock rules keep it
/// unreadable if it appears during the run.)
fn push_deny_read(a: &mut Args, policy: &Policy, mut deny: Vec<&PathBuf>) -> Vec<PathBuf> {
    deny.sort_by_key(|p| p.components().count());
    let mut stubs = Vec::new();
    for path in deny {
        if hidden_by_tmpfs(policy, path) {
            continue;
        }
        match crate::watch::metadata(path) {
            Ok(m) if m.is_dir() => a.push_tmpfs_ro(path),
            Ok(_) => a.push_bind_null(path),
            Err(_) if policy.is_inside_writable(path) => {
                // bubblewrap creates the missing directories on the host (the root is a bind):
                // every one of them is removed afterwards if still empty, deepest first.
                let mut missing: Vec<PathBuf> = path
                    .ancestors()
                    .take_while(|p| crate::watch::symlink_metadata(p).is_err())
                    .map(Path::to_path_buf)
                    .collect();
                missing.reverse();
                stubs.extend(missing);
                a.push_tmpfs_ro(path);
            }
            Err(_) => {}
        }
    }
    stubs
}

/// Host sockets (or their directories) that give a way out of any sandbox: container engines,
/// the system D-Bus, the user's session bus and systemd instance, and `extra` (the ssh agent).
pub fn escalation_sockets(extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = [
        "/run/docker.sock",
        "/var/run/docker.sock",
        "/run/containerd",
        "/run/podman",
        "/run/dbus",
        "/run/user",
        "/var/run/dbus",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    v.extend(extra.iter().filter(|p| p.is_absolute()).cloned());
    // Through a symlink (/var/run -> /run) the same socket must not be bound twice.
    let mut out: Vec<PathBuf> = Vec::new();
    for p in v {
        if let Some(c) = crate::policy::canonicalize_if_present(&p)
            && !out.contains(&c)
        {
            out.push(c);
        }
    }
    out
}

/// Whether `path` is already invisible because a private tmpfs covers it and no writable root
/// (or the working directory, bound again read-only, or name resolution's directory) brings it
/// back.
fn hidden_by_tmpfs(policy: &Policy, path: &Path) -> bool {
    covered_by_tmpfs(policy, path)
        && !policy.is_inside_writable(path)
        && !(workdir_rebound_read_only(policy) && path.starts_with(&policy.workdir))
        && (policy.network.isolated()
            || !name_resolution_dirs().iter().any(|d| path.starts_with(d)))
}

/// Whether a private tmpfs (`/tmp`, `/run`) lies over `path`.
fn covered_by_tmpfs(policy: &Policy, path: &Path) -> bool {
    (policy.private_tmp && path.starts_with("/tmp"))
        || RUN_DIRS.iter().any(|run| path.starts_with(run))
}

/// Whether the working directory lies under a private tmpfs without being writable, so that
/// [`render_assuming`] binds it again read-only.
fn workdir_rebound_read_only(policy: &Policy) -> bool {
    !policy.is_inside_writable(&policy.workdir) && covered_by_tmpfs(policy, &policy.workdir)
}

#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn push(&mut self, s: impl Into<OsString>) {
        self.0.push(s.into());
    }
    fn push2(&mut self, a: &str, b: impl Into<OsString>) {
        self.push(a);
        self.push(b);
    }
    fn push3(&mut self, a: &str, b: impl Into<OsString>, c: impl Into<OsString>) {
        self.push(a);
        self.push(b);
        self.push(c);
    }
    fn push_bind(&mut self, flag: &str, src: &Path, dst: &Path) {
        self.push3(flag, src.as_os_str(), dst.as_os_str());
    }
    fn push_tmpfs_ro(&mut self, path: &Path) {
        self.push2("--tmpfs", path.as_os_str());
        self.push2("--remount-ro", path.as_os_str());
    }
    fn push_bind_null(&mut self, path: &Path) {
        self.push3("--ro-bind", "/dev/null", path.as_os_str());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> BwrapInfo {
        BwrapInfo {
            path: "/usr/bin/bwrap".into(),
            disable_userns: true,
        }
    }

    #[test]
    fn disable_userns_is_dropped_only_when_unsupported() {
        let old = BwrapInfo {
            disable_userns: false,
            ..info()
        };
        assert!(isolation_flags(&info()).any(|f| f == "--disable-userns"));
        assert!(!isolation_flags(&old).any(|f| f == "--disable-userns"));
        assert_eq!(isolation_flags(&old).count(), ISOLATION_FLAGS.len() - 1);
    }

    fn strings(args: &[OsString]) -> Vec<String> {
        args.iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect()
    }

    fn position(v: &[String], window: &[&str]) -> usize {
        v.windows(window.len())
            .position(|w| w.iter().zip(window).all(|(a, b)| a == b))
            .unwrap_or_else(|| panic!("{window:?} not in {v:?}"))
    }

    #[test]
    fn renders_isolation_mounts_and_carve_outs_in_order() {
        let w = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(w.path().join(".git/hooks")).unwrap();
        std::fs::write(w.path().join(".git/config"), "").unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(home.path().join(".ssh")).unwrap();
        std::fs::write(home.path().join(".netrc"), "x").unwrap();
        let mut p = Policy::with_home(w.path(), Some(home.path())).unwrap();
        // Test directories live under /tmp; render as if /tmp were shared so they show up.
        p.private_tmp = false;
        let plan = render(&p, &info(), &["/bin/true".into()]);
        let v = strings(&plan.args);
        let wd = p.workdir.to_string_lossy().into_owned();
        let hd = std::fs::canonicalize(home.path()).unwrap();
        for flag in ISOLATION_FLAGS {
            assert!(v.iter().any(|a| a == flag), "{flag}");
        }
        assert!(!v.iter().any(|a| a == "--unshare-net"));
        let root = position(&v, &["--ro-bind", "/", "/"]);
        let bind_w = position(&v, &["--bind", &wd, &wd]);
        let pin = position(
            &v,
            &["--bind", &format!("{wd}/.git"), &format!("{wd}/.git")],
        );
        let hooks = position(
            &v,
            &[
                "--ro-bind",
                &format!("{wd}/.git/hooks"),
                &format!("{wd}/.git/hooks"),
            ],
        );
        let config = position(
            &v,
            &[
                "--ro-bind",
                &format!("{wd}/.git/config"),
                &format!("{wd}/.git/config"),
            ],
        );
        assert!(root < bind_w && bind_w < pin && pin < hooks && pin < config);
        // .gg does not exist: covered by an empty read-only directory, removed afterwards.
        position(
            &v,
            &[
                "--tmpfs",
                &format!("{wd}/.gg"),
                "--remount-ro",
                &format!("{wd}/.gg"),
            ],
        );
        assert_eq!(plan.stubs, vec![p.workdir.join(".gg")]);
        let ssh = hd.join(".ssh").to_string_lossy().into_owned();
        position(&v, &["--tmpfs", &ssh, "--remount-ro", &ssh]);
        position(
            &v,
            &[
                "--ro-bind",
                "/dev/null",
                &hd.join(".netrc").to_string_lossy(),
            ],
        );
        assert_eq!(&v[v.len() - 4..], &["--chdir", &wd, "--", "/bin/true"]);
    }

    #[test]
    fn network_off_and_private_tmp() {
        let w = tempfile::tempdir().unwrap();
        let mut p = Policy::with_home(w.path(), None).unwrap();
        p.network = Network::Off;
        let v = strings(&render(&p, &info(), &["x".into()]).args);
        assert!(v.iter().any(|a| a == "--unshare-net"));
        let tmp = position(&v, &["--tmpfs", "/tmp"]);
        let wd = p.workdir.to_string_lossy().into_owned();
        // The working directory under /tmp is bound after /tmp is made private.
        assert!(tmp < position(&v, &["--bind", &wd, &wd]));
        position(&v, &["--setenv", "TMPDIR", "/tmp"]);
        if Path::new("/run").is_dir() {
            position(&v, &["--tmpfs", "/run", "--remount-ro", "/run"]);
        }
    }

    #[test]
    fn read_only_workdir_under_the_private_tmp_is_bound_back_with_its_secrets_hidden() {
        // A project under /tmp: the private /tmp covers it, and read-only nothing is writable
        // to bring it back, so it is bound again read-only, and the secrets inside it are
        // still hidden on top.
        let w = tempfile::tempdir_in("/tmp").unwrap();
        std::fs::write(w.path().join("token.pem"), "x").unwrap();
        let mut p = Policy::with_home(w.path(), None).unwrap();
        p.add_deny_read(&w.path().join("token.pem")).unwrap();
        let p = p.read_only();
        let v = strings(&render(&p, &info(), &["x".into()]).args);
        let wd = p.workdir.to_string_lossy().into_owned();
        let tmp = position(&v, &["--tmpfs", "/tmp"]);
        let bind = position(&v, &["--ro-bind", &wd, &wd]);
        assert!(tmp < bind);
        assert!(!v.windows(3).any(|w| w[0] == "--bind" && w[1] == wd));
        let secret = format!("{wd}/token.pem");
        let hide = position(&v, &["--ro-bind", "/dev/null", &secret]);
        assert!(bind < hide);
        // Elsewhere under /tmp stays covered: nothing else is bound back.
        assert!(
            !v.iter()
                .any(|a| a.starts_with("/tmp/") && !a.starts_with(&wd))
        );
    }

    /// A carve-out that is a link is bound where it leads, only inside the project: a link to
    /// the host's `/tmp` (re-pointed after the policy was made), to a directory outside, or to
    /// nowhere is not bound at all, and says why.
    #[test]
    fn carve_outs_are_bound_at_their_canonical_place_never_through_a_link() {
        let w = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let wd = std::fs::canonicalize(w.path()).unwrap();
        std::fs::create_dir(wd.join("docs")).unwrap();
        std::fs::write(wd.join("docs/agents.md"), "").unwrap();
        std::os::unix::fs::symlink("docs/agents.md", wd.join("AGENTS.md")).unwrap();
        std::os::unix::fs::symlink(outside.path(), wd.join(".vscode")).unwrap();
        std::os::unix::fs::symlink("/nonexistent-gg/x", wd.join(".envrc")).unwrap();
        std::os::unix::fs::symlink(".mcp.json", wd.join(".mcp.json")).unwrap();
        std::os::unix::fs::symlink("docs/agents.md", wd.join("GEMINI.md")).unwrap();
        let mut p = Policy::with_home(&wd, None).unwrap();
        let agents = wd.join("docs/agents.md");
        assert!(p.read_only.contains(&agents));
        for name in ["AGENTS.md", ".vscode", ".envrc", ".mcp.json"] {
            assert!(!p.read_only.contains(&wd.join(name)), "{name}");
        }
        // A kept policy whose link a command re-pointed since: to `/tmp`.
        std::fs::remove_file(wd.join("GEMINI.md")).unwrap();
        let up = "../".repeat(wd.components().count() - 1);
        std::os::unix::fs::symlink(format!("{up}tmp"), wd.join("GEMINI.md")).unwrap();
        for name in ["GEMINI.md", ".vscode", ".envrc", ".mcp.json"] {
            p.read_only.push(wd.join(name));
        }
        let plan = render(&p, &info(), &["x".into()]);
        let v = strings(&plan.args);
        let agents = agents.to_string_lossy().into_owned();
        position(&v, &["--ro-bind", &agents, &agents]);
        assert_eq!(v.iter().filter(|a| **a == agents).count(), 2, "bound once");
        for name in ["AGENTS.md", "GEMINI.md", ".vscode", ".envrc", ".mcp.json"] {
            let path = wd.join(name).to_string_lossy().into_owned();
            assert!(!v.contains(&path), "{name} mounted: {v:?}");
        }
        let outside = std::fs::canonicalize(outside.path()).unwrap();
        assert!(!v.contains(&outside.to_string_lossy().into_owned()));
        assert!(
            !v.windows(2)
                .any(|w| w[0].ends_with("bind") && w[1] == "/tmp"),
            "{v:?}"
        );
        let skipped: Vec<&Path> = plan.skipped.iter().map(|s| s.path.as_path()).collect();
        for name in ["GEMINI.md", ".vscode", ".envrc", ".mcp.json"] {
            assert!(skipped.contains(&wd.join(name).as_path()), "{name}");
        }
    }

    /// A bind never covers a mount the sandbox makes private, even from a writable root.
    #[test]
    fn nothing_is_bound_onto_a_private_mount() {
        for path in ["/", "/tmp", "/run", "/var", "/dev/shm", "/proc/1", "/dev"] {
            assert!(onto_a_private_mount(Path::new(path)), "{path}");
        }
        for path in ["/tmp/x", "/run/x", "/home/u/p"] {
            assert!(!onto_a_private_mount(Path::new(path)), "{path}");
        }
    }

    /// `/run` is hidden with the network on too; only name resolution's directory returns.
    #[test]
    fn run_is_hidden_whatever_the_network() {
        let w = tempfile::tempdir().unwrap();
        let p = Policy::with_home(w.path(), None).unwrap();
        assert_eq!(p.network, Network::On);
        let v = strings(&render(&p, &info(), &["x".into()]).args);
        if Path::new("/run").is_dir() {
            let hide = position(&v, &["--tmpfs", "/run", "--remount-ro", "/run"]);
            for dir in name_resolution_dirs() {
                let dir = dir.to_string_lossy().into_owned();
                assert!(hide < position(&v, &["--ro-bind", &dir, &dir]));
            }
        }
    }

    #[test]
    fn workdir_inside_a_hidden_directory_stays_visible() {
        let home = tempfile::tempdir().unwrap();
        let w = home.path().join(".ssh/proj");
        std::fs::create_dir_all(&w).unwrap();
        let mut p = Policy::with_home(&w, Some(home.path())).unwrap();
        p.private_tmp = false;
        let v = strings(&render(&p, &info(), &["x".into()]).args);
        let ssh = std::fs::canonicalize(home.path().join(".ssh"))
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let wd = p.workdir.to_string_lossy().into_owned();
        let hide = position(&v, &["--tmpfs", &ssh]);
        let bind = position(&v, &["--bind", &wd, &wd]);
        assert!(hide < bind && bind < position(&v, &["--remount-ro", &ssh]));
    }
}
