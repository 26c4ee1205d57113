//! Approval of normal calls from the chat (`"approval": "ask"`): the question is a message with
//! two inline buttons whose callback data carries a random nonce. A press counts only when it
//! comes from the chat the question was sent to (an allowed chat), only once, and only for that
//! call; anything else is refused with a notice and changes nothing. Dangerous calls never get
//! here (the table denies them under `Mode::Remote`), and the approver refuses one should it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::sync::oneshot;

use super::api::{CallbackQuery, Client};
use crate::agent::approval::{Answer, AnswerFuture, ApprovalPrompt, Approver};

/// How long a question waits for a press before the call is denied.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Most characters of a call's details shown in the question.
const DETAILS_SHOWN: usize = 1500;

struct Question {
    chat: i64,
    message_id: i64,
    answer: oneshot::Sender<bool>,
}

/// The questions waiting for a press, by nonce.
#[derive(Default)]
pub struct Pending {
    questions: Mutex<HashMap<String, Question>>,
}

/// What a press did, for the notice shown to whoever pressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pressed {
    Allowed,
    Denied,
    /// Not an approval button of gg.
    Unknown,
    /// From a chat not on the allow-list, or not the chat the question was sent to.
    WrongChat,
    /// Already answered, timed out, or its turn ended.
    NotPending,
}

impl Pressed {
    pub fn notice(self) -> &'static str {
        match self {
            Pressed::Allowed => "Allowed.",
            Pressed::Denied => "Denied.",
            Pressed::Unknown => "Unknown button.",
            Pressed::WrongChat => "Refused: this approval is not for this chat.",
            Pressed::NotPending => "This approval is no longer pending.",
        }
    }
}

impl Pending {
    /// Resolves a press. `allowed` says whether a chat is on the allow-list. Returns what it
    /// did and, when it answered a question, the question's message (to show the outcome).
    pub fn press(
        &self,
        query: &CallbackQuery,
        allowed: impl Fn(i64) -> bool,
    ) -> (Pressed, Option<(i64, i64)>) {
        let Some((allow, nonce)) = query.data.as_deref().and_then(parse_data) else {
            return (Pressed::Unknown, None);
        };
        let Some(chat) = query.message.as_ref().map(|m| m.chat.id) else {
            return (Pressed::WrongChat, None);
        };
        if !allowed(chat) {
            return (Pressed::WrongChat, None);
        }
        let Ok(mut questions) = self.questions.lock() else {
            return (Pressed::NotPending, None);
        };
        match questions.get(nonce) {
            None => (Pressed::NotPending, None),
            Some(question) if question.chat != chat => (Pressed::WrongChat, None),
            Some(_) => {
                let Some(question) = questions.remove(nonce) else {
                    return (Pressed::NotPending, None);
                };
                let place = (question.chat, question.message_id);
                // The turn may have ended meanwhile: then nobody waits, and nothing runs.
                match question.answer.send(allow) {
                    Ok(()) if allow => (Pressed::Allowed, Some(place)),
                    Ok(()) => (Pressed::Denied, Some(place)),
                    Err(_) => (Pressed::NotPending, Some(place)),
                }
            }
        }
    }

    fn remove(&self, nonce: &str) {
        if let Ok(mut questions) = self.questions.lock() {
            questions.remove(nonce);
        }
    }
}

/// `gg:allow:<nonce>` / `gg:deny:<nonce>`.
fn parse_data(data: &str) -> Option<(bool, &str)> {
    let rest = data.strip_prefix("gg:")?;
    let (verb, nonce) = rest.split_once(':')?;
    let allow = match verb {
        "allow" => true,
        "deny" => false,
        _ => return None,
    };
    (nonce.len() == 32 && nonce.bytes().all(|b| b.is_ascii_hexdigit())).then_some((allow, nonce))
}

/// A question's nonce: 16 random bytes, so a press cannot be guessed for another call.
fn nonce() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for an approval: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Removes a question whose wait ended any way other than a press (timeout, cancelled turn).
struct Forget<'a> {
    pending: &'a Pending,
    nonce: &'a str,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.pending.remove(self.nonce);
    }
}

