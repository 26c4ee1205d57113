//! Secrets a command may read: credential files (under home, system-wide, key files, `.env`
//! files of other projects), other processes' environments and memory under `/proc`, and
//! programs that print the environment. Apart because every argument of every command is
//! checked against these lists, through a cheap pre-check first.

use super::{basename, short_has};
use crate::paths;
use crate::pattern;
use crate::walk::Walker;
use crate::word::Word;

const SYSTEM_CREDENTIALS: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/sudoers",
    "/etc/ssh",
    "/etc/ssl/private",
];
#[rustfmt::skip]
const KEY_FILE_NAMES: &[&str] = &[
    "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".netrc", ".git-credentials",
];

/// Whether `word` (possibly `@file`, `<file`, `name=@file`) names a credential file.
pub(crate) fn names_credentials(w: &Walker, word: &Word) -> bool {
    let text = if word.dynamic {
        &word.prefix
    } else {
        &word.text
    };
    // `--post-file=PATH`, `-Fname=@PATH`: the path is after `=`.
    let text = match text.split_once('=') {
        Some((opt, value)) if opt.starts_with('-') => value,
        _ => text.as_str(),
    };
    let text = text
        .rsplit_once(['@', '<'])
        .map_or(text, |(_, after)| after);
    let text = text.strip_prefix("file:").unwrap_or(text);
    if text.is_empty() && !word.dynamic {
        return false;
    }
    if names_secret_file(w, text) {
        return true;
    }
    if names_process_secrets_at(w, word) {
        return true;
    }
    if word.dynamic
        && super::alternatives(w, word)
            .iter()
            .any(|alternative| names_credentials(w, alternative))
    {
        // A loop variable, an array element, a variable `read` from known input or assigned
        // in a branch: any of its values.
        return true;
    }
    if word.dynamic {
        // The known prefix with anything after it, and the source text as written, where the
        // parts that matter may follow the computed one (`/proc/$$/root/home/u/.ssh/id_rsa`).
        return pattern_names_credentials(w, text, true)
            || (!pattern::has_pattern(&word.text) && literal_names_credentials(w, &word.text));
    }
    if pattern::has_pattern(text) {
        return pattern_names_credentials(w, text, false);
    }
    literal_names_credentials(w, &other_home_as_ours(text))
}

/// Whether `word` names a file this script wrote secrets into earlier (`env > e.txt`), also
/// as an option's value or after `@`/`<` (`-F f=@e.txt`). Reading it locally is fine, as
/// reading the environment is; what is sent from it carries the secrets.
pub(crate) fn names_saved_secrets(w: &Walker, word: &Word) -> bool {
    if w.secrets_written.is_empty() || word.dynamic {
        return false;
    }
    let text = match word.text.split_once('=') {
        Some((opt, value)) if opt.starts_with('-') => value,
        _ => word.text.as_str(),
    };
    let text = text
        .rsplit_once(['@', '<'])
        .map_or(text, |(_, after)| after);
    let text = text.rsplit_once('=').map_or(text, |(_, after)| after);
    crate::paths::resolve_all(&Word::literal(text, word.span), &w.cwds, w.ctx)
        .iter()
        .any(|p| w.secrets_written.contains(p))
}

/// [`names_credentials`] for a literal path: no glob, no brace, nothing computed.
fn literal_names_credentials(w: &Walker, text: &str) -> bool {
    if !might_name_credentials(w, text) {
        return false;
    }
    let name = basename(text);
    if KEY_FILE_NAMES.contains(&name) {
        return true;
    }
    absolutes_for_match(w, text)
        .iter()
        .any(|resolved| is_credential_path(w, name, resolved))
}

/// Whether `resolved` (absolute, normalised; `name` its last component as written) is a
/// credential file or lies in a credential store.
fn is_credential_path(w: &Walker, name: &str, resolved: &std::path::Path) -> bool {
    // A `.env` file outside the working directory belongs to another project or the user.
    if (name == ".env" || name.starts_with(".env."))
        && w.ctx.cwd.is_absolute()
        && !resolved.starts_with(paths::normalize(&w.ctx.cwd))
    {
        return true;
    }
    if SYSTEM_CREDENTIALS.iter().any(|s| resolved.starts_with(s)) {
        return true;
    }
    let home = &w.ctx.home;
    // `resolved` under `home/c` for some store `c`: the part below home, compared store by
    // store (rather than joining home to each of the stores for every argument).
    home.is_absolute()
        && resolved
            .strip_prefix(home)
            .is_ok_and(|below| w.ctx.home_credentials.iter().any(|c| below.starts_with(c)))
}

