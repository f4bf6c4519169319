//! LUT-8 scans of inverted lists whose tables are assembled per list from terms checked once
//! (IVFADC, Jégou et al., TPAMI 2011, §IV; FAISS's `IndexIVFPQ` "precomputed tables").
//!
//! The table of list `l` for query `x` is `T = B_l + A_x` with `‖x − c_l‖²` added to table 0,
//! where `B_l` depends on the list only and `A_x` on the query only. Checking `T` entry by
//! entry for every probed (query, list) pair, as [`super::entry::Tables::new`] does for a
//! table handed in from outside, costs about as much as scanning a list of a few hundred rows.
//! Here the terms are checked once ([`LutTerms::new`]: every entry finite, and per group of
//! tables the sum of their largest |entry|), and assembling a list's table checks one number:
//! if `bound(B_l) + bound(A_x) + |d| ≤ f32::MAX / 4`, every entry of `T` is finite and the sum
//! of its largest |entries| stays under `f32::MAX / 2` (each f32 addition rounds by at most a
//! factor 1 + 2⁻²⁴), the invariant the LUT-8 kernels need so no partial sum overflows.
//!
//! A table entry is `fl(B + A)` (`fl(fl(B + A) + d)` in table 0) and a row's score is summed in
//! ascending table order by the scalar kernel ([`super::scalar::scan8`]), so scores are the
//! same bits as those of the generic entry ([`super::entry::lut8_topk_batch`]) given the same
//! table. One collector ([`ListTopK`]) runs over all of a query's lists, so its threshold
//! carries from list to list.

use super::scalar;
use crate::scan::error::{Result, ScanError};
use crate::scan::rows::{Sink, bit_set};
use crate::scan::topk::{TopK, key_to_f32};

/// Groups of `m` LUT-8 tables (256 entries each), checked once: every entry finite; per group,
/// the sum over its tables of the largest |entry|.
#[derive(Debug, Clone, PartialEq)]
pub struct LutTerms {
    /// Groups × m × 256 values.
    t: Vec<f32>,
    m: usize,
    bounds: Vec<f64>,
}

/// One group of [`LutTerms`]: `m` checked tables and their bound.
#[derive(Debug, Clone, Copy)]
pub struct Terms<'a> {
    t: &'a [[f32; 256]],
    bound: f64,
}

impl LutTerms {
    /// Checks `values` (groups of `m` tables of 256 entries, back to back); `what` names them
    /// in errors.
    pub fn new(values: Vec<f32>, m: usize, what: &'static str) -> Result<LutTerms> {
        if m == 0 {
            return Err(ScanError::Invalid {
                argument: "m",
                detail: "at least one table is needed".into(),
            });
        }
        let per = m * 256;
        if !values.len().is_multiple_of(per) {
            return Err(ScanError::NotMultiple {
                argument: what,
                found: values.len(),
                unit: per,
                what: "m tables of 256 entries per group",
            });
        }
        let (tables, _) = values.as_chunks::<256>();
        let largest: Vec<u32> = tables.iter().map(max_abs_bits).collect();
        if largest.iter().any(|&b| b >= INFINITY_BITS)
            && let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite())
        {
            return Err(ScanError::NonFinite {
                argument: what,
                index,
                value,
            });
        }
        let bounds: Vec<f64> = largest
            .chunks_exact(m)
            .map(|g| g.iter().map(|&b| f64::from(f32::from_bits(b))).sum())
            .collect();
        Ok(LutTerms {
            t: values,
            m,
            bounds,
        })
    }

    /// Group `g` (`None` past the last).
    pub fn group(&self, g: usize) -> Option<Terms<'_>> {
        let (tables, _) = self.t.as_chunks::<256>();
        Some(Terms {
            t: tables.get(g * self.m..(g + 1) * self.m)?,
            bound: *self.bounds.get(g)?,
        })
    }
}

