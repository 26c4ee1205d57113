//! Append-only JSONL session store, file-compatible with the Go implementation of gg
//! (the format: docs/architecture.md, "Sessions").
//!
//! - [`Session`]: a session open for writing (lease, optimistic check, fsynced appends, repair
//!   and migration on open, branch/fork/clone, interruption recovery).
//! - [`Transcript`]: the validated tree and its views (active path, messages, UI tree items).
//! - [`load`]: read-only loading (listing, `gg audit`), never modifies a file.
//! - [`read_page`]: one page of the active path, newest first, decoding only that page.
//! - [`paths`]: session root, per-project directories, listing, id resolution.
//! - [`audit`]: the audit-trail record on tool results; [`audit_trail`] extracts the rows of
//!   `gg audit` from a transcript.

pub mod audit;
mod entry;
mod error;
mod id;
pub mod lease;
mod page;
mod parse;
pub mod paths;
mod store;
pub mod time;
mod transcript;

pub use audit::{Audit, BrowserRecord, Classification, Decision, Reason, SandboxRecord};
pub use entry::{
    CURRENT_VERSION, ContentBlock, Entry, EntryKind, Header, Message, Role, StopReason, ToolCall,
    Usage,
};
pub use error::{Result, SessionError};
pub use id::new_id;
pub use page::{Page, read_page};
pub use parse::{load, load_bytes};
pub use store::Session;
pub use transcript::{CallStatus, ToolCallAudit, Transcript, TreeItem, audit_trail, ui_text};

/// Content and error of the tool result written for a call that was interrupted before its
/// result was saved.
pub const INTERRUPTED_TOOL_RESULT: &str = "Execution interrupted; result unavailable. This tool may already have run. Inspect the current state before retrying.";
