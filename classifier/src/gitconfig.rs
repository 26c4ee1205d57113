//! Minimal git-config reader: enough to tell whether a repository's own configuration makes git
//! run external programs, which would turn "read-only" git commands into code execution.

use std::path::{Path, PathBuf};

use crate::GitConfig;

/// How deep `[include]` chains are followed; git itself stops at 10.
const MAX_INCLUDE_DEPTH: usize = 10;

/// Section used for synthetic entries recording what [`GitConfig::load_with`] could not resolve.
/// It is treated as program-running so that an unreadable include fails closed.
const UNRESOLVED_SECTION: &str = "gg-unresolved-include";

/// One `section[.subsection].key = value` entry. Section and key are lower-cased (git compares
/// them case-insensitively); the subsection keeps its case.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Entry {
    pub section: String,
    pub subsection: Option<String>,
    pub key: String,
    pub value: Option<String>,
}

impl Entry {
    /// `section.subsection.key`, as git prints it.
    pub fn dotted(&self) -> String {
        match &self.subsection {
            Some(sub) => format!("{}.{}.{}", self.section, sub, self.key),
            None => format!("{}.{}", self.section, self.key),
        }
    }
}

/// Parses git-config text leniently. Lines that cannot be understood are skipped: the caller
/// only ever uses the result to *add* caution, and git would refuse such a file anyway.
pub(crate) fn parse(text: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut section: Option<(String, Option<String>)> = None;
    // A byte-order mark before the first section header is skipped by git; without this the
    // first section (often `[core]`) would go unseen.
    for line in logical_lines(text) {
        let mut rest = line.trim_start();
        if rest.starts_with('[') {
            let Some(close) = rest.find(']') else {
                continue;
            };
            section = parse_section_header(&rest[1..close]);
            rest = rest[close + 1..].trim_start();
            if rest.is_empty() {
                continue;
            }
        }
        if rest.is_empty() || rest.starts_with('#') || rest.starts_with(';') {
            continue;
        }
        let Some((name, sub)) = section.clone() else {
            continue;
        };
        let (key, value) = match rest.split_once('=') {
            Some((k, v)) => (k.trim(), Some(parse_value(v))),
            None => (rest.split_whitespace().next().unwrap_or(""), None),
        };
        if key.is_empty() {
            continue;
        }
        entries.push(Entry {
            section: name,
            subsection: sub,
            key: key.to_ascii_lowercase(),
            value,
        });
    }
    entries
}

/// The file's lines as git reads them: a value continues on the next line after a backslash
/// that ends it, but a comment (from an unquoted `#` or `;`) ends at its line, backslash or not.
/// Joining a comment's line with the next, as a reader that looks for the backslash first does,
/// would hide the next line from every check (an attacker pass planted `core.fsmonitor` under
/// `# tuning \`). A byte-order mark before the first line is skipped, as git does.
pub(crate) fn logical_lines(text: &str) -> Vec<String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(raw) = lines.next() {
        let mut line = raw.trim().to_string();
        while continues(&line) {
            line.pop();
            match lines.next() {
                Some(next) => line.push_str(next),
                None => break,
            }
        }
        out.push(line);
    }
    out
}

/// Whether `line` ends in a backslash that continues its value: not escaped by another, and not
/// inside a comment.
fn continues(line: &str) -> bool {
    // A section header's own text cannot continue; what follows its `]` can.
    let body = if line.starts_with('[') {
        match line.find(']') {
            Some(close) => &line[close + 1..],
            None => return false,
        }
    } else {
        line
    };
    let mut quoted = false;
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // An escape takes the next character; a backslash with nothing after continues.
            '\\' if chars.next().is_none() => return true,
            '"' => quoted = !quoted,
            '#' | ';' if !quoted => return false,
            _ => {}
        }
    }
    false
}

fn parse_section_header(inner: &str) -> Option<(String, Option<String>)> {
    let inner = inner.trim();
    if let Some(quote) = inner.find('"') {
        let name = inner[..quote].trim().to_ascii_lowercase();
        let sub = inner[quote + 1..].trim_end().trim_end_matches('"');
        let sub = sub.replace("\\\"", "\"").replace("\\\\", "\\");
        return Some((name, Some(sub)));
    }
    // Deprecated `[section.subsection]` form: the subsection is case-insensitive there.
    match inner.split_once('.') {
        Some((name, sub)) => Some((name.to_ascii_lowercase(), Some(sub.to_ascii_lowercase()))),
        None if !inner.is_empty() => Some((inner.to_ascii_lowercase(), None)),
        None => None,
    }
}

/// Strips comments and quotes from a value. Escapes other than `\"` and `\\` are kept verbatim:
/// the value is only inspected, never executed.
fn parse_value(raw: &str) -> String {
    let mut out = String::new();
    let mut in_quotes = false;
    let mut chars = raw.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => in_quotes = !in_quotes,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => {}
            },
            '#' | ';' if !in_quotes => break,
            other => out.push(other),
        }
    }
    out.trim_end().to_string()
}

/// Values git reads as boolean false; a program-running key set to one of these runs nothing.
fn is_false(value: &Option<String>) -> bool {
    match value {
        None => false,
        Some(v) => matches!(
            v.to_ascii_lowercase().as_str(),
            "" | "false" | "no" | "off" | "0"
        ),
    }
}