/// Bits of `+∞`: an |entry| whose bits are at least this is infinite or NaN.
const INFINITY_BITS: u32 = 0x7f80_0000;

/// Bits of the largest |entry| of a table, in one pass that also finds non-finite entries:
/// with the sign bit cleared, the bits of non-negative floats order as their values, and
/// infinities and NaNs come above every finite value ([`INFINITY_BITS`]). Eight independent
/// integer maxima (a single running maximum is a chain as long as the table); this replaced a
/// search for a non-finite entry plus a float maximum, two passes per table.
fn max_abs_bits(t: &[f32; 256]) -> u32 {
    let (c, _) = t.as_chunks::<8>();
    let m = c.iter().fold([0u32; 8], |mut acc, x| {
        for (a, v) in acc.iter_mut().zip(x) {
            *a = (*a).max(v.to_bits() & 0x7fff_ffff);
        }
        acc
    });
    m.iter().fold(0, |a, &b| a.max(b))
}

/// A reusable LUT-8 table of one (query, list) pair.
#[derive(Debug, Clone)]
pub struct ListTable {
    t: Vec<[f32; 256]>,
}

impl ListTable {
    /// An empty table (filled by [`ListTable::assemble`]).
    pub fn new() -> ListTable {
        ListTable { t: Vec::new() }
    }

    /// `list + query`, entry by entry, with `dist` (the query's squared distance to the
    /// list's centroid) added to every entry of table 0 afterwards. `dist` must be finite and
    /// the terms' bounds with `|dist|` at most `f32::MAX / 4` (see the module doc).
    pub fn assemble(&mut self, list: Terms<'_>, query: Terms<'_>, dist: f32) -> Result<()> {
        if list.t.len() != query.t.len() {
            return Err(ScanError::Length {
                argument: "query terms",
                expected: list.t.len(),
                found: query.t.len(),
            });
        }
        if !dist.is_finite() {
            return Err(ScanError::NonFinite {
                argument: "list distance",
                index: 0,
                value: dist,
            });
        }
        let bound = list.bound + query.bound + f64::from(dist.abs());
        if bound > f64::from(f32::MAX) / 4.0 {
            return Err(ScanError::LutRange { bound });
        }
        self.t.resize(list.t.len(), [0f32; 256]);
        for ((o, b), a) in self.t.iter_mut().zip(list.t).zip(query.t) {
            for ((o, &b), &a) in o.iter_mut().zip(b).zip(a) {
                *o = b + a;
            }
        }
        if let Some(t0) = self.t.first_mut() {
            for o in t0.iter_mut() {
                *o += dist;
            }
        }
        Ok(())
    }

    /// Code bytes per row the table scores.
    pub fn m(&self) -> usize {
        self.t.len()
    }
}

impl Default for ListTable {
    fn default() -> Self {
        ListTable::new()
    }
}

/// The `k` best rows of one query over several lists (smaller score first, ties by smaller id),
/// each kept with a tag naming where it came from (e.g. its block) and its row there.
#[derive(Debug, Clone)]
pub struct ListTopK {
    topk: TopK,
    /// Every `(key, id, tag, row)` the collector kept when it was offered (a superset of the k
    /// best; trimmed to keys within the threshold as it grows).
    kept: Vec<(u32, u64, u32, usize)>,
}

impl ListTopK {
    /// A collector of the `k` best (`k = 0` is an error).
    pub fn new(k: usize) -> Result<ListTopK> {
        Ok(ListTopK {
            topk: TopK::new(k)?,
            kept: Vec::new(),
        })
    }

