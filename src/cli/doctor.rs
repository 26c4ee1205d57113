//! `gg doctor [--online] [--json]`: one screen that says what works here and why not.
//!
//! Every answer comes from the code that does the work, never from a second copy of it: the
//! sandbox crate's probes ([`sandbox::probe`]), its choice of level ([`sandbox::level_for`]) and
//! self-test ([`sandbox::self_test::prove`]), the helper it would start
//! ([`sandbox::helper_image`]), the browser tool's search for Chromium, the config loader and
//! provider selection, ggd's single-instance lock, and the MCP client's start-up. Only the
//! bubblewrap version and the kernel's user-namespace settings are read here: no probe needs them,
//! a person does.
//!
//! Exit status: 1 when a check fails, that is when something the configuration (or the
//! environment: `GG_SANDBOX_BACKEND`, `GG_CHROMIUM`, `GG_API_KEY_FILE`) asks for cannot work; 0
//! otherwise, warnings included. Secrets are never printed: API keys and key files' contents are
//! replaced by `[hidden]` (key file *paths* are shown).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::app::config::Config;
use crate::cli::terminal::{Stream, colour_on};
use crate::display::visible_inline;

/// `gg doctor` arguments.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Also send one `GET {baseURL}/models` to the selected provider (nothing is sent without it).
    #[arg(long)]
    online: bool,
    /// One JSON object on stdout: `{"status", "checks": [{"name", "status", "detail"}], "config"}`.
    #[arg(long)]
    json: bool,
}