/// Whether `entry` names a configuration key that makes git run an external program.
pub(crate) fn runs_program(entry: &Entry) -> bool {
    let key = entry.key.as_str();
    let sub = entry.subsection.is_some();
    let program_key = match entry.section.as_str() {
        UNRESOLVED_SECTION => return true,
        "core" => {
            matches!(
                key,
                "fsmonitor"
                    | "pager"
                    | "editor"
                    | "sshcommand"
                    | "hookspath"
                    | "askpass"
                    | "gitproxy"
                    | "alternaterefscommand"
            ) || (key == "worktree" && worktree_leaves_the_repository(entry.value.as_deref()))
        }
        // `init.templateDir`: `git init` (also run again in an existing repository) and `git
        // clone` copy the template's `hooks/`, which then run.
        "init" => key == "templatedir",
        "diff" if sub => matches!(key, "textconv" | "command"),
        // `tar.<format>.command` filters `git archive`'s output; `trailer.<token>.cmd` runs
        // for `git commit --trailer` and `git interpret-trailers`.
        "tar" | "trailer" => sub && matches!(key, "command" | "cmd"),
        "diff" => key == "external",
        "filter" => sub && matches!(key, "clean" | "smudge" | "process"),
        "pager" => true,
        // Every alias, not only a `!` one: `st = ls-remote --upload-pack='sh -c …' .` runs a
        // program through an option (so do `--receive-pack`, `difftool -x`, `grep -O`, `rebase
        // --exec`, `submodule foreach`), and a repository's alias overrides the person's own of
        // the same name. Telling harmless expansions apart would be a parser's opinion of every
        // subcommand's options; a repository rarely needs an alias of its own.
        "alias" => return true,
        // `gpg.program`, `gpg.openpgp.program`, `gpg.x509.program`, `gpg.ssh.program`, and the
        // command that prints the ssh signing key.
        "gpg" => matches!(key, "program" | "defaultkeycommand"),
        // `submodule.<name>.update = !cmd` runs the command at `git submodule update`.
        "submodule" => {
            return sub
                && key == "update"
                && entry
                    .value
                    .as_deref()
                    .is_some_and(|v| v.trim_start().starts_with('!'));
        }
        // `ext::` URLs are command lines (`ext::sh -c …`), run at fetch, pull and push once
        // the ext transport is allowed; allowing it at all is counted too, since a later URL
        // (`.gitmodules`, a command line) then runs.
        "protocol" => {
            return key == "allow"
                && entry
                    .subsection
                    .as_deref()
                    .is_none_or(|s| s.eq_ignore_ascii_case("ext"))
                && entry
                    .value
                    .as_deref()
                    .is_none_or(|v| !v.trim().eq_ignore_ascii_case("never"));
        }
        "remote" if matches!(key, "url" | "pushurl") => {
            return entry.value.as_deref().is_some_and(is_ext_url);
        }
        // `[url "ext::sh -c …"] insteadOf = https://…` turns ordinary URLs into commands.
        "url" => return entry.subsection.as_deref().is_some_and(is_ext_url),
        // `sendemail.sendmailCmd`, `toCmd`, `ccCmd`, `headerCmd` (any `*cmd`, now and later),
        // and `smtpServer`, which is a program when it is a path; also per identity
        // (`sendemail.<identity>.*`).
        "sendemail" => key.ends_with("cmd") || key == "smtpserver",
        // `imap.tunnel` is a command line `git imap-send` runs instead of connecting.
        "imap" => key == "tunnel",
        // git-lfs reads its programs from git's configuration: custom transfer agents and
        // extensions' filters.
        "lfs" => sub && matches!(key, "path" | "clean" | "smudge"),
        // `git svn` runs `svn.authorsProg` for every unknown author.
        "svn" | "svn-remote" => key == "authorsprog",
        // The browser git starts (`git help --web`, `git instaweb`, `git web--browse`): a path
        // or a name looked up on PATH; git gui's editor.
        "help" => key == "browser",
        "gui" => key == "editor",
        "instaweb" => matches!(key, "httpd" | "browser"),
        "credential" => key == "helper",
        "sequence" => key == "editor",
        "merge" => sub && key == "driver",
        "interactive" => key == "difffilter",
        "browser" | "man" | "difftool" | "mergetool" | "guitool" => {
            sub && matches!(key, "cmd" | "path")
        }
        "remote" => sub && matches!(key, "uploadpack" | "receivepack" | "vcs"),
        "uploadpack" => key == "packobjectshook",
        "web" => key == "browser",
        // Hooks set in configuration (newer git): `hook.<name>.command` runs at each event its
        // `hook.<name>.event` names, as a script in the hooks directory would.
        "hook" => sub && key == "command",
        _ => false,
    };
    program_key && !is_false(&entry.value)
}

/// Whether a `core.worktree` value puts the work tree where the repository does not lie:
/// absolute, under home, only `..`s above the git directory (`../..` from `.git` is the
/// project's parent, where the person's `git checkout` and `git stash` would then write), or
/// two `..`s and down again (`../../home` from `.git` is the project's sibling: an attacker
/// pass had the person's `git stash` write `~/.bashrc` through it). git writes a relative value
/// only for a submodule's git directory (`.git/modules/<name>`, three levels or more below its
/// work tree: `../../../sub`), so two levels up is never git's own; a value three or more
/// levels up and down again cannot be told from git's without knowing where the git directory
/// is ([`GitConfig::worktree_outside`] does, where that is known).
fn worktree_leaves_the_repository(value: Option<&str>) -> bool {
    let Some(value) = value.map(str::trim) else {
        return false;
    };
    if value.starts_with(['/', '~']) {
        return true;
    }
    let (ups, normal) = lexical_ups(value);
    ups >= 2 && (normal.is_empty() || ups == 2)
}

/// `value`, a relative path, resolved lexically as far as it can be (`a/../..` is `..`): how
/// many levels it goes up first, and the names it then goes down through.
fn lexical_ups(value: &str) -> (usize, Vec<&str>) {
    let mut normal: Vec<&str> = Vec::new();
    let mut ups = 0usize;
    for part in value.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if normal.pop().is_none() {
                    ups += 1;
                }
            }
            name => normal.push(name),
        }
    }
    (ups, normal)
}

