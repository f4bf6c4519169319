//! Hamming-radius hash lookup for short binary codes (Gong et al., TPAMI 2013, §1 and §4.5:
//! codes of at most 32 bits "treated as hash keys", retrieving every item within Hamming
//! radius r = 0, 1, 2 of the query).
//!
//! The table maps each distinct code (its ≤ 4 bytes read as a little-endian `u32`) to the ids
//! of the live rows holding it. A lookup probes the query's code and every code obtained by
//! flipping 1 … r of its bits — 1 + B + B(B−1)/2 probes for r = 2 and a code of B bits
//! (529 for 32 bits) — so its cost depends on the code length and the number of matches, not
//! on the number of rows. Every bit of the code bytes is flipped (including padding bits of a
//! code whose width is not a multiple of 8), so the result is exactly the set of rows whose
//! bytes lie within Hamming distance r, the brute-force answer of
//! [`crate::scan::hamming_within`].

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use ndarray::ArrayView2;

use crate::format::CodeKind;
use crate::storage::{Block, Snapshot};

use super::error::{SearchError, invalid};
use super::filter::{BlockFilter, RowFilter};
use super::mode::SearchMode;
use super::query::{Hit, SearchParams, check};

/// Longest code a table takes, in bytes (32 bits).
pub const MAX_TABLE_CODE_BYTES: usize = 4;
/// Largest radius a lookup probes.
pub const MAX_RADIUS: u32 = 2;

/// A multiplicative hash for `u32` keys (codes are already well mixed bits; SipHash's
/// resistance to chosen keys buys nothing for a table built from the index's own codes).
#[derive(Default)]
struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = (u64::from(v) ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 ^= self.0 >> 29;
    }
}

type Buckets = HashMap<u32, Vec<u64>, BuildHasherDefault<MixHasher>>;

/// Codes → ids of the rows holding them, for radius lookups.
#[derive(Debug, Clone)]
pub struct HammingTable {
    code_bytes: usize,
    rows: usize,
    buckets: Buckets,
}

fn key(code: &[u8]) -> u32 {
    let mut b = [0u8; 4];
    for (d, s) in b.iter_mut().zip(code) {
        *d = *s;
    }
    u32::from_le_bytes(b)
}

impl HammingTable {
    /// An empty table for codes of `code_bytes` bytes (1 … 4).
    pub fn new(code_bytes: usize) -> Result<HammingTable, SearchError> {
        if code_bytes == 0 || code_bytes > MAX_TABLE_CODE_BYTES {
            return Err(invalid(
                "radius",
                format!(
                    "hash lookup needs codes of at most 32 bits; these have {} bits \
                     (rank by Hamming distance instead)",
                    code_bytes * 8
                ),
            ));
        }
        Ok(HammingTable {
            code_bytes,
            rows: 0,
            buckets: Buckets::default(),
        })
    }

    /// A table of `codes` (`code_bytes` per row) under `ids` (one per row; eval passes row
    /// numbers).
    pub fn from_codes(
        codes: &[u8],
        code_bytes: usize,
        ids: &[u64],
    ) -> Result<HammingTable, SearchError> {
        let mut t = HammingTable::new(code_bytes)?;
        t.insert(codes, ids, |_| false)?;
        Ok(t)
    }

    /// A table of every live row of `snapshot` (binary codes of at most 32 bits).
    pub fn from_snapshot(snapshot: &Snapshot) -> Result<HammingTable, SearchError> {
        let blocks: Vec<Block<'_>> = snapshot.blocks().collect();
        HammingTable::from_blocks(snapshot, &blocks)
    }

