//! Interpreter code given inline (`python -c`, `python - <<EOF`, `node -e`): parsed with the
//! language's real tree-sitter grammar, so that what the code does is judged like shell:
//!
//! - strings handed to a shell (`os.system`, `subprocess.run(…, shell=True)`,
//!   `child_process.execSync`) are classified as bash, recursively; argument lists
//!   (`subprocess.run(["rm", "-rf", p])`, `spawn("rm", [...])`) as the command they are;
//! - deletion and write APIs (`shutil.rmtree`, `os.remove`, `open(p, "w")`,
//!   `Path(p).write_text`, `fs.rmSync`, `fs.writeFileSync`) with statically known paths are
//!   judged like `rm -rf`/redirections to those paths;
//! - `exec`/`eval` of statically decodable payloads (base64, hex, bytes literals, plain
//!   strings) are decoded and analysed as code of the same language.
//!
//! Perl, Ruby and PHP one-liners keep the lexical scan of `exec::embedded_shell_commands`: two
//! more C grammars would cost build time for rarely used forms, and the scan already finds
//! their shell-running calls; their code is never read-only either way.

use tree_sitter::{Node, Parser};

use super::fs::rm_recursive_force;
use super::{check_write_target, run_code};
use crate::Class;
use crate::Span;
use crate::ids::RuleId;
use crate::walk::{Flow, Walker};
use crate::word::Word;

/// Languages parsed with a grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    Python,
    JavaScript,
}

impl Lang {
    pub fn of(program: &str) -> Option<Lang> {
        if program.starts_with("python") || program.starts_with("pypy") {
            Some(Lang::Python)
        } else if matches!(program, "node" | "nodejs" | "deno" | "bun") {
            Some(Lang::JavaScript)
        } else {
            None
        }
    }
}

/// How deeply decoded payloads are followed (`exec(b64decode(…))` inside such a payload …).
const MAX_DEPTH: usize = 4;
/// Longest code analysed; longer code is still never read-only, just not inspected.
const MAX_CODE: usize = 256 * 1024;

thread_local! {
    static PARSERS: std::cell::RefCell<(Option<Parser>, Option<Parser>)> =
        const { std::cell::RefCell::new((None, None)) };
}

/// Analyses `code` in `lang`; findings are reasons at `span`.
pub(crate) fn analyse(w: &mut Walker, lang: Lang, code: &str, span: Span) {
    analyse_at(w, lang, code, span, 0);
}

fn analyse_at(w: &mut Walker, lang: Lang, code: &str, span: Span, depth: usize) {
    if depth > MAX_DEPTH || code.len() > MAX_CODE || w.in_final_scan() {
        return;
    }
    if !w.spend(code.len(), 1, span) {
        return;
    }
    let Some(tree) = parse(lang, code) else {
        return;
    };
    // The tree's size and depth first, with a cursor (constant work a node): every node is a
    // step of the budget, and the evaluators below recurse into subtrees, so a tree nested
    // deeper than MAX_CODE_NESTING (20,000 nested `getattr(`, a chain of 50,000 `"a"+`) would
    // overflow the stack or cost the square of its depth. Such code is too complex: the budget
    // runs out (fail closed, with the raw-text scan of the whole input).
    let (nodes, deepest) = size_and_depth(&tree);
    if deepest > MAX_CODE_NESTING || nodes > MAX_CODE_NODES {
        w.exhaust(span);
        return;
    }
    if !w.spend(0, nodes, span) {
        return;
    }
    let mut cx = Cx {
        w,
        lang,
        src: code,
        span,
        depth,
        checks: 0,
        evaluated: std::cell::Cell::new(0),
    };
    // Each node with its parent's kind: `Node::parent` walks down from the root again, which
    // made this loop quadratic in the nesting depth (20,000 nested calls: 150 s).
    let mut stack = vec![(tree.root_node(), "")];
    let mut charged = 0usize;
    while let Some((node, parent_kind)) = stack.pop() {
        if matches!(node.kind(), "call" | "call_expression" | "new_expression") {
            cx.call(node);
        }
        cx.computed_credential(node, parent_kind);
        // What the evaluators did for this node is charged too: on nested code they look at
        // whole subtrees again, at most MAX_CODE_NESTING levels deep.
        let evaluated = cx.evaluated.get();
        if !cx.w.spend(0, evaluated - charged, span) {
            return;
        }
        charged = evaluated;
        let mut cursor = node.walk();
        let kind = node.kind();
        stack.extend(node.named_children(&mut cursor).map(|child| (child, kind)));
    }
}

/// Deepest nesting of a grammar's tree analysed; deeper code exhausts the budget. Ordinary code
/// stays far below it (a call in a call adds two levels, an operand of a `+` chain one).
const MAX_CODE_NESTING: usize = 256;
/// Most nodes of a grammar's tree analysed; more exhaust the budget.
const MAX_CODE_NODES: usize = 400_000;

/// The number of nodes of `tree` and the depth of its deepest one, without recursion.
fn size_and_depth(tree: &tree_sitter::Tree) -> (usize, usize) {
    let mut cursor = tree.walk();
    let (mut nodes, mut depth, mut deepest) = (1usize, 0usize, 0usize);
    loop {
        if cursor.goto_first_child() {
            depth += 1;
            nodes += 1;
            deepest = deepest.max(depth);
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                nodes += 1;
                break;
            }
            if !cursor.goto_parent() {
                return (nodes, deepest);
            }
            depth -= 1;
        }
    }
}

fn parse(lang: Lang, code: &str) -> Option<tree_sitter::Tree> {
    PARSERS.with(|cell| {
        let mut parsers = cell.try_borrow_mut().ok()?;
        let slot = match lang {
            Lang::Python => &mut parsers.0,
            Lang::JavaScript => &mut parsers.1,
        };
        if slot.is_none() {
            let mut parser = Parser::new();
            let language: tree_sitter::Language = match lang {
                Lang::Python => tree_sitter_python::LANGUAGE.into(),
                Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            };
            parser.set_language(&language).ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(code, None)
    })
}

struct Cx<'w, 'a, 's> {
    w: &'w mut Walker<'a>,
    lang: Lang,
    src: &'s str,
    span: Span,
    depth: usize,
    /// Full credential checks made ([`Cx::computed_credential`]).
    checks: usize,
    /// Nodes the evaluators ([`Cx::string_value`], [`Cx::path_value`], [`Cx::decoded`]) looked
    /// at, charged to the budget as steps.
    evaluated: std::cell::Cell<usize>,
}

