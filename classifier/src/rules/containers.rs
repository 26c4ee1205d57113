//! Containers with access to the host: a bind mount of `/` or system directories, the engine's
//! socket, `--privileged`, the host's pid namespace, or the host network together with the home
//! directory. From inside such a container anything on the host can be changed.

use super::args::split_option;
use super::{Outcome, alternatives};
use crate::Class;
use crate::ids::RuleId;
use crate::paths::{Place, place_of};
use crate::walk::{Cmd, Walker};
use crate::word::Word;

const ENGINES: &[&str] = &["docker", "podman", "nerdctl", "finch"];

/// Host paths whose mount gives the container the host (besides `/` and home or above).
const SYSTEM_DIRS: &[&str] = &[
    "/etc", "/root", "/var", "/usr", "/boot", "/dev", "/proc", "/sys", "/run", "/lib", "/bin",
    "/sbin", "/home", "/opt", "/srv",
];

#[rustfmt::skip]
const WITH_VALUE: &[&str] = &[
    "-v", "--volume", "--mount", "--pid", "--net", "--network", "--ipc", "--uts", "--userns",
    "--cap-add", "--security-opt", "--device", "-e", "--env", "--name", "-p", "--publish", "-w",
    "--workdir", "-u", "--user", "--entrypoint", "-h", "--hostname", "--label", "-l", "--cgroupns",
    "--volumes-from", "--env-file", "--platform", "--restart", "-m", "--memory", "--cpus",
];

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    if !ENGINES.contains(&prog) {
        return None;
    }
    let args = &cmd.argv[1..];
    let verb_at = args.iter().position(|a| !a.is_option())?;
    let verb = args[verb_at].text.as_str();
    let start = match verb {
        "run" | "create" => verb_at + 1,
        "container"
            if matches!(
                args.get(verb_at + 1).map(|a| a.text.as_str()),
                Some("run" | "create")
            ) =>
        {
            verb_at + 2
        }
        _ => return None,
    };
    let mut host_net = false;
    let mut home_mount = None;
    let mut i = start;
    while i < args.len()
        && (args[i].is_option() || args[i].dynamic && args[i].prefix.starts_with('-'))
    {
        let (parsed, used) = split_option(args, i, WITH_VALUE);
        for opt in parsed {
            let value = opt.value.clone();
            let text = value.as_ref().map(|v| v.text.clone()).unwrap_or_default();
            let danger = match opt.name.as_str() {
                "--privileged" => {
                    Some("runs a privileged container, which controls the host".to_string())
                }
                "--pid" | "--ipc" | "--uts" | "--userns" | "--cgroupns" if text == "host" => {
                    Some(format!("shares the host's {} namespace", &opt.name[2..]))
                }
                "--cap-add"
                    if matches!(
                        text.to_ascii_uppercase().trim_start_matches("CAP_"),
                        "ALL"
                            | "SYS_ADMIN"
                            | "SYS_PTRACE"
                            | "SYS_MODULE"
                            | "DAC_READ_SEARCH"
                            | "SYS_RAWIO"
                    ) =>
                {
                    Some(format!("grants the capability {text}"))
                }
                "--security-opt" if text.contains("unconfined") => {
                    Some(format!("disables confinement ({text})"))
                }
                "--device" => Some(format!("passes the host device {text}")),
                "--net" | "--network" => {
                    host_net |= text == "host";
                    None
                }
                "-v" | "--volume" | "--mount" => {
                    let source = mount_source(&opt.name, value.as_ref());
                    match source.map(|s| judge_mount(w, &s)) {
                        Some(Mount::Host(why)) => Some(why),
                        Some(Mount::Home(shown)) => {
                            home_mount = Some(shown);
                            None
                        }
                        _ => None,
                    }
                }
                _ => None,
            };
            if let Some(why) = danger {
                let msg = format!("\"{prog} {verb}\" {why}");
                w.reason(
                    Class::Dangerous,
                    RuleId::ContainerHostAccess,
                    msg,
                    args[i].span,
                );
            }
        }
        i += used;
    }
    if let (true, Some(home)) = (host_net, home_mount) {
        let msg = format!("\"{prog} {verb}\" mounts {home} with the host network");
        w.reason(Class::Dangerous, RuleId::ContainerHostAccess, msg, cmd.span);
    }
    None
}

/// The host side of `-v SRC:DST[:opts]` or `--mount type=bind,source=SRC,…`.
fn mount_source(option: &str, value: Option<&Word>) -> Option<Word> {
    let value = value?;
    let text = &value.text;
    let source = if option == "--mount" {
        text.split(',').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            matches!(k, "source" | "src").then(|| v.to_string())
        })?
    } else {
        text.split(':').next()?.to_string()
    };
    // A named volume (no slash, no ~, no variable) is the engine's own storage.
    if !(source.starts_with(['/', '~', '.', '$', '"'])) {
        return None;
    }
    let computed = source.contains('$') || value.dynamic && value.prefix.len() < source.len();
    Some(if computed {
        let prefix = source.split('$').next().unwrap_or("").to_string();
        let mut word = Word::computed(&source, &prefix, value.span);
        word.flow = value.flow.clone();
        word
    } else {
        Word::literal(&source, value.span)
    })
}

enum Mount {
    Host(String),
    Home(String),
    Other,
}

fn judge_mount(w: &Walker, source: &Word) -> Mount {
    let text = source.text.trim_matches('"');
    if text.contains("docker.sock")
        || text.contains("podman.sock")
        || text.contains("containerd.sock")
    {
        return Mount::Host(format!(
            "mounts the engine socket {text}: full control of the host"
        ));
    }
    if super::names_credentials(w, source) {
        return Mount::Host(format!("mounts the credential store {text}"));
    }
    if text.starts_with("$HOME") || text.starts_with("${HOME}") {
        return Mount::Home(text.to_string());
    }
    let mut places = vec![place_of(source, &w.cwds, w.ctx)];
    places.extend(
        alternatives(w, source)
            .iter()
            .map(|a| place_of(a, &w.cwds, w.ctx)),
    );
    for place in places {
        match place {
            Place::Root => {
                return Mount::Host(format!("mounts the host's root file system ({text})"));
            }
            Place::HomeOrAbove(p) if p == crate::paths::normalize(&w.ctx.home) => {
                return Mount::Home(text.to_string());
            }
            Place::HomeOrAbove(p) => {
                return Mount::Host(format!("mounts {} from the host", p.display()));
            }
            Place::Outside(p)
                if SYSTEM_DIRS
                    .iter()
                    .any(|d| p.starts_with(d) && p.components().count() <= 3) =>
            {
                return Mount::Host(format!("mounts the host's {}", p.display()));
            }
            Place::Protected(_) => {
                return Mount::Host(format!("mounts {text}, a protected directory"));
            }
            _ => {}
        }
    }
    Mount::Other
}
