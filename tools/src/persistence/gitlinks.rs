//! The submodules the person's `git status` recurses into: the gitlink entries (mode 160000)
//! of the index. An attacker pass planted a repository with a `core.fsmonitor` where the sweep
//! does not look (`.gg/quarantine`, `.gg/outputs`, a directory past the walk's limit that the
//! write tool made deep enough) and made it active with `git update-index --add --cacheinfo
//! 160000,<sha>,<path>`: the host's `git status` in the project then ran the fsmonitor. The
//! index is read here (never by running git on a repository a command shaped), and each
//! populated gitlink's `.git` is judged as a nested one is, wherever it lies.

use std::path::{Path, PathBuf};

/// The most bytes of an index read (the Linux kernel's is about 10 MiB).
const MAX_INDEX: u64 = 256 << 20;

/// The gitlinks of [`index_names`] alone, for the tests.
#[cfg(test)]
pub(super) fn gitlink_paths(git_dir: &Path, config: Option<&str>) -> Result<Vec<PathBuf>, String> {
    index_names(git_dir, config).map(|names| names.gitlinks)
}

/// What the sweep reads of an index: the names of its gitlinks, and of the tracked files whose
/// changes `git status` does not show.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct IndexNames {
    /// The work-tree paths of the gitlink entries.
    pub gitlinks: Vec<PathBuf>,
    /// The work-tree paths of the entries marked skip-worktree or assume-unchanged (git's
    /// `CE_SKIP_WORKTREE`, `CE_VALID`): `git status` and `git diff` do not look at those files,
    /// so a command that marks one hides its edit of it from the person's review.
    pub hidden: Vec<PathBuf>,
}

/// The names the sweep needs ([`IndexNames`]) in the git directory `git_dir`'s index (and its
/// shared index, with a split index: every entry of both, a superset of what git takes).
/// `config`: the text of `git_dir`'s `config` where the caller has just read it. Empty without
/// an index; `Err` says why it could not be read.
pub(super) fn index_names(git_dir: &Path, config: Option<&str>) -> Result<IndexNames, String> {
    let index_path = git_dir.join("index");
    // No index, no gitlinks (a repository with no commit yet, or no repository): the object
    // format is not asked then. Anything else there is read as before (and judged by `read`).
    if std::fs::symlink_metadata(&index_path).is_err_and(|e| {
        matches!(
            e.kind(),
            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
        )
    }) {
        return Ok(IndexNames::default());
    }
    let hash_len = match config {
        Some(text) => hash_len_of(text),
        None => hash_len(git_dir),
    };
    // Looked at before it is read: what is read is this or newer, so a change after the look
    // only costs a parse next time.
    let stamp = IndexStamp::of(&index_path, hash_len);
    if let Some(paths) = stamp
        .as_ref()
        .and_then(|stamp| LAST.cached(&index_path, stamp))
    {
        return Ok(paths);
    }
    let Some(index) = read(&index_path)? else {
        return Ok(IndexNames::default());
    };
    let parsed = parse(&index, hash_len).map_err(|e| format!("its index {e}"))?;
    let mut gitlinks = parsed.gitlinks;
    let mut hidden = parsed.hidden;
    let split = parsed.shared.is_some();
    if let Some(shared) = parsed.shared {
        let name = format!("sharedindex.{}", hex(&shared));
        // A split index whose shared part is missing is one git refuses to read.
        if let Some(shared) = read(&git_dir.join(&name))? {
            let shared = parse(&shared, hash_len).map_err(|e| format!("its {name} {e}"))?;
            gitlinks.extend(shared.gitlinks);
            hidden.extend(shared.hidden);
        }
    }
    let paths = |names: Vec<Vec<u8>>| -> Vec<PathBuf> {
        names
            .into_iter()
            .map(|bytes| {
                use std::os::unix::ffi::OsStringExt;
                PathBuf::from(std::ffi::OsString::from_vec(bytes))
            })
            .collect()
    };
    let names = IndexNames {
        gitlinks: paths(gitlinks),
        hidden: paths(hidden),
    };
    // A split index has two files; only a whole one is remembered.
    if let Some(stamp) = stamp.filter(|_| !split) {
        LAST.remember(&index_path, stamp, &names);
    }
    Ok(names)
}

