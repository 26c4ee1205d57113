//! ggd's `kb.*` methods: the same knowledge bases and rules as `gg kb`. The index is synchronous
//! (tantivy), so every call runs on a blocking thread and the daemon's workers stay free.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};

use super::rpc::{AppError, RpcError};
use super::runtime::Settings;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NameParams {
    #[serde(default)]
    kb: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchParams {
    query: String,
    #[serde(default)]
    kb: Option<String>,
    #[serde(default)]
    top_k: Option<usize>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddParams {
    /// Files and directories; relative ones are resolved against the daemon's `--cwd`.
    #[serde(default)]
    paths: Vec<PathBuf>,
    #[serde(default)]
    kb: Option<String>,
    #[serde(default)]
    exclude: Vec<String>,
}

fn failed(e: impl std::fmt::Display) -> RpcError {
    RpcError::app(AppError::Other, e.to_string())
}

/// A missing or malformed name is the caller's mistake (`-32602`); anything else is `-32000`.
fn kb_error(e: kb::KbError) -> RpcError {
    match e {
        kb::KbError::BadName(_) | kb::KbError::BadPath(_) | kb::KbError::NotFound(_) => {
            RpcError::invalid_params(e)
        }
        other => failed(other),
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, RpcError> + Send + 'static,
) -> Result<T, RpcError> {
    tokio::task::spawn_blocking(work).await.map_err(failed)?
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(failed)
}

/// `kb.list {}` → `{knowledgeBases: [...], default}`.
pub async fn list(settings: &Settings) -> Result<Value, RpcError> {
    let store = kb::Store::in_home(&settings.home);
    let default = settings.config.kb.default_name().to_string();
    let all = blocking(move || store.list().map_err(kb_error)).await?;
    Ok(json!({"knowledgeBases": to_json(&all)?, "default": default}))
}

/// `kb.stats {kb?}`.
pub async fn stats(settings: &Settings, p: NameParams) -> Result<Value, RpcError> {
    let store = kb::Store::in_home(&settings.home);
    let name =
        p.kb.unwrap_or_else(|| settings.config.kb.default_name().to_string());
    blocking(move || {
        let opened = store.open(&name).map_err(kb_error)?;
        to_json(&opened.stats(&store))
    })
    .await
}

/// `kb.search {query, kb?, topK?}` → `{kb, mode, hits, note?}`.
pub async fn search(settings: &Settings, p: SearchParams) -> Result<Value, RpcError> {
    if p.query.trim().is_empty() {
        return Err(RpcError::invalid_params("query is required"));
    }
    let top_k = p.top_k.unwrap_or(crate::agent::tools::kb::DEFAULT_TOP_K);
    if !(1..=100).contains(&top_k) {
        return Err(RpcError::invalid_params("topK must be 1-100"));
    }
    let store = kb::Store::in_home(&settings.home);
    let name =
        p.kb.unwrap_or_else(|| settings.config.kb.default_name().to_string());
    let embed = settings.config.kb.embeddings().map_err(failed)?;
    blocking(move || {
        let opened = store.open(&name).map_err(kb_error)?;
        let embedder = crate::agent::tools::kb::embedder(embed).map_err(failed)?;
        let found = opened
            .search(
                &p.query,
                top_k,
                embedder.as_ref().map(|e| e as &dyn kb::Embedder),
            )
            .map_err(kb_error)?;
        let mut value = to_json(&found)?;
        if let Some(object) = value.as_object_mut() {
            object.insert("kb".to_string(), Value::String(name));
        }
        Ok(value)
    })
    .await
}

/// `kb.add {paths, kb?, exclude?}` → the add report. Incremental, like `gg kb add`; a second
/// add of the same knowledge base while one runs is refused (`-32000`, "being updated").
pub async fn add(settings: &Settings, p: AddParams) -> Result<Value, RpcError> {
    let store = kb::Store::in_home(&settings.home);
    let name =
        p.kb.unwrap_or_else(|| settings.config.kb.default_name().to_string());
    let embed = settings.config.kb.embeddings().map_err(failed)?;
    let paths: Vec<PathBuf> = p.paths.iter().map(|path| settings.cwd.join(path)).collect();
    let exclude = p.exclude;
    blocking(move || {
        let embedder = crate::agent::tools::kb::embedder(embed).map_err(failed)?;
        // As `gg kb add`: secret roots refused, secret files skipped (hard links included).
        let hidden = tools::paths::DenyRead::everywhere();
        let refuse = |file: &std::fs::File| hidden.covers_open(file);
        let options = kb::AddOptions {
            excludes: exclude,
            embedder: embedder.as_ref().map(|e| e as &dyn kb::Embedder),
            deny_read: hidden.clone().into_paths(),
            refuse_open: Some(&refuse),
        };
        let report = store
            .add(&name, &paths, &options, &mut kb::NoProgress)
            .map_err(kb_error)?;
        let mut value = to_json(&report)?;
        if let Some(object) = value.as_object_mut() {
            object.insert("kb".to_string(), Value::String(name));
        }
        Ok(value)
    })
    .await
}

/// `kb.remove {kb}`.
pub async fn remove(settings: &Settings, p: NameParams) -> Result<Value, RpcError> {
    let Some(name) = p.kb else {
        return Err(RpcError::invalid_params("kb is required"));
    };
    let store = kb::Store::in_home(&settings.home);
    blocking(move || store.remove(&name).map_err(kb_error)).await?;
    Ok(json!({"ok": true}))
}
