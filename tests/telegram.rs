//! The Telegram channel end to end: the real `ggd` polls a fake Bot API on loopback
//! ([`telegram_support::FakeBotApi`]) and answers with the scripted model; what it sent to the
//! chats, the sessions and `gg audit` are checked afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::support;
use crate::telegram_support;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{GgFixture, Reply, ScriptedServer, StreamReply, files_under, text_chunk};
use telegram_support::{FakeBotApi, Fault};

const TOKEN: &str = "4839574812:AAF-secret_T0KEN-that-must-never-leak";
const CHAT: i64 = 1001;
const OTHER_ALLOWED: i64 = 1002;
const STRANGER: i64 = 666;
const WAIT: Duration = Duration::from_secs(90);

struct Channel {
    fx: GgFixture,
    api: FakeBotApi,
    model: ScriptedServer,
    log: PathBuf,
    ggd: Option<Child>,
}

impl Channel {
    /// A home whose config names the fake API, the token file and `telegram` (merged over the
    /// defaults below), and the scripted model.
    fn new(telegram: Value) -> Channel {
        let model = ScriptedServer::start();
        let api = FakeBotApi::start(TOKEN);
        let probe = GgFixture::new(&model, json!({}), "repo");
        // The token lives outside ~/.gg, as a person may keep it: it joins the deny-read
        // policy because gg read it as a secret.
        let token_file = probe.tmp.path().join("secrets/bot-token");
        std::fs::create_dir_all(token_file.parent().unwrap()).unwrap();
        std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
        let mut section = json!({
            "tokenFile": token_file,
            "allowedChats": [CHAT, OTHER_ALLOWED],
            "apiBase": api.base(),
            "sandbox": false,
        });
        if let (Some(section), Value::Object(extra)) = (section.as_object_mut(), telegram) {
            section.extend(extra);
        }
        let mut config: Value =
            serde_json::from_slice(&std::fs::read(probe.home.join(".gg/config.json")).unwrap())
                .unwrap();
        config["telegram"] = section;
        std::fs::write(probe.home.join(".gg/config.json"), config.to_string()).unwrap();
        let log = probe.tmp.path().join("ggd.log");
        Channel {
            fx: probe,
            api,
            model,
            log,
            ggd: None,
        }
    }

    /// Starts the real ggd (stdio mode, kept open) with `--telegram`, its log appended to
    /// `self.log`.
    fn start(&mut self) {
        self.start_with(&[]);
    }

