//! The `gg` command line.
//!
//! Flags may stand anywhere: before or after the prompt, before or after a subcommand's operands.
//! `--` ends option parsing, so a prompt may start with `-`. A word that looks like an option and
//! is not one is a usage error (exit 2) naming it, never prompt text.
//!
//! The first positional word decides: a known subcommand runs it, anything else starts a prompt
//! (`gg fix the tests` needs no quotes), and later words are never taken for subcommands. The
//! same holds one level down for `gg job …` (`gg job well done` is a prompt). clap does the
//! parsing; [`prepare`] only tells it, before it starts, which of those two readings applies.
//!
//! Adding a flag to agent runs: a field in [`args::RunArgs`] (see its doc). Adding a subcommand:
//! a variant of [`Command`], its arm in [`main_from`], and its line in [`run_flags_allowed`] if
//! it reads any of the top-level run flags.

pub mod args;
mod artifact;
mod browser;
mod classify;
mod connect;
mod doctor;
mod editor;
mod error;
mod history;
mod interactive;
pub mod job;
mod kb;
mod markdown;
mod media;
mod memory;
pub mod pipe;
mod policy;
pub mod run;
mod run_flags;
mod sandbox;
mod self_test;
mod sessions;
mod shell;
mod slash;
pub mod terminal;
mod tool_status;
mod web;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use args::{ColorWhen, FirstWord, RunArgs};

