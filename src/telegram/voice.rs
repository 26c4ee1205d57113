//! Voice messages: a voice note or an audio file from an allowed chat is fetched (`getFile`, then
//! the file URL, which holds the token: see [`Client::download`]), capped in size, and transcribed
//! through media's transcription; the transcript is the turn's prompt, quoted back to the chat
//! first. With `"replyVoice": true` the answer is also spoken (media's `speak`) and sent after the
//! text reply.
//!
//! The audio is held in memory only and written nowhere: it is remote input, and the transcript
//! the session records is what stays of it.

use tokio_util::sync::CancellationToken;

use super::api::{AttachedFile, Client};
use crate::media::{self, AudioFormat, AudioUpload, Media, Speech, SpeechRequest};
use tools::store::human_size;

/// Telegram's limit on a file a bot downloads (the Bot API server's `20 << 20`).
pub const TELEGRAM_DOWNLOAD_LIMIT: u64 = 20 * 1024 * 1024;
/// The most audio fetched: Telegram's limit, and never more than the transcription endpoint takes.
pub const DOWNLOAD_LIMIT: u64 = if TELEGRAM_DOWNLOAD_LIMIT < media::MAX_UPLOAD_BYTES {
    TELEGRAM_DOWNLOAD_LIMIT
} else {
    media::MAX_UPLOAD_BYTES
};

/// The refusal of a file Telegram already says is over [`DOWNLOAD_LIMIT`]: nothing is fetched.
pub fn refuse_oversize(file: &AttachedFile) -> Option<String> {
    file.file_size
        .filter(|size| *size > DOWNLOAD_LIMIT)
        .map(too_large)
}

fn too_large(size: u64) -> String {
    format!(
        "This voice message is {}; gg takes voice and audio up to {} (Telegram's download limit \
         for bots). Nothing was run.",
        human_size(size),
        human_size(DOWNLOAD_LIMIT)
    )
}

/// Fetches the file and transcribes it. `Ok` is a transcript with words in it; `Err` is what to
/// tell the chat (the token redacted), and then nothing runs.
pub async fn transcribe(
    client: &Client,
    media: &Media,
    file: &AttachedFile,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let fetch_failed = |e: String| {
        format!(
            "Could not fetch the voice message ({}). Nothing was run.",
            client.redact(&e)
        )
    };
    let remote = client
        .get_file(&file.file_id)
        .await
        .map_err(|e| fetch_failed(e.to_string()))?;
    if let Some(size) = remote.file_size.filter(|size| *size > DOWNLOAD_LIMIT) {
        return Err(too_large(size));
    }
    let path = remote
        .file_path
        .ok_or_else(|| fetch_failed("Telegram gave no file path to download".to_string()))?;
    let bytes = client
        .download(&path, DOWNLOAD_LIMIT)
        .await
        .map_err(|e| fetch_failed(e.to_string()))?;
    let file_name = upload_name(&bytes, &[Some(path.as_str()), file.file_name.as_deref()])
        .ok_or_else(|| {
            format!(
                "Could not transcribe the voice message: its audio is not in a format the \
                 transcription endpoint takes ({}). Nothing was run.",
                media::formats::TRANSCRIPTION_EXTENSIONS.join(", ")
            )
        })?;
    tracing::info!(
        bytes = bytes.len(),
        file_name = %file_name,
        "telegram: transcribing a voice message"
    );
    let transcript = media::transcribe(media, &AudioUpload { file_name, bytes }, cancel)
        .await
        .map_err(|e| {
            format!(
                "Could not transcribe the voice message ({}). Nothing was run.",
                client.redact(&e.to_string())
            )
        })?;
    if transcript.text.trim().is_empty() {
        return Err(
            "No words could be made out in the voice message. Nothing was run: please say it \
             again or send it as text."
                .to_string(),
        );
    }
    Ok(transcript.text)
}

/// The name the audio is uploaded under: its extension is how the transcription endpoint tells
/// the format. The bytes decide where they can (Telegram's voice notes are OGG/Opus named
/// `.oga`, which the endpoint does not list), else the first of `names` with an extension the
/// endpoint takes (`.oga` and `.opus` counted as the `.ogg` they are).
fn upload_name(bytes: &[u8], names: &[Option<&str>]) -> Option<String> {
    if let Some(ext) = sniff_audio(bytes) {
        return Some(format!("voice.{ext}"));
    }
    names.iter().flatten().find_map(|name| {
        let (_, ext) = name.rsplit_once('.')?;
        let ext = match ext.to_ascii_lowercase().as_str() {
            "oga" | "opus" => "ogg".to_string(),
            other => other.to_string(),
        };
        media::formats::TRANSCRIPTION_EXTENSIONS
            .contains(&ext.as_str())
            .then(|| format!("voice.{ext}"))
    })
}