/// Whether an entry added to (`added`) or removed from an existing repository's configuration
/// is a change git's ordinary work makes there: deny by default, as for a repository a command
/// made ([`written_by_git`]), but narrower, since here the person's next `git push`, `git
/// fetch` or `git stash` obeys it. Not `core.worktree` (the person's checkout and stash write
/// where it names), `core.bare`, `core.sharedRepository` (file modes for everyone), a program
/// (the classifier's table), an include; for a remote that existed before only its fetch
/// refspecs, what `git fetch --filter` records and the GitHub CLI's `gh-resolved` (a new `url`, `pushurl`, `push` or `mirror`
/// sends the person's next push elsewhere); a branch's `remote` or `pushRemote` only when it
/// names a remote whose addresses all were the person's before (`git remote rename`, `git
/// branch -u origin/x`), not one the command added. Everything else falls to
/// [`written_by_git`] (`user.name`, `branch.<b>.merge`, a new remote's plain `url` and
/// `fetch`, `submodule.<s>.url` and `active` from `git submodule init`, `extensions.*` from
/// `git sparse-checkout` and `git refs migrate`), where `http.*`, `url.*`, `credential.*`,
/// `gpg.*` and `core.sshCommand` are not.
fn ordinary_change(entry: &Entry, added: bool, before: &ConfigFacts, now: &ConfigFacts) -> bool {
    let key = entry.key.as_str();
    if entry.section == "include" || entry.section == "includeif" {
        return false;
    }
    if added && runs_program(entry) {
        return false;
    }
    let sub = entry.subsection.as_deref();
    match (entry.section.as_str(), sub) {
        ("core", None) => matches!(
            key,
            "repositoryformatversion"
                | "filemode"
                | "logallrefupdates"
                | "ignorecase"
                | "precomposeunicode"
                | "symlinks"
                | "sparsecheckout"
                | "sparsecheckoutcone"
                | "autocrlf"
                | "eol"
                | "safecrlf"
                | "quotepath"
        ),
        ("remote", Some(name)) if before.remotes.contains(name) => {
            if !added {
                // `git remote remove`: the person's own remote goes, and nothing is sent
                // anywhere new by its going.
                return written_by_git(entry)
                    || matches!(key, "url" | "pushurl" | "fetch" | "push" | "mirror");
            }
            // `gh-resolved`: which remote the GitHub CLI takes for the base repository, its
            // own marker, which sends nothing anywhere.
            matches!(
                key,
                "fetch" | "tagopt" | "promisor" | "partialclonefilter" | "prune" | "gh-resolved"
            )
        }
        ("branch", Some(_)) if added && matches!(key, "remote" | "pushremote") => {
            let remote = entry.value.as_deref().unwrap_or("").trim();
            remote == "."
                || now.urls_of(remote).is_some_and(|urls| {
                    !urls.is_empty() && urls.iter().all(|url| before.urls.contains(url))
                })
        }
        _ => written_by_git(entry),
    }
}

/// What [`ordinary_change`] needs to know of a configuration as a whole.
struct ConfigFacts {
    /// The remotes it names (`[remote "<name>"]` with any key).
    remotes: std::collections::HashSet<String>,
    /// Every remote's `url` and `pushurl`.
    urls: std::collections::HashSet<String>,
    /// Each remote's `url`s and `pushurl`s.
    by_remote: std::collections::HashMap<String, Vec<String>>,
}

impl ConfigFacts {
    fn of(entries: &[Entry]) -> ConfigFacts {
        let mut facts = ConfigFacts {
            remotes: Default::default(),
            urls: Default::default(),
            by_remote: Default::default(),
        };
        for entry in entries.iter().filter(|e| e.section == "remote") {
            let Some(name) = &entry.subsection else {
                continue;
            };
            facts.remotes.insert(name.clone());
            let urls = facts.by_remote.entry(name.clone()).or_default();
            if matches!(entry.key.as_str(), "url" | "pushurl")
                && let Some(url) = &entry.value
            {
                urls.push(url.trim().to_string());
                facts.urls.insert(url.trim().to_string());
            }
        }
        facts
    }

    fn urls_of(&self, remote: &str) -> Option<&Vec<String>> {
        self.by_remote.get(remote)
    }
}

/// Whether `url` uses the `ext::` transport, whose address is a command line.
fn is_ext_url(url: &str) -> bool {
    url.trim_start()
        .get(..5)
        .is_some_and(|p| p.eq_ignore_ascii_case("ext::"))
}