// The about text does not start with "gg:": the manual page's NAME line puts the name in front.
/// A security-hardened terminal AI coding agent.
#[derive(Parser, Debug)]
#[command(
    name = "gg",
    version,
    disable_version_flag = true,
    disable_help_subcommand = true,
    override_usage = "gg [OPTIONS] [PROMPT]...\n       gg [OPTIONS] <COMMAND>",
    after_help = "Options may come before or after the prompt; use -- before a prompt that starts \
                  with '-'.\n\
                  The model's API key: OPENAI_API_KEY, --api-key-file FILE, or apiKey/apiKeyEnv in \
                  ~/.gg/config.json.\n\
                  Every bash command the agent runs is classified (gg classify), decided by the \
                  approval policy (gg policy show) and optionally sandboxed (gg sandbox)."
)]
struct Cli {
    /// Print version.
    #[arg(short = 'v', long = "version", action = ArgAction::Version)]
    version: Option<bool>,
    /// When to colour output.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t)]
    color: ColorWhen,
    #[command(flatten)]
    run: RunArgs,
    /// The prompt; several words are joined with spaces. Without one, gg starts the line
    /// interactive mode.
    #[arg(value_name = "PROMPT")]
    prompt: Vec<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Classify bash commands as read-only, normal or dangerous, with reasons (policy audits).
    Classify(classify::ClassifyArgs),
    /// Inspect the approval policy.
    #[command(subcommand)]
    Policy(policy::PolicyCommand),
    /// Run a command under the sandbox that the bash tool uses.
    Sandbox(sandbox::SandboxArgs),
    /// Sessions of the current directory.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Resume a session by id or path, optionally with a prompt.
    Resume(ResumeArgs),
    /// Scheduled jobs, fired by ggd under the unattended policy.
    Job(JobArgs),
    /// MCP servers from ~/.gg/mcp.json.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Print the audit trail of a session's tool calls.
    Audit {
        /// Session id or path (default: the latest session of this directory).
        session: Option<String>,
        /// One JSON object per tool call.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script (e.g. `source <(gg completions bash)`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff; e.g. `gg man | man -l -`).
    Man,
    /// Open the web UI (starts ggd on loopback if none runs) and print its address.
    Web(web::WebArgs),
    /// What gg remembers between sessions: list, show, search, add, rm, edit.
    Memory(MemoryArgs),
    /// Create your profile (~/.gg/USER.md) and the memory directories; never overwrites.
    Init(InitArgs),
    /// Artifacts: versioned documents the agent made (list, show, diff, publish, remove).
    Artifact(ArtifactArgs),
    /// The library: your own files, readable by the agent from any workspace.
    Library(LibraryArgs),
    /// Read or screenshot a page with the headless browser the agent uses.
    #[command(subcommand)]
    Browser(browser::BrowserCommand),
    /// Knowledge bases: index your documents for the kb_search tool.
    #[command(subcommand)]
    Kb(kb::KbCommand),
    /// What works here and why not: sandbox levels, helper, Chromium, config, provider, ggd, MCP.
    Doctor(doctor::DoctorArgs),
    /// Generate images, speak text and transcribe audio (OpenAI-compatible media endpoints).
    #[command(subcommand)]
    Media(media::MediaCommand),
    /// The Telegram channel ggd serves: whether it polls, the last update, the chats.
    #[command(subcommand)]
    Telegram(crate::telegram::cli::TelegramCommand),
    /// Sign in to Google for the Gmail and Calendar tools; status; revoke.
    #[command(subcommand)]
    Connect(connect::ConnectCommand),
}

/// `gg resume [TARGET [PROMPT]...]`, with every agent flag.
#[derive(Args, Debug)]
struct ResumeArgs {
    /// Session id (or unique prefix) or path; none opens the picker.
    target: Option<String>,
    /// A prompt to run in the resumed session.
    #[arg(value_name = "PROMPT")]
    prompt: Vec<String>,
    #[command(flatten)]
    run: RunArgs,
}

/// `gg job SUBCOMMAND`; any other word after `job` makes the whole line a prompt, so
/// `gg job well done` still talks to the agent (the first word decides). The
/// agent flags are accepted for that case but not shown in `gg job --help`.
#[derive(Args, Debug)]
#[command(mut_args = |a: clap::Arg| a.hide(true))]
struct JobArgs {
    #[command(subcommand)]
    command: Option<job::JobCommand>,
    words: Vec<String>,
    #[command(flatten)]
    run: RunArgs,
}

/// `gg memory SUBCOMMAND`; as for `gg job`, any other word after `memory` makes the whole line a
/// prompt (`gg memory leaks in the parser` talks to the agent); `gg memory` alone lists.
#[derive(Args, Debug)]
#[command(mut_args = |a: clap::Arg| a.hide(true))]
struct MemoryArgs {
    #[command(subcommand)]
    command: Option<memory::MemoryCommand>,
    words: Vec<String>,
    #[command(flatten)]
    run: RunArgs,
}

/// `gg artifact SUBCOMMAND`; as for `gg job`, any other word after `artifact` makes the whole line
/// a prompt (`gg artifact of the old build: explain it`); `gg artifact` alone lists.
#[derive(Args, Debug)]
#[command(mut_args = |a: clap::Arg| a.hide(true))]
struct ArtifactArgs {
    #[command(subcommand)]
    command: Option<artifact::ArtifactCommand>,
    words: Vec<String>,
    #[command(flatten)]
    run: RunArgs,
}

/// `gg library SUBCOMMAND`; any other word makes the line a prompt (`gg library upgrade broke
/// the build`); `gg library` alone lists.
#[derive(Args, Debug)]
#[command(mut_args = |a: clap::Arg| a.hide(true))]
struct LibraryArgs {
    #[command(subcommand)]
    command: Option<artifact::LibraryCommand>,
    words: Vec<String>,
    #[command(flatten)]
    run: RunArgs,
}

/// `gg init` alone creates the profile; with words the line is a prompt (`gg init the repo`).
#[derive(Args, Debug)]
#[command(mut_args = |a: clap::Arg| a.hide(true))]
struct InitArgs {
    words: Vec<String>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand, Debug)]
enum McpCommand {
    /// Connect to each configured server and show its state and tools.
    List,
}

#[derive(Subcommand, Debug)]
enum SessionsCommand {
    /// List the sessions of the current directory.
    List,
}

