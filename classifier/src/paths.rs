//! Where a write or delete lands: lexical resolution of path words against the working directory
//! the script is in at that point (tracking `cd`), `~`/`$HOME` and the scratch directories.
//!
//! Resolution is purely lexical: symbolic links are not followed (the crate does no I/O).

use std::path::{Component, Path, PathBuf};

use crate::Context;
use crate::word::Word;

/// How many distinct working directories are tracked before giving up and calling it unknown.
const MAX_CWDS: usize = 8;

/// The working directories the script may be in at some point. A `cd` may fail, so after
/// `cd X; …` both X and the previous directory are possible.
///
/// The walk saves and restores this around every statement, subshell and trial reading, so the
/// list is shared copy-on-write (saving it costs no copy of the paths), and what the rules ask of
/// every argument about the directories' names (see [`Cwds::mention`]) is worked out once when
/// the list changes rather than once per argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cwds {
    known: std::rc::Rc<Vec<PathBuf>>,
    /// Some possibility is not statically known (`cd "$DIR"`, `cd -`, `popd`).
    unknown: bool,
    /// Some possibility was reached through a `..` component, `cd -` or a path the classifier
    /// worked out from a variable or a substitution. The lexical path is still the best guess
    /// for the rules on paths, but only a plain path is trusted to say where git runs: bash
    /// retries a failed `cd a/../b` verbatim, through `a` even when it is a symbolic link, and
    /// `git -C` never resolves `..` lexically.
    indirect: bool,
    /// Whether some directory of `known` has `proc` in its name (see [`Cwds::mention`]); always
    /// what [`mentions`] says of `known`, as every change to `known` goes through
    /// [`Cwds::with_known`].
    proc: bool,
    /// The same for `dev`.
    dev: bool,
}

/// Substrings of the directories' names that the rules on devices and process files test for
/// every argument ([`Cwds::mention`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mention {
    Proc,
    Dev,
}

/// Whether some path of `known` contains `needle` in its text (bytes: the same answer as in its
/// lossy UTF-8 form, since the needles are ASCII and the lossy form keeps ASCII bytes in place).
fn mentions(known: &[PathBuf], needle: &[u8]) -> bool {
    known.iter().any(|d| {
        d.as_os_str()
            .as_encoded_bytes()
            .windows(needle.len())
            .any(|w| w == needle)
    })
}

impl Cwds {
    /// The one place a list of directories becomes a `Cwds`: the name checks are worked out
    /// here, so they cannot disagree with the list.
    fn with_known(known: Vec<PathBuf>, unknown: bool, indirect: bool) -> Cwds {
        Cwds {
            proc: mentions(&known, b"proc"),
            dev: mentions(&known, b"dev"),
            known: std::rc::Rc::new(known),
            unknown,
            indirect,
        }
    }

    pub fn start(ctx: &Context) -> Cwds {
        if ctx.cwd.is_absolute() {
            Cwds::with_known(vec![normalize(&ctx.cwd)], false, false)
        } else {
            Cwds::unknown()
        }
    }

    pub fn unknown() -> Cwds {
        Cwds::with_known(Vec::new(), true, false)
    }

    /// Every possible directory, when all are statically known, and whether some was reached
    /// by a path that was not plain (see `indirect`).
    pub fn all_known(&self) -> Option<(&[PathBuf], bool)> {
        (!self.unknown && !self.known.is_empty()).then_some((self.known.as_slice(), self.indirect))
    }

    /// The directories known to be possible (others may be too, see [`Cwds::is_unknown`]).
    pub fn known(&self) -> &[PathBuf] {
        &self.known
    }

    /// Whether some known directory has `proc` (or `dev`) in its name: the same as testing the
    /// text of each of [`Cwds::known`].
    pub fn mention(&self, what: Mention) -> bool {
        match what {
            Mention::Proc => self.proc,
            Mention::Dev => self.dev,
        }
    }

    /// Whether some possible directory is not statically known.
    pub fn is_unknown(&self) -> bool {
        self.unknown
    }

    /// Notes that the directories were reached by going back (`cd -`).
    pub fn mark_indirect(&mut self) {
        self.indirect = true;
    }

    /// The working directory when exactly one is possible.
    pub fn single(&self) -> Option<&PathBuf> {
        match self.known.as_slice() {
            [only] if !self.unknown => Some(only),
            _ => None,
        }
    }

