//! Searching an open knowledge base: BM25 over the body and title fields, fused with dense
//! retrieval by reciprocal rank when the index has vectors of the query's model.

use std::collections::HashMap;

use serde::Serialize;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{IndexRecordOption, TantivyDocument, Value};
use tantivy::{DocAddress, Term};

use super::dense::dense_scan;
use super::{Kb, tv};
use crate::KbError;
use crate::embed::Embedder;

/// Reciprocal rank fusion's constant (Cormack et al.): damps the head of each list so one
/// retriever's top hit cannot drown the other's.
const RRF_K: f32 = 60.0;

/// One passage found by a search.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    pub file: String,
    pub heading: Vec<String>,
    pub start_line: u32,
    pub end_line: u32,
    pub text: String,
    /// The fused score (RRF) in hybrid mode, the BM25 score otherwise.
    pub score: f32,
    /// 1-based ranks in each retriever's list, when it found the passage.
    pub bm25_rank: Option<usize>,
    pub dense_rank: Option<usize>,
}

impl Hit {
    /// `file:start-end`, the form every frontend cites.
    pub fn location(&self) -> String {
        format!("{}:{}-{}", self.file, self.start_line, self.end_line)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Bm25,
    Hybrid,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    pub hits: Vec<Hit>,
    pub mode: Mode,
    /// Why a hybrid search fell back to BM25, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Kb {
    /// The `k` best passages for `query`: BM25, fused with dense retrieval by reciprocal rank
    /// when the index has vectors of `embedder`'s model. A failing embeddings endpoint degrades
    /// to BM25 (with a note) rather than failing the search.
    pub fn search(
        &self,
        query: &str,
        k: usize,
        embedder: Option<&dyn Embedder>,
    ) -> Result<SearchResult, KbError> {
        let k = k.max(1);
        let searcher = &self.searcher;
        let pool = (k * 4).max(50);
        let bm25 = self.bm25(searcher, query, pool)?;
        let mut note = None;
        let dense = match (self.dense_with(embedder), embedder, &self.dense) {
            (true, Some(e), Some(vectors)) => match e.embed(&[query.to_string()]) {
                Ok(mut v) => match v.pop() {
                    Some(q) if q.len() == vectors.dim || vectors.addrs.is_empty() => {
                        Some(dense_scan(vectors, &q, pool))
                    }
                    Some(q) => {
                        note = Some(format!(
                            "dense retrieval unavailable ({} returned a vector of {} dimensions, the index holds {}); BM25 only",
                            e.model(),
                            q.len(),
                            vectors.dim
                        ));
                        None
                    }
                    None => None,
                },
                Err(err) => {
                    note = Some(format!("dense retrieval unavailable ({err}); BM25 only"));
                    None
                }
            },
            _ => None,
        };
        let mode = if dense.is_some() {
            Mode::Hybrid
        } else {
            Mode::Bm25
        };
        let mut scored: HashMap<DocAddress, Fused> = HashMap::new();
        match &dense {
            None => {
                for (rank, (score, addr)) in bm25.iter().enumerate() {
                    scored.insert(*addr, (*score, Some(rank + 1), None));
                }
            }
            Some(dense) => {
                for (rank, (_, addr)) in bm25.iter().enumerate() {
                    let entry = scored.entry(*addr).or_insert((0.0, None, None));
                    entry.0 += 1.0 / (RRF_K + (rank + 1) as f32);
                    entry.1 = Some(rank + 1);
                }
                for (rank, (_, addr)) in dense.iter().enumerate() {
                    let entry = scored.entry(*addr).or_insert((0.0, None, None));
                    entry.0 += 1.0 / (RRF_K + (rank + 1) as f32);
                    entry.2 = Some(rank + 1);
                }
            }
        }
        let mut ranked: Vec<(DocAddress, Fused)> = scored.into_iter().collect();
        ranked.sort_by(|a, b| {
            b.1.0
                .total_cmp(&a.1.0)
                .then_with(|| a.0.segment_ord.cmp(&b.0.segment_ord))
                .then_with(|| a.0.doc_id.cmp(&b.0.doc_id))
        });
        let mut hits = Vec::new();
        for (addr, (score, bm25_rank, dense_rank)) in ranked.into_iter().take(k) {
            let doc: TantivyDocument = searcher.doc(addr).map_err(tv)?;
            hits.push(self.hit(&doc, score, bm25_rank, dense_rank));
        }
        Ok(SearchResult { hits, mode, note })
    }

    fn hit(
        &self,
        doc: &TantivyDocument,
        score: f32,
        bm25_rank: Option<usize>,
        dense_rank: Option<usize>,
    ) -> Hit {
        let f = &self.fields;
        let text = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        };
        let num = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_u64())
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0)
        };
        Hit {
            file: text(f.path),
            heading: serde_json::from_str(&text(f.heading)).unwrap_or_default(),
            start_line: num(f.start),
            end_line: num(f.end),
            text: text(f.body),
            score,
            bm25_rank,
            dense_rank,
        }
    }

    fn bm25(
        &self,
        searcher: &tantivy::Searcher,
        query: &str,
        limit: usize,
    ) -> Result<Vec<(f32, DocAddress)>, KbError> {
        let mut analyzer = self
            .index
            .tokenizer_for_field(self.fields.body)
            .map_err(tv)?;
        let mut terms: Vec<String> = Vec::new();
        let mut stream = analyzer.token_stream(query);
        while stream.advance() {
            let t = stream.token().text.clone();
            if !terms.contains(&t) {
                terms.push(t);
            }
        }
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for t in &terms {
            clauses.push((
                Occur::Should,
                Box::new(TermQuery::new(
                    Term::from_field_text(self.fields.body, t),
                    IndexRecordOption::WithFreqs,
                )),
            ));
            // Heading and file-name words say what a passage is about: worth more than a mention.
            clauses.push((
                Occur::Should,
                Box::new(BoostQuery::new(
                    Box::new(TermQuery::new(
                        Term::from_field_text(self.fields.title, t),
                        IndexRecordOption::WithFreqs,
                    )),
                    1.5,
                )),
            ));
        }
        let query = BooleanQuery::new(clauses);
        searcher
            .search(&query, &TopDocs::with_limit(limit).order_by_score())
            .map_err(tv)
    }
}

/// A passage's fused score and its 1-based rank in the BM25 and dense lists.
type Fused = (f32, Option<usize>, Option<usize>);
