//! System state: privilege changes, disks, power, services, firewall, scheduled jobs, clock,
//! host name, user accounts, system packages and user-level configuration.

use super::{Outcome, long_is, operands, run_code, short_has};
use crate::Class;
use crate::ids::RuleId;
use crate::walk::{Cmd, Flow, Walker};

/// Programs that are dangerous whatever their arguments: (names, rule, what they do).
#[rustfmt::skip]
const ALWAYS_DANGEROUS: &[(&[&str], RuleId, &str)] = &[
    (&["sudoedit"], RuleId::PrivilegeSudoedit, "edits files as another user"),
    (&["setcap"], RuleId::PrivilegeSetcap, "grants file capabilities"),
    (&["fdisk", "sfdisk", "cfdisk", "parted", "gdisk", "sgdisk", "wipefs", "mkswap", "blkdiscard",
       "cryptsetup", "mke2fs", "mkdosfs", "mdadm", "losetup", "pvremove", "vgremove", "lvremove", "zpool",
       "badblocks", "hdparm"],
     RuleId::DiskFormat, "partitions, formats or wipes disks"),
    (&["mount", "umount", "swapon", "swapoff"], RuleId::DiskMount, "changes mounted file systems"),
    (&["shutdown", "reboot", "halt", "poweroff", "telinit", "kexec"], RuleId::SystemShutdown,
     "shuts down or restarts the machine"),
    (&["killall5"], RuleId::SystemKillAll, "kills every process"),
    (&["iptables", "ip6tables", "nft", "ufw", "firewall-cmd", "ebtables", "arptables", "iptables-restore",
       "ip6tables-restore"],
     RuleId::SystemFirewall, "changes the firewall"),
    (&["at", "batch"], RuleId::SystemScheduledJob, "schedules a command to run later"),
    (&["useradd", "userdel", "usermod", "passwd", "chpasswd", "chage", "groupadd", "groupdel", "groupmod",
       "gpasswd", "adduser", "deluser", "addgroup", "delgroup", "chsh", "chfn", "vipw", "vigr", "visudo",
       "newusers"],
     RuleId::SystemUserAccount, "changes user accounts or passwords"),
    (&["modprobe", "insmod", "rmmod"], RuleId::SystemKernel, "changes loaded kernel modules"),
    (&["hostnamectl", "timedatectl"], RuleId::SystemHostSettings, "changes host-wide settings"),
];

