//! The file tools: `read`, `list`, `grep`, `write`, `edit`.
//!
//! Each takes the model's JSON arguments and returns text for the model. All paths go through
//! [`Workspace`], so none of them can reach outside the working directory, through `..`, an
//! absolute path or a symlink, even one swapped in while the tool runs.

use std::io::Read;
use std::path::Path;

use rustix::fs::{AtFlags, Dir, FileType};
use serde::Deserialize;

use super::paths::{Confined, PathError, Workspace, WriteTarget};

/// `read` returns at most this many lines...
pub const READ_MAX_LINES: usize = 2000;
/// ...and at most this many bytes.
pub const READ_MAX_BYTES: usize = 50 * 1024;
/// `grep` skips files larger than this.
pub const GREP_MAX_FILE_BYTES: u64 = 1024 * 1024;
pub const GREP_DEFAULT_RESULTS: usize = 50;
pub const GREP_MAX_RESULTS: usize = 200;
/// A file the tools will not load whole into memory for `edit`.
const EDIT_MAX_BYTES: u64 = 16 * 1024 * 1024;

/// A tool failure, returned to the model as an error result.
#[derive(Debug)]
pub struct ToolFailure(pub String);

impl From<PathError> for ToolFailure {
    fn from(e: PathError) -> Self {
        ToolFailure(e.to_string())
    }
}

impl std::fmt::Display for ToolFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub type ToolResult = Result<String, ToolFailure>;