    /// Adds every possibility of `other`.
    pub fn union(&mut self, other: &Cwds) {
        self.unknown |= other.unknown;
        self.indirect |= other.indirect;
        // Nothing to add, as when the walk restores what it saved before a statement that did
        // not `cd` (the same list). The list never holds more than `MAX_CWDS`, so there is
        // nothing to clear either.
        if std::rc::Rc::ptr_eq(&self.known, &other.known)
            || other.known.iter().all(|p| self.known.contains(p))
        {
            return;
        }
        let mut known = self.known.as_ref().clone();
        for p in other.known.iter() {
            if !known.contains(p) {
                known.push(p.clone());
            }
        }
        if known.len() > MAX_CWDS {
            known.clear();
            self.unknown = true;
        }
        *self = Cwds::with_known(known, self.unknown, self.indirect);
    }

    /// The directories after a successful `cd` to `target` (`None`: to the home directory).
    pub fn after_cd(&self, target: Option<&Word>, ctx: &Context) -> Cwds {
        let Some(word) = target else {
            return match home(ctx) {
                Some(h) => Cwds::with_known(vec![h], false, self.indirect),
                None => Cwds::unknown(),
            };
        };
        if word.dynamic || word.text == "-" || has_glob(&word.text) {
            return Cwds::unknown();
        }
        let mut known = Vec::new();
        let mut unknown = self.unknown;
        let indirect = self.indirect || word.expanded || word.text.split('/').any(|c| c == "..");
        for base in self.known.iter() {
            match absolute(&word.text, base, ctx) {
                Some(p) if !known.contains(&p) => known.push(p),
                Some(_) => {}
                None => unknown = true,
            }
        }
        Cwds::with_known(known, unknown, indirect)
    }
}

/// Where a target path lands, from most to least alarming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// `/` itself or everything directly under it.
    Root,
    /// The home directory or one of its ancestors (other than `/`).
    HomeOrAbove(PathBuf),
    /// Outside the working directory and the scratch directories.
    Outside(PathBuf),
    /// Inside a protected tree of [`Context::protected`] (the repository's `.git/`, gg's
    /// `.gg/`): the index of the tree.
    Protected(usize),
    /// The project itself: the caller's working directory, or every entry in it (`*`).
    /// Writing there is ordinary; deleting it deletes the project.
    Project(PathBuf),
    /// Cannot be known statically (computed path, or working directory unknown).
    Unknown,
    /// Inside the working directory or a scratch directory.
    Inside,
}

impl Place {
    fn rank(&self) -> u8 {
        match self {
            Place::Root => 6,
            Place::HomeOrAbove(_) => 5,
            Place::Outside(_) => 4,
            Place::Protected(_) => 3,
            Place::Project(_) => 2,
            Place::Unknown => 1,
            Place::Inside => 0,
        }
    }

    /// The more alarming of two places.
    pub fn worst(self, other: Place) -> Place {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }
}

/// Where `word`, used as a file operand, lands in the worst of the possible working directories.
pub(crate) fn place_of(word: &Word, cwds: &Cwds, ctx: &Context) -> Place {
    // Braces first, as bash does: each word they make lands somewhere (`./{.,.}./.bashrc` is
    // `../.bashrc`); too many to list is judged as outside.
    if !word.dynamic && word.text.contains('{') {
        match crate::pattern::brace_alternatives(&word.text) {
            Some(words) if words.len() > 1 || words.first() != Some(&word.text) => {
                return words
                    .iter()
                    .map(|w| place_of(&Word::literal(w, word.span), cwds, ctx))
                    .fold(Place::Inside, Place::worst);
            }
            Some(_) => {}
            None => return Place::Outside(PathBuf::from(&word.text)),
        }
    }
    if word.dynamic && climbs_from_cwd(&word.text) {
        // The static reading of `$(dirname "$PWD")`, `$(cd .. && pwd)` and the like failed
        // (the working directory is not known where it runs, the substitution is not one the
        // walker evaluates): it is still a directory above the one the shell is in, which is
        // the project's parent or further up, never inside the project.
        return match cwds.known.as_slice() {
            known if !known.is_empty() && !cwds.unknown => known
                .iter()
                .map(|dir| match dir.parent() {
                    Some(parent) => assess(parent, ctx).worst(Place::Outside(parent.into())),
                    None => Place::Root,
                })
                .fold(Place::Inside, Place::worst),
            _ => Place::Outside(PathBuf::from("..")),
        };
    }
    let (text, open_ended) = if word.dynamic {
        (word.prefix.as_str(), true)
    } else {
        (word.text.as_str(), false)
    };
    if text.is_empty() {
        return Place::Unknown;
    }
    let (dir, climbs, cut) = fixed_part(text, open_ended);
    let mut worst = Place::Inside;
    let relative = !(dir.starts_with('/') || dir.starts_with('~'));
    if relative && (cwds.unknown || cwds.known.is_empty()) {
        worst = Place::Unknown;
    }
    // An absolute path does not depend on the working directory: resolve it once.
    let bases: Vec<&Path> = if relative {
        cwds.known.iter().map(PathBuf::as_path).collect()
    } else {
        vec![Path::new("/")]
    };
    for base in bases {
        let place = match absolute(&dir, base, ctx) {
            None => Place::Outside(PathBuf::from(&dir)),
            Some(mut p) => {
                if climbs {
                    p.pop();
                }
                let fixed = match cut.as_deref() {
                    // A pattern names whatever matches it: `sed -i … AGENTS.m?` writes
                    // AGENTS.md, `ln .gi? g` links the git directory.
                    Some(_) if !open_ended => {
                        pattern_protected(&p, text, ctx).unwrap_or_else(|| assess(&p, ctx))
                    }
                    _ => assess(&p, ctx),
                };
                // A computed tail can contain `/..` and go anywhere, so an apparently safe
                // prefix proves nothing; an alarming prefix is alarming already.
                match fixed {
                    Place::Inside if open_ended => Place::Unknown,
                    // `./$X` is something in the project, not the project; `*` is all of it,
                    // `*.o` only some of it.
                    Place::Project(_) if open_ended => Place::Unknown,
                    Place::Project(_) if cut.as_deref().is_some_and(|c| c != "*") => Place::Inside,
                    other => other,
                }
            }
        };
        worst = worst.worst(place);
    }
    worst
}

