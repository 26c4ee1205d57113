//! Everyday inspection commands whose read-only forms must not ask (`ip addr`, `systemctl
//! status`, `journalctl`, `crontab -l`, `mount` without arguments …). Each returns read-only
//! only for the forms it recognises; anything else falls through to the other families,
//! which judge the changing forms.

use super::{Outcome, long_is, operands, options, short_has};
use crate::walk::{Cmd, Walker};

#[rustfmt::skip]
pub(crate) const INSPECTORS: &[&str] = &[
    "lsblk", "lsof", "numfmt", "expr", "lscpu", "lsusb", "lspci", "findmnt", "zipinfo", "lsattr",
    "getfacl", "ip", "ss", "journalctl", "systemctl", "crontab", "kill", "mount", "timedatectl",
    "npm", "pnpm", "unzip", "fd", "fdfind", "yq", "dmesg", "sysctl", "ulimit", "umask", "lsmod",
    "readelf", "objdump", "nm", "iconv", "shasum", "bc", "getent", "shopt", "tee",
];

/// Programs whose `--version` (and the flags in [`version_flags`]) only print a version. Not
/// here: tools that may fetch or install something first (`cargo`/`rustc` through rustup, `go`
/// with `GOTOOLCHAIN`) or write update-check state (`npm`, `gh`, `terraform`).
#[rustfmt::skip]
pub(crate) const VERSIONED: &[&str] = &[
    "gcc", "g++", "cc", "clang", "make", "cmake", "java", "javac", "docker", "podman", "pip",
    "pip3", "git", "tar", "curl", "wget", "rg", "fd", "jq",
];

/// The flags that only print a version for `prog` (`bash -v` is verbose mode, `ruby -v` reads
/// a program from its input: only `--version` for those).
fn version_flags(prog: &str) -> &'static [&'static str] {
    match prog {
        p if p.starts_with("python") || p.starts_with("pypy") => &["--version", "-V", "-VV"],
        "node" | "nodejs" | "bun" => &["--version", "-v"],
        "perl" | "php" | "lua" | "luajit" => &["--version", "-v"],
        "deno" | "pip" | "pip3" | "rg" | "fd" | "jq" => &["--version", "-V"],
        "java" | "javac" => &["--version", "-version"],
        _ => &["--version"],
    }
}

