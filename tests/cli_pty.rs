//! The real `gg` binary on a real pseudo-terminal (the pty is made its controlling terminal with
//! `setsid -c`, so Ctrl+C is a real `^C` through the line discipline): approval prompts answered
//! by typing, a dangerous command prompting even under `--yolo`, and Ctrl+C mid-stream.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Reply, ScriptedServer, StreamReply, finish_chunk, text_chunk, tool_call_chunk};

struct Pty {
    master: File,
    screen: Arc<Mutex<String>>,
    cursor: usize,
    child: Child,
}

impl Pty {
    fn spawn(home: &Path, repo: &Path, server: &ScriptedServer, args: &[&str]) -> Pty {
        Pty::spawn_with(home, repo, server, args, &[])
    }

    fn spawn_with(
        home: &Path,
        repo: &Path,
        server: &ScriptedServer,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Pty {
        let screen = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&screen);
        let (master, child) = support::gg_on_pty(home, repo, server, args, env, move |bytes| {
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(bytes));
        });
        Pty {
            master,
            screen,
            cursor: 0,
            child,
        }
    }

    /// Waits until `needle` appears after what was already consumed, and consumes through it.
    fn expect(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            {
                let screen = self.screen.lock().unwrap();
                if let Some(at) = screen[self.cursor..].find(needle) {
                    let seen = screen[self.cursor..self.cursor + at + needle.len()].to_string();
                    self.cursor += at + needle.len();
                    return seen;
                }
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {needle:?}; screen:\n{}",
                self.screen.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn send(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    fn wait(mut self) -> (Option<i32>, String) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                std::thread::sleep(Duration::from_millis(100));
                return (status.code(), self.screen.lock().unwrap().clone());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("gg did not exit; screen:\n{}", self.screen.lock().unwrap());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    // Outside /tmp: /tmp is a scratch directory, where the classifier allows writes.
    let tmp = support::fixture_dir();
    let home = tmp.path().join("home").canonicalize().unwrap_or_else(|_| {
        std::fs::create_dir_all(tmp.path().join("home/repo")).unwrap();
        tmp.path().join("home").canonicalize().unwrap()
    });
    let repo = home.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    (tmp, home, repo)
}

fn bash_calls(commands: &[&str]) -> Reply {
    let mut stream = StreamReply::new();
    for (i, command) in commands.iter().enumerate() {
        let args = json!({"command": command}).to_string();
        stream = stream.event(tool_call_chunk(
            i as u32,
            Some(&format!("c{i}")),
            Some("bash"),
            &args,
        ));
    }
    stream.event(finish_chunk("tool_calls")).done().reply()
}

#[test]
fn approval_prompts_yes_no_and_always() {
    let (_tmp, home, repo) = dirs();
    let server = ScriptedServer::with_replies([
        bash_calls(&[
            "touch yes.txt",
            "touch no.txt",
            "touch always.txt",
            "touch always.txt",
        ]),
        Reply::text(&["finished"]),
    ]);
    let mut pty = Pty::spawn(&home, &repo, &server, &["-p", "make files"]);
    let first = pty.expect("Approve? [y/N/a] ");
    assert!(first.contains("Approve tool call: bash"), "{first}");
    assert!(first.contains("classification: normal"), "{first}");
    pty.send("y\r");
    pty.expect("Approve? [y/N/a] ");
    pty.send("n\r");
    pty.expect("Approve? [y/N/a] ");
    pty.send("a\r");
    let (code, screen) = pty.wait();
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("finished"));
    assert_eq!(
        screen.matches("Approve? [y/N/a] ").count(),
        3,
        "the repeat was covered by 'a': {screen}"
    );
    assert!(repo.join("yes.txt").exists());
    assert!(!repo.join("no.txt").exists());
    assert!(repo.join("always.txt").exists());
}

#[test]
fn a_dangerous_command_still_prompts_under_yolo() {
    let (_tmp, home, repo) = dirs();
    std::fs::create_dir_all(home.join("keep")).unwrap();
    let server =
        ScriptedServer::with_replies([bash_calls(&["rm -rf ~/keep"]), Reply::text(&["ok"])]);
    deny_the_dangerous_call(&home, &repo, &server);
    assert!(home.join("keep").is_dir(), "denied: home intact");
}

/// Runs `gg --yolo -p clean` on a terminal and answers no to the approval of the dangerous
/// call `server` scripts; returns the screen once gg has ended well.
fn deny_the_dangerous_call(home: &Path, repo: &Path, server: &ScriptedServer) -> String {
    let mut pty = Pty::spawn(home, repo, server, &["--yolo", "-p", "clean"]);
    let prompt = pty.expect("Approve? [y/N] ");
    assert!(prompt.contains("classification: dangerous"), "{prompt}");
    pty.send("n\r");
    let (code, screen) = pty.wait();
    assert_eq!(code, Some(0), "{screen}");
    screen
}

/// A normal command runs in gg's session, so gg's terminal is its controlling terminal: an
/// attacker pass's command pushed `y` and Enter into it (`TIOCSTI`), and gg took them as the
/// person's answer to the next dangerous command's approval. The guard hides the person's
/// terminals from the command (and a seccomp filter refuses the ioctl); the approval waits for
/// the person, who answers no.
#[test]
fn a_normal_command_cannot_type_the_answer_to_the_next_approval() {
    let (_tmp, home, repo) = dirs();
    std::fs::create_dir_all(home.join("keep")).unwrap();
    std::fs::write(
        repo.join("inject.py"),
        "import fcntl, os, termios\n\
         try:\n\
         \x20   fd = os.open('/dev/tty', os.O_RDONLY)\n\
         \x20   for c in b'y\\r':\n\
         \x20       fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))\n\
         \x20   print('typed')\n\
         except OSError as e:\n\
         \x20   print('refused', e.errno)\n",
    )
    .unwrap();
    let server = ScriptedServer::with_replies([
        bash_calls(&["python3 inject.py"]),
        bash_calls(&["rm -rf ~/keep"]),
        Reply::text(&["ok"]),
    ]);
    let screen = deny_the_dangerous_call(&home, &repo, &server);
    assert!(
        home.join("keep").is_dir(),
        "the injected answer was taken: {screen}"
    );
    let injected = server.tool_results().first().cloned().unwrap_or_default();
    // The terminal is hidden from the command (EACCES from Landlock at the open): it cannot
    // read what the person types either. The filter that refuses the ioctl itself, for a
    // descriptor that reaches a terminal another way, has its own test
    // (`sandbox::guard::tests::a_guarded_command_cannot_type_into_its_terminal`).
    assert!(injected.contains("refused 13"), "{injected}");
    assert!(!injected.contains("typed"), "{injected}");
}

#[test]
fn ctrl_c_mid_stream_keeps_the_partial_reply_and_the_next_prompt_works() {
    let (_tmp, home, repo) = dirs();
    let slow = StreamReply::new()
        .event(text_chunk("partial words"))
        .delay(Duration::from_secs(60))
        .event(finish_chunk("stop"))
        .done()
        .reply();
    let server = ScriptedServer::with_replies([slow, Reply::text(&["second answer"])]);
    let mut pty = Pty::spawn(&home, &repo, &server, &[]);
    pty.expect("gg interactive mode. Press Ctrl+D to exit.");
    pty.expect("> ");
    pty.send("first question\r");
    pty.expect("partial words");
    pty.send("\x03");
    pty.expect("> ");
    pty.send("second question\r");
    pty.expect("second answer");
    pty.expect("> ");
    pty.send("\x04");
    let (code, screen) = pty.wait();
    assert_eq!(code, Some(0), "{screen}");
    // The interrupted reply was persisted with its partial text.
    let bodies = server.request_bodies();
    let messages = bodies[1]["messages"].as_array().unwrap();
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    assert!(
        assistant["content"]
            .as_str()
            .unwrap()
            .starts_with("partial words"),
        "{assistant}"
    );
}

#[test]
fn ctrl_c_at_an_approval_prompt_cancels_the_turn_and_returns_to_the_prompt() {
    // Plain line reading (`TERM=dumb`) and the line editor: the approval reads the terminal in
    // both, and the prompt after it must get the next line.
    for term in ["dumb", "xterm"] {
        ctrl_c_at_an_approval_prompt_on(term);
    }
}

fn ctrl_c_at_an_approval_prompt_on(term: &str) {
    let (_tmp, home, repo) = dirs();
    let server = ScriptedServer::with_replies([
        bash_calls(&["touch never.txt"]),
        Reply::text(&["after the interruption"]),
    ]);
    let mut pty = Pty::spawn_with(&home, &repo, &server, &[], &[("TERM", term)]);
    pty.expect("> ");
    pty.send("make a file\r");
    pty.expect("Approve? [y/N/a] ");
    pty.send("\x03");
    pty.expect("> ");
    pty.send("go on\r");
    pty.expect("after the interruption");
    pty.expect("> ");
    pty.send("\x04");
    let (code, screen) = pty.wait();
    assert_eq!(code, Some(0), "{screen}");
    assert!(!repo.join("never.txt").exists(), "the call was not run");
    // The interrupted call has a result in the session, so the next request is well formed.
    let bodies = server.request_bodies();
    let tool = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        tool["content"]
            .as_str()
            .unwrap()
            .contains("context canceled"),
        "{tool}"
    );
}

