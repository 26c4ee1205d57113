//! `process_list` and `process_kill`: the machine's processes, and which of them are the
//! session's own.
//!
//! Ownership is proven by a tag, not by ancestry: every command the session's tools start carries
//! `GG_SESSION_TAG=<random>` in its environment, which its descendants inherit whatever happens
//! to their parents (a daemonised `server &` is reparented, but keeps its environment). Such a
//! process outlives its command only where nothing confines commands (no Landlock here, or a
//! dangerous command a person confirmed): the guard's reaper and the sandbox kill what a command
//! leaves running when it ends.
//! A process that removed the tag is simply not recognised, which errs on the side of asking.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use classifier::Class;

use super::ComputerError;
use super::redact;
use crate::proc_stat::ProcStat;

/// The environment variable that marks a process as started by this session's tools.
pub const SESSION_TAG_ENV: &str = "GG_SESSION_TAG";

/// The most processes `process_list` returns, and its default.
pub const MAX_LIST: usize = 200;
pub const DEFAULT_LIST: usize = 50;
/// A command line is cut to this many characters, so one compiler invocation cannot push the
/// rest of the table out of the output limit.
pub const MAX_COMMAND_CHARS: usize = 200;

/// A session's tag: random, unguessable by a process that was not given it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionTag(String);

impl SessionTag {
    pub fn new() -> SessionTag {
        let mut bytes = [0u8; 16];
        // A failed random source leaves a fixed tag, which would make unrelated processes of
        // other failed sessions look owned; fall back to time and pid mixed in instead.
        if getrandom::fill(&mut bytes).is_err() {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default();
            let mixed = nanos ^ (u128::from(std::process::id()) << 64);
            bytes = mixed.to_le_bytes();
        }
        SessionTag(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The `NAME`, `value` pair to put into a child's environment.
    pub fn env(&self) -> (&'static str, &str) {
        (SESSION_TAG_ENV, &self.0)
    }

    /// Whether `pid`'s environment carries this tag (readable for our own user's processes).
    pub fn owns(&self, pid: u32) -> bool {
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            return false;
        };
        let wanted = format!("{SESSION_TAG_ENV}={}", self.0);
        environ
            .split(|b| *b == 0)
            .any(|entry| entry == wanted.as_bytes())
    }
}

impl Default for SessionTag {
    fn default() -> Self {
        SessionTag::new()
    }
}

/// Which signal `process_kill` sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillSignal {
    Term,
    Kill,
}

