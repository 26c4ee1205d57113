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
    if matches!(prog, "curl" | "wget") {
        config_files(w, cmd, prog);
    }
    transfer(w, cmd, prog)
}

/// `curl -K FILE`/`--config FILE` and `wget --config=FILE` take options from a file. Where its
/// text is visible (`curl -K - <<< 'output = ~/.bashrc'`, `-K <(printf …)`, `-K<(echo …)`, a
/// file written earlier in the script), each line is judged as the option it stands for, by
/// the rules of the command line. Where it is not, a config can say anything an option can
/// (`output = ~/.bashrc`, `upload-file = ~/.ssh/id_rsa`), so one made on this command line out
/// of sight is judged the worst a config can do, dangerous; a file at rest is not
/// ([`plain_config_file`]): reading it is no more than running a script kept there.
fn config_files(w: &mut Walker, cmd: &Cmd, prog: &str) {
    let mut files = Vec::new();
    for arg in super::args::getopt_args(&cmd.argv[1..], value_options(prog)) {
        let super::args::Arg::Options(_, parsed) = arg else {
            continue;
        };
        files.extend(parsed.into_iter().filter_map(|opt| {
            let config = opt.name == "--config" || (prog == "curl" && opt.name == "-K");
            opt.value.filter(|_| config)
        }));
    }
    // The files read with no option: curl's `$CURL_HOME/.curlrc`, `$XDG_CONFIG_HOME/curlrc`
    // and `$HOME/.curlrc`, wget's `$WGETRC` and `$HOME/.wgetrc`, which a moved variable points
    // at a file written earlier (`HOME=/tmp/h curl …` after writing `/tmp/h/.curlrc`).
    let defaults: &[(&str, &str)] = if prog == "curl" {
        &[
            ("CURL_HOME", "/.curlrc"),
            ("XDG_CONFIG_HOME", "/curlrc"),
            ("HOME", "/.curlrc"),
        ]
    } else {
        &[("WGETRC", ""), ("HOME", "/.wgetrc")]
    };
    // Only the files named on the command line are judged when unseen: a default one is read
    // whatever the command says, and a moved HOME alone names no new file's content.
    let named = files.len();
    for (name, file) in defaults {
        if let Some(dir) = w.vars.get(name) {
            files.push(Word::literal(&format!("{dir}{file}"), cmd.span));
        }
    }
    for (i, file) in files.into_iter().enumerate() {
        let Some(text) = super::output::visible_file_text(w, &cmd.input, &file) else {
            if i < named && !plain_config_file(cmd, &file) {
                let msg = format!(
                    "\"{prog}\" reads options from {}, whose content is made where the classifier \
                     cannot read it: a config can write any file or send any file",
                    file.text
                );
                w.reason(
                    Class::Dangerous,
                    RuleId::NetworkHiddenConfig,
                    msg,
                    file.span,
                );
            }
            continue;
        };
        let mut argv = vec![cmd.argv[0].clone()];
        for line in text.lines() {
            argv.extend(config_line_args(prog, line, file.span));
        }
        // Judged as options of the command itself; a config file the lines name in turn is not
        // followed (it could name itself).
        transfer(w, &Cmd::of_words(argv, Flow::default(), cmd.span), prog);
    }
}

/// Whether a config file whose text is not visible is a file at rest: a literal path that is
/// not a device or descriptor (`/dev/fd/3`, `/proc/self/fd/0`). Its content was made by an
/// earlier command, judged when it ran, as a script's is (`bash x.sh` is not asked about
/// either). Standard input is judged as the file redirected to it (`curl -K - < c.cfg`), and is
/// plain when nothing feeds it (the terminal a person types at). A computed path (`"$CFG"`), a
/// process substitution (`<(cat …)`, `<(base64 -d …)`) or standard input fed otherwise (`… |
/// curl -K -`, a here-string with a substitution) is a config made on this command line, out
/// of sight.
fn plain_config_file(cmd: &Cmd, file: &Word) -> bool {
    if super::tools::is_stdin(file) {
        let redirected = cmd
            .redirects
            .iter()
            .rev()
            .find(|r| r.op == "<" && (r.fd.is_empty() || r.fd == "0"));
        return match redirected.and_then(|r| r.target.as_ref()) {
            Some(target) => !super::tools::is_stdin(target) && plain_config_file(cmd, target),
            None => !cmd.input.fed,
        };
    }
    !file.dynamic && !file.text.starts_with("/dev/") && !file.text.starts_with("/proc/")
}

