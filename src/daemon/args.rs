//! ggd's command line: the flags of `ggd`, `ggd install-service`, `uninstall-service` and
//! `status`, parsed with clap, and the checks clap cannot make (addresses, the token's sources).

use super::*;

/// The daemon flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flags {
    pub http: Option<String>,
    pub token: Option<String>,
    pub allow_remote: bool,
    pub exit_on_stdin_eof: bool,
    pub cwd: Option<PathBuf>,
    pub api_key: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub session_dir: Option<PathBuf>,
    pub no_skills: bool,
    pub no_memory: bool,
    pub no_context_files: bool,
    pub no_scheduler: bool,
    pub sandbox: bool,
    /// The daemon's default network policy for sandboxed runs (`--network`); a run's own
    /// `network` parameter still applies on top.
    pub network: Option<tools::network::NetworkMode>,
    /// Hosts added to the allow-list (`--allow-domain`, repeatable).
    pub allow_domains: Vec<String>,
    pub max_active_runs: usize,
    pub run_timeout: Duration,
    /// `--telegram`: serve the Telegram channel, and fail to start when it cannot.
    pub telegram: bool,
}

impl Flags {
    /// What the provider flags override of the config (`--model`, `--api-key`, `--base-url`), for
    /// every conversation the daemon starts: API runs, scheduled jobs, Telegram chats.
    pub fn overrides(&self) -> crate::app::config::Overrides {
        crate::app::config::Overrides {
            selection: self.model.clone(),
            api_key: self.api_key.clone(),
            base_url: self.base_url.clone(),
        }
    }
}

impl Default for Flags {
    fn default() -> Flags {
        Flags {
            http: None,
            token: None,
            allow_remote: false,
            exit_on_stdin_eof: false,
            cwd: None,
            api_key: None,
            base_url: None,
            model: None,
            session_dir: None,
            no_skills: false,
            no_memory: false,
            no_context_files: false,
            no_scheduler: false,
            sandbox: false,
            network: None,
            allow_domains: Vec::new(),
            max_active_runs: DEFAULT_MAX_ACTIVE_RUNS,
            run_timeout: DEFAULT_RUN_TIMEOUT,
            telegram: false,
        }
    }
}

/// A usage error (exit 2) or a failure (exit 1).
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    Usage(String),
    Failed(String),
}

/// The environment variable that may carry the HTTP bearer token (so it is not on the command
/// line, where other local users can read it).
pub const TOKEN_ENV: &str = "GGD_TOKEN";

/// ggd: the gg daemon. Serves the agent over JSON-RPC on stdio (the default) or HTTP + SSE
/// (--http).
#[derive(clap::Parser, Debug)]
#[command(
    name = "ggd",
    version,
    disable_version_flag = true,
    disable_help_subcommand = true,
    args_conflicts_with_subcommands = true,
    // Go-flag compatibility: a repeated option takes its last value, so a user's `--cwd` after
    // the one `install-service` injects wins.
    args_override_self = true,
    after_help = "The token may come from --token, --token-file FILE or the GGD_TOKEN environment \
                  variable; prefer the last two, which keep it out of the process list."
)]
struct DaemonCli {
    /// Print version.
    #[arg(short = 'v', long = "version", action = clap::ArgAction::Version)]
    version: Option<bool>,
    #[command(flatten)]
    args: DaemonArgs,
    #[command(subcommand)]
    command: Option<DaemonCommand>,
}

#[derive(clap::Subcommand, Debug)]
enum DaemonCommand {
    /// Write a user service (systemd, launchd) that runs ggd in HTTP mode with these flags.
    InstallService {
        /// The daemon flags for the service (must include --http); checked before writing.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "DAEMON FLAGS"
        )]
        flags: Vec<String>,
    },
    /// Disable and remove the user service.
    UninstallService,
    /// Exit 0 when a ggd holds the instance lock, 1 otherwise.
    Status,
}