impl Cx<'_, '_, '_> {
    fn text(&self, node: Node) -> &str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    /// A binary expression's left operand, operator and right operand.
    fn binary<'t>(&self, node: Node<'t>) -> Option<(Node<'t>, &str, Node<'t>)> {
        let left = node.child_by_field_name("left")?;
        let right = node.child_by_field_name("right")?;
        let op = node.child_by_field_name("operator")?;
        Some((left, self.text(op), right))
    }

    /// The called name: the last attribute (`os.system` → `system`, `fs.rmSync` → `rmSync`).
    fn callee(&self, call: Node) -> (String, String) {
        let function = call
            .child_by_field_name("function")
            .or_else(|| call.child_by_field_name("constructor"));
        let Some(f) = function else {
            return (String::new(), String::new());
        };
        let full = self.text(f).to_string();
        let last = match f.kind() {
            "attribute" => f.child_by_field_name("attribute"),
            "member_expression" => f.child_by_field_name("property"),
            _ => Some(f),
        };
        let name = last.map(|n| self.text(n).to_string()).unwrap_or_default();
        (name, full)
    }

    fn args<'t>(&self, call: Node<'t>) -> (Vec<Node<'t>>, Vec<(String, Node<'t>)>) {
        let mut positional = Vec::new();
        let mut keywords = Vec::new();
        if let Some(list) = call.child_by_field_name("arguments") {
            let mut cursor = list.walk();
            for arg in list.named_children(&mut cursor) {
                match arg.kind() {
                    "keyword_argument" => {
                        if let (Some(k), Some(v)) = (
                            arg.child_by_field_name("name"),
                            arg.child_by_field_name("value"),
                        ) {
                            keywords.push((self.text(k).to_string(), v));
                        }
                    }
                    "comment" => {}
                    _ => positional.push(arg),
                }
            }
        }
        (positional, keywords)
    }

    fn call(&mut self, call: Node) {
        let (name, full) = self.callee(call);
        let (args, keywords) = self.args(call);
        match self.lang {
            Lang::Python => self.python_call(call, &name, &full, &args, &keywords),
            Lang::JavaScript => self.js_call(&name, &full, &args),
        }
    }

    fn python_call(
        &mut self,
        call: Node,
        name: &str,
        full: &str,
        args: &[Node],
        keywords: &[(String, Node)],
    ) {
        let first = args.first().copied();
        match name {
            "system" | "popen" | "getoutput" | "getstatusoutput" | "check_output"
            | "check_call" | "call" | "run" | "Popen"
                if name != "run" || full.contains("subprocess") || full == "run" =>
            {
                let shell_kw = keywords
                    .iter()
                    .any(|(k, v)| k == "shell" && self.text(*v) != "False");
                let via_shell =
                    matches!(name, "system" | "popen" | "getoutput" | "getstatusoutput")
                        || shell_kw;
                if let Some(a) = first {
                    self.command(a, via_shell, name);
                }
            }
            "execv" | "execve" | "execvp" | "execvpe" | "execl" | "execlp" | "execle"
            | "execlpe" | "spawnv" | "spawnl" | "spawnlp" | "spawnvp" | "posix_spawn"
            | "posix_spawnp" => {
                // `os.execvp("rm", ["rm", "-rf", p])`: the list is the argv.
                if let Some(list) = args.get(1) {
                    self.command(*list, false, name);
                } else if let Some(a) = first {
                    self.command(a, false, name);
                }
            }
            "spawn" if full.contains("pty") => {
                if let Some(a) = first {
                    self.command(a, false, name);
                }
            }
            "rmtree" => self.delete(first, true, full),
            "remove" | "unlink" | "rmdir" | "removedirs" => {
                if full.contains("os.") || full.starts_with("os") || first.is_some() {
                    self.delete(first, false, full);
                } else {
                    // `Path(p).unlink()`: the path is the receiver.
                    let receiver = receiver(call).and_then(|r| self.path_value(r));
                    self.delete_path(receiver, name == "rmdir", full);
                }
            }
            "rename" | "replace" | "move" | "copy" | "copy2" | "copyfile" | "copytree"
            | "symlink" | "link" => {
                if let Some(dst) = args.get(1) {
                    self.write(Some(*dst), full);
                } else if receiver(call).is_some() {
                    // `Path(src).rename(dst)` writes dst.
                    self.write(first, full);
                }
            }
            "chmod" | "chown" | "lchown" | "truncate" | "utime" | "mkfifo" | "mknod"
            | "makedirs" | "mkdir" => {
                if first.is_some() && !full.ends_with(&format!(").{name}")) {
                    self.write(first, full);
                } else if let Some(r) = receiver(call) {
                    self.write(Some(r), full);
                }
            }
            "write_text" | "write_bytes" | "touch" | "symlink_to" | "hardlink_to" => {
                self.write(receiver(call), full);
            }
            "open"
                if full == "open" || full.ends_with("io.open") || full.ends_with("codecs.open") =>
            {
                let mode = args
                    .get(1)
                    .copied()
                    .or_else(|| keywords.iter().find(|(k, _)| k == "mode").map(|(_, v)| *v))
                    .and_then(|m| self.string_value(m));
                if mode.is_some_and(|m| m.contains(['w', 'a', 'x', '+'])) {
                    self.write(first, "open");
                }
            }
            "open" => {
                // `Path(p).open("w")`.
                let mode = first.and_then(|m| self.string_value(m));
                if mode.is_some_and(|m| m.contains(['w', 'a', 'x', '+'])) {
                    self.write(receiver(call), full);
                }
            }
            "exec" | "eval" | "compile"
                if matches!(
                    full,
                    "exec" | "eval" | "compile" | "builtins.exec" | "builtins.eval"
                ) =>
            {
                self.eval_payload(first, full);
            }
            _ => {}
        }
    }

    fn js_call(&mut self, name: &str, full: &str, args: &[Node]) {
        let first = args.first().copied();
        match name {
            "exec" | "execSync" if !full.contains("RegExp") && !full.starts_with('/') => {
                if let Some(a) = first {
                    self.command(a, true, name);
                }
            }
            "spawn" | "spawnSync" | "execFile" | "execFileSync" | "fork" => {
                let shell = args
                    .iter()
                    .skip(1)
                    .any(|a| self.text(*a).contains("shell: true"));
                match (first, args.get(1)) {
                    (Some(program), Some(list)) if list.kind() == "array" && !shell => {
                        self.program_and_args(program, *list, name);
                    }
                    (Some(program), _) => self.command(program, shell, name),
                    _ => {}
                }
            }
            "rmSync" | "rm" | "rmdirSync" | "rmdir" | "remove" | "removeSync" | "emptyDirSync"
            | "emptyDir"
                if full.contains("fs")
                    || full.contains("promises")
                    || full.starts_with("require") =>
            {
                let recursive = args
                    .iter()
                    .skip(1)
                    .any(|a| self.text(*a).contains("recursive"))
                    || name.starts_with("remove")
                    || name.starts_with("emptyDir");
                self.delete(first, recursive, full);
            }
            "unlink" | "unlinkSync" => self.delete(first, false, full),
            "writeFile" | "writeFileSync" | "appendFile" | "appendFileSync"
            | "createWriteStream" | "truncate" | "truncateSync" | "chmod" | "chmodSync"
            | "chown" | "chownSync" | "mkdir" | "mkdirSync" | "outputFile" | "outputFileSync"
            | "writeJson" | "writeJsonSync" => self.write(first, full),
            "copyFile" | "copyFileSync" | "rename" | "renameSync" | "symlink" | "symlinkSync"
            | "link" | "linkSync" | "cp" | "cpSync" | "copy" | "copySync" | "move" | "moveSync" => {
                self.write(args.get(1).copied(), full)
            }
            "eval" | "Function" | "runInThisContext" | "runInNewContext" | "Script" => {
                // `eval(x)`, `new Function(x)()`, `vm.runInThisContext(x)`.
                let payload = if name == "Function" {
                    args.last().copied()
                } else {
                    first
                };
                self.eval_payload(payload, full);
            }
            _ => {}
        }
    }

    /// A command given to a shell (`via_shell`) or as an argument vector.
    fn command(&mut self, node: Node, via_shell: bool, api: &str) {
        if matches!(node.kind(), "list" | "tuple" | "array") {
            let words: Option<Vec<String>> = {
                let mut cursor = node.walk();
                node.named_children(&mut cursor)
                    .map(|n| self.string_value(n))
                    .collect()
            };
            match words {
                Some(words) if !words.is_empty() => self.run_argv(&words, api),
                _ => self.computed(api),
            }
            return;
        }
        match self.string_value(node) {
            Some(code) if via_shell => self.shell_code(&code, api),
            Some(program) => self.run_argv(&[program], api),
            None => self.computed(api),
        }
    }

    fn program_and_args(&mut self, program: Node, list: Node, api: &str) {
        let Some(program) = self.string_value(program) else {
            return self.computed(api);
        };
        let mut words = vec![program];
        let mut cursor = list.walk();
        for item in list.named_children(&mut cursor) {
            match self.string_value(item) {
                Some(s) => words.push(s),
                None => words.push("$COMPUTED".to_string()),
            }
        }
        self.run_argv(&words, api);
    }

    fn shell_code(&mut self, code: &str, api: &str) {
        let before = self.w.reasons.len();
        let (_, risky) = run_code(self.w, code, self.span, &Flow::default());
        let dangerous = self.w.reasons[before..]
            .iter()
            .any(|r| r.class == Class::Dangerous);
        if dangerous || risky {
            let msg = format!(
                "the {} code runs a shell command through {api}: {code}",
                self.lang_name()
            );
            self.w.reason(
                Class::Dangerous,
                RuleId::ExecInterpreterEffect,
                msg,
                self.span,
            );
        }
    }

    fn run_argv(&mut self, words: &[String], api: &str) {
        let quoted: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
        self.shell_code(&quoted.join(" "), api);
    }

    fn computed(&mut self, api: &str) {
        let msg = format!(
            "the {} code runs a computed command through {api}",
            self.lang_name()
        );
        self.w
            .reason(Class::Normal, RuleId::DynamicShellCode, msg, self.span);
    }

    fn delete(&mut self, target: Option<Node>, recursive: bool, api: &str) {
        let path = target.and_then(|t| self.path_value(t));
        self.delete_path(path, recursive, api);
    }

    fn delete_path(&mut self, path: Option<String>, recursive: bool, api: &str) {
        match path {
            Some(p) if recursive => rm_recursive_force(self.w, &Word::literal(&p, self.span)),
            path => self.changed_path(path, api, "deletes"),
        }
    }

    fn write(&mut self, target: Option<Node>, api: &str) {
        let path = target.and_then(|t| self.path_value(t));
        self.changed_path(path, api, "writes");
    }

    /// A path the code changes through `api` (`verb`: what it does to it): checked as a write
    /// target when its value is known statically, reported as unknown when computed at run time.
    fn changed_path(&mut self, path: Option<String>, api: &str, verb: &str) {
        match path {
            Some(p) => {
                let word = Word::literal(&p, self.span);
                check_write_target(self.w, &word, api, self.span);
            }
            None => {
                let msg = format!("{api} {verb} a path computed at run time");
                self.w
                    .reason(Class::Normal, RuleId::WriteUnknownTarget, msg, self.span);
            }
        }
    }

    /// `exec(…)`/`eval(…)` of a payload that can be decoded statically.
    fn eval_payload(&mut self, payload: Option<Node>, api: &str) {
        let Some(node) = payload else { return };
        match self.decoded(node) {
            Some(code) => {
                let (w, lang, span, depth) = (&mut *self.w, self.lang, self.span, self.depth);
                analyse_at(w, lang, &code, span, depth + 1);
            }
            None => {
                let msg = format!("{api} runs code computed at run time");
                self.w
                    .reason(Class::Normal, RuleId::DynamicShellCode, msg, self.span);
            }
        }
    }

    /// The text a payload expression evaluates to, decoding base64, hex and bytes.
    fn decoded(&self, node: Node) -> Option<String> {
        self.evaluated.set(self.evaluated.get() + 1);
        if let Some(s) = self.string_value(node) {
            return Some(s);
        }
        match node.kind() {
            "call" | "call_expression" | "new_expression" => {
                let (name, full) = self.callee(node);
                let (args, _) = self.args(node);
                let inner = || args.first().and_then(|a| self.decoded(*a));
                match name.as_str() {
                    "b64decode" | "standard_b64decode" | "urlsafe_b64decode" | "decodebytes"
                    | "atob" => base64_decode(&inner()?),
                    "fromhex" | "unhexlify" | "a2b_hex" => hex_decode(&inner()?),
                    "decode" | "toString" if args.len() <= 1 || name == "toString" => {
                        // `b"..".decode()`, `x.decode("utf-8")`, `Buffer.from(s, "base64").toString()`.
                        let receiver = receiver(node)?;
                        if name == "decode"
                            && let Some(codec) = args.first().and_then(|a| self.string_value(*a))
                            && codec.contains("hex")
                        {
                            return hex_decode(&self.decoded(receiver)?);
                        }
                        self.decoded(receiver)
                    }
                    "decode" => {
                        // `codecs.decode(s, "hex")`, `codecs.decode(s, "base64")`.
                        let codec = args.get(1).and_then(|a| self.string_value(*a))?;
                        let text = inner()?;
                        if codec.contains("hex") {
                            hex_decode(&text)
                        } else if codec.contains("base64") {
                            base64_decode(&text)
                        } else if codec.contains("rot") {
                            Some(rot13(&text))
                        } else {
                            None
                        }
                    }
                    "from" if full.contains("Buffer") => {
                        let encoding = args.get(1).and_then(|a| self.string_value(*a));
                        let text = inner()?;
                        match encoding.as_deref() {
                            Some("base64") => base64_decode(&text),
                            Some("hex") => hex_decode(&text),
                            _ => Some(text),
                        }
                    }
                    "compile" => inner(),
                    _ => None,
                }
            }
            "parenthesized_expression" => self.decoded(parenthesized(node)?),
            _ => None,
        }
    }

    /// A path expression's static value: literals, `~` forms, joins.
    fn path_value(&self, node: Node) -> Option<String> {
        self.evaluated.set(self.evaluated.get() + 1);
        if let Some(s) = self.string_value(node) {
            return Some(s);
        }
        let text = self.text(node);
        match node.kind() {
            "call" | "call_expression" | "new_expression" => {
                let (name, _) = self.callee(node);
                let (args, _) = self.args(node);
                match name.as_str() {
                    "home" | "homedir" | "expanduser"
                        if args.is_empty() && name != "expanduser" =>
                    {
                        Some("~".to_string())
                    }
                    "expanduser" | "abspath" | "realpath" | "normpath" | "Path" | "PurePath"
                    | "PosixPath" | "resolve" | "expanduser_" => match args.first() {
                        Some(a) => self.path_value(*a),
                        None => receiver(node).and_then(|r| self.path_value(r)),
                    },
                    "getcwd" | "cwd" => Some(".".to_string()),
                    "join" | "resolve_" => {
                        let parts: Option<Vec<String>> =
                            args.iter().map(|a| self.path_value(*a)).collect();
                        let parts = parts?;
                        Some(join_paths(&parts))
                    }
                    _ => None,
                }
            }
            "binary_operator" | "binary_expression" => {
                let (left, op, right) = self.binary(node)?;
                let (l, r) = (self.path_value(left)?, self.path_value(right)?);
                match op {
                    "/" => Some(join_paths(&[l, r])),
                    "+" => Some(format!("{l}{r}")),
                    _ => None,
                }
            }
            "subscript" | "member_expression"
                if text.contains("environ") && text.contains("HOME")
                    || text == "process.env.HOME" =>
            {
                Some("~".to_string())
            }
            "parenthesized_expression" => self.path_value(parenthesized(node)?),
            _ => None,
        }
    }

    /// A string literal's value (Python strings and bytes, JS strings and plain templates).
    fn string_value(&self, node: Node) -> Option<String> {
        self.evaluated.set(self.evaluated.get() + 1);
        match node.kind() {
            "string" if self.lang == Lang::Python => python_string(self.text(node)),
            "concatenated_string" => {
                let mut cursor = node.walk();
                let parts: Option<Vec<String>> = node
                    .named_children(&mut cursor)
                    .map(|n| self.string_value(n))
                    .collect();
                Some(parts?.concat())
            }
            "string" => js_string(self.text(node)),
            "template_string" => {
                let text = self.text(node);
                (!text.contains("${")).then(|| text.trim_matches('`').to_string())
            }
            "binary_operator" | "binary_expression" => {
                let (left, op, right) = self.binary(node)?;
                (op == "+").then(|| {
                    Some(format!(
                        "{}{}",
                        self.string_value(left)?,
                        self.string_value(right)?
                    ))
                })?
            }
            _ => None,
        }
    }

    /// A path the grammar can evaluate (`"/home/u/.a" + "ws/credentials"`,
    /// `os.path.join(os.environ["HOME"], ".aws", "credentials")`) that names a credential store:
    /// what the lexical pass cannot see when a name is split across literals. Only at the top of
    /// a chain of joins, so a long chain is evaluated once.
    fn computed_credential(&mut self, node: Node, parent_kind: &str) {
        let kind = node.kind();
        if !matches!(
            kind,
            "binary_operator"
                | "binary_expression"
                | "call"
                | "call_expression"
                | "concatenated_string"
        ) || parent_kind == kind
        {
            return;
        }
        let Some(path) = self.path_value(node) else {
            return;
        };
        if !may_name_store(self.w, &path) {
            return;
        }
        // Past MAX_CREDENTIAL_CHECKS full checks (only code built to be slow gets there), the
        // rest is taken to name a store: fail closed.
        self.checks += 1;
        if self.checks > MAX_CREDENTIAL_CHECKS
            || super::secrets::names_credentials(self.w, &Word::literal(&path, self.span))
        {
            let msg = format!(
                "the {} code computes the credential path {path}: it can read it",
                self.lang_name()
            );
            self.w.reason(
                Class::Dangerous,
                RuleId::SecretsCredentialFile,
                msg,
                self.span,
            );
        }
    }

    fn lang_name(&self) -> &'static str {
        match self.lang {
            Lang::Python => "Python",
            Lang::JavaScript => "JavaScript",
        }
    }
}

