//! Places where bash evaluates text a second time, and shell state that changes what later words
//! run. These are the false-safe families: text that looks inert to a reader (and to the tree)
//! but that bash turns into a command run.
//!
//! - Arithmetic (`$((…))`, `((…))`, C-style `for`, `[[ a -eq b ]]`, array subscripts,
//!   `${v:offset:length}`) evaluates variable *values* as expressions, and an expression such as
//!   `a[$(cmd)]` runs `cmd`. A variable is safe in arithmetic only when its value is statically
//!   known to be made of numbers and other safe variables.
//! - Builtins that take a variable *name* (`printf -v`, `read`, `test -v`, `unset`, `wait -p`,
//!   `getopts`) evaluate a subscript in that name the same way.
//! - `${!v}` and `${v@P}` expand the value of `v` once more.
//! - `set -k`, prefix and environment assignments to variables that tools read as configuration
//!   (`RIPGREP_CONFIG_PATH`, `TAR_OPTIONS`, …) change what a later word runs.
//! - Programs that the repository itself can resolve (a `rust-toolchain` file naming a path
//!   toolchain, an executable in a relative `PATH` entry) run the repository's code.

use crate::ids::RuleId;
use crate::walk::{Cmd, Walker};
use crate::word::Word;
use crate::{Class, Span};

/// How many variable-to-variable hops arithmetic safety follows (`x=y; y=3; $((x))`).
const MAX_ARITH_DEPTH: usize = 4;

/// Shell variables bash itself keeps numeric, so their value can never carry an expression.
#[rustfmt::skip]
const NUMERIC_SPECIALS: &[&str] = &[
    "RANDOM", "SRANDOM", "SECONDS", "LINENO", "BASHPID", "PPID", "UID", "EUID", "EPOCHSECONDS",
    "OPTIND", "HISTCMD", "BASH_SUBSHELL", "SHLVL",
];

/// What an arithmetic text refers to.
enum ArithRef {
    /// A variable whose value is evaluated.
    Name(String),
    /// Something whose value cannot be known (`$1`, `$(cmd)`, `${x/a/b}`).
    Opaque(String),
}

/// The variables and opaque parts an arithmetic expression evaluates.
fn arith_refs(text: &str) -> Vec<ArithRef> {
    let bytes = text.as_bytes();
    let mut refs = Vec::new();
    let mut i = 0;
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'$' {
            let next = bytes.get(i + 1).copied();
            match next {
                Some(b'(') if bytes.get(i + 2) == Some(&b'(') => i += 1,
                Some(b'(') => {
                    refs.push(ArithRef::Opaque("$(…)".into()));
                    // Its content is a command, walked elsewhere; skip to the matching `)`.
                    let mut depth = 0usize;
                    i += 1;
                    while i < bytes.len() {
                        match bytes[i] {
                            b'(' => depth += 1,
                            b')' if depth <= 1 => break,
                            b')' => depth -= 1,
                            _ => {}
                        }
                        i += 1;
                    }
                    i += 1;
                }
                Some(b'{') => {
                    let close = text[i..].find('}').map_or(bytes.len(), |c| i + c);
                    let inner = &text[(i + 2).min(close)..close];
                    let name_len = inner.bytes().take_while(|&c| ident(c)).count();
                    let rest = &inner[name_len..];
                    if inner.starts_with('#') && inner[1..].bytes().all(ident) {
                        // `${#name}` is a length: a number.
                    } else if name_len > 0 && !inner.as_bytes()[0].is_ascii_digit() {
                        refs.push(ArithRef::Name(inner[..name_len].to_string()));
                        if let Some(sub) = rest.strip_prefix('[').and_then(|r| r.strip_suffix(']'))
                        {
                            refs.extend(arith_refs(sub));
                        } else if !rest.is_empty() {
                            refs.push(ArithRef::Opaque(format!("${{{inner}}}")));
                        }
                    } else {
                        refs.push(ArithRef::Opaque(format!("${{{inner}}}")));
                    }
                    i = close + 1;
                }
                Some(c) if c.is_ascii_alphabetic() || c == b'_' => i += 1,
                Some(b'#' | b'?' | b'$' | b'!') => i += 2,
                Some(c) => {
                    refs.push(ArithRef::Opaque(format!("${}", c as char)));
                    i += 2;
                }
                None => i += 1,
            }
        } else if b == b'`' {
            refs.push(ArithRef::Opaque("`…`".into()));
            i += 1;
        } else if b.is_ascii_digit() {
            // A number, possibly with a base: `0x1f`, `16#ff`, `64#a@_`.
            while i < bytes.len() && (ident(bytes[i]) || bytes[i] == b'#' || bytes[i] == b'@') {
                i += 1;
            }
        } else if b.is_ascii_alphabetic() || b == b'_' {
            let start = i;
            while i < bytes.len() && ident(bytes[i]) {
                i += 1;
            }
            refs.push(ArithRef::Name(text[start..i].to_string()));
        } else {
            i += 1;
        }
    }
    refs
}

