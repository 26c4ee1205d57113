//! A session open for writing: append-only, fsynced, guarded by the writer lease and an
//! optimistic freshness check.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{BufWriter, ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::INTERRUPTED_TOOL_RESULT;
use super::audit::Audit;
use super::entry::{CURRENT_VERSION, Entry, EntryKind, Header, Message, Role, Usage, header_line};
use super::error::{Result, SessionError};
use super::id::new_id;
use super::lease::Lease;
use super::parse::{Tail, parse_file};
use super::time::{fork_stamp, now_rfc3339, now_unix_millis, unix_nanos};
use super::transcript::Transcript;

const CREATE_ATTEMPTS: usize = 10;

/// What the store last saw of its file; any difference means another process may have written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileState {
    device: u64,
    inode: u64,
    len: u64,
    mtime: i64,
    mtime_nanos: i64,
}

impl FileState {
    fn of(metadata: &fs::Metadata) -> Self {
        FileState {
            device: metadata.dev(),
            inode: metadata.ino(),
            len: metadata.len(),
            mtime: metadata.mtime(),
            mtime_nanos: metadata.mtime_nsec(),
        }
    }

    fn of_path(path: &Path) -> Result<Self> {
        fs::metadata(path)
            .map(|metadata| FileState::of(&metadata))
            .map_err(|error| SessionError::io("stat session", path, error))
    }
}

/// A session file opened for writing.
///
/// Every write takes the lease, verifies that the file is still exactly what this process last
/// wrote or read (identity, size, mtime; on a mismatch it re-reads the file and refuses with
/// [`SessionError::Conflict`] if the last entry differs), appends one line, fsyncs and releases.
#[derive(Debug)]
pub struct Session {
    path: PathBuf,
    transcript: Transcript,
    known: FileState,
}

impl Session {
    /// Creates a new session file `<unix-nanoseconds>.jsonl` in the project directory `dir`
    /// (created 0700 if needed, and chmod-ed to 0700).
    pub fn create(dir: &Path, cwd: &str) -> Result<Session> {
        ensure_private_dir(dir)?;
        for _ in 0..CREATE_ATTEMPTS {
            let path = dir.join(format!("{}.jsonl", unix_nanos(SystemTime::now())));
            match Session::create_file(&path, new_header(cwd)?) {
                Err(SessionError::Io { source, .. })
                    if source.kind() == ErrorKind::AlreadyExists =>
                {
                    continue;
                }
                other => return other,
            }
        }
        Err(SessionError::Invalid(format!(
            "could not allocate a session path in {}",
            dir.display()
        )))
    }

