//! The in-memory tree of one session file: validated entries, the active path and the views
//! derived from it.

use std::collections::HashMap;

use serde::Serialize;

use super::audit::Audit;
use super::entry::{Entry, EntryKind, Header, Message, Role};

/// The header and entries of a session, validated as a tree.
///
/// Invariants: ids are non-empty and unique, every parent appears on an earlier line. The leaf
/// (the checked-out position) is always the last entry, as on disk.
#[derive(Debug, Clone)]
pub struct Transcript {
    header: Header,
    entries: Vec<Entry>,
    index: HashMap<String, u32>,
    parents: Vec<Option<u32>>,
}

/// A message node of the tree projection for UIs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TreeItem {
    /// Entry id.
    pub id: String,
    /// Nearest message ancestor, if any.
    #[serde(rename = "parentId")]
    pub parent_id: Option<String>,
    /// Indentation: grows only below nodes with more than one child.
    pub depth: usize,
    /// Message role.
    pub role: Role,
    /// Message text, or `tool call: a, b` for an assistant message that only calls tools.
    pub text: String,
    /// True when the node is on the active path.
    pub active: bool,
}

impl Transcript {
    /// An empty tree under `header`.
    pub(crate) fn new(header: Header) -> Self {
        Transcript {
            header,
            entries: Vec::new(),
            index: HashMap::new(),
            parents: Vec::new(),
        }
    }

    /// Adds `entry` after validating it against the tree. The error is the reason only.
    pub(crate) fn push(&mut self, entry: Entry) -> std::result::Result<(), String> {
        if entry.id.is_empty() {
            return Err("session entry is missing an id".to_owned());
        }
        if self.index.contains_key(&entry.id) {
            return Err(format!("duplicate session entry id {:?}", entry.id));
        }
        let parent = match &entry.parent_id {
            None => None,
            Some(parent) => match self.index.get(parent) {
                Some(&position) => Some(position),
                None => {
                    return Err(format!(
                        "session entry {:?} has missing or non-append-only parent {parent:?}",
                        entry.id
                    ));
                }
            },
        };
        let position = u32::try_from(self.entries.len())
            .map_err(|_| "session has too many entries".to_owned())?;
        self.index.insert(entry.id.clone(), position);
        self.parents.push(parent);
        self.entries.push(entry);
        Ok(())
    }

    pub(crate) fn set_header(&mut self, header: Header) {
        self.header = header;
    }

