//! The landlock level's copies of the protected entries that exist when a command starts
//! (`.gg`, `AGENTS.md`, `.envrc`, `.vscode/`, …): kept before the command, put back after it
//! ([`Kept`]). At the bwrap level they are read-only binds and nothing here runs.

use super::*;

/// The project's `.gg` as it was before a command at the landlock level, kept so that what the
/// command changed there is put back: bubblewrap binds `.gg` read-only, but Landlock cannot
/// carve a directory out of a writable one, and what gg reads from it decides what gg does
/// (`settings.json`, `policy.toml`, skills) or becomes the next session's prompt (the project's
/// memory, `.gg/memory/`, as `AGENTS.md` does). An attacker pass planted a FIFO at
/// `.gg/settings.json` and made `.gg/quarantine` a link there. After the command, a file or link
/// it changed or removed is put back from the copy (its version moved to the quarantine), what
/// it added is moved there, and a directory's permissions are set back: `.gg` ends as it was,
/// as at the bwrap level. Nothing is followed: the tree is read through descriptors with
/// `O_NOFOLLOW`, a link kept as a link, a FIFO or device only by its identity.
///
/// `.gg/outputs` and `.gg/quarantine` are gg's own write areas (the command's full output is
/// saved while it runs, the sweep moves things in after it) and are not kept; the command may
/// not make either anything but a directory. The file tools' pre-approved `.gg/agent` is no
/// exception: at the bwrap level commands cannot write it either.
///
/// The same holds for every other protected entry of [`sandbox::protected::PROTECTED_IN_ROOT`]
/// that exists at the top of the project when a command starts (`AGENTS.md`, `.envrc`,
/// `.vscode/`, `.husky/`, `lefthook.yml`, …, bound read-only by bubblewrap): a command at the
/// landlock level that edits `.husky/pre-commit` would otherwise leave what the person's next
/// `git commit` runs. Each is kept the same way, and put back the same way after the command.
pub(super) struct Kept {
    /// The entry, relative to the project (`.gg`, `AGENTS.md`, `.github/instructions`).
    pub(super) rel: PathBuf,
    /// Why it is kept, in the tool output.
    why: &'static str,
    /// Names at its top that are not kept (gg's own write areas of `.gg`; none elsewhere).
    own: &'static [&'static str],
    top: KeptTop,
    /// `.gg/outputs` and `.gg/quarantine` as they were (`None`: absent, or `.gg` no directory).
    own_areas: Vec<(&'static str, Option<Stamp>)>,
    /// An entry whose change time lies at or after this may have been changed again within
    /// the same tick of the file system's clock (a put-back just before the command): its
    /// content is compared even when its stamp is the same.
    racy_from: (i64, i64),
}

enum KeptTop {
    Absent,
    /// A link (committed in a cloned repository) or another file: put back if it changes,
    /// never followed.
    NotDir(Content),
    Dir(KeptDir),
}

#[derive(Default)]
struct KeptDir {
    /// Its permission bits.
    mode: u32,
    entries: std::collections::BTreeMap<OsString, KeptEntry>,
}

struct KeptEntry {
    stamp: Stamp,
    node: KeptNode,
}

enum KeptNode {
    Dir(KeptDir),
    Leaf(Content),
}

/// What tells an entry unchanged: a write, `chmod`, `ln` or a rename-over changes its change
/// time (which no program can set back) or its inode.
#[derive(PartialEq, Clone, Copy)]
struct Stamp {
    mode: u32,
    ino: u64,
    size: u64,
    nlink: u64,
    changed: (i64, i64),
}

impl Stamp {
    // The fields' types differ between targets.
    #[allow(clippy::unnecessary_cast)]
    fn of(stat: &rustix::fs::Stat) -> Stamp {
        Stamp {
            mode: stat.st_mode as u32,
            ino: stat.st_ino as u64,
            size: stat.st_size as u64,
            nlink: stat.st_nlink as u64,
            changed: (stat.st_ctime as i64, stat.st_ctime_nsec as i64),
        }
    }

    fn is_dir(&self) -> bool {
        rustix::fs::FileType::from_raw_mode(self.mode) == rustix::fs::FileType::Directory
    }
}