// ----- every language, read lexically -----------------------------------------------------

/// Most name pieces read in one text: a bound on the credential look-ups (past it, the rest of
/// the text is still scanned for markers, just not looked up piece by piece).
const MAX_PIECES: usize = 20_000;

/// Most distinct store-like names judged in full in one text (see [`Lexed::credential`]).
const MAX_CREDENTIAL_CHECKS: usize = 256;

/// Inline code of any interpreter (or SQL text of sqlite3's CLI), read lexically in addition to
/// what the grammar finds: the grammar only follows what it can evaluate (`open("…")` with a
/// literal), while code can name a file in many other ways (`Path.home()/".ssh"/"id_rsa"`,
/// `Dir.home+"/.aws/credentials"`, `$ENV{HOME}`), and Perl, Ruby, PHP, Lua, R or Julia have no
/// grammar here at all. Every such language can read files, so code that names a credential
/// store is a credential read; code that deletes or writes files and also names home, `/`, the
/// project itself, a credential or a place outside the project is judged a dangerous effect.
/// Fails closed: a name that only looks like one of these is asked about.
pub(crate) fn lexical_effects(w: &mut Walker, prog: &str, code: &str, span: Span) {
    if code.len() > MAX_CODE || w.in_final_scan() || !w.spend(code.len(), 1, span) {
        return;
    }
    // The code as written, and with adjacent literals joined (`".a" + "ws"`, Perl's
    // `"…/.s"."sh"`, `"rm" + "tree"`): a name split across literals is whole in the second.
    let joined = join_adjacent_literals(code);
    let mut texts = vec![Lexed::of(code)];
    if joined != code {
        texts.push(Lexed::of(&joined));
    }
    let credential = texts.iter().find_map(|l| l.credential(w));
    if let Some(path) = &credential {
        let msg = format!("the {prog} code names the credential store {path}: it can read it");
        w.reason(Class::Dangerous, RuleId::SecretsCredentialFile, msg, span);
    }
    if credential.is_none() {
        environment_credential_lookup(w, prog, code, span);
    }
    environment_sent_out(w, prog, code, &joined, &texts, span);
    // `os.walk(os.path.expanduser("~"))` with `open`, Perl's `find(…, $ENV{HOME})`: every file
    // below home, like `grep -r x ~`.
    let reads_home_tree = texts
        .iter()
        .any(|l| l.bare_home && l.api(RECURSIVE_LISTING_APIS) && l.api(READ_APIS));
    if credential.is_none() && reads_home_tree {
        let msg =
            format!("the {prog} code reads files below the home directory, credential stores too");
        w.reason(Class::Dangerous, RuleId::SecretsCredentialFile, msg, span);
    }
    // A path below home made by decoding hidden text (`open(os.environ['HOME'] +
    // b64decode('Ly5zc2gvaWRfcnNh').decode())`, attacker pass s26, r3c): what it names is not
    // in the code to judge, so it may be any store, or a start-up file.
    let decoded_home_path = texts.iter().any(|l| {
        l.home && l.api(DECODE_APIS) && (l.api(READ_APIS) || l.writes() || l.api(DESTROY_APIS))
    });
    if credential.is_none() && !reads_home_tree && decoded_home_path {
        let msg = format!(
            "the {prog} code reads or writes a path below the home directory that it decodes \
             at run time: it may be a credential store or a start-up file"
        );
        w.reason(Class::Dangerous, RuleId::SecretsCredentialFile, msg, span);
    }
    let destroys = texts.iter().any(|l| l.api(DESTROY_APIS));
    let recursive = texts.iter().any(|l| l.api(RECURSIVE_DESTROY_APIS));
    if !(destroys || texts.iter().any(Lexed::writes)) {
        return;
    }
    let target = credential.or_else(|| {
        texts
            .iter()
            .find_map(|l| l.target(w, prog, destroys, recursive))
    });
    if let Some(target) = target {
        let verb = if destroys { "deletes" } else { "writes" };
        let msg = format!("the {prog} code {verb} files and names {target}");
        w.reason(Class::Dangerous, RuleId::ExecInterpreterEffect, msg, span);
    }
}

