//! The seccomp filters the helper installs before executing the command.
//!
//! Three programs, installed in this order: an x32 guard (seccompiler's prologue checks the
//! architecture but not the x32 bit, so `nr | 0x40000000` would match no rule and be allowed), a
//! deny list answering `EPERM`, and a `clone3` filter answering `ENOSYS` so that libc falls back to
//! `clone`, whose flags a classic BPF filter can inspect (`clone3` passes them in memory).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

use crate::policy::Network;

/// When a listed syscall is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// Always.
    Always,
    /// When the 32-bit argument `arg` equals one of the values.
    ArgIn { arg: u8, values: &'static [u64] },
    /// When the 32-bit argument `arg` is anything but `value`.
    ArgNot { arg: u8, value: u64 },
    /// When the 64-bit argument `arg` has any of the bits of one of the masks set.
    ArgHasAnyBit { arg: u8, masks: &'static [u64] },
    /// When the 32-bit argument `arg` is none of the values.
    ArgNotIn { arg: u8, values: &'static [u64] },
    /// When the 32-bit argument `arg`, masked with `mask`, equals one of the values.
    ArgMaskedIn {
        arg: u8,
        mask: u64,
        values: &'static [u64],
    },
}

/// One refused syscall.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deny {
    /// Syscall name, for `--explain` and tests.
    pub name: &'static str,
    /// Syscall number on this architecture.
    pub nr: i64,
    /// Condition under which it is refused.
    pub when: When,
}

const NAMESPACE_FLAGS: &[u64] = &[
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWCGROUP as u64,
];
// For unshare(2) 0x80 is CLONE_NEWTIME; for clone(2) the same bit is part of the exit signal.
const UNSHARE_FLAGS: &[u64] = &[
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWTIME as u64,
];
// TIOCSTI and TIOCLINUX as on every architecture seccompiler supports (asm-generic ioctls); the
// libc constants change type between libc flavours.
const TTY_INJECTION: &[u64] = &[0x5412, 0x541C];

macro_rules! deny {
    ($sys:ident) => {
        deny!($sys, When::Always)
    };
    ($sys:ident, $when:expr) => {
        Deny {
            name: stringify!($sys).trim_start_matches("SYS_"),
            nr: libc::$sys,
            when: $when,
        }
    };
}

/// The syscalls refused with `EPERM` under `network`.
pub fn deny_list(network: Network) -> Vec<Deny> {
    deny_list_with(network, false, false)
}

/// [`deny_list`], with `socket(AF_UNIX)` left allowed when `local_sockets` is set (see
/// [`crate::Policy::local_sockets`]), and `listen(2)` refused when `standalone` (no network
/// namespace around the command: `listen` on an unbound socket binds it to `0.0.0.0` on an
/// ephemeral port, which no Landlock rule covers, and would serve what the command can read to
/// other hosts).
pub fn deny_list_with(network: Network, local_sockets: bool, standalone: bool) -> Vec<Deny> {
    let mut v = vec![
        deny!(SYS_ptrace),
        deny!(SYS_process_vm_readv),
        deny!(SYS_process_vm_writev),
        // io_uring ops bypass every per-syscall rule here (IORING_OP_SOCKET, ops on inherited fds).
        deny!(SYS_io_uring_setup),
        deny!(SYS_io_uring_enter),
        deny!(SYS_io_uring_register),
        deny!(
            SYS_ioctl,
            When::ArgIn {
                arg: 1,
                values: TTY_INJECTION
            }
        ),
        deny!(
            SYS_unshare,
            When::ArgHasAnyBit {
                arg: 0,
                masks: UNSHARE_FLAGS
            }
        ),
        deny!(
            SYS_clone,
            When::ArgHasAnyBit {
                arg: 0,
                masks: NAMESPACE_FLAGS
            }
        ),
        deny!(SYS_setns),
        deny!(SYS_mount),
        deny!(SYS_umount2),
        deny!(SYS_pivot_root),
        deny!(SYS_open_tree),
        deny!(SYS_move_mount),
        deny!(SYS_fsopen),
        deny!(SYS_fsconfig),
        deny!(SYS_fsmount),
        deny!(SYS_fspick),
        deny!(SYS_mount_setattr),
        deny!(SYS_bpf),
        deny!(SYS_perf_event_open),
        deny!(SYS_userfaultfd),
        deny!(SYS_keyctl),
        deny!(SYS_add_key),
        deny!(SYS_request_key),
        deny!(SYS_init_module),
        deny!(SYS_finit_module),
        deny!(SYS_delete_module),
        deny!(SYS_kexec_load),
        deny!(SYS_kexec_file_load),
        deny!(SYS_reboot),
        deny!(SYS_swapon),
        deny!(SYS_swapoff),
        deny!(SYS_acct),
    ];
    if network == Network::Off {
        // No socket(2) at all: Unix sockets too, because connecting to a pathname socket outside
        // the working directory (docker.sock, ssh-agent) cannot be told apart by a BPF filter.
        // socketpair(AF_UNIX) creates no address and keeps local IPC working.
        if local_sockets {
            v.push(deny!(
                SYS_socket,
                When::ArgNot {
                    arg: 0,
                    value: libc::AF_UNIX as u64
                }
            ));
        } else {
            v.push(deny!(SYS_socket));
        }
    }
    if network == Network::Proxy {
        // Only TCP stream sockets, which Landlock (or the empty namespace) confines to the proxy's
        // port: no UDP (DNS included), raw, netlink, SCTP, or Unix sockets to host services.
        v.push(deny!(
            SYS_socket,
            When::ArgNotIn {
                arg: 0,
                values: if local_sockets {
                    INET_AND_UNIX_FAMILIES
                } else {
                    INET_FAMILIES
                }
            }
        ));
        v.push(deny!(
            SYS_socket,
            When::ArgMaskedIn {
                arg: 1,
                mask: SOCK_TYPE_MASK,
                values: NON_STREAM_TYPES
            }
        ));
        v.push(deny!(
            SYS_socket,
            When::ArgNotIn {
                arg: 2,
                values: TCP_PROTOCOLS
            }
        ));
    }
    if standalone {
        v.push(deny!(SYS_listen));
        // No IPC or PID namespace around the command: the host's SysV IPC objects and the
        // host's processes are the command's to reach, where only a namespace would hide them.
        v.extend(ipc_deny_list());
        v.extend(other_process_deny_list());
    }
    if network.isolated() {
        v.push(deny!(
            SYS_socketpair,
            When::ArgNot {
                arg: 0,
                value: libc::AF_UNIX as u64
            }
        ));
    }
    v
}

const INET_FAMILIES: &[u64] = &[libc::AF_INET as u64, libc::AF_INET6 as u64];
const INET_AND_UNIX_FAMILIES: &[u64] = &[
    libc::AF_INET as u64,
    libc::AF_INET6 as u64,
    libc::AF_UNIX as u64,
];
/// The socket type without `SOCK_NONBLOCK`/`SOCK_CLOEXEC`.
const SOCK_TYPE_MASK: u64 = 0xf;
const NON_STREAM_TYPES: &[u64] = &[
    libc::SOCK_DGRAM as u64,
    libc::SOCK_RAW as u64,
    libc::SOCK_RDM as u64,
    libc::SOCK_SEQPACKET as u64,
    6,  // SOCK_DCCP
    10, // SOCK_PACKET (obsolete, still accepted by the kernel)
];
const TCP_PROTOCOLS: &[u64] = &[0, libc::IPPROTO_TCP as u64];

/// Errors building the filters.
pub type Error = seccompiler::BackendError;

/// The BPF programs for `network`, in installation order.
pub fn programs(network: Network) -> Result<Vec<BpfProgram>, Error> {
    programs_with(network, false, false)
}

/// `FS_IOC_SETFLAGS`, `FS_IOC_FSSETXATTR` (`chattr +i`, `+a`: immutable and append-only flags,
/// which root may set on any file it can open for reading) and `FS_IOC_SETVERSION` (the inode
/// generation), as on 64-bit Linux.
const SET_INODE_FLAGS: &[u64] = &[0x4008_6602, 0x401c_5820, 0x4008_7602];

/// Calls newer than the `libc` crate's tables, by their numbers (the same on every architecture
/// since 5.1's unified numbering): `setxattrat` and `removexattrat` (6.13; an ACL granting
/// another user write is an extended attribute), `file_setattr` (6.17; inode flags by path).
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;
const SYS_FILE_SETATTR: i64 = 469;

/// System V IPC, every call of it: without an IPC namespace of its own (the landlock level)
/// a command reaches the host's shared memory segments, message queues and semaphores by key
/// or by id (`ipcs` lists them), as far as their modes let its user: an attacker pass wrote a
/// host segment and sent to a host queue, and `ipcrm` or a `semop` would delete objects or
/// deadlock other programs. A filter cannot tell a segment the command made from the host's
/// (`shmat` takes an id, and ids are listed), so all of it is refused: a program that needs
/// SysV IPC (a PostgreSQL server's start-up segment) runs at the bubblewrap level, whose IPC
/// namespace is its own. (The `ipc(2)` multiplexer exists on none of the architectures
/// seccompiler builds for; i386 and x32 calls on x86_64 are killed by the x32 guard, other
/// architectures by seccompiler's own check.) POSIX shared memory is files under `/dev/shm`,
/// which Landlock does not grant. POSIX message queues are not: `mq_open` and `mq_unlink` name
/// a queue of the IPC namespace's own mount, never a path the command opens, so Landlock sees
/// at most the open after the queue was made (an attacker pass created a queue on the host from
/// the landlock level, its open refused only afterwards, and deleted a host program's queue
/// with `mq_unlink`). They are refused here with the rest, for the same reason.
pub fn ipc_deny_list() -> Vec<Deny> {
    vec![
        deny!(SYS_shmget),
        deny!(SYS_shmat),
        deny!(SYS_shmctl),
        deny!(SYS_shmdt),
        deny!(SYS_msgget),
        deny!(SYS_msgsnd),
        deny!(SYS_msgrcv),
        deny!(SYS_msgctl),
        deny!(SYS_semget),
        deny!(SYS_semop),
        deny!(SYS_semtimedop),
        deny!(SYS_semctl),
        deny!(SYS_mq_open),
        deny!(SYS_mq_unlink),
        deny!(SYS_mq_timedsend),
        deny!(SYS_mq_timedreceive),
        deny!(SYS_mq_notify),
        deny!(SYS_mq_getsetattr),
    ]
}

/// `PRIO_PROCESS` of setpriority(2) and `IOPRIO_WHO_PROCESS` of ioprio_set(2): the kinds of
/// target that name one process (the others name a process group or every process of a user,
/// and `0` then means the caller's group or user).
const PRIO_PROCESS: u64 = 0;
const IOPRIO_WHO_PROCESS: u64 = 1;

/// Changing how another process is scheduled or limited: its nice value, I/O class, CPU
/// affinity, scheduling policy and resource limits. Landlock has no hook for any of them (its
/// scope covers signals and ptrace, not `task_setnice`, `task_setioprio`,
/// `task_setscheduler` or `task_prlimit`), and without a PID namespace every process of the
/// user is a target: an attacker pass set a host process to idle I/O, nice 19 and one CPU
/// from a read-only command. The command may still change its own (`nice`, `ionice -c3 CMD`,
/// `taskset -c 0 CMD`, `ulimit` pass `0`, meaning the caller); a thread other than the
/// calling one is named by its id and is refused too (`pthread_setaffinity_np` on another
/// thread fails with `EPERM`: a filter cannot tell the caller's own thread ids from other
/// processes').
///
/// What else reaches another process is held without a rule here: signals (`kill`,
/// `pidfd_send_signal`) by Landlock's signal scope; `process_vm_*`, `process_madvise`,
/// `kcmp`, `migrate_pages` and `move_pages` by the ptrace access check, which Landlock refuses
/// for any process outside the command's domain (and `ptrace` itself is refused above).
pub fn other_process_deny_list() -> Vec<Deny> {
    let not_self = When::ArgNot { arg: 0, value: 0 };
    vec![
        deny!(
            SYS_setpriority,
            When::ArgNot {
                arg: 0,
                value: PRIO_PROCESS
            }
        ),
        deny!(SYS_setpriority, When::ArgNot { arg: 1, value: 0 }),
        deny!(
            SYS_ioprio_set,
            When::ArgNot {
                arg: 0,
                value: IOPRIO_WHO_PROCESS
            }
        ),
        deny!(SYS_ioprio_set, When::ArgNot { arg: 1, value: 0 }),
        deny!(SYS_sched_setaffinity, not_self),
        deny!(SYS_sched_setscheduler, not_self),
        deny!(SYS_sched_setparam, not_self),
        deny!(SYS_sched_setattr, not_self),
        deny!(SYS_prlimit64, not_self),
    ]
}

/// What a command run read-only is refused besides its Landlock ruleset, which covers writing,
/// creating, removing and renaming files but not their metadata: changing modes, owners, times,
/// extended attributes and inode flags of files it can reach. `chmod 777 ~/.ssh` and
/// `chmod 000 README.md` changed the host from a read-only command at the landlock level, and
/// from a read-only command of a `--sandbox` session at both (where the project is mounted
/// writable for its normal commands). A read-only command has no business with any of them, its
/// private `/tmp` included; nor with other processes' scheduling and limits, or SysV IPC
/// objects ([`other_process_deny_list`], [`ipc_deny_list`]), at either level.
pub fn read_only_deny_list() -> Vec<Deny> {
    let mut v = vec![
        deny!(SYS_fchmod),
        deny!(SYS_fchmodat),
        deny!(SYS_fchmodat2),
        deny!(SYS_fchown),
        deny!(SYS_fchownat),
        deny!(SYS_utimensat),
        deny!(SYS_setxattr),
        deny!(SYS_lsetxattr),
        deny!(SYS_fsetxattr),
        deny!(SYS_removexattr),
        deny!(SYS_lremovexattr),
        deny!(SYS_fremovexattr),
        deny!(
            SYS_ioctl,
            When::ArgIn {
                arg: 1,
                values: SET_INODE_FLAGS
            }
        ),
    ];
    for (name, nr) in [
        ("setxattrat", SYS_SETXATTRAT),
        ("removexattrat", SYS_REMOVEXATTRAT),
        ("file_setattr", SYS_FILE_SETATTR),
    ] {
        v.push(Deny {
            name,
            nr,
            when: When::Always,
        });
    }
    // The older calls that architectures with the generic table (aarch64) do not have.
    #[cfg(target_arch = "x86_64")]
    v.extend([
        deny!(SYS_chmod),
        deny!(SYS_chown),
        deny!(SYS_lchown),
        deny!(SYS_utime),
        deny!(SYS_utimes),
        deny!(SYS_futimesat),
    ]);
    // Nor does it change other processes or the IPC objects it shares with them, at either
    // level: under bubblewrap these are the other commands of its session.
    v.extend(ipc_deny_list());
    v.extend(other_process_deny_list());
    v
}

/// The filter a command run read-only adds to its server's or helper's (filters stack):
/// [`read_only_deny_list`], and every socket too where those allow sockets (`sockets`: the
/// workspace sandbox of a `--sandbox` session with a network).
pub fn read_only_programs(sockets: bool, standalone: bool) -> Result<Vec<BpfProgram>, Error> {
    let mut denials = read_only_deny_list();
    if sockets {
        denials.extend(
            deny_list_with(Network::Off, false, standalone)
                .into_iter()
                .filter(|d| d.nr == libc::SYS_socket),
        );
    }
    Ok(vec![compile(target_arch()?, denials)?])
}

/// [`programs`] for [`deny_list_with`].
pub fn programs_with(
    network: Network,
    local_sockets: bool,
    standalone: bool,
) -> Result<Vec<BpfProgram>, Error> {
    let arch = target_arch()?;
    let mut out = x32_guard_first(arch);
    out.push(compile(
        arch,
        deny_list_with(network, local_sockets, standalone),
    )?);
    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )?;
    out.push(clone3.try_into()?);
    Ok(out)
}

