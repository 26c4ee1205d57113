//! The tree walk: finds every simple command the text can run, in every construct that can
//! run one, and hands each to the rules together with what feeds its standard input.
//!
//! This file holds the [`Walker`]'s state, its entry points and re-parsing of nested command
//! text; the walk itself is recursive descent over bash's grammar, one `impl Walker` per part:
//! [`statements`] (lists, pipelines, compound commands, functions, loops), [`commands`] (simple
//! commands with their words, assignments and redirections) and [`budget`] (the work bound and
//! the last-resort scan). [`flow`] holds what the walk hands the rules.

mod budget;
mod commands;
mod flow;
mod statements;

use std::collections::HashMap;
use std::num::NonZeroU16;
use std::sync::LazyLock;

use tree_sitter::{Language, Node, Parser, Tree};

use crate::ids::RuleId;
use crate::paths::Cwds;
use crate::text::{self, Prepared};
use crate::word::Word;
use crate::{Class, Context, FoundCommand, Reason, Span, rules};
use budget::Budget;

pub(crate) use flow::{Cmd, Flow, Redirect, Vars};

/// How many times command text may be re-parsed (`bash -c`, `eval`, heredocs to shells …).
pub(crate) const MAX_REPARSE_DEPTH: usize = 8;

/// How many possible values a variable keeps in [`Walker::maybe_vars`] from one construct that
/// lists them (a `for` word list, the lines of a here-string, an array): enough for any list
/// written by hand, bounded so a generated one cannot make every later word cost more.
pub(crate) const MAX_MAYBE_VALUES: usize = 64;

/// Walk state and results for one classification.
pub(crate) struct Walker<'a> {
    pub ctx: &'a Context,
    parser: &'a mut Parser,
    src: String,
    prepared: Prepared,
    /// Set while walking re-parsed text: every span maps to the word that held the text.
    fixed_span: Option<Span>,
    pub reasons: Vec<Reason>,
    pub commands: Vec<FoundCommand>,
    pub cwds: Cwds,
    /// Variables assigned unconditionally earlier in the script, with their static values.
    pub vars: Vars,
    /// Static values assigned to a variable inside branches: it may hold any of them (or its
    /// earlier value), so it counts as computed, but path rules also try each of these.
    pub maybe_vars: HashMap<String, Vec<String>>,
    /// Inside a branch, loop or function body: assignments there may or may not happen.
    conditional: usize,
    pub reparse_depth: usize,
    tree_depth: usize,
    /// Work left before the walk gives up (see [`Budget`]).
    budget: Budget,
    /// Functions whose bodies are being walked, and how often each calls itself.
    functions: Vec<(String, usize, bool)>,
    in_pipeline: usize,
    git_program_keys: Option<Vec<String>>,
    /// What a `>(…)` process substitution in the current command receives: the command's
    /// output, approximated by its input and whether it is a download tool.
    procsub_feed: Flow,
    /// Files a download tool wrote earlier in the script; running one is dangerous.
    pub downloaded: Vec<std::path::PathBuf>,
    /// Files this script wrote with statically known text (`echo … > x.sh`, heredocs).
    pub written: Vec<(std::path::PathBuf, String)>,
    /// Files this script wrote secrets into (`env > e.txt`): sending one later sends them.
    pub secrets_written: Vec<std::path::PathBuf>,
    /// Files opened for reading on a descriptor by `exec N<FILE` earlier in the script: writing
    /// to `/dev/fd/N` (or `/dev/stdin` for 0) opens that file again, for writing.
    pub fd_inputs: Vec<(String, Word)>,
    /// The whole input already had the raw-text scan because the tree cannot be trusted.
    distrusted: bool,
}

impl<'a> Walker<'a> {
    /// Whether the script may make globs match names starting with `.` (`shopt -s dotglob`,
    /// or setting `GLOBIGNORE`, which does the same): judged from the text, erring towards yes.
    pub fn may_set_dotglob(&self) -> bool {
        self.src.contains("dotglob") || self.src.contains("GLOBIGNORE")
    }