/// Whether `entry` is one `git init`, `git clone`, `git submodule`, `git worktree`, `git remote
/// add` or `git branch -u` writes (or the few identity settings a script sets in a repository it
/// made), with a value git would have written. Deny by default: for a repository a command made,
/// anything else is unexplained, and the table of keys that run programs
/// ([`runs_program`]) can never be complete (git adds such keys release after release).
fn written_by_git(entry: &Entry) -> bool {
    let key = entry.key.as_str();
    let value = entry.value.as_deref().unwrap_or("").trim();
    // A remote git talks to directly: not a transport helper (`ext::cmd`, `foo::addr` runs
    // `git-remote-foo`) and not an option in disguise.
    let plain_url = || !value.contains("::") && !value.starts_with('-');
    match (entry.section.as_str(), entry.subsection.is_some()) {
        ("core", false) => match key {
            "repositoryformatversion"
            | "filemode"
            | "bare"
            | "logallrefupdates"
            | "ignorecase"
            | "precomposeunicode"
            | "symlinks"
            | "sharedrepository"
            | "sparsecheckout"
            | "sparsecheckoutcone"
            | "autocrlf"
            | "eol"
            | "safecrlf"
            | "quotepath" => true,
            // A submodule's git directory names its work tree (`../../../sub`); an absolute
            // one or one under home points git at a tree elsewhere.
            "worktree" => !value.is_empty() && !value.starts_with(['/', '~']),
            _ => false,
        },
        ("extensions", false) => matches!(
            key,
            "objectformat"
                | "compatobjectformat"
                | "worktreeconfig"
                | "refstorage"
                | "partialclone"
                | "preciousobjects"
        ),
        ("remote", true) => match key {
            "url" | "pushurl" => plain_url(),
            "fetch" | "push" | "mirror" | "tagopt" | "promisor" | "partialclonefilter"
            | "prune" => true,
            _ => false,
        },
        ("branch", true) => matches!(
            key,
            "remote" | "merge" | "rebase" | "pushremote" | "description"
        ),
        ("submodule", true) => match key {
            "url" => plain_url(),
            "update" => matches!(value, "checkout" | "rebase" | "merge" | "none"),
            "active" | "branch" | "fetchrecursesubmodules" | "ignore" | "shallow" => true,
            _ => false,
        },
        ("submodule", false) => key == "active",
        ("user", false) => matches!(key, "name" | "email"),
        ("init", false) => key == "defaultbranch",
        // What test scripts and fixtures set in the repositories they make, none of which runs
        // a program (turning signing off; on, it runs a signing program).
        ("commit" | "tag", false) => {
            key == "gpgsign" && matches!(value, "false" | "0" | "no" | "off")
        }
        ("pull", false) => matches!(key, "rebase" | "ff"),
        ("merge", false) => key == "ff",
        ("push", false) => matches!(key, "default" | "autosetupremote"),
        ("fetch", false) => key == "prune",
        ("receive", false) => matches!(key, "denycurrentbranch" | "denynonfastforwards"),
        ("gc", false) => key == "auto",
        ("advice", false) => true,
        ("color", false) => key == "ui",
        ("protocol", false) => key == "version",
        ("lfs", false) => key == "repositoryformatversion",
        _ => false,
    }
}

impl GitConfig {
    /// `text`'s logical lines as git reads them (see [`logical_lines`]): for callers that
    /// compare configurations line by line.
    pub fn logical_lines(text: &str) -> Vec<String> {
        logical_lines(text)
    }

    /// Dotted names of every key in these files that `git init`, `git clone`, `git submodule`
    /// and `git worktree` would not have written (see [`written_by_git`]), program-running keys
    /// first. For judging a repository a command made, not the person's own: in a made
    /// repository an unexplained key is reason enough, where the person's own configuration
    /// is only judged by what it runs ([`GitConfig::program_keys`]).
    pub fn keys_git_would_not_write(&self) -> Vec<String> {
        let entries: Vec<Entry> = self.files.iter().flat_map(|text| parse(text)).collect();
        let programs = entries.iter().filter(|e| runs_program(e));
        let unexplained = entries
            .iter()
            .filter(|e| !runs_program(e) && !written_by_git(e));
        programs.chain(unexplained).map(Entry::dotted).collect()
    }

