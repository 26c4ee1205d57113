//! The tree walk: finds every simple command the text can run, in every construct that can
//! run one, and hands each to the rules together with what feeds its standard input.

use std::collections::HashMap;

use tree_sitter::{Node, Parser, Tree};

use crate::ids::RuleId;
use crate::paths::Cwds;
use crate::text::{self, Prepared};
use crate::word::Word;
use crate::{Class, Context, FoundCommand, Reason, Span, rules};

/// How many times command text may be re-parsed (`bash -c`, `eval`, heredocs to shells …).
pub(crate) const MAX_REPARSE_DEPTH: usize = 8;
/// The rule id of a classification whose work budget ran out.
const TOO_COMPLEX: RuleId = RuleId::ParseTooComplex;
/// How deeply nested the syntax tree may be before the walk stops descending.
const MAX_TREE_DEPTH: usize = 256;

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

/// How much work one classification may do. Re-parsing (`eval`, `bash -c`, substitutions inside
/// those) can multiply work far beyond the input's size; without a bound a 1 KiB command took
/// 28 s (found by fuzzing). The bounds are generous multiples of the input, so ordinary scripts
/// never reach them.
struct Budget {
    reparsed_bytes: usize,
    max_reparsed_bytes: usize,
    steps: usize,
    max_steps: usize,
    exhausted: bool,
    /// Set while the last-resort scan of the whole input runs: rules still run on each piece,
    /// but nothing re-parses or speculates, and payloads unwrap only a few levels, so the scan
    /// stays linear.
    final_scan: bool,
    payload_depth: usize,
}

impl Budget {
    fn for_input(len: usize) -> Budget {
        Budget {
            reparsed_bytes: 0,
            max_reparsed_bytes: (256 * 1024).max(len.saturating_mul(8)),
            steps: 0,
            max_steps: 200_000usize.max(len.saturating_mul(64)),
            exhausted: false,
            final_scan: false,
            payload_depth: 0,
        }
    }
}

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
    /// Files opened for reading on a descriptor by `exec N<FILE` earlier in the script: writing
    /// to `/dev/fd/N` (or `/dev/stdin` for 0) opens that file again, for writing.
    pub fd_inputs: Vec<(String, Word)>,
    /// The whole input already had the raw-text scan because the tree cannot be trusted.
    distrusted: bool,
}

