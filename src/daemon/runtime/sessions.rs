//! The open-session registry: which sessions ggd holds open, whether a run holds one, the
//! session methods of the protocol, and eviction of idle sessions.

use super::*;

/// What every open session has, whatever its state.
pub(super) struct Open {
    pub(super) path: PathBuf,
    /// `None` while a run or a session operation has it out.
    pub(super) session: Arc<tokio::sync::Mutex<Option<Session>>>,
    pub(super) last_used: u64,
}

/// One open session: idle, or held by exactly one run. A transition consumes the old state, so
/// a run id exists exactly while the session is running.
pub(super) enum Slot {
    Idle(Open),
    Running { open: Open, run_id: String },
}

impl Slot {
    pub(super) fn new(session: Session, last_used: u64) -> Slot {
        Slot::Idle(Open {
            path: session.path().to_path_buf(),
            session: Arc::new(tokio::sync::Mutex::new(Some(session))),
            last_used,
        })
    }

    pub(super) fn open(&self) -> &Open {
        match self {
            Slot::Idle(open) | Slot::Running { open, .. } => open,
        }
    }

    pub(super) fn open_mut(&mut self) -> &mut Open {
        match self {
            Slot::Idle(open) | Slot::Running { open, .. } => open,
        }
    }

    pub(super) fn run_id(&self) -> Option<&str> {
        match self {
            Slot::Idle(_) => None,
            Slot::Running { run_id, .. } => Some(run_id),
        }
    }

    pub(super) fn is_running(&self) -> bool {
        matches!(self, Slot::Running { .. })
    }

    /// Idle → running; a running slot keeps its run.
    pub(super) fn start(self, run_id: String) -> Slot {
        match self {
            Slot::Idle(open) => Slot::Running { open, run_id },
            running @ Slot::Running { .. } => running,
        }
    }

    /// Running → idle.
    pub(super) fn finish(self) -> Slot {
        match self {
            Slot::Running { open, .. } | Slot::Idle(open) => Slot::Idle(open),
        }
    }

    /// The session cell, the active run and the file, as the session operations need them.
    pub(super) fn parts(
        &self,
    ) -> (
        Arc<tokio::sync::Mutex<Option<Session>>>,
        Option<String>,
        PathBuf,
    ) {
        let open = self.open();
        (
            Arc::clone(&open.session),
            self.run_id().map(str::to_string),
            open.path.clone(),
        )
    }
}

impl State {
    /// Applies a transition to the slot of `id`, if it is open.
    pub(super) fn transition(&mut self, id: &str, step: impl FnOnce(Slot) -> Slot) {
        if let Some((key, slot)) = self.sessions.remove_entry(id) {
            self.sessions.insert(key, step(slot));
        }
    }
}

impl Runtime {
    /// `session.list`.
    pub fn list_sessions(&self) -> Result<Value, RpcError> {
        let list = paths::list_sessions(&self.settings.session_root, &self.settings.cwd)
            .map_err(session_error)?;
        Ok(Value::Array(
            list.into_iter()
                .map(|s| {
                    json!({"id": s.id, "name": s.name.unwrap_or_default(), "updatedAt": s.updated,
                        "messageCount": s.messages, "preview": s.preview})
                })
                .collect(),
        ))
    }

    /// `session.create`.
    pub fn create_session(&self, name: Option<&str>) -> Result<Value, RpcError> {
        let dir = self.project_dir()?;
        let mut session = Session::create(&dir, &self.settings.cwd.display().to_string())
            .map_err(session_error)?;
        if let Some(name) = name.filter(|n| !n.trim().is_empty()) {
            session.set_name(name).map_err(session_error)?;
        }
        let snapshot = self.snapshot(session.transcript());
        self.insert_slot(session);
        Ok(snapshot)
    }

    pub(super) fn insert_slot(&self, session: Session) {
        let mut state = lock(&self.state);
        state.clock += 1;
        let id = session.id().to_string();
        let slot = Slot::new(session, state.clock);
        state.sessions.insert(id, slot);
        evict(&mut state);
    }

