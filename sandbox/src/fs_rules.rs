//! The Landlock ruleset the helper applies: read and execute everything but the deny-read paths,
//! write only the writable roots, no TCP when the network is off, no signals or abstract sockets out of the sandbox.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use serde::{Deserialize, Serialize};

use crate::policy::{Network, Policy};
use crate::watch::Stamp;

/// The newest Landlock ABI whose rights were reviewed for this ruleset; newer kernels are used at
/// this level (best effort downwards on older ones).
pub const TARGET_ABI: ABI = ABI::V6;

/// Device files every build tool expects to open for writing, in a `/dev` of the sandbox's own
/// (bubblewrap's, whose `/dev/pts` holds only the terminals its commands open).
pub const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The devices a command run read-only may open, at either level, and all that is readable of
/// the host's `/dev` at the landlock level: the sources and sinks of data every program
/// expects, and nothing another program's data passes through. No terminal (`/dev/pts/*` are
/// the person's and every other session's terminals: a read there takes the keystrokes typed
/// into it), no console or its screen memory (`/dev/tty[0-9]*`, `/dev/console`, `/dev/vcs*`),
/// no disk, no `/dev/shm` of other programs. `/dev/fd`, `/dev/stdin` and the like are links
/// into `/proc/self/fd`, which stays readable.
pub const DATA_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// The host's device directory, which the landlock level cannot replace with its own.
pub const HOST_DEV: &str = "/dev";

/// A Landlock ruleset, as data (rendered from a [`Policy`], applied by the helper).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockPlan {
    /// Readable and executable trees.
    pub read_only: Vec<PathBuf>,
    /// Trees with every right except creating device nodes.
    pub read_write: Vec<PathBuf>,
    /// Device files that may be opened for reading and writing (and terminal ioctls).
    pub devices: Vec<PathBuf>,
    /// A device directory of the host (its `/dev`, at the landlock level) whose entries are
    /// readable only as `devices` and `own_terminals` grant them: it is listed, and the rest
    /// of it (other people's terminals, disks) is not opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices_only: Option<PathBuf>,
    /// The terminals the command holds as its standard input, output or error (the helper
    /// finds them as it starts), openable again by name as the descriptors allow: `echo >
    /// /dev/stderr` reopens the terminal `/dev/stderr` leads to, which `devices_only` would
    /// otherwise refuse. Grants nothing the descriptors do not give already.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub own_terminals: Vec<OwnTerminal>,
    /// Refuse TCP bind and connect (except connecting to `connect_tcp`).
    pub deny_tcp: bool,
    /// With `deny_tcp`: the ports TCP connections may still go to (the network proxy's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_tcp: Vec<u16>,
    /// Refuse signals and abstract Unix socket connections to processes outside the sandbox.
    pub scoped: bool,
    /// Refuse signals to processes outside the ruleset's domain, and only those (the guard's:
    /// a command on the host signals what it started, not gg, the guard's server or the
    /// person's other programs; its abstract sockets are the person's as its network is).
    /// Implied by `scoped`.
    #[serde(default)]
    pub signals_scoped: bool,
    /// Paths to keep unreadable although they lie under `read_only`: read is granted on their
    /// siblings instead of on the tree above them (see [`read_grants`]).
    #[serde(default)]
    pub deny_read: Vec<PathBuf>,
    /// A command run read-only ([`Policy::read_only`]): in a session server whose seccomp
    /// filters allow sockets (the workspace sandbox of `--sandbox`), the command adds a filter
    /// of its own that refuses them (filters stack, as Landlock rulesets do).
    #[serde(default)]
    pub no_sockets: bool,
    /// The guard of a command gg runs without a sandbox ([`guard_plan`]): each `read_write`
    /// root is granted around the `deny_read` and `keep` paths inside it, as `read_only` is
    /// around `deny_read`, instead of as a whole. The sandbox leaves a secret inside a writable
    /// root to bubblewrap's mounts ([`unhideable`]); the guard has no mounts, and its writable
    /// roots may hold secrets and start-up files (a project that is the home, a home inside
    /// `/var/tmp`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub split_writable: bool,
    /// With `split_writable`: paths inside a `read_write` root left readable but not writable,
    /// granted around as a hidden path is: the directory holding one is list-only, so nothing
    /// can be made, removed or renamed in it either. A `read_write` root inside a kept path is
    /// still writable (a package cache inside `~/.cargo`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keep: Vec<PathBuf>,
}

/// A terminal a command already holds on one of its standard descriptors.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnTerminal {
    pub path: PathBuf,
    /// Held on standard input (read), besides or instead of output (write).
    pub read: bool,
    pub write: bool,
}