/// The most entries of `.gg` kept before a command at the landlock level. gg's own files there
/// are a few dozen (settings, policy, memory notes and daily logs, skills, agent notes); past
/// this (or [`KEPT_MAX_BYTES`], or a file over [`MAX_KEPT`]) the command is refused at that level
/// rather than run with `.gg` unprotected.
const KEPT_MAX_ENTRIES: usize = 5_000;

/// The most bytes of `.gg` kept before a command (see [`KEPT_MAX_ENTRIES`]).
const KEPT_MAX_BYTES: u64 = 16 << 20;

/// Directories nested deeper than this in `.gg` are not kept (the command is refused).
const KEPT_MAX_DEPTH: usize = 32;

/// Why `.gg` is put back, in the tool output.
const GG_WHY: &str = "inside gg's project settings (policy, settings, memory, skills), which \
                      decide what gg does and tells the model, and which commands may not change";

/// What is kept of `.gg` so far, against its limits.
#[derive(Default)]
struct KeptBudget {
    entries: usize,
    bytes: u64,
}

impl Kept {
    /// Keeps `root/.gg`; why not when it is too large (or cannot be read). What `last` (the
    /// copy kept before the session's last command) holds with the same stamp, and changed
    /// before it was read, has not changed since and is taken from it, not read again.
    pub(super) fn look(root: &Path, last: Option<Kept>) -> Result<Kept, String> {
        let mut budget = KeptBudget::default();
        Kept::look_entry(
            root,
            Path::new(".gg"),
            GG_WHY,
            GG_OWN_AREAS,
            last,
            &mut budget,
        )
    }