/// The daemon's flags, as typed (see [`Flags`] for the resolved form).
#[derive(clap::Args, Debug, Clone, Default)]
struct DaemonArgs {
    /// Serve HTTP + SSE on ADDR (host:port) instead of JSON-RPC on stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Bearer token clients must send in HTTP mode (visible in the process list; prefer
    /// --token-file or GGD_TOKEN).
    #[arg(long, value_name = "TOKEN", conflicts_with = "token_file")]
    token: Option<String>,
    /// Read the HTTP bearer token from FILE (first line).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Allow a non-loopback HTTP address.
    #[arg(long)]
    allow_remote: bool,
    /// Exit when stdin closes (for a parent process such as an editor).
    #[arg(long)]
    exit_on_stdin_eof: bool,
    /// The working directory of sessions and runs (default: the current one).
    #[arg(short = 'C', long = "cwd", value_name = "DIR")]
    cwd: Option<PathBuf>,
    #[command(flatten)]
    provider: crate::app::provider_flags::ProviderArgs,
    /// Session root directory (default: $GG_SESSION_DIR, else ~/.gg/sessions).
    #[arg(long, value_name = "DIR")]
    session_dir: Option<PathBuf>,
    /// Skip .agents/skills discovery.
    #[arg(long)]
    no_skills: bool,
    /// No memory (tools, prompt blocks, memory.* methods) and no user profile, whatever
    /// ~/.gg/config.json says.
    #[arg(long)]
    no_memory: bool,
    /// Skip AGENTS.md discovery.
    #[arg(long)]
    no_context_files: bool,
    /// Do not run scheduled jobs in this daemon.
    #[arg(long)]
    no_scheduler: bool,
    /// Run bash (and MCP servers) under the sandbox.
    #[arg(long)]
    sandbox: bool,
    /// Network policy of sandboxed runs: off, on or allow-list (default: `network` in
    /// ~/.gg/config.json, else allow-list).
    #[arg(long, value_name = "MODE", value_parser = |t: &str| t.parse::<tools::network::NetworkMode>())]
    network: Option<tools::network::NetworkMode>,
    /// Allow HOST (`*.example.com` wildcards) through the allow-list proxy; repeatable.
    #[arg(long = "allow-domain", value_name = "HOST")]
    allow_domain: Vec<String>,
    /// Most runs executing at once.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_ACTIVE_RUNS,
          value_parser = positive_count)]
    max_active_runs: usize,
    /// Longest a run may take (e.g. 90s, 30m, 1h).
    #[arg(long, value_name = "DURATION", default_value = "30m",
          value_parser = |t: &str| runtime::parse_duration(t))]
    run_timeout: Duration,
    /// Answer the Telegram chats of the "telegram" section of ~/.gg/config.json (on by default
    /// when the section exists); with this flag, ggd does not start without it.
    #[arg(long)]
    telegram: bool,
}

fn positive_count(text: &str) -> Result<usize, String> {
    text.parse::<usize>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("must be a positive integer, got {text:?}"))
}

/// The `GGD_TOKEN` environment variable, when set and not empty (as it was at start-up: the
/// secret hand-over removes it from this process's environment).
pub(super) fn env_token() -> Option<String> {
    tools::secrets::var(TOKEN_ENV).filter(|t| !t.is_empty())
}

