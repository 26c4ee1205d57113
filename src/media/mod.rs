//! Media: image generation, text-to-speech and speech-to-text through OpenAI-compatible
//! endpoints (`POST /images/generations`, `/audio/speech`, `/audio/transcriptions`).
//!
//! The three calls take a resolved [`Media`] (built by `gg::app::media::resolve` from the
//! `media` section of `config.json`, the providers and the command line) and return bytes and
//! text; they write nothing. Saving is [`files`]: under `~/.gg/media` or at a person's `--out`.
//! The callers are `gg media`, the agent's tools (`agent::tools::media`, off unless
//! `"tools": {"media": true}`) and ggd's `media.*` methods; Telegram's voice messages use
//! [`speak`] and [`transcribe`] the same way.
//!
//! Limits: an upload of at most 25 MB (the endpoint's own limit, said before anything is sent),
//! answers of at most 64 MiB, 120 s per request, 4096 characters of speech and of image prompt,
//! 1–4 images.

mod client;
pub mod config;
pub mod files;
pub mod formats;

use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

pub use client::TIMEOUT;
/// The multipart form the transcription upload uses; Telegram's voice replies are uploaded with it.
pub(crate) use client::multipart;
pub use config::{
    Endpoint, ImageConfig, ImageSettings, Media, MediaConfig, SpeechConfig, SpeechSettings,
    TranscriptionConfig, TranscriptionSettings, media_dir,
};
pub use formats::{AudioFormat, ImageKind};

/// Largest audio file sent for transcription: the endpoint's 25 MB.
pub const MAX_UPLOAD_BYTES: u64 = 25 * 1024 * 1024;
/// Largest answer read (audio, or the JSON holding the images).
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;
/// Largest transcription answer read (JSON text).
const MAX_TRANSCRIPT_BYTES: usize = 4 * 1024 * 1024;
/// Longest text spoken and longest image prompt (OpenAI's limit for speech).
pub const MAX_TEXT_CHARS: usize = 4096;
pub const MAX_IMAGES: u32 = 4;

/// Why a media call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaError {
    pub kind: ErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request itself is refused (format, size, path, an empty text): nothing was sent.
    Invalid,
    /// The provider answered with an error status; the message is its own.
    Provider,
    /// No usable answer (connection, timeout, size, a malformed answer, cancellation).
    Failed,
}

impl MediaError {
    pub fn invalid(message: impl Into<String>) -> MediaError {
        MediaError {
            kind: ErrorKind::Invalid,
            message: message.into(),
        }
    }

    pub fn provider(message: impl Into<String>) -> MediaError {
        MediaError {
            kind: ErrorKind::Provider,
            message: message.into(),
        }
    }

    pub fn failed(message: impl Into<String>) -> MediaError {
        MediaError {
            kind: ErrorKind::Failed,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for MediaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MediaError {}

/// An image to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRequest {
    pub prompt: String,
    /// `WIDTHxHEIGHT` or `auto`; `None`: the configured size, else the provider's default.
    pub size: Option<String>,
    pub n: u32,
}

/// One generated image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedImage {
    pub bytes: Vec<u8>,
    pub kind: ImageKind,
    /// Known for PNG (read from its header).
    pub dimensions: Option<(u32, u32)>,
}

/// Text to speak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeechRequest {
    pub text: String,
    pub voice: Option<String>,
    pub format: Option<AudioFormat>,
}

/// Spoken audio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Speech {
    pub audio: Vec<u8>,
    pub format: AudioFormat,
    /// Known for WAV and PCM.
    pub duration: Option<Duration>,
}

/// An audio file to transcribe: its name (the extension says the format) and bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AudioUpload {
    pub file_name: String,
    pub bytes: Vec<u8>,
}

/// What the transcription endpoint heard. Third-party text: a caller that hands it to a model
/// wraps it as untrusted content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transcript {
    pub text: String,
    pub language: Option<String>,
}

/// Checks an image request without sending it.
pub fn check_image(request: &ImageRequest) -> Result<(), MediaError> {
    check_text("prompt", &request.prompt)?;
    if !(1..=MAX_IMAGES).contains(&request.n) {
        return Err(MediaError::invalid(format!(
            "n must be between 1 and {MAX_IMAGES}, not {}",
            request.n
        )));
    }
    if let Some(size) = &request.size {
        formats::check_size(size).map_err(|e| MediaError::invalid(format!("size: {e}")))?;
    }
    Ok(())
}

/// Checks a speech request without sending it.
pub fn check_speech(request: &SpeechRequest) -> Result<(), MediaError> {
    check_text("text", &request.text)?;
    if request
        .voice
        .as_deref()
        .is_some_and(|v| v.trim().is_empty())
    {
        return Err(MediaError::invalid("voice must not be empty"));
    }
    Ok(())
}

