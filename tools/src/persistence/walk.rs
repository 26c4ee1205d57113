//! The session's picture of the project's directories ([`ProjectDirs`]): what the sweep
//! looks at below the top, read again only where inotify (or a change time) says something
//! changed, and the tests of what a new or changed directory there is (a git directory git
//! would not have written, a protected entry made below the top).

use super::*;

/// Directories below the project that a sweep does not look in: dependencies and build output,
/// large and rewritten by ordinary commands, where no agent, editor or git is started.
const UNWATCHED: &[&str] = &["node_modules", "target", ".venv"];

/// The most of the project's own directories [`ProjectDirs`] keeps from its first walk (breadth
/// first): each costs an inotify watch, and a `stat` per sandboxed command where inotify is not
/// available (2–3 µs measured, so 5,000 add at most ~12 ms to a command). Deeper ones of a
/// larger project are not looked in until a change in their parent makes the sweep read them
/// (said in the security model).
const MAX_DIRS: usize = 5_000;

/// The most directories [`ProjectDirs`] keeps at all. What appears after the first walk (a
/// command's directories, or the person's) is kept whatever [`MAX_DIRS`] says: otherwise a
/// command could make directories until a chosen one is no longer watched, and plant there in
/// the next. Past this the picture is not grown any more and every sweep reads the whole
/// project instead (slow, but nothing is hidden by it).
const HARD_MAX_DIRS: usize = 200_000;

/// The most directories a picture keeps before the sweep watches them with inotify; up to it,
/// each sweep compares every directory's change time and inode instead (a `stat` each, 2–3 µs:
/// at most ~0.2 ms a command). An inotify instance with even one watch costs 5–20 ms to close,
/// all of it waiting for the kernel to retire its marks (an RCU grace period), on the exit path
/// of every session that swept: more than a small project's `stat`s cost over a long session.
const STAT_AT_MOST: usize = 64;

/// A directory whose change time is this recent when it is read is read again at the next
/// sweep, whatever its change time says then: a change time has the kernel's coarse clock
/// (a tick, up to 10 ms), so a second change in the tick of the one seen would leave it as it
/// was. (As `sandbox::watch` keeps no ruleset built from a directory changed in the last 2 s.)
const RECENT: Duration = Duration::from_secs(2);

/// [`HARD_MAX_DIRS`], or a lower one a test-hooks build is given (`GG_TEST_SWEEP_HARD_MAX`), so
/// that the tests reach the whole-project walk without making 200,000 directories.
fn hard_max_dirs() -> usize {
    #[cfg(feature = "test-hooks")]
    if let Some(max) = std::env::var("GG_TEST_SWEEP_HARD_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return max;
    }
    HARD_MAX_DIRS
}

/// What a directory held when it was last read.
struct Seen {
    /// Its change time: a new, removed or renamed entry changes it.
    changed: Option<SystemTime>,
    /// Its inode: another directory moved to its path (two swapped) is read as a new one.
    ino: u64,
    /// Its entries that are persistence vectors.
    vectors: Vec<OsString>,
    /// Whether git takes it for a git directory ([`is_git_like`]).
    git_like: bool,
    /// Read again at the next sweep whatever its change time says: it had changed within
    /// [`RECENT`] of being read, or it was read before its inotify watch was added.
    recent: bool,
}

/// The session's picture of the project's directories below the top (the top and `.git` have
/// [`Before`]'s own checks; `.gg` is gg's, read-only to commands), kept between commands. With
/// inotify (Linux), a command costs reading the events of the directories it changed; without it
/// (or when its queue overflowed, or a directory was moved), one `stat` per directory.
#[derive(Default)]
pub struct ProjectDirs {
    seen: HashMap<PathBuf, Seen>,
    pub(super) built: bool,
    /// During the first walk, which keeps at most [`MAX_DIRS`].
    first_walk: bool,
    /// [`hard_max_dirs`], read at the first walk.
    hard_max: usize,
    /// Set once a directory could not be kept ([`HARD_MAX_DIRS`]): from then on every sweep
    /// reads the whole project.
    walk_all: bool,
    /// Nested git directories (and git directories under other names, and `.git` files naming
    /// one) that were clean when first seen.
    clean: std::collections::HashSet<PathBuf>,
    #[cfg(target_os = "linux")]
    watch: Option<Watch>,
    /// When to watch ([`watching_wanted`], read at the first walk); [`Watching::Never`] from
    /// when inotify could not be set up or a watch could not be added (the user's limits).
    #[cfg(target_os = "linux")]
    wanted: Option<Watching>,
    /// The directory `core.hooksPath` names in the work tree, asked of git once and again only
    /// when `.git/config` changes (the identity of the file it was asked with).
    hooks_path: Option<(Option<ConfigStamp>, Option<PathBuf>)>,
    /// The copy of `.gg` kept before the last command at the landlock level ([`Kept`]).
    pub(super) gg_kept: Option<Kept>,
    /// The copies of the other protected entries kept before the last command there.
    pub(super) protected_kept: Vec<Kept>,
}