/// The protected tree a glob pattern may name (`dir`, where the pattern's fixed part lands;
/// `text`, the word): the pattern's components from its first globbed one, below `dir`, may
/// be the tree or lie below it, or, for a tree protected at any depth, one of them may be its
/// name.
fn pattern_protected(dir: &Path, text: &str, ctx: &Context) -> Option<Place> {
    let rest: Vec<&str> = text
        .split('/')
        .skip_while(|segment| !has_glob(segment))
        .filter(|segment| !segment.is_empty())
        .collect();
    let base = crate::pattern::components(dir);
    let mut pattern: Vec<&str> = base.iter().map(|c| c.as_ref()).collect();
    pattern.extend(&rest);
    ctx.protected.iter().enumerate().find_map(|(index, tree)| {
        let name = tree.path.file_name()?.to_str()?;
        if name.starts_with('*') {
            // A class of names (`*.code-workspace`): judged by its members' ending elsewhere.
            return None;
        }
        let target = crate::pattern::components(&tree.path);
        let target: Vec<&str> = target.iter().map(|c| c.as_ref()).collect();
        // Below the top, a name protected at any depth is taken as named by a pattern that
        // says something of it (`*.md`, `AGENTS.m?`, `.gi?`); a bare `*` (`rm -rf build/*`)
        // names every file there, and asking for each would ask for every clean-up.
        let named = crate::pattern::may_be_at_or_below(&pattern, &target, false)
            || tree.anywhere
                && rest.iter().any(|segment| {
                    !matches!(*segment, "*" | "**")
                        && crate::pattern::component_may_match(segment, name, false)
                });
        named.then_some(Place::Protected(index))
    })
}

/// Whether the source text of a computed word makes a path from the shell's working directory
/// (`pwd`, `$PWD`, `cd`, `realpath`, `readlink`, `git rev-parse`, `~+`, `$OLDPWD`, `$DIRSTACK`)
/// and goes up from it (`..`, `dirname`, `cd -`, `~-`, `$OLDPWD`, `${PWD%/*}`): the target is
/// then above the project whatever the run-time values are.
fn climbs_from_cwd(text: &str) -> bool {
    let tokens: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .filter(|t| !t.is_empty())
        .collect();
    let has = |names: &[&str]| tokens.iter().any(|t| names.contains(t));
    let from_cwd = has(&[
        "pwd",
        "PWD",
        "getcwd",
        "getcwdb",
        "cwd",
        "cd",
        "pushd",
        "popd",
        "realpath",
        "readlink",
        "rev-parse",
        "OLDPWD",
        "DIRSTACK",
    ]) || text.contains("~+")
        || text.contains("~-");
    let up = text.contains("..")
        || has(&["dirname", "OLDPWD", "DIRSTACK", "popd"])
        || text.contains("%/")
        || text.contains("~-")
        || text.contains("cd -");
    from_cwd && up
}

/// The home's configuration that `path` (absolute, normalised) lies in, as `~/.config`: the
/// same deny-by-default rule the sandbox's sweep and the file tools apply
/// (`sandbox::protected::planted`): every dot-file and dot-directory of home and `~/bin`
/// (shells, `~/.config/autostart`, systemd user units, editors' and git's configuration), which
/// programs read at login or start and many run. No list of such files is complete.
pub(crate) fn home_config(path: &Path, ctx: &Context) -> Option<String> {
    let below = path.strip_prefix(home(ctx)?).ok()?;
    let first = below.components().next()?.as_os_str().to_str()?;
    (first.starts_with('.') || first == "bin").then(|| format!("~/{first}"))
}

