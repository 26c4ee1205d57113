//! Flag groups shared by `gg` and `ggd`, and the pieces of argument parsing clap cannot do alone.
//!
//! Both binaries spell the same thing the same way (`--model`, `--base-url`, `--api-key`,
//! `--api-key-file`/`GG_API_KEY_FILE`, `--sandbox`, `--session-dir`, `--no-skills`, …), so these
//! groups are defined once here and flattened into each command line.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use clap::{ArgAction, Command};

use crate::app::provider_flags::ProviderArgs;

/// `--color WHEN`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorWhen {
    /// Colour when the stream is a terminal and `NO_COLOR` is unset or empty.
    #[default]
    Auto,
    /// Always colour, even into a pipe (a flag on the command line beats `NO_COLOR`).
    Always,
    /// Never colour.
    Never,
}

/// The flags of an agent run (`gg`, `gg -p`, `gg resume`, and a prompt starting with `job`).
///
/// Adding a flag: add the field here, add it to [`RunArgs::merge`] (the parser tests fail until
/// you do), and read it where the run starts (`run::run_async`).
#[derive(clap::Args, Debug, Clone, Default, PartialEq, Eq)]
pub struct RunArgs {
    /// One-shot mode: run the prompt, print the reply, exit.
    #[arg(short = 'p', long = "print")]
    pub print: bool,
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// Approval mode: auto, on-request, yolo or never.
    #[arg(long, value_name = "MODE")]
    pub approval: Option<String>,
    /// Same as --approval yolo: allow without asking, except dangerous commands.
    #[arg(long)]
    pub yolo: bool,
    /// Run bash under the sandbox (working directory writable, the rest read-only).
    #[arg(long)]
    pub sandbox: bool,
    /// Network policy of sandboxed commands: off, on or allow-list (the default; overrides
    /// `"network"` in ~/.gg/config.json).
    #[arg(long, value_name = "MODE")]
    pub network: Option<String>,
    /// A further host the allow-list lets through (repeatable; *.example.com for subdomains).
    #[arg(long = "allow-domain", value_name = "HOST")]
    pub allow_domain: Vec<String>,
    /// Print token usage to stderr after each run.
    #[arg(long)]
    pub usage: bool,
    /// Skip .agents/skills discovery.
    #[arg(long)]
    pub no_skills: bool,
    /// Skip AGENTS.md discovery.
    #[arg(long)]
    pub no_context_files: bool,
    /// No memory and no user profile for this run, whatever ~/.gg/config.json says.
    #[arg(long)]
    pub no_memory: bool,
    /// Print one JSON event per line on stdout (for CI).
    #[arg(long)]
    pub json: bool,
    /// Run in DIR instead of the current directory.
    #[arg(short = 'C', long = "cwd", value_name = "DIR")]
    pub directory: Option<PathBuf>,
    /// Exit 3 when any tool call was denied.
    #[arg(long)]
    pub fail_on_deny: bool,
    /// Do not persist the conversation.
    #[arg(long)]
    pub no_session: bool,
    /// Resume the latest session of this directory.
    #[arg(long = "continue", visible_alias = "last")]
    pub continue_last: bool,
    /// Pick a session to resume.
    #[arg(short = 'r', long = "resume")]
    pub resume: bool,
    /// Use this session file.
    #[arg(long = "session", value_name = "FILE")]
    pub session_file: Option<PathBuf>,
    /// Session root directory (default: $GG_SESSION_DIR, else ~/.gg/sessions).
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,
    /// Session display name.
    #[arg(short = 'n', long = "name", value_name = "NAME")]
    pub name: Option<String>,
}

