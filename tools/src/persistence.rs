//! What a sandboxed command may leave behind in the project that runs code later, outside any
//! sandbox: the persistence vectors of the one resource policy that no mount can cover.
//!
//! A mount cannot cover an absent name without leaving its mount point on the host, Landlock
//! cannot cover a name at all, and a mount cannot allow some names of a directory and refuse
//! others. So the project is looked at before a sandboxed command and after it (its whole tree
//! has ended by then), and what it created that is not allowed is moved to `.gg/quarantine`
//! (read-only to commands, so they cannot take it back). Nothing is deleted.
//!
//! - **Placeholders** (`.envrc`, `.vscode/`, `AGENTS.md`, … of [`sandbox::protected`]): whatever
//!   was absent and exists now.
//! - **The git directory is an allow-list**, at every depth git reads configuration from:
//!   - at its top, only what git's ordinary work writes ([`sandbox::protected::git_entry_allowed`]);
//!     anything else (`commondir`, which takes the repository's config and hooks from a planted
//!     directory; `config.worktree`) goes;
//!   - in `info/`, only [`sandbox::protected::GIT_INFO_WRITABLE`] (`attributes` there selects
//!     filter and diff drivers for every checkout);
//!   - a new git directory (`modules/<name>` from `git submodule update`, `worktrees/<name>` from
//!     `git worktree add`, or `.git` itself from `git init` in a project that had none) stays only
//!     if it is one git would have written: no configuration that runs a program (the classifier's
//!     own table, includes that cannot be read count as such), no hook but git's `*.sample`
//!     templates, no `commondir` other than a worktree's own, and the same again for every git
//!     directory nested in it.

//! - **Below the top**, what an agent, editor or git started in a subdirectory reads
//!   ([`sandbox::protected::ProtectedPath::anywhere`]: `sub/AGENTS.md`, `sub/.envrc`, a new
//!   `sub/.git` git would not have written) and a new git directory under another name (`HEAD`,
//!   `objects`, `refs`: git takes it for a repository and obeys its config): found by
//!   [`ProjectDirs`], which keeps the session's picture of the project's directories and reads
//!   again only those whose change time moved, so a command costs one `stat` per directory.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// The project as it was before a sandboxed command, as far as the sweep needs it.
pub struct Before {
    root: PathBuf,
    /// Placeholders that did not exist.
    absent: Vec<PathBuf>,
    /// The git directory's names, `None` when `.git` was no directory.
    git: Option<GitNames>,
    /// The session's picture of the directories below the top, and when the command started.
    dirs: Arc<Mutex<ProjectDirs>>,
    started: SystemTime,
}

struct GitNames {
    top: Vec<OsString>,
    info: Vec<OsString>,
    modules: Vec<OsString>,
    worktrees: Vec<OsString>,
    /// The top-level names of each submodule's and worktree's git directory (`modules/m`,
    /// `worktrees/w`): the same allow-list holds there (`config.worktree` written into an
    /// existing submodule's directory by a later command).
    nested_tops: Vec<(PathBuf, Vec<OsString>)>,
}

impl Before {
    /// Looks at `root` before a command; `dirs` is the session's [`ProjectDirs`].
    pub fn look(root: &Path, dirs: Arc<Mutex<ProjectDirs>>) -> Before {
        let absent = sandbox::protected::placeholders(root)
            .filter(|p| std::fs::symlink_metadata(p).is_err())
            .collect();
        let git_dir = root.join(".git");
        let git = std::fs::symlink_metadata(&git_dir)
            .is_ok_and(|m| m.is_dir())
            .then(|| {
                let modules = names(&git_dir.join("modules"));
                let worktrees = names(&git_dir.join("worktrees"));
                let nested_tops = modules
                    .iter()
                    .map(|n| git_dir.join("modules").join(n))
                    .chain(worktrees.iter().map(|n| git_dir.join("worktrees").join(n)))
                    .map(|dir| {
                        let top = names(&dir);
                        (dir, top)
                    })
                    .collect();
                GitNames {
                    top: names(&git_dir),
                    info: names(&git_dir.join("info")),
                    modules,
                    worktrees,
                    nested_tops,
                }
            });
        // Built at the first sandboxed command of the session (one walk). After that, what
        // changed since the last command is taken in now (record only) where inotify says what
        // that is; without it the sweep alone tells the command's changes by their change time.
        if let Ok(mut known) = dirs.lock() {
            if !known.built || known.watching() {
                known.refresh(root, None);
            } else {
                // The nested repositories the person changed since are theirs.
                known.judge_clean(false);
            }
        }
        // The file system's clock lags the system's by up to a tick (a few milliseconds): what
        // changed within that margin before the command counts as the command's (fail closed).
        let started = SystemTime::now() - Duration::from_millis(50);
        Before {
            root: root.to_path_buf(),
            absent,
            git,
            dirs,
            started,
        }
    }