    /// Makes sure `id` is open; returns its slot's session cell and whether a run holds it.
    pub(super) async fn ensure_open(
        &self,
        id: &str,
    ) -> Result<
        (
            Arc<tokio::sync::Mutex<Option<Session>>>,
            Option<String>,
            PathBuf,
        ),
        RpcError,
    > {
        check_session_id(id)?;
        {
            let mut state = lock(&self.state);
            state.clock += 1;
            let clock = state.clock;
            if let Some(slot) = state.sessions.get_mut(id) {
                slot.open_mut().last_used = clock;
                return Ok(slot.parts());
            }
        }
        let root = self.settings.session_root.clone();
        let cwd = self.settings.cwd.clone();
        let target = id.to_string();
        // Opening may wait for another process's lease: off the async workers.
        let session = tokio::task::spawn_blocking(move || {
            let path = paths::resolve_target(&root, &cwd, &target, false)?;
            Session::open(&path)
        })
        .await
        .map_err(|e| RpcError::app(AppError::Other, format!("open session: {e}")))?
        .map_err(session_error)?;
        if session.id() != id {
            // A prefix matched: the protocol takes exact ids only.
            return Err(RpcError::app(
                AppError::SessionNotFound,
                format!("session not found: {id}"),
            ));
        }
        let mut state = lock(&self.state);
        state.clock += 1;
        let clock = state.clock;
        let slot = state
            .sessions
            .entry(id.to_string())
            .or_insert_with(|| Slot::new(session, clock));
        let found = slot.parts();
        evict(&mut state);
        Ok(found)
    }

    /// Forgets an open session so the next call reopens it from disk (after a conflict or a
    /// lost session).
    pub(super) fn drop_slot(&self, id: &str) {
        let mut state = lock(&self.state);
        if state.sessions.get(id).is_some_and(|s| !s.is_running()) {
            state.sessions.remove(id);
        }
    }

    /// `session.open` / `session.get`: a snapshot; read from disk while a run holds the session.
    pub async fn open_session(&self, id: &str) -> Result<Value, RpcError> {
        let (cell, active, path) = self.ensure_open(id).await?;
        if active.is_none()
            && let Ok(guard) = cell.try_lock()
            && let Some(session) = guard.as_ref()
        {
            return Ok(self.snapshot(session.transcript()));
        }
        let transcript = tokio::task::spawn_blocking(move || session::load(&path))
            .await
            .map_err(|e| RpcError::app(AppError::Other, format!("load session: {e}")))?
            .map_err(session_error)?;
        Ok(self.snapshot(&transcript))
    }

    /// `session.open {limit}` (`before` = `None`) and `session.entries {before}`: one page of the
    /// path, newest first, read from the file without opening the session for writing (no lease,
    /// no repair, no tree built): a first screen should not wait for the whole file.
    pub async fn session_page(
        &self,
        id: &str,
        before: Option<String>,
        limit: usize,
    ) -> Result<Value, RpcError> {
        check_session_id(id)?;
        let open_path = lock(&self.state)
            .sessions
            .get(id)
            .map(|slot| slot.open().path.clone());
        let root = self.settings.session_root.clone();
        let cwd = self.settings.cwd.clone();
        let target = id.to_string();
        let cursor = before.clone();
        let page = tokio::task::spawn_blocking(move || {
            let path = match open_path {
                Some(path) => path,
                None => paths::resolve_target(&root, &cwd, &target, false)?,
            };
            session::read_page(&path, cursor.as_deref(), limit)
        })
        .await
        .map_err(|e| RpcError::app(AppError::Other, format!("read session: {e}")))?
        .map_err(session_error)?;
        let Some(page) = page else {
            return Err(RpcError::invalid_params(format!(
                "before: no message {:?} in session {id}",
                before.unwrap_or_default()
            )));
        };
        if page.transcript.id() != id {
            // A prefix matched: the protocol takes exact ids only.
            return Err(RpcError::app(
                AppError::SessionNotFound,
                format!("session not found: {id}"),
            ));
        }
        let name = page.name.clone().unwrap_or_default();
        let mut audit = Vec::new();
        for row in session::audit_trail(&page.transcript) {
            let mut value = serde_json::to_value(&row)
                .map_err(|e| RpcError::app(AppError::Other, e.to_string()))?;
            value["sessionId"] = json!(id);
            value["sessionName"] = json!(name);
            audit.push(value);
        }
        let mut result = json!({
            "messages": page.transcript.messages(),
            "audit": audit,
            "before": page.before,
            "firstMessage": page.first_message,
            "messageCount": page.total_messages,
        });
        if let (None, Some(object)) = (&before, result.as_object_mut()) {
            object.insert("sessionId".into(), json!(id));
            object.insert("sessionName".into(), json!(name));
            object.insert(
                "modelName".into(),
                json!(page.model.unwrap_or_else(|| self.default_label())),
            );
            if let Some((summary, through)) = page.summary {
                object.insert("summary".into(), json!(summary));
                object.insert("summaryThrough".into(), json!(through));
            }
        }
        Ok(result)
    }