/// A parsed command line: an agent run (`command: None`) or another subcommand.
#[derive(Debug)]
struct Invocation {
    color: ColorWhen,
    run: RunArgs,
    prompt: Vec<String>,
    /// `gg resume`: `Some(None)` opens the picker, `Some(Some(target))` resumes that session.
    resume: Option<Option<String>>,
    command: Option<Command>,
}

impl Invocation {
    /// `gg <name> WORDS…`: a prompt that starts with the subcommand's name (`gg memory what do
    /// you know` asks the agent; `gg memory list` is the memory command).
    fn worded(color: ColorWhen, name: &str, words: Vec<String>, run: RunArgs) -> Invocation {
        Invocation {
            color,
            run,
            prompt: std::iter::once(name.to_string()).chain(words).collect(),
            resume: None,
            command: None,
        }
    }
}

/// Builds the clap command for `args` (program name first): decides whether the first
/// positional word is a subcommand or the start of a prompt, turns `gg help [COMMAND…]` into
/// `--help`, and applies `--color` to clap's own output.
fn prepare(mut args: Vec<OsString>) -> (clap::Command, Vec<OsString>) {
    let color = match colour_flag(args.get(1..).unwrap_or_default()) {
        Some(ColorWhen::Always) => clap::ColorChoice::Always,
        Some(ColorWhen::Never) => clap::ColorChoice::Never,
        _ if !crate::app::no_color_env() => clap::ColorChoice::Auto,
        _ => clap::ColorChoice::Never,
    };
    // Built once, with the colour (propagated to the subcommands by the build), both to read the
    // words and to parse them: building clap's command for this many subcommands and flags is a
    // good part of gg's start-up. `args_conflicts_with_subcommands` is read when parsing, so
    // setting it on the built command below still takes effect.
    let mut cmd = Cli::command().color(color);
    cmd.build();
    let built = &cmd;
    let rest = args.get(1..).unwrap_or_default().to_vec();
    match args::first_word(built, &rest) {
        FirstWord::None => {}
        FirstWord::At(i) if rest[i] == "help" => {
            let after = &rest[i + 1..];
            let names_a_command = match args::first_word(built, after) {
                FirstWord::At(j) => j == 0 && args::is_subcommand(built, &after[0]),
                _ => after.is_empty(),
            };
            if names_a_command {
                let at = i + 1;
                args.remove(at);
                args.push("--help".into());
            } else {
                cmd = cmd.args_conflicts_with_subcommands(true);
            }
        }
        FirstWord::At(i) if args::is_subcommand(built, &rest[i]) => {
            // `job`, `memory`, `artifact` and `library` have subcommands of their own: the next
            // word decides again.
            let name = rest[i].to_string_lossy().into_owned();
            if matches!(name.as_str(), "job" | "memory" | "artifact" | "library")
                && let Some(parent) = built.find_subcommand(&name)
            {
                let after = &rest[i + 1..];
                let words = match args::first_word(parent, after) {
                    FirstWord::None => false,
                    FirstWord::At(j) => !args::is_subcommand(parent, &after[j]),
                    FirstWord::AfterDashes(_) => true,
                };
                if words {
                    cmd = cmd.mut_subcommand(&name, |c| c.args_conflicts_with_subcommands(true));
                }
            }
        }
        FirstWord::At(_) | FirstWord::AfterDashes(_) => {
            cmd = cmd.args_conflicts_with_subcommands(true);
        }
    }
    (cmd, args)
}

/// The last `--color WHEN` before `--`, read ahead of parsing so that clap's own help and
/// errors follow it too.
fn colour_flag(args: &[OsString]) -> Option<ColorWhen> {
    let mut found = None;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let value = match word.to_str() {
            Some("--") => break,
            Some("--color") => words.next().and_then(|v| v.to_str()),
            Some(w) => w.strip_prefix("--color="),
            None => None,
        };
        found = match value {
            Some("always") => Some(ColorWhen::Always),
            Some("never") => Some(ColorWhen::Never),
            Some("auto") => Some(ColorWhen::Auto),
            _ => found,
        };
    }
    found
}