    /// After the command: moves aside what it created that is not allowed, and returns a line
    /// for the command's output about each.
    pub fn sweep(self) -> Vec<String> {
        const OPENS: &str = "which runs code or becomes instructions when the project is opened";
        let git_dir = self.root.join(".git");
        let mut created: Vec<(PathBuf, String)> = self
            .absent
            .into_iter()
            .map(|p| (p, OPENS.to_string()))
            .collect();
        // A git directory git would not have written, with why.
        let untrusted = |dir: &Path, worktree: bool| {
            untrusted_git_dir(dir, worktree, 0)
                .map(|why| format!("a git directory git would not have written: {why}"))
        };
        match &self.git {
            Some(before) => {
                let new = |dir: PathBuf, known: &[OsString]| -> Vec<PathBuf> {
                    names(&dir)
                        .into_iter()
                        .filter(|n| !known.contains(n))
                        .map(|n| dir.join(n))
                        .collect()
                };
                let not_allowed = |allowed: fn(&str) -> bool| {
                    move |p: PathBuf| {
                        let allowed = p.file_name().and_then(|n| n.to_str()).is_some_and(allowed);
                        (!allowed).then(|| (p, OPENS.to_string()))
                    }
                };
                created.extend(
                    new(git_dir.clone(), &before.top)
                        .into_iter()
                        .filter_map(not_allowed(sandbox::protected::git_entry_allowed)),
                );
                created.extend(
                    new(git_dir.join("info"), &before.info)
                        .into_iter()
                        .filter_map(not_allowed(|n| {
                            sandbox::protected::GIT_INFO_WRITABLE.contains(&n)
                        })),
                );
                for (sub, known) in [
                    ("modules", &before.modules),
                    ("worktrees", &before.worktrees),
                ] {
                    created.extend(new(git_dir.join(sub), known).into_iter().filter_map(|dir| {
                        untrusted(&dir, sub == "worktrees").map(|why| (dir, why))
                    }));
                }
                for (dir, known) in &before.nested_tops {
                    // `hooks` and `config` are git's own too (and bubblewrap makes an empty
                    // `hooks` as a mount point when a submodule appears): judged by what they
                    // hold, as a new git directory is.
                    let sound =
                        untrusted(dir, dir.starts_with(git_dir.join("worktrees"))).is_none();
                    created.extend(new(dir.clone(), known).into_iter().filter_map(|p| {
                        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                        let samples_only = || {
                            names(&p)
                                .iter()
                                .all(|n| n.to_str().is_some_and(|n| n.ends_with(".sample")))
                        };
                        let own = sandbox::protected::git_entry_allowed(name)
                            || (name == "hooks" && samples_only())
                            || (sound && name == "config");
                        (!own).then(|| (p, OPENS.to_string()))
                    }));
                }
            }
            // A `.git` the command made (`git init`) stays when git would have written it.
            None => {
                if std::fs::symlink_metadata(&git_dir).is_ok_and(|m| m.is_dir())
                    && let Some(why) = untrusted(&git_dir, false)
                {
                    created.push((git_dir, why));
                }
            }
        }
        if let Ok(mut known) = self.dirs.lock() {
            created.extend(known.refresh(&self.root, Some(self.started)));
        }
        quarantine(&self.root, &created)
    }
}

/// Directories below the project that a sweep does not look in: dependencies and build output,
/// large and rewritten by ordinary commands, where no agent, editor or git is started.
const UNWATCHED: &[&str] = &["node_modules", "target", ".venv"];

/// The most directories [`ProjectDirs`] keeps (breadth first): each costs a `stat` per sandboxed
/// command, 2–3 µs measured, so 5,000 add at most ~12 ms to a command. Deeper ones in a larger
/// project are not looked in (said in the security model); inotify would lift the limit.
const MAX_DIRS: usize = 5_000;

