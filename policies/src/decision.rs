//! The approval table as an explicit state machine.
//!
//! Every input is an enum and every match is exhaustive, so adding a mode or a call kind is a
//! compile error until each cell of the table has been decided on purpose.

use classifier::Class;

/// How the user asked gg to treat tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Ask when a person is there, deny otherwise (the default).
    Auto,
    /// Always ask; requires a terminal at start-up.
    OnRequest,
    /// Allow without asking, except dangerous bash.
    Yolo,
    /// Never ask: allow, except dangerous bash which is denied.
    Never,
    /// Scheduled jobs and other runs where no person exists.
    Unattended { allow_all: bool },
    /// A person answers from a chat (Telegram's inline buttons), not at a terminal: normal calls
    /// are asked there; dangerous calls are denied, as no chat message confirms them.
    Remote,
}

impl Mode {
    /// The name used on the command line and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::OnRequest => "on-request",
            Mode::Yolo => "yolo",
            Mode::Never => "never",
            Mode::Unattended { allow_all: false } => "unattended",
            Mode::Unattended { allow_all: true } => "unattended-allow-all",
            Mode::Remote => "remote",
        }
    }

    /// Parses a `--approval` value. Unattended modes are not selectable from the command line.
    pub fn parse_cli(value: &str) -> Result<Mode, String> {
        match value {
            "auto" => Ok(Mode::Auto),
            "on-request" => Ok(Mode::OnRequest),
            "yolo" => Ok(Mode::Yolo),
            "never" => Ok(Mode::Never),
            _ => Err("approval must be one of: auto, on-request, yolo, never".to_string()),
        }
    }

    /// Every mode, in the order the audit matrix prints them.
    pub const ALL: [Mode; 7] = [
        Mode::Auto,
        Mode::OnRequest,
        Mode::Yolo,
        Mode::Never,
        Mode::Unattended { allow_all: false },
        Mode::Unattended { allow_all: true },
        Mode::Remote,
    ];
}

/// Whether a person can answer a prompt: stdin **and** stderr are terminals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Terminal {
    Present,
    Absent,
}

impl Terminal {
    pub fn from_bool(present: bool) -> Terminal {
        if present {
            Terminal::Present
        } else {
            Terminal::Absent
        }
    }

    pub fn is_present(self) -> bool {
        matches!(self, Terminal::Present)
    }
}

/// The tool call being decided, reduced to what the table needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call<'a> {
    /// An ungated tool (`read`, `list`, `grep`, ...).
    ReadType { tool: &'a str },
    /// A gated tool whose own check pre-approved it (e.g. a write inside `.gg/agent`).
    PreApproved { tool: &'a str, reason: &'a str },
    /// A gated tool other than bash (`write`, `edit`, MCP tools, ...).
    Gated { tool: &'a str },
    /// A gated tool other than bash whose own check found the call dangerous (a write into
    /// `.git/` or gg's settings): treated like dangerous bash.
    DangerousTool { tool: &'a str },
    /// A bash command with the classifier's class. `forbidden` is set when a policy file forbids
    /// one of its commands.
    Bash {
        class: Class,
        forbidden: Option<&'a Forbidden>,
    },
}

/// A forbidden-prefix match from a policy file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forbidden {
    /// The prefix as written in the policy file.
    pub prefix: String,
    /// The policy author's reason.
    pub reason: String,
    /// Where the rule came from (`builtin`, or a file path and line).
    pub source: String,
}

/// Whether a person already answered "yes, for the rest of this session" for this exact call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Granted {
    No,
    ForSession,
}

/// A question to the decision table.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub mode: Mode,
    pub terminal: Terminal,
    /// A session grant only ever answers a question the table would have asked; it never turns a
    /// denial into an allow, and never covers a dangerous call.
    pub granted: Granted,
    pub call: Call<'a>,
}

/// The rule of the table that produced a decision. Ids are stable: they appear in JSON output
/// and in session audit trails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    ReadTypeTool,
    PreApproved,
    BashReadOnly,
    PolicyForbidden,
    DangerousAsk,
    DangerousNoTerminal,
    DangerousNeverMode,
    DangerousUnattended,
    AutoAsk,
    AutoNoTerminal,
    OnRequestAsk,
    OnRequestNoTerminal,
    YoloAllow,
    NeverAllow,
    UnattendedAllowAll,
    UnattendedDeny,
    /// A person in a chat is asked about a normal call.
    RemoteAsk,
    /// A dangerous call requested from a chat: denied, no chat answer can confirm it.
    DangerousRemote,
    /// An earlier "allow for this session" answered the question the table would have asked.
    SessionGrant,
    /// A dangerous call matching an earlier session grant: asked again, since a grant never
    /// covers a dangerous call.
    DangerousNeverGranted,
}