impl DaemonArgs {
    /// Resolves secrets (token: `--token`, `--token-file`, `GGD_TOKEN`; API key: `--api-key`,
    /// `--api-key-file`/`GG_API_KEY_FILE`) and checks the combinations clap cannot.
    fn resolve(self, env_token: Option<String>) -> Result<Flags, Failure> {
        let usage = Failure::Usage;
        let token = match (self.token, &self.token_file) {
            (Some(token), _) => Some(token),
            (None, Some(file)) => Some(
                crate::app::provider_flags::read_secret_file(file, "--token-file")
                    .map_err(usage)?,
            ),
            (None, None) => env_token,
        };
        let api_key = self.provider.api_key().map_err(usage)?;
        let flags = Flags {
            http: self.http,
            token,
            allow_remote: self.allow_remote,
            exit_on_stdin_eof: self.exit_on_stdin_eof,
            cwd: self.cwd,
            api_key,
            base_url: self.provider.base_url,
            model: self.provider.model,
            session_dir: self.session_dir,
            no_skills: self.no_skills,
            no_memory: self.no_memory,
            no_context_files: self.no_context_files,
            no_scheduler: self.no_scheduler,
            sandbox: self.sandbox,
            network: self.network,
            allow_domains: self.allow_domain,
            max_active_runs: self.max_active_runs,
            run_timeout: self.run_timeout,
            telegram: self.telegram,
        };
        if let Some(addr) = flags.http.as_deref().filter(|a| !a.is_empty()) {
            if flags.token.as_deref().is_none_or(str::is_empty) {
                return Err(usage(
                    "--token is required in HTTP mode (or --token-file, or GGD_TOKEN)".to_string(),
                ));
            }
            if !flags.allow_remote && !is_loopback_addr(addr) {
                return Err(usage(
                    "HTTP address must be loopback unless --allow-remote is set".to_string(),
                ));
            }
        }
        Ok(flags)
    }
}

/// What a command line asks ggd to do.
pub(super) enum Invocation {
    /// Boxed: the flags are ten times the size of the other variants.
    Serve(Box<Flags>),
    InstallService(Vec<String>),
    UninstallService,
    Status,
}

/// Parses a command line (without the program name). `Err` carries clap's rendered message
/// (help and version included, with exit code 0) or a usage error.
pub(super) fn parse(args: &[String], env_token: Option<String>) -> Result<Invocation, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let mut cmd = DaemonCli::command();
    if crate::app::no_color_env() {
        cmd = cmd.color(clap::ColorChoice::Never);
    }
    let argv = std::iter::once("ggd".to_string()).chain(args.iter().cloned());
    let matches = cmd
        .try_get_matches_from_mut(argv)
        .map_err(|e| positional(e, &mut cmd))?;
    let cli = DaemonCli::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))?;
    let mut usage = |m: String| cmd.error(clap::error::ErrorKind::ValueValidation, m);
    match cli.command {
        Some(DaemonCommand::InstallService { flags }) => {
            // The service must start: its flags are checked now, not at the next boot.
            let checked = match flags.first() {
                Some(first) if first == "--" => &flags[1..],
                _ => &flags[..],
            };
            let mut sub = DaemonCli::command();
            let argv = std::iter::once("ggd".to_string()).chain(checked.iter().cloned());
            let matches = sub
                .try_get_matches_from_mut(argv)
                .map_err(|e| positional(e, &mut sub))?;
            let service = DaemonCli::from_arg_matches(&matches).map_err(|e| e.format(&mut sub))?;
            if service.command.is_some() {
                return Err(usage(
                    "install-service takes daemon flags, not a command".into(),
                ));
            }
            match service.args.resolve(None) {
                Ok(_) | Err(Failure::Failed(_)) => Ok(Invocation::InstallService(flags)),
                Err(Failure::Usage(m)) => Err(usage(m)),
            }
        }
        Some(DaemonCommand::UninstallService) => Ok(Invocation::UninstallService),
        Some(DaemonCommand::Status) => Ok(Invocation::Status),
        None => match cli.args.resolve(env_token) {
            Ok(flags) => Ok(Invocation::Serve(Box::new(flags))),
            Err(Failure::Usage(m) | Failure::Failed(m)) => Err(usage(m)),
        },
    }
}

/// clap reports a stray word as an unknown argument or subcommand; ggd's message names the rule.
fn positional(error: clap::Error, cmd: &mut clap::Command) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let word = match error.kind() {
        ErrorKind::InvalidSubcommand | ErrorKind::UnknownArgument | ErrorKind::ArgumentConflict => {
            error
                .get(ContextKind::InvalidSubcommand)
                .or_else(|| error.get(ContextKind::InvalidArg))
        }
        _ => None,
    };
    let Some(ContextValue::String(word)) = word else {
        return error;
    };
    if word.starts_with('-') {
        return error;
    }
    if cmd.find_subcommand(word).is_some() {
        return cmd.error(
            ErrorKind::ArgumentConflict,
            format!("'{word}' takes no daemon flags"),
        );
    }
    let hint = match error.get(ContextKind::SuggestedSubcommand) {
        Some(ContextValue::Strings(s)) if !s.is_empty() => format!(" (did you mean '{}'?)", s[0]),
        Some(ContextValue::String(s)) => format!(" (did you mean '{s}'?)"),
        _ => String::new(),
    };
    cmd.error(
        ErrorKind::UnknownArgument,
        format!("ggd does not accept positional arguments: '{word}'{hint}"),
    )
}

