//! JSON-RPC method dispatch (reference 8.3). Transports hand it raw messages; it answers with a
//! response object, or nothing for notifications.

use std::sync::Arc;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::rpc::{self, INTERNAL_ERROR, METHOD_NOT_FOUND, Request, RpcError};
use super::runtime::Runtime;

/// Capabilities every build has (reference 8.3); tool capabilities (memory, kb, …) are added
/// only when those tools exist, and this build has none of them.
pub const CAPABILITIES: [&str; 7] = [
    "run.approval",
    "run.event-replay",
    "run.reattach",
    "run.steering",
    "session.clone",
    "session.fork",
    "session.tree",
];

/// Set to `1` in the daemon's environment to enable the `test.panic` method, which panics inside
/// its handler (the integration tests use it to prove a handler panic is answered with `-32603`
/// and the daemon keeps serving). Off by default.
pub const TEST_HOOKS_ENV: &str = "GGD_TEST_HOOKS";

/// Dispatches requests to the runtime.
pub struct Handler {
    runtime: Arc<Runtime>,
    test_hooks: bool,
    mcp: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SessionIdParams {
    session_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CreateParams {
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RenameParams {
    session_id: String,
    name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ActionParams {
    session_id: String,
    action: String,
    #[serde(default)]
    node_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StartParams {
    session_id: String,
    prompt: String,
    #[serde(default)]
    require_approval: Option<bool>,
    #[serde(default)]
    workspace: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct WaitParams {
    run_id: String,
    #[serde(default)]
    after_sequence: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RunIdParams {
    run_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ApproveParams {
    run_id: String,
    approval_id: String,
    allow: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SteerParams {
    session_id: String,
    text: String,
    #[serde(default)]
    follow_up: bool,
}

fn params<T: DeserializeOwned>(value: Value) -> Result<T, RpcError> {
    serde_json::from_value(value).map_err(RpcError::invalid_params)
}

impl Handler {
    /// `mcp`: whether MCP servers are configured (advertised as the `mcp` capability).
    pub fn new(runtime: Arc<Runtime>, mcp: bool) -> Arc<Handler> {
        let test_hooks = std::env::var(TEST_HOOKS_ENV).is_ok_and(|v| v == "1");
        Arc::new(Handler {
            runtime,
            test_hooks,
            mcp,
        })
    }

    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// Handles one raw message. `None`: nothing to send (a notification).
    ///
    /// The method runs in its own task so a panic becomes `-32603` instead of taking the
    /// transport down.
    pub async fn handle_message(self: &Arc<Self>, bytes: &[u8]) -> Option<Value> {
        let request = match rpc::parse_request(bytes) {
            Ok(request) => request,
            Err(rejected) => {
                return Some(match rejected.id {
                    Some(id) => rpc::response(&id, Err(rejected.error)),
                    None => rpc::error_without_id(&rejected.error),
                });
            }
        };
        let id = request.id.clone();
        let request_id = session_free_id(&id);
        let method = request.method.clone();
        let this = Arc::clone(self);
        let started = std::time::Instant::now();
        let result = match tokio::spawn(async move { this.dispatch(request).await }).await {
            Ok(result) => result,
            Err(error) => {
                tracing::error!(requestID = %request_id, method = %method, panicked = error.is_panic(),
                    "request handler failed");
                Err(RpcError::new(INTERNAL_ERROR, "internal error"))
            }
        };
        let outcome = match &result {
            Ok(_) => "ok".to_string(),
            Err(e) => e.code.to_string(),
        };
        tracing::debug!(requestID = %request_id, method = %method, outcome = %outcome,
            durationMs = started.elapsed().as_millis() as u64, "request");
        id.map(|id| rpc::response(&id, result))
    }

    async fn dispatch(&self, request: Request) -> Result<Value, RpcError> {
        let runtime = &self.runtime;
        let p = request.params;
        match request.method.as_str() {
            "system.info" => {
                let mut capabilities: Vec<&str> = CAPABILITIES.to_vec();
                if self.mcp {
                    capabilities.push("mcp");
                }
                let mut info =
                    json!({"protocolVersion": rpc::PROTOCOL_VERSION, "capabilities": capabilities});
                let degraded = runtime.degraded_providers();
                if let (false, Some(object)) = (degraded.is_empty(), info.as_object_mut()) {
                    object.insert("degradedProviders".into(), json!(degraded));
                }
                Ok(info)
            }
            "session.list" => runtime.list_sessions(),
            "session.create" => {
                let p: CreateParams = params(p)?;
                runtime.create_session(p.name.as_deref())
            }
            "session.open" | "session.get" => {
                let p: SessionIdParams = params(p)?;
                runtime.open_session(&p.session_id).await
            }
            "session.rename" => {
                let p: RenameParams = params(p)?;
                runtime.rename_session(&p.session_id, &p.name).await
            }
            "session.action" => {
                let p: ActionParams = params(p)?;
                runtime
                    .session_action(&p.session_id, &p.action, p.node_id.as_deref())
                    .await
            }
            "run.start" => {
                let p: StartParams = params(p)?;
                if p.prompt.trim().is_empty() {
                    return Err(RpcError::invalid_params("prompt is required"));
                }
                // Absent means true: fail closed (protocol 1.2).
                let require_approval = p.require_approval.unwrap_or(true);
                let run_id = runtime
                    .start_run(
                        &p.session_id,
                        p.prompt,
                        require_approval,
                        p.workspace.as_deref(),
                    )
                    .await?;
                Ok(json!({"runId": run_id}))
            }
            "run.wait" => {
                let p: WaitParams = params(p)?;
                let run = runtime.get_run(&p.run_id)?;
                let (events, done) = run.wait(p.after_sequence, runtime.shutdown_token()).await?;
                Ok(json!({"events": events, "done": done}))
            }
            "run.get" => {
                let p: RunIdParams = params(p)?;
                Ok(runtime.get_run(&p.run_id)?.status())
            }
            "run.active" => {
                let p: SessionIdParams = params(p)?;
                Ok(runtime.active_run(&p.session_id)?.status())
            }
            "run.cancel" => {
                let p: RunIdParams = params(p)?;
                runtime.get_run(&p.run_id)?.cancel();
                Ok(json!({"ok": true}))
            }
            "run.approve" => {
                let p: ApproveParams = params(p)?;
                runtime
                    .get_run(&p.run_id)?
                    .approve(&p.approval_id, p.allow)?;
                Ok(json!({"ok": true}))
            }
            "run.steer" => {
                let p: SteerParams = params(p)?;
                if p.text.trim().is_empty() {
                    return Err(RpcError::invalid_params("text is required"));
                }
                runtime.steer(&p.session_id, p.text, p.follow_up)?;
                Ok(json!({"ok": true}))
            }
            #[cfg(feature = "test-hooks")]
            "test.panic" if self.test_hooks => test_panic("test.panic requested"),
            other => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("method \"{other}\" not found"),
            )),
        }
    }
}

/// The request id as log text (ids are client-chosen numbers or short strings, never content).
fn session_free_id(id: &Option<Value>) -> String {
    match id {
        Some(Value::String(s)) => s.chars().take(64).collect(),
        Some(v) => v.to_string(),
        None => "-".to_string(),
    }
}

/// Panics on purpose, for the tests of panic containment. Compiled only with the `test-hooks`
/// cargo feature (the test command enables it; `cargo install` does not), so a release build
/// cannot be made to panic this way whatever its environment says.
#[cfg(feature = "test-hooks")]
#[allow(clippy::panic)]
pub(crate) fn test_panic(what: &str) -> ! {
    panic!("{what}")
}
