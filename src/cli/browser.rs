//! `gg browser read|shot <url>`: the browser tools from the command line, for a person. The URL
//! is classified as the agent's would be; a dangerous one is refused unless `--allow-dangerous`
//! says the person means it (the guard then lets that one host through, nothing else).

use std::process::ExitCode;
use std::time::Duration;

use classifier::Class;
use tokio_util::sync::CancellationToken;

use tools::browser::{BrowserTools, Done};
use tools::registry::SandboxSetting;

/// How long one `gg browser` command may take.
const TIMEOUT: Duration = Duration::from_secs(90);

#[derive(Debug, clap::Subcommand)]
pub enum BrowserCommand {
    /// Print the readable text of a page (links as markdown).
    Read {
        url: String,
        /// Only the element matching this CSS selector.
        #[arg(long)]
        selector: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Save a PNG screenshot under ~/.gg/media/screenshots and print its path.
    Shot {
        url: String,
        /// The whole page instead of the viewport.
        #[arg(long)]
        full_page: bool,
        /// Only the element matching this CSS selector.
        #[arg(long)]
        selector: Option<String>,
        /// Viewport width in CSS pixels.
        #[arg(long, default_value_t = 1280)]
        width: u32,
        /// Viewport height in CSS pixels.
        #[arg(long, default_value_t = 800)]
        height: u32,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Debug, clap::Args)]
pub struct Common {
    /// Open a URL classified dangerous (private address, file outside this directory, …).
    #[arg(long)]
    allow_dangerous: bool,
}

pub fn run(command: BrowserCommand, sandboxed: bool) -> ExitCode {
    let runtime = match crate::app::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("gg browser: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(browse(command, sandboxed)) {
        Ok(done) => {
            let mut out = done.text;
            if let Some((_, _, page)) = done.page_text {
                out.push('\n');
                out.push_str(&page);
            }
            println!("{}", crate::display::visible(&out));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gg browser: {}", crate::display::visible(&e));
            ExitCode::from(1)
        }
    }
}

async fn browse(command: BrowserCommand, sandboxed: bool) -> Result<Done, String> {
    let home = tools::security::home_dir();
    let cwd = std::env::current_dir().map_err(|e| format!("current directory: {e}"))?;
    let config = crate::app::config::Config::load(&home)?;
    let sandbox = if sandboxed {
        let user = config.network.clone();
        let (policy, _) =
            tools::network::session_policy(&user, None, &[], &cwd).map_err(|e| e.to_string())?;
        SandboxSetting::with_network(true, policy)
    } else {
        SandboxSetting::Off
    };
    let mut browser_config = config.browser.clone();
    browser_config.enabled = true;
    let tools = BrowserTools::new(&cwd, &home, &browser_config, sandbox)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| {
        format!(
            "no Chromium found (looked for {} on PATH; set browser.executable in ~/.gg/config.json or GG_CHROMIUM)",
            tools::browser::process::CANDIDATES.join(", ")
        )
    })?;
    let (url, second, allow) = match &command {
        BrowserCommand::Read {
            url,
            selector,
            common,
        } => (
            url,
            ("browser_read", serde_json::json!({"selector": selector})),
            common.allow_dangerous,
        ),
        BrowserCommand::Shot {
            url,
            full_page,
            selector,
            width,
            height,
            common,
        } => (
            url,
            (
                "browser_screenshot",
                serde_json::json!({"full_page": full_page, "selector": selector, "width": width, "height": height}),
            ),
            common.allow_dangerous,
        ),
    };
    let navigate = tools
        .describe(
            "browser_navigate",
            &serde_json::json!({"url": url}).to_string(),
        )
        .map_err(|e| e.to_string())?;
    if navigate.class == Class::Dangerous && !allow {
        return Err(format!(
            "{url} is dangerous ({}: {}); pass --allow-dangerous to open it anyway",
            navigate.rule, navigate.reason
        ));
    }
    let mut args = second.1;
    if let Some(map) = args.as_object_mut() {
        map.retain(|_, v| !v.is_null());
    }
    let then = tools
        .describe(second.0, &args.to_string())
        .map_err(|e| e.to_string())?;
    let cancel = CancellationToken::new();
    let work = async {
        let loaded = tools
            .execute(&navigate, &cancel)
            .await
            .map_err(|e| e.to_string())?;
        let mut done = tools
            .execute(&then, &cancel)
            .await
            .map_err(|e| e.to_string())?;
        // The navigation's page block: the URL as loaded, and the title.
        let page = loaded.page_text.map(|(_, _, t)| t).unwrap_or_default();
        done.text = format!("{page}\n{}", done.text);
        Ok::<Done, String>(done)
    };
    let result = tokio::time::timeout(TIMEOUT, work)
        .await
        .map_err(|_| format!("timed out after {}s", TIMEOUT.as_secs()))?;
    tools.close().await;
    result
}
