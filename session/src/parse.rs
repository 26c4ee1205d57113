//! Reading a session file into a [`Transcript`], detecting what repair it needs.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use super::entry::{CURRENT_VERSION, decode_entry, decode_header};
use super::error::{Result, SessionError};
use super::transcript::Transcript;

/// The state of the end of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tail {
    /// Ends with a complete line and `\n` (or is empty).
    Clean,
    /// The last line is complete but has no `\n`.
    MissingNewline,
    /// The last line is an unterminated fragment (a crash mid-write); it is not part of the
    /// transcript and [`Parsed::valid_len`] excludes it.
    Torn,
}

/// A parsed file.
pub(crate) struct Parsed {
    /// `None` when the file has no complete header line (empty, blank or a torn first line).
    pub transcript: Option<Transcript>,
    /// Length of the prefix that holds complete lines.
    pub valid_len: u64,
    pub tail: Tail,
    /// Version the file was written with (the transcript is already upgraded in memory).
    pub source_version: u32,
}

pub(crate) fn parse_file(path: &Path) -> Result<Parsed> {
    let file = File::open(path).map_err(|error| SessionError::io("open session", path, error))?;
    parse_reader(path, BufReader::with_capacity(1 << 20, file))
}

/// Parses a whole file. Only the final line may be damaged (then it is reported as
/// [`Tail::Torn`]); any other bad line fails with the file name and the 1-based line number.
pub(crate) fn parse_reader(path: &Path, mut reader: impl BufRead) -> Result<Parsed> {
    let mut transcript: Option<Transcript> = None;
    let mut source_version = CURRENT_VERSION;
    let mut valid_len: u64 = 0;
    let mut tail = Tail::Clean;
    let mut line_number = 0usize;
    let mut previous_id: Option<String> = None;
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        let read = reader
            .read_until(b'\n', &mut buffer)
            .map_err(|error| SessionError::io("read session", path, error))?;
        if read == 0 {
            break;
        }
        line_number += 1;
        let terminated = buffer.last() == Some(&b'\n');
        let line = buffer.trim_ascii();
        if line.is_empty() {
            valid_len += read as u64;
            tail = if terminated {
                Tail::Clean
            } else {
                Tail::MissingNewline
            };
            continue;
        }
        let torn_if_invalid = |reason: String| -> Result<Tail> {
            // An unterminated line that is not even JSON is what a crash mid-append leaves.
            if !terminated && serde_json::from_slice::<serde::de::IgnoredAny>(line).is_err() {
                Ok(Tail::Torn)
            } else {
                Err(SessionError::corrupt(path, line_number, reason))
            }
        };
        match transcript.as_mut() {
            None => match decode_header(line) {
                Ok(header) => {
                    source_version = header.version;
                    let mut upgraded = header;
                    upgraded.version = CURRENT_VERSION;
                    transcript = Some(Transcript::new(upgraded));
                }
                Err(reason) => {
                    tail = torn_if_invalid(reason)?;
                    break;
                }
            },
            Some(tree) => match decode_entry(line) {
                Ok(mut entry) => {
                    if source_version == 1 {
                        // v1 had no parents: the file order is the conversation.
                        entry.parent_id = previous_id.take();
                        previous_id = Some(entry.id.clone());
                    }
                    tree.push(entry)
                        .map_err(|reason| SessionError::corrupt(path, line_number, reason))?;
                }
                Err(reason) => {
                    tail = torn_if_invalid(reason)?;
                    break;
                }
            },
        }
        valid_len += read as u64;
        tail = if terminated {
            Tail::Clean
        } else {
            Tail::MissingNewline
        };
    }
    Ok(Parsed {
        transcript,
        valid_len,
        tail,
        source_version,
    })
}

/// Reads a session without modifying it. A torn final line is left out (not an error); a file
/// without a header or with a bad line elsewhere is an error naming the file and line.
pub fn load(path: &Path) -> Result<Transcript> {
    let parsed = parse_file(path)?;
    parsed
        .transcript
        .ok_or_else(|| SessionError::corrupt(path, 1, "missing session header"))
}

/// [`load`] over bytes already in memory; `name` is only used in error messages.
pub fn load_bytes(name: &Path, bytes: &[u8]) -> Result<Transcript> {
    let parsed = parse_reader(name, bytes)?;
    parsed
        .transcript
        .ok_or_else(|| SessionError::corrupt(name, 1, "missing session header"))
}
