//! The provider checks of `gg doctor`: the selected model, its endpoint and key (never shown),
//! and with `--online` one `GET /models` against it. Apart because it is the only check that
//! talks to the network, and the only one that handles a secret.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::app::config::Config;

use super::check::{Check, Status, check};

/// How long the provider gets to answer `--online`: a diagnosis that hangs is no diagnosis.
const ONLINE_TIMEOUT: Duration = Duration::from_secs(15);

/// The selected provider (`provider`), and with `--online` whether it answers
/// (`provider-online`).
pub(super) fn provider_checks(
    home: &Path,
    config: Option<&Config>,
    online: bool,
    runtime: &tokio::runtime::Runtime,
    secrets: &mut Vec<String>,
) -> Vec<Check> {
    let Some(config) = config else {
        return vec![
            check("provider", Status::Skipped, "the config is invalid"),
            check("provider-online", Status::Skipped, "the config is invalid"),
        ];
    };
    let key_file = std::env::var_os(crate::app::provider_flags::API_KEY_FILE_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let api_key = match &key_file {
        Some(file) => {
            match crate::app::provider_flags::read_secret_file(
                file,
                crate::app::provider_flags::API_KEY_FILE_ENV,
            ) {
                Ok(key) => Some(key),
                Err(e) => {
                    return vec![
                        check("provider", Status::Fail, e),
                        check("provider-online", Status::Skipped, "no usable API key"),
                    ];
                }
            }
        }
        None => None,
    };
    let overrides = crate::app::config::Overrides {
        api_key,
        ..Default::default()
    };
    let selection = match config.select(home, None, &overrides) {
        Ok(selection) => selection,
        Err(e) => {
            return vec![
                check("provider", Status::Fail, e),
                check("provider-online", Status::Skipped, "no provider selected"),
            ];
        }
    };
    secrets.push(selection.api_key.clone());
    let base_url = shown_url(&selection.base_url, secrets);
    let label = selection.label();
    if selection.api_key.is_empty() {
        return vec![
            check(
                "provider",
                Status::Fail,
                format!(
                    "{label} at {base_url}: no API key (set OPENAI_API_KEY, \"apiKey\" or \
                     \"apiKeyEnv\" in config.json, or GG_API_KEY_FILE / --api-key-file)"
                ),
            ),
            check("provider-online", Status::Skipped, "no API key"),
        ];
    }
    let source = match &key_file {
        Some(file) => format!(" from {}", file.display()),
        None => String::new(),
    };
    let mut checks = vec![check(
        "provider",
        Status::Ok,
        format!("{label} at {base_url}, API key set{source} (hidden)"),
    )];
    checks.push(if online {
        runtime.block_on(reach(&selection, &base_url))
    } else {
        check(
            "provider-online",
            Status::Skipped,
            format!("not asked: --online sends one GET {base_url}/models"),
        )
    });
    checks
}

/// `url` as it may be shown: credentials in it (`https://user:pass@host`) are hidden, and
/// remembered as secrets so that an error message quoting them is redacted too.
pub(super) fn shown_url(url: &str, secrets: &mut Vec<String>) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            secrets.push(parsed.username().to_string());
            secrets.extend(parsed.password().map(str::to_string));
            let _ = parsed.set_username(tools::secrets::REDACTED);
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        _ => url.to_string(),
    }
}

/// One `GET {baseURL}/models` with the key, as the provider's own requests carry it.
async fn reach(selection: &crate::app::config::Selection, shown: &str) -> Check {
    let name = "provider-online";
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = match reqwest::Client::builder()
        .connect_timeout(ONLINE_TIMEOUT)
        .timeout(ONLINE_TIMEOUT)
        // A redirect would carry the key elsewhere, as for the provider's own requests.
        .redirect(reqwest::redirect::Policy::none())
        .build()
    {
        Ok(client) => client,
        Err(e) => return check(name, Status::Fail, format!("HTTP client: {e}")),
    };
    let url = format!("{}/models", selection.base_url.trim_end_matches('/'));
    let started = Instant::now();
    let response = client
        .get(&url)
        .bearer_auth(&selection.api_key)
        .header("Accept", "application/json")
        .send()
        .await;
    let response = match response {
        Ok(response) => response,
        Err(e) => {
            return check(
                name,
                Status::Fail,
                format!("GET {shown}/models: {}", provider::error_chain(&e)),
            );
        }
    };
    let status = response.status();
    let elapsed = tools::duration::clock(started.elapsed());
    let body = response.bytes().await.unwrap_or_default();
    if !status.is_success() {
        let hint = match status.as_u16() {
            401 | 403 => ": the API key was refused",
            404 => ": no /models here; is the base URL right (usually ending in /v1)?",
            _ => "",
        };
        return check(
            name,
            Status::Fail,
            format!("GET {shown}/models answered HTTP {}{hint}", status.as_u16()),
        );
    }
    let ids: Option<Vec<String>> = serde_json::from_slice::<Value>(&body).ok().and_then(|v| {
        v["data"].as_array().map(|data| {
            data.iter()
                .filter_map(|m| m["id"].as_str().map(str::to_string))
                .collect()
        })
    });
    match ids {
        Some(ids) if ids.contains(&selection.model) => check(
            name,
            Status::Ok,
            format!(
                "GET {shown}/models: HTTP 200 in {elapsed}, {} model(s), {} among them",
                ids.len(),
                selection.model
            ),
        ),
        Some(ids) => check(
            name,
            Status::Warn,
            format!(
                "GET {shown}/models: HTTP 200 in {elapsed}, {} model(s), but not {}",
                ids.len(),
                selection.model
            ),
        ),
        None => check(
            name,
            Status::Warn,
            format!("GET {shown}/models: HTTP 200 in {elapsed}, but not an OpenAI model list"),
        ),
    }
}