/// The guard's filters (`crate::guard`), for a command that runs on the host in gg's own
/// session: typing into a terminal (`TIOCSTI`, `TIOCLINUX`) is refused. The command's
/// controlling terminal is gg's: an attacker pass's normal command pushed `y` and a newline
/// into it, and gg read them as the person's answer to the next dangerous command's approval
/// (a process left behind did the same to the person's shell after gg had ended). A filter is
/// inherited by everything the command starts, as the Landlock ruleset is.
///
/// Setting or steering the system clock is refused too (`settimeofday`, `clock_settime`,
/// `clock_adjtime`, `adjtimex`, the last two also when they only ask: the call is the same and
/// its argument a pointer a filter cannot read). The guard keeps the command's capabilities,
/// so one run by root could set the clock back to a directory's last change time, plant in
/// it, and leave the time stamps gg's sweep and kept lists compare as they were.
pub fn guard_programs() -> Result<Vec<BpfProgram>, Error> {
    let arch = target_arch()?;
    let mut out = x32_guard_first(arch);
    out.push(compile(
        arch,
        vec![
            deny!(
                SYS_ioctl,
                When::ArgIn {
                    arg: 1,
                    values: TTY_INJECTION
                }
            ),
            deny!(SYS_settimeofday),
            deny!(SYS_clock_settime),
            deny!(SYS_clock_adjtime),
            deny!(SYS_adjtimex),
        ],
    )?);
    Ok(out)
}