    /// `session.tree`: the tree projection alone (a paged `session.open` leaves it out). Like
    /// `session.open`, read from disk while a run holds the session.
    pub async fn session_tree(&self, id: &str) -> Result<Value, RpcError> {
        let (cell, active, path) = self.ensure_open(id).await?;
        if active.is_none()
            && let Ok(guard) = cell.try_lock()
            && let Some(session) = guard.as_ref()
        {
            return Ok(json!({"treeItems": session.transcript().tree_items()}));
        }
        let transcript = tokio::task::spawn_blocking(move || session::load(&path))
            .await
            .map_err(|e| RpcError::app(AppError::Other, format!("load session: {e}")))?
            .map_err(session_error)?;
        Ok(json!({"treeItems": transcript.tree_items()}))
    }

    /// Runs a write on an idle session; refused while a run holds it.
    pub(super) async fn with_idle_session<T>(
        &self,
        id: &str,
        op: impl FnOnce(&mut Session) -> Result<T, SessionError>,
    ) -> Result<T, RpcError> {
        let (cell, active, _) = self.ensure_open(id).await?;
        if active.is_some() {
            return Err(RpcError::app(
                AppError::RunConflict,
                "cannot change conversation branch while a run is in progress",
            ));
        }
        let mut guard = cell.lock().await;
        let Some(session) = guard.as_mut() else {
            drop(guard);
            self.drop_slot(id);
            return Err(RpcError::app(
                AppError::SessionConflict,
                "session is being reopened; retry",
            ));
        };
        match op(session) {
            Ok(value) => Ok(value),
            Err(error) => {
                let retry = error.is_retryable_conflict();
                drop(guard);
                if retry {
                    self.drop_slot(id);
                }
                Err(session_error(error))
            }
        }
    }

    /// `session.rename`.
    pub async fn rename_session(&self, id: &str, name: &str) -> Result<Value, RpcError> {
        self.with_idle_session(id, |s| s.set_name(name).map(|_| ()))
            .await?;
        self.open_session(id).await
    }

    /// `session.action`: `tree` checks out a node, `fork` and `clone` create a new open session.
    pub async fn session_action(
        &self,
        id: &str,
        action: &str,
        node: Option<&str>,
    ) -> Result<Value, RpcError> {
        let node_required = || {
            node.filter(|n| !n.is_empty()).ok_or_else(|| {
                RpcError::app(AppError::InvalidAction, format!("{action} needs a nodeId"))
            })
        };
        match action {
            "tree" => {
                let node = node_required()?.to_string();
                let (draft, snapshot) = self
                    .with_idle_session(id, |s| {
                        let draft = s.checkout(&node)?;
                        Ok((draft, self.snapshot(s.transcript())))
                    })
                    .await?;
                Ok(update(
                    snapshot,
                    draft,
                    "switched conversation branch".to_string(),
                ))
            }
            "fork" | "clone" => {
                let node = if action == "fork" {
                    Some(node_required()?.to_string())
                } else {
                    None
                };
                let (forked, draft) = self
                    .with_idle_session(id, |s| match &node {
                        Some(node) => s.fork(node).map(|(f, d)| (f, Some(d))),
                        None => s.clone_session().map(|f| (f, None)),
                    })
                    .await?;
                let file = forked
                    .path()
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let verb = if action == "fork" { "forked" } else { "cloned" };
                let snapshot = self.snapshot(forked.transcript());
                self.insert_slot(forked);
                Ok(update(snapshot, draft, format!("{verb} to {file}")))
            }
            other => Err(RpcError::app(
                AppError::InvalidAction,
                format!("unknown session action {other:?} (tree, fork or clone)"),
            )),
        }
    }

    pub(super) fn snapshot(&self, transcript: &Transcript) -> Value {
        let model = transcript
            .last_model()
            .map(|(_, _, selection)| selection.to_string())
            .unwrap_or_else(|| self.default_label());
        let mut snapshot = json!({
            "sessionId": transcript.id(),
            "sessionName": transcript.name().unwrap_or_default(),
            "modelName": model,
            "messages": transcript.messages(),
            "treeItems": transcript.tree_items(),
        });
        if let (Some((summary, through)), Some(object)) =
            (transcript.last_summary(), snapshot.as_object_mut())
        {
            object.insert("summary".into(), json!(summary));
            object.insert("summaryThrough".into(), json!(through));
        }
        snapshot
    }

    // ---- runs -----------------------------------------------------------------------------
}

/// Closes the least recently used idle sessions beyond [`OPEN_SESSION_LIMIT`].
pub(super) fn evict(state: &mut State) {
    while state.sessions.len() > OPEN_SESSION_LIMIT {
        let victim = state
            .sessions
            .iter()
            .filter(|(_, s)| !s.is_running())
            .min_by_key(|(_, s)| s.open().last_used)
            .map(|(id, _)| id.clone());
        match victim {
            Some(id) => {
                state.sessions.remove(&id);
            }
            None => break,
        }
    }
}
