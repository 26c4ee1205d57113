//! The long-poll loop and the chats.
//!
//! One `getUpdates` at a time (50 s long poll); the offset is saved before each update is
//! handled (see `state`); errors back off from 1 s to 30 s, and a 429's `retry_after` is waited
//! out as asked. Each allowed chat has one session in the workspace, named `telegram:<chat id>`,
//! and at most one turn at a time; the loop keeps polling while turns run, so `/stop` and
//! approval presses arrive during a turn.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use policies::Terminal;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::api::{ApiError, AttachedFile, CallbackQuery, Client, Message, Update};
use super::approval::{ChatApprover, Pending, Pressed};
use super::state::{self, ChatStatus, Status};
use super::{Approval, TelegramConfig};
use crate::agent::{AgentEvent, Approver, NobodyToAsk, TurnError};
use crate::app::config::{Config, Overrides};
use crate::app::service::{Conversation, ServiceOptions, Submitted};
use crate::session::{Session, paths};
use tools::registry::SandboxSetting;

const HELP: &str = "Send a message (text or voice) and gg answers it in this chat's session.\n\
                    /new starts a new session; /stop cancels the running turn.";
/// First wait after a failed poll; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The longest `retry_after` waited out as given.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// Everything the channel needs, resolved by ggd at start-up.
pub struct BotOptions {
    pub home: PathBuf,
    /// ggd's `--session-dir`.
    pub session_dir: Option<PathBuf>,
    pub config: Config,
    pub telegram: TelegramConfig,
    /// The bot token (read from the token file).
    pub token: String,
    /// The sessions' working directory (canonical).
    pub workspace: PathBuf,
    /// ggd's `--model`, `--api-key`, `--base-url`.
    pub overrides: Overrides,
    pub context_files: bool,
    pub skills: bool,
    pub no_memory: bool,
    /// The longest a chat's turn may take (ggd's `--run-timeout`); then it is cancelled.
    pub turn_timeout: Duration,
}

/// One chat: its conversation (opened at its first turn) and its running turn.
#[derive(Default)]
struct ChatSlot {
    conversation: tokio::sync::Mutex<Option<Conversation>>,
    running: Mutex<Option<CancellationToken>>,
}

struct Bot {
    options: BotOptions,
    client: Arc<Client>,
    pending: Arc<Pending>,
    chats: Mutex<HashMap<i64, Arc<ChatSlot>>>,
    /// `chats.json`: each chat's session file.
    sessions: Mutex<BTreeMap<i64, PathBuf>>,
    status: Mutex<Status>,
    turns: Mutex<Vec<JoinHandle<()>>>,
    stop: CancellationToken,
}

