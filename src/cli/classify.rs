//! `gg classify`: the classifier and the approval table, exposed for policy audits.
//!
//! Batch audits of whole shell histories go through here, so the hot path builds the context
//! once, reuses one output buffer and writes one line (or block) per command.

use std::ffi::OsString;
use std::io::{self, BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use classifier::{Class, Context, Verdict};
use policies::{Call, Decision, EffectivePolicy, Granted, Mode, Request, Terminal, decide};
use serde::Serialize;

use tools::security;

/// Arguments of `gg classify`.
#[derive(clap::Args, Debug)]
pub struct ClassifyArgs {
    /// Commands to classify, one per argument. None, or `-`, reads stdin (one per line).
    #[arg(value_name = "COMMAND")]
    pub commands: Vec<OsString>,
    /// One JSON object per line per command, in input order.
    #[arg(long)]
    pub json: bool,
    /// Read NUL-separated commands from stdin (for multi-line scripts).
    #[arg(long)]
    pub null: bool,
    /// The working directory that paths resolve against (default: the current one).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Exit 1 when any command reaches this class.
    #[arg(long, value_name = "CLASS", value_parser = ["normal", "dangerous"])]
    pub fail_on: Option<String>,
    /// Audit a candidate policy file in place of ~/.gg/policy.toml.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Also print the approval decision under this mode.
    #[arg(long, value_name = "MODE", value_parser = ["auto", "on-request", "yolo", "never"])]
    pub approval: Option<String>,
    /// Decide as if stdin and stderr were terminals.
    #[arg(long, conflicts_with = "no_tty")]
    pub tty: bool,
    /// Decide as if there were no terminal.
    #[arg(long)]
    pub no_tty: bool,
    /// Print the decision under every mode, with and without a terminal.
    #[arg(long)]
    pub matrix: bool,
    /// Classify as gg does where no sandbox level can confine read-only commands (the session
    /// then says "read-only run unconfined"): a path no check can see before the command runs
    /// (computed at run time, behind a symbolic link) is not read-only there.
    #[arg(long)]
    pub unconfined: bool,
}

#[derive(Serialize)]
struct DecisionJson<'a> {
    mode: &'a str,
    terminal: bool,
    action: &'a str,
    rule: &'a str,
    message: &'a str,
}

#[derive(Serialize)]
struct ReasonJson<'a> {
    rule: &'a str,
    message: &'a str,
    span: [usize; 2],
}

#[derive(Serialize)]
struct RecordJson<'a> {
    command: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    verdict: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasons: Option<Vec<ReasonJson<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    commands: Option<Vec<&'a [String]>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<DecisionJson<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    matrix: Option<Vec<DecisionJson<'a>>>,
}

/// One input item: a command, or why it could not be read as one.
enum Item {
    Command(String),
    NotUtf8(String),
}

struct Auditor {
    ctx: Context,
    policy: EffectivePolicy,
    json: bool,
    decision_under: Option<(Mode, Terminal)>,
    matrix: bool,
    fail_threshold: Option<Class>,
    failed: bool,
}

pub fn run(args: ClassifyArgs) -> ExitCode {
    match run_inner(args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("gg classify: {message}");
            ExitCode::from(2)
        }
    }
}

