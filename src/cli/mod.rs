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
    main_from(tools::secrets::args_os())
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
mod tests {
    use super::*;
    use clap::error::ErrorKind;

    fn parse_words(words: &[&str]) -> Result<Invocation, clap::Error> {
        let mut args: Vec<OsString> = vec!["gg".into()];
        args.extend(words.iter().map(OsString::from));
        parse(args)
    }

    fn ok(words: &[&str]) -> Invocation {
        match parse_words(words) {
            Ok(invocation) => invocation,
            Err(e) => panic!("{words:?}: {e}"),
        }
    }

    /// Every agent flag, spelled as a user would type it (with a value when it takes one).
    fn every_run_flag() -> Vec<Vec<String>> {
        let cmd = RunArgs::augment_args(clap::Command::new("gg"));
        let mut flags = Vec::new();
        for arg in cmd.get_arguments() {
            let takes_value = !matches!(arg.get_action(), ArgAction::SetTrue);
            let mut spellings = Vec::new();
            if let Some(long) = arg.get_long() {
                spellings.push(format!("--{long}"));
            }
            if let Some(short) = arg.get_short() {
                spellings.push(format!("-{short}"));
            }
            for alias in arg.get_visible_aliases().unwrap_or_default() {
                spellings.push(format!("--{alias}"));
            }
            for spelling in spellings {
                let mut flag = vec![spelling.clone()];
                if takes_value {
                    flag.push(format!("value-of-{}", arg.get_id()));
                }
                flags.push(flag);
                if takes_value && spelling.starts_with("--") {
                    flags.push(vec![format!("{spelling}=value-of-{}", arg.get_id())]);
                }
            }
        }
        assert!(flags.len() > 20, "introspection found the flags: {flags:?}");
        flags
    }

    /// Whether the flag spelled `spelling` may be given several times.
    fn repeatable(spelling: &str) -> bool {
        let cmd = RunArgs::augment_args(clap::Command::new("gg"));
        cmd.get_arguments().any(|arg| {
            arg.get_long().is_some_and(|l| spelling == format!("--{l}"))
                && matches!(arg.get_action(), ArgAction::Append)
        })
    }

