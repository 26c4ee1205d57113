//! Secrets of this process: kept out of the kernel's view of it and out of its children.
//!
//! Anything running as the same user can read `/proc/<pid>/environ` and `/proc/<pid>/cmdline`
//! of gg and ggd — including the commands the agent runs. So at start-up ([`start`], first thing
//! in `main`) the binary takes the secret environment variables and the values of its secret
//! flags (`--api-key`, ggd's `--token`), writes them to a sealed memfd, and re-executes itself
//! with them removed from the environment and replaced by `[hidden]` on the command line. The
//! new image reads the memfd back and closes it before anything else runs. From then on:
//!
//! - [`args_os`] is the original command line (parse this, not `std::env::args_os`);
//! - [`var`] reads a variable, secret or not (use it, not `std::env::var`, for anything that
//!   may hold a secret: `OPENAI_API_KEY`, a provider's `apiKeyEnv`, `GGD_TOKEN`);
//! - [`scrubbed_env`] is the environment for a child: everything except secrets, minus what
//!   `env.allow` lets through. bash, jobs and the sandbox wrapper build their children's
//!   environment from it; MCP stdio servers get an even smaller one (`PATH`, `HOME`, their own
//!   configuration).
//!
//! Nothing is re-executed when there is nothing to hide, so `gg --version` in a clean
//! environment costs no extra `execve`.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::OnceLock;

/// The first argument of the re-executed image: `__gg-secrets-fd=<descriptor>`.
pub const HANDOVER_ARG: &str = "__gg-secrets-fd=";
/// What a secret flag value is replaced by on the re-executed command line.
pub const REDACTED: &str = "[hidden]";
/// gg's flags whose value is a secret.
pub const GG_SECRET_FLAGS: &[&str] = &["--api-key"];
/// ggd's flags whose value is a secret.
pub const GGD_SECRET_FLAGS: &[&str] = &["--token", "--api-key"];

/// Names of environment variables that hold a secret (matched case-insensitively; `*` is any
/// run of characters). These are hidden from `/proc/self/environ` and kept from children.
pub const SECRET_ENV_PATTERNS: &[&str] = &[
    "API_KEY",
    "APIKEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PRIVATE_KEY",
    "*_API_KEY",
    "*_APIKEY",
    "*_TOKEN",
    "*_SECRET*",
    "SECRET_*",
    "*PASSWORD*",
    "*PASSWD*",
    "*_PRIVATE_KEY*",
    "*_ACCESS_KEY*",
    "*_CREDENTIALS",
    "*_CREDENTIAL",
    "*_PAT",
    // Standard names that hold a secret without saying so in the words above (MYSQL_PWD,
    // DB_PASS, GPG_PASSPHRASE, CI_JOB_JWT, DOCKER_AUTH_CONFIG, SIGNING_KEY, STRIPE_SK,
    // SENTRY_DSN, CONNECTION_STRING): found by an attacker pass through a read-only `env`.
    "*_PWD",
    "*_PASS",
    "*PASSPHRASE*",
    "*_JWT",
    "*_JWT_*",
    "*_AUTH_CONFIG",
    "*_KEY",
    "*_SK",
    "*_DSN",
    "*CONNECTION_STRING*",
    "*COOKIE*",
    // Found by the next attacker pass: a GitHub token under `GH_AUTH`, a bearer token, a
    // Slack webhook URL (whoever has it posts as the integration).
    "*_AUTH",
    "*BEARER*",
    "*WEBHOOK*",
    // An agent socket is a key: whoever can talk to it can sign or decrypt with it.
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
];

/// Further names kept from children only: gg's own settings, which a child never needs and
/// which may name where keys live.
pub const OWN_ENV_PATTERNS: &[&str] = &["OPENAI_*", "GG_*", "GGD_*"];

/// Whether `name` alone marks a secret for a child (and is not explicitly allowed). A name that
/// is not UTF-8 cannot be checked against the patterns, so it is kept out.
pub fn is_secret_env(name: &OsStr, allow: &[String]) -> bool {
    let Some(name) = name.to_str() else {
        return true;
    };
    if allow.iter().any(|a| a.eq_ignore_ascii_case(name)) {
        return false;
    }
    let upper = name.to_ascii_uppercase();
    SECRET_ENV_PATTERNS
        .iter()
        .chain(OWN_ENV_PATTERNS)
        .any(|p| glob_match(p, &upper))
        || is_configured_key_variable(name)
}

