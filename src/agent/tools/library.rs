//! The library tools as the chain sees them: `library_search` and `library_read`, both
//! `ReadOnly`. They read only beneath the library root, through the file tools' `openat2`
//! confinement with `RESOLVE_NO_SYMLINKS` (see `tools::library`), and what they return is the
//! person's documents, written by third parties: it goes back to the model wrapped as untrusted
//! content. Adding and removing files is the person's (`gg library`), never the model's.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use crate::agent::chain::{Assessment, Proposal, ProposeError, Tool};
use crate::agent::untrusted;
use tools::library::{Library, Passage, ReadRequest, read_file, search, search_ranked};
use tools::registry::Outcome;

/// The most hits one search returns.
const MAX_TOP_K: usize = 20;
const DEFAULT_TOP_K: usize = 8;

/// The two library tools over one library.
pub fn tools(library: Library) -> Vec<Arc<dyn Tool>> {
    let library = Arc::new(library);
    vec![
        Arc::new(Search(Arc::clone(&library))) as Arc<dyn Tool>,
        Arc::new(ReadTool(library)),
    ]
}

fn parse<T: serde::de::DeserializeOwned>(tool: &str, arguments: &str) -> Result<T, ProposeError> {
    serde_json::from_str(arguments)
        .map_err(|e| ProposeError::arguments_led(format!("invalid {tool} arguments"), e))
}

async fn blocking(f: impl FnOnce() -> Result<String, String> + Send + 'static) -> Outcome {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(text)) => Outcome::text(text),
        Ok(Err(e)) => Outcome::error(e),
        Err(e) => Outcome::error(format!("the library task failed: {e}")),
    }
}

struct Search(Arc<Library>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    top_k: Option<usize>,
}

impl Tool for Search {
    fn name(&self) -> &str {
        "library_search"
    }

    fn description(&self) -> &str {
        "Search the user's library (their own documents, kept by gg) by keywords. Returns the \
         best matching lines as `name:line: text`; read more with library_read."
    }

    fn parameters(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K,
                          "description": "How many lines to return (default 8)."}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    fn propose(&self, arguments: &str) -> Result<Proposal, ProposeError> {
        let args: SearchArgs = parse(self.name(), arguments)?;
        let top_k = args.top_k.unwrap_or(DEFAULT_TOP_K).clamp(1, MAX_TOP_K);
        let library = Arc::clone(&self.0);
        let query = args.query;
        Ok(Proposal::tool(
            Assessment::ReadOnly,
            format!("library_search {query:?}"),
            String::new(),
            format!("library_search\0{arguments}"),
            move |_cancel| {
                Box::pin(blocking(move || {
                    // Ranked passages from the knowledge-base engine; keyword lines when it
                    // cannot serve the search (no index, nothing found).
                    if let Some(ranked) =
                        search_ranked(&library, &query, top_k).map_err(|e| e.to_string())?
                    {
                        return Ok(render_passages(&query, &ranked.passages, &ranked.skipped));
                    }
                    let (hits, searched, skipped) =
                        search(&library, &query, top_k).map_err(|e| e.to_string())?;
                    let mut text = String::new();
                    if hits.is_empty() {
                        text.push_str(&format!(
                            "no matches for {query:?} in the library ({searched} files searched)"
                        ));
                    } else {
                        let lines: Vec<String> = hits
                            .iter()
                            .map(|h| format!("{}:{}: {}", h.name, h.line, h.snippet))
                            .collect();
                        text.push_str(&untrusted::wrap(
                            &format!("library search: {query}"),
                            &lines.join("\n"),
                        ));
                    }
                    for why in skipped {
                        text.push_str(&format!("\nskipped {why}"));
                    }
                    Ok(text)
                }))
            },
        ))
    }
}

/// Passages as `name:start-end (heading › path)` blocks separated by `---`, inside one
/// untrusted-content block.
fn render_passages(query: &str, passages: &[Passage], skipped: &[String]) -> String {
    let blocks: Vec<String> = passages
        .iter()
        .map(|p| {
            let heading = if p.heading.is_empty() {
                String::new()
            } else {
                format!(" ({})", p.heading.join(" › "))
            };
            format!(
                "{}:{}-{}{heading}\n{}",
                p.name, p.start_line, p.end_line, p.text
            )
        })
        .collect();
    let mut text = format!(
        "{} passages, best first (ranked by the knowledge-base engine, BM25); read more with \
         library_read and an offset\n",
        passages.len()
    );
    text.push_str(&untrusted::wrap(
        &format!("library search: {query}"),
        &blocks.join("\n---\n"),
    ));
    for why in skipped {
        text.push_str(&format!("\nskipped {why}"));
    }
    text
}

struct ReadTool(Arc<Library>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

impl Tool for ReadTool {
    fn name(&self) -> &str {
        "library_read"
    }

    fn description(&self) -> &str {
        "Read a text file from the user's library by its name (as library_search shows it). \
         offset is the first line (1-based), limit the number of lines (at most 2000)."
    }

    fn parameters(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file's name in the library."},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": 2000}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn parallel_safe(&self) -> bool {
        true
    }

    fn propose(&self, arguments: &str) -> Result<Proposal, ProposeError> {
        let args: ReadArgs = parse(self.name(), arguments)?;
        let library = Arc::clone(&self.0);
        let request = ReadRequest {
            path: args.path,
            offset: args.offset,
            limit: args.limit,
        };
        Ok(Proposal::tool(
            Assessment::ReadOnly,
            format!("library_read {}", request.path),
            String::new(),
            format!("library_read\0{arguments}"),
            move |_cancel| {
                Box::pin(blocking(move || {
                    let (header, text) =
                        read_file(&library, &request).map_err(|e| e.to_string())?;
                    Ok(format!(
                        "{header}\n{}",
                        untrusted::wrap(&format!("library:{}", request.path), &text)
                    ))
                }))
            },
        ))
    }
}
