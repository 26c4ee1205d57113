//! The `gg` command line.
//!
//! The first positional word decides: a known subcommand runs it, anything else is the start of
//! a prompt (clap's external-subcommand slot catches it), so `gg fix the tests` needs no quotes.

mod classify;
pub mod job;
mod policy;
pub mod run;
mod sandbox;
mod sessions;
pub mod terminal;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{ArgAction, Parser, Subcommand};

/// gg: a security-hardened terminal AI coding agent.
#[derive(Parser, Debug)]
#[command(
    name = "gg",
    version,
    disable_version_flag = true,
    allow_external_subcommands = true,
    after_help = "Every bash command the agent runs is classified (gg classify), decided by the \
                  approval policy (gg policy show) and optionally sandboxed (gg sandbox)."
)]
struct Cli {
    /// Print version.
    #[arg(short = 'v', long = "version", action = ArgAction::Version)]
    version: Option<bool>,

    /// One-shot mode: run the prompt, print the final reply, exit.
    #[arg(short = 'p', long = "print")]
    print: bool,
    /// The model, as provider:model.
    #[arg(long, value_name = "PROVIDER:MODEL")]
    model: Option<String>,
    /// Override the provider's base URL (e.g. http://127.0.0.1:11434/v1 for a local server).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Override the provider's API key.
    #[arg(long, value_name = "KEY")]
    api_key: Option<String>,
    /// Approval mode: auto, on-request, yolo or never.
    #[arg(long, value_name = "MODE")]
    approval: Option<String>,
    /// Same as --approval yolo: allow without asking, except dangerous commands.
    #[arg(long)]
    yolo: bool,
    /// Run bash under the sandbox (working directory writable, the rest read-only).
    #[arg(long)]
    sandbox: bool,
    /// Print token usage to stderr after each run.
    #[arg(long)]
    usage: bool,
    /// Skip .agents/skills discovery.
    #[arg(long)]
    no_skills: bool,
    /// Skip AGENTS.md discovery.
    #[arg(long)]
    no_context_files: bool,
    /// Accepted for compatibility; gg has no memory layer.
    #[arg(long, hide = true)]
    no_memory: bool,
    /// Print one JSON event per line on stdout (for CI).
    #[arg(long)]
    json: bool,
    /// Run in DIR instead of the current directory.
    #[arg(short = 'C', value_name = "DIR")]
    directory: Option<std::path::PathBuf>,
    /// Exit 3 when any tool call was denied.
    #[arg(long)]
    fail_on_deny: bool,
    /// Do not persist the conversation.
    #[arg(long)]
    no_session: bool,
    /// Resume the latest session of this directory.
    #[arg(long = "continue", visible_alias = "last")]
    continue_last: bool,
    /// Pick a session to resume.
    #[arg(short = 'r', long = "resume")]
    resume: bool,
    /// Use this session file.
    #[arg(long = "session", value_name = "FILE")]
    session_file: Option<std::path::PathBuf>,
    /// Session root directory (default: $GG_SESSION_DIR, else ~/.gg/sessions).
    #[arg(long, value_name = "DIR")]
    session_dir: Option<std::path::PathBuf>,
    /// Session display name.
    #[arg(short = 'n', long = "name", value_name = "NAME")]
    name: Option<String>,

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
    Resume {
        /// Session id (or unique prefix) or path; none opens the picker.
        target: Option<String>,
        /// A prompt to run in the resumed session.
        #[arg(trailing_var_arg = true)]
        prompt: Vec<String>,
    },
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
    /// Anything else is a prompt for the agent.
    #[command(external_subcommand)]
    Prompt(Vec<OsString>),
}

/// `gg job SUBCOMMAND`; any other word after `job` makes the whole line a prompt, so
/// `gg job well done` still talks to the agent (reference §1.1: the first word decides).
#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
struct JobArgs {
    #[command(subcommand)]
    command: Option<job::JobCommand>,
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    words: Vec<String>,
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

impl Cli {
    fn run_flags(
        &self,
        prompt: Vec<String>,
        resume_target: Option<String>,
        resume_picker: bool,
    ) -> run::RunFlags {
        run::RunFlags {
            print: self.print,
            prompt,
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            api_key: self.api_key.clone(),
            approval: self.approval.clone(),
            yolo: self.yolo,
            sandbox: self.sandbox,
            usage: self.usage,
            no_skills: self.no_skills,
            no_context_files: self.no_context_files,
            json: self.json,
            directory: self.directory.clone(),
            fail_on_deny: self.fail_on_deny,
            session: sessions::SessionFlags {
                no_session: self.no_session,
                continue_last: self.continue_last,
                resume_picker: self.resume || resume_picker,
                resume_target,
                session_file: self.session_file.clone(),
                session_dir: self.session_dir.clone(),
                name: self.name.clone(),
            },
        }
    }
}

pub fn main() -> ExitCode {
    let mut cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap exits 0 for --help/--version and 2 for usage errors.
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let command = cli.command.take();
    match command {
        Some(Command::Classify(args)) => classify::run(args),
        Some(Command::Policy(command)) => policy::run(command),
        Some(Command::Sandbox(args)) => sandbox::run(args),
        Some(Command::Sessions(SessionsCommand::List)) => {
            sessions::list(cli.session_dir.as_deref())
        }
        Some(Command::Mcp(McpCommand::List)) => mcp_list(cli.sandbox),
        Some(Command::Job(JobArgs {
            command: Some(command),
            ..
        })) => job::run(command),
        Some(Command::Job(JobArgs {
            command: None,
            words,
        })) if words.is_empty() => job::run(job::JobCommand::List { all: false }),
        Some(Command::Job(JobArgs {
            command: None,
            words,
        })) => {
            let prompt = std::iter::once("job".to_string()).chain(words).collect();
            run::run(cli.run_flags(prompt, None, false))
        }
        Some(Command::Audit { session, json }) => {
            sessions::audit(session.as_deref(), json, cli.session_dir.as_deref())
        }
        Some(Command::Resume { target, prompt }) => {
            let picker = target.is_none();
            run::run(cli.run_flags(prompt, target, picker))
        }
        Some(Command::Prompt(words)) => {
            let mut prompt = Vec::with_capacity(words.len());
            for word in words {
                match word.into_string() {
                    Ok(w) => prompt.push(w),
                    Err(w) => {
                        eprintln!("gg: prompt word {w:?} is not valid UTF-8");
                        return ExitCode::from(run::EXIT_USAGE);
                    }
                }
            }
            run::run(cli.run_flags(prompt, None, false))
        }
        None => run::run(cli.run_flags(Vec::new(), None, false)),
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
    let home = crate::tools::security::home_dir();
    let sandbox = crate::tools::registry::SandboxSetting::enabled(sandboxed);
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