#[test]
fn one_shot_on_a_terminal_streams_the_reply_as_it_is_generated() {
    let (_tmp, home, repo) = dirs();
    // The reply never finishes: seeing its first words proves they were streamed, not printed
    // at the end.
    let endless = StreamReply::new()
        .event(text_chunk("first words"))
        .stall()
        .reply();
    let server = ScriptedServer::with_replies([endless]);
    let mut pty = Pty::spawn(&home, &repo, &server, &["-p", "talk"]);
    pty.expect("first words");
    pty.send("\x03");
    let (code, screen) = pty.wait();
    assert_eq!(code, Some(130), "{screen}");
    assert_eq!(screen.matches("first words").count(), 1, "{screen}");
}

#[test]
fn one_shot_failure_after_text_shows_the_text_then_the_error() {
    let (_tmp, home, repo) = dirs();
    let broken = StreamReply::new()
        .event(text_chunk("half an answer"))
        .close_delimited()
        .reply();
    let server = ScriptedServer::with_replies([broken]);
    let pty = Pty::spawn(&home, &repo, &server, &["-p", "talk"]);
    let (code, screen) = pty.wait();
    assert_eq!(code, Some(1), "{screen}");
    let text = screen
        .find("half an answer")
        .expect("the partial text is shown");
    let error = screen
        .find("gg: model stream interrupted")
        .expect("the error is shown");
    assert!(text < error, "text first, then the error: {screen}");
}

