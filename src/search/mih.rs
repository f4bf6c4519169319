//! Exact Hamming k-NN through a segment's multi-index hashing tables (Norouzi, Punjani,
//! Fleet, *Fast search in Hamming space with multi-index hashing*, CVPR 2012, §4; the tables:
//! `format::mih_tables`, FORMAT.md §3.6).
//!
//! The code's bits are split into `m` substrings. Pigeonhole: if two codes differ in at most
//! `m·r + a` bits (`0 ≤ a < m`), then one of the first `a + 1` substrings differs in at most
//! `r` bits or some substring in at most `r − 1`. So the search probes, for `r = 0, 1, 2, …`
//! and each table `j` in turn, the buckets whose value differs from the query's substring `j`
//! in exactly `r` bits; after table `j` of round `r` every row within `m·r + j` of the query
//! has been seen, and the search stops once it holds `k` rows no farther than that. A row met
//! again in a later bucket is recognised from its own code (it is new only in the first
//! (round, table) whose substring distance is its smallest), so no visited set is needed.
//! The k best are kept by (distance, id), so the result — ties included — is the linear scan's.

use std::collections::BinaryHeap;

use crate::format::mih_tables::{MihTables, substring};
use crate::scan::dense::prefetch;

use super::error::{SearchError, invalid};

/// Whether a Hamming search uses the multi-index hashing tables of the segments that have
/// them (format 1.6). The results are the same either way; only the time differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MihChoice {
    /// Per segment and query: the tables when the segment has them and at least
    /// [`AUTO_MIN_ROWS`] rows and the search is not restricted to lists; a query whose
    /// probing passes 1/[`AUTO_WORK_DIVISOR`] of the segment's rows switches to the linear
    /// scan of that segment.
    #[default]
    Auto,
    /// The tables wherever a segment has them (never switching to the linear scan); segments
    /// without tables, list-restricted searches and the active log are scanned linearly.
    On,
    /// The linear scan everywhere.
    Off,
}

impl MihChoice {
    /// Parses `auto`, `on` or `off`.
    pub fn parse(s: &str) -> Option<MihChoice> {
        match s {
            "auto" => Some(MihChoice::Auto),
            "on" => Some(MihChoice::On),
            "off" => Some(MihChoice::Off),
            _ => None,
        }
    }

    /// The name [`MihChoice::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            MihChoice::Auto => "auto",
            MihChoice::On => "on",
            MihChoice::Off => "off",
        }
    }
}

/// Segments smaller than this are scanned linearly under [`MihChoice::Auto`]: a scan of 2^16
/// 64-bit codes takes some 16 µs, which probing rarely beats by much.
pub const AUTO_MIN_ROWS: usize = 1 << 16;

/// Under [`MihChoice::Auto`] a query gives up probing a segment (and scans it linearly) once it
/// has probed and verified more than `rows / AUTO_WORK_DIVISOR` buckets and rows: a probe or a
/// verification is a random access, measured at some 250× the cost of scanning one row with
/// the SIMD kernel (BENCHMARKS.md, "Multi-index hashing"), so a query that gives up has spent
/// at most about a quarter of a scan.
pub const AUTO_WORK_DIVISOR: usize = 1024;

/// Rows of a bucket ahead of the one being verified whose codes are prefetched: each
/// verification reads a code at a random place of the column, a cache (and, past a few GB, TLB)
/// miss, so issuing the next misses early overlaps them.
const PREFETCH_AHEAD: usize = 16;