/// `python3 -V`, `node -v`, `bash --version`, `cargo --version`: only a version is printed.
pub(crate) fn prints_version(prog: &str, args: &[crate::word::Word]) -> bool {
    let versioned = VERSIONED.contains(&prog)
        || super::exec::SHELLS.contains(prog)
        || super::exec::is_interpreter(prog);
    if !versioned || args.is_empty() || args.iter().any(|a| a.dynamic) {
        return false;
    }
    let joined: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
    let joined = joined.join(" ");
    version_flags(prog).contains(&joined.as_str())
}

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    let args = &cmd.argv[1..];
    if prints_version(prog, args) {
        return Some(Outcome::read_only());
    }
    if matches!(prog, "jq" | "gojq" | "jaq") {
        return jq_modules(w, cmd, prog);
    }
    // `$$`, `$PPID` … are numbers, never options.
    if !INSPECTORS.contains(&prog) || args.iter().any(|a| a.dynamic && !a.is_numeric_special()) {
        return None;
    }
    let read_only = match prog {
        "lsblk" | "lsof" | "numfmt" | "expr" | "lscpu" | "lsusb" | "lspci" | "findmnt"
        | "zipinfo" | "lsattr" | "getfacl" | "lsmod" | "readelf" | "shasum" | "bc" => true,
        // `--plugin` loads a shared object, also abbreviated (`--pl`, as getopt accepts) and
        // from a response file: binutils read more options from `@FILE` (`nm @opts a.out`, with
        // `--plugin ./evil.so` in `opts`, ran the model's code).
        "objdump" | "nm" => !args.iter().any(|a| {
            let t = a.text.as_str();
            t.starts_with('@')
                || t.split_once('=').map_or(t, |(name, _)| name).len() >= 4
                    && "--plugin".starts_with(t.split_once('=').map_or(t, |(name, _)| name))
        }),
        "yq" => !args.iter().any(|a| {
            let t = a.text.as_str();
            t == "-i"
                || t == "-s"
                || (a.is_option()
                    && !t.starts_with("--")
                    && (short_has(t, 'i') || short_has(t, 's')))
                || long_is(t, "--inplace")
                || long_is(t, "--in-place")
                || long_is(t, "--split-exp")
        }),
        "dmesg" => dmesg(args),
        "sysctl" => {
            use super::args::{Item, Spec, getopt};
            let spec = Spec {
                short_flags: "aAXnNeqbdh",
                short_value: "r",
                long_flags: &[
                    "--all",
                    "--values",
                    "--names",
                    "--binary",
                    "--ignore",
                    "--deprecated",
                    "--help",
                    "--version",
                ],
                long_value: &["--pattern"],
                ..Spec::default()
            };
            getopt(args, &spec).iter().all(|i| match i {
                Item::Opt { .. } => true,
                Item::Unknown(_) => false,
                Item::Operand(a) => !a.text.contains('='),
            })
        }
        // Queries only: `ulimit -n`, `ulimit -a`; a value sets the limit.
        "ulimit" => args
            .iter()
            .all(|a| a.is_option() && !a.text.starts_with("--")),
        "umask" => args.iter().all(|a| a.text == "-S" || a.text == "-p"),
        "iconv" => {
            use super::args::{Item, Spec, getopt};
            let spec = Spec {
                short_flags: "csl",
                short_value: "ft",
                long_flags: &[
                    "--silent",
                    "--list",
                    "--verbose",
                    "--help",
                    "--version",
                    "--usage",
                ],
                long_value: &["--from-code", "--to-code"],
                ..Spec::default()
            };
            !getopt(args, &spec)
                .iter()
                .any(|i| matches!(i, Item::Unknown(_)))
        }
        // The shadow databases hold password hashes.
        "getent" => !operands(args)
            .first()
            .is_some_and(|db| matches!(db.text.as_str(), "shadow" | "gshadow")),
        "shopt" => shopt(args),
        "tee" => args.iter().all(|a| {
            matches!(
                a.text.as_str(),
                "-a" | "-i" | "-p" | "--append" | "--ignore-interrupts"
            ) || matches!(a.text.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr")
        }),
        "ip" => ip(args),
        "ss" => ss(args),
        "journalctl" => journalctl(args),
        "systemctl" => systemctl(args),
        "crontab" => {
            args.iter().any(|a| a.text == "-l")
                && args
                    .iter()
                    .all(|a| matches!(a.text.as_str(), "-l" | "-u") || !a.is_option())
        }
        // Only when listing is what kill was asked first: `kill -9 -l 1` is not a listing.
        "kill" => args
            .first()
            .is_some_and(|a| matches!(a.text.as_str(), "-l" | "-L" | "--list" | "--table")),
        "mount" => args
            .iter()
            .all(|a| matches!(a.text.as_str(), "-l" | "--show-labels")),
        "timedatectl" => {
            matches!(
                operands(args).first().map(|a| a.text.as_str()),
                None | Some(
                    "status" | "show" | "list-timezones" | "timesync-status" | "show-timesync"
                )
            ) && !options(args).any(|a| short_has(&a.text, 'H') || short_has(&a.text, 'M'))
        }
        "npm" | "pnpm" => matches!(
            operands(args)
                .iter()
                .map(|a| a.text.as_str())
                .collect::<Vec<_>>()
                .as_slice(),
            ["config" | "c", "list" | "ls" | "get", ..]
        ),
        "unzip" => unzip_only_reads(cmd, args),
        "fd" | "fdfind" => fd(args),
        _ => return None,
    };
    read_only.then(Outcome::read_only)
}