/// Package managers and the verbs that install, remove or upgrade (`pacman`-style managers are
/// judged by their flags in [`package_manager`]).
#[rustfmt::skip]
const PACKAGE_MANAGERS: &[(&str, &[&str])] = &[
    ("apt", &["install", "remove", "purge", "upgrade", "full-upgrade", "dist-upgrade", "autoremove", "reinstall"]),
    ("apt-get", &["install", "remove", "purge", "upgrade", "dist-upgrade", "autoremove", "reinstall", "build-dep"]),
    ("aptitude", &["install", "remove", "purge", "upgrade", "safe-upgrade", "full-upgrade", "reinstall"]),
    ("dpkg", &["-i", "--install", "-r", "--remove", "-P", "--purge", "--unpack", "--configure"]),
    ("dnf", &["install", "remove", "erase", "upgrade", "update", "downgrade", "reinstall", "autoremove", "swap"]),
    ("yum", &["install", "remove", "erase", "upgrade", "update", "downgrade", "reinstall", "autoremove", "swap"]),
    ("rpm", &["-i", "-U", "-e", "-F", "--install", "--upgrade", "--erase", "--freshen"]),
    ("zypper", &["install", "in", "remove", "rm", "update", "up", "dist-upgrade", "dup", "patch"]),
    ("apk", &["add", "del", "upgrade", "fix"]),
    ("brew", &["install", "uninstall", "remove", "rm", "upgrade", "reinstall", "tap", "untap", "link", "unlink", "cleanup"]),
    ("snap", &["install", "remove", "refresh", "revert"]),
    ("flatpak", &["install", "uninstall", "update"]),
    ("port", &["install", "uninstall", "upgrade"]),
    ("pkg", &["install", "delete", "remove", "upgrade"]),
    ("emerge", &[]),
    ("pacman", &[]),
    ("yay", &[]),
    ("paru", &[]),
];

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    let args = &cmd.argv[1..];
    if let Some((_, rule, what)) = ALWAYS_DANGEROUS
        .iter()
        .find(|(names, _, _)| names.contains(&prog))
    {
        w.reason(
            Class::Dangerous,
            *rule,
            format!("\"{prog}\" {what}"),
            cmd.span,
        );
        return Some(Outcome::not(
            RuleId::ReadonlyNotAllowListed,
            format!("\"{prog}\" changes the system"),
        ));
    }
    if prog.starts_with("mkfs") {
        w.reason(
            Class::Dangerous,
            RuleId::DiskFormat,
            format!("\"{prog}\" formats a file system"),
            cmd.span,
        );
        return Some(changes(prog));
    }
    if let Some((_, verbs)) = PACKAGE_MANAGERS.iter().find(|(p, _)| *p == prog) {
        return Some(package_manager(w, cmd, prog, verbs));
    }
    let outcome = match prog {
        "su" => su(w, cmd),
        "machinectl" => {
            let verb = super::operands(args).first().map(|a| a.text.as_str());
            if matches!(verb, Some("shell" | "login")) {
                w.reason(
                    Class::Dangerous,
                    RuleId::PrivilegeWrapper,
                    "\"machinectl shell\" opens a shell as another user (root on the host by default)",
                    cmd.span,
                );
            }
            changes(prog)
        }
        "systemctl" | "service" => systemctl(w, cmd, prog),
        "init" => {
            if args
                .iter()
                .any(|a| matches!(a.text.as_str(), "0" | "6" | "1" | "s" | "S"))
            {
                w.reason(
                    Class::Dangerous,
                    RuleId::SystemShutdown,
                    "\"init\" changes the run level",
                    cmd.span,
                );
            }
            changes(prog)
        }
        "kill" => kill(w, cmd),
        "crontab" => crontab(w, cmd),
        // Lingering keeps the user's service manager, and every unit it starts, running
        // without a session: with an enabled unit or timer, persistence across logouts/boots.
        // A transient service or timer (`--on-calendar`, `--on-boot`, `--on-active`) run by the
        // service manager: later, and outside this command's process tree and so outside any
        // sandbox level. Its command is still judged (`systemd-run rm -rf /`).
        "systemd-run" => {
            w.reason(
                Class::Dangerous,
                RuleId::SystemScheduledJob,
                "\"systemd-run\" starts a service or timer through the service manager, outside \
                 this command's process tree",
                cmd.span,
            );
            super::speculative::trial_payloads(w, cmd);
            changes(prog)
        }
        "loginctl" => {
            if args.iter().any(|a| a.text == "enable-linger") {
                w.reason(
                    Class::Dangerous,
                    RuleId::SystemScheduledJob,
                    "\"loginctl enable-linger\" keeps the user's services running without a session",
                    cmd.span,
                );
            }
            changes(prog)
        }
        "date" => return date(w, cmd),
        "hwclock" => {
            if args.iter().any(|a| {
                matches!(
                    a.text.as_str(),
                    "-w" | "--systohc" | "--set" | "-s" | "--hctosys"
                )
            }) {
                w.reason(
                    Class::Dangerous,
                    RuleId::SystemClock,
                    "\"hwclock\" sets the clock",
                    cmd.span,
                );
            }
            changes(prog)
        }
        "hostname" => return hostname(w, cmd),
        "sysctl" => {
            if args.iter().any(|a| {
                short_has(&a.text, 'w')
                    || a.text.contains('=')
                    || long_is(&a.text, "--load")
                    || short_has(&a.text, 'p')
            }) {
                w.reason(
                    Class::Dangerous,
                    RuleId::SystemKernel,
                    "\"sysctl\" changes kernel parameters",
                    cmd.span,
                );
            }
            changes(prog)
        }
        "npm" | "pnpm" | "yarn" | "pip" | "pip3" | "gem" | "cargo" | "gh" | "gcloud" | "aws"
        | "docker" | "kubectl" => user_config(w, cmd, prog),
        _ => return None,
    };
    Some(outcome)
}

fn changes(prog: &str) -> Outcome {
    Outcome::not(
        RuleId::ReadonlyNotAllowListed,
        format!("\"{prog}\" is not on the read-only list"),
    )
}