    /// Keeps each protected entry of [`sandbox::protected::PROTECTED_IN_ROOT`] but `.git` and
    /// `.gg` (compared on their own) that exists at the top of `root`, together within one
    /// budget; why not when they are too large to keep (or cannot be read). `last`: the copies
    /// kept before the session's last command, as for [`Kept::look`].
    ///
    /// A placeholder that is a link is left to [`pinned_links`], which puts back a link the
    /// command re-pointed or replaced.
    /// `below`: the entries protected anywhere that [`ProjectDirs`] knows below the top
    /// (`sub/AGENTS.md`), relative to `root`.
    pub(super) fn look_protected(
        root: &Path,
        last: Vec<Kept>,
        below: Vec<PathBuf>,
    ) -> Result<Vec<Kept>, String> {
        use sandbox::protected::{Bind, PROTECTED_IN_ROOT};
        let mut last: HashMap<PathBuf, Kept> = last
            .into_iter()
            .map(|kept| (kept.rel.clone(), kept))
            .collect();
        let root_fd = open_dir(rustix::fs::CWD, root)
            .map_err(|e| format!("the project could not be read ({e})"))?;
        let mut found: Vec<(PathBuf, &'static sandbox::protected::ProtectedPath)> = Vec::new();
        // One listing of the top finds the one-name entries and the classes
        // (`*.code-workspace`); an entry of two names (`.github/instructions`) is looked up.
        for name in
            dir_names(&root_fd).map_err(|e| format!("the project could not be read ({e})"))?
        {
            if let Some(entry) = sandbox::protected::entry_named(&name, true) {
                found.push((PathBuf::from(name), entry));
            }
        }
        for entry in PROTECTED_IN_ROOT.iter().filter(|p| p.name.contains('/')) {
            let rel = PathBuf::from(entry.name);
            if std::fs::symlink_metadata(root.join(&rel)).is_ok() {
                found.push((rel, entry));
            }
        }
        // Links below the top are kept here, as links: the pinned-links check looks at the top.
        let mut below_top = Vec::new();
        for rel in below {
            if let Some(entry) = rel
                .file_name()
                .and_then(|name| sandbox::protected::entry_named(name, false))
            {
                below_top.push(rel.clone());
                found.push((rel, entry));
            }
        }
        let mut budget = KeptBudget::default();
        let mut kept = Vec::new();
        let mut kept_rels: Vec<PathBuf> = Vec::new();
        let canonical_root = std::fs::canonicalize(root).ok();
        for (rel, entry) in found {
            if matches!(entry.bind, Bind::GitDir) || entry.name == ".gg" {
                continue;
            }
            let pinned = !below_top.contains(&rel)
                && entry.bind == Bind::Placeholder
                && !entry.is_class()
                && std::fs::symlink_metadata(root.join(&rel)).is_ok_and(|m| m.is_symlink());
            // The link itself is the pinned-links check's; what it leads to inside the project
            // (`AGENTS.md -> docs/agents.md`) is kept here, as the entry would be.
            let rel = if pinned {
                match std::fs::canonicalize(root.join(&rel))
                    .ok()
                    .zip(canonical_root.as_deref())
                    .and_then(|(target, root)| sandbox::protected::inside_project(root, &target))
                {
                    Some(target) => target,
                    None => continue,
                }
            } else {
                rel
            };
            // `AGENTS.md -> CLAUDE.md` with `CLAUDE.md` an entry itself: one copy.
            if kept_rels.contains(&rel) {
                continue;
            }
            kept_rels.push(rel.clone());
            let last = last.remove(&rel);
            let entry_kept = Kept::look_entry(root, &rel, entry.why, &[], last, &mut budget)?;
            kept.push(entry_kept);
        }
        Ok(kept)
    }

    /// Keeps `root/rel` (`why`: why, for the tool output; `own`: names at its top not kept)
    /// against `budget`, shared by the entries kept together; `last` as for [`Kept::look`].
    fn look_entry(
        root: &Path,
        rel: &Path,
        why: &'static str,
        own: &'static [&'static str],
        last: Option<Kept>,
        budget: &mut KeptBudget,
    ) -> Result<Kept, String> {
        use rustix::fs::{AtFlags, FileType};
        let racy_from = epoch_pair(SystemTime::now() - Duration::from_millis(50));
        let shown = rel.display();
        let too_large = |what: String| {
            format!(
                "the project's {shown} {what}, more than gg keeps a copy of before each command \
                 at the landlock level (where {shown} is not read-only to commands and gg puts \
                 back what a command changes there from that copy); run at the bubblewrap level \
                 (install bubblewrap), where it is read-only to commands, or make it smaller"
            )
        };
        let unreadable =
            |e: &dyn std::fmt::Display| format!("the project's {shown} could not be read ({e})");
        let (parent_fd, name) = open_parent(root, rel).map_err(|e| unreadable(&e))?;
        let mut own_areas: Vec<(&'static str, Option<Stamp>)> =
            own.iter().map(|name| (*name, None)).collect();
        let top = match rustix::fs::statat(&parent_fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Err(rustix::io::Errno::NOENT) => KeptTop::Absent,
            Err(e) => return Err(unreadable(&e)),
            Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::Directory => {
                let fd = open_dir(&parent_fd, name).map_err(|e| unreadable(&e))?;
                for (name, was) in &mut own_areas {
                    *was = rustix::fs::statat(&fd, *name, AtFlags::SYMLINK_NOFOLLOW)
                        .ok()
                        .map(|stat| Stamp::of(&stat));
                }
                let reuse = last.and_then(|last| match last.top {
                    KeptTop::Dir(dir) => Some((dir, last.racy_from)),
                    _ => None,
                });
                KeptTop::Dir(KeptDir::look(&fd, rel, 0, own, budget, reuse).map_err(
                    |e| match e {
                        KeepError::TooLarge(what) => too_large(what),
                        KeepError::Unreadable(what) => what,
                    },
                )?)
            }
            Ok(stat) => {
                let content = read_leaf(&parent_fd, name, &stat).map_err(|e| {
                    if e.starts_with("is larger") {
                        too_large(e)
                    } else {
                        unreadable(&e)
                    }
                })?;
                if let Content::File { bytes, .. } = &content {
                    budget.bytes += bytes.len() as u64;
                    if budget.bytes > KEPT_MAX_BYTES {
                        return Err(too_large(format!(
                            "brings what is kept to more than {} MiB",
                            KEPT_MAX_BYTES >> 20
                        )));
                    }
                }
                KeptTop::NotDir(content)
            }
        };
        Ok(Kept {
            rel: rel.to_path_buf(),
            why,
            own,
            top,
            own_areas,
            racy_from,
        })
    }

    /// After the command: puts the entry back as it was; a line about each thing done.
    pub(super) fn sweep(&self, root: &Path) -> Vec<String> {
        use rustix::fs::{AtFlags, FileType};
        let mut lines = Vec::new();
        let why = self.why;
        let path = root.join(&self.rel);
        let (parent_fd, name) = match open_parent(root, &self.rel) {
            Ok(found) => found,
            Err(e) => {
                lines.push(format!(
                    "[gg: the directory holding {} could not be read after the command ({e}): \
                     look at it before starting gg or opening the project there again]",
                    self.rel.display()
                ));
                return lines;
            }
        };
        let now = rustix::fs::statat(&parent_fd, name, AtFlags::SYMLINK_NOFOLLOW).ok();
        let is_dir =
            |stat: &rustix::fs::Stat| FileType::from_raw_mode(stat.st_mode) == FileType::Directory;
        let made_by_command = KeptDir::default();
        let kept = match (&self.top, &now) {
            (KeptTop::Absent, None) => return lines,
            (KeptTop::Absent, Some(stat)) if !is_dir(stat) => {
                return quarantine(root, &[(path, why.to_string())]);
            }
            (KeptTop::Absent, Some(_)) => &made_by_command,
            (KeptTop::NotDir(content), _) => {
                if Content::of(&path).as_ref() != Some(content) {
                    lines.push(match now {
                        Some(_) => move_aside_and_put_back(root, &path, why, Some(content)),
                        None => put_back_removed(&parent_fd, root, &path, why, |dir, name| {
                            content.put_back(dir, name)
                        }),
                    });
                }
                return lines;
            }
            (KeptTop::Dir(kept), Some(stat)) if is_dir(stat) => {
                if stat.st_mode & 0o7777 != kept.mode {
                    lines.push(set_mode_back(&parent_fd, root, &path, why, kept.mode));
                }
                kept
            }
            // Removed, or replaced by a link or a file: what is there goes, the copy comes back.
            (KeptTop::Dir(kept), Some(_)) => {
                lines.push(replace_with_kept_dir(root, &path, why, kept));
                return lines;
            }
            (KeptTop::Dir(kept), None) => {
                lines.push(put_back_removed(
                    &parent_fd,
                    root,
                    &path,
                    why,
                    |dir, name| kept.put_back(dir, name),
                ));
                return lines;
            }
        };
        let fd = match open_dir(&parent_fd, name) {
            Ok(fd) => fd,
            Err(e) => {
                lines.push(format!(
                    "[gg: {} could not be read after the command ({e}): look at it before \
                     starting gg or opening the project there again]",
                    self.rel.display()
                ));
                return lines;
            }
        };
        // Its own areas (`.gg`'s): a directory or nothing. First, so that the quarantine can
        // be used.
        for (name, was) in &self.own_areas {
            if let Ok(stat) = rustix::fs::statat(&fd, *name, AtFlags::SYMLINK_NOFOLLOW)
                && !is_dir(&stat)
                && Some(Stamp::of(&stat)) != *was
            {
                lines.extend(quarantine(
                    root,
                    &[(
                        path.join(name),
                        format!("where gg keeps its {name}, which is gg's own directory"),
                    )],
                ));
            }
        }
        kept.compare(
            root,
            &fd,
            &self.rel,
            self.own,
            why,
            self.racy_from,
            &mut lines,
        );
        lines
    }
}

/// The directory holding `rel` (below `root`), opened without following a link on the way,
/// and `rel`'s last name.
fn open_parent<'a>(root: &Path, rel: &'a Path) -> std::io::Result<(OwnedFd, &'a OsStr)> {
    let name = rel
        .file_name()
        .ok_or_else(|| std::io::Error::other("it has no name"))?;
    let mut fd = open_dir(rustix::fs::CWD, root)?;
    if let Some(parent) = rel.parent() {
        for component in parent.components() {
            fd = open_dir(&fd, component.as_os_str())?;
        }
    }
    Ok((fd, name))
}

