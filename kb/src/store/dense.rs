//! Dense retrieval over an opened commit: its vectors lined up with the searcher's documents in
//! one contiguous array, and the exact cosine scan over them. Apart because it is the only part
//! that knows the vectors file's rows and the searcher's document addresses at once.

use tantivy::DocAddress;

use crate::embed;
use crate::vectors::Vectors;

/// The opened commit's vectors in the searcher's document order, for an exact scan over one
/// contiguous slice: row `i` of `data` is the passage at `addrs[i]`, whose `id` is `ids[i]`.
pub(super) struct Dense {
    pub(super) dim: usize,
    pub(super) addrs: Vec<DocAddress>,
    pub(super) ids: Vec<u64>,
    pub(super) data: Vec<f32>,
}

impl Dense {
    /// Lines up the vectors file with the searcher's live documents: every live passage must
    /// have exactly one vector and every vector a live passage.
    pub(super) fn load(searcher: &tantivy::Searcher, file: &Vectors) -> Result<Dense, String> {
        let dim = file.dim();
        let mut dense = Dense {
            dim,
            addrs: Vec::with_capacity(file.len()),
            ids: Vec::with_capacity(file.len()),
            data: Vec::with_capacity(file.len().saturating_mul(dim)),
        };
        let mut used = vec![false; file.len()];
        for (ord, segment) in searcher.segment_readers().iter().enumerate() {
            let segment_ord =
                u32::try_from(ord).map_err(|_| "too many index segments".to_string())?;
            let ids = segment
                .fast_fields()
                .u64("id")
                .map_err(|e| format!("passage ids: {e}"))?;
            for doc_id in 0..segment.max_doc() {
                if segment.is_deleted(doc_id) {
                    continue;
                }
                let id = ids
                    .first(doc_id)
                    .ok_or_else(|| "a passage has no id".to_string())?;
                let (row, vector) = file
                    .find(id)
                    .and_then(|row| Some((row, file.row(row)?)))
                    .ok_or_else(|| format!("the vectors file has no vector for passage {id}"))?;
                if std::mem::replace(&mut used[row], true) {
                    return Err(format!("two passages share the id {id}"));
                }
                dense.addrs.push(DocAddress::new(segment_ord, doc_id));
                dense.ids.push(id);
                dense.data.extend_from_slice(vector);
            }
        }
        if dense.addrs.len() != file.len() {
            return Err(format!(
                "the vectors file holds {} vectors for {} passages",
                file.len(),
                dense.addrs.len()
            ));
        }
        Ok(dense)
    }

    pub(super) fn rows(&self) -> impl Iterator<Item = (DocAddress, u64, &[f32])> + '_ {
        // dim 0 only with no rows (an index of nothing), where chunks_exact(1) yields nothing.
        self.addrs
            .iter()
            .zip(&self.ids)
            .zip(self.data.chunks_exact(self.dim.max(1)))
            .map(|((addr, id), v)| (*addr, *id, v))
    }
}

/// Brute-force cosine over the opened commit's vectors, one contiguous slice: exact, and fast
/// enough for the tens of thousands of passages a personal knowledge base holds. Ties keep the
/// index's document order.
pub(super) fn dense_scan(dense: &Dense, query: &[f32], limit: usize) -> Vec<(f32, DocAddress)> {
    let query = embed::normalize(query.to_vec());
    let mut scored: Vec<(f32, usize)> = dense
        .data
        .chunks_exact(dense.dim.max(1))
        .take(dense.addrs.len())
        .map(|v| embed::dot(&query, v))
        .zip(0..)
        .collect();
    // Best score first, then document order: the order a stable sort by score gives, found
    // without sorting every passage.
    let order = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if limit == 0 {
        return Vec::new();
    }
    if scored.len() > limit {
        scored.select_nth_unstable_by(limit - 1, order);
        scored.truncate(limit);
    }
    scored.sort_unstable_by(order);
    scored
        .into_iter()
        .filter_map(|(score, row)| dense.addrs.get(row).map(|addr| (score, *addr)))
        .collect()
}