/// jq reads modules, and `.json` files as data (`import "x" as $x;`), from its library path
/// (`-L DIR`, `--library-path DIR`, the default `~/.jq`), from a `search` path named in the
/// program, or from where a `-f` program file lies: `jq -n -L ~ 'import ".gg/web" as $w; $w'`
/// printed gg's token. A `-L` or a program that imports or includes anything, or a program read
/// from a file (whose imports are not seen), is not read-only; a `-L` naming a credential store
/// or a directory above one is a credential read. `None`: jq is judged as an ordinary reader.
fn jq_modules(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    use crate::Class;
    use crate::ids::RuleId;
    let args = &cmd.argv[1..];
    use super::args::tail;
    let mut library: Vec<crate::word::Word> = Vec::new();
    let mut program_file = false;
    let mut filter: Option<&crate::word::Word> = None;
    let mut i = 0;
    while let Some(a) = args.get(i) {
        i += 1;
        let t = if a.dynamic {
            a.prefix.as_str()
        } else {
            a.text.as_str()
        };
        if t == "--" {
            // Everything after `--` is an operand: the filter first, if none yet.
            if filter.is_none() {
                filter = args.get(i);
            }
            break;
        }
        if !t.starts_with('-') || t == "-" {
            if filter.is_none() && !program_file {
                filter = Some(a);
            }
            continue;
        }
        match t {
            "--arg" | "--argjson" | "--slurpfile" | "--rawfile" => i += 2,
            "--indent" => i += 1,
            "-f" | "--from-file" => {
                program_file = true;
                i += 1;
            }
            // Positional values, not files or a filter.
            "--args" | "--jsonargs" => break,
            _ if t.starts_with("--library-path") => match t.split_once('=') {
                Some((name, _)) => library.push(tail(a, name.len() + 1)),
                None => {
                    library.extend(args.get(i).cloned());
                    i += 1;
                }
            },
            // `-L DIR`, `-LDIR`, and `L` in a cluster of short options (`-nL DIR`).
            _ if !t.starts_with("--") && t.contains('L') => match t.find('L') {
                Some(at) if at + 1 < t.len() => library.push(tail(a, at + 1)),
                _ => {
                    library.extend(args.get(i).cloned());
                    i += 1;
                }
            },
            _ if !t.starts_with("--") && t.contains('f') => program_file = true,
            _ => {}
        }
    }
    for dir in &library {
        let text = if dir.dynamic { &dir.prefix } else { &dir.text };
        // The generic path check already flags a store named itself (`-L ~/.gg`); this adds the
        // directories above one (`-L ~`, `-L /`), whose stores jq reaches by relative import.
        let store = dir.dynamic
            || super::secrets::absolutes_for_match(w, text)
                .iter()
                .any(|d| super::secrets::directory_holds_credentials(w, d));
        if store {
            let msg = format!(
                "\"{prog} -L {}\" loads modules and .json data from a directory that holds \
                 credential stores; their content would reach the model",
                dir.text
            );
            w.reason(
                Class::Dangerous,
                RuleId::SecretsCredentialFile,
                msg,
                dir.span,
            );
        }
    }
    if !library.is_empty() {
        let msg = format!("\"{prog} -L\" loads modules and data files from a library path");
        return Some(Outcome::not(RuleId::ReadonlyNotAllowListed, msg));
    }
    if program_file {
        let msg = format!("\"{prog} -f\" runs a program file whose imports are not seen");
        return Some(Outcome::not(RuleId::ReadonlyNotAllowListed, msg));
    }
    let imports = filter.is_some_and(|f| {
        f.dynamic || has_keyword(&f.text, "import") || has_keyword(&f.text, "include")
    });
    imports.then(|| {
        let msg = format!("the {prog} program imports modules or data files");
        Outcome::not(RuleId::ReadonlyNotAllowListed, msg)
    })
}

/// Whether `keyword` stands in `code` as a word of its own (not `.include`, `$import`,
/// `imported`).
fn has_keyword(code: &str, keyword: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    code.match_indices(keyword).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + keyword.len()..].chars().next();
        !before.is_some_and(|c| is_word(c) || c == '.' || c == '$') && !after.is_some_and(is_word)
    })
}

/// `unzip` that only lists, tests or prints: every option word, wherever it stands (unzip reads
/// options after the archive name and after `--` too), is made only of the listing modes
/// (`l`, `v`, `t`, `z`, `p`) and harmless modifiers (`q`, `C`, `x`), and one mode is there; or
/// the first word is `-Z` (zipinfo mode, which only lists). A `-` inside a word negates the
/// next letter (`--l`, `-l-l`, `-x--l` turn listing off again and extract), so it is refused
/// like any letter outside the set (`-o` overwrites, `-:` allows `../`). `UNZIP`/`UNZIPOPT` in
/// the command's environment add options of their own.
fn unzip_only_reads(cmd: &Cmd, args: &[crate::word::Word]) -> bool {
    const MODES: &[u8] = b"lvtzp";
    const MODIFIERS: &[u8] = b"qCx";
    if cmd
        .assigns
        .iter()
        .any(|(name, _)| matches!(name.as_str(), "UNZIP" | "UNZIPOPT"))
    {
        return false;
    }
    if args
        .first()
        .is_some_and(|a| a.text.starts_with("-Z") && !a.dynamic)
    {
        return true;
    }
    let mut mode = false;
    for a in args.iter().filter(|a| a.text.starts_with('-')) {
        let letters = &a.text.as_bytes()[1..];
        if letters.is_empty()
            || !letters
                .iter()
                .all(|c| MODES.contains(c) || MODIFIERS.contains(c))
        {
            return false;
        }
        mode |= letters.iter().any(|c| MODES.contains(c));
    }
    mode
}