/// One line of a curl config file or a wgetrc as command-line words. curl: `# comment`,
/// `name = value`, `name: value`, `name value` or `-o value`, a long name written with or
/// without its dashes, a value in double quotes with backslash escapes. wgetrc: `name = value`,
/// which `-e name=value` gives the same way.
fn config_line_args(prog: &str, line: &str, span: crate::Span) -> Vec<Word> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Vec::new();
    }
    if prog == "wget" {
        return vec![Word::literal("-e", span), Word::literal(line, span)];
    }
    let name_end = line
        .find(|c: char| c.is_whitespace() || c == '=' || c == ':')
        .unwrap_or(line.len());
    let (name, rest) = line.split_at(name_end);
    let rest = rest.trim_start();
    let rest = rest.strip_prefix(['=', ':']).map_or(rest, str::trim_start);
    let option = if name.starts_with('-') {
        name.to_string()
    } else {
        format!("--{name}")
    };
    let mut words = vec![Word::literal(&option, span)];
    let value = match rest.strip_prefix('"') {
        Some(quoted) => unquote_config_value(quoted),
        None => rest.split_whitespace().next().unwrap_or("").to_string(),
    };
    if !value.is_empty() {
        words.push(Word::literal(&value, span));
    }
    words
}

/// The text of a double-quoted curl config value (after its opening quote): up to the closing
/// quote, with `\\`, `\"`, `\t`, `\n`, `\r` and `\v` decoded as curl does.
fn unquote_config_value(quoted: &str) -> String {
    let mut out = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('t') => out.push('\t'),
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some('v') => out.push('\u{b}'),
                Some(other) => out.push(other),
                None => break,
            },
            other => out.push(other),
        }
    }
    out
}

fn transfer(w: &mut Walker, cmd: &Cmd, prog: &str) -> Outcome {
    let args = &cmd.argv[1..];
    exfiltration(w, cmd, prog);
    if prog == "wget" {
        wgetrc_commands(w, cmd);
    }
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
    "--save-cookies", "--warc-file", "--rejected-log", "--hsts-file", "--execute", "--config",
];

fn value_options(prog: &str) -> &'static [&'static str] {
    if prog == "curl" {
        CURL_VALUE
    } else {
        WGET_VALUE
    }
}

