//! ggd's `artifact.*` and `library.list` methods over stdio, on an artifact the model created and
//! edited in daemon runs (the scripted server playing the model).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test code: failing loudly is the point

use crate::daemon_common;
use crate::support;

use daemon_common::{StdioClient, env, follow, ggd, has_type};
use serde_json::{Value, json};
use support::{Reply, ScriptedServer};

fn run_to_end(client: &StdioClient, session: &str, prompt: &str) -> Vec<Value> {
    let run_id = client.ok(
        "run.start",
        json!({"sessionId": session, "prompt": prompt, "requireApproval": false}),
    )["runId"]
        .as_str()
        .unwrap()
        .to_string();
    follow(client, &run_id, |events| {
        has_type(events, "run_completed") || has_type(events, "run_failed")
    })
}

#[test]
fn the_daemon_lists_gets_diffs_and_publishes_artifacts() {
    let e = env();
    let server = ScriptedServer::start();
    let client = StdioClient::spawn(ggd(&e, &server.base_url(), &[]));
    let info = client.ok("system.info", json!(null));
    assert!(
        info["capabilities"]
            .as_array()
            .unwrap()
            .contains(&json!("artifact")),
        "{info}"
    );
    let session = client.new_session();
    server.push(Reply::tool_call(
        "c1",
        "artifact_create",
        r#"{"title": "Weekly report", "type": "html", "content": "<h1>Week</h1>\n<p>one</p>\n"}"#,
    ));
    server.push(Reply::text(&["made"]));
    let events = run_to_end(&client, &session, "report");
    assert!(has_type(&events, "run_completed"), "{events:?}");

    let list = client.ok("artifact.list", json!({}));
    let artifacts = list["artifacts"].as_array().unwrap();
    assert_eq!(artifacts.len(), 1, "{list}");
    let a = &artifacts[0];
    assert_eq!(a["title"], "Weekly report");
    assert_eq!(a["type"], "html");
    assert_eq!(a["version"], 1);
    assert_eq!(a["publishedVersion"], Value::Null);
    let id = a["id"].as_str().unwrap().to_string();

    server.push(Reply::tool_call(
        "c2",
        "artifact_edit",
        &json!({"artifact_id": id, "content": "<h1>Week</h1>\n<p>two</p>\n"}).to_string(),
    ));
    server.push(Reply::text(&["edited"]));
    run_to_end(&client, &session, "edit");

    let got = client.ok("artifact.get", json!({"artifactId": id, "version": 1}));
    assert_eq!(got["content"], "<h1>Week</h1>\n<p>one</p>\n");
    assert_eq!(got["artifact"]["version"], 2);
    let diff = client.ok("artifact.diff", json!({"artifactId": id}));
    assert_eq!(
        (diff["from"].clone(), diff["to"].clone()),
        (json!(1), json!(2))
    );
    let text = diff["diff"].as_str().unwrap();
    assert!(
        text.contains("-<p>one</p>") && text.contains("+<p>two</p>"),
        "{text}"
    );

    let published = client.ok("artifact.publish", json!({"artifactId": id}));
    assert_eq!(published["artifact"]["publishedVersion"], 2);
    assert_eq!(published["entry"]["name"], "weekly-report.html");
    assert_eq!(published["entry"]["source"], format!("artifact:{id}"));
    let library = client.ok("library.list", json!({}));
    assert_eq!(library["entries"].as_array().unwrap().len(), 1, "{library}");
    let path = library["entries"][0]["path"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        "<h1>Week</h1>\n<p>two</p>\n"
    );

    // Errors.
    let missing = client.err("artifact.get", json!({"artifactId": "0123456789ab"}));
    assert_eq!(missing["code"], -32000, "{missing}");
    assert_eq!(missing["data"]["code"], "artifact_not_found", "{missing}");
    let bad = client.err("artifact.get", json!({"id": id}));
    assert_eq!(bad["code"], -32602, "{bad}");
    let unknown = client.err("artifact.frobnicate", json!({}));
    assert_eq!(unknown["code"], -32601, "{unknown}");

    let removed = client.ok("artifact.remove", json!({"artifactId": id}));
    assert_eq!(removed["artifact"]["id"], id.as_str());
    assert!(
        client.ok("artifact.list", json!({}))["artifacts"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}
