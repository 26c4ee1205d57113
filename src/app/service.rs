//! The conversation service: one session, one agent, and the slash commands every frontend
//! shares (`/model`, `/name`, `/context`, `/compact`, `/skill:<name>`).

use std::path::PathBuf;
use std::sync::Arc;

use policies::{Mode, Terminal};
use tokio_util::sync::CancellationToken;

use super::config::{Config, Overrides, Selection};
use crate::agent::context;
use crate::agent::prompt::{PromptOptions, discover_skills, system_prompt};
use crate::agent::{Agent, Approver, EventSink, Gate, MessageQueue, TurnError, TurnOutcome};
use crate::agent::{Tool, ToolBox};
use crate::provider::{Provider, ProviderConfig};
use crate::session::Session;
use tools::registry::SandboxSetting;

/// Everything needed to start a conversation.
pub struct ServiceOptions {
    pub cwd: PathBuf,
    pub home: PathBuf,
    pub config: Config,
    pub overrides: Overrides,
    pub mode: Mode,
    pub terminal: Terminal,
    /// Always explicit: modes where nobody answers pass `NobodyToAsk`.
    pub approver: Arc<dyn Approver>,
    pub sandbox: SandboxSetting,
    pub context_files: bool,
    pub skills: bool,
    /// `--no-memory`: no memory and no user profile for this run, whatever the config says.
    pub no_memory: bool,
    /// Tools from MCP servers, which live as long as the service that connected them.
    pub external_tools: Vec<Arc<dyn Tool>>,
    /// The built-in tools, built (and the session's sandbox started) before the session was
    /// opened; `None` builds them in [`Conversation::open`].
    pub early_tools: Option<EarlyTools>,
}

/// A conversation's built-in tools, built ahead of the conversation so that the session's
/// sandbox starts as early as the host knows the working directory and the sandbox setting.
///
/// Bubblewrap and the helper take ~8 ms to stand up, mostly in the kernel, and the first command
/// waits for whatever of it is left when the model answers. Started here, ahead of the session
/// file's creation (two `fsync`s) and the MCP servers' start, the set-up overlaps them too.
pub struct EarlyTools {
    tools: ToolBox,
    /// What they were built for; [`Conversation::open`] uses them only for the same.
    cwd: PathBuf,
    sandbox: SandboxSetting,
    env_allow: Vec<String>,
}

impl EarlyTools {
    /// Builds the tools for `cwd` (an error for a malformed policy file, as
    /// [`Conversation::open`] would report), which starts the sandbox's warm-up
    /// (`ToolBox::new`).
    pub fn start(
        cwd: &std::path::Path,
        sandbox: &SandboxSetting,
        config: &Config,
    ) -> Result<EarlyTools, String> {
        let tools = ToolBox::new(cwd, sandbox.clone(), config.env.allow.clone())
            .map_err(|e| e.to_string())?;
        Ok(EarlyTools {
            tools,
            cwd: cwd.to_path_buf(),
            sandbox: sandbox.clone(),
            env_allow: config.env.allow.clone(),
        })
    }
}

/// What a submitted input produced.
#[derive(Debug)]
pub enum Submitted {
    /// A slash command's answer; no model call was made.
    Control(String),
    Turn(TurnOutcome),
}

pub struct Conversation {
    options: ServiceOptions,
    agent: Agent,
    session: Session,
    selection: Selection,
    queue: Arc<MessageQueue>,
    /// The memory store, when memory is on for this conversation.
    memory: Option<Arc<tools::memory::Store>>,
    /// What start-up upkeep of memory had to say (legacy file moved or not, …).
    notices: Vec<String>,
    /// Where the requests come from when not the terminal or a ggd client (`telegram:<chat>`).
    origin: Option<String>,
}