/// Whether `name` is a provider's `apiKeyEnv` in `~/.gg/config.json`: whatever it is called, it
/// holds a key.
fn is_configured_key_variable(name: &str) -> bool {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES
        .get_or_init(configured_key_variables)
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name))
}

/// The `providers.*.apiKeyEnv` names of `$HOME/.gg/config.json`; none when it cannot be read (the
/// configuration's own loader reports a broken file later).
fn configured_key_variables() -> Vec<String> {
    let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else {
        return Vec::new();
    };
    let path = std::path::Path::new(&home).join(".gg").join("config.json");
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(config) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Vec::new();
    };
    let providers = config["providers"]
        .as_object()
        .into_iter()
        .flat_map(|providers| providers.values());
    // Every place the configuration names a key variable: each provider's, and the knowledge
    // base's embeddings endpoint's.
    providers
        .chain(std::iter::once(&config["kb"]["embeddings"]))
        .filter_map(|p| p["apiKeyEnv"].as_str())
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// Files gg read a secret from in this process (`--api-key-file`, `--token-file`,
/// `GG_API_KEY_FILE`, …): each joins the deny-read policy of every actor for the rest of the
/// session, as the home's credential stores do, wherever it lies.
static SECRET_FILES: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Records that a secret was read from `path` (see [`secret_files`]). The canonical path is
/// kept, and the path as given when it cannot be resolved.
pub fn add_secret_file(path: &std::path::Path) {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if let Ok(mut files) = SECRET_FILES.lock()
        && !files.contains(&path)
    {
        files.push(path);
    }
}

/// The files recorded by [`add_secret_file`], and the credential stores this process's
/// environment moves out of the home (`XDG_CONFIG_HOME`, `GNUPGHOME`, `KUBECONFIG`, …:
/// `sandbox::protected::relocated_credential_stores`, read once): every actor hides them as it
/// hides the home's own.
pub fn secret_files() -> Vec<std::path::PathBuf> {
    static RELOCATED: OnceLock<Vec<std::path::PathBuf>> = OnceLock::new();
    let relocated = RELOCATED.get_or_init(|| {
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        sandbox::protected::relocated_credential_stores(
            |name| std::env::var_os(name),
            home.as_deref(),
        )
        .into_iter()
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .collect()
    });
    let mut files = SECRET_FILES.lock().map(|f| f.clone()).unwrap_or_default();
    for path in relocated {
        if !files.contains(path) {
            files.push(path.clone());
        }
    }
    files
}

/// Records a directory of gg's own private state that lies outside `~/.gg` (a session directory
/// moved by `GG_SESSION_DIR` or `--session-dir`: past prompts and tool outputs): it joins the
/// deny-read policy of every actor, as `~/.gg` does. Not one that holds `cwd` or the home (it
/// would hide the project), nor `/`.
pub fn add_private_dir(path: &std::path::Path, cwd: &std::path::Path) {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let home = std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .map(|h| std::fs::canonicalize(&h).unwrap_or(h));
    let holds_cwd_or_home =
        cwd.starts_with(&path) || home.as_deref().is_some_and(|h| h.starts_with(&path));
    let under_gg_home = home
        .as_deref()
        .is_some_and(|h| path.starts_with(h.join(".gg")));
    if !path.is_absolute() || holds_cwd_or_home || under_gg_home {
        return;
    }
    add_secret_file(&path);
}

/// Whether the variable `name=value` must not reach a child: a secret name, or a value with a
/// URL that carries credentials (`postgres://user:pass@host`), unless `allow` names it.
pub fn is_secret_var(name: &OsStr, value: &OsStr, allow: &[String]) -> bool {
    if is_secret_env(name, allow) {
        return true;
    }
    let allowed = name
        .to_str()
        .is_some_and(|n| allow.iter().any(|a| a.eq_ignore_ascii_case(n)));
    !allowed && (has_url_credentials(value.as_bytes()) || has_token_shape(value.as_bytes()))
}

