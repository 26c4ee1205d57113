//! The Bot API client: one `POST <apiBase>/bot<token>/<method>` with a JSON body per call, and
//! the shapes of the updates and messages gg reads.
//!
//! The token is a path segment of every URL (the file downloads' too), so no URL ever leaves
//! this file: errors are built from reqwest's error without its URL, and any text that still
//! holds the token (a server echoing the path) has it replaced by `[token]` ([`Client::redact`]).

use std::time::Duration;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Telegram's limit on a message's text.
pub const MESSAGE_LIMIT: usize = 4096;
/// How long `getUpdates` waits for an update on the server (seconds).
pub const LONG_POLL_SECONDS: u64 = 50;
/// Largest response body read (a batch of updates is far smaller).
const RESPONSE_LIMIT: usize = 8 * 1024 * 1024;
/// How long a file download or upload may take.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(120);
/// How much of a failed download's answer is read for its error.
const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// What the token is replaced by in any text that leaves the client.
pub const REDACTED_TOKEN: &str = "[token]";

/// An `Update` (the kinds gg handles; the others are skipped by their id).
#[derive(Debug, Clone, Deserialize)]
pub struct Update {
    pub update_id: i64,
    #[serde(default)]
    pub message: Option<Message>,
    #[serde(default)]
    pub callback_query: Option<CallbackQuery>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Message {
    pub message_id: i64,
    pub chat: Chat,
    #[serde(default)]
    pub text: Option<String>,
    /// A voice note (OGG/Opus on Telegram's side).
    #[serde(default)]
    pub voice: Option<AttachedFile>,
    /// An audio file (sent as music or a recording).
    #[serde(default)]
    pub audio: Option<AttachedFile>,
}

/// The fields of a `Voice` or an `Audio` gg reads.
#[derive(Debug, Clone, Deserialize)]
pub struct AttachedFile {
    pub file_id: String,
    /// The size in bytes, when Telegram says it.
    #[serde(default)]
    pub file_size: Option<u64>,
    #[serde(default)]
    pub mime_type: Option<String>,
    /// An audio file's original name.
    #[serde(default)]
    pub file_name: Option<String>,
}

/// What `getFile` answers: where the file can be downloaded from for the next hour.
#[derive(Debug, Clone, Deserialize)]
pub struct RemoteFile {
    #[serde(default)]
    pub file_size: Option<u64>,
    /// Absent when the file cannot be downloaded.
    #[serde(default)]
    pub file_path: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Chat {
    pub id: i64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct User {
    pub id: i64,
}

/// A press of an inline button.
#[derive(Debug, Clone, Deserialize)]
pub struct CallbackQuery {
    pub id: String,
    pub from: User,
    /// The message the button was on (absent when it is too old).
    #[serde(default)]
    pub message: Option<Message>,
    #[serde(default)]
    pub data: Option<String>,
}

/// How a call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// No answer (connection refused, reset, timed out).
    Transport(String),
    /// Telegram's `{"ok": false, "error_code": …, "description": …}`, or an HTTP error without
    /// that body. `retry_after` is `parameters.retry_after` (seconds) of a 429.
    Api {
        code: i64,
        description: String,
        retry_after: Option<u64>,
    },
    /// An answer that is not the Bot API's shape.
    Malformed(String),
    /// A file larger than the limit (bytes) a download was allowed.
    TooLarge(u64),
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Transport(e) => write!(f, "Bot API unreachable: {e}"),
            ApiError::Api {
                code, description, ..
            } => write!(f, "Bot API error {code}: {description}"),
            ApiError::Malformed(e) => write!(f, "Bot API answer not understood: {e}"),
            ApiError::TooLarge(limit) => write!(
                f,
                "the file is larger than {}",
                tools::store::human_size(*limit)
            ),
        }
    }
}

impl ApiError {
    /// The wait a 429 asks for.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ApiError::Api {
                code: 429,
                retry_after: Some(seconds),
                ..
            } => Some(Duration::from_secs(*seconds)),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct Envelope {
    ok: bool,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error_code: Option<i64>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Parameters>,
}

#[derive(Deserialize)]
struct Parameters {
    #[serde(default)]
    retry_after: Option<u64>,
}

/// The Bot API for one bot.
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &self.base)
            .field("token", &REDACTED_TOKEN)
            .finish()
    }
}