/// Code that takes the whole environment (`dict(os.environ)`, `JSON.stringify(process.env)`,
/// `ENV.to_h`, `%ENV`, PHP's `getenv()`, a lookup with a computed key, `/proc/self/environ`)
/// and reaches the network (a URL, or a networking module or call): it can send every secret
/// the environment holds, as `env | curl -d @- …` does. The name may be split across literals
/// (`getattr(os, "envi" + "ron")`), so the text with adjacent literals joined is read too; and
/// code that looks names up at run time ([`hidden_lookup`]) may reach the environment by a
/// name that is in no text at all (`getattr(os, "norivne"[::-1])`), so with the network it is
/// judged as taking it.
fn environment_sent_out(
    w: &mut Walker,
    prog: &str,
    code: &str,
    joined: &str,
    lexed: &[Lexed],
    span: Span,
) {
    if !(code.contains("://") || lexed.iter().any(|l| l.mentions(NETWORK_NAMES))) {
        return;
    }
    if reads_whole_environment(code) || (joined != code && reads_whole_environment(joined)) {
        let msg = format!("the {prog} code takes the whole environment and reaches the network");
        w.reason(Class::Dangerous, RuleId::ExfilCredentials, msg, span);
    } else if let Some(how) = hidden_lookup(prog, joined) {
        let msg = format!(
            "the {prog} code looks names up at run time ({how}) and reaches the network: \
             what it reads cannot be told, the environment included"
        );
        w.reason(Class::Dangerous, RuleId::ExfilCredentials, msg, span);
    }
}

/// Most name-lookup calls whose arguments [`hidden_lookup`] reads in one text.
const MAX_LOOKUP_CALLS: usize = 256;

/// Calls that look up a module, attribute, constant or variable by a name given as an argument,
/// with the argument that is the name: a literal name there is as visible as a written one
/// (`__import__("os")`, `getattr(r, "status")`), a computed one may be any (`environ`, `env`,
/// `ENV`). Python's `getattr`, `__import__`, `importlib.import_module`, `__getattribute__`,
/// `attrgetter`; JavaScript's `Reflect.get`, `require`; Ruby's `const_get`, `public_send`,
/// `__send__`, `instance_variable_get`; PHP's `constant`, `call_user_func`; Lua's `rawget`.
#[rustfmt::skip]
const NAME_LOOKUP_CALLS: &[(&str, usize)] = &[
    ("getattr", 1), ("__import__", 0), ("import_module", 0), ("__getattribute__", 0),
    ("attrgetter", 0), ("get", 1), ("getOwnPropertyDescriptor", 1), ("require", 0),
    ("const_get", 0), ("public_send", 0), ("__send__", 0), ("instance_variable_get", 0),
    ("constant", 0), ("call_user_func", 0), ("rawget", 1),
];

/// Names that hand over a namespace whole or run text as code, whatever follows them (those
/// ending in `(` or `[` only as a call or an index): Python's `vars(`, `globals(`, `locals(`,
/// `__dict__`, `__builtins__`, `sys.modules`, `__globals__`; JavaScript's other `Reflect`
/// calls, `Function(`, `vm`'s `run…Context`; Ruby's `instance_eval`, `class_eval`,
/// `module_eval`, `binding`; PHP's `$GLOBALS`; Lua's `_G[`, `loadstring(`. Code run from text
/// is [`BARE_CODE_CALLS`].
#[rustfmt::skip]
const NAMESPACE_NAMES: &[&str] = &[
    "vars(", "globals(", "locals(", "__dict__", "__builtins__", "sys.modules", "__globals__",
    "Reflect.ownKeys", "Reflect.apply", "Function(", "instance_eval", "class_eval",
    "module_eval", "binding", "$GLOBALS", "_G[", "loadstring(", "runInThisContext",
    "runInNewContext", "runInContext",
];
/// Calls that run text as code: `eval`, `exec`, `compile`, `load`, `execfile`, counted only as
/// bare calls (`re.compile(…)`, `regex.exec(…)`, `json.load(…)` run no text).
const BARE_CODE_CALLS: &[&str] = &["eval", "exec", "compile", "load", "execfile"];

/// How `code` (adjacent literals joined) looks a name up at run time, if it does: a lookup
/// call whose name argument is not one literal ([`NAME_LOOKUP_CALLS`]), a computed index of
/// `globalThis`, `global` or `process` (`process[k]`), `process` itself passed as a value
/// (`JSON.stringify(process)` holds `env`), a whole namespace or code run from text
/// ([`NAMESPACE_NAMES`], [`BARE_CODE_CALLS`]), Perl's symbolic references (`%{"main::…"}`,
/// `${$name}`, `%main::`, `%::`) and PHP's variable variables (`$$name`, `${…}`).
fn hidden_lookup(prog: &str, code: &str) -> Option<String> {
    let name_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    // Each place `name` stands as a whole name, with the text before and after it.
    let occurrences = |name: &'static str| {
        code.match_indices(name).filter_map(move |(at, _)| {
            let (before, after) = (&code[..at], &code[at + name.len()..]);
            let whole = !before.ends_with(name_char) && !after.starts_with(name_char);
            whole.then_some((before, after))
        })
    };
    // Each lookup's arguments are scanned: nested calls make that quadratic, so past a bound
    // the code is judged as looking up what it cannot show (fail closed).
    let mut scanned = 0usize;
    for (call, index) in NAME_LOOKUP_CALLS {
        for (before, after) in occurrences(call) {
            // `Reflect.get`, not any `get` (`requests.get(…)`, `dict.get(…)`).
            if *call == "get" && !before.ends_with("Reflect.") {
                continue;
            }
            let Some(arguments) = after.trim_start().strip_prefix('(') else {
                continue;
            };
            scanned += 1;
            if scanned > MAX_LOOKUP_CALLS {
                return Some("too many run-time lookups to read".to_string());
            }
            if !call_argument(arguments, *index).is_some_and(is_one_literal) {
                return Some(format!("{call}(…) with a computed name"));
            }
        }
    }
    for holder in ["globalThis", "global", "process", "self", "window"] {
        for (_, after) in occurrences(holder) {
            let after = after.trim_start();
            if let Some(index) = after.strip_prefix('[') {
                let key = index.split(']').next().unwrap_or(index);
                if !is_one_literal(key) {
                    return Some(format!("{holder}[…] with a computed key"));
                }
            }
            if holder == "process" && after.starts_with([')', ',', ']', '}']) {
                return Some("process passed whole".to_string());
            }
        }
    }
    for name in NAMESPACE_NAMES {
        // A name ending in `(` or `[` is followed by anything; the others stand whole.
        let open = name.ends_with(['(', '[']);
        let found = code.match_indices(name).any(|(at, _)| {
            let after = &code[at + name.len()..];
            !code[..at].ends_with(name_char) && (open || !after.starts_with(name_char))
        });
        if found {
            return Some(name.trim_end_matches(['(', '[']).to_string());
        }
    }
    for call in BARE_CODE_CALLS {
        let called = occurrences(call).any(|(before, after)| {
            let bare = !before.trim_end().ends_with(['.', ':', '>']);
            bare && (after.trim_start().starts_with('(')
                || after.starts_with([' ', '\t'])
                    && after.trim_start().starts_with(['"', '\'', '`', '$', '{']))
        });
        if called {
            return Some(format!("{call} of text"));
        }
    }
    let symbolic = [
        "%{\"", "%{'", "%{$", "${\"", "${'", "@{\"", "*{\"", "%main::", "%::",
    ];
    if prog.starts_with("perl") && symbolic.iter().any(|m| code.contains(m)) {
        return Some("a symbolic reference".to_string());
    }
    if prog.starts_with("php") && (code.contains("$$") || code.contains("${")) {
        return Some("a variable variable".to_string());
    }
    None
}

/// The text of argument `index` of a call whose arguments start `arguments` (after the `(`),
/// split at top-level commas; `None` past the closing parenthesis or the text's end.
fn call_argument(arguments: &str, index: usize) -> Option<&str> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    let mut start = 0;
    let mut current = 0;
    for (i, c) in arguments.char_indices() {
        if let Some(q) = quote {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                _ if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' if depth > 0 => depth -= 1,
            ')' | ']' | '}' | ',' if depth == 0 => {
                if current == index {
                    return Some(&arguments[start..i]);
                }
                if c != ',' {
                    return None;
                }
                current += 1;
                start = i + 1;
            }
            _ => {}
        }
    }
    None
}