/// Builds the provider client for a selection.
pub fn provider_for(selection: &Selection, config: &Config) -> Result<Provider, String> {
    let mut provider_config = ProviderConfig::new(
        selection.base_url.clone(),
        selection.api_key.clone(),
        selection.model.clone(),
    );
    provider_config.max_output_tokens = config.context.max_output_tokens;
    provider_config.compat.no_stream_usage = selection.compat.no_stream_usage;
    provider_config.compat.completion_tokens = selection.compat.completion_tokens;
    Provider::new(provider_config).map_err(|e| e.message().to_string())
}

impl Conversation {
    /// Opens a conversation over `session`. The model is `--model`, else the one the session
    /// last used, else the config default.
    pub fn open(mut options: ServiceOptions, session: Session) -> Result<Conversation, String> {
        let recorded = session
            .transcript()
            .last_model()
            .map(|(_, _, selection)| selection.to_string());
        let wanted = options.overrides.selection.clone().or(recorded);
        let selection =
            options
                .config
                .select(&options.home, wanted.as_deref(), &options.overrides)?;
        let tools = match options.early_tools.take() {
            // Built from the same inputs as below (else dropped, which stops their sandbox).
            Some(early)
                if early.cwd == options.cwd
                    && early.sandbox.is_same(&options.sandbox)
                    && early.env_allow == options.config.env.allow =>
            {
                early.tools
            }
            _ => ToolBox::new(
                &options.cwd,
                options.sandbox.clone(),
                options.config.env.allow.clone(),
            )
            .map_err(|e| e.to_string())?,
        };
        // The sandbox's warm-up began in `ToolBox::new`, before the provider's set-up (its
        // certificate store), which it overlaps.
        let provider = provider_for(&selection, &options.config)?;
        let mut notices = Vec::new();
        let memory = if options.config.memory.enabled && !options.no_memory {
            let store = Arc::new(tools::memory::Store::new(
                &options.config.memory,
                &options.home,
                &options.cwd,
            ));
            notices = store.maintain(jiff::Zoned::now().date());
            Some(store)
        } else {
            None
        };
        // AGENTS.md holding text no one sees: the model gets it escaped; the person is told.
        notices.extend(crate::agent::prompt::hidden_in_instructions(
            &options.home,
            &options.cwd,
            options.context_files,
        ));
        let tools = equip(tools, &options, memory.as_ref())?;
        let gate = Gate::new(
            options.mode,
            options.terminal,
            Arc::clone(&options.approver),
        );
        let agent = Agent {
            provider,
            tools: Arc::new(tools),
            gate: Arc::new(gate),
            budget: crate::agent::context::ContextBudget::from(&options.config.context),
            images: selection
                .images
                .then(|| crate::agent::images::media_dir(&options.home)),
        };
        Ok(Conversation {
            options,
            agent,
            session,
            selection,
            queue: Arc::new(MessageQueue::new()),
            memory,
            notices,
            origin: None,
        })
    }