/// Runs the channel until `stop`; running turns are cancelled (and recorded so) before it
/// returns.
pub async fn run(options: BotOptions, stop: CancellationToken) -> Result<(), String> {
    let client = Arc::new(Client::new(&options.telegram.api_base, &options.token)?);
    let mut offset = state::load_offset(&options.home)?;
    let sessions = state::load_chats(&options.home)?;
    let status = Status {
        pid: std::process::id(),
        started_at: tools::store::now_rfc3339(),
        chats: sessions
            .iter()
            .map(|(chat, path)| {
                let status = ChatStatus {
                    session: Some(path.display().to_string()),
                    ..ChatStatus::default()
                };
                (*chat, status)
            })
            .collect(),
        ..Status::default()
    };
    let bot = Arc::new(Bot {
        options,
        client,
        pending: Arc::new(Pending::default()),
        chats: Mutex::new(HashMap::new()),
        sessions: Mutex::new(sessions),
        status: Mutex::new(status),
        turns: Mutex::new(Vec::new()),
        stop: stop.clone(),
    });
    bot.save_status();
    tracing::info!(
        chats = bot.options.telegram.allowed_chats.len(),
        approval = bot.options.telegram.approval.as_str(),
        "telegram: polling"
    );
    let mut backoff = FIRST_BACKOFF;
    'poll: loop {
        let polled = tokio::select! {
            () = stop.cancelled() => break,
            polled = bot.client.get_updates(offset) => polled,
        };
        let updates = match polled {
            Ok(updates) => {
                backoff = FIRST_BACKOFF;
                bot.update_status(|s| {
                    s.polling = true;
                    s.last_poll_at = Some(tools::store::now_rfc3339());
                    s.last_error = None;
                });
                updates
            }
            Err(e) => {
                let wait = match e.retry_after() {
                    Some(asked) => asked.min(MAX_RETRY_AFTER),
                    None => {
                        let wait = backoff;
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                        wait
                    }
                };
                bot.poll_failed(&e, wait);
                tokio::select! {
                    () = stop.cancelled() => break,
                    () = tokio::time::sleep(wait) => continue,
                }
            }
        };
        for update in updates {
            // Telegram resends nothing below the offset; a server that does is not obeyed.
            if update.update_id < offset {
                continue;
            }
            if let Err(e) = state::save_offset(&bot.options.home, update.update_id + 1) {
                // Unsaved, the update could be handled again after a restart: it is left for
                // the next poll, which asks from the old offset again.
                tracing::error!("telegram: cannot save the update offset: {e}");
                bot.update_status(|s| s.last_error = Some(format!("offset: {e}")));
                tokio::select! {
                    () = stop.cancelled() => break 'poll,
                    () = tokio::time::sleep(backoff) => continue 'poll,
                }
            }
            offset = update.update_id + 1;
            bot.update_status(|s| {
                s.last_update_id = Some(update.update_id);
                s.last_update_at = Some(tools::store::now_rfc3339());
            });
            Arc::clone(&bot).handle(update).await;
        }
    }
    // Turns are children of `stop`: cancelled now; each records its cancellation.
    let turns = bot
        .turns
        .lock()
        .map(|mut t| std::mem::take(&mut *t))
        .unwrap_or_default();
    for turn in turns {
        let _ = turn.await;
    }
    bot.update_status(|s| s.polling = false);
    tracing::info!("telegram: stopped");
    Ok(())
}

impl Bot {
    fn allowed(&self, chat: i64) -> bool {
        self.options.telegram.allowed_chats.contains(&chat)
    }

    fn save_status(&self) {
        let status = match self.status.lock() {
            Ok(status) => status.clone(),
            Err(_) => return,
        };
        if let Err(e) = state::save_status(&self.options.home, &status) {
            tracing::warn!("telegram: cannot save the status: {e}");
        }
    }

    fn update_status(&self, change: impl FnOnce(&mut Status)) {
        if let Ok(mut status) = self.status.lock() {
            change(&mut status);
        }
        self.save_status();
    }

    fn update_chat(&self, chat: i64, change: impl FnOnce(&mut ChatStatus)) {
        self.update_status(|s| change(s.chats.entry(chat).or_default()));
    }

    fn poll_failed(&self, error: &ApiError, wait: Duration) {
        let text = self.client.redact(&error.to_string());
        tracing::warn!(
            retry_in_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            "telegram: getUpdates failed: {text}"
        );
        self.update_status(|s| {
            s.polling = false;
            s.last_error = Some(text);
        });
    }

    fn slot(&self, chat: i64) -> Arc<ChatSlot> {
        match self.chats.lock() {
            Ok(mut chats) => Arc::clone(chats.entry(chat).or_default()),
            Err(_) => Arc::new(ChatSlot::default()),
        }
    }

    async fn say(&self, chat: i64, text: &str) {
        if let Err(e) = self.client.send_message(chat, text, None).await {
            tracing::warn!(chat, "telegram: sendMessage failed: {e}");
        }
    }

    async fn handle(self: Arc<Self>, update: Update) {
        if let Some(query) = update.callback_query {
            self.press(&query).await;
            return;
        }
        let Some(message) = update.message else {
            return;
        };
        let chat = message.chat.id;
        if !self.allowed(chat) {
            // The chat id only: what a stranger wrote is not ggd's to keep.
            tracing::info!(
                chat,
                "telegram: message from a chat not on the allow-list ignored"
            );
            return;
        }
        self.update_chat(chat, |c| {
            c.last_message_at = Some(tools::store::now_rfc3339());
        });
        self.message(chat, message).await;
    }