impl RunArgs {
    /// Combines the flags given before a subcommand (`gg --yolo resume ID`) with those after it
    /// (`gg resume ID --yolo`). A switch set in either place is set; a value given in both places
    /// is an error, as it is when repeated in one place.
    pub fn merge(self, later: RunArgs) -> Result<RunArgs, String> {
        fn one<T>(flag: &str, a: Option<T>, b: Option<T>) -> Result<Option<T>, String> {
            match (a, b) {
                (Some(_), Some(_)) => Err(format!(
                    "the argument '{flag}' cannot be used multiple times"
                )),
                (a, b) => Ok(a.or(b)),
            }
        }
        // Destructured so that a new field is a compile error here until it is merged.
        let RunArgs {
            print,
            provider:
                ProviderArgs {
                    model,
                    base_url,
                    api_key,
                    api_key_file,
                },
            approval,
            yolo,
            sandbox,
            network,
            allow_domain,
            usage,
            no_skills,
            no_context_files,
            no_memory,
            json,
            directory,
            fail_on_deny,
            no_session,
            continue_last,
            resume,
            session_file,
            session_dir,
            name,
        } = self;
        let provider = ProviderArgs {
            model: one("--model", model, later.provider.model)?,
            base_url: one("--base-url", base_url, later.provider.base_url)?,
            api_key: one("--api-key", api_key, later.provider.api_key)?,
            api_key_file: one("--api-key-file", api_key_file, later.provider.api_key_file)?,
        };
        Ok(RunArgs {
            print: print || later.print,
            provider,
            approval: one("--approval", approval, later.approval)?,
            yolo: yolo || later.yolo,
            sandbox: sandbox || later.sandbox,
            network: one("--network", network, later.network)?,
            allow_domain: allow_domain.into_iter().chain(later.allow_domain).collect(),
            usage: usage || later.usage,
            no_skills: no_skills || later.no_skills,
            no_context_files: no_context_files || later.no_context_files,
            no_memory: no_memory || later.no_memory,
            json: json || later.json,
            directory: one("-C/--cwd", directory, later.directory)?,
            fail_on_deny: fail_on_deny || later.fail_on_deny,
            no_session: no_session || later.no_session,
            continue_last: continue_last || later.continue_last,
            resume: resume || later.resume,
            session_file: one("--session", session_file, later.session_file)?,
            session_dir: one("--session-dir", session_dir, later.session_dir)?,
            name: one("--name", name, later.name)?,
        })
    }
}

/// Where the first positional word of a command line stands, skipping options and their values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FirstWord {
    /// No positional word.
    None,
    /// The word at this index, eligible to be a subcommand name.
    At(usize),
    /// The word at this index follows `--`: always an operand, never a subcommand.
    AfterDashes(usize),
}

/// Finds the first positional word in `args` as `cmd` (built, so global flags are known) would
/// see it. Unknown options are skipped as switches; clap reports them afterwards.
pub fn first_word(cmd: &Command, args: &[OsString]) -> FirstWord {
    let takes_value = |arg: &clap::Arg| {
        !matches!(
            arg.get_action(),
            ArgAction::SetTrue
                | ArgAction::SetFalse
                | ArgAction::Count
                | ArgAction::Help
                | ArgAction::HelpShort
                | ArgAction::HelpLong
                | ArgAction::Version
        ) && arg.get_num_args().is_none_or(|n| n.min_values() > 0)
    };
    let mut i = 0;
    while i < args.len() {
        let word = args[i].as_encoded_bytes();
        if word == b"--" {
            return if i + 1 < args.len() {
                FirstWord::AfterDashes(i + 1)
            } else {
                FirstWord::None
            };
        }
        if let Some(long) = word.strip_prefix(b"--") {
            if !long.contains(&b'=') {
                let known = cmd.get_arguments().find(|a| {
                    a.get_long().is_some_and(|l| l.as_bytes() == long)
                        || a.get_all_aliases()
                            .is_some_and(|al| al.iter().any(|x| x.as_bytes() == long))
                });
                if known.is_some_and(takes_value) {
                    i += 1;
                }
            }
        } else if word.len() > 1 && word[0] == b'-' {
            // A cluster of short flags; the first one that takes a value ends it, taking the
            // rest of the cluster or, when nothing is left, the next word.
            let shorts = &word[1..];
            for (at, c) in shorts.iter().enumerate() {
                let known = cmd
                    .get_arguments()
                    .find(|a| a.get_short().is_some_and(|s| u32::from(s) == u32::from(*c)));
                if known.is_some_and(takes_value) {
                    if at + 1 == shorts.len() {
                        i += 1;
                    }
                    break;
                }
            }
        } else {
            return FirstWord::At(i);
        }
        i += 1;
    }
    FirstWord::None
}

/// Whether `word` names a subcommand of `cmd` (or an alias of one).
pub fn is_subcommand(cmd: &Command, word: &OsStr) -> bool {
    word.to_str()
        .is_some_and(|w| cmd.find_subcommand(w).is_some())
}
