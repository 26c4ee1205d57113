//! The guard of a command gg runs without a sandbox (a normal command without `--sandbox`):
//! the one policy's secrets hidden and the home's start-up files read-only, by a Landlock
//! ruleset in force on the thread that spawns the command, which the command inherits.
//!
//! Why in gg's own child rather than through the helper: the ruleset of such a command grants
//! every right on every entry of `/` and of each directory on the way down to what it hides
//! (about a hundred rules, each an `open` of the entry), and the helper built it anew for every
//! command: 4–5 ms of a command that may take one. Built once here and reused while the tree it
//! was built from is unchanged ([`fs_rules::Prepared::is_current`], a `stat` per path), what
//! each command pays is a duplicate of the ruleset's descriptor, a short-lived thread and three
//! system calls on it.
//!
//! Why a thread of its own rather than the child between fork and exec: Landlock and
//! `no_new_privs` are a thread's, and a process started by a thread takes that thread's. A
//! restriction made in the child needs `Command::pre_exec`, with which std forks the whole of
//! gg (its page tables copied, then written to under copy-on-write while the child exists, then
//! torn down at the exec: 1–2 ms a command, measured); without it std spawns the vfork way
//! (`posix_spawn`), which copies nothing. The thread restricts itself, spawns, and ends; its
//! restriction ends with it, and it starts nothing else that could live on with it.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::SandboxError;
use crate::fs_rules::{self, LandlockPlan, Prepared};
use crate::probe::{Availability, PROBE, ProbeError};
use crate::{Invocation, protected};

/// The rulesets kept for the next commands, most recently used last, each with the plan it was
/// built for: the plan changes when a session's secrets or the home's kept entries do, the
/// ruleset when the tree under it does. More than one, because ggd runs sessions side by side
/// whose secrets differ (a session's `--api-key-file` joins its own list): with one kept
/// ruleset they would take turns rebuilding it for every command.
static KEPT: Mutex<Vec<(LandlockPlan, Prepared)>> = Mutex::new(Vec::new());

/// How many plans' rulesets [`KEPT`] holds: a descriptor and a stamp per path each, so a
/// handful covers the sessions a daemon runs at once without holding much.
const KEPT_PLANS: usize = 4;

/// `inner` as a command that runs on the host under the guard: it may do all it could do
/// unconfined but read or write `deny_read` (the one policy's secrets, as the sandbox hides
/// them), or write what [`protected::kept_in_home`] keeps (the home's start-up and
/// configuration files, its top level, `~/.config`'s and `~/.local`'s): a parser's verdict of
/// "normal" then cannot send `~/.ssh/id_rsa` to the model or plant `~/.bashrc`, whatever the
/// command's words hide. `no_new_privs` is set (Landlock needs it); one seccomp filter, against
/// typing into gg's terminal ([`crate::seccomp::guard_programs`]); the capabilities and the
/// network as they were. `Err` where Landlock is not enforced here.
pub fn guard(
    inner: &Invocation,
    cwd: &Path,
    deny_read: &[PathBuf],
) -> Result<GuardedCommand, SandboxError> {
    PROBE
        .landlock()
        .as_ref()
        .map_err(|reason| SandboxError::Unavailable {
            backend: "landlock",
            reason: reason.clone(),
        })?;
    restricting(
        inner,
        cwd,
        fs_rules::guard_plan(deny_read.to_vec(), kept(cwd)),
    )
}

/// A command to run under the guard, with the ruleset it runs under; spawned through
/// [`GuardedCommand::spawn_with`].
pub struct GuardedCommand {
    command: Command,
    ruleset: OwnedFd,
}

impl GuardedCommand {
    /// The command, for its standard streams, process group and the like. A `pre_exec` closure
    /// added here would run as before, but would bring back the fork this type exists to avoid.
    pub fn command_mut(&mut self) -> &mut Command {
        &mut self.command
    }

    /// Calls `spawn` with the command on a new thread restricted by the ruleset
    /// (`no_new_privs`, `landlock_restrict_self`), so that what `spawn` starts runs under the
    /// ruleset and can never leave it; the thread ends when `spawn` returns. `spawn` must start
    /// the process and do nothing else: whatever it starts inherits the restriction, a thread
    /// included.
    ///
    /// Every descriptor of gg above 2 is marked close-on-exec first, process-wide (the table is
    /// shared by every thread): a descriptor inherited past the exec keeps the rights it was
    /// opened with, whatever Landlock says. gg opens every descriptor close-on-exec (std, tokio
    /// and libc's wrappers do) and never clears the flag in its own table, so the mark changes
    /// nothing but what gg itself was started with or a library opened without the flag.
    pub fn spawn_with<T: Send>(
        self,
        spawn: impl FnOnce(Command) -> std::io::Result<T> + Send,
    ) -> std::io::Result<T> {
        let GuardedCommand { command, ruleset } = self;
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("gg-guarded-spawn".into())
                .stack_size(SPAWN_STACK)
                .spawn_scoped(scope, move || {
                    restrict_this_thread(ruleset.as_raw_fd())?;
                    spawn(command)
                })?
                .join()
                .unwrap_or_else(|_| {
                    Err(std::io::Error::other(
                        "the thread that spawns a guarded command panicked",
                    ))
                })
        })
    }
}