/// What the start-up hides from the process's own `/proc/self/environ`: secret names (not gg's
/// own settings such as `GG_SESSION_DIR`) and values with URL credentials.
fn hidden_at_start(name: &OsStr, value: &OsStr) -> bool {
    let secret_name = match name.to_str() {
        Some(n) => {
            let upper = n.to_ascii_uppercase();
            SECRET_ENV_PATTERNS.iter().any(|p| glob_match(p, &upper))
                || is_configured_key_variable(n)
        }
        None => false,
    };
    secret_name || has_url_credentials(value.as_bytes()) || has_token_shape(value.as_bytes())
}

/// Prefixes that issuers put on their tokens so that scanners find them (GitHub, GitLab, Slack,
/// OpenAI, Anthropic, Stripe, npm, PyPI, Hugging Face, AWS, Google), and the bearer scheme.
/// Whatever a variable is called, a value with one of these followed by a token's characters
/// is a secret.
const TOKEN_PREFIXES: &[&[u8]] = &[
    b"ghp_",
    b"gho_",
    b"ghu_",
    b"ghs_",
    b"ghr_",
    b"github_pat_",
    b"glpat-",
    b"xoxb-",
    b"xoxp-",
    b"xoxa-",
    b"xoxs-",
    b"xapp-",
    b"sk-",
    b"sk_live_",
    b"rk_live_",
    b"npm_",
    b"pypi-",
    b"hf_",
    b"AKIA",
    b"ASIA",
    b"AIza",
    b"Bearer ",
    b"bearer ",
];

/// Hosts whose URL paths are the credential (incoming webhooks).
const SECRET_URL_MARKERS: &[&[u8]] = &[
    b"hooks.slack.com/",
    b"discord.com/api/webhooks/",
    b"discordapp.com/api/webhooks/",
    b"webhook.office.com/",
];

/// Whether `value` holds a token by its shape: one of [`TOKEN_PREFIXES`] at the start of a word
/// followed by at least 16 token characters, a JSON Web Token (`eyJ…` with two dots), or a
/// webhook URL of [`SECRET_URL_MARKERS`].
pub fn has_token_shape(value: &[u8]) -> bool {
    let token_char = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.');
    if SECRET_URL_MARKERS
        .iter()
        .any(|m| memchr::memmem::find(value, m).is_some())
    {
        return true;
    }
    for (i, _) in value.iter().enumerate() {
        if i > 0 && token_char(&value[i - 1]) {
            continue;
        }
        let rest = &value[i..];
        for prefix in TOKEN_PREFIXES {
            if let Some(tail) = rest.strip_prefix(*prefix)
                && tail.iter().take_while(|b| token_char(b)).count() >= 16
            {
                return true;
            }
        }
        if let Some(tail) = rest.strip_prefix(b"eyJ") {
            let token: &[u8] = &tail[..tail.iter().take_while(|b| token_char(b)).count()];
            if token.len() >= 16 && token.iter().filter(|b| **b == b'.').count() == 2 {
                return true;
            }
        }
    }
    false
}

/// Whether `value` contains `scheme://userinfo@host` with a non-empty userinfo (a password, or a
/// token used as the user name as in `https://ghp_x@github.com`).
pub fn has_url_credentials(value: &[u8]) -> bool {
    let mut rest = value;
    while let Some(at) = memchr::memmem::find(rest, b"://") {
        let scheme_ok = at > 0
            && rest[..at]
                .iter()
                .rev()
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
                .count()
                > 0;
        let after = &rest[at + 3..];
        let authority_end = after
            .iter()
            .position(|b| matches!(b, b'/' | b'?' | b'#') || b.is_ascii_whitespace())
            .unwrap_or(after.len());
        let authority = &after[..authority_end];
        if scheme_ok
            && authority
                .iter()
                .rposition(|&b| b == b'@')
                .is_some_and(|i| i > 0)
        {
            return true;
        }
        rest = after;
    }
    false
}

fn glob_match(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, rest)) => {
            let Some(after_head) = text.strip_prefix(head) else {
                return false;
            };
            if rest.is_empty() {
                return true;
            }
            (0..=after_head.len())
                .filter(|&i| after_head.is_char_boundary(i))
                .any(|i| glob_match(rest, &after_head[i..]))
        }
    }
}

