//! `tool.log`: the full output of a bash call whose result was truncated, read from the log the
//! bash tool saved under the workspace's `.gg/outputs/`.
//!
//! The client names a session and a call, never a path. The path comes from that call's own
//! result in that session ("Full output saved to: …", written by the bash tool), and even so it
//! is only accepted when it names a file directly in this daemon's `<cwd>/.gg/outputs/` with the
//! bash tool's file-name pattern, opened with no symlink anywhere on the way. A session file is
//! plain JSON on disk that anything may have edited, so its text is not trusted to name a file.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path};

use super::*;
use tools::paths::{PathError, Workspace};

/// The most `tool.log` returns at once; the client pages with `offset`.
pub const LOG_CHUNK_MAX: u64 = 1 << 20;

/// The header line the bash tool puts in a truncated result (see `tools::bash::run`).
const SAVED_PREFIX: &str = "Full output saved to: ";
const TRUNCATED_PREFIX: &str = "... output truncated: omitted ";

impl Runtime {
    /// `tool.log`: up to `limit` bytes of the call's full log from `offset`, as text. A chunk
    /// never ends inside a UTF-8 character (the next one starts there); bytes that are not UTF-8
    /// are shown as U+FFFD.
    pub async fn tool_log(
        &self,
        session_id: &str,
        call_id: &str,
        offset: u64,
        limit: Option<u64>,
    ) -> Result<Value, RpcError> {
        if call_id.is_empty() || call_id.len() > 256 {
            return Err(RpcError::invalid_params("callId must be a tool call id"));
        }
        let limit = limit.unwrap_or(LOG_CHUNK_MAX).clamp(1, LOG_CHUNK_MAX);
        let (_, _, path) = self.ensure_open(session_id).await?;
        let cwd = self.settings.cwd.clone();
        let call = call_id.to_string();
        tokio::task::spawn_blocking(move || {
            let transcript = session::load(&path).map_err(session_error)?;
            let content = transcript
                .entries()
                .iter()
                .filter_map(|e| e.message())
                .find(|m| m.role == session::Role::Tool && m.tool_call_id == call)
                .map(|m| m.content.clone())
                .ok_or_else(|| {
                    RpcError::app(
                        AppError::InvalidAction,
                        format!("no result of call {call} in this session"),
                    )
                })?;
            let saved = saved_log_path(&content).ok_or_else(|| {
                RpcError::app(
                    AppError::InvalidAction,
                    format!("call {call} has no saved full log (its output was not truncated)"),
                )
            })?;
            read_chunk(&cwd, saved, offset, limit)
        })
        .await
        .map_err(|e| RpcError::app(AppError::Other, format!("read log: {e}")))?
    }
}

/// The path in a truncated bash result's header: the first line says it was truncated, the
/// second where the whole output went. Anywhere else the same words are the command's output.
fn saved_log_path(content: &str) -> Option<&str> {
    let mut lines = content.lines();
    lines.next()?.starts_with(TRUNCATED_PREFIX).then_some(())?;
    lines.next()?.strip_prefix(SAVED_PREFIX)
}

/// Whether `name` is a name the bash tool gives its logs: `bash-<millis>-<8 hex>.log`.
fn is_log_name(name: &str) -> bool {
    let Some(middle) = name
        .strip_prefix("bash-")
        .and_then(|n| n.strip_suffix(".log"))
    else {
        return false;
    };
    let Some((millis, random)) = middle.split_once('-') else {
        return false;
    };
    !millis.is_empty()
        && millis.len() <= 20
        && millis.bytes().all(|b| b.is_ascii_digit())
        && random.len() == 8
        && random.bytes().all(|b| b.is_ascii_hexdigit())
}

fn refused(path: &str) -> RpcError {
    RpcError::app(
        AppError::InvalidAction,
        format!(
            "refused: {:?} is not one of this workspace's saved logs (.gg/outputs/bash-*.log)",
            crate::display::visible_inline(path)
        ),
    )
}

/// Reads a chunk of the log at `saved`, which must be `<cwd>/.gg/outputs/<log name>` lexically
/// (no `.`/`..`, no other directory) and is then opened beneath `cwd` with no symlink followed.
fn read_chunk(cwd: &Path, saved: &str, offset: u64, limit: u64) -> Result<Value, RpcError> {
    let workspace = Workspace::open(cwd)
        .map_err(|e| RpcError::app(AppError::Other, format!("open workspace: {e}")))?;
    let path = Path::new(saved);
    let relative = path
        .strip_prefix(workspace.root())
        .or_else(|_| path.strip_prefix(cwd))
        .map_err(|_| refused(saved))?;
    let parts: Vec<&str> = relative
        .components()
        .map(|c| match c {
            Component::Normal(part) => part.to_str(),
            _ => None,
        })
        .collect::<Option<_>>()
        .ok_or_else(|| refused(saved))?;
    let name = match parts.as_slice() {
        [".gg", "outputs", name] if is_log_name(name) => *name,
        _ => return Err(refused(saved)),
    };
    let confined = workspace
        .confine(&format!(".gg/outputs/{name}"))
        .map_err(|_| refused(saved))?;
    let mut file = workspace
        .open_read_strict(&confined)
        .map_err(|e| match e {
            PathError::Outside(_) | PathError::Hidden(_) => refused(saved),
            // Gone, a FIFO, a directory: not a log that can be shown.
            PathError::Io { error, .. } => {
                RpcError::app(AppError::InvalidAction, format!("log {name}: {error}"))
            }
        })?
        .ok_or_else(|| RpcError::app(AppError::InvalidAction, format!("log {name}: gone")))?;
    let io = |e: std::io::Error| RpcError::app(AppError::Other, format!("log {name}: {e}"));
    let size = file.metadata().map_err(io)?.len();
    let start = offset.min(size);
    file.seek(SeekFrom::Start(start)).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes).map_err(io)?;
    // Keep a character cut by the limit for the next chunk.
    let mut end = bytes.len();
    if start + (end as u64) < size
        && let Err(e) = std::str::from_utf8(&bytes)
        && e.error_len().is_none()
        && e.valid_up_to() > 0
    {
        end = e.valid_up_to();
    }
    let next = start + end as u64;
    Ok(json!({
        "name": name,
        "size": size,
        "offset": start,
        "next": next,
        "eof": next >= size,
        "text": String::from_utf8_lossy(&bytes[..end]),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bash_tools_header_names_a_log() {
        let good = "... output truncated: omitted 10 bytes; showing last 5 bytes ...\n\
                    Full output saved to: /w/.gg/outputs/bash-1-0123abcd.log\nxyz";
        assert_eq!(
            saved_log_path(good),
            Some("/w/.gg/outputs/bash-1-0123abcd.log")
        );
        // The same line as the command's own output is not a header.
        assert_eq!(saved_log_path("Full output saved to: /etc/passwd\n"), None);
        assert_eq!(saved_log_path(""), None);
    }

    #[test]
    fn log_names_follow_the_bash_tools_pattern() {
        assert!(is_log_name("bash-1764500000000-0123abcd.log"));
        for bad in [
            "bash-1-0123abc.log",
            "bash--0123abcd.log",
            "bash-1-0123abcg.log",
            "bash-1-0123abcd.txt",
            "x-1-0123abcd.log",
            "bash-1-0123abcd.log/..",
            "bash-1-01/3abcd.log",
        ] {
            assert!(!is_log_name(bad), "{bad}");
        }
    }
}
