//! What a checked filter makes of a block of rows: the bitmap of the rows that pass, the mask
//! of those it hides (added to the block's deletion mask, so every scan skips them as it skips
//! deletions), and the ranges a scan visits (docs/filtering.md, "How a filter runs").

use std::ops::Range;

use super::check::Expr;
use super::eval::{self, MissingColumn, eval};
use super::schema::Schema;
use crate::format::attribute_columns::{Attributes, Column, ColumnData};
use crate::format::attribute_index::ColumnIndex;
use crate::search::error::{SearchError, invalid};
use crate::storage::Block;

/// A block is scanned as runs of its passing rows' words (a prefilter) when fewer than this
/// fraction of its rows pass; otherwise whole, masked. A 64-row word scanned for one passing
/// row costs 64 rows of kernel time at worst, so below 1/8 the runs cost less than the block.
pub(crate) const SPARSE_FRACTION: f64 = 0.125;

/// A [`RowFilter`](super::row_filter::RowFilter) checked against a schema.
#[derive(Debug)]
pub(crate) struct CompiledFilter<'f> {
    expr: Option<Expr>,
    ids: Option<&'f [u64]>,
    /// The schema the expression was checked against: its column `i` is what `eval` reads.
    schema: Schema,
}

/// What a filter makes of one block: its pass bitmap and hidden-row mask (the complement, what
/// the block's deletion mask adds), and how many live rows pass.
#[derive(Debug)]
pub(crate) struct BlockFilter {
    /// Bit set = the row passes (deleted rows included).
    pub pass: Vec<u64>,
    /// Bit set = the row is hidden from this search (the complement of `pass`).
    pub hidden: Vec<u64>,
    /// Rows that pass and are not deleted.
    pub live_passing: u64,
}

impl<'f> CompiledFilter<'f> {
    /// The filter of the typed expression `expr` (`None`: every row) and the ascending id list
    /// `ids` (`None`: every id), a row passing both.
    pub(super) fn new(expr: Option<Expr>, ids: Option<&'f [u64]>, schema: &Schema) -> Self {
        CompiledFilter {
            expr,
            ids,
            schema: schema.clone(),
        }
    }

    fn pass_words(&self, at: &eval::Rows<'_, '_>) -> Result<Vec<u64>, SearchError> {
        let ids = at.ids;
        let mut w = match &self.expr {
            Some(e) => eval(e, at).map_err(|MissingColumn(c)| {
                invalid(
                    "filter",
                    format!(
                        "schema column {c} is missing from a block of {} rows",
                        ids.len()
                    ),
                )
            })?,
            None => eval::all_words(ids.len()),
        };
        if let Some(sel) = self.ids {
            for (a, b) in w.iter_mut().zip(eval::ids_in(ids, sel)) {
                *a &= b;
            }
        }
        Ok(w)
    }

    /// The filter over `block` (its ids checked first).
    pub(crate) fn block(&self, block: &Block<'_>) -> Result<BlockFilter, SearchError> {
        let ids = block.ids()?;
        let pass = self.pass_in(block, 0..ids.len())?;
        let all = eval::all_words(ids.len());
        let hidden: Vec<u64> = pass.iter().zip(&all).map(|(p, a)| !p & a).collect();
        let deleted = block.deleted_words();
        let live_passing = pass
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let d = deleted
                    .as_deref()
                    .and_then(|d| d.get(i))
                    .copied()
                    .unwrap_or(0);
                u64::from((p & !d).count_ones())
            })
            .sum();
        Ok(BlockFilter {
            pass,
            hidden,
            live_passing,
        })
    }

    /// The pass bitmap of the filter over rows `range` of `block` alone (bit `j` = row
    /// `range.start + j`): each test reads only those rows of its column, so a search that
    /// reads a few lists of a segment evaluates the filter over those lists' rows, not the
    /// segment (docs/filtering.md, "IVF").
    pub(crate) fn pass_in(
        &self,
        block: &Block<'_>,
        range: Range<usize>,
    ) -> Result<Vec<u64>, SearchError> {
        let ids = block.ids_in(range.clone())?;
        let rows = ids.len();
        let whole = block.rows();
        // The block's stored columns, read (and checked, on first touch) only when the
        // expression reads a column, found by name: a block written before a column was added
        // lacks it, and its rows hold the column's default, made only if the expression reads
        // it. A column stored with another type or length is an error, never read.
        let stored = std::cell::OnceCell::new();
        let fault: std::cell::RefCell<Option<SearchError>> = Default::default();
        let unread = std::cell::Cell::new(false);
        let defaults: Vec<std::cell::OnceCell<Column>> =
            (0..self.schema.len()).map(|_| Default::default()).collect();
        let column = |i: usize| -> Option<ColumnData<'_>> {
            let (name, t) = self.schema.columns().get(i)?;
            let attrs = match stored.get_or_init(|| block.attributes()) {
                Ok(a) => *a,
                Err(_) => {
                    // Reported below: the segment remembers the failure and says it again.
                    unread.set(true);
                    return None;
                }
            };
            match attrs.and_then(|a| a.column_named(name)) {
                Some(v) if v.column_type() == *t && v.rows() == whole => v.slice(range.clone()),
                Some(v) => {
                    *fault.borrow_mut() = Some(invalid(
                        "filter",
                        format!(
                            "a block stores column {name} as {} of {} rows, the index as {} of \
                             {whole}",
                            v.column_type().name(),
                            v.rows(),
                            t.name()
                        ),
                    ));
                    None
                }
                None => {
                    let d = self.schema.default_value(i)?;
                    Some(defaults[i].get_or_init(|| Column::filled(d, rows)).view())
                }
            }
        };
        // The block's postings and zone maps of a stored column (never of a default).
        let built = std::cell::OnceCell::new();
        let index = |i: usize| -> Option<&ColumnIndex> {
            let (name, _) = self.schema.columns().get(i)?;
            let attrs = (*stored.get()?.as_ref().ok()?)?;
            let (j, _) = attrs.schema().find(name)?;
            let ix = (*built
                .get_or_init(|| block.attribute_index())
                .as_ref()
                .ok()?)?;
            ix.column(j)
        };
        let pass = self.pass_words(&eval::Rows {
            ids,
            start: range.start,
            column: &column,
            index: &index,
        });
        if unread.get() {
            block.attributes()?;
        }
        if built.get().is_some_and(|r| r.is_err()) {
            // A damaged stored index: the segment remembers the failure and says it again.
            block.attribute_index()?;
        }
        if let Some(e) = fault.into_inner() {
            return Err(e);
        }
        pass
    }
}