fn check_text(what: &str, text: &str) -> Result<(), MediaError> {
    if text.trim().is_empty() {
        return Err(MediaError::invalid(format!("{what} must not be empty")));
    }
    let chars = text.chars().count();
    if chars > MAX_TEXT_CHARS {
        return Err(MediaError::invalid(format!(
            "{what} is {chars} characters; the limit is {MAX_TEXT_CHARS}"
        )));
    }
    Ok(())
}

/// `POST /images/generations` with `response_format: "b64_json"`. An answer that carries only
/// URLs is refused rather than followed: a download from wherever the answer points is not
/// something the person approved.
pub async fn generate_image(
    media: &Media,
    request: &ImageRequest,
    cancel: &CancellationToken,
) -> Result<Vec<GeneratedImage>, MediaError> {
    check_image(request)?;
    let settings = &media.image;
    let mut body = json!({
        "model": settings.endpoint.model,
        "prompt": request.prompt,
        "n": request.n,
        "response_format": "b64_json",
    });
    if let Some(size) = request.size.as_ref().or(settings.size.as_ref()) {
        body["size"] = json!(size);
    }
    let op = "image generation";
    let answer = client::post(
        &settings.endpoint,
        op,
        "images/generations",
        client::Body::json(&body),
        MAX_RESPONSE_BYTES,
        cancel,
    )
    .await?;
    let malformed = |why: &str| MediaError::failed(format!("media: {op} failed: {why}"));
    let value: serde_json::Value =
        serde_json::from_slice(&answer).map_err(|_| malformed("the answer is not JSON"))?;
    let data = value["data"]
        .as_array()
        .ok_or_else(|| malformed("the answer has no \"data\" list"))?;
    let mut images = Vec::new();
    for item in data.iter().take(MAX_IMAGES as usize) {
        let Some(encoded) = item["b64_json"].as_str() else {
            return Err(malformed(
                "the answer gave no image bytes (b64_json), only a URL, which gg does not follow",
            ));
        };
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|_| malformed("an image's b64_json is not base64"))?;
        let kind = ImageKind::sniff(&bytes)
            .ok_or_else(|| malformed("an image is not PNG, JPEG or WebP"))?;
        images.push(GeneratedImage {
            dimensions: formats::png_size(&bytes),
            bytes,
            kind,
        });
    }
    if images.is_empty() {
        return Err(malformed("the answer holds no image"));
    }
    Ok(images)
}

/// `POST /audio/speech`.
pub async fn speak(
    media: &Media,
    request: &SpeechRequest,
    cancel: &CancellationToken,
) -> Result<Speech, MediaError> {
    check_speech(request)?;
    let settings = &media.speech;
    let format = request.format.unwrap_or(settings.format);
    let body = json!({
        "model": settings.endpoint.model,
        "input": request.text,
        "voice": request.voice.as_deref().unwrap_or(&settings.voice),
        "response_format": format.as_str(),
    });
    let audio = client::post(
        &settings.endpoint,
        "speech",
        "audio/speech",
        client::Body::json(&body),
        MAX_RESPONSE_BYTES,
        cancel,
    )
    .await?;
    if audio.is_empty() || !format.matches(&audio) {
        return Err(MediaError::failed(format!(
            "media: speech failed: the answer is not {} audio",
            format.as_str()
        )));
    }
    Ok(Speech {
        duration: format.duration(&audio),
        audio,
        format,
    })
}

/// `POST /audio/transcriptions` (multipart: `model`, `language`?, `response_format=json`,
/// `file`).
pub async fn transcribe(
    media: &Media,
    audio: &AudioUpload,
    cancel: &CancellationToken,
) -> Result<Transcript, MediaError> {
    let content_type =
        formats::transcription_content_type(&audio.file_name).map_err(MediaError::invalid)?;
    files::check_upload_size(&audio.file_name, audio.bytes.len() as u64)?;
    if audio.bytes.is_empty() {
        return Err(MediaError::invalid(format!("{} is empty", audio.file_name)));
    }
    let settings = &media.transcription;
    let mut fields = vec![
        ("model", settings.endpoint.model.as_str()),
        ("response_format", "json"),
    ];
    if let Some(language) = &settings.language {
        fields.push(("language", language.as_str()));
    }
    let body = client::multipart(
        &fields,
        "file",
        &audio.file_name,
        content_type,
        &audio.bytes,
    );
    let op = "transcription";
    let answer = client::post(
        &settings.endpoint,
        op,
        "audio/transcriptions",
        body,
        MAX_TRANSCRIPT_BYTES,
        cancel,
    )
    .await?;
    let value: serde_json::Value = serde_json::from_slice(&answer)
        .map_err(|_| MediaError::failed(format!("media: {op} failed: the answer is not JSON")))?;
    let text = value["text"].as_str().ok_or_else(|| {
        MediaError::failed(format!("media: {op} failed: the answer has no \"text\""))
    })?;
    Ok(Transcript {
        text: text.trim().to_string(),
        language: value["language"].as_str().map(str::to_string),
    })
}

/// `1.8 s`: a duration as the tools and the CLI show it.
pub fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}
