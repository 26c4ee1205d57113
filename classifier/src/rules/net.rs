//! Network tools: downloads (whose output must not reach an interpreter), raw connections and
//! reverse shells, remote copies, and credentials sent to the network.

use super::{Outcome, check_write_target, long_is, names_credentials, operands, short_has};
use crate::Class;
use crate::ids::RuleId;
use crate::walk::{Cmd, Flow, Walker};
use crate::word::Word;

#[rustfmt::skip]
const DOWNLOADERS: &[&str] = &[
    "curl", "wget", "fetch", "aria2c", "http", "https", "xh", "lwp-request", "lwp-download", "GET",
    "POST",
];
const RAW_NETWORK: &[&str] = &["nc", "ncat", "netcat", "socat", "telnet"];
const REMOTE_COPY: &[&str] = &["scp", "sftp", "ftp", "tftp", "rsync", "rclone"];

pub(crate) fn is_download_tool(name: &str) -> bool {
    DOWNLOADERS.contains(&name)
}

pub(crate) fn is_network_tool(name: &str) -> bool {
    RAW_NETWORK.contains(&name) || name == "ssh"
}

pub(crate) fn run(w: &mut Walker, cmd: &Cmd, prog: &str) -> Option<Outcome> {
    let args = &cmd.argv[1..];
    let outcome = if DOWNLOADERS.contains(&prog) {
        download(w, cmd, prog)
    } else if RAW_NETWORK.contains(&prog) {
        raw_network(w, cmd, prog)
    } else if REMOTE_COPY.contains(&prog) && prog != "rsync" {
        exfiltration(w, cmd, prog);
        local_commands(w, args);
        let targets: Vec<Word> = operands(args)
            .into_iter()
            .filter(|o| !super::fs::is_remote(o))
            .cloned()
            .collect();
        if prog == "scp"
            && operands(args)
                .last()
                .is_some_and(|d| !super::fs::is_remote(d))
            && let Some(dest) = targets.last()
        {
            check_write_target(w, dest, "scp", dest.span);
        }
        Outcome::not(
            RuleId::NetworkRemoteCopy,
            format!("\"{prog}\" copies files over the network"),
        )
    } else if prog == "ssh" {
        ssh(w, cmd)
    } else if prog == "openssl" && args.first().is_some_and(|a| a.text == "s_client") {
        Outcome::not(
            RuleId::NetworkConnection,
            "\"openssl s_client\" opens a network connection",
        )
        .with_flow(Flow {
            network: true,
            ..Flow::default()
        })
    } else {
        if prog == "rsync" {
            exfiltration(w, cmd, prog);
            local_commands(w, args);
        }
        if DNS_TOOLS.contains(&prog) {
            exfiltration(w, cmd, prog);
        }
        return None;
    };
    Some(outcome)
}

fn download(w: &mut Walker, cmd: &Cmd, prog: &str) -> Outcome {
    let args = &cmd.argv[1..];
    exfiltration(w, cmd, prog);
    if matches!(prog, "curl" | "wget") {
        for (target, content) in curl_wget_writes(prog, args) {
            if target.text == "-" && !target.dynamic {
                continue;
            }
            check_write_target(w, &target, prog, target.span);
            if content {
                remember_download(w, &target);
            }
        }
    }
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        let output = if t == "-o"
            || t == "-O" && prog == "wget"
            || long_is(t, "--output")
            || long_is(t, "--output-document")
        {
            args.get(i + 1).filter(|_| !t.contains('='))
        } else if t == "-P" || long_is(t, "--directory-prefix") || long_is(t, "--output-dir") {
            args.get(i + 1).filter(|_| !t.contains('='))
        } else {
            None
        };
        if let Some(target) = output.filter(|o| o.text != "-") {
            check_write_target(w, target, prog, target.span);
            remember_download(w, target);
        }
    }
    let remote_name = prog == "wget"
        && !args
            .iter()
            .any(|a| a.text == "-O" || a.text.starts_with("--output-document"))
        || args.iter().any(|a| {
            a.text == "-O" && prog == "curl"
                || long_is(&a.text, "--remote-name")
                || short_has(&a.text, 'O') && prog == "curl"
        });
    if remote_name {
        for url in operands(args)
            .into_iter()
            .filter(|a| a.text.contains("://"))
        {
            let name = url
                .text
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or("")
                .split(['?', '#'])
                .next()
                .unwrap_or("");
            if !name.is_empty() {
                let file = Word::literal(name, url.span);
                remember_download(w, &file);
            }
        }
    }
    Outcome::not(
        RuleId::NetworkDownload,
        format!("\"{prog}\" transfers data over the network"),
    )
    .with_flow(Flow {
        download: true,
        ..Flow::default()
    })
}