    /// The header (line 1).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// All entries in file order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry with `id`.
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.index
            .get(id)
            .map(|&position| &self.entries[position as usize])
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.index.contains_key(id)
    }

    /// The checked-out node: the last entry in the file.
    pub fn leaf(&self) -> Option<&Entry> {
        self.entries.last()
    }

    /// Indices root → `position` (inclusive).
    fn path_indices(&self, position: Option<usize>) -> Vec<usize> {
        let mut path = Vec::new();
        let mut current = position;
        // Parents always precede children, so the walk ends; the bound guards that invariant.
        while let Some(index) = current {
            if path.len() > self.entries.len() {
                break;
            }
            path.push(index);
            current = self.parents[index].map(|parent| parent as usize);
        }
        path.reverse();
        path
    }

    /// Entries from the root to the leaf.
    pub fn active_path(&self) -> Vec<&Entry> {
        self.path_indices(self.entries.len().checked_sub(1))
            .into_iter()
            .map(|i| &self.entries[i])
            .collect()
    }

    /// Entries from the root to `id` (inclusive); empty if `id` is unknown.
    pub fn path_to(&self, id: &str) -> Vec<&Entry> {
        match self.index.get(id) {
            Some(&position) => self
                .path_indices(Some(position as usize))
                .into_iter()
                .map(|i| &self.entries[i])
                .collect(),
            None => Vec::new(),
        }
    }

    /// `mask[i]` is true when entry `i` is on the active path.
    pub(crate) fn active_mask(&self) -> Vec<bool> {
        let mut mask = vec![false; self.entries.len()];
        for index in self.path_indices(self.entries.len().checked_sub(1)) {
            mask[index] = true;
        }
        mask
    }

    /// The nearest strict ancestor of entry `position` that satisfies `accept`.
    pub(crate) fn nearest_ancestor(
        &self,
        position: usize,
        accept: impl Fn(&Entry) -> bool,
    ) -> Option<usize> {
        let mut current = self.parents[position].map(|parent| parent as usize);
        let mut steps = 0;
        while let Some(index) = current {
            if accept(&self.entries[index]) {
                return Some(index);
            }
            steps += 1;
            if steps > self.entries.len() {
                return None;
            }
            current = self.parents[index].map(|parent| parent as usize);
        }
        None
    }

    /// Messages of the active path, in order.
    pub fn messages(&self) -> Vec<&Message> {
        self.active_path()
            .into_iter()
            .filter_map(Entry::message)
            .collect()
    }

    /// The last `model` entry of the active path as `(provider, model, selection)`.
    pub fn last_model(&self) -> Option<(&str, &str, &str)> {
        self.active_path()
            .into_iter()
            .rev()
            .find_map(|entry| match &entry.kind {
                EntryKind::Model {
                    provider,
                    model,
                    selection,
                } => Some((provider.as_str(), model.as_str(), selection.as_str())),
                _ => None,
            })
    }

    /// The last `summary` entry of the active path as `(summary, through_message_count)`.
    pub fn last_summary(&self) -> Option<(&str, u64)> {
        self.active_path()
            .into_iter()
            .rev()
            .find_map(|entry| match &entry.kind {
                EntryKind::Summary {
                    summary,
                    through_message_count,
                } => Some((summary.as_str(), *through_message_count)),
                _ => None,
            })
    }

    /// The session name from the last `session_info` of the active path; `None` when unnamed or
    /// cleared.
    pub fn name(&self) -> Option<&str> {
        self.active_path()
            .into_iter()
            .rev()
            .find_map(|entry| match &entry.kind {
                EntryKind::SessionInfo { name } => Some(name.as_str()),
                _ => None,
            })
            .filter(|name| !name.is_empty())
    }

    /// The whole file as it would be written now: header line and one line per entry.
    pub fn to_jsonl(&self) -> serde_json::Result<Vec<u8>> {
        let mut bytes = super::entry::header_line(&self.header)?;
        for entry in &self.entries {
            bytes.extend_from_slice(&entry.to_json_line()?);
        }
        Ok(bytes)
    }

    /// The tree projection for UIs: message entries only, in depth-first file order.
    pub fn tree_items(&self) -> Vec<TreeItem> {
        let active = self.active_mask();
        let is_message = |entry: &Entry| entry.message().is_some();
        let mut visible_parent: Vec<Option<usize>> = vec![None; self.entries.len()];
        let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
        let mut roots = Vec::new();
        for (index, entry) in self.entries.iter().enumerate() {
            if !is_message(entry) {
                continue;
            }
            let parent = self.nearest_ancestor(index, is_message);
            visible_parent[index] = parent;
            match parent {
                Some(parent) => children.entry(parent).or_default().push(index),
                None => roots.push(index),
            }
        }
        let mut items = Vec::new();
        // Iterative depth-first walk: a linear 100k-message session would overflow a recursive one.
        let mut stack: Vec<(usize, usize)> =
            roots.into_iter().rev().map(|root| (root, 0)).collect();
        while let Some((index, depth)) = stack.pop() {
            let entry = &self.entries[index];
            let Some(message) = entry.message() else {
                continue;
            };
            items.push(TreeItem {
                id: entry.id.clone(),
                parent_id: visible_parent[index].map(|parent| self.entries[parent].id.clone()),
                depth,
                role: message.role,
                text: ui_text(message),
                active: active[index],
            });
            if let Some(kids) = children.get(&index) {
                let child_depth = if kids.len() > 1 { depth + 1 } else { depth };
                stack.extend(kids.iter().rev().map(|&kid| (kid, child_depth)));
            }
        }
        items
    }
}

