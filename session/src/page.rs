//! One page of a session's active path, newest first, read without building the whole tree.
//!
//! Where the conversation is depends on every line (the leaf is the last line, its ancestors are
//! found by `parentId`, and a `head` entry may point anywhere earlier), and the name, model and
//! summary shown with a transcript can sit on any line of the active path (the name usually on
//! line 2). So a page still reads every line, but only far enough to learn its `type`, `id` and
//! `parentId`: the messages of the page and the few entries the snapshot names are the only
//! lines decoded in full, read again by their byte offsets. Those three fields are taken from the
//! start of a line as the store writes it, so the other lines' text is not validated here (opening
//! the session for a run still does). A read-only view: the file is never modified, a torn final
//! line is left out as [`super::load`] does.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::os::unix::fs::FileExt;
use std::path::Path;

use serde::Deserialize;

use super::entry::{Entry, EntryKind, Header, Message, decode_entry, decode_header};
use super::error::{Result, SessionError};
use super::parse::LineReader;
use super::transcript::Transcript;

/// A stretch of the active path (or of the path to a cursor) with what a UI shows beside it.
#[derive(Debug)]
pub struct Page {
    /// The page's entries, oldest first, as a tree of their own: the first entry is its root.
    /// Its messages are the page; its audit trail is the page's tool calls.
    pub transcript: Transcript,
    /// The id of the page's oldest message when older messages exist on the path: the cursor of
    /// the next page.
    pub before: Option<String>,
    /// Index of the page's first message among the messages of the path it was read from.
    pub first_message: usize,
    /// Messages on that path.
    pub total_messages: usize,
    /// The session name (last `session_info` of the path), `None` when unnamed or cleared.
    pub name: Option<String>,
    /// The last `model` entry of the path: its selection (`provider:model`).
    pub model: Option<String>,
    /// The last `summary` of the path and the messages it covers.
    pub summary: Option<(String, u64)>,
}

/// What the light pass keeps of a line.
struct Line {
    offset: u64,
    len: usize,
    parent: Option<u32>,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Message,
    Model,
    Summary,
    SessionInfo,
    Other,
}

/// The fields of an entry line the light pass reads; serde skips the rest without building it.
#[derive(Deserialize)]
struct Probe {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    id: String,
    #[serde(rename = "parentId", default)]
    parent_id: Option<String>,
}