/// Whether `text` is one quoted literal and nothing else (`"environ"`, `'os'`; Ruby's `:ENV`
/// symbol too): its value is in the text.
fn is_one_literal(text: &str) -> bool {
    let text = text.trim();
    if let Some(symbol) = text.strip_prefix(':') {
        return !symbol.is_empty()
            && symbol
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
    }
    let Some(quote) = text
        .chars()
        .next()
        .filter(|c| matches!(c, '"' | '\'' | '`'))
    else {
        return false;
    };
    // The text between the quotes: no other quote, no escape, no template substitution.
    let Some(body) = text[1..].strip_suffix(quote) else {
        return false;
    };
    let template = quote == '`' && body.contains("${");
    !(template || body.contains([quote, '\\']))
}

/// Whether `code` takes the whole environment rather than named variables: `os.environ`,
/// `process.env`, `Deno.env`, Ruby's and Perl's `ENV`, awk's `ENVIRON`, PHP's `$_ENV`, and
/// `getenv` not followed by a quoted name (`process.env.HOME`, `os.environ["HOME"]`,
/// `os.getenv('X')`, `$ENV{X}` are lookups); a computed key (`os.environ[k]`) may be any.
pub(crate) fn reads_whole_environment(code: &str) -> bool {
    const MARKERS: &[&str] = &[
        "environ",
        "environb",
        "process.env",
        "Deno.env",
        "ENV",
        "ENVIRON",
        "getenv",
        "$_ENV",
        // PHP's `$_SERVER` holds the environment too when run from a shell.
        "$_SERVER",
        // `env` or `printenv` run as a child (`subprocess.check_output(["env"])`,
        // `` `env` ``, `os.popen('printenv')`): its output is the environment.
        "\"env\"",
        "'env'",
        "`env`",
        "\"printenv\"",
        "'printenv'",
        "`printenv`",
    ];
    let name_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
    // Whether a child gets the environment is read backwards from each mention, over the whole
    // call's arguments: many mentions in one long call made that quadratic (4 s for 240 KiB).
    // Past MAX_CHILD_ENV_CHECKS mentions the environment is taken to be sent (fail closed).
    let mut child_checks = 0usize;
    let mut passed_to_a_child = |before: &str| {
        child_checks += 1;
        child_checks <= MAX_CHILD_ENV_CHECKS
            && (passed_to_child(before) || passed_to_js_child(before))
    };
    destructures_process_env(code)
        || imports_process_env(code)
        || MARKERS.iter().any(|marker| {
            code.match_indices(marker).any(|(at, _)| {
                let rest = &code[at + marker.len()..];
                // `"ENV"`, `/ENV/` in a string or a URL is text, not Ruby's or Perl's `ENV`.
                let in_text = |c: char| matches!(c, '"' | '\'' | '/');
                let before_ok = !code[..at].ends_with(name_char)
                    && !(marker.starts_with("ENV")
                        && (code[..at].ends_with(in_text) || rest.starts_with(in_text)));
                // A property names one variable in JavaScript (`process.env.HOME`); after Ruby's
                // `ENV` it is a method over all of them (`ENV.to_h`).
                let properties = *marker == "process.env";
                // A quoted `"env"` is the program only as a call's or a list's first word
                // (`check_output(["env"])`, `popen('env')`), not a key (`{"env": "prod"}`).
                let program_word =
                    !marker.starts_with(['"', '\'']) || code[..at].trim_end().ends_with(['(', '[']);
                before_ok
                    && program_word
                    && !rest.starts_with(name_char)
                    && !names_one_variable(rest, properties)
                    && !passed_to_a_child(&code[..at])
            })
        })
}

/// Most mentions of the environment [`reads_whole_environment`] reads as a child's `env`.
const MAX_CHILD_ENV_CHECKS: usize = 256;

/// Whether the environment starting after `before` is Python's `env=` argument of a call that
/// starts a program (`subprocess.run([...], env=os.environ)`, `env=dict(os.environ)`,
/// `env={**os.environ, …}`): the child gets the environment it would inherit anyway, which
/// sends nothing. Anything else about it (another call, text that confuses the bracket count)
/// still counts as taking the environment.
fn passed_to_child(before: &str) -> bool {
    const CHILD_CALLS: &[&str] = &[
        "run",
        "Popen",
        "call",
        "check_call",
        "check_output",
        "execve",
        "execvpe",
        "execle",
        "execlpe",
        "spawnve",
        "spawnvpe",
        "create_subprocess_exec",
        "create_subprocess_shell",
    ];
    let name_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let value_start = before
        .trim_end_matches(|c: char| name_char(c) || c == '.')
        .trim_end();
    let value_start = ["dict(", "{**"]
        .iter()
        .find_map(|opening| value_start.strip_suffix(opening))
        .unwrap_or(value_start)
        .trim_end();
    let Some(keyword) = value_start.strip_suffix('=').map(str::trim_end) else {
        return false;
    };
    let Some(call_args) = keyword.strip_suffix("env") else {
        return false;
    };
    if call_args.ends_with(name_char) {
        return false;
    }
    enclosing_call(call_args, 0, name_char).is_some_and(|name| CHILD_CALLS.contains(&name))
}

/// The name of the call whose arguments `args` ends inside: read backwards to the first
/// unmatched `(` once `objects` unmatched `{` have been left (the options object a keyword
/// is a property of); `None` when another bracket opens on the way.
fn enclosing_call(args: &str, objects: usize, name_char: impl Fn(char) -> bool) -> Option<&str> {
    let (mut depth, mut left) = (0usize, 0usize);
    for (i, c) in args.char_indices().rev() {
        match c {
            ')' | ']' | '}' => depth += 1,
            '(' | '[' | '{' if depth > 0 => depth -= 1,
            '{' if left < objects => left += 1,
            '(' if left == objects => {
                let callee = args[..i].trim_end();
                return Some(callee.rsplit(|c: char| !name_char(c)).next().unwrap_or(""));
            }
            '(' | '[' | '{' => return None,
            _ => {}
        }
    }
    None
}

/// Whether the environment starting after `before` is the `env` option of a Node call that
/// starts a program (`spawn("make", [], {env: process.env})`, `{env: {...process.env, X: "1"}}`,
/// `{env: Object.assign({}, process.env)}`, of `spawn`, `exec`, `execFile`, `fork` and their
/// `Sync` forms): the child gets the environment it would inherit anyway, which sends
/// nothing, as Python's `env=` of [`passed_to_child`]. Anything else still counts as taking it.
fn passed_to_js_child(before: &str) -> bool {
    const CHILD_CALLS: &[&str] = &[
        "spawn",
        "spawnSync",
        "exec",
        "execSync",
        "execFile",
        "execFileSync",
        "fork",
    ];
    let name_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    let mut value_start = before.trim_end();
    if let Some(rest) = value_start.strip_suffix("...") {
        // `{...process.env, …}`: the spread must open the object.
        let Some(rest) = rest.trim_end().strip_suffix('{') else {
            return false;
        };
        value_start = rest.trim_end();
    } else if let Some(rest) = value_start
        .strip_suffix(',')
        .and_then(|r| r.trim_end().strip_suffix("{}"))
        .and_then(|r| r.trim_end().strip_suffix("Object.assign("))
    {
        value_start = rest.trim_end();
    }
    let Some(property) = value_start.strip_suffix(':').map(str::trim_end) else {
        return false;
    };
    let Some(object) = property
        .strip_suffix("env")
        .or_else(|| property.strip_suffix("\"env\""))
        .or_else(|| property.strip_suffix("'env'"))
    else {
        return false;
    };
    if object.ends_with(name_char) || !object.trim_end().ends_with(['{', ',']) {
        return false;
    }
    // Out of the options object (one unmatched `{`), then the call it is an argument of.
    enclosing_call(object, 1, name_char).is_some_and(|name| CHILD_CALLS.contains(&name))
}

/// JavaScript's process module taken by name (`require("process").env`, `import {env} from
/// "node:process"`, `import * as p from "process"`): the whole environment, unless only one
/// variable is looked up right after (`require("process").env.HOME`).
fn imports_process_env(code: &str) -> bool {
    [
        "\"process\"",
        "'process'",
        "`process`",
        "\"node:process\"",
        "'node:process'",
        "`node:process`",
    ]
    .iter()
    .any(|module| {
        code.match_indices(module).any(|(at, _)| {
            let before = code[..at].trim_end();
            let taken = before.ends_with("require(")
                || before.ends_with("import(")
                || before.ends_with("from")
                || before.ends_with("import");
            let after = code[at + module.len()..].trim_start();
            let one = after
                .strip_prefix(')')
                .map(str::trim_start)
                .and_then(|a| a.strip_prefix(".env"))
                .is_some_and(|rest| names_one_variable(rest, true));
            taken && !one
        })
    })
}

