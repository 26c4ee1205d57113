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

/// One line of a session file as read, before it is decoded.
pub(crate) struct RawLine<'b> {
    /// 1-based, for error messages.
    pub number: usize,
    /// Where the line starts in the file.
    pub offset: u64,
    /// Bytes read for it, its `\n` included.
    pub len: usize,
    /// Whether it ends with `\n`.
    pub terminated: bool,
    /// The line without the ASCII white space around it (empty for a blank line).
    pub text: &'b [u8],
}

impl RawLine<'_> {
    /// `Ok` when the line is what a crash mid-append leaves (unterminated, and not even JSON),
    /// which a reader leaves out; otherwise the error naming the file and line for `reason`.
    pub fn torn_or_corrupt(&self, path: &Path, reason: String) -> Result<()> {
        if !self.terminated && serde_json::from_slice::<serde::de::IgnoredAny>(self.text).is_err() {
            Ok(())
        } else {
            Err(SessionError::corrupt(path, self.number, reason))
        }
    }
}

/// Reads a session file line by line, the same way for the full parse and for the light pass of
/// a page ([`super::page`]): one buffer reused for every line.
pub(crate) struct LineReader<'p, R> {
    path: &'p Path,
    reader: R,
    buffer: Vec<u8>,
    number: usize,
    offset: u64,
}

impl<'p, R: BufRead> LineReader<'p, R> {
    /// `path` only names the file in errors.
    pub fn new(path: &'p Path, reader: R) -> Self {
        LineReader {
            path,
            reader,
            buffer: Vec::new(),
            number: 0,
            offset: 0,
        }
    }

    /// The next line, `None` at the end of the file.
    pub fn next_line(&mut self) -> Result<Option<RawLine<'_>>> {
        self.buffer.clear();
        let read = self
            .reader
            .read_until(b'\n', &mut self.buffer)
            .map_err(|error| SessionError::io("read session", self.path, error))?;
        if read == 0 {
            return Ok(None);
        }
        self.number += 1;
        let offset = self.offset;
        self.offset += read as u64;
        Ok(Some(RawLine {
            number: self.number,
            offset,
            len: read,
            terminated: self.buffer.last() == Some(&b'\n'),
            text: self.buffer.trim_ascii(),
        }))
    }
}

pub(crate) fn parse_file(path: &Path) -> Result<Parsed> {
    let file = File::open(path).map_err(|error| SessionError::io("open session", path, error))?;
    parse_reader(path, BufReader::with_capacity(1 << 20, file))
}

/// Parses a whole file. Only the final line may be damaged (then it is reported as
/// [`Tail::Torn`]); any other bad line fails with the file name and the 1-based line number.
pub(crate) fn parse_reader(path: &Path, reader: impl BufRead) -> Result<Parsed> {
    let mut transcript: Option<Transcript> = None;
    let mut source_version = CURRENT_VERSION;
    let mut valid_len: u64 = 0;
    let mut tail = Tail::Clean;
    let mut previous_id: Option<String> = None;
    let mut lines = LineReader::new(path, reader);
    while let Some(line) = lines.next_line()? {
        let read = line.len;
        let terminated = line.terminated;
        if line.text.is_empty() {
            valid_len += read as u64;
            tail = if terminated {
                Tail::Clean
            } else {
                Tail::MissingNewline
            };
            continue;
        }
        match transcript.as_mut() {
            None => match decode_header(line.text) {
                Ok(header) => {
                    source_version = header.version;
                    let mut upgraded = header;
                    upgraded.version = CURRENT_VERSION;
                    transcript = Some(Transcript::new(upgraded));
                }
                Err(reason) => {
                    line.torn_or_corrupt(path, reason)?;
                    tail = Tail::Torn;
                    break;
                }
            },
            Some(tree) => match decode_entry(line.text) {
                Ok(mut entry) => {
                    if source_version == 1 {
                        // v1 had no parents: the file order is the conversation.
                        entry.parent_id = previous_id.take();
                        previous_id = Some(entry.id.clone());
                    }
                    tree.push(entry)
                        .map_err(|reason| SessionError::corrupt(path, line.number, reason))?;
                }
                Err(reason) => {
                    line.torn_or_corrupt(path, reason)?;
                    tail = Tail::Torn;
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