/// What tells one `.git/config` from another cheaply: its inode mixed with its size, and its
/// modification time.
type ConfigStamp = (u64, Option<SystemTime>);

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

    /// The directories with events since the last call; `None` when events were lost (the
    /// queue overflowed or could not be read) or a directory was moved: a watch stays with its
    /// directory, so after a move (two directories swapped) the path a watch was added under
    /// is no longer where its events happen.
    fn changed(&mut self) -> Option<Vec<PathBuf>> {
        use rustix::fs::inotify::ReadFlags;
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 16 * 1024];
        let mut reader = rustix::fs::inotify::Reader::new(&self.fd, &mut buf);
        let mut changed = std::collections::HashSet::new();
        let mut lost = false;
        // The whole queue is read either way, so that the next call starts afresh.
        loop {
            match reader.next() {
                Ok(event) => {
                    let flags = event.events();
                    let dir_moved = flags.contains(ReadFlags::MOVE_SELF)
                        || (flags.contains(ReadFlags::ISDIR)
                            && flags.intersects(ReadFlags::MOVED_FROM | ReadFlags::MOVED_TO));
                    if flags.contains(ReadFlags::QUEUE_OVERFLOW) || dir_moved {
                        lost = true;
                    }
                    if let Some(dir) = self.dirs.get(&event.wd()) {
                        changed.insert(dir.clone());
                    }
                    if flags.contains(ReadFlags::IGNORED) {
                        self.dirs.remove(&event.wd());
                    }
                }
                Err(rustix::io::Errno::AGAIN) => break,
                Err(_) => {
                    lost = true;
                    break;
                }
            }
        }
        (!lost).then(|| changed.into_iter().collect())
    }

    /// Watches each of `dirs` by the path it has now. inotify gives the directory it already
    /// watches its watch again, so the map from watches to paths is right again; a watch left
    /// on a directory that is no longer kept is removed. `false` when one cannot be added.
    fn rebuild<'a>(&mut self, dirs: impl Iterator<Item = &'a PathBuf>) -> bool {
        let mut map = HashMap::new();
        for dir in dirs {
            match rustix::fs::inotify::add_watch(&self.fd, dir, Watch::flags()) {
                Ok(wd) => {
                    map.insert(wd, dir.clone());
                }
                Err(_) => return false,
            }
        }
        for wd in self.dirs.keys() {
            if !map.contains_key(wd) {
                let _ = rustix::fs::inotify::remove_watch(&self.fd, *wd);
            }
        }
        self.dirs = map;
        true
    }
}

impl ProjectDirs {
    pub fn new() -> ProjectDirs {
        ProjectDirs::default()
    }