/// Every `.jsonl` session file under `dir`, parsed.
fn session_entries(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            entries.extend(session_entries(&path));
        } else if path.extension().is_some_and(|x| x == "jsonl") {
            let text = std::fs::read_to_string(&path).unwrap();
            entries.extend(text.lines().map(|l| serde_json::from_str(l).unwrap()));
        }
    }
    entries
}

#[test]
fn ctrl_c_at_an_approval_prompt_is_audited_as_cancelled_not_denied_by_policy() {
    let (_tmp, home, repo) = dirs();
    let server = ScriptedServer::with_replies([
        bash_calls(&["touch never.txt"]),
        Reply::text(&["after the interruption"]),
    ]);
    let mut pty = Pty::spawn(&home, &repo, &server, &[]);
    pty.expect("> ");
    pty.send("make a file\r");
    pty.expect("Approve? [y/N/a] ");
    pty.send("\x03");
    pty.expect("> ");
    pty.send("\x04");
    let (code, screen) = pty.wait();
    assert_eq!(code, Some(0), "{screen}");
    let decisions: Vec<serde_json::Value> = session_entries(&home.join("sessions"))
        .iter()
        .filter(|e| e["message"]["role"] == "tool")
        .map(|e| e["audit"]["decision"].clone())
        .collect();
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    assert_eq!(decisions[0]["action"], "cancelled", "{:?}", decisions[0]);
    assert_ne!(decisions[0]["decidedBy"], "policy", "{:?}", decisions[0]);
}

