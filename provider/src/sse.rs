//! Server-sent-events framing with a hard per-event size cap.
//!
//! Why not a crate: the maintained SSE crates (`eventsource-stream`, `sse-stream`) buffer a line
//! until its terminator arrives with no upper bound, so a hostile or broken server could make gg
//! hold an arbitrarily large partial event in memory; none of them exposes a limit. This framer is
//! small, incremental (it never buffers more than the current event) and enforces
//! [`MAX_EVENT_BYTES`] on the bytes it holds, including a line that has not ended yet.
//!
//! Accepted syntax (WHATWG SSE, plus the leniency OpenAI-compatible servers need): lines end in
//! `\n`, `\r\n` or a lone `\r`, also when the terminator is split across reads; a blank (or
//! whitespace-only) line dispatches the event; `:` starts a comment; `data:` lines (optionally
//! indented, one space after the colon stripped) are joined with `\n`; other fields (`event:`,
//! `id:`, `retry:`) are ignored.

use std::ops::ControlFlow;

/// Size cap of one SSE event: the `data` joined so far plus the raw line being read (whatever its
/// field) may never exceed it.
pub const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// One event exceeded the size cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventTooLarge;

/// Incremental SSE framer: feed it bytes as they arrive, get complete events' `data` back.
#[derive(Debug)]
pub struct SseFramer {
    max_event_bytes: usize,
    /// Bytes of the current line whose terminator has not arrived yet.
    partial_line: Vec<u8>,
    /// Joined `data` of the current event.
    data: Vec<u8>,
    has_data: bool,
    /// The previous byte was a `\r` line terminator: a following `\n` belongs to it.
    after_cr: bool,
}

impl Default for SseFramer {
    fn default() -> Self {
        Self::new(MAX_EVENT_BYTES)
    }
}

impl SseFramer {
    /// A framer with a custom cap (tests use small caps).
    pub fn new(max_event_bytes: usize) -> Self {
        SseFramer {
            max_event_bytes,
            partial_line: Vec::new(),
            data: Vec::new(),
            has_data: false,
            after_cr: false,
        }
    }