/// What a directory held when it was last read.
struct Seen {
    /// Its change time: a new, removed or renamed entry changes it.
    changed: Option<SystemTime>,
    /// Its entries that are persistence vectors.
    vectors: Vec<OsString>,
    /// Whether it held `HEAD`, `objects` and `refs`: a git directory under another name.
    git_like: bool,
}

/// The session's picture of the project's directories below the top (the top and `.git` have
/// [`Before`]'s own checks; `.gg` is gg's, read-only to commands), kept between commands. With
/// inotify (Linux), a command costs reading the events of the directories it changed; without it
/// (or when its queue overflowed), one `stat` per directory.
#[derive(Default)]
pub struct ProjectDirs {
    seen: HashMap<PathBuf, Seen>,
    built: bool,
    /// Nested git directories (and git directories under other names) that were clean when
    /// first seen.
    clean: Vec<PathBuf>,
    #[cfg(target_os = "linux")]
    watch: Option<Watch>,
}

/// An inotify instance watching every directory in [`ProjectDirs`].
#[cfg(target_os = "linux")]
struct Watch {
    fd: std::os::fd::OwnedFd,
    dirs: HashMap<i32, PathBuf>,
}

#[cfg(target_os = "linux")]
impl Watch {
    /// What changes a directory's entries or a file in it (not reads, not `IN_MODIFY`'s flood:
    /// a written file is seen when it is closed).
    fn flags() -> rustix::fs::inotify::WatchFlags {
        use rustix::fs::inotify::WatchFlags as W;
        W::CREATE
            | W::DELETE
            | W::MOVED_FROM
            | W::MOVED_TO
            | W::ATTRIB
            | W::CLOSE_WRITE
            | W::DELETE_SELF
            | W::MOVE_SELF
            | W::ONLYDIR
            | W::DONT_FOLLOW
    }

    fn add(&mut self, dir: &Path) -> bool {
        match rustix::fs::inotify::add_watch(&self.fd, dir, Watch::flags()) {
            Ok(wd) => {
                self.dirs.insert(wd, dir.to_path_buf());
                true
            }
            Err(_) => false,
        }
    }

    /// The directories with events since the last call; `None` when the queue overflowed (or
    /// could not be read) and events were lost.
    fn changed(&mut self) -> Option<Vec<PathBuf>> {
        use rustix::fs::inotify::ReadFlags;
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 16 * 1024];
        let mut reader = rustix::fs::inotify::Reader::new(&self.fd, &mut buf);
        let mut changed = std::collections::HashSet::new();
        loop {
            match reader.next() {
                Ok(event) => {
                    if event.events().contains(ReadFlags::QUEUE_OVERFLOW) {
                        return None;
                    }
                    if let Some(dir) = self.dirs.get(&event.wd()) {
                        changed.insert(dir.clone());
                    }
                    if event.events().contains(ReadFlags::IGNORED) {
                        self.dirs.remove(&event.wd());
                    }
                }
                Err(rustix::io::Errno::AGAIN) => break,
                Err(_) => return None,
            }
        }
        Some(changed.into_iter().collect())
    }
}

impl ProjectDirs {
    pub fn new() -> ProjectDirs {
        ProjectDirs::default()
    }

