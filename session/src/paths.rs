//! Where sessions live and how a user names them.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::entry::{Role, decode_header};
use super::error::{Result, SessionError};
use super::parse::load;
use super::time::{parse_rfc3339, unix_nanos};

/// Environment variable naming the session root.
pub const SESSION_DIR_ENV: &str = "GG_SESSION_DIR";

/// The session root: `--session-dir` > `GG_SESSION_DIR` > `<home>/.gg/sessions`. Empty values
/// count as unset. Fails when none is available.
pub fn resolve_root(
    flag: Option<&Path>,
    env_value: Option<&OsStr>,
    home: Option<&Path>,
) -> Result<PathBuf> {
    if let Some(flag) = flag.filter(|flag| !flag.as_os_str().is_empty()) {
        return Ok(flag.to_path_buf());
    }
    if let Some(env_value) = env_value.filter(|value| !value.is_empty()) {
        return Ok(PathBuf::from(env_value));
    }
    match home.filter(|home| !home.as_os_str().is_empty()) {
        Some(home) => Ok(home.join(".gg").join("sessions")),
        None => Err(SessionError::Invalid(
            "cannot locate the session directory: HOME is not set (use --session-dir or GG_SESSION_DIR)".to_owned(),
        )),
    }
}

/// [`resolve_root`] with `GG_SESSION_DIR` and `HOME` read from the process environment.
pub fn root_from_env(flag: Option<&Path>) -> Result<PathBuf> {
    let env_value = std::env::var_os(SESSION_DIR_ENV);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    resolve_root(flag, env_value.as_deref(), home.as_deref())
}

/// Directory name of a project, from its canonical working directory.
///
/// The path's components are joined with `-`, as the Go implementation did (`/home/u/proj` →
/// `home-u-proj`), but a byte that would make two paths meet — a `-` inside a component, `%`,
/// `\`, `:`, a control character or a byte that is not UTF-8 — is written as `%XX`. So
/// `/x/a-b` is `x-a%2Db` and `/x/a/b` is `x-a-b`: different paths never share a folder, and a
/// path without such bytes keeps the Go name. The root is `-` (no other path can give a lone
/// `-`, whereas the Go name `default` is also the key of `/default`).
pub fn project_key(canonical_cwd: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut key = String::new();
    for part in canonical_cwd.as_os_str().as_bytes().split(|&b| b == b'/') {
        if part.is_empty() {
            continue;
        }
        if !key.is_empty() {
            key.push('-');
        }
        match std::str::from_utf8(part) {
            Ok(text) => {
                for c in text.chars() {
                    if matches!(c, '-' | '%' | '\\' | ':') || c.is_control() {
                        let mut buf = [0u8; 4];
                        for byte in c.encode_utf8(&mut buf).bytes() {
                            key.push_str(&format!("%{byte:02X}"));
                        }
                    } else {
                        key.push(c);
                    }
                }
            }
            Err(_) => {
                for &byte in part {
                    if byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_') {
                        key.push(char::from(byte));
                    } else {
                        key.push_str(&format!("%{byte:02X}"));
                    }
                }
            }
        }
    }
    if key.is_empty() { "-".to_owned() } else { key }
}