    /// Notices from opening the conversation (memory upkeep) for the frontend to show.
    pub fn notices(&self) -> &[String] {
        &self.notices
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    pub fn selection(&self) -> &Selection {
        &self.selection
    }

    /// Ends the conversation and hands its session back: the daemon keeps a session open
    /// between runs and builds a conversation per run (each run has its own approval mode).
    pub fn into_session(self) -> Session {
        self.session
    }

    /// The queue a UI adds steering and follow-up messages to.
    pub fn queue(&self) -> Arc<MessageQueue> {
        Arc::clone(&self.queue)
    }

    /// Renames the session (`--name`); a no-op when the name is unchanged.
    pub fn set_name(&mut self, name: &str) -> Result<(), String> {
        if self.session.transcript().name() == Some(name) {
            return Ok(());
        }
        self.session
            .set_name(name)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// The approval mode in force.
    pub fn mode(&self) -> Mode {
        self.options.mode
    }

    /// The sandbox setting commands run under.
    pub fn sandbox(&self) -> &SandboxSetting {
        &self.options.sandbox
    }

    /// The estimated prompt of the next request, and the budget it is held to (0: none).
    pub fn context_used(&self) -> Result<(u64, u32), String> {
        let system = self.system_prompt()?;
        let tools = self.agent.tool_definitions();
        Ok((
            context::estimated_prompt_tokens(&self.session, &system, &tools),
            self.agent.budget.max_prompt_tokens,
        ))
    }

    /// Switches the approval mode from the next turn on, with the approver that mode asks (a
    /// terminal one, or `NobodyToAsk`). The gate is new, so "always" grants of the old mode
    /// do not carry over into the new one.
    pub fn set_mode(&mut self, mode: Mode, approver: Arc<dyn Approver>) -> Result<(), String> {
        policies::check_startup(mode, self.options.terminal).map_err(|e| e.message)?;
        self.options.mode = mode;
        self.options.approver = approver;
        self.agent.gate = Arc::new(self.gate_for(mode));
        Ok(())
    }

    /// Names where every later call of this conversation comes from (`telegram:<chat id>`):
    /// the audit records it on each call.
    pub fn set_origin(&mut self, origin: &str) {
        self.origin = Some(origin.to_string());
        self.agent.gate = Arc::new(self.gate_for(self.options.mode));
    }

    fn gate_for(&self, mode: Mode) -> Gate {
        let gate = Gate::new(
            mode,
            self.options.terminal,
            Arc::clone(&self.options.approver),
        );
        match &self.origin {
            Some(origin) => gate.with_origin(origin),
            None => gate,
        }
    }

    /// Switches the sandbox (and its network policy) from the next turn on: the tools are
    /// built anew for it, and the old ones (and their sandbox) dropped. On an error nothing
    /// changes.
    pub fn set_sandbox(&mut self, sandbox: SandboxSetting) -> Result<(), String> {
        let base = ToolBox::new(
            &self.options.cwd,
            sandbox.clone(),
            self.options.config.env.allow.clone(),
        )
        .map_err(|e| e.to_string())?;
        let previous = std::mem::replace(&mut self.options.sandbox, sandbox);
        match equip(base, &self.options, self.memory.as_ref()) {
            Ok(tools) => {
                self.agent.tools = Arc::new(tools);
                Ok(())
            }
            Err(e) => {
                self.options.sandbox = previous;
                Err(e)
            }
        }
    }

    /// Whether tools of MCP servers are offered: those servers were started once, with the
    /// sandbox setting of the start, and a sandbox change does not restart them.
    pub fn has_external_tools(&self) -> bool {
        !self.options.external_tools.is_empty()
    }

    /// Records in the session a setting the person changed (`/approval`, `/sandbox`,
    /// `/network`), for the audit.
    pub fn record_policy(&mut self, setting: &str, from: &str, to: &str) -> Result<(), String> {
        self.session
            .append_policy(setting, from, to)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Continues in another session from the next turn on (`/resume`, `/clear`), with the
    /// model and settings of this one; returns the session left.
    pub fn replace_session(&mut self, session: Session) -> Session {
        std::mem::replace(&mut self.session, session)
    }

    /// Runs a turn with `prompt` as it is, never as a slash command (the frontend has decided:
    /// `//text` sends `/text`).
    pub async fn submit_text(
        &mut self,
        prompt: &str,
        sink: &EventSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<Submitted, TurnError> {
        self.run_prompt(prompt, sink, cancel).await
    }

    /// Handles a slash command, or runs a turn.
    pub async fn submit(
        &mut self,
        input: &str,
        sink: &EventSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<Submitted, TurnError> {
        let trimmed = input.trim();
        match trimmed {
            "/context" => {
                let system = self.system_prompt().map_err(TurnError::Setup)?;
                let tools = self.agent.tool_definitions();
                return Ok(Submitted::Control(context::context_report(
                    &self.session,
                    &system,
                    &tools,
                    &self.agent.budget,
                )));
            }
            "/compact" => {
                return context::compact_now(
                    &self.agent.provider,
                    &mut self.session,
                    &self.agent.budget,
                    cancel,
                )
                .await
                .map(Submitted::Control)
                .map_err(|e| TurnError::Setup(e.to_string()));
            }
            _ => {}
        }
        let mut prompt = input.to_string();
        if let Some(rest) = trimmed.strip_prefix('/') {
            match self.control(rest) {
                Some(Ok(Control::Reply(text))) => return Ok(Submitted::Control(text)),
                Some(Ok(Control::Prompt(text))) => prompt = text,
                Some(Err(message)) => return Err(TurnError::Setup(message)),
                None => {}
            }
        }
        self.run_prompt(&prompt, sink, cancel).await
    }

    async fn run_prompt(
        &mut self,
        prompt: &str,
        sink: &EventSink<'_>,
        cancel: &CancellationToken,
    ) -> Result<Submitted, TurnError> {
        if self
            .session
            .transcript()
            .last_model()
            .map(|(_, _, s)| s.to_string())
            != Some(self.selection.label())
        {
            self.session
                .append_model(&self.selection.provider, &self.selection.model)?;
        }
        let system = self.system_prompt().map_err(TurnError::Setup)?;
        self.agent
            .run_turn(
                &mut self.session,
                &system,
                prompt,
                &self.queue,
                sink,
                cancel,
            )
            .await
            .map(Submitted::Turn)
    }

    fn system_prompt(&self) -> Result<Vec<String>, String> {
        let mut parts = system_prompt(&PromptOptions {
            cwd: self.options.cwd.clone(),
            home: self.options.home.clone(),
            context_files: self.options.context_files,
            skills: self.options.skills,
            personal: self.personal_blocks(),
        })?;
        // One line about the network, so the model asks instead of retrying a refused host.
        if let (Some(first), Some(line)) = (
            parts.first_mut(),
            self.options.sandbox.network_prompt_line(),
        ) {
            first.push('\n');
            first.push_str(&line);
        }
        Ok(parts)
    }

    /// The user profile (unless `--no-memory`) and, when memory is on, its blocks.
    fn personal_blocks(&self) -> Vec<String> {
        let mut blocks = Vec::new();
        if self.options.no_memory {
            return blocks;
        }
        if let Some(block) =
            tools::memory::profile::load(&self.options.home).and_then(|p| p.prompt_block())
        {
            blocks.push(block);
        }
        if let Some(store) = &self.memory {
            let memory = &self.options.config.memory;
            blocks.extend(crate::agent::tools::memory::prompt_blocks(
                store,
                crate::agent::tools::memory::Budgets {
                    curated_tokens: memory.max_prompt_tokens,
                    daily_tokens: memory.daily_log_tail_tokens,
                },
                jiff::Zoned::now().date(),
            ));
        }
        blocks
    }

    /// `None`: not a known command, send it to the model as text.
    fn control(&mut self, command: &str) -> Option<Result<Control, String>> {
        let (name, arg) = match command.split_once(char::is_whitespace) {
            Some((n, a)) => (n, a.trim()),
            None => (command, ""),
        };
        if let Some(skill) = name.strip_prefix("skill:") {
            return Some(self.skill_prompt(skill, arg));
        }
        Some(match name {
            "model" if arg.is_empty() => {
                let mut text = format!(
                    "current model: {}\navailable models:",
                    self.selection.label()
                );
                for model in self.options.config.available_models() {
                    text.push_str(&format!("\n- {model}"));
                }
                Ok(Control::Reply(text))
            }
            "model" => self.switch_model(arg).map(Control::Reply),
            "name" if arg.is_empty() => {
                Ok(Control::Reply(match self.session.transcript().name() {
                    Some(name) if !name.is_empty() => name.to_string(),
                    _ => "session is unnamed; use /name <name>".to_string(),
                }))
            }
            "name" if arg == "--clear" => self
                .session
                .set_name("")
                .map(|_| Control::Reply("session name cleared".to_string()))
                .map_err(|e| e.to_string()),
            "name" => self
                .session
                .set_name(arg)
                .map(|_| Control::Reply(format!("session named: {arg}")))
                .map_err(|e| e.to_string()),
            "memory" => self.memory_control(arg).map(Control::Reply),
            _ => return None,
        })
    }

    /// `/memory` (status), `/memory add [--scope=S] [--target=T] TEXT`, `/memory show [daily]`,
    /// `/memory search QUERY`, `/memory rm ID`: the person's side of memory, in the session.
    fn memory_control(&self, arg: &str) -> Result<String, String> {
        use tools::memory::{Layer, Scope};
        let (sub, rest) = match arg.split_once(char::is_whitespace) {
            Some((s, r)) => (s, r.trim()),
            None => (arg, ""),
        };
        let Some(store) = &self.memory else {
            return if sub.is_empty() {
                Ok(if self.options.no_memory {
                    "memory is off for this run (--no-memory)".to_string()
                } else {
                    "memory is off (\"memory\": {\"enabled\": true} in ~/.gg/config.json turns it on)"
                        .to_string()
                })
            } else {
                Err("memory is disabled".to_string())
            };
        };
        let lines = |entries: Vec<tools::memory::Entry>, empty: &str| {
            if entries.is_empty() {
                empty.to_string()
            } else {
                entries
                    .iter()
                    .map(crate::agent::tools::memory::hit_line)
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        };
        match sub {
            "" => {
                let entries = store.list().map_err(|e| e.to_string())?;
                let c = &self.options.config.memory;
                Ok(format!(
                    "memory: on; {} entries; global {}; workspace {}; prompt budget {} tokens, \
                     today's log {} tokens",
                    entries.len(),
                    store.global_dir().display(),
                    store.display_path(Layer::Workspace, "").display(),
                    c.max_prompt_tokens,
                    c.daily_log_tail_tokens
                ))
            }
            "add" => {
                let mut scope = Scope::General;
                let mut target = Layer::Workspace;
                let mut words = rest.split_whitespace().peekable();
                while let Some(word) = words.peek() {
                    if let Some(s) = word.strip_prefix("--scope=") {
                        scope = Scope::parse(s).map_err(|e| e.to_string())?;
                    } else if let Some(t) = word.strip_prefix("--target=") {
                        target = Layer::parse(t).map_err(|e| e.to_string())?;
                    } else {
                        break;
                    }
                    words.next();
                }
                let text = words.collect::<Vec<_>>().join(" ");
                let entry = store
                    .add(&text, &scope, target)
                    .map_err(|e| e.to_string())?;
                Ok(crate::agent::tools::memory::added_line(&entry, &text))
            }
            "show" if rest.is_empty() => Ok(lines(
                store.curated().map_err(|e| e.to_string())?,
                "no memory",
            )),
            "show" if rest == "daily" => Ok(lines(
                store
                    .daily(jiff::Zoned::now().date())
                    .map_err(|e| e.to_string())?,
                "no log today",
            )),
            "search" => Ok(lines(
                store
                    .search(rest, tools::memory::SEARCH_LIMIT)
                    .map_err(|e| e.to_string())?,
                "no memory matches",
            )),
            "rm" if !rest.is_empty() => {
                let removed = store.remove(rest).map_err(|e| e.to_string())?;
                Ok(removed
                    .iter()
                    .map(|e| format!("removed {}: {}", e.id, e.text))
                    .collect::<Vec<_>>()
                    .join("\n"))
            }
            _ => Err(
                "usage: /memory [add [--scope=S] [--target=workspace|global] TEXT | show [daily] \
                 | search QUERY | rm ID]"
                    .to_string(),
            ),
        }
    }

    fn switch_model(&mut self, selection: &str) -> Result<String, String> {
        let overrides = Overrides {
            selection: None,
            api_key: self.options.overrides.api_key.clone(),
            base_url: self.options.overrides.base_url.clone(),
        };
        let next = self
            .options
            .config
            .select(&self.options.home, Some(selection), &overrides)?;
        self.agent.provider = provider_for(&next, &self.options.config)?;
        self.session
            .append_model(&next.provider, &next.model)
            .map_err(|e| e.to_string())?;
        let label = next.label();
        self.selection = next;
        Ok(format!("model switched to {label}"))
    }

    fn skill_prompt(&self, name: &str, task: &str) -> Result<Control, String> {
        let skill = discover_skills(&self.options.home, &self.options.cwd)
            .into_iter()
            .find(|s| s.name == name)
            .ok_or_else(|| format!("skill \"{name}\" not found"))?;
        let hidden = tools::paths::DenyRead::everywhere();
        let body = crate::agent::prompt::read_instructions(
            &skill.location,
            &self.options.home,
            &hidden,
            crate::agent::prompt::MAX_SKILL_BYTES,
        )?
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| {
            format!(
                "reading {}: not a readable skill file",
                skill.location.display()
            )
        })?;
        Ok(Control::Prompt(format!(
            "Use the skill \"{name}\" ({}):\n\n{body}\n\nTask: {task}",
            skill.location.display()
        )))
    }
}

/// Adds to the built-in tools everything a conversation offers besides them (MCP, computer,
/// memory, artifacts, library, browser, kb): shared by [`Conversation::open`] and a sandbox
/// change between turns, which needs a new tool box. (The box's `ToolBox::new` started the
/// sandbox's warm-up, on another thread, so that bubblewrap's set-up overlaps the provider's,
/// the session write and the first request; `run_turn` asks again, a no-op once begun.)
fn equip(
    mut tools: ToolBox,
    options: &ServiceOptions,
    memory: Option<&Arc<tools::memory::Store>>,
) -> Result<ToolBox, String> {
    tools.add_tools(options.external_tools.iter().cloned());
    if options.config.tools.computer {
        let computer =
            crate::agent::tools::computer::tools(&options.cwd, tools.session_tag().clone());
        tools.add_tools(computer);
    }
    if let Some(store) = memory {
        tools.add_tools(crate::agent::tools::memory::tools(Arc::clone(store)));
    }
    if options.config.artifacts.enabled {
        let store = options.config.artifact_store(&options.home);
        tools.add_tools(crate::agent::tools::artifacts::tools(store));
    }
    if options.config.library.enabled {
        // Offered only when there is something to read: an empty library would only cost
        // prompt tokens on every request.
        let library = options.config.library(&options.home);
        if library.list().is_ok_and(|entries| !entries.is_empty()) {
            tools.add_tools(crate::agent::tools::library::tools(library));
        }
    }
    if let Some(browser) = tools::browser::BrowserTools::new(
        &options.cwd,
        &options.home,
        &options.config.browser,
        options.sandbox.clone(),
    )
    .map_err(|e| e.to_string())?
    {
        tools.add_tools(crate::agent::tools::browser::tools(browser));
    }
    // The Google tools: asked for with `"tools": {"google": true}`, offered once signed in.
    if options.config.tools.google
        && let Some(tokens) = crate::connectors::google::token::load(&options.home)?
    {
        let config = &options.config.connectors.google;
        let google =
            crate::connectors::google::api::Google::new(options.home.clone(), config.clone())?;
        tools.add_tools(crate::agent::tools::google::tools(google, config, &tokens));
    }
    // kb_search: on unless `"kb": {"tool": false}`, and only once a knowledge base exists.
    if options.config.kb.tool {
        let kb = &options.config.kb;
        if let Some(tool) =
            crate::agent::tools::kb::tool(&options.home, kb.default_name(), kb.embeddings()?)
        {
            tools.add_tools([tool]);
        }
    }
    if options.config.tools.media {
        let media =
            super::media::resolve(&options.config, &options.home, &options.overrides, None)?;
        tools.add_tools(crate::agent::tools::media::tools(media, &options.cwd));
    }
    // A protection the sandbox self-test finds not holding is said to a person, and fails the
    // run where nobody would read it (unattended, or no terminal: CI).
    tools.set_person_present(
        options.terminal.is_present() && !matches!(options.mode, policies::Mode::Unattended { .. }),
    );
    Ok(tools)
}

enum Control {
    Reply(String),
    /// The command turns into a prompt for the model (`/skill:`).
    Prompt(String),
}
