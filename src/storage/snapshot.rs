//! Snapshots: one pinned index version. Everything a snapshot shows belongs to that version,
//! whatever writers, compactions and garbage collections do meanwhile.
//!
//! A snapshot holds an `Arc` of its version: the mapped segments, the deletion bitmaps, the
//! committed log rows (in memory) and the folded class table. Within the process, garbage
//! collection keeps every file of a version some snapshot still holds. A snapshot opened by
//! another process ([`Snapshot::open`]) reads the newest manifest and opens all its files at
//! once; from then on it needs nothing from the directory (mappings outlive unlinking).
//!
//! A snapshot holds its index's model ([`Snapshot::model`], decoded once per model file) and
//! the class means projected through it ([`Snapshot::class_means`], built once per class
//! table), so searching and classifying need nothing but the snapshot.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use crate::classes::{ClassError, ClassMeans};
use crate::format::fastscan_layout::{BLOCK_ROWS, block_bytes};
use crate::format::{
    ActiveLogEntry, Attributes, ClassTable, ColumnBuilder, DeletionBitmap, FormatError, ListEntry,
    Manifest, ModelFile, RowColumn, Schema, SegmentReader, Value, VectorSlice, VectorSpec,
    append_log::{NO_LABEL, NO_LIST},
};
use crate::model::{Model, ModelError};