impl KillSignal {
    pub fn parse(text: Option<&str>) -> Result<KillSignal, ComputerError> {
        match text.unwrap_or("term") {
            "term" | "TERM" | "SIGTERM" => Ok(KillSignal::Term),
            "kill" | "KILL" | "SIGKILL" => Ok(KillSignal::Kill),
            other => Err(ComputerError::BadValue(format!(
                "signal must be \"term\" or \"kill\", not {other:?}"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            KillSignal::Term => "term",
            KillSignal::Kill => "kill",
        }
    }
}

/// A kill request, classified and pinned to one process incarnation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KillPlan {
    pub pid: u32,
    pub signal: KillSignal,
    pub class: Class,
    pub reason: String,
    /// The process as shown for approval (name and redacted command line).
    pub shown: String,
    /// `/proc/<pid>/stat` start time: a pid reused after approval is a different process.
    start_ticks: u64,
}

/// Classifies a kill: refused outright for pid ≤ 1, gg itself, its ancestors and ggd; normal for
/// the session's own processes; dangerous for any other.
pub fn plan_kill(
    pid: i64,
    signal: KillSignal,
    tag: &SessionTag,
) -> Result<KillPlan, ComputerError> {
    let pid = u32::try_from(pid).ok().filter(|p| *p > 1).ok_or_else(|| {
        ComputerError::Refused(format!(
            "refused: pid {pid} is init, the kernel or not a process id"
        ))
    })?;
    refuse_protected(pid).map_err(ComputerError::Refused)?;
    let stat = ProcStat::read(pid)
        .ok_or_else(|| ComputerError::BadValue(format!("no process with pid {pid}")))?;
    let shown = describe(pid, &stat);
    let (class, reason) = if tag.owns(pid) {
        (
            Class::Normal,
            format!("pid {pid} was started by this session's tools"),
        )
    } else {
        (
            Class::Dangerous,
            format!("pid {pid} was not started by this session: it belongs to something else"),
        )
    };
    Ok(KillPlan {
        pid,
        signal,
        class,
        reason,
        shown,
        start_ticks: stat.start_ticks,
    })
}

/// Sends the signal, after checking again that the pid is the same process and still allowed.
pub fn kill(plan: &KillPlan, tag: &SessionTag) -> Result<String, ComputerError> {
    refuse_protected(plan.pid).map_err(ComputerError::Refused)?;
    let stat = ProcStat::read(plan.pid)
        .ok_or_else(|| ComputerError::Kill(format!("pid {} has exited", plan.pid)))?;
    if stat.start_ticks != plan.start_ticks {
        return Err(ComputerError::Refused(format!(
            "refused: pid {} now belongs to a different process than the one approved",
            plan.pid
        )));
    }
    if plan.class == Class::Normal && !tag.owns(plan.pid) {
        return Err(ComputerError::Refused(format!(
            "refused: pid {} no longer carries this session's tag",
            plan.pid
        )));
    }
    let pid = rustix::process::Pid::from_raw(plan.pid as i32)
        .ok_or_else(|| ComputerError::Kill(format!("invalid pid {}", plan.pid)))?;
    let signal = match plan.signal {
        KillSignal::Term => rustix::process::Signal::TERM,
        KillSignal::Kill => rustix::process::Signal::KILL,
    };
    rustix::process::kill_process(pid, signal)
        .map_err(|e| ComputerError::Kill(format!("kill {} failed: {e}", plan.pid)))?;
    Ok(format!(
        "sent SIG{} to pid {} ({})",
        plan.signal.as_str().to_ascii_uppercase(),
        plan.pid,
        plan.shown
    ))
}

/// gg itself, its ancestors (the shell, the terminal, the user's session) and ggd.
fn refuse_protected(pid: u32) -> Result<(), String> {
    let own = std::process::id();
    if pid == own {
        return Err("refused: that is gg itself".to_string());
    }
    let mut current = ProcStat::read(own).map(|s| s.ppid);
    let mut hops = 0;
    while let Some(ancestor) = current.filter(|p| *p > 0) {
        if ancestor == pid {
            return Err(format!("refused: pid {pid} is an ancestor of gg"));
        }
        hops += 1;
        if hops > 4096 {
            break;
        }
        current = ProcStat::read(ancestor).map(|s| s.ppid);
    }
    // ggd is the gg executable run under the name `ggd`, so its name is the one it was started
    // by (`argv[0]`); an older install has a `ggd` executable of its own. A process that merely
    // calls itself ggd is refused too: refusing to signal is the safe direction.
    //
    // A process in the middle of `execve` already shows its new executable but, for a moment,
    // an empty command line (the kernel fills the arguments in after it lets the parent go), and
    // a ggd being started looks exactly like that. A name that cannot be read is therefore a
    // refusal, not a pass: the caller may try again a moment later.
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
    let Some(argv0) = std::fs::read(format!("/proc/{pid}/cmdline"))
        .ok()
        .and_then(|line| line.split(|b| *b == 0).next().map(<[u8]>::to_vec))
        .filter(|argv0| !argv0.is_empty())
    else {
        return Err(format!(
            "refused: pid {pid} has no command line to check (it is starting, exiting or a \
             kernel thread); try again"
        ));
    };
    let named_ggd = |name: &OsStr| name == "ggd";
    if exe
        .as_deref()
        .and_then(Path::file_name)
        .is_some_and(named_ggd)
        || Path::new(OsStr::from_bytes(&argv0))
            .file_name()
            .is_some_and(named_ggd)
    {
        return Err(format!("refused: pid {pid} is ggd"));
    }
    Ok(())
}

fn describe(pid: u32, stat: &ProcStat) -> String {
    let argv = cmdline(pid);
    if argv.is_empty() {
        format!("[{}]", one_line(&stat.name))
    } else {
        cut(one_line(&redact::command_line(&argv)), MAX_COMMAND_CHARS)
    }
}

fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| {
            bytes
                .split(|b| *b == 0)
                .filter(|w| !w.is_empty())
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// How `process_list` orders its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    Cpu,
    Mem,
}

impl SortBy {
    pub fn parse(text: Option<&str>) -> Result<SortBy, ComputerError> {
        match text.unwrap_or("cpu") {
            "cpu" => Ok(SortBy::Cpu),
            "mem" | "memory" => Ok(SortBy::Mem),
            other => Err(ComputerError::BadValue(format!(
                "sort_by must be \"cpu\" or \"mem\", not {other:?}"
            ))),
        }
    }
}

/// The process table: pid, parent, user, CPU %, memory, start time and the program's name (with
/// `commands`, the command line with secrets redacted instead), one process a line. Blocking
/// (CPU usage needs two samples).
pub fn list(limit: usize, sort_by: SortBy, commands: bool, tag: &SessionTag) -> String {
    use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, System, UpdateKind, Users};
    let refresh = ProcessRefreshKind::nothing()
        .with_cpu()
        .with_memory()
        .with_user(UpdateKind::OnlyIfNotSet)
        .with_cmd(if commands {
            UpdateKind::OnlyIfNotSet
        } else {
            UpdateKind::Never
        });
    let mut system = System::new();
    system.refresh_processes_specifics(ProcessesToUpdate::All, true, refresh);
    if sort_by == SortBy::Cpu {
        std::thread::sleep(sysinfo::MINIMUM_CPU_UPDATE_INTERVAL);
        system.refresh_processes_specifics(ProcessesToUpdate::All, true, refresh);
    }
    let users = Users::new_with_refreshed_list();
    let mut rows: Vec<&sysinfo::Process> = system
        .processes()
        .values()
        .filter(|p| p.thread_kind().is_none())
        .collect();
    match sort_by {
        SortBy::Cpu => rows.sort_by(|a, b| {
            b.cpu_usage()
                .total_cmp(&a.cpu_usage())
                .then(a.pid().cmp(&b.pid()))
        }),
        SortBy::Mem => rows.sort_by(|a, b| b.memory().cmp(&a.memory()).then(a.pid().cmp(&b.pid()))),
    }
    let total = rows.len();
    let mut out = format!(
        "{total} processes; the {} highest by {}. `*` marks this session's own processes.\n\
         PID\tPPID\tUSER\tCPU%\tMEM\tSTARTED\tCOMMAND\n",
        limit.min(total),
        if sort_by == SortBy::Cpu {
            "CPU"
        } else {
            "memory"
        }
    );
    for process in rows.into_iter().take(limit) {
        let pid = process.pid().as_u32();
        let user = process
            .user_id()
            .and_then(|uid| users.get_user_by_id(uid))
            .map(|u| u.name().to_string())
            .unwrap_or_else(|| "?".to_string());
        let argv: Vec<String> = process
            .cmd()
            .iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect();
        let command = if !commands || argv.is_empty() {
            one_line(&process.name().to_string_lossy())
        } else {
            cut(one_line(&redact::command_line(&argv)), MAX_COMMAND_CHARS)
        };
        let started = jiff::Timestamp::from_second(process.start_time() as i64)
            .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{pid}{}\t{}\t{user}\t{:.1}\t{}\t{started}\t{command}",
            if tag.owns(pid) { "*" } else { "" },
            process.parent().map(|p| p.as_u32()).unwrap_or(0),
            process.cpu_usage(),
            human_bytes(process.memory()),
        );
    }
    out
}