/// The Go implementation's directory name: `/`, `\` and `:` replaced by `-`, leading/trailing
/// `-` trimmed, `default` when nothing is left. Different paths can share it (`/x/a-b`,
/// `/x/a/b`); it is only read, to move sessions to their [`project_key`] folder.
pub fn legacy_project_key(canonical_cwd: &Path) -> String {
    let replaced: String = canonical_cwd
        .to_string_lossy()
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    let trimmed = replaced.trim_matches('-');
    if trimmed.is_empty() {
        "default".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// The per-project session directory of `cwd` under `root` (cwd made absolute with symlinks
/// resolved). The directory is not created, except to receive sessions of this project that an
/// earlier version filed under the Go name (see [`project_key`]): those are moved here the
/// first time, identified by the `cwd` of their header.
pub fn project_dir(root: &Path, cwd: &Path) -> Result<PathBuf> {
    let canonical = fs::canonicalize(cwd)
        .map_err(|error| SessionError::io("resolve working directory", cwd, error))?;
    let key = project_key(&canonical);
    let dir = root.join(&key);
    let legacy = legacy_project_key(&canonical);
    if legacy != key && !dir.exists() {
        migrate_legacy(&root.join(&legacy), &dir, &key)?;
    }
    Ok(dir)
}

/// Moves the sessions of `legacy` whose header names a cwd with key `key` into `dir`. Nothing is
/// overwritten; a file that cannot be read stays where it is.
fn migrate_legacy(legacy: &Path, dir: &Path, key: &str) -> Result<()> {
    for path in session_files(legacy)? {
        let Ok(header_cwd) = header(&path).map(|(_, cwd)| cwd) else {
            continue;
        };
        if header_cwd.is_empty() || project_key(Path::new(&header_cwd)) != key {
            continue;
        }
        let Some(name) = path.file_name() else {
            continue;
        };
        if !dir.exists() {
            use std::os::unix::fs::DirBuilderExt;
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|error| SessionError::io("create session directory", dir, error))?;
        }
        let target = dir.join(name);
        if target.exists() {
            continue;
        }
        fs::rename(&path, &target)
            .map_err(|error| SessionError::io("move session", &path, error))?;
    }
    Ok(())
}

/// Whether a session file in the folder named `folder` belongs there. A file whose header names
/// another project that only the Go name would have put here (the `/x/a-b` vs `/x/a/b`
/// collision) does not: it is neither listed nor resolved here.
fn belongs(folder: &str, header_cwd: &str) -> bool {
    if header_cwd.is_empty() {
        return true;
    }
    let path = Path::new(header_cwd);
    project_key(path) == folder || legacy_project_key(path) != folder
}

/// One row of `gg sessions list` and of the resume picker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionSummary {
    /// Session id.
    pub id: String,
    /// Session file.
    pub path: PathBuf,
    /// Time of the last entry (the header time for an empty session), RFC 3339.
    pub updated: String,
    /// Messages on the active path.
    pub messages: usize,
    /// Display name, if named.
    pub name: Option<String>,
    /// First user message of the active path on one line, at most [`PREVIEW_CHARS`] characters.
    pub preview: String,
    #[serde(skip)]
    updated_nanos: i128,
}

/// Maximum length of [`SessionSummary::preview`].
pub const PREVIEW_CHARS: usize = 80;

/// Summarises one session file (read-only; a corrupt file is an error).
pub fn summarize(path: &Path) -> Result<SessionSummary> {
    let transcript = load(path)?;
    let updated = transcript
        .leaf()
        .map(|entry| entry.timestamp.clone())
        .filter(|stamp| !stamp.is_empty())
        .unwrap_or_else(|| transcript.header().timestamp.clone());
    let updated_nanos = match parse_rfc3339(&updated) {
        Some(nanos) => nanos,
        None => fs::metadata(path)
            .and_then(|m| m.modified())
            .map(unix_nanos)
            .unwrap_or(0),
    };
    let messages = transcript.messages();
    let preview = messages
        .iter()
        .find(|message| message.role == Role::User)
        .map(|message| one_line(&message.display_text(), PREVIEW_CHARS))
        .unwrap_or_default();
    Ok(SessionSummary {
        id: transcript.id().to_owned(),
        path: path.to_path_buf(),
        updated,
        messages: messages.len(),
        name: transcript.name().map(str::to_owned),
        preview,
        updated_nanos,
    })
}

fn one_line(text: &str, limit: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= limit {
        return collapsed;
    }
    let mut cut: String = collapsed.chars().take(limit.saturating_sub(3)).collect();
    cut.push_str("...");
    cut
}