impl<'a> Walker<'a> {
    pub fn new(ctx: &'a Context, parser: &'a mut Parser, input: &str) -> Walker<'a> {
        let prepared = text::prepare(input);
        let mut vars = Vars::default();
        if ctx.home.is_absolute() {
            vars.insert("HOME".to_string(), ctx.home.to_string_lossy().into_owned());
        }
        if ctx.cwd.is_absolute() {
            vars.insert("PWD".to_string(), ctx.cwd.to_string_lossy().into_owned());
        }
        Walker {
            ctx,
            parser,
            src: prepared.text.clone(),
            prepared,
            fixed_span: None,
            reasons: Vec::new(),
            commands: Vec::new(),
            cwds: Cwds::start(ctx),
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

    // ----- work budget ---------------------------------------------------------------------

    /// Charges work against the budget. The first time it runs out, the verdict becomes at
    /// least normal (`parse.too-complex`) and the whole input gets the linear raw-text scan, so a
    /// dangerous command placed after a complexity bomb is still found; from then on the walk
    /// does nothing more. Returns whether the caller may go on.
    pub(crate) fn spend(&mut self, reparsed_bytes: usize, steps: usize, span: Span) -> bool {
        if self.budget.final_scan {
            // Rules on the scan's pieces run; re-parsing never does (see `reparse`).
            return reparsed_bytes == 0;
        }
        if self.budget.exhausted {
            return false;
        }
        self.budget.reparsed_bytes = self.budget.reparsed_bytes.saturating_add(reparsed_bytes);
        self.budget.steps = self.budget.steps.saturating_add(steps);
        if self.budget.reparsed_bytes <= self.budget.max_reparsed_bytes
            && self.budget.steps <= self.budget.max_steps
        {
            return true;
        }
        self.budget.exhausted = true;
        self.reason(
            Class::Normal,
            TOO_COMPLEX,
            "command text too complex to inspect completely",
            span,
        );
        let whole = self.prepared.text.clone();
        let saved_span = self.fixed_span.take();
        let whole_span = self.map_span(0, whole.len());
        let saved_src = std::mem::replace(&mut self.src, whole.clone());
        self.budget.final_scan = true;
        crate::fallback::scan(self, &whole, whole_span);
        self.budget.final_scan = false;
        self.src = saved_src;
        self.fixed_span = saved_span;
        false
    }

    /// Runs `trial` and keeps only the dangerous reasons it produced (each message noted with
    /// `note`), plus a `parse.too-complex` reason should the budget run out inside it: the
    /// verdict must show that, too. Its commands, `cd`s and assignments are dropped.
    pub(crate) fn keep_dangerous(&mut self, note: &str, trial: impl FnOnce(&mut Walker)) {
        let (reasons, commands) = (self.reasons.len(), self.commands.len());
        let state = (self.cwds.clone(), self.vars.clone());
        trial(self);
        self.commands.truncate(commands);
        let mut kept: Vec<_> = self
            .reasons
            .drain(reasons..)
            .filter(|r| r.class == Class::Dangerous || r.rule == TOO_COMPLEX.as_str())
            .collect();
        for r in kept.iter_mut().filter(|r| r.class == Class::Dangerous) {
            r.message = format!("{} ({note})", r.message);
        }
        self.reasons.extend(kept);
        (self.cwds, self.vars) = state;
    }

    /// Whether the last-resort scan is running (speculation is skipped during it).
    pub(crate) fn in_final_scan(&self) -> bool {
        self.budget.final_scan
    }

    /// Enters one payload level during the last-resort scan; `false` past the limit.
    pub(crate) fn enter_payload(&mut self) -> bool {
        if !self.budget.final_scan {
            return true;
        }
        if self.budget.payload_depth >= 3 {
            return false;
        }
        self.budget.payload_depth += 1;
        true
    }

    pub(crate) fn leave_payload(&mut self) {
        if self.budget.final_scan {
            self.budget.payload_depth = self.budget.payload_depth.saturating_sub(1);
        }
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

    // ----- statements ----------------------------------------------------------------------

    /// Walks any node that may contain commands. Unknown node kinds are searched generically,
    /// so a construct the walker does not model is still searched for commands.
    pub fn statement(&mut self, node: Node, input: &Flow) -> Flow {
        if !self.spend(0, 1, self.span_of(node)) {
            return Flow::default();
        }
        if self.tree_depth >= MAX_TREE_DEPTH {
            let span = self.span_of(node);
            self.reason(
                Class::Normal,
                RuleId::ParseTooDeep,
                "syntax nested too deeply to inspect",
                span,
            );
            self.distrust_tree();
            return Flow::default();
        }
        self.tree_depth += 1;
        let flow = self.statement_inner(node, input);
        self.tree_depth -= 1;
        flow
    }

    fn statement_inner(&mut self, node: Node, input: &Flow) -> Flow {
        match node.kind() {
            "comment" | "heredoc_start" | "heredoc_end" | "heredoc_content" => Flow::default(),
            "compound_statement" if node.child(0).is_some_and(|c| c.kind() == "((") => {
                let raw = self.node_text(node);
                let inner = raw
                    .strip_prefix("((")
                    .and_then(|r| r.strip_suffix("))"))
                    .unwrap_or(raw)
                    .to_string();
                let span = self.span_of(node);
                self.arith_check(&inner, span);
                self.generic(node, input)
            }
            "program" | "compound_statement" | "do_group" => self.sequence(node, input),
            "subshell" => self.isolated(|w| w.sequence(node, input)),
            "list" => self.list(node, input),
            "pipeline" => {
                let stages = named_children(node);
                self.pipeline(&stages, input, Vec::new())
            }
            "negated_command" => self.sequence(node, input),
            "redirected_statement" => self.redirected(node, input),
            "command" => self.command(node, input, Vec::new()),
            "arithmetic_expansion" => {
                let raw = self.node_text(node);
                let inner = raw
                    .strip_prefix("$((")
                    .and_then(|r| r.strip_suffix("))"))
                    .or_else(|| raw.strip_prefix("$[").and_then(|r| r.strip_suffix(']')))
                    .unwrap_or(raw)
                    .to_string();
                let span = self.span_of(node);
                self.arith_check(&inner, span);
                self.generic(node, input)
            }
            "subscript" => {
                if let Some(index) = node.child_by_field_name("index") {
                    let text = self.node_text(index).to_string();
                    let span = self.span_of(index);
                    self.arith_check(&text, span);
                }
                self.generic(node, input)
            }
            "expansion" => {
                let raw = self.node_text(node).to_string();
                let span = self.span_of(node);
                let has_substitution = (raw.contains("$(") || raw.contains('`'))
                    && has_descendant(node, "command_substitution");
                self.check_expansion(&raw, span, has_substitution);
                self.generic(node, input)
            }
            "test_command" => {
                let double = self.node_text(node).starts_with("[[");
                self.test_arithmetic(node, double);
                self.generic(node, input)
            }
            "declaration_command" | "unset_command" => self.declaration(node),
            "variable_assignment" => {
                self.assignment(node, true);
                Flow::default()
            }
            "function_definition" => self.function(node),
            "if_statement" | "case_statement" | "elif_clause" | "else_clause" | "case_item" => {
                self.branch(node, input)
            }
            "while_statement" | "for_statement" | "c_style_for_statement" => {
                self.looped(node, input)
            }
            "command_substitution"
                if self.node_text(node).starts_with('`')
                    && self.node_text(node).contains("\\`") =>
            {
                // Inside backticks bash removes one level of backslashes before parsing, so
                // `\`…\`` is a nested substitution that tree-sitter reads as plain words.
                let raw = self.node_text(node);
                let body = unescape_backticks(raw.trim_start_matches('`').trim_end_matches('`'));
                let span = self.span_of(node);
                let saved = (self.cwds.clone(), self.vars.clone());
                let flow = self.reparse(&body, span, &Flow::default(), true);
                (self.cwds, self.vars) = saved;
                flow
            }
            "command_substitution" => self.isolated(|w| w.sequence(node, &Flow::default())),
            "process_substitution" => {
                let feed = if self.node_text(node).starts_with(">(") {
                    Flow {
                        fed: true,
                        text: None,
                        ..self.procsub_feed.clone()
                    }
                } else {
                    Flow::default()
                };
                self.isolated(|w| w.sequence(node, &feed))
            }
            _ => self.generic(node, input),
        }
    }

    fn generic(&mut self, node: Node, input: &Flow) -> Flow {
        let mut flow = Flow::default();
        for child in named_children(node) {
            flow.merge(&self.statement(child, input));
        }
        flow
    }

    /// Statements run one after the other. Any of them may fail and execution continues, so
    /// a `cd` adds a possible directory rather than replacing the old one.
    fn sequence(&mut self, node: Node, input: &Flow) -> Flow {
        let mut flow = Flow::default();
        let mut count = 0;
        for child in named_children(node) {
            let before = self.cwds.clone();
            let child_flow = self.statement(child, input);
            self.cwds.union(&before);
            if child.kind() != "comment" {
                count += 1;
                flow.merge(&child_flow);
                if count == 1 {
                    flow.text = child_flow.text;
                    flow.no_dash = child_flow.no_dash;
                }
            }
        }
        if count != 1 {
            flow.text = None;
            flow.no_dash = false;
        }
        flow
    }

    /// Runs `f` in a subshell: directory changes and assignments do not leak out.
    fn isolated(&mut self, f: impl FnOnce(&mut Self) -> Flow) -> Flow {
        let cwds = self.cwds.clone();
        let vars = self.vars.clone();
        let flow = f(self);
        self.cwds = cwds;
        self.vars = vars;
        flow
    }

    /// `a && b`, `a || b`: `b` may or may not run.
    fn list(&mut self, node: Node, input: &Flow) -> Flow {
        // `a && b && c` nests to the left; a chain of hundreds must not use up the depth limit,
        // so the chain is flattened here.
        let mut children = Vec::new();
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            for child in named_children(n).into_iter().rev() {
                if child.kind() == "list" {
                    stack.push(child);
                } else {
                    children.push(child);
                }
            }
        }
        children.reverse();
        children.sort_by_key(|c| c.start_byte());
        let mut flow = Flow::default();
        for (i, child) in children.into_iter().enumerate() {
            if i > 0 {
                self.conditional += 1;
            }
            flow.merge(&self.statement(child, input));
            if i > 0 {
                self.conditional -= 1;
            }
        }
        flow
    }

    /// Walks pipeline stages; each stage's input is what the earlier stages produced. `first`
    /// holds redirects for the first stage when it came from a `redirected_statement`.
    fn pipeline(&mut self, stages: &[Node], input: &Flow, first: Vec<Redirect>) -> Flow {
        let mut acc = Flow::default();
        let mut first = Some(first);
        self.in_pipeline += stages.len().saturating_sub(1).min(1);
        for (i, stage) in stages.iter().enumerate() {
            let stage_input = if i == 0 {
                input.clone()
            } else {
                let mut fed = acc.clone();
                fed.fed = true;
                fed
            };
            let redirects = first.take().unwrap_or_default();
            let out = self.isolated(|w| {
                if stage.kind() == "command" {
                    w.command(*stage, &stage_input, redirects)
                } else {
                    w.statement(*stage, &stage_input)
                }
            });
            if out.network && acc.shell {
                let span = self.span_of(*stage);
                self.reason(
                    Class::Dangerous,
                    RuleId::NetworkReverseShell,
                    "a shell's output is piped to a network connection",
                    span,
                );
            }
            let text = out.text.clone();
            acc.merge(&out);
            acc.text = text;
            acc.no_dash = out.no_dash;
        }
        self.in_pipeline -= stages.len().saturating_sub(1).min(1);
        acc
    }

    /// A statement with redirections. Heredocs may carry the rest of the line: a pipeline
    /// (`cat <<EOF | sh`) or a list (`cat <<EOF && x`).
    fn redirected<'t>(&mut self, node: Node<'t>, input: &Flow) -> Flow {
        let body = node.child_by_field_name("body");
        let saved_feed = self.procsub_feed.clone();
        if let Some(b) = body.filter(|b| b.kind() == "command") {
            self.procsub_feed = self.output_feed(b, input);
        }
        let mut redirects = Vec::new();
        let mut feed = input.clone();
        let mut rest_pipeline: Vec<Node<'t>> = Vec::new();
        let mut rest_list: Vec<Node<'t>> = Vec::new();
        for child in named_children(node) {
            if Some(child) == body {
                continue;
            }
            match child.kind() {
                "heredoc_redirect" => self.heredoc(
                    child,
                    &mut feed,
                    &mut redirects,
                    &mut rest_pipeline,
                    &mut rest_list,
                ),
                "herestring_redirect" => self.herestring(child, &mut feed),
                "file_redirect" => self.file_redirect(child, &mut redirects, &mut feed),
                _ => {
                    self.statement(child, &Flow::default());
                }
            }
        }
        let mut flow = match body {
            Some(b) if !rest_pipeline.is_empty() => {
                let mut stages = vec![b];
                stages.extend(rest_pipeline);
                self.pipeline(&stages, &feed, redirects)
            }
            Some(b) if b.kind() == "command" => self.command(b, &feed, redirects),
            Some(b) => {
                // tree-sitter attaches a trailing redirect to a whole `a && b` list; walking
                // the body first lets a `cd` in it count, as it would for the last command.
                let flow = self.statement(b, &feed);
                self.check_redirects_alone(&redirects);
                flow
            }
            None => {
                self.check_redirects_alone(&redirects);
                Flow::default()
            }
        };
        for right in rest_list {
            self.conditional += 1;
            flow.merge(&self.statement(right, &Flow::default()));
            self.conditional -= 1;
        }
        self.procsub_feed = saved_feed;
        flow
    }