/// The text inside `${…}` split the way bash splits it.
struct ParamExpansion<'a> {
    /// `!` (indirection, or a listing of names or keys) or `#` (a length) before the parameter.
    prefix: Option<char>,
    /// A name, a positional number (`10` in `${10}`) or a special parameter (`@ * # ? - $ !`).
    param: &'a str,
    /// The text inside `[…]` after a name.
    subscript: Option<&'a str>,
    /// Everything after the parameter: the operator and its operand.
    op: &'a str,
}

impl<'a> ParamExpansion<'a> {
    /// `None` when the text does not start with a parameter bash knows.
    fn parse(inner: &'a str) -> Option<Self> {
        // `${#}` and `${!}` are the special parameters themselves; `${#…}`/`${!…}` followed by
        // a parameter are a length and an indirection. `${##}` is the length of `$#` in bash,
        // and `${#-}` that of `$-`: a prefix is taken whenever a parameter follows it.
        if let Some(first @ ('#' | '!')) = inner.chars().next()
            && let Some(mut rest) = Self::parse_plain(&inner[1..])
        {
            rest.prefix = Some(first);
            return Some(rest);
        }
        Self::parse_plain(inner)
    }

    fn parse_plain(inner: &'a str) -> Option<Self> {
        let bytes = inner.as_bytes();
        let first = *bytes.first()?;
        let param_len = if first.is_ascii_alphabetic() || first == b'_' {
            bytes
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count()
        } else if first.is_ascii_digit() {
            bytes.iter().take_while(|b| b.is_ascii_digit()).count()
        } else if b"@*#?-$!".contains(&first) {
            1
        } else {
            return None;
        };
        let (param, mut op) = inner.split_at(param_len);
        let mut subscript = None;
        if (first.is_ascii_alphabetic() || first == b'_')
            && let Some(after_open) = op.strip_prefix('[')
        {
            // The subscript ends at the matching `]` (subscripts nest: `a[b[1]]`).
            let mut depth = 1usize;
            let close = after_open.char_indices().find_map(|(i, c)| {
                match c {
                    '[' => depth += 1,
                    ']' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(i)
            })?;
            subscript = Some(&after_open[..close]);
            op = &after_open[close + 1..];
        }
        Some(ParamExpansion {
            prefix: None,
            param,
            subscript,
            op,
        })
    }

    /// Whether the parameter is a variable name (not positional or special).
    fn is_name(&self) -> bool {
        self.param
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
    }
}

impl Walker<'_> {
    /// Whether evaluating `name` in arithmetic can only ever produce a number.
    fn arith_safe_name(&self, name: &str, depth: usize) -> bool {
        if NUMERIC_SPECIALS.contains(&name) {
            return true;
        }
        if depth >= MAX_ARITH_DEPTH {
            return false;
        }
        match self.vars.get(name) {
            Some(value) => arith_refs(value).iter().all(|r| match r {
                ArithRef::Name(n) => self.arith_safe_name(n, depth + 1),
                ArithRef::Opaque(_) => false,
            }),
            None => false,
        }
    }