/// Renders the ruleset for `policy`; `private_dirs` are the command's temp directories;
/// `host_dev` when the command sees the host's `/dev` (the landlock level).
pub fn plan(policy: &Policy, private_dirs: &[PathBuf], host_dev: bool) -> LandlockPlan {
    let mut read_write: Vec<PathBuf> = policy.all_writable().map(Path::to_path_buf).collect();
    read_write.extend(private_dirs.iter().cloned());
    let devices = if !policy.workdir_writable {
        DATA_DEVICES.iter().map(PathBuf::from).collect()
    } else if host_dev {
        // `/dev/tty` is the command's controlling terminal, and it has none (it runs in a
        // session of its own): programs that ask for a password there get ENXIO, as they
        // expect without a terminal. No `/dev/ptmx` and `/dev/pts`: a rule on `/dev/pts`
        // would grant every terminal of the host, the person's among them (Landlock rules are
        // grants, and a new terminal's entry cannot be told from an old one's), so commands
        // that open a pseudo-terminal of their own need the bubblewrap level.
        DATA_DEVICES
            .iter()
            .chain(&["/dev/tty"])
            .map(PathBuf::from)
            .collect()
    } else {
        WRITABLE_DEVICES.iter().map(PathBuf::from).collect()
    };
    LandlockPlan {
        devices_only: host_dev.then(|| PathBuf::from(HOST_DEV)),
        deny_tcp: policy.network.isolated(),
        connect_tcp: match (&policy.network, &policy.proxy) {
            (Network::Proxy, Some(route)) => vec![route.port],
            _ => Vec::new(),
        },
        scoped: true,
        no_sockets: !policy.workdir_writable,
        ..LandlockPlan::writing(read_write, devices, policy.deny_read.clone())
    }
}

/// The guard of a command gg runs without a sandbox (`sandbox::guard`): the shape of the
/// sandbox's workspace-write plan ([`LandlockPlan::writing`]: everything readable but
/// `deny_read`, nothing writable but `writable` and the data devices), with `deny_read` hidden
/// and `keep` read-only inside the writable roots too ([`LandlockPlan::split_writable`]). No
/// network rule, no scoping: such a command may listen, connect and signal as any program of
/// the person's. Which roots are writable is the guard's to say (the project, the temporary
/// directories, the home's package caches).
pub fn guard_plan(
    writable: Vec<PathBuf>,
    deny_read: Vec<PathBuf>,
    keep: Vec<PathBuf>,
) -> LandlockPlan {
    LandlockPlan {
        split_writable: true,
        signals_scoped: true,
        keep,
        ..LandlockPlan::writing(
            writable,
            DATA_DEVICES.iter().map(PathBuf::from).collect(),
            deny_read,
        )
    }
}

impl LandlockPlan {
    /// Everything readable, nothing writable, no device, network or scope rule, nothing
    /// hidden or kept: where the other plans start from.
    pub fn read_only_root() -> LandlockPlan {
        LandlockPlan {
            read_only: vec![PathBuf::from("/")],
            read_write: Vec::new(),
            devices: Vec::new(),
            devices_only: None,
            own_terminals: Vec::new(),
            deny_tcp: false,
            connect_tcp: Vec::new(),
            scoped: false,
            signals_scoped: false,
            deny_read: Vec::new(),
            no_sockets: false,
            split_writable: false,
            keep: Vec::new(),
        }
    }

    /// The one shape of a plan that writes (the sandbox's workspace plan, the guard's):
    /// everything readable but `deny_read`, every right but making device nodes in the
    /// `read_write` roots, `devices` opened for reading and writing; no network, scope or
    /// device-directory rule (the caller adds its own).
    pub fn writing(
        read_write: Vec<PathBuf>,
        devices: Vec<PathBuf>,
        deny_read: Vec<PathBuf>,
    ) -> LandlockPlan {
        LandlockPlan {
            read_write,
            devices,
            deny_read,
            ..LandlockPlan::read_only_root()
        }
    }
}

/// Read grants that keep `deny` unreadable under the readable `roots`, computed from the live
/// tree: Landlock rules only allow, so instead of granting a root that holds a hidden path, each
/// directory on the way down to it gets list-only access and every other entry of it full read
/// access (a symlink among them gets none: see [`listed_entry_rules`]). Returns `(full read,
/// list only)`.
///
/// What remains visible: the *names* inside a hidden directory (listing is inherited from its
/// parent), and nothing created later directly in a directory on the way down is readable (it
/// inherits list-only access) — which is also why a hidden path that appears during the run stays
/// hidden.
pub fn read_grants(roots: &[PathBuf], deny: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let grants = grants(roots, deny);
    (grants.full, grants.list_only)
}