    /// [`Channel::start`] with more ggd flags.
    fn start_with(&mut self, flags: &[&str]) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = self
            .fx
            .ggd()
            .arg("--telegram")
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        self.ggd = Some(child);
    }

    /// Stops ggd (stdin at end of file) and waits for it.
    fn stop(&mut self) {
        if let Some(mut child) = self.ggd.take() {
            drop(child.stdin.take());
            let deadline = Instant::now() + WAIT;
            loop {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                assert!(Instant::now() < deadline, "ggd did not stop");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn gg(&self, args: &[&str]) -> std::process::Output {
        self.fx.gg().args(args).output().unwrap()
    }

    /// `gg audit --json` of a session file, one row per call.
    fn audit(&self, session: &Path) -> Vec<Value> {
        let out = self
            .fx
            .gg()
            .args(["audit", "--json"])
            .arg(session)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The chat's session file, from `~/.gg/telegram/chats.json`.
    fn session_of(&self, chat: i64) -> PathBuf {
        let chats: Value = serde_json::from_slice(
            &std::fs::read(self.fx.home.join(".gg/telegram/chats.json")).unwrap(),
        )
        .unwrap();
        PathBuf::from(chats[chat.to_string()].as_str().unwrap())
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        if let Some(mut child) = self.ggd.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Every file under `dir`, recursively.
/// A reply whose text arrives in three parts with pauses longer than the edit interval.
fn slow_text(parts: &[&str], pause: Duration) -> Reply {
    let mut stream = StreamReply::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            stream = stream.delay(pause);
        }
        stream = stream.event(text_chunk(part));
    }
    stream.event(support::finish_chunk("stop")).done().reply()
}

#[test]
fn an_allowed_chat_gets_the_answer_streamed_in_one_edited_message_and_a_stranger_nothing() {
    let mut ch = Channel::new(json!({}));
    ch.model.push(slow_text(
        &["Hel", "lo ", "world"],
        Duration::from_millis(1300),
    ));
    let long = "word ".repeat(1100); // 5500 characters: two messages
    ch.model.push(Reply::text(&[&long[..2000], &long[2000..]]));
    ch.start();

    ch.api
        .push_text(STRANGER, "stranger-secret-request: run rm -rf");
    ch.api.push_text(CHAT, "say hello");
    ch.api.wait_until("the answer to be complete", WAIT, |api| {
        api.messages(CHAT).iter().any(|m| m.text == "Hello world")
    });
    let messages = ch.api.messages(CHAT);
    assert_eq!(messages.len(), 1, "one message, edited: {messages:#?}");
    let edits = &messages[0].edits;
    assert!(!edits.is_empty(), "the reply was edited as it streamed");
    let sent_at = ch
        .api
        .calls("sendMessage")
        .iter()
        .find(|r| r.body["chat_id"] == CHAT)
        .unwrap()
        .at;
    // At most one edit a second, as the server sees them (the interval counts from the
    // previous answer).
    let mut previous = sent_at;
    for at in edits {
        assert!(
            at.duration_since(previous) >= Duration::from_secs(1),
            "edits {:?} apart",
            at.duration_since(previous)
        );
        previous = *at;
    }

    ch.api.push_text(CHAT, "and now at length");
    ch.api.wait_until("the long answer", WAIT, |api| {
        let texts: Vec<String> = api.messages(CHAT)[1..]
            .iter()
            .map(|m| m.text.clone())
            .collect();
        texts.concat() == long
    });
    let parts = &ch.api.messages(CHAT)[1..];
    assert_eq!(parts.len(), 2, "split in two messages");
    assert!(parts.iter().all(|m| m.text.encode_utf16().count() <= 4096));

    ch.stop();
    // The stranger got nothing and nothing ran for them: the model saw the chat's two
    // messages only.
    assert!(ch.api.messages(STRANGER).is_empty());
    let bodies = ch.model.request_bodies();
    assert_eq!(bodies.len(), 2, "{bodies:#?}");
    assert!(
        !bodies
            .iter()
            .any(|b| b.to_string().contains("stranger-secret-request"))
    );
    let log = ch.log_text();
    assert!(
        log.contains(&STRANGER.to_string()),
        "logged with the chat id: {log}"
    );
    assert!(
        !log.contains("stranger-secret-request"),
        "and the chat id only: {log}"
    );
    // One session for the chat, named after it.
    let session = ch.session_of(CHAT);
    let text = std::fs::read_to_string(&session).unwrap();
    assert!(text.contains(&format!("\"telegram:{CHAT}\"")), "{text}");
}

#[test]
fn a_throttled_edit_waits_for_retry_after_and_the_reply_still_completes() {
    let mut ch = Channel::new(json!({}));
    ch.model.push(slow_text(
        &["one ", "two ", "three"],
        Duration::from_millis(1200),
    ));
    ch.api.throttle_next_edits(&[2]);
    ch.start();
    ch.api.push_text(CHAT, "count");
    ch.api.wait_until("the whole reply", WAIT, |api| {
        api.messages(CHAT).iter().any(|m| m.text == "one two three")
    });
    ch.stop();
    let edits = ch.api.calls("editMessageText");
    assert!(edits.len() >= 2, "{edits:?}");
    let waited = edits[1].at.duration_since(edits[0].at);
    assert!(
        waited >= Duration::from_secs(2),
        "retry_after 2 honoured: {waited:?}"
    );
    assert_eq!(ch.api.messages(CHAT).len(), 1, "still one message");
}

#[test]
fn a_restart_does_not_answer_an_update_twice_and_the_chat_keeps_its_session() {
    let mut ch = Channel::new(json!({}));
    ch.model.push(Reply::text(&["one"]));
    ch.start();
    ch.api.push_text(CHAT, "first");
    ch.api.wait_for_text(CHAT, "one", WAIT);

    let status = ch.gg(&["telegram", "status", "--json"]);
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["configured"], true, "{status}");
    assert_eq!(status["ggdRunning"], true, "{status}");
    assert_eq!(status["polling"], true, "{status}");
    assert!(status["status"]["lastUpdateId"].is_i64(), "{status}");
    assert!(
        status["status"]["chats"][CHAT.to_string()]["session"].is_string(),
        "{status}"
    );
    let human = ch.gg(&["telegram", "status"]);
    let human = String::from_utf8(human.stdout).unwrap();
    assert!(human.contains("polling: yes"), "{human}");
    assert!(human.contains(&CHAT.to_string()), "{human}");

    ch.stop();
    let human = String::from_utf8(ch.gg(&["telegram", "status"]).stdout).unwrap();
    assert!(
        human.contains("polling: no (ggd is not running)"),
        "{human}"
    );

    // The fake never forgets an update: only the saved offset keeps "first" from coming back.
    ch.model.push(Reply::text(&["two"]));
    ch.start();
    ch.api.push_text(CHAT, "second");
    ch.api.wait_for_text(CHAT, "two", WAIT);
    ch.stop();

    let answers: Vec<String> = ch
        .api
        .messages(CHAT)
        .iter()
        .map(|m| m.text.clone())
        .collect();
    assert_eq!(answers, ["one", "two"]);
    let bodies = ch.model.request_bodies();
    assert_eq!(bodies.len(), 2, "first was not answered again: {bodies:#?}");
    // The second turn continued the chat's session: the first exchange is in its history.
    let history = bodies[1]["messages"].to_string();
    assert_eq!(history.matches("first").count(), 1, "{history}");
    assert!(history.contains("one"), "{history}");
}

#[test]
fn a_dangerous_command_from_a_chat_is_denied_and_audited_with_the_chat_as_origin() {
    let mut ch = Channel::new(json!({"approval": "never"}));
    std::fs::write(ch.fx.home.join("keep.txt"), "precious").unwrap();
    ch.model.push(Reply::tool_call(
        "d1",
        "bash",
        &json!({"command": "rm -rf \"$HOME\""}).to_string(),
    ));
    ch.model.push(Reply::tool_call(
        "n1",
        "bash",
        &json!({"command": "touch normal-ran"}).to_string(),
    ));
    ch.model.push(Reply::text(&["could not do it"]));
    ch.start();
    ch.api.push_text(CHAT, "wipe my home");
    ch.api.wait_for_text(CHAT, "could not do it", WAIT);
    ch.stop();

    assert!(
        ch.fx.home.join("keep.txt").exists(),
        "the dangerous command did not run"
    );
    assert!(
        ch.fx.repo.join("normal-ran").exists(),
        "approval never runs normal calls"
    );
    let shown = &ch.api.messages(CHAT)[0].text;
    assert!(
        shown.contains("denied (dangerous-unattended)"),
        "the chat is told: {shown}"
    );
    let rows = ch.audit(&ch.session_of(CHAT));
    assert_eq!(rows.len(), 2, "{rows:#?}");
    let denied = &rows[0]["audit"];
    assert_eq!(denied["decision"]["action"], "deny", "{denied}");
    assert_eq!(
        denied["decision"]["rule"], "dangerous-unattended",
        "{denied}"
    );
    assert_eq!(
        denied["decision"]["mode"], "unattended-allow-all",
        "{denied}"
    );
    assert_eq!(denied["origin"], format!("telegram:{CHAT}"), "{denied}");
    let ran = &rows[1]["audit"];
    assert_eq!(ran["decision"]["rule"], "unattended-allow-all", "{ran}");
    assert_eq!(ran["origin"], format!("telegram:{CHAT}"), "{ran}");
    let human = String::from_utf8(
        ch.fx
            .gg()
            .arg("audit")
            .arg(ch.session_of(CHAT))
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(human.contains(&format!("from telegram:{CHAT}")), "{human}");
}

#[test]
fn an_approval_button_counts_once_only_from_the_chat_asked_and_never_for_a_dangerous_call() {
    // The default sandbox: the approved command runs confined.
    let mut ch = Channel::new(json!({"approval": "ask", "sandbox": true}));
    ch.model.push(Reply::tool_call(
        "d1",
        "bash",
        &json!({"command": "rm -rf \"$HOME\""}).to_string(),
    ));
    ch.model.push(Reply::tool_call(
        "n1",
        "bash",
        &json!({"command": "touch approved-from-chat"}).to_string(),
    ));
    ch.model.push(Reply::text(&["done"]));
    ch.start();
    ch.api.push_text(CHAT, "make the file");
    let question = ch.api.wait_for_text(CHAT, "Approve tool call: bash", WAIT);
    assert!(
        question.text.contains("touch approved-from-chat"),
        "{}",
        question.text
    );
    let buttons = question.keyboard.clone().expect("inline keyboard")["inline_keyboard"][0].clone();
    let allow = buttons[0]["callback_data"].as_str().unwrap().to_string();
    assert!(allow.starts_with("gg:allow:"), "{allow}");
    // Only one question: the dangerous call was denied without asking.
    let asked = ch
        .api
        .messages(CHAT)
        .iter()
        .filter(|m| m.text.contains("Approve tool call"))
        .count();
    assert_eq!(asked, 1);

    // Forged presses: a chat not on the allow-list, and another allowed chat.
    ch.api.push_press(STRANGER, question.message_id, &allow);
    ch.api
        .push_press(OTHER_ALLOWED, question.message_id, &allow);
    ch.api.wait_until("both presses answered", WAIT, |api| {
        api.calls("answerCallbackQuery").len() >= 2
    });
    for call in ch.api.calls("answerCallbackQuery") {
        assert!(
            call.body["text"].as_str().unwrap().starts_with("Refused"),
            "{:?}",
            call.body
        );
    }
    assert!(
        !ch.fx.repo.join("approved-from-chat").exists(),
        "nothing ran"
    );
    assert_eq!(
        ch.model.requests().len(),
        2,
        "the call still waits for the chat"
    );

    ch.api.push_press(CHAT, question.message_id, &allow);
    ch.api.wait_for_text(CHAT, "done", WAIT);
    assert!(
        ch.fx.repo.join("approved-from-chat").exists(),
        "the approved call ran"
    );
    // The same press again: no longer pending.
    ch.api.push_press(CHAT, question.message_id, &allow);
    ch.api
        .wait_until("the replayed press answered", WAIT, |api| {
            api.calls("answerCallbackQuery").len() >= 4
        });
    let notices: Vec<String> = ch
        .api
        .calls("answerCallbackQuery")
        .iter()
        .map(|c| c.body["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(notices[2], "Allowed.");
    assert_eq!(notices[3], "This approval is no longer pending.");
    ch.stop();

    let rows = ch.audit(&ch.session_of(CHAT));
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert_eq!(rows[0]["audit"]["decision"]["rule"], "dangerous-remote");
    assert_eq!(rows[0]["audit"]["decision"]["action"], "deny");
    let approved = &rows[1]["audit"];
    assert_eq!(approved["decision"]["action"], "allow", "{approved}");
    assert_eq!(approved["decision"]["decidedBy"], "user", "{approved}");
    assert_eq!(approved["decision"]["rule"], "remote-ask", "{approved}");
    assert_eq!(approved["decision"]["mode"], "remote", "{approved}");
    assert_eq!(approved["origin"], format!("telegram:{CHAT}"), "{approved}");
    assert!(
        approved["sandbox"]["level"].is_string(),
        "ran confined: {approved}"
    );
}

#[test]
fn stop_cancels_the_running_turn_and_new_starts_another_session() {
    let mut ch = Channel::new(json!({}));
    ch.model.push(
        StreamReply::new()
            .event(text_chunk("working on it"))
            .stall()
            .reply(),
    );
    ch.start();
    ch.api.push_text(CHAT, "a long task");
    ch.api.wait_for_text(CHAT, "working on it", WAIT);
    ch.api.push_text(CHAT, "/stop");
    ch.api
        .wait_for_text(CHAT, "Stopping the running turn.", WAIT);
    ch.api.wait_for_text(CHAT, "[stopped]", WAIT);
    let first = ch.session_of(CHAT);

    ch.api.push_text(CHAT, "/new");
    ch.api.wait_for_text(CHAT, "New session started.", WAIT);
    let second = ch.session_of(CHAT);
    assert_ne!(first, second);
    ch.model.push(Reply::text(&["fresh"]));
    ch.api.push_text(CHAT, "hello again");
    ch.api.wait_for_text(CHAT, "fresh", WAIT);
    ch.stop();
    let history = ch.model.request_bodies()[1]["messages"].to_string();
    assert!(!history.contains("a long task"), "a new session: {history}");
    assert!(
        std::fs::read_to_string(&second)
            .unwrap()
            .contains("hello again")
    );
}

#[test]
fn a_turn_longer_than_the_run_timeout_is_stopped_and_the_chat_told() {
    let mut ch = Channel::new(json!({}));
    ch.model.push(
        StreamReply::new()
            .event(text_chunk("thinking"))
            .stall()
            .reply(),
    );
    ch.start_with(&["--run-timeout", "2s"]);
    ch.api.push_text(CHAT, "never ends");
    ch.api
        .wait_for_text(CHAT, "[stopped: the turn took longer than 2s]", WAIT);
    // The chat is free again.
    ch.model.push(Reply::text(&["next"]));
    ch.api.push_text(CHAT, "again");
    ch.api.wait_for_text(CHAT, "next", WAIT);
    ch.stop();
}

/// The `media` section and provider pointing at the media test server (speech as WAV, the
/// only format its espeak-ng side answers in).
fn use_media_server(ch: &Channel, media: &crate::media::MediaServer) {
    let path = ch.fx.home.join(".gg/config.json");
    let mut config: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    config["providers"]["media"] = json!({"baseURL": media.base_url, "apiKey": crate::media::KEY});
    config["media"] = json!({
        "speech": {"provider": "media", "format": "wav"},
        "transcription": {"provider": "media", "language": "en"},
    });
    std::fs::write(&path, config.to_string()).unwrap();
}

/// `text` spoken by the media server (through `gg media speak`), as WAV bytes.
fn spoken(ch: &Channel, text: &str, name: &str) -> Vec<u8> {
    let out = ch.gg(&["media", "speak", text, "--out", name]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(ch.fx.repo.join(name)).unwrap()
}

/// The text of the last user message of a model request.
fn last_user_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .unwrap_or_default()
}

#[test]
fn a_voice_note_is_transcribed_quoted_answered_and_spoken_back() {
    let Some(media) = crate::media::media_server() else {
        return;
    };
    let mut ch = Channel::new(json!({"replyVoice": true}));
    use_media_server(&ch, &media);
    let answer = "The doors are open.";
    ch.model.push(Reply::text(&[answer]));
    // Real speech. Telegram's voice notes are OGG/Opus named `.oga`; the media server's
    // recogniser reads WAV only, so the note's bytes are WAV under Telegram's name: gg goes by
    // the bytes.
    let note = spoken(&ch, crate::media::PHRASE, "note.wav");
    ch.api.add_file("voice-1", "voice/file_1.oga", note.clone());
    ch.start();
    ch.api.push_voice(CHAT, "voice-1", Some(note.len() as u64));
    ch.api.wait_for_text(CHAT, answer, WAIT);
    ch.api
        .wait_until("the spoken answer", WAIT, |api| !api.audio(CHAT).is_empty());
    ch.stop();

    // The transcript is quoted back first, then the answer follows.
    let messages = ch.api.messages(CHAT);
    assert_eq!(messages.len(), 2, "{messages:#?}");
    let quote = &messages[0];
    let heard = crate::media::words_recovered(&quote.text);
    assert!(heard >= 3, "only {heard} of 5 words in {:?}", quote.text);
    assert_eq!(
        quote.entities,
        Some(json!([{"type": "blockquote", "offset": 0,
                     "length": quote.text.encode_utf16().count()}])),
        "shown as a quote"
    );
    assert_eq!(messages[1].text, answer);
    assert_eq!(ch.api.downloads(), ["voice/file_1.oga"]);

    // The transcript was the prompt of a remote turn.
    let bodies = ch.model.request_bodies();
    assert_eq!(bodies.len(), 1, "{bodies:#?}");
    let prompt = last_user_text(&bodies[0]);
    assert!(
        prompt.contains(&format!("Voice message from Telegram chat {CHAT}")),
        "{prompt}"
    );
    assert!(prompt.contains("Nobody is at a terminal"), "{prompt}");
    let in_prompt = crate::media::words_recovered(&prompt);
    assert!(in_prompt >= 3, "only {in_prompt} of 5 words in {prompt}");

    // The answer came back as an audio file (the speech format is WAV, not OGG/Opus) whose bytes
    // are the speech server's own for the answer.
    let sent = ch.api.audio(CHAT);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].method, "sendAudio");
    assert_eq!(sent[0].file_name, "answer.wav");
    assert_eq!(sent[0].content_type, "audio/wav");
    assert_eq!(
        sent[0].bytes,
        spoken(&ch, answer, "answer.wav"),
        "the server's speech, unchanged"
    );

    // The token is in the download's URL path: it is nowhere else.
    let mut places = vec![("ggd's log".to_string(), ch.log_text())];
    for file in files_under(&ch.fx.sessions)
        .into_iter()
        .chain(files_under(&ch.fx.home.join(".gg")))
    {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).to_string();
        places.push((file.display().to_string(), text));
    }
    for body in bodies {
        places.push(("a model request".into(), body.to_string()));
    }
    for (place, text) in &places {
        assert!(!text.contains("AAF-secret"), "the token is in {place}");
    }
}

#[test]
fn an_oversize_voice_note_is_refused_without_a_download_and_a_download_stops_at_the_limit() {
    let mut ch = Channel::new(json!({"replyVoice": true}));
    ch.start();
    ch.api.push_voice(CHAT, "big-voice", Some(21 * 1024 * 1024));
    ch.api
        .push_audio(CHAT, "big-audio", "lecture.mp3", 30 * 1024 * 1024);
    ch.api.wait_until("both refusals", WAIT, |api| {
        api.messages(CHAT)
            .iter()
            .filter(|m| m.text.contains("gg takes voice and audio up to 20 MiB"))
            .count()
            == 2
    });
    assert!(ch.api.calls("getFile").is_empty(), "not even asked for");
    assert!(ch.api.downloads().is_empty(), "nothing downloaded");

    // A message that does not say its size, from a server that understates it: the download
    // itself stops at the limit.
    ch.api.add_file_reporting(
        "understated",
        "voice/file_9.oga",
        vec![0; 21 * 1024 * 1024],
        1000,
    );
    ch.api.push_voice(CHAT, "understated", None);
    let stopped = ch.api.wait_for_text(
        CHAT,
        "Could not fetch the voice message (the file is larger than 20 MiB)",
        WAIT,
    );
    ch.stop();
    assert!(
        stopped.text.ends_with("Nothing was run."),
        "{}",
        stopped.text
    );
    let texts: Vec<String> = ch
        .api
        .messages(CHAT)
        .iter()
        .map(|m| m.text.clone())
        .collect();
    assert!(
        texts[0].starts_with("This voice message is 21 MiB"),
        "{texts:?}"
    );
    assert!(
        texts[1].starts_with("This voice message is 30 MiB"),
        "{texts:?}"
    );
    assert!(texts.iter().all(|t| t.ends_with("Nothing was run.")));
    assert!(ch.model.requests().is_empty(), "nothing reached the model");
}

#[test]
fn wordless_audio_unreadable_audio_and_a_lost_file_get_a_clear_reply_and_run_nothing() {
    let Some(media) = crate::media::media_server() else {
        return;
    };
    let mut ch = Channel::new(json!({}));
    use_media_server(&ch, &media);
    // One second of steady hiss at 16 kHz (uniform noise within ±3000): a well-formed WAV in
    // which PocketSphinx hears no words (measured: ±1000 to ±5000 from several seeds all give
    // ""; pure silence, by contrast, is heard as "dog").
    let mut hiss = b"RIFF".to_vec();
    hiss.extend_from_slice(&(36u32 + 32_000).to_le_bytes());
    hiss.extend_from_slice(b"WAVEfmt ");
    for field in [16u32.to_le_bytes(), [1, 0, 1, 0], 16_000u32.to_le_bytes()] {
        hiss.extend_from_slice(&field);
    }
    hiss.extend_from_slice(&32_000u32.to_le_bytes());
    hiss.extend_from_slice(&[2, 0, 16, 0]);
    hiss.extend_from_slice(b"data");
    hiss.extend_from_slice(&32_000u32.to_le_bytes());
    let mut state: u64 = 12345;
    for _ in 0..16_000 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let sample = i16::try_from((state >> 33) % 6001).unwrap() - 3000;
        hiss.extend_from_slice(&sample.to_le_bytes());
    }
    ch.api.add_file("quiet", "voice/file_2.oga", hiss);
    // Not audio at all: named `.oga`, it goes to the engine as OGG, which it does not read.
    ch.api
        .add_file("noise", "voice/file_3.oga", b"not audio at all".to_vec());
    ch.start();
    ch.api.push_voice(CHAT, "quiet", None);
    ch.api
        .wait_for_text(CHAT, "No words could be made out", WAIT);
    ch.api.push_voice(CHAT, "noise", None);
    let refused = ch
        .api
        .wait_for_text(CHAT, "Could not transcribe the voice message", WAIT);
    ch.api.push_voice(CHAT, "gone", None);
    let missing = ch
        .api
        .wait_for_text(CHAT, "Could not fetch the voice message", WAIT);
    ch.stop();
    assert!(
        refused
            .text
            .contains("media: transcription failed (status 400): Invalid file format"),
        "the engine's own reason: {}",
        refused.text
    );
    assert!(
        missing
            .text
            .contains("Bot API error 400: Bad Request: invalid file_id"),
        "{}",
        missing.text
    );
    assert_eq!(ch.api.downloads(), ["voice/file_2.oga", "voice/file_3.oga"]);
    assert!(ch.model.requests().is_empty(), "nothing reached the model");
    assert!(!ch.log_text().contains("AAF-secret"));
}

#[test]
fn poll_errors_back_off_honour_retry_after_and_the_token_never_leaks() {
    let mut ch = Channel::new(json!({"approval": "never"}));
    ch.api.fail_next_polls(&[
        Fault::TooManyRequests(2),
        Fault::Reset,
        Fault::BadGatewayEchoingPath,
    ]);
    ch.model.push(Reply::tool_call(
        "c1",
        "bash",
        &json!({"command": "cat ../secrets/bot-token; env; cat ~/.gg/telegram/*"}).to_string(),
    ));
    ch.model.push(Reply::text(&["hello"]));
    ch.start();
    ch.api
        .wait_until("four polls", WAIT, |api| api.calls("getUpdates").len() >= 4);
    let polls = ch.api.calls("getUpdates");
    assert!(
        polls[1].at.duration_since(polls[0].at) >= Duration::from_millis(1900),
        "retry_after 2 was waited out: {:?}",
        polls[1].at.duration_since(polls[0].at)
    );
    assert!(
        polls[3].at.duration_since(polls[2].at) >= Duration::from_millis(900),
        "errors back off"
    );
    ch.api.push_text(CHAT, "hi");
    ch.api.wait_for_text(CHAT, "hello", WAIT);
    let status = String::from_utf8(ch.gg(&["telegram", "status"]).stdout).unwrap();
    ch.stop();

    let log = ch.log_text();
    assert!(log.contains("getUpdates failed"), "{log}");
    assert!(
        log.contains("/bot[token]/getUpdates"),
        "the echo is redacted: {log}"
    );
    let mut places: Vec<(String, String)> = vec![
        ("ggd's log".into(), log),
        ("gg telegram status".into(), status),
    ];
    for file in files_under(&ch.fx.sessions)
        .into_iter()
        .chain(files_under(&ch.fx.home.join(".gg/telegram")))
    {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).to_string();
        places.push((file.display().to_string(), text));
    }
    for body in ch.model.request_bodies() {
        places.push(("a model request".into(), body.to_string()));
    }
    for (place, text) in &places {
        assert!(!text.contains(TOKEN), "the token is in {place}: {text}");
        assert!(
            !text.contains("AAF-secret"),
            "part of the token is in {place}"
        );
    }
    // The model's command ran, and could read neither the token file nor ~/.gg.
    let results = ch.model.tool_results();
    assert_eq!(results.len(), 1);
}