/// [`names_credentials`] for a word bash expands into other paths (`~/.[a]ws/credentials`,
/// `~/.{aws,x}/credentials`, `~/.config/*/hosts.yml`) or that is completed at run time
/// (`computed`: `~/.a$X`, `~/$DIR/x`; whatever follows the known `text` may be any path below
/// it): whether any path it may become is a credential file or lies in a store. A literal
/// comparison sees none of these as `~/.aws/credentials`; bash makes them that.
fn pattern_names_credentials(w: &Walker, text: &str, computed: bool) -> bool {
    // Too many alternatives to check: assume one of them is a store.
    let Some(alternatives) = words_bash_may_make(text, computed) else {
        return true;
    };
    let dotglob = w.may_set_dotglob();
    // Each alternative on its own: a brace may make `..` (`./{.,.}./.aws`) or a whole path.
    alternatives.iter().any(|alternative| {
        let alternative = other_home_as_ours(alternative);
        let alternative = alternative.as_ref();
        if !computed && key_name_may_match(basename(alternative), dotglob) {
            return true;
        }
        if !may_reach_credentials(w, alternative, dotglob) {
            return false;
        }
        if names_secret_file(w, alternative) {
            return true;
        }
        if !pattern::has_glob(alternative) {
            return literal_names_credentials(w, alternative);
        }
        let name = basename(alternative);
        absolutes_for_match(w, alternative)
            .iter()
            .any(|resolved| pattern_is_credential_path(w, name, resolved, dotglob, 0))
    })
}

/// The words bash's brace expansion makes of `text`, each a pattern; a `computed` text is the
/// known start of a word completed at run time ([`pattern::completed_at_run_time`]). `None`:
/// too many to list.
fn words_bash_may_make(text: &str, computed: bool) -> Option<Vec<String>> {
    if computed {
        pattern::brace_alternatives(&pattern::completed_at_run_time(text))
    } else {
        pattern::brace_alternatives(text)
    }
}

/// `~user/…` is another person's home, which the classifier does not know: a store there is as
/// secret as one in ours, so the path is judged as `~/…`.
fn other_home_as_ours(text: &str) -> std::borrow::Cow<'_, str> {
    match text.strip_prefix('~') {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') => {
            let after = rest.find('/').map_or("", |slash| &rest[slash..]);
            std::borrow::Cow::Owned(format!("~{after}"))
        }
        _ => std::borrow::Cow::Borrowed(text),
    }
}

/// Whether the last name `name` (possibly a glob) may be a key file's (`id_rsa`, `id_rs?`,
/// `.netr[c]`): only a glob with a literal start that a key file's name begins with, so `*`
/// alone does not make every directory a key store.
fn key_name_may_match(name: &str, dotglob: bool) -> bool {
    if KEY_FILE_NAMES.contains(&name) {
        return true;
    }
    let literal = &name[..name.find(['*', '?', '[', '\\']).unwrap_or(name.len())];
    literal.len() < name.len()
        && !literal.is_empty()
        && KEY_FILE_NAMES
            .iter()
            .any(|key| key.starts_with(literal) && pattern::component_may_match(name, key, dotglob))
}

/// Whether the last name `name` (possibly a glob) may be a `.env` file (`.env`, `.env.local`,
/// `.env.prod*`, `.e*`): its literal start, up to the first glob character, is a start of
/// `.env` or starts with it.
fn may_name_env_file(name: &str, dotglob: bool) -> bool {
    let first_glob = name.find(['*', '?', '[', '\\']);
    let literal = &name[..first_glob.unwrap_or(name.len())];
    if first_glob.is_none() {
        return name == ".env" || name.starts_with(".env.");
    }
    if literal.is_empty() {
        return dotglob;
    }
    ".env".starts_with(literal) || literal.starts_with(".env")
}