/// [`read_grants`], with the directories it listed.
fn grants(roots: &[PathBuf], deny: &[PathBuf]) -> Grants {
    let mut grants = Grants::default();
    for root in roots {
        if deny.iter().any(|d| root.starts_with(d)) {
            continue;
        }
        split_grant(root, deny, 0, &mut grants);
    }
    grants
}

/// What [`split_grant`] found: the grants, and the directories it listed (with what they were
/// when listed), on which the grants depend.
#[derive(Default)]
struct Grants {
    full: Vec<PathBuf>,
    list_only: Vec<PathBuf>,
    listed: Vec<Seen>,
}

fn split_grant(dir: &Path, deny: &[PathBuf], depth: usize, grants: &mut Grants) {
    let below: Vec<&PathBuf> = deny
        .iter()
        .filter(|d| d.starts_with(dir) && d.as_path() != dir)
        .collect();
    if below.is_empty() {
        grants.full.push(dir.to_path_buf());
        return;
    }
    // Stamped before it is read: an entry made after this point changes the stamp.
    grants.listed.push(Seen::listed(dir));
    let Ok(entries) = std::fs::read_dir(dir) else {
        // Unlistable: grant nothing below rather than the whole tree.
        grants.list_only.push(dir.to_path_buf());
        return;
    };
    grants.list_only.push(dir.to_path_buf());
    for entry in entries.flatten() {
        let path = entry.path();
        if below.iter().any(|d| **d == path) {
            continue;
        }
        let leads_to_denied = below.iter().any(|d| d.starts_with(&path));
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if leads_to_denied && is_dir && depth < 64 {
            split_grant(&path, deny, depth + 1, grants);
        } else if !leads_to_denied {
            grants.full.push(path);
        }
    }
}

/// Deny-read paths Landlock cannot hide: those inside a tree granted every right (a writable
/// root) as a whole. Only bubblewrap's mounts hide them. None in a plan whose writable roots
/// are granted around them ([`LandlockPlan::split_writable`]).
pub fn unhideable(plan: &LandlockPlan) -> Vec<PathBuf> {
    plan.deny_read
        .iter()
        .filter(|_| !plan.split_writable)
        .filter(|d| plan.read_write.iter().any(|r| d.starts_with(r)))
        .cloned()
        .collect()
}

/// How much of a ruleset the kernel enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enforcement {
    /// Every requested right is enforced.
    Full,
    /// Enforced at the kernel's lower ABI (some rights unknown to the kernel are not).
    Partial,
    /// Landlock is not available: nothing is enforced.
    None,
}

/// The rights of a writable root: all but `mknod` of devices (root could create a raw disk node).
pub fn writable_rights(abi: ABI) -> BitFlags<AccessFs> {
    AccessFs::from_all(abi) & !(AccessFs::MakeChar | AccessFs::MakeBlock)
}

/// A ruleset built from a plan but not yet applied, and what its grants were computed from.
///
/// The session's command server builds one and every command forked from it applies its own
/// copy, for as long as [`Prepared::is_current`] says the tree it was computed from is unchanged.
/// With deny-read paths the grants come from listing each directory on the way down to them
/// (`/`, the home directory, …: about a hundred rules), which cost every command more than
/// everything else Landlock does; re-checking costs a `stat` per directory.
///
/// A stale ruleset can only grant less than a fresh one, never more: rules follow inodes, so a
/// granted entry replaced by another (a hidden path renamed onto it, say) is not covered, and an
/// entry created later directly in a listed directory is not readable until the ruleset is built
/// again.
pub struct Prepared {
    ruleset: landlock::RulesetCreated,
    /// Every path a grant was opened at, and every directory listed for the grants.
    seen: Vec<Seen>,
    /// False when a listed directory changed too recently for its timestamps to tell a later
    /// change apart (see [`Stamp::recent`]): then the ruleset serves one command only.
    reusable: bool,
}

/// A path a ruleset depends on, as it was when the ruleset was built.
struct Seen {
    path: PathBuf,
    /// Listed for the grants (its entries matter), rather than granted (only its inode does).
    listed: bool,
    stamp: Option<Stamp>,
}

impl Seen {
    fn granted(path: &Path) -> Seen {
        Seen {
            path: path.to_path_buf(),
            listed: false,
            stamp: Stamp::inode_of(path),
        }
    }

    fn listed(path: &Path) -> Seen {
        Seen {
            path: path.to_path_buf(),
            listed: true,
            stamp: Stamp::of(path),
        }
    }

    fn unchanged(&self) -> bool {
        let now = if self.listed {
            Stamp::of(&self.path)
        } else {
            Stamp::inode_of(&self.path)
        };
        now == self.stamp
    }
}