/// JavaScript's `const {env} = process` (or `{ env: e, argv } = process`), or `process` itself
/// under another name (`const p = process`): the whole of `process.env` is then reachable.
fn destructures_process_env(code: &str) -> bool {
    // Each pattern is read back to its `{`, which may be far: past MAX_DESTRUCTURINGS of them
    // (`}=process` 25,000 times took 11 s) the code is taken to destructure `env` (fail closed).
    let mut patterns = 0usize;
    code.match_indices("process").any(|(at, _)| {
        let before = code[..at].trim_end();
        // `const p = process;`: `p.env` is then the environment too.
        let after = code[at + "process".len()..].trim_start();
        let aliased = before.strip_suffix('=').is_some_and(|b| {
            b.trim_end()
                .ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        });
        if aliased && (after.is_empty() || after.starts_with([';', ',', ')', '\n'])) {
            return true;
        }
        let Some(pattern) = before
            .strip_suffix('=')
            .map(str::trim_end)
            .and_then(|b| b.strip_suffix('}'))
        else {
            return false;
        };
        patterns += 1;
        if patterns > MAX_DESTRUCTURINGS {
            return true;
        }
        let inside = pattern.rsplit_once('{').map_or(pattern, |(_, i)| i);
        inside
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|name| name == "env")
    })
}

/// Most destructuring patterns before `process` [`destructures_process_env`] reads.
const MAX_DESTRUCTURINGS: usize = 256;

/// Whether what follows an environment name looks up one variable by a literal name: an
/// index, a call or Perl's braces with a quoted name first (`["X"]`, `.get('X')`, `("X")`,
/// `{'X'}`), Perl's `{X}`, or, where `properties` are variables, a property (`.HOME`) that is
/// not a call.
fn names_one_variable(rest: &str, properties: bool) -> bool {
    let quoted = |t: &str| t.trim_start().starts_with(['"', '\'', '`']);
    let rest = rest.trim_start();
    if let Some(inside) = rest.strip_prefix(['[', '(']) {
        return quoted(inside);
    }
    if let Some(inside) = rest.strip_prefix('{') {
        let name_end = inside
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(inside.len());
        return quoted(inside) || (name_end > 0 && inside[name_end..].starts_with('}'));
    }
    if let Some(property) = rest.strip_prefix('.') {
        let name_end = property
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(property.len());
        let after = property[name_end..].trim_start();
        return name_end > 0
            && match after.strip_prefix('(') {
                Some(arguments) => quoted(arguments),
                None => properties,
            };
    }
    false
}

/// Names that reach the network in code: modules, classes and calls of Python, Node, Ruby,
/// Perl and PHP, and programs a command string may run.
#[rustfmt::skip]
const NETWORK_NAMES: &[&str] = &[
    "requests", "urllib", "urllib2", "urllib3", "urlopen", "httpx", "aiohttp", "socket",
    "http", "https", "net", "dgram", "tls", "axios", "fetch", "XMLHttpRequest", "WebSocket",
    "smtplib", "ftplib", "LWP", "Socket", "HTTP", "TCPSocket", "UDPSocket", "fsockopen",
    "curl", "curl_exec", "wget", "nc", "ncat", "socat", "ssh", "scp",
    // Name lookups carry data out in the name asked for (`<hex>.x.com`).
    "dns", "Resolv", "gethostbyname", "getaddrinfo", "dns_get_record", "resolver",
];

/// Code that reads the environment (`os.environ["X"]`, `os.getenv`, `process.env.X`, Perl's
/// `$ENV{X}`, Ruby's `ENV["X"]`, awk's `ENVIRON["X"]`) and names a variable the script (or
/// the command's own `X=…` prefix) gave a credential store's path: the code reads the store
/// through the variable. Judged lexically, every name in the code against the variables
/// known to hold a path, so a lookup written any way is found; a name that merely appears
/// there is asked about too (fail closed).
pub(crate) fn environment_credential_lookup(w: &mut Walker, prog: &str, code: &str, span: Span) {
    if !(code.contains("env") || code.contains("ENV")) {
        return;
    }
    let mut seen = std::collections::HashSet::new();
    let found = code
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|name| !name.is_empty() && !matches!(*name, "HOME" | "PWD" | "OLDPWD"))
        .filter(|name| seen.insert(*name))
        .find_map(|name| {
            let values = w.vars.get(name).into_iter().chain(
                w.maybe_vars
                    .get(name)
                    .map(Vec::as_slice)
                    .unwrap_or_default(),
            );
            values
                .filter(|value| super::secrets::names_credentials(w, &Word::literal(value, span)))
                .map(|value| (name.to_string(), value.clone()))
                .next()
        });
    if let Some((name, value)) = found {
        let msg = format!(
            "the {prog} code reads the environment and names {name}, which holds the path of              the credential store {value}: it can read it"
        );
        w.reason(Class::Dangerous, RuleId::SecretsCredentialFile, msg, span);
    }
}

/// The credential store `text` (SQL, or any code) names, if any: [`lexical_effects`]'s
/// credential half, for texts that only read (sqlite3's `readfile()`, `.import`).
pub(crate) fn names_credential_store(w: &mut Walker, text: &str, span: Span) -> Option<String> {
    if text.len() > MAX_CODE || w.in_final_scan() || !w.spend(text.len(), 1, span) {
        return None;
    }
    let joined = join_adjacent_literals(text);
    Lexed::of(text)
        .credential(w)
        .or_else(|| (joined != text).then(|| Lexed::of(&joined).credential(w))?)
}

/// Calls that decode hidden text (base64, base32/85, hex, rot13, char codes).
#[rustfmt::skip]
const DECODE_APIS: &[&str] = &[
    "b64decode", "standard_b64decode", "urlsafe_b64decode", "b32decode", "b16decode",
    "a85decode", "b85decode", "decodebytes", "a2b_base64", "a2b_hex", "unhexlify", "fromhex",
    "atob", "decode64", "base64_decode", "hex2bin", "str_rot13", "rot13", "fromCharCode",
    "strict_decode64", "urlsafe_decode64",
];

/// Deleting calls (the last name of a dotted call: `shutil.rmtree`, `FileUtils.rm_rf`,
/// `fs.rmSync`, Perl's `unlink`, PHP's `unlink`, Lua's `os.remove`, R's `file.remove`).
#[rustfmt::skip]
const DESTROY_APIS: &[&str] = &[
    "unlink", "unlinkSync", "unlink_all", "rmtree", "rm_tree", "remove_tree", "rm_rf", "rm_r",
    "rm_f", "rm", "rmdir", "rmdirSync", "rmSync", "removedirs", "remove", "removeSync",
    "remove_dir", "remove_entry", "remove_entry_secure", "delete", "truncate", "truncateSync",
    "ftruncate", "shred", "emptyDir", "emptyDirSync", "rimraf",
];
/// Deleting calls that take whole trees: only these make `"."` (the project) a target.
#[rustfmt::skip]
const RECURSIVE_DESTROY_APIS: &[&str] = &[
    "rmtree", "rm_tree", "remove_tree", "rm_rf", "rm_r", "rmSync", "removeSync",
    "remove_entry_secure", "emptyDir", "emptyDirSync", "rimraf",
];
/// Writing calls (`write` itself counts unless it writes to standard output or error).
#[rustfmt::skip]
const WRITE_APIS: &[&str] = &[
    "write", "write_text", "write_bytes", "writelines", "writeFile", "writeFileSync",
    "appendFile", "appendFileSync", "createWriteStream", "file_put_contents", "fwrite", "fputs",
    "syswrite", "binwrite", "writeLines", "outputFile", "outputFileSync", "writeJson",
    "writeJsonSync", "symlink", "symlinkSync", "linkSync", "rename", "renameSync", "copyFile",
    "copyFileSync", "copy2", "copyfile", "copytree", "move", "moveSync", "mv", "chmod", "chmodSync", "chown", "touch",
    "mkdir", "mkdirSync", "makedirs", "mkpath", "make_path", "mkdir_p", "symlink_to",
    "hardlink_to",
];
/// Calls that list a directory tree (Python's `os.walk`/`rglob`, Perl's `File::Find`, Ruby's
/// `Find.find`, Rust-like `walkdir`, Node's `readdirSync(…, {recursive})` …).
#[rustfmt::skip]
const RECURSIVE_LISTING_APIS: &[&str] = &[
    "walk", "fwalk", "rglob", "find", "finddepth", "walkdir", "WalkDir", "walkSync", "recursive",
    "RecursiveDirectoryIterator", "list.files",
];
/// Calls that read a file's content, or run a program that may (`system`, `cat` in a command
/// string).
#[rustfmt::skip]
const READ_APIS: &[&str] = &[
    "open", "read", "read_text", "read_bytes", "readlines", "readFile", "readFileSync",
    "file_get_contents", "file", "readLines", "readline", "slurp", "binread", "readText",
    "readTextFile", "readTextFileSync", "copy", "copyfile", "copy2", "copytree", "cp", "cpSync",
    "system", "exec", "popen", "spawn", "qx", "cat",
];
/// Names that stand for the home directory (the last name of a dotted name): `$HOME`,
/// `$ENV{HOME}`, `os.environ["HOME"]`, `process.env.HOME`, `os.homedir()`, `expanduser`,
/// Ruby's `File.expand_path`, Julia's `homedir()`, Perl's `getpwuid`.
#[rustfmt::skip]
const HOME_NAMES: &[&str] = &[
    "HOME", "USERPROFILE", "homedir", "expanduser", "expand_path", "home_dir", "gethomedir",
    "UserHomeDir", "getpwuid", "getpwnam", "bsd_glob", "tilde",
];

