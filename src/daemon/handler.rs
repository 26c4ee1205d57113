//! JSON-RPC method dispatch. Transports hand it raw messages; it answers with a
//! response object, or nothing for notifications.

use std::sync::Arc;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::rpc::{self, INTERNAL_ERROR, METHOD_NOT_FOUND, PARSE_ERROR, Request, RpcError};
use super::runtime::Runtime;

/// Capabilities every build has; tool capabilities (`memory`, `mcp`, …) are added in
/// `system.info` only when those tools are on.
pub const CAPABILITIES: [&str; 8] = [
    "run.approval",
    "run.event-replay",
    "run.reattach",
    "run.steering",
    "session.clone",
    "session.fork",
    "session.pages",
    "session.tree",
];

/// Set to `1` in the daemon's environment to enable the `test.panic` method, which panics inside
/// its handler (the integration tests use it to prove a handler panic is answered with `-32603`
/// and the daemon keeps serving). Off by default.
pub const TEST_HOOKS_ENV: &str = "GGD_TEST_HOOKS";

/// Dispatches requests to the runtime.
pub struct Handler {
    runtime: Arc<Runtime>,
    /// Read only where the `test-hooks` feature compiles the hooks in.
    #[cfg_attr(not(feature = "test-hooks"), allow(dead_code))]
    test_hooks: bool,
    mcp: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SessionIdParams {
    session_id: String,
}

/// `session.open` / `session.get`: without `limit` the whole snapshot (protocol 1.4), with it the
/// newest page.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OpenParams {
    session_id: String,
    #[serde(default)]
    limit: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EntriesParams {
    session_id: String,
    before: String,
    #[serde(default)]
    limit: Option<u64>,
}

/// The messages a page holds at most, and by default for `session.entries`.
const PAGE_LIMIT_MAX: u64 = 1000;
const PAGE_LIMIT_DEFAULT: u64 = 100;

fn page_limit(limit: Option<u64>) -> Result<usize, RpcError> {
    match limit.unwrap_or(PAGE_LIMIT_DEFAULT) {
        limit @ 1..=PAGE_LIMIT_MAX => Ok(limit as usize),
        other => Err(RpcError::invalid_params(format!(
            "limit must be 1 to {PAGE_LIMIT_MAX}, not {other}"
        ))),
    }
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
    /// Bash under the sandbox for this run; absent = the daemon's `--sandbox`.
    #[serde(default)]
    sandbox: Option<bool>,
    /// This run's network policy (`off`, `on`, `allow-list`); absent: the daemon's.
    #[serde(default)]
    network: Option<String>,
    /// Further hosts for this run's allow-list.
    #[serde(default)]
    allow_domains: Vec<String>,
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
    /// `once` (default) or `session` (allow the same call for the rest of the session; refused
    /// for dangerous calls).
    #[serde(default)]
    scope: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AuditParams {
    #[serde(default)]
    session_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct JobIdParams {
    id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct JobAddParams {
    name: String,
    prompt: String,
    #[serde(default)]
    cron: Option<String>,
    #[serde(default)]
    at: Option<String>,
    #[serde(default, rename = "in")]
    in_: Option<String>,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    timeout: Option<String>,
    #[serde(default)]
    allow_all: bool,
    #[serde(default)]
    no_sandbox: bool,
    /// The job's network policy (`off`, `on`, `allow-list`).
    #[serde(default)]
    network: Option<String>,
    /// Further hosts for the job's allow-list.
    #[serde(default)]
    allow_domains: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ToolLogParams {
    session_id: String,
    call_id: String,
    #[serde(default)]
    offset: u64,
    #[serde(default)]
    limit: Option<u64>,
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

/// A response to send: its JSON text, and whether it answers a message that was not JSON (the
/// HTTP transport says so with its status).
pub struct Outgoing {
    pub text: String,
    pub parse_error: bool,
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

    /// Handles one raw message: the response's JSON text, or `None` when there is nothing to
    /// send (a notification).
    ///
    /// The method runs in its own task so a panic becomes `-32603` instead of taking the
    /// transport down.
    pub async fn handle_message(self: &Arc<Self>, bytes: &[u8]) -> Option<Outgoing> {
        let request = match rpc::parse_request(bytes) {
            Ok(request) => request,
            Err(rejected) => {
                let response = match rejected.id {
                    Some(id) => rpc::response(&id, Err(rejected.error)),
                    None => rpc::error_without_id(&rejected.error),
                };
                let parse_error = response["error"]["code"].as_i64() == Some(PARSE_ERROR);
                return Some(Outgoing {
                    text: response.to_string(),
                    parse_error,
                });
            }
        };
        let id = request.id.clone();
        let request_id = session_free_id(&id);
        let method = request.method.clone();
        let this = Arc::clone(self);
        let started = std::time::Instant::now();
        let result = match tokio::spawn(async move { this.dispatch_text(request).await }).await {
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
        id.map(|id| Outgoing {
            text: rpc::response_text(&id, result),
            parse_error: false,
        })
    }

    /// [`Handler::dispatch`], the result as JSON text. `run.wait` writes its result straight
    /// from the run's event texts (a replay from the start is the largest response ggd gives,
    /// and a tree of it per waiting client took about twelve times its size).
    async fn dispatch_text(&self, request: Request) -> Result<String, RpcError> {
        if request.method == "run.wait" {
            let p: WaitParams = params(request.params)?;
            let run = self.runtime.get_run(&p.run_id)?;
            let waited = run
                .wait(p.after_sequence, self.runtime.shutdown_token())
                .await?;
            return Ok(waited.result_json());
        }
        self.dispatch(request)
            .await
            .map(|result| result.to_string())
    }

    /// Every method but `run.wait`, which [`Handler::dispatch_text`] answers.
    async fn dispatch(&self, request: Request) -> Result<Value, RpcError> {
        let runtime = &self.runtime;
        let p = request.params;
        match request.method.as_str() {
            "system.info" => {
                let mut capabilities: Vec<&str> = CAPABILITIES.to_vec();
                if self.mcp {
                    capabilities.push("mcp");
                }
                if runtime.settings().config.artifacts.enabled {
                    capabilities.push("artifact");
                }
                if super::runtime::memory::enabled(runtime.settings()) {
                    capabilities.push("memory");
                }
                // The kb.* methods (knowledge bases) exist in every build.
                capabilities.push("kb");
                // So do the media.* methods (image generation, speech, transcription).
                capabilities.push("media");
                let mut info =
                    json!({"protocolVersion": rpc::PROTOCOL_VERSION, "capabilities": capabilities});
                if let (true, Some(object)) =
                    (runtime.computer_tools_enabled(), info.as_object_mut())
                {
                    // Which computer tools can work on this machine now, and why not.
                    let tools: Vec<Value> = tools::computer::availability()
                        .into_iter()
                        .map(|(name, missing)| match missing {
                            None => json!({"name": name, "available": true}),
                            Some(why) => json!({"name": name, "available": false, "reason": why}),
                        })
                        .collect();
                    object.insert("computerTools".into(), json!(tools));
                }
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
                let p: OpenParams = params(p)?;
                match p.limit {
                    None => runtime.open_session(&p.session_id).await,
                    Some(limit) => {
                        let limit = page_limit(Some(limit))?;
                        runtime.session_page(&p.session_id, None, limit).await
                    }
                }
            }
            "session.entries" => {
                let p: EntriesParams = params(p)?;
                if p.before.is_empty() {
                    return Err(RpcError::invalid_params("before is required"));
                }
                let limit = page_limit(p.limit)?;
                runtime
                    .session_page(&p.session_id, Some(p.before), limit)
                    .await
            }
            "session.tree" => {
                let p: SessionIdParams = params(p)?;
                runtime.session_tree(&p.session_id).await
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
                        p.sandbox,
                        super::runtime::RunNetwork {
                            mode: p.network,
                            allow_domains: p.allow_domains,
                        },
                    )
                    .await?;
                Ok(json!({"runId": run_id}))
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
                let for_session = match p.scope.as_deref() {
                    None | Some("once") => false,
                    Some("session") => true,
                    Some(other) => {
                        return Err(RpcError::invalid_params(format!(
                            "scope must be \"once\" or \"session\", not {other:?}"
                        )));
                    }
                };
                runtime
                    .get_run(&p.run_id)?
                    .approve(&p.approval_id, p.allow, for_session)?;
                Ok(json!({"ok": true}))
            }
            "run.list" => {
                let _: AuditParams = params(p)?;
                Ok(runtime.list_runs())
            }
            "audit.list" => {
                let p: AuditParams = params(p)?;
                runtime.audit(p.session_id.as_deref())
            }
            "job.list" => {
                let _: AuditParams = params(p)?;
                jobs::list(runtime.settings())
            }
            "job.add" => {
                let p: JobAddParams = params(p)?;
                // A job is a run that starts later: it goes through run.start's floor.
                let mut network = p.network;
                hold_job_to_floor(runtime, !p.no_sandbox, &mut network, &p.allow_domains)?;
                let args = crate::jobs::manage::AddArgs {
                    name: p.name,
                    cron: p.cron.filter(|v| !v.is_empty()),
                    at: p.at.filter(|v| !v.is_empty()),
                    in_: p.in_.filter(|v| !v.is_empty()),
                    timezone: p.timezone,
                    timeout: p.timeout,
                    allow_all: p.allow_all,
                    no_sandbox: p.no_sandbox,
                    network,
                    allow_domain: p.allow_domains,
                    prompt: vec![p.prompt],
                };
                jobs::add(runtime.settings(), &args)
            }
            "job.resume" => {
                let p: JobIdParams = params(p)?;
                // Resuming lets a stored job fire again, however it was added: it goes through
                // run.start's floor too.
                let floor = |job: &mut crate::jobs::Job| {
                    let mut network = job.network.clone();
                    hold_job_to_floor(runtime, job.sandbox, &mut network, &job.allow_domains)
                        .map_err(|e| e.message)?;
                    job.network = network;
                    Ok(())
                };
                jobs::resume(runtime.settings(), &p.id, &floor)
            }
            "job.pause" | "job.remove" => {
                let p: JobIdParams = params(p)?;
                jobs::change(runtime.settings(), &request.method, &p.id)
            }
            "tool.log" => {
                let p: ToolLogParams = params(p)?;
                runtime
                    .tool_log(&p.session_id, &p.call_id, p.offset, p.limit)
                    .await
            }
            "mcp.list" => {
                let _: AuditParams = params(p)?;
                Ok(mcp_list(&runtime.settings().external_tools))
            }
            "settings.get" => {
                let _: AuditParams = params(p)?;
                let s = runtime.settings();
                // `network`: the mode new runs get by default; "unrestricted" without the
                // sandbox (nothing enforces a policy there).
                let (sandbox, network, domains) = match &s.sandbox {
                    tools::registry::SandboxSetting::Off => ("off", "unrestricted", vec![]),
                    tools::registry::SandboxSetting::On { network, .. } => (
                        "on",
                        network.policy.mode.as_str(),
                        network.policy.allow.entries(),
                    ),
                };
                Ok(json!({"workspace": s.cwd.display().to_string(),
                    "sandbox": sandbox, "network": network, "allowDomains": domains,
                    "maxActiveRuns": s.max_active_runs,
                    "runTimeout": super::runtime::format_duration(s.run_timeout)}))
            }
            "kb.list" => {
                let _: AuditParams = params(p)?;
                super::kb::list(runtime.settings()).await
            }
            "kb.stats" => super::kb::stats(runtime.settings(), params(p)?).await,
            "kb.search" => super::kb::search(runtime.settings(), params(p)?).await,
            "kb.add" => super::kb::add(runtime.settings(), params(p)?).await,
            "kb.remove" => super::kb::remove(runtime.settings(), params(p)?).await,
            "run.steer" => {
                let p: SteerParams = params(p)?;
                if p.text.trim().is_empty() {
                    return Err(RpcError::invalid_params("text is required"));
                }
                runtime.steer(&p.session_id, p.text, p.follow_up)?;
                Ok(json!({"ok": true}))
            }
            method if super::artifacts::handles(method) => {
                super::artifacts::dispatch(runtime.settings(), method, p).await
            }
            method if super::media::handles(method) => {
                super::media::dispatch(runtime.settings(), method, p).await
            }
            method if super::connectors::handles(method) => {
                super::connectors::dispatch(runtime.settings(), method, p).await
            }
            "memory.list" | "memory.search" | "memory.add" | "memory.remove" => {
                let runtime = Arc::clone(runtime);
                let method = request.method.clone();
                tokio::task::spawn_blocking(move || {
                    super::runtime::memory::call(runtime.settings(), &method, p)
                })
                .await
                .map_err(|_| RpcError::new(INTERNAL_ERROR, "internal error"))?
            }
            "open.check" => super::open_check::check(runtime.settings(), p),
            #[cfg(feature = "test-hooks")]
            "test.panic" if self.test_hooks => {
                super::test_hooks::panic_on_purpose("test.panic requested")
            }
            other => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("method \"{other}\" not found"),
            )),
        }
    }
}

/// `mcp.list`: the connected servers' tools, grouped by server. Tool names are
/// `mcp__<server>__<tool>` (see `crate::mcp::naming`); anything else is listed under its own name.
fn mcp_list(tools: &[Arc<dyn crate::agent::Tool>]) -> Value {
    let mut servers: Vec<(String, Vec<Value>)> = Vec::new();
    for tool in tools {
        let name = tool.name();
        let (server, short) = name
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
            .unwrap_or((name, name));
        let entry = json!({"name": short, "fullName": name, "description": tool.description()});
        match servers.iter_mut().find(|(s, _)| s == server) {
            Some((_, list)) => list.push(entry),
            None => servers.push((server.to_string(), vec![entry])),
        }
    }
    json!({"servers": servers.into_iter().map(|(name, tools)| json!({"name": name, "tools": tools})).collect::<Vec<_>>()})
}

/// The scheduled-jobs methods: the same store and rules as `gg job`.
mod jobs {
    use serde_json::{Value, json};

    use super::super::rpc::{AppError, RpcError};
    use super::super::runtime::Settings;
    use crate::jobs::{JobStore, manage};

    fn store(settings: &Settings) -> Result<JobStore, RpcError> {
        JobStore::open(&JobStore::default_dir(&settings.home))
            .map_err(|e| RpcError::app(AppError::Other, e))
    }

    fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, RpcError> {
        serde_json::to_value(value).map_err(|e| RpcError::app(AppError::Other, e.to_string()))
    }

    /// Every job and the current state of every run (the last record per run id).
    pub fn list(settings: &Settings) -> Result<Value, RpcError> {
        let store = store(settings)?;
        let jobs = store
            .jobs()
            .map_err(|e| RpcError::app(AppError::Other, e))?;
        let records = store
            .runs()
            .map_err(|e| RpcError::app(AppError::Other, e))?;
        let mut runs: Vec<crate::jobs::RunRecord> = Vec::new();
        for record in records {
            match runs.iter_mut().find(|r| r.id == record.id) {
                Some(existing) => *existing = record,
                None => runs.push(record),
            }
        }
        Ok(json!({"jobs": to_json(&jobs)?, "runs": to_json(&runs)?}))
    }

    /// A job that runs in the daemon's workspace.
    pub fn add(settings: &Settings, args: &manage::AddArgs) -> Result<Value, RpcError> {
        let job = manage::add_job(
            &store(settings)?,
            args,
            &settings.cwd,
            jiff::Timestamp::now(),
        )
        .map_err(RpcError::invalid_params)?;
        to_json(&job)
    }

    /// `job.resume`, once the job passes `floor`.
    pub fn resume(
        settings: &Settings,
        id: &str,
        floor: &dyn Fn(&mut crate::jobs::Job) -> Result<(), String>,
    ) -> Result<Value, RpcError> {
        let job = manage::resume_checked(&store(settings)?, id, jiff::Timestamp::now(), floor)
            .map_err(|e| RpcError::app(AppError::InvalidAction, e))?;
        to_json(&job)
    }

    /// `job.pause`, `job.remove`: neither lets anything run that did not before.
    pub fn change(settings: &Settings, method: &str, id: &str) -> Result<Value, RpcError> {
        let store = store(settings)?;
        let changed = match method {
            "job.pause" => manage::pause(&store, id),
            _ => manage::remove(&store, id),
        };
        let job = changed.map_err(|e| RpcError::app(AppError::InvalidAction, e))?;
        to_json(&job)
    }
}

/// Holds a job that ggd adds or resumes to the floor every `run.start` goes through
/// ([`Runtime::run_sandbox`]: on a `--sandbox` daemon no run without the sandbox, no network wider
/// than the daemon's): a job is a run that starts later, so a client refused `sandbox: false` on
/// `run.start` must not get it by scheduling a job. A sandboxed job that names no network fires
/// with `~/.gg/config.json`'s policy rather than the daemon's `--network`, so on a sandboxed
/// daemon it is given the mode that check chose (the daemon's, as for a run).
///
/// Approval needs no check of its own: ggd has no approval floor (`requireApproval: false` is a
/// run in `never`), and a job with `allowAll` runs in the unattended table, which lets no more
/// run than `never` does.
fn hold_job_to_floor(
    runtime: &Runtime,
    sandbox: bool,
    network: &mut Option<String>,
    allow_domains: &[String],
) -> Result<(), RpcError> {
    let chosen = runtime.run_sandbox(
        Some(sandbox),
        &super::runtime::RunNetwork {
            mode: network.clone(),
            allow_domains: allow_domains.to_vec(),
        },
    )?;
    if let (
        tools::registry::SandboxSetting::On { .. },
        tools::registry::SandboxSetting::On {
            network: chosen, ..
        },
        None,
    ) = (&runtime.settings().sandbox, &chosen, &network)
    {
        *network = Some(chosen.policy.mode.as_str().to_string());
    }
    Ok(())
}

/// The request id as log text (ids are client-chosen numbers or short strings, never content).
fn session_free_id(id: &Option<Value>) -> String {
    match id {
        Some(Value::String(s)) => s.chars().take(64).collect(),
        Some(v) => v.to_string(),
        None => "-".to_string(),
    }
}