    pub fn new(ctx: &'a Context, parser: &'a mut Parser, input: &str) -> Walker<'a> {
        let prepared = text::prepare(input);
        let (vars, cwds) = start_state(ctx);
        Walker {
            ctx,
            parser,
            src: prepared.text.clone(),
            prepared,
            fixed_span: None,
            reasons: Vec::new(),
            commands: Vec::new(),
            cwds,
            vars,
            maybe_vars: HashMap::new(),
            conditional: 0,
            reparse_depth: 0,
            tree_depth: 0,
            budget: Budget::for_input(input.len()),
            functions: Vec::new(),
            in_pipeline: 0,
            git_program_keys: None,
            procsub_feed: Flow::default(),
            downloaded: Vec::new(),
            written: Vec::new(),
            secrets_written: Vec::new(),
            fd_inputs: Vec::new(),
            distrusted: false,
        }
    }

    /// Walks the whole input.
    pub fn run(&mut self) {
        if self.prepared.changed {
            let end = self.prepared.map_span(self.src.len(), self.src.len()).1;
            self.reason(
                Class::Normal,
                RuleId::ObfuscationInvisibleCharacters,
                "the text contains invisible or unusual whitespace characters",
                (0, end),
            );
        }
        let Some(tree) = parse_bash(self.parser, &self.src) else {
            let span = (0, self.map_span(self.src.len(), self.src.len()).1);
            self.reason(
                Class::Normal,
                RuleId::ParseError,
                "the command could not be parsed",
                span,
            );
            return;
        };
        self.walk_tree(&tree);
    }

    fn walk_tree(&mut self, tree: &Tree) {
        let root = tree.root_node();
        if root.has_error() {
            let span = self.span_of(root);
            self.reason(
                Class::Normal,
                RuleId::ParseError,
                "the command does not parse cleanly as bash",
                span,
            );
            let text = self.src.clone();
            crate::fallback::scan(self, &text, span);
        }
        self.statement(root, &Flow::default());
    }

    // ----- spans and text -------------------------------------------------------------------

    pub fn source(&self, start: usize, end: usize) -> &str {
        // The root node of a tree from `parse_bash` may end one byte past the text.
        self.src.get(start..end.min(self.src.len())).unwrap_or("")
    }

    pub fn node_text(&self, node: Node) -> &str {
        self.source(node.start_byte(), node.end_byte())
    }

    pub fn map_span(&self, start: usize, end: usize) -> Span {
        match self.fixed_span {
            Some(span) => span,
            None => self.prepared.map_span(start, end),
        }
    }

    pub fn span_of(&self, node: Node) -> Span {
        self.map_span(node.start_byte(), node.end_byte())
    }

    pub fn reason(&mut self, class: Class, rule: RuleId, message: impl Into<String>, span: Span) {
        let message = message.into();
        self.reasons.push(Reason {
            rule: rule.as_str().to_string(),
            class,
            message,
            span,
        });
    }

    /// Program-running keys in the git config that applies where git runs (`dirs`: the
    /// directories it may run in), parsed once per classification. The caller read the config of
    /// the starting directory's repository; git run elsewhere may use another (nested)
    /// repository whose config nobody read, which counts as running programs, unless every
    /// directory is one where git is known to find the same repository (see
    /// [`crate::rules::git::same_repository`]).
    pub fn git_program_keys(&mut self, dirs: &Cwds) -> Vec<String> {
        if !rules::git::same_repository(self, dirs) {
            return vec![
                "the configuration of the repository in a directory changed to by the script, \
                 which was not read"
                    .to_string(),
            ];
        }
        let ctx = self.ctx;
        self.git_program_keys
            .get_or_insert_with(|| ctx.git_config.program_keys())
            .clone()
    }

    // ----- re-parsing ----------------------------------------------------------------------

    /// Parses `code` (a `bash -c` string, an `eval` argument, a heredoc fed to a shell) and
    /// walks it as part of this script. Its spans all point at `span`. `child` says the code
    /// runs in a child shell, so its `cd`s and assignments do not leak back.
    pub fn reparse(&mut self, code: &str, span: Span, input: &Flow, child: bool) -> Flow {
        if !self.spend(code.len(), 0, span) {
            return Flow::default();
        }
        if self.reparse_depth >= MAX_REPARSE_DEPTH {
            self.reason(
                Class::Normal,
                RuleId::ParseTooDeep,
                "command text nested too deeply to inspect",
                span,
            );
            // The nested text still gets the raw-text scan for dangerous patterns.
            let mut flow = Flow::default();
            if !self.budget.final_scan {
                let code = text::clean(code);
                self.budget.final_scan = true;
                self.keep_dangerous("in command text nested too deeply", |w| {
                    flow = crate::fallback::scan(w, &code, span);
                });
                self.budget.final_scan = false;
            }
            flow.text = None;
            return flow;
        }
        let code = text::clean(code);
        let Some(tree) = parse_bash(self.parser, &code) else {
            self.reason(
                Class::Normal,
                RuleId::ParseError,
                "nested command text could not be parsed",
                span,
            );
            return Flow::default();
        };
        let saved_src = std::mem::replace(&mut self.src, code);
        let saved_span = self.fixed_span.replace(span);
        let saved_state = child.then(|| (self.cwds.clone(), self.vars.clone()));
        self.reparse_depth += 1;
        let root = tree.root_node();
        if root.has_error() {
            self.reason(
                Class::Normal,
                RuleId::ParseError,
                "nested command text does not parse cleanly",
                span,
            );
            let text = self.src.clone();
            crate::fallback::scan(self, &text, span);
        }
        let flow = self.statement(root, input);
        self.reparse_depth -= 1;
        if let Some((cwds, vars)) = saved_state {
            self.cwds = cwds;
            self.vars = vars;
        }
        self.fixed_span = saved_span;
        self.src = saved_src;
        flow
    }

    /// [`Walker::reparse`] of text that is one simple command of plain words, each of which
    /// its parse would give back unchanged (`eval eval A B`, see `rules::exec`): the same
    /// budget, limits, span and state as that parse and walk, without the parse. `None` when
    /// a limit is reached on the way, where the caller re-parses as usual and the limit is
    /// reported as it always is.
    pub(crate) fn rerun_plain_command(
        &mut self,
        words: &[&str],
        input: &Flow,
        span: Span,
    ) -> Option<Flow> {
        // `reparse` spends the text's bytes before looking at the depth.
        if self.reparse_depth >= MAX_REPARSE_DEPTH
            || self.tree_depth + 1 >= statements::MAX_TREE_DEPTH
        {
            return None;
        }
        let code_len = words.iter().map(|w| w.len()).sum::<usize>() + words.len().saturating_sub(1);
        if !self.spend(code_len, 0, span) {
            return Some(Flow::default());
        }
        let saved_span = self.fixed_span.replace(span);
        self.reparse_depth += 1;
        // `statement` of the program, then of its one command, as the walk of the parse does.
        let mut flow = Flow::default();
        if self.spend(0, 1, span) {
            self.tree_depth += 1;
            let before = self.cwds.clone();
            let child_flow = if self.spend(0, 1, span) {
                self.tree_depth += 1;
                let argv = words.iter().map(|w| Word::literal(w, span)).collect();
                let cmd = Cmd::of_words(argv, input.clone(), span);
                self.note_self_call(&cmd);
                let child_flow = rules::run(self, cmd);
                self.tree_depth -= 1;
                child_flow
            } else {
                Flow::default()
            };
            self.cwds.union(&before);
            flow.merge(&child_flow);
            flow.text = child_flow.text;
            flow.no_dash = child_flow.no_dash;
            self.tree_depth -= 1;
        }
        self.reparse_depth -= 1;
        self.fixed_span = saved_span;
        Some(flow)
    }
}

