//! Redirections, devices and write targets: which devices a command may read or write without
//! effects, what an output redirection writes (including a descriptor reopened through
//! `/dev/fd/N`), and where a file a command writes lies (working directory, scratch, protected
//! tree, outside). Every family that writes files checks its targets here.

use super::{Outcome, ReadOnly, basename, is_code_runner};
use crate::Class;
use crate::ids::RuleId;
use crate::paths::{self, Place};
use crate::walk::{Cmd, Walker};
use crate::word::Word;

/// Devices that are safe to redirect to.
#[rustfmt::skip]
const HARMLESS_DEVICES: &[&str] = &[
    "/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/full",
];

pub(crate) fn is_network_device(path: &str) -> bool {
    path.starts_with("/dev/tcp/") || path.starts_with("/dev/udp/")
}

fn is_harmless_device(path: &str) -> bool {
    HARMLESS_DEVICES.contains(&path) || fd_number(path).is_some()
}

/// `N` for `/dev/fd/N` (exactly: `/dev/fd/../../etc/x` is not a descriptor).
fn fd_number(path: &str) -> Option<&str> {
    path.strip_prefix("/dev/fd/")
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// The descriptor a device path reopens: `/dev/stdin` is 0, `/dev/fd/3` is 3.
fn reopened_fd(path: &str) -> Option<&str> {
    match path {
        "/dev/stdin" => Some("0"),
        "/dev/stdout" => Some("1"),
        "/dev/stderr" => Some("2"),
        _ => fd_number(path),
    }
}

/// Devices a read-only program may read without effects. Opening others can do things
/// (`/dev/watchdog` arms the hardware watchdog, which reboots the machine when it is not fed)
/// or reads what should not be read (disks, memory, input devices, terminals: `/dev/pts/0` is
/// another terminal's keystrokes, `/dev/tty` the person's when there is a controlling one).
#[rustfmt::skip]
const READABLE_DEVICES: &[&str] = &[
    "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/stdin",
    "/dev/stdout", "/dev/stderr",
];

/// A device named as an argument or input of a command: reading it is not read-only unless it
/// is one of [`READABLE_DEVICES`]; the watchdog is dangerous. A path is taken where the kernel
/// takes it: relative to the directory the script `cd`'d to (`cd /dev/pts && cat 0`), through
/// `/proc/self/root` and `/proc/self/cwd`. After a `cd` to a directory that is not known, a
/// relative path may be anything: not read-only.
pub(super) fn check_device_reads(w: &mut Walker, cmd: &Cmd, outcome: &mut Outcome) {
    // Programs that only look at names and metadata do not open what they are given.
    #[rustfmt::skip]
    const METADATA_ONLY: &[&str] = &[
        "ls", "stat", "df", "du", "readlink", "realpath", "dirname", "basename", "test", "[",
        "lsblk", "findmnt", "getfacl", "which", "type", "echo", "printf", "cd", "pushd",
    ];
    let by_name = cmd
        .argv
        .first()
        .is_some_and(|p| !p.dynamic && METADATA_ONLY.contains(&basename(&p.text)));
    let args = if by_name {
        &[][..]
    } else {
        cmd.argv.get(1..).unwrap_or_default()
    };
    let inputs = cmd
        .redirects
        .iter()
        .filter(|r| r.op.starts_with('<') && r.op != "<<<")
        .filter_map(|r| r.target.as_ref());
    // The caller's directory is always known; only the script's own `cd` loses it.
    let lost_cwd = w.ctx.cwd.is_absolute() && w.cwds.is_unknown();
    // Only a path whose text or working directory mentions `dev` or `proc` can reach `/dev`
    // (lexically): the rest skip the resolution.
    let cwd_near_devices =
        w.cwds.mention(crate::paths::Mention::Dev) || w.cwds.mention(crate::paths::Mention::Proc);
    let mut findings: Vec<(Word, String)> = Vec::new();
    for word in args.iter().chain(inputs) {
        let text = if word.dynamic {
            &word.prefix
        } else {
            &word.text
        };
        let relative = !text.starts_with(['/', '~']);
        if relative && lost_cwd && !text.is_empty() && !word.is_option() {
            if outcome.read_only == ReadOnly::Yes {
                outcome.read_only = ReadOnly::No {
                    rule: RuleId::ReadonlyDevice,
                    message: format!(
                        "the script changed to a directory that is not known, so {} may name a \
                         device, a credential or another process's files",
                        word.text
                    ),
                };
            }
            continue;
        }
        let near = text.contains("dev") || text.contains("proc") || relative && cwd_near_devices;
        if !near || (is_network_device(text) || (!word.dynamic && fd_number(text).is_some())) {
            continue;
        }
        let resolved = super::secrets::absolutes_for_match(w, text);
        for path in resolved {
            let path = path.to_string_lossy();
            let Some(rest) = path.strip_prefix("/dev/") else {
                // `/dev/$X`: the fixed part is the directory itself.
                if word.dynamic && path == "/dev" {
                    findings.push((word.clone(), path.to_string()));
                }
                continue;
            };
            // Shared memory and message queues are ordinary files.
            if rest.starts_with("shm/") || rest.starts_with("mqueue/") {
                continue;
            }
            if is_network_device(&path) || fd_number(&path).is_some() && !word.dynamic {
                continue;
            }
            if !word.dynamic && READABLE_DEVICES.contains(&path.as_ref()) {
                continue;
            }
            findings.push((word.clone(), path.to_string()));
        }
    }
    for (word, path) in findings {
        if path.starts_with("/dev/watchdog") {
            let msg = format!(
                "opening {} arms the hardware watchdog, which reboots the machine",
                word.text
            );
            w.reason(Class::Dangerous, RuleId::SystemShutdown, msg, word.span);
        }
        if outcome.read_only == ReadOnly::Yes {
            let shown = if path == word.text {
                path.clone()
            } else {
                format!("{} ({path})", word.text)
            };
            outcome.read_only = ReadOnly::No {
                rule: RuleId::ReadonlyDevice,
                message: format!("opening the device {shown} can have effects or expose data"),
            };
        }
    }
}

/// Output redirections: only `/dev/null`-like devices and fd duplication stay read-only.
pub(crate) fn check_redirects(w: &mut Walker, cmd: &Cmd) {
    let shell = cmd
        .argv
        .first()
        .is_some_and(|a| is_code_runner(a) || a.text == "exec");
    if cmd.argv.len() == 1 && cmd.argv[0].text == "exec" {
        for r in cmd.redirects.iter().filter(|r| r.op == "<" || r.op == "<>") {
            if let Some(target) = &r.target {
                let fd = if r.fd.is_empty() { "0" } else { r.fd.as_str() };
                w.fd_inputs.push((fd.to_string(), target.clone()));
            }
        }
        w.fd_inputs.truncate(16);
    }
    for (index, r) in cmd.redirects.iter().enumerate() {
        let Some(target) = &r.target else { continue };
        if is_network_device(&target.text) || is_network_device(&target.prefix) {
            let (rule, what) = if shell {
                (
                    RuleId::NetworkReverseShell,
                    "connects a shell to the network through",
                )
            } else {
                (RuleId::NetworkDevTcp, "opens a network connection through")
            };
            w.reason(
                Class::Dangerous,
                rule,
                format!("redirection {what} {}", target.text),
                r.span,
            );
            continue;
        }
        let reading = r.op.starts_with('<') && r.op != "<>";
        let dup = r.op.ends_with('&')
            && !target.dynamic
            && (target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit()));
        if reading || dup {
            continue;
        }
        // `>/dev/stdin` after `0<FILE` (or `exec 3<FILE` … `>/dev/fd/3`) opens FILE again, for
        // writing.
        if !target.dynamic
            && let Some(fd) = reopened_fd(&target.text)
        {
            let earlier = cmd.redirects[..index]
                .iter()
                .rev()
                .find(|e| {
                    let efd = if e.fd.is_empty() {
                        if e.op.starts_with('<') { "0" } else { "1" }
                    } else {
                        e.fd.as_str()
                    };
                    efd == fd && !e.op.starts_with("<<")
                })
                .and_then(|e| e.target.clone().filter(|_| e.op.starts_with('<')));
            let opened = earlier.or_else(|| {
                w.fd_inputs
                    .iter()
                    .rev()
                    .find(|(n, _)| n == fd)
                    .map(|(_, t)| t.clone())
            });
            if let Some(file) = opened.filter(|f| f.dynamic || !is_harmless_device(&f.text)) {
                let what = format!(
                    "output redirection to {} (reopening {})",
                    target.text, file.text
                );
                check_write_target(w, &file, &what, r.span);
                let msg = format!("output to {} writes {}", target.text, file.text);
                w.reason(Class::Normal, RuleId::ReadonlyRedirectWrite, msg, r.span);
                continue;
            }
        }
        if !target.dynamic && is_harmless_device(&target.text) {
            continue;
        }
        check_write_target(w, target, "output redirection", r.span);
        if !target.dynamic && target.text.starts_with("/dev/") {
            continue;
        }
        let msg = format!("output is redirected to {}", target.text);
        w.reason(Class::Normal, RuleId::ReadonlyRedirectWrite, msg, r.span);
    }
}