    /// Scores the rows `codes` (row-major, `table.m()` bytes each; row `r` has id `ids[r]`)
    /// with `table` and keeps the best. Row `r` is skipped when bit `first_row + r` of
    /// `deleted` is set (a block's bitmap, the run starting at its row `first_row`).
    pub fn scan(
        &mut self,
        table: &ListTable,
        codes: &[u8],
        ids: &[u64],
        deleted: Option<&[u64]>,
        first_row: usize,
        tag: u32,
    ) -> Result<()> {
        let m = table.m();
        if m == 0 {
            return Err(ScanError::ZeroCodeWidth);
        }
        if codes.len() != ids.len() * m {
            return Err(ScanError::IdsLength {
                ids_len: ids.len(),
                rows: codes.len() / m,
            });
        }
        if let Some(d) = deleted
            && (first_row + ids.len()).div_ceil(64) > d.len()
        {
            return Err(ScanError::DeletedLength {
                words: d.len(),
                rows: first_row + ids.len(),
                expected: (first_row + ids.len()).div_ceil(64),
            });
        }
        let mut sink = TaggedSink {
            top: self,
            ids,
            deleted,
            first_row,
            tag,
        };
        scalar::scan8(codes, 0, &table.t, &mut sink);
        let limit = 8 * self.topk.k() + 64;
        if self.kept.len() > limit {
            let t = self.topk.threshold();
            self.kept.retain(|e| e.0 <= t);
        }
        Ok(())
    }

    /// The kept rows, best first: `(score, id, tag, row)`, the row counted from the start of
    /// what `first_row` counts from (a block's first row).
    pub fn into_sorted(self) -> Vec<(f32, u64, u32, usize)> {
        let best = self.topk.into_sorted_vec();
        let mut kept = self.kept;
        kept.sort_unstable();
        // Both are sorted by (key, id): each of the k best takes the next kept entry with
        // its key and id (an id kept twice from two places gets both tags).
        let mut i = 0;
        best.into_iter()
            .filter_map(|(key, id)| {
                while kept.get(i).is_some_and(|e| (e.0, e.1) < (key, id)) {
                    i += 1;
                }
                let e = kept.get(i).filter(|e| (e.0, e.1) == (key, id))?;
                i += 1;
                Some((key_to_f32(key) + 0.0, id, e.2, e.3))
            })
            .collect()
    }
}

/// Offers rows of one run to a [`ListTopK`].
struct TaggedSink<'a, 'b> {
    top: &'a mut ListTopK,
    ids: &'b [u64],
    deleted: Option<&'b [u64]>,
    first_row: usize,
    tag: u32,
}

impl Sink for TaggedSink<'_, '_> {
    #[inline]
    fn bound(&self) -> u32 {
        self.top.topk.threshold()
    }

