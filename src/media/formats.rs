//! What the media endpoints accept and return: audio formats, image sizes, the kinds of image
//! bytes, and the length of a WAV recording.

use std::time::Duration;

/// The audio formats `/audio/speech` can answer in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioFormat {
    Mp3,
    Opus,
    Aac,
    Flac,
    Wav,
    /// Raw 24 kHz 16-bit little-endian mono samples (OpenAI's `pcm`).
    Pcm,
}

const AUDIO_FORMATS: [(&str, AudioFormat); 6] = [
    ("mp3", AudioFormat::Mp3),
    ("opus", AudioFormat::Opus),
    ("aac", AudioFormat::Aac),
    ("flac", AudioFormat::Flac),
    ("wav", AudioFormat::Wav),
    ("pcm", AudioFormat::Pcm),
];

impl AudioFormat {
    pub fn parse(text: &str) -> Result<AudioFormat, String> {
        let lower = text.trim().to_ascii_lowercase();
        AUDIO_FORMATS
            .iter()
            .find(|(name, _)| *name == lower)
            .map(|(_, format)| *format)
            .ok_or_else(|| {
                format!(
                    "unsupported audio format {text:?} (one of: mp3, opus, aac, flac, wav, pcm)"
                )
            })
    }

    /// The name the API uses, which is also the file extension.
    pub fn as_str(self) -> &'static str {
        AUDIO_FORMATS
            .iter()
            .find(|(_, format)| *format == self)
            .map_or("mp3", |(name, _)| name)
    }

    /// The format a file name's extension names (`a.wav` → wav).
    pub fn from_file_name(name: &str) -> Option<AudioFormat> {
        let (_, ext) = name.rsplit_once('.')?;
        AudioFormat::parse(ext).ok()
    }

    /// Whether `bytes` look like this format, where that can be told from the first bytes; an
    /// error page or JSON answered with a success status is refused rather than saved as audio.
    pub fn matches(self, bytes: &[u8]) -> bool {
        match self {
            AudioFormat::Wav => {
                bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WAVE"
            }
            AudioFormat::Flac => bytes.starts_with(b"fLaC"),
            AudioFormat::Opus => bytes.starts_with(b"OggS"),
            AudioFormat::Mp3 => {
                bytes.starts_with(b"ID3")
                    || (bytes.len() >= 2 && bytes[0] == 0xFF && bytes[1] & 0xE0 == 0xE0)
            }
            AudioFormat::Aac => bytes.len() >= 2 && bytes[0] == 0xFF && bytes[1] & 0xF0 == 0xF0,
            // Raw samples have no header: anything but text that looks like JSON.
            AudioFormat::Pcm => !bytes.starts_with(b"{"),
        }
    }

    /// How long the recording plays, where the format says it without decoding.
    pub fn duration(self, bytes: &[u8]) -> Option<Duration> {
        match self {
            AudioFormat::Wav => wav_duration(bytes),
            AudioFormat::Pcm => Some(Duration::from_secs_f64(bytes.len() as f64 / 48_000.0)),
            _ => None,
        }
    }
}

/// The file types `/audio/transcriptions` takes (OpenAI's list), by extension.
pub const TRANSCRIPTION_EXTENSIONS: [&str; 9] = [
    "flac", "m4a", "mp3", "mp4", "mpeg", "mpga", "ogg", "wav", "webm",
];

/// The upload's content type, when the file name's extension is one the endpoint takes.
pub fn transcription_content_type(file_name: &str) -> Result<&'static str, String> {
    let ext = file_name
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .unwrap_or_default();
    let known = TRANSCRIPTION_EXTENSIONS.join(", ");
    Ok(match ext.as_str() {
        "flac" => "audio/flac",
        "m4a" => "audio/mp4",
        "mp3" | "mpga" | "mpeg" => "audio/mpeg",
        "mp4" => "audio/mp4",
        "ogg" => "audio/ogg",
        "wav" => "audio/wav",
        "webm" => "audio/webm",
        "" => {
            return Err(format!(
                "{file_name:?} has no extension; the transcription endpoint takes {known}"
            ));
        }
        other => {
            return Err(format!(
                "unsupported audio format \".{other}\" ({file_name}); the transcription \
                 endpoint takes {known}"
            ));
        }
    })
}

/// `WIDTHxHEIGHT` (each 1–8192) or `auto`.
pub fn check_size(size: &str) -> Result<(), String> {
    if size == "auto" {
        return Ok(());
    }
    let bad = || format!("{size:?} is not WIDTHxHEIGHT (e.g. 1024x1024) or auto");
    let (w, h) = size.split_once('x').ok_or_else(bad)?;
    for side in [w, h] {
        if side.is_empty() || !side.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        match side.parse::<u32>() {
            Ok(1..=8192) => {}
            _ => return Err(bad()),
        }
    }
    Ok(())
}

/// The kinds of image the generation endpoint returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    Png,
    Jpeg,
    Webp,
}