/// How long MCP servers get to start and list their tools here (each step), and the provider to
/// answer: a diagnosis that hangs is no diagnosis.
const MCP_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
const ONLINE_TIMEOUT: Duration = Duration::from_secs(15);

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
enum Status {
    Ok,
    Skipped,
    Warn,
    Fail,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Skipped => "skipped",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }

    fn colour(self) -> &'static str {
        match self {
            Status::Ok => "32",
            Status::Skipped => "2",
            Status::Warn => "33",
            Status::Fail => "1;31",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct Check {
    name: String,
    status: Status,
    detail: String,
}

fn check(name: &str, status: Status, detail: impl Into<String>) -> Check {
    Check {
        name: name.to_string(),
        status,
        detail: detail.into(),
    }
}

pub fn run(args: DoctorArgs) -> ExitCode {
    let home = crate::tools::security::home_dir();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("gg doctor: {e}");
            return ExitCode::from(1);
        }
    };
    let mut secrets = Vec::new();
    let mut checks = Vec::new();

    let config = Config::load(&home);
    let config_path = crate::app::config::gg_home(&home).join("config.json");
    checks.push(match &config {
        Ok(c) if c.from_file => check(
            "config",
            Status::Ok,
            format!("{}: valid", config_path.display()),
        ),
        Ok(_) => check(
            "config",
            Status::Ok,
            format!(
                "no {}: defaults, provider openai from OPENAI_BASE_URL and OPENAI_API_KEY",
                config_path.display()
            ),
        ),
        Err(e) => check("config", Status::Fail, e.clone()),
    });
    let config = config.ok();
    if let Some(c) = &config {
        secrets.extend(c.providers.values().filter_map(|p| p.api_key.clone()));
    }

    let provider = provider_checks(&home, config.as_ref(), args.online, &runtime, &mut secrets);
    checks.extend(provider);

    let facts = SandboxFacts::gather();
    let wants_sandbox = config.as_ref().is_some_and(|c| c.sandbox);
    checks.extend(sandbox_checks(&facts, wants_sandbox));
    checks.push(helper_check());
    checks.push(chromium_check(config.as_ref()));
    checks.push(ggd_check(&home));
    checks.extend(mcp_checks(&home, wants_sandbox, &runtime, &mut secrets));

    let view = config.as_ref().map(merged_view);
    let report = Report::new(checks, view, &secrets);
    let text = if args.json {
        format!("{}\n", report.json())
    } else {
        report.text(colour_on(Stream::Stdout))
    };
    // A reader that stopped early (`gg doctor | head -3`) is no failure of the checks.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
    if report.status() == Status::Fail {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The checks, and the merged configuration, with every secret replaced.
struct Report {
    checks: Vec<Check>,
    config: Option<Value>,
}

impl Report {
    fn new(mut checks: Vec<Check>, config: Option<Value>, secrets: &[String]) -> Report {
        // Short values (a flag, a port) would hide ordinary words; a key is never that short.
        let secrets: Vec<&str> = secrets
            .iter()
            .map(String::as_str)
            .filter(|s| s.len() >= 8)
            .collect();
        let redact = |text: &str| {
            secrets.iter().fold(text.to_string(), |t, s| {
                t.replace(s, crate::secrets::REDACTED)
            })
        };
        for c in &mut checks {
            c.detail = redact(&c.detail);
        }
        let config = config.and_then(|v| serde_json::from_str(&redact(&v.to_string())).ok());
        Report { checks, config }
    }

    /// The worst status of any check (`skipped` counts as `ok`).
    fn status(&self) -> Status {
        self.checks
            .iter()
            .map(|c| c.status)
            .max()
            .map_or(Status::Ok, |s| {
                if s == Status::Skipped { Status::Ok } else { s }
            })
    }

    fn json(&self) -> Value {
        json!({
            "status": self.status(),
            "checks": self.checks,
            "config": self.config,
        })
    }

    fn text(&self, colour: bool) -> String {
        let paint = |status: Status| {
            let word = format!("{:<7}", status.word());
            if colour {
                format!("\x1b[{}m{word}\x1b[0m", status.colour())
            } else {
                word
            }
        };
        let width = self.checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
        let mut out = String::new();
        for c in &self.checks {
            out.push_str(&format!(
                "{} {:<width$}  {}\n",
                paint(c.status),
                visible_inline(&c.name),
                visible_inline(&c.detail)
            ));
        }
        let count = |s: Status| self.checks.iter().filter(|c| c.status == s).count();
        let (failed, warned) = (count(Status::Fail), count(Status::Warn));
        out.push_str(&match (failed, warned) {
            (0, 0) => "\neverything gg is set up to use works here\n".to_string(),
            (0, w) => format!("\nworks, with {w} warning(s): gg runs, but see above\n"),
            (f, _) => format!(
                "\n{f} check(s) failed: something the configuration asks for cannot work (exit 1)\n"
            ),
        });
        if let Some(Value::Object(config)) = &self.config {
            out.push_str("\nconfig (merged with the defaults; secrets hidden):\n");
            for (key, value) in config {
                out.push_str(&format!(
                    "  {key}: {}\n",
                    visible_inline(&value.to_string())
                ));
            }
        }
        out
    }
}

/// The configuration gg runs with, in the shape of `config.json`, every default filled in and
/// every API key replaced by `[hidden]`.
fn merged_view(config: &Config) -> Value {
    let providers: serde_json::Map<String, Value> = config
        .providers
        .iter()
        .map(|(name, entry)| {
            let mut value = serde_json::to_value(entry).unwrap_or(Value::Null);
            if entry.api_key.as_deref().is_some_and(|k| !k.is_empty()) {
                value["apiKey"] = json!(crate::secrets::REDACTED);
            }
            (name.clone(), value)
        })
        .collect();
    json!({
        "default": config.default_selection,
        "providers": providers,
        "context": config.context,
        "sandbox": config.sandbox,
        // The mode in force (absent means allow-list); the hosts are only the user's additions
        // to the built-in list.
        "network": crate::tools::network::NetworkPolicy::resolve(&config.network, None, &[], None)
            .map(|policy| policy.mode)
            .ok(),
        "allowDomains": config.network.allow_domains.clone().unwrap_or_default(),
        "env": config.env,
        "tools": config.tools,
        "memory": config.memory,
        "artifacts": config.artifacts,
        "library": config.library,
        "kb": config.kb,
        "browser": config.browser,
    })
}

/// The selected provider (`provider`), and with `--online` whether it answers
/// (`provider-online`).
fn provider_checks(
    home: &Path,
    config: Option<&Config>,
    online: bool,
    runtime: &tokio::runtime::Runtime,
    secrets: &mut Vec<String>,
) -> Vec<Check> {
    let Some(config) = config else {
        return vec![
            check("provider", Status::Skipped, "the config is invalid"),
            check("provider-online", Status::Skipped, "the config is invalid"),
        ];
    };
    let key_file = std::env::var_os(super::args::API_KEY_FILE_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let api_key = match &key_file {
        Some(file) => match super::args::read_secret_file(file, super::args::API_KEY_FILE_ENV) {
            Ok(key) => Some(key),
            Err(e) => {
                return vec![
                    check("provider", Status::Fail, e),
                    check("provider-online", Status::Skipped, "no usable API key"),
                ];
            }
        },
        None => None,
    };
    let overrides = crate::app::config::Overrides {
        api_key,
        ..Default::default()
    };
    let selection = match config.select(home, None, &overrides) {
        Ok(selection) => selection,
        Err(e) => {
            return vec![
                check("provider", Status::Fail, e),
                check("provider-online", Status::Skipped, "no provider selected"),
            ];
        }
    };
    secrets.push(selection.api_key.clone());
    let base_url = shown_url(&selection.base_url, secrets);
    let label = selection.label();
    if selection.api_key.is_empty() {
        return vec![
            check(
                "provider",
                Status::Fail,
                format!(
                    "{label} at {base_url}: no API key (set OPENAI_API_KEY, \"apiKey\" or \
                     \"apiKeyEnv\" in config.json, or GG_API_KEY_FILE / --api-key-file)"
                ),
            ),
            check("provider-online", Status::Skipped, "no API key"),
        ];
    }
    let source = match &key_file {
        Some(file) => format!(" from {}", file.display()),
        None => String::new(),
    };
    let mut checks = vec![check(
        "provider",
        Status::Ok,
        format!("{label} at {base_url}, API key set{source} (hidden)"),
    )];
    checks.push(if online {
        runtime.block_on(reach(&selection, &base_url))
    } else {
        check(
            "provider-online",
            Status::Skipped,
            format!("not asked: --online sends one GET {base_url}/models"),
        )
    });
    checks
}

/// `url` as it may be shown: credentials in it (`https://user:pass@host`) are hidden, and
/// remembered as secrets so that an error message quoting them is redacted too.
fn shown_url(url: &str, secrets: &mut Vec<String>) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            secrets.push(parsed.username().to_string());
            secrets.extend(parsed.password().map(str::to_string));
            let _ = parsed.set_username(crate::secrets::REDACTED);
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        _ => url.to_string(),
    }
}

