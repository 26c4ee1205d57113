//! Ex commands as vim reads them (`vim -c CMD`, `+CMD`, `--cmd CMD`, an ex script on the
//! input): what they write (`w! FILE`, `w >> FILE`, `sav`, `mksession FILE`, `redir > FILE`,
//! `call writefile(…, FILE)`), read (`r FILE`, `readfile(FILE)`) and run (`!cmd`, `w !cmd`,
//! `r !cmd`, `system(…)`, `:lua`/`:python` code). A reading of the command line rather than
//! ed's: vim's abbreviations, `!` as a bang or a filter, `|` between commands, modifiers
//! (`silent!`, `exe`, `g/…/`) in front of the command they modify.

use super::escapes::program_option;
use super::{check_write_target, names_credentials};
use crate::ids::RuleId;
use crate::walk::Walker;
use crate::word::Word;
use crate::{Class, Span};

/// How deeply `exe "…"`, `g/…/CMD` and modifiers may nest before the reading gives up (and
/// fails closed).
const MAX_DEPTH: usize = 8;

/// Reads one line of ex commands (`|`-separated), `file` being the file vim edits (the target
/// of a bare `:w`).
pub(crate) fn ex_line(w: &mut Walker, line: &str, file: Option<&Word>, span: Span) {
    ex_commands(w, line, file, span, 0);
}

fn ex_commands(w: &mut Walker, line: &str, file: Option<&Word>, span: Span, depth: usize) {
    if depth > MAX_DEPTH {
        let msg = "vim commands nested too deeply to read";
        w.reason(Class::Normal, RuleId::DynamicShellCode, msg, span);
        return;
    }
    let mut rest = line;
    while !rest.trim().is_empty() {
        rest = ex_command(w, rest, file, span, depth);
    }
}

/// Whether `name` is `full` or one of its abbreviations at least `min` letters long (vim's
/// `w[rite]`, `sav[eas]`).
fn abbrev(name: &str, full: &str, min: usize) -> bool {
    name.len() >= min && full.starts_with(name)
}

