//! The page's only bridge to the shell: `window.ipc.postMessage(JSON)` with one of four commands
//! (docs/security-model.md lists them), answered by a `gg-shell` DOM event carrying
//! `{id, ok, result | error}`. There is nothing else: no file, process or Node-style access.
//!
//! - `session`: the token, the workspace and a notice (a restarted ggd), for this page only.
//! - `openExternal {url}`: a link, opened in the system browser after ggd's `open.check`.
//! - `approvalWaiting {summary}`: a desktop notification when the window is not focused.
//! - `chooseWorkspace`: the folder dialog; the shell restarts ggd there and reloads the page.

use serde::Deserialize;
use serde_json::Value;

/// The longest message accepted from the page.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Message {
    pub id: u64,
    #[serde(flatten)]
    pub command: Command,
}

#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(
    tag = "cmd",
    content = "args",
    rename_all = "camelCase",
    deny_unknown_fields
)]
pub enum Command {
    Session,
    OpenExternal { url: String },
    ApprovalWaiting { summary: String },
    ChooseWorkspace,
}

/// The page's message, or why it is refused.
pub fn parse(text: &str) -> Result<Message, String> {
    if text.len() > MAX_MESSAGE_BYTES {
        return Err(format!("message over {MAX_MESSAGE_BYTES} bytes"));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    // `flatten` cannot refuse unknown fields itself: the envelope is checked here.
    if let Some(object) = value.as_object()
        && let Some(key) = object
            .keys()
            .find(|k| !matches!(k.as_str(), "id" | "cmd" | "args"))
    {
        return Err(format!("unknown field \"{key}\""));
    }
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// The script that hands `reply` to the page.
pub fn reply_script(id: u64, reply: Result<Value, String>) -> String {
    let detail = match reply {
        Ok(result) => serde_json::json!({"id": id, "ok": true, "result": result}),
        Err(error) => serde_json::json!({"id": id, "ok": false, "error": error}),
    };
    // JSON is a JavaScript expression; U+2028/2029 are valid in both since ES2019.
    format!("window.dispatchEvent(new CustomEvent(\"gg-shell\", {{detail: {detail}}}));")
}

/// Whether `page_url` (the frame that sent a message, or is to be shown) is on `origin` exactly.
pub fn same_origin(page_url: &str, origin: &str) -> bool {
    let (Ok(page), Ok(origin)) = (url::Url::parse(page_url), url::Url::parse(origin)) else {
        return false;
    };
    page.origin() == origin.origin()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_commands_parse_and_nothing_else() {
        assert_eq!(
            parse(r#"{"id":1,"cmd":"session"}"#).unwrap(),
            Message {
                id: 1,
                command: Command::Session
            }
        );
        assert_eq!(
            parse(r#"{"id":2,"cmd":"openExternal","args":{"url":"https://docs.rs/"}}"#)
                .unwrap()
                .command,
            Command::OpenExternal {
                url: "https://docs.rs/".into()
            }
        );
        assert!(parse(r#"{"id":3,"cmd":"approvalWaiting","args":{"summary":"bash ls"}}"#).is_ok());
        assert!(parse(r#"{"id":4,"cmd":"chooseWorkspace"}"#).is_ok());
        for bad in [
            r#"{"id":5,"cmd":"exec","args":{"command":"sh"}}"#,
            r#"{"id":6,"cmd":"session","extra":1}"#,
            r#"{"id":7,"cmd":"openExternal","args":{"url":"x","also":1}}"#,
            r#"{"cmd":"session"}"#,
            "session",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(
            parse(&format!(
                r#"{{"id":1,"cmd":"{}"}}"#,
                "a".repeat(MAX_MESSAGE_BYTES)
            ))
            .is_err()
        );
    }

    #[test]
    fn origins_compare_exactly() {
        let origin = "http://127.0.0.1:4321";
        assert!(same_origin("http://127.0.0.1:4321/", origin));
        assert!(same_origin("http://127.0.0.1:4321/index.html#x", origin));
        assert!(!same_origin("http://127.0.0.1:4322/", origin));
        assert!(!same_origin("http://localhost:4321/", origin));
        assert!(!same_origin("https://127.0.0.1:4321/", origin));
        assert!(!same_origin("http://127.0.0.1:4321@evil.example/", origin));
        assert!(!same_origin("about:blank", origin));
        assert!(!same_origin("data:text/html,x", origin));
    }

    #[test]
    fn replies_are_one_dom_event() {
        let script = reply_script(3, Ok(serde_json::json!({"token": "t"})));
        assert_eq!(
            script,
            r#"window.dispatchEvent(new CustomEvent("gg-shell", {detail: {"id":3,"ok":true,"result":{"token":"t"}}}));"#
        );
        let refused = reply_script(4, Err("no".into()));
        let detail = refused
            .strip_prefix(r#"window.dispatchEvent(new CustomEvent("gg-shell", {detail: "#)
            .and_then(|rest| rest.strip_suffix("}));"))
            .unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(detail).unwrap(),
            serde_json::json!({"id": 4, "ok": false, "error": "no"})
        );
    }
}