/// Session files of a directory (`*.jsonl`, hidden temporaries excluded), sorted by name.
fn session_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let reader = match fs::read_dir(dir) {
        Ok(reader) => reader,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(SessionError::io("list sessions", dir, error)),
    };
    let mut files = Vec::new();
    for item in reader {
        let item = item.map_err(|error| SessionError::io("list sessions", dir, error))?;
        let name = item.file_name();
        let name = name.to_string_lossy();
        let is_file = item.file_type().map(|kind| kind.is_file()).unwrap_or(false);
        if is_file && name.ends_with(".jsonl") && !name.starts_with('.') {
            files.push(item.path());
        }
    }
    files.sort();
    Ok(files)
}

/// The sessions of `cwd`, most recently updated first. Any corrupt file fails the listing.
pub fn list_sessions(root: &Path, cwd: &Path) -> Result<Vec<SessionSummary>> {
    let dir = project_dir(root, cwd)?;
    let folder = folder_name(&dir);
    let mut summaries = Vec::new();
    for path in session_files(&dir)? {
        if belongs(&folder, &header(&path)?.1) {
            summaries.push(summarize(&path)?);
        }
    }
    summaries.sort_by(|a, b| {
        b.updated_nanos
            .cmp(&a.updated_nanos)
            .then_with(|| b.path.cmp(&a.path))
    });
    Ok(summaries)
}

/// The most recently updated session of `cwd` (`--continue`/`--last`), if any.
pub fn latest_for_cwd(root: &Path, cwd: &Path) -> Result<Option<PathBuf>> {
    Ok(list_sessions(root, cwd)?
        .into_iter()
        .next()
        .map(|summary| summary.path))
}