/// Reads one command from the start of `text`; returns what follows its `|`.
fn ex_command<'t>(
    w: &mut Walker,
    text: &'t str,
    file: Option<&Word>,
    span: Span,
    depth: usize,
) -> &'t str {
    // Colons, blanks and the range (`%`, `1,$`, `.`, `'a`, `/pat/` is rare in a -c).
    let text = text.trim_start_matches(|c: char| {
        c.is_ascii_digit() || c.is_whitespace() || ":,.$%;+-".contains(c)
    });
    let text = match text.strip_prefix('\'') {
        Some(mark) => mark.get(1..).unwrap_or(""),
        None => text,
    };
    // `:!cmd` runs the rest of the line in a shell (`|` included).
    if let Some(code) = text.strip_prefix('!') {
        shell(w, code, span);
        return "";
    }
    let letters_from = |from: usize| {
        text[from..]
            .find(|c: char| !c.is_ascii_alphabetic())
            .map_or(text.len(), |n| from + n)
    };
    let mut name_len = letters_from(0);
    // `:py3`, `:py3do`, `:py3file`: the only command names with a digit.
    if &text[..name_len] == "py" && text[name_len..].starts_with('3') {
        name_len = letters_from(name_len + 1);
    }
    let (name, after) = text.split_at(name_len);
    let name = if name.is_empty() {
        // `:&&`, `:<`, `:@a` and the like: one character, nothing written.
        let cut = text.chars().next().map_or(0, char::len_utf8);
        return split_bar(&text[cut..]).1;
    } else {
        name
    };
    let (bang, after) = match after.strip_prefix('!') {
        Some(a) => (true, a),
        None => (false, after),
    };
    // Commands that take the rest of the line, `|` included. `:normal` types keys, and a
    // `:` among them starts a command line.
    if abbrev(name, "normal", 4) || name == "norm" {
        typed_keys(w, after, file, span, depth + 1);
        return "";
    }
    if abbrev(name, "global", 1) || abbrev(name, "vglobal", 1) {
        // `g/pat/CMD`: CMD on each matching line.
        let mut chars = after.chars();
        if let Some(delim) = chars.next().filter(|c| !c.is_alphanumeric() && *c != ' ') {
            let body = chars.as_str();
            let command = body.split_once(delim).map_or("", |(_, c)| c);
            ex_commands(w, command, file, span, depth + 1);
        }
        return "";
    }
    for (full, min) in [
        ("silent", 3),
        ("unsilent", 3),
        ("noautocmd", 3),
        ("keepalt", 5),
        ("keepjumps", 5),
        ("keepmarks", 3),
        ("keeppatterns", 5),
        ("lockmarks", 3),
        ("sandbox", 3),
        ("verbose", 4),
        ("vertical", 4),
        ("topleft", 2),
        ("botright", 2),
        ("tab", 3),
        ("windo", 5),
        ("bufdo", 5),
        ("argdo", 5),
        ("tabdo", 5),
        ("cdo", 3),
        ("ldo", 3),
        ("folddoopen", 5),
    ] {
        if abbrev(name, full, min) {
            // A modifier: the command it modifies follows.
            ex_commands(w, after, file, span, depth + 1);
            return "";
        }
    }
    for lang in [
        "lua", "luado", "python", "py", "python3", "py3", "pyx", "pythonx", "perl", "ruby",
        "rubydo", "perldo", "pydo", "py3do", "tcl", "mzscheme",
    ] {
        if name == lang {
            // Interpreter code: the rest of the line.
            super::interp::lexical_effects(w, &format!("vim :{name}"), after, span);
            for code in super::exec::shell_strings(after) {
                shell(w, &code, span);
            }
            return "";
        }
    }
    let (args, next) = split_bar(after);
    let arg = args.trim();
    let is = |full: &str, min: usize| abbrev(name, full, min);
    if is("write", 1)
        || is("wq", 2)
        || is("xit", 1)
        || is("exit", 3)
        || is("update", 2)
        || is("saveas", 3)
        || is("wnext", 2)
        || is("wNext", 2)
        || is("wprevious", 2)
        || name == "wall"
        || name == "wa"
        || is("wqall", 3)
        || is("xall", 2)
    {
        write(w, name, bang, arg, after, file, span);
        return if arg.starts_with('!') && !bang && after.starts_with(char::is_whitespace) {
            ""
        } else {
            next
        };
    }
    if is("read", 1) {
        match arg.strip_prefix('!') {
            Some(code) => {
                shell(w, code, span);
                return "";
            }
            None => read(w, arg, span),
        }
        return next;
    }
    if is("mksession", 3)
        || is("mkview", 5)
        || is("mkvimrc", 3)
        || is("mkexrc", 3)
        || is("wviminfo", 2)
        || is("wshada", 3)
    {
        if !arg.is_empty() {
            target(w, arg, &format!("vim :{name}"), span);
        }
        return next;
    }
    if is("redir", 4) {
        // `redir > F`, `redir! > F`, `redir >> F`; `redir @a`, `=> var` and `END` write no file.
        let spec = arg.trim_start_matches('!').trim_start();
        if let Some(f) = spec.strip_prefix(">>").or_else(|| spec.strip_prefix('>')) {
            target(w, f.trim(), "vim :redir", span);
        }
        return next;
    }
    if is("file", 1) && !arg.is_empty() {
        // `:file NAME` renames the buffer: a later `:w` writes NAME.
        target(w, arg, "vim :file", span);
        return next;
    }
    // `:luafile x.lua`, `:py3file x.py`: a script in that language.
    let language = if is("luafile", 5) {
        Some("lua")
    } else if is("pyfile", 3) || is("py3file", 4) || is("pyxfile", 4) {
        Some("python3")
    } else {
        None
    };
    if is("source", 2) || is("runtime", 2) || language.is_some() {
        if !arg.is_empty() {
            read(w, arg, span);
        }
        // After the file was written earlier, its text is read as that language's code.
        if let Some(prog) = language.filter(|_| !arg.is_empty()) {
            foreign_script(w, prog, &Word::literal(&expand(w, arg.trim()), span));
        }
        if is("source", 2) && !arg.is_empty() {
            // `:so x.vim` after `echo '!rm -rf ~' > x.vim`: the script's lines are known.
            // `:so %` sources the file being edited.
            let sourced = match file {
                Some(edited) if arg.trim() == "%" => edited.clone(),
                _ => Word::literal(&expand(w, arg.trim()), span),
            };
            sourced_script(w, &sourced, None, file, depth + 1);
        }
        let msg = format!("vim :{name} runs the script {arg}");
        w.reason(Class::Normal, RuleId::ExecInterpreterCode, msg, span);
        return next;
    }
    if is("execute", 3) {
        // `exe "w " . x`: literal pieces are commands; anything computed is not known.
        let strings = string_literals(args);
        // Anything but literals joined with `.`: a variable, a call, an option value.
        let computed = without_literals(args)
            .chars()
            .any(|c| !c.is_whitespace() && c != '.');
        if computed {
            let msg = "vim :execute runs a command built at run time";
            w.reason(Class::Normal, RuleId::DynamicShellCode, msg, span);
        }
        let joined: String = strings.concat();
        ex_commands(w, &joined, file, span, depth + 1);
        return next;
    }
    if is("edit", 1)
        || is("split", 2)
        || is("vsplit", 2)
        || is("new", 3)
        || is("vnew", 3)
        || is("tabedit", 4)
        || is("tabnew", 4)
        || is("visual", 2)
        || is("view", 3)
        || is("sview", 2)
        || is("badd", 3)
        || is("argedit", 4)
        || is("argadd", 4)
        || is("args", 2)
        || is("find", 3)
        || is("sfind", 2)
    {
        // Another file opened for editing: its content is shown, and a later `:w` (or
        // `:wall`) writes it, as a file operand of the editor is.
        let path = arg.trim_start_matches(|c: char| c == '+' || c.is_whitespace());
        if !path.is_empty() && !arg.starts_with('+') {
            read(w, path, span);
            target(w, path, &format!("vim :{name}"), span);
        }
        return next;
    }
    if is("call", 3) || name == "let" || is("echo", 2) || is("if", 2) || is("eval", 2) {
        expression(w, args, span);
        return next;
    }
    next
}

