//! What the walk hands the rules: a simple command ([`Cmd`]) with its redirections, and the
//! [`Flow`] that says what its standard input carries; plus the copy-on-write [`Vars`] the
//! walk saves and restores around subshells and trials.

use std::collections::HashMap;

use crate::Span;
use crate::word::Word;

/// What a command's standard output (or a substitution) carries, as far as the rules care.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Flow {
    /// Content fetched from the network by a download tool.
    pub download: bool,
    /// Content decoded or decompressed (`base64 -d`, `xxd -r` …).
    pub decode: bool,
    /// A raw network connection (`nc`, `socat`, `/dev/tcp`).
    pub network: bool,
    /// Credential files were read.
    pub credentials: bool,
    /// A shell reading commands from its standard input.
    pub shell: bool,
    /// Statically known text (from `echo`/`printf`, a heredoc or a here-string).
    pub text: Option<String>,
    /// Standard input is something other than the inherited terminal.
    pub fed: bool,
    /// Every word of the output is known not to start with `-` (commit ids from `git
    /// merge-base`, paths under a named directory from `git ls-files DIR`): substituted as an
    /// argument, it cannot be read as an option.
    pub no_dash: bool,
}

impl Flow {
    pub fn merge(&mut self, other: &Flow) {
        self.download |= other.download;
        self.decode |= other.decode;
        self.network |= other.network;
        self.credentials |= other.credentials;
        self.shell |= other.shell;
        self.fed |= other.fed;
        self.no_dash &= other.no_dash;
        self.text = None;
    }

    /// Whether the content came from somewhere the script does not control.
    pub fn untrusted(&self) -> bool {
        self.download || self.decode || self.network
    }
}

/// Variables with statically known values. Shared copy-on-write: subshells, pipeline stages
/// and trial readings save and restore it, which must not cost a copy each time.
#[derive(Debug, Clone, Default)]
pub(crate) struct Vars(std::rc::Rc<HashMap<String, String>>);

impl Vars {
    pub fn get(&self, name: &str) -> Option<&String> {
        self.0.get(name)
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    pub fn insert(&mut self, name: String, value: String) -> Option<String> {
        std::rc::Rc::make_mut(&mut self.0).insert(name, value)
    }

    pub fn remove(&mut self, name: &str) -> Option<String> {
        if !self.0.contains_key(name) {
            return None;
        }
        std::rc::Rc::make_mut(&mut self.0).remove(name)
    }
}

/// A redirection attached to a command.
#[derive(Debug, Clone)]
pub(crate) struct Redirect {
    pub op: String,
    /// The file descriptor written before the operator (`2>`), empty for the default.
    pub fd: String,
    pub target: Option<Word>,
    pub span: Span,
}

/// A simple command ready for the rules.
#[derive(Debug, Clone)]
pub(crate) struct Cmd {
    pub argv: Vec<Word>,
    pub assigns: Vec<(String, Word)>,
    pub redirects: Vec<Redirect>,
    pub input: Flow,
    pub span: Span,
}

impl Cmd {
    /// A command of `argv` alone (no assignment, no redirection) fed `input`: what a payload,
    /// a probe or a re-read word list is given to the rules as.
    pub(crate) fn of_words(argv: Vec<Word>, input: Flow, span: Span) -> Cmd {
        Cmd {
            argv,
            assigns: Vec::new(),
            redirects: Vec::new(),
            input,
            span,
        }
    }
}