/// The stack of the thread that spawns a guarded command: std's `posix_spawn` path and tokio's
/// registration of the child need a few kilobytes; this leaves room for either to grow.
const SPAWN_STACK: usize = 256 * 1024;

/// `inner` in `cwd`, to be spawned under `plan`'s ruleset.
fn restricting(
    inner: &Invocation,
    cwd: &Path,
    plan: LandlockPlan,
) -> Result<GuardedCommand, SandboxError> {
    let ruleset = ruleset_for(plan)?;
    let mut command = Command::new(&inner.program);
    command
        .args(&inner.args)
        .current_dir(cwd)
        .env_clear()
        .envs(inner.env.iter().map(|(k, v)| (k, v)));
    Ok(GuardedCommand { command, ruleset })
}

/// What the guard keeps read-only in the home ([`protected::kept_in_home`]).
fn kept(cwd: &Path) -> Vec<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .and_then(|h| std::fs::canonicalize(h).ok())
        .map(|home| {
            let mut keep = protected::kept_in_home(&home);
            // A project inside the home's configuration (`~/.config` kept as a dotfiles
            // repository) is the person's to work on: what lies in it is the sweep's to judge,
            // and keeping it would leave the project's own top read-only. A project at or
            // above the home is not such a project.
            if let Ok(cwd) = std::fs::canonicalize(cwd)
                && !home.starts_with(&cwd)
            {
                keep.retain(|k| !k.starts_with(&cwd));
            }
            keep
        })
        .unwrap_or_default()
}

/// A descriptor of `plan`'s ruleset: a kept one when it is for the same plan and still current,
/// else a new one (kept for the next command where it may serve more than one).
fn ruleset_for(plan: LandlockPlan) -> Result<OwnedFd, SandboxError> {
    let setup = |e: &dyn std::fmt::Display| {
        SandboxError::Setup(format!("the guard's Landlock ruleset: {e}"))
    };
    #[cfg(feature = "test-hooks")]
    if std::env::var_os("GG_TEST_GUARD_RULESET_FAILS").is_some_and(|v| v == "1") {
        return Err(setup(&"injected failure (GG_TEST_GUARD_RULESET_FAILS)"));
    }
    let mut kept = KEPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let build = |plan: &LandlockPlan| {
        #[cfg(test)]
        tests::BUILT.with(|built| built.set(built.get() + 1));
        fs_rules::prepare(plan).map_err(|e| setup(&e))
    };
    let prepared = match kept.iter().position(|(built_for, _)| *built_for == plan) {
        Some(at) => match kept.remove(at) {
            (_, prepared) if prepared.is_current() => prepared,
            _ => build(&plan)?,
        },
        None => build(&plan)?,
    };
    let fd = prepared.ruleset_fd().map_err(|e| setup(&e))?;
    if prepared.is_reusable() {
        if kept.len() == KEPT_PLANS {
            kept.remove(0);
        }
        kept.push((plan, prepared));
    }
    fd.ok_or_else(|| SandboxError::Unavailable {
        backend: "landlock",
        reason: ProbeError::Kernel("the guard's ruleset is not enforced by this kernel".into()),
    })
}

/// The guard's seccomp filters ([`crate::seccomp::guard_programs`]), compiled once.
static GUARD_PROGRAMS: std::sync::OnceLock<Result<Vec<seccompiler::BpfProgram>, String>> =
    std::sync::OnceLock::new();