    /// Checks an arithmetic expression's text: every variable it evaluates must be safe.
    pub(crate) fn arith_check(&mut self, text: &str, span: Span) {
        for r in arith_refs(text) {
            let unsafe_part = match &r {
                ArithRef::Name(n) if self.arith_safe_name(n, 0) => continue,
                ArithRef::Name(n) => n.clone(),
                ArithRef::Opaque(o) => o.clone(),
            };
            let msg = format!(
                "arithmetic evaluates {unsafe_part}, whose value is not statically known; a value \
                 such as a[$(cmd)] would run cmd"
            );
            self.reason(Class::Normal, RuleId::ArithComputedOperand, msg, span);
            return;
        }
    }

    /// A variable name given to a builtin that assigns or tests it (`printf -v NAME`,
    /// `read NAME`, `test -v NAME`): a computed name, or a subscript bash evaluates, is not
    /// read-only.
    fn check_name_operand(&mut self, word: &Word, prog: &str) {
        if word.dynamic {
            let msg = format!(
                "\"{prog}\" gets the computed variable name {}, which bash evaluates",
                word.text
            );
            self.reason(
                Class::Normal,
                RuleId::EvalComputedVariableName,
                msg,
                word.span,
            );
            return;
        }
        if let Some(open) = word.text.find('[') {
            let inner = &word.text[open + 1..];
            let inner = inner.rsplit_once(']').map_or(inner, |(i, _)| i);
            if inner.contains(['$', '`']) {
                let msg = format!(
                    "\"{prog}\" evaluates the subscript of {}, which runs substitutions",
                    word.text
                );
                self.reason(
                    Class::Normal,
                    RuleId::EvalSubscriptSubstitution,
                    msg,
                    word.span,
                );
                return;
            }
            self.arith_check(inner, word.span);
        }
    }

    /// Checks a `${…}` expansion for a second evaluation. `raw` is the whole source text of the
    /// expansion. The parameter part is read the way bash reads it (a name, a positional number,
    /// a special parameter, a subscript) before the operator is judged, so `${@:x}` and
    /// `${a[@]:x}` are offsets as `${v:x}` is: reading only identifier characters once made
    /// `@:x` the "operator" and skipped the arithmetic check.
    pub(crate) fn check_expansion(&mut self, raw: &str, span: Span, has_substitution_node: bool) {
        let Some(inner) = raw.strip_prefix("${").and_then(|r| r.strip_suffix('}')) else {
            return;
        };
        let Some(exp) = ParamExpansion::parse(inner) else {
            // Fail closed: bash may read text the classifier cannot split as an operand it
            // evaluates.
            let msg = format!("{raw} is an expansion the classifier cannot read");
            self.reason(Class::Normal, RuleId::ParseError, msg, span);
            return;
        };
        if let Some(sub) = exp.subscript
            && sub != "@"
            && sub != "*"
        {
            // An indexed array's subscript is arithmetic (an associative array's is a word, which
            // the arithmetic check only over-asks for).
            self.arith_check(sub, span);
            self.hidden_substitution(raw, sub, span, has_substitution_node);
        }
        match exp.prefix {
            Some('#') => {
                // `${#v}`, `${#a[i]}`, `${#@}`: a length takes no operator; anything else is text
                // bash would read in a way this does not model.
                if !exp.op.is_empty() {
                    let msg = format!("{raw} is a length expansion with an operand");
                    self.reason(Class::Normal, RuleId::ParseError, msg, span);
                }
                return;
            }
            Some(_) => {
                let listing =
                    (exp.subscript.is_none() && exp.is_name() && matches!(exp.op, "*" | "@"))
                        || (matches!(exp.subscript, Some("@" | "*")) && exp.op.is_empty());
                if listing {
                    // `${!prefix*}`, `${!prefix@}`, `${!arr[@]}` list names or keys: nothing is
                    // evaluated.
                    return;
                }
                // `${!#}` names a positional parameter by number: no second evaluation.
                let numeric = exp.param == "#";
                let target_is_plain = exp.subscript.is_none()
                    && self.vars.get(exp.param).is_some_and(|v| {
                        !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    });
                if !numeric && !target_is_plain {
                    let msg = format!(
                        "{raw} expands the variable named by {}'s value, which may carry a \
                         subscript that runs commands",
                        exp.param
                    );
                    self.reason(Class::Normal, RuleId::EvalIndirectExpansion, msg, span);
                }
            }
            None => {}
        }
        let op = exp.op;
        let mut chars = op.chars();
        match (chars.next(), chars.next()) {
            (None, _) => {}
            // `${v:-w}`, `${v-w}` …: the operand is a word, whose expansions the tree shows.
            (Some(':'), Some('-' | '=' | '?' | '+')) | (Some('-' | '=' | '?' | '+'), _) => {}
            // `${v:offset}`, `${v:offset:length}`: both are arithmetic, whatever the parameter.
            (Some(':'), _) => self.arith_check(&op[1..], span),
            // Patterns and case changes: no evaluation beyond the hidden-substitution check.
            (Some('#' | '%' | '/' | '^' | ','), _) => {}
            (Some('@'), Some(t)) if op.len() == 2 => {
                let value_inert = exp.is_name()
                    && exp.subscript.is_none()
                    && self
                        .vars
                        .get(exp.param)
                        .is_some_and(|v| !v.contains(['$', '`', '\\']));
                if t == 'P' && !value_inert {
                    let msg = format!(
                        "{raw} expands {}'s value as a prompt, running substitutions",
                        exp.param
                    );
                    self.reason(Class::Normal, RuleId::EvalPromptExpansion, msg, span);
                } else if !"QEPAKaUuLk".contains(t) {
                    let msg = format!("{raw} has a transformation the classifier does not know");
                    self.reason(Class::Normal, RuleId::ParseError, msg, span);
                }
            }
            _ => {
                let msg = format!("{raw} has an operator the classifier does not know");
                self.reason(Class::Normal, RuleId::ParseError, msg, span);
            }
        }
        self.hidden_substitution(raw, op, span, has_substitution_node);
    }

