//! `gg media image|speak|transcribe`: the media endpoints from the command line, for a person.
//! The global `--model`, `--base-url`, `--api-key` and `--api-key-file` choose where the call
//! goes, as they do for a prompt (see `app::media::resolve`).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;
use tokio_util::sync::CancellationToken;

use crate::app::config::{Config, Overrides};
use crate::app::media::{Op, resolve};
use crate::app::provider_flags::ProviderArgs;
use crate::media::{self, AudioFormat, ImageRequest, Media, SpeechRequest};

#[derive(Subcommand, Debug)]
pub enum MediaCommand {
    /// Generate an image from a prompt; saved under ~/.gg/media/images unless --out says where.
    Image {
        /// What to draw; several words are joined with spaces.
        #[arg(required = true, value_name = "PROMPT")]
        prompt: Vec<String>,
        /// Write the image here (0600) instead of under ~/.gg/media/images.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// WIDTHxHEIGHT (default: media.image.size, else the provider's).
        #[arg(long, value_name = "WxH")]
        size: Option<String>,
        /// How many images (1-4; with --out only 1).
        #[arg(long, value_name = "N", default_value_t = 1)]
        n: u32,
        /// Replace an existing --out file.
        #[arg(long)]
        force: bool,
    },
    /// Speak a text; saved under ~/.gg/media/speech unless --out says where.
    Speak {
        /// What to say; several words are joined with spaces.
        #[arg(required = true, value_name = "TEXT")]
        text: Vec<String>,
        /// Write the audio here (0600); its extension picks the format unless --format does.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// A voice of the provider (default: media.speech.voice, else alloy).
        #[arg(long)]
        voice: Option<String>,
        /// mp3, opus, aac, flac, wav or pcm (default: --out's extension, media.speech.format,
        /// else mp3).
        #[arg(long)]
        format: Option<String>,
        /// Replace an existing --out file.
        #[arg(long)]
        force: bool,
    },
    /// Transcribe an audio file (flac, m4a, mp3, mp4, mpeg, mpga, ogg, wav, webm; at most 25 MB).
    Transcribe {
        file: PathBuf,
        /// Print {"file", "text", "language"?, "provider", "model"} as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: MediaCommand, provider: &ProviderArgs) -> ExitCode {
    let runtime = match crate::app::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("gg media: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(media_command(command, provider)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The library's messages start with "media:" for the other callers; once is enough.
            let e = e.strip_prefix("media: ").unwrap_or(&e);
            eprintln!("gg media: {}", crate::display::visible(e));
            ExitCode::from(1)
        }
    }
}

fn settings(provider: &ProviderArgs, op: Op) -> Result<Media, String> {
    let home = tools::security::home_dir();
    let config = Config::load(&home)?;
    let overrides = Overrides {
        selection: provider.model.clone(),
        api_key: provider.api_key()?,
        base_url: provider.base_url.clone(),
    };
    resolve(&config, &home, &overrides, Some(op))
}

