//! The message queue shared by a UI and the running agent.
//!
//! Steering messages are taken into the running turn at model boundaries; follow-ups wait for the
//! next turn.

use std::collections::VecDeque;
use std::sync::Mutex;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Queued {
    text: String,
    follow_up: bool,
}

#[derive(Debug, Default)]
pub struct MessageQueue {
    items: Mutex<VecDeque<Queued>>,
}

impl MessageQueue {
    pub fn new() -> MessageQueue {
        MessageQueue::default()
    }

    /// Queues a message: steering (`follow_up == false`) or a follow-up for the next turn.
    pub fn add(&self, text: impl Into<String>, follow_up: bool) {
        if let Ok(mut items) = self.items.lock() {
            items.push_back(Queued {
                text: text.into(),
                follow_up,
            });
        }
    }

    /// Takes every steering message, in order, leaving follow-ups queued.
    pub fn drain_steering(&self) -> Vec<String> {
        let Ok(mut items) = self.items.lock() else {
            return Vec::new();
        };
        let mut steering = Vec::new();
        items.retain(|item| {
            if item.follow_up {
                true
            } else {
                steering.push(item.text.clone());
                false
            }
        });
        steering
    }

    /// Whether a steering message is waiting (a reply without tool calls then does not end the
    /// turn: the loop takes the message and asks the model again).
    pub fn has_steering(&self) -> bool {
        self.items
            .lock()
            .map(|i| i.iter().any(|item| !item.follow_up))
            .unwrap_or(false)
    }

    /// The first steering message, else the first follow-up.
    pub fn pop_next(&self) -> Option<String> {
        let mut items = self.items.lock().ok()?;
        let index = items
            .iter()
            .position(|i| !i.follow_up)
            .or(if items.is_empty() { None } else { Some(0) })?;
        items.remove(index).map(|i| i.text)
    }

    pub fn len(&self) -> usize {
        self.items.lock().map(|i| i.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steering_drains_in_order_and_follow_ups_wait() {
        let q = MessageQueue::new();
        q.add("s1", false);
        q.add("f1", true);
        q.add("s2", false);
        assert_eq!(q.drain_steering(), ["s1", "s2"]);
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop_next().as_deref(), Some("f1"));
        assert!(q.is_empty());
    }

    #[test]
    fn pop_next_prefers_steering() {
        let q = MessageQueue::new();
        q.add("f1", true);
        q.add("s1", false);
        assert_eq!(q.pop_next().as_deref(), Some("s1"));
        assert_eq!(q.pop_next().as_deref(), Some("f1"));
        assert_eq!(q.pop_next(), None);
    }
}
