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

/// The work-tree paths of the gitlinks in the git directory `git_dir`'s index (and its shared
/// index, with a split index: every entry of both, a superset of what git takes). `Ok(empty)`
/// without an index; `Err` says why it could not be read.
pub(super) fn gitlink_paths(git_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let Some(index) = read(&git_dir.join("index"))? else {
        return Ok(Vec::new());
    };
    let hash_len = hash_len(git_dir);
    let parsed = parse(&index, hash_len).map_err(|e| format!("its index {e}"))?;
    let mut paths = parsed.gitlinks;
    if let Some(shared) = parsed.shared {
        let name = format!("sharedindex.{}", hex(&shared));
        // A split index whose shared part is missing is one git refuses to read.
        if let Some(shared) = read(&git_dir.join(&name))? {
            let shared = parse(&shared, hash_len).map_err(|e| format!("its {name} {e}"))?;
            paths.extend(shared.gitlinks);
        }
    }
    Ok(paths
        .into_iter()
        .map(|bytes| {
            use std::os::unix::ffi::OsStringExt;
            PathBuf::from(std::ffi::OsString::from_vec(bytes))
        })
        .collect())
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
    let config = super::read_text(&git_dir.join("config")).unwrap_or_default();
    let sha256 = super::config_lines(&config).iter().any(|(header, line)| {
        let header = header.to_ascii_lowercase();
        let line = line.to_ascii_lowercase().replace([' ', '\t', '"'], "");
        header.contains("extensions") && line.ends_with("objectformat=sha256")
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
        if version >= 3 && flags & 0x4000 != 0 {
            at.u16()?;
        }
        let path = if version == 4 {
            // The length of the previous path's tail to drop, then the rest, NUL-ended.
            let strip = at.varint()?;
            let keep = previous
                .len()
                .checked_sub(strip)
                .ok_or("has an entry that drops more than its predecessor")?;
            let mut path = previous[..keep].to_vec();
            path.extend_from_slice(at.until_nul()?);
            path
        } else {
            let path = at.until_nul()?.to_vec();
            // Padded with NULs to a multiple of 8 from the entry's start (the one ending the
            // path included).
            let used = at.at - start;
            let padded = used.div_ceil(8) * 8;
            at.take(padded - used)?;
            path
        };
        if mode & MODE_TYPE == GITLINK {
            parsed.gitlinks.push(path.clone());
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

    /// Each index version git writes, with a gitlink among ordinary entries, parses to that
    /// gitlink alone; a split index names its shared part. Made by the real git.
    #[test]
    fn gitlinks_are_read_from_every_index_version() {
        let run = |dir: &Path, args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(dir)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("HOME", dir)
                .output()
                .unwrap();
            assert!(out.status.success(), "{args:?}: {out:?}");
        };
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
                gitlink_paths(&root.join(".git")).unwrap(),
                vec![PathBuf::from("a/b/sub")]
            );
            if version == "2" {
                run(root, &["update-index", "--split-index"]);
                let index = std::fs::read(root.join(".git/index")).unwrap();
                assert!(parse(&index, 20).unwrap().shared.is_some());
                assert!(
                    gitlink_paths(&root.join(".git"))
                        .unwrap()
                        .contains(&PathBuf::from("a/b/sub"))
                );
            }
            assert!(parse(&index[..index.len() / 2], 20).is_err());
        }
    }
}