/// Why [`KeptDir::look`] could not keep an entry.
enum KeepError {
    /// Over a limit: fail closed.
    TooLarge(String),
    /// An entry could not be read (said with its path).
    Unreadable(String),
}

impl KeptDir {
    /// Keeps the directory open at `fd` (`rel`: its path in the project, for messages; `own`:
    /// names at the top, `depth` 0, that are not kept). `last`: the same directory in the last
    /// copy, and when that copy was made (its racy bound).
    fn look(
        fd: &OwnedFd,
        rel: &Path,
        depth: usize,
        own: &[&str],
        budget: &mut KeptBudget,
        mut last: Option<(KeptDir, (i64, i64))>,
    ) -> Result<KeptDir, KeepError> {
        use rustix::fs::{AtFlags, FileType};
        let unreadable = |rel: &Path, e: &dyn std::fmt::Display| {
            KeepError::Unreadable(format!("{} could not be read ({e})", rel.display()))
        };
        let stat = rustix::fs::fstat(fd).map_err(|e| unreadable(rel, &e))?;
        let mut dir = KeptDir {
            mode: stat.st_mode & 0o7777,
            entries: Default::default(),
        };
        for name in dir_names(fd).map_err(|e| unreadable(rel, &e))? {
            if depth == 0 && own.iter().any(|own| name == *own) {
                continue;
            }
            let path = rel.join(&name);
            budget.entries += 1;
            if budget.entries > KEPT_MAX_ENTRIES {
                return Err(KeepError::TooLarge(format!(
                    "has more than {KEPT_MAX_ENTRIES} entries"
                )));
            }
            let stat = rustix::fs::statat(fd, &name, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| unreadable(&path, &e))?;
            let stamp = Stamp::of(&stat);
            let was = last.as_mut().and_then(|(dir, racy_from)| {
                let entry = dir.entries.remove(&name)?;
                Some((entry, *racy_from))
            });
            let node = if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
                if depth + 1 >= KEPT_MAX_DEPTH {
                    return Err(KeepError::TooLarge(format!(
                        "has directories nested more than {KEPT_MAX_DEPTH} deep"
                    )));
                }
                let sub = open_dir(fd, &name).map_err(|e| unreadable(&path, &e))?;
                let last = was.and_then(|(entry, racy_from)| match entry.node {
                    KeptNode::Dir(dir) => Some((dir, racy_from)),
                    KeptNode::Leaf(_) => None,
                });
                KeptNode::Dir(KeptDir::look(&sub, &path, depth + 1, own, budget, last)?)
            } else {
                // Unchanged since it was read (a write would have moved its change time past
                // that copy's racy bound): the bytes kept then are its bytes now.
                let unchanged = was.and_then(|(entry, racy_from)| match entry.node {
                    KeptNode::Leaf(content)
                        if entry.stamp == stamp && entry.stamp.changed < racy_from =>
                    {
                        Some(content)
                    }
                    _ => None,
                });
                let content = match unchanged {
                    Some(content) => Ok(content),
                    None => read_leaf(fd, &name, &stat),
                }
                .map_err(|e| {
                    if e.starts_with("is larger") {
                        KeepError::TooLarge(format!("holds {}, which {e}", path.display()))
                    } else {
                        unreadable(&path, &e)
                    }
                })?;
                if let Content::File { bytes, .. } = &content {
                    budget.bytes += bytes.len() as u64;
                    if budget.bytes > KEPT_MAX_BYTES {
                        return Err(KeepError::TooLarge(format!(
                            "holds more than {} MiB",
                            KEPT_MAX_BYTES >> 20
                        )));
                    }
                }
                KeptNode::Leaf(content)
            };
            dir.entries.insert(name, KeptEntry { stamp, node });
        }
        Ok(dir)
    }

    /// After the command: compares the directory open at `fd` (`rel` in the project below
    /// `root`) with what was kept, putting back what the command changed or removed and moving
    /// aside what it added; `own`: names here that are not compared (the kept entry's own
    /// areas at its top, none below); `why`: why it is kept, for the tool output.
    #[allow(clippy::too_many_arguments)]
    fn compare(
        &self,
        root: &Path,
        fd: &OwnedFd,
        rel: &Path,
        own: &[&str],
        why: &'static str,
        racy_from: (i64, i64),
        lines: &mut Vec<String>,
    ) {
        use rustix::fs::AtFlags;
        let now = match dir_names(fd) {
            Ok(names) => names,
            Err(e) => {
                lines.push(format!(
                    "[gg: {} could not be read after the command ({e}): look at it before \
                     starting gg there again]",
                    rel.display()
                ));
                return;
            }
        };
        for name in &now {
            if own.iter().any(|own| name == *own) {
                continue;
            }
            let path = root.join(rel).join(name);
            let Ok(stat) = rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            let stamp = Stamp::of(&stat);
            match self.entries.get(name) {
                None => lines.extend(quarantine(root, &[(path, why.to_string())])),
                Some(KeptEntry {
                    node: KeptNode::Dir(kept),
                    ..
                }) if stamp.is_dir() => {
                    if stat.st_mode & 0o7777 != kept.mode {
                        lines.push(set_mode_back(fd, root, &path, why, kept.mode));
                    }
                    match open_dir(fd, name) {
                        Ok(sub) => {
                            kept.compare(root, &sub, &rel.join(name), &[], why, racy_from, lines)
                        }
                        Err(e) => lines.push(format!(
                            "[gg: {} could not be read after the command ({e}): look at it \
                             before starting gg there again]",
                            path.display()
                        )),
                    }
                }
                Some(KeptEntry {
                    node: KeptNode::Dir(kept),
                    ..
                }) => lines.push(replace_with_kept_dir(root, &path, why, kept)),
                Some(KeptEntry {
                    stamp: was,
                    node: KeptNode::Leaf(content),
                }) => {
                    let same = stamp == *was
                        && (was.changed < racy_from
                            || read_leaf(fd, name, &stat).ok().as_ref() == Some(content));
                    if !same {
                        lines.push(move_aside_and_put_back(root, &path, why, Some(content)));
                    }
                }
            }
        }
        let now: std::collections::HashSet<&OsString> = now.iter().collect();
        for (name, entry) in &self.entries {
            if !now.contains(name) {
                let path = root.join(rel).join(name);
                lines.push(put_back_removed(fd, root, &path, why, |dir, name| {
                    entry.put_back(dir, name)
                }));
            }
        }
    }

    /// Makes it again as `name` in `dir`, with everything in it; goes on past an entry that
    /// cannot be put back and returns the first such error.
    fn put_back(&self, dir: &OwnedFd, name: &OsStr) -> std::io::Result<()> {
        use rustix::fs::Mode;
        rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o700))?;
        let fd = open_dir(dir, name)?;
        let mut first_error = None;
        for (entry_name, entry) in &self.entries {
            if let Err(e) = entry.put_back(&fd, entry_name) {
                first_error.get_or_insert(e);
            }
        }
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(self.mode))?;
        first_error.map_or(Ok(()), Err)
    }
}

