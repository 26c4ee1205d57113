//! A small HTML-to-text converter that keeps what a reader of the page sees in its main content.
//!
//! Why not a full HTML5 parser: the knowledge base only needs the words, the headings (for the
//! heading path) and the source line each line of text came from (for `file:line-line`), and a
//! tree builder costs more build time than this whole crate's chunking. Site chrome (navigation,
//! sidebars, scripts, styles, headers and footers) is dropped; when the page has a `<main>` (or
//! else an `<article>`) element, only its content is kept, which is where generators such as
//! mdBook, Sphinx and rustdoc put the page's text.
//!
//! The output is Markdown-shaped lines (`# heading`, fenced `<pre>` blocks, blank lines between
//! blocks) so the Markdown chunker handles both formats.

/// One source line (1-based `no`) of text after extraction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub no: u32,
    pub text: String,
}

/// Elements whose whole content is chrome or not text.
const SKIPPED: &[&str] = &[
    "script", "style", "nav", "header", "footer", "noscript", "svg", "template", "head", "aside",
    "button", "form", "iframe", "select", "textarea", "object", "canvas", "math",
];

/// Elements that end a line of text.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "li",
    "ul",
    "ol",
    "br",
    "tr",
    "table",
    "blockquote",
    "section",
    "dt",
    "dd",
    "dl",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "main",
    "article",
    "body",
    "figure",
    "figcaption",
    "td",
    "th",
];

/// Void elements: never have a closing tag, so they must not enter the open-element stack.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// Text, with the 1-based source line it starts on.
    Text(String, u32),
    Open(String, u32),
    Close(String, u32),
}

/// Splits HTML into text and tags (names lower-cased; attributes dropped). Comments, doctypes and
/// processing instructions vanish; the content of `<script>`/`<style>` is raw text up to its
/// closing tag, as browsers read it.
fn tokenize(html: &str) -> Vec<Token> {
    let bytes = html.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    let mut line: u32 = 1;
    let mut text_start = 0;
    let mut text_line = 1;
    let flush = |tokens: &mut Vec<Token>, from: usize, to: usize, at: u32| {
        if to > from {
            tokens.push(Token::Text(html[from..to].to_string(), at));
        }
    };
    while i < bytes.len() {
        if bytes[i] != b'<' {
            if bytes[i] == b'\n' {
                line += 1;
            }
            i += 1;
            continue;
        }
        let rest = &html[i..];
        // Comment, doctype, CDATA, processing instruction.
        let skip_to = if rest.starts_with("<!--") {
            Some(rest.find("-->").map_or(rest.len(), |e| e + 3))
        } else if rest.starts_with("<!") || rest.starts_with("<?") {
            Some(rest.find('>').map_or(rest.len(), |e| e + 1))
        } else {
            None
        };
        if let Some(len) = skip_to {
            flush(&mut tokens, text_start, i, text_line);
            line += count_newlines(&rest[..len]);
            i += len;
            text_start = i;
            text_line = line;
            continue;
        }
        let closing = rest.starts_with("</");
        let name_from = if closing { 2 } else { 1 };
        let name_len = rest[name_from..]
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'-')
            .count();
        if name_len == 0 {
            // A lone '<' in text ("a < b").
            i += 1;
            continue;
        }
        let Some(end) = tag_end(rest) else {
            break;
        };
        flush(&mut tokens, text_start, i, text_line);
        let name = rest[name_from..name_from + name_len].to_ascii_lowercase();
        let self_closing = rest[..end].ends_with("/>");
        line += count_newlines(&rest[..end]);
        i += end;
        if closing {
            tokens.push(Token::Close(name, line));
        } else {
            tokens.push(Token::Open(name.clone(), line));
            if self_closing && !VOID.contains(&name.as_str()) {
                tokens.push(Token::Close(name.clone(), line));
            }
            if name == "script" || name == "style" {
                // Raw text: skip to the closing tag.
                let close = format!("</{name}");
                let lower = html[i..].to_ascii_lowercase();
                let len = lower.find(&close).unwrap_or(lower.len());
                line += count_newlines(&html[i..i + len]);
                i += len;
            }
        }
        text_start = i;
        text_line = line;
    }
    flush(
        &mut tokens,
        text_start,
        bytes.len().min(html.len()),
        text_line,
    );
    tokens
}

/// The end (exclusive) of a tag starting at `rest[0] == '<'`, honouring quoted attributes.
fn tag_end(rest: &str) -> Option<usize> {
    let mut quote: Option<u8> = None;
    for (i, b) in rest.bytes().enumerate().skip(1) {
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if b == b'>' => return Some(i + 1),
            None => {}
        }
    }
    None
}

fn count_newlines(s: &str) -> u32 {
    u32::try_from(s.bytes().filter(|b| *b == b'\n').count()).unwrap_or(u32::MAX)
}

