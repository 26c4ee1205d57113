//! The interactive prompt's line editor (rustyline), used when stdin and stderr are terminals.
//!
//! One thread owns the terminal's input and reads only when asked: a prompt line through the
//! editor (raw mode: editing, history, Ctrl+R, Tab, bracketed paste, Alt+Enter or Ctrl+J for a
//! newline), or an approval's answer as a plain line (cooked mode, so a Ctrl+C there is the
//! usual SIGINT that cancels the turn). The two never read at once, so they never fight over
//! stdin. An answer nobody waits for any more (the turn was cancelled) stops being read.
//!
//! rustyline rather than reedline: it adds 7 small crates to the build (nix, unicode width
//! and segmentation, a radix trie for key bindings), where reedline brings crossterm and its
//! own tree, and gg's line-oriented mode needs nothing reedline has beyond it.

use std::path::PathBuf;
use std::sync::mpsc;

use rustyline::completion::Completer;
use rustyline::config::{Behavior, CompletionType, Config};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::{DefaultHistory, History};
use rustyline::validate::Validator;
use rustyline::{
    Cmd, ConditionalEventHandler, Event, EventContext, EventHandler, KeyCode, KeyEvent, Modifiers,
    Movement, RepeatCount,
};
use tokio::sync::oneshot;

/// What the prompt read.
#[derive(Debug, PartialEq, Eq)]
pub enum Read {
    Line(String),
    /// Ctrl+C on an empty line.
    Interrupted,
    /// Ctrl+D on an empty line, or the terminal went away.
    Eof,
}

enum Request {
    Prompt {
        prompt: String,
        reply: oneshot::Sender<Read>,
    },
    Answer {
        reply: oneshot::Sender<Option<String>>,
    },
}

/// The handle of the reader thread.
#[derive(Clone)]
pub struct LineEditor {
    requests: mpsc::Sender<Request>,
}

impl LineEditor {
    /// Starts the editor with the history of `history_file` (created on the first entry).
    /// Returns the editor and what could not be done about the history (shown as notes).
    pub fn start(history_file: PathBuf) -> Result<(LineEditor, Vec<String>), String> {
        let config = Config::builder()
            // The terminal itself: the reply may go to a pipe while the person types.
            .behavior(Behavior::PreferTerm)
            .max_history_size(1000)
            .and_then(|b| b.history_ignore_dups(true))
            .map_err(|e| format!("line editor: {e}"))?
            .auto_add_history(false)
            .completion_type(CompletionType::List)
            .bracketed_paste(true)
            .build();
        let mut editor = rustyline::Editor::<SlashCompletion, DefaultHistory>::with_config(config)
            .map_err(|e| format!("line editor: {e}"))?;
        editor.set_helper(Some(SlashCompletion));
        editor.bind_sequence(
            KeyEvent(KeyCode::Enter, Modifiers::ALT),
            EventHandler::Simple(Cmd::Newline),
        );
        editor.bind_sequence(KeyEvent::ctrl('J'), EventHandler::Simple(Cmd::Newline));
        editor.bind_sequence(
            Event::from(KeyEvent::ctrl('C')),
            EventHandler::Conditional(Box::new(ClearOrInterrupt)),
        );
        let mut notes = Vec::new();
        match super::history::load(&history_file) {
            Ok(entries) => {
                for entry in entries {
                    let _ = editor.history_mut().add(&entry);
                }
            }
            Err(e) => notes.push(format!("history not loaded: {e}")),
        }
        let (requests, incoming) = mpsc::channel();
        std::thread::spawn(move || serve(editor, history_file, incoming));
        Ok((LineEditor { requests }, notes))
    }

    /// Reads a prompt line.
    pub async fn prompt(&self, prompt: &str) -> Read {
        let (reply, answer) = oneshot::channel();
        let request = Request::Prompt {
            prompt: prompt.to_string(),
            reply,
        };
        if self.requests.send(request).is_err() {
            return Read::Eof;
        }
        answer.await.unwrap_or(Read::Eof)
    }

    /// Reads one plain line (an approval's answer); `None` at end of input.
    pub async fn answer(&self) -> Option<String> {
        let (reply, answer) = oneshot::channel();
        self.requests.send(Request::Answer { reply }).ok()?;
        answer.await.ok().flatten()
    }
}

fn serve(
    mut editor: rustyline::Editor<SlashCompletion, DefaultHistory>,
    history_file: PathBuf,
    incoming: mpsc::Receiver<Request>,
) {
    let mut history_failed = false;
    while let Ok(request) = incoming.recv() {
        match request {
            Request::Prompt { prompt, reply } => {
                let read = match editor.readline(&prompt) {
                    Ok(line) => {
                        if !line.trim().is_empty() {
                            let _ = editor.add_history_entry(line.as_str());
                            if let Err(e) = super::history::append(&history_file, &line)
                                && !history_failed
                            {
                                history_failed = true;
                                eprintln!("gg: history not saved: {e}");
                            }
                        }
                        Read::Line(line)
                    }
                    Err(ReadlineError::Interrupted) => Read::Interrupted,
                    Err(ReadlineError::Eof) => Read::Eof,
                    Err(e) => {
                        eprintln!("gg: reading the prompt: {e}");
                        Read::Eof
                    }
                };
                let _ = reply.send(read);
            }
            Request::Answer { reply } => {
                let line = read_plain_line(&reply);
                let _ = reply.send(line);
            }
        }
    }
}

/// One line from stdin in the terminal's cooked mode, given up (with whatever was typed) once
/// nobody waits for it: the poll wakes every 100 ms to look.
fn read_plain_line(reply: &oneshot::Sender<Option<String>>) -> Option<String> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdin = std::io::stdin();
    let mut line = Vec::new();
    let tick = Timespec {
        tv_sec: 0,
        tv_nsec: 100_000_000,
    };
    loop {
        if reply.is_closed() {
            return None;
        }
        let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
        match poll(&mut fds, Some(&tick)) {
            Ok(0) | Err(rustix::io::Errno::INTR) => continue,
            Ok(_) => {}
            Err(_) => return None,
        }
        let mut buf = [0u8; 4096];
        match rustix::io::read(&stdin, &mut buf) {
            Ok(0) if line.is_empty() => return None,
            Ok(0) => break,
            Ok(n) => {
                line.extend_from_slice(&buf[..n]);
                if line.ends_with(b"\n") {
                    break;
                }
            }
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => continue,
            Err(_) => return None,
        }
    }
    let text = String::from_utf8_lossy(&line);
    Some(text.trim_end_matches(['\n', '\r']).to_string())
}

/// Ctrl+C: clears a line that has text; on an empty line it is an interrupt (the prompt loop
/// exits on the second in a row).
struct ClearOrInterrupt;

impl ConditionalEventHandler for ClearOrInterrupt {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if ctx.line().is_empty() {
            Some(Cmd::Interrupt)
        } else {
            Some(Cmd::Kill(Movement::WholeBuffer))
        }
    }
}

/// Tab completion of slash commands and their fixed arguments.
struct SlashCompletion;

impl Completer for SlashCompletion {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(super::slash::complete(line.get(..pos).unwrap_or(line)))
    }
}

impl Hinter for SlashCompletion {
    type Hint = String;
}

impl Highlighter for SlashCompletion {}

impl Validator for SlashCompletion {}

impl rustyline::Helper for SlashCompletion {}