/// The UI text of a message: its text, or the called tools when it has none.
pub fn ui_text(message: &Message) -> String {
    let text = message.display_text();
    if text.is_empty() && !message.tool_calls.is_empty() {
        let names: Vec<&str> = message
            .tool_calls
            .iter()
            .map(|call| call.name.as_str())
            .collect();
        return format!("tool call: {}", names.join(", "));
    }
    text
}

/// What happened to a tool call, as seen from its result entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// A result without error.
    Ok,
    /// A result with the `error` field set.
    Error,
    /// The interruption placeholder written on resume: the call may or may not have run.
    Interrupted,
    /// No result was recorded (the session ended mid-call and was not resumed).
    Missing,
}

/// One row of `gg audit`: a tool call with its arguments, outcome and audit trail.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCallAudit {
    /// Entry id of the assistant message that requested the call.
    #[serde(rename = "requestEntryId")]
    pub request_entry_id: String,
    /// When the call was requested (entry timestamp, RFC 3339).
    pub timestamp: String,
    /// Provider call id.
    #[serde(rename = "callId")]
    pub call_id: String,
    /// Tool name.
    pub tool: String,
    /// Arguments as JSON text.
    pub arguments: String,
    /// Outcome.
    pub status: CallStatus,
    /// Entry id of the result, if there is one.
    #[serde(rename = "resultEntryId", skip_serializing_if = "Option::is_none")]
    pub result_entry_id: Option<String>,
    /// Error text of the result, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Audit trail of the result, if one was recorded (results written by the Go implementation
    /// or by interruption recovery have none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audit: Option<Audit>,
    /// True when the call is on the currently checked-out branch.
    #[serde(rename = "activeBranch")]
    pub active_branch: bool,
}

/// Every tool call of every branch, in file order, with its result and audit trail.
///
/// A result belongs to a call when its `toolCallId` matches one of the calls of the nearest
/// assistant message above it in the tree; this keeps branches apart even when providers reuse
/// call ids.
pub fn audit_trail(transcript: &Transcript) -> Vec<ToolCallAudit> {
    let entries = transcript.entries();
    let active = transcript.active_mask();
    // (assistant entry index, call id) -> result entry index; the first result wins.
    let mut results: std::collections::HashMap<(usize, &str), usize> =
        std::collections::HashMap::new();
    for (index, entry) in entries.iter().enumerate() {
        let Some(message) = entry.message() else {
            continue;
        };
        if message.role != Role::Tool || message.tool_call_id.is_empty() {
            continue;
        }
        if let Some(request) = transcript.nearest_ancestor(index, |candidate| {
            candidate.message().is_some_and(|m| m.role != Role::Tool)
        }) {
            results
                .entry((request, message.tool_call_id.as_str()))
                .or_insert(index);
        }
    }
    let mut rows = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let EntryKind::Message { message, .. } = &entry.kind else {
            continue;
        };
        if message.role != Role::Assistant {
            continue;
        }
        for call in &message.tool_calls {
            let result = results
                .get(&(index, call.id.as_str()))
                .map(|&i| &entries[i]);
            let (status, error, audit, result_entry_id) = match result {
                None => (CallStatus::Missing, None, None, None),
                Some(result_entry) => {
                    let result_message = result_entry.message();
                    let error = result_message
                        .map(|m| m.error.clone())
                        .filter(|e| !e.is_empty());
                    let status = match &error {
                        Some(text) if text == super::INTERRUPTED_TOOL_RESULT => {
                            CallStatus::Interrupted
                        }
                        Some(_) => CallStatus::Error,
                        None => CallStatus::Ok,
                    };
                    (
                        status,
                        error,
                        result_entry.audit().cloned(),
                        Some(result_entry.id.clone()),
                    )
                }
            };
            rows.push(ToolCallAudit {
                request_entry_id: entry.id.clone(),
                timestamp: entry.timestamp.clone(),
                call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.get().to_owned(),
                status,
                result_entry_id,
                error,
                audit,
                active_branch: active[index],
            });
        }
    }
    rows
}
