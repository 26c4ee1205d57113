//! The per-session sandbox: one bubblewrap namespace (or, at the landlock level, one helper
//! process) started at the first sandboxed command of a session, with a small command server
//! inside it that runs every later command of the session.
//!
//! Starting bubblewrap and re-executing the host binary as the helper costs several
//! milliseconds per command; forking from a process that already stands in the namespace costs a
//! fraction of that. Each command still gets every restriction of the per-command path, applied
//! in its own process after the fork: `no_new_privs`, Landlock, no capabilities, a new session
//! and process group, its own working directory, environment and output pipe. The Landlock
//! ruleset comes with the command's plan and is built by the server from the live tree, then
//! reused for later commands with the same plan while that tree is unchanged
//! ([`crate::fs_rules::Prepared`]); each command applies its own copy. The seccomp filters, the
//! same for every command of a server (their network mode is part of the server's key), are
//! installed once on the server and inherited.
//!
//! Process layout inside the namespace:
//!
//! ```text
//! server (reads requests on fd 0; child subreaper)
//!  ├─ command (setsid, restricted, exec'd; itself a child subreaper)
//!  │   └─ whatever it starts; its orphans are re-parented to the command
//!  └─ another command running at the same time
//! ```
//!
//! The server forks each command itself and waits for all of them in one `poll` (the control
//! socket, a signalfd for `SIGCHLD` and the stop signals, and every running command's channel).
//! When a command ends, the server kills its process group and every one of its own children
//! that is not a running command (a command is the subreaper of its own orphans while it runs,
//! so those children can only be left over from a command that ended: they were re-parented to
//! the server when it did), reaps them, and only then reports the wait status. It does the same
//! at once when the host closes the command's channel (timeout, cancellation), and for every
//! command when it stops. So nothing a command started outlives it, and a later command cannot
//! see it. (Until the sixth session a supervisor process per command did this; folding it into the
//! server saves a fork and a hand-over between processes on every command.)
//!
//! Protocol: the control socket (a `SOCK_SEQPACKET` pair; the server's end is its stdin) carries
//! one byte per command with two descriptors attached: the command's channel (a stream socket)
//! and the write end of its output pipe. The request (`Request`, length-prefixed) is on the
//! channel, written before the descriptors are sent when it fits the socket buffer; the server
//! answers `exit <wait status>\n` and closes it. A channel sent without an output pipe carries
//! only a plan: the server builds its Landlock ruleset ahead of the first command.
//!
//! The bubblewrap mounts are fixed when the server starts. Before each command the host renders
//! the command's policy again; when the arguments differ (a `.git` created meanwhile, another
//! writable root, a changed network policy) the server is replaced by a new one.
//!
//! Three files, one per side: [`protocol`] (what both sides agree on), `host` (gg: starting,
//! checking and replacing the server, handing it commands) and `inside` (the server in the
//! sandbox). The host never imports inside code and the inside never imports host code; both
//! import the protocol.

#[cfg(target_os = "linux")]
mod host;
#[cfg(target_os = "linux")]
pub(crate) mod inside;
mod protocol;

#[cfg(target_os = "linux")]
pub use host::{Served, ServerCommand, SessionServer, Spawned, Ticket};
pub use protocol::{Ended, SERVER_ARG, ServerConfig};