/// What identifies one state of an index file: a rewrite (git renames a new file in) changes
/// the inode, a write in place the change time, which no command can set back; and the object
/// name length it was parsed with.
#[derive(Clone, Copy, PartialEq, Eq)]
struct IndexStamp {
    dev: u64,
    ino: u64,
    size: u64,
    ctime: (i64, i64),
    mtime: (i64, i64),
    hash_len: usize,
}

impl IndexStamp {
    fn of(path: &Path, hash_len: usize) -> Option<IndexStamp> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::symlink_metadata(path)
            .ok()
            .filter(|m| m.is_file())?;
        Some(IndexStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            hash_len,
        })
    }
}

/// The last index parsed, with its stamp: the index is read before and after every sandboxed
/// command, whole (10 MiB for a kernel tree), and most commands do not touch it.
struct LastIndex(std::sync::Mutex<Option<(PathBuf, IndexStamp, IndexNames)>>);

static LAST: LastIndex = LastIndex(std::sync::Mutex::new(None));

impl LastIndex {
    fn cached(&self, path: &Path, stamp: &IndexStamp) -> Option<IndexNames> {
        let last = self.0.lock().ok()?;
        let (known, known_stamp, names) = last.as_ref()?;
        (known == path && known_stamp == stamp).then(|| names.clone())
    }

    fn remember(&self, path: &Path, stamp: IndexStamp, names: &IndexNames) {
        if let Ok(mut last) = self.0.lock() {
            *last = Some((path.to_path_buf(), stamp, names.clone()));
        }
    }
}

fn read(path: &Path) -> Result<Option<Vec<u8>>, String> {
    use sandbox::protected::{LastLink, Unreadable};
    match sandbox::protected::read_regular(path, MAX_INDEX, LastLink::Refuse) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(Unreadable::Absent(_)) => Ok(None),
        Err(Unreadable::NotRegular(kind)) => Err(format!("{} is {kind}", path.display())),
        Err(Unreadable::TooLarge(_)) => Err(format!("{} is too large to read", path.display())),
        Err(Unreadable::Failed(e)) => Err(format!("{} could not be read ({e})", path.display())),
    }
}

/// The length of an object name in the repository: 32 bytes where its config sets
/// `extensions.objectFormat = sha256`, else 20.
fn hash_len(git_dir: &Path) -> usize {
    hash_len_of(&super::read_text(&git_dir.join("config")).unwrap_or_default())
}