    /// tree-sitter reads the operand of `#`, `%` and some others (and some subscripts) as a
    /// pattern, not as a word: a command substitution there is never seen as one, yet bash runs
    /// it.
    fn hidden_substitution(&mut self, raw: &str, text: &str, span: Span, seen_by_tree: bool) {
        if seen_by_tree || !(text.contains("$(") || text.contains('`') || text.contains("<(")) {
            return;
        }
        let msg = format!("{raw} runs a command substitution inside an expansion operator");
        self.reason(Class::Normal, RuleId::EvalHiddenSubstitution, msg, span);
        let code = text
            .trim_start_matches(['#', '%', '/', '^', ',', ':', '-', '=', '?', '+'])
            .to_string();
        self.keep_dangerous("inside an expansion operator", |w| {
            crate::fallback::scan(w, &code, span);
        });
    }

    /// Declaration-builtin options that change later evaluation: `-n` (a nameref redirects every
    /// later assignment to another variable, `PATH` for one) and `-i` (every later assignment
    /// is evaluated as arithmetic).
    pub(crate) fn check_declaration_option(&mut self, option: &str, span: Span) {
        if !(option.starts_with('-') || option.starts_with('+')) || option.starts_with("--") {
            return;
        }
        if option[1..].contains('n') {
            let msg = format!(
                "\"{option}\" makes a name reference: later assignments may set any variable"
            );
            self.reason(Class::Normal, RuleId::EvalNameref, msg, span);
        }
        if option[1..].contains('i') {
            let msg = format!("\"{option}\" makes later assignments arithmetic evaluations");
            self.reason(Class::Normal, RuleId::ArithIntegerAttribute, msg, span);
        }
        if option[1..].contains(['l', 'u', 'c']) {
            let msg = format!(
                "\"{option}\" changes the case of every later value of the variable, so the \
                 values written in the script are not the values it holds"
            );
            self.reason(Class::Normal, RuleId::EvalCaseAttribute, msg, span);
        }
    }