/// The cheap first test of [`pattern_names_credentials`] (it runs for every computed word of
/// every command): whether the directory the word's expansion starts in
/// ([`pattern::expansion_directory`]) holds a store, lies in one, or holds a link the caller
/// found, or the word's last name may be a `.env` file. `src/*.rs` or `$X` in the project is
/// answered here without matching every store.
fn may_reach_credentials(w: &Walker, text: &str, dotglob: bool) -> bool {
    let Some(dir) = pattern::expansion_directory(text) else {
        return true;
    };
    if may_name_env_file(basename(text), dotglob) {
        return true;
    }
    absolutes_for_match(w, dir)
        .iter()
        .any(|d| directory_may_reach_credentials(w, d))
}

thread_local! {
    /// The last directories [`directory_may_reach_credentials`] judged, with the context it
    /// judged them in and the answer: nearly every computed word or glob of a script starts in
    /// the same one or two directories (the working directory), and the answer compares the
    /// directory with every store.
    static REACH: std::cell::RefCell<Vec<(std::path::PathBuf, ReachContext, bool)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// What [`directory_may_reach_credentials`]'s answer depends on besides the directory.
#[derive(PartialEq)]
struct ReachContext {
    home: std::path::PathBuf,
    stores: usize,
    secret_files: Vec<std::path::PathBuf>,
    links: Vec<(std::path::PathBuf, std::path::PathBuf)>,
}

/// Whether `dir` (absolute, normalised) holds a store, a secret file or a link the caller found,
/// or lies in a store. Remembered for a few directories per thread (see [`REACH`]).
fn directory_may_reach_credentials(w: &Walker, dir: &std::path::Path) -> bool {
    let compute = || {
        directory_holds_credentials(w, dir)
            || is_credential_path(w, "", dir)
            || SYSTEM_CREDENTIALS
                .iter()
                .any(|s| std::path::Path::new(s).starts_with(dir))
            || w.ctx.links.iter().any(|(link, _)| link.starts_with(dir))
    };
    let same_context = |c: &ReachContext| {
        c.home == w.ctx.home
            && c.stores == w.ctx.home_credentials.as_ptr() as usize
            && c.secret_files == w.ctx.secret_files
            && c.links == w.ctx.links
    };
    REACH.with(|cell| {
        let Ok(mut cache) = cell.try_borrow_mut() else {
            return compute();
        };
        if let Some((_, _, answer)) = cache
            .iter()
            .find(|(d, c, _)| d.as_path() == dir && same_context(c))
        {
            return *answer;
        }
        let answer = compute();
        if cache.len() >= 8 {
            cache.remove(0);
        }
        cache.push((
            dir.to_path_buf(),
            ReachContext {
                home: w.ctx.home.clone(),
                stores: w.ctx.home_credentials.as_ptr() as usize,
                secret_files: w.ctx.secret_files.clone(),
                links: w.ctx.links.clone(),
            },
            answer,
        ));
        answer
    })
}

/// [`is_credential_path`] for a path whose components may be globs: whether some path it
/// matches is a credential file or lies in a store.
fn pattern_is_credential_path(
    w: &Walker,
    name: &str,
    pattern: &std::path::Path,
    dotglob: bool,
    depth: usize,
) -> bool {
    let comps = pattern::components(pattern);
    let comps: Vec<&str> = comps.iter().map(|c| c.as_ref()).collect();
    // Through a link the caller found (`d*/credentials` with `docs -> ~/.aws`): the pattern's
    // rest continues at the link's target.
    for (link, target) in &w.ctx.links {
        let link_comps = pattern::components(link);
        let link_comps: Vec<&str> = link_comps.iter().map(|c| c.as_ref()).collect();
        if comps.len() > link_comps.len()
            && !comps[..link_comps.len()].contains(&"**")
            && pattern::may_be_at_or_below(&comps[..link_comps.len()], &link_comps, dotglob)
        {
            let through = comps[link_comps.len()..]
                .iter()
                .fold(target.clone(), |p, c| p.join(c));
            if depth < 8 && pattern_is_credential_path(w, name, &through, dotglob, depth + 1) {
                return true;
            }
        }
    }
    let below = |target: &std::path::Path| {
        let target = pattern::components(target);
        let target: Vec<&str> = target.iter().map(|c| c.as_ref()).collect();
        pattern::may_be_at_or_below(&comps, &target, dotglob)
    };
    let env_name = may_name_env_file(name, dotglob);
    if env_name && w.ctx.cwd.is_absolute() && !pattern.starts_with(paths::normalize(&w.ctx.cwd)) {
        return true;
    }
    if SYSTEM_CREDENTIALS
        .iter()
        .any(|s| below(std::path::Path::new(s)))
    {
        return true;
    }
    let home = paths::normalize(&w.ctx.home);
    if !home.is_absolute() {
        return false;
    }
    let home_comps = pattern::components(&home);
    let home_comps: Vec<&str> = home_comps.iter().map(|c| c.as_ref()).collect();
    // At or below home first, then each store against the rest (the stores are relative
    // texts: compared without building a path for each).
    if comps.contains(&"**") {
        // A `**` may stand for any number of names, home's own and the stores' among them
        // (`/home/**/credentials`): matched against each store's whole path.
        return w.ctx.home_credentials.iter().any(|c| below(&home.join(c)));
    }
    if comps.len() <= home_comps.len() {
        return false;
    }
    let (upper, lower) = comps.split_at(home_comps.len());
    pattern::may_be_at_or_below(upper, &home_comps, dotglob)
        && w.ctx
            .home_credentials
            .iter()
            .any(|c| pattern::may_be_at_or_below_text(lower, c, dotglob))
}

/// Whether a program that reads directories recursively (`grep -r`, `rg`, `tar c`, `cp -r`),
/// given the directory `dir` (absolute, normalised), reads a credential store or one of the
/// session's secret files: `dir` is a store's directory or one above it (home, `/home`, `/`,
/// `~/.config`), since the stores lie inside it.
pub(crate) fn directory_holds_credentials(w: &Walker, dir: &std::path::Path) -> bool {
    let home = &w.ctx.home;
    let in_home = home.is_absolute()
        && (home.starts_with(dir)
            || dir.strip_prefix(home).is_ok_and(|below| {
                w.ctx
                    .home_credentials
                    .iter()
                    .any(|c| std::path::Path::new(c).starts_with(below))
            }));
    in_home
        || w.ctx
            .secret_files
            .iter()
            .any(|f| paths::normalize(f).starts_with(dir))
}

/// [`directory_holds_credentials`] for a directory word bash expands or completes at run time
/// (see [`pattern_names_credentials`]): whether a recursive read of some directory it may
/// become reaches a credential store or a secret file (`grep -r x ~/.c*` reads `~/.config/gh`).
pub(crate) fn pattern_may_hold_credentials(w: &Walker, text: &str, computed: bool) -> bool {
    let Some(alternatives) = words_bash_may_make(text, computed) else {
        return true;
    };
    let dotglob = w.may_set_dotglob();
    let home = paths::normalize(&w.ctx.home);
    let mut targets: Vec<std::path::PathBuf> = w
        .ctx
        .secret_files
        .iter()
        .map(|f| paths::normalize(f))
        .collect();
    if home.is_absolute() {
        targets.extend(w.ctx.home_credentials.iter().map(|c| home.join(c)));
    }
    targets.extend(SYSTEM_CREDENTIALS.iter().map(std::path::PathBuf::from));
    alternatives.iter().any(|alternative| {
        absolutes_for_match(w, alternative).iter().any(|dir| {
            if !pattern::has_glob(alternative) {
                return directory_holds_credentials(w, dir);
            }
            let comps = pattern::components(dir);
            let comps: Vec<&str> = comps.iter().map(|c| c.as_ref()).collect();
            targets.iter().any(|t| {
                let t = pattern::components(t);
                let t: Vec<&str> = t.iter().map(|c| c.as_ref()).collect();
                pattern::may_overlap(&comps, &t, dotglob)
            })
        })
    })
}

/// [`names_process_secrets`] for a path as the script means it: a relative one (`*/cmdline`
/// after `cd /proc`) resolved against every directory the script may be in, and
/// `/proc/self/root/proc/1/environ` as the kernel resolves it.
pub(crate) fn names_process_secrets_at(w: &Walker, word: &Word) -> bool {
    if names_process_secrets(word) {
        return true;
    }
    if word.dynamic
        && super::alternatives(w, word)
            .iter()
            .any(|alternative| names_process_secrets_at(w, alternative))
    {
        // `for p in /proc/[0-9]*; do cat $p/environ; done`: any value of the variable.
        return true;
    }
    let text = word.text.trim_matches(['"', '\'']);
    // Cheap first: only a path through `/proc` can name a process's files.
    let relative = !text.starts_with(['/', '~']);
    let may = if relative {
        // A directory below `/proc` has `proc` in its name.
        w.cwds.mention(crate::paths::Mention::Proc)
    } else {
        // `/dev/fd/../..` is `/proc` (see `paths::SYSTEM_LINKS`).
        text.contains("proc") || text.starts_with("/dev/")
    };
    if word.dynamic || text.is_empty() || text.starts_with('~') || !may {
        return false;
    }
    absolutes_for_match(w, text).iter().any(|p| {
        let resolved = p.to_string_lossy();
        resolved.starts_with("/proc/")
            && names_process_secrets(&Word::literal(&resolved, word.span))
    })
}

/// Whether `text` names one of the session's secret files ([`crate::Context::secret_files`]):
/// compared by base name first, so the common case (no such file, or another name) costs no
/// path resolution.
fn names_secret_file(w: &Walker, text: &str) -> bool {
    let files = &w.ctx.secret_files;
    if files.is_empty() {
        return false;
    }
    let name = basename(text);
    if !files
        .iter()
        .any(|f| f.file_name().is_some_and(|n| n == name) || name.contains(['*', '?', '[']))
    {
        return false;
    }
    // A relative name may be relative to a directory the script `cd`s to first: its base name is
    // enough (fail closed; only a file of the same name pays).
    if !text.starts_with(['/', '~']) && !name.contains(['*', '?', '[']) {
        return true;
    }
    let resolved = absolutes_for_match(w, text);
    if resolved.is_empty() {
        return true;
    }
    files.iter().any(|f| {
        resolved
            .iter()
            .any(|r| *r == paths::normalize(f) || glob_may_match(r, f))
    })
}

/// Whether a path with glob characters in its last component may name `file`: same directory.
fn glob_may_match(pattern: &std::path::Path, file: &std::path::Path) -> bool {
    let last = pattern.file_name().and_then(|n| n.to_str()).unwrap_or("");
    last.contains(['*', '?', '[']) && pattern.parent() == paths::normalize(file).parent()
}

/// Files under `/proc/<pid>/` that expose another process's secrets: its environment (API keys
/// handed to gg), its command line (`--token`), its memory, and its open files (`fd/0` of a
/// shell is the person's terminal: reading it takes their keystrokes).
#[rustfmt::skip]
const PROCESS_SECRETS: &[&str] = &[
    "environ", "cmdline", "mem", "maps", "smaps", "auxv", "stack", "fd", "map_files", "syscall",
    "cwd",
];

/// `/proc/<pid>/environ`, `/proc/$PPID/cmdline`, `/proc/self/environ` … (computed pids too).
pub(crate) fn names_process_secrets(word: &Word) -> bool {
    let text = word.text.trim_matches(['"', '\'']);
    if !text.starts_with('/') || !text.contains("proc") {
        return false;
    }
    // Another process's working directory, even where a `..` follows it (`/proc/1/cwd/../x`,
    // which lexical resolution would take for `/proc/1/x`).
    let raw: Vec<&str> = text
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    if raw.windows(3).any(|w| {
        w[0] == "proc"
            && w[2] == "cwd"
            && !matches!(w[1], "self" | "thread-self" | "$$" | "$BASHPID")
            && (w[1].starts_with('$') || w[1].bytes().all(|b| b.is_ascii_digit()))
    }) {
        return true;
    }
    // `/proc/./PID/environ`, `/proc/PID/../PID/environ`, `/etc/../proc/…`: as the kernel
    // resolves them.
    let normalized = paths::normalize(std::path::Path::new(text));
    let Some(rest) = normalized.to_str().and_then(|t| t.strip_prefix("/proc/")) else {
        return false;
    };
    let mut parts = rest.split('/').filter(|p| !p.is_empty());
    let Some(pid) = parts.next() else {
        return false;
    };
    let is_glob = |s: &str| s.contains(['*', '?', '[', '{']);
    let Some(file) = parts.next() else {
        // The whole directory of a process (`grep -r X /proc/PID/`) holds its environ and
        // command line.
        return pid.chars().all(|c| c.is_ascii_digit()) || pid.contains('$') || is_glob(pid);
    };
    let file = file.trim_matches(['"', '\'', '}']);
    // `/proc/self/task/TID/environ` is the same file as `/proc/self/environ`.
    let file = if file == "task" {
        parts.nth(1).unwrap_or(file).trim_matches(['"', '\'', '}'])
    } else {
        file
    };
    let own = pid == "self" || pid == "thread-self";
    let process =
        pid.contains('$') || is_glob(pid) || pid.chars().all(|c| c.is_ascii_digit()) || own;
    // `e?viron`, `{environ,x}`: a pattern may name any of them.
    let own_harmless = own && file != "environ" && !is_glob(file);
    process && !own_harmless && (PROCESS_SECRETS.contains(&file) || is_glob(file))
}

/// Component names one of which every credential path contains. Lexical normalisation only
/// removes components, so a path whose text lacks all of them cannot resolve to a credential
/// store, unless it is relative and the working directory is itself inside one.
#[rustfmt::skip]
const CREDENTIAL_MARKERS: &[&str] = &[
    ".ssh", ".aws", ".gnupg", ".netrc", ".git-credentials", "gh", ".docker", ".kube", ".npmrc",
    ".pypirc", "gcloud", ".azure", ".password-store", ".vault-token", "credentials", "shadow",
    "sudoers", "id_", ".gg", "/gg", ".env", "/proc/", "keyrings", ".pgpass", ".my.cnf", "/hub",
    "/op", ".mozilla", "chrom", ".s3cfg", "settings", "rclone", "auth.json", "history",
    "/ssl/private", ".oci", "doctl", "hcloud", ".fly", "sops", "yarnrc", "copilot", "creds",
    "Brave", "microsoft-edge", "lesshst",
    // The thirty-third session's additions to the one list.
    "hist", "zsh", "atuin", ".dbshell", ".viminfo", "fish_variables", ".boto", "databricks",
    "/token", "kaggle", "glab", "firebase", "sentry", "terraform", "profiles.yml", "ngrok",
    ".wrangler", "stripe", "netlify", "linode", ".cloudflared", "gradle.properties", "heroku",
    "/runtime",
];

/// Cheap pre-check for [`names_credentials`], which is called for every argument. A relative
/// path is also checked in full when the working directory is inside a home dot-directory: there
/// a store's last name alone (`op`, from `~/.config`) can name it.
pub(crate) fn might_name_credentials(w: &Walker, text: &str) -> bool {
    has_marker(text)
        || (!text.starts_with(['/', '~'])
            && w.cwds
                .known()
                .iter()
                .any(|cwd| cwd_may_hold_credentials(w, cwd)))
}

/// Whether `text` contains one of [`CREDENTIAL_MARKERS`]: one pass of an Aho-Corasick automaton
/// over the text instead of a substring search per marker (thirty-odd searches for every
/// argument of every command were 7–8 % of `gg classify`'s time on the labelled corpus).
fn has_marker(text: &str) -> bool {
    static MARKERS: std::sync::LazyLock<Option<aho_corasick::AhoCorasick>> =
        std::sync::LazyLock::new(|| aho_corasick::AhoCorasick::new(CREDENTIAL_MARKERS).ok());
    match MARKERS.as_ref() {
        Some(markers) => markers.is_match(text),
        // The automaton could not be built (it always can for these few short markers).
        None => has_marker_by_search(text),
    }
}

/// [`has_marker`]'s answer by one substring search per marker: the automaton's fallback, and
/// what its tests hold it to.
fn has_marker_by_search(text: &str) -> bool {
    CREDENTIAL_MARKERS.iter().any(|m| text.contains(m))
}

thread_local! {
    /// The last working directory and home checked by [`cwd_may_hold_credentials`] and the
    /// answer: the check runs for every relative argument, the directories rarely change.
    static CWD_MARKER: std::cell::RefCell<Option<(std::path::PathBuf, std::path::PathBuf, bool)>> =
        const { std::cell::RefCell::new(None) };
}

/// Whether `cwd`, a directory the script may be in (the caller's, or one it `cd`s to), is in a
/// credential store or a home dot-directory, where a store's last name alone can name it.
fn cwd_may_hold_credentials(w: &Walker, cwd: &std::path::Path) -> bool {
    let home = &w.ctx.home;
    let compute = || {
        has_marker(&cwd.to_string_lossy())
            || (home.is_absolute()
                && cwd.strip_prefix(home).is_ok_and(|below| {
                    below
                        .components()
                        .next()
                        .is_some_and(|first| first.as_os_str().as_encoded_bytes().starts_with(b"."))
                }))
    };
    CWD_MARKER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut cached) => match cached.as_ref() {
            Some((c, h, answer)) if c == cwd && h == home => *answer,
            _ => {
                let answer = compute();
                *cached = Some((cwd.to_path_buf(), home.to_path_buf(), answer));
                answer
            }
        },
        Err(_) => compute(),
    })
}