/// What the start-up took out of the kernel's view of the process.
struct Held {
    args: Vec<OsString>,
    vars: Vec<(OsString, OsString)>,
}

static HELD: OnceLock<Held> = OnceLock::new();

/// The command line as the user typed it, secrets included (in memory only).
pub fn args_os() -> Vec<OsString> {
    match HELD.get() {
        Some(held) => held.args.clone(),
        None => std::env::args_os().collect(),
    }
}

/// The variable `name`, whether it was hidden at start-up or is still in the environment.
/// `None` when unset or not UTF-8.
pub fn var(name: &str) -> Option<String> {
    let held = HELD.get().and_then(|held| {
        held.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    });
    match held {
        Some(v) => v.into_string().ok(),
        None => std::env::var(name).ok(),
    }
}

/// The whole environment as the process was started with, hidden secrets included.
pub fn vars_os() -> Vec<(OsString, OsString)> {
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    if let Some(held) = HELD.get() {
        vars.extend(held.vars.iter().cloned());
    }
    vars
}

/// The environment for a child process: everything except secrets that `allow` does not name.
pub fn scrubbed_env(allow: &[String]) -> Vec<(OsString, OsString)> {
    vars_os()
        .into_iter()
        .filter(|(name, value)| !is_secret_var(name, value, allow))
        .collect()
}

/// The command line with the value of every flag in `secret_flags` replaced by [`REDACTED`]
/// (`--flag value` and `--flag=value`), or `None` when there is none.
fn redact_args(args: &[OsString], secret_flags: &[&str]) -> Option<Vec<OsString>> {
    let mut out = Vec::with_capacity(args.len());
    let mut changed = false;
    let mut next_is_secret = false;
    for arg in args {
        if next_is_secret {
            out.push(OsString::from(REDACTED));
            changed = true;
            next_is_secret = false;
            continue;
        }
        let bytes = arg.as_bytes();
        let mut redacted = None;
        for flag in secret_flags {
            if bytes == flag.as_bytes() {
                next_is_secret = true;
            } else if let Some(rest) = bytes.strip_prefix(flag.as_bytes())
                && rest.first() == Some(&b'=')
            {
                redacted = Some(OsString::from(format!("{flag}={REDACTED}")));
            }
        }
        match redacted {
            Some(r) => {
                out.push(r);
                changed = true;
            }
            None => out.push(arg.clone()),
        }
    }
    changed.then_some(out)
}

/// Command lines that only print something and exit (`gg --version` stays one `execve`).
const QUICK_EXITS: &[&str] = &["--version", "-v", "--help", "-h"];

const MAGIC: &[u8] = b"gg-secrets-v1\n";
/// Larger than any real command line plus environment (the kernel caps both at a few MiB).
const MAX_PAYLOAD: u64 = 64 << 20;

fn encode(args: &[OsString], vars: &[(OsString, OsString)]) -> Vec<u8> {
    fn put(out: &mut Vec<u8>, bytes: &[u8]) {
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&(args.len() as u64).to_le_bytes());
    for a in args {
        put(&mut out, a.as_bytes());
    }
    out.extend_from_slice(&(vars.len() as u64).to_le_bytes());
    for (n, v) in vars {
        put(&mut out, n.as_bytes());
        put(&mut out, v.as_bytes());
    }
    out
}

type Decoded = (Vec<OsString>, Vec<(OsString, OsString)>);

fn decode(bytes: &[u8]) -> Option<Decoded> {
    struct Reader<'a>(&'a [u8]);
    impl Reader<'_> {
        fn number(&mut self) -> Option<usize> {
            let (head, rest) = self.0.split_first_chunk::<8>()?;
            self.0 = rest;
            usize::try_from(u64::from_le_bytes(*head)).ok()
        }
        fn bytes(&mut self) -> Option<OsString> {
            let len = self.number()?;
            if len > self.0.len() {
                return None;
            }
            let (head, rest) = self.0.split_at(len);
            self.0 = rest;
            Some(OsString::from_vec(head.to_vec()))
        }
    }
    let mut r = Reader(bytes.strip_prefix(MAGIC)?);
    let argc = r.number()?;
    let mut args = Vec::new();
    for _ in 0..argc {
        args.push(r.bytes()?);
    }
    let varc = r.number()?;
    let mut vars = Vec::new();
    for _ in 0..varc {
        let name = r.bytes()?;
        vars.push((name, r.bytes()?));
    }
    r.0.is_empty().then_some((args, vars))
}