impl KeptEntry {
    fn put_back(&self, dir: &OwnedFd, name: &OsStr) -> std::io::Result<()> {
        match &self.node {
            KeptNode::Dir(kept) => kept.put_back(dir, name),
            KeptNode::Leaf(content) => content.put_back(dir, name),
        }
    }
}

/// gg's own write areas in `.gg`, not kept (see [`Kept`]).
const GG_OWN_AREAS: &[&str] = &["outputs", "quarantine"];

/// Moves what the command left at `path` (where a directory of `.gg` was) aside and makes the
/// kept directory again there; the line that says so.
fn replace_with_kept_dir(root: &Path, path: &Path, why: &str, kept: &KeptDir) -> String {
    let name = shown(root, path);
    match set_aside(root, path) {
        Ok((spot, aside)) => {
            let theirs = match &aside {
                Aside::Quarantined(target) => format!("its version moved to {}", target.display()),
                Aside::Deleted(refused) => format!("its version deleted ({refused})"),
            };
            match kept.put_back(&spot.dir, &spot.name) {
                Ok(()) => format!(
                    "[gg: the command replaced the directory {name}, {why}; {theirs}, the \
                     previous one put back]"
                ),
                Err(e) => format!(
                    "[gg: the command replaced the directory {name}, {why}; {theirs}, and the \
                     previous one could not be put back ({e})]"
                ),
            }
        }
        Err(e) => format!(
            "[gg: the command replaced the directory {name}, {why}, and its version could not \
             be moved aside ({e}): look at it before starting gg there again]"
        ),
    }
}

