//! The real `ggd` in HTTP mode over loopback TCP: authentication, the Host check, CORS, the
//! JSON-RPC endpoint, SSE delivery, resume and approvals.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::daemon_common;
use crate::support;

use daemon_common::{HttpDaemon, env, ggd, http};
use serde_json::{Value, json};
use support::{Reply, ScriptedServer, StreamReply, text_chunk};

const TOKEN: &str = "s3cret-token";

fn daemon(e: &daemon_common::Env, server: &ScriptedServer) -> HttpDaemon {
    HttpDaemon::spawn(ggd(e, &server.base_url(), &[]), TOKEN)
}

#[test]
fn authentication_host_check_cors_and_endpoints() {
    let e = env();
    let server = ScriptedServer::start();
    let d = daemon(&e, &server);
    let host = d.host();

    let healthz = http(d.addr, "GET", "/healthz", &[("Host", &host)], None);
    assert_eq!(healthz.status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&healthz.body).unwrap(),
        json!({"ok": true})
    );
    assert_eq!(healthz.headers["cache-control"], "no-store");
    assert_eq!(healthz.headers["x-content-type-options"], "nosniff");

    let unauthorized: [&[(&str, &str)]; 7] = [
        &[("Host", &host)],
        &[("Host", &host), ("Authorization", "Bearer wrong")],
        &[
            ("Host", &host),
            ("Authorization", "Bearer s3cret-token-and-more"),
        ],
        &[("Host", &host), ("Authorization", "Basic czNjcmV0LXRva2Vu")],
        &[("Host", &host), ("Authorization", "Bearers3cret-token")],
        &[("Host", &host), ("Authorization", "Bearer")],
        &[("Host", &host), ("Authorization", "s3cret-token")],
    ];
    for headers in unauthorized {
        for (method, path) in [
            ("GET", "/health"),
            ("POST", "/rpc"),
            ("GET", "/events?runId=x"),
        ] {
            let body = (method == "POST").then_some(r#"{"id":1,"method":"system.info"}"#);
            let r = http(d.addr, method, path, headers, body);
            assert_eq!(r.status, 401, "{method} {path} {headers:?}");
            assert_eq!(r.headers["www-authenticate"], "Bearer realm=\"gg\"");
            // Refused clients keep no connection (and so no slot) open.
            assert_eq!(r.headers["connection"], "close");
        }
    }
    // The scheme is case-insensitive and may be followed by more than one space (RFC 9110).
    for auth in [
        format!("bearer {TOKEN}"),
        format!("BEARER {TOKEN}"),
        format!("Bearer   {TOKEN}"),
    ] {
        let r = http(
            d.addr,
            "GET",
            "/health",
            &[("Host", &host), ("Authorization", &auth)],
            None,
        );
        assert_eq!(r.status, 200, "{auth}");
    }
    let health = d.request("GET", "/health", None);
    assert_eq!(health.status, 200);
    let health: Value = serde_json::from_str(&health.body).unwrap();
    assert_eq!(health["ok"], true);
    assert_eq!(health["protocolVersion"], "1.6");
    assert!(health["channels"].is_array());

    // DNS rebinding: a foreign Host is refused even with the token.
    let auth = format!("Bearer {TOKEN}");
    for bad_host in ["evil.example:80", "attacker.com", "127.0.0.1.nip.io"] {
        let r = http(
            d.addr,
            "GET",
            "/health",
            &[("Host", bad_host), ("Authorization", &auth)],
            None,
        );
        assert_eq!(r.status, 403, "{bad_host}");
    }
    let port = d.addr.port().to_string();
    let localhost = format!("localhost:{port}");
    assert_eq!(
        http(
            d.addr,
            "GET",
            "/health",
            &[("Host", &localhost), ("Authorization", &auth)],
            None
        )
        .status,
        200
    );

    // CORS: ggd's own origin only (not another loopback port, where a dev server whose pages a
    // sandboxed command wrote may answer); the preflight needs no token.
    let own = format!("http://localhost:{port}");
    let preflight = http(
        d.addr,
        "OPTIONS",
        "/rpc",
        &[("Host", &host), ("Origin", &own)],
        None,
    );
    assert_eq!(preflight.status, 204);
    assert_eq!(preflight.headers["access-control-allow-origin"], own);
    for other_port in ["http://localhost:5173", "http://127.0.0.1:5173"] {
        let dev = http(
            d.addr,
            "OPTIONS",
            "/rpc",
            &[("Host", &host), ("Origin", other_port)],
            None,
        );
        assert!(
            !dev.headers.contains_key("access-control-allow-origin"),
            "{other_port}"
        );
    }
    assert_eq!(
        preflight.headers["access-control-allow-methods"],
        "GET, POST, OPTIONS"
    );
    assert!(preflight.headers["access-control-allow-headers"].contains("Last-Event-ID"));
    assert_eq!(preflight.headers["access-control-max-age"], "600");
    let foreign = http(
        d.addr,
        "OPTIONS",
        "/rpc",
        &[("Host", &host), ("Origin", "https://evil.example")],
        None,
    );
    assert!(!foreign.headers.contains_key("access-control-allow-origin"));
    let with_origin = http(
        d.addr,
        "GET",
        "/health",
        &[
            ("Host", &host),
            ("Authorization", &auth),
            ("Origin", "null"),
        ],
        None,
    );
    // `Origin: null` is any sandboxed iframe or file: page: refused, never reflected.
    assert_eq!(with_origin.status, 403);
    assert!(
        !with_origin
            .headers
            .contains_key("access-control-allow-origin")
    );
    let loopback = http(
        d.addr,
        "GET",
        "/health",
        &[
            ("Host", &host),
            ("Authorization", &auth),
            ("Origin", &format!("http://127.0.0.1:{port}")),
        ],
        None,
    );
    assert_eq!(
        loopback.headers["access-control-allow-origin"],
        format!("http://127.0.0.1:{port}")
    );
    assert_eq!(loopback.headers["vary"], "Origin");

    // /rpc: 400 for undecodable bodies, 200 with the JSON-RPC answer otherwise.
    let bad = d.request("POST", "/rpc", Some("{nope"));
    assert_eq!(bad.status, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&bad.body).unwrap()["error"]["code"],
        -32700
    );
    assert_eq!(d.rpc("no.such", json!({}))["error"]["code"], -32601);
    assert_eq!(d.ok("system.info", json!({}))["protocolVersion"], "1.6");
    let rpc = d.request(
        "POST",
        "/rpc",
        Some(r#"{"jsonrpc":"2.0","id":7,"method":"session.list"}"#),
    );
    assert_eq!(rpc.headers["cache-control"], "no-store");
    assert_eq!(rpc.headers["content-type"], "application/json");
    let too_big = "x".repeat(4 * 1024 * 1024 + 1);
    assert_eq!(d.request("POST", "/rpc", Some(&too_big)).status, 413);
    assert_eq!(d.request("GET", "/rpc", None).status, 405);
    assert_eq!(d.request("GET", "/nowhere", None).status, 404);
    assert_eq!(d.request("GET", "/events", None).status, 400);
    assert_eq!(
        d.request("GET", "/events?runId=x&after=-1", None).status,
        400
    );
    let mut missing = d.events("runId=unknown", &[]);
    assert_eq!(missing.status, 200);
    let frame = missing.next_frame().unwrap();
    assert_eq!(frame.event, "error");
    assert_eq!(
        serde_json::from_str::<Value>(&frame.data).unwrap()["code"],
        -32002
    );
    assert!(missing.next_frame().is_none());
}

