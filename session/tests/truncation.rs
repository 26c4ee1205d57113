//! Crash-consistency invariant: a session file cut at any byte offset opens, and yields exactly
//! the entries whose line was complete.

use std::fs;
use std::path::Path;

use proptest::prelude::*;
use session::{Entry, Message, Role, Session, ToolCall, Usage};

#[derive(Debug, Clone)]
enum Step {
    Say(Role, String),
    Call(String),
    Usage(u64),
    Name(String),
    BranchBack(usize),
}

fn step() -> impl Strategy<Value = Step> {
    let text = "[a-zA-Z0-9 \"\\\\\n\t{}é漢🙂]{0,40}";
    prop_oneof![
        4 => (prop_oneof![Just(Role::User), Just(Role::Assistant), Just(Role::Tool)], text).prop_map(|(r, t)| Step::Say(r, t)),
        1 => text.prop_map(Step::Call),
        1 => (1u64..10_000).prop_map(Step::Usage),
        1 => text.prop_map(Step::Name),
        1 => (0usize..8).prop_map(Step::BranchBack),
    ]
}

/// Builds a session with the store itself and returns its bytes and entries.
fn build(dir: &Path, steps: &[Step]) -> (Vec<u8>, Vec<Entry>) {
    let mut session = Session::create(dir, "/p").unwrap();
    for step in steps {
        match step {
            Step::Say(role, text) => {
                session
                    .append_message(Message::text(*role, text.clone()))
                    .unwrap();
            }
            Step::Call(text) => {
                let mut message = Message::text(Role::Assistant, "");
                let arguments = serde_json::json!({ "command": text }).to_string();
                message.tool_calls = vec![ToolCall::new("call", "bash", &arguments).unwrap()];
                session.append_message(message).unwrap();
            }
            Step::Usage(tokens) => {
                session
                    .append_usage(Usage {
                        prompt_tokens: *tokens,
                        completion_tokens: 1,
                        total_tokens: tokens + 1,
                    })
                    .unwrap();
            }
            Step::Name(name) => {
                session.set_name(name).unwrap();
            }
            Step::BranchBack(back) => {
                let entries = session.transcript().entries();
                let target = entries
                    .len()
                    .checked_sub(back + 1)
                    .map(|i| entries[i].id.clone());
                session.branch(target.as_deref()).unwrap();
            }
        }
    }
    (
        fs::read(session.path()).unwrap(),
        session.transcript().entries().to_vec(),
    )
}

/// The invariant is about parsing and repair, not durability (the SIGKILL test covers that in the
/// regular temp dir), so a tmpfs is used when there is one: the thousands of fsyncs of this test
/// cost nothing there, while on a busy disk they take minutes.
fn scratch_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_truncation_opens_with_exactly_the_complete_entries(steps in prop::collection::vec(step(), 1..12)) {
        let dir = scratch_dir();
        let (bytes, entries) = build(dir.path(), &steps);
        // End offset (exclusive, without the newline) of the header and of every entry line.
        let line_ends: Vec<usize> = bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i).collect();
        prop_assert_eq!(line_ends.len(), entries.len() + 1);
        let cut_path = dir.path().join("cut.jsonl");
        for offset in 0..=bytes.len() {
            fs::write(&cut_path, &bytes[..offset]).unwrap();
            let opened = Session::open_or_create(&cut_path, "/p");
            prop_assert!(opened.is_ok(), "offset {}: {:?}", offset, opened.err());
            let opened = opened.unwrap();
            let complete = line_ends.iter().skip(1).filter(|&&end| end <= offset).count();
            prop_assert_eq!(opened.transcript().entries(), &entries[..complete], "offset {}", offset);
            let repaired = fs::read(&cut_path).unwrap();
            if offset >= line_ends[0] {
                // The header survived: the file is the original prefix of complete lines.
                let keep = if complete == 0 { line_ends[0] + 1 } else { line_ends[complete] + 1 };
                prop_assert_eq!(&repaired[..], &bytes[..keep], "offset {}", offset);
            } else {
                prop_assert!(opened.transcript().entries().is_empty());
                prop_assert_eq!(repaired.last(), Some(&b'\n'));
            }
        }
    }
}
