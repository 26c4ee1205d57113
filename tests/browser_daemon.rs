//! ggd's shutdown takes the browser down: a run that opened a page through the real `ggd`
//! (scripted model, fixture page on 127.0.0.1) is still waiting for the model when ggd gets
//! SIGTERM; after ggd exits no Chromium of it is left. Skipped without Chromium unless
//! `GG_REQUIRE_BROWSER=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::daemon_common;
use crate::support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use daemon_common::{StdioClient, env, ggd};
use serde_json::json;
use support::{Reply, ScriptedServer, StreamReply};

fn browser_processes(tmp: &std::path::Path) -> Vec<u32> {
    let needle = format!("--user-data-dir={}/gg-browser-", tmp.display());
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|s| {
                s.rsplit(')')
                    .next()
                    .map(|r| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if String::from_utf8_lossy(&cmdline)
            .replace('\0', " ")
            .contains(&needle)
            && !zombie
        {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn ggd_shutdown_closes_the_browser_of_a_running_run() {
    if !support::chromium_present() {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut b = [0u8; 2048];
            let _ = s.read(&mut b);
            let body = "<title>Daemon page</title><p>hello</p>";
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let url = format!("http://127.0.0.1:{port}/");
    let server = ScriptedServer::with_replies([
        Reply::tool_call("c1", "browser_navigate", &json!({"url": url}).to_string()),
        StreamReply::new().stall().reply(),
    ]);
    let e = env();
    let tmp = e.tmp.path().canonicalize().unwrap().join("t");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = ggd(&e, &server.base_url(), &[]);
    cmd.env("TMPDIR", &tmp);
    let mut client = StdioClient::spawn(cmd);
    let session = client.new_session();
    client.ok(
        "run.start",
        json!({"sessionId": session, "prompt": "open the page", "requireApproval": false}),
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    while server.requests().len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the run never came back to the model"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let bodies = server.request_bodies();
    let last = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last["content"]
            .as_str()
            .unwrap_or_default()
            .contains("status: 200"),
        "{last}"
    );
    assert!(
        !browser_processes(&tmp).is_empty(),
        "the browser is not running"
    );

    rustix::process::kill_process(
        rustix::process::Pid::from_raw(client.child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    assert!(client.wait_exit().success());
    let deadline = Instant::now() + Duration::from_secs(60);
    while !browser_processes(&tmp).is_empty() {
        assert!(
            Instant::now() < deadline,
            "browser processes left after ggd shut down: {:?}",
            browser_processes(&tmp)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
