//! The guard of a command gg runs without a sandbox (a normal command without `--sandbox`):
//! the one policy's secrets hidden and nothing writable but the project, the temporary
//! directories and the home's package caches ([`guard_writes`]: an allow-list, the shape of the
//! sandbox's workspace-write plan), by a Landlock ruleset in force on the thread that spawns the
//! command, which the command inherits.
//!
//! Why the ruleset is gg's rather than the helper's: the ruleset of such a command grants
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
//!
//! What the thread starts is the helper in its reaper's role ([`reaped`]), which starts the
//! command and restricts nothing: it inherits the ruleset like the command, and only stays to
//! kill what the command leaves running.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::SandboxError;
use crate::fs_rules::{self, LandlockPlan, Prepared};
use crate::probe::{Availability, PROBE, ProbeError};
use crate::{Invocation, helper, protected, watch};

/// The rulesets kept for the next commands, most recently used last, each with the plan it was
/// built for: the plan changes when a session's secrets or the home's kept entries do, the
/// ruleset when the tree under it does. More than one, because ggd runs sessions side by side
/// whose secrets differ (a session's `--api-key-file` joins its own list): with one kept
/// ruleset they would take turns rebuilding it for every command.
static KEPT: Mutex<Vec<(LandlockPlan, Prepared)>> = Mutex::new(Vec::new());

/// How many plans' rulesets [`KEPT`] holds: a descriptor and a stamp per path each, so a
/// handful covers the sessions a daemon runs at once without holding much.
const KEPT_PLANS: usize = 4;

/// `inner` as a command that runs on the host under the guard: it may read and run what it
/// could unconfined but `deny_read` (the one policy's secrets, as the sandbox hides them), and
/// write only where [`guard_writes`] says: the project (`project`, the session's workspace
/// root, which is also the command's current directory), the temporary directories, the
/// home's package caches ([`protected::WRITABLE_CACHES_IN_HOME`]) and the data devices.
/// Everything else is read-only: the home's dot-directories, `~/.config`, `~/.local`, other
/// repositories, `PATH`'s directories, gg's own executable, and the system as root. A parser's
/// verdict of "normal" then cannot send `~/.ssh/id_rsa` to the model or plant a start-up file
/// anywhere, whatever the command's words hide. `no_new_privs` is set (Landlock needs it); one
/// seccomp filter, against typing into gg's terminal ([`crate::seccomp::guard_programs`]); the
/// capabilities and the network as they were. `Err` where Landlock is not enforced here.
///
/// This is the guard of one command, spawned on its own; a session serves its guarded commands
/// from a server of its own instead ([`crate::server::SessionServer::spawn_guarded`]), and
/// comes here where that server cannot start.
pub fn guard(
    inner: &Invocation,
    project: &Path,
    deny_read: &[PathBuf],
) -> Result<GuardedCommand, SandboxError> {
    restricting(&reaped(inner)?, project, plan(project, deny_read)?)
}

/// The guard's Landlock plan for a command in `project` (see [`guard`]): the one both ways of
/// running a guarded command apply, on a spawning thread here or in the guard's server. `Err`
/// where Landlock is not enforced here.
pub(crate) fn plan(project: &Path, deny_read: &[PathBuf]) -> Result<LandlockPlan, SandboxError> {
    PROBE
        .landlock()
        .as_ref()
        .map_err(|reason| SandboxError::Unavailable {
            backend: "landlock",
            reason: reason.clone(),
        })?;
    let writes = kept_guard_writes(project, exe_dir());
    let mut hidden = deny_read.to_vec();
    hidden.extend(TERMINALS.iter().map(PathBuf::from));
    Ok(fs_rules::guard_plan(writes.writable, hidden, writes.keep))
}

/// The test-hooks knob `GG_TEST_GUARD_RULESET_FAILS=1`: the guard's ruleset is taken as one that
/// could not be built (as an unreadable directory on the way to a secret would make it), to show
/// that the command is then refused. Checked where either way of running a guarded command
/// would build the ruleset.
pub(crate) fn injected_ruleset_failure() -> Result<(), SandboxError> {
    #[cfg(feature = "test-hooks")]
    if std::env::var_os("GG_TEST_GUARD_RULESET_FAILS").is_some_and(|v| v == "1") {
        return Err(SandboxError::Setup(
            "the guard's Landlock ruleset: injected failure (GG_TEST_GUARD_RULESET_FAILS)".into(),
        ));
    }
    Ok(())
}