fn package_manager(w: &mut Walker, cmd: &Cmd, prog: &str, verbs: &[&str]) -> Outcome {
    let args = &cmd.argv[1..];
    let hit = if prog == "pacman" || prog == "yay" || prog == "paru" {
        args.iter().any(|a| {
            let t = a.text.as_str();
            (t.starts_with("-S") && !matches!(t, "-Ss" | "-Si" | "-Sl" | "-Sg" | "-Sii"))
                || t.starts_with("-R")
                || t.starts_with("-U")
                || long_is(t, "--sync")
                || long_is(t, "--remove")
                || long_is(t, "--upgrade")
        })
    } else if prog == "emerge" {
        true
    } else {
        args.iter().any(|a| verbs.contains(&a.text.as_str()))
    };
    if hit {
        let msg = format!("\"{prog}\" installs, removes or upgrades system packages");
        w.reason(
            Class::Dangerous,
            RuleId::SystemPackageManager,
            msg,
            cmd.span,
        );
    }
    changes(prog)
}

fn su(w: &mut Walker, cmd: &Cmd) -> Outcome {
    w.reason(
        Class::Dangerous,
        RuleId::PrivilegeSu,
        "\"su\" runs commands as another user",
        cmd.argv[0].span,
    );
    let args = &cmd.argv[1..];
    for (i, a) in args.iter().enumerate() {
        if matches!(a.text.as_str(), "-c" | "--command" | "--session-command")
            && let Some(code) = args.get(i + 1).filter(|c| !c.dynamic)
        {
            let text = code.text.clone();
            run_code(w, &text, code.span, &cmd.input);
        }
    }
    Outcome::not(RuleId::PrivilegeWrapper, "\"su\" changes privileges")
}

fn systemctl(w: &mut Walker, cmd: &Cmd, prog: &str) -> Outcome {
    #[rustfmt::skip]
    const DANGEROUS_VERBS: &[&str] = &[
        "stop", "disable", "mask", "kill", "isolate", "poweroff", "reboot", "halt", "suspend",
        "hibernate", "hybrid-sleep", "rescue", "emergency", "kexec", "set-default", "daemon-reexec",
        "switch-root", "soft-reboot",
    ];
    // Units made to start later (at boot, at login, with another unit, on a timer), or the
    // environment or properties of units that will start: persistence, like a crontab entry,
    // for the system's or (`--user`) the person's service manager.
    #[rustfmt::skip]
    const PERSISTENT_VERBS: &[&str] = &[
        "link", "enable", "reenable", "preset", "preset-all", "add-wants", "add-requires", "edit",
        "set-property", "set-environment", "import-environment", "unset-environment", "revert",
    ];
    let args = &cmd.argv[1..];
    let hit = args
        .iter()
        .any(|a| DANGEROUS_VERBS.contains(&a.text.as_str()));
    if hit {
        w.reason(
            Class::Dangerous,
            RuleId::SystemServiceChange,
            format!("\"{prog}\" stops, disables or masks services or the machine"),
            cmd.span,
        );
    }
    if let Some(verb) = args
        .iter()
        .find(|a| PERSISTENT_VERBS.contains(&a.text.as_str()))
    {
        let msg = format!(
            "\"{prog} {}\" installs or changes units that the service manager starts later",
            verb.text
        );
        w.reason(Class::Dangerous, RuleId::SystemScheduledJob, msg, cmd.span);
    }
    changes(prog)
}

/// `kill -9 -1` (and any signal to pid -1) kills every process the user owns. The first option
/// is the signal; a later `-1` is a process id.
fn kill(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    let mut signal_seen = false;
    let mut all = false;
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if matches!(t, "-s" | "-n" | "--signal") {
            signal_seen = true;
            i += 2;
            continue;
        }
        if t == "--" {
            all |= args[i + 1..].iter().any(|a| a.text == "-1");
            break;
        }
        if t == "-1" && signal_seen {
            all = true;
        } else if t.starts_with('-') {
            signal_seen = true;
        }
        i += 1;
    }
    if all {
        w.reason(
            Class::Dangerous,
            RuleId::SystemKillAll,
            "\"kill -1\" signals every process",
            cmd.span,
        );
    }
    changes("kill")
}

fn crontab(w: &mut Walker, cmd: &Cmd) -> Outcome {
    let args = &cmd.argv[1..];
    let listing = args.iter().all(|a| {
        a.text == "-l" || a.text == "-u" || !a.is_option() && args.iter().any(|x| x.text == "-u")
    }) && args.iter().any(|a| a.text == "-l");
    if !listing {
        w.reason(
            Class::Dangerous,
            RuleId::SystemScheduledJob,
            "\"crontab\" changes scheduled jobs",
            cmd.span,
        );
    }
    changes("crontab")
}