/// `args` up to the first `|` outside quotes (and not escaped), and what follows it.
fn split_bar(args: &str) -> (&str, &str) {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in args.char_indices() {
        match (quote, c) {
            _ if escaped => escaped = false,
            (_, '\\') => escaped = true,
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '|') => return (&args[..i], &args[i + 1..]),
            _ => {}
        }
    }
    (args, "")
}

/// `:w`, `:w FILE`, `:w! FILE`, `:w >> FILE`, `:w !cmd` (a blank before `!`: a filter), and
/// the other writing commands.
fn write(
    w: &mut Walker,
    name: &str,
    bang: bool,
    arg: &str,
    after: &str,
    file: Option<&Word>,
    span: Span,
) {
    if !bang
        && after.starts_with(char::is_whitespace)
        && let Some(code) = arg.strip_prefix('!')
    {
        shell(w, code, span);
        return;
    }
    let what = format!("vim :{name}");
    // `++enc=…`, `++ff=…` come before the name.
    let mut path = arg;
    while let Some(option) = path.strip_prefix("++") {
        path = option.split_once(' ').map_or("", |(_, r)| r).trim_start();
    }
    let path = path.strip_prefix(">>").unwrap_or(path).trim();
    if path.is_empty() {
        if let Some(f) = file {
            check_write_target(w, f, &what, span);
        }
    } else {
        target(w, path, &what, span);
    }
}

/// A Lua or Python script vim runs (`:luafile F`, `:py3file F`, `nvim -l F`): where the
/// script wrote F earlier, its text is read as that language's code, as `python3 F` is.
pub(crate) fn foreign_script(w: &mut Walker, prog: &str, script: &Word) {
    let Some(text) = super::written_text(w, script) else {
        return;
    };
    super::interp::lexical_effects(w, prog, &text, script.span);
    super::exec::embedded_shell_commands(w, &Word::literal(&text, script.span), prog);
    if let Some(lang) = super::interp::Lang::of(prog) {
        super::interp::analyse(w, lang, &text, script.span);
    }
}