    /// Brings the picture up to date and returns what became a persistence vector at or after
    /// `since` (`None`: records only), with why. Only the directories that changed are read
    /// again: those inotify reported, else those whose change time (or inode) moved (a `stat`
    /// each).
    pub(super) fn refresh(
        &mut self,
        root: &Path,
        since: Option<SystemTime>,
    ) -> Vec<(PathBuf, String)> {
        let mut found = Vec::new();
        if !self.built {
            // Breadth first, so that in a project over the limit the shallow directories, where
            // people start agents and editors, are the ones watched.
            self.built = true;
            self.first_walk = true;
            self.hard_max = hard_max_dirs();
            #[cfg(target_os = "linux")]
            if *self.wanted.get_or_insert_with(watching_wanted) == Watching::Always {
                self.start_watching();
            }
            let mut queue = std::collections::VecDeque::from([root.to_path_buf()]);
            while let Some(dir) = queue.pop_front() {
                queue.extend(self.read(root, &dir, None, false, false, &mut found));
            }
            self.first_walk = false;
            return found;
        }
        let mut gone = Vec::new();
        // Read again whatever the events or change times say (see [`Seen::recent`]).
        let mut moved: Vec<PathBuf> = self
            .seen
            .iter()
            .filter(|(_, seen)| seen.recent)
            .map(|(dir, _)| dir.clone())
            .collect();
        #[cfg(target_os = "linux")]
        let reported = self.watch.as_mut().and_then(Watch::changed);
        #[cfg(not(target_os = "linux"))]
        let reported: Option<Vec<PathBuf>> = None;
        // Watching, but the events do not say where (lost, or a directory moved).
        let rebuild = reported.is_none() && self.watching();
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
                use std::os::unix::fs::MetadataExt;
                for (dir, seen) in &self.seen {
                    match std::fs::symlink_metadata(dir) {
                        Ok(meta) if meta.is_dir() => {
                            if meta.created_or_changed() != seen.changed || meta.ino() != seen.ino {
                                moved.push(dir.clone());
                            }
                        }
                        _ => gone.push(dir.clone()),
                    }
                }
            }
        }
        self.forget(gone);
        // A recent directory may be reported or changed as well: each is read once.
        moved.sort_unstable();
        moved.dedup();
        for dir in moved {
            if self.seen.contains_key(&dir) {
                self.read(root, &dir, since, false, true, &mut found);
            }
        }
        #[cfg(target_os = "linux")]
        if rebuild
            && let Some(watch) = self.watch.as_mut()
            && !watch.rebuild(self.seen.keys())
        {
            self.give_up_watching();
        }
        #[cfg(not(target_os = "linux"))]
        let _ = rebuild;
        if self.walk_all && since.is_some() {
            self.walk_unkept(root, since, &mut found);
        }
        found.extend(self.judge_clean(root, since.is_some()));
        found
    }

    /// Past [`HARD_MAX_DIRS`]: reads every directory of the project that is not kept (kept ones
    /// had their changes read already), judging what changed at or after `since` as in a
    /// sweep.
    fn walk_unkept(
        &mut self,
        root: &Path,
        since: Option<SystemTime>,
        found: &mut Vec<(PathBuf, String)>,
    ) {
        let mut queue = std::collections::VecDeque::from([root.to_path_buf()]);
        while let Some(dir) = queue.pop_front() {
            if self.seen.contains_key(&dir) {
                queue.extend(subdirectories(root, &dir));
            } else {
                self.read(root, &dir, since, false, false, found);
                queue.extend(subdirectories(root, &dir));
            }
        }
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
        use std::os::unix::fs::MetadataExt;
        let mut later = Vec::new();
        // The first walk keeps the person's directories up to its limit (its parent reads a
        // directory past it again when it changes); after it, everything is kept up to the
        // hard limit, past which every sweep reads the whole project. A directory not kept is
        // still read in a sweep, so that a command cannot hide what it made behind
        // directories it made first.
        let limit = if self.first_walk {
            MAX_DIRS.min(self.hard_max)
        } else {
            self.hard_max
        };
        let keep = self.seen.len() < limit || self.seen.contains_key(dir);
        if !keep && !self.first_walk {
            self.walk_all = true;
        }
        if !keep && since.is_none() {
            return later;
        }
        let meta = std::fs::symlink_metadata(dir).ok();
        let changed = meta.as_ref().and_then(|m| m.created_or_changed());
        let ino = meta.as_ref().map(|m| m.ino()).unwrap_or_default();
        // A directory seen for the first time (or another one moved to its path) is watched
        // from now on, before it is listed: a change while it is read is then reported too.
        // One that cannot be (the user's inotify limit) ends watching: every directory is
        // `stat`ed instead.
        #[cfg(target_os = "linux")]
        if self.seen.get(dir).is_none_or(|b| b.ino != ino)
            && let Some(watch) = self.watch.as_mut()
            && !watch.add(dir)
        {
            self.give_up_watching();
        }
        let recent = changed.is_none_or(|at| {
            SystemTime::now()
                .duration_since(at)
                .map_or(true, |age| age < RECENT)
        });
        let entries: Vec<(OsString, std::fs::FileType)> = match listing::read_dir(dir) {
            Ok(entries) => entries
                .flatten()
                .filter_map(|e| Some((e.file_name(), e.file_type().ok()?)))
                .collect(),
            Err(_) => Vec::new(),
        };
        let at_top = dir == root;
        let root_git = root.join(".git");
        // Another directory moved to this path is a new one here.
        let before = self.seen.remove(dir).filter(|b| b.ino == ino);
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
            ino,
            vectors: Vec::new(),
            git_like: is_git_like(dir),
            recent,
        };
        for (name, kind) in &entries {
            let path = dir.join(name);
            // At the top, `Before` has checks of its own (and binds, at the bwrap level).
            let vector = !at_top && is_anywhere_vector(name);
            if vector {
                seen.vectors.push(name.clone());
                if name == ".git" {
                    // A nested repository (or a `.git` file naming a git directory): judged
                    // when first seen; one git would have written is judged again after every
                    // command (`clean`), since its config and hooks change without its
                    // directory changing.
                    if !held(name) {
                        let why = untrusted_dot_git(&path, &root_git)
                            .or_else(|| the_commands(&path).then(|| unexplained(&path)).flatten());
                        match why {
                            Some(why) if the_commands(&path) => found.push((
                                path,
                                format!("a git directory git would not have written: {why}"),
                            )),
                            Some(_) => {}
                            None => {
                                self.clean.insert(path);
                            }
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
            let why = untrusted_git_dir(dir, None, 0)
                .or_else(|| the_commands(dir).then(|| unexplained(dir)).flatten());
            match why {
                Some(why) if the_commands(dir) => found.push((
                    dir.to_path_buf(),
                    format!(
                        "a git directory under another name, which git would not have written: \
                         {why}"
                    ),
                )),
                Some(_) => {}
                None => {
                    self.clean.insert(dir.to_path_buf());
                }
            }
        }
        if !keep {
            return later;
        }
        self.seen.insert(dir.to_path_buf(), seen);
        #[cfg(target_os = "linux")]
        if self.watch.is_none()
            && self.seen.len() > STAT_AT_MOST
            && self.wanted == Some(Watching::BySize)
        {
            self.start_watching();
        }
        later
    }

    /// The git directories that were clean when seen, judged again: one that now runs a program
    /// is returned (and forgotten). `report`: after a command (else the person's change
    /// between commands, which is left alone).
    pub(super) fn judge_clean(&mut self, root: &Path, report: bool) -> Vec<(PathBuf, String)> {
        let mut found = Vec::new();
        let root_git = root.join(".git");
        self.clean.retain(|path| {
            let Ok(meta) = std::fs::symlink_metadata(path) else {
                return false;
            };
            let why = if path.file_name().is_some_and(|n| n == ".git") {
                untrusted_dot_git(path, &root_git)
            } else if meta.is_dir() {
                untrusted_git_dir(path, None, 0)
            } else {
                // A git directory under another name replaced by a file: nothing of git's.
                return false;
            };
            match why {
                None => true,
                Some(why) => {
                    if report {
                        found.push((
                            path.clone(),
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

    /// The work tree's hooks directory (`sandbox::protected::hooks_dir`), kept for the
    /// session: asking git costs a process, and the setting changes only with `.git/config`,
    /// which is protected.
    pub(super) fn hooks_path(&mut self, root: &Path) -> Option<PathBuf> {
        use std::os::unix::fs::MetadataExt;
        let stamp = std::fs::metadata(root.join(".git/config"))
            .ok()
            .map(|m| (m.ino() ^ m.len(), m.modified().ok()));
        match &self.hooks_path {
            Some((kept, path)) if *kept == stamp => path.clone(),
            _ => {
                let path = sandbox::protected::hooks_dir(root);
                self.hooks_path = Some((stamp, path.clone()));
                path
            }
        }
    }

    /// Whether inotify reports the changes (else every directory is `stat`ed).
    /// The entries protected anywhere that the picture holds below the top, relative to
    /// `root`, but `.git` (judged as a git directory) and `.gg`.
    pub(super) fn vectors_below(&self, root: &Path) -> Vec<PathBuf> {
        self.seen
            .iter()
            .filter(|(dir, _)| dir.as_path() != root)
            .flat_map(|(dir, seen)| seen.vectors.iter().map(move |name| dir.join(name)))
            .filter(|path| {
                path.file_name()
                    .is_some_and(|name| name != ".git" && name != ".gg")
            })
            .filter_map(|path| path.strip_prefix(root).ok().map(Path::to_path_buf))
            .collect()
    }

    /// Starts watching every directory kept so far with inotify (once: after a failure,
    /// never again). Those read before their watch was added are read again at the next sweep
    /// (a change between their reading and their watch is reported by nothing else).
    #[cfg(target_os = "linux")]
    fn start_watching(&mut self) {
        use rustix::fs::inotify::CreateFlags;
        if self.wanted == Some(Watching::Never) || self.watch.is_some() {
            return;
        }
        let Ok(fd) = rustix::fs::inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC) else {
            self.give_up_watching();
            return;
        };
        let mut watch = Watch {
            fd,
            dirs: HashMap::new(),
        };
        if !watch.rebuild(self.seen.keys()) {
            self.give_up_watching();
            return;
        }
        for seen in self.seen.values_mut() {
            seen.recent = true;
        }
        self.watch = Some(watch);
    }

    /// Ends watching for the session: every sweep `stat`s every directory.
    #[cfg(target_os = "linux")]
    fn give_up_watching(&mut self) {
        self.watch = None;
        self.wanted = Some(Watching::Never);
    }

    pub(super) fn watching(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.watch.is_some();
        #[cfg(not(target_os = "linux"))]
        return false;
    }

    /// Forgets each of `dirs` and everything below it (removed or replaced by a file), in one
    /// pass: `rm -rf` of many kept directories reports each of them.
    fn forget(&mut self, dirs: Vec<PathBuf>) {
        if dirs.is_empty() {
            return;
        }
        let gone: std::collections::HashSet<PathBuf> = dirs.into_iter().collect();
        self.seen
            .retain(|p, _| !p.ancestors().any(|a| gone.contains(a)));
    }
}

/// The subdirectories of `dir` the sweep looks in (as [`ProjectDirs::read`] chooses them).
fn subdirectories(root: &Path, dir: &Path) -> Vec<PathBuf> {
    let at_top = dir == root;
    match listing::read_dir(dir) {
        Ok(entries) => entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name())
            .filter(|name| {
                !is_anywhere_vector(name)
                    && !(at_top && (name == ".git" || name == ".gg"))
                    && !UNWATCHED.iter().any(|u| name == *u)
            })
            .map(|name| dir.join(name))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// When the sweep watches the project's directories with inotify rather than `stat`ing each.
#[cfg(target_os = "linux")]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Watching {
    /// Once the picture keeps more than [`STAT_AT_MOST`] directories (where it can be set up).
    BySize,
    /// From the first walk, whatever the project's size.
    Always,
    /// Never: every sweep `stat`s every directory, as when inotify's limits are reached.
    Never,
}

/// [`Watching::BySize`]; a test-hooks build can take either way on purpose, whatever the
/// project's size (`GG_TEST_SWEEP_NO_INOTIFY=1`: never, `=0`: always), so that the tests prove
/// both ways of finding what a command changed on small fixtures.
#[cfg(target_os = "linux")]
fn watching_wanted() -> Watching {
    #[cfg(feature = "test-hooks")]
    match std::env::var_os("GG_TEST_SWEEP_NO_INOTIFY") {
        Some(v) if v == "1" => return Watching::Never,
        Some(v) if v == "0" => return Watching::Always,
        _ => {}
    }
    Watching::BySize
}

/// A name an agent, editor or git reads in whatever directory it is started in.
/// A class (`*.code-workspace`) counts by its ending, as the sandbox's list matches it.
fn is_anywhere_vector(name: &std::ffi::OsStr) -> bool {
    sandbox::protected::entry_named(name, false).is_some()
}

/// The protected entries of more than one name that exist in `root` and are no links (a link
/// is the pinned-links check's), with their identity.
pub(super) fn nested_entries(root: &Path) -> Vec<(PathBuf, (u64, u64))> {
    sandbox::protected::placeholders(root)
        .filter(|path| {
            path.strip_prefix(root)
                .is_ok_and(|rel| rel.components().count() > 1)
        })
        .filter_map(|path| identity(&path).map(|id| (path, id)))
        .collect()
}

/// The device and inode `path` names (no link followed), `None` when absent or a link.
pub(super) fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|meta| !meta.file_type().is_symlink())
        .map(|meta| identity_of(&meta))
}

/// The device and inode of what `meta` describes.
pub(super) fn identity_of(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// The names at the top of `root` of a protected class (`*.code-workspace`): no placeholder
/// stands for a class, so the sweep compares these names before and after a command.
pub(super) fn names_of_class(root: &Path) -> Vec<OsString> {
    names(root)
        .into_iter()
        .filter(|name| sandbox::protected::of_a_class(name))
        .collect()
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

/// What git takes for a git directory (its `is_git_directory`): `HEAD`, with `objects` and
/// `refs` beside it or in the directory a `commondir` file names (whose config git then obeys).
/// A `commondir` counts whatever it names: deny by default.
pub(super) fn is_git_like(dir: &Path) -> bool {
    sandbox::protected::is_git_dir_layout(|name| std::fs::symlink_metadata(dir.join(name)).is_ok())
}

/// The change time of a file: what a program cannot set (unlike the modification time).
pub(super) trait ChangeTime {
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

/// Why a `.git` below the top makes a repository git would not have written: a directory is
/// judged as one; a file is a pointer (`gitdir: <dir>`, as a submodule's checkout or a linked
/// worktree has) and the git directory it names is judged, wherever it is (in `node_modules`,
/// which is not looked in, or outside the project). `root_git`: the project's git directory,
/// which [`Before`] judges.
pub(super) fn untrusted_dot_git(path: &Path, root_git: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.is_dir() {
        return untrusted_git_dir(path, None, 0);
    }
    if !meta.is_file() {
        return Some("not a directory".into());
    }
    let Some(named) = pointed_git_dir(path) else {
        return Some("a .git file that names no git directory".into());
    };
    if same_dir(&named, root_git) {
        return None;
    }
    let why = match common_dir(&named) {
        // A worktree of the project's own repository.
        Some(common) if same_dir(&common, root_git) => untrusted_git_dir(&named, Some(root_git), 0),
        // A worktree of another repository: that repository is judged, its worktrees with it.
        Some(common)
            if named.parent().is_some_and(|p| {
                p.file_name().is_some_and(|n| n == "worktrees")
                    && p.parent().is_some_and(|c| same_dir(c, &common))
            }) =>
        {
            untrusted_git_dir(&common, None, 0)
        }
        _ => untrusted_git_dir(&named, None, 0),
    };
    why.map(|why| format!("it names {}, where {why}", named.display()))
}

/// The directory a `.git` file names (`gitdir: <path>`, relative to the file's directory).
fn pointed_git_dir(file: &Path) -> Option<PathBuf> {
    let text = read_text(file)?;
    let named = text.strip_prefix("gitdir:")?.trim();
    if named.is_empty() {
        return None;
    }
    Some(file.parent()?.join(named))
}

/// The directory a git directory's `commondir` file names, where git takes its objects, refs,
/// config and hooks from. `None` when it is not a regular file (a FIFO, a link), which callers
/// count as naming somewhere untrusted.
fn common_dir(dir: &Path) -> Option<PathBuf> {
    let text = read_text(&dir.join("commondir"))?;
    let named = text.trim_end_matches(['\n', '\r']);
    (!named.is_empty()).then(|| dir.join(named))
}

/// Whether two paths are the same directory (both resolved).
fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Why `dir`, a git directory a command created, is not one git would have written (`None`
/// when it is). `main`: the git directory a worktree's `commondir` may name (judged on its
/// own); any other `commondir` is one git would not have written.
pub(super) fn untrusted_git_dir(dir: &Path, main: Option<&Path>, depth: usize) -> Option<String> {
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
            .find_map(|n| untrusted_git_dir(&dir.join(n), main, depth + 1));
    }
    if let Some(why) = runs_programs(dir) {
        return Some(why);
    }
    if std::fs::symlink_metadata(dir.join("commondir")).is_ok() {
        let common = common_dir(dir);
        let own = common
            .as_deref()
            .zip(main)
            .is_some_and(|(common, main)| same_dir(common, main));
        if !own {
            // What git obeys there (`docs/HEAD` + `docs/commondir` naming `docs/_c`, whose
            // config sets `extensions.worktreeConfig`, and `docs/config.worktree`), said when
            // that is why.
            if let Some(why) = common.as_deref().and_then(runs_programs) {
                return Some(format!("the directory its commondir names: {why}"));
            }
            return Some("it takes its repository from elsewhere (commondir)".into());
        }
    }
    names(&dir.join("modules"))
        .into_iter()
        .find_map(|n| untrusted_git_dir(&dir.join("modules").join(n), None, depth + 1))
        .or_else(|| {
            names(&dir.join("worktrees")).into_iter().find_map(|n| {
                untrusted_git_dir(&dir.join("worktrees").join(n), Some(dir), depth + 1)
            })
        })
}

/// A repository the command made, judged by what git writes (deny by default): a key in its
/// `config` or `config.worktree` that `git init`, `clone`, `submodule` or `worktree` (or a test
/// script's usual set-up, `user.name` and the like) would not have written
/// (`GitConfig::keys_git_would_not_write`), so a key that runs a program and is missing from
/// the classifier's table still counts. `path`: the git directory, or a `.git` directory. The
/// person's own repositories are judged by what they run (`runs_programs`) instead: an unusual
/// key of theirs is theirs.
fn unexplained(path: &Path) -> Option<String> {
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        return None;
    }
    let mut files = Vec::new();
    for name in ["config", "config.worktree"] {
        match read_regular(&path.join(name), false) {
            Ok(Some(bytes)) => files.push(String::from_utf8_lossy(&bytes).into_owned()),
            Ok(None) => {}
            // git writes a regular file; a link (whose target can change after this check)
            // or a FIFO (which blocks whoever opens it) is not one it wrote.
            Err(what) => return Some(format!("its {name} is {what}")),
        }
    }
    let config = classifier::GitConfig { files };
    if let Some(key) = config.keys_git_would_not_write().first() {
        return Some(format!(
            "its configuration has a key git would not have written ({key})"
        ));
    }
    // Where the git directory is known, a relative work tree is judged exactly: git writes
    // one only for a submodule's git directory, naming its work tree below the directory that
    // holds the enclosing `.git` (`../../../sub` from `.git/modules/sub`), never above it
    // (`../../home` from `sub/.git`, which the lexical table cannot tell from git's own).
    let within = path
        .ancestors()
        .find(|dir| dir.file_name().is_some_and(|name| name == ".git"))
        .unwrap_or(path)
        .parent()?;
    config
        .worktree()
        .filter(|value| classifier::GitConfig::worktree_outside(path, value, within))
        .map(|value| {
            format!(
                "its core.worktree ({value}) names a work tree outside {}",
                within.display()
            )
        })
}

/// Why git run with `dir` as its git directory (or as the common directory another names)
/// would run a program: an include (git writes none; one names a file elsewhere, the work tree
/// included, whose text a later command can change after this check), a key of the
/// classifier's table in `config` or `config.worktree` (includes followed, an unreadable one
/// counting), a hook but git's `*.sample` templates.
fn runs_programs(dir: &Path) -> Option<String> {
    // A config or config.worktree that is not a regular file counts, as an include does: a
    // link's target can change after this check, and a FIFO blocks git (and this process).
    let mut texts = Vec::new();
    for name in ["config", "config.worktree"] {
        match read_regular(&dir.join(name), false) {
            Ok(bytes) => {
                texts.push(String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned())
            }
            Err(what) => return Some(format!("its {name} is {what}")),
        }
    }
    let includes = texts[0]
        .lines()
        .any(|l| l.trim_start().to_ascii_lowercase().starts_with("[include"));
    if includes {
        return Some("its configuration includes another file".into());
    }
    // `config` was read above and has no include, so this reads it alone, again without
    // following a link or blocking.
    let config = classifier::GitConfig::load_with(dir, read_text);
    let mut programs = config.program_keys();
    programs.extend(
        classifier::GitConfig {
            files: vec![texts[1].clone()],
        }
        .program_keys(),
    );
    if let Some(key) = programs.first() {
        return Some(format!("its configuration runs a program ({key})"));
    }
    names(&dir.join("hooks"))
        .into_iter()
        .find(|n| !n.to_str().is_some_and(|n| n.ends_with(".sample")))
        .map(|hook| format!("it has a hook ({})", hook.to_string_lossy()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `.envrc` in `dir` and puts the directory's new change time into the picture, as a
    /// change in the clock tick of the one seen would leave it: by change time alone, the
    /// picture cannot tell the directory changed. Returns what the picture holds of `dir`.
    fn plant_in_the_seen_tick<'a>(dirs: &'a mut ProjectDirs, dir: &Path) -> &'a mut Seen {
        use std::os::unix::fs::MetadataExt;
        std::fs::write(dir.join(".envrc"), "x").unwrap();
        let meta = std::fs::symlink_metadata(dir).unwrap();
        let seen = dirs.seen.get_mut(dir).unwrap();
        assert_eq!(seen.ino, meta.ino());
        seen.changed = meta.created_or_changed();
        seen
    }

    /// A project of three directories, pictured once, watched by size (as without a
    /// test-hooks knob in the environment).
    #[cfg(target_os = "linux")]
    fn small_project() -> (tempfile::TempDir, PathBuf, ProjectDirs) {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        for i in 0..3 {
            std::fs::create_dir(root.join(format!("d{i}"))).unwrap();
        }
        let mut dirs = ProjectDirs::new();
        dirs.wanted = Some(Watching::BySize);
        dirs.refresh(&root, None);
        (t, root, dirs)
    }

    /// A project of a few directories is compared by `stat` (no inotify instance, whose close
    /// costs a session 5–20 ms); one that grows past [`STAT_AT_MOST`] is watched from then on.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_small_project_is_stated_and_a_large_one_watched() {
        let (_t, root, mut dirs) = small_project();
        assert!(!dirs.watching(), "{} directories", dirs.seen.len());
        let since = SystemTime::now() - Duration::from_millis(50);
        for i in 0..STAT_AT_MOST {
            std::fs::create_dir(root.join(format!("d0/n{i}"))).unwrap();
        }
        dirs.refresh(&root, Some(since));
        assert!(dirs.watching(), "{} directories", dirs.seen.len());
        // What a command plants in a directory kept before the watches existed is still found.
        let since = SystemTime::now() - Duration::from_millis(50);
        std::fs::write(root.join("d2/.envrc"), "x").unwrap();
        let found = dirs.refresh(&root, Some(since));
        assert!(
            found.iter().any(|(p, _)| p.ends_with("d2/.envrc")),
            "{found:?}"
        );
    }

    /// A change made before the watches existed, which the directory's change time no longer
    /// shows (written back here, as a change in the tick of the one seen would leave it), is
    /// read when the picture starts watching: every directory kept until then is read again.
    #[cfg(target_os = "linux")]
    #[test]
    fn what_changed_before_the_watches_existed_is_read_again() {
        let (_t, root, mut dirs) = small_project();
        let since = SystemTime::now() - Duration::from_millis(50);
        plant_in_the_seen_tick(&mut dirs, &root.join("d2")).recent = false;
        for i in 0..STAT_AT_MOST {
            std::fs::create_dir(root.join(format!("d0/n{i}"))).unwrap();
        }
        let mut found = dirs.refresh(&root, Some(since));
        assert!(dirs.watching());
        found.extend(dirs.refresh(&root, Some(since)));
        assert!(
            found.iter().any(|(p, _)| p.ends_with("d2/.envrc")),
            "{found:?}"
        );
    }

    /// A change in the clock tick of the one seen leaves a directory's change time as it was
    /// (simulated here by writing back the change time the picture holds): a directory that
    /// had just changed when it was read is read again at the next sweep all the same.
    #[test]
    fn a_directory_read_just_after_a_change_is_read_again() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let mut dirs = ProjectDirs::new();
        #[cfg(target_os = "linux")]
        {
            dirs.wanted = Some(Watching::Never); // compared by `stat` whatever the environment says
        }
        dirs.refresh(&root, None);
        let since = SystemTime::now() - Duration::from_millis(50);
        plant_in_the_seen_tick(&mut dirs, &root.join("sub"));
        let found = dirs.refresh(&root, Some(since));
        assert!(
            found.iter().any(|(p, _)| p.ends_with("sub/.envrc")),
            "{found:?}"
        );
    }
}