/// Builds the ruleset for `plan` from the live tree, without applying it.
pub fn prepare(plan: &LandlockPlan) -> Result<Prepared, landlock::RulesetError> {
    prepare_at(plan, std::time::SystemTime::now())
}

/// Puts the calling thread in a Landlock domain of its own that refuses only signals to
/// processes outside it (Landlock ABI 6; where the kernel lacks it, nothing changes, as the
/// guard's own signal scope does not hold there either). The guard's reaper applies it to the
/// command it starts (`helper --reap`): the command and the reaper share the guard's domain,
/// and in it the command could kill the reaper, after which what it started would outlive it.
pub(crate) fn scope_signals_of_this_thread() {
    let _ = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .scope(Scope::Signal)
        .and_then(|ruleset| ruleset.create())
        .and_then(|ruleset| ruleset.restrict_self());
}

/// [`prepare`] as if it were `now` (tests move the clock instead of waiting).
fn prepare_at(
    plan: &LandlockPlan,
    now: std::time::SystemTime,
) -> Result<Prepared, landlock::RulesetError> {
    let abi = TARGET_ABI;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))?;
    if plan.deny_tcp {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    if plan.scoped {
        ruleset = ruleset.scope(Scope::from_all(abi))?;
    } else if plan.signals_scoped {
        ruleset = ruleset.scope(Scope::Signal)?;
    }
    let device_rights = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev;
    let mut seen: Vec<Seen> = plan
        .read_only
        .iter()
        .chain(&plan.read_write)
        .chain(&plan.devices)
        .chain(&plan.devices_only)
        .map(|p| Seen::granted(p))
        .collect();
    // The device directory is granted around like a hidden path, then listed on its own and
    // its devices granted one by one below.
    let hidden: Vec<PathBuf> = plan
        .deny_read
        .iter()
        .chain(&plan.devices_only)
        .cloned()
        .collect();
    let mut grants = grants(&plan.read_only, &hidden);
    grants.list_only.extend(plan.devices_only.iter().cloned());
    // The writable roots: whole, or (the guard) granted around what is hidden or kept inside
    // each. A kept path is readable already (the read grants above reach it unless it lies in
    // a hidden one); what the split grants in full gets every right.
    let (write_full, write_list_only): (Vec<PathBuf>, Vec<PathBuf>) = if plan.split_writable {
        let mut full = Vec::new();
        let mut list_only = Vec::new();
        for root in &plan.read_write {
            // Only what lies strictly inside this root splits it: a root inside a kept path (a
            // cache inside `~/.cargo`) is granted as the writable root it is.
            let around: Vec<PathBuf> = plan
                .deny_read
                .iter()
                .cloned()
                .chain(
                    plan.keep
                        .iter()
                        .filter(|k| k.starts_with(root) && *k != root)
                        .cloned(),
                )
                .collect();
            let mut split = self::grants(std::slice::from_ref(root), &around);
            full.append(&mut split.full);
            list_only.append(&mut split.list_only);
            grants.listed.append(&mut split.listed);
        }
        (full, list_only)
    } else {
        (Vec::new(), Vec::new())
    };
    let whole_roots: &[PathBuf] = if plan.split_writable {
        &[]
    } else {
        &plan.read_write
    };
    let terminals = plan.own_terminals.iter().map(|t| {
        let mut rights: BitFlags<AccessFs> = AccessFs::IoctlDev.into();
        if t.read {
            rights |= AccessFs::ReadFile;
        }
        if t.write {
            rights |= AccessFs::WriteFile;
        }
        (t.path.as_path(), rights)
    });
    let reusable = !grants
        .listed
        .iter()
        .any(|s| s.stamp.is_some_and(|s| s.recent(now)));
    seen.append(&mut grants.listed);
    let ruleset = ruleset
        .create()?
        .add_rules(listed_entry_rules(
            &grants.full,
            AccessFs::from_read(abi),
            abi,
        ))?
        .add_rules(listed_entry_rules(
            &grants.list_only,
            AccessFs::ReadDir.into(),
            abi,
        ))?
        .add_rules(listed_entry_rules(&write_full, writable_rights(abi), abi))?
        .add_rules(listed_entry_rules(
            &write_list_only,
            AccessFs::ReadDir.into(),
            abi,
        ))?
        .add_rules(path_beneath_rules(whole_roots, writable_rights(abi)))?
        .add_rules(path_beneath_rules(&plan.devices, device_rights))?
        .add_rules(terminals.filter_map(|(path, rights)| {
            // Only a character device still there (gone since: nothing to grant).
            let fd = open_no_follow(path)?;
            (file_type(&fd)? == libc::S_IFCHR)
                .then(|| Ok::<_, landlock::RulesetError>(landlock::PathBeneath::new(fd, rights)))
        }))?
        .add_rules(
            plan.connect_tcp
                .iter()
                .filter(|_| plan.deny_tcp)
                .map(|&port| {
                    Ok::<_, landlock::RulesetError>(NetPort::new(port, AccessNet::ConnectTcp))
                }),
        )?;
    Ok(Prepared {
        ruleset,
        seen,
        reusable,
    })
}

