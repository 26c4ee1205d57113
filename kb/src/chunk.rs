//! Structure-aware chunking: a passage is a piece of one section (Markdown/HTML), one code item,
//! or a run of paragraphs, never a window cut at a byte count. Each chunk keeps its heading path
//! and the source lines it covers, so a search hit can be cited as `file:line-line`.

pub use crate::html::Line;

/// A passage of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// Headings from the outermost in (Markdown/HTML sections), or the item's signature (code).
    pub heading: Vec<String>,
    pub start_line: u32,
    pub end_line: u32,
    pub text: String,
}

/// What kind of structure a file has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Markdown,
    Html,
    Code,
    Text,
}

/// A chunk aims at this many bytes: about 300 tokens, a passage a model reads at a glance and an
/// embedding model still sees whole.
pub const TARGET_BYTES: usize = 1200;
/// No chunk grows past this, even a code block: longer blocks are split at line boundaries.
pub const MAX_BYTES: usize = 3000;

pub fn lines_of(text: &str) -> Vec<Line> {
    text.lines()
        .enumerate()
        .map(|(i, t)| Line {
            no: u32::try_from(i + 1).unwrap_or(u32::MAX),
            text: t.to_string(),
        })
        .collect()
}

/// Chunks a file's text according to its kind.
pub fn chunk(kind: Kind, text: &str) -> Vec<Chunk> {
    match kind {
        Kind::Markdown => markdown(&lines_of(text)),
        Kind::Html => markdown(&crate::html::to_lines(text)),
        Kind::Code => code(&lines_of(text)),
        Kind::Text => sections(Vec::new(), &lines_of(text)),
    }
}

/// Markdown (and extracted HTML): ATX headings open sections; fenced code stays whole.
pub fn markdown(lines: &[Line]) -> Vec<Chunk> {
    let mut out = Vec::new();
    let mut path: Vec<(usize, String)> = Vec::new();
    let mut section: Vec<Line> = Vec::new();
    let mut fence: Option<&str> = None;
    let flush = |section: &mut Vec<Line>, path: &[(usize, String)], out: &mut Vec<Chunk>| {
        let heading = path.iter().map(|(_, h)| h.clone()).collect();
        out.extend(sections(heading, section));
        section.clear();
    };
    for line in lines {
        let trimmed = line.text.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            section.push(line.clone());
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
            section.push(line.clone());
            continue;
        }
        if let Some((level, title)) = atx_heading(&line.text) {
            flush(&mut section, &path, &mut out);
            while path.last().is_some_and(|(l, _)| *l >= level) {
                path.pop();
            }
            path.push((level, title));
            section.push(line.clone());
            continue;
        }
        section.push(line.clone());
    }
    flush(&mut section, &path, &mut out);
    out
}

fn atx_heading(line: &str) -> Option<(usize, String)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.bytes().take_while(|b| *b == b'#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let title = &rest[level..];
    if !(title.is_empty() || title.starts_with(' ') || title.starts_with('\t')) {
        return None;
    }
    let title = title.trim().trim_end_matches('#').trim();
    if title.is_empty() {
        return None;
    }
    Some((level, title.to_string()))
}

/// Splits one section (or a whole plain-text file) into chunks of whole blocks (runs of lines
/// separated by blank lines; a fenced block counts as one), packed up to [`TARGET_BYTES`].
pub fn sections(heading: Vec<String>, lines: &[Line]) -> Vec<Chunk> {
    let blocks = blocks(lines);
    let mut out = Vec::new();
    let mut current: Vec<&Line> = Vec::new();
    let mut size = 0;
    for block in blocks {
        let block_size: usize = block.iter().map(|l| l.text.len() + 1).sum();
        if !current.is_empty() && size + block_size > TARGET_BYTES {
            out.push(make_chunk(&heading, &current));
            current.clear();
            size = 0;
        }
        if block_size > MAX_BYTES {
            // One oversized block (a long code listing): split at line boundaries.
            let mut piece: Vec<&Line> = Vec::new();
            let mut piece_size = 0;
            for line in block {
                let len = line.text.len() + 1;
                if !piece.is_empty() && piece_size + len > TARGET_BYTES {
                    out.push(make_chunk(&heading, &piece));
                    piece.clear();
                    piece_size = 0;
                }
                piece.push(line);
                piece_size += len;
            }
            current = piece;
            size = piece_size;
            continue;
        }
        current.extend(block);
        size += block_size;
    }
    if !current.is_empty() {
        out.push(make_chunk(&heading, &current));
    }
    out.retain(|c| !c.text.trim().is_empty());
    out
}

