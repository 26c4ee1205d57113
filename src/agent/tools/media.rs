//! The media tools as the chain sees them: `image_generate`, `speak` and `transcribe` (offered
//! only with `"tools": {"media": true}`).
//!
//! Every call is assessed **normal**: each one spends money at a provider and sends it content
//! (a prompt, a text, a recording from the workspace), which is what the approval mode is for;
//! none changes the workspace (outputs go to `~/.gg/media`, 0600) or reaches anything but the
//! configured endpoint, so none is dangerous. `transcribe`'s path goes through the file tools'
//! confinement and deny-read rules when the call is described, the opened file is what is sent,
//! and the text that comes back is wrapped as untrusted content.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::agent::chain::{Assessment, Proposal, ProposeError, Tool};
use crate::agent::untrusted;
use crate::media::{self, AudioFormat, ImageRequest, Media, SpeechRequest};
use tools::registry::Outcome;

/// The three tools over one resolved configuration; `cwd` confines `transcribe`'s paths.
pub fn tools(media: Media, cwd: &Path) -> Vec<Arc<dyn Tool>> {
    let shared = Arc::new(Shared {
        media,
        cwd: cwd.to_path_buf(),
    });
    vec![
        Arc::new(ImageGenerate(Arc::clone(&shared))) as Arc<dyn Tool>,
        Arc::new(Speak(Arc::clone(&shared))) as Arc<dyn Tool>,
        Arc::new(Transcribe(shared)) as Arc<dyn Tool>,
    ]
}

struct Shared {
    media: Media,
    cwd: PathBuf,
}

fn normal_call<F, Fut>(
    name: &str,
    arguments: &str,
    summary: String,
    details: String,
    run: F,
) -> Proposal
where
    F: FnOnce(CancellationToken) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Outcome> + Send + 'static,
{
    Proposal::tool(
        Assessment::Normal,
        summary,
        details,
        format!("{name}\0{arguments}"),
        move |cancel| Box::pin(run(cancel)),
    )
}

fn short(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    tools::registry::clip_chars_marked(one_line, 60, "…")
}

struct ImageGenerate(Arc<Shared>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ImageArgs {
    prompt: String,
    size: Option<String>,
    n: Option<u32>,
}

impl Tool for ImageGenerate {
    fn name(&self) -> &str {
        "image_generate"
    }

    fn description(&self) -> &str {
        "Generate images from a text prompt with the configured image model. The images are \
         saved under ~/.gg/media/images; you get their paths and sizes (and see them when your \
         model accepts images). Costs money at the provider."
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "What to draw."},
                "size": {"type": "string", "description": "WIDTHxHEIGHT, e.g. 1024x1024"},
                "n": {"type": "integer", "minimum": 1, "maximum": media::MAX_IMAGES},
            },
            "required": ["prompt"],
            "additionalProperties": false,
        })
    }

    fn propose(&self, arguments: &str) -> Result<Proposal, ProposeError> {
        let args: ImageArgs = serde_json::from_str(arguments)
            .map_err(|e| ProposeError::arguments_for("image_generate", e))?;
        let request = ImageRequest {
            prompt: args.prompt,
            size: args.size,
            n: args.n.unwrap_or(1),
        };
        media::check_image(&request)?;
        let shared = Arc::clone(&self.0);
        let endpoint = &shared.media.image.endpoint;
        let summary = format!(
            "image_generate \"{}\" ×{} via {}",
            short(&request.prompt),
            request.n,
            endpoint.label()
        );
        let details = format!(
            "sends the prompt to {} at {} (costs money); saves {} image(s) under \
             ~/.gg/media/images\n\nprompt: {}",
            endpoint.label(),
            endpoint.base_url,
            request.n,
            request.prompt
        );
        Ok(normal_call(
            "image_generate",
            arguments,
            summary,
            details,
            move |cancel| async move {
                let images = match media::generate_image(&shared.media, &request, &cancel).await {
                    Ok(images) => images,
                    Err(e) => return Outcome::error(e.to_string()),
                };
                let mut lines = Vec::new();
                let mut first_png = None;
                for image in &images {
                    let home = shared.media.home.clone();
                    let bytes = image.bytes.clone();
                    let ext = image.kind.extension();
                    let saved = tokio::task::spawn_blocking(move || {
                        media::files::save_in_media(&home, "images", ext, &bytes)
                    })
                    .await
                    .unwrap_or_else(|e| Err(e.to_string()));
                    let path = match saved {
                        Ok(path) => path,
                        Err(e) => return Outcome::error(format!("media: saving an image: {e}")),
                    };
                    let size = image.dimensions.map_or_else(
                        || image.kind.mime().to_string(),
                        |(w, h)| format!("{w}x{h}"),
                    );
                    lines.push(format!("{} ({size})", path.display()));
                    if image.kind == media::ImageKind::Png && first_png.is_none() {
                        first_png = Some(path);
                    }
                }
                Outcome {
                    image: first_png,
                    ..Outcome::text(format!(
                        "generated {} image(s):\n{}",
                        lines.len(),
                        lines.join("\n")
                    ))
                }
            },
        ))
    }
}