impl Client {
    /// A client of the server at `base` (`https://api.telegram.org`) for the bot `token`.
    pub fn new(base: &str, token: &str) -> Result<Client, String> {
        static INSTALL: std::sync::Once = std::sync::Once::new();
        // rustls is built without a default crypto backend; `ring` is installed once per process
        // (the provider client does the same; whichever runs first wins).
        INSTALL.call_once(|| {
            let _already_installed = rustls::crypto::ring::default_provider().install_default();
        });
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(15))
            // A redirect would carry the token (in the path) to another place.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {}", e.without_url()))?;
        Ok(Client {
            http,
            base: base.trim_end_matches('/').to_string(),
            token: token.to_string(),
        })
    }

    /// `text` with the token replaced by `[token]`.
    pub fn redact(&self, text: &str) -> String {
        if self.token.is_empty() {
            return text.to_string();
        }
        text.replace(&self.token, REDACTED_TOKEN)
    }

    /// One call; `timeout` bounds the whole exchange.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<T, ApiError> {
        let bytes = serde_json::to_vec(body).map_err(|e| ApiError::Malformed(e.to_string()))?;
        self.post(method, "application/json", bytes, timeout).await
    }

    /// One call with a body already encoded as `content_type`.
    async fn post<T: DeserializeOwned>(
        &self,
        method: &str,
        content_type: &str,
        bytes: Vec<u8>,
        timeout: Duration,
    ) -> Result<T, ApiError> {
        let url = format!("{}/bot{}/{method}", self.base, self.token);
        let mut response = self
            .http
            .post(url)
            .header("content-type", content_type)
            .body(bytes)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.transport(e))? {
            if body.len() + chunk.len() > RESPONSE_LIMIT {
                return Err(ApiError::Malformed(format!(
                    "{method}: answer larger than {RESPONSE_LIMIT} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        let result = self.envelope(status, &body, method)?;
        serde_json::from_value(result).map_err(|e| ApiError::Malformed(format!("{method}: {e}")))
    }

    fn transport(&self, e: reqwest::Error) -> ApiError {
        ApiError::Transport(self.redact(&provider::error_chain(&e.without_url())))
    }

    /// The `result` of an answer, or its error.
    fn envelope(
        &self,
        status: reqwest::StatusCode,
        body: &[u8],
        method: &str,
    ) -> Result<Value, ApiError> {
        let envelope: Envelope = match serde_json::from_slice(body) {
            Ok(envelope) => envelope,
            Err(_) if !status.is_success() => {
                return Err(ApiError::Api {
                    code: i64::from(status.as_u16()),
                    description: format!("HTTP {status}"),
                    retry_after: None,
                });
            }
            Err(e) => return Err(ApiError::Malformed(format!("{method}: {e}"))),
        };
        if !envelope.ok {
            let description = envelope
                .description
                .map(|d| self.redact(&crate::display::visible_inline(&d)))
                .unwrap_or_else(|| format!("HTTP {status}"));
            return Err(ApiError::Api {
                code: envelope
                    .error_code
                    .unwrap_or_else(|| i64::from(status.as_u16())),
                description,
                retry_after: envelope.parameters.and_then(|p| p.retry_after),
            });
        }
        Ok(envelope.result.unwrap_or(Value::Null))
    }

    /// `getUpdates` from `offset`, waiting up to [`LONG_POLL_SECONDS`] on the server. Updates are
    /// decoded one by one: one of a shape gg does not know is kept as its id alone, so that the
    /// offset still moves past it.
    pub async fn get_updates(&self, offset: i64) -> Result<Vec<Update>, ApiError> {
        let body = json!({
            "offset": offset,
            "timeout": LONG_POLL_SECONDS,
            "allowed_updates": ["message", "callback_query"],
        });
        let raw: Vec<Value> = self
            .call(
                "getUpdates",
                &body,
                Duration::from_secs(LONG_POLL_SECONDS + 20),
            )
            .await?;
        raw.into_iter()
            .map(
                |value| match serde_json::from_value::<Update>(value.clone()) {
                    Ok(update) => Ok(update),
                    Err(_) => value["update_id"]
                        .as_i64()
                        .map(|update_id| Update {
                            update_id,
                            message: None,
                            callback_query: None,
                        })
                        .ok_or_else(|| ApiError::Malformed("an update without update_id".into())),
                },
            )
            .collect()
    }

    /// `sendMessage` (plain text); `keyboard` is an `inline_keyboard` markup.
    pub async fn send_message(
        &self,
        chat: i64,
        text: &str,
        keyboard: Option<Value>,
    ) -> Result<Message, ApiError> {
        let mut body = json!({"chat_id": chat, "text": text});
        if let Some(markup) = keyboard {
            body["reply_markup"] = markup;
        }
        self.call("sendMessage", &body, Duration::from_secs(30))
            .await
    }

    /// `editMessageText` (plain text; the message's inline keyboard, if any, goes away).
    pub async fn edit_message_text(
        &self,
        chat: i64,
        message_id: i64,
        text: &str,
    ) -> Result<(), ApiError> {
        let body = json!({"chat_id": chat, "message_id": message_id, "text": text});
        self.call::<Value>("editMessageText", &body, Duration::from_secs(30))
            .await
            .map(|_| ())
    }

    /// `answerCallbackQuery` with a short notice for the person who pressed.
    pub async fn answer_callback_query(&self, id: &str, text: &str) -> Result<(), ApiError> {
        let body = json!({"callback_query_id": id, "text": text});
        self.call::<Value>("answerCallbackQuery", &body, Duration::from_secs(30))
            .await
            .map(|_| ())
    }

    /// `sendMessage` of `text` shown as a quote (a `blockquote` entity over all of it).
    pub async fn send_quote(&self, chat: i64, text: &str) -> Result<Message, ApiError> {
        let length = text.encode_utf16().count();
        let body = json!({
            "chat_id": chat,
            "text": text,
            "entities": [{"type": "blockquote", "offset": 0, "length": length}],
        });
        self.call("sendMessage", &body, Duration::from_secs(30))
            .await
    }

    /// `getFile`: where the file `file_id` can be downloaded from.
    pub async fn get_file(&self, file_id: &str) -> Result<RemoteFile, ApiError> {
        self.call(
            "getFile",
            &json!({"file_id": file_id}),
            Duration::from_secs(30),
        )
        .await
    }

    /// Downloads `<apiBase>/file/bot<token>/<file_path>`, refusing more than `limit` bytes
    /// (before reading, when the length is announced). `file_path` is the one `getFile`
    /// answered; one with anything but a plain relative path's characters is refused, since it
    /// goes into the URL.
    pub async fn download(&self, file_path: &str, limit: u64) -> Result<Vec<u8>, ApiError> {
        if !is_plain_file_path(file_path) {
            return Err(ApiError::Malformed(format!(
                "getFile: not a file path: {:?}",
                crate::display::visible_inline(file_path)
            )));
        }
        let url = format!("{}/file/bot{}/{file_path}", self.base, self.token);
        let mut response = self
            .http
            .get(url)
            .timeout(DOWNLOAD_TIMEOUT)
            .send()
            .await
            .map_err(|e| self.transport(e))?;
        let status = response.status();
        if !status.is_success() {
            // An error answer is small; a large one is cut (it is only read for its message).
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| self.transport(e))? {
                body.extend_from_slice(&chunk);
                if body.len() > ERROR_BODY_LIMIT {
                    break;
                }
            }
            return match self.envelope(status, &body, "file download") {
                Err(e @ ApiError::Api { .. }) => Err(e),
                _ => Err(ApiError::Api {
                    code: i64::from(status.as_u16()),
                    description: format!("HTTP {status}"),
                    retry_after: None,
                }),
            };
        }
        if response
            .content_length()
            .is_some_and(|length| length > limit)
        {
            return Err(ApiError::TooLarge(limit));
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.transport(e))? {
            if (bytes.len() + chunk.len()) as u64 > limit {
                return Err(ApiError::TooLarge(limit));
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }

    /// `sendVoice` or `sendAudio` (`method`): `audio` uploaded as the multipart field `field`
    /// (`voice` or `audio`) named `file_name`.
    pub async fn send_audio_file(
        &self,
        method: &str,
        chat: i64,
        field: &str,
        file_name: &str,
        content_type: &str,
        audio: &[u8],
    ) -> Result<Message, ApiError> {
        let chat = chat.to_string();
        let body = crate::media::multipart(
            &[("chat_id", chat.as_str())],
            field,
            file_name,
            content_type,
            audio,
        );
        self.post(method, &body.content_type, body.bytes, DOWNLOAD_TIMEOUT)
            .await
    }
}

/// A `file_path` as Telegram gives it (`voice/file_3.oga`): relative, made of letters, digits,
/// `_`, `-`, `.` and `/`, with no empty, `.` or `..` segment, so that it names a file under the
/// bot's directory and nothing else in the URL.
fn is_plain_file_path(path: &str) -> bool {
    !path.is_empty()
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/'))
        && path
            .split('/')
            .all(|segment| !matches!(segment, "" | "." | ".."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_redacted_and_not_debug_printed() {
        let client = Client::new("http://127.0.0.1:9", "123:secret").unwrap();
        assert_eq!(
            client.redact("GET /bot123:secret/getMe failed"),
            "GET /bot[token]/getMe failed"
        );
        assert!(!format!("{client:?}").contains("secret"));
    }

    #[tokio::test]
    async fn a_transport_error_never_carries_the_url() {
        // Nothing listens on port 9 of loopback (discard is not served): refused at once.
        let client = Client::new("http://127.0.0.1:9", "123:secret").unwrap();
        let err = client.get_updates(0).await.unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, ApiError::Transport(_)), "{text}");
        assert!(!text.contains("secret") && !text.contains("/bot"), "{text}");
    }

    #[test]
    fn only_plain_relative_file_paths_are_downloaded() {
        for good in ["voice/file_3.oga", "music/file_12.mp3", "a"] {
            assert!(is_plain_file_path(good), "{good}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "voice/../../bot1:x/getMe",
            "voice//a",
            "a?b",
            "a#b",
            "a b",
            "voice/./a",
            "a%2F..",
        ] {
            assert!(!is_plain_file_path(bad), "{bad}");
        }
    }

    #[tokio::test]
    async fn a_refused_file_path_is_not_requested() {
        let client = Client::new("http://127.0.0.1:9", "123:secret").unwrap();
        let err = client.download("../x", 10).await.unwrap_err();
        assert!(matches!(err, ApiError::Malformed(_)), "{err}");
    }

    #[test]
    fn a_429_names_its_wait() {
        let err = ApiError::Api {
            code: 429,
            description: "Too Many Requests: retry after 3".into(),
            retry_after: Some(3),
        };
        assert_eq!(err.retry_after(), Some(Duration::from_secs(3)));
    }
}