/// fd without `-x`/`-X`/`--exec`/`--exec-batch`, with options that take a value read as such
/// (`-tx` is `--type x`, executables).
fn fd(args: &[crate::word::Word]) -> bool {
    use super::args::split_option;
    #[rustfmt::skip]
    const WITH_VALUE: &[&str] = &[
        "-t", "-e", "-E", "-d", "-j", "-c", "-S", "-o", "--type", "--extension", "--exclude",
        "--max-depth", "--min-depth", "--exact-depth", "--threads", "--color", "--size", "--owner",
        "--changed-within", "--changed-before", "--newer", "--older", "--max-results",
        "--base-directory", "--path-separator", "--search-path", "--format", "--ignore-file",
        "--batch-size", "--max-buffer-time", "--hyperlink",
    ];
    let mut i = 0;
    while i < args.len() {
        if !args[i].is_option() || args[i].text == "--" {
            i += 1;
            continue;
        }
        let (parsed, used) = split_option(args, i, WITH_VALUE);
        if parsed.iter().any(|o| {
            matches!(o.name.as_str(), "-x" | "-X")
                || long_is(&o.name, "--exec")
                || long_is(&o.name, "--exec-batch")
        }) {
            return false;
        }
        i += used;
    }
    true
}

/// dmesg's reading options; `-C`/`-c` clear the ring buffer, `-D`/`-E`/`-n` change the console.
fn dmesg(args: &[crate::word::Word]) -> bool {
    use super::args::{Item, Spec, getopt};
    let spec = Spec {
        short_flags: "THLktxruwWdePJS",
        short_value: "lfs",
        long_flags: &[
            "--ctime",
            "--human",
            "--kernel",
            "--userspace",
            "--decode",
            "--notime",
            "--raw",
            "--syslog",
            "--follow",
            "--follow-new",
            "--show-delta",
            "--json",
            "--nopager",
            "--reltime",
            "--help",
            "--version",
            "--noescape",
        ],
        long_value: &[
            "--level",
            "--facility",
            "--since",
            "--until",
            "--time-format",
            "--buffer-size",
            "--file",
        ],
        long_optional: &["--color"],
        ..Spec::default()
    };
    !getopt(args, &spec)
        .iter()
        .any(|i| matches!(i, Item::Unknown(_) | Item::Operand(_)))
}

/// `shopt` lists; `shopt -s/-u` of globbing options is read-only. Options that change how later
/// text is read or run (`expand_aliases`, `extdebug`, `xpg_echo`, `sourcepath` …) are not.
fn shopt(args: &[crate::word::Word]) -> bool {
    #[rustfmt::skip]
    const HARMLESS: &[&str] = &[
        "globstar", "nullglob", "dotglob", "nocaseglob", "failglob", "nocasematch",
        "globasciiranges", "checkwinsize", "histappend", "cmdhist", "lithist",
    ];
    let setting = args
        .iter()
        .any(|a| a.text.starts_with('-') && (a.text.contains('s') || a.text.contains('u')));
    args.iter()
        .filter(|a| !a.is_option())
        .all(|a| !setting || HARMLESS.contains(&a.text.as_str()))
        && args
            .iter()
            .filter(|a| a.is_option())
            .all(|a| a.text[1..].chars().all(|c| "supqo".contains(c)))
        && !args
            .iter()
            .any(|a| a.text.starts_with('-') && a.text.contains('o') && setting)
}