    async fn message(self: Arc<Self>, chat: i64, message: Message) {
        if let Some(file) = message.voice.or(message.audio) {
            // Refused before anything is fetched when Telegram already says it is too large.
            match super::voice::refuse_oversize(&file) {
                Some(refusal) => self.say(chat, &refusal).await,
                None => self.start_turn(chat, Prompt::Voice(file)).await,
            }
            return;
        }
        let Some(text) = message.text.filter(|t| !t.trim().is_empty()) else {
            self.say(chat, "Only text and voice messages are supported.")
                .await;
            return;
        };
        // `/new@my_bot` is how a group addresses a bot.
        let command = text.trim().split('@').next().unwrap_or_default();
        match command {
            "/new" => self.new_session(chat).await,
            "/stop" => self.stop_turn(chat).await,
            "/start" | "/help" => self.say(chat, HELP).await,
            _ => self.start_turn(chat, Prompt::Text(text)).await,
        }
    }

    async fn press(&self, query: &CallbackQuery) {
        let (pressed, place) = self.pending.press(query, |chat| self.allowed(chat));
        if pressed == Pressed::WrongChat {
            let chat = query.message.as_ref().map(|m| m.chat.id);
            tracing::warn!(
                chat,
                from = query.from.id,
                "telegram: approval press refused: not from the chat asked"
            );
        }
        if let Err(e) = self
            .client
            .answer_callback_query(&query.id, pressed.notice())
            .await
        {
            tracing::warn!("telegram: answerCallbackQuery failed: {e}");
        }
        let outcome = match pressed {
            Pressed::Allowed => "Tool call allowed (once).",
            Pressed::Denied => "Tool call denied.",
            _ => return,
        };
        if let Some((chat, message_id)) = place
            && let Err(e) = self
                .client
                .edit_message_text(chat, message_id, outcome)
                .await
        {
            tracing::warn!(chat, "telegram: editMessageText failed: {e}");
        }
    }

    async fn stop_turn(&self, chat: i64) {
        let running = self.slot(chat).running.lock().ok().and_then(|r| r.clone());
        match running {
            Some(turn) => {
                turn.cancel();
                self.say(chat, "Stopping the running turn.").await;
            }
            None => self.say(chat, "Nothing is running.").await,
        }
    }

    async fn new_session(&self, chat: i64) {
        let slot = self.slot(chat);
        let busy = slot.running.lock().map(|r| r.is_some()).unwrap_or(true);
        if busy {
            self.say(chat, "A turn is running: send /stop first.").await;
            return;
        }
        let mut conversation = slot.conversation.lock().await;
        match self.create_session(chat) {
            Ok(session) => {
                *conversation = None;
                drop(session);
                self.say(chat, "New session started.").await;
            }
            Err(e) => {
                tracing::warn!(chat, "telegram: cannot start a session: {e}");
                self.say(chat, &format!("Cannot start a new session: {e}"))
                    .await;
            }
        }
    }

    async fn start_turn(self: Arc<Self>, chat: i64, prompt: Prompt) {
        let slot = self.slot(chat);
        let turn = {
            let Ok(mut running) = slot.running.lock() else {
                return;
            };
            if running.is_some() {
                None
            } else {
                let turn = self.stop.child_token();
                *running = Some(turn.clone());
                Some(turn)
            }
        };
        let Some(turn) = turn else {
            self.say(
                chat,
                "A turn is still running: wait for its answer, or send /stop to cancel it.",
            )
            .await;
            return;
        };
        self.update_chat(chat, |c| c.turn_running = true);
        let bot = Arc::clone(&self);
        let task = tokio::spawn(async move {
            bot.prompted_turn(chat, &slot, prompt, &turn).await;
            if let Ok(mut running) = slot.running.lock() {
                *running = None;
            }
            bot.update_chat(chat, |c| c.turn_running = false);
        });
        if let Ok(mut turns) = self.turns.lock() {
            turns.retain(|t| !t.is_finished());
            turns.push(task);
        }
    }