/// Hides this process's secrets from `/proc` (see the module documentation). Call it first in
/// `main`, before any thread starts, with the binary's secret flags. Returns only when the
/// process may go on: in the re-executed image, or when there was nothing to hide. An error
/// means the secrets could not be hidden; the caller must stop.
pub fn start(secret_flags: &[&str]) -> Result<(), StartError> {
    let args: Vec<OsString> = std::env::args_os().collect();
    if let Some(fd) = args
        .get(1)
        .and_then(|a| a.as_bytes().strip_prefix(HANDOVER_ARG.as_bytes()))
    {
        let held = receive(fd)?;
        harden();
        return HELD.set(held).map_err(|_| StartError::HandedOverTwice);
    }
    if let [_, only] = args.as_slice()
        && QUICK_EXITS.iter().any(|q| only == q)
    {
        // Prints and exits without reading a secret or starting anything: not worth an execve.
        harden();
        return Ok(());
    }
    let (hidden, kept): (Vec<_>, Vec<_>) =
        std::env::vars_os().partition(|(n, v)| hidden_at_start(n, v));
    let redacted = redact_args(args.get(1..).unwrap_or_default(), secret_flags);
    if hidden.is_empty() && redacted.is_none() {
        harden();
        return Ok(());
    }
    let err = reexec(&args, &hidden, &kept, redacted)?;
    if !std::path::Path::new("/proc/self").exists() {
        // No /proc in this mount namespace: nothing here can read the environment through it,
        // so keep going with the secrets where they are.
        harden();
        return Ok(());
    }
    Err(StartError::ReExec(err))
}

/// Why [`start`] could not hide the secrets (the process must stop; the text is one line).
#[derive(Debug)]
pub enum StartError {
    /// The hand-over argument was given, but not by gg's own re-execution (the reason, where
    /// one is known).
    HandOver(Option<String>),
    /// The re-executed image was handed the secrets a second time.
    HandedOverTwice,
    /// A step of writing the secrets to the sealed memfd failed.
    Hide {
        step: &'static str,
        source: std::io::Error,
    },
    /// The re-execution itself failed.
    ReExec(std::io::Error),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::HandOver(None) => {
                write!(f, "{HANDOVER_ARG}… is gg's own start-up argument")
            }
            StartError::HandOver(Some(why)) => {
                write!(f, "{HANDOVER_ARG}… is gg's own start-up argument: {why}")
            }
            StartError::HandedOverTwice => f.write_str("secrets were handed over twice"),
            StartError::Hide { step, source } => {
                write!(f, "cannot hide secrets from /proc: {step}: {source}")
            }
            StartError::ReExec(error) => {
                write!(
                    f,
                    "cannot re-execute itself to hide secrets from /proc: {error}"
                )
            }
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Hide { source, .. } | StartError::ReExec(source) => Some(source),
            StartError::HandOver(_) | StartError::HandedOverTwice => None,
        }
    }
}

/// Makes `/proc/<pid>/{environ,mem,maps,fd}` of this process unreadable to other processes of
/// the same user (they become root's) and refuses ptrace attach from them, so the secrets in
/// memory stay there. Children are unaffected: `execve` makes them dumpable again.
fn harden() {
    #[cfg(target_os = "linux")]
    {
        let _ =
            rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    }
}

