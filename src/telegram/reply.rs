//! A reply streamed into the chat: the first text is sent at once, then the same message is
//! edited (`editMessageText`) as the model writes, at most once a second; past Telegram's
//! 4096-character limit the text continues in a new message. Sent as plain text (markdown is
//! left as written: no entity conversion can then fail to parse).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::Instant;

use super::api::{Client, MESSAGE_LIMIT};

/// The shortest time between two edits of a reply.
pub const EDIT_INTERVAL: Duration = Duration::from_secs(1);

/// The parts of `text`, each at most [`MESSAGE_LIMIT`] UTF-16 units (Telegram counts those),
/// cut after the last newline of a full part when there is one in its second half, else at the
/// limit. A part depends only on the text before its end, so a part once full never changes as
/// the text grows: earlier messages are not edited again.
pub fn split(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = text;
    loop {
        let mut units = 0;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            if units + c.len_utf16() > MESSAGE_LIMIT {
                end = i;
                break;
            }
            units += c.len_utf16();
        }
        if end == rest.len() {
            if !rest.is_empty() {
                parts.push(rest);
            }
            return parts;
        }
        let cut = rest[..end]
            .rfind('\n')
            .filter(|&newline| newline + 1 > end / 2)
            .map_or(end, |newline| newline + 1);
        parts.push(&rest[..cut]);
        rest = &rest[cut..];
    }
}

/// Streams what arrives on `pieces` into `chat` until the sender is dropped, then makes the
/// messages show the whole text. `empty` is sent when the text stayed empty.
pub async fn stream(
    client: Arc<Client>,
    chat: i64,
    mut pieces: UnboundedReceiver<String>,
    empty: &str,
) {
    let mut text = String::new();
    // (message id, text it shows) of each part sent so far.
    let mut sent: Vec<(i64, String)> = Vec::new();
    let mut next_edit = Instant::now();
    // Nothing is sent before this (a 429's retry_after).
    let mut held_until = Instant::now();
    let mut open = true;
    loop {
        let stale = split(&text)
            .iter()
            .enumerate()
            .any(|(i, part)| sent.get(i).is_none_or(|(_, shown)| shown != part));
        if !open && !stale {
            break;
        }
        // A new part is sent at once; an edit waits for its turn; at the end only the wait
        // remains.
        let needs_send = split(&text).len() > sent.len();
        let wake = if stale && (needs_send || Instant::now() >= next_edit) {
            Instant::now()
        } else if stale {
            next_edit
        } else {
            Instant::now() + Duration::from_secs(3600)
        }
        .max(held_until);
        tokio::select! {
            piece = pieces.recv(), if open => match piece {
                Some(piece) => text.push_str(&piece),
                None => open = false,
            },
            () = tokio::time::sleep_until(wake), if stale => {
                if let Some(wait) = flush(&client, chat, &text, &mut sent, &mut next_edit).await {
                    held_until = Instant::now() + wait;
                    next_edit = next_edit.max(held_until);
                }
            }
        }
    }
    if text.trim().is_empty() && sent.is_empty() {
        let _ = client.send_message(chat, empty, None).await;
    }
}

/// Brings the messages up to `text`: sends the parts not sent yet, edits the one part whose text
/// changed when an edit is due. Returns a wait a 429 asked for.
async fn flush(
    client: &Client,
    chat: i64,
    text: &str,
    sent: &mut Vec<(i64, String)>,
    next_edit: &mut Instant,
) -> Option<Duration> {
    for (i, part) in split(text).into_iter().enumerate() {
        match sent.get(i) {
            Some((_, shown)) if shown == part => {}
            Some((id, _)) => {
                if Instant::now() < *next_edit {
                    // Not due yet; a part not sent yet still goes out now.
                    continue;
                }
                let id = *id;
                let edited = client.edit_message_text(chat, id, part).await;
                // Counted from the answer, so that Telegram never sees two edits less than a
                // second apart, however long one took in flight.
                *next_edit = Instant::now() + EDIT_INTERVAL;
                match edited {
                    Ok(()) => sent[i].1 = part.to_string(),
                    Err(e) => {
                        tracing::warn!(chat, "telegram: editMessageText failed: {e}");
                        if let Some(wait) = e.retry_after() {
                            return Some(wait);
                        }
                        // Not retried: the next change (or the end) tries again.
                        sent[i].1 = part.to_string();
                    }
                }
            }
            None => match client.send_message(chat, part, None).await {
                Ok(message) => {
                    sent.push((message.message_id, part.to_string()));
                    *next_edit = Instant::now() + EDIT_INTERVAL;
                }
                Err(e) => {
                    tracing::warn!(chat, "telegram: sendMessage failed: {e}");
                    if let Some(wait) = e.retry_after() {
                        return Some(wait);
                    }
                    // Given up on: recorded as shown so the stream ends.
                    sent.push((0, part.to_string()));
                }
            },
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_part_and_long_text_splits_at_the_limit() {
        assert_eq!(split("hello"), ["hello"]);
        assert!(split("").is_empty());
        let long = "a".repeat(MESSAGE_LIMIT * 2 + 5);
        let parts = split(&long);
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [MESSAGE_LIMIT, MESSAGE_LIMIT, 5]
        );
        assert_eq!(parts.concat(), long);
    }

    #[test]
    fn a_part_ends_after_a_late_newline_and_counts_utf16_units() {
        let text = format!("{}\n{}", "a".repeat(3000), "b".repeat(2000));
        let parts = split(&text);
        assert_eq!(parts[0], format!("{}\n", "a".repeat(3000)));
        assert_eq!(parts[1], "b".repeat(2000));
        // Emoji are two UTF-16 units: 2048 fit.
        let emoji = "😀".repeat(2049);
        let parts = split(&emoji);
        assert_eq!(parts[0].chars().count(), 2048);
        assert_eq!(parts[1].chars().count(), 1);
    }

    #[test]
    fn full_parts_do_not_change_as_the_text_grows() {
        let mut text = format!("{}\n", "x".repeat(2500));
        text.push_str(&"y".repeat(1700));
        let first = split(&text)[0].to_string();
        text.push_str(&"z".repeat(3000));
        assert_eq!(split(&text)[0], first);
        text.push_str("more");
        assert_eq!(split(&text)[0], first);
    }
}