    /// Brings the picture up to date and returns what became a persistence vector at or after
    /// `since` (`None`: records only), with why. Only the directories that changed are read
    /// again: those inotify reported, else those whose change time moved (a `stat` each).
    fn refresh(&mut self, root: &Path, since: Option<SystemTime>) -> Vec<(PathBuf, String)> {
        let mut found = Vec::new();
        if !self.built {
            // Breadth first, so that in a project over the limit the shallow directories, where
            // people start agents and editors, are the ones watched.
            self.built = true;
            #[cfg(target_os = "linux")]
            if inotify_wanted() {
                use rustix::fs::inotify::CreateFlags;
                self.watch =
                    rustix::fs::inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)
                        .ok()
                        .map(|fd| Watch {
                            fd,
                            dirs: HashMap::new(),
                        });
            }
            let mut queue = std::collections::VecDeque::from([root.to_path_buf()]);
            while let Some(dir) = queue.pop_front() {
                queue.extend(self.read(root, &dir, None, false, false, &mut found));
            }
            return found;
        }
        let mut gone = Vec::new();
        let mut moved = Vec::new();
        #[cfg(target_os = "linux")]
        let reported = self.watch.as_mut().and_then(Watch::changed);
        #[cfg(not(target_os = "linux"))]
        let reported: Option<Vec<PathBuf>> = None;
        match reported {
            Some(dirs) => {
                for dir in dirs {
                    match std::fs::symlink_metadata(&dir) {
                        Ok(meta) if meta.is_dir() => moved.push(dir),
                        _ => gone.push(dir),
                    }
                }
            }
            None => {
                for (dir, seen) in &self.seen {
                    match std::fs::symlink_metadata(dir) {
                        Ok(meta) if meta.is_dir() => {
                            if meta.created_or_changed() != seen.changed {
                                moved.push(dir.clone());
                            }
                        }
                        _ => gone.push(dir.clone()),
                    }
                }
            }
        }
        for dir in gone {
            self.forget(&dir);
        }
        for dir in moved {
            if self.seen.contains_key(&dir) {
                self.read(root, &dir, since, false, true, &mut found);
            }
        }
        found.extend(self.judge_clean(since.is_some()));
        found
    }

    /// Reads `dir` (again). With `since` (a sweep), what changed at or after it is the
    /// command's: a vector entry changed then (created, written, renamed in: each sets the
    /// change time, which no program can set back), a new `.git` git would not have written, a
    /// new subdirectory (read whole, and `fresh` when it is itself the command's: everything in
    /// it counts, whenever it was made), a directory that became a git directory. New
    /// subdirectories are read at once when `descend`, else returned.
    fn read(
        &mut self,
        root: &Path,
        dir: &Path,
        since: Option<SystemTime>,
        fresh: bool,
        descend: bool,
        found: &mut Vec<(PathBuf, String)>,
    ) -> Vec<PathBuf> {
        let mut later = Vec::new();
        // Over the limit, a directory is not kept (its parent reads it again when it changes);
        // in a sweep it is still read, so that a command cannot hide what it made behind
        // directories it made first.
        let keep = self.seen.len() < MAX_DIRS || self.seen.contains_key(dir);
        if !keep && since.is_none() {
            return later;
        }
        let changed = std::fs::symlink_metadata(dir)
            .ok()
            .and_then(|m| m.created_or_changed());
        let entries: Vec<(OsString, std::fs::FileType)> = match std::fs::read_dir(dir) {
            Ok(entries) => entries
                .flatten()
                .filter_map(|e| Some((e.file_name(), e.file_type().ok()?)))
                .collect(),
            Err(_) => Vec::new(),
        };
        let at_top = dir == root;
        let before = self.seen.remove(dir);
        let held = |name: &OsString| before.as_ref().is_some_and(|b| b.vectors.contains(name));
        let the_commands = |path: &Path| {
            since.is_some_and(|since| {
                fresh
                    || std::fs::symlink_metadata(path)
                        .ok()
                        .and_then(|m| m.created_or_changed())
                        .is_some_and(|t| t >= since)
            })
        };
        let mut seen = Seen {
            changed,
            vectors: Vec::new(),
            git_like: is_git_like(dir),
        };
        for (name, kind) in &entries {
            let path = dir.join(name);
            // At the top, `Before` has checks of its own (and binds, at the bwrap level).
            let vector = !at_top && is_anywhere_vector(name);
            if vector {
                seen.vectors.push(name.clone());
                if name == ".git" {
                    // A nested repository: judged when first seen; one git would have written
                    // is judged again after every command (`clean`), since its config and hooks
                    // change without its directory changing.
                    if !held(name) {
                        match untrusted_git_dir(&path, false, 0) {
                            Some(why) if the_commands(&path) => found.push((
                                path,
                                format!("a git directory git would not have written: {why}"),
                            )),
                            Some(_) => {}
                            None => self.clean.push(path),
                        }
                    }
                } else if the_commands(&path) {
                    found.push((
                        path,
                        "which runs code or becomes instructions when an agent, editor or shell \
                         is started in that directory"
                            .to_string(),
                    ));
                }
                continue;
            }
            // A link the command made to a directory holding what an agent or git would read
            // there (into `node_modules`, which is not looked in, or outside the project).
            if kind.is_symlink() && since.is_some() && the_commands(&path) {
                if let Some(why) = linked_vectors(&path) {
                    found.push((path, why));
                }
                continue;
            }
            let skipped = at_top && (name == ".git" || name == ".gg");
            if !kind.is_dir() || skipped || UNWATCHED.iter().any(|u| name == *u) {
                continue;
            }
            if !self.seen.contains_key(&path) {
                if descend {
                    let fresh = the_commands(&path);
                    later.extend(self.read(root, &path, since, fresh, true, found));
                } else {
                    later.push(path);
                }
            }
        }
        // A directory that became a git directory under another name.
        let was_git_like = before.as_ref().is_some_and(|b| b.git_like);
        if seen.git_like && !at_top && !was_git_like {
            match untrusted_git_dir(dir, false, 0) {
                Some(why) if the_commands(dir) => found.push((
                    dir.to_path_buf(),
                    format!(
                        "a git directory under another name, which git would not have written: \
                         {why}"
                    ),
                )),
                Some(_) => {}
                None => self.clean.push(dir.to_path_buf()),
            }
        }
        if !keep {
            return later;
        }
        // A directory seen for the first time is watched from now on; one that cannot be
        // (the user's inotify limit) ends watching: every directory is `stat`ed instead.
        #[cfg(target_os = "linux")]
        if before.is_none()
            && let Some(watch) = self.watch.as_mut()
            && !watch.add(dir)
        {
            self.watch = None;
        }
        self.seen.insert(dir.to_path_buf(), seen);
        later
    }

    /// The git directories that were clean when seen, judged again: one that now runs a program
    /// is returned (and forgotten). `report`: after a command (else the person's change
    /// between commands, which is left alone).
    fn judge_clean(&mut self, report: bool) -> Vec<(PathBuf, String)> {
        let mut found = Vec::new();
        self.clean.retain(|dir| {
            if std::fs::symlink_metadata(dir).is_err() {
                return false;
            }
            match untrusted_git_dir(dir, false, 0) {
                None => true,
                Some(why) => {
                    if report {
                        found.push((
                            dir.clone(),
                            format!(
                                "a git directory changed to one git would not have written: {why}"
                            ),
                        ));
                    }
                    false
                }
            }
        });
        found
    }

    /// Whether inotify reports the changes (else every directory is `stat`ed).
    fn watching(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.watch.is_some();
        #[cfg(not(target_os = "linux"))]
        return false;
    }

    /// Forgets `dir` and everything below it (removed or replaced by a file).
    fn forget(&mut self, dir: &Path) {
        self.seen.retain(|p, _| !p.starts_with(dir));
    }
}

