//! Links from the page to the system browser, and the desktop notification: the two ways the
//! shell reaches outside its window on the page's behalf.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long the notification service gets to answer.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(30);
/// Notification text limits, in characters (as the agent's `notify` tool).
const MAX_SUMMARY: usize = 200;

/// What ggd's `open.check` said about a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// What the opener is given: ggd's normalised form of the URL.
    pub target: String,
    pub dangerous: bool,
    pub reason: String,
}

/// Only http(s) links are handed on; anything else from the page is refused here, before ggd.
pub fn web_link(url: &str) -> Result<String, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
    match parsed.scheme() {
        "http" | "https" => Ok(parsed.to_string()),
        other => Err(format!("only http(s) links are opened, not {other}:")),
    }
}

/// Asks ggd how its `open` tool classes `url`.
pub fn check(port: u16, token: &str, url: &str) -> Result<Checked, String> {
    let result = crate::sidecar::rpc(
        port,
        token,
        "open.check",
        serde_json::json!({"target": url}),
    )?;
    let field = |name: &str| {
        result[name]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("open.check: no {name} in {result}"))
    };
    Ok(Checked {
        target: field("target")?,
        dangerous: field("class")? == "dangerous",
        reason: field("reason")?,
    })
}

/// The desktop's opener, as the agent's `open` tool finds it.
fn opener() -> Option<PathBuf> {
    [
        "/usr/bin/xdg-open",
        "/bin/xdg-open",
        "/usr/local/bin/xdg-open",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
}

/// Hands `target` to the opener (it returns at once; its exit is collected in the background).
pub fn open(target: &str) -> Result<(), String> {
    let opener = opener().ok_or("no desktop opener (/usr/bin/xdg-open)")?;
    let mut child = Command::new(&opener)
        .arg(target)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", opener.display()))?;
    std::thread::spawn(move || child.wait());
    Ok(())
}

/// "An approval waits": a desktop notification, shown from a thread of its own.
pub fn notify_approval(summary: &str) {
    let body: String = summary.chars().take(MAX_SUMMARY).collect();
    std::thread::spawn(move || {
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(e) => {
                eprintln!("gg-desktop: notification: {e}");
                return;
            }
        };
        runtime.block_on(async move {
            let mut notification = notify_rust::Notification::new();
            notification
                .appname("gg")
                .summary("gg: an approval is waiting")
                .body(&body);
            match tokio::time::timeout(NOTIFY_TIMEOUT, notification.show_async()).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => eprintln!("gg-desktop: notification service: {e}"),
                Err(_) => eprintln!("gg-desktop: the notification service did not answer"),
            }
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_links_are_handed_on() {
        assert_eq!(web_link("https://docs.rs").unwrap(), "https://docs.rs/");
        assert!(web_link("http://127.0.0.1:8080/x").is_ok());
        for bad in [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "ssh://host",
            "/etc/passwd",
            "",
        ] {
            assert!(web_link(bad).is_err(), "{bad}");
        }
    }
}
