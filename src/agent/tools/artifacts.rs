//! The artifact tools as the chain sees them.
//!
//! `artifact_create` and `artifact_edit` write outside the working tree, into gg's own store, so
//! neither the file tools' confinement nor the agent area applies. They are `Normal`: asked in
//! the default mode with the whole change as a diff (a new artifact as a diff from nothing, an
//! edit as `v<n>` → `v<n+1>`), allowed by `--yolo`, denied when nobody can answer. Not
//! `Dangerous`: they never touch the working tree, nothing runs what they write, and every
//! version stays readable (an edit adds a version, it never overwrites one). Not pre-approved:
//! the reference gates them, and a document a person may later publish should be seen first.
//! `artifact_read` only reads and is `ReadOnly`; its text goes back to the model as untrusted
//! content (an artifact may quote a web page).

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use crate::agent::chain::{Assessment, Proposal, ProposeError, Tool};
use crate::agent::untrusted;
use tools::artifacts::{Kind, Store, slug, validate};
use tools::diff;
use tools::registry::Outcome;
use tools::store::{StoreError, human_size};

/// The three artifact tools over one store.
pub fn tools(store: Store) -> Vec<Arc<dyn Tool>> {
    let store = Arc::new(store);
    vec![
        Arc::new(Create(Arc::clone(&store))) as Arc<dyn Tool>,
        Arc::new(Edit(Arc::clone(&store))),
        Arc::new(Read(store)),
    ]
}

/// Runs a store operation off the async workers (it takes a file lock and fsyncs).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result.map_err(|e| e.to_string()),
        Err(e) => Err(format!("the artifact store task failed: {e}")),
    }
}

fn parse<T: serde::de::DeserializeOwned>(tool: &str, arguments: &str) -> Result<T, ProposeError> {
    serde_json::from_str(arguments)
        .map_err(|e| ProposeError::arguments_led(format!("invalid {tool} arguments"), e))
}

struct Create(Arc<Store>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateArgs {
    title: String,
    #[serde(rename = "type")]
    kind: String,
    content: String,
}

impl Tool for Create {
    fn name(&self) -> &str {
        "artifact_create"
    }

    fn description(&self) -> &str {
        "Create an artifact: a versioned document (a plan, a report, a summary) kept in gg's \
         artifact store, outside the working tree, that the user can read, diff and publish to \
         their library. type is \"markdown\" or \"html\"; content is the whole document (at \
         most 1 MiB). Returns the artifact id. The user approves it."
    }

    fn parameters(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "Short title (at most 200 characters)."},
                "type": {"type": "string", "enum": ["markdown", "html"]},
                "content": {"type": "string", "description": "The whole document."}
            },
            "required": ["title", "type", "content"],
            "additionalProperties": false
        })
    }

    fn propose(&self, arguments: &str) -> Result<Proposal, ProposeError> {
        let args: CreateArgs = parse(self.name(), arguments)?;
        let kind = Kind::parse(&args.kind)?;
        validate(Some(&args.title), &args.content)?;
        let title = args.title.trim().to_string();
        let file = format!("{}.{}", slug(&title), kind.extension());
        let summary = format!(
            "artifact_create {title:?} ({}, {})",
            kind.name(),
            human_size(args.content.len() as u64)
        );
        let details = format!(
            "new {} artifact {title:?} in gg's artifact store ({}), outside the working tree\n{}",
            kind.name(),
            self.0.root().display(),
            diff::between("/dev/null", &format!("new/{file}"), "", &args.content)
        );
        let store = Arc::clone(&self.0);
        Ok(Proposal::tool(
            Assessment::Normal,
            summary,
            details,
            format!("artifact_create\0{arguments}"),
            move |_cancel| {
                Box::pin(async move {
                    let content = args.content;
                    match blocking(move || store.create(&title, kind, &content)).await {
                        Ok(a) => Outcome::text(format!(
                            "created artifact {} {:?} ({}) v1; edit it with artifact_edit \
                             {{\"artifact_id\": \"{}\"}}",
                            a.id,
                            a.title,
                            a.kind.name(),
                            a.id
                        )),
                        Err(e) => Outcome::error(e),
                    }
                })
            },
        ))
    }
}

struct Edit(Arc<Store>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    artifact_id: String,
    content: String,
}

impl Tool for Edit {
    fn name(&self) -> &str {
        "artifact_edit"
    }

    fn description(&self) -> &str {
        "Edit an artifact: content becomes its next version (the whole new document, not a \
         patch). Earlier versions are kept. The user approves the change as a diff."
    }