/// Top-level agent flags that a subcommand reads; any other given before a subcommand is an
/// error rather than silently ignored.
fn run_flags_allowed(command: &Command) -> &'static [&'static str] {
    match command {
        Command::Sessions(_) | Command::Audit { .. } => &["session_dir"],
        Command::Memory(MemoryArgs { command: None, .. }) | Command::Init(_) => &["*"],
        Command::Memory(_) => &["directory"],
        Command::Mcp(_) | Command::Browser(_) => &["sandbox"],
        Command::Resume(_) => &["*"],
        Command::Artifact(ArtifactArgs { words, .. })
        | Command::Library(LibraryArgs { words, .. })
            if !words.is_empty() =>
        {
            &["*"]
        }
        Command::Job(JobArgs { command: None, .. }) => &["*"],
        Command::Media(_) => &["model", "base_url", "api_key", "api_key_file"],
        _ => &[],
    }
}

fn parse(args: Vec<OsString>) -> Result<Invocation, clap::Error> {
    let (mut cmd, args) = prepare(args);
    let matches = cmd.try_get_matches_from_mut(args)?;
    let cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))?;
    if let Some(command) = &cli.command {
        let allowed = run_flags_allowed(command);
        if allowed != ["*"] {
            let sub = matches.subcommand_name().unwrap_or_default().to_string();
            if let Some(flag) = given_run_flags(&matches).find(|id| !allowed.contains(&id.as_str()))
            {
                let name = cmd
                    .get_arguments()
                    .find(|a| a.get_id() == flag.as_str())
                    .map(display_name)
                    .unwrap_or(flag);
                return Err(cmd.error(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!("{name} does not apply to 'gg {sub}'"),
                ));
            }
        }
    }
    let fail = |message: String| {
        cmd.clone()
            .error(clap::error::ErrorKind::ArgumentConflict, message)
    };
    let Cli {
        color,
        run,
        prompt,
        command,
        ..
    } = cli;
    Ok(match command {
        Some(Command::Resume(resume)) => Invocation {
            color,
            run: run.merge(resume.run).map_err(fail)?,
            prompt: resume.prompt,
            resume: Some(resume.target),
            command: None,
        },
        Some(Command::Job(JobArgs {
            command: None,
            words,
            run: job_run,
        })) if !words.is_empty() => {
            Invocation::worded(color, "job", words, run.merge(job_run).map_err(fail)?)
        }
        Some(Command::Job(JobArgs {
            command: None,
            run: job_run,
            ..
        })) if job_run != RunArgs::default() => {
            return Err(fail(
                "agent options need a prompt; 'gg job' alone lists jobs".into(),
            ));
        }
        Some(Command::Memory(MemoryArgs {
            command: None,
            words,
            run: memory_run,
        })) if !words.is_empty() => {
            Invocation::worded(color, "memory", words, run.merge(memory_run).map_err(fail)?)
        }
        Some(Command::Artifact(ArtifactArgs {
            words, run: own, ..
        })) if !words.is_empty() => {
            Invocation::worded(color, "artifact", words, run.merge(own).map_err(fail)?)
        }
        Some(Command::Library(LibraryArgs {
            words, run: own, ..
        })) if !words.is_empty() => {
            Invocation::worded(color, "library", words, run.merge(own).map_err(fail)?)
        }
        Some(Command::Artifact(ArtifactArgs { run: own, .. }))
        | Some(Command::Library(LibraryArgs { run: own, .. }))
            if own != RunArgs::default() =>
        {
            return Err(fail(
                "agent options need a prompt; they do not apply to 'gg artifact' or 'gg library'"
                    .into(),
            ));
        }
        Some(Command::Init(InitArgs {
            words,
            run: init_run,
        })) if !words.is_empty() => {
            Invocation::worded(color, "init", words, run.merge(init_run).map_err(fail)?)
        }
        Some(Command::Init(InitArgs { run: init_run, .. }))
            if init_run != RunArgs::default() || run != RunArgs::default() =>
        {
            return Err(fail(
                "agent options need a prompt; 'gg init' alone creates your profile".into(),
            ));
        }
        Some(Command::Memory(MemoryArgs {
            command,
            run: memory_run,
            words,
        })) => {
            // Only -C applies to the memory commands; it may stand before or after `memory`.
            let directory = memory_run.directory.clone();
            let other = RunArgs {
                directory: None,
                ..memory_run
            };
            let top_other = RunArgs {
                directory: None,
                ..run.clone()
            };
            if other != RunArgs::default() || top_other != RunArgs::default() {
                return Err(fail(
                    "agent options need a prompt; they do not apply to 'gg memory'".into(),
                ));
            }
            let run = run
                .merge(RunArgs {
                    directory,
                    ..RunArgs::default()
                })
                .map_err(fail)?;
            Invocation {
                color,
                run,
                prompt,
                resume: None,
                command: Some(Command::Memory(MemoryArgs {
                    command,
                    words,
                    run: RunArgs::default(),
                })),
            }
        }
        command => Invocation {
            color,
            run,
            prompt,
            resume: None,
            command,
        },
    })
}