/// Decodes the character references that occur in generated documentation.
pub fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = tail[1..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '#'))
            .map(|e| e + 1);
        let decoded = match end {
            Some(e) if tail[e..].starts_with(';') => entity(&tail[1..e]).map(|c| (c, e + 1)),
            _ => None,
        };
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &tail[len..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        return char::from_u32(code);
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "times" => '×',
        "larr" => '←',
        "rarr" => '→',
        "middot" => '·',
        "bull" => '•',
        "laquo" => '«',
        "raquo" => '»',
        "shy" => '\u{AD}',
        _ => return None,
    })
}

/// The visible main content of an HTML page as Markdown-shaped lines, each with the source line
/// its text came from.
pub fn to_lines(html: &str) -> Vec<Line> {
    let tokens = tokenize(html);
    // Keep <main>, else <article>, else everything (the skipped elements still go).
    let scope = ["main", "article"]
        .iter()
        .find(|want| {
            tokens
                .iter()
                .any(|t| matches!(t, Token::Open(n, _) if n == *want))
        })
        .copied();
    let mut out = Lines::default();
    let mut stack: Vec<String> = Vec::new();
    let mut skip_depth = 0usize;
    let mut scope_depth = 0usize;
    let mut pre_depth = 0usize;
    let mut heading: Option<usize> = None;
    for token in tokens {
        match token {
            Token::Open(name, line) => {
                if VOID.contains(&name.as_str()) {
                    if name == "br" && skip_depth == 0 && in_scope(scope, scope_depth) {
                        out.end_line();
                    }
                    continue;
                }
                stack.push(name.clone());
                if SKIPPED.contains(&name.as_str()) {
                    skip_depth += 1;
                    continue;
                }
                if Some(name.as_str()) == scope {
                    scope_depth += 1;
                }
                if skip_depth > 0 || !in_scope(scope, scope_depth) {
                    continue;
                }
                if BLOCKS.contains(&name.as_str()) {
                    out.end_block_if(matches!(
                        name.as_str(),
                        "p" | "h1"
                            | "h2"
                            | "h3"
                            | "h4"
                            | "h5"
                            | "h6"
                            | "pre"
                            | "table"
                            | "blockquote"
                    ));
                }
                match name.as_str() {
                    "pre" => {
                        pre_depth += 1;
                        if pre_depth == 1 {
                            out.push_raw("```", line);
                        }
                    }
                    "li" => out.text("- ", line, true),
                    level @ ("h1" | "h2" | "h3" | "h4" | "h5" | "h6") => {
                        let depth = usize::from(level.as_bytes()[1] - b'0');
                        heading = Some(depth);
                        out.text(&format!("{} ", "#".repeat(depth)), line, true);
                    }
                    _ => {}
                }
            }
            Token::Close(name, _) => {
                // Pop to the matching open element; a stray close tag is ignored.
                let Some(pos) = stack.iter().rposition(|n| *n == name) else {
                    continue;
                };
                for popped in stack.drain(pos..).rev() {
                    if SKIPPED.contains(&popped.as_str()) {
                        skip_depth = skip_depth.saturating_sub(1);
                        continue;
                    }
                    if skip_depth > 0 || !in_scope(scope, scope_depth) {
                        if Some(popped.as_str()) == scope {
                            scope_depth = scope_depth.saturating_sub(1);
                        }
                        continue;
                    }
                    if popped == "pre" {
                        pre_depth = pre_depth.saturating_sub(1);
                        if pre_depth == 0 {
                            out.end_line();
                            out.push_raw("```", out.last_line);
                            out.end_block_if(true);
                        }
                    } else if popped.len() == 2
                        && popped.starts_with('h')
                        && heading.is_some()
                        && popped.as_bytes()[1].is_ascii_digit()
                    {
                        heading = None;
                        out.end_block_if(true);
                    } else if BLOCKS.contains(&popped.as_str()) {
                        out.end_block_if(matches!(popped.as_str(), "p" | "table" | "blockquote"));
                    }
                    if Some(popped.as_str()) == scope {
                        scope_depth = scope_depth.saturating_sub(1);
                    }
                }
            }
            Token::Text(text, line) => {
                if skip_depth > 0 || !in_scope(scope, scope_depth) {
                    continue;
                }
                let text = decode_entities(&text);
                if pre_depth > 0 {
                    out.pre_text(&text, line);
                } else {
                    let collapsed = collapse_whitespace(&text);
                    if !collapsed.is_empty() {
                        out.text(&collapsed, line, false);
                    }
                }
            }
        }
    }
    out.end_line();
    out.lines
}

fn in_scope(scope: Option<&str>, depth: usize) -> bool {
    scope.is_none() || depth > 0
}

/// Collapses runs of whitespace to one space, keeping a leading/trailing space so words of
/// adjacent inline elements stay apart.
fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = true;
        } else {
            if space {
                out.push(' ');
            }
            space = false;
            out.push(c);
        }
    }
    if space {
        out.push(' ');
    }
    out
}