    /// An argument of a declaration builtin that bash reads as an assignment or name but the
    /// tree shows as a plain word (`declare 'a[$(cmd)]=1'`, `export "$v"`).
    pub(crate) fn check_declaration_word(&mut self, word: &Word) {
        if word.is_option() {
            self.check_declaration_option(&word.text, word.span);
            return;
        }
        let name = word
            .text
            .split_once('=')
            .map_or(word.text.as_str(), |(n, _)| n);
        let plain = !word.dynamic
            && !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if plain {
            if let Some((name, value)) = word.text.split_once('=') {
                if value.starts_with('(') {
                    // `declare -a 'x=($(cmd))'`: bash reads a quoted compound assignment as one
                    // and runs its substitutions.
                    let msg = format!(
                        "the declaration {} is a compound assignment that bash evaluates",
                        word.text
                    );
                    self.reason(Class::Normal, RuleId::EvalDeclarationWord, msg, word.span);
                    let code = word.text.clone();
                    self.reparse(&code, word.span, &crate::walk::Flow::default(), true);
                }
                let value = Word::literal(value, word.span);
                crate::rules::check_assignment(self, name, &value);
                self.vars.remove(name);
            }
            return;
        }
        self.check_name_operand(word, "declare");
        if word.dynamic {
            return;
        }
        let msg = format!(
            "the declaration {} is not a plain name; bash evaluates it",
            word.text
        );
        self.reason(Class::Normal, RuleId::EvalDeclarationWord, msg, word.span);
    }
}

/// Per-command checks, run for every simple command (wrapper payloads included) before its
/// family's rules.
pub(crate) fn check_command(w: &mut Walker, cmd: &Cmd, prog: &str) {
    let args = &cmd.argv[1..];
    if w.ctx.repo_programs.iter().any(|(p, _)| p == prog) && !cmd.argv[0].text.contains('/') {
        let why = w
            .ctx
            .repo_programs
            .iter()
            .find(|(p, _)| p == prog)
            .map(|(_, why)| why.clone())
            .unwrap_or_default();
        let msg = format!("\"{prog}\" resolves to a program chosen by the repository: {why}");
        w.reason(Class::Normal, RuleId::ToolchainRepoResolved, msg, cmd.span);
    }
    if SHELL_NAMES.contains(&prog) {
        shell_startup_files(w, args, prog);
    }
    match prog {
        "set" => {
            let mut iter = args.iter().peekable();
            while let Some(a) = iter.next() {
                let keyword = (a.text.starts_with('-') && !a.text.starts_with("--"))
                    && a.text[1..].contains('k')
                    || a.text == "-o" && iter.peek().is_some_and(|n| n.text == "keyword");
                if keyword {
                    let msg = "\"set -k\" makes NAME=value arguments anywhere on a command line \
                               environment assignments, so a later word can set PATH";
                    w.reason(Class::Normal, RuleId::EvalSetKeyword, msg, a.span);
                }
                if a.dynamic {
                    let msg = format!("\"set\" gets the computed option {}", a.text);
                    w.reason(Class::Normal, RuleId::EvalComputedOption, msg, a.span);
                }
            }
        }
        "printf" => {
            let mut i = 0;
            while i < args.len() {
                let a = &args[i];
                if a.text == "--" || !a.is_option() {
                    break;
                }
                if a.text == "-v" {
                    if let Some(name) = args.get(i + 1) {
                        w.check_name_operand(name, prog);
                    }
                    i += 1;
                } else if let Some(name) = a.text.strip_prefix("-v") {
                    w.check_name_operand(&Word::literal(name, a.span), prog);
                }
                i += 1;
            }
        }
        "read" => {
            let mut i = 0;
            let mut options = true;
            while i < args.len() {
                let a = &args[i];
                if options && a.text == "--" {
                    options = false;
                } else if options && a.is_option() {
                    let flags = &a.text[1..];
                    // Options that take a value: the value is the rest of the cluster or the
                    // next word. `-a NAME` names an array.
                    if let Some(pos) = flags.find(['a', 'd', 'i', 'n', 'N', 'p', 't', 'u']) {
                        let attached = &flags[pos + 1..];
                        let value = if attached.is_empty() {
                            i += 1;
                            args.get(i).cloned()
                        } else {
                            Some(Word::literal(attached, a.span))
                        };
                        if flags.as_bytes()[pos] == b'a'
                            && let Some(v) = value
                        {
                            w.check_name_operand(&v, prog);
                        }
                    }
                } else {
                    options = false;
                    w.check_name_operand(a, prog);
                }
                i += 1;
            }
        }
        "test" | "[" => {
            for pair in args.windows(2) {
                if matches!(pair[0].text.as_str(), "-v" | "-R") && !pair[0].dynamic {
                    w.check_name_operand(&pair[1], prog);
                }
            }
        }
        "unset" => {
            for a in args.iter().filter(|a| !a.is_option()) {
                w.check_name_operand(a, prog);
            }
        }
        "wait" => {
            for pair in args.windows(2) {
                if pair[0].text == "-p" {
                    w.check_name_operand(&pair[1], prog);
                }
            }
        }
        "getopts" => {
            if let Some(name) = args.get(1) {
                w.check_name_operand(name, prog);
            }
        }
        _ => {}
    }
}

