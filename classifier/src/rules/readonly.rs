//! The read-only allow-list: programs that only read and print, and the few flags of theirs
//! that would write files or run programs.

use super::{Outcome, long_is, operands, short_has};
use crate::ids::RuleId;
use crate::walk::{Cmd, Walker};
use crate::word::Word;

/// Programs that are read-only with any arguments, except for the flags in [`DENIED_FLAGS`].
/// `find`, `git`, `sed`, `awk`, `rg`, `date`, `uniq`, `env` and the decoders are judged by their
/// own modules; [`is_read_only_program`] lists the union.
#[rustfmt::skip]
const READ_ONLY_PROGRAMS: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "pwd", "echo", "printf", "which",
    "file", "stat", "du", "df", "tree", "sort", "cut", "tr", "basename", "dirname", "realpath",
    "readlink", "id", "whoami", "uname", "printenv", "true", "false", "seq", "diff", "cmp", ":",
    "test", "[", "nl", "tac", "comm", "join", "paste", "fold", "column", "od", "hexdump", "strings",
    "md5sum", "sha1sum", "sha256sum", "sha512sum", "b2sum", "cksum", "type", "jq", "nproc", "arch",
    "groups", "tty", "locale", "sleep", "exit", "return", "shift", "wait", "read", "cd", "pushd",
    "popd", "dirs", "set", "alias", "export", "local", "declare", "readonly", "typeset", "unset",
    "ps", "uptime", "free", "mapfile", "readarray",
];

/// Programs judged by other modules that can be read-only with the right arguments.
#[rustfmt::skip]
const CONDITIONALLY_READ_ONLY: &[&str] = &[
    "find", "git", "sed", "awk", "gawk", "mawk", "nawk", "rg", "date", "uniq", "hostname", "eval",
    "trap",
    // Decoders: read-only themselves; their output must not reach a shell.
    "base64", "base32", "basenc", "rev", "zcat", "bzcat", "xzcat", "zstdcat", "lz4cat", "xxd",
    // Transparent wrappers: read-only when their payload is.
    "env", "command", "builtin", "exec", "nice", "ionice", "time", "timeout", "stdbuf", "setsid",
    "chrt", "taskset", "busybox", "unbuffer", "caffeinate",
    // Inspection commands with read-only forms (see `inspect`), archives that can only list.
    "lsblk", "lsof", "numfmt", "expr", "lscpu", "lsusb", "lspci", "findmnt", "zipinfo", "lsattr",
    "getfacl", "ip", "ss", "journalctl", "systemctl", "crontab", "kill", "mount", "timedatectl",
    "npm", "pnpm", "unzip", "fd", "fdfind", "tar", "bsdtar", "7z", "gzip", "gunzip", "xz", "bzip2",
    "zstd",
    // gg's own inspection commands (`gg classify`, `gg --version`, `ggd status`).
    "gg", "ggd",
    // Inspectors with read-only forms (see `inspect`).
    "yq", "dmesg", "sysctl", "ulimit", "umask", "lsmod", "readelf", "objdump", "nm", "iconv",
    "shasum", "bc", "getent", "shopt", "tee", "sqlite3",
];

/// Flags that write files or run programs, per allow-listed program: (short flags, long flags).
const DENIED_FLAGS: &[(&str, &[char], &[&str])] = &[
    ("sort", &['o'], &["--output", "--compress-program"]),
    ("tree", &['o', 'R'], &["--output"]),
    ("file", &['C'], &["--compile"]),
    ("diff", &['l'], &["--paginate"]),
];

