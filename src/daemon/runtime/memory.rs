//! ggd's `memory.*` methods: the person's side of memory (what `gg memory` does), for the web UI
//! and other clients. Refused when memory is off (`memory.enabled` false, or ggd `--no-memory`).

use serde::Deserialize;
use serde_json::{Value, json};

use super::Settings;
use crate::daemon::rpc::{AppError, RpcError};
use tools::memory::{Entry, Layer, Scope, Store};

/// Whether memory is on in this daemon (advertised as the `memory` capability).
pub fn enabled(settings: &Settings) -> bool {
    settings.config.memory.enabled && !settings.no_memory
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchParams {
    query: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddParams {
    content: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    target: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoveParams {
    id: String,
}

fn params<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, RpcError> {
    serde_json::from_value(value).map_err(RpcError::invalid_params)
}

/// One entry as the protocol shows it.
pub fn entry_json(e: &Entry) -> Value {
    let mut v = json!({"id": e.id, "layer": e.layer, "path": e.path, "line": e.line,
        "text": e.text});
    if let Some(mark) = e.mark() {
        v["marked"] = json!({"rule": mark.rule, "why": mark.why, "matched": mark.matched});
    }
    v
}

/// Runs `memory.list|search|add|remove` (blocking file I/O: call from `spawn_blocking`).
pub fn call(settings: &Settings, method: &str, p: Value) -> Result<Value, RpcError> {
    if !enabled(settings) {
        return Err(RpcError::app(AppError::Other, "memory is disabled"));
    }
    let store = Store::new(&settings.config.memory, &settings.home, &settings.cwd);
    let failed = |e: tools::memory::MemoryError| RpcError::app(AppError::Other, e.to_string());
    let list = |entries: Vec<Entry>| entries.iter().map(entry_json).collect::<Vec<_>>();
    match method {
        "memory.list" => {
            let _: NoParams = params(p)?;
            Ok(json!({"entries": list(store.list().map_err(failed)?)}))
        }
        "memory.search" => {
            let p: SearchParams = params(p)?;
            let hits = store
                .search(&p.query, tools::memory::SEARCH_LIMIT)
                .map_err(RpcError::invalid_params)?;
            Ok(json!({"hits": list(hits)}))
        }
        "memory.add" => {
            let p: AddParams = params(p)?;
            let scope = Scope::parse(p.scope.as_deref().unwrap_or("general"))
                .map_err(RpcError::invalid_params)?;
            let target = Layer::parse(p.target.as_deref().unwrap_or("workspace"))
                .map_err(RpcError::invalid_params)?;
            tools::memory::clean_entry(&p.content).map_err(RpcError::invalid_params)?;
            let entry = store.add(&p.content, &scope, target).map_err(failed)?;
            Ok(json!({"entry": entry_json(&entry)}))
        }
        "memory.remove" => {
            let p: RemoveParams = params(p)?;
            let removed = store.remove(&p.id).map_err(failed)?;
            Ok(json!({"removed": list(removed)}))
        }
        other => Err(RpcError::new(
            crate::daemon::rpc::METHOD_NOT_FOUND,
            format!("method \"{other}\" not found"),
        )),
    }
}