/// Every absolute path a literal `word` may name (one per possible working directory).
pub(crate) fn resolve_all(word: &Word, cwds: &Cwds, ctx: &Context) -> Vec<PathBuf> {
    if word.dynamic || word.text.is_empty() {
        return Vec::new();
    }
    if word.text.contains('{')
        && let Some(words) = crate::pattern::brace_alternatives(&word.text)
        && (words.len() > 1 || words.first() != Some(&word.text))
    {
        return words
            .iter()
            .flat_map(|w| resolve_all(&Word::literal(w, word.span), cwds, ctx))
            .collect();
    }
    if word.text.starts_with('/') || word.text.starts_with('~') {
        return absolute(&word.text, Path::new("/"), ctx)
            .into_iter()
            .collect();
    }
    cwds.known
        .iter()
        .filter_map(|base| absolute(&word.text, base, ctx))
        .collect()
}

/// The part of a path that is fixed: everything before the first segment holding a glob or a
/// computed value. The second result says whether that segment may match `..` (`.*` in older
/// bash, or a computed segment), in which case the parent is affected too; the third is the
/// segment where the fixed part ends, if it does.
fn fixed_part(text: &str, open_ended: bool) -> (String, bool, Option<String>) {
    let segments: Vec<&str> = text.split('/').collect();
    let last = segments.len() - 1;
    for (i, seg) in segments.iter().enumerate() {
        let globbed = has_glob(seg);
        let tail = open_ended && i == last;
        if globbed || tail {
            let dir = segments[..i].join("/");
            let dir = if dir.is_empty() && text.starts_with('/') {
                "/".to_string()
            } else {
                dir
            };
            let dir = if dir.is_empty() { ".".to_string() } else { dir };
            // A computed tail could be anything, `..` included; judging it by the fixed directory
            // (unknown when that is inside) is the useful reading. A glob like `.*` matched
            // `..` in older bash.
            let may_climb = if tail {
                !seg.is_empty() && "..".starts_with(*seg)
            } else {
                seg.starts_with('.')
            };
            let rest_is_empty = segments[i + 1..].iter().all(|s| s.is_empty());
            let cut = if rest_is_empty {
                seg.to_string()
            } else {
                format!("{seg}/")
            };
            return (dir, may_climb, Some(cut));
        }
    }
    (text.to_string(), false, None)
}

pub(crate) fn has_glob(text: &str) -> bool {
    text.contains(['*', '?', '[', '{'])
}

fn home(ctx: &Context) -> Option<PathBuf> {
    ctx.home.is_absolute().then(|| normalize(&ctx.home))
}

/// Absolute, lexically normalised form of `text` relative to `base`. `None` for `~user` forms
/// and for `~` when the home directory is unknown.
fn absolute(text: &str, base: &Path, ctx: &Context) -> Option<PathBuf> {
    let joined = if let Some(rest) = text.strip_prefix('~') {
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        home(ctx)?.join(rest.trim_start_matches('/'))
    } else if text.starts_with('/') {
        PathBuf::from(text)
    } else {
        base.join(text)
    };
    Some(normalize_through_links(&joined, ctx))
}

/// Links every Linux system has, followed where a `..` comes after them (the kernel resolves
/// `/proc/net/..` as `/proc/self`, and `/dev/fd/../..` as `/proc`); without a `..` the path
/// is judged as written (`> /dev/stderr` stays a device).
const SYSTEM_LINKS: &[(&str, &str)] = &[
    ("/proc/net", "/proc/self/net"),
    ("/proc/mounts", "/proc/self/mounts"),
    ("/proc/thread-self", "/proc/self/task/self"),
    ("/dev/fd", "/proc/self/fd"),
    ("/dev/stdin", "/proc/self/fd/0"),
    ("/dev/stdout", "/proc/self/fd/1"),
    ("/dev/stderr", "/proc/self/fd/2"),
];

/// `path` normalised as the kernel walks it: a `..` after a link (the project's, see
/// [`Context::links`], or one of [`SYSTEM_LINKS`]) climbs from the link's target, not from the
/// link (`docs/../.aws` with `docs -> ~/.cache` is `~/.aws`); then the project's links are
/// followed.
pub(crate) fn normalize_through_links(path: &Path, ctx: &Context) -> PathBuf {
    // A normal path has no `..` for a link to change (see `is_normal`): it is its own
    // normal form, and only the links below are followed.
    if is_normal(path) {
        return follow_links(path.to_path_buf(), ctx);
    }
    normalize_through_links_by_components(path, ctx)
}