/// The global options of iproute2's `ip`, in the order `ip.c` tries them: a word is the first
/// option it is a prefix of (iproute2's `matches()`: `-ba`, `-bat` are `-batch`; `--x` is `-x`).
/// (name, takes the next word as its value, harmless). `-batch` runs commands from a file (as
/// root: `netns exec` runs anything), `-netns` switches namespaces.
#[rustfmt::skip]
const IP_OPTIONS: &[(&str, bool, bool)] = &[
    ("-loops", true, true), ("-family", true, true), ("-human", false, true),
    ("-human-readable", false, true), ("-iec", false, true), ("-stats", false, true),
    ("-statistics", false, true), ("-details", false, true), ("-resolve", false, true),
    ("-oneline", false, true), ("-timestamp", false, true), ("-tshort", false, true),
    ("-Version", false, true),
    // Only changes how `-batch` handles errors.
    ("-force", false, true),
    ("-batch", true, false), ("-brief", false, true), ("-json", false, true),
    ("-pretty", false, true), ("-rcvbuf", true, true), ("-color", false, true),
    ("-help", false, true), ("-netns", true, false), ("-Numeric", false, true),
    ("-all", false, true),
];

/// `ip [OPTIONS] OBJECT [show|list|get]`, with a positive model of the options: every option
/// word must be one of [`IP_OPTIONS`]'s harmless ones, and must not be a prefix of a harmful
/// one either (so no question of which one iproute2 picks first).
fn ip(args: &[crate::word::Word]) -> bool {
    const OBJECTS: &[&str] = &[
        "a",
        "addr",
        "address",
        "r",
        "route",
        "l",
        "link",
        "n",
        "neigh",
        "neighbour",
        "neighbor",
        "rule",
        "ru",
        "maddr",
        "maddress",
        "mroute",
        "netconf",
        "tunnel",
        "tuntap",
    ];
    let mut i = 0;
    while let Some(word) = args.get(i) {
        let text = word.text.as_str();
        if text == "--" {
            i += 1;
            break;
        }
        if !text.starts_with('-') {
            break;
        }
        i += 1;
        // `ip -4`, `-6`, `-0`, `-M`, `-B`: address families, compared whole.
        if matches!(text, "-4" | "-6" | "-0" | "-M" | "-B") {
            continue;
        }
        let text = if text.starts_with("--") {
            &text[1..]
        } else {
            text
        };
        // `-color` alone or `-color=always` (and abbreviations: `-c=never`).
        let name = text.split_once('=').map_or(text, |(n, _)| n);
        if name.len() > 1 && "-color".starts_with(name) && text.contains('=') {
            continue;
        }
        let mut matching = IP_OPTIONS
            .iter()
            .filter(|(full, _, _)| name.len() > 1 && full.starts_with(name));
        let Some((_, takes_value, _)) = matching.clone().next() else {
            return false;
        };
        if name.len() != text.len() || matching.any(|(_, _, harmless)| !harmless) {
            return false;
        }
        if *takes_value {
            i += 1;
        }
    }
    let mut words = args.iter().skip(i).map(|a| a.text.as_str());
    let Some(object) = words.next() else {
        return false;
    };
    if !OBJECTS.contains(&object) {
        return false;
    }
    matches!(
        words.next(),
        None | Some("show" | "list" | "ls" | "lst" | "get" | "s")
    )
}

/// `ss` with a positive model of its options (getopt_long, so abbreviations of long options are
/// resolved against this table: `--ki` for `--kill` is unknown here). Not read-only: `-K`/`--kill`
/// closes sockets, `-D`/`--diag FILE` writes a file, `-F`/`--filter FILE` reads one, `-N`/`--net`
/// switches network namespace.
fn ss(args: &[crate::word::Word]) -> bool {
    use super::args::{Item, Spec, getopt};
    let spec = Spec {
        short_flags: "hVnraloemepTisbEZz460tMSudwxHO",
        short_value: "fA",
        long_flags: &[
            "--help",
            "--version",
            "--numeric",
            "--resolve",
            "--all",
            "--listening",
            "--options",
            "--extended",
            "--memory",
            "--processes",
            "--threads",
            "--info",
            "--tipcinfo",
            "--summary",
            "--tos",
            "--cgroup",
            "--bpf",
            "--events",
            "--context",
            "--contexts",
            "--ipv4",
            "--ipv6",
            "--packet",
            "--tcp",
            "--mptcp",
            "--sctp",
            "--udp",
            "--dccp",
            "--raw",
            "--unix",
            "--tipc",
            "--vsock",
            "--xdp",
            "--no-header",
            "--oneline",
            "--inet-sockopt",
        ],
        long_value: &["--family", "--query", "--socket"],
        ..Spec::default()
    };
    !getopt(args, &spec)
        .iter()
        .any(|i| matches!(i, Item::Unknown(_)))
}