    /// Whether two nodes ending/starting at these offsets are one bash word: nothing between
    /// them, or only line continuations (tree-sitter reads `r\<newline>m` as two words, bash
    /// as `rm`).
    fn joined(&self, end: usize, start: usize) -> bool {
        let gap = self.source(end, start);
        gap.is_empty()
            || (gap.len().is_multiple_of(2) && gap.as_bytes().chunks(2).all(|c| c == b"\\\n"))
    }

    /// Approximates what a command writes to its output before its rules run: its input, plus
    /// network content when it is a download tool.
    fn output_feed(&self, command: Node, input: &Flow) -> Flow {
        let mut feed = input.clone();
        if let Some(name) = command.child_by_field_name("name") {
            let text = self.node_text(name);
            let program = rules::basename(text.trim_matches(['\'', '"']));
            feed.download |= rules::is_download_tool(program);
            feed.network |= rules::is_network_tool(program);
        }
        feed
    }

    fn check_redirects_alone(&mut self, redirects: &[Redirect]) {
        if redirects.is_empty() {
            return;
        }
        let span = redirects[0].span;
        let cmd = Cmd {
            argv: Vec::new(),
            assigns: Vec::new(),
            redirects: redirects.to_vec(),
            input: Flow::default(),
            span,
        };
        rules::check_redirects(self, &cmd);
    }