/// Every absolute, normalised path `text` may name: a relative path in each directory the
/// script may be in at this point (after its `cd`s; none when they are all unknown), `~/…` in
/// the home directory, and the `/proc/<pid>/root` and `/proc/<pid>/cwd` links followed where
/// they occur, as the kernel does (`/proc/self/root/../dev/pts/0` is `/dev/pts/0`).
pub(crate) fn absolutes_for_match(w: &Walker, text: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Some(rest) = text.strip_prefix('~') {
        // `~user/…` names another user's home, which is not known here.
        if (rest.is_empty() || rest.starts_with('/')) && w.ctx.home.is_absolute() {
            resolve_from(w, paths::normalize(&w.ctx.home), rest, 0, &mut out);
        }
    } else if text.starts_with('/') {
        resolve_from(w, std::path::PathBuf::from("/"), text, 0, &mut out);
    } else {
        for cwd in w.cwds.known() {
            resolve_from(w, cwd.clone(), text, 0, &mut out);
        }
    }
    if !w.ctx.links.is_empty() {
        out = out
            .into_iter()
            .map(|p| paths::follow_links(p, w.ctx))
            .collect();
    }
    out
}

/// Walks `rest` component by component from `path`, following `/proc/<pid>/root` (to `/`) and
/// `/proc/<pid>/cwd` (to the script's working directories) where the walk reaches one.
fn resolve_from(
    w: &Walker,
    mut path: std::path::PathBuf,
    rest: &str,
    depth: usize,
    out: &mut Vec<std::path::PathBuf>,
) {
    let parts: Vec<&str> = rest.split('/').collect();
    let mut hops = 0;
    for (i, part) in parts.iter().enumerate() {
        match *part {
            "" | "." => continue,
            ".." => {
                // A `..` after a link climbs from its target (`/proc/net/..`, `docs/..`).
                paths::before_parent(&mut path, w.ctx, &mut hops);
                path.pop();
                continue;
            }
            name => path.push(name),
        }
        let link = path
            .to_str()
            .and_then(|p| p.strip_prefix("/proc/"))
            .and_then(|r| r.split_once('/'))
            .filter(|(pid, link)| {
                // Any process's root is followed (it is `/` but in a container); only the
                // script's own working directory is known: another process's `cwd` is its
                // secret (`PROCESS_SECRETS`), not ours.
                let own = matches!(*pid, "self" | "thread-self" | "$$" | "$BASHPID");
                let any = own || pid.starts_with('$') || pid.bytes().all(|b| b.is_ascii_digit());
                (*link == "root" && any) || (*link == "cwd" && own)
            })
            .map(|(_, link)| link == "root");
        // Bounded: a path of links (`/proc/self/root/proc/self/root/…`) resolves a few times.
        if let Some(root) = link
            && depth < 8
        {
            let tail = parts[i + 1..].join("/");
            if root {
                resolve_from(w, std::path::PathBuf::from("/"), &tail, depth + 1, out);
            } else {
                for cwd in w.cwds.known() {
                    resolve_from(w, cwd.clone(), &tail, depth + 1, out);
                }
            }
            return;
        }
    }
    out.push(path);
}

