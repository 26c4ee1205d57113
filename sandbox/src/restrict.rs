//! What a process does to itself before it runs a command inside the sandbox: Landlock and
//! seccomp, `no_new_privs`, no capabilities, no inherited descriptors, and its children killed
//! when it is done. The helper applies all of it to one command; the command server applies it
//! once for itself and the Landlock part per command. Apart from both, so neither imports the
//! other for it.

use std::os::fd::RawFd;

use crate::error::HelperError;
use crate::fs_rules::{self, Enforcement, LandlockPlan};
use crate::seccomp;

/// Applies every restriction to this process, ready to exec.
pub(crate) fn restrict(
    plan: &LandlockPlan,
    standalone: bool,
    filters: &[seccompiler::BpfProgram],
) -> Result<Enforcement, HelperError> {
    let enforcement = restrict_landlock(fs_rules::prepare(plan), standalone)?;
    drop_capabilities()?;
    seccomp::apply(filters).map_err(|e| HelperError::Seccomp(e.to_string()))?;
    Ok(enforcement)
}

/// `no_new_privs` and the Landlock ruleset: what a command of the server applies itself
/// (the server has dropped the capabilities and installed the seccomp filters for all of
/// its commands, which inherit both).
pub(crate) fn restrict_landlock(
    ruleset: Result<fs_rules::Prepared, landlock::RulesetError>,
    standalone: bool,
) -> Result<Enforcement, HelperError> {
    set_no_new_privs()?;
    let enforcement = match ruleset.and_then(fs_rules::Prepared::restrict) {
        Ok(e) => e,
        Err(e) if standalone => return Err(HelperError::Landlock(e.to_string())),
        // Under bubblewrap the filesystem view is already read-only: Landlock is depth.
        Err(_) => Enforcement::None,
    };
    if standalone && enforcement == Enforcement::None {
        return Err(HelperError::Landlock(
            "not enforced by this kernel; refusing to run".into(),
        ));
    }
    Ok(enforcement)
}

pub(crate) fn set_no_new_privs() -> Result<(), HelperError> {
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1) takes integer arguments only.
    let r = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    if r != 0 {
        return Err(HelperError::last_os("no_new_privs"));
    }
    Ok(())
}

/// Closes every descriptor above 2 (a leaked descriptor keeps whatever rights it was opened
/// with, whatever Landlock says).
pub(crate) fn close_inherited_fds() -> Result<(), HelperError> {
    close_inherited_fds_except(&[])
}

/// [`close_inherited_fds`] but for `keep` (the command server's spare keeps its hand-over
/// socket and `/dev/null` while it waits). The caller uses no Rust object owning a closed
/// descriptor again: the helper before it opened any, a forked command or spare before its
/// exec.
pub(crate) fn close_inherited_fds_except(keep: &[RawFd]) -> Result<(), HelperError> {
    let mut keep: Vec<libc::c_uint> = keep
        .iter()
        .filter(|&&fd| fd > 2)
        .map(|&fd| fd as libc::c_uint)
        .collect();
    keep.sort_unstable();
    // The ranges between the kept descriptors, and above the last.
    let mut ranges = Vec::with_capacity(keep.len() + 1);
    let mut from: libc::c_uint = 3;
    for &fd in &keep {
        if fd > from {
            ranges.push((from, fd - 1));
        }
        from = fd + 1;
    }
    ranges.push((from, libc::c_uint::MAX));
    let closed_all = ranges.iter().all(|&(first, last)| {
        // SAFETY: close_range only closes descriptors; see above for who owns them.
        unsafe { libc::close_range(first, last, 0) == 0 }
    });
    if closed_all {
        return Ok(());
    }
    // Kernels before 5.9: close what /proc lists (the directory's own fd fails harmlessly).
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map_err(|error| HelperError::Setup {
            step: "cannot list fds",
            error,
        })?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2 && !keep.contains(&(fd as libc::c_uint)))
        .collect();
    for fd in fds {
        // SAFETY: closing a descriptor number owned by no Rust object used again here.
        unsafe { libc::close(fd) };
    }
    Ok(())
}

/// The highest capability number this kernel knows, read once per process.
pub(crate) fn cap_last_cap() -> libc::c_ulong {
    static LAST: std::sync::OnceLock<libc::c_ulong> = std::sync::OnceLock::new();
    *LAST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse::<libc::c_ulong>().ok())
            .unwrap_or(63)
    })
}

/// Drops every capability: bounding set, ambient set, and the permitted/effective/inheritable
/// sets, and locks root's automatic capabilities on exec away (securebits).
pub(crate) fn drop_capabilities() -> Result<(), HelperError> {
    for cap in 0..=cap_last_cap() {
        // SAFETY: prctl with integer arguments. EINVAL for capabilities the kernel does not
        // know and EPERM without CAP_SETPCAP (then the set is already what it can be) are fine.
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
    }
    // SAFETY: prctl with integer arguments; EINVAL on kernels without ambient capabilities.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
    const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
    const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
    const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
    // SAFETY: prctl with integer arguments; fails with EPERM without CAP_SETPCAP, in which
    // case exec cannot grant root capabilities beyond the (now empty) bounding set anyway.
    unsafe {
        libc::prctl(
            libc::PR_SET_SECUREBITS,
            SECBIT_NOROOT
                | SECBIT_NOROOT_LOCKED
                | SECBIT_NO_SETUID_FIXUP
                | SECBIT_NO_SETUID_FIXUP_LOCKED,
            0,
            0,
            0,
        )
    };
    #[repr(C)]
    struct CapHeader {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct CapData {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset reads one header and two data structs laid out as in
    // <linux/capability.h> for version 3; both live on the stack for the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        )
    };
    if r != 0 {
        return Err(HelperError::last_os("capset"));
    }
    Ok(())
}

/// SIGKILLs every child (orphans are reparented to us as subreaper) until none is left.
pub(crate) fn kill_all_children() {
    loop {
        kill_children_except(&[]);
        // Reap whatever exited meanwhile without being listed; stop when nothing is left.
        let mut status = 0;
        // SAFETY: waitpid writes into a local integer.
        if unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) } <= 0 {
            return;
        }
    }
}

/// Kills this process's children other than `keep`, and reaps them and whatever is
/// re-parented here as they die, until only `keep` is left. Returns whether it found any.
/// Each child is waited for by its pid, so a child in `keep` that ends meanwhile stays for
/// the caller to reap.
pub(crate) fn kill_children_except(keep: &[i32]) -> bool {
    let mut found = false;
    loop {
        let others: Vec<i32> = list_children()
            .into_iter()
            .filter(|pid| !keep.contains(pid))
            .collect();
        if others.is_empty() {
            return found;
        }
        found = true;
        for pid in &others {
            // SAFETY: kill with a positive pid. It is our child and not yet reaped (only
            // this process reaps), so the pid cannot have been reused by another process.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        for pid in others {
            let mut status = 0;
            // SAFETY: waitpid on our own child, into a local integer.
            unsafe { libc::waitpid(pid, &mut status, 0) };
        }
    }
}

pub(crate) fn list_children() -> Vec<i32> {
    let me = std::process::id() as i32;
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")) {
        return text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
    }
    // Without CONFIG_PROC_CHILDREN: scan /proc for processes whose parent is us.
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<i32>().ok())
            else {
                continue;
            };
            if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                && let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..])
                && after
                    .split_whitespace()
                    .nth(1)
                    .and_then(|p| p.parse::<i32>().ok())
                    == Some(me)
            {
                out.push(pid);
            }
        }
    }
    out
}