/// A text cut into what [`lexical_effects`] looks at.
struct Lexed<'s> {
    /// Name-like runs (`os.path.expanduser`, `.ssh`, `id_rsa`, `FileUtils.rm_rf`): path
    /// components and dotted names alike.
    pieces: Vec<&'s str>,
    /// Quoted literals' contents, each with the last non-blank character before its opening
    /// quote (`,` for a second argument such as a file mode).
    literals: Vec<(Option<char>, &'s str)>,
    /// The text names the home directory somehow (see [`HOME_NAMES`], and a `~` that starts a
    /// path).
    home: bool,
    /// The text names the home directory itself, not only a path below it: a home name other
    /// than `expanduser`-like calls (whose literal argument says where), or a literal `"~"`.
    bare_home: bool,
}

impl<'s> Lexed<'s> {
    fn of(code: &'s str) -> Lexed<'s> {
        let piece_char =
            |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '*' | '?');
        let pieces: Vec<&str> = code
            .split(|c: char| !piece_char(c))
            .filter(|p| !p.is_empty() && *p != "." && *p != "..")
            .collect();
        let home = pieces.iter().any(|p| {
            let (qualifier, last) = p.rsplit_once('.').unwrap_or(("", p));
            HOME_NAMES.contains(&last)
                || (last == "home"
                    && ["Path", "Dir", "pathlib", "os", "Deno", "dirs"]
                        .iter()
                        .any(|q| qualifier.ends_with(q)))
                || p.ends_with("path.expand")
        }) || tilde_starts_a_path(code);
        let literals = literals(code);
        let bare_home = pieces.iter().any(|p| {
            let last = p.rsplit_once('.').map_or(*p, |(_, last)| last);
            HOME_NAMES.contains(&last) && !matches!(last, "expanduser" | "expand_path")
                || matches!(
                    *p,
                    "Path.home" | "pathlib.Path.home" | "Dir.home" | "os.homedir"
                )
        }) || literals
            .iter()
            .any(|(_, l)| matches!(*l, "~" | "~/" | "$HOME" | "${HOME}" | "$ENV{HOME}"));
        Lexed {
            pieces,
            literals,
            home,
            bare_home,
        }
    }

    /// Whether any part of a dotted name is one of `names` (`Pathname.pwd.parent`).
    fn mentions(&self, names: &[&str]) -> bool {
        self.pieces
            .iter()
            .any(|p| p.split('.').any(|part| names.contains(&part)))
    }

    /// Whether a call's last name is one of `apis` (`write` to standard output excepted).
    fn api(&self, apis: &[&str]) -> bool {
        self.pieces.iter().any(|p| {
            let (qualifier, last) = p.rsplit_once('.').unwrap_or(("", p));
            apis.contains(&last)
                && !(last == "write" && qualifier.ends_with("stdout"))
                && !(last == "write" && qualifier.ends_with("stderr"))
        })
    }

    /// Whether the text writes files: a writing call, or a file mode for writing given as a
    /// later argument (`open(p, "a")`, `fopen($p, "w")`, Perl's `open(F, ">>", $p)` and
    /// `open(F, ">$p")`).
    fn writes(&self) -> bool {
        self.api(WRITE_APIS)
            || self.literals.iter().any(|(before, l)| {
                let mode = l.len() <= 4
                    && !l.is_empty()
                    && l.chars().all(|c| "rwaxbtU+".contains(c))
                    && l.contains(['w', 'a', 'x', '+']);
                (mode && matches!(before, Some(',' | '=')))
                    || l.starts_with('>')
                    || l.starts_with("+<")
                    || l.starts_with("+>")
            })
    }

    /// The credential store the text names: a path literal that is one (`/home/u/.ssh/id_rsa`,
    /// `~/.aws/credentials`, `$HOME/.netrc`), or name pieces that are one below home
    /// (`".ssh"`, `"id_rsa"`, `".aws" … "credentials"`), judged with the classifier's one list
    /// ([`super::secrets::names_credentials`]). A `.env` piece alone is the project's own file;
    /// with a home name in the text it may be home's.
    fn credential(&self, w: &Walker) -> Option<String> {
        // Each distinct candidate is judged once: code repeats its names. Past
        // MAX_CREDENTIAL_CHECKS candidates (only text built to be slow has that many store-like
        // names), the text is taken to name one: fail closed.
        let mut seen = std::collections::HashSet::new();
        let mut names = |path: String| {
            if seen.len() >= MAX_CREDENTIAL_CHECKS {
                return Some(format!(
                    "(one of more than {MAX_CREDENTIAL_CHECKS} names like {path})"
                ));
            }
            (seen.insert(path.clone())
                && super::secrets::names_credentials(w, &Word::literal(&path, (0, 0))))
            .then_some(path)
        };
        for (_, literal) in &self.literals {
            for path in path_words(literal) {
                let path = home_as_tilde(path);
                if may_name_store(w, &path)
                    && let Some(found) = names(path)
                {
                    return Some(found);
                }
            }
        }
        let pieces = &self.pieces[..self.pieces.len().min(MAX_PIECES)];
        for (i, first) in pieces.iter().enumerate() {
            if first.starts_with(".env") && !self.home {
                continue;
            }
            // Stores are dot-directories or files of home (and macOS's `Library/…`): a longer
            // window only where one starts; a key file's name (`id_rsa`) alone.
            let dotted = first.starts_with('.') || *first == "Library";
            let longest = if dotted { 4 } else { 1 };
            for len in 1..=longest.min(pieces.len() - i) {
                let path = format!("~/{}", pieces[i..i + len].join("/"));
                // Only names that can be a store go to the full check (which costs a pattern
                // expansion for a glob): one holding a marker of the list, or a glob starting
                // in a dot-directory of home (`".s*"`), which may match one.
                let candidate = if crate::pattern::has_glob(&path) {
                    dotted
                } else {
                    super::secrets::might_name_credentials(w, &path)
                };
                if candidate && let Some(found) = names(path) {
                    return Some(found);
                }
            }
        }
        None
    }

    /// What a deleting (`destroys`, `recursive`: whole trees) or writing call in this text
    /// may reach that makes it dangerous: home, `/`, the project (tree deletions), the
    /// directory above it, a path outside the project.
    fn target(&self, w: &Walker, prog: &str, destroys: bool, recursive: bool) -> Option<String> {
        if self.home {
            return Some("the home directory".to_string());
        }
        if let Some((_, root)) = self.literals.iter().find(|(_, l)| is_root_literal(l)) {
            return Some(format!("\"{root}\""));
        }
        if recursive
            && let Some((_, project)) = self.literals.iter().find(|(_, l)| is_project_literal(w, l))
        {
            return Some(format!("\"{project}\" (the project)"));
        }
        // `os.path.dirname(os.getcwd())`, `Path.cwd().parent`: above the project, which may be
        // home itself (`rm -rf ..`), and a write there may be its start-up files
        // (`chr(46)+'bash'+'rc'`, attacker pass s26, r3c).
        if self.mentions(&["getcwd", "cwd", "pwd", "getwd"])
            && self.mentions(&["dirname", "parent"])
        {
            return Some("the directory above the project".to_string());
        }
        if destroys || Lang::of(prog).is_none() {
            // Python's and JavaScript's writes are judged by the grammar, path by path: a
            // path outside the project that the code only reads (`/etc/os-release`) next to a
            // write in the project is not taken for the write's target there.
            return self.outside_path(w);
        }
        None
    }

    /// A path literal outside the project and the scratch directories (`/etc/…`, `/home/x`,
    /// a protected tree), as a redirection's target would be judged.
    fn outside_path(&self, w: &Walker) -> Option<String> {
        self.literals.iter().find_map(|(_, literal)| {
            path_words(literal)
                .map(home_as_tilde)
                .filter(|p| p.starts_with(['/', '~']) && !p.starts_with("/dev/"))
                .find(|p| {
                    matches!(
                        crate::paths::place_of(&Word::literal(p, (0, 0)), &w.cwds, w.ctx),
                        crate::paths::Place::Root
                            | crate::paths::Place::HomeOrAbove(_)
                            | crate::paths::Place::Outside(_)
                            | crate::paths::Place::Protected(_)
                    )
                })
        })
    }
}

/// Whether a path found in code can name a store, before the full check (which costs a
/// pattern expansion for a glob): a marker of the list, a session's secret file by name, or a
/// glob that can leave the project (`~/.s*/*`, `/home/*/.aws/*`, `../.*`); a relative glob
/// without `..` stays inside it.
fn may_name_store(w: &Walker, path: &str) -> bool {
    let name = super::basename(path);
    super::secrets::might_name_credentials(w, path)
        || w.ctx
            .secret_files
            .iter()
            .any(|f| f.file_name().is_some_and(|n| n == name))
        || (crate::pattern::has_glob(path) && (path.starts_with(['~', '/']) || path.contains("..")))
}