impl Rule {
    pub fn id(self) -> &'static str {
        match self {
            Rule::ReadTypeTool => "read-type-tool",
            Rule::PreApproved => "pre-approved",
            Rule::BashReadOnly => "bash-read-only",
            Rule::PolicyForbidden => "policy-forbidden",
            Rule::DangerousAsk => "dangerous-ask",
            Rule::DangerousNoTerminal => "dangerous-no-terminal",
            Rule::DangerousNeverMode => "dangerous-never-mode",
            Rule::DangerousUnattended => "dangerous-unattended",
            Rule::AutoAsk => "auto-ask",
            Rule::AutoNoTerminal => "auto-no-terminal",
            Rule::OnRequestAsk => "on-request-ask",
            Rule::OnRequestNoTerminal => "on-request-no-terminal",
            Rule::YoloAllow => "yolo-allow",
            Rule::NeverAllow => "never-allow",
            Rule::UnattendedAllowAll => "unattended-allow-all",
            Rule::UnattendedDeny => "unattended-deny",
            Rule::RemoteAsk => "remote-ask",
            Rule::DangerousRemote => "dangerous-remote",
            Rule::SessionGrant => "session-grant",
            Rule::DangerousNeverGranted => "dangerous-never-granted",
        }
    }
}

/// What to do with a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow {
        rule: Rule,
    },
    /// Ask the person at the terminal. `prompt` is the line explaining why they are asked.
    Ask {
        rule: Rule,
        prompt: String,
    },
    /// Refuse. `message` goes to the model as the tool error and tells what would change it.
    Deny {
        rule: Rule,
        message: String,
    },
}

impl Decision {
    pub fn rule(&self) -> Rule {
        match self {
            Decision::Allow { rule } | Decision::Ask { rule, .. } | Decision::Deny { rule, .. } => {
                *rule
            }
        }
    }

    /// `allow`, `ask` or `deny`.
    pub fn action(&self) -> &'static str {
        match self {
            Decision::Allow { .. } => "allow",
            Decision::Ask { .. } => "ask",
            Decision::Deny { .. } => "deny",
        }
    }

    /// The prompt or denial text; empty for allow.
    pub fn message(&self) -> &str {
        match self {
            Decision::Allow { .. } => "",
            Decision::Ask { prompt, .. } => prompt,
            Decision::Deny { message, .. } => message,
        }
    }
}

/// A mode that cannot run in this environment; checked once at start-up, before any model call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartupError {
    pub message: String,
}

impl std::fmt::Display for StartupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StartupError {}

/// Start-up check: `on-request` promises to ask about every gated call, which is impossible
/// without a terminal, so the process must not start (exit 2).
pub fn check_startup(mode: Mode, terminal: Terminal) -> Result<(), StartupError> {
    match (mode, terminal) {
        (Mode::OnRequest, Terminal::Absent) => Err(StartupError {
            message:
                "--approval on-request needs a terminal (stdin and stderr must be terminals); \
                      use --approval auto, --yolo or --approval never for unattended runs"
                    .to_string(),
        }),
        (Mode::OnRequest, Terminal::Present)
        | (Mode::Auto | Mode::Yolo | Mode::Never | Mode::Unattended { .. } | Mode::Remote, _) => {
            Ok(())
        }
    }
}

/// Decides one tool call. Pure and total: every combination has exactly one answer.
pub fn decide(request: &Request<'_>) -> Decision {
    let Request {
        mode,
        terminal,
        granted,
        call,
    } = *request;
    let dangerous = matches!(
        call,
        Call::DangerousTool { .. }
            | Call::Bash {
                class: Class::Dangerous,
                forbidden: None
            }
    );
    match (decide_ungranted(mode, terminal, call), granted) {
        (decision, Granted::No) => decision,
        // A grant answers a question; a dangerous call is asked again every time.
        (Decision::Ask { .. }, Granted::ForSession) if dangerous => Decision::Ask {
            rule: Rule::DangerousNeverGranted,
            prompt: "dangerous: always needs your confirmation, even after an earlier \"allow for \
                     this session\""
                .to_string(),
        },
        (Decision::Ask { .. }, Granted::ForSession) => Decision::Allow {
            rule: Rule::SessionGrant,
        },
        (decision @ (Decision::Allow { .. } | Decision::Deny { .. }), Granted::ForSession) => {
            decision
        }
    }
}

