//! What can go wrong with the browser tools: a configuration they cannot start from, a call
//! they refuse before anyone is asked, and a call that failed while it ran. Each prints the
//! text the model, `gg browser` or the config check has always shown.

use std::fmt;
use std::path::PathBuf;

use crate::network::NetworkError;

/// A browser configuration, call or run that went wrong.
#[derive(Debug)]
pub enum BrowserError {
    /// `browser.executable` names something that is not an executable file.
    Executable { path: PathBuf },
    /// `browser.allowPrivateHosts` has a malformed entry.
    PrivateHosts(NetworkError),
    /// The sandbox refuses the working directory (`/`), so the deny-read list the browser
    /// keeps out of cannot be worked out.
    Sandbox(sandbox::SandboxError),
    /// A browser tool this config does not enable.
    NotEnabled(String),
    /// A tool name the browser tools do not have.
    UnknownTool(String),
    /// The arguments are not JSON of the tool's shape.
    Arguments(serde_json::Error),
    /// The navigation target is not a URL or path the browser can judge (the policy's text).
    Target(String),
    /// The target is in a deny-read path: the browser never opens it.
    Hidden { path: PathBuf },
    /// A host name could not be resolved.
    Resolve {
        name: String,
        source: std::io::Error,
    },
    /// The call was cancelled while it ran, and the browser closed.
    Cancelled,
    /// The call failed while it ran (the browser, its protocol, the page or the network guard);
    /// the text says how, and a page's own exception follows [`super::PAGE_THREW`] in it.
    Run(String),
}

impl fmt::Display for BrowserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BrowserError::Executable { path } => write!(
                f,
                "browser.executable {} is not an executable file",
                path.display()
            ),
            BrowserError::PrivateHosts(e) => write!(f, "browser.allowPrivateHosts: {e}"),
            BrowserError::Sandbox(e) => write!(f, "{e}"),
            BrowserError::NotEnabled(name) => write!(f, "{name} is not enabled"),
            BrowserError::UnknownTool(name) => write!(f, "unknown browser tool {name}"),
            BrowserError::Arguments(e) => write!(f, "invalid arguments: {e}"),
            BrowserError::Target(text) | BrowserError::Run(text) => f.write_str(text),
            BrowserError::Hidden { path } => write!(
                f,
                "{} is in a deny-read path (a secret the sandbox hides, such as ~/.ssh); the \
                 browser never opens it",
                path.display()
            ),
            BrowserError::Resolve { name, source } => write!(f, "cannot resolve {name}: {source}"),
            BrowserError::Cancelled => f.write_str("cancelled; the browser was closed"),
        }
    }
}

impl std::error::Error for BrowserError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BrowserError::PrivateHosts(e) => Some(e),
            BrowserError::Sandbox(e) => Some(e),
            BrowserError::Arguments(e) => Some(e),
            BrowserError::Resolve { source, .. } => Some(source),
            _ => None,
        }
    }
}
