//! ADC over a 4-bit PQ segment stored in the fast-scan layout (format 1.2): the rows of a scope
//! are scanned in place in the mapping by [`fastscan_topk_batch`], whose u8-quantised sums only
//! filter and whose candidates are re-scored exactly, so the lists equal the plain LUT-4
//! kernel's over the same rows (André et al., VLDB 2015; see [`crate::scan::fastscan`]).
//!
//! The kernel starts on a 32-row block boundary. A scope `start..end` that does not (a list's
//! run of rows) is widened down to the block start, and the rows it added are marked deleted,
//! so they are never offered.

use std::borrow::Cow;
use std::ops::Range;

use crate::scan::{Direction, FastScanRows, ScanOptions, fastscan_topk_batch};
use crate::storage::Block;

use super::error::{SearchError, invalid};
use super::list_scope::range_deleted;

/// The `k` best rows of `rows` of `block` (a fast-scan segment; `deleted` its deletion words,
/// bit `i` = row `i`, `None` when nothing is deleted) for each query's tables (`luts`:
/// nq × M × 16, as for [`crate::scan::lut4_topk_batch`]), best first, ties by smaller id. The
/// groups of 32 rows that hold `rows` are checked first (see [`Block`]).
pub(crate) fn fastscan_scope(
    block: &Block<'_>,
    deleted: Option<&[u64]>,
    rows: Range<usize>,
    luts: &[f32],
    direction: Direction,
    k: usize,
    opts: ScanOptions,
) -> Result<Vec<Vec<(f32, u64)>>, SearchError> {
    let run = block.fastscan_in(rows.clone())?.ok_or_else(|| {
        invalid(
            "index",
            "a row-major block was given to the fast-scan kernel (internal error)",
        )
    })?;
    let start = run.first_row;
    let ids = block.ids_in(start..rows.end)?;
    let lead = rows.start - start;
    let deleted: Option<Cow<'_, [u64]>> = match (deleted, lead) {
        (None, 0) => None,
        (Some(d), 0) => Some(range_deleted(d, start..rows.end)),
        (d, _) => {
            let mut w = match d {
                Some(d) => range_deleted(d, start..rows.end).into_owned(),
                None => vec![0u64; ids.len().div_ceil(64)],
            };
            for i in 0..lead {
                if let Some(word) = w.get_mut(i / 64) {
                    *word |= 1 << (i % 64);
                }
            }
            Some(Cow::Owned(w))
        }
    };
    let fs = FastScanRows::new(run.packed, run.m, ids, deleted.as_deref())?;
    Ok(fastscan_topk_batch(&fs, luts, direction, k, opts)?)
}