/// One `GET {baseURL}/models` with the key, as the provider's own requests carry it.
async fn reach(selection: &crate::app::config::Selection, shown: &str) -> Check {
    let name = "provider-online";
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = match reqwest::Client::builder()
        .connect_timeout(ONLINE_TIMEOUT)
        .timeout(ONLINE_TIMEOUT)
        // A redirect would carry the key elsewhere, as for the provider's own requests.
        .redirect(reqwest::redirect::Policy::none())
        .build()
    {
        Ok(client) => client,
        Err(e) => return check(name, Status::Fail, format!("HTTP client: {e}")),
    };
    let url = format!("{}/models", selection.base_url.trim_end_matches('/'));
    let started = Instant::now();
    let response = client
        .get(&url)
        .bearer_auth(&selection.api_key)
        .header("Accept", "application/json")
        .send()
        .await;
    let response = match response {
        Ok(response) => response,
        Err(e) => {
            return check(
                name,
                Status::Fail,
                format!("GET {shown}/models: {}", error_chain(&e)),
            );
        }
    };
    let status = response.status();
    let elapsed = crate::duration::clock(started.elapsed());
    let body = response.bytes().await.unwrap_or_default();
    if !status.is_success() {
        let hint = match status.as_u16() {
            401 | 403 => ": the API key was refused",
            404 => ": no /models here; is the base URL right (usually ending in /v1)?",
            _ => "",
        };
        return check(
            name,
            Status::Fail,
            format!("GET {shown}/models answered HTTP {}{hint}", status.as_u16()),
        );
    }
    let ids: Option<Vec<String>> = serde_json::from_slice::<Value>(&body).ok().and_then(|v| {
        v["data"].as_array().map(|data| {
            data.iter()
                .filter_map(|m| m["id"].as_str().map(str::to_string))
                .collect()
        })
    });
    match ids {
        Some(ids) if ids.contains(&selection.model) => check(
            name,
            Status::Ok,
            format!(
                "GET {shown}/models: HTTP 200 in {elapsed}, {} model(s), {} among them",
                ids.len(),
                selection.model
            ),
        ),
        Some(ids) => check(
            name,
            Status::Warn,
            format!(
                "GET {shown}/models: HTTP 200 in {elapsed}, {} model(s), but not {}",
                ids.len(),
                selection.model
            ),
        ),
        None => check(
            name,
            Status::Warn,
            format!("GET {shown}/models: HTTP 200 in {elapsed}, but not an OpenAI model list"),
        ),
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// What the sandbox crate found here, gathered once so the checks below are plain functions of
/// it.
#[derive(Debug, Clone)]
struct SandboxFacts {
    probe: sandbox::Probe,
    /// `bwrap --version` of the bubblewrap found.
    bwrap_version: Option<String>,
    /// The kernel's Landlock ABI, or why there is none.
    landlock_abi: Result<i64, String>,
    /// The kernel settings that allow or refuse unprivileged user namespaces.
    userns: Vec<(String, String)>,
    /// `GG_SANDBOX_BACKEND`, which forces the level of every sandboxed command.
    forced: Result<Option<sandbox::Backend>, String>,
    /// The level commands get, with the reasons stronger ones were not used.
    level: Result<(sandbox::Level, Vec<String>), String>,
    /// What the self-test found at that level (`None`: no level to test).
    unproven: Option<Vec<String>>,
    /// How many protections the self-test saw hold.
    proven: usize,
}

impl SandboxFacts {
    fn gather() -> SandboxFacts {
        let probe = sandbox::probe();
        let bwrap_version = probe.bwrap.as_ref().ok().and_then(|info| {
            let out = std::process::Command::new(&info.path)
                .arg("--version")
                .stdin(std::process::Stdio::null())
                .output()
                .ok()?;
            let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
            (!text.is_empty()).then_some(text)
        });
        #[cfg(target_os = "linux")]
        let landlock_abi = sandbox::fs_rules::kernel_abi().map_err(|e| e.to_string());
        #[cfg(not(target_os = "linux"))]
        let landlock_abi = Err("Landlock exists only on Linux".to_string());
        let userns = [
            "/proc/sys/user/max_user_namespaces",
            "/proc/sys/kernel/unprivileged_userns_clone",
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        ]
        .iter()
        .filter_map(|path| {
            let value = std::fs::read_to_string(path).ok()?;
            let name = path.trim_start_matches("/proc/sys/").replace('/', ".");
            Some((name, value.trim().to_string()))
        })
        .collect();
        let forced = match std::env::var("GG_SANDBOX_BACKEND") {
            Ok(name) if !name.is_empty() => name
                .parse()
                .map(Some)
                .map_err(|e| format!("GG_SANDBOX_BACKEND: {e}")),
            _ => Ok(None),
        };
        let backend = forced
            .clone()
            .ok()
            .flatten()
            .unwrap_or(sandbox::Backend::Auto);
        let level = sandbox::level_for(backend).map_err(|e| e.to_string());
        let (unproven, proven) = match &level {
            Ok((l, _)) if *l != sandbox::Level::None && forced.is_ok() => {
                let report = sandbox::self_test::prove(backend, sandbox::self_test::unchanged);
                let holds = report
                    .lines
                    .iter()
                    .filter(|l| l.verdict == sandbox::self_test::Verdict::Holds)
                    .count();
                (Some(report.unproven()), holds)
            }
            _ => (None, 0),
        };
        SandboxFacts {
            probe,
            bwrap_version,
            landlock_abi,
            userns,
            forced,
            level,
            unproven,
            proven,
        }
    }
}

/// The sandbox's checks. `wants_sandbox`: the config turns the sandbox on for every command, so
/// no working level is a failure rather than a warning. A level forced by `GG_SANDBOX_BACKEND`
/// that does not work fails too: every confined command would fail.
fn sandbox_checks(facts: &SandboxFacts, wants_sandbox: bool) -> Vec<Check> {
    use sandbox::{Backend, Level};
    let forced = facts.forced.clone().ok().flatten();
    let needed = |backend: Backend| {
        if forced == Some(backend) {
            Status::Fail
        } else {
            Status::Warn
        }
    };
    let mut checks = Vec::new();

    checks.push(match &facts.probe.bwrap {
        Ok(info) => {
            let version = facts.bwrap_version.as_deref().unwrap_or("version unknown");
            let userns = if info.disable_userns {
                ""
            } else {
                " (without --disable-userns: seccomp alone refuses new user namespaces)"
            };
            check(
                "bubblewrap",
                Status::Ok,
                format!("{} ({version}): works{userns}", info.path.display()),
            )
        }
        Err(e) => check("bubblewrap", needed(Backend::Bwrap), e.to_string()),
    });

    let settings = facts
        .userns
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ");
    let disabled = facts.userns.iter().any(|(k, v)| {
        (k.ends_with("max_user_namespaces") || k.ends_with("unprivileged_userns_clone")) && v == "0"
    });
    checks.push(match (&facts.probe.bwrap, disabled) {
        (Ok(_), _) => check(
            "user-namespaces",
            Status::Ok,
            format!("usable: bubblewrap made one ({settings})"),
        ),
        (Err(_), true) => check(
            "user-namespaces",
            Status::Warn,
            format!("disabled by the kernel ({settings}): bubblewrap cannot isolate"),
        ),
        (Err(sandbox::ProbeError::NotFound(_)), false) => check(
            "user-namespaces",
            Status::Skipped,
            format!("not tried without bubblewrap (kernel settings: {settings})"),
        ),
        (Err(e), false) => check(
            "user-namespaces",
            Status::Warn,
            format!("bubblewrap could not use one: {e} ({settings})"),
        ),
    });

    checks.push(match (&facts.landlock_abi, &facts.probe.landlock) {
        (Ok(abi), Ok(report)) => {
            let enforcement = report
                .split_whitespace()
                .find(|w| w.starts_with("landlock="))
                .unwrap_or("landlock=enforced");
            check(
                "landlock",
                Status::Ok,
                format!("kernel ABI {abi}; the helper's trial: {enforcement}"),
            )
        }
        (Ok(abi), Err(e)) => check(
            "landlock",
            needed(Backend::Landlock),
            format!("kernel ABI {abi}, but the helper's trial failed: {e}"),
        ),
        (Err(e), _) => check("landlock", needed(Backend::Landlock), e.clone()),
    });

    #[cfg(target_os = "linux")]
    let denied = sandbox::seccomp::deny_list(sandbox::Network::Off).len();
    #[cfg(not(target_os = "linux"))]
    let denied = 0;
    checks.push(match (&facts.probe.landlock, &facts.probe.bwrap) {
        (Ok(_), _) | (_, Ok(_)) => check(
            "seccomp",
            Status::Ok,
            format!("the helper installed its filter ({denied} system calls refused)"),
        ),
        (Err(e), _) if e.to_string().contains("seccomp") => {
            check("seccomp", Status::Warn, e.to_string())
        }
        (Err(e), _) => check(
            "seccomp",
            Status::Skipped,
            format!("not tried: the helper did not run ({e})"),
        ),
    });

    let scope = if wants_sandbox {
        "every bash command runs confined (\"sandbox\": true)"
    } else {
        "commands classified read-only run confined; --sandbox confines the rest"
    };
    let why = |reasons: &[String]| {
        if reasons.is_empty() {
            String::new()
        } else {
            format!(": {}", reasons.join("; "))
        }
    };
    let forced_note = if forced.is_some() {
        " forced by GG_SANDBOX_BACKEND"
    } else {
        ""
    };
    checks.push(match (&facts.forced, &facts.level) {
        (Err(e), _) => check(
            "sandbox-level",
            Status::Fail,
            format!("{e}: every sandboxed command fails"),
        ),
        (Ok(_), Err(e)) => check("sandbox-level", Status::Fail, e.clone()),
        (Ok(_), Ok((Level::None, reasons))) => check(
            "sandbox-level",
            if wants_sandbox || forced.is_some_and(|b| b != Backend::None) {
                Status::Fail
            } else {
                Status::Warn
            },
            format!("none{forced_note}: commands run unconfined{}", why(reasons)),
        ),
        (Ok(_), Ok((level, reasons))) => check(
            "sandbox-level",
            Status::Ok,
            format!("{level}{forced_note}{}; {scope}", why(reasons)),
        ),
    });

    checks.push(match &facts.unproven {
        None => check("sandbox-self-test", Status::Skipped, "no level to test"),
        Some(unproven) if unproven.is_empty() => check(
            "sandbox-self-test",
            Status::Ok,
            format!(
                "{} protections proven with canaries, none fails (gg sandbox --self-test shows \
                 the table)",
                facts.proven
            ),
        ),
        Some(unproven) => check(
            "sandbox-self-test",
            if wants_sandbox {
                Status::Fail
            } else {
                Status::Warn
            },
            format!(
                "{}; without a person to decide, no confined command runs (gg sandbox \
                 --self-test)",
                unproven.join("; ")
            ),
        ),
    });
    checks
}

/// `gg-sandbox-helper` beside this binary, as the sandbox finds it.
fn helper_check() -> Check {
    #[cfg(target_os = "linux")]
    {
        let beside = std::env::current_exe()
            .ok()
            .and_then(|exe| std::fs::canonicalize(exe).ok())
            .and_then(|exe| exe.parent().map(|d| d.join(sandbox::HELPER_BINARY)));
        match (sandbox::helper_image(), beside) {
            (Ok(image), _) if image.separate => check(
                "helper",
                Status::Ok,
                format!("{} (this build)", image.path.display()),
            ),
            (Ok(_), _) if std::env::var_os(sandbox::SELF_HELPER_ENV).is_some() => check(
                "helper",
                Status::Ok,
                format!(
                    "{} is set: gg itself serves as the helper",
                    sandbox::SELF_HELPER_ENV
                ),
            ),
            (Ok(_), Some(beside)) if beside.exists() => check(
                "helper",
                Status::Warn,
                format!(
                    "{} is not of this build, so gg itself serves as the helper (slower to start \
                     each sandboxed command); install gg and the helper together",
                    beside.display()
                ),
            ),
            (Ok(_), beside) => check(
                "helper",
                Status::Warn,
                format!(
                    "{} not found, so gg itself serves as the helper (slower to start each \
                     sandboxed command); `cargo install --path .` installs it beside gg",
                    beside.map_or_else(
                        || sandbox::HELPER_BINARY.to_string(),
                        |p| p.display().to_string()
                    )
                ),
            ),
            (Err(e), _) => check("helper", Status::Warn, e.to_string()),
        }
    }
    #[cfg(not(target_os = "linux"))]
    check("helper", Status::Skipped, "used on Linux only")
}

/// The Chromium the browser tools would start.
fn chromium_check(config: Option<&Config>) -> Check {
    let browser = config.map(|c| c.browser.clone()).unwrap_or_default();
    if !browser.enabled {
        return check(
            "chromium",
            Status::Skipped,
            "the browser tools are off (\"browser\": {\"enabled\": false})",
        );
    }
    // Where the browser tool takes it from when it is named rather than searched for.
    let named = match &browser.executable {
        Some(path) => Some(("browser.executable", path.clone())),
        None => std::env::var_os("GG_CHROMIUM")
            .filter(|v| !v.is_empty())
            .map(|path| ("GG_CHROMIUM", PathBuf::from(path))),
    };
    match (
        crate::tools::browser::process::find_executable(browser.executable.as_deref()),
        named,
    ) {
        (Some(path), Some((source, _))) => check(
            "chromium",
            Status::Ok,
            format!("{} (from {source})", path.display()),
        ),
        (Some(path), None) => check("chromium", Status::Ok, path.display().to_string()),
        (None, Some((source, path))) => check(
            "chromium",
            Status::Fail,
            format!(
                "{source} {} is not an executable file: the browser tools are not offered",
                path.display()
            ),
        ),
        (None, None) => check(
            "chromium",
            Status::Warn,
            format!(
                "none of {} on PATH: the browser tools are not offered (install Chromium, or set \
                 \"browser\": {{\"executable\": …}})",
                crate::tools::browser::process::CANDIDATES.join(", ")
            ),
        ),
    }
}

/// Whether ggd runs, as its single-instance lock records it.
fn ggd_check(home: &Path) -> Check {
    match crate::app::lock::daemon_alive(home) {
        Ok(true) => {
            let pid = std::fs::read_to_string(crate::app::lock::pid_path(home))
                .map(|s| s.trim().to_string())
                .unwrap_or_default();
            // Only the port of `gg web`'s record: its token is a secret.
            let web = std::fs::read_to_string(crate::app::config::gg_home(home).join("web.json"))
                .ok()
                .and_then(|text| serde_json::from_str::<Value>(&text).ok())
                .and_then(|state| state["port"].as_u64())
                .map(|port| format!(", gg web's on 127.0.0.1:{port}"))
                .unwrap_or_default();
            check("ggd", Status::Ok, format!("running (pid {pid}{web})"))
        }
        Ok(false) => check(
            "ggd",
            Status::Ok,
            "not running (gg web starts one; scheduled jobs fire only while one runs)",
        ),
        Err(e) => check("ggd", Status::Warn, format!("cannot tell: {e}")),
    }
}

/// Starts every configured MCP server as a session would, lists its tools, and stops it.
fn mcp_checks(
    home: &Path,
    sandboxed: bool,
    runtime: &tokio::runtime::Runtime,
    secrets: &mut Vec<String>,
) -> Vec<Check> {
    let path = crate::mcp::config_path(home);
    if !path.exists() {
        return vec![check(
            "mcp",
            Status::Ok,
            format!("no servers configured ({})", path.display()),
        )];
    }
    // Values a server gets in its environment are often tokens; a failing server's stderr may
    // repeat them.
    if let Ok(entries) = std::fs::read_to_string(&path)
        .map_err(|e| e.to_string())
        .and_then(|text| crate::mcp::config::parse(&text))
    {
        for entry in entries {
            if let Ok(crate::mcp::ServerSpec::Stdio { env, .. }) = entry.spec {
                secrets.extend(env.into_values());
            }
        }
    }
    let mut options = crate::mcp::ConnectOptions::new(
        home,
        crate::tools::registry::SandboxSetting::enabled(sandboxed),
    );
    options.startup_timeout = MCP_STARTUP_TIMEOUT;
    let statuses = runtime.block_on(crate::mcp::list(&path, &options));
    if statuses.is_empty() {
        return vec![check(
            "mcp",
            Status::Ok,
            format!("no servers configured ({})", path.display()),
        )];
    }
    statuses
        .into_iter()
        .map(|status| {
            // `list` reports an unusable file as one entry named after the file.
            let name = if status.name == path.display().to_string() {
                "mcp".to_string()
            } else {
                format!("mcp:{}", crate::mcp::config::printable(&status.name))
            };
            match status.state {
                crate::mcp::ServerState::Connected if status.notes.is_empty() => Check {
                    name,
                    status: Status::Ok,
                    detail: format!("started, {} tool(s)", status.tools.len()),
                },
                crate::mcp::ServerState::Connected => Check {
                    name,
                    status: Status::Warn,
                    detail: format!(
                        "started, {} tool(s); {}",
                        status.tools.len(),
                        status.notes.join("; ")
                    ),
                },
                crate::mcp::ServerState::Failed(reason) => Check {
                    name,
                    status: Status::Fail,
                    detail: reason,
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sandbox::{Backend, Level, Probe, ProbeError};

    fn facts(bwrap: bool, landlock: bool) -> SandboxFacts {
        let level = match (bwrap, landlock) {
            (true, _) => (Level::Bwrap, Vec::new()),
            (false, true) => (Level::Landlock, vec!["bwrap not found".to_string()]),
            (false, false) => (Level::None, vec!["bwrap not found".to_string()]),
        };
        SandboxFacts {
            probe: Probe {
                bwrap: if bwrap {
                    Ok(sandbox::bwrap::BwrapInfo {
                        path: "/usr/bin/bwrap".into(),
                        disable_userns: true,
                    })
                } else {
                    Err(ProbeError::NotFound("bwrap not found".into()))
                },
                landlock: if landlock {
                    Ok("gg-sandbox-helper-ok landlock=Full abi=6".into())
                } else {
                    Err(ProbeError::Kernel(
                        "Landlock not supported by this kernel".into(),
                    ))
                },
                seatbelt: Err(ProbeError::Platform("not macOS")),
            },
            bwrap_version: bwrap.then(|| "bubblewrap 0.8.0".to_string()),
            landlock_abi: if landlock {
                Ok(6)
            } else {
                Err("Landlock not supported by this kernel".into())
            },
            userns: vec![("user.max_user_namespaces".into(), "100".into())],
            forced: Ok(None),
            unproven: (level.0 != Level::None).then(Vec::new),
            level: Ok(level),
            proven: 20,
        }
    }

    fn status_of(checks: &[Check], name: &str) -> Status {
        checks
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.status)
            .unwrap()
    }

    #[test]
    fn no_level_fails_only_when_the_config_asks_for_the_sandbox() {
        let none = facts(false, false);
        assert_eq!(
            status_of(&sandbox_checks(&none, false), "sandbox-level"),
            Status::Warn
        );
        assert_eq!(
            status_of(&sandbox_checks(&none, true), "sandbox-level"),
            Status::Fail
        );
        let landlock = facts(false, true);
        let checks = sandbox_checks(&landlock, true);
        assert_eq!(status_of(&checks, "sandbox-level"), Status::Ok);
        assert_eq!(status_of(&checks, "bubblewrap"), Status::Warn);
        assert_eq!(status_of(&checks, "user-namespaces"), Status::Skipped);
        assert_eq!(status_of(&checks, "seccomp"), Status::Ok);
    }

    #[test]
    fn a_forced_level_that_does_not_work_fails() {
        let mut f = facts(false, true);
        f.forced = Ok(Some(Backend::Bwrap));
        f.level = Err("sandbox backend bwrap is unavailable: bwrap not found".into());
        f.unproven = None;
        let checks = sandbox_checks(&f, false);
        assert_eq!(status_of(&checks, "bubblewrap"), Status::Fail);
        assert_eq!(status_of(&checks, "sandbox-level"), Status::Fail);
        f.forced = Err("GG_SANDBOX_BACKEND: unknown sandbox backend \"x\"".into());
        assert_eq!(
            status_of(&sandbox_checks(&f, false), "sandbox-level"),
            Status::Fail
        );
    }

    #[test]
    fn a_protection_that_does_not_hold_warns_or_fails() {
        let mut f = facts(true, true);
        f.unproven = Some(vec!["deny-read: does not hold".into()]);
        assert_eq!(
            status_of(&sandbox_checks(&f, false), "sandbox-self-test"),
            Status::Warn
        );
        assert_eq!(
            status_of(&sandbox_checks(&f, true), "sandbox-self-test"),
            Status::Fail
        );
    }

    #[test]
    fn secrets_never_reach_the_report() {
        let config = Config::parse(
            br#"{"providers": {"p": {"apiKey": "sk-very-secret-key", "models": ["m"]}}}"#,
            Path::new("config.json"),
        )
        .unwrap();
        let view = merged_view(&config);
        assert_eq!(view["providers"]["p"]["apiKey"], crate::secrets::REDACTED);
        assert_eq!(
            view["context"]["maxPromptTokens"], 24000,
            "defaults filled in"
        );
        let report = Report::new(
            vec![check("x", Status::Warn, "server said sk-very-secret-key")],
            Some(view),
            &["sk-very-secret-key".to_string()],
        );
        let text = report.text(false) + &report.json().to_string();
        assert!(!text.contains("sk-very-secret-key"), "{text}");
        assert_eq!(report.status(), Status::Warn);
        let mut secrets = Vec::new();
        let shown = shown_url("https://user:pw-123456789@host.test/v1", &mut secrets);
        assert!(!shown.contains("pw-123456789"), "{shown}");
        assert!(secrets.contains(&"pw-123456789".to_string()));
    }

    #[test]
    fn doctor_takes_its_own_flags_and_refuses_the_rest() {
        let words = |w: &[&str]| {
            std::iter::once("gg")
                .chain(w.iter().copied())
                .map(std::ffi::OsString::from)
                .collect::<Vec<_>>()
        };
        match crate::cli::parse(words(&["doctor", "--online", "--json"])) {
            Ok(invocation) => assert!(matches!(
                invocation.command,
                Some(crate::cli::Command::Doctor(DoctorArgs {
                    online: true,
                    json: true
                }))
            )),
            Err(e) => panic!("{e}"),
        }
        for line in [
            &["--yolo", "doctor"][..],
            &["doctor", "--sandbox"],
            &["doctor", "x"],
        ] {
            let err = crate::cli::parse(words(line)).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{line:?}");
        }
    }

    #[test]
    fn skipped_alone_is_ok_and_fail_wins() {
        let report = Report::new(
            vec![check("a", Status::Skipped, ""), check("b", Status::Ok, "")],
            None,
            &[],
        );
        assert_eq!(report.status(), Status::Ok);
        let report = Report::new(
            vec![check("a", Status::Fail, ""), check("b", Status::Warn, "")],
            None,
            &[],
        );
        assert_eq!(report.status(), Status::Fail);
        assert!(report.text(false).contains("1 check(s) failed"));
        assert!(!report.text(false).contains('\x1b'));
        assert!(report.text(true).contains("\x1b[1;31mfail"));
    }
}