fn run_inner(args: ClassifyArgs) -> Result<ExitCode, String> {
    let cwd = match &args.cwd {
        Some(dir) => {
            std::fs::canonicalize(dir).map_err(|e| format!("--cwd {}: {e}", dir.display()))?
        }
        None => std::env::current_dir().map_err(|e| format!("current directory: {e}"))?,
    };
    if !cwd.is_dir() {
        return Err(format!("--cwd {}: not a directory", cwd.display()));
    }
    let policy = security::load_policy(&cwd, args.policy.as_deref()).map_err(|e| e.to_string())?;
    for ignored in &policy.ignored {
        eprintln!("gg classify: policy error (rule ignored): {ignored}");
    }
    let mut ctx = security::classifier_context(&cwd, policy.classifier_rules());
    ctx.read_only_unconfined = args.unconfined;

    let decision_under = match &args.approval {
        Some(mode) => {
            let mode = Mode::parse_cli(mode)?;
            let terminal = if args.tty {
                Terminal::Present
            } else if args.no_tty {
                Terminal::Absent
            } else {
                crate::cli::terminal_present()
            };
            Some((mode, terminal))
        }
        None if args.tty || args.no_tty => {
            return Err("--tty and --no-tty need --approval MODE".to_string());
        }
        None => None,
    };
    let fail_threshold = match args.fail_on.as_deref() {
        Some("normal") => Some(Class::Normal),
        Some("dangerous") => Some(Class::Dangerous),
        Some(other) => {
            return Err(format!(
                "--fail-on must be normal or dangerous, not {other:?}"
            ));
        }
        None => None,
    };

    let mut auditor = Auditor {
        ctx,
        policy,
        json: args.json,
        decision_under,
        matrix: args.matrix,
        fail_threshold,
        failed: false,
    };
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(64 * 1024, stdout.lock());

    let from_stdin =
        args.commands.is_empty() || (args.commands.len() == 1 && args.commands[0] == "-");
    if from_stdin {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        let delimiter = if args.null { 0 } else { b'\n' };
        let mut record = Vec::new();
        loop {
            let read = read_record(&mut input, delimiter, &mut record)
                .map_err(|e| format!("reading stdin: {e}"))?;
            match read {
                Record::End => break,
                Record::Whole => {
                    if !args.null && record.last() == Some(&b'\r') {
                        record.pop();
                    }
                    auditor.audit_bytes(&record, &mut out)?;
                }
                Record::TooLong => {
                    auditor.audit_oversized(&mut input, delimiter, &mut record, &mut out)?;
                }
            }
        }
    } else {
        if args.null {
            return Err("--null reads stdin; it cannot be combined with COMMAND arguments".into());
        }
        // Validate every argument before printing anything, so a usage error never leaves a
        // half-written report behind.
        let items = args
            .commands
            .iter()
            .map(|arg| match arg.to_str() {
                Some(text) if text.trim().is_empty() => {
                    Err("empty command: each argument must be a command".to_string())
                }
                Some(text) => Ok(Item::Command(text.to_string())),
                None => Ok(Item::NotUtf8(arg.to_string_lossy().into_owned())),
            })
            .collect::<Result<Vec<_>, _>>()?;
        for item in items {
            auditor.audit(item, &mut out)?;
        }
    }
    written(out.flush())?;
    Ok(if auditor.failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// A write's outcome as the report's error: a closed pipe ends gg quietly instead (see
/// [`crate::cli::pipe`]).
fn written(result: io::Result<()>) -> Result<(), String> {
    result.map_err(|e| {
        crate::cli::pipe::exit_if_closed(&e);
        format!("writing output: {e}")
    })
}

/// How one stdin record was read.
enum Record {
    /// No more input.
    End,
    /// A complete record (without its delimiter) is in the buffer.
    Whole,
    /// The record is longer than a command may be; the buffer holds its first part, the rest is
    /// still unread.
    TooLong,
}

/// Reads one record up to `delimiter` into `buf`, but never more than
/// [`classifier::MAX_COMMAND_BYTES`] bytes: an input of gigabytes on one line must not be held in
/// memory (it aborted with an allocation failure once).
fn read_record(input: &mut impl BufRead, delimiter: u8, buf: &mut Vec<u8>) -> io::Result<Record> {
    buf.clear();
    let mut seen_any = false;
    loop {
        let available = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(if seen_any { Record::Whole } else { Record::End });
        }
        seen_any = true;
        let room = classifier::MAX_COMMAND_BYTES - buf.len();
        let (used, found) = match available.iter().position(|&b| b == delimiter) {
            Some(at) if at <= room => (at + 1, true),
            _ => (available.len().min(room), false),
        };
        buf.extend_from_slice(&available[..used]);
        input.consume(used);
        if found {
            buf.pop();
            return Ok(Record::Whole);
        }
        if buf.len() >= classifier::MAX_COMMAND_BYTES {
            return Ok(Record::TooLong);
        }
    }
}

/// How much of an over-long command the report repeats.
const SHOWN_PREFIX: usize = 1024;
/// Most reasons reported for one over-long command.
const MAX_OVERSIZED_REASONS: usize = 32;

impl Auditor {
    /// A record longer than [`classifier::MAX_COMMAND_BYTES`]: it is classified piece by piece as
    /// it streams in (each piece only gets the scan for dangerous patterns), its verdict is never
    /// read-only, and the report shows only its beginning and its length.
    fn audit_oversized(
        &mut self,
        input: &mut impl BufRead,
        delimiter: u8,
        first: &mut Vec<u8>,
        out: &mut impl Write,
    ) -> Result<(), String> {
        // Pieces are twice the limit, so that each takes the classifier's over-large path.
        let piece_len = 2 * classifier::MAX_COMMAND_BYTES;
        let shown = String::from_utf8_lossy(&first[..SHOWN_PREFIX.min(first.len())]).into_owned();
        let mut piece = std::mem::take(first);
        let mut total = 0usize;
        let mut reasons: Vec<classifier::Reason> = Vec::new();
        let mut done = false;
        while !done {
            while piece.len() < piece_len && !done {
                let available = input
                    .fill_buf()
                    .map_err(|e| format!("reading stdin: {e}"))?;
                if available.is_empty() {
                    done = true;
                    break;
                }
                let want = piece_len - piece.len();
                let (used, found) = match available.iter().position(|&b| b == delimiter) {
                    Some(at) if at < want => (at + 1, true),
                    _ => (available.len().min(want), false),
                };
                piece.extend_from_slice(&available[..used]);
                input.consume(used);
                if found {
                    piece.pop();
                    done = true;
                }
            }
            // A multi-byte character cut at the piece's end is carried over to the next one.
            let cut = if done {
                piece.len()
            } else {
                match std::str::from_utf8(&piece) {
                    Ok(_) => piece.len(),
                    Err(e) if e.error_len().is_none() => e.valid_up_to(),
                    Err(_) => piece.len(),
                }
            };
            let carry = piece.split_off(cut);
            let text = String::from_utf8_lossy(&piece);
            if !text.trim().is_empty()
                && let Ok(verdict) = classifier::classify(&text, &self.ctx)
            {
                reasons.extend(
                    verdict
                        .reasons
                        .into_iter()
                        .filter(|r| r.rule != "input.too-large")
                        .map(|mut r| {
                            r.span = (r.span.0 + total, r.span.1 + total);
                            r.message = tools::registry::clip_marked(
                                std::mem::take(&mut r.message),
                                SHOWN_PREFIX,
                                "…",
                            );
                            r
                        }),
                );
            }
            total += piece.len();
            piece = carry;
        }
        total += piece.len();
        reasons.sort_by(|a, b| b.class.cmp(&a.class).then(a.span.cmp(&b.span)));
        reasons.dedup_by(|a, b| a.rule == b.rule);
        reasons.truncate(MAX_OVERSIZED_REASONS - 1);
        let class = reasons
            .iter()
            .map(|r| r.class)
            .max()
            .unwrap_or(Class::Normal)
            .max(Class::Normal);
        reasons.push(classifier::Reason {
            rule: "input.too-large".to_string(),
            class: Class::Normal,
            message: format!(
                "the command is {total} bytes long, more than the {} bytes inspected in full; it \
                 was only scanned for dangerous patterns",
                classifier::MAX_COMMAND_BYTES
            ),
            span: (0, total),
        });
        reasons.sort_by(|a, b| b.class.cmp(&a.class).then(a.span.cmp(&b.span)));
        let verdict = Verdict {
            class,
            reasons,
            commands: Vec::new(),
        };
        let command = format!("{shown}… ({total} bytes)");
        written(self.report(&command, &verdict, out))
    }

    /// Stdin records: blank ones are skipped (shell histories have them), bytes that are not
    /// UTF-8 are reported rather than guessed at.
    fn audit_bytes(&mut self, bytes: &[u8], out: &mut impl Write) -> Result<(), String> {
        match std::str::from_utf8(bytes) {
            Ok(text) if text.trim().is_empty() => Ok(()),
            Ok(text) => self.audit(Item::Command(text.to_string()), out),
            Err(_) => self.audit(
                Item::NotUtf8(String::from_utf8_lossy(bytes).into_owned()),
                out,
            ),
        }
    }

    fn audit(&mut self, item: Item, out: &mut impl Write) -> Result<(), String> {
        let result = match item {
            Item::Command(command) => {
                let verdict = classifier::classify(&command, &self.ctx);
                match verdict {
                    Ok(verdict) => self.report(&command, &verdict, out),
                    Err(e) => self.report_error(&command, &e.to_string(), out),
                }
            }
            Item::NotUtf8(lossy) => self.report_error(&lossy, "command is not valid UTF-8", out),
        };
        written(result)
    }

    /// A command that could not be classified counts as reaching any `--fail-on` threshold:
    /// an audit gate must not pass what it could not check.
    fn report_error(&mut self, command: &str, error: &str, out: &mut impl Write) -> io::Result<()> {
        if self.fail_threshold.is_some() {
            self.failed = true;
        }
        if self.json {
            let record = RecordJson {
                command,
                verdict: None,
                error: Some(error),
                reasons: None,
                commands: None,
                decision: None,
                matrix: None,
            };
            write_json_line(out, &record)
        } else {
            writeln!(out, "error: {}\n  {error}\n", one_line(command))
        }
    }

    fn decide(&self, verdict: &Verdict, mode: Mode, terminal: Terminal) -> Decision {
        let forbidden = self.policy.forbidden_match(verdict);
        decide(&Request {
            mode,
            terminal,
            granted: Granted::No,
            call: Call::Bash {
                class: verdict.class,
                forbidden: forbidden.as_ref(),
            },
        })
    }

    fn report(&mut self, command: &str, verdict: &Verdict, out: &mut impl Write) -> io::Result<()> {
        if self.fail_threshold.is_some_and(|t| verdict.class >= t) {
            self.failed = true;
        }
        let single = self
            .decision_under
            .map(|(mode, terminal)| (mode, terminal, self.decide(verdict, mode, terminal)));
        let matrix: Option<Vec<(Mode, Terminal, Decision)>> = self.matrix.then(|| {
            Mode::ALL
                .iter()
                .flat_map(|&mode| {
                    [Terminal::Present, Terminal::Absent]
                        .map(|terminal| (mode, terminal, self.decide(verdict, mode, terminal)))
                })
                .collect()
        });
        if self.json {
            let record = RecordJson {
                command,
                verdict: Some(verdict.class.as_str()),
                error: None,
                reasons: Some(
                    verdict
                        .reasons
                        .iter()
                        .map(|r| ReasonJson {
                            rule: &r.rule,
                            message: &r.message,
                            span: [r.span.0, r.span.1],
                        })
                        .collect(),
                ),
                commands: Some(verdict.commands.iter().map(|c| c.argv.as_slice()).collect()),
                decision: single.as_ref().map(to_json),
                matrix: matrix.as_ref().map(|m| m.iter().map(to_json).collect()),
            };
            return write_json_line(out, &record);
        }

        writeln!(out, "{}: {}", verdict.class.as_str(), one_line(command))?;
        for reason in &verdict.reasons {
            writeln!(
                out,
                "  - {}: {} [{}..{}]",
                reason.rule, reason.message, reason.span.0, reason.span.1
            )?;
        }
        if let Some((mode, terminal, decision)) = &single {
            writeln!(
                out,
                "  decision ({}, {}): {}",
                mode.as_str(),
                terminal_label(*terminal),
                describe(decision)
            )?;
        }
        if let Some(matrix) = &matrix {
            writeln!(out, "  {:<22} {:<48} no terminal", "mode", "terminal")?;
            for pair in matrix.chunks(2) {
                if let [(mode, _, with), (_, _, without)] = pair {
                    writeln!(
                        out,
                        "  {:<22} {:<48} {}",
                        mode.as_str(),
                        format!("{} ({})", with.action(), with.rule().id()),
                        format_args!("{} ({})", without.action(), without.rule().id())
                    )?;
                }
            }
        }
        writeln!(out)
    }
}

fn to_json((mode, terminal, decision): &(Mode, Terminal, Decision)) -> DecisionJson<'_> {
    DecisionJson {
        mode: mode.as_str(),
        terminal: terminal.is_present(),
        action: decision.action(),
        rule: decision.rule().id(),
        message: decision.message(),
    }
}

fn describe(decision: &Decision) -> String {
    match decision {
        Decision::Allow { rule } => format!("allow [{}]", rule.id()),
        Decision::Ask { rule, prompt } => format!("ask [{}] {prompt}", rule.id()),
        Decision::Deny { rule, message } => format!("deny [{}] {message}", rule.id()),
    }
}

fn terminal_label(terminal: Terminal) -> &'static str {
    match terminal {
        Terminal::Present => "terminal",
        Terminal::Absent => "no terminal",
    }
}

/// Multi-line scripts print on one line in human output; JSON keeps them exact.
fn one_line(command: &str) -> String {
    if command.contains(['\n', '\r']) {
        command.replace('\r', "\\r").replace('\n', "\\n")
    } else {
        command.to_string()
    }
}

fn write_json_line(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    // `io::Error::from` keeps the kind of a write failure (a closed pipe stays BrokenPipe).
    serde_json::to_writer(&mut *out, value).map_err(io::Error::from)?;
    out.write_all(b"\n")
}