struct Speak(Arc<Shared>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpeakArgs {
    text: String,
    voice: Option<String>,
    format: Option<String>,
}

impl Tool for Speak {
    fn name(&self) -> &str {
        "speak"
    }

    fn description(&self) -> &str {
        "Turn text into speech with the configured voice. The audio is saved under \
         ~/.gg/media/speech; you get its path and duration. Costs money at the provider."
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "text": {"type": "string", "description": "What to say."},
                "voice": {"type": "string", "description": "A voice of the provider (e.g. alloy)."},
                "format": {"type": "string", "enum": ["mp3", "opus", "aac", "flac", "wav", "pcm"]},
            },
            "required": ["text"],
            "additionalProperties": false,
        })
    }

    fn propose(&self, arguments: &str) -> Result<Proposal, ProposeError> {
        let args: SpeakArgs =
            serde_json::from_str(arguments).map_err(|e| ProposeError::arguments_for("speak", e))?;
        let format = args
            .format
            .as_deref()
            .map(AudioFormat::parse)
            .transpose()
            .map_err(ProposeError::BadValue)?;
        let request = SpeechRequest {
            text: args.text,
            voice: args.voice,
            format,
        };
        media::check_speech(&request)?;
        let shared = Arc::clone(&self.0);
        let endpoint = &shared.media.speech.endpoint;
        let summary = format!(
            "speak \"{}\" via {}",
            short(&request.text),
            endpoint.label()
        );
        let details = format!(
            "sends the text to {} at {} (costs money); saves the audio under \
             ~/.gg/media/speech\n\ntext: {}",
            endpoint.label(),
            endpoint.base_url,
            request.text
        );
        Ok(normal_call(
            "speak",
            arguments,
            summary,
            details,
            move |cancel| async move {
                let speech = match media::speak(&shared.media, &request, &cancel).await {
                    Ok(speech) => speech,
                    Err(e) => return Outcome::error(e.to_string()),
                };
                let home = shared.media.home.clone();
                let ext = speech.format.as_str();
                let audio = speech.audio;
                let saved = tokio::task::spawn_blocking(move || {
                    media::files::save_in_media(&home, "speech", ext, &audio)
                })
                .await
                .unwrap_or_else(|e| Err(e.to_string()));
                match saved {
                    Ok(path) => {
                        let length = speech
                            .duration
                            .map_or_else(String::new, |d| format!(", {}", media::seconds(d)));
                        Outcome::text(format!("saved speech: {} ({ext}{length})", path.display()))
                    }
                    Err(e) => Outcome::error(format!("media: saving the speech: {e}")),
                }
            },
        ))
    }
}

struct Transcribe(Arc<Shared>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TranscribeArgs {
    path: String,
}

impl Tool for Transcribe {
    fn name(&self) -> &str {
        "transcribe"
    }

    fn description(&self) -> &str {
        "Transcribe an audio file (flac, m4a, mp3, mp4, mpeg, mpga, ogg, wav, webm; at most 25 \
         MB) in the working directory or under ~/.gg/media. The file is sent to the configured \
         transcription model; costs money at the provider."
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The audio file."},
            },
            "required": ["path"],
            "additionalProperties": false,
        })
    }

    fn propose(&self, arguments: &str) -> Result<Proposal, ProposeError> {
        let args: TranscribeArgs = serde_json::from_str(arguments)
            .map_err(|e| ProposeError::arguments_for("transcribe", e))?;
        let shared = Arc::clone(&self.0);
        // Opened now, under the file tools' rules: what runs sends this file and no other.
        let opened = media::files::open_confined(&shared.cwd, &shared.media.home, &args.path)?;
        let endpoint = &shared.media.transcription.endpoint;
        let summary = format!("transcribe {} via {}", args.path, endpoint.label());
        let details = format!(
            "sends {} ({}) to {} at {} (costs money)",
            args.path,
            tools::store::human_size(opened.size),
            endpoint.label(),
            endpoint.base_url
        );
        let shown = args.path;
        Ok(normal_call(
            "transcribe",
            arguments,
            summary,
            details,
            move |cancel| async move {
                let upload = match tokio::task::spawn_blocking(move || opened.read()).await {
                    Ok(Ok(upload)) => upload,
                    Ok(Err(e)) => return Outcome::error(e.to_string()),
                    Err(e) => return Outcome::error(format!("media: {e}")),
                };
                match media::transcribe(&shared.media, &upload, &cancel).await {
                    Ok(transcript) => Outcome::text(format!(
                        "transcript of {shown}:\n{}",
                        untrusted::wrap(&format!("transcription of {shown}"), &transcript.text)
                    )),
                    Err(e) => Outcome::error(e.to_string()),
                }
            },
        ))
    }
}