thread_local! {
    /// The last walk's start on this thread and the home and working directory it came from
    /// (see [`start_state`]).
    static START: std::cell::RefCell<Option<(std::ffi::OsString, std::ffi::OsString, Vars, Cwds)>> =
        const { std::cell::RefCell::new(None) };
}

/// The variables every walk starts with (`HOME` and `PWD` when they are absolute) and its
/// working directories ([`Cwds::start`]). A batch classifies every command with the same
/// context, so both are built once and shared copy-on-write ([`Vars`], [`Cwds`]): a script
/// that assigns nothing and does not `cd` no longer costs a table, a normalised copy of the
/// working directory and its name checks of its own. Kept per home and working directory,
/// compared byte for byte (nothing else of the context goes into them).
fn start_state(ctx: &Context) -> (Vars, Cwds) {
    let build = || {
        let mut vars = Vars::default();
        if ctx.home.is_absolute() {
            vars.insert("HOME".to_string(), ctx.home.to_string_lossy().into_owned());
        }
        if ctx.cwd.is_absolute() {
            vars.insert("PWD".to_string(), ctx.cwd.to_string_lossy().into_owned());
        }
        (vars, Cwds::start(ctx))
    };
    START.with(|kept| {
        let Ok(mut kept) = kept.try_borrow_mut() else {
            return build();
        };
        if let Some((home, cwd, vars, cwds)) = kept.as_ref()
            && home == ctx.home.as_os_str()
            && cwd == ctx.cwd.as_os_str()
        {
            return (vars.clone(), cwds.clone());
        }
        let (vars, cwds) = build();
        *kept = Some((
            ctx.home.as_os_str().to_owned(),
            ctx.cwd.as_os_str().to_owned(),
            vars.clone(),
            cwds.clone(),
        ));
        (vars, cwds)
    })
}

