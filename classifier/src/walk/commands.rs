//! Walking simple commands: their words, prefix assignments, declarations (`export`, `local`,
//! `unset` …) and redirections (files, heredocs, here-strings), put together as a [`Cmd`] and
//! handed to the rules.

use tree_sitter::Node;

use super::{Cmd, Field, Flow, Redirect, Walker, all_children, field, kind, named_children};
use crate::FoundCommand;
use crate::rules;
use crate::word::Word;

impl Walker<'_> {
    /// A statement with redirections. Heredocs may carry the rest of the line: a pipeline
    /// (`cat <<EOF | sh`) or a list (`cat <<EOF && x`).
    pub(super) fn redirected<'t>(&mut self, node: Node<'t>, input: &Flow) -> Flow {
        let body = field(node, Field::Body);
        let saved_feed = self.procsub_feed.clone();
        if let Some(b) = body.filter(|b| kind(*b) == "command") {
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
            match kind(child) {
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
            Some(b) if kind(b) == "command" => self.command(b, &feed, redirects),
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
        if let Some(name) = field(command, Field::Name) {
            let text = self.node_text(name);
            let program = rules::basename(text.trim_matches(['\'', '"']));
            feed.download |= rules::is_download_tool(program);
            feed.network |= rules::is_network_tool(program);
        }
        feed
    }

    pub(super) fn check_redirects_alone(&mut self, redirects: &[Redirect]) {
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
        rules::check_redirect_only(self, &cmd);
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
            match kind(child) {
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

    pub(super) fn file_redirect(
        &mut self,
        node: Node,
        redirects: &mut Vec<Redirect>,
        feed: &mut Flow,
    ) {
        let mut op = String::new();
        let mut fd = String::new();
        for child in all_children(node) {
            if kind(child) == "file_descriptor" {
                fd = self.node_text(child).to_string();
            } else if !child.is_named() {
                op = self.node_text(child).to_string();
            }
        }
        let target = field(node, Field::Destination).map(|d| self.single_word(d));
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
                // `< c.cfg` after `echo … > c.cfg`, `< <(echo …)`: the program reads known
                // text, as from a here-string (`curl -K - < c.cfg`, `sh < x.sh`).
                if flow.text.is_none() {
                    flow.text = t.flow.text.clone();
                }
                if flow.text.is_none() && !t.dynamic {
                    flow.text = rules::written_text(self, t);
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

    pub(super) fn command(
        &mut self,
        node: Node,
        input: &Flow,
        mut redirects: Vec<Redirect>,
    ) -> Flow {
        // Room for a word per child from the start (most children are one word each): a long
        // `eval eval …` or argument list otherwise moves the words several times as it grows.
        let mut argv = Vec::with_capacity(node.named_child_count());
        let mut assigns = Vec::new();
        let mut feed = input.clone();
        let mut group: Vec<Node> = Vec::new();
        let feed_here = self.output_feed(node, input);
        let saved_feed = std::mem::replace(&mut self.procsub_feed, feed_here);
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            let adjacent = group
                .last()
                .is_some_and(|last| self.joined(last.end_byte(), child.start_byte()));
            if !group.is_empty() && !adjacent {
                argv.extend(self.words_of_group(&group));
                group.clear();
            }
            match kind(child) {
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
    pub(super) fn assignment(
        &mut self,
        node: Node,
        statement_level: bool,
    ) -> Option<(String, Word)> {
        let name_node = field(node, Field::Name)?;
        let name = self.node_text(name_node).to_string();
        if kind(name_node) == "subscript" {
            // `a[$(cmd)]=1`: the subscript is evaluated (arithmetic, substitutions) first.
            self.statement(name_node, &Flow::default());
        }
        let value_node = field(node, Field::Value);
        let value = match value_node {
            Some(v) => self.single_word(v),
            None => Word::literal("", self.span_of(node)),
        };
        let array_values = value_node
            .filter(|v| kind(*v) == "array")
            .map(|v| self.static_elements(v));
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
                    // `x[1]=~/.ssh/id_rsa`: the element is also one of the values `"${x[@]}"`
                    // may give.
                    if let Some((base, _)) = name.split_once('[') {
                        let maybe = self.maybe_vars.entry(base.to_string()).or_default();
                        maybe.push(v.clone());
                        maybe.truncate(super::MAX_MAYBE_VALUES);
                    }
                    let maybe = self.maybe_vars.entry(name.clone()).or_default();
                    if let Some(old) = self.vars.remove(&name) {
                        maybe.push(old);
                    }
                    maybe.push(v);
                    maybe.truncate(8);
                }
                None => {
                    self.vars.remove(&name);
                    // `g=$f`, `f=${x[0]}`: a copy of a variable with possible values has them.
                    let copied = rules::alternatives(self, &value);
                    if !copied.is_empty() {
                        let maybe = self.maybe_vars.entry(name.clone()).or_default();
                        maybe.extend(copied.into_iter().map(|w| w.text));
                        maybe.truncate(super::MAX_MAYBE_VALUES);
                    }
                }
            }
            if let Some(elements) = array_values {
                // `x=(~/.ssh/id_rsa a)`: computed as a word, but `"${x[@]}"`, `${x[0]}` may
                // give any element.
                let maybe = self.maybe_vars.entry(name.clone()).or_default();
                if !append {
                    maybe.clear();
                }
                maybe.extend(elements);
                maybe.truncate(super::MAX_MAYBE_VALUES);
            }
            rules::check_assignment(self, &name, &value);
        }
        Some((name, value))
    }

    /// The static values among the elements of an array literal `(a b …)`. Elements with
    /// substitutions are left out: their commands were walked with the assignment already, and
    /// their values are not known.
    fn static_elements(&mut self, array: Node) -> Vec<String> {
        let mut values = Vec::new();
        for element in named_children(array) {
            let text = self.node_text(element);
            if ["$(", "`", "<(", ">("].iter().any(|s| text.contains(s)) {
                continue;
            }
            let words = self.words(element);
            values.extend(words.into_iter().filter(|w| !w.dynamic).map(|w| w.text));
        }
        values
    }

    /// `export`, `local`, `declare`, `readonly`, `typeset`, `unset`.
    pub(super) fn declaration(&mut self, node: Node) -> Flow {
        let mut argv = Vec::new();
        // After `unset x`, `$x` is empty (`x=/tmp; unset x; rm -rf $x/` deletes `/`).
        let unsets = kind(node) == "unset_command"
            && !self
                .node_text(node)
                .split_whitespace()
                .any(|w| w.starts_with("-f"));
        // `export X`, `readonly X`: only attributes change, the value stays (and an exported
        // credential path reaches what the script runs next); `local X`, `declare X` may make
        // a new, empty variable.
        let keeps = matches!(
            node.child(0).map(|c| self.node_text(c)),
            Some("export" | "readonly")
        );
        // `export X=~/.kube/config`, `declare -x X=…`: every program run after gets the path.
        let exports = matches!(
            node.child(0).map(|c| self.node_text(c)),
            Some("export" | "declare" | "typeset" | "local")
        ) && (self.node_text(node).starts_with("export")
            || self
                .node_text(node)
                .split_whitespace()
                .any(|w| w.starts_with('-') && w.contains('x')));
        let forget = |w: &mut Self, name: &str| {
            if keeps {
                return;
            }
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
            match kind(child) {
                "variable_assignment" => {
                    if let Some((name, value)) = self.assignment(child, true) {
                        if exports {
                            rules::environment_credential(self, &name, &value);
                        }
                        argv.push(Word::literal(&format!("{name}={}", value.text), value.span));
                    }
                }
                "variable_name" => {
                    let name = self.node_text(child).to_string();
                    if exports {
                        // The value it holds, or any it may hold (`read -r X <<< …; export X`).
                        let values: Vec<String> = self
                            .vars
                            .get(&name)
                            .into_iter()
                            .chain(self.maybe_vars.get(&name).into_iter().flatten())
                            .cloned()
                            .collect();
                        for value in values {
                            let value = Word::literal(&value, self.span_of(child));
                            rules::environment_credential(self, &name, &value);
                        }
                    }
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
        // `export -p`, `declare -x`, a bare `export`: the output is the environment, as `env`'s
        // is, so piping it to the network sends every secret in it.
        let prog = argv.first().map_or("", |w| w.text.as_str());
        Flow {
            credentials: rules::prints_environment(prog, argv.get(1..).unwrap_or_default()),
            ..Flow::default()
        }
    }
}