/// The values a computed word may take when it is just a variable assigned in branches, a
/// loop variable, an array or a variable `read` from known input (`"$D"`, `${D}/x`,
/// `"${x[@]}"`): each possibility as a literal word.
pub(crate) fn alternatives(w: &Walker, word: &Word) -> Vec<Word> {
    if !word.dynamic || !word.prefix.is_empty() {
        return Vec::new();
    }
    let text = word.text.trim_start_matches('"');
    let Some(rest) = text.strip_prefix('$') else {
        return Vec::new();
    };
    let (name, suffix) = match rest.strip_prefix('{') {
        Some(braced) => match braced.split_once('}') {
            Some((n, s)) => (n, s),
            None => return Vec::new(),
        },
        None => {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        }
    };
    let suffix = suffix.trim_end_matches('"');
    if suffix.contains(['$', '`', '"', '\'']) {
        return Vec::new();
    }
    // `${x[@]}`, `${x[0]}`: any element of an array the script listed.
    let values = w.maybe_vars.get(name).or_else(|| {
        name.split_once('[')
            .and_then(|(base, _)| w.maybe_vars.get(base))
    });
    let Some(values) = values else {
        return Vec::new();
    };
    values
        .iter()
        .map(|v| Word::literal(&format!("{v}{suffix}"), word.span))
        .collect()
}