/// What every set of programs starts with: on x86_64 the x32 guard ([`x32_guard`]), so the
/// foreign numbering cannot reach a call around the rules after it.
fn x32_guard_first(arch: TargetArch) -> Vec<BpfProgram> {
    if arch == TargetArch::x86_64 {
        vec![x32_guard()]
    } else {
        Vec::new()
    }
}

/// One program answering `EPERM` to each of `denials`, allowing the rest.
fn compile(arch: TargetArch, denials: Vec<Deny>) -> Result<BpfProgram, Error> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for d in denials {
        let entry = rules.entry(d.nr).or_default();
        match d.when {
            When::Always => {}
            When::ArgIn { arg, values } => {
                for &v in values {
                    entry.push(SeccompRule::new(vec![SeccompCondition::new(
                        arg,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::Eq,
                        v,
                    )?])?);
                }
            }
            When::ArgNot { arg, value } => {
                entry.push(SeccompRule::new(vec![SeccompCondition::new(
                    arg,
                    SeccompCmpArgLen::Dword,
                    SeccompCmpOp::Ne,
                    value,
                )?])?);
            }
            When::ArgNotIn { arg, values } => {
                let conditions = values
                    .iter()
                    .map(|&v| {
                        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, v)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                entry.push(SeccompRule::new(conditions)?);
            }
            When::ArgMaskedIn { arg, mask, values } => {
                for &v in values {
                    entry.push(SeccompRule::new(vec![SeccompCondition::new(
                        arg,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::MaskedEq(mask),
                        v,
                    )?])?);
                }
            }
            When::ArgHasAnyBit { arg, masks } => {
                for &m in masks {
                    entry.push(SeccompRule::new(vec![SeccompCondition::new(
                        arg,
                        SeccompCmpArgLen::Qword,
                        SeccompCmpOp::MaskedEq(m),
                        m,
                    )?])?);
                }
            }
        }
    }
    let deny = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    deny.try_into()
}