#[test]
fn remote_binds_need_allow_remote() {
    let e = env();
    let server = ScriptedServer::start();
    let out = ggd(
        &e,
        &server.base_url(),
        &["--http", "0.0.0.0:0", "--token", TOKEN],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("HTTP address must be loopback unless --allow-remote is set")
    );
}

#[test]
fn approval_round_trip_over_http_and_sse_with_resume() {
    let e = env();
    let server = ScriptedServer::with_replies([
        Reply::tool_call("c1", "write", r#"{"path":"via-http.txt","content":"sse"}"#),
        Reply::text(&["one ", "two ", "three"]),
    ]);
    let d = daemon(&e, &server);
    let session = d.new_session();
    let run = d.ok(
        "run.start",
        json!({"sessionId": session, "prompt": "write via http"}),
    )["runId"]
        .as_str()
        .unwrap()
        .to_string();

    let mut stream = d.events(&format!("runId={run}"), &[]);
    assert_eq!(stream.status, 200);
    assert_eq!(stream.headers["content-type"], "text/event-stream");
    assert_eq!(stream.headers["cache-control"], "no-cache");
    assert_eq!(stream.headers["x-accel-buffering"], "no");
    let approval = loop {
        let event = stream
            .next_event()
            .expect("stream ended before the approval");
        if event["type"] == "approval_requested" {
            break event;
        }
    };
    let approval_id = approval["approval"]["id"].clone();
    assert_eq!(
        d.ok(
            "run.approve",
            json!({"runId": run, "approvalId": approval_id, "allow": true})
        ),
        json!({"ok": true})
    );
    // Read a little further, then drop the connection mid-run.
    let mut seen = approval["sequence"].as_u64().unwrap();
    let event = stream.next_event().unwrap();
    assert_eq!(event["type"], "approval_resolved");
    seen = seen.max(event["sequence"].as_u64().unwrap());
    drop(stream);

    // Resume: Last-Event-ID wins over the URL's `after`, delivery continues without gaps.
    let last = seen.to_string();
    let mut resumed = d.events(&format!("runId={run}&after=0"), &[("Last-Event-ID", &last)]);
    let mut expected = seen + 1;
    let mut final_event = Value::Null;
    while let Some(event) = resumed.next_event() {
        assert_eq!(event["sequence"], json!(expected));
        expected += 1;
        final_event = event;
    }
    assert_eq!(
        final_event["type"], "run_completed",
        "the stream ends when the run is done"
    );
    assert_eq!(final_event["result"]["Content"], "one two three");
    assert_eq!(
        std::fs::read_to_string(e.project.join("via-http.txt")).unwrap(),
        "sse"
    );

    // A finished run can be replayed from any point with `after`.
    let mut replay = d.events(&format!("runId={run}&after=1"), &[]);
    assert_eq!(replay.next_event().unwrap()["sequence"], 2);
}

#[test]
fn sigint_with_an_open_stream_and_stdin_eof_both_end_the_daemon_cleanly() {
    let e = env();
    let server = ScriptedServer::with_replies([StreamReply::new()
        .event(text_chunk("working"))
        .stall()
        .reply()]);
    let mut d = daemon(&e, &server);
    let session = d.new_session();
    let run = d.start_unattended_run(&session, "long job");
    let mut stream = d.events(&format!("runId={run}"), &[]);
    while stream.next_event().expect("delta before shutdown")["agent"]["type"] != "text_delta" {}
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(d.child.id() as i32).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    assert!(d.child.wait().unwrap().success());
    // The open stream was closed by the shutdown, and the session file is intact.
    while stream.next_frame().is_some() {}
    let dir = gg::session::paths::project_dir(&e.sessions, &e.project).unwrap();
    let path =
        gg::session::paths::resolve_target(&e.sessions, &e.project, &session, false).unwrap();
    assert!(path.starts_with(&dir));
    let transcript = gg::session::load(&path).unwrap();
    assert_eq!(transcript.messages()[0].content, "long job");

    // HTTP mode with --exit-on-stdin-eof: the parent closing our stdin ends the daemon.
    let e = env();
    let mut d = HttpDaemon::spawn(ggd(&e, &server.base_url(), &["--exit-on-stdin-eof"]), TOKEN);
    assert_eq!(d.request("GET", "/health", None).status, 200);
    drop(d.child.stdin.take());
    assert!(d.child.wait().unwrap().success());
}

#[test]
fn a_client_that_never_finishes_its_headers_is_disconnected() {
    use std::io::{Read, Write};
    let e = env();
    let server = ScriptedServer::start();
    let d = daemon(&e, &server);
    let mut slow = std::net::TcpStream::connect(d.addr).unwrap();
    slow.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n", d.host()).as_bytes())
        .unwrap();
    slow.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let started = std::time::Instant::now();
    let mut buf = [0u8; 256];
    // The server closes (read returns 0 or an error) once the header timeout passes.
    let closed = matches!(slow.read(&mut buf), Ok(0) | Err(_));
    let waited = started.elapsed();
    assert!(closed, "the half-sent request was dropped");
    assert!(
        waited >= std::time::Duration::from_secs(8) && waited < std::time::Duration::from_secs(25),
        "dropped by the 10 s header timeout, after {waited:?}"
    );
    // Meanwhile the daemon kept serving others.
    let healthz = http(d.addr, "GET", "/healthz", &[("Host", &d.host())], None);
    assert_eq!(healthz.status, 200);
}

#[test]
fn a_quiet_event_stream_gets_keep_alive_comments() {
    let e = env();
    // The run waits for an approval that never comes, so its stream stays open and silent.
    let server = ScriptedServer::with_replies([Reply::tool_call(
        "c1",
        "write",
        r#"{"path":"waiting.txt","content":"x"}"#,
    )]);
    let d = daemon(&e, &server);
    let session = d.new_session();
    let run = d.ok("run.start", json!({"sessionId": session, "prompt": "wait"}))["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut stream = d.events(&format!("runId={run}"), &[]);
    let started = std::time::Instant::now();
    let keep_alive = loop {
        let frame = stream.next_frame().expect("stream stayed open");
        if let Some(comment) = frame.comment {
            break comment;
        }
    };
    let waited = started.elapsed();
    assert_eq!(keep_alive, "keepalive");
    assert!(
        waited >= std::time::Duration::from_secs(10) && waited < std::time::Duration::from_secs(25),
        "a comment after about 15 s of silence, got one after {waited:?}"
    );
    d.ok("run.cancel", json!({"runId": run}));
}

/// The body of an HTTP/1.1 chunked response, chunk by chunk, as the server wrote it.
fn read_chunks(reader: &mut impl std::io::BufRead) -> Vec<Vec<u8>> {
    let mut chunks = Vec::new();
    loop {
        let mut size_line = String::new();
        reader.read_line(&mut size_line).unwrap();
        let size_text = size_line.trim_end().split(';').next().unwrap();
        let size = usize::from_str_radix(size_text, 16)
            .unwrap_or_else(|_| panic!("chunk size line {size_line:?}"));
        if size == 0 {
            return chunks;
        }
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).unwrap();
        assert_eq!(&chunk[size..], b"\r\n", "a chunk ends with CRLF");
        chunk.truncate(size);
        chunks.push(chunk);
    }
}

#[test]
fn a_long_backlog_goes_out_in_bounded_parts_and_a_stalled_reader_holds_up_no_other_stream() {
    use std::io::{BufRead, BufReader, Write};
    const DELTAS: usize = 3000;
    let e = env();
    // About 6.5 MB of events: more than the socket buffers of a client that never reads hold.
    let delta = "x".repeat(2000);
    let mut backlog_reply = StreamReply::new();
    for _ in 0..DELTAS {
        backlog_reply = backlog_reply.event(text_chunk(&delta));
    }
    let server = ScriptedServer::with_replies([
        backlog_reply.done().reply(),
        Reply::text(&["live ", "and ", "well"]),
    ]);
    let d = daemon(&e, &server);
    let backlog = d.start_unattended_run(&d.new_session(), "a long answer");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let last = loop {
        let status = d.ok("run.get", json!({"runId": backlog}));
        if status["done"] == true {
            break status["lastSequence"].as_u64().unwrap();
        }
        assert!(std::time::Instant::now() < deadline, "the long run ended");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(last > DELTAS as u64, "every delta is an event");

    // Clients that attach from the start and never read a byte.
    let stalled: Vec<_> = (0..4)
        .map(|_| d.events(&format!("runId={backlog}"), &[]))
        .collect();
    assert!(stalled.iter().all(|s| s.status == 200));

    // Meanwhile a live run's client gets all of its run, and the RPC endpoint answers.
    let live = d.start_unattended_run(&d.new_session(), "a short answer");
    let mut stream = d.events(&format!("runId={live}"), &[]);
    let mut expected = 1;
    let mut final_event = Value::Null;
    while let Some(event) = stream.next_event() {
        assert_eq!(event["sequence"], json!(expected), "in order, none missing");
        expected += 1;
        final_event = event;
    }
    assert_eq!(final_event["type"], "run_completed");
    assert_eq!(final_event["result"]["Content"], "live and well");
    assert!(d.ok("system.info", json!({})).is_object());

    // A client from sequence 0, over HTTP/1.1 so the parts the daemon wrote show as chunks:
    // every event exactly once, in order, and no part much larger than the bound.
    let mut socket = std::net::TcpStream::connect(d.addr).unwrap();
    socket
        .set_read_timeout(Some(daemon_common::TIMEOUT))
        .unwrap();
    write!(
        socket,
        "GET /events?runId={backlog} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n",
        d.host()
    )
    .unwrap();
    let mut reader = BufReader::new(socket);
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        head.push(line.trim_end().to_ascii_lowercase());
    }
    assert!(head[0].starts_with("http/1.1 200"), "{head:?}");
    assert!(
        head.contains(&"transfer-encoding: chunked".to_string()),
        "{head:?}"
    );
    let chunks = read_chunks(&mut reader);
    // Each chunk is whole frames; one holding several carries at most the bound of event text
    // (the final event, holding the whole answer, is larger than the bound and goes alone).
    let frame_overhead = "id: 18446744073709551615\nevent: event\ndata: \n\n".len();
    for chunk in &chunks {
        let frames = chunk.windows(2).filter(|w| w == b"\n\n").count();
        assert!(
            frames == 1
                || chunk.len() <= gg::daemon::http::SSE_PART_BYTES + frames * frame_overhead,
            "a part of {} bytes with {frames} events",
            chunk.len()
        );
    }
    let body = String::from_utf8(chunks.concat()).unwrap();
    let mut sequences = Vec::new();
    // Keep-alive comments (": keepalive") carry no event.
    for frame in body
        .split("\n\n")
        .filter(|f| !f.is_empty() && !f.starts_with(':'))
    {
        let id = frame
            .lines()
            .find_map(|l| l.strip_prefix("id: "))
            .unwrap_or_else(|| panic!("frame without an id: {frame:.200}"));
        let data = frame
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap();
        let event: Value = serde_json::from_str(data).unwrap();
        assert_eq!(event["sequence"].to_string(), id, "the id is the event's");
        sequences.push(event["sequence"].as_u64().unwrap());
    }
    assert_eq!(
        sequences,
        (1..=last).collect::<Vec<_>>(),
        "each event once, in order"
    );

    // Resuming in the middle continues exactly where the client left off.
    let resume_at = (last - 40).to_string();
    let mut resumed = d.events(
        &format!("runId={backlog}"),
        &[("Last-Event-ID", &resume_at)],
    );
    let mut expected = last - 39;
    while let Some(event) = resumed.next_event() {
        assert_eq!(event["sequence"], json!(expected));
        expected += 1;
    }
    assert_eq!(expected, last + 1, "to the last event");
    drop(stalled);
}

/// One request on a fresh connection: `Some(status)`, or `None` when ggd closed the connection
/// without an answer (it had no slot for it).
fn try_request(d: &HttpDaemon, path: &str) -> Option<u16> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(d.addr).ok()?;
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let request = format!(
        "GET {path} HTTP/1.0\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n",
        d.host(),
        d.token
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn idle_connections_cannot_take_the_descriptors_a_run_needs() {
    use std::io::Read;
    use std::net::TcpStream;
    use std::sync::{Mutex, mpsc};
    use std::time::{Duration, Instant};
    let e = env();
    // The model's tool call is held back until the idle connections are in place.
    let (release, held) = mpsc::channel::<()>();
    let held = Mutex::new(held);
    let server = ScriptedServer::with_replies([
        Reply::computed(move |_| {
            let _ = held.lock().unwrap().recv_timeout(Duration::from_secs(60));
            Reply::tool_call("c1", "bash", r#"{"command":"echo tool-started"}"#)
        }),
        Reply::text(&["done"]),
    ]);
    // ggd under a 256-descriptor limit: fewer than the connections opened below.
    let inner = ggd(&e, &server.base_url(), &[]);
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("ulimit -n 256 && exec \"$0\" \"$@\"")
        .arg(inner.get_program())
        .args(inner.get_args())
        .current_dir(inner.get_current_dir().unwrap())
        .env_clear();
    for (name, value) in inner.get_envs() {
        if let Some(value) = value {
            cmd.env(name, value);
        }
    }
    let d = HttpDaemon::spawn(cmd, TOKEN);
    let record: Value =
        serde_json::from_str(&d.logs.wait_for(|l| l.contains("http connection limit"))).unwrap();
    let cap = record["fields"]["max_connections"].as_u64().unwrap() as usize;
    assert_eq!(cap, 64, "a quarter of the 256 descriptors");

    let session = d.new_session();
    let run = d.start_unattended_run(&session, "go");
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.requests().is_empty() {
        assert!(Instant::now() < deadline, "the run never asked the model");
        std::thread::sleep(Duration::from_millis(20));
    }

    // More idle connections than ggd has descriptors, none sending a byte.
    let idle: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(d.addr).unwrap())
        .collect();
    // The last one is closed at once, the cap being reached long before it: ggd accepts in
    // order, so by then it has dealt with every earlier one. (Unbounded, it would sit unaccepted
    // behind connections that hold every descriptor until the 10 s header timeout drops them.)
    let mut last = idle.last().unwrap();
    last.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut byte = [0u8; 1];
    assert!(
        matches!(last.read(&mut byte), Ok(0) | Err(_)),
        "the connection over the cap was not closed"
    );
    let open: Vec<bool> = idle
        .iter()
        .map(|mut c| {
            c.set_nonblocking(true).unwrap();
            matches!(c.read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
        })
        .collect();
    assert!(
        open[0],
        "the first idle connection was dropped: the header timeout passed"
    );
    let held_open = open.iter().filter(|o| **o).count();
    assert!(
        held_open <= cap && held_open + 4 >= cap,
        "{held_open} idle connections held, cap {cap}"
    );

    // With every slot taken, the run's tool call still starts.
    release.send(()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let results = loop {
        let results = server.tool_results();
        if !results.is_empty() {
            break results;
        }
        assert!(
            Instant::now() < deadline,
            "no tool result reached the model"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(results[0].contains("tool-started"), "{results:?}");

    // Once some idle connections end, an authenticated client is served again.
    let mut idle = idle;
    idle.drain(..8);
    let deadline = Instant::now() + Duration::from_secs(30);
    while try_request(&d, "/health") != Some(200) {
        assert!(Instant::now() < deadline, "ggd did not answer again");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(idle);
    let mut after = 0;
    let mut kinds = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let waited = d.ok("run.wait", json!({"runId": run, "afterSequence": after}));
        for event in waited["events"].as_array().cloned().unwrap_or_default() {
            after = event["sequence"].as_u64().unwrap_or(after);
            kinds.push(event["type"].as_str().unwrap_or_default().to_string());
        }
        if waited["done"] == true {
            break;
        }
        assert!(Instant::now() < deadline, "the run did not end: {kinds:?}");
    }
    assert!(kinds.iter().any(|k| k == "run_completed"), "{kinds:?}");
}
