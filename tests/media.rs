//! Media end to end: the real `gg` and `ggd` against a real OpenAI-compatible media server
//! (`tests/media-server/server.py`) whose speech is espeak-ng, whose transcription is PocketSphinx
//! (the en-US model its PyPI wheel ships) and whose images Pillow draws from the prompt. Only
//! the chat model is scripted.
//!
//! What needs the engines is skipped with a `SKIP` line where they are missing, and fails instead
//! under `GG_REQUIRE_MEDIA=1` (CI installs them, `.ci/run`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

use crate::daemon_common::{self, StdioClient};
use crate::support::{self, GgFixture, RecordedRequest, Reply, ScriptedServer};

pub(crate) const PHRASE: &str = "open the pod bay doors";
/// The key the media server asks for.
pub(crate) const KEY: &str = "sk-media-test";

/// The media server, stopped when dropped (the Telegram tests use it too).
pub(crate) struct MediaServer {
    child: Child,
    pub(crate) base_url: String,
}

impl Drop for MediaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the media server, or says why it cannot (and fails under `GG_REQUIRE_MEDIA=1`).
pub(crate) fn media_server() -> Option<MediaServer> {
    let on_path = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(name).is_file()))
    };
    if !on_path("espeak-ng") {
        support::skip_unless_required("GG_REQUIRE_MEDIA", "espeak-ng is not on PATH");
        return None;
    }
    let imports = Command::new("python3")
        .args(["-c", "import pocketsphinx, PIL"])
        .stderr(Stdio::null())
        .status();
    if !imports.is_ok_and(|s| s.success()) {
        support::skip_unless_required(
            "GG_REQUIRE_MEDIA",
            "python3 cannot import pocketsphinx and PIL (pip install pocketsphinx pillow)",
        );
        return None;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/media-server/server.py");
    let mut child = Command::new("python3")
        .arg(script)
        .args(["--key", KEY])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 starts the media server");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("the media server prints its port");
    let port: u16 = line.trim().parse().expect("a port number");
    Some(MediaServer {
        child,
        base_url: format!("http://127.0.0.1:{port}/v1"),
    })
}

/// The chat provider `local:m` (scripted) and the media provider `media` (the real engines),
/// speech as WAV, plus `extra`.
fn fixture(chat: &ScriptedServer, media: &MediaServer, extra: Value) -> GgFixture {
    let mut config = json!({
        "providers": {
            "local": {"baseURL": chat.base_url(), "apiKey": "sk-test", "models": ["m"]},
            "media": {"baseURL": media.base_url, "apiKey": KEY},
        },
        "media": {
            "image": {"provider": "media", "size": "64x48"},
            "speech": {"provider": "media", "format": "wav"},
            "transcription": {"provider": "media", "language": "en"},
        },
    });
    if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
        config.extend(extra);
    }
    GgFixture::new(chat, config, "repo")
}