async fn media_command(command: MediaCommand, provider: &ProviderArgs) -> Result<(), String> {
    let cancel = CancellationToken::new();
    match command {
        MediaCommand::Image {
            prompt,
            out,
            size,
            n,
            force,
        } => {
            if out.is_some() && n != 1 {
                return Err("--out takes one image; leave out --n or --out".to_string());
            }
            let request = ImageRequest {
                prompt: prompt.join(" "),
                size,
                n,
            };
            media::check_image(&request).map_err(|e| e.to_string())?;
            let media = settings(provider, Op::Image)?;
            let images = with_progress(
                &format!("generating with {}", media.image.endpoint.label()),
                media::generate_image(&media, &request, &cancel),
            )
            .await
            .map_err(|e| e.to_string())?;
            for image in images {
                let path = save(
                    &media,
                    out.clone(),
                    "images",
                    image.kind.extension(),
                    &image.bytes,
                    force,
                )?;
                let size = image.dimensions.map_or_else(
                    || image.kind.mime().to_string(),
                    |(w, h)| format!("{w}x{h}"),
                );
                println!(
                    "{} ({size})",
                    crate::display::visible_inline(&path.display().to_string())
                );
            }
            Ok(())
        }
        MediaCommand::Speak {
            text,
            out,
            voice,
            format,
            force,
        } => {
            let format = speech_format(format.as_deref(), out.as_ref())?;
            let request = SpeechRequest {
                text: text.join(" "),
                voice,
                format,
            };
            media::check_speech(&request).map_err(|e| e.to_string())?;
            let media = settings(provider, Op::Speech)?;
            let speech = with_progress(
                &format!("speaking with {}", media.speech.endpoint.label()),
                media::speak(&media, &request, &cancel),
            )
            .await
            .map_err(|e| e.to_string())?;
            let ext = speech.format.as_str();
            let path = save(&media, out, "speech", ext, &speech.audio, force)?;
            let length = speech
                .duration
                .map_or_else(String::new, |d| format!(", {}", media::seconds(d)));
            println!(
                "{} ({ext}{length})",
                crate::display::visible_inline(&path.display().to_string())
            );
            Ok(())
        }
        MediaCommand::Transcribe { file, json } => {
            let opened = media::files::open_named(&file).map_err(|e| e.to_string())?;
            let media = settings(provider, Op::Transcription)?;
            let upload = opened.read().map_err(|e| e.to_string())?;
            let endpoint = media.transcription.endpoint.clone();
            let transcript = with_progress(
                &format!("transcribing with {}", endpoint.label()),
                media::transcribe(&media, &upload, &cancel),
            )
            .await
            .map_err(|e| e.to_string())?;
            if json {
                let mut value = serde_json::json!({
                    "file": file.display().to_string(),
                    "text": transcript.text,
                    "provider": endpoint.provider,
                    "model": endpoint.model,
                });
                if let Some(language) = transcript.language {
                    value["language"] = serde_json::json!(language);
                }
                println!("{value}");
            } else {
                println!("{}", crate::display::visible(&transcript.text));
            }
            Ok(())
        }
    }
}

/// `--format`, else `--out`'s extension when it names a format; the two must agree.
fn speech_format(
    format: Option<&str>,
    out: Option<&PathBuf>,
) -> Result<Option<AudioFormat>, String> {
    let given = format.map(AudioFormat::parse).transpose()?;
    let named = out
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .and_then(AudioFormat::from_file_name);
    match (given, named) {
        (Some(given), Some(named)) if given != named => Err(format!(
            "--format {} does not match --out's extension .{}",
            given.as_str(),
            named.as_str()
        )),
        (Some(given), _) => Ok(Some(given)),
        (None, named) => Ok(named),
    }
}

fn save(
    media: &Media,
    out: Option<PathBuf>,
    kind: &str,
    ext: &str,
    bytes: &[u8],
    force: bool,
) -> Result<PathBuf, String> {
    match out {
        Some(out) => media::files::write_out(&out, bytes, force).map(|()| out),
        None => media::files::save_in_media(&media.home, kind, ext, bytes),
    }
}

/// A spinner with the elapsed time on a terminal (stderr); nothing in a pipe.
async fn with_progress<T>(what: &str, work: impl std::future::Future<Output = T>) -> T {
    if !std::io::stderr().is_terminal() {
        return work.await;
    }
    let spinner = indicatif::ProgressBar::new_spinner();
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
        spinner.set_style(style);
    }
    spinner.set_message(what.to_string());
    spinner.enable_steady_tick(Duration::from_millis(120));
    let result = work.await;
    spinner.finish_and_clear();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_comes_from_the_flag_or_the_out_extension() {
        let wav = PathBuf::from("a.wav");
        let odd = PathBuf::from("a.audio");
        assert_eq!(
            speech_format(None, Some(&wav)).unwrap(),
            Some(AudioFormat::Wav)
        );
        assert_eq!(
            speech_format(Some("flac"), Some(&odd)).unwrap(),
            Some(AudioFormat::Flac)
        );
        assert_eq!(speech_format(None, Some(&odd)).unwrap(), None);
        assert!(
            speech_format(Some("mp3"), Some(&wav))
                .unwrap_err()
                .contains("does not match")
        );
        assert!(
            speech_format(Some("ogg"), None)
                .unwrap_err()
                .contains("unsupported audio format")
        );
    }
}