/// Runs of non-blank lines; a fenced code block is one block even across blank lines.
fn blocks(lines: &[Line]) -> Vec<Vec<&Line>> {
    let mut out: Vec<Vec<&Line>> = Vec::new();
    let mut current: Vec<&Line> = Vec::new();
    let mut fence: Option<&str> = None;
    for line in lines {
        let trimmed = line.text.trim_start();
        match fence {
            Some(open) => {
                current.push(line);
                if trimmed.starts_with(open) {
                    fence = None;
                }
                continue;
            }
            None if trimmed.starts_with("```") || trimmed.starts_with("~~~") => {
                fence = Some(&trimmed[..3]);
                current.push(line);
                continue;
            }
            None => {}
        }
        if trimmed.is_empty() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else {
            current.push(line);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn make_chunk(heading: &[String], lines: &[&Line]) -> Chunk {
    let start_line = lines.iter().map(|l| l.no).min().unwrap_or(1);
    let end_line = lines.iter().map(|l| l.no).max().unwrap_or(start_line);
    let mut text = String::new();
    for line in lines {
        text.push_str(&line.text);
        text.push('\n');
    }
    Chunk {
        heading: heading.to_vec(),
        start_line,
        end_line,
        text,
    }
}

/// Words that start a top-level item in the languages people keep next to their notes.
const ITEM_STARTS: &[&str] = &[
    "fn ",
    "pub ",
    "async ",
    "unsafe ",
    "struct ",
    "enum ",
    "impl ",
    "impl<",
    "trait ",
    "mod ",
    "type ",
    "const ",
    "static ",
    "macro_rules!",
    "class ",
    "def ",
    "function ",
    "func ",
    "interface ",
    "export ",
    "package ",
    "public ",
    "private ",
    "protected ",
    "module ",
    "let ",
    "var ",
];

/// Code: a chunk per top-level item (a line at column 0 that starts an item, together with the
/// comments and attributes right above it); long items are split at blank lines. The heading is
/// the item's first line.
pub fn code(lines: &[Line]) -> Vec<Chunk> {
    let mut items: Vec<(String, Vec<Line>)> = vec![(String::new(), Vec::new())];
    let mut leading: Vec<Line> = Vec::new();
    for line in lines {
        let text = line.text.as_str();
        let at_col0 = !text.starts_with([' ', '\t']) && !text.is_empty();
        let is_prefix = at_col0
            && (text.starts_with("///")
                || text.starts_with("//")
                || text.starts_with("#[")
                || text.starts_with('@')
                || text.starts_with("/**")
                || text.starts_with("# "));
        if is_prefix {
            leading.push(line.clone());
            continue;
        }
        if at_col0 && ITEM_STARTS.iter().any(|s| text.starts_with(s)) {
            let signature: String = text.trim().chars().take(120).collect();
            items.push((signature, std::mem::take(&mut leading)));
        } else if !leading.is_empty() {
            let last = items.len() - 1;
            items[last].1.append(&mut leading);
        }
        let last = items.len() - 1;
        items[last].1.push(line.clone());
    }
    let last = items.len() - 1;
    items[last].1.append(&mut leading);
    let mut out = Vec::new();
    for (signature, item_lines) in items {
        let heading = if signature.is_empty() {
            Vec::new()
        } else {
            vec![signature]
        };
        out.extend(sections(heading, &item_lines));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_sections_keep_heading_paths_and_lines() {
        let text = "# Guide\nintro\n\n## Install\nrun it\n\n```sh\n# a comment, not a heading\n\nmake\n```\n\n### Linux\napt\n## Use\nsearch\n";
        let chunks = chunk(Kind::Markdown, text);
        let find = |needle: &str| chunks.iter().find(|c| c.text.contains(needle)).unwrap();
        assert_eq!(find("intro").heading, vec!["Guide"]);
        let install = find("make");
        assert_eq!(install.heading, vec!["Guide", "Install"]);
        assert!(install.text.contains("# a comment, not a heading"));
        assert_eq!((install.start_line, install.end_line), (4, 11));
        assert_eq!(find("apt").heading, vec!["Guide", "Install", "Linux"]);
        let usage = find("search");
        assert_eq!(usage.heading, vec!["Guide", "Use"]);
        assert_eq!((usage.start_line, usage.end_line), (15, 16));
    }

    #[test]
    fn long_sections_split_at_paragraphs_and_stay_bounded() {
        let para = "word ".repeat(100);
        let text = format!("# T\n{para}\n\n{para}\n\n{para}\n\n{para}\n");
        let chunks = chunk(Kind::Markdown, &text);
        assert!(chunks.len() >= 2, "{chunks:?}");
        for c in &chunks {
            assert!(c.text.len() <= MAX_BYTES);
            assert_eq!(c.heading, vec!["T"]);
        }
        let long_line = format!("{}\n", "x".repeat(80)).repeat(100);
        let chunks = chunk(Kind::Text, &long_line);
        assert!(chunks.iter().all(|c| c.text.len() <= MAX_BYTES));
        assert_eq!(chunks.first().unwrap().start_line, 1);
        assert_eq!(chunks.last().unwrap().end_line, 100);
    }

    #[test]
    fn code_items_are_chunks_with_their_signature() {
        let text = "use std::io;\n\n/// Adds.\n#[inline]\npub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n\nstruct Point {\n    x: i32,\n}\n";
        let chunks = chunk(Kind::Code, text);
        let add = chunks.iter().find(|c| c.text.contains("a + b")).unwrap();
        assert_eq!(add.heading, vec!["pub fn add(a: u32, b: u32) -> u32 {"]);
        assert!(add.text.contains("/// Adds."));
        assert_eq!((add.start_line, add.end_line), (3, 7));
        let point = chunks.iter().find(|c| c.text.contains("x: i32")).unwrap();
        assert_eq!(point.heading, vec!["struct Point {"]);
        assert!(!point.text.contains("a + b"));
    }
}
