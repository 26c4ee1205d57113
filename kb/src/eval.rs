//! Retrieval quality over a labelled query file: one JSON object a line,
//! `{"query": "...", "expect": "..."}`; blank lines and lines starting with `#` are comments.
//!
//! A hit answers a query when its file path ends with `expect` at a path-component boundary (a
//! file label, e.g. `ch04-01-what-is-ownership.html`), or, failing that, when its text contains
//! `expect` case-insensitively (the reference's text label).

use serde::{Deserialize, Serialize};

use crate::{Embedder, Hit, Kb, KbError, Mode};

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Case {
    pub query: String,
    pub expect: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseResult {
    pub query: String,
    pub expect: String,
    /// 1-based rank of the first hit that answers, within the top k.
    pub rank: Option<usize>,
    /// Where the top hit came from, to see what a failing query found instead.
    pub top: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub k: usize,
    pub mode: Mode,
    pub cases: Vec<CaseResult>,
    pub hits: usize,
    pub recall: f64,
    /// Mean reciprocal rank over the top k (a miss counts 0).
    pub mrr: f64,
}

/// Parses the JSONL text; an error names the line.
pub fn parse(text: &str) -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let case: Case = serde_json::from_str(trimmed)
            .map_err(|e| format!("line {}: expected {{\"query\",\"expect\"}}: {e}", i + 1))?;
        if case.query.trim().is_empty() || case.expect.trim().is_empty() {
            return Err(format!("line {}: empty query or expect", i + 1));
        }
        cases.push(case);
    }
    if cases.is_empty() {
        return Err("no queries in the file".to_string());
    }
    Ok(cases)
}

/// Whether `hit` answers a query labelled `expect`.
pub fn answers(hit: &Hit, expect: &str) -> bool {
    let expect = expect.trim();
    if let Some(prefix) = hit.file.strip_suffix(expect)
        && (prefix.is_empty() || prefix.ends_with('/') || expect.starts_with('/'))
    {
        return true;
    }
    hit.text.to_lowercase().contains(&expect.to_lowercase())
}

pub fn run(
    kb: &Kb,
    cases: &[Case],
    k: usize,
    embedder: Option<&dyn Embedder>,
) -> Result<Report, KbError> {
    let mut results = Vec::new();
    let mut mode = Mode::Bm25;
    for case in cases {
        let found = kb.search(&case.query, k, embedder)?;
        mode = found.mode;
        let rank = found
            .hits
            .iter()
            .position(|h| answers(h, &case.expect))
            .map(|p| p + 1);
        results.push(CaseResult {
            query: case.query.clone(),
            expect: case.expect.clone(),
            rank,
            top: found.hits.first().map(Hit::location),
        });
    }
    let hits = results.iter().filter(|r| r.rank.is_some()).count();
    let n = results.len().max(1) as f64;
    let mrr = results
        .iter()
        .filter_map(|r| r.rank)
        .map(|r| 1.0 / r as f64)
        .sum::<f64>()
        / n;
    Ok(Report {
        k,
        mode,
        hits,
        recall: hits as f64 / n,
        mrr,
        cases: results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(file: &str, text: &str) -> Hit {
        Hit {
            file: file.to_string(),
            heading: Vec::new(),
            start_line: 1,
            end_line: 2,
            text: text.to_string(),
            score: 1.0,
            bm25_rank: Some(1),
            dense_rank: None,
        }
    }

    #[test]
    fn file_labels_match_whole_components_and_text_labels_any_case() {
        let h = hit(
            "/book/ch04-01-what-is-ownership.html",
            "Each value has an OWNER.",
        );
        assert!(answers(&h, "ch04-01-what-is-ownership.html"));
        assert!(answers(&h, "book/ch04-01-what-is-ownership.html"));
        assert!(!answers(&h, "01-what-is-ownership.html"));
        assert!(answers(&h, "has an owner"));
        assert!(!answers(&h, "borrow"));
    }

    #[test]
    fn parse_skips_comments_and_names_bad_lines() {
        let cases = parse("# c\n\n{\"query\":\"q\",\"expect\":\"e\"}\n").unwrap();
        assert_eq!(cases.len(), 1);
        let err = parse("{\"query\":\"q\"}\n").unwrap_err();
        assert!(err.starts_with("line 1"), "{err}");
        assert!(parse("# only\n").is_err());
    }
}