    /// Creates a new session at exactly `path` (for `--session FILE`); fails if it exists.
    /// Missing parent directories are created 0700.
    pub fn create_at(path: &Path, cwd: &str) -> Result<Session> {
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|error| SessionError::io("create session directory", parent, error))?;
        }
        Session::create_file(path, new_header(cwd)?)
    }

    fn create_file(path: &Path, header: Header) -> Result<Session> {
        let line = header_line(&header)
            .map_err(|error| SessionError::Invalid(format!("encode session header: {error}")))?;
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|error| SessionError::io("create session", path, error))?;
        let written = file.write_all(&line).and_then(|()| file.sync_all());
        if let Err(error) = written {
            let _ = fs::remove_file(path);
            return Err(SessionError::io("write session", path, error));
        }
        sync_parent(path)?;
        let known = FileState::of(
            &file
                .metadata()
                .map_err(|error| SessionError::io("stat session", path, error))?,
        );
        Ok(Session {
            path: path.to_path_buf(),
            transcript: Transcript::new(header),
            known,
        })
    }

    /// Opens an existing session: takes the lease, repairs a torn or unterminated last line,
    /// migrates format versions below 3 (temp file + rename) and loads the tree. A bad line
    /// anywhere but at the end is an error naming file and line; the file is then not touched.
    pub fn open(path: &Path) -> Result<Session> {
        Session::open_inner(path, None)
    }

    /// Opens `path`, or creates it when it does not exist or holds no complete line yet (a crash
    /// while the header was being written).
    pub fn open_or_create(path: &Path, cwd: &str) -> Result<Session> {
        match fs::symlink_metadata(path) {
            Err(error) if error.kind() == ErrorKind::NotFound => {
                match Session::create_at(path, cwd) {
                    // Lost a race against another creator: open what it wrote.
                    Err(SessionError::Io { source, .. })
                        if source.kind() == ErrorKind::AlreadyExists =>
                    {
                        Session::open_inner(path, Some(cwd))
                    }
                    other => other,
                }
            }
            Err(error) => Err(SessionError::io("stat session", path, error)),
            Ok(_) => Session::open_inner(path, Some(cwd)),
        }
    }

    fn open_inner(path: &Path, init_cwd: Option<&str>) -> Result<Session> {
        let _lease = Lease::acquire(path)?;
        let parsed = parse_file(path)?;
        make_private(path)?;
        let Some(transcript) = parsed.transcript else {
            // Nothing complete in the file: only then may it be (re)initialised.
            return match init_cwd {
                Some(cwd) => {
                    let transcript = Transcript::new(new_header(cwd)?);
                    rewrite(path, transcript.header(), transcript.entries())?;
                    Ok(Session {
                        path: path.to_path_buf(),
                        transcript,
                        known: FileState::of_path(path)?,
                    })
                }
                None => Err(SessionError::corrupt(path, 1, "missing session header")),
            };
        };
        if parsed.source_version < CURRENT_VERSION {
            rewrite(path, transcript.header(), transcript.entries())?;
        } else {
            match parsed.tail {
                Tail::Clean => {}
                Tail::Torn => {
                    let file = OpenOptions::new().write(true).open(path).map_err(|error| {
                        SessionError::io("open session for repair", path, error)
                    })?;
                    file.set_len(parsed.valid_len)
                        .and_then(|()| file.sync_all())
                        .map_err(|error| {
                            SessionError::io("truncate torn session line", path, error)
                        })?;
                }
                Tail::MissingNewline => {
                    let mut file = OpenOptions::new()
                        .append(true)
                        .open(path)
                        .map_err(|error| {
                            SessionError::io("open session for repair", path, error)
                        })?;
                    file.write_all(b"\n")
                        .and_then(|()| file.sync_all())
                        .map_err(|error| SessionError::io("restore final newline", path, error))?;
                }
            }
        }
        Ok(Session {
            path: path.to_path_buf(),
            transcript,
            known: FileState::of_path(path)?,
        })
    }

    /// The session file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session id.
    pub fn id(&self) -> &str {
        self.transcript.id()
    }

    /// The loaded tree and all read-only views of it.
    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    /// Appends a message (its `timestamp` is set to now when 0).
    pub fn append_message(&mut self, message: Message) -> Result<&Entry> {
        self.append_message_with_audit(message, None)
    }

    /// Appends a message with its audit trail (for tool results).
    pub fn append_message_with_audit(
        &mut self,
        mut message: Message,
        audit: Option<Audit>,
    ) -> Result<&Entry> {
        if message.timestamp == 0 {
            message.timestamp = now_unix_millis();
        }
        let audit = audit.map(Box::new);
        self.append(EntryKind::Message { message, audit }, self.leaf_id())
    }

    /// Appends token usage; zero usage is not written and returns `None`.
    pub fn append_usage(&mut self, usage: Usage) -> Result<Option<&Entry>> {
        if usage.is_zero() {
            return Ok(None);
        }
        self.append(EntryKind::Usage(usage), self.leaf_id())
            .map(Some)
    }

    /// Records the model selected from here on.
    pub fn append_model(&mut self, provider: &str, model: &str) -> Result<&Entry> {
        let kind = EntryKind::Model {
            provider: provider.to_owned(),
            model: model.to_owned(),
            selection: format!("{provider}:{model}"),
        };
        self.append(kind, self.leaf_id())
    }

    /// Records a setting the person changed mid-session (`/approval never`, …), for the audit.
    pub fn append_policy(&mut self, setting: &str, from: &str, to: &str) -> Result<&Entry> {
        let kind = EntryKind::Policy {
            name: self.transcript.name().unwrap_or_default().to_owned(),
            setting: setting.to_owned(),
            from: from.to_owned(),
            to: to.to_owned(),
        };
        self.append(kind, self.leaf_id())
    }

    /// Records a compaction summary covering the first `through_message_count` messages.
    pub fn append_summary(&mut self, summary: &str, through_message_count: u64) -> Result<&Entry> {
        self.append(
            EntryKind::Summary {
                summary: summary.to_owned(),
                through_message_count,
            },
            self.leaf_id(),
        )
    }

    /// Sets the display name (CR/LF become spaces, surrounding whitespace is trimmed; an empty
    /// name clears it).
    pub fn set_name(&mut self, name: &str) -> Result<&Entry> {
        let name = name.replace(['\r', '\n'], " ").trim().to_owned();
        self.append(EntryKind::SessionInfo { name }, self.leaf_id())
    }

    /// Checks out `target` (or the root for `None`) by appending a `head` entry whose parent is
    /// the target; later entries hang off the new head.
    pub fn branch(&mut self, target: Option<&str>) -> Result<&Entry> {
        if let Some(id) = target
            && !self.transcript.contains(id)
        {
            return Err(SessionError::Invalid(format!(
                "session entry {id:?} not found"
            )));
        }
        self.append(EntryKind::Head, target.map(str::to_owned))
    }

    /// The tree action of the UIs: a user message is checked out at its parent and its text is
    /// returned as the draft to edit; any other node is checked out as is.
    pub fn checkout(&mut self, node: &str) -> Result<Option<String>> {
        let entry = self
            .transcript
            .get(node)
            .ok_or_else(|| SessionError::Invalid(format!("session entry {node:?} not found")))?;
        match entry.message().filter(|message| message.role == Role::User) {
            Some(user) => {
                let draft = user.display_text();
                let parent = entry.parent_id.clone();
                self.branch(parent.as_deref())?;
                Ok(Some(draft))
            }
            None => {
                self.branch(Some(node))?;
                Ok(None)
            }
        }
    }

    /// Forks at the user message `node`: a new session file in the same directory holding the
    /// path from the root to the node's parent (ids preserved). Returns the new session and the
    /// user text as the draft. This session is not modified.
    pub fn fork(&mut self, node: &str) -> Result<(Session, String)> {
        let entry = self
            .transcript
            .get(node)
            .ok_or_else(|| SessionError::Invalid("select a user message to fork".to_owned()))?;
        let Some(user) = entry.message().filter(|message| message.role == Role::User) else {
            return Err(SessionError::Invalid(
                "select a user message to fork".to_owned(),
            ));
        };
        let draft = user.display_text();
        let through = entry.parent_id.clone();
        let forked = self.fork_through(through.as_deref())?;
        Ok((forked, draft))
    }

    /// Clones the session: a fork at the current leaf.
    pub fn clone_session(&mut self) -> Result<Session> {
        let leaf = self.leaf_id();
        self.fork_through(leaf.as_deref())
    }

    fn fork_through(&mut self, through: Option<&str>) -> Result<Session> {
        let lease = Lease::acquire(&self.path)?;
        self.check_fresh()?;
        let entries: Vec<Entry> = match through {
            Some(id) => self.transcript.path_to(id).into_iter().cloned().collect(),
            None => Vec::new(),
        };
        let source = self.transcript.header();
        let header = Header {
            kind: "session".to_owned(),
            version: CURRENT_VERSION,
            id: new_id()?,
            timestamp: now_rfc3339(),
            cwd: source.cwd.clone(),
            workspace_id: source.workspace_id.clone(),
            parent_session_id: Some(source.id.clone()),
            parent_entry_id: entries.last().map(|entry| entry.id.clone()),
            parent_session: None,
        };
        let mut transcript = Transcript::new(header);
        for entry in entries {
            transcript.push(entry).map_err(SessionError::Invalid)?;
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        for _ in 0..CREATE_ATTEMPTS {
            let name = format!("{}-fork-{}.jsonl", fork_stamp(SystemTime::now()), new_id()?);
            let path = dir.join(name);
            let file = match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(file) => file,
                Err(error) if error.kind() == ErrorKind::AlreadyExists => continue,
                Err(error) => return Err(SessionError::io("create fork", &path, error)),
            };
            if let Err(error) =
                write_all_lines(&file, &path, transcript.header(), transcript.entries())
            {
                let _ = fs::remove_file(&path);
                return Err(error);
            }
            sync_parent(&path)?;
            drop(lease);
            let known = FileState::of_path(&path)?;
            return Ok(Session {
                path,
                transcript,
                known,
            });
        }
        Err(SessionError::Invalid(
            "could not allocate a fork session path".to_owned(),
        ))
    }

    /// Interruption recovery, run when a session is resumed: for every tool call of the last
    /// non-tool message on the active path that has no result, appends a tool result whose
    /// content and error are [`INTERRUPTED_TOOL_RESULT`]. The calls are never replayed.
    /// Returns the ids of the calls that were closed this way.
    pub fn recover_interrupted_tool_calls(&mut self) -> Result<Vec<String>> {
        let pending: Vec<(String, String)> = {
            let messages = self.transcript.messages();
            let Some(last_request) = messages
                .iter()
                .rposition(|message| message.role != Role::Tool)
            else {
                return Ok(Vec::new());
            };
            let answered: Vec<&str> = messages[last_request + 1..]
                .iter()
                .map(|message| message.tool_call_id.as_str())
                .collect();
            messages[last_request]
                .tool_calls
                .iter()
                .filter(|call| !answered.contains(&call.id.as_str()))
                .map(|call| (call.id.clone(), call.name.clone()))
                .collect()
        };
        let mut recovered = Vec::with_capacity(pending.len());
        for (call_id, tool_name) in pending {
            let mut message = Message::text(Role::Tool, INTERRUPTED_TOOL_RESULT);
            message.error = INTERRUPTED_TOOL_RESULT.to_owned();
            message.tool_call_id = call_id.clone();
            message.tool_name = tool_name;
            self.append_message(message)?;
            recovered.push(call_id);
        }
        Ok(recovered)
    }

    /// Binds the session to a workspace (or unbinds it): the header is rewritten atomically
    /// (temp file + rename) under the lease.
    pub fn set_workspace_id(&mut self, workspace_id: Option<&str>) -> Result<()> {
        let _lease = Lease::acquire(&self.path)?;
        self.check_fresh()?;
        let mut header = self.transcript.header().clone();
        header.workspace_id = workspace_id.map(str::to_owned);
        rewrite(&self.path, &header, self.transcript.entries())?;
        self.transcript.set_header(header);
        self.known = FileState::of_path(&self.path)?;
        Ok(())
    }

    fn leaf_id(&self) -> Option<String> {
        self.transcript.leaf().map(|entry| entry.id.clone())
    }

    fn fresh_entry_id(&self) -> Result<String> {
        for _ in 0..CREATE_ATTEMPTS {
            let id = new_id()?;
            if !self.transcript.contains(&id) {
                return Ok(id);
            }
        }
        Err(SessionError::Invalid(
            "could not allocate a unique entry id".to_owned(),
        ))
    }

    fn append(&mut self, kind: EntryKind, parent_id: Option<String>) -> Result<&Entry> {
        let entry = Entry {
            id: self.fresh_entry_id()?,
            parent_id,
            timestamp: now_rfc3339(),
            kind,
        };
        let line = entry
            .to_json_line()
            .map_err(|error| SessionError::Invalid(format!("encode session entry: {error}")))?;
        let lease = Lease::acquire(&self.path)?;
        self.check_fresh()?;
        let mut file = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|error| SessionError::io("open session for append", &self.path, error))?;
        // Same inode as checked: nobody else writes while the lease is held.
        if let Err(error) = file.write_all(&line).and_then(|()| file.sync_all()) {
            // Take a partial line back so the file stays a valid session for everyone.
            let _ = file.set_len(self.known.len).and_then(|()| file.sync_all());
            return Err(SessionError::io("append to session", &self.path, error));
        }
        self.known = FileState::of(
            &file
                .metadata()
                .map_err(|error| SessionError::io("stat session", &self.path, error))?,
        );
        drop(lease);
        self.transcript.push(entry).map_err(SessionError::Invalid)?;
        self.transcript
            .leaf()
            .ok_or_else(|| SessionError::Invalid("appended entry vanished".to_owned()))
    }

    /// The optimistic check, run under the lease before every write.
    fn check_fresh(&mut self) -> Result<()> {
        let current = match fs::metadata(&self.path) {
            Ok(metadata) => FileState::of(&metadata),
            Err(error) if error.kind() == ErrorKind::NotFound => {
                return Err(SessionError::Conflict {
                    session_id: self.id().to_owned(),
                });
            }
            Err(error) => return Err(SessionError::io("stat session", &self.path, error)),
        };
        if current == self.known {
            return Ok(());
        }
        let conflict = || SessionError::Conflict {
            session_id: self.transcript.id().to_owned(),
        };
        let same_file = current.device == self.known.device && current.inode == self.known.inode;
        if same_file && current.len != self.known.len {
            // Same file, other length: someone appended (entries or a torn line) or cut it back.
            // Either way the history is no longer ours; decided without re-reading the file.
            return Err(conflict());
        }
        let parsed = parse_file(&self.path)?;
        let Some(disk) = parsed.transcript else {
            return Err(conflict());
        };
        let same_history = parsed.tail == Tail::Clean
            && parsed.source_version == CURRENT_VERSION
            && disk.id() == self.transcript.id()
            && disk.entries().len() == self.transcript.entries().len()
            && disk.leaf().map(|entry| &entry.id) == self.transcript.leaf().map(|entry| &entry.id);
        if !same_history {
            return Err(conflict());
        }
        // Same history, rewritten file (a header change such as a workspace binding): adopt it.
        self.transcript.set_header(disk.header().clone());
        self.known = current;
        Ok(())
    }
}