/// The `k` nearest live rows of one segment to the query code `q` as (distance, id), nearest
/// first, ties by smaller id; `None` when `budget` (buckets probed + rows verified) ran out
/// first. `codes`/`ids` are the segment's checked columns, `deleted` its deletion words.
pub(crate) fn mih_topk(
    t: &MihTables<'_>,
    codes: &[u8],
    ids: &[u64],
    deleted: Option<&[u64]>,
    q: &[u8],
    k: usize,
    budget: Option<usize>,
) -> Result<Option<Vec<(u32, u64)>>, SearchError> {
    let shape = t.shape();
    let (m, cb) = (shape.m as usize, q.len());
    let subs: Vec<(u32, u32)> = (0..shape.m).map(|j| shape.sub(j)).collect();
    let qs: Vec<u32> = subs.iter().map(|&(s, l)| substring(q, s, l)).collect();
    let max_len = subs.iter().map(|s| s.1).max().unwrap_or(0);
    let mut heap: BinaryHeap<(u32, u64)> = BinaryHeap::with_capacity(k + 1);
    let mut work = 0usize;
    let mut outside = None;
    for r in 0..=max_len {
        for j in 0..m {
            let len = subs[j].1;
            let mut probe = |v: u32| {
                let bucket = t.bucket(j as u32, v);
                work += 1 + bucket.len();
                let code_of = |row: u32| codes.get(row as usize * cb..(row as usize + 1) * cb);
                for &row in bucket.iter().take(PREFETCH_AHEAD) {
                    if let Some(c) = code_of(row) {
                        prefetch(c);
                    }
                }
                for (i, &row) in bucket.iter().enumerate() {
                    if let Some(c) = bucket.get(i + PREFETCH_AHEAD).and_then(|&a| code_of(a)) {
                        prefetch(c);
                    }
                    let row = row as usize;
                    let Some(code) = codes.get(row * cb..(row + 1) * cb) else {
                        outside = Some((j, row));
                        return;
                    };
                    let d = hamming(code, q);
                    // Only a row that would enter the k best is looked at further.
                    let top = heap.peek().copied();
                    if heap.len() == k && top.is_some_and(|(td, _)| d > td) {
                        continue;
                    }
                    let id = ids[row];
                    if heap.len() == k && top.is_some_and(|t| (d, id) >= t) {
                        continue;
                    }
                    // New only at its smallest substring distance, first table among equals:
                    // else an earlier (round, table) already met it.
                    let mut first = (u32::MAX, 0);
                    for (i, &(s, l)) in subs.iter().enumerate() {
                        let di = (substring(code, s, l) ^ qs[i]).count_ones();
                        if di < first.0 {
                            first = (di, i);
                        }
                    }
                    let gone = deleted
                        .is_some_and(|w| w.get(row / 64).is_some_and(|w| w >> (row % 64) & 1 == 1));
                    if first != (r, j) || gone {
                        continue;
                    }
                    if heap.len() == k {
                        heap.pop();
                    }
                    heap.push((d, id));
                }
            };
            for_each_at_distance(qs[j], len, r, &mut probe);
            if let Some((j, row)) = outside {
                return Err(invalid(
                    "index",
                    format!("mih table {j} names row {row}, past the segment's codes"),
                ));
            }
            let guaranteed = m as u32 * r + j as u32;
            if heap.len() == k && heap.peek().is_some_and(|&(d, _)| d <= guaranteed) {
                return Ok(Some(heap.into_sorted_vec()));
            }
            if budget.is_some_and(|b| work > b) {
                return Ok(None);
            }
        }
    }
    // Every substring probed at its full length: every row was seen.
    Ok(Some(heap.into_sorted_vec()))
}

/// Bits that differ between two codes of the same length.
#[inline]
fn hamming(a: &[u8], b: &[u8]) -> u32 {
    let (ac, bc) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: u32 = (ac.remainder().iter().zip(bc.remainder()))
        .map(|(x, y)| (x ^ y).count_ones())
        .sum();
    ac.zip(bc).fold(tail, |acc, (x, y)| {
        let x = u64::from_le_bytes(x.try_into().unwrap_or([0; 8]));
        let y = u64::from_le_bytes(y.try_into().unwrap_or([0; 8]));
        acc + (x ^ y).count_ones()
    })
}

/// The `k` nearest live rows of one segment to the query code `q` through its tables, as
/// (distance, id), nearest first, ties by smaller id — exactly what the linear Hamming scan of
/// the same rows returns (`codedb bench mih` times the two). `codes`/`ids` are the segment's
/// columns, `deleted` its deletion words (bit `i % 64` of word `i / 64`: row `i` deleted).
pub fn mih_search(
    t: &MihTables<'_>,
    codes: &[u8],
    ids: &[u64],
    deleted: Option<&[u64]>,
    q: &[u8],
    k: usize,
) -> Result<Vec<(u32, u64)>, SearchError> {
    Ok(mih_topk(t, codes, ids, deleted, q, k, None)?.unwrap_or_default())
}

/// Calls `f(v ^ mask)` for every `len`-bit mask of exactly `r` set bits (Gosper's hack).
fn for_each_at_distance(v: u32, len: u32, r: u32, f: &mut impl FnMut(u32)) {
    if r == 0 {
        return f(v);
    }
    if r > len {
        return;
    }
    let limit: u64 = 1 << len;
    let mut mask: u64 = (1 << r) - 1;
    while mask < limit {
        f(v ^ mask as u32);
        let c = mask & mask.wrapping_neg();
        let n = mask + c;
        mask = (((n ^ mask) >> 2) / c) | n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_at_each_distance_are_all_there_once() {
        for len in [1u32, 5, 8] {
            let mut seen = vec![0u32; 1 << len];
            for r in 0..=len {
                for_each_at_distance(0, len, r, &mut |m| {
                    assert_eq!(m.count_ones(), r);
                    seen[m as usize] += 1;
                });
            }
            assert!(seen.iter().all(|&c| c == 1), "len {len}");
        }
    }
}