/// curl's and wget's options that take a value, short (curl's as in its manual, wget's as
/// getopt reads them) and long, so a cluster (`-so FILE`, `-so/x`) and an attached value
/// (`-oFILE`, `--output=FILE`) are read as the programs read them.
#[rustfmt::skip]
const CURL_VALUE: &[&str] = &[
    "-A", "-b", "-c", "-C", "-d", "-D", "-e", "-E", "-F", "-H", "-K", "-m", "-o", "-P", "-Q",
    "-r", "-T", "-t", "-u", "-U", "-w", "-x", "-X", "-y", "-Y", "-z",
    "--output", "--output-dir", "--dump-header", "--cookie-jar", "--trace", "--trace-ascii",
    "--stderr", "--etag-save", "--libcurl", "--hsts", "--alt-svc", "--config",
];
#[rustfmt::skip]
const WGET_VALUE: &[&str] = &[
    "-O", "-o", "-a", "-P", "-e", "-i", "-B", "-t", "-T", "-w", "-Q", "-U", "-l", "-A", "-R",
    "-D", "-X", "-I",
    "--output-document", "--output-file", "--append-output", "--directory-prefix",
    "--save-cookies", "--warc-file", "--rejected-log", "--hsts-file", "--execute",
];

/// The files curl or wget write besides standard output, in every spelling their parsers
/// accept, each with whether it receives the downloaded content (`-o`, `-O`): `curl -o/-oFILE/
/// --output[=]FILE`, `--output-dir`, `-D/--dump-header`, `-c/--cookie-jar`, `--trace`,
/// `--trace-ascii`, `--stderr`, `--etag-save`, `--libcurl`, `--hsts`, `--alt-svc`; `wget
/// -O/--output-document`, `-o/--output-file`, `-a/--append-output`, `-P/--directory-prefix`,
/// `--save-cookies`, `--warc-file`, `--rejected-log`, `--hsts-file`, and the same settings
/// given as wgetrc commands (`-e output_document=FILE`).
fn curl_wget_writes(prog: &str, args: &[Word]) -> Vec<(Word, bool)> {
    let with_value = if prog == "curl" {
        CURL_VALUE
    } else {
        WGET_VALUE
    };
    let mut out = Vec::new();
    for arg in super::args::getopt_args(args, with_value) {
        let super::args::Arg::Options(_, parsed) = arg else {
            continue;
        };
        for opt in parsed {
            let Some(value) = opt.value else { continue };
            let content = match (prog, opt.name.as_str()) {
                ("curl", "-o" | "--output" | "--output-dir")
                | ("wget", "-O" | "--output-document" | "-P" | "--directory-prefix") => true,
                ("curl", "-D" | "-c")
                | (
                    "curl",
                    "--dump-header" | "--cookie-jar" | "--trace" | "--trace-ascii" | "--stderr"
                    | "--etag-save" | "--libcurl" | "--hsts" | "--alt-svc",
                )
                | ("wget", "-o" | "-a")
                | (
                    "wget",
                    "--output-file" | "--append-output" | "--save-cookies" | "--warc-file"
                    | "--rejected-log" | "--hsts-file",
                ) => false,
                ("wget", "-e" | "--execute") => {
                    if let Some(target) = wgetrc_write(&value) {
                        out.push(target);
                    }
                    continue;
                }
                _ => continue,
            };
            out.push((value, content));
        }
    }
    out
}