#[test]
fn a_call_allowed_by_an_earlier_session_grant_prints_allow_not_ask() {
    let (_tmp, home, repo) = dirs();
    let server = ScriptedServer::with_replies([
        bash_calls(&["touch granted.txt", "touch granted.txt"]),
        Reply::text(&["finished"]),
    ]);
    let mut pty = Pty::spawn(&home, &repo, &server, &["-p", "make files"]);
    pty.expect("Approve? [y/N/a] ");
    pty.send("a\r");
    let (code, screen) = pty.wait();
    assert_eq!(code, Some(0), "{screen}");
    assert_eq!(screen.matches("Approve? [y/N/a] ").count(), 1, "{screen}");
    assert_eq!(
        screen.matches("→ ask").count(),
        1,
        "only the first call was asked: {screen}"
    );
    assert!(
        screen.contains("→ allow"),
        "the grant's allow is shown: {screen}"
    );
    let actions: Vec<String> = session_entries(&home.join("sessions"))
        .iter()
        .filter(|e| e["message"]["role"] == "tool")
        .map(|e| {
            e["audit"]["decision"]["decidedBy"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(actions, ["user", "session-rule"]);
}

/// A terminal the line editor supports (the default `TERM=dumb` gets plain line reading).
const XTERM: (&str, &str) = ("TERM", "xterm");

/// The last user message of each request the model received.
fn user_prompts(server: &ScriptedServer) -> Vec<String> {
    server
        .request_bodies()
        .iter()
        .map(|body| {
            body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .map(|m| m["content"].as_str().unwrap_or_default().to_string())
                .unwrap_or_default()
        })
        .collect()
}

#[test]
fn the_line_editor_recalls_history_takes_a_paste_as_one_prompt_and_keeps_secrets_out() {
    let (_tmp, home, repo) = dirs();
    let server = ScriptedServer::with_replies([
        Reply::text(&["answer one"]),
        Reply::text(&["answer two"]),
        Reply::text(&["answer three"]),
        Reply::text(&["answer four"]),
        Reply::text(&["answer five"]),
    ]);
    let mut pty = Pty::spawn_with(&home, &repo, &server, &[], &[XTERM]);
    pty.expect("> ");
    pty.send("first prompt\r");
    pty.expect("answer one");
    pty.expect("> ");
    // Up recalls the previous prompt; Enter sends it again.
    pty.send("\x1b[A");
    pty.expect("first prompt");
    pty.send("\r");
    pty.expect("answer two");
    pty.expect("> ");
    // A bracketed paste of several lines is one prompt.
    pty.send("\x1b[200~line one\nline two\x1b[201~\r");
    pty.expect("answer three");
    pty.expect("> ");
    pty.send("my key is sk-abcdefghijklmnopqrstuvwx\r");
    pty.expect("answer four");
    pty.expect("> ");
    // Ctrl+J puts a newline in the prompt instead of sending it.
    pty.send("typed\nover two lines\r");
    pty.expect("answer five");
    pty.expect("> ");
    // Ctrl+C on a line with text clears it (nothing is sent), on an empty line twice exits.
    pty.send("never sent\x03");
    pty.send("\x03");
    pty.expect("Ctrl+C again");
    // Typed at the next prompt (a key pressed before the editor is back is the terminal's).
    pty.expect("> ");
    pty.send("\x03");
    let (code, screen) = pty.wait();
    assert_eq!(code, Some(0), "{screen}");
    assert_eq!(
        user_prompts(&server),
        [
            "first prompt",
            "first prompt",
            "line one\nline two",
            "my key is sk-abcdefghijklmnopqrstuvwx",
            "typed\nover two lines"
        ]
    );
    let history = home.join(".gg/history");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&history).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    let text = std::fs::read_to_string(&history).unwrap();
    assert_eq!(
        text, "first prompt\nfirst prompt\nline one\\nline two\ntyped\\nover two lines\n",
        "the secret-looking line is not kept"
    );
}

#[test]
fn slash_commands_change_the_approval_mode_are_audited_and_never_reach_the_model() {
    let (_tmp, home, repo) = dirs();
    let server = ScriptedServer::with_replies([
        bash_calls(&["touch made.txt"]),
        Reply::text(&["made it"]),
        Reply::text(&["a literal slash"]),
    ]);
    let mut pty = Pty::spawn_with(&home, &repo, &server, &[], &[XTERM]);
    pty.expect("approval auto · sandbox off");
    pty.expect("> ");
    pty.send("/help\r");
    pty.expect("/approval [MODE]");
    pty.expect("> ");
    pty.send("/aproval never\r");
    pty.expect("did you mean /approval?");
    pty.expect("> ");
    // Tab completes the command's name.
    pty.send("/appr\tnever\r");
    pty.expect("approval: auto → never");
    pty.expect("approval never · sandbox off");
    pty.expect("> ");
    // Under `never` a normal command runs without asking; its status line follows it.
    pty.send("make a file\r");
    pty.expect("└ bash exit 0");
    pty.expect("made it");
    pty.expect("> ");
    pty.send("//help me\r");
    pty.expect("a literal slash");
    pty.expect("> ");
    pty.send("\x04");
    let (code, screen) = pty.wait();
    assert_eq!(code, Some(0), "{screen}");
    assert!(!screen.contains("Approve?"), "{screen}");
    assert!(repo.join("made.txt").exists());
    let prompts = user_prompts(&server);
    assert_eq!(
        prompts[0], "make a file",
        "no slash command was sent: {prompts:?}"
    );
    assert_eq!(prompts.last().unwrap(), "/help me", "// sends a literal /");
    let changes: Vec<serde_json::Value> = session_entries(&home.join("sessions"))
        .into_iter()
        .filter(|e| e["type"] == "session_info" && e["setting"].is_string())
        .collect();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["setting"], "approval");
    assert_eq!(changes[0]["from"], "auto");
    assert_eq!(changes[0]["to"], "never");
}

#[test]
fn ctrl_c_in_the_line_editor_mode_cancels_a_streaming_turn_and_the_session_records_it() {
    let (_tmp, home, repo) = dirs();
    let slow = StreamReply::new()
        .event(text_chunk("partial words"))
        .delay(Duration::from_secs(60))
        .event(finish_chunk("stop"))
        .done()
        .reply();
    let server = ScriptedServer::with_replies([slow]);
    let mut pty = Pty::spawn_with(&home, &repo, &server, &[], &[XTERM]);
    pty.expect("> ");
    pty.send("first question\r");
    pty.expect("partial words");
    pty.send("\x03");
    pty.expect("> ");
    pty.send("\x04");
    let (code, screen) = pty.wait();
    assert_eq!(code, Some(0), "{screen}");
    let cancelled = session_entries(&home.join("sessions"))
        .into_iter()
        .filter(|e| e["message"]["role"] == "assistant")
        .any(|e| e["message"]["stopReason"] == "canceled");
    assert!(cancelled, "the interruption is in the session");
}

#[test]
fn markdown_is_rendered_on_a_colour_terminal_and_plain_with_no_color() {
    let reply = || Reply::text(&["# Title\n", "**Done** and `co", "de`\n- item\n"]);
    for (no_color, rendered) in [("", true), ("1", false)] {
        let (_tmp, home, repo) = dirs();
        let server = ScriptedServer::with_replies([reply()]);
        let pty = Pty::spawn_with(
            &home,
            &repo,
            &server,
            &["-p", "report"],
            &[XTERM, ("NO_COLOR", no_color)],
        );
        let (code, screen) = pty.wait();
        assert_eq!(code, Some(0), "{screen}");
        if rendered {
            assert!(screen.contains("\x1b[1;4mTitle"), "{screen:?}");
            assert!(screen.contains("\x1b[1mDone\x1b[22m"), "{screen:?}");
            assert!(screen.contains("\x1b[36mcode\x1b[39m"), "{screen:?}");
            assert!(screen.contains("• item"), "{screen:?}");
            assert!(!screen.contains("**Done**"), "{screen:?}");
        } else {
            assert!(screen.contains("# Title"), "{screen:?}");
            assert!(screen.contains("**Done** and `code`"), "{screen:?}");
            assert!(!screen.contains('\x1b'), "{screen:?}");
        }
    }
}

#[test]
fn the_sandbox_and_network_switch_between_turns_and_loosening_is_audited() {
    let (_tmp, home, repo) = dirs();
    let server = ScriptedServer::with_replies([
        bash_calls(&["touch inside.txt"]),
        Reply::text(&["first done"]),
        bash_calls(&["touch outside.txt"]),
        Reply::text(&["second done"]),
    ]);
    let mut pty = Pty::spawn_with(&home, &repo, &server, &["--approval", "never"], &[XTERM]);
    pty.expect("sandbox off");
    pty.expect("> ");
    pty.send("/sandbox on\r");
    pty.expect("sandbox: off → on");
    pty.expect("> ");
    pty.send("/network off\r");
    pty.expect("network: allow-list → off");
    pty.expect("> ");
    pty.send("make a file\r");
    let sandboxed = pty.expect("first done");
    assert!(!sandboxed.contains("· sandbox off ·"), "{sandboxed}");
    pty.expect("> ");
    pty.send("/network on\r");
    pty.expect("network: off → on");
    pty.expect("> ");
    pty.send("/sandbox off\r");
    pty.expect("sandbox: on → off");
    pty.expect("> ");
    pty.send("make another\r");
    let unconfined = pty.expect("second done");
    assert!(unconfined.contains("· sandbox guard ·"), "{unconfined}");
    pty.expect("> ");
    pty.send("/audit\r");
    pty.expect("sandbox: on -> off (changed in the session)");
    pty.expect("> ");
    pty.send("\x04");
    let (code, screen) = pty.wait();
    assert_eq!(code, Some(0), "{screen}");
    assert!(repo.join("inside.txt").exists() && repo.join("outside.txt").exists());
    let levels: Vec<String> = session_entries(&home.join("sessions"))
        .iter()
        .filter(|e| e["message"]["role"] == "tool")
        .map(|e| {
            e["audit"]["sandbox"]["level"]
                .as_str()
                .unwrap_or("-")
                .to_string()
        })
        .collect();
    assert_eq!(levels.len(), 2, "{levels:?}");
    assert_ne!(levels[0], "off", "the first call ran sandboxed: {levels:?}");
    assert_eq!(levels[1], "guard", "{levels:?}");
    // Tightening (sandbox on, network off) is shown but not audited; loosening is.
    let changes: Vec<(String, String, String)> = session_entries(&home.join("sessions"))
        .iter()
        .filter(|e| e["type"] == "session_info" && e["setting"].is_string())
        .map(|e| {
            let field = |k: &str| e[k].as_str().unwrap().to_string();
            (field("setting"), field("from"), field("to"))
        })
        .collect();
    assert_eq!(
        changes,
        [
            ("network".into(), "off".into(), "on".into()),
            ("sandbox".into(), "on".into(), "off".into())
        ]
    );
    // `gg audit --json` has them too, one line each before the tool-call rows.
    let audit = std::process::Command::new(env!("CARGO_BIN_EXE_gg"))
        .args(["audit", "--json"])
        .current_dir(&repo)
        .env("HOME", &home)
        .env("GG_SESSION_DIR", home.join("sessions"))
        .output()
        .unwrap();
    assert!(audit.status.success(), "{audit:?}");
    let rows: Vec<serde_json::Value> = String::from_utf8(audit.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let settings: Vec<(&str, &str, &str)> = rows
        .iter()
        .take_while(|row| row.get("policyChange").is_some())
        .map(|row| {
            let change = &row["policyChange"];
            assert!(row["timestamp"].is_string(), "{row}");
            (
                change["setting"].as_str().unwrap(),
                change["from"].as_str().unwrap(),
                change["to"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        settings,
        [("network", "off", "on"), ("sandbox", "on", "off")]
    );
    assert_eq!(rows.len(), 4, "two changes, then the two calls: {rows:?}");
    assert!(
        rows[2..].iter().all(|row| row["tool"] == "bash"),
        "{rows:?}"
    );
}

#[test]
fn clear_starts_a_new_session_and_resume_goes_back_to_the_old_one() {
    let (_tmp, home, repo) = dirs();
    let server = ScriptedServer::with_replies([
        Reply::text(&["first answer"]),
        Reply::text(&["fresh answer"]),
        Reply::text(&["resumed answer"]),
    ]);
    let mut pty = Pty::spawn_with(&home, &repo, &server, &[], &[XTERM]);
    pty.expect("> ");
    pty.send("remember the word apricot\r");
    pty.expect("first answer");
    pty.expect("> ");
    pty.send("/clear\r");
    let cleared = pty.expect("> ");
    let old = cleared
        .split("(/resume ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no old session id: {cleared}"))
        .to_string();
    pty.send("what word?\r");
    pty.expect("fresh answer");
    pty.expect("> ");
    pty.send("/sessions\r");
    pty.expect(&old);
    pty.expect("> ");
    pty.send(&format!("/resume {old}\r"));
    pty.expect(&format!("resumed {old}"));
    pty.expect("> ");
    pty.send("and now?\r");
    pty.expect("resumed answer");
    pty.expect("> ");
    pty.send("\x04");
    let (code, screen) = pty.wait();
    assert_eq!(code, Some(0), "{screen}");
    let mentions = |body: &serde_json::Value| body.to_string().contains("apricot");
    let bodies = server.request_bodies();
    assert!(!mentions(&bodies[1]), "the new session starts empty");
    assert!(mentions(&bodies[2]), "the resumed session has its history");
}

/// `gg -p` on a terminal shows each call's folded output and status line on standard error, as
/// the interactive mode does, without the `/output` hint it cannot offer; piped, it does not.
#[test]
fn one_shot_on_a_terminal_shows_each_calls_status_line() {
    let (_tmp, home, repo) = dirs();
    let server =
        ScriptedServer::with_replies([bash_calls(&["seq 1 30"]), Reply::text(&["counted"])]);
    let mut pty = Pty::spawn_with(
        &home,
        &repo,
        &server,
        &["--approval", "never", "-p", "count"],
        &[XTERM],
    );
    pty.expect("counted");
    let (code, screen) = pty.wait();
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("│ 1\r\n"), "{screen}");
    assert!(screen.contains("more lines"), "{screen}");
    assert!(!screen.contains("/output"), "{screen}");
    assert!(screen.contains("└ bash exit 0"), "{screen}");
    // Piped: no folded output, no status line.
    server.push(bash_calls(&["seq 1 30"]));
    server.push(Reply::text(&["counted"]));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gg"))
        .args(["--approval", "never", "-p", "count"])
        .current_dir(&repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", server.base_url())
        .env("GG_SESSION_DIR", home.join("sessions"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("└ bash"), "{stderr}");
}