/// [`hash_len`] of the configuration's text (read as [`super::read_text`] reads it: empty
/// when absent or no regular file).
fn hash_len_of(config: &str) -> usize {
    let sha256 = super::config_lines(config).iter().any(|(header, line)| {
        // The section itself, `[extensions]`: not a subsection of another that names it.
        let section = header
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim()
            .to_ascii_lowercase();
        let line = line.to_ascii_lowercase().replace([' ', '\t', '"'], "");
        section == "extensions" && line.ends_with("objectformat=sha256")
    });
    if sha256 { 32 } else { 20 }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What the sweep needs of an index.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Parsed {
    /// The paths of its gitlink entries.
    pub gitlinks: Vec<Vec<u8>>,
    /// The object name of the shared index a split index names (its `link` extension).
    pub shared: Option<Vec<u8>>,
    /// The paths of its entries marked skip-worktree or assume-unchanged.
    pub hidden: Vec<Vec<u8>>,
}

/// Reads an index (versions 2 to 4, git's `read_index_from`): the header, the entries, and the
/// extensions, of which only `link` matters. Anything that does not parse is an error (the
/// caller fails closed), never a shorter list.
pub(super) fn parse(index: &[u8], hash_len: usize) -> Result<Parsed, &'static str> {
    const GITLINK: u32 = 0o160000;
    const MODE_TYPE: u32 = 0o170000;
    let mut at = Cursor {
        bytes: index,
        at: 0,
    };
    if at.take(4)? != b"DIRC" {
        return Err("does not start as an index does");
    }
    let version = at.u32()?;
    if !(2..=4).contains(&version) {
        return Err("has a version gg does not read");
    }
    let count = at.u32()?;
    let mut parsed = Parsed::default();
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at.at;
        // ctime, mtime (8 bytes each), dev, ino.
        at.take(24)?;
        let mode = at.u32()?;
        // uid, gid, size, the object name.
        at.take(12 + hash_len)?;
        let flags = at.u16()?;
        // git's on-disk flags: assume-unchanged (`CE_VALID`) in the first word, skip-worktree
        // in the extended one that follows when the first says so (version 3 and later).
        const ASSUME_UNCHANGED: u16 = 0x8000;
        const EXTENDED: u16 = 0x4000;
        const SKIP_WORKTREE: u16 = 0x4000;
        let mut hidden = flags & ASSUME_UNCHANGED != 0;
        if version >= 3 && flags & EXTENDED != 0 {
            hidden |= at.u16()? & SKIP_WORKTREE != 0;
        }
        // The name's length is the flags' low twelve bits, as git reads it (`create_from_disk`);
        // only 0xFFF ("as long or longer") sends it to the NUL. Reading to the NUL instead let
        // a hand-made index whose length field spans a NUL show gg other entries than git
        // takes (an attacker pass hid a gitlink that way).
        const NAME_MASK: u16 = 0x0FFF;
        let name_len = usize::from(flags & NAME_MASK);
        let path = if version == 4 {
            // The length of the previous path's tail to drop, then the rest, NUL-ended.
            let strip = at.varint()?;
            let keep = previous
                .len()
                .checked_sub(strip)
                .ok_or("has an entry that drops more than its predecessor")?;
            let mut path = previous[..keep].to_vec();
            if name_len == usize::from(NAME_MASK) {
                path.extend_from_slice(at.until_nul()?);
            } else {
                let rest = name_len
                    .checked_sub(keep)
                    .ok_or("has an entry shorter than the part it keeps")?;
                path.extend_from_slice(at.take(rest)?);
                // git steps over one byte, the NUL, after the name.
                at.take(1)?;
            }
            path
        } else {
            let path = if name_len == usize::from(NAME_MASK) {
                at.until_nul()?.to_vec()
            } else {
                at.take(name_len)?.to_vec()
            };
            // The entry is padded to a multiple of 8 from its start, with at least one NUL
            // after the name (git's `ondisk_cache_entry_size`), measured from the name's length.
            let name_at = at.at - path.len() - usize::from(name_len == usize::from(NAME_MASK));
            let size = (name_at - start + path.len() + 8) & !7;
            at.take((start + size).checked_sub(at.at).ok_or("is cut short")?)?;
            path
        };
        if mode & MODE_TYPE == GITLINK {
            parsed.gitlinks.push(path.clone());
        }
        if hidden {
            parsed.hidden.push(path.clone());
        }
        previous = path;
    }
    // Extensions, up to the trailing checksum.
    while index.len().saturating_sub(at.at) > hash_len {
        let signature = at.take(4)?;
        let size = usize::try_from(at.u32()?).map_err(|_| "has an extension too large")?;
        let data = at.take(size)?;
        if signature == b"link" {
            parsed.shared = Some(
                data.get(..hash_len)
                    .ok_or("has a link extension too short")?
                    .to_vec(),
            );
        }
    }
    Ok(parsed)
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], &'static str> {
        let end = self.at.checked_add(n).ok_or("is cut short")?;
        let bytes = self.bytes.get(self.at..end).ok_or("is cut short")?;
        self.at = end;
        Ok(bytes)
    }

    fn u32(&mut self) -> Result<u32, &'static str> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u16(&mut self) -> Result<u16, &'static str> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn until_nul(&mut self) -> Result<&'a [u8], &'static str> {
        let rest = self.bytes.get(self.at..).ok_or("is cut short")?;
        let len = rest
            .iter()
            .position(|b| *b == 0)
            .ok_or("has a path with no end")?;
        self.at += len + 1;
        Ok(&rest[..len])
    }

    /// git's offset varint (`decode_varint`): seven bits a byte, high bit set on all but the
    /// last, each continuation adding one.
    fn varint(&mut self) -> Result<usize, &'static str> {
        let mut byte = self.take(1)?[0];
        let mut value = usize::from(byte & 0x7f);
        while byte & 0x80 != 0 {
            byte = self.take(1)?[0];
            value = value
                .checked_add(1)
                .and_then(|v| v.checked_mul(128))
                .and_then(|v| v.checked_add(usize::from(byte & 0x7f)))
                .ok_or("has a number too large")?;
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real git in `dir`, with no configuration but the repository's; it must succeed.
    fn run(dir: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
    }

    /// Each index version git writes, with a gitlink among ordinary entries, parses to that
    /// gitlink alone; a split index names its shared part. Made by the real git.
    #[test]
    fn gitlinks_are_read_from_every_index_version() {
        for version in ["2", "3", "4"] {
            let tmp = tempfile::tempdir().unwrap();
            let root = tmp.path();
            run(root, &["init", "-q"]);
            std::fs::create_dir_all(root.join("a/b")).unwrap();
            std::fs::write(root.join("a/b/file.txt"), "x\n").unwrap();
            std::fs::write(root.join("a/b/file2.txt"), "y\n").unwrap();
            run(root, &["add", "."]);
            run(
                root,
                &[
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    "160000,1111111111111111111111111111111111111111,a/b/sub",
                ],
            );
            if version == "3" {
                // An extended flag (intent to add) makes git write version 3.
                std::fs::write(root.join("later.txt"), "z\n").unwrap();
                run(root, &["add", "-N", "later.txt"]);
            }
            run(root, &["update-index", "--index-version", version]);
            let index = std::fs::read(root.join(".git/index")).unwrap();
            let parsed = parse(&index, 20).unwrap();
            assert_eq!(
                parsed.gitlinks,
                vec![b"a/b/sub".to_vec()],
                "version {version}"
            );
            assert_eq!(
                gitlink_paths(&root.join(".git"), None).unwrap(),
                vec![PathBuf::from("a/b/sub")]
            );
            if version == "2" {
                run(root, &["update-index", "--split-index"]);
                let index = std::fs::read(root.join(".git/index")).unwrap();
                assert!(parse(&index, 20).unwrap().shared.is_some());
                assert!(
                    gitlink_paths(&root.join(".git"), None)
                        .unwrap()
                        .contains(&PathBuf::from("a/b/sub"))
                );
            }
            assert!(parse(&index[..index.len() / 2], 20).is_err());
        }
    }

    /// The remembered parse is used only while the index is the same file, unchanged: a
    /// gitlink added (git writes a new file) or the index rewritten in place with its old
    /// times put back is seen at once.
    #[test]
    fn a_changed_index_is_read_again() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let git_dir = root.join(".git");
        run(root, &["init", "-q"]);
        std::fs::write(root.join("f"), "x\n").unwrap();
        run(root, &["add", "f"]);
        assert!(gitlink_paths(&git_dir, None).unwrap().is_empty());
        assert!(gitlink_paths(&git_dir, None).unwrap().is_empty());
        let plain = std::fs::read(git_dir.join("index")).unwrap();
        add_gitlink_q_sm(root);
        assert_eq!(
            gitlink_paths(&git_dir, None).unwrap(),
            vec![PathBuf::from("q/sm")]
        );
        // In place, same size, times set back: the change time still moves.
        let with_link = std::fs::read(git_dir.join("index")).unwrap();
        let index = git_dir.join("index");
        let times = std::fs::metadata(&index).unwrap();
        std::fs::write(&index, &plain).unwrap();
        let file = std::fs::File::options().write(true).open(&index).unwrap();
        file.set_times(
            std::fs::FileTimes::new()
                .set_modified(times.modified().unwrap())
                .set_accessed(times.accessed().unwrap()),
        )
        .unwrap();
        assert!(gitlink_paths(&git_dir, None).unwrap().is_empty());
        std::fs::write(&index, &with_link).unwrap();
        assert_eq!(
            gitlink_paths(&git_dir, None).unwrap(),
            vec![PathBuf::from("q/sm")]
        );
    }

    /// Adds a gitlink at `q/sm` to the index of the repository at `root`, as an attacker pass
    /// made one active.
    fn add_gitlink_q_sm(root: &Path) {
        run(
            root,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                "160000,1111111111111111111111111111111111111111,q/sm",
            ],
        );
    }

    /// The configuration's text handed over by the look that read it gives the object format
    /// the file does; without an index the configuration is not needed (a FIFO there, which
    /// would block a careless open, is not even looked at).
    #[test]
    fn the_shared_configuration_and_a_missing_index() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let git_dir = root.join(".git");
        run(root, &["init", "-q"]);
        assert_eq!(gitlink_paths(&git_dir, Some("")), Ok(Vec::new()));
        std::fs::remove_file(git_dir.join("config")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            git_dir.join("config"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert_eq!(gitlink_paths(&git_dir, None), Ok(Vec::new()));
        std::fs::remove_file(git_dir.join("config")).unwrap();
        run(root, &["init", "-q"]);
        add_gitlink_q_sm(root);
        let config = std::fs::read_to_string(git_dir.join("config")).unwrap();
        assert_eq!(hash_len_of(&config), hash_len(&git_dir));
        assert_eq!(
            gitlink_paths(&git_dir, Some(&config)),
            gitlink_paths(&git_dir, None)
        );
        assert_eq!(
            gitlink_paths(&git_dir, Some(&config)).unwrap(),
            vec![PathBuf::from("q/sm")]
        );
    }

    /// An entry's name is as long as its flags say, NULs included, as git reads it: a hand-made
    /// index whose first name's length field spans a NUL and a whole fake entry (an attacker
    /// pass) still shows the real gitlink after it, where reading to the NUL took the fake
    /// entry for the second and the gitlink for an extension.
    #[test]
    fn names_are_as_long_as_their_flags_say() {
        fn entry(mode: u32, name: &[u8]) -> Vec<u8> {
            let mut e = vec![0u8; 24];
            e.extend(mode.to_be_bytes());
            e.extend([0u8; 12 + 20]);
            e.extend(u16::try_from(name.len()).unwrap().to_be_bytes());
            e.extend(name);
            // Padded as git pads: at least one NUL, to a multiple of 8.
            let size = (62 + name.len() + 8) & !7;
            e.resize(size, 0);
            e
        }
        let fake = entry(0o100644, b"zz");
        let mut hidden = b"README.md\0\0\0".to_vec();
        hidden.extend(&fake);
        let mut index = b"DIRC".to_vec();
        index.extend(2u32.to_be_bytes());
        index.extend(2u32.to_be_bytes());
        index.extend(entry(0o100644, &hidden));
        index.extend(entry(0o160000, b"node_modules/sm"));
        index.extend([0u8; 20]);
        let parsed = parse(&index, 20).unwrap();
        assert_eq!(parsed.gitlinks, vec![b"node_modules/sm".to_vec()]);
    }

    /// sha256 only where `[extensions]` itself says so: a subsection named `extensions`
    /// elsewhere does not change how the index is read.
    #[test]
    fn the_object_format_comes_from_the_extensions_section_only() {
        let dir = tempfile::tempdir().unwrap();
        for (config, len) in [
            ("[extensions]\n\tobjectFormat = sha256\n", 32),
            ("[Extensions]\nobjectformat=\"sha256\"\n", 32),
            ("[remote \"extensions\"]\n\tobjectFormat = sha256\n", 20),
            ("[core]\n\tbare = false\n", 20),
        ] {
            std::fs::write(dir.path().join("config"), config).unwrap();
            assert_eq!(hash_len(dir.path()), len, "{config}");
        }
    }
}