/// Whether `name` (a program base name) can be read-only at all. Used by the invariant that a
/// read-only verdict only contains allow-listed commands.
pub(crate) fn is_read_only_program(name: &str) -> bool {
    READ_ONLY_PROGRAMS.contains(&name)
        || CONDITIONALLY_READ_ONLY.contains(&name)
        // `bash -c 'ls'` is as read-only as `ls`.
        || super::exec::SHELLS.contains(name)
        // `python3 -V`, `cargo --version`.
        || super::inspect::VERSIONED.contains(&name)
        || super::exec::is_interpreter(name)
}

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    if !READ_ONLY_PROGRAMS.contains(&prog) {
        return None;
    }
    let args = &cmd.argv[1..];
    let old_pwd = w.vars.get("PWD").cloned();
    match prog {
        "cd" | "pushd" => {
            let target = operands(args).into_iter().next();
            // `cd -` goes back to `$OLDPWD`.
            let previous = target.filter(|t| !t.dynamic && t.text == "-").map(|t| {
                match w.vars.get("OLDPWD") {
                    Some(dir) => Word::literal(dir, t.span),
                    None => Word::computed("$OLDPWD", "", t.span),
                }
            });
            w.cwds = w.cwds.after_cd(previous.as_ref().or(target), w.ctx);
            if previous.is_some() {
                w.cwds.mark_indirect();
            }
        }
        "popd" => w.cwds = crate::paths::Cwds::unknown(),
        _ => {}
    }
    if matches!(prog, "cd" | "pushd" | "popd") {
        match w.cwds.single().map(|d| d.to_string_lossy().into_owned()) {
            Some(dir) => w.vars.insert("PWD".to_string(), dir),
            None => w.vars.remove("PWD"),
        };
        match old_pwd {
            Some(dir) if w.vars.get("PWD") != Some(&dir) => w.vars.insert("OLDPWD".into(), dir),
            Some(_) => None,
            None => w.vars.remove("OLDPWD"),
        };
    }
    // `read NAME` and `printf -v NAME` assign variables too (`read PATH <<< /tmp/x`).
    let attached;
    let mut callback: Option<Word> = None;
    let assigned: Vec<&Word> = match prog {
        "read" => super::operands(args)
            .into_iter()
            .filter(|a| !a.dynamic)
            .collect(),
        // `mapfile [-t] [-d D] [-n N] [-O N] [-s N] [-u FD] [-C CODE -c N] [ARRAY]`.
        "mapfile" | "readarray" => {
            let mut i = 0;
            let mut names = Vec::new();
            while i < args.len() {
                let t = args[i].text.as_str();
                if args[i].is_option() && t.len() == 2 && "dnOsuCc".contains(&t[1..]) {
                    if t == "-C" {
                        callback = args.get(i + 1).cloned();
                    }
                    i += 2;
                    continue;
                }
                if !args[i].is_option() {
                    names.push(&args[i]);
                }
                i += 1;
            }
            names.truncate(1);
            names
        }
        "printf" => match args.first() {
            Some(a) if a.text == "-v" => args.get(1).into_iter().collect(),
            // `printf -vNAME …`
            Some(a) if a.text.starts_with("-v") && !a.dynamic => {
                attached = Word::literal(&a.text[2..], a.span);
                vec![&attached]
            }
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    for name in assigned {
        if name.dynamic {
            let msg = format!(
                "\"{prog}\" assigns the computed variable name {}",
                name.text
            );
            return Some(Outcome::not(RuleId::EvalComputedVariableName, msg));
        }
        let value = Word::computed("<input>", "", name.span);
        super::check_assignment(w, &name.text, &value);
        let old = w.vars.remove(&name.text);
        if prog != "printf"
            && let Some(text) = &cmd.input.text
        {
            // The input is known (`<<< ~/.aws/credentials`, a heredoc, `echo … |`): the
            // variable (or array) is computed for the rules, but each line and each field of
            // it is still tried, so `read -r f <<< ~/.ssh/id_rsa; cat "$f"` is judged as `cat
            // ~/.ssh/id_rsa` is.
            // Fields split at blanks and at the characters of an `IFS` set for this command or
            // earlier (`IFS=: read -r a b <<< "x:$HOME/.aws/credentials"`).
            let ifs: String = cmd
                .assigns
                .iter()
                .filter(|(n, _)| n == "IFS")
                .filter_map(|(_, v)| v.known().map(str::to_string))
                .chain(w.vars.get("IFS").cloned())
                .collect();
            let maybe = w.maybe_vars.entry(name.text.clone()).or_default();
            maybe.extend(old);
            for line in text.lines() {
                let line = line.trim();
                maybe.push(line.to_string());
                maybe.extend(
                    line.split(|c: char| c.is_whitespace() || ifs.contains(c))
                        .filter(|f| !f.is_empty())
                        .map(str::to_string),
                );
            }
            maybe.dedup();
            maybe.truncate(crate::walk::MAX_MAYBE_VALUES);
        }
    }
    if let Some(code) = callback {
        // `mapfile -C CODE` evaluates CODE every few lines.
        if !code.dynamic {
            super::run_code(w, &code.text, code.span, &crate::walk::Flow::default());
        }
        let msg = format!("\"{prog} -C\" runs {} as code", code.text);
        return Some(Outcome::not(RuleId::DynamicShellCode, msg));
    }
    if matches!(
        prog,
        "export" | "local" | "declare" | "readonly" | "typeset"
    ) {
        for arg in args {
            if let Some((name, value)) = arg.text.split_once('=') {
                let value = Word {
                    text: value.to_string(),
                    prefix: value.to_string(),
                    ..arg.clone()
                };
                super::check_assignment(w, name, &value);
            }
        }
    }
    if prog == "ps"
        && let Some(why) = ps_may_show_command_lines(args)
    {
        let msg = format!(
            "\"ps\" with {why} may show other processes' command lines or environments, which \
             hold secrets (--password=…)"
        );
        return Some(Outcome::not(RuleId::SecretsProcess, msg));
    }
    let denied = DENIED_FLAGS.iter().find(|(p, _, _)| *p == prog);
    if let Some((_, shorts, longs)) = denied {
        for arg in super::options(args) {
            let hit = shorts.iter().any(|c| short_has(&arg.text, *c))
                || longs.iter().any(|l| long_is(&arg.text, l));
            if hit {
                let msg = format!("\"{prog} {}\" writes files or runs programs", arg.text);
                return Some(Outcome::not(RuleId::ReadonlyFlagWrites, msg));
            }
        }
    }
    Some(Outcome::read_only())
}

/// `ps` options (procps) that select processes or change the layout without ever showing a
/// command line or an environment: the default, `-l` and `-j` formats print only the program
/// name. A positive model: without a PID namespace (the Landlock level) `ps` sees every
/// process of the user, and `-f`, `-F`, BSD option words (`aux`, `ax`, `e`), or a format with
/// `args` print their full command lines. Letters that take a value are in
/// [`PS_SHORT_WITH_VALUE`].
const PS_SHORT: &str = "AaNdeTHLlMjcmyZwVqpuUgGtsCoO";
/// The short options of [`PS_SHORT`] that take a value (attached or in the next word).
const PS_SHORT_WITH_VALUE: &str = "qpuUgGtsCoO";
/// Long options that only select or lay out, with whether they take a value.
const PS_LONG: &[(&str, bool)] = &[
    ("--pid", true),
    ("--ppid", true),
    ("--quick-pid", true),
    ("--user", true),
    ("--User", true),
    ("--group", true),
    ("--Group", true),
    ("--tty", true),
    ("--sid", true),
    ("--sort", true),
    ("--format", true),
    ("--cols", true),
    ("--columns", true),
    ("--width", true),
    ("--rows", true),
    ("--lines", true),
    ("--deselect", false),
    ("--no-headers", false),
    ("--headers", false),
    ("--forest", false),
    ("--help", false),
    ("--version", false),
];
/// Format fields (`-o`, `-O`, `--format`) that show neither a command line nor an environment.
#[rustfmt::skip]
const PS_FIELDS: &[&str] = &[
    "pid", "ppid", "pgid", "pgrp", "sid", "sess", "session", "tid", "lwp", "spid", "nlwp", "tgid",
    "tty", "tt", "tname", "uid", "euid", "ruid", "suid", "fuid", "user", "euser", "ruser", "suser",
    "fuser", "uname", "gid", "egid", "rgid", "sgid", "fgid", "group", "egroup", "rgroup", "sgroup",
    "fgroup", "comm", "ucomm", "ucmd", "fname", "stat", "state", "s", "pcpu", "%cpu", "c", "cp",
    "pmem", "%mem", "rss", "rssize", "rsz", "vsz", "vsize", "sz", "size", "drs", "trs", "time",
    "cputime", "cputimes", "etime", "etimes", "start", "stime", "lstart", "bsdstart", "start_time",
    "bsdtime", "ni", "nice", "pri", "priority", "opri", "psr", "wchan", "nwchan", "f", "flag",
    "flags", "cls", "class", "policy", "sched", "rtprio", "label", "maj_flt", "min_flt", "majflt",
    "minflt", "pending", "sig", "blocked", "sigmask", "caught", "sigcatch", "ignored", "sigignore",
    "addr", "stackp", "esp", "eip", "lim", "tpgid", "sgi_p", "cgroup", "cgroupns", "ipcns",
    "mntns", "netns", "pidns", "userns", "utsns", "lxc", "ouid", "seat", "slice", "unit",
    "uunit", "machine", "luid", "numa", "psr", "thcount", "wname", "pss", "uss", "rbytes",
    "wbytes", "oom", "oomadj", "nlwp",
];

/// Why `ps ARGS` may show command lines or environments, or `None` when every word is a
/// selection or layout option of the positive model above.
fn ps_may_show_command_lines(args: &[Word]) -> Option<String> {
    let fields_hidden = |value: &Word| {
        !value.dynamic
            && value
                .text
                .split([',', ' ', '\t'])
                .filter(|f| !f.is_empty())
                // `pid=PID` renames the column; what follows `=` is a header, not a field.
                .map(|f| f.split_once('=').map_or(f, |(name, _)| name))
                .all(|name| name.is_empty() || PS_FIELDS.contains(&name))
    };
    let mut i = 0;
    while i < args.len() {
        let word = &args[i];
        i += 1;
        if word.dynamic {
            return Some(format!("the computed word {}", word.text));
        }
        let text = word.text.as_str();
        if let Some(long) = text.strip_prefix("--").filter(|l| !l.is_empty()) {
            let (name, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let known = PS_LONG.iter().find(|(l, _)| l[2..] == *name);
            let Some((_, takes_value)) = known else {
                return Some(format!("the option {text}"));
            };
            if *takes_value {
                let value = match attached {
                    Some(v) => Word::literal(v, word.span),
                    None => match args.get(i) {
                        Some(next) => {
                            i += 1;
                            next.clone()
                        }
                        None => return None,
                    },
                };
                if name == "format" && !fields_hidden(&value) {
                    return Some(format!("the format {}", value.text));
                }
            }
            continue;
        }
        let Some(cluster) = text.strip_prefix('-').filter(|c| !c.is_empty()) else {
            // BSD-style words without a dash (`aux`, `ax`, `e`, `f`) switch to the BSD format,
            // whose COMMAND column is the full command line.
            return Some(format!("the BSD-style option word {text}"));
        };
        for (at, letter) in cluster.char_indices() {
            if !PS_SHORT.contains(letter) {
                return Some(format!("the option -{letter}"));
            }
            if PS_SHORT_WITH_VALUE.contains(letter) {
                let rest = &cluster[at + letter.len_utf8()..];
                let value = if rest.is_empty() {
                    match args.get(i) {
                        Some(next) => {
                            i += 1;
                            next.clone()
                        }
                        None => break,
                    }
                } else {
                    Word::literal(rest, word.span)
                };
                if matches!(letter, 'o' | 'O') && !fields_hidden(&value) {
                    return Some(format!("the format {}", value.text));
                }
                break;
            }
        }
    }
    None
}
