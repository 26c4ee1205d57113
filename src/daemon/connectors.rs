//! ggd's `connect.*` methods: the web UI's Settings shows the Google connector and signs in
//! with the same flow as `gg connect google` — the loopback redirect is served by ggd itself,
//! on `127.0.0.1:<ephemeral>`, while the person's browser goes through Google.

use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::rpc::{AppError, RpcError};
use super::runtime::Settings;
use crate::connectors::google::{self, oauth};

/// How long a sign-in started from the web UI waits for the browser.
const SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);

/// The sign-in under way or how the last one ended, shown by `connect.status`. One per daemon:
/// ggd serves one person, and a new `connect.google.start` replaces an unfinished one.
static SIGN_IN: Mutex<Option<SignInState>> = Mutex::new(None);

struct SignInState {
    /// `waiting`, `done` or `failed`.
    state: &'static str,
    error: Option<String>,
    task: Option<tokio::task::JoinHandle<()>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevokeParams {
    connector: String,
}

fn failed(e: impl std::fmt::Display) -> RpcError {
    RpcError::app(AppError::Other, e.to_string())
}

pub fn handles(method: &str) -> bool {
    matches!(
        method,
        "connect.status" | "connect.google.start" | "connect.revoke"
    )
}

pub async fn dispatch(settings: &Settings, method: &str, params: Value) -> Result<Value, RpcError> {
    let parse = |p: Value| -> Result<(), RpcError> {
        let _: NoParams = serde_json::from_value(if p.is_null() { json!({}) } else { p })
            .map_err(RpcError::invalid_params)?;
        Ok(())
    };
    let config = &settings.config.connectors.google;
    match method {
        "connect.status" => {
            parse(params)?;
            let mut google = google::status(&settings.home, config, settings.config.tools.google)
                .map_err(failed)?;
            if let (Ok(slot), Some(object)) = (SIGN_IN.lock(), google.as_object_mut())
                && let Some(sign_in) = slot.as_ref()
            {
                object.insert(
                    "signIn".into(),
                    json!({"state": sign_in.state, "error": sign_in.error}),
                );
            }
            Ok(json!({ "google": google }))
        }
        "connect.google.start" => {
            parse(params)?;
            let sign_in = oauth::SignIn::begin(config).await.map_err(failed)?;
            let url = sign_in.url().to_string();
            let scopes: Vec<Value> = sign_in
                .scopes()
                .iter()
                .map(|s| json!({"scope": s, "meaning": google::scope_meaning(s)}))
                .collect();
            let home = settings.home.clone();
            let mut slot = SIGN_IN.lock().map_err(failed)?;
            if let Some(task) = slot.take().and_then(|previous| previous.task) {
                // The earlier sign-in's listener closes with its task.
                task.abort();
            }
            let task = tokio::spawn(async move {
                let outcome = sign_in.finish(&home, SIGN_IN_TIMEOUT).await;
                if let Ok(mut slot) = SIGN_IN.lock() {
                    *slot = Some(SignInState {
                        state: if outcome.is_ok() { "done" } else { "failed" },
                        error: outcome.err(),
                        task: None,
                    });
                }
            });
            *slot = Some(SignInState {
                state: "waiting",
                error: None,
                task: Some(task),
            });
            Ok(json!({"url": url, "scopes": scopes}))
        }
        "connect.revoke" => {
            let p: RevokeParams =
                serde_json::from_value(params).map_err(RpcError::invalid_params)?;
            if p.connector != "google" {
                return Err(RpcError::invalid_params(format!(
                    "unknown connector {:?} (known: google)",
                    p.connector
                )));
            }
            let revoked = match oauth::revoke(&settings.home, config)
                .await
                .map_err(failed)?
            {
                oauth::Revoked::AtGoogle => "at-google",
                oauth::Revoked::AlreadyInvalid => "already-invalid",
                oauth::Revoked::NotSignedIn => "not-signed-in",
            };
            Ok(json!({ "revoked": revoked }))
        }
        other => Err(RpcError::invalid_params(format!("unknown method {other}"))),
    }
}
