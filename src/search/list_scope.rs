//! Which rows of a block a list-restricted scan visits (inverted class lists, FORMAT.md §3.3).
//!
//! Rows carry an inverted-list id (a class id: the row's label, or its nearest class mean at
//! insert). Blocks the engine writes keep their rows grouped by list with a list index, so the
//! rows of one list are one contiguous range found by binary search; a block without a list
//! index (written by another tool) is scanned column-wise for the wanted ids.
//!
//! **Rows with no list** (added without list ids, or whole blocks without a lists column) are
//! visited by *every* list-restricted scan: they belong to no list that could be probed, so
//! leaving them out would hide them from IVF search altogether (silently lower recall). They
//! act as one always-probed overflow list; an index whose rows all carry list ids has none.
//! An index where *no* live row has a list id has no lists at all, so a list-restricted search
//! there would scan every row: it is refused ([`super::SearchError::NoLists`]), and
//! [`list_coverage`] tells how many list-less rows a restricted search scans.
//!
//! The kernels take any contiguous run of rows ([`crate::scan::CodeRows`]) with a deletion
//! bitmap whose bit 0 is the run's first row; [`range_deleted`] re-aligns a block's bitmap to
//! a run that may start anywhere (not only at a multiple of 64).

use std::borrow::Cow;
use std::ops::Range;

use serde::Serialize;

use crate::format::append_log::NO_LIST;
use crate::storage::{Block, Snapshot};

/// How the live rows of a snapshot split between inverted lists and no list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ListCoverage {
    /// Live rows with a list id.
    pub listed_rows: u64,
    /// Live rows without one: every list-restricted search scans them.
    pub unlisted_rows: u64,
}

/// Counts the live rows of `snapshot` with and without a list id: O(blocks) lookups in the
/// list indexes and popcounts of the deletion bitmaps (a block without a list index is scanned).
pub fn list_coverage(snapshot: &Snapshot) -> ListCoverage {
    let mut out = ListCoverage::default();
    for b in snapshot.blocks() {
        let words = b.deleted_words();
        let live_in = |r: Range<usize>| -> u64 {
            let len = r.len();
            let deleted: u64 = words.as_deref().map_or(0, |w| {
                let sub = range_deleted(w, r);
                sub.iter()
                    .enumerate()
                    .map(|(k, &x)| {
                        // Bits past the range's end belong to other rows.
                        let bits = (len - 64 * k).min(64);
                        let mask = if bits == 64 {
                            u64::MAX
                        } else {
                            (1u64 << bits) - 1
                        };
                        (x & mask).count_ones() as u64
                    })
                    .sum()
            });
            len as u64 - deleted
        };
        let total = live_in(0..b.rows());
        let unlisted = match (b.lists, b.list_index()) {
            (None, _) => total,
            (Some(_), Some(_)) => live_in(b.list_range(NO_LIST).unwrap_or(0..0)),
            (Some(col), None) => col
                .iter()
                .enumerate()
                .filter(|&(i, &l)| l == NO_LIST && !b.is_deleted(i))
                .count() as u64,
        };
        out.unlisted_rows += unlisted;
        out.listed_rows += total - unlisted;
    }
    out
}

/// The rows of `block` a scan visits: every row when `lists` is `None`, else the rows whose
/// list id is in `lists` (sorted, deduplicated, without [`NO_LIST`]) plus the rows with no
/// list — ascending, disjoint, non-empty, adjacent runs merged.
pub(crate) fn block_ranges(block: &Block<'_>, lists: Option<&[u32]>) -> Vec<Range<usize>> {
    let rows = block.rows();
    if rows == 0 {
        return Vec::new();
    }
    let (Some(wanted), Some(col)) = (lists, block.lists) else {
        // No restriction, or a block whose rows have no list ids at all.
        return std::iter::once(0..rows).collect();
    };
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut push = |r: Range<usize>| {
        if r.is_empty() {
            return;
        }
        match out.last_mut() {
            Some(last) if last.end == r.start => last.end = r.end,
            _ => out.push(r),
        }
    };
    if block.list_index().is_some() {
        // Grouped: one lookup per list, in increasing list order (so ranges ascend); the
        // no-list rows sort last (NO_LIST = u32::MAX).
        for &l in wanted.iter().chain(std::iter::once(&NO_LIST)) {
            if let Some(r) = block.list_range(l) {
                push(r);
            }
        }
    } else {
        for (i, l) in col.iter().enumerate() {
            if *l == NO_LIST || wanted.binary_search(l).is_ok() {
                push(i..i + 1);
            }
        }
    }
    out
}

/// The deletion words of rows `range` of a block, given the block's words aligned at its row 0
/// (bit `i % 64` of word `i / 64` = row `i` deleted): bit `j` of the result is row
/// `range.start + j`, `range.len().div_ceil(64)` words (the length [`crate::scan::CodeRows`]
/// checks). Borrowed when the range starts on a word boundary, shifted into a copy otherwise.
/// Words missing from `words` count as no deletions.
pub(crate) fn range_deleted(words: &[u64], range: Range<usize>) -> Cow<'_, [u64]> {
    let n = range.len().div_ceil(64);
    let first = range.start / 64;
    let shift = range.start % 64;
    if shift == 0
        && let Some(s) = words.get(first..first + n)
    {
        return Cow::Borrowed(s);
    }
    let word = |i: usize| words.get(i).copied().unwrap_or(0);
    let out = (0..n)
        .map(|j| {
            let lo = word(first + j);
            if shift == 0 {
                lo
            } else {
                (lo >> shift) | (word(first + j + 1) << (64 - shift))
            }
        })
        .collect();
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bit(words: &[u64], i: usize) -> bool {
        words.get(i / 64).is_some_and(|w| (w >> (i % 64)) & 1 == 1)
    }

    #[test]
    fn range_deleted_realigns_any_start() {
        // 300 rows, a pseudo-random deletion pattern.
        let rows: usize = 300;
        let mut words = vec![0u64; rows.div_ceil(64)];
        for i in (0..rows).filter(|i| (i * 37 + 11) % 7 < 2) {
            words[i / 64] |= 1 << (i % 64);
        }
        for start in [0, 1, 5, 63, 64, 65, 100, 127, 128, 200, 299] {
            for end in [start, start + 1, start + 63, start + 64, start + 65, rows] {
                let end = end.min(rows);
                if end < start {
                    continue;
                }
                let sub = range_deleted(&words, start..end);
                assert_eq!(sub.len(), (end - start).div_ceil(64), "{start}..{end}");
                for j in 0..end - start {
                    assert_eq!(
                        bit(&sub, j),
                        bit(&words, start + j),
                        "{start}..{end} row {j}"
                    );
                }
            }
        }
        assert!(matches!(range_deleted(&words, 64..200), Cow::Borrowed(_)));
        assert!(matches!(range_deleted(&words, 65..200), Cow::Owned(_)));
    }
}