use super::config::ReadOptions;
use super::error::{Result, StorageError};
use super::layout::{list_manifests, manifest_file_name};
use super::loaded_version::{Loc, VersionState, choose_manifest, load_version, read_manifest};
use super::recovery_report::SkippedManifest;

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
    ids: &'a [u64],
    /// `code_bytes` per row, row-major (empty for a segment in the fast-scan layout).
    codes: &'a [u8],
    /// Labels ([`NO_LABEL`] = none), when the block stores them.
    labels: Option<&'a [u32]>,
    /// Inverted-list ids ([`NO_LIST`] = none), when the block stores them.
    lists: Option<&'a [u32]>,
    /// Stored vectors (`vector_dim` values per row), when the block stores them.
    vectors: Option<VectorSlice<'a>>,
    /// Values per stored vector (0 when the block stores none).
    pub vector_dim: usize,
    /// Where each list's rows start, when the rows are grouped by list.
    list_index: Option<&'a [ListEntry]>,
    code_bytes: usize,
    deletions: Option<&'a DeletionBitmap>,
    /// Row number of the block's first row in the deletion bitmap.
    row_offset: u64,
    segment: Option<&'a SegmentReader>,
    /// Rows a filtered search hides (bit `i % 64` of word `i / 64` = row `i`, aligned to the
    /// block's first row): to that search they are deleted rows (see [`Block::hiding`]).
    hidden: Option<&'a [u64]>,
    /// A log batch's attribute columns (a segment's are read through `segment`).
    log_attributes: Option<&'a Attributes>,
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
    fn row(&self, i: usize) -> std::result::Result<Row<'a>, FormatError> {
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

    fn label_unchecked(&self, i: usize) -> Option<u32> {
        self.labels
            .and_then(|l| l.get(i).copied())
            .filter(|&l| l != NO_LABEL)
    }

    fn list_unchecked(&self, i: usize) -> Option<u32> {
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
    fn check_row_columns(&self) -> std::result::Result<(), FormatError> {
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

/// A pinned index version.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub(crate) v: Arc<VersionState>,
    skipped: Arc<[SkippedManifest]>,
}

impl Snapshot {
    pub(crate) fn from_state(v: Arc<VersionState>, skipped: Arc<[SkippedManifest]>) -> Snapshot {
        Snapshot { v, skipped }
    }

    /// Opens the newest version of the index in `dir` for reading, without any lock (readers
    /// in any number of processes). A newer manifest that does not read is skipped and listed
    /// in [`Snapshot::skipped_manifests`] — the snapshot then shows an older version than the
    /// newest one written, and callers should say so; if garbage collection removes a file
    /// while this runs, it retries with the newest version.
    pub fn open(dir: &Path) -> Result<Snapshot> {
        Snapshot::open_with(dir, &ReadOptions::default())
    }

    /// [`Snapshot::open`] with read options (map or copy segments, when to checksum columns).
    pub fn open_with(dir: &Path, opts: &ReadOptions) -> Result<Snapshot> {
        const ATTEMPTS: usize = 5;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let choice = choose_manifest(dir)?;
            let Some((_, manifest, log)) = choice.newest else {
                return Err(StorageError::NotAnIndex {
                    dir: dir.to_path_buf(),
                    detail: match choice.skipped.first() {
                        Some(s) => format!("no manifest reads (newest: {})", s.error),
                        None => "no manifest found".into(),
                    },
                });
            };
            match load_version(dir, manifest, log, opts, false) {
                Ok(l) => {
                    return Ok(Snapshot {
                        v: Arc::new(l.state),
                        skipped: Arc::from(choice.skipped),
                    });
                }
                Err(e) if e.is_not_found() && attempt < ATTEMPTS => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Opens `version` of the index in `dir` for reading, whether or not it is the newest.
    ///
    /// Why: a sharded index publishes one version of the whole as a cut record naming each
    /// shard's version (docs/distributed.md), written after every shard committed; a reader
    /// pins the cut, so it opens each shard at the cut's version even when that shard has
    /// committed past it (a sharded commit under way, or one cut short by a crash). The
    /// version must still be on disk — garbage collection keeps the retained versions
    /// (FORMAT.md §11.5) — else an `InvalidArgument` on `version` listing the versions there;
    /// a manifest that does not read is an error, never a fallback to another version.
    pub fn open_version(dir: &Path, version: u64) -> Result<Snapshot> {
        Snapshot::open_version_with(dir, version, &ReadOptions::default())
    }

    /// [`Snapshot::open_version`] with read options.
    pub fn open_version_with(dir: &Path, version: u64, opts: &ReadOptions) -> Result<Snapshot> {
        let path = dir.join(manifest_file_name(version));
        if !path.exists() {
            let on_disk: Vec<String> = list_manifests(dir)?
                .iter()
                .map(|(v, _)| v.to_string())
                .collect();
            if on_disk.is_empty() {
                return Err(StorageError::NotAnIndex {
                    dir: dir.to_path_buf(),
                    detail: "no manifest found".into(),
                });
            }
            return Err(StorageError::invalid(
                dir,
                "version",
                format!(
                    "version {version} is not on disk (versions there: {}; garbage collection \
                     removes versions past the retention)",
                    on_disk.join(", ")
                ),
            ));
        }
        let (manifest, log) = read_manifest(&path, version)?;
        let loaded = load_version(dir, manifest, log, opts, false)?;
        Ok(Snapshot {
            v: Arc::new(loaded.state),
            skipped: Arc::from(Vec::new()),
        })
    }

    /// The version this snapshot pins.
    pub fn version(&self) -> u64 {
        self.v.version()
    }

    /// The index's directory.
    pub fn dir(&self) -> &Path {
        &self.v.dir
    }

    /// The version's manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.v.manifest
    }

    /// The active log's committed state in this version.
    pub fn active_log(&self) -> Option<&ActiveLogEntry> {
        self.v.log_entry()
    }

    /// The model that encodes this index's codes, decoded on first use and kept (shared by
    /// every snapshot of the same [`crate::storage::Index`] handle). An error when the stored
    /// model file does not decode: the index still reads, lists, inspects and verifies, but
    /// nothing that needs the model runs.
    pub fn model(&self) -> std::result::Result<&Model, ModelError> {
        self.v.model.decoded()
    }

    /// The model file as stored (what inspection and verification report).
    pub fn model_file(&self) -> &ModelFile {
        self.v.model.file()
    }

    /// Bytes per code.
    pub fn code_bytes(&self) -> usize {
        self.v.model.file().code_bytes as usize
    }

    /// The vectors every row of the index stores (fixed at creation), if any.
    pub fn vector_spec(&self) -> Option<VectorSpec> {
        self.v.manifest.vectors
    }

    /// Rows not deleted.
    pub fn live_rows(&self) -> u64 {
        self.v.live_rows()
    }

    /// Deleted rows still stored (dropped by compaction).
    pub fn deleted_rows(&self) -> u64 {
        self.v.manifest.deleted_rows_with(self.v.log_entry())
    }

    /// Sealed segments in this version.
    pub fn segment_count(&self) -> usize {
        self.v.segments.len()
    }

    /// The class table with every delta of this version folded in.
    pub fn classes(&self) -> Option<&ClassTable> {
        self.v.classes.as_deref()
    }

    /// The NCM classifier of this version: the class means of [`Snapshot::classes`] projected
    /// through [`Snapshot::model`], built on first use and kept; versions of one
    /// [`crate::storage::Index`] handle with the same class table share them. An error when
    /// the version has no class with images.
    pub fn class_means(&self) -> std::result::Result<&ClassMeans, ClassError> {
        if let Some(m) = self.v.class_means.get() {
            return Ok(m);
        }
        let no_classes = || ClassError::NoClasses {
            dir: self.dir().display().to_string(),
        };
        let table = self.classes().ok_or_else(no_classes)?;
        let means = ClassMeans::build(table, self.model()?)?;
        if means.is_empty() {
            return Err(no_classes());
        }
        Ok(self.v.class_means.get_or_init(|| means))
    }

    /// Newer manifests that did not read when this snapshot (or the [`crate::storage::Index`]
    /// it came from) was opened: when not empty, the snapshot shows an older version than the
    /// newest one written, without those versions' writes.
    pub fn skipped_manifests(&self) -> &[SkippedManifest] {
        &self.skipped
    }

    /// Every block of rows: the sealed segments in manifest order, then the active log's
    /// committed batches.
    pub fn blocks(&self) -> impl Iterator<Item = Block<'_>> + '_ {
        let segs = self.v.segments.iter().map(move |s| self.segment_block(s));
        let log = self
            .v
            .log
            .iter()
            .flat_map(move |l| l.batches.iter().map(move |b| self.log_block(l, b)));
        segs.chain(log)
    }

    fn segment_block<'a>(&'a self, s: &'a super::loaded_version::SegmentSlot) -> Block<'a> {
        let r = s.seg.reader();
        Block {
            ids: r.ids(),
            codes: if r.fastscan_codes().is_some() {
                &[]
            } else {
                // Viewed, not read: every accessor checks the rows it hands out.
                r.codes()
            },
            labels: r.labels(),
            lists: r.lists(),
            vectors: s.seg.vectors(),
            vector_dim: r.meta().vectors.map_or(0, |v| v.1 as usize),
            list_index: r.list_index(),
            code_bytes: self.code_bytes(),
            deletions: s.deletions.as_deref(),
            row_offset: 0,
            segment: Some(r),
            hidden: None,
            log_attributes: None,
        }
    }

    fn log_block<'a>(
        &'a self,
        l: &'a super::log_rows::LogView,
        b: &'a super::log_rows::LogBatchEntry,
    ) -> Block<'a> {
        Block {
            ids: &b.batch.ids,
            codes: &b.batch.codes,
            labels: b.batch.labels.as_deref(),
            lists: b.batch.lists.as_deref(),
            vectors: b.batch.vectors.as_ref().map(|v| v.as_slice()),
            vector_dim: l.meta.vectors.map_or(0, |v| v.dim as usize),
            list_index: b.list_index.as_deref(),
            code_bytes: self.code_bytes(),
            deletions: l.deletions.as_deref(),
            row_offset: b.first_row,
            segment: None,
            hidden: None,
            log_attributes: b.batch.attributes.as_ref(),
        }
    }

    /// Every live row (segments in manifest order, then the log in insertion order). The
    /// columns a [`Row`] shows are checked in every segment first (see [`Block`]): a damaged
    /// block is an error before any row is returned.
    pub fn rows(&self) -> Result<impl Iterator<Item = Row<'_>> + '_> {
        let blocks: Vec<Block<'_>> = self.blocks().collect();
        for b in &blocks {
            b.check_row_columns()?;
        }
        let mut rows = Vec::with_capacity(blocks.len());
        for b in blocks {
            let codes = b.codes()?;
            rows.push((b, codes));
        }
        Ok(rows.into_iter().flat_map(|(b, codes)| {
            let cb = b.code_bytes;
            (0..b.rows())
                .filter(move |&i| !b.is_deleted(i))
                .map(move |i| Row {
                    id: b.ids[i],
                    code: codes.get(i * cb..(i + 1) * cb).unwrap_or(&[]),
                    label: b.label_unchecked(i),
                    list: b.list_unchecked(i),
                })
        }))
    }

    /// The live row with `id`, if any. May fail when a segment's id column does not match its
    /// checksum (checked on the first lookup in a segment opened without column checks).
    pub fn get(&self, id: u64) -> Result<Option<Row<'_>>> {
        Ok(self.locate(id)?.map(|(b, i)| b.row(i)).transpose()?)
    }

    /// The block holding the live row `id` and the row's index in it (for its stored vector,
    /// list id, label, … through the [`Block`] accessors).
    pub fn locate(&self, id: u64) -> Result<Option<(Block<'_>, usize)>> {
        Ok(match self.v.find(id)? {
            None => None,
            Some(Loc::Segment { slot, row }) => {
                Some((self.segment_block(&self.v.segments[slot]), row as usize))
            }
            Some(Loc::Log { row }) => self.v.log.as_ref().and_then(|l| {
                let k = l.batch_of(row)?;
                let b = &l.batches[k];
                Some((self.log_block(l, b), (row - b.first_row) as usize))
            }),
        })
    }

    /// The index's attribute columns in this version (names, types, defaults; FORMAT.md §7.4):
    /// what a filter may name besides `id`, and what [`Snapshot::attribute_values`] reads.
    pub fn attribute_schema(&self) -> &Schema {
        &self.v.manifest.attributes
    }

    /// Columns `columns` of the live rows `ids`, one row per id in `ids`' order (what
    /// `search --with` shows beside the hits). A row stored before a column was added holds
    /// the column's default. A name the schema lacks is [`StorageError::InvalidArgument`]
    /// naming it; an id that is not live is [`StorageError::UnknownId`]; a damaged attribute
    /// section is the format error naming its file.
    pub fn attribute_values(&self, ids: &[u64], columns: &[&str]) -> Result<Attributes> {
        let schema = self.attribute_schema();
        let mut cols = Vec::with_capacity(columns.len());
        for &name in columns {
            let (i, t) = schema.find(name).ok_or_else(|| {
                StorageError::invalid(
                    self.dir(),
                    "columns",
                    format!("no attribute column {name:?} (columns: {})", schema.known()),
                )
            })?;
            cols.push((name, i, t));
        }
        let mut builders: Vec<ColumnBuilder<'_>> = cols
            .iter()
            .map(|&(_, _, t)| ColumnBuilder::new(t))
            .collect();
        for &id in ids {
            let (b, row) = self.locate(id)?.ok_or_else(|| StorageError::UnknownId {
                dir: self.dir().to_path_buf(),
                id,
            })?;
            let stored = b.attributes()?;
            for (k, &(name, i, t)) in cols.iter().enumerate() {
                let v = stored
                    .and_then(|a| a.column_named(name))
                    .filter(|c| c.column_type() == t)
                    .and_then(|c| c.value(row));
                match v {
                    Some(v) => builders[k].push_value(&v),
                    None => {
                        let d = schema.default_value(i).cloned().unwrap_or(Value::zero(t));
                        builders[k].push_value(&d)
                    }
                }
            }
        }
        let named = cols
            .iter()
            .zip(builders)
            .map(|(&(name, _, _), b)| (name.to_owned(), b.finish()))
            .collect();
        Attributes::new(ids.len(), named).map_err(|e| StorageError::attributes(self.dir(), e))
    }

    /// The stored vector of the live row `id`, widened to f32 (`None`: no such live row, or the
    /// index stores no vectors).
    pub fn vector(&self, id: u64) -> Result<Option<Vec<f32>>> {
        Ok(match self.locate(id)? {
            Some((b, i)) => b.vector(i)?,
            None => None,
        })
    }

    /// The stored vectors of the live rows `ids`, widened to f32, one row of `dim` values per
    /// id in `ids`' order (FAISS's `reconstruct_n`; f16 vectors come back as stored, rounded).
    /// An index that stores no vectors is [`StorageError::InvalidArgument`] naming `ids` (it
    /// keeps codes only: decode those with the model instead); an id that is not live is
    /// [`StorageError::UnknownId`]. Everything is checked before the output is sized.
    pub fn reconstruct(&self, ids: &[u64]) -> Result<(Vec<f32>, usize)> {
        let Some(spec) = self.vector_spec() else {
            return Err(StorageError::invalid(
                self.dir(),
                "ids",
                "this index stores no vectors (create or build it with stored vectors); \
                 decode its codes with the model instead",
            ));
        };
        let dim = spec.dim as usize;
        let mut out = Vec::new();
        for &id in ids {
            match self.vector(id)? {
                Some(v) if v.len() == dim => out.extend_from_slice(&v),
                Some(v) => {
                    return Err(StorageError::invalid(
                        self.dir(),
                        "ids",
                        format!(
                            "row {id}: stored vector of {} values, expected {dim}",
                            v.len()
                        ),
                    ));
                }
                None => {
                    return Err(StorageError::UnknownId {
                        dir: self.dir().to_path_buf(),
                        id,
                    });
                }
            }
        }
        Ok((out, dim))
    }
}