/// Asks one chat.
pub struct ChatApprover {
    pub chat: i64,
    pub client: Arc<Client>,
    pub pending: Arc<Pending>,
}

impl Approver for ChatApprover {
    fn ask<'a>(&'a self, prompt: &'a ApprovalPrompt) -> AnswerFuture<'a> {
        Box::pin(async move {
            if prompt.dangerous {
                return Err("dangerous calls are never approved from a chat".to_string());
            }
            let nonce = nonce()?;
            let mut details: String = prompt.details.chars().take(DETAILS_SHOWN).collect();
            if details.len() < prompt.details.len() {
                details.push('…');
            }
            let text = format!(
                "Approve tool call: {}\n{}\n\n{}\n\n{}",
                prompt.tool, prompt.summary, details, prompt.reason
            );
            let keyboard = json!({"inline_keyboard": [[
                {"text": "Allow once", "callback_data": format!("gg:allow:{nonce}")},
                {"text": "Deny", "callback_data": format!("gg:deny:{nonce}")},
            ]]});
            let message = self
                .client
                .send_message(self.chat, &text, Some(keyboard))
                .await
                .map_err(|e| format!("could not ask the chat: {e}"))?;
            let (answer, answered) = oneshot::channel();
            if let Ok(mut questions) = self.pending.questions.lock() {
                questions.insert(
                    nonce.clone(),
                    Question {
                        chat: self.chat,
                        message_id: message.message_id,
                        answer,
                    },
                );
            }
            let _forget = Forget {
                pending: &self.pending,
                nonce: &nonce,
            };
            match tokio::time::timeout(ANSWER_TIMEOUT, answered).await {
                Ok(Ok(true)) => Ok(Answer::Allow),
                Ok(Ok(false)) => Ok(Answer::Deny),
                Ok(Err(_)) => Err("the question was withdrawn".to_string()),
                Err(_) => {
                    let _ = self
                        .client
                        .edit_message_text(self.chat, message.message_id, "No answer: denied.")
                        .await;
                    Err("no answer from the chat within 10 minutes".to_string())
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telegram::api::{Chat, Message, User};

    fn press(chat: i64, data: &str) -> CallbackQuery {
        CallbackQuery {
            id: "q".into(),
            from: User { id: chat },
            message: Some(Message {
                message_id: 1,
                chat: Chat { id: chat },
                text: None,
                voice: None,
                audio: None,
            }),
            data: Some(data.into()),
        }
    }

    fn ask(pending: &Pending, chat: i64) -> (String, oneshot::Receiver<bool>) {
        let nonce = nonce().unwrap();
        let (answer, answered) = oneshot::channel();
        pending.questions.lock().unwrap().insert(
            nonce.clone(),
            Question {
                chat,
                message_id: 9,
                answer,
            },
        );
        (nonce, answered)
    }

    #[test]
    fn a_press_counts_once_and_only_from_the_chat_asked() {
        let pending = Pending::default();
        let allowed = |chat: i64| chat == 1 || chat == 2;
        let (nonce, mut answered) = ask(&pending, 1);
        let data = format!("gg:allow:{nonce}");
        // Another allowed chat, a chat not on the list, a made-up nonce: refused, still pending.
        assert_eq!(
            pending.press(&press(2, &data), allowed).0,
            Pressed::WrongChat
        );
        assert_eq!(
            pending.press(&press(3, &data), allowed).0,
            Pressed::WrongChat
        );
        let other = format!("gg:allow:{}", "0".repeat(32));
        assert_eq!(
            pending.press(&press(1, &other), allowed).0,
            Pressed::NotPending
        );
        assert_eq!(
            pending.press(&press(1, "gg:run:x"), allowed).0,
            Pressed::Unknown
        );
        assert!(answered.try_recv().is_err(), "nothing answered yet");
        // The chat asked: allowed, once.
        assert_eq!(
            pending.press(&press(1, &data), allowed),
            (Pressed::Allowed, Some((1, 9)))
        );
        assert_eq!(answered.try_recv(), Ok(true));
        assert_eq!(
            pending.press(&press(1, &data), allowed).0,
            Pressed::NotPending
        );
    }
}