/// Keys typed in normal mode (`vim -s FILE`, `:normal`, `feedkeys()`): each `:` starts a
/// command line, read up to the end of the line or a `<CR>` as an ex command. A `:` that is
/// only text (inside an insert) is read too: failing closed.
pub(crate) fn typed_keys(
    w: &mut Walker,
    keys: &str,
    file: Option<&Word>,
    span: Span,
    depth: usize,
) {
    let lower = keys.to_ascii_lowercase();
    for (at, _) in keys.match_indices(':') {
        let rest = &keys[at + 1..];
        let lower_rest = &lower[at + 1..];
        let end = [
            "\n",
            "\r",
            "\\<cr>",
            "<cr>",
            "\\<enter>",
            "<enter>",
            "\\<nl>",
        ]
        .iter()
        .filter_map(|stop| lower_rest.find(stop))
        .min()
        .unwrap_or(rest.len());
        ex_commands(w, &rest[..end], file, span, depth);
    }
}

/// A vim script vim runs (`vim -S FILE`, `-u FILE`, `:source FILE`): where its text is
/// visible (`-S <(printf …)`, a heredoc on `/dev/stdin`, a file written earlier in the script)
/// its lines are read as ex commands; otherwise it runs code the classifier cannot see, which
/// is normal, as `bash FILE` is, and dangerous when the script was downloaded earlier.
/// `input` is what vim's standard input carries, where the command shows it.
pub(crate) fn sourced_script(
    w: &mut Walker,
    script: &Word,
    input: Option<&crate::walk::Flow>,
    file: Option<&Word>,
    depth: usize,
) {
    let text = match input {
        Some(input) => super::output::visible_file_text(w, input, script),
        None => super::written_text(w, script),
    };
    if let Some(text) = text {
        for line in text.lines() {
            ex_commands(w, line, file, script.span, depth);
        }
        return;
    }
    super::exec::runs_downloaded(w, script, "vim");
    let msg = format!(
        "vim runs the script {}, whose content is not inspected",
        script.text
    );
    w.reason(Class::Normal, RuleId::ExecScriptFile, msg, script.span);
}

/// A file an ex command writes. vim expands `~` and environment variables in file names;
/// `%` (the current file) and other specials are judged as written (a relative name).
fn target(w: &mut Walker, path: &str, what: &str, span: Span) {
    let path = expand(w, path);
    let word = if path.contains(['$', '`']) {
        Word::computed(&path, "", span)
    } else {
        Word::literal(&path, span)
    };
    check_write_target(w, &word, what, span);
}

/// A file an ex command reads: a credential store makes it a credential read.
fn read(w: &mut Walker, path: &str, span: Span) {
    let mut path = path;
    while let Some(option) = path.strip_prefix("++") {
        path = option.split_once(' ').map_or("", |(_, r)| r).trim_start();
    }
    let path = expand(w, path.trim());
    if path.is_empty() {
        return;
    }
    if names_credentials(w, &Word::literal(&path, span)) {
        let msg =
            format!("vim reads the credential file {path}; its content would reach the model");
        w.reason(Class::Dangerous, RuleId::SecretsCredentialFile, msg, span);
    }
}

/// `~/x` and `$HOME/x` as vim expands them in file names.
fn expand(w: &Walker, path: &str) -> String {
    let home = w.vars.get("HOME").cloned();
    match home {
        Some(home) => {
            if let Some(rest) = path
                .strip_prefix('~')
                .filter(|r| r.is_empty() || r.starts_with('/'))
            {
                return format!("{home}{rest}");
            }
            for var in ["$HOME", "${HOME}"] {
                if let Some(rest) = path.strip_prefix(var) {
                    return format!("{home}{rest}");
                }
            }
            path.to_string()
        }
        None => path.to_string(),
    }
}

/// A shell command an ex command runs.
fn shell(w: &mut Walker, code: &str, span: Span) {
    program_option(w, code.trim(), span, RuleId::ExecEditorShell, "vim");
}

