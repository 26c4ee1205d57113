//! Everyday inspection commands whose read-only forms must not ask (`ip addr`, `systemctl
//! status`, `journalctl`, `crontab -l`, `mount` without arguments …). Each returns read-only
//! only for the forms it recognises; anything else falls through to the other families,
//! which judge the changing forms.

use super::{Outcome, long_is, operands, options, short_has};
use crate::walk::{Cmd, Walker};

#[rustfmt::skip]
const INSPECTORS: &[&str] = &[
    "lsblk", "lsof", "numfmt", "expr", "lscpu", "lsusb", "lspci", "findmnt", "zipinfo", "lsattr",
    "getfacl", "ip", "ss", "journalctl", "systemctl", "crontab", "kill", "mount", "timedatectl",
    "npm", "pnpm", "unzip", "fd", "fdfind",
];

pub(crate) fn run(_w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    let args = &cmd.argv[1..];
    if !INSPECTORS.contains(&prog) || args.iter().any(|a| a.dynamic) {
        return None;
    }
    let read_only = match prog {
        "lsblk" | "lsof" | "numfmt" | "expr" | "lscpu" | "lsusb" | "lspci" | "findmnt"
        | "zipinfo" | "lsattr" | "getfacl" => true,
        "ip" => ip(args),
        // `-K`/`--kill` closes sockets, `-D FILE`/`--diag=FILE` writes raw diagnostics.
        "ss" => !options(args).any(|a| {
            let t = a.text.as_str();
            short_has(t, 'K')
                || short_has(t, 'D')
                || (t.len() > 2 && (long_is(t, "--kill") || long_is(t, "--diag")))
        }),
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
        "unzip" => {
            options(args).any(|a| {
                !a.text.starts_with("--") && a.text[1..].starts_with(['l', 'Z', 'v', 't', 'p', 'z'])
            }) && !options(args).any(|a| short_has(&a.text, 'd'))
        }
        "fd" | "fdfind" => !args.iter().any(|a| {
            let t = a.text.as_str();
            short_has(t, 'x')
                || short_has(t, 'X')
                || long_is(t, "--exec")
                || long_is(t, "--exec-batch")
        }),
        _ => return None,
    };
    read_only.then(Outcome::read_only)
}

/// `ip [OPTIONS] OBJECT [show|list|get]`.
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
        "-4",
        "-6",
    ];
    let mut words = args.iter().map(|a| a.text.as_str()).skip_while(|t| {
        t.starts_with('-') && !matches!(*t, "-n" | "-netns" | "-b" | "-batch" | "-force")
    });
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
