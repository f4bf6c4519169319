//! Snapshots: one pinned index version. Everything a snapshot shows belongs to that version,
//! whatever writers, compactions and garbage collections do meanwhile.
//!
//! A snapshot holds an `Arc` of its version: the mapped segments, the deletion bitmaps, the
//! committed log rows (in memory) and the folded class table. Within the process, garbage
//! collection keeps every file of a version some snapshot still holds. A snapshot opened by
//! another process ([`Snapshot::open`]) reads the newest manifest and opens all its files at
//! once; from then on it needs nothing from the directory (mappings outlive unlinking).

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use crate::format::{
    ActiveLogEntry, ClassTable, DeletionBitmap, ListEntry, Manifest, ModelFile, SegmentReader,
    VectorSlice, VectorSpec,
    append_log::{NO_LABEL, NO_LIST},
};

use super::config::ReadOptions;
use super::error::{Result, StorageError};
use super::recovery::SkippedManifest;
use super::version::{Loc, VersionState, choose_manifest, load_version};

/// One live row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row<'a> {
    pub id: u64,
    pub code: &'a [u8],
    /// The row's class label (`None` when it was added without one).
    pub label: Option<u32>,
    /// The row's inverted-list id (`None` when it was added without one).
    pub list: Option<u32>,
}

/// A contiguous run of rows: a sealed segment, or one batch of the active log. Scans work
/// block by block, skipping rows for which [`Block::is_deleted`] holds.
#[derive(Debug, Clone, Copy)]
pub struct Block<'a> {
    pub ids: &'a [u64],
    /// `code_bytes` per row, row-major (empty for a segment in the fast-scan layout: see
    /// [`Block::codes`]).
    codes: &'a [u8],
    /// Labels ([`NO_LABEL`] = none), when the block stores them.
    pub labels: Option<&'a [u32]>,
    /// Inverted-list ids ([`NO_LIST`] = none), when the block stores them.
    pub lists: Option<&'a [u32]>,
    /// Stored vectors (`vector_dim` values per row), when the block stores them.
    pub vectors: Option<VectorSlice<'a>>,
    pub vector_dim: usize,
    /// Where each list's rows start, when the rows are grouped by list.
    list_index: Option<&'a [ListEntry]>,
    code_bytes: usize,
    deletions: Option<&'a DeletionBitmap>,
    /// Row number of the block's first row in the deletion bitmap.
    row_offset: u64,
    segment: Option<&'a SegmentReader>,
}

impl<'a> Block<'a> {
    pub fn rows(&self) -> usize {
        self.ids.len()
    }

