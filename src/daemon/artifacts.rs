//! ggd's `artifact.*` and `library.*` methods: the same stores and rules as `gg artifact` and
//! `gg library`, with camelCase DTOs like the rest of the protocol. Store operations take file
//! locks and fsync, so they run on the blocking pool.

use serde::Deserialize;
use serde_json::{Value, json};

use super::rpc::{AppError, METHOD_NOT_FOUND, RpcError};
use super::runtime::Settings;
use tools::artifacts::{Artifact, Store};
use tools::diff;
use tools::library::{Entry, Library};
use tools::store::StoreError;

/// Whether `method` is one of ours.
pub fn handles(method: &str) -> bool {
    method.starts_with("artifact.") || method.starts_with("library.")
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct IdParams {
    artifact_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GetParams {
    artifact_id: String,
    #[serde(default)]
    version: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DiffParams {
    artifact_id: String,
    #[serde(default)]
    from: Option<u32>,
    #[serde(default)]
    to: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

fn params<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, RpcError> {
    serde_json::from_value(value).map_err(RpcError::invalid_params)
}

fn error(e: StoreError) -> RpcError {
    match e {
        StoreError::NotFound(m) => RpcError::app(AppError::ArtifactNotFound, m),
        StoreError::Invalid(m) => RpcError::invalid_params(m),
        e @ StoreError::VersionChanged { .. } => {
            RpcError::app(AppError::ArtifactVersionChanged, e.to_string())
        }
        e => RpcError::app(AppError::Other, e.to_string()),
    }
}

fn artifact_dto(a: &Artifact) -> Value {
    json!({
        "id": a.id,
        "title": a.title,
        "type": a.kind.name(),
        "version": a.version,
        "publishedVersion": a.published_version,
        "createdAt": a.created_at,
        "updatedAt": a.updated_at,
    })
}

fn entry_dto(library: &Library, e: &Entry) -> Value {
    json!({
        "id": e.id,
        "name": e.name,
        "source": e.source,
        "size": e.size,
        "addedAt": e.added_at,
        "path": library.path_of(e),
    })
}

/// Runs one method.
pub async fn dispatch(settings: &Settings, method: &str, p: Value) -> Result<Value, RpcError> {
    let store = settings.config.artifact_store(&settings.home);
    let library = settings.config.library(&settings.home);
    let enabled = if method.starts_with("artifact.") {
        settings.config.artifacts.enabled
    } else {
        settings.config.library.enabled
    };
    if !enabled {
        return Err(RpcError::app(
            AppError::Other,
            format!("{method}: this store is disabled in the configuration"),
        ));
    }
    let method = method.to_string();
    let run = move || -> Result<Value, RpcError> { call(&store, &library, &method, p) };
    tokio::task::spawn_blocking(run)
        .await
        .map_err(|e| RpcError::app(AppError::Other, format!("artifact task failed: {e}")))?
}

fn call(store: &Store, library: &Library, method: &str, p: Value) -> Result<Value, RpcError> {
    match method {
        "artifact.list" => {
            let _: NoParams = params(p)?;
            let list = store.list().map_err(error)?;
            Ok(json!({"artifacts": list.iter().map(artifact_dto).collect::<Vec<_>>()}))
        }
        "artifact.get" => {
            let p: GetParams = params(p)?;
            let (a, n, content) = store.read(&p.artifact_id, p.version).map_err(error)?;
            Ok(json!({"artifact": artifact_dto(&a), "version": n, "content": content}))
        }
        "artifact.diff" => {
            let p: DiffParams = params(p)?;
            let latest = store.get(&p.artifact_id).map_err(error)?.version;
            let to = p.to.unwrap_or(latest);
            let from = p.from.unwrap_or(to.saturating_sub(1).max(1));
            let (a, _, before) = store.read(&p.artifact_id, Some(from)).map_err(error)?;
            let (_, _, after) = store.read(&p.artifact_id, Some(to)).map_err(error)?;
            let text = diff::between(
                &format!("{}/{}", a.id, a.file_of(from)),
                &format!("{}/{}", a.id, a.file_of(to)),
                &before,
                &after,
            );
            Ok(json!({"from": from, "to": to, "diff": text}))
        }
        "artifact.publish" => {
            let p: IdParams = params(p)?;
            let (a, entry) = store.publish(&p.artifact_id, library).map_err(error)?;
            Ok(json!({"artifact": artifact_dto(&a), "entry": entry_dto(library, &entry)}))
        }
        "artifact.remove" => {
            let p: IdParams = params(p)?;
            let a = store.remove(&p.artifact_id).map_err(error)?;
            Ok(json!({"artifact": artifact_dto(&a)}))
        }
        "library.list" => {
            let _: NoParams = params(p)?;
            let entries = library.list().map_err(error)?;
            Ok(json!({
                "root": library.root(),
                "entries": entries.iter().map(|e| entry_dto(library, e)).collect::<Vec<_>>(),
            }))
        }
        other => Err(RpcError::new(
            METHOD_NOT_FOUND,
            format!("method \"{other}\" not found"),
        )),
    }
}