/// `inner` as the child of the helper in its reaper's role ([`helper::REAP_ARG`]): what the
/// command leaves running when it ends is killed then, whatever process group or session it
/// moved to (`setsid`, `set -m`, a double fork), before gg sweeps the project. Without it such
/// a process outlived the command and gg, kept the guard's writes, and could plant in the
/// project after the last sweep. The helper is the small executable of this build (gg itself
/// where it is missing); it restricts nothing, it inherits the guard as the command does.
fn reaped(inner: &Invocation) -> Result<Invocation, SandboxError> {
    let reaper = crate::helper_image::standalone_helper_exe()?;
    let mut args = vec![
        helper::HELPER_FLAG.into(),
        helper::REAP_ARG.into(),
        "--".into(),
        inner.program.clone(),
    ];
    args.extend(inner.args.iter().cloned());
    Ok(Invocation {
        program: reaper.into(),
        args,
        env: inner.env.clone(),
    })
}

/// The person's terminals, hidden from a guarded command: it has no terminal of its own (its
/// input is empty, its output a pipe), and through gg's (`/dev/tty`: the command shares gg's
/// session) or another of the person's (`/dev/pts/N`) it could read what the person types or
/// write to their screen. Typing into one is refused besides, by the seccomp filter, for a
/// descriptor that reaches it another way.
const TERMINALS: &[&str] = &["/dev/tty", "/dev/pts", "/dev/console"];

/// The temporary directories every command may write, where they exist (`$TMPDIR` joins them
/// in [`guard_writes`]): what programs make their scratch files in, which nothing reads at
/// start.
pub const TEMP_DIRS: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// What a guarded command may write ([`GuardWrites::writable`], every root canonical) and
/// what stays read-only inside those roots ([`GuardWrites::keep`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GuardWrites {
    /// The project, the temporary directories, the home's package caches.
    pub writable: Vec<PathBuf>,
    /// Paths inside a writable root that stay read-only: the home's configuration where the
    /// home lies inside one (the project is the home or above it; a home inside `/var/tmp`),
    /// `$XDG_CONFIG_HOME` and `$XDG_DATA_HOME`, `PATH`'s directories in the home and gg's
    /// executable's directory where they lie in a temporary directory or a cache. What lies
    /// in the project (and is not the home's) is the sweep's to judge, not kept.
    pub keep: Vec<PathBuf>,
}

