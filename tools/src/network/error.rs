//! What can go wrong with a session's network: a settings file or allow-list entry gg refuses
//! (a half-read network policy must not run), and a proxy that cannot be started. Each prints
//! the text `gg`, `ggd` and the sandbox's set-up have always shown.

use std::fmt;
use std::path::PathBuf;

/// A network setting refused, or the proxy not started.
#[derive(Debug)]
pub enum NetworkError {
    /// An allow-list entry that is not a host name, `*.domain` or an IP address.
    BadEntry { entry: String },
    /// A wildcard over a whole top-level domain (`*.com`).
    WideWildcard { entry: String },
    /// The project's `.gg/settings.json` has a bad allow-list entry.
    ProjectSettings(Box<NetworkError>),
    /// A settings file exists but cannot be read.
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A settings file is not JSON of its shape.
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// A settings file's `allowDomains` has a bad entry.
    AllowDomains {
        path: PathBuf,
        source: Box<NetworkError>,
    },
    /// The proxy's state was left unusable by a panic.
    Poisoned,
    /// The proxy could not bind, set up its runtime or start its thread; `what` names the step.
    Proxy {
        what: String,
        source: std::io::Error,
    },
    /// No private directory for the proxy's socket could be made; the text says why for the
    /// last place tried.
    ProxyDirectory(String),
    /// The port a server listens on could not be recorded as gg's own.
    Record {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl NetworkError {
    pub(super) fn proxy(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> NetworkError {
        let what = what.into();
        move |source| NetworkError::Proxy { what, source }
    }
}

impl fmt::Display for NetworkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetworkError::BadEntry { entry } => write!(
                f,
                "bad allowed domain {entry:?}: expected a host name, *.domain, or an IP address"
            ),
            NetworkError::WideWildcard { entry } => write!(
                f,
                "bad allowed domain {entry:?}: a wildcard needs at least two labels (*.example.com)"
            ),
            NetworkError::ProjectSettings(e) => write!(f, "project settings: {e}"),
            NetworkError::Read { path, source } => {
                write!(f, "failed to read {}: {source}", path.display())
            }
            NetworkError::Parse { path, source } => {
                write!(f, "failed to parse {}: {source}", path.display())
            }
            NetworkError::AllowDomains { path, source } => {
                write!(
                    f,
                    "failed to parse {}: allowDomains: {source}",
                    path.display()
                )
            }
            NetworkError::Poisoned => f.write_str("network proxy state poisoned"),
            NetworkError::Proxy { what, source } => write!(f, "{what}: {source}"),
            NetworkError::ProxyDirectory(why) => write!(f, "network proxy directory: {why}"),
            NetworkError::Record { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for NetworkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NetworkError::ProjectSettings(e) => Some(e.as_ref()),
            NetworkError::AllowDomains { source, .. } => Some(source.as_ref()),
            NetworkError::Read { source, .. }
            | NetworkError::Proxy { source, .. }
            | NetworkError::Record { source, .. } => Some(source),
            NetworkError::Parse { source, .. } => Some(source),
            NetworkError::BadEntry { .. }
            | NetworkError::WideWildcard { .. }
            | NetworkError::Poisoned
            | NetworkError::ProxyDirectory(_) => None,
        }
    }
}
