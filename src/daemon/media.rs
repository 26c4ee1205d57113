//! ggd's `media.*` methods: the `gg media` calls for clients (the web UI, editors, Telegram's
//! relay). Outputs are saved under `~/.gg/media` and returned inline (base64) as well, so a
//! client on another machine can show or play them; `media.transcribe` takes a path (confined
//! to the daemon's `--cwd` and `~/.gg/media` as the agent's tool is, deny-read paths refused)
//! or the audio itself.

use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::rpc::{AppError, RpcError};
use super::runtime::Settings;
use crate::media::{
    self, AudioFormat, AudioUpload, ErrorKind, ImageRequest, MediaError, SpeechRequest,
};

/// Whether ggd answers `method` here.
pub fn handles(method: &str) -> bool {
    matches!(
        method,
        "media.image" | "media.speak" | "media.transcribe" | "media.read"
    )
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ImageParams {
    prompt: String,
    #[serde(default)]
    size: Option<String>,
    #[serde(default)]
    n: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SpeakParams {
    text: String,
    #[serde(default)]
    voice: Option<String>,
    #[serde(default)]
    format: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReadParams {
    path: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TranscribeParams {
    #[serde(default)]
    path: Option<String>,
    /// The audio, base64 (with `fileName`, whose extension says the format).
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    file_name: Option<String>,
}

fn rpc_error(e: MediaError) -> RpcError {
    match e.kind {
        ErrorKind::Invalid => RpcError::invalid_params(e.message),
        ErrorKind::Provider | ErrorKind::Failed => RpcError::app(AppError::Other, e.message),
    }
}

fn failed(e: impl std::fmt::Display) -> RpcError {
    RpcError::app(AppError::Other, e.to_string())
}

fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

async fn save(
    settings: &Settings,
    kind: &'static str,
    ext: &'static str,
    bytes: Vec<u8>,
) -> Result<String, RpcError> {
    let home = settings.home.clone();
    tokio::task::spawn_blocking(move || media::files::save_in_media(&home, kind, ext, &bytes))
        .await
        .map_err(failed)?
        .map(|p| p.display().to_string())
        .map_err(failed)
}

pub async fn dispatch(settings: &Settings, method: &str, p: Value) -> Result<Value, RpcError> {
    let resolved = || {
        crate::app::media::resolve(&settings.config, &settings.home, &settings.overrides, None)
            .map_err(failed)
    };
    let cancel = CancellationToken::new();
    match method {
        "media.image" => {
            let p: ImageParams = params(p)?;
            let request = ImageRequest {
                prompt: p.prompt,
                size: p.size,
                n: p.n.unwrap_or(1),
            };
            media::check_image(&request).map_err(rpc_error)?;
            let media = resolved()?;
            let images = media::generate_image(&media, &request, &cancel)
                .await
                .map_err(rpc_error)?;
            let mut out = Vec::new();
            for image in images {
                let data = base64(&image.bytes);
                let path = save(settings, "images", image.kind.extension(), image.bytes).await?;
                let mut item = json!({"path": path, "mimeType": image.kind.mime(), "data": data});
                if let Some((w, h)) = image.dimensions {
                    item["width"] = json!(w);
                    item["height"] = json!(h);
                }
                out.push(item);
            }
            Ok(json!({"images": out}))
        }
        "media.speak" => {
            let p: SpeakParams = params(p)?;
            let format = p
                .format
                .as_deref()
                .map(AudioFormat::parse)
                .transpose()
                .map_err(RpcError::invalid_params)?;
            let request = SpeechRequest {
                text: p.text,
                voice: p.voice,
                format,
            };
            media::check_speech(&request).map_err(rpc_error)?;
            let media = resolved()?;
            let speech = media::speak(&media, &request, &cancel)
                .await
                .map_err(rpc_error)?;
            let format = speech.format.as_str();
            let data = base64(&speech.audio);
            let path = save(settings, "speech", format, speech.audio).await?;
            let mut result = json!({"path": path, "format": format, "data": data});
            if let Some(d) = speech.duration {
                result["durationMs"] = json!(d.as_millis() as u64);
            }
            Ok(result)
        }
        "media.transcribe" => {
            let p: TranscribeParams = params(p)?;
            let upload = match (p.path, p.data, p.file_name) {
                (Some(path), None, None) => {
                    let (cwd, home) = (settings.cwd.clone(), settings.home.clone());
                    tokio::task::spawn_blocking(move || {
                        media::files::open_confined(&cwd, &home, &path)?.read()
                    })
                    .await
                    .map_err(failed)?
                    .map_err(rpc_error)?
                }
                (None, Some(data), Some(file_name)) => {
                    use base64::Engine as _;
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(data.trim())
                        .map_err(|_| RpcError::invalid_params("data is not base64"))?;
                    AudioUpload { file_name, bytes }
                }
                _ => {
                    return Err(RpcError::invalid_params(
                        "give either path, or data with fileName",
                    ));
                }
            };
            let media = resolved()?;
            let transcript = media::transcribe(&media, &upload, &cancel)
                .await
                .map_err(rpc_error)?;
            let mut result = json!({"text": transcript.text});
            if let Some(language) = transcript.language {
                result["language"] = json!(language);
            }
            Ok(result)
        }
        "media.read" => {
            // An image a tool saved, for a transcript: only what the model would be shown (a
            // private PNG of at most 5 MiB under ~/.gg/media, through no symlink).
            let p: ReadParams = params(p)?;
            let dir = media::media_dir(&settings.home);
            let png =
                tokio::task::spawn_blocking(move || crate::agent::images::load_png(&p.path, &dir))
                    .await
                    .map_err(failed)?;
            match png {
                Ok(bytes) => Ok(json!({"mimeType": "image/png", "data": base64(&bytes)})),
                Err(crate::agent::images::Unavailable::Gone) => {
                    Err(failed("the image is no longer available"))
                }
                Err(crate::agent::images::Unavailable::Refused(why)) => {
                    Err(RpcError::invalid_params(format!("not read: {why}")))
                }
            }
        }
        other => Err(RpcError::invalid_params(format!(
            "unknown media method {other}"
        ))),
    }
}

fn params<T: serde::de::DeserializeOwned>(p: Value) -> Result<T, RpcError> {
    serde_json::from_value(p).map_err(RpcError::invalid_params)
}