/// The files curl or wget write besides standard output, in every spelling their parsers
/// accept, each with whether it receives the downloaded content (`-o`, `-O`): `curl -o/-oFILE/
/// --output[=]FILE`, `--output-dir`, `-D/--dump-header`, `-c/--cookie-jar`, `--trace`,
/// `--trace-ascii`, `--stderr`, `--etag-save`, `--libcurl`, `--hsts`, `--alt-svc`; `wget
/// -O/--output-document`, `-o/--output-file`, `-a/--append-output`, `-P/--directory-prefix`,
/// `--save-cookies`, `--warc-file`, `--rejected-log`, `--hsts-file` (the same settings given
/// as wgetrc commands, `-e output_document=FILE`, are read as these by [`wgetrc_commands`]).
fn curl_wget_writes(prog: &str, args: &[Word]) -> Vec<(Word, bool)> {
    let mut out = Vec::new();
    for arg in super::args::getopt_args(args, value_options(prog)) {
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
                // `-w '%output{FILE}…'` (`%output{>>FILE}` appends): the rest of the write-out
                // text goes to FILE.
                ("curl", "-w" | "--write-out") => {
                    for (at, _) in value.text.match_indices("%output{") {
                        let rest = &value.text[at + "%output{".len()..];
                        let file = rest.split('}').next().unwrap_or(rest);
                        let file = file.strip_prefix(">>").unwrap_or(file);
                        out.push((
                            Word {
                                text: file.to_string(),
                                ..value.clone()
                            },
                            false,
                        ));
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

/// A wgetrc command `name = value` as its name (wget ignores `_` and `-` in it, and its case)
/// and its value, computed when the command is. `None` when the known text holds no `=`: no
/// command at all, or one whose name is computed.
fn wgetrc_setting(command: &Word) -> Option<(String, Word)> {
    let known = if command.dynamic {
        &command.prefix
    } else {
        &command.text
    };
    let (name, value) = known.split_once('=')?;
    let name: String = name
        .trim()
        .chars()
        .filter(|c| *c != '_' && *c != '-')
        .collect::<String>()
        .to_ascii_lowercase();
    let word = if command.dynamic {
        // The source text after the first `=`, and the known part of the value as its prefix.
        let source = command.text.split_once('=').map_or("", |(_, v)| v);
        Word::computed(source.trim(), value.trim_start(), command.span)
    } else {
        Word::literal(value.trim(), command.span)
    };
    Some((name, word))
}

/// `wget -e CMD`/`--execute CMD`: every wgetrc command is an option in disguise
/// (`output_document=F` is `--output-document=F`, `post_file=F` is `--post-file=F`). Each one
/// wget knows is judged as the option it stands for, by the rules of the command line; the
/// commands that take no file and run nothing are known harmless. Any other command, or one
/// whose name is computed or that has no `=`, is judged the worst a setting can do: it may
/// write or send any file. (A wgetrc file's lines come here too, as `-e LINE`.)
fn wgetrc_commands(w: &mut Walker, cmd: &Cmd) {
    let mut options = Vec::new();
    for arg in super::args::getopt_args(&cmd.argv[1..], WGET_VALUE) {
        let super::args::Arg::Options(_, parsed) = arg else {
            continue;
        };
        for value in parsed
            .into_iter()
            .filter(|opt| matches!(opt.name.as_str(), "-e" | "--execute"))
            .filter_map(|opt| opt.value)
        {
            // What the classifier cannot read, or a command not known to be harmless and not
            // one that stands for an option: the worst a setting can do.
            let unknown = |w: &mut Walker, what: &str| {
                let msg = format!(
                    "\"wget -e {}\" is a wgetrc command {what}: it may write or send any file",
                    value.text
                );
                w.reason(
                    Class::Dangerous,
                    RuleId::NetworkUnknownSetting,
                    msg,
                    value.span,
                );
            };
            let Some((name, setting)) = wgetrc_setting(&value) else {
                unknown(w, "the classifier cannot read");
                continue;
            };
            if WGETRC_HARMLESS.contains(&name.as_str()) {
                continue;
            }
            let Some((_, option)) = WGETRC_AS_OPTION.iter().find(|(n, _)| *n == name) else {
                unknown(w, "not known to be harmless");
                continue;
            };
            let text = format!("{option}={}", setting.text);
            let mut word = if setting.dynamic {
                Word::computed(&text, &format!("{option}={}", setting.prefix), value.span)
            } else {
                Word::literal(&text, value.span)
            };
            word.flow = value.flow.clone();
            options.push(word);
        }
    }
    if options.is_empty() {
        return;
    }
    let mut argv = vec![cmd.argv[0].clone()];
    argv.extend(options);
    transfer(w, &Cmd::of_words(argv, cmd.input.clone(), cmd.span), "wget");
}

/// wgetrc commands (their names as [`wgetrc_setting`] gives them) that take a file, a program
/// or text sent out, each with the option it stands for, so the rules of the command line
/// judge it.
#[rustfmt::skip]
const WGETRC_AS_OPTION: &[(&str, &str)] = &[
    ("outputdocument", "--output-document"), ("dirprefix", "--directory-prefix"),
    ("logfile", "--output-file"), ("savecookies", "--save-cookies"), ("warcfile", "--warc-file"),
    ("rejectedlog", "--rejected-log"), ("hstsfile", "--hsts-file"), ("postfile", "--post-file"),
    ("bodyfile", "--body-file"), ("input", "--input-file"), ("loadcookies", "--load-cookies"),
    ("certificate", "--certificate"), ("privatekey", "--private-key"),
    ("cacertificate", "--ca-certificate"), ("cadirectory", "--ca-directory"),
    ("crlfile", "--crl-file"), ("randomfile", "--random-file"), ("egdfile", "--egd-file"),
    ("pinnedpubkey", "--pinnedpubkey"), ("warctempdir", "--warc-tempdir"),
    ("warccdxdedup", "--warc-dedup"), ("useaskpass", "--use-askpass"),
    ("postdata", "--post-data"), ("bodydata", "--body-data"), ("header", "--header"),
    ("warcheader", "--warc-header"),
];

/// wgetrc commands that take no file, run no program and send nothing of this machine's:
/// retries, timeouts, recursion and naming choices, progress and logging levels, credentials
/// given literally (as `--user`), and the proxy settings, which the environment variables
/// `http_proxy=… wget` and `curl -x` already set without being asked about.
#[rustfmt::skip]
const WGETRC_HARMLESS: &[&str] = &[
    "accept", "acceptregex", "addhostdir", "adjustextension", "alwaysrest", "askpassword",
    "authnochallenge", "backupconverted", "backups", "base", "bindaddress", "cache",
    "certificatetype", "checkcertificate", "ciphers", "compression", "connecttimeout",
    "contentdisposition", "contentonerror", "continue", "convertfileonly", "convertlinks",
    "cookies", "cutdirs", "debug", "defaultpage", "deleteafter", "dirstruct", "dnscache",
    "dnstimeout", "domains", "dotbytes", "dotsinline", "dotspacing", "dotstyle",
    "excludedirectories", "excludedomains", "followftp", "followtags", "forcehtml",
    "ftppasswd", "ftppassword", "ftpuser", "glob", "hsts", "htmlextension", "httpkeepalive",
    "httppasswd", "httppassword", "httpsonly", "httpuser", "ifmodifiedsince", "ignorecase",
    "ignorelength", "ignoretags", "includedirectories", "inet4only", "inet6only", "iri",
    "keepbadhash", "keepsessioncookies", "limitrate", "localencoding", "login", "maxredirect",
    "method", "mirror", "netrc", "noclobber", "noparent", "numtries", "pagerequisites",
    "passiveftp", "passwd", "password", "preferfamily", "preservepermissions",
    "privatekeytype", "progress", "protocoldirectories", "quiet", "quota", "randomwait",
    "readtimeout", "reclevel", "recursive", "referer", "regextype", "reject", "rejectregex",
    "relativeonly", "remoteencoding", "removelisting", "reportspeed", "restrictfilenames",
    "retrsymlinks", "retryconnrefused", "retryonhttperror", "robots", "saveheaders",
    "secureprotocol", "serverresponse", "showalldnsentries", "showprogress", "spanhosts",
    "spider", "startpos", "strictcomments", "timeout", "timestamping", "tries",
    "trustservernames", "unlink", "user", "useragent", "useservertimestamps", "verbose",
    "wait", "waitretry", "warccdx", "warccompression", "warcdigests", "warckeeplog",
    "warcmaxsize", "xattr",
    "httpproxy", "httpsproxy", "ftpproxy", "noproxy", "useproxy", "proxyuser", "proxypasswd",
    "proxypassword",
];

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
    let named = args
        .iter()
        .find(|a| names_credentials(w, a) || super::secrets::names_saved_secrets(w, a));
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