    /// Feeds bytes; `on_event` receives the data of each completed event and may stop the
    /// framing early with `ControlFlow::Break` (used for `[DONE]`), in which case the rest of
    /// `bytes` is not examined.
    pub fn feed<F>(
        &mut self,
        mut bytes: &[u8],
        on_event: &mut F,
    ) -> Result<ControlFlow<()>, EventTooLarge>
    where
        F: FnMut(&[u8]) -> ControlFlow<()>,
    {
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) {
            let terminator = bytes[end];
            let flow = if self.partial_line.is_empty() {
                self.process_line(&bytes[..end], on_event)?
            } else {
                self.check_cap(end)?;
                let mut line = std::mem::take(&mut self.partial_line);
                line.extend_from_slice(&bytes[..end]);
                let flow = self.process_line(&line, on_event);
                line.clear();
                self.partial_line = line;
                flow?
            };
            let mut next = end + 1;
            if terminator == b'\r' {
                match bytes.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            bytes = &bytes[next..];
            if flow.is_break() {
                return Ok(flow);
            }
        }
        if !bytes.is_empty() {
            self.check_cap(bytes.len())?;
            self.partial_line.extend_from_slice(bytes);
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Signals end of input. A final event whose lines all ended is dispatched even without the
    /// closing blank line (servers that close right after `data: [DONE]\n`); an unterminated
    /// last line is a torn write and is dropped.
    pub fn finish<F>(&mut self, on_event: &mut F) -> ControlFlow<()>
    where
        F: FnMut(&[u8]) -> ControlFlow<()>,
    {
        self.partial_line.clear();
        self.dispatch(on_event)
    }

    fn check_cap(&self, incoming: usize) -> Result<(), EventTooLarge> {
        let held = self.data.len() + self.partial_line.len();
        if held.saturating_add(incoming) > self.max_event_bytes {
            return Err(EventTooLarge);
        }
        Ok(())
    }

    fn dispatch<F>(&mut self, on_event: &mut F) -> ControlFlow<()>
    where
        F: FnMut(&[u8]) -> ControlFlow<()>,
    {
        if !self.has_data {
            return ControlFlow::Continue(());
        }
        self.has_data = false;
        let flow = on_event(&self.data);
        self.data.clear();
        flow
    }

    fn process_line<F>(
        &mut self,
        line: &[u8],
        on_event: &mut F,
    ) -> Result<ControlFlow<()>, EventTooLarge>
    where
        F: FnMut(&[u8]) -> ControlFlow<()>,
    {
        // Checked on the raw line so the outcome does not depend on how reads split it.
        if self.data.len().saturating_add(line.len()) > self.max_event_bytes {
            return Err(EventTooLarge);
        }
        let line = line.trim_ascii_start();
        if line.trim_ascii_end().is_empty() {
            return Ok(self.dispatch(on_event));
        }
        let Some(value) = line.strip_prefix(b"data:") else {
            // Comments and fields gg does not use.
            return Ok(ControlFlow::Continue(()));
        };
        let value = value.strip_prefix(b" ").unwrap_or(value);
        if self.has_data {
            self.data.push(b'\n');
        }
        self.data.extend_from_slice(value);
        self.has_data = true;
        Ok(ControlFlow::Continue(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(chunks: &[&[u8]], cap: usize) -> Result<Vec<String>, EventTooLarge> {
        let mut framer = SseFramer::new(cap);
        let mut events = Vec::new();
        let mut collect = |data: &[u8]| {
            events.push(String::from_utf8_lossy(data).into_owned());
            ControlFlow::Continue(())
        };
        for chunk in chunks {
            let _ = framer.feed(chunk, &mut collect)?;
        }
        let _ = framer.finish(&mut collect);
        Ok(events)
    }

    /// Name, reads, expected event data.
    type FramingCase = (
        &'static str,
        &'static [&'static [u8]],
        &'static [&'static str],
    );

    #[test]
    fn framing_table() {
        let cases: &[FramingCase] = &[
            ("lf", &[b"data: a\n\ndata: b\n\n"], &["a", "b"]),
            ("crlf", &[b"data: a\r\n\r\ndata: b\r\n\r\n"], &["a", "b"]),
            ("lone cr", &[b"data: a\r\rdata: b\r\r"], &["a", "b"]),
            (
                "crlf split between reads",
                &[b"data: a\r", b"\n", b"data: b\r\n\r\n"],
                &["a\nb"],
            ),
            (
                "comments ignored",
                &[b": keep-alive\n\ndata: x\n: mid\n\n"],
                &["x"],
            ),
            (
                "multi-line data joined",
                &[b"data: {\"a\":\ndata: 1}\n\n"],
                &["{\"a\":\n1}"],
            ),
            ("no space after colon", &[b"data:x\n\n"], &["x"]),
            ("only one space stripped", &[b"data:  x\n\n"], &[" x"]),
            (
                "other fields ignored",
                &[b"event: message\nid: 7\nretry: 5\ndata: x\n\n"],
                &["x"],
            ),
            ("indented data tolerated", &[b"  data: x\n\n"], &["x"]),
            (
                "whitespace line dispatches",
                &[b"data: x\n  \ndata: y\n\n"],
                &["x", "y"],
            ),
            (
                "final event without blank line",
                &[b"data: [DONE]\n"],
                &["[DONE]"],
            ),
            (
                "torn last line dropped",
                &[b"data: x\n\ndata: {\"tr"],
                &["x"],
            ),
            ("empty data kept", &[b"data:\n\n"], &[""]),
            ("blank lines without data", &[b"\n\n\r\n"], &[]),
        ];
        for (name, chunks, want) in cases {
            let got =
                frame(chunks, MAX_EVENT_BYTES).unwrap_or_else(|_| panic!("{name}: too large"));
            assert_eq!(got, *want, "{name}");
        }
    }

    #[test]
    fn cap_counts_the_event_data_plus_the_current_raw_line() {
        assert_eq!(
            frame(&[b"data: 12345\n\n"], 11),
            Ok(vec!["12345".to_string()])
        );
        assert_eq!(frame(&[b"data: 123456\n\n"], 11), Err(EventTooLarge));
        assert_eq!(
            frame(&[b"data: 123\ndata: 45\n\n"], 11),
            Ok(vec!["123\n45".to_string()])
        );
        assert_eq!(
            frame(&[b"data: 123\ndata: 456\n\n"], 11),
            Err(EventTooLarge)
        );
        // The cap resets with each event.
        assert_eq!(
            frame(&[b"data: 12345\n\ndata: 12345\n\n"], 11),
            Ok(vec!["12345".to_string(), "12345".to_string()])
        );
        // A line that never ends must not grow without bound, whatever it is.
        assert_eq!(frame(&[b"data: 1", b"2345", b"6"], 11), Err(EventTooLarge));
        assert_eq!(frame(&[b": a long comment line\n"], 11), Err(EventTooLarge));
    }

    #[test]
    fn break_stops_processing() {
        let mut framer = SseFramer::default();
        let mut seen = Vec::new();
        let flow = framer
            .feed(b"data: a\n\ndata: b\n\n", &mut |d: &[u8]| {
                seen.push(d.to_vec());
                ControlFlow::Break(())
            })
            .expect("small input");
        assert!(flow.is_break());
        assert_eq!(seen, vec![b"a".to_vec()]);
    }
}