/// Whether to watch with inotify. Always, where it can be set up; a test-hooks build can take
/// the fallback on purpose (`GG_TEST_SWEEP_NO_INOTIFY=1`), as when inotify's limits are reached,
/// so that the tests prove both ways of finding what a command changed.
#[cfg(target_os = "linux")]
fn inotify_wanted() -> bool {
    #[cfg(feature = "test-hooks")]
    if std::env::var_os("GG_TEST_SWEEP_NO_INOTIFY").is_some_and(|v| v == "1") {
        return false;
    }
    true
}

/// A name an agent, editor or git reads in whatever directory it is started in.
fn is_anywhere_vector(name: &std::ffi::OsStr) -> bool {
    sandbox::protected::PROTECTED_IN_ROOT
        .iter()
        .any(|p| p.anywhere && name == p.name)
}

/// Why a link to a directory plants something: the directory holds a vector at its top, or is
/// a git directory.
fn linked_vectors(link: &Path) -> Option<String> {
    // Where it leads (`names` does not follow a link).
    let target = std::fs::canonicalize(link).ok()?;
    if let Some(name) = names(&target).into_iter().find(|n| is_anywhere_vector(n)) {
        return Some(format!(
            "a link to a directory holding {}, which runs code or becomes instructions when an \
             agent, editor or shell is started there",
            name.to_string_lossy()
        ));
    }
    is_git_like(&target).then(|| "a link to a git directory".to_string())
}

/// `HEAD`, `objects` and `refs` in `dir`: what git takes for a repository.
fn is_git_like(dir: &Path) -> bool {
    ["HEAD", "objects", "refs"]
        .iter()
        .all(|n| std::fs::symlink_metadata(dir.join(n)).is_ok())
}

/// The change time of a file: what a program cannot set (unlike the modification time).
trait ChangeTime {
    fn created_or_changed(&self) -> Option<SystemTime>;
}