/// The transcription extension of audio whose first bytes say what it is.
fn sniff_audio(bytes: &[u8]) -> Option<&'static str> {
    if AudioFormat::Opus.matches(bytes) {
        Some("ogg")
    } else if AudioFormat::Wav.matches(bytes) {
        Some("wav")
    } else if AudioFormat::Flac.matches(bytes) {
        Some("flac")
    } else if bytes.get(4..8) == Some(b"ftyp") {
        Some("m4a")
    } else if bytes.starts_with(&[0x1A, 0x45, 0xDF, 0xA3]) {
        Some("webm")
    } else if AudioFormat::Mp3.matches(bytes) {
        Some("mp3")
    } else {
        None
    }
}

/// Speaks `answer` and sends it to the chat.
pub async fn reply(
    client: &Client,
    media: &Media,
    chat: i64,
    answer: &str,
    cancel: &CancellationToken,
) -> Result<(), String> {
    let text = speech_text(answer);
    if text.is_empty() {
        return Ok(());
    }
    let request = SpeechRequest {
        text,
        voice: None,
        format: None,
    };
    let speech = media::speak(media, &request, cancel)
        .await
        .map_err(|e| e.to_string())?;
    let upload = Upload::of(speech);
    client
        .send_audio_file(
            upload.method,
            chat,
            upload.field,
            &upload.file_name,
            upload.content_type,
            &upload.audio,
        )
        .await
        .map(|_| ())
        .map_err(|e| client.redact(&e.to_string()))
}

/// What is spoken of an answer: all of it up to the speech endpoint's limit, else its start cut
/// after the last whitespace (the whole answer is in the text reply).
fn speech_text(answer: &str) -> String {
    let answer = answer.trim();
    let Some((limit, _)) = answer.char_indices().nth(media::MAX_TEXT_CHARS) else {
        return answer.to_string();
    };
    let start = &answer[..limit];
    let cut = start
        .rfind(char::is_whitespace)
        .filter(|at| *at > limit / 2)
        .unwrap_or(limit);
    start[..cut].trim_end().to_string()
}

/// A spoken answer as the Bot API takes it.
#[derive(Debug, PartialEq, Eq)]
struct Upload {
    method: &'static str,
    field: &'static str,
    file_name: String,
    content_type: &'static str,
    audio: Vec<u8>,
}

impl Upload {
    /// OGG/Opus is what Telegram plays as a voice note (`sendVoice`); the other formats go as an
    /// audio file (`sendAudio`). Raw PCM has no header a player could read: it is given the WAV
    /// header its fixed shape implies.
    fn of(speech: Speech) -> Upload {
        let (method, field) = match speech.format {
            AudioFormat::Opus => ("sendVoice", "voice"),
            _ => ("sendAudio", "audio"),
        };
        let (ext, content_type, audio) = match speech.format {
            AudioFormat::Opus => ("ogg", "audio/ogg", speech.audio),
            AudioFormat::Mp3 => ("mp3", "audio/mpeg", speech.audio),
            AudioFormat::Aac => ("aac", "audio/aac", speech.audio),
            AudioFormat::Flac => ("flac", "audio/flac", speech.audio),
            AudioFormat::Wav => ("wav", "audio/wav", speech.audio),
            AudioFormat::Pcm => ("wav", "audio/wav", pcm_to_wav(&speech.audio)),
        };
        Upload {
            method,
            field,
            file_name: format!("answer.{ext}"),
            content_type,
            audio,
        }
    }
}

