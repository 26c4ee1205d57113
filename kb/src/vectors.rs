//! The passages' embedding vectors, kept apart from their text: one file per commit in the index
//! directory, named by the commit's manifest, read once when the knowledge base is opened.
//!
//! Layout, little-endian:
//!
//! | bytes | |
//! |---|---|
//! | 8 | magic `GGKBVEC\0` |
//! | 4 | version ([`VERSION`]) |
//! | 4 | dimension |
//! | 8 | count N |
//! | 8 | checksum of everything after the header ([`checksum`]) |
//! | N × 8 | passage ids (the index's `id` fast field), strictly ascending |
//! | N × dim × 4 | the vectors (f32), row i belonging to id i |
//!
//! Anything that does not add up (length, version, dimension, order, checksum, a non-finite
//! value) is refused with a message; the caller turns it into "rebuild this knowledge base".

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

pub const MAGIC: &[u8; 8] = b"GGKBVEC\0";
pub const VERSION: u32 = 1;
pub const HEADER_BYTES: usize = 32;

/// Rows of (passage id, vector) of one dimension, the vectors in one contiguous array.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Vectors {
    dim: usize,
    ids: Vec<u64>,
    data: Vec<f32>,
}

impl Vectors {
    pub fn new(dim: usize) -> Vectors {
        Vectors {
            dim,
            ids: Vec::new(),
            data: Vec::new(),
        }
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// The vector of row `row`.
    pub fn row(&self, row: usize) -> Option<&[f32]> {
        let start = row.checked_mul(self.dim)?;
        self.data.get(start..start.checked_add(self.dim)?)
    }

    /// The row holding `id`.
    pub fn find(&self, id: u64) -> Option<usize> {
        self.ids.binary_search(&id).ok()
    }

    /// Appends a row; ids must come in strictly ascending order, vectors in the set's dimension.
    pub fn push(&mut self, id: u64, vector: &[f32]) -> Result<(), String> {
        if vector.len() != self.dim {
            return Err(format!(
                "a vector of {} dimensions among vectors of {}",
                vector.len(),
                self.dim
            ));
        }
        if self.ids.last().is_some_and(|&last| last >= id) {
            return Err(format!("passage id {id} out of order"));
        }
        self.ids.push(id);
        self.data.extend_from_slice(vector);
        Ok(())
    }

    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.ids.len() * 8 + self.data.len() * 4);
        for id in &self.ids {
            body.extend_from_slice(&id.to_le_bytes());
        }
        for x in &self.data {
            body.extend_from_slice(&x.to_le_bytes());
        }
        let mut out = Vec::with_capacity(HEADER_BYTES + body.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        // Dimensions and counts beyond u32/u64 cannot be held in memory to begin with.
        out.extend_from_slice(&u32::try_from(self.dim).unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(&(self.ids.len() as u64).to_le_bytes());
        out.extend_from_slice(&checksum(&body).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Reads back what [`Vectors::encode`] wrote, checking that it is whole and of dimension `dim`.
    pub fn decode(bytes: &[u8], dim: usize) -> Result<Vectors, String> {
        let header = bytes
            .get(..HEADER_BYTES)
            .ok_or_else(|| format!("{} bytes, shorter than the header", bytes.len()))?;
        let word = |at: usize| -> [u8; 8] {
            let mut w = [0u8; 8];
            w.copy_from_slice(&header[at..at + 8]);
            w
        };
        let half = |at: usize| -> u32 {
            let mut w = [0u8; 4];
            w.copy_from_slice(&header[at..at + 4]);
            u32::from_le_bytes(w)
        };
        if header[..8] != MAGIC[..] {
            return Err("not a vectors file (bad magic)".to_string());
        }
        let version = half(8);
        if version != VERSION {
            return Err(format!(
                "vectors file version {version}, this gg reads {VERSION}"
            ));
        }
        let file_dim = half(12) as usize;
        if file_dim != dim {
            return Err(format!(
                "vectors of {file_dim} dimensions, the model's are {dim}"
            ));
        }
        let count = u64::from_le_bytes(word(16));
        let sum = u64::from_le_bytes(word(24));
        let body = &bytes[HEADER_BYTES..];
        let too_many = || format!("{count} vectors of {dim} dimensions cannot be held");
        let n = usize::try_from(count).map_err(|_| too_many())?;
        let expected = dim
            .checked_mul(4)
            .and_then(|row| row.checked_add(8))
            .and_then(|row| row.checked_mul(n))
            .ok_or_else(too_many)?;
        if body.len() != expected {
            return Err(format!(
                "{} bytes of vectors where {count} × {dim} dimensions need {expected} (truncated or damaged)",
                body.len()
            ));
        }
        if checksum(body) != sum {
            return Err("vectors file checksum mismatch (damaged)".to_string());
        }
        let (id_bytes, vector_bytes) = body.split_at(n * 8);
        let ids: Vec<u64> = id_bytes
            .chunks_exact(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w.copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect();
        if ids.windows(2).any(|w| w[0] >= w[1]) {
            return Err("passage ids out of order".to_string());
        }
        let data: Vec<f32> = vector_bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if data.iter().any(|x| !x.is_finite()) {
            return Err("a vector holds a non-finite value".to_string());
        }
        Ok(Vectors { dim, ids, data })
    }

    /// Writes a new file at `path` (never replacing one) and syncs it.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        file.write_all(&self.encode())
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn read(path: &Path, dim: usize) -> Result<Vectors, String> {
        let bytes = fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Vectors::decode(&bytes, dim).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// FNV-1a over 8-byte little-endian words (the tail zero-padded), seeded with the length: catches
/// damage, not tampering, at memory speed.
pub fn checksum(bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ (bytes.len() as u64);
    let mut words = bytes.chunks_exact(8);
    for w in words.by_ref() {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = (h ^ u64::from_le_bytes(b)).wrapping_mul(PRIME);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(b)).wrapping_mul(PRIME);
    }
    h
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sample() -> Vectors {
        let mut v = Vectors::new(3);
        v.push(2, &[1.0, 0.0, -0.5]).unwrap();
        v.push(7, &[0.25, 0.5, 0.75]).unwrap();
        v
    }

    #[test]
    fn round_trip() {
        let v = sample();
        let bytes = v.encode();
        assert_eq!(bytes.len(), HEADER_BYTES + 2 * 8 + 2 * 3 * 4);
        let back = Vectors::decode(&bytes, 3).unwrap();
        assert_eq!(back, v);
        assert_eq!(back.find(7), Some(1));
        assert_eq!(back.row(1).unwrap(), &[0.25, 0.5, 0.75]);
        assert_eq!(back.find(3), None);
        let empty = Vectors::new(384);
        assert_eq!(Vectors::decode(&empty.encode(), 384).unwrap().len(), 0);
    }

    #[test]
    fn push_refuses_wrong_dimension_and_order() {
        let mut v = sample();
        assert!(v.push(9, &[1.0]).is_err());
        assert!(v.push(7, &[1.0, 1.0, 1.0]).is_err());
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn every_damage_is_refused_with_a_reason() {
        let bytes = sample().encode();
        // Every truncation, including inside the header.
        for len in 0..bytes.len() {
            let err = Vectors::decode(&bytes[..len], 3).unwrap_err();
            assert!(!err.is_empty());
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(
            Vectors::decode(&longer, 3)
                .unwrap_err()
                .contains("truncated or damaged")
        );
        assert!(
            Vectors::decode(&bytes, 4)
                .unwrap_err()
                .contains("dimensions")
        );
        // Every single flipped bit is caught (magic, version, dim, count, checksum or body).
        for i in 0..bytes.len() * 8 {
            let mut bad = bytes.clone();
            bad[i / 8] ^= 1 << (i % 8);
            assert!(Vectors::decode(&bad, 3).is_err(), "bit {i} flip accepted");
        }
        // A huge count in the header is an error, not an allocation.
        let mut huge = bytes.clone();
        huge[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(Vectors::decode(&huge, 3).is_err());
    }
}