/// The newest page of `path`'s active path (`before` = `None`), or the page of messages that
/// precede the message `before` on its own path. At most `limit` messages (at least one), more
/// when needed so that the page does not begin with a tool result whose call is on the page
/// before. `Ok(None)`: `before` is not a message of this session.
pub fn read_page(path: &Path, before: Option<&str>, limit: usize) -> Result<Option<Page>> {
    let file = File::open(path).map_err(|error| SessionError::io("open session", path, error))?;
    let (header, lines, index) = scan(path, &file)?;
    let start = match before {
        None => lines.len().checked_sub(1),
        Some(id) => match index.get(id) {
            Some(&position) if lines[position as usize].kind == Kind::Message => {
                Some(position as usize)
            }
            _ => return Ok(None),
        },
    };
    // The path from `start` to the root, newest first.
    let mut path_rev = Vec::new();
    let mut current = start;
    while let Some(position) = current {
        if path_rev.len() > lines.len() {
            return Err(SessionError::corrupt(
                path,
                0,
                "session entries form a cycle",
            ));
        }
        path_rev.push(position);
        current = lines[position].parent.map(|parent| parent as usize);
    }
    if before.is_some() {
        // The cursor itself is on the newer page.
        path_rev.remove(0);
    }
    let read = |position: usize| read_entry(path, &file, &lines[position]);
    let total_messages = path_rev
        .iter()
        .filter(|&&p| lines[p].kind == Kind::Message)
        .count();
    // Walk back until `limit` messages are in, then on while the oldest is a tool result.
    let limit = limit.max(1);
    let mut page_rev: Vec<Entry> = Vec::new();
    let mut messages = 0;
    // How many of `page_rev` reach its oldest message, and whether that one is a tool result.
    let mut oldest_message: Option<(usize, bool)> = None;
    for &position in &path_rev {
        if messages >= limit && oldest_message.is_some_and(|(_, tool_result)| !tool_result) {
            break;
        }
        let entry = read(position)?;
        page_rev.push(entry);
        if lines[position].kind == Kind::Message {
            messages += 1;
            oldest_message = Some((page_rev.len(), page_rev.last().is_some_and(is_tool_result)));
        }
    }
    // Entries older than the page's oldest message stay on the older page.
    let keep = oldest_message.map_or(0, |(reach, _)| reach);
    page_rev.truncate(keep);
    let has_older = path_rev[keep..]
        .iter()
        .any(|&p| lines[p].kind == Kind::Message);
    let before = match (has_older, page_rev.last()) {
        (true, Some(oldest)) => Some(oldest.id.clone()),
        _ => None,
    };
    let mut transcript = Transcript::new(header);
    let mut previous: Option<String> = None;
    for mut entry in page_rev.into_iter().rev() {
        // A path: each entry's parent is the one before it (v1 files name no parents at all).
        entry.parent_id = previous.replace(entry.id.clone());
        transcript
            .push(entry)
            .map_err(|reason| SessionError::corrupt(path, 0, reason))?;
    }
    let nearest = |kind: Kind| path_rev.iter().copied().find(|&p| lines[p].kind == kind);
    let name = match nearest(Kind::SessionInfo) {
        Some(position) => match read(position)?.kind {
            EntryKind::SessionInfo { name } if !name.is_empty() => Some(name),
            _ => None,
        },
        None => None,
    };
    let model = match nearest(Kind::Model) {
        Some(position) => match read(position)?.kind {
            EntryKind::Model { selection, .. } => Some(selection),
            _ => None,
        },
        None => None,
    };
    let summary = match nearest(Kind::Summary) {
        Some(position) => match read(position)?.kind {
            EntryKind::Summary {
                summary,
                through_message_count,
            } => Some((summary, through_message_count)),
            _ => None,
        },
        None => None,
    };
    Ok(Some(Page {
        before,
        first_message: total_messages - messages,
        total_messages,
        transcript,
        name,
        model,
        summary,
    }))
}

fn is_tool_result(entry: &Entry) -> bool {
    entry
        .message()
        .is_some_and(|message: &Message| message.role == super::entry::Role::Tool)
}

fn read_entry(path: &Path, file: &File, line: &Line) -> Result<Entry> {
    let mut bytes = vec![0; line.len];
    file.read_exact_at(&mut bytes, line.offset)
        .map_err(|error| SessionError::io("read session", path, error))?;
    decode_entry(bytes.trim_ascii()).map_err(|reason| SessionError::corrupt(path, 0, reason))
}

type Scanned = (Header, Vec<Line>, HashMap<String, u32>);

/// The three fields from the start of a line as the store writes it,
/// `{"type":"…","id":"…","parentId":null|"…",`, without reading the rest; `None` for any other
/// shape (another writer's field order, an escape in a value), which serde then reads. Most of a
/// page's cost was serde stepping over every other line's message text.
fn written_prefix(line: &[u8]) -> Option<Probe> {
    fn string<'a>(rest: &'a [u8], before: &[u8]) -> Option<(&'a str, &'a [u8])> {
        let rest = rest.strip_prefix(before)?;
        let end = rest.iter().position(|&b| b == b'"' || b == b'\\')?;
        if rest[end] != b'"' {
            return None;
        }
        Some((std::str::from_utf8(&rest[..end]).ok()?, &rest[end + 1..]))
    }
    let (kind, rest) = string(line, b"{\"type\":\"")?;
    let (id, rest) = string(rest, b",\"id\":\"")?;
    let rest = rest.strip_prefix(b",\"parentId\":")?;
    let (parent_id, rest) = match rest.strip_prefix(b"null") {
        Some(rest) => (None, rest),
        None => {
            let (parent, rest) = string(rest, b"\"")?;
            (Some(parent.to_owned()), rest)
        }
    };
    // The field ended where the next begins (or the object does).
    if !matches!(rest.first(), Some(b',' | b'}')) {
        return None;
    }
    Some(Probe {
        kind: kind.to_owned(),
        id: id.to_owned(),
        parent_id,
    })
}