    /// Dotted names of the entries that `before`, one configuration file of an existing
    /// repository (its `config`, `config.worktree` or a file it includes), gained or lost on the
    /// way to `now` that git's ordinary work would not have changed there ([`ordinary_change`]),
    /// in the order they appear; empty when every change is git's own. Deny by default: the
    /// table of keys that run programs can never be complete, and keys that run none send the
    /// person's next push to another host (`http.proxy`, `url.<x>.insteadOf`,
    /// `remote.origin.pushurl`) or their checkout into their home (`core.worktree`). Entries are
    /// compared as a multiset, so a duplicate added counts, and the person's own unusual keys,
    /// left as they were, do not.
    pub fn changes_git_would_not_make(before: &str, now: &str) -> Vec<String> {
        use std::collections::HashMap;
        let old = parse(before);
        let new = parse(now);
        let mut unmatched: HashMap<&Entry, usize> = HashMap::new();
        for entry in &old {
            *unmatched.entry(entry).or_default() += 1;
        }
        let mut added = Vec::new();
        for entry in &new {
            match unmatched.get_mut(entry) {
                Some(count) if *count > 0 => *count -= 1,
                _ => added.push(entry),
            }
        }
        let removed = old.iter().filter(|entry| {
            unmatched.get_mut(entry).is_some_and(|count| {
                let left = *count > 0;
                *count = count.saturating_sub(1);
                left
            })
        });
        let facts_before = ConfigFacts::of(&old);
        let facts_now = ConfigFacts::of(&new);
        let mut out: Vec<String> = Vec::new();
        for (entry, is_added) in added
            .into_iter()
            .map(|e| (e, true))
            .chain(removed.map(|e| (e, false)))
        {
            if !ordinary_change(entry, is_added, &facts_before, &facts_now) {
                let name = entry.dotted();
                if !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        out
    }

    /// Whether the work tree `core.worktree = value` names for the git directory `git_dir`
    /// lies outside `within` (both absolute; compared lexically, as the sweep finds `git_dir`
    /// by walking below `within`): for where the git directory is known, which
    /// [`worktree_leaves_the_repository`] can only guess at. `~` is outside.
    pub fn worktree_outside(git_dir: &Path, value: &str, within: &Path) -> bool {
        let value = value.trim();
        if value.is_empty() {
            return false;
        }
        if value.starts_with('~') {
            return true;
        }
        !crate::normalize_path(&git_dir.join(value)).starts_with(crate::normalize_path(within))
    }

    /// The last `core.worktree` value in these files (the one git obeys), if any.
    pub fn worktree(&self) -> Option<String> {
        self.files
            .iter()
            .flat_map(|text| parse(text))
            .filter(|e| e.section == "core" && e.subsection.is_none() && e.key == "worktree")
            .filter_map(|e| e.value)
            .next_back()
    }

    /// Dotted names of every key in these files that makes git run an external program.
    pub fn program_keys(&self) -> Vec<String> {
        self.files
            .iter()
            .flat_map(|text| parse(text))
            .filter(runs_program)
            .map(|e| e.dotted())
            .collect()
    }

    /// Collects `<git_dir>/config` and the files it includes (`[include] path=` and every
    /// `[includeIf "…"] path=`, whatever the condition: evaluating conditions would need more
    /// I/O, and reading a superset only adds caution). All file access goes through `read`,
    /// which returns `None` for a missing or unreadable file; git ignores missing includes too.
    ///
    /// Include paths starting with `~` cannot be resolved without a home directory: use
    /// [`GitConfig::load_with_home`] to supply one. An include that cannot be resolved, or a
    /// chain deeper than git's limit, is recorded so that git commands are not read-only.
    pub fn load_with(git_dir: &Path, read: impl Fn(&Path) -> Option<String>) -> GitConfig {
        Self::load_with_home(git_dir, None, read)
    }

    /// The configuration git reads for the repository whose git directory is `git_dir`,
    /// following what a linked worktree adds: `<git_dir>/commondir` names the shared directory
    /// whose `config` applies, and `<git_dir>/config.worktree` is read after it. Includes are
    /// followed in each. `read` does all file access (see [`GitConfig::load_with`]).
    pub fn load_repository(
        git_dir: &Path,
        home: Option<&Path>,
        read: impl Fn(&Path) -> Option<String>,
    ) -> GitConfig {
        let common = read(&git_dir.join("commondir"))
            .map(|text| text.trim_end_matches(['\n', '\r']).to_string())
            .filter(|text| !text.is_empty())
            .map(|dir| {
                let dir = Path::new(&dir);
                if dir.is_absolute() {
                    dir.to_path_buf()
                } else {
                    git_dir.join(dir)
                }
            });
        let mut config = GitConfig::default();
        let main_dir = common.as_deref().unwrap_or(git_dir);
        collect(&main_dir.join("config"), home, &read, 0, &mut config.files);
        if common.is_some() {
            // A worktree's own `config` is not read by git, but reading a superset only adds
            // caution.
            collect(&git_dir.join("config"), home, &read, 0, &mut config.files);
        }
        collect(
            &git_dir.join("config.worktree"),
            home,
            &read,
            0,
            &mut config.files,
        );
        config
    }

    /// [`GitConfig::load_with`] with a home directory for `~/` include paths.
    pub fn load_with_home(
        git_dir: &Path,
        home: Option<&Path>,
        read: impl Fn(&Path) -> Option<String>,
    ) -> GitConfig {
        let mut config = GitConfig::default();
        collect(&git_dir.join("config"), home, &read, 0, &mut config.files);
        config
    }
}

fn collect(
    path: &Path,
    home: Option<&Path>,
    read: &impl Fn(&Path) -> Option<String>,
    depth: usize,
    files: &mut Vec<String>,
) {
    if depth > MAX_INCLUDE_DEPTH {
        files.push(unresolved(path, "include chain too deep"));
        return;
    }
    let Some(text) = read(path) else { return };
    let includes: Vec<String> = parse(&text)
        .into_iter()
        .filter(|e| (e.section == "include" || e.section == "includeif") && e.key == "path")
        .filter_map(|e| e.value)
        .collect();
    files.push(text);
    let base = path.parent().unwrap_or(Path::new("/"));
    for include in includes {
        match resolve_include(&include, base, home) {
            Some(target) => collect(&target, home, read, depth + 1, files),
            None => files.push(unresolved(
                Path::new(&include),
                "cannot resolve include path",
            )),
        }
    }
}

fn resolve_include(include: &str, base: &Path, home: Option<&Path>) -> Option<PathBuf> {
    if include.is_empty() {
        return None;
    }
    if let Some(rest) = include.strip_prefix("~/") {
        return home.filter(|h| h.is_absolute()).map(|h| h.join(rest));
    }
    if include.starts_with('~') {
        return None;
    }
    Some(base.join(include))
}

fn unresolved(path: &Path, why: &str) -> String {
    let shown = path.display().to_string().replace(['"', '\\', '\n'], "_");
    format!("[{UNRESOLVED_SECTION}]\n\tpath = \"{shown}: {why}\"\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn finds_program_keys_case_insensitively() {
        let cfg = GitConfig {
            files: vec![
                "[Core]\n\tFSMonitor = ./evil\n[diff \"Pdf\"]\n\ttextconv = pdftotext\n".into(),
                "[Alias]\n\tX = !sh -c 'id'\n[core]\n\tpager = false\n".into(),
            ],
        };
        assert_eq!(
            cfg.program_keys(),
            vec!["core.fsmonitor", "diff.Pdf.textconv", "alias.x"]
        );
    }

    fn keys(text: &str) -> Vec<String> {
        GitConfig {
            files: vec![text.into()],
        }
        .program_keys()
    }

    /// Found by an attacker pass: a nested repository with these keys ran code at the person's
    /// next `git commit` or `git fetch`.
    #[test]
    fn signing_transport_and_submodule_commands_run_programs() {
        for (text, key) in [
            (
                "[gpg \"ssh\"]\n\tdefaultKeyCommand = sh -c id\n",
                "gpg.ssh.defaultkeycommand",
            ),
            ("[gpg \"x509\"]\n\tprogram = ./x\n", "gpg.x509.program"),
            (
                "[gpg \"openpgp\"]\n\tprogram = ./x\n",
                "gpg.openpgp.program",
            ),
            ("[gpg \"ssh\"]\n\tprogram = ./x\n", "gpg.ssh.program"),
            ("[gpg]\n\tprogram = ./x\n", "gpg.program"),
            (
                "[protocol \"ext\"]\n\tallow = always\n",
                "protocol.ext.allow",
            ),
            ("[protocol]\n\tallow = user\n", "protocol.allow"),
            (
                "[remote \"o\"]\n\turl = \"ext::sh -c echo% x\"\n",
                "remote.o.url",
            ),
            ("[remote \"o\"]\n\tpushurl = EXT::sh\n", "remote.o.pushurl"),
            (
                "[url \"ext::sh -c x\"]\n\tinsteadOf = https://\n",
                "url.ext::sh -c x.insteadof",
            ),
            (
                "[submodule \"s\"]\n\tupdate = !sh -c id\n",
                "submodule.s.update",
            ),
            (
                "[uploadpack]\n\tpackObjectsHook = ./x\n",
                "uploadpack.packobjectshook",
            ),
            ("[trailer \"t\"]\n\tcommand = ./x\n", "trailer.t.command"),
            ("[tar \"tgz\"]\n\tcommand = ./x\n", "tar.tgz.command"),
            ("[sendemail]\n\ttocmd = ./x\n", "sendemail.tocmd"),
            ("[core]\n\taskPass = ./x\n", "core.askpass"),
            ("[credential]\n\thelper = !./x\n", "credential.helper"),
            ("[core]\n\tsshCommand = ./x\n", "core.sshcommand"),
            ("[diff]\n\texternal = ./x\n", "diff.external"),
            ("[sequence]\n\teditor = ./x\n", "sequence.editor"),
            ("[core]\n\teditor = ./x\n", "core.editor"),
            ("[merge \"m\"]\n\tdriver = ./x\n", "merge.m.driver"),
            ("[diff \"d\"]\n\tcommand = ./x\n", "diff.d.command"),
            ("[diff \"d\"]\n\ttextconv = ./x\n", "diff.d.textconv"),
            ("[filter \"f\"]\n\tprocess = ./x\n", "filter.f.process"),
            ("[core]\n\thooksPath = h\n", "core.hookspath"),
            ("[alias]\n\tx = !id\n", "alias.x"),
            (
                "[hook \"linter\"]\n\tevent = pre-commit\n\tcommand = ./x\n",
                "hook.linter.command",
            ),
        ] {
            assert_eq!(keys(text), [key], "{text}");
        }
        for text in [
            "[protocol \"ext\"]\n\tallow = never\n",
            "[remote \"o\"]\n\turl = https://example.invalid/x\n",
            "[submodule \"s\"]\n\tupdate = rebase\n",
            "[url \"https://mirror/\"]\n\tinsteadOf = https://\n",
        ] {
            assert!(keys(text).is_empty(), "{text}");
        }
    }

    /// Found by an attacker pass: a repository alias without `!` ran a program through
    /// `--upload-pack`, overriding the person's global alias of the same name; `imap.tunnel`
    /// and `sendemail.sendmailCmd` run command lines; `core.worktree` sends the person's
    /// checkout elsewhere.
    #[test]
    fn every_alias_and_the_other_command_keys_count() {
        for (text, key) in [
            (
                "[alias]\n\tst = \"ls-remote --upload-pack='echo x; git-upload-pack' .\"\n",
                "alias.st",
            ),
            ("[alias]\n\tst = status\n", "alias.st"),
            ("[alias]\n\tno = false\n", "alias.no"),
            ("[alias \"x\"]\n\tcommand = log\n", "alias.x.command"),
            ("[imap]\n\ttunnel = \"sh -c id\"\n", "imap.tunnel"),
            (
                "[sendemail]\n\tsendmailCmd = ./x\n",
                "sendemail.sendmailcmd",
            ),
            (
                "[sendemail \"work\"]\n\ttoCmd = ./x\n",
                "sendemail.work.tocmd",
            ),
            ("[sendemail]\n\tsmtpServer = ./x\n", "sendemail.smtpserver"),
            ("[core]\n\tworktree = /home/p\n", "core.worktree"),
            ("[core]\n\tworktree = ~\n", "core.worktree"),
            ("[core]\n\tworktree = ../..\n", "core.worktree"),
            ("[core]\n\tworktree = ../x/../../\n", "core.worktree"),
            // Found by an attacker pass: the project's sibling, the person's home.
            ("[core]\n\tworktree = ../../home\n", "core.worktree"),
            (
                "[lfs \"customtransfer.t\"]\n\tpath = ./x\n",
                "lfs.customtransfer.t.path",
            ),
            (
                "[lfs \"extension.e\"]\n\tsmudge = ./x\n",
                "lfs.extension.e.smudge",
            ),
            ("[svn]\n\tauthorsProg = ./x\n", "svn.authorsprog"),
            ("[help]\n\tbrowser = ./x\n", "help.browser"),
            ("[instaweb]\n\tbrowser = ./x\n", "instaweb.browser"),
            ("[gui]\n\teditor = ./x\n", "gui.editor"),
            ("[web]\n\tbrowser = ./x\n", "web.browser"),
            ("[browser \"b\"]\n\tcmd = ./x\n", "browser.b.cmd"),
            ("[pager]\n\tlog = ./x\n", "pager.log"),
            ("[core]\n\tpager = ./x\n", "core.pager"),
            (
                "[remote \"o\"]\n\tuploadpack = ./x\n",
                "remote.o.uploadpack",
            ),
            (
                "[remote \"o\"]\n\treceivepack = ./x\n",
                "remote.o.receivepack",
            ),
            (
                "[credential \"https://h\"]\n\thelper = ./x\n",
                "credential.https://h.helper",
            ),
            ("[filter \"f\"]\n\tsmudge = ./x\n", "filter.f.smudge"),
        ] {
            assert_eq!(keys(text), [key], "{text}");
        }
        // What git writes for a submodule's git directory, and the default.
        for text in [
            "[core]\n\tworktree = ../../../sub\n",
            "[core]\n\tworktree = ..\n",
            "[core]\n\tworktree = .\n",
            "[sendemail]\n\tfrom = a@b\n",
            "[imap]\n\thost = imaps://h\n",
        ] {
            assert!(keys(text).is_empty(), "{text}");
        }
    }

    /// A repository a command made is judged by an allow-list: what `git init`, `git clone`,
    /// `git submodule` and `git worktree` write, and nothing else.
    #[test]
    fn made_repositories_hold_only_what_git_writes() {
        let unexplained = |text: &str| {
            GitConfig {
                files: vec![text.into()],
            }
            .keys_git_would_not_write()
        };
        let init = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
                    \tlogallrefupdates = true\n";
        assert!(unexplained(init).is_empty());
        let clone = "[core]\n\trepositoryformatversion = 1\n\tworktree = ../../../sub\n\
                     [remote \"origin\"]\n\turl = https://example.invalid/x.git\n\
                     \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\
                     \tremote = origin\n\tmerge = refs/heads/main\n[extensions]\n\
                     \tobjectformat = sha256\n\tworktreeConfig = true\n[submodule \"s\"]\n\
                     \turl = ../s.git\n\tactive = true\n[user]\n\temail = a@b\n";
        assert!(unexplained(clone).is_empty(), "{:?}", unexplained(clone));
        for (text, key) in [
            ("[core]\n\tfsmonitor = ./x\n", "core.fsmonitor"),
            ("[core]\n\tworktree = /elsewhere\n", "core.worktree"),
            ("[remote \"o\"]\n\turl = foo::bar\n", "remote.o.url"),
            ("[gpg]\n\tformat = ssh\n", "gpg.format"),
            ("[commit]\n\tgpgsign = true\n", "commit.gpgsign"),
            (
                "[protocol \"ext\"]\n\tallow = always\n",
                "protocol.ext.allow",
            ),
            ("[submodule \"s\"]\n\tupdate = !id\n", "submodule.s.update"),
            ("[some]\n\tnewkey = x\n", "some.newkey"),
        ] {
            assert_eq!(unexplained(text), [key], "{text}");
        }
    }

    /// An existing repository's configuration is deny by default too (an attacker pass: `git
    /// config core.worktree ../../home`, `http.proxy`, `url.<x>.insteadOf` and
    /// `remote.origin.pushurl` were kept, none of them a program): git's own changes pass,
    /// every other added, changed or removed key is named.
    #[test]
    fn changes_to_an_existing_configuration_are_deny_by_default() {
        let persons = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tpager = less\n\
                       [remote \"origin\"]\n\turl = https://example.invalid/x.git\n\
                       \tfetch = +refs/heads/*:refs/remotes/origin/*\n[http]\n\tsslVerify = true\n";
        let changes = |now: &str| GitConfig::changes_git_would_not_make(persons, now);
        assert!(changes(persons).is_empty());
        for ordinary in [
            // `git branch -u origin/main`, `git config user.name`, `git remote add fork`.
            format!("{persons}[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n"),
            format!("{persons}[user]\n\tname = x\n"),
            format!(
                "{persons}[remote \"fork\"]\n\turl = https://example.invalid/f.git\n\
                 \tfetch = +refs/heads/*:refs/remotes/fork/*\n"
            ),
            // `git remote rename origin upstream`, with a branch following it.
            persons
                .replace("\"origin\"", "\"upstream\"")
                .replace("remotes/origin", "remotes/upstream")
                + "[branch \"main\"]\n\tremote = upstream\n",
            // `gh pr checkout` marking the base remote.
            persons.replace(
                "\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
                "\tfetch = +refs/heads/*:refs/remotes/origin/*\n\tgh-resolved = base\n",
            ),
            // `git sparse-checkout init`.
            persons.replace("repositoryformatversion = 0", "repositoryformatversion = 1")
                + "[extensions]\n\tworktreeConfig = true\n",
            // `git remote remove origin`.
            persons.replace(
                "[remote \"origin\"]\n\turl = https://example.invalid/x.git\n\
                 \tfetch = +refs/heads/*:refs/remotes/origin/*\n",
                "",
            ),
        ] {
            assert!(
                changes(&ordinary).is_empty(),
                "{ordinary}: {:?}",
                changes(&ordinary)
            );
        }
        for (now, key) in [
            (
                format!("{persons}[core]\n\tworktree = ../../home\n"),
                "core.worktree",
            ),
            (persons.replace("bare = false", "bare = true"), "core.bare"),
            (
                format!("{persons}[http]\n\tproxy = http://127.0.0.1:9\n"),
                "http.proxy",
            ),
            (
                persons.replace("sslVerify = true", "sslVerify = false"),
                "http.sslverify",
            ),
            (
                format!("{persons}[remote \"origin\"]\n\tpushurl = https://evil.invalid/x\n"),
                "remote.origin.pushurl",
            ),
            (
                persons.replace("example.invalid/x.git", "evil.invalid/x.git"),
                "remote.origin.url",
            ),
            (
                format!(
                    "{persons}[url \"https://evil.invalid/\"]\n\tinsteadOf = https://example.invalid/\n"
                ),
                "url.https://evil.invalid/.insteadof",
            ),
            (
                format!("{persons}[credential]\n\tusername = x\n"),
                "credential.username",
            ),
            (
                format!("{persons}[core]\n\tsshCommand = ssh -v\n"),
                "core.sshcommand",
            ),
            (format!("{persons}[gpg]\n\tformat = ssh\n"), "gpg.format"),
            (
                format!("{persons}[include]\n\tpath = ../x.cfg\n"),
                "include.path",
            ),
            (
                format!("{persons}[core]\n\tfsmonitor = ./x\n"),
                "core.fsmonitor",
            ),
            // A branch made to follow a remote the command added.
            (
                format!(
                    "{persons}[remote \"evil\"]\n\turl = https://evil.invalid/x\n\
                     [branch \"main\"]\n\tremote = evil\n"
                ),
                "branch.main.remote",
            ),
        ] {
            assert_eq!(changes(&now), [key], "{now}");
        }
    }

    #[test]
    fn a_worktree_is_outside_where_the_git_directory_is_known() {
        let root = Path::new("/p");
        let outside = |git_dir: &str, value: &str| {
            GitConfig::worktree_outside(Path::new(git_dir), value, root)
        };
        assert!(!outside("/p/.git/modules/sub", "../../../sub"));
        assert!(!outside("/p/.git", ".."));
        assert!(outside("/p/.git", "../../home"));
        assert!(outside("/p/sub/.git", "../../../x"));
        assert!(outside("/p/.git", "/elsewhere"));
        assert!(!outside("/p/.git", "/p/sub"));
        assert!(outside("/p/.git", "~/x"));
    }

    /// A comment ends at its line even when it ends in a backslash (git's reading); a value
    /// continues.
    #[test]
    fn a_backslash_ending_a_comment_does_not_hide_the_next_line() {
        for text in [
            "[core]\n\t# tuning \\\n\tfsmonitor = \"touch x\"\n",
            "[core]\n\t; tuning \\\n\tfsmonitor = \"touch x\"\n",
            "[core]\n\tbare = false # note \\\n\tfsmonitor = \"touch x\"\n",
        ] {
            let keys = GitConfig {
                files: vec![text.into()],
            }
            .program_keys();
            assert_eq!(keys, ["core.fsmonitor"], "{text:?}");
        }
        let continued = "[core]\n\tpager = less \\\n -R\n";
        assert_eq!(
            parse(continued)[0].value.as_deref(),
            Some("less  -R"),
            "{continued:?}"
        );
    }

    #[test]
    fn harmless_config_has_no_program_keys() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[remote \"origin\"]\n\
                    \turl = https://example.invalid/x.git\n[branch \"main\"]\n\tremote = origin\n";
        assert!(
            GitConfig {
                files: vec![text.into()]
            }
            .program_keys()
            .is_empty()
        );
    }

    #[test]
    fn load_with_follows_includes_relative_to_the_including_file() {
        let files: HashMap<PathBuf, String> = [
            (
                "/r/.git/config",
                "[include]\n\tpath = extra.cfg\n[includeIf \"gitdir:/r/\"]\n\tpath = /etc/x.cfg\n",
            ),
            ("/r/.git/extra.cfg", "[core]\n\tpager = less\n"),
            (
                "/etc/x.cfg",
                "[filter \"lfs\"]\n\tsmudge = git-lfs smudge\n",
            ),
        ]
        .into_iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
        let cfg = GitConfig::load_with(Path::new("/r/.git"), |p| files.get(p).cloned());
        assert_eq!(cfg.files.len(), 3);
        assert_eq!(cfg.program_keys(), vec!["core.pager", "filter.lfs.smudge"]);
    }

    #[test]
    fn include_cycles_are_bounded_and_fail_closed() {
        let cfg = GitConfig::load_with(Path::new("/r/.git"), |_| {
            Some("[include]\n\tpath = config\n".to_string())
        });
        assert!(cfg.files.len() <= MAX_INCLUDE_DEPTH + 2);
        assert!(!cfg.program_keys().is_empty());
    }

    #[test]
    fn bom_and_crlf_configs_are_read() {
        let cfg = GitConfig {
            files: vec!["\u{feff}[core]\r\n\tfsmonitor = ./x\r\n".into()],
        };
        assert_eq!(cfg.program_keys(), vec!["core.fsmonitor"]);
    }

    #[test]
    fn worktrees_read_the_common_config_and_config_worktree() {
        let files: HashMap<PathBuf, String> = [
            ("/m/.git/worktrees/w/commondir", "../..\n"),
            (
                "/m/.git/worktrees/w/../../config",
                "[diff \"x\"]\n\ttextconv = ./t\n",
            ),
            (
                "/m/.git/worktrees/w/config.worktree",
                "[core]\n\tpager = ./p\n",
            ),
        ]
        .into_iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
        let cfg = GitConfig::load_repository(Path::new("/m/.git/worktrees/w"), None, |p| {
            files.get(p).cloned()
        });
        assert_eq!(cfg.program_keys(), vec!["diff.x.textconv", "core.pager"]);
    }

    #[test]
    fn tilde_include_without_home_fails_closed() {
        let cfg = GitConfig::load_with(Path::new("/r/.git"), |p| {
            (p == Path::new("/r/.git/config")).then(|| "[include]\n\tpath = ~/x\n".to_string())
        });
        assert!(!cfg.program_keys().is_empty());
        let cfg = GitConfig::load_with_home(Path::new("/r/.git"), Some(Path::new("/h")), |p| {
            (p == Path::new("/r/.git/config")).then(|| "[include]\n\tpath = ~/x\n".to_string())
        });
        assert!(cfg.program_keys().is_empty());
    }
}