/// Control characters (a newline inside a `-c` script, an escape sequence) written as escapes,
/// so each process stays one row of the table.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// At most `max` characters, with `…` when cut.
fn cut(text: String, max: usize) -> String {
    crate::registry::clip_chars_marked(text, max, "…")
}

pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn stat_parses_names_with_spaces_and_parentheses() {
        let own = ProcStat::read(std::process::id()).unwrap();
        assert!(own.ppid > 0);
        assert!(own.start_ticks > 0);
    }

    /// Waits until the kernel has filled in `pid`'s command line: `spawn` returns once `execve`
    /// has replaced the program, a moment before the new arguments are readable. Waits on that
    /// event, not on a clock.
    fn wait_for_command_line(pid: u32) {
        while cmdline(pid).is_empty() {
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_process_started_under_the_name_ggd_is_refused() {
        use std::os::unix::process::CommandExt;
        // The daemon is gg run under the name ggd: its executable is not called ggd.
        let mut child = std::process::Command::new("sleep")
            .arg0("/usr/local/bin/ggd")
            .arg("30")
            .spawn()
            .unwrap();
        wait_for_command_line(child.id());
        let refused = refuse_protected(child.id());
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(refused, Err(format!("refused: pid {} is ggd", child.id())));
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        wait_for_command_line(other.id());
        let allowed = refuse_protected(other.id());
        let _ = other.kill();
        let _ = other.wait();
        assert_eq!(allowed, Ok(()));
    }

    #[test]
    fn protected_processes_are_refused() {
        let tag = SessionTag::new();
        assert!(plan_kill(1, KillSignal::Term, &tag).is_err());
        assert!(plan_kill(0, KillSignal::Term, &tag).is_err());
        assert!(plan_kill(-5, KillSignal::Term, &tag).is_err());
        assert!(plan_kill(i64::from(std::process::id()), KillSignal::Term, &tag).is_err());
        let parent = ProcStat::read(std::process::id()).unwrap().ppid;
        assert!(plan_kill(i64::from(parent), KillSignal::Kill, &tag).is_err());
    }

    #[test]
    fn ownership_follows_the_tag_and_kill_rechecks_identity() {
        let tag = SessionTag::new();
        let (name, value) = tag.env();
        let mut own = std::process::Command::new("sleep")
            .arg("30")
            .env(name, value)
            .spawn()
            .unwrap();
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        wait_for_command_line(own.id());
        wait_for_command_line(other.id());
        let own_plan = plan_kill(i64::from(own.id()), KillSignal::Term, &tag).unwrap();
        let other_plan = plan_kill(i64::from(other.id()), KillSignal::Term, &tag).unwrap();
        assert_eq!(own_plan.class, Class::Normal);
        assert_eq!(other_plan.class, Class::Dangerous);
        // Another session's tag does not own this session's process.
        assert_eq!(
            plan_kill(i64::from(own.id()), KillSignal::Term, &SessionTag::new())
                .unwrap()
                .class,
            Class::Dangerous
        );
        // A plan pinned to an older incarnation of the pid is refused.
        let mut stale = own_plan.clone();
        stale.start_ticks += 1;
        assert!(
            kill(&stale, &tag)
                .unwrap_err()
                .to_string()
                .contains("different process")
        );
        assert!(kill(&own_plan, &tag).is_ok());
        assert!(own.wait().unwrap().code().is_none());
        let _ = other.kill();
        let _ = other.wait();
    }

    #[test]
    fn list_shows_redacted_command_lines() {
        let tag = SessionTag::new();
        let (name, value) = tag.env();
        // In a group of its own, ended whole: the shell forks its `sleep`, which would outlive a
        // kill of the shell alone.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30", "sh", "--token", "visible-only-to-gg-7c1f"])
            .env(name, value)
            .process_group(0)
            .spawn()
            .unwrap();
        let text = list(MAX_LIST * 50, SortBy::Mem, true, &tag);
        let names = list(MAX_LIST * 50, SortBy::Mem, false, &tag);
        let _ = rustix::process::kill_process_group(
            rustix::process::Pid::from_child(&child),
            rustix::process::Signal::KILL,
        );
        let _ = child.wait();
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{}*\t", child.id())))
            .unwrap_or_else(|| panic!("child {} not listed:\n{text}", child.id()));
        assert!(line.contains("--token [redacted]"), "{line}");
        assert!(!text.contains("visible-only-to-gg-7c1f"));
        // By default only the program's name: no argument at all.
        let line = names
            .lines()
            .find(|l| l.starts_with(&format!("{}*\t", child.id())))
            .unwrap_or_else(|| panic!("child {} not listed:\n{names}", child.id()));
        assert!(line.ends_with("\tsh"), "{line}");
        assert!(!names.contains("--token"), "{names}");
    }
}