    /// A turn of `prompt`: a voice message is transcribed first (inside the turn, so that the
    /// poll loop goes on and `/stop` cancels it), its transcript quoted back to the chat and used
    /// as the prompt; with `replyVoice` the answer is then spoken back too.
    async fn prompted_turn(
        &self,
        chat: i64,
        slot: &ChatSlot,
        prompt: Prompt,
        cancel: &CancellationToken,
    ) {
        let file = match prompt {
            Prompt::Text(text) => {
                self.turn(chat, slot, &text, false, cancel).await;
                return;
            }
            Prompt::Voice(file) => file,
        };
        let options = &self.options;
        let media = match crate::app::media::resolve(
            &options.config,
            &options.home,
            &options.overrides,
            None,
        ) {
            Ok(media) => media,
            Err(e) => {
                tracing::warn!(chat, "telegram: voice message: media settings: {e}");
                let e = self.client.redact(&e);
                self.say(
                    chat,
                    &format!("Voice messages need the media settings ({e}). Nothing was run."),
                )
                .await;
                return;
            }
        };
        let transcribed = tokio::select! {
            transcribed = super::voice::transcribe(&self.client, &media, &file, cancel) => transcribed,
            () = cancel.cancelled() => Err("[stopped]".to_string()),
        };
        let transcript = match transcribed {
            Ok(transcript) => transcript,
            Err(told) => {
                tracing::warn!(chat, "telegram: voice message not transcribed: {told}");
                self.say(chat, &told).await;
                return;
            }
        };
        for part in super::reply::split(&transcript) {
            if let Err(e) = self.client.send_quote(chat, part).await {
                tracing::warn!(chat, "telegram: sendMessage (the transcript) failed: {e}");
            }
        }
        let answer = self.turn(chat, slot, &transcript, true, cancel).await;
        if let Some(answer) = answer.filter(|_| options.telegram.reply_voice) {
            let spoken = tokio::select! {
                spoken = super::voice::reply(&self.client, &media, chat, &answer, cancel) => spoken,
                () = cancel.cancelled() => Err("stopped".to_string()),
            };
            if let Err(e) = spoken {
                tracing::warn!(chat, "telegram: voice reply failed: {e}");
                self.say(chat, &format!("[no voice reply: {e}]")).await;
            }
        }
    }

    /// One turn: the reply streams into the chat as the model writes. Returns the answer's text
    /// when the turn ended with one.
    async fn turn(
        &self,
        chat: i64,
        slot: &ChatSlot,
        text: &str,
        voice: bool,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let mut conversation = slot.conversation.lock().await;
        if conversation.is_none() {
            match self.open_conversation(chat) {
                Ok(opened) => *conversation = Some(opened),
                Err(e) => {
                    tracing::warn!(chat, "telegram: cannot open the chat's session: {e}");
                    self.say(
                        chat,
                        &format!("gg cannot start: {}", self.client.redact(&e)),
                    )
                    .await;
                    return None;
                }
            }
        }
        let conversation = conversation.as_mut()?;
        let (pieces, received) = tokio::sync::mpsc::unbounded_channel::<String>();
        let streamer = tokio::spawn(super::reply::stream(
            Arc::clone(&self.client),
            chat,
            received,
            "(no answer)",
        ));
        let events = pieces.clone();
        let sink = move |event: AgentEvent| {
            let line = match event {
                AgentEvent::TextDelta(delta) => delta,
                AgentEvent::ToolCallStart {
                    name,
                    summary,
                    action,
                    rule,
                    ..
                } if action == "deny" => format!("\n[{name} denied ({rule}): {summary}]\n"),
                _ => return,
            };
            let _ = events.send(line);
        };
        let prompt = remote_prompt(chat, self.options.telegram.approval, text, voice);
        let (submitted, timed_out) = {
            let submit = conversation.submit_text(&prompt, &sink, cancel);
            tokio::pin!(submit);
            tokio::select! {
                submitted = &mut submit => (submitted, false),
                () = tokio::time::sleep(self.options.turn_timeout) => {
                    // Cancelled, so that the turn records its cancellation in the session.
                    cancel.cancel();
                    (submit.await, true)
                }
            }
        };
        drop(sink);
        let mut answer = None;
        let ending = match submitted {
            Ok(Submitted::Turn(outcome)) => {
                answer = Some(outcome.final_text).filter(|t| !t.trim().is_empty());
                None
            }
            Ok(Submitted::Control(text)) => Some(text),
            Err(TurnError::Canceled) if timed_out => Some(format!(
                "\n[stopped: the turn took longer than {}]",
                tools::duration::unit(self.options.turn_timeout)
            )),
            Err(TurnError::Canceled) => Some("\n[stopped]".to_string()),
            Err(e) => Some(format!("\n[error: {}]", self.client.redact(&e.to_string()))),
        };
        if let Some(ending) = ending {
            let _ = pieces.send(ending);
        }
        drop(pieces);
        let _ = streamer.await;
        answer
    }

