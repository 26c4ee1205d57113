//! Walking statements: sequences, `&&`/`||` lists, pipelines (each stage fed by the ones
//! before), subshells and substitutions, branches, loops, functions and arithmetic tests.
//! Simple commands and redirections are in [`super::commands`].

use tree_sitter::Node;

use super::{Cmd, Flow, Redirect, Walker, all_children, kind, named_children};
use crate::Class;
use crate::ids::RuleId;
use crate::paths::Cwds;
use crate::word::Word;

/// How deeply nested the syntax tree may be before the walk stops descending.
pub(super) const MAX_TREE_DEPTH: usize = 256;

impl Walker<'_> {
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
        match kind(node) {
            "comment" | "heredoc_start" | "heredoc_end" | "heredoc_content" => Flow::default(),
            "compound_statement" if node.child(0).is_some_and(|c| kind(c) == "((") => {
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
            "file_redirect" => {
                // A redirection where a statement stands (`$(< f)`, bash's `$(cat f)`): the
                // tree puts it straight in the substitution, with no statement around it, so
                // its input gets the checks of a redirection-only statement here, and its
                // content (credentials, network) is what the substitution yields.
                let mut redirects = Vec::new();
                let mut read = Flow::default();
                self.file_redirect(node, &mut redirects, &mut read);
                self.check_redirects_alone(&redirects);
                Flow {
                    fed: false,
                    text: None,
                    ..read
                }
            }
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

    pub(super) fn generic(&mut self, node: Node, input: &Flow) -> Flow {
        let mut flow = Flow::default();
        // A cursor of its own rather than a collected list: this runs for most nodes.
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            flow.merge(&self.statement(child, input));
        }
        flow
    }

    /// Statements run one after the other. Any of them may fail and execution continues, so
    /// a `cd` adds a possible directory rather than replacing the old one.
    fn sequence(&mut self, node: Node, input: &Flow) -> Flow {
        let mut flow = Flow::default();
        let mut count = 0;
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            let before = self.cwds.clone();
            let child_flow = self.statement(child, input);
            self.cwds.union(&before);
            if kind(child) != "comment" {
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
                if kind(child) == "list" {
                    stack.push(child);
                } else {
                    children.push(child);
                }
            }
        }
        children.reverse();
        children.sort_by_key(|c| c.start_byte());
        // What an `&&` chain prints is what its parts print, in order, when each is known and
        // a `cd` to a path that CDPATH does not apply to prints nothing: `$(cd .. && pwd)` is
        // the parent directory, which `rm -rf` must see as such. With `||` which parts run is
        // not known.
        let only_and = !self.node_text(node).contains("||");
        let mut printed = only_and.then(String::new);
        let mut flow = Flow::default();
        for (i, child) in children.into_iter().enumerate() {
            if i > 0 {
                self.conditional += 1;
            }
            let quiet_cd = self.is_quiet_cd(child);
            let child_flow = self.statement(child, input);
            printed = match (printed, &child_flow.text) {
                (Some(acc), _) if quiet_cd => Some(acc),
                (Some(acc), Some(text)) => Some(acc + text),
                _ => None,
            };
            flow.merge(&child_flow);
            if i > 0 {
                self.conditional -= 1;
            }
        }
        flow.text = printed;
        flow
    }

    /// `cd DIR` where DIR is absolute, starts with `.` or `~`, or is absent: bash prints nothing
    /// (a CDPATH search, which prints the directory, applies only to other names).
    fn is_quiet_cd(&self, node: Node) -> bool {
        if kind(node) != "command" {
            return false;
        }
        let words: Vec<&str> = self.node_text(node).split_whitespace().collect();
        match words.as_slice() {
            ["cd"] => true,
            ["cd", dir] => {
                dir.starts_with(['/', '.', '~']) && !dir.contains(['$', '`', '\\', '\'', '"'])
            }
            _ => false,
        }
    }

    /// Walks pipeline stages; each stage's input is what the earlier stages produced. `first`
    /// holds redirects for the first stage when it came from a `redirected_statement`.
    pub(super) fn pipeline(&mut self, stages: &[Node], input: &Flow, first: Vec<Redirect>) -> Flow {
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
                if kind(*stage) == "command" {
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

    pub(super) fn note_self_call(&mut self, cmd: &Cmd) {
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
        if kind(node) == "c_style_for_statement" {
            return self.c_style_for(node, input);
        }
        if let Some(var) = node.child_by_field_name("variable") {
            let name = self.node_text(var).to_string();
            let values = self.loop_values(node);
            let old = self.vars.remove(&name);
            // The variable takes each listed value in turn (and keeps its old one when the
            // list is empty): computed for the rules, but each value is still tried, so `for f
            // in ~/.ssh/id_rsa; do cat "$f"; done` is judged as `cat ~/.ssh/id_rsa` is.
            let maybe = self.maybe_vars.entry(name).or_default();
            maybe.extend(old);
            maybe.extend(values);
            maybe.truncate(super::MAX_MAYBE_VALUES);
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

    /// The static values of the word list of `for NAME in WORDS` (globs as patterns; a word
    /// computed after a known start as that start and `*`). Words with substitutions are left
    /// out: reading them again would run their commands twice in
    /// the walk, and their values are not known anyway. The exception is a substitution of
    /// `echo` or `printf` of words alone (`$(echo ~/.ssh/id_rsa)`): its output is known, and
    /// walking it twice costs nothing and finds nothing twice that matters.
    fn loop_values(&mut self, node: Node) -> Vec<String> {
        let mut values = Vec::new();
        for value in node.children_by_field_name("value", &mut node.walk()) {
            if !self.only_prints_words(value)
                && [
                    "command_substitution",
                    "process_substitution",
                    "arithmetic_expansion",
                ]
                .iter()
                .any(|wanted| kind(value) == *wanted || has_descendant(value, wanted))
            {
                continue;
            }
            for word in self.words(value) {
                let copied = crate::rules::alternatives(self, &word);
                if !word.dynamic {
                    values.push(word.text);
                } else if !copied.is_empty() {
                    // `"${x[@]}"`, `$f`: the values the variable may hold.
                    values.extend(copied.into_iter().map(|w| w.text));
                } else if !word.prefix.is_empty() {
                    // `~/.ssh/$k`: some name below the known start.
                    values.push(format!("{}*", word.prefix));
                }
            }
        }
        values
    }

    /// Whether every substitution in `node` (alone, quoted or joined to text, as in
    /// `$(echo ~)/.ssh`) is `$(echo …)`, `$(printf …)` or `$(cat <<< …)` (a here-string or
    /// heredoc) holding no substitution of its own: their output is known.
    fn only_prints_words(&self, node: Node) -> bool {
        let mut substitutions = Vec::new();
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            match kind(n) {
                "command_substitution" => substitutions.push(n),
                "process_substitution" | "arithmetic_expansion" => return false,
                _ => stack.extend(named_children(n)),
            }
        }
        !substitutions.is_empty() && substitutions.iter().all(|s| self.prints_known(*s))
    }

    fn prints_known(&self, substitution: Node) -> bool {
        let children = named_children(substitution);
        let [statement] = children.as_slice() else {
            return false;
        };
        let (command, printers): (Node, &[&str]) = match kind(*statement) {
            // The grammar puts a here-string among the command's arguments.
            "command"
                if named_children(*statement)
                    .iter()
                    .any(|c| kind(*c) == "herestring_redirect") =>
            {
                (*statement, &["cat"])
            }
            "command" => (*statement, &["echo", "printf"]),
            // `cat <<< WORDS`: prints the here-string back.
            "redirected_statement" => {
                let Some(body) = statement.child_by_field_name("body") else {
                    return false;
                };
                let only_text_in = named_children(*statement).iter().all(|r| {
                    r.id() == body.id()
                        || matches!(kind(*r), "herestring_redirect" | "heredoc_redirect")
                });
                if !only_text_in {
                    return false;
                }
                (body, &["cat"])
            }
            _ => return false,
        };
        kind(command) == "command"
            && command
                .child_by_field_name("name")
                .is_some_and(|name| printers.contains(&self.node_text(name)))
            && ![
                "command_substitution",
                "process_substitution",
                "arithmetic_expansion",
            ]
            .iter()
            .any(|kind| has_descendant(*statement, kind))
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
            if kind(init) == "variable_assignment"
                && let (Some(n), Some(v)) = (
                    init.child_by_field_name("name"),
                    init.child_by_field_name("value"),
                )
                && kind(v) == "number"
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
            if double && kind(n) == "binary_expression" {
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
            if kind(n) == "unary_expression" {
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

    /// Walks the commands inside a substitution or other word-level construct.
    pub fn substitution(&mut self, node: Node) -> Flow {
        self.statement(node, &Flow::default())
    }
}

/// Whether `node` has a descendant of kind `wanted`.
fn has_descendant(node: Node, wanted: &str) -> bool {
    let mut stack = named_children(node);
    while let Some(n) = stack.pop() {
        if kind(n) == wanted {
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