/// On the spawning thread: `no_new_privs`, the seccomp filters against typing into a terminal
/// and the ruleset, all the thread's alone, and every
/// descriptor above 2 marked close-on-exec (see [`GuardedCommand::spawn_with`]; a kernel too
/// old for the flag, before 5.11, leaves them as gg opened them: close-on-exec).
fn restrict_this_thread(ruleset: std::os::fd::RawFd) -> std::io::Result<()> {
    // The flag is the calling thread's, as the ruleset is.
    crate::restrict::set_no_new_privs().map_err(|e| std::io::Error::other(e.to_string()))?;
    // Without a flag to sync threads, the filters are this thread's alone too.
    let programs = GUARD_PROGRAMS
        .get_or_init(|| crate::seccomp::guard_programs().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| std::io::Error::other(format!("the guard's seccomp filter: {e}")))?;
    crate::seccomp::apply(programs).map_err(|e| std::io::Error::other(e.to_string()))?;
    // SAFETY: landlock_restrict_self on a ruleset descriptor this process holds, no flags: it
    // restricts the calling thread only.
    if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: close_range with the close-on-exec flag only marks descriptors; it closes none.
    let _ = unsafe { libc::close_range(3, libc::c_uint::MAX, libc::CLOSE_RANGE_CLOEXEC as i32) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs_rules::tests::landlock_unavailable;

    thread_local! {
        /// How many rulesets this thread's guarded commands built (kept ones reused are not
        /// counted).
        pub(super) static BUILT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// The two tests that count builds share `/var/tmp` (not `/tmp`, where the other tests make
    /// their directories all the time: a change in a directory on the way to a secret rightly
    /// makes the next command build again), one at a time.
    static SETTLED: Mutex<()> = Mutex::new(());

    /// A directory for a test whose ruleset must be kept, and the lock that keeps the other
    /// such test from changing `/var/tmp` meanwhile.
    fn settled_root() -> (
        std::sync::MutexGuard<'static, ()>,
        tempfile::TempDir,
        PathBuf,
    ) {
        let serial = SETTLED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let t = tempfile::tempdir_in("/var/tmp").unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        (serial, t, root)
    }

    /// Waits until nothing under `root` or on the way to it changed in the last seconds, so a
    /// ruleset built from it is kept ([`crate::watch::Stamp::recent`]: an inode's change time
    /// cannot be set back).
    fn let_settle(root: &Path) {
        use std::os::unix::fs::MetadataExt;
        let newest = walk_dirs(root)
            .iter()
            .chain(
                root.ancestors()
                    .skip(1)
                    .map(Path::to_path_buf)
                    .collect::<Vec<_>>()
                    .iter(),
            )
            .map(|d| {
                let m = std::fs::metadata(d).unwrap();
                m.mtime().max(m.ctime())
            })
            .max()
            .unwrap();
        while std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
            <= newest + 3
        {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    fn walk_dirs(dir: &Path) -> Vec<PathBuf> {
        let mut dirs = vec![dir.to_path_buf()];
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.extend(walk_dirs(&path));
            }
        }
        dirs
    }

    fn run(program: &str, args: &[&Path], cwd: &Path, deny: &[PathBuf]) -> std::process::Output {
        let inner = Invocation {
            program: program.into(),
            args: args.iter().map(|a| a.as_os_str().to_owned()).collect(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        };
        // What `guard` runs once the level is known to work (its probe starts the helper,
        // which this test binary is not); the home's kept files are not this test's.
        let plan = fs_rules::guard_plan(deny.to_vec(), Vec::new());
        restricting(&inner, cwd, plan)
            .unwrap()
            .spawn_with(|mut command| command.output())
            .unwrap()
    }

    /// The ruleset is shared between commands: each one, the first or a later one, is kept out
    /// of the secret, reads its sibling, writes the project; an entry made between two commands
    /// is judged by the tree as it is then (a ruleset gone stale is built again), and a
    /// descriptor gg holds open is not inherited past the exec.
    #[test]
    fn every_guarded_command_is_kept_out_of_secrets_by_the_shared_ruleset() {
        if landlock_unavailable() {
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        let secret_dir = root.join("home/.ssh");
        std::fs::create_dir_all(&secret_dir).unwrap();
        std::fs::write(secret_dir.join("key"), "SECRET").unwrap();
        std::fs::write(root.join("home/notes"), "notes").unwrap();
        let project = root.join("project");
        std::fs::create_dir(&project).unwrap();
        let deny = [secret_dir.clone()];
        for round in 0..3 {
            let key = run("cat", &[&secret_dir.join("key")], &project, &deny);
            assert!(
                !key.status.success() && !String::from_utf8_lossy(&key.stdout).contains("SECRET"),
                "round {round}: {key:?}"
            );
            let notes = run("cat", &[&root.join("home/notes")], &project, &deny);
            assert_eq!(notes.stdout, b"notes", "round {round}: {notes:?}");
            let made = project.join(format!("made-{round}"));
            let touch = run("touch", &[&made], &project, &deny);
            assert!(
                touch.status.success() && made.exists(),
                "round {round}: {touch:?}"
            );
        }
        // Made after the ruleset: under a directory on the way to the secret (list-only in a
        // stale ruleset), readable once the ruleset is built from the tree as it is now.
        std::fs::create_dir(root.join("home/later")).unwrap();
        std::fs::write(root.join("home/later/file"), "later").unwrap();
        let later = run("cat", &[&root.join("home/later/file")], &project, &deny);
        assert_eq!(later.stdout, b"later", "{later:?}");
        let key = run("cat", &[&secret_dir.join("key")], &project, &deny);
        assert!(!key.status.success(), "{key:?}");
        // A descriptor of the secret opened in gg (without close-on-exec) is not the command's.
        let open = std::fs::File::open(secret_dir.join("key")).unwrap();
        let fd = open.as_raw_fd();
        // SAFETY: fcntl on a descriptor this test owns, clearing its close-on-exec flag.
        assert_eq!(unsafe { libc::fcntl(fd, libc::F_SETFD, 0) }, 0);
        let script = format!("cat <&{fd}");
        let via_fd = run(
            "sh",
            &[Path::new("-c"), Path::new(&script)],
            &project,
            &deny,
        );
        assert!(
            !String::from_utf8_lossy(&via_fd.stdout).contains("SECRET"),
            "{via_fd:?}"
        );
        // The restriction was the spawning threads' alone: this thread, a thread started now
        // and a command spawned without the guard still read the secret.
        let read = || std::fs::read_to_string(secret_dir.join("key")).unwrap();
        assert_eq!(read(), "SECRET");
        assert_eq!(
            std::thread::scope(|s| s.spawn(read).join().unwrap()),
            "SECRET"
        );
        let bare = Command::new("cat")
            .arg(secret_dir.join("key"))
            .output()
            .unwrap();
        assert_eq!(bare.stdout, b"SECRET", "{bare:?}");
    }

    /// A kept ruleset serves the next command only while the tree it was built from is
    /// unchanged: on a settled tree (so the ruleset is kept at all), an entry made after it,
    /// under a directory on the way to the secret (list-only in the kept ruleset), is readable
    /// by the next command, which a stale ruleset would refuse; and the commands between built
    /// nothing new.
    #[test]
    fn a_kept_ruleset_is_built_again_once_its_tree_changed() {
        if landlock_unavailable() {
            return;
        }
        let (_serial, _t, root) = settled_root();
        let secret_dir = root.join("home/.ssh");
        std::fs::create_dir_all(&secret_dir).unwrap();
        std::fs::write(secret_dir.join("key"), "SECRET").unwrap();
        let project = root.join("project");
        std::fs::create_dir(&project).unwrap();
        let deny = [secret_dir.clone()];
        let_settle(&root);
        let built = BUILT.with(std::cell::Cell::get);
        for _ in 0..3 {
            let key = run("cat", &[&secret_dir.join("key")], &project, &deny);
            assert!(!key.status.success(), "{key:?}");
        }
        assert_eq!(
            BUILT.with(std::cell::Cell::get),
            built + 1,
            "kept and reused"
        );
        std::fs::create_dir(root.join("home/later")).unwrap();
        std::fs::write(root.join("home/later/file"), "later").unwrap();
        let later = run("cat", &[&root.join("home/later/file")], &project, &deny);
        assert_eq!(later.stdout, b"later", "{later:?}");
        assert_eq!(BUILT.with(std::cell::Cell::get), built + 2, "built again");
    }

    /// Sessions whose secrets differ (ggd runs them side by side) each keep their ruleset:
    /// commands alternating between two plans build each once, each keeps its own secret
    /// hidden, and no more than [`KEPT_PLANS`] are held.
    #[test]
    fn sessions_with_different_secrets_keep_their_own_rulesets() {
        if landlock_unavailable() {
            return;
        }
        let (_serial, _t, root) = settled_root();
        let project = root.join("project");
        std::fs::create_dir(&project).unwrap();
        let secrets: Vec<PathBuf> = (0..KEPT_PLANS + 2)
            .map(|i| {
                let file = root.join(format!("secret-{i}"));
                std::fs::write(&file, format!("SECRET-{i}")).unwrap();
                file
            })
            .collect();
        let_settle(&root);
        let built = BUILT.with(std::cell::Cell::get);
        for round in 0..3 {
            for (i, secret) in secrets[..2].iter().enumerate() {
                let own = run("cat", &[secret], &project, std::slice::from_ref(secret));
                assert!(!own.status.success(), "round {round}, plan {i}: {own:?}");
                let other = &secrets[1 - i];
                let theirs = run("cat", &[other], &project, std::slice::from_ref(secret));
                assert_eq!(
                    theirs.stdout,
                    format!("SECRET-{}", 1 - i).as_bytes(),
                    "round {round}, plan {i}: {theirs:?}"
                );
            }
        }
        assert_eq!(BUILT.with(std::cell::Cell::get), built + 2);
        for secret in &secrets {
            run("true", &[], &project, std::slice::from_ref(secret));
        }
        let held = KEPT
            .lock()
            .unwrap()
            .iter()
            .filter(|(plan, _)| plan.deny_read.iter().any(|d| d.starts_with(&root)))
            .count();
        assert!(held <= KEPT_PLANS, "{held}");
    }
}
