//! Telegram: ggd answers the chats on an allow-list (issue 40).
//!
//! The person talking to the agent is not at a terminal, so every message is remote input under
//! the unattended policy: dangerous calls are denied, normal calls follow `approval` (`never`
//! runs them, `deny` refuses them, `ask` asks the chat with inline buttons; see
//! [`policies::Mode::Remote`]), and every call's audit names the chat as its origin.
//!
//! - [`api`]: the Bot API client (HTTP calls, file downloads and uploads, Telegram's JSON
//!   shapes), the token redacted from every error it returns.
//! - `voice`: a voice message fetched, size-capped and transcribed (the transcript is the
//!   prompt), and the answer spoken back with `"replyVoice": true`, through [`crate::media`].
//! - `state`: what survives a restart under `~/.gg/telegram/` (the update offset, each chat's
//!   session, the status `gg telegram status` prints).
//! - `bot`: the long-poll loop and the chats; `reply`: a reply streamed as one message edited
//!   at most once a second and split at Telegram's limit; `approval`: the inline-keyboard
//!   approver.
//! - [`config`]: the `"telegram"` section of the configuration and where the token comes from
//!   (ggd resolves its channel from it in `daemon::telegram`).
//! - [`cli`]: `gg telegram status`.

pub mod api;
mod approval;
mod bot;
pub mod cli;
pub mod config;
mod reply;
mod state;
mod voice;

pub use bot::{BotOptions, run};
pub use config::{Approval, DEFAULT_API_BASE, TOKEN_FILE_ENV, TelegramConfig};
pub use state::load_offset;