/// journalctl's read options; anything else (`--cursor-file`, `--vacuum-*`, `--rotate`,
/// `--flush`, `--setup-keys`, `--update-catalog`, …) is not read-only.
fn journalctl(args: &[crate::word::Word]) -> bool {
    use super::args::{Item, Spec, getopt};
    let spec = Spec {
        // Digits: `-b -1` (a boot offset in the next word).
        short_flags: "fexqmkralhNr0123456789",
        short_value: "outpgcSUFMDTI",
        short_optional: "nb",
        long_flags: &[
            "--follow",
            "--pager-end",
            "--reverse",
            "--catalog",
            "--quiet",
            "--merge",
            "--dmesg",
            "--all",
            "--full",
            "--no-full",
            "--no-pager",
            "--no-tail",
            "--no-hostname",
            "--utc",
            "--system",
            "--user",
            "--list-boots",
            "--disk-usage",
            "--header",
            "--show-cursor",
            "--version",
            "--help",
            "--fields",
            "--list-catalog",
            "--dump-catalog",
            "--list-namespaces",
            "--list-invocations",
            "--verify",
        ],
        long_value: &[
            "--output",
            "--unit",
            "--user-unit",
            "--identifier",
            "--exclude-identifier",
            "--priority",
            "--facility",
            "--grep",
            "--cursor",
            "--after-cursor",
            "--since",
            "--until",
            "--field",
            "--machine",
            "--directory",
            "--file",
            "--root",
            "--image",
            "--image-policy",
            "--namespace",
            "--invocation",
            "--verify-key",
        ],
        long_optional: &["--boot", "--lines", "--case-sensitive"],
    };
    !getopt(args, &spec)
        .iter()
        .any(|i| matches!(i, Item::Unknown(_)))
}

fn systemctl(args: &[crate::word::Word]) -> bool {
    const VERBS: &[&str] = &[
        "status",
        "show",
        "cat",
        "is-active",
        "is-enabled",
        "is-failed",
        "is-system-running",
        "list-units",
        "list-unit-files",
        "list-timers",
        "list-sockets",
        "list-jobs",
        "list-dependencies",
        "list-machines",
        "list-automounts",
        "list-paths",
        "help",
        "show-environment",
        "get-default",
    ];
    use super::args::{Item, Spec, getopt};
    // Options that take a value are read as such, so the verb is the first real operand
    // (`systemctl -p status stop sshd` stops sshd).
    let spec = Spec {
        short_flags: "arlqifh",
        short_value: "tpPsnoHM",
        long_flags: &[
            "--all",
            "--recursive",
            "--reverse",
            "--after",
            "--before",
            "--full",
            "--value",
            "--show-types",
            "--quiet",
            "--user",
            "--system",
            "--global",
            "--no-pager",
            "--failed",
            "--plain",
            "--help",
            "--version",
            "--no-legend",
            "--with-dependencies",
        ],
        long_value: &[
            "--type",
            "--property",
            "--state",
            "--signal",
            "--output",
            "--root",
            "--image",
            "--host",
            "--machine",
            "--timestamp",
            "--what",
            "--kill-whom",
            "--kill-value",
            "--job-mode",
            "--when",
            "--preset-mode",
            "--lines",
        ],
        long_optional: &["--legend", "--check-inhibitors"],
        ..Spec::default()
    };
    let items = getopt(args, &spec);
    let remote_or_unknown = items.iter().any(|i| match i {
        Item::Opt { name, .. } => matches!(name.as_str(), "-H" | "-M" | "--host" | "--machine"),
        Item::Unknown(_) => true,
        Item::Operand(_) => false,
    });
    let verb = items.iter().find_map(|i| match i {
        Item::Operand(a) => Some(a.text.as_str()),
        _ => None,
    });
    !remote_or_unknown && verb.is_none_or(|v| VERBS.contains(&v))
}