#[derive(Default)]
struct Lines {
    lines: Vec<Line>,
    current: String,
    current_line: u32,
    last_line: u32,
}

impl Lines {
    fn text(&mut self, text: &str, line: u32, markup: bool) {
        if self.current.is_empty() {
            let trimmed = text.trim_start();
            if trimmed.is_empty() {
                return;
            }
            self.current_line = line;
            self.current.push_str(if markup { text } else { trimmed });
        } else {
            self.current.push_str(text);
        }
        self.last_line = line + count_newlines(text);
    }

    /// Text inside `<pre>`: its own newlines end lines, and `#` at a line start is code.
    fn pre_text(&mut self, text: &str, line: u32) {
        let mut at = line;
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                self.lines.push(Line {
                    no: if self.current.is_empty() {
                        at
                    } else {
                        self.current_line
                    },
                    text: std::mem::take(&mut self.current),
                });
                at += 1;
            }
            if self.current.is_empty() {
                self.current_line = at;
            }
            self.current.push_str(part);
        }
        self.last_line = at;
    }

    fn push_raw(&mut self, text: &str, line: u32) {
        self.end_line();
        self.lines.push(Line {
            no: line,
            text: text.to_string(),
        });
        self.last_line = line;
    }

    fn end_line(&mut self) {
        let text = self.current.trim_end();
        if !text.trim().is_empty() {
            self.lines.push(Line {
                no: self.current_line,
                text: text.to_string(),
            });
        }
        self.current.clear();
    }

    /// Ends the line; with `blank`, also separates the next block by a blank line.
    fn end_block_if(&mut self, blank: bool) {
        self.end_line();
        if blank && self.lines.last().is_some_and(|l| !l.text.is_empty()) {
            self.lines.push(Line {
                no: self.last_line,
                text: String::new(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(html: &str) -> Vec<(u32, String)> {
        to_lines(html).into_iter().map(|l| (l.no, l.text)).collect()
    }

    #[test]
    fn keeps_main_and_drops_chrome() {
        let html = "<html><head><title>T</title><style>p{}</style></head>\n<body>\n<nav id=\"sidebar\"><a href=\"x\">Chapter list</a></nav>\n<div id=\"menu-bar\">Theme</div>\n<main>\n<h1><a class=\"header\" href=\"#a\">Ownership &amp; You</a></h1>\n<p>Each value has an\n<em>owner</em>.</p>\n<script>var x = '<p>not text</p>';</script>\n</main>\n<footer>copyright</footer></body></html>";
        let lines = texts(html);
        let all: String = lines.iter().map(|(_, t)| format!("{t}\n")).collect();
        assert!(all.contains("# Ownership & You"), "{all}");
        assert!(all.contains("Each value has an owner."), "{all}");
        for chrome in [
            "Chapter list",
            "Theme",
            "copyright",
            "not text",
            "p{}",
            "T\n",
        ] {
            assert!(!all.contains(chrome), "{chrome} leaked: {all}");
        }
        let heading = lines.iter().find(|(_, t)| t.starts_with("# ")).unwrap();
        assert_eq!(heading.0, 6);
        let para = lines.iter().find(|(_, t)| t.starts_with("Each")).unwrap();
        assert_eq!(para.0, 7);
    }

    #[test]
    fn pre_blocks_become_fences_with_their_lines() {
        let html = "<main><p>Code:</p>\n<pre><code># not a heading\nfn main() {}\n</code></pre><p>after</p></main>";
        let lines = texts(html);
        let body: Vec<&str> = lines.iter().map(|(_, t)| t.as_str()).collect();
        let fence = body.iter().position(|t| *t == "```").unwrap();
        assert_eq!(body[fence + 1], "# not a heading");
        assert_eq!(body[fence + 2], "fn main() {}");
        assert_eq!(body[fence + 3], "```");
        assert_eq!(lines[fence + 2].0, 3);
        assert!(body.contains(&"after"));
    }

    #[test]
    fn without_main_the_body_is_kept_and_entities_decode() {
        let html =
            "<body><h2>A &lt;b&gt; &#x41;&#66;</h2><ul><li>one</li><li>two</li></ul>x < y</body>";
        let all: Vec<String> = texts(html).into_iter().map(|(_, t)| t).collect();
        assert!(all.contains(&"## A <b> AB".to_string()), "{all:?}");
        assert!(all.contains(&"- one".to_string()), "{all:?}");
        assert!(all.iter().any(|l| l.contains("x < y")), "{all:?}");
    }

    #[test]
    fn unterminated_markup_does_not_hang_or_panic() {
        for html in [
            "<main><p>abc",
            "<",
            "<a href=\"x>",
            "&#xFFFFFFFF; &bogus; &",
            "<!-- x",
        ] {
            let _ = to_lines(html);
        }
    }
}