/// The ids of top-level agent flags typed on the command line (environment defaults excluded).
fn given_run_flags(matches: &ArgMatches) -> impl Iterator<Item = String> + '_ {
    let ids: Vec<String> = RunArgs::augment_args(clap::Command::new("gg"))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    ids.into_iter()
        .filter(|id| matches.value_source(id) == Some(ValueSource::CommandLine))
}

fn display_name(arg: &clap::Arg) -> String {
    match (arg.get_long(), arg.get_short()) {
        (Some(long), _) => format!("--{long}"),
        (None, Some(short)) => format!("-{short}"),
        (None, None) => arg.get_id().to_string(),
    }
}

pub fn main() -> ExitCode {
    pipe::quiet_on_closed_stdout();
    // The command line as typed: the start-up may have re-executed gg with secrets hidden.
    let code = main_from(tools::secrets::args_os());
    // A `SIGTERM` or `SIGHUP` that cancelled a turn ends gg by that signal once the turn has
    // ended, not with the turn's status (`sandbox::leftovers::stoppable`).
    ::sandbox::leftovers::end_if_terminating();
    code
}

/// Runs gg on an explicit command line (program name first).
pub fn main_from(args: Vec<OsString>) -> ExitCode {
    if let [_, only] = args.as_slice()
        && (only == "--version" || only == "-v")
    {
        // Answered before clap builds the whole command definition, which is most of what
        // `gg --version` would otherwise spend in gg's own code.
        // As clap does: a closed stdout is not an error worth a panic.
        let _ = std::io::Write::write_all(&mut std::io::stdout(), version_line().as_bytes());
        return ExitCode::SUCCESS;
    }
    let invocation = match parse(args) {
        Ok(invocation) => invocation,
        Err(e) => {
            // clap exits 0 for --help/--version and 2 for usage errors.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    terminal::set_colour(invocation.color);
    // Before any sandbox, proxy or browser directory exists: a `kill` or a closed terminal must
    // not leave them behind (in the project, the empty mount points bubblewrap creates). The
    // handler is set up when the first such directory is registered.
    ::sandbox::leftovers::remove_on_termination(|e| {
        eprintln!(
            "gg: note: temporary directories may be left behind if gg is killed \
             (SIGTERM/SIGHUP handler: {e})"
        );
    });
    let run = invocation.run;
    match invocation.command {
        Some(Command::Classify(args)) => classify::run(args),
        Some(Command::Policy(command)) => policy::run(command),
        Some(Command::Sandbox(args)) => sandbox::run(args),
        Some(Command::Sessions(SessionsCommand::List)) => {
            sessions::list(run.session_dir.as_deref())
        }
        Some(Command::Mcp(McpCommand::List)) => mcp_list(run.sandbox),
        Some(Command::Job(JobArgs {
            command: Some(command),
            ..
        })) => job::run(command),
        Some(Command::Job(JobArgs { command: None, .. })) => {
            job::run(job::JobCommand::List { all: false })
        }
        Some(Command::Audit { session, json }) => {
            sessions::audit(session.as_deref(), json, run.session_dir.as_deref())
        }
        Some(Command::Completions { shell }) => shell::completions(shell, Cli::command()),
        Some(Command::Man) => shell::man(Cli::command()),
        Some(Command::Web(args)) => web::run(args),
        Some(Command::Memory(MemoryArgs {
            command: Some(command),
            ..
        })) => memory::run(command, run.directory.as_deref()),
        Some(Command::Memory(MemoryArgs { command: None, .. })) => memory::run(
            memory::MemoryCommand::List { json: false },
            run.directory.as_deref(),
        ),
        Some(Command::Init(_)) => memory::init(),
        Some(Command::Artifact(ArtifactArgs { command, .. })) => artifact::run_artifact(command),
        Some(Command::Library(LibraryArgs { command, .. })) => artifact::run_library(command),
        Some(Command::Browser(command)) => browser::run(command, run.sandbox),
        Some(Command::Kb(command)) => kb::run(command),
        Some(Command::Doctor(args)) => doctor::run(args),
        Some(Command::Media(command)) => media::run(command, &run.provider),
        Some(Command::Telegram(command)) => crate::telegram::cli::run(command),
        Some(Command::Connect(command)) => connect::run(command),
        Some(Command::Resume(_)) | None => {
            run::run(run_flags(run, invocation.prompt, invocation.resume))
        }
    }
}

/// What `gg --version` prints: the same line clap's version flag prints (a test holds them
/// equal).
fn version_line() -> String {
    format!("gg {}\n", env!("CARGO_PKG_VERSION"))
}

fn run_flags(run: RunArgs, prompt: Vec<String>, resume: Option<Option<String>>) -> run::RunFlags {
    let resume_picker = run.resume || matches!(resume, Some(None));
    run::RunFlags {
        print: run.print,
        prompt,
        model: run.provider.model,
        base_url: run.provider.base_url,
        api_key: run.provider.api_key,
        api_key_file: run.provider.api_key_file,
        approval: run.approval,
        yolo: run.yolo,
        sandbox: run.sandbox,
        network: run.network,
        allow_domains: run.allow_domain,
        usage: run.usage,
        no_skills: run.no_skills,
        no_context_files: run.no_context_files,
        no_memory: run.no_memory,
        json: run.json,
        directory: run.directory,
        fail_on_deny: run.fail_on_deny,
        session: sessions::SessionFlags {
            no_session: run.no_session,
            continue_last: run.continue_last,
            resume_picker,
            resume_target: resume.flatten(),
            session_file: run.session_file,
            session_dir: run.session_dir,
            name: run.name,
        },
    }
}

/// `gg mcp list`: connects to every configured server (under the sandbox with `--sandbox`), prints
/// its state and tools, and stops the servers again.
fn mcp_list(sandboxed: bool) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("gg mcp list: {e}");
            return ExitCode::from(1);
        }
    };
    let home = tools::security::home_dir();
    let sandbox = tools::registry::SandboxSetting::enabled(sandboxed);
    let path = crate::mcp::config_path(&home);
    let statuses = runtime.block_on(crate::mcp::list(
        &path,
        &crate::mcp::ConnectOptions::new(&home, sandbox),
    ));
    print!("{}", crate::mcp::render_list(&path, &statuses));
    ExitCode::SUCCESS
}

/// Whether a person can answer a prompt: stdin **and** stderr are terminals (the prompt goes to
/// stderr, the answer comes from stdin; stdout alone is not enough).
pub fn terminal_present() -> policies::Terminal {
    policies::Terminal::from_bool(std::io::stdin().is_terminal() && std::io::stderr().is_terminal())
}

#[cfg(test)]
mod tests;
