//! Gmail's message JSON (`format=full`) as text: the headers a person reads, the text body (a
//! `text/plain` part, else the HTML part converted to text), and the attachments by name only
//! (never fetched). And the other way: a plain-text draft as the RFC 2822 message Gmail stores.

use base64::Engine;
use serde_json::Value;

/// Base64url as Gmail writes it, padded or not.
const BASE64URL: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    base64::engine::GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

/// At most this much body text reaches the model.
pub const MAX_BODY_CHARS: usize = 100_000;

/// The headers shown for a read message, in this order.
const SHOWN_HEADERS: &[&str] = &["From", "To", "Cc", "Date", "Subject"];

/// A message read for the model.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rendered {
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// `name (type, size)` of each attachment.
    pub attachments: Vec<String>,
}

/// The value of a header of a message part (first match, case aside).
pub fn header(payload: &Value, name: &str) -> Option<String> {
    payload["headers"]
        .as_array()?
        .iter()
        .find(|h| {
            h["name"]
                .as_str()
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
        })
        .and_then(|h| h["value"].as_str())
        .map(str::to_string)
}

/// Renders a message of `format=full`.
pub fn render(message: &Value) -> Rendered {
    let payload = &message["payload"];
    let headers = SHOWN_HEADERS
        .iter()
        .filter_map(|name| header(payload, name).map(|v| (name.to_string(), v)))
        .collect();
    let mut parts = Parts::default();
    parts.walk(payload, 0);
    let body = if !parts.plain.is_empty() {
        parts.plain.join("\n")
    } else if !parts.html.is_empty() {
        parts
            .html
            .iter()
            .map(|html| html_to_text(html))
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        String::new()
    };
    Rendered {
        headers,
        body: truncate_chars(&body, MAX_BODY_CHARS),
        attachments: parts.attachments,
    }
}

#[derive(Default)]
struct Parts {
    plain: Vec<String>,
    html: Vec<String>,
    attachments: Vec<String>,
}

impl Parts {
    fn walk(&mut self, part: &Value, depth: usize) {
        // MIME nests a few levels in practice; a deeper tree is not worth following.
        if depth > 16 {
            return;
        }
        let mime = part["mimeType"]
            .as_str()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let filename = part["filename"].as_str().unwrap_or_default();
        let body = &part["body"];
        if !filename.is_empty() || body["attachmentId"].is_string() {
            let size = body["size"].as_u64().unwrap_or_default();
            let name = if filename.is_empty() {
                "(unnamed)"
            } else {
                filename
            };
            self.attachments.push(format!(
                "{name} ({}, {})",
                if mime.is_empty() {
                    "unknown type"
                } else {
                    &mime
                },
                tools::store::human_size(size)
            ));
            return;
        }
        if let Some(children) = part["parts"].as_array() {
            for child in children {
                self.walk(child, depth + 1);
            }
            return;
        }
        let Some(text) = body["data"].as_str().and_then(decode) else {
            return;
        };
        match mime.as_str() {
            "text/plain" | "" => self.plain.push(text),
            "text/html" => self.html.push(text),
            _ => {}
        }
    }
}

/// A body's `data`, base64url-decoded; bytes that are not UTF-8 are replaced (Gmail hands most
/// bodies over as UTF-8 already).
pub fn decode(data: &str) -> Option<String> {
    let bytes = BASE64URL.decode(data.trim()).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// HTML as text lines (the knowledge base's extractor: scripts, styles and hidden chrome go).
pub fn html_to_text(html: &str) -> String {
    kb::html::to_lines(html)
        .into_iter()
        .map(|line| line.text)
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}\n[… cut at {max} characters]", &text[..at]),
        None => text.to_string(),
    }
}

/// A draft as Gmail's `raw` field: an RFC 2822 message, base64url. `to` and `subject` must be
/// single lines (a line break would start a header of the model's choosing: refused before);
/// a non-ASCII subject is written as an RFC 2047 encoded word.
pub fn draft_raw(to: &str, subject: &str, body: &str) -> String {
    let subject = if subject.is_ascii() {
        subject.to_string()
    } else {
        format!(
            "=?UTF-8?B?{}?=",
            base64::engine::general_purpose::STANDARD.encode(subject.as_bytes())
        )
    };
    let body = body.replace("\r\n", "\n").replace('\n', "\r\n");
    let message = format!(
        "To: {to}\r\nSubject: {subject}\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/plain; charset=UTF-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n{body}"
    );
    BASE64URL.encode(message.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b64(text: &str) -> String {
        BASE64URL.encode(text.as_bytes())
    }

    #[test]
    fn plain_text_wins_and_attachments_are_listed_not_fetched() {
        let message = json!({"payload": {
        "mimeType": "multipart/mixed",
        "headers": [{"name": "From", "value": "a@example.com"}, {"name": "subject", "value": "Hi"}],
        "parts": [
            {"mimeType": "multipart/alternative", "parts": [
                {"mimeType": "text/plain", "body": {"data": b64("plain body")}},
                {"mimeType": "text/html", "body": {"data": b64("<p>html body</p>")}}
            ]},
            {"mimeType": "application/pdf", "filename": "bill.pdf",
             "body": {"attachmentId": "att1", "size": 2048}}
        ]}});
        let rendered = render(&message);
        assert_eq!(rendered.body, "plain body");
        assert_eq!(rendered.attachments, ["bill.pdf (application/pdf, 2 KiB)"]);
        assert_eq!(
            rendered.headers,
            [
                ("From".to_string(), "a@example.com".to_string()),
                ("Subject".to_string(), "Hi".to_string())
            ]
        );
    }

    #[test]
    fn html_only_is_converted_to_text() {
        let html = "<html><body><script>evil()</script><p>Hello <b>there</b></p></body></html>";
        let message = json!({"payload": {"mimeType": "text/html", "body": {"data": b64(html)}}});
        let body = render(&message).body;
        assert!(body.contains("Hello there"), "{body}");
        assert!(!body.contains("evil"), "{body}");
    }

    #[test]
    fn a_draft_is_an_rfc_2822_message() {
        let raw = draft_raw("b@example.com", "Grüße", "line 1\nline 2");
        let text = decode(&raw).unwrap();
        assert!(
            text.starts_with("To: b@example.com\r\nSubject: =?UTF-8?B?"),
            "{text}"
        );
        assert!(text.ends_with("\r\n\r\nline 1\r\nline 2"), "{text}");
    }
}