impl ImageKind {
    pub fn sniff(bytes: &[u8]) -> Option<ImageKind> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(ImageKind::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(ImageKind::Jpeg)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(ImageKind::Webp)
        } else {
            None
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            ImageKind::Png => "png",
            ImageKind::Jpeg => "jpg",
            ImageKind::Webp => "webp",
        }
    }

    pub fn mime(self) -> &'static str {
        match self {
            ImageKind::Png => "image/png",
            ImageKind::Jpeg => "image/jpeg",
            ImageKind::Webp => "image/webp",
        }
    }
}

/// Width and height from a PNG's header.
pub fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    if png.len() < 24 || ImageKind::sniff(png) != Some(ImageKind::Png) || &png[12..16] != b"IHDR" {
        return None;
    }
    let w = u32::from_be_bytes(png[16..20].try_into().ok()?);
    let h = u32::from_be_bytes(png[20..24].try_into().ok()?);
    Some((w, h))
}

/// A WAV file's length: its `data` chunk over the byte rate of its `fmt ` chunk. A `data` size
/// that runs past the end (a streamed WAV says 0xFFFFFFFF) counts the bytes that are there.
pub fn wav_duration(bytes: &[u8]) -> Option<Duration> {
    if !AudioFormat::Wav.matches(bytes) {
        return None;
    }
    let le32 = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    let mut at = 12;
    let mut byte_rate = None;
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = le32(at + 4)? as usize;
        let body = at + 8;
        if id == b"fmt " {
            byte_rate = le32(body + 8);
        } else if id == b"data" {
            let rate = byte_rate.filter(|r| *r > 0)?;
            let len = size.min(bytes.len() - body);
            return Some(Duration::from_secs_f64(len as f64 / f64::from(rate)));
        }
        at = body.checked_add(size)?.checked_add(size % 2)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wav(rate: u32, samples: usize) -> Vec<u8> {
        let data = samples * 2;
        let mut b = b"RIFF".to_vec();
        b.extend_from_slice(&((36 + data) as u32).to_le_bytes());
        b.extend_from_slice(b"WAVEfmt ");
        b.extend_from_slice(&16u32.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes()); // PCM
        b.extend_from_slice(&1u16.to_le_bytes()); // mono
        b.extend_from_slice(&rate.to_le_bytes());
        b.extend_from_slice(&(rate * 2).to_le_bytes());
        b.extend_from_slice(&2u16.to_le_bytes());
        b.extend_from_slice(&16u16.to_le_bytes());
        b.extend_from_slice(b"data");
        b.extend_from_slice(&(data as u32).to_le_bytes());
        b.resize(b.len() + data, 0);
        b
    }

    #[test]
    fn wav_duration_reads_the_chunks() {
        let d = wav_duration(&wav(22050, 33075)).unwrap();
        assert!((d.as_secs_f64() - 1.5).abs() < 1e-9, "{d:?}");
        // A streamed WAV's "unknown" size counts what is there.
        let mut streamed = wav(16000, 16000);
        streamed[40..44].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(wav_duration(&streamed).unwrap().as_secs(), 1);
        assert_eq!(wav_duration(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(wav_duration(b"{\"error\":1}"), None);
    }

    #[test]
    fn formats_sizes_and_uploads() {
        assert_eq!(AudioFormat::parse("WAV").unwrap(), AudioFormat::Wav);
        assert!(
            AudioFormat::parse("ogg")
                .unwrap_err()
                .contains("unsupported audio format")
        );
        assert_eq!(
            AudioFormat::from_file_name("out/a.flac"),
            Some(AudioFormat::Flac)
        );
        assert_eq!(AudioFormat::from_file_name("a"), None);
        assert!(!AudioFormat::Wav.matches(b"{\"error\": {}}"));
        assert!(check_size("1024x1792").is_ok() && check_size("auto").is_ok());
        for bad in ["1024", "x1", "0x10", "10x-1", "10x10x10", "9000x10", " 1x1"] {
            assert!(check_size(bad).is_err(), "{bad}");
        }
        assert_eq!(transcription_content_type("a.WAV").unwrap(), "audio/wav");
        let err = transcription_content_type("notes.txt").unwrap_err();
        assert!(err.contains("unsupported audio format \".txt\""), "{err}");
        assert!(transcription_content_type("noext").is_err());
    }

    #[test]
    fn images_are_told_by_their_first_bytes() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        png.extend_from_slice(&640u32.to_be_bytes());
        png.extend_from_slice(&480u32.to_be_bytes());
        assert_eq!(ImageKind::sniff(&png), Some(ImageKind::Png));
        assert_eq!(png_size(&png), Some((640, 480)));
        assert_eq!(
            ImageKind::sniff(&[0xFF, 0xD8, 0xFF, 0xE0]),
            Some(ImageKind::Jpeg)
        );
        assert_eq!(ImageKind::sniff(b"<html>"), None);
    }
}