/// Rules for the grants found by listing directories ([`split_grant`]): each path is opened
/// without following a symlink, and a symlink gets no rule at all.
///
/// A rule belongs to the inode its descriptor names, so a followed link grants its target: a
/// link in the home directory to `~/.ssh` (or to a key inside it), or a dotfiles set-up's
/// `~/.aws -> dotfiles/aws` (the deny-read path is the link's canonical target), would grant
/// the hidden directory itself, readable then by its own path too. A link needs no rule: what
/// it points to is granted, or hidden, where it really lies, and Landlock does not restrict
/// following it. A path that cannot be opened or inspected any more (it went away since the
/// listing) gets no rule either: less access, never more.
fn listed_entry_rules(
    paths: &[PathBuf],
    access: BitFlags<AccessFs>,
    abi: ABI,
) -> impl Iterator<Item = Result<landlock::PathBeneath<std::os::fd::OwnedFd>, landlock::RulesetError>> + '_
{
    paths.iter().filter_map(move |path| {
        let fd = open_no_follow(path)?;
        let rights = match file_type(&fd)? {
            libc::S_IFLNK => return None,
            libc::S_IFDIR => access,
            _ => access & AccessFs::from_file(abi),
        };
        // A directory's list-only grant on what is no longer a directory: nothing to grant.
        (!rights.is_empty()).then(|| Ok(landlock::PathBeneath::new(fd, rights)))
    })
}

/// `path` opened as `O_PATH` (a handle for the rule, no read access needed) without following a
/// final symlink; `None` when it cannot be opened.
fn open_no_follow(path: &Path) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    loop {
        // SAFETY: `c_path` is NUL-terminated and outlives the call; these flags take no mode.
        let fd = unsafe {
            libc::open(
                c_path.as_ptr(),
                libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        if fd >= 0 {
            // SAFETY: a descriptor `open` just returned, owned by nothing else.
            return Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) });
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return None;
        }
    }
}

/// The `S_IFMT` bits of what `fd` names (for an `O_PATH | O_NOFOLLOW` descriptor of a symlink:
/// `S_IFLNK`).
fn file_type(fd: &std::os::fd::OwnedFd) -> Option<libc::mode_t> {
    use std::os::fd::AsRawFd;
    // SAFETY: fstat on a descriptor we own, into a zeroed local `stat` it fills.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd.as_raw_fd(), &mut st) == 0).then_some(st.st_mode & libc::S_IFMT)
    }
}

impl Prepared {
    /// Whether this ruleset is still what [`prepare`] would build now: every path names the
    /// inode it named, and no listed directory has gained, lost or renamed an entry.
    pub fn is_current(&self) -> bool {
        self.reusable && self.seen.iter().all(Seen::unchanged)
    }

    /// Whether it may serve more than one command at all (see [`Stamp::recent`]); whether it
    /// still may is [`Prepared::is_current`].
    pub fn is_reusable(&self) -> bool {
        self.reusable
    }

    /// A descriptor of the ruleset (a duplicate, close-on-exec) for the thread that spawns a
    /// guarded command to restrict itself with (`crate::guard`); `None` when the kernel
    /// enforces none of it.
    pub fn ruleset_fd(&self) -> std::io::Result<Option<std::os::fd::OwnedFd>> {
        Ok(self.ruleset.try_clone()?.into())
    }

    /// Applies it to the calling thread and its future children.
    pub fn restrict(self) -> Result<Enforcement, landlock::RulesetError> {
        let status = self.ruleset.restrict_self()?;
        Ok(match status.ruleset {
            RulesetStatus::FullyEnforced => Enforcement::Full,
            RulesetStatus::PartiallyEnforced => Enforcement::Partial,
            RulesetStatus::NotEnforced => Enforcement::None,
        })
    }
}