/// Shell options that make it run start-up files before the command: code that is not in
/// the command text (`--rcfile FILE` may name a file in the repository).
fn shell_startup_files(w: &mut Walker, args: &[Word], prog: &str) {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a.text == "--" || !(a.text.starts_with('-') || a.text.starts_with('+')) {
            break;
        }
        let long = a.text.split_once('=').map_or(a.text.as_str(), |(n, _)| n);
        let startup = matches!(long, "--rcfile" | "--init-file" | "--login")
            || (!a.text.starts_with("--") && a.text[1..].contains(['i', 'l']));
        if startup {
            let msg = format!(
                "\"{prog} {}\" runs start-up files (rc, profile or the named file) before the \
                 command",
                a.text
            );
            w.reason(Class::Normal, RuleId::ExecShellStartupFiles, msg, a.span);
            return;
        }
        // `-o NAME`, `-O NAME` take a value.
        if matches!(a.text.as_str(), "-o" | "+o" | "-O" | "+O") {
            i += 1;
        }
        i += 1;
    }
}

/// Shells whose start-up options are checked.
const SHELL_NAMES: &[&str] = &[
    "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "rbash",
];

/// Variables that tools read as configuration, options or programs to run, beyond those the
/// rules already know (`PATH`, `LD_PRELOAD`, `PAGER`, …). Checked for every assignment.
#[rustfmt::skip]
const TOOL_CONFIG_VARS: &[&str] = &[
    "RIPGREP_CONFIG_PATH", "TAR_OPTIONS", "GZIP", "GZIP_OPT", "XZ_OPT", "XZ_DEFAULTS", "BZIP",
    "BZIP2", "UNZIP", "UNZIPOPT", "ZIP", "ZIPOPT", "GREP_OPTIONS", "LESSKEY", "LESSKEYIN",
    "LESSKEY_SYSTEM", "LESSKEYIN_SYSTEM", "PYTHONHOME", "PYTHONINSPECT", "PYTHONBREAKPOINT",
    "PYTHONWARNINGS", "PYTHONUSERBASE", "PYTHONEXECUTABLE", "NODE_REPL_EXTERNAL_MODULE",
    "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "RUSTC_WRAPPER",
    "RUSTC", "RUSTDOC", "RUSTFLAGS", "RUSTDOCFLAGS", "GOFLAGS", "GOTOOLCHAIN", "GOROOT",
    "PERLLIB", "PERL5DB", "AWKPATH", "AWKLIBPATH", "MAGIC", "OPENSSL_CONF", "OPENSSL_ENGINES",
    "OPENSSL_MODULES", "PSQLRC", "INPUTRC", "FCEDIT", "SVN_EDITOR", "TEXEDIT", "SHELL", "EXINIT",
    "VIMINIT", "MYVIMRC", "WGETRC", "CURL_HOME", "GLIBC_TUNABLES", "NLSPATH", "HOSTALIASES",
    "PS0", "PS1", "PS2", "PS3", "FIGNORE", "BASH_LOADABLES_PATH", "KUBECONFIG", "LUA_INIT",
    "PHPRC", "PHP_INI_SCAN_DIR", "GNUPGHOME", "MAKEFILES", "MAKEFLAGS", "CC", "CXX", "CPP", "LD",
    "AR", "SHELLOPTS", "BASHOPTS", "TERMINFO", "TERMINFO_DIRS", "MANPATH", "MANROFFOPT",
];
/// Name prefixes of tool configuration (`npm_config_*`, `CARGO_*`, …).
#[rustfmt::skip]
const TOOL_CONFIG_PREFIXES: &[&str] = &[
    "NPM_CONFIG_", "npm_config_", "YARN_", "PNPM_", "PIP_", "PIPX_", "UV_", "CARGO_", "RUSTUP_",
    "DYLD_", "BASH_FUNC_", "BASH_", "PYTHON", "PERL", "RUBY", "NODE_", "JAVA", "LUA_", "DOTNET_",
    "COMPLUS_", "CORECLR_", "DOCKER_", "AWS_", "CLOUDSDK_", "AZURE_", "LESS", "SSH_", "GPG_",
    "SUDO_", "XDG_", "OPENSSL_", "PKG_CONFIG", "R_", "BUNDLE_", "GEM_", "CONDA", "MAVEN_",
    "GRADLE_", "SBT_", "EMACS", "VIM", "NVIM", "HG", "SVN_",
];
/// Name suffixes of tool configuration (`*_OPTIONS`, `*_CONFIG_PATH`, `*RC`, …).
#[rustfmt::skip]
const TOOL_CONFIG_SUFFIXES: &[&str] = &[
    "_OPTIONS", "_OPTS", "OPT", "_CONFIG", "_CONFIG_PATH", "_CONFIG_FILE", "_CONFIG_DIR", "_CONF",
    "RC", "_PRELOAD", "_EDITOR", "_PAGER", "_COMMAND", "_CMD", "_PROGRAM", "_SHELL", "_HOOK",
    "_HOOKS", "_PLUGIN", "_PLUGINS", "_LIBRARY_PATH", "_STARTUP", "_INIT", "_WRAPPER", "_HOME",
    "PATH", "_ENV", "_FLAGS", "FLAGS",
];