    /// The codes, `code_bytes` per row, row-major. A segment stored in the fast-scan layout
    /// (4-bit PQ, format 1.2) is unpacked on the first call and the copy kept with the segment;
    /// scans read it in place through [`Block::fastscan_codes`] instead.
    pub fn codes(&self) -> &'a [u8] {
        match self.segment {
            Some(r) if r.fastscan_codes().is_some() => r.codes(),
            _ => self.codes,
        }
    }

    /// The block's code column in the fast-scan layout and its number of sub-quantisers, when
    /// the block is a segment stored so (`None` for row-major segments and log batches).
    pub fn fastscan_codes(&self) -> Option<(&'a [u8], usize)> {
        self.segment?.fastscan_codes()
    }

    /// The code of row `i`.
    pub fn code(&self, i: usize) -> Option<&'a [u8]> {
        self.codes()
            .get(i * self.code_bytes..(i + 1) * self.code_bytes)
    }

    /// Whether row `i` is deleted in this snapshot's version.
    pub fn is_deleted(&self, i: usize) -> bool {
        self.deletions
            .is_some_and(|d| d.is_deleted(self.row_offset + i as u64))
    }

    /// The block's deletion bits as words aligned to its first row (bit `i % 64` of word
    /// `i / 64` = row `i` deleted), the form scan kernels take; `None` when nothing is deleted.
    pub fn deleted_words(&self) -> Option<std::borrow::Cow<'a, [u64]>> {
        let d = self.deletions?;
        if self.row_offset == 0 && d.rows == self.rows() as u64 {
            return Some(std::borrow::Cow::Borrowed(d.words()));
        }
        let mut w = vec![0u64; self.rows().div_ceil(64)];
        for i in 0..self.rows() {
            if self.is_deleted(i) {
                w[i / 64] |= 1 << (i % 64);
            }
        }
        Some(std::borrow::Cow::Owned(w))
    }

    /// The segment this block is (stored vectors for re-ranking live there); `None` for a
    /// batch of the active log.
    pub fn segment(&self) -> Option<&'a SegmentReader> {
        self.segment
    }

    fn row(&self, i: usize) -> Row<'a> {
        Row {
            id: self.ids[i],
            code: self.code(i).unwrap_or(&[]),
            label: self.label(i),
            list: self.list(i),
        }
    }

    /// The class label of row `i` (`None`: no label, or no such row).
    pub fn label(&self, i: usize) -> Option<u32> {
        self.labels
            .and_then(|l| l.get(i).copied())
            .filter(|&l| l != NO_LABEL)
    }

    /// The inverted-list id of row `i` (`None`: no list, or no such row).
    pub fn list(&self, i: usize) -> Option<u32> {
        self.lists
            .and_then(|l| l.get(i).copied())
            .filter(|&l| l != NO_LIST)
    }

    /// The stored vector of row `i`, widened to f32 (f16 storage decodes exactly); `None`
    /// when the block stores no vectors or there is no such row.
    pub fn vector(&self, i: usize) -> Option<Vec<f32>> {
        let mut out = vec![0f32; self.vector_dim];
        self.vector_into(i, &mut out).then_some(out)
    }

    /// [`Block::vector`] into a caller's buffer of `vector_dim` values (no allocation per
    /// row, for re-ranking loops); false when there is no vector to copy.
    pub fn vector_into(&self, i: usize, out: &mut [f32]) -> bool {
        self.vectors
            .is_some_and(|v| v.row_into(i, self.vector_dim, out))
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
    pub fn rows_in_lists(&self, lists: &[u32]) -> Vec<Range<usize>> {
        let Some(col) = self.lists else {
            return Vec::new();
        };
        let mut wanted: Vec<u32> = lists.iter().copied().filter(|&l| l != NO_LIST).collect();
        wanted.sort_unstable();
        wanted.dedup();
        if self.list_index.is_some() {
            return wanted
                .iter()
                .filter_map(|&l| self.list_range(l))
                .filter(|r| !r.is_empty())
                .collect();
        }
        let mut out: Vec<Range<usize>> = Vec::new();
        for (i, l) in col.iter().enumerate() {
            if wanted.binary_search(l).is_ok() {
                match out.last_mut() {
                    Some(r) if r.end == i => r.end = i + 1,
                    _ => out.push(i..i + 1),
                }
            }
        }
        out
    }

    /// The live rows of the block.
    pub fn live_rows(&self) -> impl Iterator<Item = Row<'a>> + '_ {
        (0..self.rows())
            .filter(|&i| !self.is_deleted(i))
            .map(|i| self.row(i))
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

    pub fn version(&self) -> u64 {
        self.v.version()
    }

    pub fn dir(&self) -> &Path {
        &self.v.dir
    }

    pub fn manifest(&self) -> &Manifest {
        &self.v.manifest
    }

    /// The active log's committed state in this version.
    pub fn active_log(&self) -> Option<&ActiveLogEntry> {
        self.v.log_entry()
    }

    pub fn model(&self) -> &ModelFile {
        &self.v.model
    }

    /// Bytes per code.
    pub fn code_bytes(&self) -> usize {
        self.v.model.code_bytes as usize
    }

    /// The vectors every row of the index stores (fixed at creation), if any.
    pub fn vector_spec(&self) -> Option<VectorSpec> {
        self.v.manifest.vectors
    }

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

    fn segment_block<'a>(&'a self, s: &'a super::version::SegmentSlot) -> Block<'a> {
        let r = s.seg.reader();
        Block {
            ids: r.ids(),
            codes: if r.fastscan_codes().is_some() {
                &[]
            } else {
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
        }
    }

    /// Every live row (segments in manifest order, then the log in insertion order).
    pub fn rows(&self) -> impl Iterator<Item = Row<'_>> + '_ {
        self.blocks().flat_map(|b| {
            (0..b.rows())
                .filter(move |&i| !b.is_deleted(i))
                .map(move |i| b.row(i))
        })
    }

    /// The live row with `id`, if any. May fail when a segment's id column does not match its
    /// checksum (checked on the first lookup in a segment opened without column checks).
    pub fn get(&self, id: u64) -> Result<Option<Row<'_>>> {
        Ok(self.locate(id)?.map(|(b, i)| b.row(i)))
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

    /// The stored vector of the live row `id`, widened to f32 (`None`: no such live row, or the
    /// index stores no vectors).
    pub fn vector(&self, id: u64) -> Result<Option<Vec<f32>>> {
        Ok(self.locate(id)?.and_then(|(b, i)| b.vector(i)))
    }
}
