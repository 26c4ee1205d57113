//! Unit tests of the context window: what is kept, cut and summarised as a conversation grows.

use super::*;
use proptest::prelude::*;
use session::{Message, Role};

fn user(text: &str) -> Message {
    Message::text(Role::User, text)
}

fn assistant(text: &str) -> Message {
    Message::text(Role::Assistant, text)
}

fn calling(id: &str) -> Message {
    let mut m = Message::text(Role::Assistant, "");
    m.tool_calls
        .push(session::ToolCall::new(id, "read", r#"{"path":"a"}"#).unwrap());
    m
}

fn result(id: &str, text: &str) -> Message {
    let mut m = Message::text(Role::Tool, text);
    m.tool_call_id = id.to_string();
    m.tool_name = "read".to_string();
    m
}

#[test]
fn text_estimate_counts_ascii_as_one_unit_and_other_characters_as_four() {
    let table: &[(&str, u64)] = &[
        ("", 0),
        ("a", 1),
        ("abcd", 1),
        ("abcde", 2),
        ("hello world", 3),
        ("12345678", 2),
        ("é", 1),
        ("日本", 2),
        ("a日", 2),
        ("日本語のテキスト", 8),
        ("🦀", 1),
        ("\u{0}\t\n", 1),
    ];
    for (text, tokens) in table {
        assert_eq!(estimate_text(text), *tokens, "{text:?}");
    }
}

#[test]
fn message_estimate_adds_overhead_role_text_calls_and_ids() {
    // 4 + "user"(1) + "hi"(1)
    assert_eq!(estimate_message(&user("hi")), 6);
    // 4 + "assistant"(3) + ""(0) + "c1"(1) + "read"(1) + {"path":"a"}(3)
    assert_eq!(estimate_message(&calling("c1")), 12);
    // 4 + "tool"(1) + "ok"(1) + "c1"(1) + "read"(1)
    assert_eq!(estimate_message(&result("c1", "ok")), 8);
    // Text blocks count when content is empty.
    let mut blocks = Message::text(Role::User, "");
    blocks.content_blocks = vec![
        session::ContentBlock::Text {
            text: "abcd".into(),
        },
        session::ContentBlock::Text { text: "efg".into() },
    ];
    assert_eq!(estimate_message(&blocks), 4 + 1 + 2);
}

#[test]
fn tool_estimate_is_definition_json_plus_eight_per_tool() {
    assert_eq!(estimate_tools(&[]), 0);
    let tool = ToolDefinition {
        name: "t".into(),
        description: "d".into(),
        parameters: serde_json::json!({}),
    };
    // [{"description":"d","name":"t","parameters":{}}] is 48 characters: 12 tokens.
    assert_eq!(estimate_tools(std::slice::from_ref(&tool)), 12 + 8);
    // Two tools: 95 characters (24 tokens) + 16.
    assert_eq!(estimate_tools(&[tool.clone(), tool]), 24 + 16);
}

#[test]
fn tail_start_finds_the_first_message_of_the_last_turns() {
    let history = [
        user("1"),
        assistant("a"),
        user("2"),
        calling("c"),
        result("c", "r"),
        user("3"),
    ];
    let refs: Vec<&Message> = history.iter().collect();
    assert_eq!(tail_start(&refs, 1), 5);
    assert_eq!(tail_start(&refs, 0), 5, "0 turns means 1");
    assert_eq!(tail_start(&refs, 2), 2);
    assert_eq!(tail_start(&refs, 3), 0);
    assert_eq!(
        tail_start(&refs, 9),
        0,
        "fewer turns than asked: everything is tail"
    );
}

#[test]
fn cut_moves_forward_over_tool_results_until_the_tail_fits() {
    let history = [
        user("1"),
        calling("c"),
        result("c", &"x".repeat(400)),
        result("c", &"y".repeat(400)),
        assistant("done"),
        user("2"),
    ];
    let refs: Vec<&Message> = history.iter().collect();
    // Everything fits: the cut stays at the start of the last two turns.
    assert_eq!(compaction_cut(&refs, 0, 2, 10_000), 0);
    // The tool results do not fit: from the call, the cut skips both results.
    assert_eq!(compaction_cut(&refs, 0, 2, 50), 4);
    // Nothing fits: the cut stops at the last message, never past it.
    assert_eq!(compaction_cut(&refs, 0, 2, -5), 5);
    // A summary already past the tail start is the floor.
    assert_eq!(compaction_cut(&refs, 5, 2, 10_000), 5);
    assert_eq!(compaction_cut(&refs, 6, 2, 0), 6, "nothing left to cut");
}

#[test]
fn summary_prompt_carries_the_previous_summary_and_labels_messages() {
    let history = [
        user("fix the bug"),
        calling("c1"),
        result("c1", "file text"),
    ];
    let refs: Vec<&Message> = history.iter().collect();
    let prompt = summary_prompt(Some("  - earlier work  "), &refs, 300);
    let expected = "Summarize the following gg conversation history in at most 300 tokens.\n\
Preserve user goals, decisions, file paths, tool results, unresolved tasks, and constraints.\n\
Do not invent facts. Write concise bullet points.\n\
\nExisting summary to carry forward:\n- earlier work\n\
\nMessages to add:\n\
\n[user]\nfix the bug\n\
\n[assistant] tool_calls=1\n\nc1 read {\"path\":\"a\"}\n\
\n[tool] tool=read tool_call_id=c1\nfile text\n";
    assert_eq!(prompt, expected);
    assert!(!summary_prompt(Some("  "), &refs, 300).contains("Existing summary"));
}

#[test]
fn batch_never_ends_right_before_a_tool_result() {
    let history = [
        user(&"u".repeat(200)),
        calling("c"),
        result("c", &"r".repeat(200)),
        result("c", &"s".repeat(200)),
        user("next"),
    ];
    let refs: Vec<&Message> = history.iter().collect();
    let request = |end: usize| compaction_request_tokens(&summary_prompt(None, &refs[..end], 100));
    // A budget that fits the call and its first result but not the second: the batch would end
    // before index 3, a tool result, so it moves back over both results and ends before the
    // call, which then opens the next batch together with its results.
    let budget = request(3);
    assert!(request(4) > budget);
    assert_eq!(batch_end(&refs, 0, 4, None, 100, budget).unwrap(), 1);
    // The whole range fits: it is taken as is.
    assert_eq!(batch_end(&refs, 0, 4, None, 100, request(4)).unwrap(), 4);
    // Not even the first message fits.
    assert!(matches!(
        batch_end(&refs, 0, 4, None, 100, request(1) - 1),
        Err(ContextError::MessageTooLarge)
    ));
}

#[test]
fn budget_defaults_are_the_reference_defaults() {
    assert_eq!(
        ContextBudget::default(),
        ContextBudget {
            max_prompt_tokens: 24000,
            max_output_tokens: 4096,
            tail_turns: 6,
            summary_max_tokens: 1200,
            auto_compact: true,
        }
    );
}

fn arb_history() -> impl Strategy<Value = Vec<Message>> {
    let message = (0u8..4, "[a-z日]{0,60}").prop_map(|(kind, text)| match kind {
        0 => user(&text),
        1 => assistant(&text),
        2 => calling("c"),
        _ => result("c", &text),
    });
    proptest::collection::vec(message, 0..24)
}

proptest! {
    #[test]
    fn estimate_is_ceil_of_weighted_units(text in "\\PC{0,80}") {
        let units: u64 = text.chars().map(|c| if c.is_ascii() { 1 } else { 4 }).sum();
        prop_assert_eq!(estimate_text(&text), units.div_ceil(4));
    }

    #[test]
    fn cut_is_within_bounds_and_never_on_a_tool_result(
        history in arb_history(),
        through_seed in 0usize..30,
        turns in 0u32..5,
        tail_tokens in -50i64..400,
    ) {
        let refs: Vec<&Message> = history.iter().collect();
        let through = through_seed.min(refs.len());
        let cut = compaction_cut(&refs, through, turns, tail_tokens);
        prop_assert!(cut >= through && cut <= refs.len());
        if cut > through {
            prop_assert!(refs[cut].role != Role::Tool);
        }
    }

    #[test]
    fn batches_fit_the_budget_and_never_split_a_call_from_its_results(
        history in arb_history(),
        budget in 60u64..400,
    ) {
        let refs: Vec<&Message> = history.iter().collect();
        let through = refs.len();
        if let Ok(end) = batch_end(&refs, 0, through, None, 50, budget) {
            prop_assert!(end > 0 && end <= through);
            if end < through {
                prop_assert!(refs[end].role != Role::Tool);
                prop_assert!(compaction_request_tokens(&summary_prompt(None, &refs[..end], 50)) <= budget);
            }
        }
    }
}