    #[inline]
    fn offer(&mut self, key: u32, row: usize) -> u32 {
        if !bit_set(self.deleted, self.first_row + row)
            && let Some(&id) = self.ids.get(row)
            && self.top.topk.push(key, id)
        {
            self.top
                .kept
                .push((key, id, self.tag, self.first_row + row));
        }
        self.top.topk.threshold()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::lut::entry::lut8_topk_batch;
    use crate::scan::rows::CodeRows;
    use crate::scan::schedule::ScanOptions;
    use crate::scan::topk::Direction;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    /// Assembled tables scanned list by list give the same scores and ids (bits) as the
    /// generic entry given the same tables, merged over lists, deleted rows skipped.
    #[test]
    fn equals_the_generic_entry_over_lists() {
        let m = 16;
        let mut s = 7u64;
        let mut vals = |n: usize| -> Vec<f32> {
            (0..n)
                .map(|_| (lcg(&mut s) % 10_000) as f32 * 0.001 - 3.0)
                .collect()
        };
        let lists = LutTerms::new(vals(3 * m * 256), m, "list terms").unwrap();
        let query = LutTerms::new(vals(m * 256), m, "query terms").unwrap();
        let dists = [0.5f32, 1.25, 7.0];
        // Three runs of rows (one per list), ids descending so ties would show.
        let rows = [37usize, 64, 101];
        let mut s2 = 11u64;
        let codes: Vec<Vec<u8>> = rows
            .iter()
            .map(|&n| (0..n * m).map(|_| lcg(&mut s2) as u8).collect())
            .collect();
        let ids: Vec<Vec<u64>> = rows
            .iter()
            .enumerate()
            .map(|(l, &n)| (0..n as u64).map(|r| 1000 * (l as u64 + 1) - r).collect())
            .collect();
        let deleted = [0b1010u64, 0, 0];
        for k in [1, 10, 150] {
            let mut top = ListTopK::new(k).unwrap();
            let mut want: Vec<(f32, u64, u32)> = Vec::new();
            let mut table = ListTable::new();
            for l in 0..3 {
                let (lt, qt) = (lists.group(l).unwrap(), query.group(0).unwrap());
                table.assemble(lt, qt, dists[l]).unwrap();
                let del = (l == 1).then_some(&deleted[..2]);
                top.scan(&table, &codes[l], &ids[l], del, 0, l as u32)
                    .unwrap();
                // The generic entry on the table built the old way.
                let mut flat = Vec::new();
                for (j, (b, a)) in lt.t.iter().zip(qt.t).enumerate() {
                    for v in 0..256 {
                        let mut o = b[v] + a[v];
                        if j == 0 {
                            o += dists[l];
                        }
                        flat.push(o);
                    }
                }
                let rows = CodeRows::new(
                    &codes[l],
                    m,
                    &ids[l],
                    del.map(|d| &d[..rows[l].div_ceil(64)]),
                )
                .unwrap();
                let got = lut8_topk_batch(
                    &rows,
                    &flat,
                    Direction::SmallerIsBetter,
                    k,
                    ScanOptions::default(),
                )
                .unwrap();
                want.extend(got[0].iter().map(|&(sc, id)| (sc, id, l as u32)));
            }
            want.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            want.truncate(k);
            let got = top.into_sorted();
            assert_eq!(got.len(), want.len(), "k={k}");
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(
                    (g.0.to_bits(), g.1, g.2),
                    (w.0.to_bits(), w.1, w.2),
                    "k={k}"
                );
                // The row reported is the row holding the id.
                assert_eq!(ids[g.2 as usize][g.3], g.1, "k={k}");
            }
            // Deleted rows 1 and 3 of list 1 never appear.
            assert!(got.iter().all(|g| g.1 != 1999 && g.1 != 1997));
        }
    }

    #[test]
    fn bad_terms_are_refused() {
        let mut v = vec![0f32; 2 * 256];
        v[300] = f32::INFINITY;
        assert!(matches!(
            LutTerms::new(v.clone(), 2, "query terms"),
            Err(ScanError::NonFinite {
                argument: "query terms",
                index: 300,
                ..
            })
        ));
        assert!(matches!(
            LutTerms::new(v[..300].to_vec(), 2, "query terms"),
            Err(ScanError::NotMultiple { .. })
        ));
        let big = LutTerms::new(vec![f32::MAX / 4.0; 2 * 256], 2, "list terms").unwrap();
        let small = LutTerms::new(vec![1.0; 2 * 256], 2, "query terms").unwrap();
        let mut t = ListTable::new();
        assert!(matches!(
            t.assemble(big.group(0).unwrap(), small.group(0).unwrap(), 0.0),
            Err(ScanError::LutRange { .. })
        ));
        assert!(matches!(
            t.assemble(small.group(0).unwrap(), small.group(0).unwrap(), f32::NAN),
            Err(ScanError::NonFinite { .. })
        ));
        t.assemble(small.group(0).unwrap(), small.group(0).unwrap(), 1.0)
            .unwrap();
        let mut top = ListTopK::new(3).unwrap();
        assert!(top.scan(&t, &[0u8; 5], &[1, 2], None, 0, 0).is_err());
        assert!(top.scan(&t, &[0u8; 4], &[1, 2], Some(&[]), 0, 0).is_err());
        top.scan(&t, &[0u8; 4], &[1, 2], None, 0, 0).unwrap();
        assert_eq!(top.into_sorted(), vec![(5.0, 1, 0, 0), (5.0, 2, 0, 1)]);
    }
}