fn new_header(cwd: &str) -> Result<Header> {
    Ok(Header {
        kind: "session".to_owned(),
        version: CURRENT_VERSION,
        id: new_id()?,
        timestamp: now_rfc3339(),
        cwd: cwd.to_owned(),
        workspace_id: None,
        parent_session_id: None,
        parent_entry_id: None,
        parent_session: None,
    })
}

/// Creates `dir` (and missing parents) and enforces 0700 on it.
pub(crate) fn ensure_private_dir(dir: &Path) -> Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|error| SessionError::io("create session directory", dir, error))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
        .map_err(|error| SessionError::io("chmod session directory", dir, error))
}

/// Session files are 0600: a file that is readable by others (copied in, or written by another
/// tool) is tightened when gg opens it for writing.
fn make_private(path: &Path) -> Result<()> {
    let mode = fs::metadata(path)
        .map_err(|error| SessionError::io("stat session", path, error))?
        .permissions()
        .mode();
    if mode & 0o077 == 0 {
        return Ok(());
    }
    fs::set_permissions(path, fs::Permissions::from_mode((mode & 0o700) | 0o600))
        .map_err(|error| SessionError::io("chmod session", path, error))
}

/// Makes a create or rename in `path`'s directory durable.
fn sync_parent(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    File::open(dir)
        .and_then(|handle| handle.sync_all())
        .map_err(|error| SessionError::io("sync directory", dir, error))
}