/// Parses bash `text` (its [`ascii_skeleton`]).
///
/// tree-sitter-bash is slow where the input ends without a terminator after a pipeline of three
/// or more stages: `a | b | c` takes 74 µs, `a | b | c` with a newline after it 7 µs (the parser
/// explores many versions at the end of input). A trailing newline does not change what bash runs
/// (but after a backslash, where it would continue the line), so the text is parsed with one. The
/// tree is the same apart from the root ending one byte later; should that reading not parse
/// cleanly, the text is parsed again as it is, so a tree with errors is exactly what it was
/// without the newline.
fn parse_bash(parser: &mut Parser, text: &str) -> Option<Tree> {
    let mut skeleton = ascii_skeleton(text);
    if !text.is_empty() && !text.ends_with(['\\', '\n']) {
        skeleton.push(b'\n');
        if let Some(tree) = parser.parse(&skeleton, None)
            && !tree.root_node().has_error()
        {
            return Some(tree);
        }
        skeleton.pop();
    }
    parser.parse(&skeleton, None)
}

/// The text with every non-ASCII byte replaced by `a`, for the parser only.
///
/// tree-sitter-bash's external scanner passes code points to C `isdigit`/`isalpha`, which is
/// undefined behaviour above 255 and crashes on some inputs. Bash reads non-ASCII characters
/// as word characters, and so does the parser for `a`, so the tree's shape is unchanged; the
/// byte offsets are identical, so the words are still read from the real text.
///
/// A carriage return is a word character to bash (it is not a metacharacter), while
/// tree-sitter treats it as blank space: `\\` CR LF would be a line continuation to the parser
/// but an escaped CR followed by a new command to bash. It is replaced by `.`, a word character
/// that cannot extend a variable name (`$HOME` CR is `$HOME` followed by CR to bash).
fn ascii_skeleton(text: &str) -> Vec<u8> {
    text.bytes()
        .map(|b| match b {
            b'\r' => b'.',
            b if b.is_ascii() => b,
            _ => b'a',
        })
        .collect()
}

/// The bash grammar's fields that the walk asks for of every command, assignment and
/// redirection (see [`field`]).
#[derive(Clone, Copy)]
pub(crate) enum Field {
    Body,
    Destination,
    Name,
    Value,
}

/// `node`'s child in `field`, as `Node::child_by_field_name` gives it, but by the field's id:
/// that method looks the name up among all the grammar's field names (a C string comparison
/// each) on every call, and these fields are asked for of every command.
pub(crate) fn field(node: Node, field: Field) -> Option<Node> {
    static IDS: LazyLock<[Option<NonZeroU16>; 4]> = LazyLock::new(|| {
        let bash = Language::new(tree_sitter_bash::LANGUAGE);
        ["body", "destination", "name", "value"].map(|name| bash.field_id_for_name(name))
    });
    // A name the grammar lacks has no child, as `child_by_field_name` answers.
    let id = IDS[field as usize]?;
    node.child_by_field_id(id.get())
}

/// `node.kind()` for a node of a bash tree (the walk's trees; not the interpreters'), from a
/// table of the grammar's names built once: `Node::kind` measures the name's C string and
/// checks it is UTF-8 on every call, and the walk asks it of nearly every node (about twenty
/// times per command, 2 % of `gg classify`'s instructions). The name is the one
/// `Node::kind` gives: tree-sitter names a node's public symbol (`kind_id`) as it names the
/// symbol itself, and an id outside the table (the error symbol) is asked of the node.
pub(crate) fn kind(node: Node) -> &'static str {
    static KINDS: LazyLock<Vec<Option<&'static str>>> = LazyLock::new(|| {
        let bash = Language::new(tree_sitter_bash::LANGUAGE);
        (0..bash.node_kind_count())
            .map(|id| {
                u16::try_from(id)
                    .ok()
                    .and_then(|id| bash.node_kind_for_id(id))
            })
            .collect()
    });
    match KINDS.get(usize::from(node.kind_id())) {
        Some(Some(name)) => name,
        _ => node.kind(),
    }
}

pub(crate) fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