/// The light pass: header, and per entry its offset, parent and kind. The same rules as
/// [`super::load`]: a bad line is an error naming it, except an unterminated last line that is
/// not JSON (a crash mid-append), which is left out.
fn scan(path: &Path, file: &File) -> Result<Scanned> {
    let mut reader = LineReader::new(path, BufReader::with_capacity(1 << 20, file));
    let mut header: Option<Header> = None;
    let mut lines: Vec<Line> = Vec::new();
    let mut index: HashMap<String, u32> = HashMap::new();
    while let Some(line) = reader.next_line()? {
        if line.text.is_empty() {
            continue;
        }
        let line_number = line.number;
        let Some(header) = header.as_ref() else {
            match decode_header(line.text) {
                Ok(decoded) => header = Some(decoded),
                Err(reason) => {
                    line.torn_or_corrupt(path, reason)?;
                    break;
                }
            }
            continue;
        };
        let probe = match written_prefix(line.text).filter(|_| line.terminated) {
            Some(probe) => probe,
            None => match serde_json::from_slice::<Probe>(line.text) {
                Ok(probe) => probe,
                Err(error) => {
                    line.torn_or_corrupt(path, format!("invalid JSON: {error}"))?;
                    break;
                }
            },
        };
        if probe.id.is_empty() {
            return Err(SessionError::corrupt(
                path,
                line_number,
                "session entry is missing an id",
            ));
        }
        let parent = if header.version == 1 {
            // v1 had no parents: the file order is the conversation.
            lines.len().checked_sub(1).map(|p| p as u32)
        } else {
            match &probe.parent_id {
                None => None,
                Some(parent) => Some(*index.get(parent).ok_or_else(|| {
                    SessionError::corrupt(
                        path,
                        line_number,
                        format!(
                            "session entry {:?} has missing or non-append-only parent {parent:?}",
                            probe.id
                        ),
                    )
                })?),
            }
        };
        let position = u32::try_from(lines.len())
            .map_err(|_| SessionError::corrupt(path, line_number, "too many entries"))?;
        if index.insert(probe.id.clone(), position).is_some() {
            return Err(SessionError::corrupt(
                path,
                line_number,
                format!("duplicate session entry id {:?}", probe.id),
            ));
        }
        let kind = match probe.kind.as_str() {
            "message" => Kind::Message,
            "model" => Kind::Model,
            "summary" => Kind::Summary,
            "session_info" => Kind::SessionInfo,
            _ => Kind::Other,
        };
        lines.push(Line {
            offset: line.offset,
            len: line.len,
            parent,
            kind,
        });
    }
    let header = header.ok_or_else(|| SessionError::corrupt(path, 1, "missing session header"))?;
    Ok((header, lines, index))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: failing loudly is the point
mod tests {
    use super::*;
    use crate::{Role, Session, load};

    fn texts(transcript: &Transcript) -> Vec<String> {
        transcript
            .messages()
            .iter()
            .map(|m| m.display_text())
            .collect()
    }

    fn numbered(session: &mut Session, from: usize, to: usize) {
        for i in from..to {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            session
                .append_message(Message::text(role, format!("m{i}")))
                .unwrap();
        }
    }

    #[test]
    fn pages_walk_the_active_path_newest_first_and_add_up_to_the_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut session = Session::create(dir.path(), "/w").unwrap();
        session.set_name("named").unwrap();
        session.append_model("p", "m").unwrap();
        numbered(&mut session, 0, 7);
        let path = session.path().to_path_buf();

        let newest = read_page(&path, None, 3).unwrap().unwrap();
        assert_eq!(texts(&newest.transcript), ["m4", "m5", "m6"]);
        assert_eq!((newest.first_message, newest.total_messages), (4, 7));
        assert_eq!(newest.name.as_deref(), Some("named"));
        assert_eq!(newest.model.as_deref(), Some("p:m"));
        let mut all = texts(&newest.transcript);
        let mut cursor = newest.before;
        while let Some(before) = cursor {
            let page = read_page(&path, Some(&before), 3).unwrap().unwrap();
            // The page ends where the newer one began.
            assert_eq!(
                page.first_message + page.transcript.messages().len(),
                7 - all.len()
            );
            let mut older = texts(&page.transcript);
            older.append(&mut all);
            all = older;
            cursor = page.before;
        }
        let whole: Vec<String> = load(&path)
            .unwrap()
            .messages()
            .iter()
            .map(|m| m.display_text())
            .collect();
        assert_eq!(all, whole);
    }

    #[test]
    fn a_checked_out_branch_is_the_path_paged_not_the_file_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut session = Session::create(dir.path(), "/w").unwrap();
        numbered(&mut session, 0, 4);
        let second = session.transcript().entries()[1].id.clone();
        session.branch(Some(&second)).unwrap();
        numbered(&mut session, 10, 12);
        let page = read_page(session.path(), None, 10).unwrap().unwrap();
        assert_eq!(texts(&page.transcript), ["m0", "m1", "m10", "m11"]);
        assert_eq!(page.before, None);
        assert_eq!(page.total_messages, 4);
    }

    #[test]
    fn a_page_never_begins_with_a_tool_result_split_from_its_call() {
        let dir = tempfile::tempdir().unwrap();
        let mut session = Session::create(dir.path(), "/w").unwrap();
        numbered(&mut session, 0, 2);
        for i in 0..3 {
            session
                .append_message(Message::text(Role::Tool, format!("result {i}")))
                .unwrap();
        }
        let page = read_page(session.path(), None, 2).unwrap().unwrap();
        assert_eq!(
            texts(&page.transcript),
            ["m1", "result 0", "result 1", "result 2"]
        );
        assert_eq!(page.first_message, 1);
    }

    #[test]
    fn a_cursor_of_another_session_is_none_and_a_torn_last_line_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let mut session = Session::create(dir.path(), "/w").unwrap();
        numbered(&mut session, 0, 3);
        let path = session.path().to_path_buf();
        drop(session);
        assert!(read_page(&path, Some("nope"), 5).unwrap().is_none());
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut file, b"{\"type\":\"message\",\"id\":\"x").unwrap();
        let page = read_page(&path, None, 5).unwrap().unwrap();
        assert_eq!(texts(&page.transcript), ["m0", "m1", "m2"]);
        assert_eq!(std::fs::read(&path).unwrap().last(), Some(&b'x'));
    }

    #[test]
    fn the_written_prefix_reads_what_serde_reads_and_leaves_other_shapes_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut session = Session::create(dir.path(), "/w").unwrap();
        numbered(&mut session, 0, 2);
        let bytes = std::fs::read(session.path()).unwrap();
        for line in bytes
            .split(|&b| b == b'\n')
            .skip(1)
            .filter(|l| !l.is_empty())
        {
            let fast = written_prefix(line).unwrap();
            let slow: Probe = serde_json::from_slice(line).unwrap();
            assert_eq!(
                (fast.kind, fast.id, fast.parent_id),
                (slow.kind, slow.id, slow.parent_id)
            );
        }
        for other in [
            &br#"{"id":"a","type":"message","parentId":null}"#[..],
            br#"{"type":"message","id":"a\u0062","parentId":null}"#,
            br#"{"type":"message","id":"a","parentId":nullx}"#,
        ] {
            assert!(
                written_prefix(other).is_none(),
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }
}