/// `date` is read-only unless it sets the clock (`-s`, `--set`, or an operand not starting with
/// `+`). Options are read with GNU date's table (`-Iseconds` is `-I` with a value, `-ud @N` is
/// `-u -d @N`, `--rfc-3339 seconds` takes its value); an option outside it is not read-only.
fn date(w: &mut Walker, cmd: &Cmd) -> Option<Outcome> {
    use super::args::{Item, Spec, getopt};
    let spec = Spec {
        // `-j` (BSD): do not set the clock, only parse and print; `-v ADJ` (BSD) adjusts.
        short_flags: "uRjn",
        short_value: "dfrsv",
        short_optional: "I",
        long_flags: &[
            "--debug",
            "--rfc-email",
            "--utc",
            "--universal",
            "--resolution",
            "--help",
            "--version",
        ],
        long_value: &["--date", "--file", "--reference", "--set", "--rfc-3339"],
        long_optional: &["--iso-8601"],
    };
    let mut sets = false;
    let mut operand_sets = false;
    let mut no_set = false;
    let mut unknown = None;
    for item in getopt(&cmd.argv[1..], &spec) {
        match item {
            Item::Opt { name, .. } if name == "-s" || name == "--set" => sets = true,
            Item::Opt { name, .. } if name == "-j" => no_set = true,
            Item::Opt { .. } => {}
            Item::Unknown(a) => unknown = unknown.or(Some(a.text.clone())),
            Item::Operand(a) => operand_sets |= a.dynamic || !a.text.starts_with('+'),
        }
    }
    sets |= operand_sets && !no_set;
    if sets {
        w.reason(
            Class::Dangerous,
            RuleId::SystemClock,
            "\"date\" sets the system clock",
            cmd.span,
        );
        return Some(changes("date"));
    }
    if let Some(option) = unknown {
        return Some(Outcome::not(
            RuleId::ReadonlyFlagWrites,
            format!("\"date {option}\" is not a known read-only option of date"),
        ));
    }
    Some(Outcome::read_only())
}

fn hostname(w: &mut Walker, cmd: &Cmd) -> Option<Outcome> {
    let args = &cmd.argv[1..];
    let sets = !operands(args).is_empty()
        || args
            .iter()
            .any(|a| short_has(&a.text, 'F') || long_is(&a.text, "--file"));
    if sets {
        w.reason(
            Class::Dangerous,
            RuleId::SystemHostname,
            "\"hostname NAME\" changes the host name",
            cmd.span,
        );
        return Some(changes("hostname"));
    }
    Some(Outcome::read_only())
}

/// `npm config set`, `pip config set`, `git config --global` (in git.rs) … change the user's
/// configuration outside the project.
fn user_config(w: &mut Walker, cmd: &Cmd, prog: &str) -> Outcome {
    let words: Vec<&str> = cmd.argv[1..]
        .iter()
        .filter(|a| !a.is_option())
        .map(|a| a.text.as_str())
        .collect();
    let sets = match words.as_slice() {
        ["config", "set" | "delete" | "edit" | "unset" | "rm", ..] => true,
        ["set" | "login" | "adduser", ..] if matches!(prog, "npm" | "pnpm" | "yarn") => true,
        ["auth" | "login", ..] if matches!(prog, "gh" | "docker" | "cargo" | "gcloud") => true,
        _ => false,
    };
    let global_install = matches!(prog, "npm" | "pnpm" | "yarn")
        && words
            .first()
            .is_some_and(|v| matches!(*v, "install" | "i" | "add" | "uninstall" | "remove"))
        && cmd
            .argv
            .iter()
            .any(|a| a.text == "-g" || a.text == "--global" || a.text == "global");
    if sets {
        let msg = format!("\"{prog}\" changes user-level configuration outside the project");
        w.reason(Class::Dangerous, RuleId::SystemUserConfig, msg, cmd.span);
    } else if global_install {
        let msg = format!("\"{prog}\" installs or removes packages globally");
        w.reason(
            Class::Dangerous,
            RuleId::SystemPackageManager,
            msg,
            cmd.span,
        );
    }
    changes(prog).with_flow(Flow::default())
}
