//! The `"media"` section of `config.json`, and the settings one media call runs with once the
//! section, the providers and the command line are put together ([`Media`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::formats::AudioFormat;

/// OpenAI's models and voice, used when the section does not name others.
pub const DEFAULT_IMAGE_MODEL: &str = "dall-e-3";
pub const DEFAULT_SPEECH_MODEL: &str = "tts-1";
pub const DEFAULT_VOICE: &str = "alloy";
pub const DEFAULT_TRANSCRIPTION_MODEL: &str = "whisper-1";

/// `"media": {"image": …, "speech": …, "transcription": …}`. Every key is optional; `provider`
/// names an entry of `providers` (default: the provider of the chat model).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct MediaConfig {
    pub image: ImageConfig,
    pub speech: SpeechConfig,
    pub transcription: TranscriptionConfig,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct ImageConfig {
    pub provider: Option<String>,
    pub model: Option<String>,
    /// `WIDTHxHEIGHT` or `auto`; absent: the provider's default.
    pub size: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct SpeechConfig {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub voice: Option<String>,
    /// `mp3` (default), `opus`, `aac`, `flac`, `wav` or `pcm`.
    pub format: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default)]
pub struct TranscriptionConfig {
    pub provider: Option<String>,
    pub model: Option<String>,
    /// ISO-639-1 code (`en`) sent as a hint; absent: the provider detects it.
    pub language: Option<String>,
}

impl MediaConfig {
    /// Refuses values no call could use, naming the key.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(size) = &self.image.size {
            super::formats::check_size(size).map_err(|e| format!("media.image.size: {e}"))?;
        }
        if let Some(format) = &self.speech.format {
            AudioFormat::parse(format).map_err(|e| format!("media.speech.format: {e}"))?;
        }
        for (key, value) in [
            ("media.image.provider", &self.image.provider),
            ("media.image.model", &self.image.model),
            ("media.speech.provider", &self.speech.provider),
            ("media.speech.model", &self.speech.model),
            ("media.speech.voice", &self.speech.voice),
            ("media.transcription.provider", &self.transcription.provider),
            ("media.transcription.model", &self.transcription.model),
            ("media.transcription.language", &self.transcription.language),
        ] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                return Err(format!(
                    "{key} must not be empty (leave it out for the default)"
                ));
            }
        }
        Ok(())
    }
}

/// Where one kind of call goes.
#[derive(Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The provider entry's name, for messages.
    pub provider: String,
    /// Ends before `/images/…` or `/audio/…` (e.g. `https://api.openai.com/v1`).
    pub base_url: String,
    /// Empty: no `Authorization` header (a local server).
    pub api_key: String,
    pub model: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs and panics.
        f.debug_struct("Endpoint")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// `provider (model)`: how approvals and messages name it.
    pub fn label(&self) -> String {
        format!("{} ({})", self.provider, self.model)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSettings {
    pub endpoint: Endpoint,
    pub size: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeechSettings {
    pub endpoint: Endpoint,
    pub voice: String,
    pub format: AudioFormat,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptionSettings {
    pub endpoint: Endpoint,
    pub language: Option<String>,
}

/// Everything a media call needs, resolved from the configuration and the command line
/// (`gg::app::media::resolve`): what Telegram's voice messages and ggd call with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Media {
    pub image: ImageSettings,
    pub speech: SpeechSettings,
    pub transcription: TranscriptionSettings,
    /// The home directory: outputs go to `<home>/.gg/media/{images,speech}`.
    pub home: PathBuf,
}

impl Media {
    /// `~/.gg/media`.
    pub fn dir(&self) -> PathBuf {
        media_dir(&self.home)
    }
}

/// `<home>/.gg/media`.
pub fn media_dir(home: &Path) -> PathBuf {
    home.join(".gg").join("media")
}