/// [`normalize_through_links`] name by name, for any path.
fn normalize_through_links_by_components(path: &Path, ctx: &Context) -> PathBuf {
    let mut out = PathBuf::from("/");
    let mut hops = 0;
    for comp in path.components() {
        match comp {
            Component::Normal(c) => out.push(c),
            Component::ParentDir => {
                before_parent(&mut out, ctx, &mut hops);
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    follow_links(out, ctx)
}

/// Before a `..` is applied to `path`: a link at or above it is replaced by its target, so the
/// `..` climbs from where the link leads. `hops` bounds the replacements, as the kernel does.
pub(crate) fn before_parent(path: &mut PathBuf, ctx: &Context, hops: &mut usize) {
    while *hops < 16 {
        let found = ctx
            .links
            .iter()
            .map(|(l, t)| (l.as_path(), t.as_path()))
            .chain(
                SYSTEM_LINKS
                    .iter()
                    .map(|(l, t)| (Path::new(*l), Path::new(*t))),
            )
            .find(|(link, _)| path.starts_with(link));
        let Some((link, target)) = found else {
            return;
        };
        let rest = path
            .strip_prefix(link)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        *path = normalize(&target.join(rest));
        *hops += 1;
    }
}

/// `path` (absolute, normalised) with the symbolic links the caller found
/// ([`Context::links`]) followed: a path at or below a link continues at its target. A few
/// times at most, as the kernel does, so a cycle ends.
pub(crate) fn follow_links(mut path: PathBuf, ctx: &Context) -> PathBuf {
    for _ in 0..8 {
        let Some((link, target)) = ctx.links.iter().find(|(link, _)| path.starts_with(link)) else {
            break;
        };
        let rest = path
            .strip_prefix(link)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        path = normalize(&target.join(rest));
    }
    path
}

/// Removes `.` and resolves `..` lexically; never climbs above `/`.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    // A normal path is its own normal form (see `is_normal`): one copy instead of a push per
    // name. The caller's directories (home, the working directory) are normalised on every
    // check that compares with them.
    if is_normal(path) {
        return path.to_path_buf();
    }
    normalize_by_components(path)
}

/// [`normalize`] name by name, for any path.
fn normalize_by_components(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for comp in path.components() {
        match comp {
            Component::Normal(c) => out.push(c),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// Whether `path` is already in the form [`normalize`] gives: absolute, one `/` between names,
/// no `.` or `..` name, no `/` at the end (but for `/` itself). [`normalize`] returns such a path
/// byte for byte unchanged.
pub(crate) fn is_normal(path: &Path) -> bool {
    let bytes = path.as_os_str().as_encoded_bytes();
    if bytes == b"/" {
        return true;
    }
    let Some(names) = bytes.strip_prefix(b"/") else {
        return false;
    };
    // One pass over the bytes (this runs for each of the caller's places, of which there may be
    // thousands): the length of the name so far and how many of its bytes are dots. A name
    // that is empty, `.` or `..` is not normal.
    let bad = |len: usize, dots: usize| len == 0 || (dots == len && len <= 2);
    let (mut len, mut dots) = (0usize, 0usize);
    for &b in names {
        if b == b'/' {
            if bad(len, dots) {
                return false;
            }
            (len, dots) = (0, 0);
        } else {
            len += 1;
            dots += usize::from(b == b'.');
        }
    }
    !bad(len, dots)
}

/// [`normalize`]'s result, without a copy when `path` is already normal (the caller's
/// directories, the trees it protects and the places it found are, so the checks that run for
/// every path argument need not copy them each time).
pub(crate) fn normalized(path: &Path) -> std::borrow::Cow<'_, Path> {
    if is_normal(path) {
        std::borrow::Cow::Borrowed(path)
    } else {
        std::borrow::Cow::Owned(normalize(path))
    }
}

/// `path.starts_with(prefix)` for two paths the caller has checked are [`is_normal`]: then
/// their names are what lies between the `/`s, and comparing the text is comparing the names,
/// without parsing either. For other paths the answer means nothing.
pub(crate) fn starts_with_as_text(path: &Path, prefix: &Path) -> bool {
    let (path, prefix) = (
        path.as_os_str().as_encoded_bytes(),
        prefix.as_os_str().as_encoded_bytes(),
    );
    prefix == b"/"
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.first() == Some(&b'/'))
}

/// What the checks that compare one path with many ask of it, worked out once: whether it
/// [`is_normal`], and its names (the text between its `/`s, `.` and `..` included when it
/// is not normal; what [`may_lead_to`] takes).
pub(crate) struct Names<'a> {
    pub normal: bool,
    pub names: Vec<&'a [u8]>,
    /// Bit `n % 64` set for each name `n` bytes long: a name of another length is not among
    /// them, which [`Names::contains`] sees without comparing it with each.
    lengths: u64,
    /// Bit `b` set for each name's last byte `b`, in ASCII lower case (see
    /// [`Names::may_end_with`]).
    last_bytes: [u64; 4],
}

impl<'a> Names<'a> {
    pub fn of(path: &'a Path) -> Names<'a> {
        let bytes = path.as_os_str().as_encoded_bytes();
        let names: Vec<&[u8]> = bytes
            .split(|&b| b == b'/')
            .filter(|n| !n.is_empty())
            .collect();
        let mut last_bytes = [0u64; 4];
        for end in names.iter().filter_map(|n| n.last()) {
            let end = end.to_ascii_lowercase();
            last_bytes[usize::from(end / 64)] |= 1 << (end % 64);
        }
        Names {
            normal: is_normal(path),
            lengths: names.iter().fold(0, |bits, n| bits | 1 << (n.len() % 64)),
            last_bytes,
            names,
        }
    }

    /// Whether some name may end with `end`, in any ASCII case: `false` when none does. A
    /// name equal to another, or ending like it without regard to case, ends with the same
    /// byte; asked of each protected tree's last byte before its last name is looked for.
    pub fn may_end_with(&self, end: u8) -> bool {
        let end = end.to_ascii_lowercase();
        self.last_bytes[usize::from(end / 64)] & 1 << (end % 64) != 0
    }

    /// Whether `name` is one of the names: asked of some sixty protected trees' last names
    /// for every written path, most of them of a length no name of the path has.
    pub fn contains(&self, name: &[u8]) -> bool {
        self.lengths & 1 << (name.len() % 64) != 0 && self.names.contains(&name)
    }
}

/// Whether a path whose names are `names` (see [`Names`]) may start with `place` normalised
/// against any directory, judged by `place`'s last name alone: when `place` ends in a plain
/// name (not `.`, `..` or a `/`), that name is the last of its normal form, so a path starting
/// with that form has it among its names (a path's every name as `Path::components` reads it
/// is among the text between its `/`s). `false` only when that rules it out; `true`
/// when it does not, or when `place` does not end in a plain name.
///
/// Why: the caller's list of nested repositories may hold a thousand places and more, all
/// checked for every git command run in another directory. Most places end in a name the
/// directory does not have at all, and this test finds that from the place's last few bytes,
/// without checking the whole place for normality or normalising it.
pub(crate) fn may_lead_to(place: &Path, names: &[&[u8]]) -> bool {
    let bytes = place.as_os_str().as_encoded_bytes();
    let last = match bytes.iter().rposition(|&b| b == b'/') {
        Some(cut) => &bytes[cut + 1..],
        None => bytes,
    };
    if matches!(last, b"" | b"." | b"..") {
        return true;
    }
    names.contains(&last)
}

/// What lies below `parent` in `path` (two normal paths, as bytes), as `path.strip_prefix(parent)`
/// gives it: `None` when `path` is not at or below `parent`, the empty text when it is
/// `parent`, else the names after it (no `/` at either end).
pub(crate) fn below_as_text<'a>(path: &'a [u8], parent: &[u8]) -> Option<&'a [u8]> {
    if parent == b"/" {
        return path.strip_prefix(b"/");
    }
    match path.strip_prefix(parent)? {
        [] => Some(&[]),
        [b'/', rest @ ..] => Some(rest),
        _ => None,
    }
}

/// Where `path` lands. Only the caller's working directory is safe, not one the script `cd`s to.
fn assess(path: &Path, ctx: &Context) -> Place {
    if path == Path::new("/") {
        return Place::Root;
    }
    if let Some(h) = home(ctx)
        && h.starts_with(path)
    {
        return Place::HomeOrAbove(path.to_path_buf());
    }
    // Worked out once for all the trees (see `Protected::covers_known`).
    let names = Names::of(path);
    for (index, tree) in ctx.protected.iter().enumerate() {
        // Replacing or deleting an ancestor of a protected tree replaces the tree too, but the
        // ancestors are the project and home, which have rules of their own.
        if tree.covers_known(path, &names) {
            return Place::Protected(index);
        }
    }
    if ctx.cwd.is_absolute() && path == normalized(&ctx.cwd).as_ref() {
        return Place::Project(path.to_path_buf());
    }
    let in_scratch = ctx
        .scratch_dirs
        .iter()
        .filter(|d| d.is_absolute())
        .any(|d| path.starts_with(normalized(d)));
    let in_cwd = ctx.cwd.is_absolute() && path.starts_with(normalized(&ctx.cwd));
    if in_scratch || in_cwd {
        Place::Inside
    } else {
        Place::Outside(path.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Context {
        Context {
            cwd: "/home/u/proj".into(),
            home: "/home/u".into(),
            scratch_dirs: vec!["/tmp".into()],
            home_credentials: sandbox::protected::DENY_READ_IN_HOME,
            ..Context::default()
        }
    }

    fn lit(text: &str) -> Word {
        Word::literal(text, (0, 0))
    }

    fn place(text: &str) -> Place {
        let c = ctx();
        place_of(&lit(text), &Cwds::start(&c), &c)
    }

    /// `is_normal` holds exactly of the paths `normalize` leaves as they are, `normalized` is
    /// `normalize`, and comparing two normal paths as text is `Path::starts_with`.
    fn check_normal_forms(a: &str, b: &str) {
        for text in [a, b] {
            let path = Path::new(text);
            let full = normalize_by_components(path);
            assert_eq!(normalize(path), full, "{text:?}");
            assert_eq!(normalized(path).as_ref(), full.as_path(), "{text:?}");
            assert_eq!(
                is_normal(path),
                full.as_os_str() == path.as_os_str(),
                "{text:?}"
            );
        }
        let (a, b) = (Path::new(a), Path::new(b));
        if is_normal(a) && is_normal(b) {
            assert_eq!(starts_with_as_text(a, b), a.starts_with(b), "{a:?} {b:?}");
        }
    }

    /// `normalize_through_links` takes a normal path as it is (but for its links), as the
    /// reading name by name does.
    fn check_through_links(text: &str) {
        let mut c = ctx();
        c.links = vec![("/a/b".into(), "/b".into()), ("/l".into(), "/a/.b".into())];
        let path = Path::new(text);
        assert_eq!(
            normalize_through_links(path, &c),
            normalize_through_links_by_components(path, &c),
            "{text:?}"
        );
    }

    #[test]
    fn normal_forms() {
        let cases = [
            "/", "", ".", "/a", "/a/", "//a", "/a//b", "/a/./b", "/a/../b", "/a/b/..", "/a/.",
            "a/b", "/ab", "/a/b", "/a/bc", "/a.b", "/..", "/.a", "/a/..b", "/...", "/a/...",
        ];
        for a in cases {
            check_through_links(a);
            for b in cases {
                check_normal_forms(a, b);
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn normal_forms_agree(a in "[ab./]{0,10}", b in "[ab./]{0,10}") {
            check_normal_forms(&a, &b);
            // A prefix of the same path, so that matches are tried as well as misses.
            let cut = a.len() / 2;
            check_normal_forms(&a, &a[..cut]);
            check_through_links(&a);
            check_through_links(&format!("/{b}"));
        }
    }

    /// `may_lead_to` says no only where a normal `dir` cannot start with `place` normalised
    /// against `start` (as `rules::git::same_repository` asks it).
    fn check_may_lead_to(start: &str, place: &str, dir: &str) {
        let dir = normalize(Path::new(dir));
        let names: Vec<&[u8]> = dir
            .as_os_str()
            .as_encoded_bytes()
            .split(|&b| b == b'/')
            .filter(|n| !n.is_empty())
            .collect();
        let leads = dir.starts_with(normalize(&Path::new(start).join(place)));
        if leads {
            assert!(
                may_lead_to(Path::new(place), &names),
                "{start:?} {place:?} {dir:?}"
            );
        }
        // `Names::contains` of a place's last name is the same test, for a plain name.
        let bytes = place.as_bytes();
        let last = bytes.rsplit(|&b| b == b'/').next().unwrap_or(bytes);
        if !matches!(last, b"" | b"." | b"..") {
            let of_dir = Names::of(&dir);
            assert_eq!(
                of_dir.contains(last),
                may_lead_to(Path::new(place), &of_dir.names),
                "{place:?} {dir:?}"
            );
        }
    }

    #[test]
    fn may_lead_to_cases() {
        let places = [
            "",
            "/",
            ".",
            "..",
            "a",
            "b",
            "a/",
            "a/.",
            "a/..",
            "/a/b",
            "/a//b",
            "/a/./b",
            "/a/b/../c",
            "a/b",
            "../a",
            "/x/../a/b",
            "/a/b/",
        ];
        let dirs = ["/", "/a", "/a/b", "/a/b/c", "/s/a", "/s/a/b", "/s/b", "/c"];
        for place in places {
            for dir in dirs {
                check_may_lead_to("/s", place, dir);
            }
        }
        assert!(!may_lead_to(Path::new("/w/target/debug"), &[b"w", b"sub"]));
        assert!(may_lead_to(Path::new("/w/sub"), &[b"w", b"sub"]));
    }

    proptest::proptest! {
        #[test]
        fn may_lead_to_agrees(
            start in "/[ab]{0,2}(/[ab.]{1,2}){0,2}",
            place in "[ab./]{0,10}",
            dir in "/[ab./]{0,10}",
        ) {
            check_may_lead_to(&start, &place, &dir);
            // A directory that the place does lead to, so that matches are tried too.
            let lands = normalize(&Path::new(&start).join(&place));
            check_may_lead_to(&start, &place, &format!("{}/{dir}", lands.display()));
        }
    }

    #[test]
    fn classifies_static_paths() {
        assert_eq!(place("/"), Place::Root);
        assert_eq!(place("/*"), Place::Root);
        assert_eq!(place("/etc/.."), Place::Root);
        assert_eq!(place("~"), Place::HomeOrAbove("/home/u".into()));
        assert_eq!(place("~/*"), Place::HomeOrAbove("/home/u".into()));
        assert_eq!(place("../.."), Place::HomeOrAbove("/home".into()));
        assert_eq!(place("../other"), Place::Outside("/home/u/other".into()));
        assert_eq!(place("src/../target"), Place::Inside);
        assert_eq!(place("*"), Place::Project("/home/u/proj".into()));
        assert_eq!(place("."), Place::Project("/home/u/proj".into()));
        assert_eq!(place("../proj/"), Place::Project("/home/u/proj".into()));
        assert_eq!(place("*.o"), Place::Inside);
        assert_eq!(place("./target/*"), Place::Inside);
        assert_eq!(place(".*"), Place::HomeOrAbove("/home/u".into()));
        assert_eq!(place("/tmp/x"), Place::Inside);
        assert_eq!(place("~root"), Place::Outside("~root".into()));
    }

    #[test]
    fn protected_trees_and_their_exceptions() {
        let mut c = ctx();
        c.protected = vec![
            crate::Protected {
                path: "/home/u/proj/.gg".into(),
                except: vec!["/home/u/proj/.gg/agent".into()],
                why: String::new(),
                anywhere: false,
            },
            crate::Protected {
                path: "/home/u/proj/AGENTS.md".into(),
                except: Vec::new(),
                why: String::new(),
                anywhere: true,
            },
        ];
        let at = |t: &str| place_of(&lit(t), &Cwds::start(&c), &c);
        assert_eq!(at(".gg"), Place::Protected(0));
        assert_eq!(at("./.gg/policy.toml"), Place::Protected(0));
        assert_eq!(at("src/../.gg/x"), Place::Protected(0));
        assert_eq!(at(".gg/agent/notes"), Place::Inside);
        assert_eq!(at(".ggx"), Place::Inside);
        assert_eq!(at("sub/.gg/x"), Place::Inside, "not anywhere");
        assert_eq!(at("AGENTS.md"), Place::Protected(1));
        assert_eq!(at("a/b/AGENTS.md"), Place::Protected(1));
        assert_eq!(at("a/AGENTS.md/x"), Place::Protected(1));
        assert_eq!(at("a/AGENTS.mdx"), Place::Inside);
    }

    #[test]
    fn cd_changes_relative_resolution() {
        let c = ctx();
        let start = Cwds::start(&c);
        let mut after = start.after_cd(Some(&lit("/")), &c);
        assert_eq!(place_of(&lit("*"), &after, &c), Place::Root);
        after.union(&start);
        assert_eq!(place_of(&lit("x"), &after, &c), Place::Outside("/x".into()));
        let unknown = start.after_cd(Some(&Word::computed("$D", "", (0, 0))), &c);
        assert_eq!(place_of(&lit("x"), &unknown, &c), Place::Unknown);
        assert_eq!(
            place_of(&lit("/etc/x"), &unknown, &c),
            Place::Outside("/etc/x".into())
        );
    }

    #[test]
    fn computed_tails_are_judged_by_their_prefix() {
        let c = ctx();
        let cwds = Cwds::start(&c);
        let at = |prefix: &str| place_of(&Word::computed("…", prefix, (0, 0)), &cwds, &c);
        assert_eq!(at("/"), Place::Root);
        assert_eq!(at("/home/u/"), Place::HomeOrAbove("/home/u".into()));
        assert_eq!(at("/tmp/"), Place::Unknown);
        assert_eq!(at(""), Place::Unknown);
        assert_eq!(at("/etc/"), Place::Outside("/etc".into()));
    }
}
