//! The HTTP side: request sending, retries, compatibility fallbacks, timeouts and cancellation.

use std::fmt;
use std::sync::Arc;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER, USER_AGENT};
use tokio_util::sync::CancellationToken;

use super::assemble::StreamParser;
use super::error::{ErrorKind, ProviderError, sanitize_server_text};
use super::retry::RetryPolicy;
use super::types::{AssistantReply, ChatRequest, StreamEvent};
use super::wire::{BodyShape, request_body};

/// How much of an error response body is read and quoted.
const MAX_ERROR_BODY_BYTES: usize = 8192;

pub(crate) const MSG_MISSING_API_KEY: &str =
    "missing API key: set OPENAI_API_KEY or pass --api-key";
pub(crate) const MSG_MISSING_BASE_URL: &str = "missing base URL";
pub(crate) const MSG_CANCELED: &str = "request canceled";

/// Request-shape switches from the config's `compat` object, for servers known to need them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Compat {
    /// `compat.noStreamUsage`: never send `stream_options`.
    pub no_stream_usage: bool,
    /// `compat.completionTokens`: send `max_completion_tokens` instead of `max_tokens`.
    pub completion_tokens: bool,
}

/// Everything a [`Provider`] needs; built by the config loader.
#[derive(Clone)]
pub struct ProviderConfig {
    /// Base URL such as `https://api.openai.com/v1`; trailing `/` are trimmed.
    pub base_url: String,
    /// Bearer token. Never logged, never shown by `Debug`.
    pub api_key: String,
    /// Model name sent as `model`.
    pub model: String,
    /// Default output limit (`context.maxOutputTokens`, default 4096); 0 sends none.
    pub max_output_tokens: u32,
    /// Request-shape switches.
    pub compat: Compat,
    /// Limit for establishing a connection (TCP and TLS), default 30 s.
    pub connect_timeout: Duration,
    /// Longest silence tolerated from the server, waiting for headers or between body bytes,
    /// default 5 min.
    pub idle_timeout: Duration,
    /// Retry settings.
    pub retry: RetryPolicy,
}

impl ProviderConfig {
    /// A config with the default limits and timeouts.
    pub fn new(
        base_url: impl Into<String>,
        api_key: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        ProviderConfig {
            base_url: base_url.into(),
            api_key: api_key.into(),
            model: model.into(),
            max_output_tokens: 4096,
            compat: Compat::default(),
            connect_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(5 * 60),
            retry: RetryPolicy::default(),
        }
    }
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("base_url", &self.base_url)
            .field(
                "api_key",
                &if self.api_key.is_empty() {
                    ""
                } else {
                    "<redacted>"
                },
            )
            .field("model", &self.model)
            .field("max_output_tokens", &self.max_output_tokens)
            .field("compat", &self.compat)
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

/// A streaming client for one OpenAI-compatible endpoint.
///
/// Cheap to clone; clones share the connection pool and the compatibility fallbacks learnt from
/// the server, so a fallback is applied once per `Provider` (and its clones) for the life of the
/// process.
#[derive(Clone)]
pub struct Provider {
    inner: Arc<Inner>,
}

struct Inner {
    config: ProviderConfig,
    client: reqwest::Client,
    learned_no_stream_usage: AtomicBool,
    learned_completion_tokens: AtomicBool,
}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provider")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// rustls is built without a default crypto backend (the `aws-lc-rs` one is slow to build);
/// `ring` is installed once per process. If something else installed a provider first, that one
/// is kept.
fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
    });
}

enum Attempt {
    Done(Result<AssistantReply, ProviderError>),
    Retry {
        error: ProviderError,
        retry_after: Option<String>,
    },
    Fallback,
}