/// The writes a guarded command is allowed in `project` (the session's workspace root), with
/// the environment read through `var` (`HOME`, `TMPDIR`, `XDG_*`, `PATH`: gg's own, which a
/// command cannot change) and gg's executable's directory. A cheap list: a `stat` per name and
/// one listing of the home's top, no walk (it runs for every command; the ruleset built from
/// it is kept).
pub fn guard_writes(
    project: &Path,
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
    exe_dir: Option<PathBuf>,
) -> GuardWrites {
    let absolute = |name: &str| {
        var(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let home = absolute("HOME").and_then(|h| watch::canonicalize(h).ok());
    // `/` as the project would make the whole system writable: a command started there
    // writes only where any command may.
    let project = watch::canonicalize(project)
        .ok()
        .filter(|p| p != Path::new("/"));
    let project_holds_home = matches!((&project, &home), (Some(p), Some(h)) if h.starts_with(p));

    // Read-only wherever they lie, outside the project's own: what a person's shell, session
    // or tools read and run at start by a variable rather than a place in the home, and gg's
    // own executables.
    let mut read_only: Vec<PathBuf> = Vec::new();
    let canonical_or_as_is = |p: PathBuf| watch::canonicalize(&p).unwrap_or(p);
    for (name, default) in [
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
    ] {
        let dir = absolute(name).or_else(|| home.as_ref().map(|h| h.join(default)));
        read_only.extend(dir.map(canonical_or_as_is));
    }
    read_only.extend(exe_dir);
    if let (Some(home), Some(path)) = (&home, var("PATH")) {
        read_only.extend(
            std::env::split_paths(&path)
                .filter(|d| d.is_absolute())
                .filter_map(|d| watch::canonicalize(d).ok())
                .filter(|d| d.starts_with(home)),
        );
    }
    if let Some(home) = &home {
        read_only.extend(protected::KEPT_IN_HOME.iter().map(|rel| home.join(rel)));
    }
    // A root that would hold one of those, the home or the system is not granted: `/`, the
    // home or above it, in or around what must stay read-only.
    let grantable = |dir: &Path| {
        dir != Path::new("/")
            && !home.as_ref().is_some_and(|h| h.starts_with(dir))
            && !read_only
                .iter()
                .any(|k| k.starts_with(dir) || dir.starts_with(k))
    };
    let existing_dir = |p: PathBuf| {
        watch::canonicalize(p)
            .ok()
            .filter(|d| is_dir(d) && grantable(d))
    };

    let mut writable: Vec<PathBuf> = project.iter().cloned().collect();
    // The system's temporary directories always, where they exist: what must stay read-only
    // inside one (a home in `/var/tmp`, gg built in `/tmp`) is kept below.
    writable.extend(
        TEMP_DIRS
            .iter()
            .filter_map(|t| watch::canonicalize(t).ok())
            .filter(|t| is_dir(t)),
    );
    // `$TMPDIR` only where it is an ordinary place: not in the home's configuration (a
    // dot-directory, `~/bin`), not the home, above it or around what must stay read-only.
    writable.extend(
        absolute("TMPDIR")
            .filter(|t| {
                home.as_ref()
                    .zip(watch::canonicalize(t).ok())
                    .is_none_or(|(h, t)| protected::home_config_dir(&t, h).is_none())
            })
            .and_then(existing_dir),
    );
    let caches: Vec<PathBuf> = home
        .iter()
        .flat_map(|home| {
            protected::WRITABLE_CACHES_IN_HOME.iter().map(|rel| {
                match (*rel, absolute("XDG_CACHE_HOME")) {
                    (".cache", Some(xdg)) => xdg,
                    _ => home.join(rel),
                }
            })
        })
        .filter_map(existing_dir)
        .collect();
    writable.extend(caches.iter().cloned());
    let writable = first_of_each(writable);

    // The home itself where a writable root holds it: with the project at or above it, its
    // configuration (every dot-entry at its top but a cache, where a linked one leads, the
    // named start-up files even absent, `~/bin`), its other entries being the project's;
    // otherwise (a home inside `/var/tmp`) all of it, the project and the caches in it being
    // writable roots of their own.
    let mut keep = read_only;
    if let Some(home) = home.as_ref().filter(|_| !project_holds_home) {
        keep.push(home.clone());
    }
    if let Some(home) = home.as_ref().filter(|_| project_holds_home) {
        keep.extend(protected::kept_in_home(home));
        for entry in watch::read_dir(home).into_iter().flatten().flatten() {
            let path = entry.path();
            let is_dot = entry.file_name().as_encoded_bytes().first() == Some(&b'.');
            if !is_dot || caches.contains(&path) {
                continue;
            }
            if entry.file_type().is_ok_and(|t| t.is_symlink())
                && let Ok(target) = watch::canonicalize(&path)
                && !home.starts_with(&target)
                && !caches.contains(&target)
            {
                keep.push(target);
            }
            keep.push(path);
        }
    }
    // Only what lies inside a writable root needs keeping (the rest is read-only already),
    // and what lies in the project is the project's, unless the project holds the home.
    keep.retain(|k| {
        writable.iter().any(|root| k.starts_with(root) && k != root)
            && (project_holds_home || !project.as_ref().is_some_and(|p| k.starts_with(p)))
    });
    GuardWrites {
        writable,
        keep: first_of_each(keep),
    }
}

/// Whether `path` is a directory (links followed), the lookup noted for [`kept_guard_writes`].
fn is_dir(path: &Path) -> bool {
    watch::metadata(path).is_ok_and(|m| m.is_dir())
}

/// The directory of gg's own executable, canonical: looked up once (a file replaced on disk
/// keeps its path).
fn exe_dir() -> Option<PathBuf> {
    static EXE_DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    EXE_DIR
        .get_or_init(|| {
            std::env::current_exe()
                .ok()
                .and_then(|exe| std::fs::canonicalize(exe).ok())
                .and_then(|exe| exe.parent().map(Path::to_path_buf))
        })
        .clone()
}

/// The environment variables [`guard_writes`] reads.
const WRITES_VARS: &[&str] = &[
    "HOME",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "PATH",
];

/// What [`guard_writes`] was asked with: the same answer while these and what it looked at
/// (`crate::watch`) are the same.
#[derive(Clone, Debug, PartialEq, Eq)]
struct WritesAsked {
    project: PathBuf,
    vars: Vec<Option<std::ffi::OsString>>,
    exe_dir: Option<PathBuf>,
}

/// The writes worked out for the last projects (up to [`KEPT_PLANS`], most recently used
/// last), each with what it was asked and what it looked at.
static KEPT_WRITES: Mutex<Vec<(WritesAsked, (GuardWrites, crate::Watched))>> =
    Mutex::new(Vec::new());

/// [`guard_writes`] with gg's own environment, kept for the next commands while nothing it
/// looked at changed (the stamps of `crate::watch`: a dozen `stat`s where working it out
/// again takes a `realpath` of each name, a hundred and more system calls a command). A
/// directory changed in the last two seconds is not trusted to show a later change, so a
/// list built then serves one command only.
fn kept_guard_writes(project: &Path, exe_dir: Option<PathBuf>) -> GuardWrites {
    let vars = WRITES_VARS.iter().map(std::env::var_os).collect();
    kept_guard_writes_at(std::time::SystemTime::now(), project, vars, exe_dir)
}

/// [`kept_guard_writes`] as if it were `now`, with the values of [`WRITES_VARS`] given.
fn kept_guard_writes_at(
    now: std::time::SystemTime,
    project: &Path,
    vars: Vec<Option<std::ffi::OsString>>,
    exe_dir: Option<PathBuf>,
) -> GuardWrites {
    let asked = WritesAsked {
        project: project.to_path_buf(),
        vars,
        exe_dir,
    };
    let build = |asked: &WritesAsked| {
        let var = |name: &str| {
            WRITES_VARS
                .iter()
                .position(|v| *v == name)
                .and_then(|at| asked.vars[at].clone())
        };
        Ok::<_, std::convert::Infallible>(crate::watch::watch_at(now, || {
            #[cfg(test)]
            tests::WRITES_BUILT.with(|n| n.set(n.get() + 1));
            guard_writes(&asked.project, var, asked.exe_dir.clone())
        }))
    };
    let mut kept = KEPT_WRITES.lock().unwrap_or_else(|e| e.into_inner());
    let Ok(writes) = kept_or_built(
        &mut kept,
        asked,
        |(_, watched)| watched.unchanged(),
        build,
        |(_, watched)| watched.is_reusable(),
        |(writes, _)| Ok(writes.clone()),
    );
    writes
}

/// What is kept in `kept` for `key` while `is_current` says it still holds, else what `build`
/// makes; `serve` takes of it what the caller needs. One kept list's rule for the guard's
/// rulesets ([`KEPT`]) and writes ([`KEPT_WRITES`]): most recently used last, a stale value for
/// the key dropped, a value kept where it served and `is_reusable` says it may serve again, and
/// the least recently used dropped past [`KEPT_PLANS`].
fn kept_or_built<K: PartialEq, V, R, E>(
    kept: &mut Vec<(K, V)>,
    key: K,
    is_current: impl Fn(&V) -> bool,
    build: impl FnOnce(&K) -> Result<V, E>,
    is_reusable: impl Fn(&V) -> bool,
    serve: impl FnOnce(&V) -> Result<R, E>,
) -> Result<R, E> {
    let value = match kept.iter().position(|(k, _)| *k == key) {
        Some(at) => match kept.remove(at) {
            (_, value) if is_current(&value) => value,
            _ => build(&key)?,
        },
        None => build(&key)?,
    };
    let served = serve(&value)?;
    if is_reusable(&value) {
        if kept.len() >= KEPT_PLANS {
            kept.remove(0);
        }
        kept.push((key, value));
    }
    Ok(served)
}

/// `paths` in their order, each once: a repeat would only add a rule, and the plan is compared
/// whole (order included) to reuse a kept ruleset, so the order stays the one given.
fn first_of_each(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut once: Vec<PathBuf> = Vec::with_capacity(paths.len());
    for path in paths {
        if !once.contains(&path) {
            once.push(path);
        }
    }
    once
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

/// A descriptor of `plan`'s ruleset: a kept one when it is for the same plan and still current,
/// else a new one (kept for the next command where it may serve more than one).
fn ruleset_for(plan: LandlockPlan) -> Result<OwnedFd, SandboxError> {
    let setup = |e: &dyn std::fmt::Display| {
        SandboxError::Setup(format!("the guard's Landlock ruleset: {e}"))
    };
    injected_ruleset_failure()?;
    let mut kept = KEPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let build = |plan: &LandlockPlan| {
        #[cfg(test)]
        tests::BUILT.with(|built| built.set(built.get() + 1));
        fs_rules::prepare(plan).map_err(|e| setup(&e))
    };
    let fd = kept_or_built(
        &mut kept,
        plan,
        Prepared::is_current,
        build,
        Prepared::is_reusable,
        |prepared| prepared.ruleset_fd().map_err(|e| setup(&e)),
    )?;
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
        /// How many times this thread worked the guard's writes out (kept ones reused are not
        /// counted).
        pub(super) static WRITES_BUILT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// The writes are worked out once and kept while nothing they were worked out from
    /// changed: a cache directory made in the home since (the home's times change) is
    /// writable at the next command, and a different environment is asked again. The clock is
    /// moved a minute on, so that the fixture's own fresh directories are not "changed just
    /// now" (`crate::watch`).
    #[test]
    fn the_guards_writes_are_kept_until_what_they_were_worked_out_from_changes() {
        let t = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(t.path()).unwrap().join("home");
        let project = home.join("repo");
        std::fs::create_dir_all(&project).unwrap();
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        let vars = |home: &Path| -> Vec<Option<std::ffi::OsString>> {
            WRITES_VARS
                .iter()
                .map(|name| match *name {
                    "HOME" => Some(home.as_os_str().to_owned()),
                    "PATH" => Some("/usr/bin:/bin".into()),
                    _ => None,
                })
                .collect()
        };
        let built = || WRITES_BUILT.with(|n| n.get());
        let before = built();
        let first = kept_guard_writes_at(later, &project, vars(&home), None);
        assert_eq!(
            first,
            guard_writes(&project, env_of(vec![("HOME", home.clone())]), None)
        );
        assert!(!first.writable.contains(&home.join(".npm")), "{first:?}");
        let again = kept_guard_writes_at(later, &project, vars(&home), None);
        assert_eq!(again, first);
        assert_eq!(built(), before + 1, "the kept writes were not used");

        std::fs::create_dir(home.join(".npm")).unwrap();
        let after = kept_guard_writes_at(later, &project, vars(&home), None);
        assert_eq!(built(), before + 2, "a new cache directory was not seen");
        assert!(after.writable.contains(&home.join(".npm")), "{after:?}");

        let other_home = home.join("repo/elsewhere");
        std::fs::create_dir_all(&other_home).unwrap();
        let elsewhere = kept_guard_writes_at(later, &project, vars(&other_home), None);
        assert_eq!(
            built(),
            before + 3,
            "another HOME was answered from the kept writes"
        );
        assert_eq!(
            elsewhere,
            guard_writes(&project, env_of(vec![("HOME", other_home.clone())]), None)
        );
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

    /// Runs `measure` (which must be repeatable) until nothing above `root` changed while it
    /// ran or just before, each time once `root`'s tree and ancestors have settled
    /// ([`let_settle`]); at most ten times. Other programs change `/var/tmp` at any time, and a change there rightly
    /// makes a kept ruleset be built again, which is not what these tests count.
    fn undisturbed<T>(root: &Path, mut measure: impl FnMut() -> T) -> T {
        use std::os::unix::fs::MetadataExt;
        let above = || -> Vec<(u64, i64, i64, i64, i64)> {
            root.ancestors()
                .skip(1)
                .map(|d| {
                    let m = std::fs::metadata(d).unwrap();
                    (
                        m.ino(),
                        m.mtime(),
                        m.mtime_nsec(),
                        m.ctime(),
                        m.ctime_nsec(),
                    )
                })
                .collect()
        };
        // Changed in the last seconds: a ruleset built now is not kept (`Stamp::recent`).
        let recent = |stamps: &[(u64, i64, i64, i64, i64)]| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs() as i64;
            stamps.iter().any(|s| s.1.max(s.3) >= now - 3)
        };
        for _ in 0..10 {
            let_settle(root);
            let before = above();
            if recent(&before) {
                continue;
            }
            let value = measure();
            if above() == before {
                return value;
            }
        }
        panic!("the directories above {} kept changing", root.display());
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
        // What `guard` runs once the level is known to work (its probe starts the helper,
        // which this test binary is not); only the project writable, so that these tests'
        // rulesets depend on their own tree alone.
        let plan = fs_rules::guard_plan(vec![cwd.to_path_buf()], deny.to_vec(), Vec::new());
        run_under(plan, program, args, cwd)
    }

    fn run_under(
        plan: LandlockPlan,
        program: &str,
        args: &[&Path],
        cwd: &Path,
    ) -> std::process::Output {
        let inner = Invocation {
            program: program.into(),
            args: args.iter().map(|a| a.as_os_str().to_owned()).collect(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        };
        restricting(&inner, cwd, plan)
            .unwrap()
            .spawn_with(|mut command| command.output())
            .unwrap()
    }

    /// A home in a temporary directory, with a project in it, the caches `made` names and the
    /// start-up places an attacker pass wrote (a `.pth` directory, `~/.cargo`, `~/.bashrc.d`,
    /// an application's `~/.config` directory, another repository).
    fn attacked_home(made: &[&str]) -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(t.path()).unwrap().join("home");
        for dir in [
            "repo",
            ".local/lib/python3.11/site-packages",
            ".local/share/systemd/user",
            ".cargo/bin",
            ".bashrc.d",
            ".config/i3",
            ".ssh",
            "other-repo/.git/hooks",
        ]
        .iter()
        .chain(made)
        {
            std::fs::create_dir_all(home.join(dir)).unwrap();
        }
        std::fs::write(home.join(".ssh/id_rsa"), "SECRET").unwrap();
        std::fs::write(home.join(".config/i3/config"), "# the person's\n").unwrap();
        (t, home)
    }

    fn env_of(pairs: Vec<(&'static str, PathBuf)>) -> impl Fn(&str) -> Option<std::ffi::OsString> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone().into_os_string())
        }
    }

    /// What is writable is a list: the project, the system's temporary directories, the
    /// caches that exist; a home that lies in a temporary directory (as here) is kept whole,
    /// and so is `$XDG_CONFIG_HOME` there; a variable that would make the home, its
    /// configuration or `/` writable grants nothing.
    #[test]
    fn the_writable_roots_are_the_project_the_temporary_directories_and_existing_caches() {
        let (_t, home) = attacked_home(&[".cache", ".cargo/registry"]);
        let project = home.join("repo");
        let xdg = home.parent().unwrap().join("xdg-config");
        let writes = guard_writes(
            &project,
            env_of(vec![
                ("HOME", home.clone()),
                ("XDG_CONFIG_HOME", xdg.clone()),
                ("PATH", "/usr/bin:/bin".into()),
            ]),
            None,
        );
        let temps: Vec<PathBuf> = TEMP_DIRS
            .iter()
            .filter_map(|t| std::fs::canonicalize(t).ok())
            .collect();
        let mut expected = vec![project.clone()];
        expected.extend(temps.iter().cloned());
        expected.extend([home.join(".cache"), home.join(".cargo/registry")]);
        assert_eq!(writes.writable, expected);
        assert!(writes.keep.contains(&home), "{:?}", writes.keep);
        assert!(writes.keep.contains(&xdg), "{:?}", writes.keep);

        // Variables that point a writable root at the home, its configuration or `/`.
        std::fs::create_dir_all(home.join(".config/tmp")).unwrap();
        std::os::unix::fs::symlink(home.join(".config"), home.join(".npm")).unwrap();
        let hostile = guard_writes(
            &project,
            env_of(vec![
                ("HOME", home.clone()),
                ("XDG_CACHE_HOME", home.clone()),
                ("TMPDIR", home.join(".config/tmp")),
            ]),
            None,
        );
        let mut expected = vec![project.clone()];
        expected.extend(temps.iter().cloned());
        expected.push(home.join(".cargo/registry"));
        assert_eq!(hostile.writable, expected);
        let at_root = guard_writes(Path::new("/"), env_of(vec![("HOME", home.clone())]), None);
        assert!(!at_root.writable.contains(&PathBuf::from("/")));
    }

    /// gg started in the home: the home's non-dot entries are the project's, every dot-entry
    /// at its top (a dot-directory no list names, `~/.cargo`, included), `~/bin` and where a
    /// linked dot-entry leads stay read-only, and the caches inside them stay writable.
    #[test]
    fn a_project_that_is_the_home_keeps_every_dot_entry_but_the_caches() {
        let (_t, home) = attacked_home(&[".cache", ".cargo/registry", ".ipython"]);
        std::fs::create_dir_all(home.join("dotfiles/emacs")).unwrap();
        std::os::unix::fs::symlink(home.join("dotfiles/emacs"), home.join(".emacs.d")).unwrap();
        let writes = guard_writes(&home, env_of(vec![("HOME", home.clone())]), None);
        assert!(writes.writable.contains(&home));
        assert!(writes.writable.contains(&home.join(".cargo/registry")));
        for kept in [
            ".cargo",
            ".ipython",
            ".bashrc.d",
            ".config",
            ".local",
            ".bashrc",
            "bin",
            "dotfiles/emacs",
        ] {
            assert!(writes.keep.contains(&home.join(kept)), "{kept}");
        }
        for mine in [".cache", "repo", "other-repo"] {
            assert!(!writes.keep.contains(&home.join(mine)), "{mine}");
        }
    }

    /// The plan at work, on the kernel: from a project in a home (itself in `/tmp`), the places
    /// an attacker pass planted are refused, the project, the cache and `/tmp` are written, the
    /// secret stays hidden; from the home as the project, its non-dot entries are written too
    /// and its dot-directories still are not.
    #[test]
    fn a_guarded_command_writes_only_the_project_the_temporary_directories_and_caches() {
        if landlock_unavailable() {
            return;
        }
        // Its two plans join the kept rulesets, of which there are only `KEPT_PLANS`: not
        // while a test counts the builds of its own.
        let _serial = SETTLED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (_t, home) = attacked_home(&[".cache"]);
        let planted = [
            ".local/lib/python3.11/site-packages/zz.pth",
            ".local/share/systemd/user/x.service",
            ".cargo/config.toml",
            ".cargo/bin/x",
            ".bashrc.d/x.sh",
            ".config/i3/config",
            "other-repo/.git/hooks/pre-commit",
            ".zshrc",
        ];
        let scratch = tempfile::tempdir().unwrap();
        let scratch = std::fs::canonicalize(scratch.path()).unwrap();
        // In the project (its top is the home's top when the project is the home, where
        // nothing new may appear: a directory of it, then), the cache and a temporary
        // directory, a new file each round.
        let ordinary = |round: usize| {
            let name = format!("made-{round}");
            vec![
                home.join("repo").join(&name),
                home.join(".cache").join(&name),
                scratch.join(&name),
            ]
        };
        for (round, project) in [home.join("repo"), home.clone()].into_iter().enumerate() {
            let writes = guard_writes(&project, env_of(vec![("HOME", home.clone())]), None);
            let plan = fs_rules::guard_plan(writes.writable, vec![home.join(".ssh")], writes.keep);
            let mut script = String::new();
            // Another repository in the home is the project's when the home is the project.
            let planted: Vec<&str> = planted
                .iter()
                .copied()
                .filter(|rel| project != home || !rel.starts_with("other-repo"))
                .collect();
            for rel in &planted {
                script.push_str(&format!("echo PWNED >> '{}'; ", home.join(rel).display()));
            }
            for path in ordinary(round) {
                script.push_str(&format!("echo ok > '{}'; ", path.display()));
            }
            script.push_str(&format!(
                "echo ok > '{}'; cat '{}'",
                home.join("other-repo/made").display(),
                home.join(".ssh/id_rsa").display()
            ));
            let out = run_under(plan, "sh", &[Path::new("-c"), Path::new(&script)], &project);
            let shown = format!("{project:?}: {out:?}");
            assert!(
                !String::from_utf8_lossy(&out.stdout).contains("SECRET"),
                "{shown}"
            );
            for rel in &planted {
                let text = std::fs::read_to_string(home.join(rel)).unwrap_or_default();
                assert!(!text.contains("PWNED"), "{rel} written: {shown}");
            }
            for path in ordinary(round) {
                assert!(path.exists(), "{} not written: {shown}", path.display());
            }
            let elsewhere = home.join("other-repo/made");
            assert_eq!(
                elsewhere.exists(),
                project == home,
                "another repository is the project's only when the home is: {shown}"
            );
        }
    }

    /// The ruleset is shared between commands: each one, the first or a later one, is kept out
    /// of the secret, reads its sibling, writes the project; an entry made between two commands
    /// is judged by the tree as it is then (a ruleset gone stale is built again), and a
    /// descriptor gg holds open is not inherited past the exec.
    /// A guarded command cannot type into a terminal it holds (`TIOCSTI`): here a pseudo
    /// terminal made its controlling terminal (`setsid -c`), as gg's is its commands'. The same
    /// command unguarded types, or the kernel refuses the ioctl to everyone and the filter has
    /// nothing to add (said, and the test ends).
    /// A guarded command cannot set or steer the clock (`guard_programs`). What is tried is
    /// harmless where it is not refused: `adjtimex` with no mode only asks (and answers any
    /// user unguarded, the control), `clock_settime` and `settimeofday` set the time it is.
    /// Without root those two fail anyway; the `adjtimex` control shows the filter is there.
    #[test]
    fn a_guarded_command_cannot_set_the_clock() {
        if landlock_unavailable() {
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(t.path()).unwrap();
        let script = "import ctypes, ctypes.util, errno, time\n\
                      libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)\n\
                      timex = ctypes.create_string_buffer(512)\n\
                      r = libc.adjtimex(timex)\n\
                      print('adjtimex', 'refused' if r < 0 and ctypes.get_errno() == errno.EPERM else 'answered')\n\
                      try:\n    time.clock_settime(time.CLOCK_REALTIME, time.clock_gettime(time.CLOCK_REALTIME))\n    print('clock_settime set')\n\
                      except OSError as e:\n    print('clock_settime refused', e.errno)\n\
                      class Tv(ctypes.Structure):\n    _fields_ = [('s', ctypes.c_long), ('us', ctypes.c_long)]\n\
                      now = time.time()\n\
                      tv = Tv(int(now), int((now % 1) * 1e6))\n\
                      r = libc.settimeofday(ctypes.byref(tv), None)\n\
                      print('settimeofday', 'set' if r == 0 else 'refused')\n";
        let unguarded = Command::new("python3")
            .args(["-c", script])
            .output()
            .unwrap();
        let unguarded = String::from_utf8_lossy(&unguarded.stdout).into_owned();
        assert!(unguarded.contains("adjtimex answered"), "{unguarded}");
        let plan = fs_rules::guard_plan(vec![project.clone()], Vec::new(), Vec::new());
        let guarded = run_under(
            plan,
            "python3",
            &[Path::new("-c"), Path::new(script)],
            &project,
        );
        let guarded = String::from_utf8_lossy(&guarded.stdout).into_owned();
        for refused in [
            "adjtimex refused",
            "clock_settime refused 1",
            "settimeofday refused",
        ] {
            assert!(guarded.contains(refused), "{refused}: {guarded}");
        }
    }

    #[test]
    fn a_guarded_command_cannot_type_into_its_terminal() {
        use std::os::fd::FromRawFd;
        if landlock_unavailable() {
            return;
        }
        // SAFETY: posix_openpt, grantpt, unlockpt and ptsname_r on the descriptor made here,
        // into a buffer of the size given.
        let (master, slave) = unsafe {
            let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
            assert!(master >= 0);
            assert_eq!(libc::grantpt(master), 0);
            assert_eq!(libc::unlockpt(master), 0);
            let mut name = [0 as libc::c_char; 128];
            assert_eq!(libc::ptsname_r(master, name.as_mut_ptr(), name.len()), 0);
            let name = std::ffi::CStr::from_ptr(name.as_ptr())
                .to_str()
                .unwrap()
                .to_string();
            (std::fs::File::from_raw_fd(master), name)
        };
        let t = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(t.path()).unwrap();
        let script = "import fcntl, termios\n\
                      try:\n    fcntl.ioctl(0, termios.TIOCSTI, b'x')\n    print('typed')\n\
                      except OSError as e:\n    print('refused', e.errno)\n";
        let terminal = || {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&slave)
                .unwrap()
        };
        let unguarded = Command::new("setsid")
            .args(["-c", "python3", "-c", script])
            .stdin(terminal())
            .output()
            .unwrap();
        let unguarded = String::from_utf8_lossy(&unguarded.stdout).into_owned();
        if !unguarded.contains("typed") {
            eprintln!(
                "the kernel refuses TIOCSTI here ({unguarded}): nothing for the filter to add"
            );
            return;
        }
        let inner = Invocation {
            program: "setsid".into(),
            args: ["-c", "python3", "-c", script].map(Into::into).to_vec(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        };
        let plan = fs_rules::guard_plan(vec![project.clone()], Vec::new(), Vec::new());
        let mut guarded = restricting(&inner, &project, plan).unwrap();
        guarded.command_mut().stdin(terminal());
        let out = guarded.spawn_with(|mut c| c.output()).unwrap();
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            said.contains(&format!("refused {}", libc::EPERM)),
            "{said} {out:?}"
        );
        drop(master);
    }

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
        let cat_key = || {
            let key = run("cat", &[&secret_dir.join("key")], &project, &deny);
            assert!(!key.status.success(), "{key:?}");
        };
        let start = BUILT.with(std::cell::Cell::get);
        let (first, last) = undisturbed(&root, || {
            cat_key();
            let first = BUILT.with(std::cell::Cell::get);
            cat_key();
            cat_key();
            (first, BUILT.with(std::cell::Cell::get))
        });
        assert!(first > start, "never built");
        assert_eq!(last, first, "kept and reused");
        std::fs::create_dir(root.join("home/later")).unwrap();
        std::fs::write(root.join("home/later/file"), "later").unwrap();
        let later = run("cat", &[&root.join("home/later/file")], &project, &deny);
        assert_eq!(later.stdout, b"later", "{later:?}");
        assert_eq!(BUILT.with(std::cell::Cell::get), last + 1, "built again");
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
        let round = |round: usize| {
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
        };
        let start = BUILT.with(std::cell::Cell::get);
        let (first, last) = undisturbed(&root, || {
            round(0);
            let first = BUILT.with(std::cell::Cell::get);
            round(1);
            round(2);
            (first, BUILT.with(std::cell::Cell::get))
        });
        assert!(first >= start + 2, "each plan built once at least");
        assert_eq!(last, first, "the two plans alternating built nothing more");
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