/// Whether assigning `name` may change what a program reads as configuration or runs. Names
/// with lower-case letters are script variables (bash is case-sensitive, and tools read upper-case
/// names), except for the conventionally lower-case `npm_config_*`.
pub(crate) fn is_tool_config_var(name: &str) -> bool {
    if name.starts_with("npm_config_") {
        return true;
    }
    if name.chars().any(|c| c.is_ascii_lowercase()) {
        return false;
    }
    TOOL_CONFIG_VARS.contains(&name)
        || TOOL_CONFIG_PREFIXES.iter().any(|p| name.starts_with(p))
        || TOOL_CONFIG_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// Called for every assignment the rules see (statement level, command prefix, `env NAME=…`,
/// declarations): tool configuration is not read-only.
pub(crate) fn check_env_var(w: &mut Walker, name: &str, value: &Word) {
    if is_tool_config_var(name) {
        let msg = format!("{name}= is configuration that programs read; it may make them run code");
        w.reason(Class::Normal, RuleId::EnvToolConfig, msg, value.span);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(text: &str) -> Vec<String> {
        arith_refs(text)
            .into_iter()
            .map(|r| match r {
                ArithRef::Name(n) => n,
                ArithRef::Opaque(o) => format!("?{o}"),
            })
            .collect()
    }

    #[test]
    fn arithmetic_references() {
        assert_eq!(names("x + 0x1f * 16#ff"), vec!["x"]);
        assert_eq!(names("$x+${y}+${#z}+$#"), vec!["x", "y"]);
        assert_eq!(names("a[$(id)]"), vec!["a", "?$(…)"]);
        assert_eq!(names("$((1+2)) + $1"), vec!["?$1"]);
        assert_eq!(
            names("${a[i]} + ${v/x/y}"),
            vec!["a", "i", "v", "?${v/x/y}"]
        );
    }

    #[test]
    fn tool_config_names() {
        assert!(is_tool_config_var("RIPGREP_CONFIG_PATH"));
        assert!(is_tool_config_var("npm_config_script_shell"));
        assert!(is_tool_config_var("CARGO_BUILD_RUSTC_WRAPPER"));
        assert!(!is_tool_config_var("file_path"));
        assert!(!is_tool_config_var("COUNT"));
        assert!(!is_tool_config_var("LC_ALL"));
    }
}
