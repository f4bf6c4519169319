//! The scan view of an index version: a [`Block`] is a contiguous run of rows — a sealed
//! segment or one committed batch of the active log — with its ids, codes, labels, list ids,
//! stored vectors, attributes and deletions, each handed out only after its checksums are
//! checked (FORMAT.md §3.5); [`Row`] is one live row; [`FastScanRun`] a run of a fast-scan
//! code column. A [`Snapshot`](super::snapshot::Snapshot) hands out its blocks
//! ([`Snapshot::blocks`](super::snapshot::Snapshot::blocks)); every scan of the search room
//! works block by block through them.

use std::ops::Range;

use crate::format::fastscan_layout::{BLOCK_ROWS, block_bytes};
use crate::format::{
    Attributes, DeletionBitmap, FormatError, ListEntry, RowColumn, SegmentReader, VectorSlice,
    append_log::{NO_LABEL, NO_LIST},
};

/// One live row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row<'a> {
    /// The row's id.
    pub id: u64,
    /// The row's code.
    pub code: &'a [u8],
    /// The row's class label (`None` when it was added without one).
    pub label: Option<u32>,
    /// The row's inverted-list id (`None` when it was added without one).
    pub list: Option<u32>,
}

/// A contiguous run of rows: a sealed segment, or one batch of the active log. Scans work
/// block by block, skipping rows for which [`Block::is_deleted`] holds.
///
/// **Every accessor that hands out row bytes checks them first.** A large segment is opened
/// without checksumming its columns (O(1) open, `ReadOptions::full_check_below`); the first
/// access to some rows of a column checks the blocks of that column that hold them (FORMAT.md
/// §3.5) and the segment remembers them, so later accesses cost one atomic load per block. A
/// damaged block is [`FormatError::BlockChecksumMismatch`] naming the file, the column and the
/// rows: nothing is ever computed from bytes nobody checked. Batches of the active log were
/// checksummed when they were read.
#[derive(Debug, Clone, Copy)]
pub struct Block<'a> {
    pub(super) ids: &'a [u64],
    /// `code_bytes` per row, row-major (empty for a segment in the fast-scan layout).
    pub(super) codes: &'a [u8],
    /// Labels ([`NO_LABEL`] = none), when the block stores them.
    pub(super) labels: Option<&'a [u32]>,
    /// Inverted-list ids ([`NO_LIST`] = none), when the block stores them.
    pub(super) lists: Option<&'a [u32]>,
    /// Stored vectors (`vector_dim` values per row), when the block stores them.
    pub(super) vectors: Option<VectorSlice<'a>>,
    /// Values per stored vector (0 when the block stores none).
    pub vector_dim: usize,
    /// Where each list's rows start, when the rows are grouped by list.
    pub(super) list_index: Option<&'a [ListEntry]>,
    pub(super) code_bytes: usize,
    pub(super) deletions: Option<&'a DeletionBitmap>,
    /// Row number of the block's first row in the deletion bitmap.
    pub(super) row_offset: u64,
    pub(super) segment: Option<&'a SegmentReader>,
    /// Rows a filtered search hides (bit `i % 64` of word `i / 64` = row `i`, aligned to the
    /// block's first row): to that search they are deleted rows (see [`Block::hiding`]).
    pub(super) hidden: Option<&'a [u64]>,
    /// A log batch's attribute columns (a segment's are read through `segment`).
    pub(super) log_attributes: Option<&'a Attributes>,
}

/// A run of a fast-scan code column: whole 32-row groups starting at row `first_row` (a
/// multiple of 32), with the ids of its rows.
#[derive(Debug, Clone, Copy)]
pub struct FastScanRun<'a> {
    /// The packed codes of the run's groups (FORMAT.md's fast-scan layout).
    pub packed: &'a [u8],
    /// 4-bit sub-codes per row.
    pub m: usize,
    /// The run's first row within the block.
    pub first_row: usize,
}

impl<'a> Block<'a> {
    /// Rows in the block, deleted ones included.
    pub fn rows(&self) -> usize {
        self.ids.len()
    }