fn folder_name(dir: &Path) -> String {
    dir.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Reads only the header of a session file: its id and cwd.
fn header(path: &Path) -> Result<(String, String)> {
    let file = File::open(path).map_err(|error| SessionError::io("open session", path, error))?;
    let mut first = Vec::new();
    BufReader::new(file.take(1 << 20))
        .read_until(b'\n', &mut first)
        .map_err(|error| SessionError::io("read session", path, error))?;
    decode_header(first.trim_ascii())
        .map(|header| (header.id, header.cwd))
        .map_err(|reason| SessionError::corrupt(path, 1, reason))
}

/// Resolves the target of `gg resume <id-or-path>`.
///
/// With `allow_path`, a target containing `/` or ending in `.jsonl` is a path (relative to
/// `cwd`) and must be an existing file. Otherwise it is matched against the sessions of `cwd`:
/// an exact session id or file name, else a unique id prefix. No match is
/// [`SessionError::NotFound`]; several prefix matches are an error listing none of them.
pub fn resolve_target(root: &Path, cwd: &Path, target: &str, allow_path: bool) -> Result<PathBuf> {
    if target.is_empty() {
        return Err(SessionError::NotFound {
            target: target.to_owned(),
        });
    }
    if allow_path && (target.contains('/') || target.ends_with(".jsonl")) {
        let path = cwd.join(target);
        return match fs::metadata(&path) {
            Ok(metadata) if metadata.is_file() => Ok(path),
            _ => Err(SessionError::NotFound {
                target: target.to_owned(),
            }),
        };
    }
    let dir = project_dir(root, cwd)?;
    let folder = folder_name(&dir);
    let files = session_files(&dir)?;
    let mut prefix_matches = Vec::new();
    for path in files {
        let (id, header_cwd) = header(&path)?;
        if !belongs(&folder, &header_cwd) {
            continue;
        }
        if path
            .file_stem()
            .is_some_and(|stem| stem == OsStr::new(target))
        {
            return Ok(path);
        }
        if id == target {
            return Ok(path);
        }
        if id.starts_with(target) {
            prefix_matches.push(path);
        }
    }
    match prefix_matches.len() {
        0 => Err(SessionError::NotFound {
            target: target.to_owned(),
        }),
        1 => Ok(prefix_matches.remove(0)),
        _ => Err(SessionError::Invalid(format!(
            "session id prefix {target:?} matches more than one session"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_precedence() {
        type Case<'a> = (
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
        );
        let home = Some("/home/u");
        let cases: [Case; 6] = [
            (Some("/flag"), Some("/env"), home, Some("/flag")),
            (None, Some("/env"), home, Some("/env")),
            (Some(""), Some("/env"), home, Some("/env")),
            (None, None, home, Some("/home/u/.gg/sessions")),
            (None, Some(""), home, Some("/home/u/.gg/sessions")),
            (None, None, None, None),
        ];
        for (flag, env, home, want) in cases {
            let got = resolve_root(
                flag.map(Path::new),
                env.map(OsStr::new),
                home.map(Path::new),
            );
            assert_eq!(
                got.ok(),
                want.map(PathBuf::from),
                "{flag:?} {env:?} {home:?}"
            );
        }
    }

    #[test]
    fn project_keys() {
        let cases = [
            ("/home/u/proj", "home-u-proj"),
            ("/", "-"),
            ("/default", "default"),
            ("/x/a-b", "x-a%2Db"),
            ("/x/a/b", "x-a-b"),
            ("/a:b/c-", "a%3Ab-c%2D"),
            ("/p%2Dq", "p%252Dq"),
            ("/t\ty/\u{1b}", "t%09y-%1B"),
            ("/ünï/日本", "ünï-日本"),
        ];
        for (cwd, want) in cases {
            assert_eq!(project_key(Path::new(cwd)), want, "{cwd}");
        }
        let legacy = [
            ("/home/u/proj", "home-u-proj"),
            ("/", "default"),
            ("C:\\Users\\me", "C--Users-me"),
            ("/a:b/c-", "a-b-c"),
        ];
        for (cwd, want) in legacy {
            assert_eq!(legacy_project_key(Path::new(cwd)), want, "{cwd}");
        }
    }

    #[test]
    fn non_utf8_components_are_escaped_bytewise() {
        use std::os::unix::ffi::OsStrExt;
        let a = Path::new(std::ffi::OsStr::from_bytes(b"/x/\xff"));
        let b = Path::new(std::ffi::OsStr::from_bytes(b"/x/\xfe"));
        assert_eq!(project_key(a), "x-%FF");
        assert_ne!(project_key(a), project_key(b));
    }

    proptest::proptest! {
        /// Two different canonical paths never share a folder.
        #[test]
        fn keys_never_collide(
            a in proptest::collection::vec("[a-c/%:\\\\-]{1,3}", 1..4),
            b in proptest::collection::vec("[a-c/%:\\\\-]{1,3}", 1..4),
        ) {
            let normal = |parts: &[String]| {
                let joined = format!("/{}", parts.join("/"));
                let comps: Vec<&str> = joined.split('/').filter(|c| !c.is_empty()).collect();
                format!("/{}", comps.join("/"))
            };
            let (pa, pb) = (normal(&a), normal(&b));
            if pa != pb {
                proptest::prop_assert_ne!(project_key(Path::new(&pa)), project_key(Path::new(&pb)));
            }
        }
    }

    #[test]
    fn only_sessions_of_colliding_projects_are_foreign() {
        assert!(belongs("x-a-b", "/x/a/b"));
        assert!(!belongs("x-a-b", "/x/a-b"));
        assert!(belongs("x-a-b", ""));
        // Written by hand or by another tool: not a Go-name collision, so still listed.
        assert!(belongs("x-a-b", "/p"));
    }

    #[test]
    fn previews_are_one_line_and_bounded() {
        assert_eq!(one_line("fix\n  the   bug", 80), "fix the bug");
        let long = "x".repeat(200);
        assert_eq!(one_line(&long, 10), "xxxxxxx...");
    }
}