/// Programs whose output is the environment, which holds secrets (`env`, `printenv`, `set`):
/// piping it to the network is exfiltration.
pub(crate) fn prints_environment(prog: &str, args: &[Word]) -> bool {
    match prog {
        "printenv" => true,
        // `env` with only options and assignments prints the environment; with a command it
        // runs the command.
        "env" => args.iter().all(|a| a.is_option() || a.text.contains('=')),
        "set" => args.is_empty(),
        "export" | "declare" | "typeset" => {
            args.iter()
                .any(|a| a.text == "-p" || short_has(&a.text, 'x'))
                || args.is_empty()
        }
        "compgen" => args.iter().any(|a| a.text == "-v" || a.text == "-e"),
        // `jq -n env`, `jq -n '$ENV'`: the whole environment as JSON.
        "jq" | "gojq" | "jaq" => args.iter().any(|a| {
            !a.is_option()
                && (a.text.contains("$ENV")
                    || a.text
                        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
                        .any(|w| w == "env"))
        }),
        "awk" | "gawk" | "mawk" | "nawk" | "busybox" => {
            args.iter().any(|a| a.text.contains("ENVIRON"))
        }
        // `python3 -c 'print(dict(os.environ))'`, `node -e 'console.log(process.env)'`.
        _ if super::exec::is_interpreter(prog) => args
            .iter()
            .any(|a| !a.is_option() && super::interp::reads_whole_environment(&a.text)),
        _ => false,
    }
}