/// The Landlock ABI of the running kernel, or why there is none.
pub fn kernel_abi() -> Result<i64, crate::ProbeError> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: landlock_create_ruleset with a null attribute pointer, size 0 and the VERSION flag
    // only returns the ABI number; it reads no memory and creates no file descriptor.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if ret >= 1 {
        return Ok(ret);
    }
    let err = std::io::Error::last_os_error();
    Err(crate::ProbeError::Kernel(match err.raw_os_error() {
        Some(libc::ENOSYS) => "Landlock not supported by this kernel".to_string(),
        Some(libc::EOPNOTSUPP) => "Landlock disabled at boot (not in the lsm= list)".to_string(),
        Some(libc::EPERM) => "Landlock syscalls refused (container seccomp profile)".to_string(),
        _ => format!("Landlock unavailable: {err}"),
    }))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn plan_reads_everything_and_writes_only_roots() {
        let w = tempfile::tempdir().unwrap();
        let extra = tempfile::tempdir().unwrap();
        let mut p = Policy::with_home(w.path(), None).unwrap();
        p.add_writable(extra.path()).unwrap();
        let plan = plan(&p, &[PathBuf::from("/tmp/private")], false);
        assert_eq!(plan.read_only, vec![PathBuf::from("/")]);
        assert_eq!(
            plan.read_write,
            vec![
                p.workdir.clone(),
                std::fs::canonicalize(extra.path()).unwrap(),
                PathBuf::from("/tmp/private")
            ]
        );
        assert!(plan.devices.contains(&PathBuf::from("/dev/null")));
        assert!(!plan.deny_tcp);
        assert!(plan.scoped);
        p.network = Network::Off;
        assert!(super::plan(&p, &[], false).deny_tcp);
    }

    /// The guard's plan is the workspace plan's shape with its own writable roots: `/`
    /// readable, only the roots it is given writable, the data devices and no terminal, no
    /// network or scope rule, and the secrets inside a writable root hidden by the split
    /// rather than left to mounts the guard does not have.
    #[test]
    fn the_guard_plan_writes_only_its_roots_and_the_data_devices() {
        let roots = vec![PathBuf::from("/home/u"), PathBuf::from("/tmp")];
        let deny = vec![PathBuf::from("/home/u/.ssh")];
        let keep = vec![PathBuf::from("/home/u/.cargo")];
        let plan = guard_plan(roots.clone(), deny.clone(), keep.clone());
        assert_eq!(plan.read_only, vec![PathBuf::from("/")]);
        assert_eq!(plan.read_write, roots);
        assert_eq!((plan.deny_read.clone(), plan.keep.clone()), (deny, keep));
        let devices: Vec<&str> = plan.devices.iter().filter_map(|d| d.to_str()).collect();
        assert_eq!(devices, DATA_DEVICES);
        assert!(plan.split_writable);
        assert!(!plan.deny_tcp && !plan.scoped && plan.devices_only.is_none());
        assert!(unhideable(&plan).is_empty());
        let sandbox = LandlockPlan {
            split_writable: false,
            ..plan
        };
        assert_eq!(unhideable(&sandbox), vec![PathBuf::from("/home/u/.ssh")]);
    }

    #[test]
    fn read_is_granted_around_hidden_paths() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        for d in ["home/.ssh", "home/proj", "etc"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("home/.netrc"), "x").unwrap();
        let deny = vec![
            root.join("home/.ssh"),
            root.join("home/.netrc"),
            root.join("home/absent"),
        ];
        let (mut full, list_only) = read_grants(std::slice::from_ref(&root), &deny);
        full.sort();
        assert_eq!(full, vec![root.join("etc"), root.join("home/proj")]);
        assert_eq!(list_only, vec![root.clone(), root.join("home")]);
        // No hidden path below: the root itself is granted.
        let (full, list_only) = read_grants(std::slice::from_ref(&root), &[]);
        assert_eq!((full, list_only), (vec![root.clone()], vec![]));
    }

    /// A tree with a hidden directory; its listed directories are given an old modification
    /// time, so that adding an entry changes it whatever the clock's granularity.
    fn hidden_tree() -> (tempfile::TempDir, PathBuf, LandlockPlan) {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        for d in ["home/.ssh", "home/proj", "w"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("home/.ssh/key"), "SECRET").unwrap();
        std::fs::write(root.join("home/notes"), "visible").unwrap();
        let old = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
        for d in ["", "home"] {
            std::fs::File::open(root.join(d))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        let plan = LandlockPlan {
            read_only: vec![root.clone()],
            read_write: vec![root.join("w")],
            deny_read: vec![root.join("home/.ssh")],
            ..LandlockPlan::read_only_root()
        };
        (t, root, plan)
    }

    fn later() -> std::time::SystemTime {
        std::time::SystemTime::now() + std::time::Duration::from_secs(60)
    }

    #[test]
    fn a_prepared_ruleset_is_current_until_the_tree_it_came_from_changes() {
        let (_t, root, plan) = hidden_tree();
        let prepared = prepare_at(&plan, later()).unwrap();
        assert!(prepared.is_current(), "nothing changed");
        // An entry added in a listed directory (it would get no read grant).
        std::fs::write(root.join("home/new"), "x").unwrap();
        assert!(!prepared.is_current(), "a new entry in a listed directory");

        let (_t, root, plan) = hidden_tree();
        let prepared = prepare_at(&plan, later()).unwrap();
        // A granted root replaced by another directory (the rule follows the old inode).
        std::fs::rename(root.join("w"), root.join("w.old")).unwrap();
        std::fs::create_dir(root.join("w")).unwrap();
        assert!(!prepared.is_current(), "a writable root replaced");
    }

    #[test]
    fn a_ruleset_from_a_directory_changed_just_now_serves_once() {
        // Directory times come from a coarse clock: a change right after the listing could
        // leave the same time, so such a ruleset is never reused.
        let (_t, root, plan) = hidden_tree();
        std::fs::write(root.join("home/just-now"), "x").unwrap();
        let prepared = prepare(&plan).unwrap();
        assert!(!prepared.is_current());
    }

    /// True (the test is skipped) when this kernel has no Landlock, unless
    /// `GG_REQUIRE_SANDBOX_LEVELS` names the landlock level: then the test fails.
    pub(crate) fn landlock_unavailable() -> bool {
        if kernel_abi().is_ok() {
            return false;
        }
        let required = std::env::var("GG_REQUIRE_SANDBOX_LEVELS").unwrap_or_default();
        assert!(
            !required.split(',').any(|l| l.trim() == "landlock"),
            "GG_REQUIRE_SANDBOX_LEVELS has landlock but the kernel has none"
        );
        // On the real stderr: the harness hides eprintln! of a passing test, and the skip must
        // show in `cargo test`'s output.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!(
                "SKIP {}: the kernel has no Landlock (GG_REQUIRE_SANDBOX_LEVELS=landlock makes \
                 this a failure)\n",
                std::thread::current().name().unwrap_or("a test")
            )
            .as_bytes(),
        );
        true
    }

    /// `cat file` in a child that applies its copy of the shared prepared ruleset first (as the
    /// command server's commands do); the parent's copy stays untouched.
    fn cat_restricted(
        prepared: &std::sync::Arc<std::sync::Mutex<Option<Prepared>>>,
        file: &Path,
    ) -> std::process::Output {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new("cat");
        cmd.arg(file);
        let prepared = std::sync::Arc::clone(prepared);
        // SAFETY: the closure runs in the forked child; `restrict_self` makes two system calls
        // and allocates nothing on success (an error ends the child).
        unsafe {
            cmd.pre_exec(move || {
                let mut copy = prepared
                    .try_lock()
                    .map_err(|_| std::io::Error::other("locked"))?;
                let ruleset = copy.take().ok_or_else(|| std::io::Error::other("taken"))?;
                ruleset
                    .restrict()
                    .map_err(|_| std::io::Error::other("landlock"))?;
                Ok(())
            })
        };
        cmd.output().unwrap()
    }

    /// The same prepared ruleset applied in two processes (as the command server's commands
    /// do): both are kept out of the hidden directory and can read its sibling.
    #[test]
    fn a_prepared_ruleset_hides_in_every_process_that_applies_it() {
        if landlock_unavailable() {
            return;
        }
        let (_t, root, mut plan) = hidden_tree();
        // `cat` itself must stay runnable: read everything but the hidden directory.
        plan.read_only = vec![PathBuf::from("/")];
        let prepared = std::sync::Arc::new(std::sync::Mutex::new(Some(
            prepare_at(&plan, later()).unwrap(),
        )));
        let run = |file: &str| cat_restricted(&prepared, &root.join(file));
        for round in 0..2 {
            let hidden = run("home/.ssh/key");
            assert!(
                !hidden.status.success()
                    && !String::from_utf8_lossy(&hidden.stdout).contains("SECRET"),
                "round {round}: {hidden:?}"
            );
            let visible = run("home/notes");
            assert_eq!(visible.stdout, b"visible", "round {round}: {visible:?}");
        }
        assert!(
            prepared.lock().unwrap().is_some(),
            "the parent's copy is untouched"
        );
    }

    /// Symlinks beside the hidden paths, as a dotfiles set-up makes them (`~/.aws ->
    /// dotfiles/aws`, whose canonical target is the deny-read path) or as anything could: a
    /// link to the hidden directory, a link to a key inside it. None of them makes a secret
    /// readable, by the link or by the hidden path itself; a link to a readable file still
    /// reads.
    #[test]
    fn symlinks_beside_hidden_paths_do_not_unhide_them() {
        use std::os::unix::fs::symlink;
        if landlock_unavailable() {
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(t.path()).unwrap();
        for d in [".ssh", "dotfiles/aws"] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::write(home.join(".ssh/key"), "SECRET-SSH").unwrap();
        std::fs::write(home.join("dotfiles/aws/credentials"), "SECRET-AWS").unwrap();
        std::fs::write(home.join("notes"), "visible").unwrap();
        symlink("dotfiles/aws", home.join(".aws")).unwrap();
        symlink(".ssh", home.join("lnk")).unwrap();
        symlink(home.join(".ssh/key"), home.join("keylink")).unwrap();
        symlink("notes", home.join("notes-link")).unwrap();
        let plan = LandlockPlan {
            // As the policy renders them: canonical, so `~/.aws` is its target.
            deny_read: vec![
                home.join(".ssh"),
                std::fs::canonicalize(home.join(".aws")).unwrap(),
            ],
            ..LandlockPlan::read_only_root()
        };
        let prepared = std::sync::Mutex::new(Some(prepare_at(&plan, later()).unwrap()));
        let prepared = std::sync::Arc::new(prepared);
        let read = |file: &str| cat_restricted(&prepared, &home.join(file));
        for hidden in [
            ".ssh/key",
            "lnk/key",
            "keylink",
            ".aws/credentials",
            "dotfiles/aws/credentials",
        ] {
            let out = read(hidden);
            assert!(
                !out.status.success() && !String::from_utf8_lossy(&out.stdout).contains("SECRET"),
                "{hidden}: {out:?}"
            );
        }
        for visible in ["notes", "notes-link"] {
            assert_eq!(read(visible).stdout, b"visible", "{visible}");
        }
    }

    #[test]
    fn only_data_devices_for_read_only_commands_and_no_host_terminal_at_landlock() {
        let w = tempfile::tempdir().unwrap();
        let p = Policy::with_home(w.path(), None).unwrap();
        let devices = |plan: &LandlockPlan| -> Vec<String> {
            plan.devices
                .iter()
                .map(|d| d.to_string_lossy().into_owned())
                .collect()
        };
        for host_dev in [false, true] {
            let read_only = plan(&p.clone().read_only(), &[], host_dev);
            assert_eq!(devices(&read_only), DATA_DEVICES, "{host_dev}");
            assert_eq!(
                read_only.devices_only.is_some(),
                host_dev,
                "the host's /dev is read only device by device"
            );
        }
        let landlock = plan(&p, &[], true);
        assert_eq!(landlock.devices_only, Some(PathBuf::from("/dev")));
        for terminal in ["/dev/pts", "/dev/ptmx"] {
            assert!(
                !devices(&landlock).iter().any(|d| d == terminal),
                "{terminal}"
            );
        }
        let bwrap = plan(&p, &[], false);
        assert_eq!(devices(&bwrap), WRITABLE_DEVICES);
        assert_eq!(bwrap.devices_only, None);
    }

    /// A device directory read device by device: a terminal in it is not opened, a granted
    /// device is, and the directory is still listed.
    #[test]
    fn a_device_directory_grants_only_its_listed_devices() {
        if landlock_unavailable() {
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let dev = std::fs::canonicalize(t.path()).unwrap().join("dev");
        std::fs::create_dir_all(dev.join("pts")).unwrap();
        std::fs::write(dev.join("null"), "granted").unwrap();
        std::fs::write(dev.join("pts/0"), "TYPED-SECRET").unwrap();
        std::fs::write(dev.join("sda"), "DISK-SECRET").unwrap();
        let plan = LandlockPlan {
            devices: vec![dev.join("null")],
            devices_only: Some(dev.clone()),
            ..LandlockPlan::read_only_root()
        };
        let prepared = std::sync::Arc::new(std::sync::Mutex::new(Some(
            prepare_at(&plan, later()).unwrap(),
        )));
        for hidden in ["pts/0", "sda"] {
            let out = cat_restricted(&prepared, &dev.join(hidden));
            assert!(
                !out.status.success() && !String::from_utf8_lossy(&out.stdout).contains("SECRET"),
                "{hidden}: {out:?}"
            );
            *prepared.lock().unwrap() = Some(prepare_at(&plan, later()).unwrap());
        }
        assert_eq!(
            cat_restricted(&prepared, &dev.join("null")).stdout,
            b"granted"
        );
    }

    #[test]
    fn writable_roots_cannot_make_device_nodes() {
        let r = writable_rights(TARGET_ABI);
        assert!(!r.contains(AccessFs::MakeChar) && !r.contains(AccessFs::MakeBlock));
        assert!(r.contains(AccessFs::WriteFile) && r.contains(AccessFs::Execute));
    }
}