/// Which of `attributes`' rows (ids `ids`, one per row) pass the filter `compile` makes of
/// their schema: the evaluation a search runs per block, over rows held in memory. The row
/// counts are checked before the filter is.
pub(super) fn select_rows<'f>(
    ids: &[u64],
    attributes: &Attributes,
    compile: impl FnOnce(&Schema) -> Result<CompiledFilter<'f>, SearchError>,
) -> Result<Vec<bool>, SearchError> {
    if ids.len() != attributes.rows() {
        return Err(invalid(
            "ids",
            format!(
                "{} ids for {} rows of attributes",
                ids.len(),
                attributes.rows()
            ),
        ));
    }
    let c = compile(attributes.schema())?;
    let words = c.pass_words(&eval::Rows {
        ids,
        start: 0,
        column: &|i| attributes.column(i),
        index: &|_| None,
    })?;
    Ok((0..ids.len())
        .map(|i| (words[i / 64] >> (i % 64)) & 1 == 1)
        .collect())
}

/// The parts of `ranges` (ascending, disjoint) a scan under `pass` visits: nothing when no row
/// passes; the runs of 64-row words holding a passing row when under [`SPARSE_FRACTION`] of the
/// block's rows pass; else `ranges` unchanged (the mask does the rest).
pub(crate) fn filter_ranges(
    ranges: &[Range<usize>],
    pass: &[u64],
    rows: usize,
) -> Vec<Range<usize>> {
    let passing: u64 = pass.iter().map(|w| u64::from(w.count_ones())).sum();
    if passing == 0 {
        return Vec::new();
    }
    if passing as f64 >= SPARSE_FRACTION * rows as f64 {
        return ranges.to_vec();
    }
    let mut runs: Vec<Range<usize>> = Vec::new();
    for (w, &bits) in pass.iter().enumerate() {
        if bits == 0 {
            continue;
        }
        let r = w * 64..((w + 1) * 64).min(rows);
        match runs.last_mut() {
            Some(last) if last.end == r.start => last.end = r.end,
            _ => runs.push(r),
        }
    }
    // Intersect the two ascending lists of disjoint ranges.
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < ranges.len() && j < runs.len() {
        let (a, b) = (&ranges[i], &runs[j]);
        let (s, e) = (a.start.max(b.start), a.end.min(b.end));
        if s < e {
            out.push(s..e);
        }
        if a.end <= b.end {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // a list of one range is what is meant
    fn ranges_follow_the_density() {
        let rows: usize = 1000;
        let mut pass = vec![0u64; rows.div_ceil(64)];
        assert!(filter_ranges(&[0..rows], &pass, rows).is_empty());
        pass[2] = 1; // row 128
        pass[3] = 1 << 5; // row 197
        pass[10] = 1;
        assert_eq!(
            filter_ranges(&[0..rows], &pass, rows),
            vec![128..256, 640..704]
        );
        assert_eq!(
            filter_ranges(&[0..150, 600..650], &pass, rows),
            vec![128..150, 640..650]
        );
        let dense = eval::all_words(rows);
        assert_eq!(filter_ranges(&[3..9], &dense, rows), vec![3..9]);
    }
}