    fn with<'a>(parts: &[&'a [String]]) -> Vec<&'a str> {
        parts
            .iter()
            .flat_map(|p| p.iter().map(String::as_str))
            .collect()
    }

    #[test]
    fn every_flag_is_parsed_wherever_it_stands() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<String>>();
        let fix = words(&["fix", "it"]);
        let (fix0, fix1) = (words(&["fix"]), words(&["it"]));
        let dashes = words(&["--"]);
        let dash_prompt = words(&["-x", "it"]);
        let resume = words(&["resume", "abc123"]);
        let (job_well, done) = (words(&["job", "well"]), words(&["done"]));
        for flag in every_run_flag() {
            let before = ok(&with(&[&flag, &fix]));
            assert_ne!(before.run, RunArgs::default(), "{flag:?} had no effect");
            assert_eq!(before.prompt, fix, "{flag:?}");
            assert!(before.command.is_none() && before.resume.is_none());
            for line in [with(&[&fix0, &flag, &fix1]), with(&[&fix, &flag])] {
                let after = ok(&line);
                assert_eq!(after.run, before.run, "{line:?}");
                assert_eq!(after.prompt, fix, "{line:?}");
            }
            // `--` ends the options: a prompt may start with '-', and a flag after it is text.
            let line = with(&[&flag, &dashes, &dash_prompt]);
            let dashed = ok(&line);
            assert_eq!(dashed.run, before.run, "{line:?}");
            assert_eq!(dashed.prompt, dash_prompt, "{line:?}");
            let line = with(&[&fix, &dashes, &flag]);
            let literal = ok(&line);
            assert_eq!(literal.run, RunArgs::default(), "{line:?}");
            assert_eq!(literal.prompt, with(&[&fix, &flag]), "{line:?}");
            // `gg resume ID PROMPT`: before the subcommand, after the target, after the prompt.
            for line in [
                with(&[&flag, &resume, &fix]),
                with(&[&resume, &flag, &fix]),
                with(&[&resume, &fix, &flag]),
                with(&[&resume, &fix0, &flag, &fix1]),
            ] {
                let resumed = ok(&line);
                assert_eq!(resumed.run, before.run, "{line:?}");
                assert_eq!(resumed.prompt, fix, "{line:?}");
                assert_eq!(resumed.resume, Some(Some("abc123".to_string())), "{line:?}");
            }
            let line = with(&[&resume, &fix, &dashes, &flag]);
            assert_eq!(ok(&line).prompt, with(&[&fix, &flag]), "{line:?}");
            // A prompt that starts with the word `job`.
            let line = with(&[&job_well, &flag, &done]);
            let job = ok(&line);
            assert_eq!(job.run, before.run, "{line:?}");
            assert_eq!(job.prompt, ["job", "well", "done"], "{line:?}");
            // A value typed before and after `resume` is one value too many (a repeatable
            // flag such as --allow-domain collects both).
            if flag.len() == 2 && !repeatable(&flag[0]) {
                let line = with(&[&flag, &resume, &flag]);
                let err = parse_words(&line).unwrap_err();
                assert_eq!(err.exit_code(), 2, "{line:?}");
            }
        }
    }

    #[test]
    fn unknown_options_are_usage_errors_never_prompt_text() {
        for (line, named, suggestion) in [
            (&["-p", "hi", "--bogus"][..], "--bogus", None),
            (&["--bogus", "-p", "hi"][..], "--bogus", None),
            (&["-p", "hi", "--sandbx"][..], "--sandbx", Some("--sandbox")),
            (&["fix", "it", "--yolo=1"][..], "--yolo", None),
            (&["fix", "-x"][..], "-x", None),
            (
                &["resume", "abc", "go", "--yollo"][..],
                "--yollo",
                Some("--yolo"),
            ),
            (&["job", "well", "done", "--bogus"][..], "--bogus", None),
            (
                &[
                    "job",
                    "add",
                    "--name",
                    "n",
                    "--in",
                    "2s",
                    "go",
                    "--alow-all",
                ][..],
                "--alow-all",
                Some("--allow-all"),
            ),
        ] {
            let err = parse_words(line).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{line:?}");
            let text = err.render().to_string();
            assert!(text.contains(named), "{line:?}: {text}");
            if let Some(close) = suggestion {
                assert!(
                    text.contains(&format!("similar argument exists: '{close}")),
                    "{line:?}: {text}"
                );
            }
        }
    }

    #[test]
    fn the_first_word_decides_and_later_words_are_never_subcommands() {
        assert_eq!(ok(&["fix", "the", "tests"]).prompt, ["fix", "the", "tests"]);
        let later = ok(&["fix", "--yolo", "job", "sandbox", "resume"]);
        assert_eq!(later.prompt, ["fix", "job", "sandbox", "resume"]);
        assert!(later.run.yolo && later.command.is_none());
        assert!(matches!(ok(&["--yolo", "-p", "hi"]).prompt.as_slice(), [p] if p == "hi"));
        assert!(matches!(
            ok(&["classify", "ls"]).command,
            Some(Command::Classify(_))
        ));
        assert!(matches!(
            ok(&["-C", "x", "resume", "id"]).resume,
            Some(Some(ref id)) if id == "id"
        ));
        assert_eq!(ok(&["--", "classify", "ls"]).prompt, ["classify", "ls"]);
        assert_eq!(ok(&["help", "me", "out"]).prompt, ["help", "me", "out"]);
        assert_eq!(ok(&["job"]).prompt, Vec::<String>::new());
        assert!(matches!(
            ok(&["job"]).command,
            Some(Command::Job(JobArgs { command: None, .. }))
        ));
        for line in [&["help"][..], &["help", "job"], &["job", "--help"], &["-h"]] {
            assert_eq!(
                parse_words(line).unwrap_err().kind(),
                ErrorKind::DisplayHelp,
                "{line:?}"
            );
        }
        let resume = ok(&["resume"]);
        assert_eq!(resume.resume, Some(None), "no target opens the picker");
    }

    #[test]
    fn agent_flags_before_other_subcommands_are_refused_not_ignored() {
        for line in [
            &["--yolo", "classify", "ls"][..],
            &["--json", "audit"],
            &["-p", "job", "list"],
        ] {
            let err = parse_words(line).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{line:?}");
            assert!(
                err.to_string().contains("does not apply"),
                "{line:?}: {err}"
            );
        }
        let audit = ok(&["--session-dir", "s", "audit"]);
        assert_eq!(
            audit.run.session_dir.as_deref(),
            Some(std::path::Path::new("s"))
        );
        assert!(ok(&["--sandbox", "mcp", "list"]).run.sandbox);
        assert_eq!(
            ok(&["--color", "never", "classify", "ls"]).color,
            ColorWhen::Never
        );
        assert_eq!(
            ok(&["classify", "ls", "--color=always"]).color,
            ColorWhen::Always
        );
    }

    #[test]
    fn job_add_flags_stand_anywhere_and_dashes_protect_the_prompt() {
        let add = |words: &[&str]| -> job::AddArgs {
            match ok(words).command {
                Some(Command::Job(JobArgs {
                    command: Some(job::JobCommand::Add(args)),
                    ..
                })) => args,
                other => panic!("{words:?}: {other:?}"),
            }
        };
        let flags: [&[&str]; 8] = [
            &["--in", "2s"],
            &["--timezone", "UTC"],
            &["--timeout", "1m"],
            &["--allow-all"],
            &["--no-sandbox"],
            &["--network", "off"],
            &["--allow-domain", "registry.test"],
            &["--name", "n"],
        ];
        let base = ["--cron", "@daily"];
        for flag in flags {
            let mut before = vec!["job", "add", "--name", "x"];
            before.extend(flag);
            before.extend(["do", "it"]);
            let mut after = vec!["job", "add", "--name", "x", "do"];
            after.extend(flag);
            after.push("it");
            if flag[0] == "--in" || flag[0] == "--name" {
                continue;
            }
            before.extend(base);
            after.extend(base);
            let (a, b) = (add(&before), add(&after));
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{flag:?}");
            assert_eq!(a.prompt, ["do", "it"]);
        }
        let a = add(&["job", "add", "--name", "x", "do", "--in", "2s", "it"]);
        assert_eq!(
            (a.in_.as_deref(), a.prompt.as_slice()),
            (Some("2s"), &["do".to_string(), "it".to_string()][..])
        );
        let a = add(&[
            "job",
            "add",
            "--name",
            "x",
            "--in",
            "2s",
            "--",
            "--allow-all",
            "-x",
        ]);
        assert!(!a.allow_all);
        assert_eq!(a.prompt, ["--allow-all", "-x"]);
    }

    #[test]
    fn the_quick_version_line_is_the_one_clap_prints() {
        assert_eq!(Cli::command().render_version(), version_line());
    }

    #[test]
    fn colour_flag_is_read_ahead_of_parsing() {
        let words = |w: &[&str]| w.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            colour_flag(&words(&["--color", "never"])),
            Some(ColorWhen::Never)
        );
        assert_eq!(
            colour_flag(&words(&["x", "--color=always"])),
            Some(ColorWhen::Always)
        );
        assert_eq!(colour_flag(&words(&["--", "--color=always"])), None);
    }

    #[test]
    fn the_command_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn memory_and_init_are_commands_only_when_the_next_word_says_so() {
        assert!(matches!(
            ok(&["memory", "list"]).command,
            Some(Command::Memory(MemoryArgs {
                command: Some(memory::MemoryCommand::List { json: false }),
                ..
            }))
        ));
        let prompt = ok(&["memory", "leaks", "in", "the", "parser"]);
        assert_eq!(prompt.prompt, ["memory", "leaks", "in", "the", "parser"]);
        assert!(prompt.command.is_none());
        let with_flag = ok(&["--yolo", "init", "the", "repo"]);
        assert_eq!(with_flag.prompt, ["init", "the", "repo"]);
        assert!(with_flag.run.yolo && with_flag.command.is_none());
        assert!(matches!(ok(&["init"]).command, Some(Command::Init(_))));
        let here = ok(&["-C", "dir", "memory", "search", "x"]);
        assert_eq!(
            here.run.directory.as_deref(),
            Some(std::path::Path::new("dir"))
        );
        let after = ok(&["memory", "-C", "dir"]);
        assert_eq!(
            after.run.directory.as_deref(),
            Some(std::path::Path::new("dir"))
        );
        for line in [
            &["--yolo", "memory", "list"][..],
            &["--yolo", "init"],
            &["memory", "--yolo"],
        ] {
            assert_eq!(parse_words(line).unwrap_err().exit_code(), 2, "{line:?}");
        }
    }

    #[test]
    fn artifact_and_library_are_commands_only_when_the_next_word_says_so() {
        assert!(matches!(
            ok(&["artifact", "diff", "abcd", "1", "2"]).command,
            Some(Command::Artifact(ArtifactArgs {
                command: Some(artifact::ArtifactCommand::Diff {
                    from: Some(1),
                    to: Some(2),
                    ..
                }),
                ..
            }))
        ));
        assert!(matches!(
            ok(&["library", "add", "f.md", "--name", "x.md"]).command,
            Some(Command::Library(LibraryArgs {
                command: Some(artifact::LibraryCommand::Add { .. }),
                ..
            }))
        ));
        assert!(matches!(
            ok(&["library"]).command,
            Some(Command::Library(LibraryArgs { command: None, .. }))
        ));
        let prompt = ok(&["--yolo", "library", "upgrade", "broke", "the", "build"]);
        assert_eq!(
            prompt.prompt,
            ["library", "upgrade", "broke", "the", "build"]
        );
        assert!(prompt.run.yolo && prompt.command.is_none());
        let prompt = ok(&["artifact", "of", "the", "old", "build", "--yolo"]);
        assert_eq!(prompt.prompt, ["artifact", "of", "the", "old", "build"]);
        assert!(prompt.run.yolo && prompt.command.is_none());
        for line in [
            &["--yolo", "artifact", "list"][..],
            &["artifact", "--yolo"],
            &["library", "--yolo", "list"],
        ] {
            assert_eq!(parse_words(line).unwrap_err().exit_code(), 2, "{line:?}");
        }
    }
}