impl Provider {
    /// Builds the HTTP client. Fails only if TLS cannot be set up.
    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            // A redirect would turn the POST into a GET or carry the key elsewhere: refuse.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|err| {
                ProviderError::new(
                    ErrorKind::InvalidConfig,
                    format!("failed to build HTTP client: {}", error_chain(&err)),
                )
            })?;
        Ok(Provider {
            inner: Arc::new(Inner {
                config,
                client,
                learned_no_stream_usage: AtomicBool::new(false),
                learned_completion_tokens: AtomicBool::new(false),
            }),
        })
    }

    /// The configuration this provider was built from.
    pub fn config(&self) -> &ProviderConfig {
        &self.inner.config
    }

    fn shape(&self) -> BodyShape {
        let compat = self.inner.config.compat;
        BodyShape {
            no_stream_usage: compat.no_stream_usage
                || self.inner.learned_no_stream_usage.load(Ordering::Relaxed),
            completion_tokens: compat.completion_tokens
                || self.inner.learned_completion_tokens.load(Ordering::Relaxed),
        }
    }

    /// Sends `request` and streams the reply.
    ///
    /// Deltas and retry notices go to `sink` in order. Cancelling `cancel` ends the call at once
    /// (also during a backoff sleep) with [`ErrorKind::Canceled`]. On error the text streamed so
    /// far is in [`ProviderError::partial`]; tool calls are only ever returned complete and
    /// validated in the [`AssistantReply`].
    pub async fn stream(
        &self,
        request: &ChatRequest,
        sink: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, ProviderError> {
        let config = &self.inner.config;
        if config.api_key.is_empty() {
            return Err(ProviderError::new(
                ErrorKind::MissingApiKey,
                MSG_MISSING_API_KEY,
            ));
        }
        let base = config.base_url.trim().trim_end_matches('/');
        if base.is_empty() {
            return Err(ProviderError::new(
                ErrorKind::MissingBaseUrl,
                MSG_MISSING_BASE_URL,
            ));
        }
        let url = reqwest::Url::parse(&format!("{base}/chat/completions")).map_err(|err| {
            ProviderError::new(ErrorKind::InvalidConfig, format!("invalid base URL: {err}"))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ProviderError::new(
                ErrorKind::InvalidConfig,
                "invalid base URL: scheme must be http or https",
            ));
        }
        let mut authorization = HeaderValue::try_from(format!("Bearer {}", config.api_key))
            .map_err(|_| {
                ProviderError::new(
                    ErrorKind::InvalidConfig,
                    "invalid API key: contains characters not allowed in a header",
                )
            })?;
        authorization.set_sensitive(true);
        let limit = request
            .max_output_tokens
            .unwrap_or(config.max_output_tokens);

        let mut retries_used = 0;
        loop {
            if cancel.is_cancelled() {
                return Err(ProviderError::new(ErrorKind::Canceled, MSG_CANCELED));
            }
            let shape = self.shape();
            let body = request_body(&config.model, request, limit, shape).map_err(|err| {
                ProviderError::new(
                    ErrorKind::InvalidConfig,
                    format!("failed to encode request: {err}"),
                )
            })?;
            let builder = self
                .inner
                .client
                .post(url.clone())
                .header(AUTHORIZATION, authorization.clone())
                .header(CONTENT_TYPE, "application/json")
                .header(ACCEPT, "text/event-stream")
                .header(USER_AGENT, concat!("gg/", env!("CARGO_PKG_VERSION")))
                .body(body);
            match self.attempt(builder, shape, limit, sink, cancel).await {
                Attempt::Done(result) => return result,
                Attempt::Fallback => continue,
                Attempt::Retry { error, retry_after } => {
                    if retries_used >= config.retry.max_retries {
                        return Err(error);
                    }
                    let delay =
                        config
                            .retry
                            .delay(retries_used, retry_after.as_deref(), SystemTime::now());
                    retries_used += 1;
                    sink(StreamEvent::Retrying {
                        retry: retries_used,
                        delay,
                        reason: error.message().to_string(),
                    });
                    tokio::select! {
                        biased;
                        () = cancel.cancelled() => {
                            return Err(ProviderError::new(ErrorKind::Canceled, MSG_CANCELED));
                        }
                        () = tokio::time::sleep(delay) => {}
                    }
                }
            }
        }
    }

    async fn attempt(
        &self,
        builder: reqwest::RequestBuilder,
        shape: BodyShape,
        limit: u32,
        sink: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Attempt {
        let config = &self.inner.config;
        let sent = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                return Attempt::Done(Err(ProviderError::new(ErrorKind::Canceled, MSG_CANCELED)));
            }
            sent = tokio::time::timeout(config.idle_timeout, builder.send()) => sent,
        };
        let response = match sent {
            // Not retried: the server may be busy with the prompt and a resend would cost it again.
            Err(_elapsed) => {
                return Attempt::Done(Err(ProviderError::new(
                    ErrorKind::IdleTimeout,
                    format!(
                        "model server sent no response for {} (idle timeout)",
                        format_duration(config.idle_timeout)
                    ),
                )));
            }
            Ok(Err(err)) => {
                return Attempt::Retry {
                    error: transport_error(&err, config.connect_timeout),
                    retry_after: None,
                };
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status.is_success() {
            return Attempt::Done(self.read_stream(response, sink, cancel).await);
        }
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = match read_error_body(response, cancel, config.idle_timeout).await {
            Some(body) => body,
            None => {
                return Attempt::Done(Err(ProviderError::new(ErrorKind::Canceled, MSG_CANCELED)));
            }
        };
        if status == reqwest::StatusCode::BAD_REQUEST {
            if !shape.no_stream_usage
                && (body.contains("stream_options") || body.contains("include_usage"))
            {
                self.inner
                    .learned_no_stream_usage
                    .store(true, Ordering::Relaxed);
                return Attempt::Fallback;
            }
            if !shape.completion_tokens
                && limit > 0
                && body.contains("max_tokens")
                && body.contains("max_completion_tokens")
            {
                self.inner
                    .learned_completion_tokens
                    .store(true, Ordering::Relaxed);
                return Attempt::Fallback;
            }
        }
        let quoted = sanitize_server_text(body.trim());
        let error = ProviderError::new(
            ErrorKind::Http {
                status: status.as_u16(),
            },
            format!("OpenAI-compatible API returned {status}: {quoted}"),
        );
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            Attempt::Retry { error, retry_after }
        } else {
            Attempt::Done(Err(error))
        }
    }

    async fn read_stream(
        &self,
        mut response: reqwest::Response,
        sink: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<AssistantReply, ProviderError> {
        let idle = self.inner.config.idle_timeout;
        let mut parser = StreamParser::new();
        loop {
            let read = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(parser.fail(ErrorKind::Canceled, MSG_CANCELED)),
                read = tokio::time::timeout(idle, response.chunk()) => read,
            };
            match read {
                Err(_elapsed) => {
                    return Err(parser.fail(
                        ErrorKind::IdleTimeout,
                        format!(
                            "model stream stalled: no data received for {}",
                            format_duration(idle)
                        ),
                    ));
                }
                Ok(Err(err)) => {
                    return Err(parser.fail(
                        ErrorKind::Interrupted,
                        format!("model stream interrupted: {}", error_chain(&err)),
                    ));
                }
                Ok(Ok(None)) => return parser.finish(sink),
                Ok(Ok(Some(bytes))) => {
                    parser.feed(&bytes, sink)?;
                    if parser.is_done() {
                        return parser.finish(sink);
                    }
                }
            }
        }
    }
}