impl ChangeTime for std::fs::Metadata {
    fn created_or_changed(&self) -> Option<SystemTime> {
        use std::os::unix::fs::MetadataExt;
        let secs = u64::try_from(self.ctime()).ok()?;
        let nanos = u32::try_from(self.ctime_nsec()).ok()?;
        SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
    }
}

/// Why `dir`, a git directory a command created, is not one git would have written (`None`
/// when it is). `worktree` allows the `commondir` a linked worktree's directory has.
fn untrusted_git_dir(dir: &Path, worktree: bool, depth: usize) -> Option<String> {
    if depth > 8 {
        return Some("git directories nested too deep".into());
    }
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return None;
    };
    if !meta.is_dir() {
        return Some("not a directory".into());
    }
    // A submodule named `a/b` keeps its git directory at `modules/a/b`: `a` is only a folder.
    let is_git_dir = ["HEAD", "config", "commondir"]
        .iter()
        .any(|n| std::fs::symlink_metadata(dir.join(n)).is_ok());
    if !is_git_dir {
        return names(dir)
            .into_iter()
            .find_map(|n| untrusted_git_dir(&dir.join(n), worktree, depth + 1));
    }
    // git writes no include: one names a file elsewhere (the work tree, writable), whose text a
    // later command can change after this check.
    let includes = std::fs::read_to_string(dir.join("config")).is_ok_and(|text| {
        text.lines()
            .any(|l| l.trim_start().to_ascii_lowercase().starts_with("[include"))
    });
    if includes {
        return Some("its configuration includes another file".into());
    }
    // Configuration that runs a program, includes followed (an unreadable include counts).
    let config = classifier::GitConfig::load_with(dir, |p| std::fs::read_to_string(p).ok());
    let mut programs = config.program_keys();
    if let Ok(text) = std::fs::read_to_string(dir.join("config.worktree")) {
        programs.extend(classifier::GitConfig { files: vec![text] }.program_keys());
    }
    if let Some(key) = programs.first() {
        return Some(format!("its configuration runs a program ({key})"));
    }
    if let Some(hook) = names(&dir.join("hooks"))
        .into_iter()
        .find(|n| !n.to_str().is_some_and(|n| n.ends_with(".sample")))
    {
        return Some(format!("it has a hook ({})", hook.to_string_lossy()));
    }
    if std::fs::symlink_metadata(dir.join("commondir")).is_ok() {
        // A linked worktree's directory names the main git directory, two levels up.
        let own = std::fs::read_to_string(dir.join("commondir"))
            .is_ok_and(|text| text.trim_end_matches('\n') == "../..");
        if !(worktree && own) {
            return Some("it takes its repository from elsewhere (commondir)".into());
        }
    }
    names(&dir.join("modules"))
        .into_iter()
        .find_map(|n| untrusted_git_dir(&dir.join("modules").join(n), false, depth + 1))
}

/// The names directly inside `dir` (none when it is not a directory).
fn names(dir: &Path) -> Vec<OsString> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => std::fs::read_dir(dir)
            .map(|entries| entries.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Moves each of `paths` (absent before the command) that exists now into
/// `.gg/quarantine/<time>-<name>`, out of reach of whatever opens the project, and says so with
/// its reason; nothing is deleted. `.gg` is read-only to commands, so they cannot take it back.
fn quarantine(root: &Path, paths: &[(PathBuf, String)]) -> Vec<String> {
    let mut lines = Vec::new();
    for (path, why) in paths {
        if std::fs::symlink_metadata(path).is_err() {
            continue;
        }
        // `.git/commondir` is named as such, and kept as `…-.git_commondir`.
        let name = path
            .strip_prefix(root)
            .unwrap_or(path)
            .display()
            .to_string();
        let flat = name.replace('/', "_");
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let dir = root.join(".gg").join("quarantine");
        let target = dir.join(format!("{stamp}-{flat}"));
        let moved = std::fs::create_dir_all(&dir).and_then(|()| std::fs::rename(path, &target));
        lines.push(match moved {
            Ok(()) => format!(
                "[gg: the command created {name}, {why}; moved to {}]",
                target.display()
            ),
            Err(e) => format!(
                "[gg: the command created {name}, {why}, and it could not be moved aside ({e}): \
                 remove it before opening the project]"
            ),
        });
    }
    lines
}