/// Installs the programs on the calling thread (sets `no_new_privs` first, as seccomp requires
/// for unprivileged callers).
pub fn apply(programs: &[BpfProgram]) -> Result<(), seccompiler::Error> {
    for p in programs {
        seccompiler::apply_filter(p)?;
    }
    Ok(())
}

fn target_arch() -> Result<TargetArch, Error> {
    TargetArch::try_from(std::env::consts::ARCH)
}

/// Kills the process for any syscall that is not native x86_64 (i386 `int 0x80`, x32).
fn x32_guard() -> BpfProgram {
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    const LD_ABS_W: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let ins = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        ins(LD_ABS_W, 0, 0, 4), // seccomp_data.arch
        ins(JEQ_K, 0, 3, AUDIT_ARCH_X86_64),
        ins(LD_ABS_W, 0, 0, 0), // seccomp_data.nr
        ins(JSET_K, 1, 0, X32_SYSCALL_BIT),
        ins(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
        ins(RET_K, 0, 0, libc::SECCOMP_RET_KILL_PROCESS),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: Network) -> Vec<&'static str> {
        deny_list(n).iter().map(|d| d.name).collect()
    }

    #[test]
    fn the_issue_list_is_always_refused() {
        for n in [Network::On, Network::Off] {
            let v = names(n);
            for required in [
                "ptrace",
                "io_uring_setup",
                "io_uring_enter",
                "io_uring_register",
                "ioctl",
                "unshare",
                "clone",
                "setns",
                "mount",
                "umount2",
                "pivot_root",
                "bpf",
                "perf_event_open",
                "userfaultfd",
                "keyctl",
                "add_key",
                "init_module",
                "finit_module",
                "delete_module",
            ] {
                assert!(v.contains(&required), "{required} missing with {n:?}");
            }
        }
        let ioctl = deny_list(Network::On)
            .into_iter()
            .find(|d| d.name == "ioctl")
            .unwrap();
        assert_eq!(
            ioctl.when,
            When::ArgIn {
                arg: 1,
                values: &[0x5412, 0x541C]
            }
        );
    }

    #[test]
    fn listen_is_refused_only_without_a_namespace() {
        for n in [Network::On, Network::Off, Network::Proxy] {
            let listen = |standalone| {
                deny_list_with(n, false, standalone)
                    .iter()
                    .any(|d| d.nr == libc::SYS_listen)
            };
            assert!(listen(true), "{n:?}");
            assert!(!listen(false), "{n:?}");
            assert!(programs_with(n, false, true).is_ok());
        }
    }

    #[test]
    fn local_sockets_allow_only_unix_besides_the_network_rules() {
        let proxy = deny_list_with(Network::Proxy, true, false);
        assert!(proxy.iter().any(|d| d.name == "socket"
            && d.when
                == When::ArgNotIn {
                    arg: 0,
                    values: INET_AND_UNIX_FAMILIES
                }));
        let off = deny_list_with(Network::Off, true, false);
        let socket: Vec<&Deny> = off.iter().filter(|d| d.name == "socket").collect();
        assert_eq!(socket.len(), 1);
        assert_eq!(
            socket[0].when,
            When::ArgNot {
                arg: 0,
                value: libc::AF_UNIX as u64
            }
        );
        assert_eq!(
            deny_list_with(Network::On, true, false),
            deny_list(Network::On)
        );
        assert!(programs_with(Network::Proxy, true, false).is_ok());
    }

    #[test]
    fn sockets_only_refused_with_network_off() {
        assert!(!names(Network::On).contains(&"socket"));
        let off = deny_list(Network::Off);
        assert_eq!(
            off.iter().find(|d| d.name == "socket").unwrap().when,
            When::Always
        );
        assert_eq!(
            off.iter().find(|d| d.name == "socketpair").unwrap().when,
            When::ArgNot {
                arg: 0,
                value: libc::AF_UNIX as u64
            }
        );
    }

    #[test]
    fn proxy_mode_allows_only_tcp_streams() {
        let proxy = deny_list(Network::Proxy);
        let socket: Vec<When> = proxy
            .iter()
            .filter(|d| d.name == "socket")
            .map(|d| d.when)
            .collect();
        assert_eq!(socket.len(), 3);
        assert!(socket.contains(&When::ArgNotIn {
            arg: 0,
            values: &[libc::AF_INET as u64, libc::AF_INET6 as u64]
        }));
        assert!(proxy.iter().any(|d| d.name == "socketpair"));
        assert!(!names(Network::On).contains(&"socketpair"));
    }

    const IPC: &[&str] = &[
        "shmget",
        "shmat",
        "shmctl",
        "shmdt",
        "msgget",
        "msgsnd",
        "msgrcv",
        "msgctl",
        "semget",
        "semop",
        "semtimedop",
        "semctl",
        "mq_open",
        "mq_unlink",
        "mq_timedsend",
        "mq_timedreceive",
        "mq_notify",
        "mq_getsetattr",
    ];
    const OTHER_PROCESS: &[&str] = &[
        "setpriority",
        "ioprio_set",
        "sched_setaffinity",
        "sched_setscheduler",
        "sched_setparam",
        "sched_setattr",
        "prlimit64",
    ];

    #[test]
    fn without_namespaces_sysv_ipc_and_other_processes_are_refused() {
        for n in [Network::On, Network::Off, Network::Proxy] {
            let standalone: Vec<_> = deny_list_with(n, false, true)
                .iter()
                .map(|d| d.name)
                .collect();
            let namespaced: Vec<_> = deny_list_with(n, false, false)
                .iter()
                .map(|d| d.name)
                .collect();
            for name in IPC.iter().chain(OTHER_PROCESS) {
                assert!(standalone.contains(name), "{name} with {n:?}");
                // Bubblewrap's IPC and PID namespaces hold these for normal commands.
                assert!(!namespaced.contains(name), "{name} with {n:?}");
            }
        }
        let read_only: Vec<_> = read_only_deny_list().iter().map(|d| d.name).collect();
        for name in IPC.iter().chain(OTHER_PROCESS) {
            assert!(read_only.contains(name), "{name} read-only");
        }
    }

    #[test]
    fn a_command_may_still_change_its_own_scheduling() {
        let rules = other_process_deny_list();
        let when = |name: &str| -> Vec<When> {
            rules
                .iter()
                .filter(|d| d.name == name)
                .map(|d| d.when)
                .collect()
        };
        // `who` 0 is the caller for PRIO_PROCESS only (the caller's group or user otherwise).
        assert_eq!(
            when("setpriority"),
            vec![
                When::ArgNot { arg: 0, value: 0 },
                When::ArgNot { arg: 1, value: 0 }
            ]
        );
        assert_eq!(
            when("ioprio_set"),
            vec![
                When::ArgNot { arg: 0, value: 1 },
                When::ArgNot { arg: 1, value: 0 }
            ]
        );
        for name in [
            "sched_setaffinity",
            "sched_setscheduler",
            "sched_setparam",
            "sched_setattr",
            "prlimit64",
        ] {
            assert_eq!(
                when(name),
                vec![When::ArgNot { arg: 0, value: 0 }],
                "{name}"
            );
        }
    }

    #[test]
    fn programs_compile_within_bpf_limits() {
        for n in [Network::On, Network::Off, Network::Proxy] {
            let progs = programs(n).unwrap();
            assert!(!progs.is_empty());
            for p in &progs {
                assert!(!p.is_empty() && p.len() < 4096);
            }
        }
        for sockets in [false, true] {
            for p in read_only_programs(sockets, true).unwrap() {
                assert!(!p.is_empty() && p.len() < 4096);
            }
        }
    }

    #[test]
    fn a_read_only_command_changes_no_metadata_and_opens_no_socket_where_allowed() {
        let names: Vec<_> = read_only_deny_list().iter().map(|d| d.name).collect();
        for name in [
            "fchmod",
            "fchmodat",
            "fchmodat2",
            "fchown",
            "fchownat",
            "utimensat",
            "setxattr",
            "fremovexattr",
            "setxattrat",
            "removexattrat",
            "file_setattr",
            "ioctl",
        ] {
            assert!(names.contains(&name), "{name}");
        }
        let open = read_only_programs(false, true).unwrap();
        let closed = read_only_programs(true, true).unwrap();
        assert!(closed[0].len() > open[0].len(), "the socket rule is added");
    }
}
