//! What the model sees and sends: the tools' schemas, their arguments as parsed, and the
//! parsed call (its class and plan) that waits for the gate. Apart from the session's browser
//! because none of it needs a running Chromium.

use std::path::PathBuf;

use classifier::Class;
use policies::web;
use serde::Deserialize;
use serde_json::{Value, json};

/// Screenshot size limits (CSS pixels).
pub(super) const MAX_DIMENSION: u32 = 4096;

/// Definitions for the model: `(name, description, JSON schema)`.
pub fn spec(name: &str) -> Option<(&'static str, &'static str, Value)> {
    Some(match name {
        "browser_navigate" => (
            "browser_navigate",
            "Open a URL in the session's headless browser (http(s), or a file in the working directory). Returns the final URL after redirects, the HTTP status and the title.",
            json!({"type": "object", "properties": {
                "url": {"type": "string", "maxLength": web::MAX_URL_BYTES}},
                "required": ["url"], "additionalProperties": false}),
        ),
        "browser_read" => (
            "browser_read",
            "The readable text of the current page (main content; links as markdown), or of the element matching a CSS selector.",
            json!({"type": "object", "properties": {
                "selector": {"type": "string", "maxLength": 1000}},
                "additionalProperties": false}),
        ),
        "browser_screenshot" => (
            "browser_screenshot",
            "Save a PNG screenshot of the current page (viewport by default, or the full page, or one element) and return its path.",
            json!({"type": "object", "properties": {
                "full_page": {"type": "boolean"},
                "selector": {"type": "string", "maxLength": 1000},
                "width": {"type": "integer", "minimum": 100, "maximum": MAX_DIMENSION},
                "height": {"type": "integer", "minimum": 100, "maximum": MAX_DIMENSION}},
                "additionalProperties": false}),
        ),
        "browser_click" => (
            "browser_click",
            "Click the element matching a CSS selector on the current page.",
            json!({"type": "object", "properties": {
                "selector": {"type": "string", "maxLength": 1000}},
                "required": ["selector"], "additionalProperties": false}),
        ),
        "browser_type" => (
            "browser_type",
            "Type text into the element matching a CSS selector on the current page.",
            json!({"type": "object", "properties": {
                "selector": {"type": "string", "maxLength": 1000},
                "text": {"type": "string", "maxLength": 10000}},
                "required": ["selector", "text"], "additionalProperties": false}),
        ),
        "browser_eval" => (
            "browser_eval",
            "Evaluate a JavaScript expression in the current page and return its JSON value. Always needs the person's approval.",
            json!({"type": "object", "properties": {
                "expression": {"type": "string", "maxLength": 20000}},
                "required": ["expression"], "additionalProperties": false}),
        ),
        _ => return None,
    })
}

/// A call, parsed and classified, waiting for the gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserCall {
    pub class: Class,
    /// The rule id of the class (`browser.loopback`, `browser.private-address`, …).
    pub rule: String,
    /// Why (one line).
    pub reason: String,
    pub summary: String,
    pub details: String,
    /// What a session grant covers (`browser:<host>` for a navigation).
    pub grant_key: String,
    pub(super) plan: Plan,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Plan {
    Navigate {
        url: String,
        /// A dangerous http(s) host the person approves by approving this call.
        host: Option<String>,
        /// A file outside the working directory, likewise.
        file: Option<PathBuf>,
    },
    Read {
        selector: Option<String>,
    },
    Screenshot {
        full_page: bool,
        selector: Option<String>,
        width: u32,
        height: u32,
    },
    Click {
        selector: String,
    },
    Type {
        selector: String,
        text: String,
    },
    Eval {
        expression: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NavigateArgs {
    pub(super) url: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReadArgs {
    pub(super) selector: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ShotArgs {
    pub(super) full_page: Option<bool>,
    pub(super) selector: Option<String>,
    pub(super) width: Option<u32>,
    pub(super) height: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SelectorArgs {
    pub(super) selector: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct TypeArgs {
    pub(super) selector: String,
    pub(super) text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct EvalArgs {
    pub(super) expression: String,
}

pub(super) fn parse_args<T: serde::de::DeserializeOwned>(
    arguments: &str,
) -> Result<T, super::BrowserError> {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    serde_json::from_str(text).map_err(super::BrowserError::Arguments)
}
