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

use crate::format::fastscan_layout::{BLOCK_ROWS, block_bytes};
use crate::scan::{Direction, FastScanRows, ScanOptions, fastscan_topk_batch};

use super::error::{SearchError, invalid};
use super::list_scope::range_deleted;

/// The column a fast-scan scope reads: the packed codes of a block, its `M`, its ids and its
/// deletion words (bit `i` = row `i` deleted, `None` when nothing is).
pub(crate) struct PackedBlock<'a> {
    pub packed: &'a [u8],
    pub m: usize,
    pub ids: &'a [u64],
    pub deleted: Option<&'a [u64]>,
}

/// The `k` best rows of `rows` for each query's tables (`luts`: nq × M × 16, as for
/// [`crate::scan::lut4_topk_batch`]), best first, ties by smaller id.
pub(crate) fn fastscan_scope(
    block: &PackedBlock<'_>,
    rows: Range<usize>,
    luts: &[f32],
    direction: Direction,
    k: usize,
    opts: ScanOptions,
) -> Result<Vec<Vec<(f32, u64)>>, SearchError> {
    let bb = block_bytes(block.m);
    let start = rows.start / BLOCK_ROWS * BLOCK_ROWS;
    let outside = || {
        invalid(
            "index",
            format!(
                "rows {rows:?} lie outside a fast-scan column of {} rows",
                block.ids.len()
            ),
        )
    };
    if rows.end > block.ids.len() || rows.start > rows.end {
        return Err(outside());
    }
    let ids = block.ids.get(start..rows.end).ok_or_else(outside)?;
    let packed = block
        .packed
        .get(start / BLOCK_ROWS * bb..rows.end.div_ceil(BLOCK_ROWS) * bb)
        .ok_or_else(outside)?;
    let lead = rows.start - start;
    let deleted: Option<Cow<'_, [u64]>> = match (block.deleted, lead) {
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
    let fs = FastScanRows::new(packed, block.m, ids, deleted.as_deref())?;
    Ok(fastscan_topk_batch(&fs, luts, direction, k, opts)?)
}