fn write_all_lines(file: &File, path: &Path, header: &Header, entries: &[Entry]) -> Result<()> {
    let encode =
        |error: serde_json::Error| SessionError::Invalid(format!("encode session: {error}"));
    let io = |error| SessionError::io("write session", path, error);
    let mut writer = BufWriter::with_capacity(1 << 20, file);
    writer
        .write_all(&header_line(header).map_err(encode)?)
        .map_err(io)?;
    for entry in entries {
        writer
            .write_all(&entry.to_json_line().map_err(encode)?)
            .map_err(io)?;
    }
    writer.flush().map_err(io)?;
    drop(writer);
    file.sync_all().map_err(io)
}

/// Replaces `path` atomically with `transcript` (temp `.session-migrate-*.jsonl`, 0600, fsync,
/// rename, directory fsync). Used for migration and header changes; never an in-place rewrite.
fn rewrite(path: &Path, header: &Header, entries: &[Entry]) -> Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    for _ in 0..CREATE_ATTEMPTS {
        let temp = dir.join(format!(".session-migrate-{}.jsonl", new_id()?));
        let file = match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
        {
            Ok(file) => file,
            Err(error) if error.kind() == ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(SessionError::io("create temporary session", &temp, error)),
        };
        let result = file
            .set_permissions(fs::Permissions::from_mode(0o600))
            .map_err(|error| SessionError::io("chmod temporary session", &temp, error))
            .and_then(|()| write_all_lines(&file, &temp, header, entries))
            .and_then(|()| {
                fs::rename(&temp, path)
                    .map_err(|error| SessionError::io("replace session", path, error))
            });
        if let Err(error) = result {
            let _ = fs::remove_file(&temp);
            return Err(error);
        }
        return sync_parent(path);
    }
    Err(SessionError::Invalid(
        "could not allocate a temporary session path".to_owned(),
    ))
}