fn gg(fx: &GgFixture, args: &[&str]) -> std::process::Output {
    fx.gg().args(args).output().expect("gg runs")
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// How many of the phrase's words the transcript has.
pub(crate) fn words_recovered(transcript: &str) -> usize {
    let heard: Vec<String> = transcript
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .collect();
    PHRASE
        .split_whitespace()
        .filter(|w| heard.iter().any(|h| h == w))
        .count()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn speak_then_transcribe_recovers_the_words() {
    let Some(media) = media_server() else { return };
    let chat = ScriptedServer::start();
    let fx = fixture(&chat, &media, json!({}));

    let out = gg(&fx, &["media", "speak", PHRASE, "--out", "a.wav"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("a.wav (wav, "), "{}", stdout(&out));
    let wav = std::fs::read(fx.repo.join("a.wav")).unwrap();
    assert!(wav.starts_with(b"RIFF") && &wav[8..12] == b"WAVE");
    assert_eq!(mode(&fx.repo.join("a.wav")), 0o600);

    let out = gg(&fx, &["media", "transcribe", "a.wav"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let recovered = words_recovered(&text);
    assert!(recovered >= 3, "only {recovered} of 5 words in {text:?}");

    let out = gg(&fx, &["media", "transcribe", "a.wav", "--json"]);
    let json: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["file"], "a.wav");
    assert_eq!(json["provider"], "media");
    assert_eq!(json["model"], "whisper-1");
    assert!(
        words_recovered(json["text"].as_str().unwrap()) >= 3,
        "{json}"
    );
    // The chat model was never asked anything.
    assert!(chat.requests().is_empty());

    // Without --out the audio is gg's own: under ~/.gg/media/speech, private.
    let out = gg(&fx, &["media", "speak", "hello"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    let path = printed.split(" (").next().unwrap();
    assert!(
        path.starts_with(&fx.home.join(".gg/media/speech/").display().to_string()),
        "{printed}"
    );
    assert_eq!(mode(Path::new(path)), 0o600);
    assert_eq!(mode(&fx.home.join(".gg/media/speech")), 0o700);
}

#[test]
fn images_are_real_pngs_of_the_asked_size_saved_privately() {
    let Some(media) = media_server() else { return };
    let chat = ScriptedServer::start();
    let fx = fixture(&chat, &media, json!({}));

    // The configured size (64x48), two images, under ~/.gg/media/images.
    let out = gg(&fx, &["media", "image", "a", "red", "fox", "--n", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<String> = stdout(&out).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    for line in &lines {
        assert!(line.ends_with(" (64x48)"), "{line}");
        let path = line.trim_end_matches(" (64x48)");
        assert!(path.starts_with(&fx.home.join(".gg/media/images/").display().to_string()));
        assert!(
            std::fs::read(path)
                .unwrap()
                .starts_with(b"\x89PNG\r\n\x1a\n")
        );
        assert_eq!(mode(Path::new(path)), 0o600);
    }

    let out = gg(
        &fx,
        &[
            "media", "image", "a fox", "--size", "32x16", "--out", "fox.png",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "fox.png (32x16)\n");
    // An existing --out is kept unless --force.
    let out = gg(&fx, &["media", "image", "again", "--out", "fox.png"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("exists (pass --force to replace it)"),
        "{}",
        stderr(&out)
    );
    let out = gg(
        &fx,
        &["media", "image", "a fox", "--n", "2", "--out", "x.png"],
    );
    assert!(
        stderr(&out).contains("--out takes one image"),
        "{}",
        stderr(&out)
    );
    // A symlink planted at --out is not written through.
    std::os::unix::fs::symlink(fx.home.join("victim"), fx.repo.join("link.png")).unwrap();
    let out = gg(
        &fx,
        &["media", "image", "x", "--out", "link.png", "--force"],
    );
    assert!(stderr(&out).contains("symlink"), "{}", stderr(&out));
    assert!(!fx.home.join("victim").exists());
}

#[test]
fn errors_are_clear_and_nothing_is_sent_for_bad_input() {
    let Some(media) = media_server() else { return };
    let chat = ScriptedServer::start();
    let fx = fixture(&chat, &media, json!({}));
    let fails = |args: &[&str], needle: &str| {
        let out = gg(&fx, args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = stderr(&out);
        assert!(
            err.starts_with("gg media: ") && err.contains(needle),
            "{args:?}: {err}"
        );
    };
    // The provider's own 4xx message, with its status.
    fails(
        &["media", "speak", "hi", "--format", "mp3"],
        "speech failed (status 400): response_format 'mp3' is not supported by this server",
    );
    fails(
        &[
            "--api-key",
            "wrong",
            "--model",
            "media:tts-1",
            "media",
            "speak",
            "hi",
        ],
        "speech failed (status 401): Incorrect API key provided.",
    );
    // Refused before anything is sent: format, size, a deny-read path. The endpoint named here
    // listens nowhere, so an attempt to send would fail with a connection error instead.
    let nowhere = ["--base-url", "http://127.0.0.1:9/v1", "media", "transcribe"];
    std::fs::write(fx.repo.join("notes.txt"), "not audio").unwrap();
    fails(
        &[&nowhere[..], &["notes.txt"]].concat(),
        "unsupported audio format \".txt\"",
    );
    let big = std::fs::File::create(fx.repo.join("big.wav")).unwrap();
    big.set_len(26 * 1024 * 1024).unwrap();
    fails(
        &[&nowhere[..], &["big.wav"]].concat(),
        "big.wav is 26 MiB; the transcription endpoint takes at most 25 MiB",
    );
    std::fs::create_dir_all(fx.home.join(".ssh")).unwrap();
    std::fs::write(fx.home.join(".ssh/key.wav"), b"RIFF").unwrap();
    let hidden = fx.home.join(".ssh/key.wav").display().to_string();
    fails(
        &[&nowhere[..], &[hidden.as_str()]].concat(),
        "deny-read path",
    );
    // The same endpoint for a valid file: the connection error is what an attempt looks like.
    std::fs::write(fx.repo.join("ok.wav"), b"RIFF\0\0\0\0WAVE").unwrap();
    fails(
        &[&nowhere[..], &["ok.wav"]].concat(),
        "transcription failed: error sending request",
    );
    fails(
        &["media", "speak", "hi", "--format", "wav", "--out", "x.mp3"],
        "--format wav does not match --out's extension .mp3",
    );
    fails(&["media", "image", " "], "prompt must not be empty");
    // A flag the subcommand does not take is a usage error, not text.
    let out = gg(&fx, &["media", "speak", "hi", "--yolo"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = gg(&fx, &["--yolo", "media", "speak", "hi"]);
    assert!(
        stderr(&out).contains("--yolo does not apply to 'gg media'"),
        "{}",
        stderr(&out)
    );
    // A refused call writes nothing.
    assert!(!fx.repo.join("x.mp3").exists());
}

/// The last tool result of a chat request (the scripted model reads it, as a model would).
fn last_tool_result(request: &RecordedRequest) -> String {
    let body = request.json();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

#[test]
fn the_agent_speaks_transcribes_and_the_audit_shows_each_class() {
    let Some(media) = media_server() else { return };
    let chat = ScriptedServer::start();
    let fx = fixture(&chat, &media, json!({"tools": {"media": true}}));
    chat.push(Reply::tool_call(
        "c1",
        "speak",
        &json!({"text": PHRASE}).to_string(),
    ));
    // The model transcribes the file the speak call reported.
    chat.push(Reply::computed(|request| {
        let result = last_tool_result(request);
        let path = result
            .strip_prefix("saved speech: ")
            .and_then(|rest| rest.split(" (").next())
            .unwrap_or("missing")
            .to_string();
        Reply::tool_call("c2", "transcribe", &json!({ "path": path }).to_string())
    }));
    // A path outside the working directory and ~/.gg/media is refused like a file tool's.
    std::fs::write(fx.tmp.path().join("outside.wav"), b"RIFF").unwrap();
    chat.push(Reply::tool_call(
        "c3",
        "transcribe",
        &json!({"path": "../outside.wav"}).to_string(),
    ));
    chat.push(Reply::text(&[
        "The recording says: open the pod bay doors.",
    ]));

    let out = fx
        .gg()
        .args(["--yolo", "-p", "say it and read it back"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    // The tools were offered to the model.
    let first = chat.requests()[0].json();
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for name in ["image_generate", "speak", "transcribe"] {
        assert!(offered.contains(&name), "{name} not in {offered:?}");
    }
    let results = chat.tool_results();
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[0].starts_with("saved speech: "), "{}", results[0]);
    assert!(results[0].contains("(wav, "), "{}", results[0]);
    // The transcript is third-party text: inside the untrusted-content delimiters.
    assert!(
        results[1].contains("<untrusted-content source=\"transcription of "),
        "{}",
        results[1]
    );
    let inside = results[1]
        .split_once("\">\n")
        .map(|(_, rest)| rest)
        .unwrap_or_default();
    assert!(words_recovered(inside) >= 3, "{}", results[1]);
    assert!(
        results[2].contains("outside working directory"),
        "{}",
        results[2]
    );

    // The audit trail: each call with the class the chain decided.
    let audit = fx.gg().args(["audit", "--json"]).output().unwrap();
    assert!(audit.status.success(), "{}", stderr(&audit));
    let rows: Vec<Value> = stdout(&audit)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tools: Vec<&str> = rows.iter().map(|r| r["tool"].as_str().unwrap()).collect();
    assert_eq!(tools, ["speak", "transcribe", "transcribe"], "{rows:?}");
    for row in &rows[..2] {
        assert_eq!(row["audit"]["classification"]["verdict"], "normal", "{row}");
        assert_eq!(row["audit"]["decision"]["action"], "allow", "{row}");
        assert_eq!(row["status"], "ok", "{row}");
    }
    assert_eq!(rows[2]["status"], "error", "{}", rows[2]);
    // The table form names the class too.
    let table = stdout(&fx.gg().args(["audit"]).output().unwrap());
    assert!(
        table.contains("speak") && table.contains("normal"),
        "{table}"
    );
}

#[test]
fn the_media_tools_are_off_unless_enabled() {
    let chat = ScriptedServer::start();
    chat.push(Reply::text(&["nothing to do"]));
    let fx = GgFixture::new(&chat, json!({}), "repo");
    let out = fx.gg().args(["-p", "hi"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let first = chat.requests()[0].json();
    let offered: Vec<String> = first["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default();
    for name in ["image_generate", "speak", "transcribe"] {
        assert!(
            !offered.iter().any(|o| o == name),
            "{name} offered: {offered:?}"
        );
    }
}

#[test]
fn ggd_speaks_transcribes_and_draws_for_its_clients() {
    let Some(media) = media_server() else { return };
    let chat = ScriptedServer::start();
    let e = daemon_common::env();
    std::fs::create_dir_all(e.home.join(".gg")).unwrap();
    let config = json!({
        "default": "media:m",
        "providers": {"media": {"baseURL": media.base_url, "apiKey": KEY}},
        "media": {"speech": {"format": "wav"}},
    });
    std::fs::write(e.home.join(".gg/config.json"), config.to_string()).unwrap();
    let client = StdioClient::spawn(daemon_common::ggd(&e, &chat.base_url(), &[]));
    let info = client.ok("system.info", json!({}));
    assert_eq!(info["protocolVersion"], "1.6");
    assert!(
        info["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("media"))
    );

    let spoken = client.ok("media.speak", json!({"text": PHRASE}));
    assert_eq!(spoken["format"], "wav");
    assert!(spoken["durationMs"].as_u64().unwrap() > 300, "{spoken}");
    let path = spoken["path"].as_str().unwrap();
    assert!(path.starts_with(&e.home.join(".gg/media/speech/").display().to_string()));
    assert_eq!(mode(Path::new(path)), 0o600);

    // By path (the speech just made, under ~/.gg/media) and inline (an upload).
    let heard = client.ok("media.transcribe", json!({"path": path}));
    assert!(
        words_recovered(heard["text"].as_str().unwrap()) >= 3,
        "{heard}"
    );
    let heard = client.ok(
        "media.transcribe",
        json!({"data": spoken["data"], "fileName": "upload.wav"}),
    );
    assert!(
        words_recovered(heard["text"].as_str().unwrap()) >= 3,
        "{heard}"
    );

    // Paths follow the file tools' rules; bad input is the caller's mistake (-32602).
    std::fs::create_dir_all(e.home.join(".ssh")).unwrap();
    std::fs::copy(path, e.home.join(".ssh/a.wav")).unwrap();
    for (params, needle) in [
        (
            json!({"path": "/etc/hostname.wav"}),
            "outside working directory",
        ),
        (
            json!({"path": e.home.join(".ssh/a.wav")}),
            "outside working directory",
        ),
        (json!({"path": "missing.wav"}), "No such file"),
        (
            json!({"data": "UklGRg==", "fileName": "a.txt"}),
            "unsupported audio format",
        ),
        (json!({}), "give either path, or data with fileName"),
    ] {
        let err = client.err("media.transcribe", params.clone());
        assert_eq!(err["code"], -32602, "{params}: {err}");
        assert!(
            err["message"].as_str().unwrap().contains(needle),
            "{params}: {err}"
        );
    }
    // A deny-read path inside the working directory is refused where it really is.
    std::os::unix::fs::symlink(e.home.join(".ssh"), e.project.join("keys")).unwrap();
    let err = client.err("media.transcribe", json!({"path": "keys/a.wav"}));
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("outside working directory"),
        "{err}"
    );

    let drawn = client.ok("media.image", json!({"prompt": "a fox", "size": "40x30"}));
    let image = &drawn["images"][0];
    assert_eq!(
        (image["width"].as_u64(), image["height"].as_u64()),
        (Some(40), Some(30))
    );
    assert_eq!(image["mimeType"], "image/png");
    // media.read gives a transcript the image back; only private PNGs under ~/.gg/media.
    let read = client.ok("media.read", json!({"path": image["path"]}));
    assert_eq!(read["data"], image["data"]);
    let err = client.err("media.read", json!({"path": e.project.join("x.png")}));
    assert_eq!(err["code"], -32602, "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("not under ~/.gg/media"),
        "{err}"
    );
    // The provider's error arrives with its status and message (-32000).
    let err = client.err("media.speak", json!({"text": "hi", "format": "mp3"}));
    assert_eq!(err["code"], -32000, "{err}");
    assert!(
        err["message"].as_str().unwrap().contains("(status 400)"),
        "{err}"
    );
}

#[test]
fn the_web_ui_draws_plays_and_transcribes_an_upload() {
    let web = Path::new(env!("CARGO_MANIFEST_DIR")).join("web");
    let chromium = std::env::var_os("GG_CHROMIUM")
        .map_or_else(|| std::path::PathBuf::from("/usr/bin/chromium"), Into::into);
    let node = Command::new("node").arg("--version").output();
    if !chromium.exists()
        || !node.is_ok_and(|o| o.status.success())
        || !web.join("node_modules/playwright-core").exists()
    {
        support::skip_unless_required(
            "GG_REQUIRE_BROWSER",
            "the browser test needs chromium, node and web/node_modules (npm ci --prefix web)",
        );
        return;
    }
    let Some(media) = media_server() else { return };
    let chat = ScriptedServer::start();
    let e = daemon_common::env();
    std::fs::create_dir_all(e.home.join(".gg")).unwrap();
    let config = json!({
        "default": "local:m",
        "providers": {
            "local": {"baseURL": chat.base_url(), "apiKey": "sk-test", "models": ["m"]},
            "media": {"baseURL": media.base_url, "apiKey": KEY},
        },
        "media": {
            "image": {"provider": "media", "size": "64x48"},
            "speech": {"provider": "media", "format": "wav"},
            "transcription": {"provider": "media"},
        },
        "tools": {"media": true},
    });
    std::fs::write(e.home.join(".gg/config.json"), config.to_string()).unwrap();
    // A session in which the agent generated an image: the page shows it in the transcript.
    chat.push(Reply::tool_call(
        "c1",
        "image_generate",
        &json!({"prompt": "a fox"}).to_string(),
    ));
    chat.push(Reply::text(&["Here is the fox."]));
    let run = Command::new(env!("CARGO_BIN_EXE_gg"))
        .current_dir(&e.project)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &e.home)
        .env("GG_SESSION_DIR", &e.sessions)
        .args(["--yolo", "-p", "draw a fox"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    const TOKEN: &str = "media-e2e-0123456789abcdef0123456789abcdef";
    let d = daemon_common::HttpDaemon::spawn(daemon_common::ggd(&e, &chat.base_url(), &[]), TOKEN);
    // The recording the page uploads: speech the daemon made.
    let spoken = d.ok("media.speak", json!({"text": PHRASE}));
    let upload = spoken["path"].as_str().unwrap().to_string();
    let status = Command::new("node")
        .arg("e2e/media.mjs")
        .current_dir(&web)
        .env(
            "GG_WEB_URL",
            format!("http://127.0.0.1:{}/#token={TOKEN}", d.addr.port()),
        )
        .env("GG_MEDIA_UPLOAD", &upload)
        .env("GG_WEB_PROFILE_ROOT", e.tmp.path())
        .stdin(Stdio::null())
        .status()
        .expect("node runs");
    assert!(status.success(), "the media browser test failed ({status})");
}