/// Vimscript text with its string literals taken out (see [`string_literals`]).
fn without_literals(text: &str) -> String {
    let mut out = String::new();
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in text.chars() {
        match quote {
            Some('"') if escaped => escaped = false,
            Some('"') if c == '\\' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None => out.push(c),
        }
    }
    out
}

/// The string literals of vimscript text (`"…"` with backslash escapes, `'…'` with `''`).
fn string_literals(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                let mut s = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => s.extend(chars.next()),
                        '"' => break,
                        _ => s.push(c),
                    }
                }
                out.push(s);
            }
            '\'' => {
                let mut s = String::new();
                while let Some(c) = chars.next() {
                    if c == '\'' {
                        if chars.peek() == Some(&'\'') {
                            chars.next();
                            s.push('\'');
                            continue;
                        }
                        break;
                    }
                    s.push(c);
                }
                out.push(s);
            }
            _ => {}
        }
    }
    out
}

/// The arguments of each call of `function` in `text` (`writefile(["x"], "/f")`): the text
/// between its parentheses, split at top-level commas.
fn call_arguments(text: &str, function: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(function) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + function.len()..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '#') {
            continue;
        }
        let Some(inner) = rest.trim_start().strip_prefix('(') else {
            continue;
        };
        let mut depth = 0usize;
        let mut quote: Option<char> = None;
        let mut args = Vec::new();
        let mut current = String::new();
        for c in inner.chars() {
            match (quote, c) {
                (Some(q), _) if c == q => {
                    quote = None;
                    current.push(c);
                }
                (Some(_), _) => current.push(c),
                (None, '"' | '\'') => {
                    quote = Some(c);
                    current.push(c);
                }
                (None, '(' | '[' | '{') => {
                    depth += 1;
                    current.push(c);
                }
                (None, ')') if depth == 0 => break,
                (None, ')' | ']' | '}') => {
                    depth = depth.saturating_sub(1);
                    current.push(c);
                }
                (None, ',') if depth == 0 => args.push(std::mem::take(&mut current)),
                _ => current.push(c),
            }
        }
        args.push(current);
        out.push(args);
    }
    out
}

/// The value of a vimscript argument when it is one string literal (`"~/.bashrc"`,
/// `expand("~/.bashrc")`).
fn literal_argument(arg: &str) -> Option<String> {
    let arg = arg.trim();
    let arg = arg
        .strip_prefix("expand(")
        .and_then(|a| a.strip_suffix(')'))
        .map_or(arg, str::trim);
    let strings = string_literals(arg);
    let quoted = arg.starts_with(['"', '\'']) && arg.ends_with(['"', '\'']);
    (strings.len() == 1 && quoted).then(|| strings.concat())
}

/// A vimscript expression (`:call`, `:let`, `:echo`): the functions that run commands, write
/// or delete files, and read them.
fn expression(w: &mut Walker, text: &str, span: Span) {
    // `feedkeys(":!cmd\n")` types keys as `:normal` does.
    for args in call_arguments(text, "feedkeys") {
        match args.first().and_then(|a| literal_argument(a)) {
            Some(keys) => typed_keys(w, &keys, None, span, 1),
            None => {
                let msg = "vim feedkeys() types keys built at run time";
                w.reason(Class::Normal, RuleId::DynamicShellCode, msg, span);
            }
        }
    }
    for function in [
        "system",
        "systemlist",
        "job_start",
        "jobstart",
        "termopen",
        "term_start",
    ] {
        for args in call_arguments(text, function) {
            match args.first().and_then(|a| literal_argument(a)) {
                Some(code) => shell(w, &code, span),
                None => {
                    let msg = format!("vim {function}() runs a command built at run time");
                    w.reason(Class::Normal, RuleId::DynamicShellCode, msg, span);
                }
            }
        }
    }
    for (function, index) in [
        ("writefile", 1),
        ("delete", 0),
        ("mkdir", 0),
        ("rename", 0),
        ("rename", 1),
        ("setfperm", 0),
    ] {
        for args in call_arguments(text, function) {
            let what = format!("vim {function}()");
            match args.get(index).and_then(|a| literal_argument(a)) {
                Some(path) => target(w, &path, &what, span),
                None => {
                    let msg = format!("{what} writes a file whose name is computed");
                    w.reason(Class::Normal, RuleId::WriteUnknownTarget, msg, span);
                }
            }
        }
    }
    for function in ["readfile", "readblob", "readdir"] {
        for args in call_arguments(text, function) {
            if let Some(path) = args.first().and_then(|a| literal_argument(a)) {
                read(w, &path, span);
            }
        }
    }
    // `libcall`, `libcallnr` load a shared library.
    if text.contains("libcall") {
        let msg = "vim libcall() loads a shared library and runs it";
        w.reason(Class::Dangerous, RuleId::ExecEditorShell, msg, span);
    }
}