    /// Checks rows `rows` of column `col` (see the type's documentation); a no-op for a batch
    /// of the active log.
    pub fn check(
        &self,
        col: RowColumn,
        rows: Range<usize>,
    ) -> std::result::Result<(), FormatError> {
        match self.segment {
            Some(r) => r.check_rows(col, rows),
            None => Ok(()),
        }
    }

    /// [`Block::check`] on up to `threads` threads of the current rayon pool: what a scan
    /// calls before reading a large run of rows, so that the first scan of a segment
    /// checksums it in parallel (the accessors then find the blocks checked).
    pub fn check_par(
        &self,
        col: RowColumn,
        rows: Range<usize>,
        threads: usize,
    ) -> std::result::Result<(), FormatError> {
        match self.segment {
            Some(r) => r.check_rows_par(col, rows, threads),
            None => Ok(()),
        }
    }

    fn outside(&self, rows: &Range<usize>) -> FormatError {
        FormatError::InvalidArgument {
            path: self
                .segment
                .map_or_else(|| "<active log>".into(), |r| r.path().to_path_buf()),
            argument: "rows".into(),
            detail: format!("rows {rows:?} lie outside a block of {} rows", self.rows()),
        }
    }

    /// Rows `rows` of a column of `per_row` values per row, after checking them.
    fn slice<T>(
        &self,
        col: RowColumn,
        values: &'a [T],
        per_row: usize,
        rows: Range<usize>,
    ) -> std::result::Result<&'a [T], FormatError> {
        if rows.start > rows.end || rows.end > self.rows() {
            return Err(self.outside(&rows));
        }
        self.check(col, rows.clone())?;
        values
            .get(rows.start * per_row..rows.end * per_row)
            .ok_or_else(|| self.outside(&rows))
    }

    /// The row ids.
    pub fn ids(&self) -> std::result::Result<&'a [u64], FormatError> {
        self.ids_in(0..self.rows())
    }

    /// The ids of rows `rows`.
    pub fn ids_in(&self, rows: Range<usize>) -> std::result::Result<&'a [u64], FormatError> {
        self.slice(RowColumn::Ids, self.ids, 1, rows)
    }

    /// The codes, `code_bytes` per row, row-major. A segment stored in the fast-scan layout
    /// (4-bit PQ, format 1.2) is checked whole, unpacked on the first call and the copy kept
    /// with the segment; scans read it in place through [`Block::fastscan_in`] instead.
    pub fn codes(&self) -> std::result::Result<&'a [u8], FormatError> {
        self.codes_in(0..self.rows())
    }

    /// The codes of rows `rows`, row-major (for a fast-scan segment: see [`Block::codes`]).
    pub fn codes_in(&self, rows: Range<usize>) -> std::result::Result<&'a [u8], FormatError> {
        match self.segment {
            Some(r) if r.fastscan_codes().is_some() => {
                if rows.start > rows.end || rows.end > self.rows() {
                    return Err(self.outside(&rows));
                }
                self.check(RowColumn::Codes, 0..self.rows())?;
                let cb = self.code_bytes;
                r.codes()
                    .get(rows.start * cb..rows.end * cb)
                    .ok_or_else(|| self.outside(&rows))
            }
            _ => self.slice(RowColumn::Codes, self.codes, self.code_bytes, rows),
        }
    }

    /// The code of row `i`.
    pub fn code(&self, i: usize) -> std::result::Result<&'a [u8], FormatError> {
        self.codes_in(i..i + 1)
    }

    /// The number of sub-quantisers `M` when the block is a segment whose codes are stored in
    /// the fast-scan layout (4-bit PQ, format 1.2); `None` for row-major codes and log batches.
    pub fn fastscan_m(&self) -> Option<usize> {
        self.segment?.fastscan_codes().map(|(_, m)| m)
    }

    /// The fast-scan code column's groups of 32 rows that hold rows `rows`, checked (`None`
    /// when the codes are row-major).
    pub fn fastscan_in(
        &self,
        rows: Range<usize>,
    ) -> std::result::Result<Option<FastScanRun<'a>>, FormatError> {
        let Some((packed, m)) = self.segment.and_then(|r| r.fastscan_codes()) else {
            return Ok(None);
        };
        if rows.start > rows.end || rows.end > self.rows() {
            return Err(self.outside(&rows));
        }
        self.check(RowColumn::Codes, rows.clone())?;
        let (g, bb) = (BLOCK_ROWS, block_bytes(m));
        let first_row = rows.start / g * g;
        let packed = packed
            .get(first_row / g * bb..rows.end.div_ceil(g) * bb)
            .ok_or_else(|| self.outside(&rows))?;
        Ok(Some(FastScanRun {
            packed,
            m,
            first_row,
        }))
    }

    /// The whole fast-scan code column and its `M`, checked (`None` when the codes are
    /// row-major).
    pub fn fastscan_codes(&self) -> std::result::Result<Option<(&'a [u8], usize)>, FormatError> {
        Ok(self.fastscan_in(0..self.rows())?.map(|f| (f.packed, f.m)))
    }

    /// The same block with the rows of `hidden` (bit `i % 64` of word `i / 64` = row `i`)
    /// counted as deleted: how a filtered search sees a block, so that every scan that skips
    /// deleted rows skips the rows the filter rejects (`search::filter`). Words missing from
    /// `hidden` hide nothing.
    pub fn hiding(self, hidden: &'a [u64]) -> Block<'a> {
        Block {
            hidden: Some(hidden),
            ..self
        }
    }

    /// The block's stored attribute columns, one value per row (format 1.7, FORMAT.md §3.7):
    /// `None` when the block stores none (written before the index had columns; every column
    /// then holds its default). They may lack columns added to the index after the block was
    /// written (those hold their defaults too). A segment's columns are checked on first touch
    /// — section checksum, structure, dictionary codes and tag offsets in range — and the
    /// outcome remembered, like a code block: a damaged section is an error naming the file
    /// and the section `attributes`. A log batch's were checked when the log was read.
    pub fn attributes(&self) -> std::result::Result<Option<&'a Attributes>, FormatError> {
        match self.segment {
            Some(r) => r.attributes(),
            None => Ok(self.log_attributes),
        }
    }

    /// The tag postings and zone maps of the block's stored columns
    /// ([`crate::format::attribute_index`]): a segment's, built on first use and kept with the
    /// open segment; `None` for a log batch (small: its columns are read in one pass) or a
    /// block storing no columns.
    pub fn attribute_index(
        &self,
    ) -> std::result::Result<Option<&'a crate::format::attribute_index::AttributeIndex>, FormatError>
    {
        match self.segment {
            Some(r) => r.attribute_index(),
            None => Ok(None),
        }
    }

    /// Whether a filtered search hides some of the block's rows (see [`Block::hiding`]).
    pub fn is_filtered(&self) -> bool {
        self.hidden.is_some()
    }

    /// Whether row `i` is deleted in this snapshot's version (or hidden, see
    /// [`Block::hiding`]).
    pub fn is_deleted(&self, i: usize) -> bool {
        self.hidden
            .is_some_and(|h| h.get(i / 64).is_some_and(|w| (w >> (i % 64)) & 1 == 1))
            || self
                .deletions
                .is_some_and(|d| d.is_deleted(self.row_offset + i as u64))
    }

    /// The block's deletion bits (hidden rows included, see [`Block::hiding`]) as words
    /// aligned to its first row (bit `i % 64` of word `i / 64` = row `i` deleted), the form
    /// scan kernels take; `None` when nothing is deleted or hidden.
    pub fn deleted_words(&self) -> Option<std::borrow::Cow<'a, [u64]>> {
        let n = self.rows().div_ceil(64);
        let Some(d) = self.deletions else {
            let h = self.hidden?;
            return Some(match h.get(..n) {
                Some(s) => std::borrow::Cow::Borrowed(s),
                None => {
                    let mut w = h.to_vec();
                    w.resize(n, 0);
                    std::borrow::Cow::Owned(w)
                }
            });
        };
        let mut w = if self.row_offset == 0 && d.rows == self.rows() as u64 {
            if self.hidden.is_none() {
                return Some(std::borrow::Cow::Borrowed(d.words()));
            }
            let mut w = d.words().to_vec();
            w.resize(n, 0);
            w
        } else {
            let mut w = vec![0u64; n];
            for i in 0..self.rows() {
                if d.is_deleted(self.row_offset + i as u64) {
                    w[i / 64] |= 1 << (i % 64);
                }
            }
            w
        };
        if let Some(h) = self.hidden {
            for (a, b) in w.iter_mut().zip(h) {
                *a |= b;
            }
        }
        Some(std::borrow::Cow::Owned(w))
    }

    /// The segment this block is; `None` for a batch of the active log. Its column views are
    /// the file's bytes unchecked: read rows through the block's accessors.
    pub fn segment(&self) -> Option<&'a SegmentReader> {
        self.segment
    }

    /// Row `i`, its columns checked.
    pub(super) fn row(&self, i: usize) -> std::result::Result<Row<'a>, FormatError> {
        let r = i..i + 1;
        for col in [RowColumn::Labels, RowColumn::Lists] {
            self.check(col, r.clone())?;
        }
        Ok(Row {
            id: self.ids_in(r.clone())?[0],
            code: self.code(i)?,
            label: self.label_unchecked(i),
            list: self.list_unchecked(i),
        })
    }

    pub(super) fn label_unchecked(&self, i: usize) -> Option<u32> {
        self.labels
            .and_then(|l| l.get(i).copied())
            .filter(|&l| l != NO_LABEL)
    }

    pub(super) fn list_unchecked(&self, i: usize) -> Option<u32> {
        self.lists
            .and_then(|l| l.get(i).copied())
            .filter(|&l| l != NO_LIST)
    }

    /// Whether the block stores class labels.
    pub fn has_labels(&self) -> bool {
        self.labels.is_some()
    }

    /// Whether the block stores inverted-list ids.
    pub fn has_lists(&self) -> bool {
        self.lists.is_some()
    }

    /// The labels ([`NO_LABEL`] = none), when the block stores them.
    pub fn labels(&self) -> std::result::Result<Option<&'a [u32]>, FormatError> {
        self.labels
            .map(|l| self.slice(RowColumn::Labels, l, 1, 0..self.rows()))
            .transpose()
    }

    /// The inverted-list ids ([`NO_LIST`] = none), when the block stores them.
    pub fn lists(&self) -> std::result::Result<Option<&'a [u32]>, FormatError> {
        self.lists
            .map(|l| self.slice(RowColumn::Lists, l, 1, 0..self.rows()))
            .transpose()
    }

    /// The class label of row `i` (`None`: no label, or no such row).
    pub fn label(&self, i: usize) -> std::result::Result<Option<u32>, FormatError> {
        if i >= self.rows() {
            return Ok(None);
        }
        self.check(RowColumn::Labels, i..i + 1)?;
        Ok(self.label_unchecked(i))
    }

    /// The inverted-list id of row `i` (`None`: no list, or no such row).
    pub fn list(&self, i: usize) -> std::result::Result<Option<u32>, FormatError> {
        if i >= self.rows() {
            return Ok(None);
        }
        self.check(RowColumn::Lists, i..i + 1)?;
        Ok(self.list_unchecked(i))
    }

    /// Whether the block stores vectors, and how many values (`None`: none stored).
    pub fn stored_vector_values(&self) -> Option<usize> {
        self.vectors.map(|v| v.len())
    }

    /// The stored vectors of rows `rows` (`vector_dim` values per row), when the block stores
    /// them.
    pub fn vectors_in(
        &self,
        rows: Range<usize>,
    ) -> std::result::Result<Option<VectorSlice<'a>>, FormatError> {
        let Some(v) = self.vectors else {
            return Ok(None);
        };
        if rows.start > rows.end || rows.end > self.rows() {
            return Err(self.outside(&rows));
        }
        self.check(RowColumn::Vectors, rows.clone())?;
        let d = self.vector_dim;
        v.range(rows.start * d, rows.end * d)
            .map(Some)
            .ok_or_else(|| self.outside(&rows))
    }

    /// Row `row`'s stored vector **not checked against its checksum**, for cache hints only
    /// (re-ranking prefetches the next candidates' rows; the values are read, checked, through
    /// [`Block::vectors_in`]). `None` when there is no such row or no vectors.
    pub(crate) fn vector_unchecked_for_hint(&self, row: usize) -> Option<VectorSlice<'a>> {
        let d = self.vector_dim;
        if row >= self.rows() {
            return None;
        }
        self.vectors?.range(row * d, (row + 1) * d)
    }

    /// The stored vector of row `i`, widened to f32 (f16 storage decodes exactly); `None`
    /// when the block stores no vectors or there is no such row.
    pub fn vector(&self, i: usize) -> std::result::Result<Option<Vec<f32>>, FormatError> {
        let mut out = vec![0f32; self.vector_dim];
        Ok(self.vector_into(i, &mut out)?.then_some(out))
    }

    /// [`Block::vector`] into a caller's buffer of `vector_dim` values (no allocation per
    /// row, for re-ranking loops); false when there is no vector to copy.
    pub fn vector_into(&self, i: usize, out: &mut [f32]) -> std::result::Result<bool, FormatError> {
        if self.vectors.is_none() || i >= self.rows() {
            return Ok(false);
        }
        self.check(RowColumn::Vectors, i..i + 1)?;
        Ok(self
            .vectors
            .is_some_and(|v| v.row_into(i, self.vector_dim, out)))
    }

    /// The list index: `(list id, first row)` per list in increasing list order, each list's
    /// rows running to the next entry's first row. Present when the rows are grouped by list
    /// (always for blocks the engine wrote with list ids); `None` otherwise.
    pub fn list_index(&self) -> Option<&'a [ListEntry]> {
        self.list_index
    }

    /// The rows of list `list` (an empty range when the block has none of them), when the
    /// block is grouped by list; `None` when it is not (or has no list ids): use
    /// [`Block::rows_in_lists`], which works for every block.
    pub fn list_range(&self, list: u32) -> Option<Range<usize>> {
        let index = self.list_index?;
        let k = index.partition_point(|e| e.list < list);
        match index.get(k) {
            Some(e) if e.list == list => {
                let end = index
                    .get(k + 1)
                    .map_or(self.rows(), |n| n.first_row as usize);
                Some(e.first_row as usize..end)
            }
            _ => Some(0..0),
        }
    }

    /// The rows whose list id is one of `lists`, as ascending disjoint ranges: one lookup per
    /// list in a grouped block, a scan of the list column otherwise. Rows without a list id
    /// belong to no list. Deleted rows are included (test [`Block::is_deleted`]).
    pub fn rows_in_lists(
        &self,
        lists: &[u32],
    ) -> std::result::Result<Vec<Range<usize>>, FormatError> {
        let mut wanted: Vec<u32> = lists.iter().copied().filter(|&l| l != NO_LIST).collect();
        wanted.sort_unstable();
        wanted.dedup();
        if self.list_index.is_some() {
            return Ok(wanted
                .iter()
                .filter_map(|&l| self.list_range(l))
                .filter(|r| !r.is_empty())
                .collect());
        }
        let Some(col) = self.lists()? else {
            return Ok(Vec::new());
        };
        let mut out: Vec<Range<usize>> = Vec::new();
        for (i, l) in col.iter().enumerate() {
            if wanted.binary_search(l).is_ok() {
                match out.last_mut() {
                    Some(r) if r.end == i => r.end = i + 1,
                    _ => out.push(i..i + 1),
                }
            }
        }
        Ok(out)
    }

    /// Checks the columns a [`Row`] shows (ids, codes, labels, lists) for every row.
    pub(super) fn check_row_columns(&self) -> std::result::Result<(), FormatError> {
        for col in [
            RowColumn::Ids,
            RowColumn::Codes,
            RowColumn::Labels,
            RowColumn::Lists,
        ] {
            self.check(col, 0..self.rows())?;
        }
        Ok(())
    }

    /// The live rows of the block (every column a [`Row`] shows is checked first).
    pub fn live_rows(
        &self,
    ) -> std::result::Result<impl Iterator<Item = Row<'a>> + '_, FormatError> {
        self.check_row_columns()?;
        let codes = self.codes()?;
        let cb = self.code_bytes;
        Ok((0..self.rows())
            .filter(|&i| !self.is_deleted(i))
            .map(move |i| Row {
                id: self.ids[i],
                code: codes.get(i * cb..(i + 1) * cb).unwrap_or(&[]),
                label: self.label_unchecked(i),
                list: self.list_unchecked(i),
            }))
    }
}
