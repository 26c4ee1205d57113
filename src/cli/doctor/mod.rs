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
use std::time::Duration;

use serde_json::{Value, json};

use crate::app::config::Config;
use crate::cli::terminal::{Stream, colour_on};
use crate::display::visible_inline;

mod check;
mod provider;
mod sandbox;

use check::{Check, Status, check};

use provider::provider_checks;
use sandbox::{SandboxFacts, helper_check, sandbox_checks};

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

/// How long MCP servers get to start and list their tools here (each step): a diagnosis that
/// hangs is no diagnosis.
const MCP_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

pub fn run(args: DoctorArgs) -> ExitCode {
    let home = tools::security::home_dir();
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
                t.replace(s, tools::secrets::REDACTED)
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
                value["apiKey"] = json!(tools::secrets::REDACTED);
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
        "network": tools::network::NetworkPolicy::resolve(&config.network, None, &[], None)
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
        tools::browser::process::find_executable(browser.executable.as_deref()),
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
                tools::browser::process::CANDIDATES.join(", ")
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
    let mut options =
        crate::mcp::ConnectOptions::new(home, tools::registry::SandboxSetting::enabled(sandboxed));
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
    use super::provider::shown_url;
    use super::*;

    #[test]
    fn secrets_never_reach_the_report() {
        let config = Config::parse(
            br#"{"providers": {"p": {"apiKey": "sk-very-secret-key", "models": ["m"]}}}"#,
            Path::new("config.json"),
        )
        .unwrap();
        let view = merged_view(&config);
        assert_eq!(view["providers"]["p"]["apiKey"], tools::secrets::REDACTED);
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