    fn heredoc<'t>(
        &mut self,
        node: Node<'t>,
        feed: &mut Flow,
        redirects: &mut Vec<Redirect>,
        rest_pipeline: &mut Vec<Node<'t>>,
        rest_list: &mut Vec<Node<'t>>,
    ) {
        let mut after_operator = false;
        for child in all_children(node) {
            match child.kind() {
                "heredoc_body" => {
                    let text = self.node_text(child).to_string();
                    // Expansions in an unquoted heredoc run in this shell.
                    let inner = self.generic(child, &Flow::default());
                    *feed = Flow {
                        text: Some(text),
                        fed: true,
                        ..inner
                    };
                }
                "pipeline" => rest_pipeline.extend(named_children(child)),
                "file_redirect" => self.file_redirect(child, redirects, feed),
                "herestring_redirect" => self.herestring(child, feed),
                "&&" | "||" => after_operator = true,
                _ if after_operator && child.is_named() => rest_list.push(child),
                _ => {}
            }
        }
    }

    fn herestring(&mut self, node: Node, feed: &mut Flow) {
        let mut flow = Flow {
            fed: true,
            ..Flow::default()
        };
        let parts = named_children(node);
        if let Some(part) = parts.last() {
            let word = self.single_word(*part);
            flow.merge(&word.flow);
            if !word.dynamic {
                flow.text = Some(format!("{}\n", word.text));
            }
        }
        *feed = flow;
    }

    fn file_redirect(&mut self, node: Node, redirects: &mut Vec<Redirect>, feed: &mut Flow) {
        let mut op = String::new();
        let mut fd = String::new();
        for child in all_children(node) {
            if child.kind() == "file_descriptor" {
                fd = self.node_text(child).to_string();
            } else if !child.is_named() {
                op = self.node_text(child).to_string();
            }
        }
        let target = node
            .child_by_field_name("destination")
            .map(|d| self.single_word(d));
        let span = self.span_of(node);
        if op.starts_with('<') && op != "<>" {
            let mut flow = Flow {
                fed: true,
                ..Flow::default()
            };
            if let Some(t) = &target {
                flow.merge(&t.flow);
                flow.fed = true;
                if rules::is_network_device(&t.text) {
                    flow.network = true;
                }
                if rules::names_credentials(self, t) {
                    flow.credentials = true;
                }
            }
            if fd.is_empty() || fd == "0" {
                *feed = flow;
            }
        }
        redirects.push(Redirect {
            op,
            fd,
            target,
            span,
        });
    }

    // ----- commands ------------------------------------------------------------------------

    fn command(&mut self, node: Node, input: &Flow, mut redirects: Vec<Redirect>) -> Flow {
        let mut argv = Vec::new();
        let mut assigns = Vec::new();
        let mut feed = input.clone();
        let mut group: Vec<Node> = Vec::new();
        let feed_here = self.output_feed(node, input);
        let saved_feed = std::mem::replace(&mut self.procsub_feed, feed_here);
        for child in named_children(node) {
            let adjacent = group
                .last()
                .is_some_and(|last| self.joined(last.end_byte(), child.start_byte()));
            if !group.is_empty() && !adjacent {
                argv.extend(self.words_of_group(&group));
                group.clear();
            }
            match child.kind() {
                "variable_assignment" => {
                    if let Some(a) = self.assignment(child, false) {
                        assigns.push(a);
                    }
                }
                "file_redirect" => self.file_redirect(child, &mut redirects, &mut feed),
                "herestring_redirect" => self.herestring(child, &mut feed),
                "comment" => {}
                "subshell" => {
                    self.statement(child, &Flow::default());
                }
                _ => {
                    group.push(child);
                    continue;
                }
            }
            argv.extend(self.words_of_group(&group));
            group.clear();
        }
        argv.extend(self.words_of_group(&group));
        self.procsub_feed = saved_feed;
        let cmd = Cmd {
            argv,
            assigns,
            redirects,
            input: feed,
            span: self.span_of(node),
        };
        self.note_self_call(&cmd);
        rules::run(self, cmd)
    }

    /// Handles `NAME=value`. At statement level (`prefix == false` means it is a command prefix)
    /// the value is remembered when the assignment certainly happens.
    fn assignment(&mut self, node: Node, statement_level: bool) -> Option<(String, Word)> {
        let name_node = node.child_by_field_name("name")?;
        let name = self.node_text(name_node).to_string();
        if name_node.kind() == "subscript" {
            // `a[$(cmd)]=1`: the subscript is evaluated (arithmetic, substitutions) first.
            self.statement(name_node, &Flow::default());
        }
        let value = match node.child_by_field_name("value") {
            Some(v) => self.single_word(v),
            None => Word::literal("", self.span_of(node)),
        };
        // `x+=y` appends to the old value (an array element for an array, a sum for an integer).
        let append = self
            .source(name_node.end_byte(), node.end_byte())
            .starts_with("+=");
        if statement_level {
            let static_value = match value.known() {
                Some(v) if append => self.vars.get(&name).map(|old| format!("{old}{v}")),
                known => known.map(str::to_string),
            };
            match static_value {
                Some(v) if self.conditional == 0 && !name.contains('[') => {
                    self.maybe_vars.remove(&name);
                    self.vars.insert(name.clone(), v);
                }
                Some(v) => {
                    let maybe = self.maybe_vars.entry(name.clone()).or_default();
                    if let Some(old) = self.vars.remove(&name) {
                        maybe.push(old);
                    }
                    maybe.push(v);
                    maybe.truncate(8);
                }
                None => {
                    self.vars.remove(&name);
                }
            }
            rules::check_assignment(self, &name, &value);
        }
        Some((name, value))
    }

    /// `export`, `local`, `declare`, `readonly`, `typeset`, `unset`.
    fn declaration(&mut self, node: Node) -> Flow {
        let mut argv = Vec::new();
        // After `unset x`, `$x` is empty (`x=/tmp; unset x; rm -rf $x/` deletes `/`).
        let unsets = node.kind() == "unset_command"
            && !self
                .node_text(node)
                .split_whitespace()
                .any(|w| w.starts_with("-f"));
        let forget = |w: &mut Self, name: &str| {
            w.maybe_vars.remove(name);
            if unsets && w.conditional == 0 {
                w.vars.insert(name.to_string(), String::new());
            } else {
                w.vars.remove(name);
            }
        };
        if let Some(first) = node.child(0).filter(|c| !c.is_named()) {
            argv.push(Word::literal(self.node_text(first), self.span_of(first)));
        }
        for child in named_children(node) {
            match child.kind() {
                "variable_assignment" => {
                    if let Some((name, value)) = self.assignment(child, true) {
                        argv.push(Word::literal(&format!("{name}={}", value.text), value.span));
                    }
                }
                "variable_name" => {
                    let name = self.node_text(child).to_string();
                    forget(self, &name);
                    argv.push(Word::literal(&name, self.span_of(child)));
                }
                _ => {
                    let words = self.words(child);
                    for word in &words {
                        // `unset 'x'`, `local "x"`: a quoted plain name is still that variable.
                        if !word.dynamic && !word.is_option() {
                            let name = word
                                .text
                                .split_once('=')
                                .map_or(word.text.as_str(), |(n, _)| n);
                            forget(self, name);
                        }
                        self.check_declaration_word(word);
                    }
                    argv.extend(words);
                }
            }
        }
        let span = self.span_of(node);
        self.commands.push(FoundCommand {
            argv: argv.iter().map(|w| w.text.clone()).collect(),
            span,
        });
        Flow::default()
    }

    fn function(&mut self, node: Node) -> Flow {
        let name = node
            .child_by_field_name("name")
            .map(|n| self.node_text(n).to_string())
            .unwrap_or_default();
        let span = self.span_of(node);
        self.functions.push((name.clone(), 0, false));
        let before = self.cwds.clone();
        self.conditional += 1;
        self.isolated(|w| w.generic(node, &Flow::default()));
        self.conditional -= 1;
        if let Some((_, calls, piped)) = self.functions.pop()
            && (calls >= 2 || piped)
        {
            let msg = format!("function \"{name}\" calls itself in parallel: a fork bomb");
            self.reason(Class::Dangerous, RuleId::SystemForkBomb, msg, span);
        }
        // Calling the function later may change directory: its body was walked in isolation.
        if self.cwds != before {
            self.cwds = Cwds::unknown();
        }
        self.vars.remove(&name);
        Flow::default()
    }

    fn note_self_call(&mut self, cmd: &Cmd) {
        let Some(name) = cmd.argv.first().and_then(Word::known) else {
            return;
        };
        let in_pipeline = self.in_pipeline > 0;
        for (fname, calls, piped) in self.functions.iter_mut() {
            if fname == name {
                *calls += 1;
                *piped |= in_pipeline;
            }
        }
    }

    fn branch(&mut self, node: Node, input: &Flow) -> Flow {
        self.conditional += 1;
        let flow = self.sequence(node, input);
        self.conditional -= 1;
        flow
    }

    /// Loops may run their body any number of times: a `cd` inside makes the directory unknown.
    fn looped(&mut self, node: Node, input: &Flow) -> Flow {
        if node.kind() == "c_style_for_statement" {
            return self.c_style_for(node, input);
        }
        if let Some(var) = node.child_by_field_name("variable") {
            let name = self.node_text(var).to_string();
            self.vars.remove(&name);
        }
        let before = self.cwds.clone();
        self.conditional += 1;
        let flow = self.sequence(node, input);
        self.conditional -= 1;
        if self.cwds != before {
            self.cwds = Cwds::unknown();
        }
        flow
    }

    /// `for ((init; cond; update))`: the header is arithmetic. The initializer runs once, before
    /// anything else, so its plain assignments are known when the condition is evaluated.
    fn c_style_for(&mut self, node: Node, input: &Flow) -> Flow {
        let body = node.child_by_field_name("body");
        let header_end = body.map_or(node.end_byte(), |b| b.start_byte());
        let header = self.source(node.start_byte(), header_end).to_string();
        let header = header
            .trim_start_matches("for")
            .trim()
            .trim_start_matches("((")
            .trim_end_matches(|c: char| c.is_whitespace() || c == ';' || c == 'd' || c == 'o')
            .trim_end_matches("))")
            .to_string();
        let mut initialized = Vec::new();
        for init in node.children_by_field_name("initializer", &mut node.walk()) {
            if init.kind() == "variable_assignment"
                && let (Some(n), Some(v)) = (
                    init.child_by_field_name("name"),
                    init.child_by_field_name("value"),
                )
                && v.kind() == "number"
            {
                initialized.push((self.node_text(n).to_string(), self.node_text(v).to_string()));
            }
        }
        for (name, value) in initialized {
            self.vars.insert(name, value);
        }
        let span = self.span_of(node);
        self.arith_check(&header, span);
        let before = self.cwds.clone();
        self.conditional += 1;
        let flow = match body {
            Some(b) => self.statement(b, input),
            None => Flow::default(),
        };
        self.conditional -= 1;
        if self.cwds != before {
            self.cwds = Cwds::unknown();
        }
        flow
    }

    /// `[[ a -eq b ]]` evaluates both operands as arithmetic (`test` and `[` do not: `double`
    /// says which it is). Both evaluate the subscript of a `-v NAME` operand.
    fn test_arithmetic(&mut self, node: Node, double: bool) {
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            if double && n.kind() == "binary_expression" {
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| self.node_text(o).to_string())
                    .unwrap_or_default();
                if matches!(op.as_str(), "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge") {
                    for side in ["left", "right"] {
                        if let Some(operand) = n.child_by_field_name(side) {
                            let text = self.node_text(operand).replace(['"', '\''], "");
                            let span = self.span_of(operand);
                            self.arith_check(&text, span);
                        }
                    }
                }
            }
            if n.kind() == "unary_expression" {
                let children = named_children(n);
                let is_v = all_children(n)
                    .first()
                    .is_some_and(|c| matches!(self.node_text(*c), "-v" | "-R"));
                if is_v && let Some(operand) = children.last() {
                    let word = self.single_word(*operand);
                    let span = word.span;
                    if word.dynamic || word.text.contains('[') {
                        let inner = word.text.split_once('[').map_or("", |(_, r)| r);
                        let inner = inner.rsplit_once(']').map_or(inner, |(i, _)| i);
                        if word.dynamic || inner.contains(['$', '`']) {
                            let msg = format!(
                                "\"[[ -v {} ]]\" evaluates a computed subscript",
                                word.text
                            );
                            self.reason(
                                Class::Normal,
                                RuleId::EvalSubscriptSubstitution,
                                msg,
                                span,
                            );
                        } else {
                            self.arith_check(inner, span);
                        }
                    }
                }
            }
            stack.extend(named_children(n));
        }
    }

    /// Only the raw-text scan for dangerous patterns, without parsing (over-large input).
    pub(crate) fn scan_only(&mut self) {
        self.distrust_tree();
    }

    /// The tree cannot be trusted (nested beyond the depth limit): the whole input gets the
    /// raw-text scan for dangerous patterns, once.
    fn distrust_tree(&mut self) {
        if self.distrusted {
            return;
        }
        self.distrusted = true;
        let whole = self.prepared.text.clone();
        let saved_span = self.fixed_span.take();
        let whole_span = self.map_span(0, whole.len());
        let saved_src = std::mem::replace(&mut self.src, whole.clone());
        let saved_scan = self.budget.final_scan;
        self.budget.final_scan = true;
        self.keep_dangerous("in text nested too deeply to parse reliably", |w| {
            crate::fallback::scan(w, &whole, whole_span);
        });
        self.budget.final_scan = saved_scan;
        self.src = saved_src;
        self.fixed_span = saved_span;
    }

    /// Walks the commands inside a substitution or other word-level construct.
    pub fn substitution(&mut self, node: Node) -> Flow {
        self.statement(node, &Flow::default())
    }
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

pub(crate) fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// Whether `node` has a descendant of `kind`.
fn has_descendant(node: Node, kind: &str) -> bool {
    let mut stack = named_children(node);
    while let Some(n) = stack.pop() {
        if n.kind() == kind {
            return true;
        }
        stack.extend(named_children(n));
    }
    false
}

/// Removes the backslashes bash removes inside backticks: before `` ` ``, `\\` and `$`.
fn unescape_backticks(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && matches!(chars.peek(), Some('`' | '\\' | '$')) {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}

fn all_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk's own count of work for `text`: statements visited plus words handed to the
    /// rules (the budget's steps). It does not depend on the machine's speed.
    fn steps(text: &str) -> usize {
        let ctx = Context {
            cwd: "/home/u/proj".into(),
            home: "/home/u".into(),
            scratch_dirs: vec!["/tmp".into()],
            ..Context::default()
        };
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