/// `ps e`, `ps eww`, `ps -o environ` show other processes' environments.
pub(crate) fn ps_shows_environment(args: &[Word]) -> bool {
    args.iter().any(|a| {
        let t = a.text.as_str();
        (!t.starts_with('-')
            && !t.is_empty()
            && t.chars().all(|c| c.is_ascii_alphabetic())
            && t.contains('e'))
            || t.contains("environ")
            || t == "-E"
    })
}

#[cfg(test)]
mod tests {
    use super::{CREDENTIAL_MARKERS, has_marker, has_marker_by_search as by_search};
    use proptest::prelude::*;

    #[test]
    fn the_automaton_finds_every_marker_anywhere() {
        for marker in CREDENTIAL_MARKERS {
            for text in [
                marker.to_string(),
                format!("x{marker}"),
                format!("{marker}y"),
                format!("/a/b{marker}/c"),
            ] {
                assert!(has_marker(&text), "{text}");
            }
        }
        for text in [
            "",
            "ls",
            "src/main.rs",
            "/usr/bin/grep",
            "g h",
            ".ss h",
            "id-rsa",
        ] {
            assert_eq!(has_marker(text), by_search(text), "{text}");
        }
    }

    /// The pre-check keeps up with the one list: a path naming any store of
    /// `sandbox::protected::DENY_READ_IN_HOME` from outside it holds a marker (a store directly
    /// in home, by its own name; a deeper one by `/` and its last name; from inside a home
    /// dot-directory the working directory is checked instead).
    #[test]
    fn every_store_of_the_one_list_passes_the_pre_check() {
        for store in sandbox::protected::DENY_READ_IN_HOME {
            let last = store.rsplit('/').next().unwrap_or(store);
            assert!(has_marker(&format!("/{last}")), "{store}");
            if !store.contains('/') {
                assert!(has_marker(last), "{store}");
            }
        }
    }

    proptest! {
        #[test]
        fn the_automaton_agrees_with_searching(
            text in "[a-z./_~ -]{0,24}(\\.ssh|gh|id_|/op|history)?[a-z./_ -]{0,8}",
        ) {
            prop_assert_eq!(has_marker(&text), by_search(&text));
        }
    }
}