/// Puts back what the command removed at `path` (in the directory open at `dir`) with `put`;
/// the line that says so.
fn put_back_removed(
    dir: &OwnedFd,
    root: &Path,
    path: &Path,
    why: &str,
    put: impl FnOnce(&OwnedFd, &OsStr) -> std::io::Result<()>,
) -> String {
    let name = shown(root, path);
    let result = match path.file_name() {
        Some(file_name) => put(dir, file_name),
        None => Err(std::io::Error::other("it has no name")),
    };
    match result {
        Ok(()) => format!("[gg: the command removed {name}, {why}; put back]"),
        Err(e) => {
            format!("[gg: the command removed {name}, {why}, and it could not be put back ({e})]")
        }
    }
}

/// Sets the permissions of the directory `path` (in the directory open at `dir`) back to `mode`;
/// the line that says so.
fn set_mode_back(dir: &OwnedFd, root: &Path, path: &Path, why: &str, mode: u32) -> String {
    use rustix::fs::{AtFlags, Mode};
    let name = shown(root, path);
    // A directory (just `stat`ed without following a link, and the command has ended): its
    // mode is set by name, since one the command made unreadable cannot be opened first.
    let result = match path.file_name() {
        Some(file_name) => {
            rustix::fs::chmodat(dir, file_name, Mode::from_raw_mode(mode), AtFlags::empty())
                .map_err(std::io::Error::from)
        }
        None => Err(std::io::Error::other("it has no name")),
    };
    match result {
        Ok(()) => {
            format!("[gg: the command changed the permissions of {name}, {why}; put back]")
        }
        Err(e) => format!(
            "[gg: the command changed the permissions of {name}, {why}, and they could not be \
             put back ({e})]"
        ),
    }
}