/// OpenAI's `pcm` (24 kHz, 16-bit little-endian, mono) in a WAV file.
fn pcm_to_wav(samples: &[u8]) -> Vec<u8> {
    const RATE: u32 = 24_000;
    // A WAV file's sizes are 32-bit; speech of at most 4096 characters is far below that.
    let data = u32::try_from(samples.len()).unwrap_or(u32::MAX - 36) & !1;
    let mut wav = Vec::with_capacity(44 + data as usize);
    wav.extend_from_slice(b"RIFF");
    wav.extend_from_slice(&(36 + data).to_le_bytes());
    wav.extend_from_slice(b"WAVEfmt ");
    wav.extend_from_slice(&16u32.to_le_bytes());
    wav.extend_from_slice(&1u16.to_le_bytes()); // PCM
    wav.extend_from_slice(&1u16.to_le_bytes()); // mono
    wav.extend_from_slice(&RATE.to_le_bytes());
    wav.extend_from_slice(&(RATE * 2).to_le_bytes());
    wav.extend_from_slice(&2u16.to_le_bytes());
    wav.extend_from_slice(&16u16.to_le_bytes());
    wav.extend_from_slice(b"data");
    wav.extend_from_slice(&data.to_le_bytes());
    wav.extend_from_slice(&samples[..data as usize]);
    wav
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attached(size: Option<u64>) -> AttachedFile {
        AttachedFile {
            file_id: "f".into(),
            file_size: size,
            mime_type: None,
            file_name: None,
        }
    }

    #[test]
    fn the_limit_is_telegrams_and_an_announced_oversize_is_refused() {
        assert_eq!(DOWNLOAD_LIMIT, 20 * 1024 * 1024);
        assert_eq!(refuse_oversize(&attached(Some(DOWNLOAD_LIMIT))), None);
        assert_eq!(refuse_oversize(&attached(None)), None);
        let refusal = refuse_oversize(&attached(Some(21 * 1024 * 1024))).unwrap();
        assert!(
            refusal
                .starts_with("This voice message is 21 MiB; gg takes voice and audio up to 20 MiB"),
            "{refusal}"
        );
    }

    #[test]
    fn the_upload_name_follows_the_bytes_then_the_names() {
        assert_eq!(
            upload_name(b"OggS\0\x02", &[Some("voice/file_1.oga")]).as_deref(),
            Some("voice.ogg")
        );
        assert_eq!(
            upload_name(b"RIFF\0\0\0\0WAVEfmt ", &[Some("voice/file_1.oga")]).as_deref(),
            Some("voice.wav")
        );
        assert_eq!(
            upload_name(b"\0\0\0\x20ftypM4A ", &[None]).as_deref(),
            Some("voice.m4a")
        );
        assert_eq!(
            upload_name(b"????", &[Some("voice/file_1.oga")]).as_deref(),
            Some("voice.ogg")
        );
        assert_eq!(
            upload_name(b"????", &[Some("music/file_2"), Some("Song.MP3")]).as_deref(),
            Some("voice.mp3")
        );
        assert_eq!(upload_name(b"????", &[Some("doc/file.txt"), None]), None);
    }

    #[test]
    fn opus_is_a_voice_note_and_the_rest_audio_files() {
        let speech = |format, audio: &[u8]| Speech {
            audio: audio.to_vec(),
            format,
            duration: None,
        };
        let voice = Upload::of(speech(AudioFormat::Opus, b"OggS"));
        assert_eq!(
            (voice.method, voice.field, voice.file_name.as_str()),
            ("sendVoice", "voice", "answer.ogg")
        );
        assert_eq!(voice.content_type, "audio/ogg");
        let wav = Upload::of(speech(AudioFormat::Wav, b"RIFF"));
        assert_eq!(
            (wav.method, wav.field, wav.file_name.as_str(), wav.audio),
            ("sendAudio", "audio", "answer.wav", b"RIFF".to_vec())
        );
        assert_eq!(
            Upload::of(speech(AudioFormat::Mp3, b"ID3")).content_type,
            "audio/mpeg"
        );
        // Raw PCM gets a WAV header: one second of samples plays one second.
        let pcm = Upload::of(speech(AudioFormat::Pcm, &vec![0; 48_000]));
        assert_eq!(pcm.file_name, "answer.wav");
        let length = media::formats::wav_duration(&pcm.audio).unwrap();
        assert_eq!(length.as_secs_f64(), 1.0);
    }

    #[test]
    fn a_long_answer_is_spoken_up_to_the_limit_at_a_word() {
        assert_eq!(speech_text("  short answer \n"), "short answer");
        let long = "word ".repeat(1000);
        let spoken = speech_text(&long);
        assert!(spoken.chars().count() <= media::MAX_TEXT_CHARS);
        assert!(spoken.ends_with("word"), "{}", &spoken[spoken.len() - 10..]);
        let unbroken = "x".repeat(5000);
        assert_eq!(speech_text(&unbroken).len(), media::MAX_TEXT_CHARS);
    }
}