/// The table before any session grant.
fn decide_ungranted(mode: Mode, terminal: Terminal, call: Call<'_>) -> Decision {
    match call {
        Call::ReadType { .. } => Decision::Allow {
            rule: Rule::ReadTypeTool,
        },
        Call::PreApproved { .. } => Decision::Allow {
            rule: Rule::PreApproved,
        },
        Call::Bash {
            forbidden: Some(forbidden),
            ..
        } => Decision::Deny {
            rule: Rule::PolicyForbidden,
            message: format!(
                "command denied by policy ({}): `{}` is forbidden: {}",
                forbidden.source, forbidden.prefix, forbidden.reason
            ),
        },
        Call::Bash {
            class: Class::ReadOnly,
            forbidden: None,
        } => Decision::Allow {
            rule: Rule::BashReadOnly,
        },
        Call::Bash {
            class: Class::Dangerous,
            forbidden: None,
        } => decide_dangerous(mode, terminal, "command"),
        Call::Bash {
            class: Class::Normal,
            forbidden: None,
        } => decide_gated(mode, terminal, "bash command"),
        Call::Gated { tool } => decide_gated(mode, terminal, &format!("tool \"{tool}\"")),
        Call::DangerousTool { tool } => {
            decide_dangerous(mode, terminal, &format!("tool call \"{tool}\""))
        }
    }
}

/// Dangerous calls always need a person: no mode and no flag lets them run unattended.
/// `what` is `command` for bash, `tool call "write"` for other tools.
fn decide_dangerous(mode: Mode, terminal: Terminal, what: &str) -> Decision {
    match (mode, terminal) {
        (Mode::Unattended { .. }, _) => Decision::Deny {
            rule: Rule::DangerousUnattended,
            message: format!(
                "dangerous {what} denied: this run is unattended and dangerous calls always \
                 need a person to confirm them (--allow-all does not cover them)"
            ),
        },
        (Mode::Remote, _) => Decision::Deny {
            rule: Rule::DangerousRemote,
            message: format!(
                "dangerous {what} denied: it was requested from a chat, and dangerous calls \
                 always need a person at a terminal to confirm them"
            ),
        },
        (Mode::Never, _) => Decision::Deny {
            rule: Rule::DangerousNeverMode,
            message: format!(
                "dangerous {what} denied: --approval never never asks, and dangerous calls \
                 always need a person to confirm them; run interactively (--approval auto or \
                 on-request) to be asked"
            ),
        },
        (Mode::Auto | Mode::OnRequest | Mode::Yolo, Terminal::Present) => Decision::Ask {
            rule: Rule::DangerousAsk,
            prompt: format!("dangerous {what}: always needs your confirmation, whatever the mode"),
        },
        (Mode::Auto | Mode::OnRequest | Mode::Yolo, Terminal::Absent) => Decision::Deny {
            rule: Rule::DangerousNoTerminal,
            message: format!(
                "dangerous {what} denied: it needs a person to confirm it and there is no \
                 terminal to ask (not even --yolo skips this confirmation)"
            ),
        },
    }
}

/// Normal bash and gated tools follow the mode's row of the table.
fn decide_gated(mode: Mode, terminal: Terminal, what: &str) -> Decision {
    match (mode, terminal) {
        (Mode::Auto, Terminal::Present) => Decision::Ask {
            rule: Rule::AutoAsk,
            prompt: format!("{what} needs approval"),
        },
        (Mode::Auto, Terminal::Absent) => Decision::Deny {
            rule: Rule::AutoNoTerminal,
            message: format!(
                "{what} denied: approval mode auto asks before running it and there is no \
                 terminal to ask; rerun with --yolo to allow it without asking, or with \
                 --approval on-request in a terminal to be asked"
            ),
        },
        (Mode::OnRequest, Terminal::Present) => Decision::Ask {
            rule: Rule::OnRequestAsk,
            prompt: format!("{what} needs approval"),
        },
        // Start-up refuses this combination; deciding it anyway keeps `decide` total and
        // fail-closed should a caller skip the start-up check.
        (Mode::OnRequest, Terminal::Absent) => Decision::Deny {
            rule: Rule::OnRequestNoTerminal,
            message: format!(
                "{what} denied: approval mode on-request needs a terminal to ask and there is none"
            ),
        },
        (Mode::Yolo, _) => Decision::Allow {
            rule: Rule::YoloAllow,
        },
        (Mode::Never, _) => Decision::Allow {
            rule: Rule::NeverAllow,
        },
        (Mode::Unattended { allow_all: true }, _) => Decision::Allow {
            rule: Rule::UnattendedAllowAll,
        },
        (Mode::Remote, _) => Decision::Ask {
            rule: Rule::RemoteAsk,
            prompt: format!("{what} needs approval from the chat"),
        },
        (Mode::Unattended { allow_all: false }, _) => Decision::Deny {
            rule: Rule::UnattendedDeny,
            message: format!(
                "{what} denied: this run is unattended and only read-type tools and read-only \
                 commands run without --allow-all"
            ),
        },
    }
}