fn parse_args<'a, T: Deserialize<'a>>(tool: &str, args: &'a str) -> Result<T, ToolFailure> {
    serde_json::from_str(args)
        .map_err(|e| ToolFailure(format!("invalid arguments for {tool}: {e}")))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

/// The largest file `read` takes.
const READ_MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// `read {path, offset?, limit?}`: lines from `offset` (1-based), at most 2000 lines / 50 KiB.
pub fn read(ws: &Workspace, args: &str) -> ToolResult {
    let args: ReadArgs = parse_args("read", args)?;
    let path = ws.confine(&args.path)?;
    let mut bytes = Vec::new();
    // Bounded: the whole file is held to pick its lines, and a sparse 3 GB file (`truncate -s`,
    // no disk used) took 3 GB of gg's memory; one just under the machine's would call the
    // kernel's OOM killer.
    ws.open_read(&path)?
        .take(READ_MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolFailure(format!("{}: {e}", args.path)))?;
    if bytes.len() as u64 > READ_MAX_FILE_BYTES {
        return Err(ToolFailure(format!(
            "{}: larger than {}; read parts of it with bash (head, tail, sed -n)",
            args.path,
            crate::store::human_size(READ_MAX_FILE_BYTES)
        )));
    }
    if memchr::memchr(0, &bytes).is_some() {
        return Err(ToolFailure(format!(
            "{}: binary file (contains NUL bytes); not shown",
            args.path
        )));
    }
    let text = String::from_utf8_lossy(&bytes);
    let offset = args.offset.unwrap_or(1).max(1);
    let limit = args
        .limit
        .unwrap_or(READ_MAX_LINES)
        .clamp(1, READ_MAX_LINES);
    let total = text.lines().count();
    if total == 0 {
        return Ok(String::new());
    }
    if offset > total {
        return Err(ToolFailure(format!(
            "offset {offset} is beyond the end of {} ({total} lines)",
            args.path
        )));
    }
    let mut out = String::new();
    let mut last = offset - 1;
    for line in text.lines().skip(offset - 1).take(limit) {
        if out.len() + line.len() + 1 > READ_MAX_BYTES {
            break;
        }
        out.push_str(line);
        out.push('\n');
        last += 1;
    }
    if last < total {
        out.push_str(&format!(
            "\n[truncated: showing lines {offset}-{last} of {total}; use offset={} to continue]\n",
            last + 1
        ));
    }
    Ok(out)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    path: Option<String>,
}

/// `list {path?}`: sorted entry names, directories with a trailing `/`.
pub fn list(ws: &Workspace, args: &str) -> ToolResult {
    let args: ListArgs = parse_args("list", args)?;
    let shown = args.path.unwrap_or_else(|| ".".to_string());
    let path = ws.confine(&shown)?;
    let mut names = Vec::new();
    for (name, kind) in read_dir(ws, &path)? {
        names.push(if kind == FileType::Directory {
            format!("{name}/")
        } else {
            name
        });
    }
    names.sort();
    Ok(names.join("\n"))
}

/// Entries of a confined directory with their own type (symlinks not followed).
fn read_dir(ws: &Workspace, path: &Confined) -> Result<Vec<(String, FileType)>, ToolFailure> {
    let fd = ws.open_dir(path)?;
    let dir_io = |e: rustix::io::Errno| ToolFailure(format!("{}: {e}", path.shown()));
    let dir = Dir::read_from(&fd).map_err(dir_io)?;
    let mut entries = Vec::new();
    for entry in dir {
        let entry = entry.map_err(dir_io)?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let name_os = std::ffi::OsStr::from_encoded_bytes_checked(name);
        let kind = match entry.file_type() {
            FileType::Unknown => rustix::fs::statat(&fd, name_os, AtFlags::SYMLINK_NOFOLLOW)
                .map(|s| FileType::from_raw_mode(s.st_mode))
                .unwrap_or(FileType::Unknown),
            known => known,
        };
        entries.push((String::from_utf8_lossy(name).into_owned(), kind));
    }
    Ok(entries)
}

/// `OsStr::from_encoded_bytes_unchecked` is unsafe; on Unix every byte string is a valid
/// `OsStr`, which this safe conversion states once.
trait FromBytes {
    fn from_encoded_bytes_checked(bytes: &[u8]) -> &std::ffi::OsStr;
}

impl FromBytes for std::ffi::OsStr {
    fn from_encoded_bytes_checked(bytes: &[u8]) -> &std::ffi::OsStr {
        std::os::unix::ffi::OsStrExt::from_bytes(bytes)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    pattern: String,
    path: Option<String>,
    limit: Option<usize>,
}

/// `grep {pattern, path?, limit?}`: fixed-string search, `path:line: text` per hit.
///
/// Skips binary files, files over 1 MiB, `.git`, and anything resolving outside the working
/// directory; does not follow symlinked directories (no loops, no escapes).
pub fn grep(ws: &Workspace, args: &str) -> ToolResult {
    let args: GrepArgs = parse_args("grep", args)?;
    if args.pattern.is_empty() {
        return Err(ToolFailure("pattern must not be empty".to_string()));
    }
    let limit = args
        .limit
        .unwrap_or(GREP_DEFAULT_RESULTS)
        .clamp(1, GREP_MAX_RESULTS);
    let start = ws.confine(args.path.as_deref().unwrap_or("."))?;
    let finder = memchr::memmem::Finder::new(args.pattern.as_bytes());
    let mut hits = Vec::new();
    let mut stack = vec![start.relative().to_path_buf()];
    let mut truncated = false;
    // A file given directly is searched as a one-file walk.
    if ws.open_dir(&start).is_err() {
        grep_file(ws, start.relative(), &finder, limit, &mut hits);
        stack.clear();
    }
    while let Some(dir) = stack.pop() {
        let confined = ws.confine(&dir.to_string_lossy())?;
        let Ok(mut entries) = read_dir(ws, &confined) else {
            continue;
        };
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        // Reverse so the stack pops in name order.
        for (name, kind) in entries.into_iter().rev() {
            let child = dir.join(&name);
            match kind {
                FileType::Directory if name != ".git" => stack.push(child),
                FileType::RegularFile | FileType::Symlink => {
                    grep_file(ws, &child, &finder, limit, &mut hits);
                }
                _ => {}
            }
        }
        if hits.len() >= limit {
            truncated = true;
            break;
        }
    }
    hits.sort();
    if hits.len() > limit {
        hits.truncate(limit);
        truncated = true;
    }
    if hits.is_empty() {
        return Ok("no matches".to_string());
    }
    let mut out = hits.join("\n");
    if truncated {
        out.push_str(&format!(
            "\n[results capped at {limit}; narrow the path or pattern]"
        ));
    }
    Ok(out)
}

fn grep_file(
    ws: &Workspace,
    rel: &Path,
    finder: &memchr::memmem::Finder<'_>,
    limit: usize,
    hits: &mut Vec<String>,
) {
    let Ok(confined) = ws.confine(&rel.to_string_lossy()) else {
        return;
    };
    // open_read refuses non-regular files and anything resolving outside the root.
    let Ok(file) = ws.open_read(&confined) else {
        return;
    };
    let Ok(meta) = file.metadata() else { return };
    if meta.len() > GREP_MAX_FILE_BYTES {
        return;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    if file
        .take(GREP_MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .is_err()
        || memchr::memchr(0, &bytes).is_some()
    {
        return;
    }
    let shown = rel.display();
    for (index, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if finder.find(line).is_some() {
            let text = String::from_utf8_lossy(line);
            hits.push(format!(
                "{shown}:{}: {}",
                index + 1,
                text.trim_end_matches('\r')
            ));
            if hits.len() > limit {
                return;
            }
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}

/// A `write` or `edit` computed but not yet done: where it lands (resolved and held open), what
/// is there now and what will be there. The preview a person approves is made from exactly
/// this, and [`commit`] writes exactly this.
#[derive(Debug)]
pub struct WritePlan {
    pub target: WriteTarget,
    /// The current text (empty for a new file), for the preview.
    pub before: String,
    pub after: String,
    /// For an edit: the bytes the replacement was computed from, which must still be there.
    expect: Option<Vec<u8>>,
    tool: &'static str,
}

/// Plans `write {path, content}`: resolves the target, reads what is there for the preview.
pub fn plan_write(ws: &Workspace, args: &str) -> Result<WritePlan, ToolFailure> {
    let args: WriteArgs = parse_args("write", args)?;
    let path = ws.confine(&args.path)?;
    let target = ws.resolve_write(&path)?;
    // A file that is not readable text shows as empty in the preview; the write replaces it.
    let before = ws
        .read_target(&target, EDIT_MAX_BYTES)
        .ok()
        .flatten()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_default();
    Ok(WritePlan {
        target,
        before,
        after: args.content,
        expect: None,
        tool: "write",
    })
}

/// `write {path, content}`: atomic create or overwrite, with parent directories.
pub fn write(ws: &Workspace, args: &str) -> ToolResult {
    commit(ws, plan_write(ws, args)?)
}

/// Carries out a planned write or edit.
pub fn commit(ws: &Workspace, plan: WritePlan) -> ToolResult {
    ws.write_target(&plan.target, plan.after.as_bytes(), plan.expect.as_deref())?;
    Ok(match plan.tool {
        "write" => format!(
            "wrote {} bytes to {}",
            plan.after.len(),
            plan.target.shown()
        ),
        _ => format!("edited {}", plan.target.shown()),
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    path: String,
    edits: Vec<Replacement>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Replacement {
    old_text: String,
    new_text: String,
}

/// Computes an edit without writing it: each `oldText` must match exactly once (after CRLF → LF
/// normalisation), edits must not overlap, and CRLF files stay CRLF.
pub fn plan_edit(ws: &Workspace, args: &str) -> Result<WritePlan, ToolFailure> {
    let args: EditArgs = parse_args("edit", args)?;
    if args.edits.is_empty() {
        return Err(ToolFailure(
            "edits must contain at least one replacement".to_string(),
        ));
    }
    let path = ws.confine(&args.path)?;
    let target = ws.resolve_write(&path)?;
    let bytes = ws
        .read_target(&target, EDIT_MAX_BYTES + 1)?
        .ok_or_else(|| {
            ToolFailure::from(PathError::Io {
                path: args.path.clone(),
                error: std::io::Error::from_raw_os_error(rustix::io::Errno::NOENT.raw_os_error()),
            })
        })?;
    if bytes.len() as u64 > EDIT_MAX_BYTES {
        return Err(ToolFailure(format!(
            "{}: file too large to edit",
            args.path
        )));
    }
    let before = String::from_utf8(bytes.clone())
        .map_err(|_| ToolFailure(format!("{}: not a UTF-8 text file", args.path)))?;
    let crlf = before.contains("\r\n");
    let text = if crlf {
        before.replace("\r\n", "\n")
    } else {
        before.clone()
    };

    let mut spans: Vec<(usize, usize, String)> = Vec::new();
    for (i, edit) in args.edits.iter().enumerate() {
        let old = edit.old_text.replace("\r\n", "\n");
        if old.is_empty() {
            return Err(ToolFailure(format!(
                "edit {}: oldText must not be empty",
                i + 1
            )));
        }
        let mut found = text.match_indices(&old).map(|(at, _)| at);
        let at = found.next().ok_or_else(|| {
            ToolFailure(format!(
                "edit {}: oldText not found in {}",
                i + 1,
                args.path
            ))
        })?;
        if found.next().is_some() {
            return Err(ToolFailure(format!(
                "edit {}: oldText matches more than once in {}; include more context",
                i + 1,
                args.path
            )));
        }
        spans.push((at, at + old.len(), edit.new_text.replace("\r\n", "\n")));
    }
    spans.sort_by_key(|s| s.0);
    if spans.windows(2).any(|w| w[0].1 > w[1].0) {
        return Err(ToolFailure(
            "edits overlap; merge them into one".to_string(),
        ));
    }
    let mut after = String::with_capacity(text.len());
    let mut cursor = 0;
    for (start, end, new) in &spans {
        after.push_str(&text[cursor..*start]);
        after.push_str(new);
        cursor = *end;
    }
    after.push_str(&text[cursor..]);
    if crlf {
        after = after.replace('\n', "\r\n");
    }
    Ok(WritePlan {
        target,
        before,
        after,
        expect: Some(bytes),
        tool: "edit",
    })
}

/// `edit {path, edits:[{oldText,newText}]}`: exact unique replacements, written atomically.
pub fn edit(ws: &Workspace, args: &str) -> ToolResult {
    commit(ws, plan_edit(ws, args)?)
}