/// A file the command writes, deletes, moves, links or changes. Outside the working and
/// scratch directories it is dangerous; where it is cannot be known, normal.
pub(crate) fn check_write_target(w: &mut Walker, target: &Word, what: &str, span: crate::Span) {
    for alt in alternatives(w, target) {
        check_write_target(w, &alt, what, span);
    }
    if !target.dynamic && target.text.starts_with("/dev/") {
        if !is_harmless_device(&target.text) {
            let msg = format!("{what} writes to the device {}", target.text);
            w.reason(Class::Dangerous, RuleId::DiskWriteDevice, msg, span);
        }
        return;
    }
    match paths::place_of(target, &w.cwds, w.ctx) {
        Place::Inside | Place::Project(_) => {}
        Place::Protected(index) => protected_write(w, index, target, what, span),
        Place::Unknown => {
            let msg = format!(
                "{what} target {} cannot be resolved statically",
                target.text
            );
            w.reason(Class::Normal, RuleId::WriteUnknownTarget, msg, span);
        }
        Place::Root | Place::HomeOrAbove(_) | Place::Outside(_) => {
            let msg = format!(
                "{what} writes {} outside the working directory",
                target.text
            );
            w.reason(Class::Dangerous, RuleId::WriteOutsideCwd, msg, span);
        }
    }
}

/// Why `word` names a place whose content runs or is secret later: the home's configuration
/// ([`paths::home_config`]: `~/.bashrc`, `~/.config/systemd/user`, `~/bin` …) or a credential
/// store. `None` for anything else, and for computed words (the caller's other checks see
/// those). Used where a program may write a path the classifier has no table for.
pub(crate) fn persistence_named(w: &Walker, word: &Word) -> Option<String> {
    if word.dynamic {
        return None;
    }
    let found = paths::resolve_all(word, &w.cwds, w.ctx)
        .iter()
        .find_map(|p| paths::home_config(p, w.ctx));
    if let Some(config) = found {
        return Some(format!(
            "the home's configuration ({config}), which programs read at login or start and \
             many run"
        ));
    }
    super::names_credentials(w, word).then(|| "a credential store".to_string())
}

/// A write into a protected tree (`.git/`, `.gg/`): git hooks and config run programs on the
/// host, gg's settings decide what runs unasked.
pub(crate) fn protected_write(
    w: &mut Walker,
    index: usize,
    target: &Word,
    what: &str,
    span: crate::Span,
) {
    let why = w
        .ctx
        .protected
        .get(index)
        .map(|p| format!("{} ({})", p.path.display(), p.why))
        .unwrap_or_default();
    let msg = format!("{what} writes {} inside the protected {why}", target.text);
    w.reason(Class::Dangerous, RuleId::WriteProtected, msg, span);
}
