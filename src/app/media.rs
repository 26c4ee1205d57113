//! The media settings a call runs with: the `media` section, the provider entries it names, and
//! the command line's `--model`, `--base-url` and `--api-key`.

use std::path::Path;

use super::config::{Config, Overrides};
use crate::media::{
    AudioFormat, Endpoint, ImageSettings, Media, SpeechSettings, TranscriptionSettings, config,
};

/// Which media call a command makes (its `--model` applies to that one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Image,
    Speech,
    Transcription,
}

/// Resolves every media call's endpoint. A call's provider is its section's `provider`, else the
/// chat model's (`--model` or `default`); `--base-url` and `--api-key` apply to the calls that go
/// to the chat model's provider, as they do to the chat itself.
///
/// `chosen`: the call a `gg media` command makes; its `--model` (`provider:model`, or a model of
/// the call's provider) replaces that call's provider and model, and the flags apply to it.
pub fn resolve(
    config: &Config,
    home: &Path,
    overrides: &Overrides,
    chosen: Option<Op>,
) -> Result<Media, String> {
    let media = &config.media;
    let chat_provider = |selection: &str| -> String {
        selection
            .split_once(':')
            .map_or(selection, |(p, _)| p)
            .to_string()
    };
    let chat = overrides
        .selection
        .as_deref()
        .filter(|_| chosen.is_none())
        .map_or_else(|| chat_provider(&config.default_selection), chat_provider);
    let endpoint = |op: Op,
                    key: &str,
                    provider: &Option<String>,
                    model: &Option<String>,
                    default_model: &str|
     -> Result<Endpoint, String> {
        let mut provider = provider.clone().unwrap_or_else(|| chat.clone());
        let mut model = model.clone().unwrap_or_else(|| default_model.to_string());
        let mut flags_apply = provider == chat;
        if chosen == Some(op) {
            if let Some(selection) = overrides.selection.as_deref() {
                match selection.split_once(':') {
                    Some((p, m)) if !p.is_empty() && !m.is_empty() => {
                        provider = p.to_string();
                        model = m.to_string();
                    }
                    Some(_) => return Err("--model: expected PROVIDER:MODEL or MODEL".to_string()),
                    None => model = selection.to_string(),
                }
            }
            flags_apply = true;
        }
        let none = Overrides::default();
        let (base_url, api_key) = config
            .provider_access(home, &provider, if flags_apply { overrides } else { &none })
            .map_err(|e| format!("media.{key}.provider: {e}"))?;
        Ok(Endpoint {
            provider,
            base_url,
            api_key,
            model,
        })
    };
    let speech_format = match &media.speech.format {
        Some(format) => AudioFormat::parse(format)?,
        None => AudioFormat::Mp3,
    };
    Ok(Media {
        image: ImageSettings {
            endpoint: endpoint(
                Op::Image,
                "image",
                &media.image.provider,
                &media.image.model,
                config::DEFAULT_IMAGE_MODEL,
            )?,
            size: media.image.size.clone(),
        },
        speech: SpeechSettings {
            endpoint: endpoint(
                Op::Speech,
                "speech",
                &media.speech.provider,
                &media.speech.model,
                config::DEFAULT_SPEECH_MODEL,
            )?,
            voice: media
                .speech
                .voice
                .clone()
                .unwrap_or_else(|| config::DEFAULT_VOICE.to_string()),
            format: speech_format,
        },
        transcription: TranscriptionSettings {
            endpoint: endpoint(
                Op::Transcription,
                "transcription",
                &media.transcription.provider,
                &media.transcription.model,
                config::DEFAULT_TRANSCRIPTION_MODEL,
            )?,
            language: media.transcription.language.clone(),
        },
        home: home.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::parse(text.as_bytes(), Path::new("/h/.gg/config.json")).unwrap()
    }

    #[test]
    fn without_a_section_the_chat_provider_and_openai_models_are_used() {
        let c = config(
            r#"{"default": "p:m", "providers": {"p": {"baseURL": "http://p/v1", "apiKey": "kp"}}}"#,
        );
        let m = resolve(&c, Path::new("/nonexistent"), &Overrides::default(), None).unwrap();
        assert_eq!(m.speech.endpoint.base_url, "http://p/v1");
        assert_eq!(m.speech.endpoint.api_key, "kp");
        assert_eq!(m.speech.endpoint.model, "tts-1");
        assert_eq!(m.speech.voice, "alloy");
        assert_eq!(m.speech.format, AudioFormat::Mp3);
        assert_eq!(m.transcription.endpoint.model, "whisper-1");
        assert_eq!(m.image.endpoint.model, "dall-e-3");
    }

    #[test]
    fn sections_name_providers_and_flags_apply_where_they_should() {
        let c = config(
            r#"{"default": "p:m",
                "providers": {"p": {"baseURL": "http://p/v1", "apiKey": "kp"},
                              "q": {"baseURL": "http://q/v1", "apiKey": "kq", "models": ["chat"]}},
                "media": {"speech": {"provider": "q", "model": "voice-1", "voice": "nova", "format": "wav"},
                          "transcription": {"language": "en"}}}"#,
        );
        let flags = Overrides {
            selection: None,
            api_key: Some("flag".into()),
            base_url: Some("http://flag/v1".into()),
        };
        let home = Path::new("/nonexistent");
        let m = resolve(&c, home, &flags, None).unwrap();
        // q is not the chat provider: the flags leave it alone (its model list is chat models).
        assert_eq!(m.speech.endpoint.base_url, "http://q/v1");
        assert_eq!(m.speech.endpoint.model, "voice-1");
        assert_eq!(m.speech.format, AudioFormat::Wav);
        assert_eq!(m.transcription.endpoint.base_url, "http://flag/v1");
        assert_eq!(m.transcription.language.as_deref(), Some("en"));
        // `gg media speak --model p:other --base-url …`: the command's call goes where it says.
        let chosen = Overrides {
            selection: Some("p:other".into()),
            ..flags.clone()
        };
        let m = resolve(&c, home, &chosen, Some(Op::Speech)).unwrap();
        assert_eq!(m.speech.endpoint.provider, "p");
        assert_eq!(m.speech.endpoint.model, "other");
        assert_eq!(m.speech.endpoint.api_key, "flag");
        let bare = Overrides {
            selection: Some("tts-hd".into()),
            ..Overrides::default()
        };
        let m = resolve(&c, home, &bare, Some(Op::Speech)).unwrap();
        assert_eq!(
            (
                m.speech.endpoint.provider.as_str(),
                m.speech.endpoint.model.as_str()
            ),
            ("q", "tts-hd")
        );
        let bad = config(
            r#"{"providers": {"p": {}}, "default": "p:m", "media": {"image": {"provider": "zz"}}}"#,
        );
        let err = resolve(&bad, home, &Overrides::default(), None).unwrap_err();
        assert_eq!(err, "media.image.provider: unknown provider \"zz\"");
    }

    #[test]
    fn bad_values_in_the_section_name_their_key() {
        for (text, needle) in [
            (
                r#"{"media": {"speech": {"format": "ogg"}}}"#,
                "media.speech.format",
            ),
            (
                r#"{"media": {"image": {"size": "big"}}}"#,
                "media.image.size",
            ),
            (
                r#"{"media": {"speech": {"voice": ""}}}"#,
                "media.speech.voice",
            ),
            (r#"{"media": {"image": {"size": 5}}}"#, "media.image.size"),
        ] {
            let err = Config::parse(text.as_bytes(), Path::new("/h/.gg/config.json")).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
        let c = config(r#"{"media": {"speech": {"voise": "x"}}}"#);
        assert_eq!(
            c.unknown_keys[0].to_string(),
            "unknown key media.speech.voise (did you mean media.speech.voice?)"
        );
    }
}