/// Emacs Lisp given to `emacs --eval`/`-batch --eval`: code, read as the other interpreters'
/// code is (credential stores and writes it names), with the shell commands of
/// `shell-command`, `call-process`, `start-process`, `process-lines` and the like run as
/// commands.
pub(crate) fn emacs_lisp(w: &mut Walker, code: &Word, span: Span) {
    let msg = "emacs evaluates Lisp code";
    w.reason(Class::Normal, RuleId::ExecInterpreterCode, msg, span);
    if code.dynamic {
        let msg = "the Lisp code emacs evaluates is computed at run time";
        w.reason(Class::Normal, RuleId::DynamicShellCode, msg, span);
        return;
    }
    let text = code.text.as_str();
    super::interp::lexical_effects(w, "emacs", text, span);
    for function in [
        "shell-command",
        "async-shell-command",
        "shell-command-to-string",
        "call-process-shell-command",
        "process-lines",
        "call-process",
        "start-process",
        "start-process-shell-command",
        "make-process",
        "compile",
    ] {
        let mut rest = text;
        while let Some(at) = rest.find(function) {
            rest = &rest[at + function.len()..];
            if rest.starts_with(|c: char| c.is_alphanumeric() || c == '-') {
                continue;
            }
            // The form up to its closing parenthesis; its string literals are the command
            // (`call-process "rm" nil nil nil "-rf" "x"`: program and arguments).
            let form = rest.split(')').next().unwrap_or("");
            let strings = lisp_strings(form);
            if strings.is_empty() {
                let msg = format!("emacs ({function} …) runs a command built at run time");
                w.reason(Class::Normal, RuleId::DynamicShellCode, msg, span);
                continue;
            }
            let words: Vec<String> =
                if function.starts_with("start-process") && !function.ends_with("shell-command") {
                    // `(start-process NAME BUFFER PROGRAM ARGS…)`: the name is no command.
                    strings.into_iter().skip(1).collect()
                } else {
                    strings
                };
            shell(w, &words.join(" "), span);
        }
    }
    // Files: Lisp writes in too many ways to list (`write-region`, `with-temp-file`,
    // `find-file` then `save-buffer`, `copy-file`, `f-write-text` …). Code that has any
    // writing or deleting form writes, for all this reading knows, every path its strings
    // name.
    let writes = [
        "write",
        "save-buffer",
        "with-temp-file",
        "append-to-file",
        "copy-",
        "rename-",
        "delete-",
        "make-directory",
        "make-symbolic-link",
        "add-name-to-file",
        "set-file-",
        "f-append",
        "f-move",
        "f-copy",
        "f-touch",
        "f-mkdir",
        "dired-",
        "shell-command",
    ]
    .iter()
    .any(|form| text.contains(form));
    if writes {
        for path in lisp_strings(text).iter().filter(|s| looks_like_path(s)) {
            target(w, path, "emacs Lisp", span);
        }
    }
}

/// Whether a string literal of code may be a file name (`~/.bashrc`, `/etc/x`, `../x`,
/// `out/a.txt`) rather than text (`"hi there"`).
fn looks_like_path(text: &str) -> bool {
    !text.is_empty()
        && !text.contains(char::is_whitespace)
        && (text.starts_with(['/', '~', '.', '$']) || text.contains('/'))
}

/// The double-quoted string literals of Lisp text (backslash escapes).
fn lisp_strings(text: &str) -> Vec<String> {
    string_literals(&text.replace('\'', " "))
}