/// What `name` in `dir` is, with `stat` its `lstat`: a regular file's bytes (opened with
/// `O_NOFOLLOW|O_NONBLOCK` and checked again with `fstat`, so a FIFO swapped in cannot block),
/// a link's target (not followed), anything else by its identity. `Err` says why not.
fn read_leaf(dir: &OwnedFd, name: &OsStr, stat: &rustix::fs::Stat) -> Result<Content, String> {
    use rustix::fs::{FileType, Mode, OFlags};
    use std::io::Read;
    use std::os::unix::ffi::OsStringExt;
    let stamp = Stamp::of(stat);
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::Symlink => rustix::fs::readlinkat(dir, name, Vec::new())
            .map(|target| Content::Link(PathBuf::from(OsString::from_vec(target.into_bytes()))))
            .map_err(|e| e.to_string()),
        FileType::RegularFile => {
            let too_large = || format!("is larger than {} MiB", MAX_KEPT >> 20);
            if stamp.size > MAX_KEPT {
                return Err(too_large());
            }
            let fd = rustix::fs::openat(
                dir,
                name,
                OFlags::RDONLY
                    | OFlags::NONBLOCK
                    | OFlags::NOFOLLOW
                    | OFlags::NOCTTY
                    | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| e.to_string())?;
            let opened = rustix::fs::fstat(&fd).map_err(|e| e.to_string())?;
            if Stamp::of(&opened).ino != stamp.ino
                || FileType::from_raw_mode(opened.st_mode) != FileType::RegularFile
            {
                return Err("changed while it was read".to_string());
            }
            let mut bytes = Vec::new();
            std::fs::File::from(fd)
                .take(MAX_KEPT + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| e.to_string())?;
            if bytes.len() as u64 > MAX_KEPT {
                return Err(too_large());
            }
            Ok(Content::File {
                bytes,
                mode: stamp.mode,
            })
        }
        _ => Ok(Content::Other {
            ino: stamp.ino,
            changed: SystemTime::UNIX_EPOCH.checked_add(Duration::new(
                u64::try_from(stamp.changed.0).unwrap_or_default(),
                u32::try_from(stamp.changed.1).unwrap_or_default(),
            )),
        }),
    }
}

/// A time as the seconds and nanoseconds of a change time.
fn epoch_pair(time: SystemTime) -> (i64, i64) {
    let since = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    (
        i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
        i64::from(since.subsec_nanos()),
    )
}