fn all_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The context of the crate's unit tests: a project in a home, `/tmp` for scratch, the
    /// sandbox's list of credentials.
    pub(crate) fn project_context() -> Context {
        Context {
            cwd: "/home/u/proj".into(),
            home: "/home/u".into(),
            scratch_dirs: vec!["/tmp".into()],
            home_credentials: sandbox::protected::DENY_READ_IN_HOME,
            ..Context::default()
        }
    }

    /// The walk's own count of work for `text`: statements visited plus words handed to the
    /// rules (the budget's steps). It does not depend on the machine's speed.
    fn steps(text: &str) -> usize {
        let ctx = project_context();
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_bash::LANGUAGE.into())
            .expect("the bash grammar loads");
        let mut walker = Walker::new(&ctx, &mut parser, text);
        walker.run();
        assert!(
            !walker.budget.exhausted && !walker.distrusted,
            "the shape must stay within the limits to measure the walk itself: {text:.60}"
        );
        walker.budget.steps
    }

    /// [`kind`] names every node of `text`'s tree, anonymous and error nodes included, as
    /// `Node::kind` does.
    fn check_kinds(text: &str) {
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_bash::LANGUAGE.into())
            .expect("the bash grammar loads");
        let tree = parser.parse(text, None).expect("the parser answers");
        let mut stack = vec![tree.root_node()];
        while let Some(node) = stack.pop() {
            assert_eq!(kind(node), node.kind(), "{text:?}");
            stack.extend(all_children(node));
        }
    }

    #[test]
    fn kinds_are_the_nodes_own() {
        for text in [
            "ls -la | grep x && echo \"$HOME/${a:-b}\" > f 2>&1; (cd /; rm -rf ~) &",
            "for f in *.rs; do case $f in a) :;; esac; done; f() { x=$((1+2)); }; [[ -n $x ]]",
            "cat <<'EOF' | sh\nrm -rf /\nEOF\nexec 5<>/etc/hosts; diff <(a) >(b) `c` $'d' {e,f}",
            "eval 'a b' 'c",
            "if then fi ((",
            "echo ${",
            "a=( 1 2 ) b[1]=x declare -a c; unset d",
        ] {
            check_kinds(text);
        }
    }

    proptest::proptest! {
        /// `rules::basename` on the bytes gives what the text's own `rsplit('/')` gave.
        #[test]
        fn basename_agrees(text in "[a/é.]{0,8}") {
            let by_text = text.trim_end_matches('/').rsplit('/').next().unwrap_or(&text);
            proptest::prop_assert_eq!(crate::rules::basename(&text), by_text);
        }

        /// [`kind`] agrees with `Node::kind` on any text, however broken.
        #[test]
        fn kinds_agree(text in "[a-z0-9 $(){}|&;<>'\"`=#!~*?.\\\\\n\\[\\]-]{0,40}") {
            check_kinds(&text);
        }
    }

    /// The corpus's stress shapes (long `&&`, `||` and `;` chains, deep `{ }`, `( )` and `$( )`
    /// nesting) at three sizes: going from 40 to 80 elements may add twice the work that going
    /// from 20 to 40 added (linear), not more. Re-walking a subtree per level, or per element of
    /// a chain, would add four times as much (quadratic).
    #[test]
    fn walk_work_grows_linearly_with_the_input() {
        /// A name and the text of that shape at a given size.
        type Shape = (&'static str, fn(usize) -> String);
        let shapes: [Shape; 6] = [
            ("&& chain", |n| format!("{}ls", "true && ".repeat(n))),
            ("|| chain", |n| format!("{}rm -rf ~", "false || ".repeat(n))),
            ("; chain", |n| format!("{}ls", "true; ".repeat(n))),
            ("{ } nesting", |n| {
                format!("{}ls; {}", "{ ".repeat(n), "}; ".repeat(n))
            }),
            ("( ) nesting", |n| {
                format!("{}ls{}", "( ".repeat(n), " )".repeat(n))
            }),
            ("$( ) nesting", |n| {
                format!("echo {}ls{}", "$( ".repeat(n), " )".repeat(n))
            }),
        ];
        for (shape, make) in shapes {
            let [at20, at40, at80] = [20, 40, 80].map(|n| steps(&make(n)));
            let (first, second) = (at40.saturating_sub(at20), at80.saturating_sub(at40));
            assert!(first > 0, "{shape}: the count measures nothing");
            assert!(
                second <= 2 * first,
                "{shape}: {at20} steps at 20, {at40} at 40, {at80} at 80"
            );
        }
    }
}