/// Reads at most [`MAX_ERROR_BODY_BYTES`] of an error body; `None` if cancelled. A body that
/// cannot be read completely is quoted as far as it arrived.
async fn read_error_body(
    mut response: reqwest::Response,
    cancel: &CancellationToken,
    idle: Duration,
) -> Option<String> {
    let mut body = Vec::new();
    while body.len() < MAX_ERROR_BODY_BYTES {
        let read = tokio::select! {
            biased;
            () = cancel.cancelled() => return None,
            read = tokio::time::timeout(idle, response.chunk()) => read,
        };
        match read {
            Ok(Ok(Some(bytes))) => body.extend_from_slice(&bytes),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY_BYTES);
    let text = String::from_utf8_lossy(&body);
    Some(termsafe::clip(&text, MAX_ERROR_BODY_BYTES).to_string())
}

fn transport_error(err: &reqwest::Error, connect_timeout: Duration) -> ProviderError {
    if err.is_connect() && err.is_timeout() {
        return ProviderError::new(
            ErrorKind::ConnectTimeout,
            format!(
                "connecting to the model server timed out after {}",
                format_duration(connect_timeout)
            ),
        );
    }
    ProviderError::new(
        ErrorKind::Transport,
        format!("model request failed: {}", error_chain(err)),
    )
}

/// `err` and its sources joined by `: `, without the URL (which may carry credentials) and with
/// the server's text made safe to print. Every request gg sends to a provider words its
/// transport failures this way (the model client here, `gg doctor --online`).
pub fn error_chain(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    if let Some(url) = err.url() {
        text = text.replace(&format!(" for url ({url})"), "");
    }
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        let part = inner.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = inner.source();
    }
    sanitize_server_text(&text)
}

/// `300ms`, `30s`, `5m`: how timeouts are named in messages. The same style as gg's
/// `duration::unit` (except zero, `0s` here); kept here because this crate depends on nothing of gg.
pub(crate) fn format_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if !millis.is_multiple_of(1000) {
        format!("{millis}ms")
    } else if millis.is_multiple_of(60_000) && millis > 0 {
        format!("{}m", millis / 60_000)
    } else {
        format!("{}s", millis / 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_named_readably() {
        let cases = [
            (Duration::from_millis(300), "300ms"),
            (Duration::from_secs(30), "30s"),
            (Duration::from_secs(300), "5m"),
            (Duration::from_millis(1500), "1500ms"),
            (Duration::ZERO, "0s"),
        ];
        for (duration, want) in cases {
            assert_eq!(format_duration(duration), want);
        }
    }

    fn assert_send<T: Send>(_: &T) {}

    #[test]
    fn provider_and_its_stream_future_can_move_across_threads() {
        let provider = Provider::new(ProviderConfig::new("http://127.0.0.1:9/v1", "k", "m"))
            .expect("client builds");
        let request = ChatRequest::default();
        let mut sink = |_: StreamEvent| {};
        let cancel = CancellationToken::new();
        let future = provider.stream(&request, &mut sink, &cancel);
        assert_send(&future);
        fn assert_sync<T: Send + Sync>(_: &T) {}
        assert_sync(&provider);
    }

    #[test]
    fn https_client_builds_and_debug_hides_key() {
        let provider = Provider::new(ProviderConfig::new(
            "https://example.invalid/v1",
            "sk-secret",
            "m",
        ))
        .expect("rustls with ring and the platform verifier must build");
        let shown = format!("{provider:?}");
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }
}