    /// A table of the rows of `blocks` (of `snapshot`) that are not deleted (or hidden by a
    /// filter, see [`Block::hiding`]).
    pub(crate) fn from_blocks(
        snapshot: &Snapshot,
        blocks: &[Block<'_>],
    ) -> Result<HammingTable, SearchError> {
        let kind = snapshot.model_file().code_kind;
        if kind != CodeKind::Binary {
            return Err(SearchError::ModeNotApplicable {
                mode: "radius lookup",
                kind: kind.name(),
                hint: "hash lookup needs binary codes of at most 32 bits",
            });
        }
        let mut t = HammingTable::new(snapshot.code_bytes())?;
        for block in blocks {
            t.insert(block.codes()?, block.ids()?, |r| block.is_deleted(r))?;
        }
        Ok(t)
    }

    fn insert(
        &mut self,
        codes: &[u8],
        ids: &[u64],
        deleted: impl Fn(usize) -> bool,
    ) -> Result<(), SearchError> {
        let cb = self.code_bytes;
        if codes.len() != ids.len() * cb {
            return Err(invalid(
                "codes",
                format!(
                    "{} bytes for {} ids of {cb}-byte codes",
                    codes.len(),
                    ids.len()
                ),
            ));
        }
        for (r, (code, &id)) in codes.chunks_exact(cb).zip(ids).enumerate() {
            if !deleted(r) {
                self.buckets.entry(key(code)).or_default().push(id);
                self.rows += 1;
            }
        }
        Ok(())
    }

    /// Rows in the table.
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Distinct codes in the table.
    pub fn distinct_codes(&self) -> usize {
        self.buckets.len()
    }

    /// Every row within Hamming distance `radius` (≤ 2) of `query`, as `(distance, id)`
    /// sorted by distance then id.
    pub fn lookup(&self, query: &[u8], radius: u32) -> Result<Vec<(u32, u64)>, SearchError> {
        if query.len() != self.code_bytes {
            return Err(invalid(
                "query",
                format!(
                    "{} code bytes, the table holds {}-byte codes",
                    query.len(),
                    self.code_bytes
                ),
            ));
        }
        if radius > MAX_RADIUS {
            return Err(invalid(
                "radius",
                format!("{radius}: hash lookup probes radius 0, 1 or 2"),
            ));
        }
        let bits = self.code_bytes * 8;
        let q = key(query);
        let mut out = Vec::new();
        let mut probe = |code: u32, d: u32| {
            if let Some(ids) = self.buckets.get(&code) {
                out.extend(ids.iter().map(|&id| (d, id)));
            }
        };
        probe(q, 0);
        if radius >= 1 {
            for i in 0..bits {
                probe(q ^ (1 << i), 1);
            }
        }
        if radius >= 2 {
            for i in 0..bits {
                for j in i + 1..bits {
                    probe(q ^ (1 << i) ^ (1 << j), 2);
                }
            }
        }
        out.sort_unstable();
        Ok(out)
    }
}

/// Every live row within Hamming distance `radius` of each query's code (see
/// [`Snapshot::search_radius`]), only rows `filter` passes when given.
pub(crate) fn radius_snapshot(
    snapshot: &Snapshot,
    queries: ArrayView2<f32>,
    radius: u32,
    filter: Option<&RowFilter>,
) -> Result<Vec<Vec<Hit>>, SearchError> {
    let model = snapshot.model()?;
    check(model, queries, &SearchParams::new(1, SearchMode::Hamming))?;
    if radius > MAX_RADIUS {
        return Err(invalid(
            "radius",
            format!("{radius}: hash lookup probes radius 0, 1 or 2"),
        ));
    }
    let table = match filter {
        None => HammingTable::from_snapshot(snapshot)?,
        Some(f) => {
            let c = f.compile(snapshot.attribute_schema())?;
            let blocks: Vec<Block<'_>> = snapshot.blocks().collect();
            let fs: Vec<BlockFilter> = blocks
                .iter()
                .map(|b| c.block(b))
                .collect::<Result<_, _>>()?;
            let hiding: Vec<Block<'_>> = blocks
                .into_iter()
                .zip(&fs)
                .filter(|(_, f)| f.live_passing > 0)
                .map(|(b, f)| b.hiding(&f.hidden))
                .collect();
            HammingTable::from_blocks(snapshot, &hiding)?
        }
    };
    let codes = model.encode(queries)?;
    let cb = model.code_bytes();
    codes
        .chunks_exact(cb)
        .map(|q| {
            Ok(table
                .lookup(q, radius)?
                .into_iter()
                .map(|(d, id)| Hit {
                    id,
                    score: d as f32,
                })
                .collect())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_exactly_the_ball() {
        // 12-bit codes in 2 bytes; padding bits count like any other.
        let codes: Vec<u8> = (0u16..300)
            .flat_map(|r| (r.wrapping_mul(2654) & 0x0fff).to_le_bytes())
            .collect();
        let ids: Vec<u64> = (0..300).map(|r| 1000 - r).collect();
        let t = HammingTable::from_codes(&codes, 2, &ids).unwrap();
        assert_eq!(t.len(), 300);
        let q = [0x35u8, 0x82];
        for radius in 0..=2 {
            let got = t.lookup(&q, radius).unwrap();
            let mut want: Vec<(u32, u64)> = codes
                .chunks_exact(2)
                .zip(&ids)
                .map(|(c, &id)| ((c[0] ^ q[0]).count_ones() + (c[1] ^ q[1]).count_ones(), id))
                .filter(|&(d, _)| d <= radius)
                .collect();
            want.sort_unstable();
            assert_eq!(got, want, "radius {radius}");
        }
    }

    #[test]
    fn bad_arguments() {
        assert!(HammingTable::new(5).is_err());
        assert!(HammingTable::new(0).is_err());
        let t = HammingTable::from_codes(&[1, 2], 1, &[7, 8]).unwrap();
        assert!(t.lookup(&[1, 2], 1).is_err());
        assert!(
            t.lookup(&[1], 3)
                .unwrap_err()
                .to_string()
                .contains("radius")
        );
        assert!(HammingTable::from_codes(&[1, 2, 3], 1, &[7, 8]).is_err());
    }
}