    fn parameters(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "artifact_id": {"type": "string"},
                "content": {"type": "string", "description": "The whole new version."}
            },
            "required": ["artifact_id", "content"],
            "additionalProperties": false
        })
    }

    fn propose(&self, arguments: &str) -> Result<Proposal, ProposeError> {
        let args: EditArgs = parse(self.name(), arguments)?;
        validate(None, &args.content)?;
        // What the change is shown against; the write happens only if it is still the latest.
        let (artifact, shown, before) = self.0.read(args.artifact_id.trim(), None)?;
        if before == args.content {
            return Err(ProposeError::Unchanged {
                artifact: artifact.id,
                version: shown,
            });
        }
        let next = shown + 1;
        let summary = format!(
            "artifact_edit {} {:?} v{shown} → v{next}",
            artifact.id, artifact.title
        );
        let details = format!(
            "artifact {} {:?} in gg's artifact store, outside the working tree\n{}",
            artifact.id,
            artifact.title,
            diff::between(
                &format!("{}/{}", artifact.id, artifact.file_of(shown)),
                &format!("{}/{}", artifact.id, artifact.file_of(next)),
                &before,
                &args.content
            )
        );
        let store = Arc::clone(&self.0);
        let id = artifact.id.clone();
        Ok(Proposal::tool(
            Assessment::Normal,
            summary,
            details,
            format!("artifact_edit\0{shown}\0{arguments}"),
            move |_cancel| {
                Box::pin(async move {
                    let content = args.content;
                    match blocking(move || store.edit(&id, &content, shown)).await {
                        Ok(a) => Outcome::text(format!(
                            "artifact {} {:?} is now v{}",
                            a.id, a.title, a.version
                        )),
                        Err(e) => Outcome::error(e),
                    }
                })
            },
        ))
    }
}

struct Read(Arc<Store>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    #[serde(default)]
    artifact_id: Option<String>,
    #[serde(default)]
    version: Option<u32>,
}

impl Tool for Read {
    fn name(&self) -> &str {
        "artifact_read"
    }

    fn description(&self) -> &str {
        "Read an artifact (the latest version, or the given version). Without artifact_id, \
         lists the artifacts with their ids, titles and latest versions."
    }

    fn parameters(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "artifact_id": {"type": "string"},
                "version": {"type": "integer", "minimum": 1}
            },
            "additionalProperties": false
        })
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    fn propose(&self, arguments: &str) -> Result<Proposal, ProposeError> {
        let args: ReadArgs = parse(self.name(), arguments)?;
        let id = args.artifact_id.map(|id| id.trim().to_string());
        let summary = match (&id, args.version) {
            (None, _) => "artifact_read (list)".to_string(),
            (Some(id), None) => format!("artifact_read {id}"),
            (Some(id), Some(v)) => format!("artifact_read {id} v{v}"),
        };
        let store = Arc::clone(&self.0);
        let version = args.version;
        Ok(Proposal::tool(
            Assessment::ReadOnly,
            summary,
            String::new(),
            format!("artifact_read\0{arguments}"),
            move |_cancel| {
                Box::pin(async move {
                    let result =
                        match id {
                            None => blocking(move || store.list()).await.map(|list| {
                                if list.is_empty() {
                                    return "no artifacts yet".to_string();
                                }
                                // The most recently changed first; a long store is cut.
                                const MAX_LISTED: usize = 200;
                                let mut lines: Vec<String> = list
                                    .iter()
                                    .take(MAX_LISTED)
                                    .map(|a| {
                                        format!(
                                            "{}  v{}  {}  {}",
                                            a.id,
                                            a.version,
                                            a.kind.name(),
                                            a.title
                                        )
                                    })
                                    .collect();
                                if list.len() > MAX_LISTED {
                                    lines.push(format!(
                                        "… and {} older artifacts",
                                        list.len() - MAX_LISTED
                                    ));
                                }
                                untrusted::wrap("artifacts", &lines.join("\n"))
                            }),
                            Some(id) => blocking(move || store.read(&id, version)).await.map(
                                |(a, n, text)| {
                                    let published = a
                                        .published_version
                                        .map(|p| format!(", published v{p}"))
                                        .unwrap_or_default();
                                    format!(
                                        "artifact {} {:?} ({}) v{n} of {}{published}\n{}",
                                        a.id,
                                        a.title,
                                        a.kind.name(),
                                        a.version,
                                        untrusted::wrap(&format!("artifact:{} v{n}", a.id), &text)
                                    )
                                },
                            ),
                        };
                    match result {
                        Ok(text) => Outcome::text(text),
                        Err(e) => Outcome::error(e),
                    }
                })
            },
        ))
    }
}
