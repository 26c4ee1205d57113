//! One POST to a media endpoint: the URL and key checks, a timeout, a cap on the answer's size,
//! cancellation, and the provider's error message (OpenAI's `{"error": {"message"}}` shape)
//! made safe to show.

use std::sync::Once;
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use tokio_util::sync::CancellationToken;

use super::{Endpoint, MediaError};

/// How long one media request may take, connection to last byte.
pub const TIMEOUT: Duration = Duration::from_secs(120);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Longest provider message shown (the reference's 500 characters).
const MESSAGE_LIMIT: usize = 500;
/// How much of an error answer is read to find its message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// A request body and its content type.
pub struct Body {
    pub content_type: String,
    pub bytes: Vec<u8>,
}

impl Body {
    pub fn json(value: &serde_json::Value) -> Body {
        Body {
            content_type: "application/json".to_string(),
            bytes: value.to_string().into_bytes(),
        }
    }
}

/// rustls is built without a default crypto backend; `ring` is installed once per process, as
/// the provider client does (whichever comes first installs it).
fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
    });
}

/// POSTs `body` to `<base>/<path>` and returns the answer's bytes (at most `limit`). `op` names
/// the call in messages (`speech`, `transcription`, `image generation`).
pub async fn post(
    endpoint: &Endpoint,
    op: &str,
    path: &str,
    body: Body,
    limit: usize,
    cancel: &CancellationToken,
) -> Result<Vec<u8>, MediaError> {
    let failed = |why: String| MediaError::failed(format!("media: {op} failed: {why}"));
    let base = endpoint.base_url.trim().trim_end_matches('/');
    let url = reqwest::Url::parse(&format!("{base}/{path}"))
        .map_err(|e| MediaError::invalid(format!("media: invalid base URL {base:?}: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(MediaError::invalid(format!(
            "media: invalid base URL {base:?}: scheme must be http or https"
        )));
    }
    if endpoint.api_key.is_empty() && url.host_str() == Some("api.openai.com") {
        return Err(MediaError::invalid(format!(
            "media: missing API key for provider \"{}\": set OPENAI_API_KEY or pass \
             --api-key-file FILE (or apiKey/apiKeyEnv in ~/.gg/config.json)",
            endpoint.provider
        )));
    }
    install_crypto_provider();
    let client = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(TIMEOUT)
        // A redirect would carry the key and the content somewhere else: refused.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| failed(provider::error_chain(&e)))?;
    let content_type = HeaderValue::try_from(body.content_type)
        .map_err(|_| MediaError::invalid("media: bad content type".to_string()))?;
    let mut request = client
        .post(url)
        .header(CONTENT_TYPE, content_type)
        .body(body.bytes);
    if !endpoint.api_key.is_empty() {
        let mut key =
            HeaderValue::try_from(format!("Bearer {}", endpoint.api_key)).map_err(|_| {
                MediaError::invalid(
                    "media: invalid API key: contains characters not allowed in a header"
                        .to_string(),
                )
            })?;
        key.set_sensitive(true);
        request = request.header(AUTHORIZATION, key);
    }
    let exchange = async {
        let mut response = request.send().await.map_err(|e| failed(describe(&e)))?;
        let status = response.status();
        let cap = if status.is_success() {
            limit
        } else {
            ERROR_BODY_LIMIT
        };
        if let Some(length) = response.content_length()
            && length > cap as u64
            && status.is_success()
        {
            return Err(failed(format!(
                "the answer is {} long, over the limit of {}",
                tools::store::human_size(length),
                tools::store::human_size(limit as u64)
            )));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| failed(describe(&e)))? {
            if bytes.len() + chunk.len() > cap {
                if status.is_success() {
                    return Err(failed(format!(
                        "the answer is over the limit of {}",
                        tools::store::human_size(limit as u64)
                    )));
                }
                bytes.extend_from_slice(&chunk[..cap - bytes.len()]);
                break;
            }
            bytes.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            return Err(MediaError::provider(format!(
                "media: {op} failed (status {}): {}",
                status.as_u16(),
                provider_message(&bytes)
            )));
        }
        Ok(bytes)
    };
    tokio::select! {
        result = exchange => result,
        () = cancel.cancelled() => Err(MediaError::failed(format!("media: {op} cancelled"))),
    }
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        format!("no answer within {} s", TIMEOUT.as_secs())
    } else {
        provider::error_chain(e)
    }
}

/// The message of an OpenAI-shaped error body (`{"error": {"message": …}}`, or `{"error": "…"}`),
/// else the body's text; control and invisible characters made visible, at most 500 characters.
pub fn provider_message(body: &[u8]) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        let error = v.get("error")?;
        error
            .get("message")
            .and_then(|m| m.as_str())
            .or_else(|| error.as_str())
            .map(str::to_string)
    });
    let text = message.unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_string());
    let text = if text.is_empty() {
        "(no message)".to_string()
    } else {
        text
    };
    let shown = crate::display::visible_inline(&text).into_owned();
    match shown.char_indices().nth(MESSAGE_LIMIT) {
        Some((cut, _)) => format!("{}…", &shown[..cut]),
        None => shown,
    }
}

/// A `multipart/form-data` body: text fields, then one file. Hand-written (a few lines) rather
/// than reqwest's `multipart` feature, which would add its own dependencies for one form.
pub fn multipart(
    fields: &[(&str, &str)],
    file_field: &str,
    file_name: &str,
    content_type: &str,
    data: &[u8],
) -> Body {
    let boundary = format!(
        "gg-media-{:016x}{:016x}",
        fastrand::u64(..),
        fastrand::u64(..)
    );
    let mut bytes = Vec::with_capacity(data.len() + 512);
    for (name, value) in fields {
        bytes.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    // The name is the caller's file name reduced to safe characters: it goes into a header.
    let safe: String = file_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    bytes.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{file_field}\"; \
             filename=\"{safe}\"\r\nContent-Type: {content_type}\r\n\r\n"
        )
        .as_bytes(),
    );
    bytes.extend_from_slice(data);
    bytes.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    Body {
        content_type: format!("multipart/form-data; boundary={boundary}"),
        bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_messages_are_read_from_the_openai_shape_and_made_safe() {
        let body =
            br#"{"error": {"message": "Invalid file format.", "type": "invalid_request_error"}}"#;
        assert_eq!(provider_message(body), "Invalid file format.");
        assert_eq!(provider_message(br#"{"error": "quota"}"#), "quota");
        assert_eq!(provider_message(b"  Bad Gateway\n"), "Bad Gateway");
        assert_eq!(provider_message(b""), "(no message)");
        let long = format!(r#"{{"error": {{"message": "{}"}}}}"#, "x".repeat(900));
        assert_eq!(provider_message(long.as_bytes()).chars().count(), 501);
        assert!(!provider_message(b"\x1b[31mred").contains('\x1b'));
    }

    #[test]
    fn multipart_has_the_fields_and_a_safe_file_name() {
        let body = multipart(
            &[("model", "whisper-1")],
            "file",
            "a \"b\".wav",
            "audio/wav",
            b"RIFF",
        );
        let text = String::from_utf8(body.bytes).unwrap();
        let boundary = body.content_type.split("boundary=").nth(1).unwrap();
        assert!(text.starts_with(&format!("--{boundary}\r\n")));
        assert!(text.contains("name=\"model\"\r\n\r\nwhisper-1\r\n"));
        assert!(text.contains("filename=\"a__b_.wav\""), "{text}");
        assert!(text.ends_with(&format!("RIFF\r\n--{boundary}--\r\n")));
    }
}