#[cfg(target_os = "linux")]
fn reexec(
    args: &[OsString],
    hidden: &[(OsString, OsString)],
    kept: &[(OsString, OsString)],
    redacted: Option<Vec<OsString>>,
) -> Result<std::io::Error, StartError> {
    use std::io::{Seek, SeekFrom, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;

    use rustix::fs::MemfdFlags;

    let payload = encode(args, hidden);
    // Not close-on-exec: the re-executed image inherits it, reads it and closes it.
    let fd = rustix::fs::memfd_create("gg-secrets", MemfdFlags::ALLOW_SEALING).map_err(|e| {
        StartError::Hide {
            step: "memfd_create",
            source: e.into(),
        }
    })?;
    let mut file = std::fs::File::from(fd);
    file.write_all(&payload)
        .and_then(|()| file.seek(SeekFrom::Start(0)).map(drop))
        .map_err(|source| StartError::Hide {
            step: "writing the memfd",
            source,
        })?;
    rustix::fs::fcntl_add_seals(&file, sealed()).map_err(|e| StartError::Hide {
        step: "sealing the memfd",
        source: e.into(),
    })?;
    let rest = redacted.unwrap_or_else(|| args.get(1..).unwrap_or_default().to_vec());
    let argv0 = args
        .first()
        .cloned()
        .unwrap_or_else(|| OsString::from("gg"));
    let err = std::process::Command::new("/proc/self/exe")
        .arg0(argv0)
        .arg(format!("{HANDOVER_ARG}{}", file.as_raw_fd()))
        .args(rest)
        .env_clear()
        .envs(kept.iter().map(|(n, v)| (n, v)))
        .exec();
    Ok(err)
}

#[cfg(not(target_os = "linux"))]
fn reexec(
    _args: &[OsString],
    _hidden: &[(OsString, OsString)],
    _kept: &[(OsString, OsString)],
    _redacted: Option<Vec<OsString>>,
) -> Result<std::io::Error, StartError> {
    // No /proc to hide from: macOS shows another process's environment only to root.
    Ok(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

#[cfg(target_os = "linux")]
fn sealed() -> rustix::fs::SealFlags {
    use rustix::fs::SealFlags;
    SealFlags::SEAL | SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE
}

#[cfg(target_os = "linux")]
fn receive(fd: &[u8]) -> Result<Held, StartError> {
    use std::io::Read;

    let bad = |why: &str| StartError::HandOver(Some(why.to_string()));
    let fd: i32 = std::str::from_utf8(fd)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("not a descriptor number"))?;
    let owned = sandbox::inherit::take_inherited_fd(fd)
        .ok_or_else(|| bad(&format!("descriptor {fd} was not handed over")))?;
    let file = std::fs::File::from(owned);
    // Only a memfd sealed as `start` seals it is accepted: nothing else can be mistaken for it.
    match rustix::fs::fcntl_get_seals(&file) {
        Ok(seals) if seals == sealed() => {}
        _ => return Err(bad(&format!("descriptor {fd} is not gg's sealed memfd"))),
    }
    let mut bytes = Vec::new();
    file.take(MAX_PAYLOAD)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(&format!("reading descriptor {fd}: {e}")))?;
    let (args, vars) = decode(&bytes).ok_or_else(|| bad("malformed hand-over"))?;
    Ok(Held { args, vars })
}

#[cfg(not(target_os = "linux"))]
fn receive(_fd: &[u8]) -> Result<Held, StartError> {
    Err(StartError::HandOver(None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn secret_names_cover_bare_and_suffixed_forms() {
        for name in [
            "API_KEY",
            "token",
            "SECRET",
            "PASSWORD",
            "PRIVATE_KEY",
            "GH_PAT",
            "SSH_AUTH_SOCK",
            "GPG_AGENT_INFO",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "GGD_TOKEN",
            "GG_SESSION_DIR",
            "MYSQL_PWD",
            "DB_PASS",
            "GPG_PASSPHRASE",
            "CI_JOB_JWT",
            "CI_JOB_JWT_V2",
            "DOCKER_AUTH_CONFIG",
            "SIGNING_KEY",
            "STRIPE_SK",
            "SENTRY_DSN",
            "AZURE_STORAGE_CONNECTION_STRING",
            "SESSION_COOKIE",
            "GOOGLE_APPLICATION_CREDENTIAL",
            "GH_AUTH",
            "BEARER",
            "SLACK_WEBHOOK_URL",
        ] {
            assert!(is_secret_env(name.as_ref(), &[]), "{name}");
        }
        for name in [
            "PATH",
            "TOKENIZER",
            "SECRETARY",
            "PATH_PATTERN",
            "HOME",
            "PWD",
            "OLDPWD",
            "TERM",
            "LANG",
            "KEYMAP",
            "PASSAGE",
        ] {
            assert!(!is_secret_env(name.as_ref(), &[]), "{name}");
        }
        assert!(!is_secret_env("GH_PAT".as_ref(), &["gh_pat".to_string()]));
    }

    #[test]
    fn values_shaped_like_tokens_are_secret_whatever_the_name() {
        for value in [
            "ghp_0123456789abcdefABCDEF0123456789abcd",
            "token github_pat_11ABCDEFG0123456789_abcdefghij",
            "Bearer abcdefghijklmnopqrstuvwxyz012345",
            "xoxb-1234567890-abcdefghijklmnop",
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
            "AKIAABCDEFGHIJKLMNOP",
            "https://hooks.slack.com/services/T000/B000/XXXXXXXX",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlX2hlcmU",
        ] {
            assert!(has_token_shape(value.as_bytes()), "{value}");
            assert!(
                is_secret_var("SETTING".as_ref(), value.as_ref(), &[]),
                "{value}"
            );
        }
        for value in [
            "/usr/bin:/bin",
            "en_US.UTF-8",
            "xterm-256color",
            "task-runner",
            "desk-top",
            "ask-me-anything-later-please",
            "eyJ",
            "https://example.com/hooks/x",
        ] {
            assert!(!has_token_shape(value.as_bytes()), "{value}");
        }
    }

    #[test]
    fn credential_urls_in_values_are_secret() {
        for value in [
            "postgres://u:p@db.example/app",
            "https://ghp_abc@github.com/x.git",
            "redis://:pw@127.0.0.1:6379",
            "a,mysql://root:x@h/db",
        ] {
            assert!(has_url_credentials(value.as_bytes()), "{value}");
            assert!(is_secret_var("DATABASE_URL".as_ref(), value.as_ref(), &[]));
        }
        for value in [
            "https://example.com/a@b",
            "git@github.com:x/y.git",
            "http://h/?u=a@b",
            "://@",
            "mailto:a@b",
        ] {
            assert!(!has_url_credentials(value.as_bytes()), "{value}");
        }
        assert!(!is_secret_var(
            "DATABASE_URL".as_ref(),
            "postgres://u:p@h/db".as_ref(),
            &["DATABASE_URL".to_string()]
        ));
    }

    #[test]
    fn own_settings_are_not_hidden_at_start_but_kept_from_children() {
        assert!(!hidden_at_start("GG_SESSION_DIR".as_ref(), "/x".as_ref()));
        assert!(!hidden_at_start(
            "OPENAI_BASE_URL".as_ref(),
            "http://h/v1".as_ref()
        ));
        assert!(hidden_at_start("OPENAI_API_KEY".as_ref(), "sk".as_ref()));
        assert!(hidden_at_start("X".as_ref(), "https://u:p@h".as_ref()));
    }

    #[test]
    fn secret_flag_values_are_redacted_in_both_spellings() {
        let args = os(&[
            "-p",
            "--api-key",
            "sk-1",
            "--api-key=sk-2",
            "hi",
            "--api-keyx=3",
        ]);
        assert_eq!(
            redact_args(&args, GG_SECRET_FLAGS).unwrap(),
            os(&[
                "-p",
                "--api-key",
                REDACTED,
                "--api-key=[hidden]",
                "hi",
                "--api-keyx=3"
            ])
        );
        assert_eq!(redact_args(&os(&["-p", "hi"]), GG_SECRET_FLAGS), None);
        assert_eq!(
            redact_args(&os(&["--token=t", "--api-key", "k"]), GGD_SECRET_FLAGS).unwrap(),
            os(&["--token=[hidden]", "--api-key", REDACTED])
        );
    }

    #[test]
    fn hand_over_round_trips_and_rejects_garbage() {
        let args = os(&["gg", "--api-key", "k\u{e9}"]);
        let vars = vec![(OsString::from("A_TOKEN"), OsString::from_vec(vec![0xff, 1]))];
        let bytes = encode(&args, &vars);
        assert_eq!(decode(&bytes), Some((args, vars)));
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        assert_eq!(decode(b"nope"), None);
        let mut long = bytes.clone();
        long.push(0);
        assert_eq!(decode(&long), None);
    }
}