/// The file a wgetrc command (`wget -e CMD`) makes wget write: `output_document`, `logfile`,
/// `dir_prefix`, `save_cookies`, `warc_file`, `rejected_log`, `hsts_file` (wget ignores `_`
/// and `-` in the name and its case).
fn wgetrc_write(command: &Word) -> Option<(Word, bool)> {
    let (name, value) = command.text.split_once('=')?;
    let name: String = name
        .trim()
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .collect::<String>()
        .to_ascii_lowercase();
    let content = match name.as_str() {
        "outputdocument" | "dirprefix" => true,
        "logfile" | "savecookies" | "warcfile" | "rejectedlog" | "hstsfile" => false,
        _ => return None,
    };
    let value = value.trim();
    let word = if command.dynamic {
        Word::computed(value, "", command.span)
    } else {
        Word::literal(value, command.span)
    };
    Some((word, content))
}

/// Records a file a download tool writes, so that running it later is recognised.
pub(crate) fn remember_download(w: &mut Walker, target: &Word) {
    let paths = crate::paths::resolve_all(target, &w.cwds, w.ctx);
    w.downloaded.extend(paths);
    w.downloaded.truncate(64);
}

/// Whether `file` is a file downloaded earlier in the script.
pub(crate) fn was_downloaded(w: &Walker, file: &Word) -> bool {
    !w.downloaded.is_empty()
        && crate::paths::resolve_all(file, &w.cwds, w.ctx)
            .iter()
            .any(|p| w.downloaded.contains(p))
}

fn raw_network(w: &mut Walker, cmd: &Cmd, prog: &str) -> Outcome {
    let args = &cmd.argv[1..];
    exfiltration(w, cmd, prog);
    let exec_flag = args.iter().any(|a| {
        let t = a.text.as_str();
        !a.dynamic
            && (short_has(t, 'e')
                || short_has(t, 'c') && prog != "socat"
                || long_is(t, "--exec")
                || long_is(t, "--sh-exec")
                || long_is(t, "--lua-exec"))
    });
    let socat_exec = prog == "socat"
        && args.iter().any(|a| {
            let lower = a.text.to_ascii_lowercase();
            lower.starts_with("exec:")
                || lower.starts_with("system:")
                || lower.contains(",exec:")
                || lower.starts_with("exec,")
        });
    if (exec_flag && prog != "telnet") || socat_exec {
        let msg = format!("\"{prog}\" connects a program to the network: a reverse or bind shell");
        w.reason(Class::Dangerous, RuleId::NetworkReverseShell, msg, cmd.span);
    }
    Outcome::not(
        RuleId::NetworkConnection,
        format!("\"{prog}\" opens a raw network connection"),
    )
    .with_flow(Flow {
        network: true,
        ..Flow::default()
    })
}

/// `ssh host CMD`: the command runs remotely, but it is still read so that a dangerous payload
/// is not hidden behind ssh.
fn ssh(w: &mut Walker, cmd: &Cmd) -> Outcome {
    exfiltration(w, cmd, "ssh");
    local_commands(w, &cmd.argv[1..]);
    Outcome::not(
        RuleId::NetworkRemoteCommand,
        "\"ssh\" runs commands on another machine",
    )
    .with_flow(Flow {
        network: true,
        ..Flow::default()
    })
}

