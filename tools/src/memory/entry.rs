//! What one memory entry is: its layer and scope, its stable id, the instruction mark read from
//! its text, and the cleaning of new text before it is stored. Apart from the store, which reads
//! and writes the files these come from.

use serde::{Deserialize, Serialize};

use super::MemoryError;
use super::marks::{self, Mark};

/// The longest entry accepted, in characters: memory is for notes, not documents.
pub const MAX_ENTRY_CHARS: usize = 2000;
/// Which store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    Workspace,
    Global,
}

impl Layer {
    pub fn parse(text: &str) -> Result<Layer, MemoryError> {
        match text {
            "workspace" => Ok(Layer::Workspace),
            "global" => Ok(Layer::Global),
            other => Err(MemoryError::Target {
                given: other.to_string(),
            }),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Workspace => "workspace",
            Layer::Global => "global",
        }
    }
}

/// Which file of a layer an entry goes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    General,
    Daily,
    Person(String),
    Group(String),
}

impl Scope {
    /// `general`, `daily`, `person:<name>` or `group:<name>`.
    pub fn parse(text: &str) -> Result<Scope, MemoryError> {
        let name = |kind: &'static str, n: &str| {
            let n = n.trim();
            if n.is_empty() {
                Err(MemoryError::ScopeNeedsName { kind })
            } else {
                Ok(n.to_string())
            }
        };
        match text.trim() {
            "" | "general" => Ok(Scope::General),
            "daily" => Ok(Scope::Daily),
            other => match other.split_once(':') {
                Some(("person", n)) => name("person", n).map(Scope::Person),
                Some(("group", n)) => name("group", n).map(Scope::Group),
                _ => Err(MemoryError::Scope {
                    given: other.to_string(),
                }),
            },
        }
    }
}

/// A page's file name: lower-case letters, digits, `-` and `_`; spaces become `-`; anything
/// else is dropped; nothing left is `unnamed`.
pub fn slug(name: &str) -> String {
    let slug: String = name
        .trim()
        .chars()
        .flat_map(char::to_lowercase)
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect();
    if slug.is_empty() {
        "unnamed".to_string()
    } else {
        slug
    }
}

/// One line of a memory file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Stable while the line is unchanged: `gg memory rm <id>`.
    pub id: String,
    pub layer: Layer,
    /// Relative to the layer's directory (`MEMORY.md`, `people/alice.md`).
    pub path: String,
    /// 1-based.
    pub line: usize,
    /// The line as stored.
    pub text: String,
    /// Whether the entry reads as an instruction: worked out when first asked (most lines read
    /// for a prompt are cut by its budget before anyone asks).
    mark: std::sync::OnceLock<Option<Mark>>,
}

impl Entry {
    pub(super) fn new(layer: Layer, path: &str, line: usize, text: &str) -> Entry {
        Entry {
            id: entry_id(layer, path, text),
            layer,
            path: path.to_string(),
            line,
            text: text.to_string(),
            mark: std::sync::OnceLock::new(),
        }
    }

    /// Set when the entry reads as an instruction to the agent.
    pub fn mark(&self) -> Option<&Mark> {
        self.mark.get_or_init(|| marks::check(&self.text)).as_ref()
    }
}

/// FNV-1a over layer, file and line: short, stable across runs and builds.
fn entry_id(layer: Layer, path: &str, text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in layer
        .as_str()
        .bytes()
        .chain([0])
        .chain(path.bytes())
        .chain([0])
        .chain(text.bytes())
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:08x}", (hash >> 32) as u32 ^ hash as u32)
}

/// The lines of a file that are entries: not blank, not headings.
pub(super) fn entry_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end()))
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
}

/// Makes model or person text one storable line: whitespace runs (newlines included) become one
/// space, other control characters are dropped.
pub fn clean_entry(content: &str) -> Result<String, MemoryError> {
    let text: String = content
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    let text = text.trim().to_string();
    if text.is_empty() {
        return Err(MemoryError::EmptyEntry);
    }
    if text.chars().count() > MAX_ENTRY_CHARS {
        return Err(MemoryError::EntryTooLong {
            chars: text.chars().count(),
        });
    }
    Ok(text)
}
