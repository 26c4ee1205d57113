//! The interactive mode's slash commands: what a line means (a prompt, a command, or `//text`
//! for a prompt that starts with `/`), the command table completion and `/help` read, and the
//! nearest command for a typo. A slash line never reaches the model.

/// A command: its name, its argument's shape, what it does, and the words its argument
/// completes to.
pub struct Command {
    pub name: &'static str,
    pub usage: &'static str,
    pub about: &'static str,
    pub arguments: &'static [&'static str],
}

pub const COMMANDS: &[Command] = &[
    Command {
        name: "help",
        usage: "",
        about: "these commands and the editing keys",
        arguments: &[],
    },
    Command {
        name: "approval",
        usage: "[MODE]",
        about: "show or set the approval mode (auto, on-request, yolo, never)",
        arguments: &["auto", "on-request", "yolo", "never"],
    },
    Command {
        name: "sandbox",
        usage: "[on|off]",
        about: "show or switch the sandbox of commands",
        arguments: &["on", "off"],
    },
    Command {
        name: "network",
        usage: "[off|on|allow-list]",
        about: "show or set the sandboxed commands' network",
        arguments: &["off", "on", "allow-list"],
    },
    Command {
        name: "model",
        usage: "[NAME]",
        about: "show the models, or switch to one",
        arguments: &[],
    },
    Command {
        name: "sessions",
        usage: "",
        about: "the sessions of this directory",
        arguments: &[],
    },
    Command {
        name: "resume",
        usage: "ID",
        about: "continue another session of this directory",
        arguments: &[],
    },
    Command {
        name: "audit",
        usage: "",
        about: "this session's tool calls and policy changes",
        arguments: &[],
    },
    Command {
        name: "memory",
        usage: "[add|show|search|rm …]",
        about: "what gg remembers",
        arguments: &["add", "show", "search", "rm"],
    },
    Command {
        name: "compact",
        usage: "",
        about: "summarise the older part of the conversation",
        arguments: &[],
    },
    Command {
        name: "context",
        usage: "",
        about: "how much of the context budget is used",
        arguments: &[],
    },
    Command {
        name: "name",
        usage: "[NAME|--clear]",
        about: "show or set this session's name",
        arguments: &["--clear"],
    },
    Command {
        name: "output",
        usage: "",
        about: "the last tool call's whole output (what its status line folded)",
        arguments: &[],
    },
    Command {
        name: "clear",
        usage: "",
        about: "start a new, empty session (the current one is kept on disk)",
        arguments: &[],
    },
    Command {
        name: "exit",
        usage: "",
        about: "leave gg (as Ctrl+D does)",
        arguments: &[],
    },
];

/// What a line typed at the prompt is.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// Nothing to do.
    Blank,
    /// Text for the model, as it is (`//text` arrives here as `/text`).
    Prompt(&'a str),
    /// `/name arg`.
    Command { name: &'a str, arg: &'a str },
}

pub fn parse(line: &str) -> Line<'_> {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Line::Blank;
    }
    if trimmed.starts_with("//") {
        return Line::Prompt(&trimmed[1..]);
    }
    let Some(command) = trimmed.strip_prefix('/') else {
        return Line::Prompt(line);
    };
    let (name, arg) = match command.split_once(char::is_whitespace) {
        Some((name, arg)) => (name, arg.trim()),
        None => (command, ""),
    };
    Line::Command { name, arg }
}

/// The command closest to `typed` (for "unknown command /x; did you mean /y?").
pub fn nearest(typed: &str) -> &'static str {
    COMMANDS
        .iter()
        .map(|c| c.name)
        .min_by_key(|name| {
            // A prefix is the likeliest intent (`/appr`), then the fewest edits.
            let prefix = !typed.is_empty() && name.starts_with(typed);
            (!prefix, strsim::damerau_levenshtein(typed, name))
        })
        .unwrap_or("help")
}

/// The error for a command gg does not know.
pub fn unknown(name: &str) -> String {
    format!(
        "unknown command /{name}; did you mean /{}? (/help lists the commands; //text sends /text)",
        nearest(name)
    )
}

/// Completions of the line up to the cursor: `(start, candidates)`. Command names after a
/// leading `/`, and the first argument of commands that have a fixed set.
pub fn complete(line: &str) -> (usize, Vec<String>) {
    let Some(rest) = line.strip_prefix('/') else {
        return (0, Vec::new());
    };
    match rest.split_once(' ') {
        None => (
            1,
            COMMANDS
                .iter()
                .filter(|c| c.name.starts_with(rest))
                .map(|c| format!("{} ", c.name))
                .collect(),
        ),
        Some((name, arg)) if !arg.contains(' ') => {
            let words = COMMANDS
                .iter()
                .find(|c| c.name == name)
                .map(|c| c.arguments)
                .unwrap_or_default();
            (
                line.len() - arg.len(),
                words
                    .iter()
                    .filter(|w| w.starts_with(arg))
                    .map(|w| w.to_string())
                    .collect(),
            )
        }
        Some(_) => (0, Vec::new()),
    }
}

/// `/help`'s text.
pub fn help(editor: bool) -> String {
    let mut out = String::from("Commands:\n");
    for c in COMMANDS {
        let head = if c.usage.is_empty() {
            format!("/{}", c.name)
        } else {
            format!("/{} {}", c.name, c.usage)
        };
        out.push_str(&format!("  {head:<28} {}\n", c.about));
    }
    out.push_str("  /skill:NAME TASK             run a task with a skill\n");
    out.push_str("  //text                       send text that starts with /\n");
    if editor {
        out.push_str(
            "Keys: Up/Down history, Ctrl+R search it, Tab completes commands, Alt+Enter or \
             Ctrl+J a new line (a paste keeps its lines), Ctrl+C clears the line (twice on an \
             empty line exits; during a turn it cancels the turn), Ctrl+D exits.",
        );
    } else {
        out.push_str("Keys: Ctrl+C cancels a turn, Ctrl+D exits.");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_prompts_commands_or_literal_slashes() {
        assert_eq!(parse("  "), Line::Blank);
        assert_eq!(parse("hello /x"), Line::Prompt("hello /x"));
        assert_eq!(
            parse("/approval never"),
            Line::Command {
                name: "approval",
                arg: "never"
            }
        );
        assert_eq!(
            parse(" /help "),
            Line::Command {
                name: "help",
                arg: ""
            }
        );
        assert_eq!(parse("//etc/passwd is"), Line::Prompt("/etc/passwd is"));
    }

    #[test]
    fn a_typo_names_the_nearest_command() {
        assert_eq!(nearest("hepl"), "help");
        assert_eq!(nearest("appr"), "approval");
        assert_eq!(nearest("sandbx"), "sandbox");
        assert_eq!(nearest("exti"), "exit");
        assert!(unknown("modle").contains("did you mean /model?"));
    }

    #[test]
    fn completion_covers_names_and_fixed_arguments() {
        assert_eq!(complete("/ap"), (1, vec!["approval ".to_string()]));
        assert_eq!(complete("/approval n"), (10, vec!["never".to_string()]));
        assert_eq!(
            complete("/network "),
            (9, vec!["off".into(), "on".into(), "allow-list".into()])
        );
        assert_eq!(complete("plain text").1, Vec::<String>::new());
    }
}