    /// The chat's conversation over its session (the one `chats.json` names, else a new one).
    fn open_conversation(&self, chat: i64) -> Result<Conversation, String> {
        let known = self
            .sessions
            .lock()
            .ok()
            .and_then(|s| s.get(&chat).cloned());
        let session = match known {
            Some(path) if path.exists() => {
                let mut session = Session::open(&path).map_err(|e| e.to_string())?;
                session
                    .recover_interrupted_tool_calls()
                    .map_err(|e| e.to_string())?;
                session
            }
            _ => self.create_session(chat)?,
        };
        let options = &self.options;
        let (network, _) =
            tools::network::session_policy(&options.config.network, None, &[], &options.workspace)
                .map_err(|e| e.to_string())?;
        let approver: Arc<dyn Approver> = match options.telegram.approval {
            Approval::Ask => Arc::new(ChatApprover {
                chat,
                client: Arc::clone(&self.client),
                pending: Arc::clone(&self.pending),
            }),
            Approval::Never | Approval::Deny => Arc::new(NobodyToAsk),
        };
        let service = ServiceOptions {
            cwd: options.workspace.clone(),
            home: options.home.clone(),
            config: options.config.clone(),
            overrides: options.overrides.clone(),
            mode: options.telegram.approval.mode(),
            terminal: Terminal::Absent,
            approver,
            sandbox: SandboxSetting::with_network(options.telegram.sandbox, network),
            context_files: options.context_files,
            skills: options.skills,
            no_memory: options.no_memory,
            // MCP servers are ggd's, started for its clients; a chat gets the built-in tools.
            external_tools: Vec::new(),
            early_tools: None,
        };
        let mut conversation = Conversation::open(service, session)?;
        if conversation.selection().api_key.is_empty() {
            return Err(crate::app::config::MISSING_API_KEY.to_string());
        }
        conversation.set_origin(&origin(chat));
        Ok(conversation)
    }

    /// A new session for the chat in the workspace, recorded as its session.
    fn create_session(&self, chat: i64) -> Result<Session, String> {
        let options = &self.options;
        let root =
            crate::app::session_root(options.session_dir.as_deref()).map_err(|e| e.to_string())?;
        let dir = paths::project_dir(&root, &options.workspace).map_err(|e| e.to_string())?;
        let mut session = Session::create(&dir, &options.workspace.display().to_string())
            .map_err(|e| e.to_string())?;
        session.set_name(&origin(chat)).map_err(|e| e.to_string())?;
        let path = session.path().to_path_buf();
        let sessions = match self.sessions.lock() {
            Ok(mut sessions) => {
                sessions.insert(chat, path.clone());
                sessions.clone()
            }
            Err(_) => return Err("the chats' sessions are unavailable".to_string()),
        };
        state::save_chats(&options.home, &sessions)?;
        self.update_chat(chat, |c| c.session = Some(path.display().to_string()));
        Ok(session)
    }
}

/// The audit origin and session name of a chat.
pub fn origin(chat: i64) -> String {
    format!("telegram:{chat}")
}

/// The chat's text behind a notice that says where it came from (and, for a voice message, that
/// it is a transcript) and that nobody is at a terminal (as a scheduled job's prompt does).
fn remote_prompt(chat: i64, approval: Approval, text: &str, voice: bool) -> String {
    let normal = match approval {
        Approval::Never => "normal commands run without asking",
        Approval::Deny => "only read-type tools and read-only commands run",
        Approval::Ask => "normal commands are asked in the chat",
    };
    let what = if voice {
        format!(
            "Voice message from Telegram chat {chat}, transcribed by speech recognition (words \
             may be misheard)"
        )
    } else {
        format!("Message from Telegram chat {chat}")
    };
    format!(
        "[{what}. Nobody is at a terminal: dangerous commands are denied and {normal}. Reply in \
         plain text.]\n\n{text}"
    )
}

/// What a chat's message asks for.
enum Prompt {
    Text(String),
    /// A voice note or audio file, transcribed when its turn starts.
    Voice(AttachedFile),
}