#[test]
fn ggd_refuses_to_start_a_telegram_channel_it_cannot_run() {
    let model = ScriptedServer::start();
    let fx = GgFixture::new(&model, json!({}), "repo");
    let out = fx
        .ggd()
        .arg("--telegram")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no \"telegram\" section"), "{err}");

    let config = json!({
        "default": "local:m",
        "providers": {"local": {"baseURL": model.base_url(), "apiKey": "k", "models": ["m"]}},
        "telegram": {"tokenFile": "/nonexistent/bot-token", "allowedChats": [1]},
    });
    std::fs::write(fx.home.join(".gg/config.json"), config.to_string()).unwrap();
    let out = fx.ggd().stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("telegram.tokenFile /nonexistent/bot-token"),
        "{err}"
    );

    let config = json!({"telegram": {"approval": "sometimes"}});
    std::fs::write(fx.home.join(".gg/config.json"), config.to_string()).unwrap();
    let out = fx.gg().args(["telegram", "status"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("telegram.approval"), "{err}");
}

/// The token file joins the deny-read policy of every gg process, not only of the ggd that
/// reads it: a `gg -p` session whose model tries to read it (a sandboxed script at each level,
/// and the read tool) gets nothing of it.
#[cfg(target_os = "linux")]
#[test]
fn the_token_file_is_hidden_from_every_session_of_gg() {
    for level in crate::sandbox_support::available_levels() {
        let ch = Channel::new(json!({}));
        let token_file = ch.fx.tmp.path().join("secrets/bot-token");
        std::fs::write(
            ch.fx.repo.join("app.sh"),
            format!("cat {} 2>&1; echo end", token_file.display()),
        )
        .unwrap();
        ch.model.push(Reply::tool_call(
            "r1",
            "read",
            &json!({"path": token_file}).to_string(),
        ));
        let (out, results) = support::run_bash_calls(
            &ch.fx,
            &ch.model,
            &[("GG_SANDBOX_BACKEND", level)],
            true,
            &["sh ./app.sh"],
            &["--yolo", "--sandbox"],
        );
        assert!(out.status.success(), "{level}: {out:?}");
        assert_eq!(results.len(), 2, "{level}: {results:?}");
        assert!(
            results[1].contains("end"),
            "{level}: the script ran: {results:?}"
        );
        for result in &results {
            assert!(
                !result.contains("AAF-secret"),
                "{level}: the token was read: {result}"
            );
        }
    }
}
