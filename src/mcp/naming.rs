//! Tool names and descriptions as the model sees them.
//!
//! OpenAI-compatible APIs accept function names matching `^[A-Za-z0-9_-]{1,64}$`; an MCP tool may
//! be called anything, so names are rebuilt from `mcp_<server>_<tool>` under that rule.

use std::collections::HashSet;

/// Longest function name OpenAI-compatible APIs accept.
pub const MAX_TOOL_NAME: usize = 64;
/// Longest tool description passed to the model, in characters.
pub const MAX_DESCRIPTION: usize = 1024;

/// Hands out exposed tool names, unique across every server of one hub.
#[derive(Debug, Default)]
pub struct NameAllocator {
    taken: HashSet<String>,
}

impl NameAllocator {
    /// `mcp_<server>_<tool>` with every character outside `[A-Za-z0-9_-]` replaced by `_`, cut to
    /// 64 characters; a name already handed out gets `_2`, `_3`, … (the base cut shorter so the
    /// suffix still fits).
    pub fn allocate(&mut self, server: &str, tool: &str) -> String {
        let base: String = format!("mcp_{server}_{tool}")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let mut candidate = cut(&base, MAX_TOOL_NAME);
        let mut n = 2u32;
        while self.taken.contains(&candidate) {
            let suffix = format!("_{n}");
            candidate = format!("{}{suffix}", cut(&base, MAX_TOOL_NAME - suffix.len()));
            n += 1;
        }
        self.taken.insert(candidate.clone());
        candidate
    }
}

/// `base` is ASCII by construction, so byte and character counts agree.
fn cut(base: &str, max: usize) -> String {
    base[..base.len().min(max)].to_string()
}

/// The description cut to [`MAX_DESCRIPTION`] characters (marked with `…`).
pub fn description(text: &str) -> String {
    let text = text.trim();
    if tools::registry::clip_chars(text, MAX_DESCRIPTION).len() == text.len() {
        return text.to_string();
    }
    // The mark counts: what is kept and `…` are MAX_DESCRIPTION characters together.
    tools::registry::clip_chars_marked(text.to_string(), MAX_DESCRIPTION - 1, "…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn names_are_sanitised_cut_and_suffixed() {
        let mut names = NameAllocator::default();
        let cases = [
            ("everything", "echo", "mcp_everything_echo"),
            ("my.server", "get/file name", "mcp_my_server_get_file_name"),
            ("a", "ünï", "mcp_a__n_"),
            ("a", "üni", "mcp_a__ni"),
            ("a", "üni", "mcp_a__ni_2"),
            ("a", "üni", "mcp_a__ni_3"),
            ("s", &"x".repeat(100), &format!("mcp_s_{}", "x".repeat(58))),
            (
                "s",
                &"x".repeat(101),
                &format!("mcp_s_{}_2", "x".repeat(56)),
            ),
        ];
        for (server, tool, want) in cases {
            assert_eq!(names.allocate(server, tool), want, "{server}.{tool}");
        }
    }

    #[test]
    fn descriptions_are_cut_on_characters() {
        assert_eq!(description("  short  "), "short");
        let long = "é".repeat(MAX_DESCRIPTION + 5);
        let cut = description(&long);
        assert_eq!(cut.chars().count(), MAX_DESCRIPTION);
        assert!(cut.ends_with('…'));
        assert_eq!(
            description(&"a".repeat(MAX_DESCRIPTION)),
            "a".repeat(MAX_DESCRIPTION)
        );
    }

    proptest! {
        #[test]
        fn every_name_is_valid_and_unique(pairs in proptest::collection::vec((".{0,80}", ".{0,80}"), 1..40)) {
            let mut names = NameAllocator::default();
            let mut seen = HashSet::new();
            for (server, tool) in &pairs {
                let name = names.allocate(server, tool);
                prop_assert!(!name.is_empty() && name.len() <= MAX_TOOL_NAME, "{}", name);
                prop_assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'), "{}", name);
                prop_assert!(seen.insert(name.clone()), "duplicate {}", name);
            }
        }
    }
}