/// `code` with adjacent literals of the same quote joined into one where only blanks or a
/// concatenation operator lie between them (`+`, `.`, `..`, `*`, `||`): `".a" + "ws"` becomes
/// `".aws"`.
fn join_adjacent_literals(code: &str) -> String {
    let spans = literal_spans(code);
    let mut out = String::with_capacity(code.len());
    let mut copied = 0;
    for pair in spans.windows(2) {
        let [(quote, _, close), (next_quote, open, _)] = pair else {
            continue;
        };
        let between = code.get(close + 1..*open).unwrap_or("x").trim();
        if quote == next_quote && matches!(between, "" | "+" | "." | ".." | "*" | "||") {
            // Up to the closing quote, then on after the next opening one.
            out.push_str(code.get(copied..*close).unwrap_or(""));
            copied = open + 1;
        }
    }
    out.push_str(code.get(copied..).unwrap_or(""));
    out
}

/// Quoted literals: their quote and the byte offsets of their opening and closing quotes.
/// Escapes are skipped; an unclosed quote ends the scan.
fn literal_spans(code: &str) -> Vec<(char, usize, usize)> {
    let mut out = Vec::new();
    let mut chars = code.char_indices();
    while let Some((start, c)) = chars.next() {
        if !matches!(c, '\'' | '"' | '`') {
            continue;
        }
        let mut escaped = false;
        let mut end = None;
        for (i, d) in chars.by_ref() {
            if escaped {
                escaped = false;
            } else if d == '\\' {
                escaped = true;
            } else if d == c {
                end = Some(i);
                break;
            }
        }
        let Some(end) = end else { break };
        out.push((c, start, end));
    }
    out
}

/// Quoted literals (`'…'`, `"…"`, `` `…` ``) with the last non-blank character before each.
/// Escapes are skipped; an unclosed quote ends the scan (the name pieces still cover the rest).
fn literals(code: &str) -> Vec<(Option<char>, &str)> {
    let mut copied = 0;
    literal_spans(code)
        .into_iter()
        .map(|(_, open, close)| {
            let before = code
                .get(copied..open)
                .and_then(|b| b.trim_end().chars().next_back())
                .or_else(|| (copied > 0).then(|| code[..copied].chars().next_back())?);
            copied = close + 1;
            (before, code.get(open + 1..close).unwrap_or(""))
        })
        .collect()
}

/// The path-like words of a literal: split at blanks and at characters paths rarely hold
/// (`>>$ENV{HOME}/.bashrc` gives `$ENV{HOME}/.bashrc`, `a,/etc/x` gives `/etc/x`).
fn path_words(literal: &str) -> impl Iterator<Item = &str> {
    literal
        .split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '<' | '>' | '|' | ',' | ';' | '(' | ')' | '=' | '\'' | '"'
                )
        })
        .filter(|p| !p.is_empty())
}

/// `$HOME/…`, `${HOME}/…`, Perl's `$ENV{HOME}/…` as `~/…`, which the credential list and
/// [`crate::paths::place_of`] resolve against the known home.
fn home_as_tilde(path: &str) -> String {
    for prefix in [
        "$ENV{HOME}",
        "$ENV{'HOME'}",
        "$ENV{\"HOME\"}",
        "${HOME}",
        "$HOME",
    ] {
        if let Some(rest) = path.strip_prefix(prefix)
            && !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        {
            return format!("~{rest}");
        }
    }
    path.to_string()
}

/// A `~` that starts a path (`"~"`, `"~/x"`, Perl's `<~/.ssh/*>`), not an operator (Perl's
/// `=~`/`!~`, bitwise `~x`).
fn tilde_starts_a_path(code: &str) -> bool {
    let bytes = code.as_bytes();
    bytes.iter().enumerate().any(|(i, b)| {
        *b == b'~'
            && !i
                .checked_sub(1)
                .and_then(|j| bytes.get(j))
                .is_some_and(|p| matches!(p, b'=' | b'!' | b'~') || p.is_ascii_alphanumeric())
            && bytes.get(i + 1).is_none_or(|n| {
                matches!(
                    n,
                    b'/' | b'"' | b'\'' | b'`' | b')' | b',' | b';' | b'>' | b'}' | b']'
                ) || n.is_ascii_whitespace()
            })
    })
}

/// `"/"`, `"/*"`: the root of the file system.
fn is_root_literal(literal: &str) -> bool {
    matches!(literal.trim(), "/" | "/*" | "/." | "/.*" | "//")
}

/// `"."`, `"./"`, `"*"`, the working directory written out: the project itself.
fn is_project_literal(w: &Walker, literal: &str) -> bool {
    let literal = literal.trim();
    matches!(literal, "." | "./" | "./*" | "*" | ".." | "../" | "../*")
        || (literal.starts_with('/')
            && w.cwds
                .known()
                .iter()
                .any(|cwd| cwd == std::path::Path::new(literal.trim_end_matches('/'))))
}

/// The expression inside `( … )`.
fn parenthesized(node: Node) -> Option<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).next()
}

/// The object a method is called on (`Path(p)` in `Path(p).unlink()`).
fn receiver(call: Node) -> Option<Node> {
    let f = call.child_by_field_name("function")?;
    match f.kind() {
        "attribute" | "member_expression" => f.child_by_field_name("object"),
        _ => None,
    }
}

fn join_paths(parts: &[String]) -> String {
    let mut out = String::new();
    for p in parts {
        if p.starts_with('/') || out.is_empty() {
            out = p.clone();
        } else {
            if !out.ends_with('/') {
                out.push('/');
            }
            out.push_str(p);
        }
    }
    out
}

fn shell_quote(word: &str) -> String {
    if word == "$COMPUTED" {
        return "\"$COMPUTED\"".to_string();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// `'…'`, `"…"`, `'''…'''`, `r"…"`, `b"…"`; f-strings with fields are not static.
fn python_string(text: &str) -> Option<String> {
    let prefix_len = text.find(['\'', '"'])?;
    let prefix = text[..prefix_len].to_ascii_lowercase();
    if !prefix.chars().all(|c| "rbuf".contains(c)) {
        return None;
    }
    let body = &text[prefix_len..];
    let quote = if body.starts_with("\"\"\"") || body.starts_with("'''") {
        &body[..3]
    } else {
        &body[..1]
    };
    let inner = body.strip_prefix(quote)?.strip_suffix(quote)?;
    if prefix.contains('f') && inner.contains('{') {
        return None;
    }
    if prefix.contains('r') {
        return Some(inner.to_string());
    }
    Some(unescape(inner))
}

fn js_string(text: &str) -> Option<String> {
    let quote = text.chars().next()?;
    let inner = text.strip_prefix(quote)?.strip_suffix(quote)?;
    Some(unescape(inner))
}

/// Backslash escapes shared by Python and JavaScript literals.
fn unescape(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                if let Some(c) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    out.push(c);
                }
            }
            Some('\n') => {}
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

fn base64_decode(text: &str) -> Option<String> {
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for c in text.chars().filter(|c| !c.is_whitespace()) {
        let v = match c {
            'A'..='Z' => c as u32 - 'A' as u32,
            'a'..='z' => c as u32 - 'a' as u32 + 26,
            '0'..='9' => c as u32 - '0' as u32 + 52,
            '+' | '-' => 62,
            '/' | '_' => 63,
            '=' => break,
            _ => return None,
        };
        bits = (bits << 6) | v;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    String::from_utf8(out).ok()
}

fn hex_decode(text: &str) -> Option<String> {
    let clean: String = text.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    if !clean.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..clean.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&clean[i..i + 2], 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

fn rot13(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            'a'..='z' => (((c as u8 - b'a') + 13) % 26 + b'a') as char,
            'A'..='Z' => (((c as u8 - b'A') + 13) % 26 + b'A') as char,
            _ => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoders() {
        assert_eq!(base64_decode("cm0gLXJmIH4=").as_deref(), Some("rm -rf ~"));
        assert_eq!(hex_decode("726d202d7266207e").as_deref(), Some("rm -rf ~"));
        assert_eq!(rot13("ez -es ~"), "rm -rf ~");
        assert_eq!(python_string("r'a\\n'").as_deref(), Some("a\\n"));
        assert_eq!(python_string("b\"x\\x41\"").as_deref(), Some("xA"));
        assert_eq!(python_string("f'{x}'"), None);
        assert_eq!(python_string("'''a'b'''").as_deref(), Some("a'b"));
        assert_eq!(join_paths(&["~".into(), ".ssh".into()]), "~/.ssh");
    }

    #[test]
    fn lexical_reading() {
        assert_eq!(join_adjacent_literals(r#"f(".a" + "ws")"#), r#"f(".aws")"#);
        assert_eq!(join_adjacent_literals(r#""$H/.s"."sh""#), r#""$H/.ssh""#);
        assert_eq!(join_adjacent_literals("'/a' || 'b'"), "'/ab'");
        // Separate arguments and different quotes stay apart.
        assert_eq!(join_adjacent_literals(r#"f("a", "b")"#), r#"f("a", "b")"#);
        assert_eq!(join_adjacent_literals(r#""a" + 'b'"#), r#""a" + 'b'"#);
        assert_eq!(
            literals(r#"open(p, "a"); x = 'y'"#),
            [(Some(','), "a"), (Some('='), "y")]
        );
        assert_eq!(home_as_tilde("$ENV{HOME}/.netrc"), "~/.netrc");
        assert_eq!(home_as_tilde("$HOMEDIR/x"), "$HOMEDIR/x");
        assert!(tilde_starts_a_path(r#"glob("~/.ssh/*")"#));
        assert!(!tilde_starts_a_path("$x =~ s/a/b/"));
        assert!(!tilde_starts_a_path("y = ~x"));
    }
}