/// Parses the daemon flags (`--flag value` or `--flag=value`), as `ggd` does before serving.
/// Usage errors carry clap's message without its usage footer.
pub fn parse_flags(args: &[String]) -> Result<Flags, Failure> {
    match parse(args, None) {
        Ok(Invocation::Serve(flags)) => Ok(*flags),
        Ok(_) => Err(Failure::Usage(
            "expected daemon flags, got a command".to_string(),
        )),
        Err(e) => Err(Failure::Usage(error_line(&e))),
    }
}

/// The first line of a clap error, without the `error: ` prefix.
fn error_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let line = text.lines().next().unwrap_or_default();
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}

/// Splits `host:port` (`[v6]:port` too).
fn split_host(addr: &str) -> Option<(&str, &str)> {
    let (host, port) = addr.rsplit_once(':')?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    Some((host, port))
}

/// `localhost` (any case) or a loopback IP; anything unparsable is not loopback.
pub fn is_loopback_addr(addr: &str) -> bool {
    let Some((host, _)) = split_host(addr) else {
        return false;
    };
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The socket address to bind (`localhost` binds IPv4 loopback).
pub(super) fn bind_addr(addr: &str) -> Result<SocketAddr, String> {
    let (host, port) = split_host(addr).ok_or_else(|| format!("invalid HTTP address {addr:?}"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("invalid port in {addr:?}"))?;
    let ip: IpAddr = if host.eq_ignore_ascii_case("localhost") {
        IpAddr::from([127, 0, 0, 1])
    } else if host.is_empty() {
        IpAddr::from([0, 0, 0, 0])
    } else {
        host.parse()
            .map_err(|_| format!("invalid host in {addr:?}"))?
    };
    Ok(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flag_errors() {
        let cases: [(&[&str], &str); 9] = [
            (
                &["extra"],
                "ggd does not accept positional arguments: 'extra'",
            ),
            (
                &["--sandbox", "extra"],
                "ggd does not accept positional arguments: 'extra'",
            ),
            (&["statsu"], "did you mean 'status'?"),
            (
                &["--http", "127.0.0.1:1"],
                "--token is required in HTTP mode",
            ),
            (
                &["--http", "0.0.0.0:1", "--token", "t"],
                "HTTP address must be loopback unless --allow-remote is set",
            ),
            (
                &["--http=example.com:1", "--token=t"],
                "HTTP address must be loopback unless --allow-remote is set",
            ),
            (
                &["--max-active-runs", "0"],
                "--max-active-runs <N>': must be a positive integer, got \"0\"",
            ),
            (&["--bogus"], "unexpected argument '--bogus' found"),
            (
                &["--token", "a", "--token-file", "f"],
                "cannot be used with",
            ),
        ];
        for (input, want) in cases {
            match parse_flags(&args(input)) {
                Err(Failure::Usage(message)) => {
                    assert!(message.contains(want), "{input:?}: {message}");
                }
                other => panic!("{input:?}: {other:?}"),
            }
        }
        // Usage errors exit 2; help and version exit 0.
        for (input, code) in [
            (&["--bogus"][..], 2),
            (&["--help"], 0),
            (&["-h"], 0),
            (&["--version"], 0),
        ] {
            let Err(e) = parse(&args(input), None) else {
                panic!("{input:?} parsed");
            };
            assert_eq!(e.exit_code(), code, "{input:?}");
        }
    }

    #[test]
    fn network_flags_set_the_daemon_default() {
        let flags = parse_flags(&args(&[
            "--network",
            "off",
            "--allow-domain",
            "a.example",
            "--allow-domain=*.b.example",
        ]))
        .unwrap();
        assert_eq!(flags.network, Some(tools::network::NetworkMode::Off));
        assert_eq!(flags.allow_domains, ["a.example", "*.b.example"]);
        assert_eq!(parse_flags(&args(&[])).unwrap().network, None);
        let err = parse_flags(&args(&["--network", "sometimes"])).unwrap_err();
        assert!(
            matches!(&err, Failure::Usage(m) if m.contains("--network")),
            "{err:?}"
        );
    }

    #[test]
    fn the_token_comes_from_the_flag_the_file_or_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "from-file\n").unwrap();
        let file = file.to_str().unwrap();
        let serve =
            |input: &[&str], env: Option<&str>| match parse(&args(input), env.map(String::from)) {
                Ok(Invocation::Serve(flags)) => flags.token,
                Ok(_) => panic!("{input:?}: not serve"),
                Err(e) => panic!("{input:?}: {e}"),
            };
        let http = ["--http", "127.0.0.1:1"];
        assert_eq!(
            serve(&[&http[..], &["--token", "t"]].concat(), Some("env")).as_deref(),
            Some("t")
        );
        assert_eq!(
            serve(&[&http[..], &["--token-file", file]].concat(), Some("env")).as_deref(),
            Some("from-file")
        );
        assert_eq!(serve(&http, Some("env")).as_deref(), Some("env"));
        assert!(parse(&args(&http), None).is_err(), "no token at all");
        let err = parse_flags(&args(&["--token-file", "/nonexistent/t"])).unwrap_err();
        assert!(
            matches!(&err, Failure::Usage(m) if m.contains("--token-file /nonexistent/t")),
            "{err:?}"
        );
    }

    #[test]
    fn install_service_checks_its_flags_and_a_later_cwd_wins() {
        let ok =
            |input: &[&str]| matches!(parse(&args(input), None), Ok(Invocation::InstallService(_)));
        assert!(ok(&[
            "install-service",
            "--",
            "--http",
            "127.0.0.1:1",
            "--token",
            "t"
        ]));
        assert!(ok(&[
            "install-service",
            "--http",
            "127.0.0.1:1",
            "--token",
            "t"
        ]));
        assert!(!ok(&[
            "install-service",
            "--http",
            "127.0.0.1:1",
            "--tokn",
            "t"
        ]));
        assert!(!ok(&[
            "install-service",
            "--http",
            "0.0.0.0:1",
            "--token",
            "t"
        ]));
        let flags = parse_flags(&args(&["--cwd", "/a", "--cwd", "/b"])).unwrap();
        assert_eq!(flags.cwd.as_deref(), Some(std::path::Path::new("/b")));
    }

    #[test]
    fn flags_parse() {
        let flags = parse_flags(&args(&[
            "--http=[::1]:9",
            "--token",
            "t",
            "--run-timeout",
            "2s",
            "--max-active-runs=3",
            "--no-scheduler",
        ]))
        .unwrap();
        assert_eq!(flags.http.as_deref(), Some("[::1]:9"));
        assert_eq!(flags.run_timeout, Duration::from_secs(2));
        assert_eq!(flags.max_active_runs, 3);
        assert!(flags.no_scheduler);
        assert!(
            parse_flags(&args(&[
                "--http",
                "0.0.0.0:1",
                "--token",
                "t",
                "--allow-remote"
            ]))
            .is_ok()
        );
    }

    #[test]
    fn loopback_addresses() {
        for (addr, want) in [
            ("127.0.0.1:80", true),
            ("LocalHost:1", true),
            ("[::1]:1", true),
            ("127.1.2.3:1", true),
            ("0.0.0.0:1", false),
            (":8080", false),
            ("10.0.0.1:1", false),
            ("garbage", false),
        ] {
            assert_eq!(is_loopback_addr(addr), want, "{addr}");
        }
    }
}