/// Commands that ssh-based tools run on this machine: `-o ProxyCommand=…`, `-o LocalCommand=…`,
/// `-o KnownHostsCommand=…`, `rsync -e`/`--rsh`, `scp -S`.
fn local_commands(w: &mut Walker, args: &[Word]) {
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        let next = || args.get(i + 1).map(|n| n.text.clone()).unwrap_or_default();
        let option = match t {
            "-o" => Some(next()),
            "-e" | "--rsh" | "-S" => Some(format!("Program={}", next())),
            _ if t.starts_with("--rsh=") => Some(format!("Program={}", &t["--rsh=".len()..])),
            _ if t.starts_with("-o") => Some(t[2..].to_string()),
            _ => None,
        };
        let Some(option) = option else { continue };
        let Some((key, value)) = option.split_once(['=', ' ']) else {
            continue;
        };
        let runs = [
            "program",
            "proxycommand",
            "localcommand",
            "knownhostscommand",
        ];
        if runs.contains(&key.trim().to_ascii_lowercase().as_str()) {
            let value = value.trim().to_string();
            super::run_code(w, &value, a.span, &Flow::default());
        }
    }
}

/// Credentials named on the command line of a tool that sends data, or fed to it on stdin;
/// secret-looking variables and command output that read secrets in its arguments.
pub(crate) fn exfiltration(w: &mut Walker, cmd: &Cmd, prog: &str) {
    let args = &cmd.argv[1..];
    let from_stdin = cmd.input.credentials;
    let named = args.iter().find(|a| names_credentials(w, a));
    if let Some(word) = named {
        let msg = format!(
            "\"{prog}\" sends or exposes the credential file {}",
            word.text
        );
        w.reason(Class::Dangerous, RuleId::ExfilCredentials, msg, word.span);
    } else if from_stdin {
        let msg =
            format!("secrets (credential files or the environment) are piped into \"{prog}\"");
        w.reason(Class::Dangerous, RuleId::ExfilCredentials, msg, cmd.span);
    }
    for a in args {
        if a.flow.credentials {
            let msg = format!(
                "\"{prog}\" sends {}, computed from credential files or the environment",
                a.text
            );
            w.reason(Class::Dangerous, RuleId::ExfilCredentials, msg, a.span);
        } else if let Some(var) = secret_variable(&a.text).filter(|_| a.dynamic) {
            let msg = format!("\"{prog}\" sends the value of ${var}, which looks like a secret");
            w.reason(Class::Dangerous, RuleId::ExfilSecretVariable, msg, a.span);
        } else if DNS_TOOLS.contains(&prog)
            && a.dynamic
            && (a.text.contains("$(") || a.text.contains('`'))
        {
            let msg = format!(
                "\"{prog}\" looks up a name built from command output ({}): data leaves through DNS",
                a.text
            );
            w.reason(Class::Dangerous, RuleId::ExfilDns, msg, a.span);
        }
    }
}

/// Tools whose arguments reach the network as host names.
pub(crate) const DNS_TOOLS: &[&str] = &[
    "dig",
    "nslookup",
    "host",
    "drill",
    "ping",
    "ping6",
    "traceroute",
    "tracepath",
    "whois",
    "getent",
    "resolvectl",
    "delv",
    "kdig",
];

/// Name fragments of variables that hold secrets (`$GITHUB_TOKEN`, `${AWS_SECRET_ACCESS_KEY}`).
#[rustfmt::skip]
const SECRET_NAME_PARTS: &[&str] = &[
    "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "API_KEY", "APIKEY", "PRIVATE", "CREDENTIAL",
    "AUTH_", "COOKIE", "SESSION", "_PAT", "ACCESS_KEY", "SIGNING", "_KEY", "DATABASE_URL",
    "DSN", "WEBHOOK",
];

/// The first variable referenced in `text` whose name looks like a secret's.
pub(crate) fn secret_variable(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        let name_text = rest.strip_prefix('{').unwrap_or(rest);
        let name_text = name_text.trim_start_matches(['!', '#']);
        let end = name_text
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(name_text.len());
        let name = name_text[..end].to_ascii_uppercase();
        if name.len() > 2
            && SECRET_NAME_PARTS
                .iter()
                .any(|p| name.contains(p) || name.ends_with(p.trim_start_matches('_')))
            && !name.ends_with("_PATH")
            && !name.ends_with("_FILE")
        {
            return Some(name_text[..end].to_string());
        }
    }
    None
}
