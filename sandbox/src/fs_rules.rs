//! The Landlock ruleset the helper applies: read and execute everything but the deny-read paths,
//! write only the writable roots, no TCP when the network is off, no signals or abstract sockets out of the sandbox.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use serde::{Deserialize, Serialize};

use crate::policy::{Network, Policy};

/// The newest Landlock ABI whose rights were reviewed for this ruleset; newer kernels are used at
/// this level (best effort downwards on older ones).
pub const TARGET_ABI: ABI = ABI::V6;

/// Device files every build tool expects to open for writing.
pub const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// A Landlock ruleset, as data (rendered from a [`Policy`], applied by the helper).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandlockPlan {
    /// Readable and executable trees.
    pub read_only: Vec<PathBuf>,
    /// Trees with every right except creating device nodes.
    pub read_write: Vec<PathBuf>,
    /// Device files that may be opened for reading and writing (and terminal ioctls).
    pub devices: Vec<PathBuf>,
    /// Refuse TCP bind and connect (except connecting to `connect_tcp`).
    pub deny_tcp: bool,
    /// With `deny_tcp`: the ports TCP connections may still go to (the network proxy's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connect_tcp: Vec<u16>,
    /// Refuse signals and abstract Unix socket connections to processes outside the sandbox.
    pub scoped: bool,
    /// Paths to keep unreadable although they lie under `read_only`: read is granted on their
    /// siblings instead of on the tree above them (see [`read_grants`]).
    #[serde(default)]
    pub deny_read: Vec<PathBuf>,
}

/// Renders the ruleset for `policy`; `private_dirs` are the command's temp directories.
pub fn plan(policy: &Policy, private_dirs: &[PathBuf]) -> LandlockPlan {
    let mut read_write: Vec<PathBuf> = policy.all_writable().map(Path::to_path_buf).collect();
    read_write.extend(private_dirs.iter().cloned());
    LandlockPlan {
        read_only: vec![PathBuf::from("/")],
        read_write,
        devices: WRITABLE_DEVICES.iter().map(PathBuf::from).collect(),
        deny_tcp: policy.network.isolated(),
        connect_tcp: match (&policy.network, &policy.proxy) {
            (Network::Proxy, Some(route)) => vec![route.port],
            _ => Vec::new(),
        },
        scoped: true,
        deny_read: policy.deny_read.clone(),
    }
}

/// Read grants that keep `deny` unreadable under the readable `roots`, computed from the live
/// tree: Landlock rules only allow, so instead of granting a root that holds a hidden path, each
/// directory on the way down to it gets list-only access and every other entry of it full read
/// access. Returns `(full read, list only)`.
///
/// What remains visible: the *names* inside a hidden directory (listing is inherited from its
/// parent), and nothing created later directly in a directory on the way down is readable (it
/// inherits list-only access) — which is also why a hidden path that appears during the run stays
/// hidden.
pub fn read_grants(roots: &[PathBuf], deny: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut full = Vec::new();
    let mut list_only = Vec::new();
    for root in roots {
        if deny.iter().any(|d| root.starts_with(d)) {
            continue;
        }
        split_grant(root, deny, 0, &mut full, &mut list_only);
    }
    (full, list_only)
}

fn split_grant(
    dir: &Path,
    deny: &[PathBuf],
    depth: usize,
    full: &mut Vec<PathBuf>,
    list_only: &mut Vec<PathBuf>,
) {
    let below: Vec<&PathBuf> = deny
        .iter()
        .filter(|d| d.starts_with(dir) && d.as_path() != dir)
        .collect();
    if below.is_empty() {
        full.push(dir.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        // Unlistable: grant nothing below rather than the whole tree.
        list_only.push(dir.to_path_buf());
        return;
    };
    list_only.push(dir.to_path_buf());
    for entry in entries.flatten() {
        let path = entry.path();
        if below.iter().any(|d| **d == path) {
            continue;
        }
        let leads_to_denied = below.iter().any(|d| d.starts_with(&path));
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if leads_to_denied && is_dir && depth < 64 {
            split_grant(&path, deny, depth + 1, full, list_only);
        } else if !leads_to_denied {
            full.push(path);
        }
    }
}

/// Deny-read paths Landlock cannot hide: those inside a tree granted every right (a writable
/// root). Only bubblewrap's mounts hide them.
pub fn unhideable(plan: &LandlockPlan) -> Vec<PathBuf> {
    plan.deny_read
        .iter()
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

/// Applies `plan` to the calling thread and its future children.
pub fn apply(plan: &LandlockPlan) -> Result<Enforcement, landlock::RulesetError> {
    let abi = TARGET_ABI;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))?;
    if plan.deny_tcp {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    if plan.scoped {
        ruleset = ruleset.scope(Scope::from_all(abi))?;
    }
    let device_rights = AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::IoctlDev;
    let (read, list_only) = read_grants(&plan.read_only, &plan.deny_read);
    let status = ruleset
        .create()?
        .add_rules(path_beneath_rules(&read, AccessFs::from_read(abi)))?
        .add_rules(path_beneath_rules(&list_only, AccessFs::ReadDir))?
        .add_rules(path_beneath_rules(&plan.read_write, writable_rights(abi)))?
        .add_rules(path_beneath_rules(&plan.devices, device_rights))?
        .add_rules(
            plan.connect_tcp
                .iter()
                .filter(|_| plan.deny_tcp)
                .map(|&port| {
                    Ok::<_, landlock::RulesetError>(NetPort::new(port, AccessNet::ConnectTcp))
                }),
        )?
        .restrict_self()?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::None,
    })
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
mod tests {
    use super::*;

    #[test]
    fn plan_reads_everything_and_writes_only_roots() {
        let w = tempfile::tempdir().unwrap();
        let extra = tempfile::tempdir().unwrap();
        let mut p = Policy::with_home(w.path(), None).unwrap();
        p.add_writable(extra.path()).unwrap();
        let plan = plan(&p, &[PathBuf::from("/tmp/private")]);
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
        assert!(super::plan(&p, &[]).deny_tcp);
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

    #[test]
    fn writable_roots_cannot_make_device_nodes() {
        let r = writable_rights(TARGET_ABI);
        assert!(!r.contains(AccessFs::MakeChar) && !r.contains(AccessFs::MakeBlock));
        assert!(r.contains(AccessFs::WriteFile) && r.contains(AccessFs::Execute));
    }
}
