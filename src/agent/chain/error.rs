//! What can go wrong before a call reaches the gate, typed at the chain's seams: a tool that
//! cannot describe a call ([`ProposeError`], from [`Tool::propose`](super::Tool::propose)), a
//! call the chain cannot prepare ([`PrepareError`], from [`ToolBox::prepare`](super::ToolBox::prepare)),
//! and a working directory the tools cannot be set up for ([`ToolBoxError`], from
//! [`ToolBox::new`](super::ToolBox::new)). Each prints exactly the text the model or the person
//! reads; the types let the code tell a refusal from a malformed call without parsing it.

use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;

use crate::media::MediaError;
use tools::browser::BrowserError;
use tools::computer::ComputerError;
use tools::files::ToolFailure;
use tools::memory::MemoryError;
use tools::registry::BadTimeout;
use tools::store::StoreError;

/// Why a tool could not describe a call. It becomes the tool result
/// `approval request for tool "X" failed: <this>`; nothing ran.
#[derive(Debug)]
pub enum ProposeError {
    /// The arguments are not JSON of the tool's shape (bad JSON, a missing, unknown or
    /// mistyped field). `lead` is how the tool introduces the serde error, e.g.
    /// `invalid arguments for memory_add`.
    Arguments {
        lead: Cow<'static, str>,
        source: serde_json::Error,
    },
    /// An argument parsed but its value is refused (empty, out of range, not an address, an
    /// unknown name); the text says which argument and what is allowed.
    BadValue(String),
    /// The bash call's timeout is out of range.
    Timeout(BadTimeout),
    /// The write or edit cannot be planned (the path is refused, the text to replace is not
    /// there); the file tools' own message.
    Files(ToolFailure),
    /// An artifact call names what the store refuses or does not have.
    Artifact(StoreError),
    /// An artifact edit that would change nothing.
    Unchanged { artifact: String, version: u32 },
    /// A media call's request or input file is refused.
    Media(MediaError),
    /// A memory call's scope, target or entry is refused.
    Memory(MemoryError),
    /// A browser call is malformed or refused before it is asked about.
    Browser(BrowserError),
    /// A computer tool call is malformed or refused outright.
    Computer(ComputerError),
}

impl ProposeError {
    /// Arguments that do not parse, introduced as `invalid arguments: …`.
    pub fn arguments(source: serde_json::Error) -> ProposeError {
        ProposeError::arguments_led("invalid arguments", source)
    }

    /// Arguments that do not parse, introduced as `invalid arguments for <tool>: …`.
    pub fn arguments_for(tool: &str, source: serde_json::Error) -> ProposeError {
        ProposeError::arguments_led(format!("invalid arguments for {tool}"), source)
    }

    /// Arguments that do not parse, introduced by the tool's own `lead` (`<lead>: …`).
    pub fn arguments_led(
        lead: impl Into<Cow<'static, str>>,
        source: serde_json::Error,
    ) -> ProposeError {
        ProposeError::Arguments {
            lead: lead.into(),
            source,
        }
    }
}

impl fmt::Display for ProposeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProposeError::Arguments { lead, source } => write!(f, "{lead}: {source}"),
            ProposeError::BadValue(text) => f.write_str(text),
            ProposeError::Timeout(e) => write!(f, "{e}"),
            ProposeError::Files(e) => write!(f, "{e}"),
            ProposeError::Artifact(e) => write!(f, "{e}"),
            ProposeError::Unchanged { artifact, version } => write!(
                f,
                "the content is identical to v{version} of artifact {artifact}; nothing to edit"
            ),
            ProposeError::Media(e) => write!(f, "{e}"),
            ProposeError::Memory(e) => write!(f, "{e}"),
            ProposeError::Browser(e) => write!(f, "{e}"),
            ProposeError::Computer(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ProposeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ProposeError::Arguments { source, .. } => Some(source),
            ProposeError::Timeout(e) => Some(e),
            ProposeError::Artifact(e) => Some(e),
            ProposeError::Media(e) => Some(e),
            ProposeError::Memory(e) => Some(e),
            ProposeError::Browser(e) => Some(e),
            ProposeError::Computer(e) => Some(e),
            ProposeError::BadValue(_) | ProposeError::Files(_) | ProposeError::Unchanged { .. } => {
                None
            }
        }
    }
}

impl From<BadTimeout> for ProposeError {
    fn from(e: BadTimeout) -> ProposeError {
        ProposeError::Timeout(e)
    }
}

impl From<ToolFailure> for ProposeError {
    fn from(e: ToolFailure) -> ProposeError {
        ProposeError::Files(e)
    }
}

impl From<StoreError> for ProposeError {
    fn from(e: StoreError) -> ProposeError {
        ProposeError::Artifact(e)
    }
}

impl From<MediaError> for ProposeError {
    fn from(e: MediaError) -> ProposeError {
        ProposeError::Media(e)
    }
}

impl From<MemoryError> for ProposeError {
    fn from(e: MemoryError) -> ProposeError {
        ProposeError::Memory(e)
    }
}

impl From<BrowserError> for ProposeError {
    fn from(e: BrowserError) -> ProposeError {
        ProposeError::Browser(e)
    }
}

impl From<ComputerError> for ProposeError {
    fn from(e: ComputerError) -> ProposeError {
        ProposeError::Computer(e)
    }
}

/// Why a call could not be prepared for the gate. It is the tool result the model receives.
#[derive(Debug)]
pub enum PrepareError {
    /// The model called a tool this session does not offer.
    UnknownTool(String),
    /// The tool could not describe the call.
    Propose { tool: String, source: ProposeError },
    /// The classifier could not read the shell command.
    Classify {
        tool: String,
        source: classifier::ClassifyError,
    },
}

impl fmt::Display for PrepareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrepareError::UnknownTool(name) => write!(f, "unknown tool \"{name}\""),
            PrepareError::Propose { tool, source } => {
                write!(f, "approval request for tool \"{tool}\" failed: {source}")
            }
            PrepareError::Classify { tool, source } => {
                write!(f, "approval request for tool \"{tool}\" failed: {source}")
            }
        }
    }
}

impl std::error::Error for PrepareError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PrepareError::UnknownTool(_) => None,
            PrepareError::Propose { source, .. } => Some(source),
            PrepareError::Classify { source, .. } => Some(source),
        }
    }
}

/// Why the tools could not be set up for a working directory: gg does not run a session with
/// a half-read policy or a directory the sandbox refuses.
#[derive(Debug)]
pub enum ToolBoxError {
    /// The working directory cannot be opened.
    WorkingDirectory {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The sandbox refuses the directory as a working directory (`/`), so its deny-read list
    /// cannot be worked out.
    Sandbox(sandbox::SandboxError),
    /// A policy file exists but cannot be read or parsed.
    Policy(policies::PolicyError),
}

impl fmt::Display for ToolBoxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolBoxError::WorkingDirectory { path, source } => {
                write!(f, "working directory {}: {source}", path.display())
            }
            ToolBoxError::Sandbox(e) => write!(f, "{e}"),
            ToolBoxError::Policy(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ToolBoxError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ToolBoxError::WorkingDirectory { source, .. } => Some(source),
            ToolBoxError::Sandbox(e) => Some(e),
            ToolBoxError::Policy(e) => Some(e),
        }
    }
}
