//! Compaction (FORMAT.md §11.4): merge small segments into larger ones (size-tiered), drop
//! deleted rows, fold class-table deltas into a new base table — published as one commit.
//!
//! It runs in three phases so that neither readers nor the writer wait for the merge itself:
//!
//! 1. *Plan* (writer mutex held for an `Arc` clone): pin the committed version `B` and choose
//!    the groups of segments to merge.
//! 2. *Merge* (no lock): stream each group into a new segment, skipping rows deleted in `B`.
//!    Sources are k-way merged by id when their rows are sorted (the engine always writes them
//!    sorted), so the output is sorted too; otherwise they are concatenated. Each column is a
//!    separate streaming pass, so memory is O(`buffer_rows` × row width + group size) whatever
//!    the index size, and I/O is O(rows): every source column is read once to check its
//!    checksum (a damaged column must not be rewritten under a fresh checksum), once to copy,
//!    and the id column once per output column.
//! 3. *Publish* (writer mutex held): rows deleted in the committed version `C` but not in `B`
//!    (commits that happened during the merge) are found by id in the merged segment and
//!    written as its deletion bitmap; deltas committed meanwhile are folded too; the manifest
//!    C+1 replaces the sources by the merged segments. Deletes staged but not committed are
//!    kept by id and land on whichever segment holds the row at the next commit.
//!
//! An error before the manifest is published leaves the index as it was (the merged files
//! are removed) and does not poison the writer; an error after it (the directory fsync) does.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashSet};
use std::sync::Arc;

use serde::Serialize;

use crate::format::{
    ClassFileEntry, ClassTable, FileId, FileKind, FileRef, Manifest, SegmentWriter, VectorBuf,
    VectorSlice, VectorSpec,
    append_log::{NO_LABEL, NO_LIST},
};

use super::config::CompactionPolicy;
use super::error::{Result, StorageError};
use super::gc::GcReport;
use super::index::{Column, Index, SegmentColumns, Writer, now_ms};
use super::layout::data_file_name;
use super::publish::{publish, sync_dir};
use super::version::{SegmentSlot, VersionState};

/// One merge of a compaction.
#[derive(Debug, Clone, Serialize)]
pub struct MergeReport {
    /// The merged segments' file names.
    pub sources: Vec<String>,
    /// The new segment (`None` when every source row was deleted).
    pub output: Option<String>,
    /// Rows written.
    pub rows: u64,
    /// Deleted rows dropped.
    pub dropped: u64,
    /// Bytes of the source segment files.
    pub bytes_in: u64,
    /// Bytes of the new segment file.
    pub bytes_out: u64,
}

/// What a compaction did.
#[derive(Debug, Clone, Serialize)]
pub struct CompactionReport {
    /// The version it published (`None`: nothing to do).
    pub version: Option<u64>,
    /// The committed version its result has the same rows as.
    pub based_on: u64,
    pub merges: Vec<MergeReport>,
    /// Class files folded into a new base table (0: none).
    pub folded_class_files: usize,
    /// Garbage collection after the compaction (when `config.auto_gc`).
    pub gc: Option<GcReport>,
    /// A garbage-collection failure (the compaction itself succeeded).
    pub gc_error: Option<String>,
}

/// The output of phase 2 for one group.
struct Merged {
    /// Positions of the sources in the base version.
    sources: Vec<usize>,
    slot: Option<SegmentSlot>,
    report: MergeReport,
}

/// Chooses the groups of segments to merge (indices into `v.segments`).
///
/// Only segments with the same columns shape are merged together: with or without list ids,
/// and with the same stored vectors (type and dimension, or none). Segments whose vectors are
/// zstd-compressed (never written by the engine) are left alone: reading them needs the whole
/// column decoded, which would break the merge's bounded memory.
pub(crate) fn plan(v: &VersionState, policy: &CompactionPolicy) -> Vec<Vec<usize>> {
    let mut classes: BTreeMap<(bool, u8, u32), Vec<usize>> = BTreeMap::new();
    for (i, s) in v.segments.iter().enumerate() {
        let r = s.seg.reader();
        if r.vectors_compressed() {
            continue;
        }
        let (t, d) = r.meta().vectors.map_or((0, 0), |(t, d)| (t as u8, d));
        classes
            .entry((r.lists().is_some(), t, d))
            .or_default()
            .push(i);
    }
    let mut groups = Vec::new();
    for cands in classes.into_values() {
        let deleted_frac = |i: usize| {
            let e = &v.segments[i].entry;
            if e.rows == 0 {
                1.0
            } else {
                e.deleted as f64 / e.rows as f64
            }
        };
        if policy.full {
            let dirty = cands.iter().any(|&i| v.segments[i].entry.deleted > 0);
            if cands.len() >= 2 || (cands.len() == 1 && dirty) {
                groups.push(cands);
            }
            continue;
        }
        let mut tiers: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for &i in &cands {
            tiers
                .entry(policy.tier(v.segments[i].seg.file_len()))
                .or_default()
                .push(i);
        }
        let mut used = HashSet::new();
        for (_, mut t) in tiers {
            t.sort_by_key(|&i| (v.segments[i].seg.file_len(), i));
            while t.len() >= policy.min_merge {
                let n = t.len().min(policy.max_merge);
                let g: Vec<usize> = t.drain(..n).collect();
                used.extend(g.iter().copied());
                groups.push(g);
            }
        }
        for &i in &cands {
            if !used.contains(&i) && deleted_frac(i) > policy.max_deleted_fraction {
                groups.push(vec![i]);
            }
        }
    }
    for g in &mut groups {
        g.sort_unstable();
    }
    groups.sort_unstable();
    groups
}

/// One source of a merge: its key columns and deletions.
struct Source<'a> {
    ids: &'a [u64],
    /// List ids, when the merge orders rows by (list, id).
    lists: Option<&'a [u32]>,
    rows: u64,
    deletions: Option<&'a crate::format::DeletionBitmap>,
}

impl Source<'_> {
    #[inline]
    fn is_deleted(&self, row: u64) -> bool {
        self.deletions.is_some_and(|d| d.is_deleted(row))
    }

    /// The merge key of row `r`: the id, or (list id, id) when merging by list.
    #[inline(always)]
    fn key(&self, r: usize) -> u128 {
        let list = self.lists.map_or(0, |l| l[r]);
        (list as u128) << 64 | self.ids[r] as u128
    }

    /// Skips deleted rows from `r`.
    #[inline]
    fn skip_deleted(&self, mut r: u64) -> u64 {
        if let Some(d) = self.deletions {
            while r < self.rows && d.is_deleted(r) {
                r += 1;
            }
        }
        r
    }
}

/// Something that hands out the merged rows as runs of consecutive live rows of one source.
trait RunSource {
    /// Hands up to `n` rows to `sink(source, first row, rows)` in merged order; returns how
    /// many (0 at the end).
    fn next_chunk(&mut self, n: u64, sink: impl FnMut(usize, u64, u64)) -> u64;
}

/// Streams the live rows of several segments in merged order, as runs of consecutive rows of
/// one source handed to a sink.
///
/// With sorted sources it is a k-way merge by key that *gallops*: the source with the smallest
/// head emits rows until its keys pass the smallest head of the others, then the next source
/// is chosen — one selection step per run, and per row only when the sources interleave row by
/// row. Up to [`LINEAR_MERGE_MAX`] sources the selection is a scan of their heads for the
/// smallest two (branch-predictable, no heap bookkeeping: the common compaction group); more
/// sources use a binary heap (the bound is read off its root's two children, the new head
/// sifted down in place). Otherwise the sources are concatenated.
struct MergeCursor<'a> {
    sources: Vec<Source<'a>>,
    next: Vec<u64>,
    heap: BinaryHeap<Reverse<(u128, usize)>>,
    /// Heads for the linear selection ([`EXHAUSTED`] when a source is done); empty when the
    /// heap is used.
    heads: Vec<u128>,
    sorted: bool,
    concat_src: usize,
    /// A key found live in two sources (damaged input): the merge still advances, and the
    /// caller refuses the result.
    duplicate: Option<u64>,
}

/// Largest group merged by scanning heads rather than through a heap.
const LINEAR_MERGE_MAX: usize = 16;
/// The head of an exhausted source in the linear selection. No row has this key: ids are at
/// most 2^64 − 2 (FORMAT.md §11.6).
const EXHAUSTED: u128 = u128::MAX;

impl<'a> MergeCursor<'a> {
    fn new(sources: Vec<Source<'a>>, sorted: bool) -> Self {
        Self::with_selection(sources, sorted, LINEAR_MERGE_MAX)
    }

    /// `linear_max`: the most sources merged by the linear selection (tests force either way).
    fn with_selection(sources: Vec<Source<'a>>, sorted: bool, linear_max: usize) -> Self {
        let linear = sources.len() <= linear_max;
        let mut m = MergeCursor {
            next: vec![0; sources.len()],
            sources,
            heap: BinaryHeap::new(),
            heads: Vec::new(),
            sorted,
            concat_src: 0,
            duplicate: None,
        };
        if sorted {
            for s in 0..m.sources.len() {
                m.next[s] = m.sources[s].skip_deleted(0);
                let h = m.head(s);
                if linear {
                    m.heads.push(h.unwrap_or(EXHAUSTED));
                } else if let Some(k) = h {
                    m.heap.push(Reverse((k, s)));
                }
            }
        }
        m
    }

    /// The key at source `s`'s cursor (a live row), if any.
    fn head(&self, s: usize) -> Option<u128> {
        let src = &self.sources[s];
        (self.next[s] < src.rows).then(|| src.key(self.next[s] as usize))
    }

    /// Emits live rows of source `s` from its cursor while their keys are below `bound`, at
    /// most `room` of them; returns how many.
    #[inline(always)]
    fn emit(
        &mut self,
        s: usize,
        bound: Option<u128>,
        room: u64,
        sink: &mut impl FnMut(usize, u64, u64),
    ) -> u64 {
        let src = &self.sources[s];
        let first = self.next[s];
        if let Some(b) = bound
            && first < src.rows
            && src.key(first as usize) >= b
        {
            self.duplicate = Some(src.ids[first as usize]);
        }
        let (mut start, mut r, mut emitted) = (first, first, 0);
        while r < src.rows
            && emitted + (r - start) < room
            && (r == first || bound.is_none_or(|b| src.key(r as usize) < b))
        {
            if src.is_deleted(r) {
                if r > start {
                    sink(s, start, r - start);
                    emitted += r - start;
                }
                start = r + 1;
            }
            r += 1;
        }
        if r > start {
            sink(s, start, r - start);
            emitted += r - start;
        }
        self.next[s] = src.skip_deleted(r);
        emitted
    }
}

impl RunSource for MergeCursor<'_> {
    fn next_chunk(&mut self, n: u64, mut sink: impl FnMut(usize, u64, u64)) -> u64 {
        let mut rows = 0;
        if self.sorted && !self.heads.is_empty() {
            while rows < n {
                let (mut best, mut bs, mut second) = (EXHAUSTED, usize::MAX, EXHAUSTED);
                for (s, &h) in self.heads.iter().enumerate() {
                    if h < best {
                        second = best;
                        best = h;
                        bs = s;
                    } else if h < second {
                        second = h;
                    }
                }
                if bs == usize::MAX {
                    return rows;
                }
                // Sources interleaving row by row: the chosen row is the only one below the
                // bound, so emit it without the run loop.
                let src = &self.sources[bs];
                let r = self.next[bs];
                if second != EXHAUSTED
                    && best < second
                    && (r + 1 >= src.rows || src.key(r as usize + 1) >= second)
                {
                    sink(bs, r, 1);
                    rows += 1;
                    let nr = src.skip_deleted(r + 1);
                    self.next[bs] = nr;
                    self.heads[bs] = if nr < src.rows {
                        src.key(nr as usize)
                    } else {
                        EXHAUSTED
                    };
                    continue;
                }
                let bound = (second != EXHAUSTED).then_some(second);
                rows += self.emit(bs, bound, n - rows, &mut sink);
                self.heads[bs] = self.head(bs).unwrap_or(EXHAUSTED);
            }
            return rows;
        }
        while rows < n {
            if self.sorted {
                let Some(&Reverse((_, s))) = self.heap.peek() else {
                    return rows;
                };
                let h = self.heap.as_slice();
                let bound = match (h.get(1), h.get(2)) {
                    (Some(Reverse(a)), Some(Reverse(b))) => Some(a.0.min(b.0)),
                    (Some(Reverse(a)), None) => Some(a.0),
                    _ => None,
                };
                rows += self.emit(s, bound, n - rows, &mut sink);
                let head = self.head(s);
                if let Some(mut top) = self.heap.peek_mut() {
                    match head {
                        Some(k) => *top = Reverse((k, s)),
                        None => {
                            std::collections::binary_heap::PeekMut::pop(top);
                        }
                    }
                }
            } else {
                let s = self.concat_src;
                if s >= self.sources.len() {
                    return rows;
                }
                self.next[s] = self.sources[s].skip_deleted(self.next[s]);
                if self.head(s).is_none() {
                    self.concat_src += 1;
                    continue;
                }
                rows += self.emit(s, None, n - rows, &mut sink);
            }
        }
        rows
    }
}

/// A merged row order recorded once (by the first column's pass) and replayed for the other
/// columns, so the k-way merge runs once per compaction instead of once per column.
///
/// Each run is one `u32`: source index in the top [`RUN_SRC_BITS`] bits, length below. Start
/// rows are not stored: a run of source `s` starts at the first live row past the previous run
/// of `s`, exactly as the cursor produced it (runs never contain deleted rows).
#[derive(Default)]
struct RecordedOrder {
    runs: Vec<u32>,
    /// Recording stopped: the order outgrew its budget (or has too many sources to encode).
    overflow: bool,
    limit: usize,
}

const RUN_SRC_BITS: u32 = 8;
const RUN_LEN_MAX: u64 = (1 << (32 - RUN_SRC_BITS)) - 1;

impl RecordedOrder {
    fn new(sources: usize, budget_bytes: usize) -> RecordedOrder {
        RecordedOrder {
            runs: Vec::new(),
            overflow: sources > 1 << RUN_SRC_BITS,
            limit: budget_bytes / 4,
        }
    }

    #[inline]
    fn record(&mut self, s: usize, mut len: u64) {
        if self.overflow {
            return;
        }
        while len > 0 {
            if self.runs.len() >= self.limit {
                self.overflow = true;
                self.runs = Vec::new();
                return;
            }
            let l = len.min(RUN_LEN_MAX);
            self.runs
                .push(((s as u32) << (32 - RUN_SRC_BITS)) | l as u32);
            len -= l;
        }
    }
}

/// Replays a [`RecordedOrder`].
struct Replay<'a> {
    sources: &'a [Source<'a>],
    runs: &'a [u32],
    pos: usize,
    /// Rows of the current run already handed out.
    done_in_run: u64,
    next: Vec<u64>,
}

impl<'a> Replay<'a> {
    fn new(sources: &'a [Source<'a>], runs: &'a [u32]) -> Replay<'a> {
        Replay {
            next: sources.iter().map(|s| s.skip_deleted(0)).collect(),
            sources,
            runs,
            pos: 0,
            done_in_run: 0,
        }
    }
}

impl RunSource for Replay<'_> {
    fn next_chunk(&mut self, n: u64, mut sink: impl FnMut(usize, u64, u64)) -> u64 {
        let mut rows = 0;
        while rows < n {
            let Some(&run) = self.runs.get(self.pos) else {
                return rows;
            };
            let s = (run >> (32 - RUN_SRC_BITS)) as usize;
            let len = (run as u64) & RUN_LEN_MAX;
            let take = (len - self.done_in_run).min(n - rows);
            let start = self.next[s];
            sink(s, start, take);
            rows += take;
            self.done_in_run += take;
            let end = start + take;
            if self.done_in_run == len {
                self.pos += 1;
                self.done_in_run = 0;
                self.next[s] = self.sources[s].skip_deleted(end);
            } else {
                self.next[s] = end;
            }
        }
        rows
    }
}

impl Index {
    /// Compacts the index by `policy` and publishes the result as one new version (see the
    /// module documentation). Returns what it did; `version: None` when there was nothing to
    /// do. Other compactions and garbage collections wait; readers and the writer do not,
    /// except for the short publish step.
    pub fn compact(&self, policy: &CompactionPolicy) -> Result<CompactionReport> {
        let dir = self.shared.dir.clone();
        policy.validate(&dir)?;
        let _guard = self.shared.compaction.lock();
        let base = {
            let w = self.shared.writer.lock();
            w.check_poisoned(&dir)?;
            w.committed.clone()
        };
        let groups = plan(&base, policy);
        let fold_now = policy.fold_classes && base.manifest.class_files.len() > 1;
        if groups.is_empty() && !fold_now {
            return Ok(CompactionReport {
                version: None,
                based_on: base.version(),
                merges: Vec::new(),
                folded_class_files: 0,
                gc: None,
                gc_error: None,
            });
        }
        let mut merged = Vec::with_capacity(groups.len());
        for g in groups {
            match self.merge_group(&base, g, policy) {
                Ok(m) => merged.push(m),
                Err(e) => {
                    self.remove_quietly(merged.iter().filter_map(|m| m.report.output.clone()));
                    return Err(e);
                }
            }
        }
        let mut w = self.shared.writer.lock();
        let mut created = Vec::new();
        let published = match w.check_poisoned(&dir) {
            Ok(()) => self.publish_compaction(&mut w, &base, &merged, policy, &mut created),
            Err(e) => Err((e, false)),
        };
        let mut report = match published {
            Ok(r) => r,
            Err((e, visible)) => {
                if visible {
                    w.poison(&e);
                } else {
                    self.remove_quietly(
                        merged
                            .iter()
                            .filter_map(|m| m.report.output.clone())
                            .chain(created),
                    );
                }
                return Err(e);
            }
        };
        if self.shared.config.auto_gc {
            match self.gc_locked(&w) {
                Ok(g) => report.gc = Some(g),
                Err(e) => report.gc_error = Some(e.to_string()),
            }
        }
        Ok(report)
    }

    fn remove_quietly(&self, names: impl Iterator<Item = String>) {
        let fs = &*self.shared.config.fs;
        for n in names {
            let _ = fs.remove_file(&self.shared.dir.join(n));
        }
        let _ = fs.sync_dir(&self.shared.dir);
    }

    /// Phase 2 for one group: writes the merged segment (published but not yet referenced).
    ///
    /// The first column's pass (ids) runs the k-way merge and records the row order (within
    /// `policy.order_budget_bytes`); every later column replays it, copying runs of rows
    /// straight out of the mapped sources, `buffer_rows` at a time.
    fn merge_group(
        &self,
        base: &VersionState,
        group: Vec<usize>,
        policy: &CompactionPolicy,
    ) -> Result<Merged> {
        let slots: Vec<&SegmentSlot> = group.iter().map(|&i| &base.segments[i]).collect();
        let readers: Vec<_> = slots.iter().map(|s| s.seg.reader()).collect();
        let has_lists = readers.iter().all(|r| r.lists().is_some());
        let mut sorted = true;
        for s in &slots {
            s.seg.verify_columns()?;
            sorted &= if has_lists {
                sorted_by_list_then_id(s.seg.reader())
            } else {
                s.seg.is_sorted()?
            };
        }
        let rows: u64 = slots.iter().map(|s| s.entry.rows).sum();
        let live: u64 = slots.iter().map(|s| s.entry.rows - s.entry.deleted).sum();
        let vectors = readers
            .first()
            .and_then(|r| r.meta().vectors)
            .map(|(t, d)| VectorSpec::new(t, d));
        let cols = SegmentColumns {
            labels: readers.iter().any(|r| r.labels().is_some()),
            lists: has_lists,
            vectors,
        };
        let mut report = MergeReport {
            sources: slots.iter().map(|s| s.entry.segment.name.clone()).collect(),
            output: None,
            rows: live,
            dropped: rows - live,
            bytes_in: slots.iter().map(|s| s.seg.file_len()).sum(),
            bytes_out: 0,
        };
        if live == 0 {
            return Ok(Merged {
                sources: group,
                slot: None,
                report,
            });
        }
        let vector_cols: Vec<Option<VectorSlice<'_>>> =
            readers.iter().map(|r| r.vector_column()).collect();
        if vectors.is_some()
            && (vector_cols.iter().any(|v| v.is_none())
                || readers
                    .iter()
                    .any(|r| r.meta().vectors != vectors.map(|v| v.pair())))
        {
            return Err(self.invalid_merge("sources with different or compressed stored vectors"));
        }
        let sources = || -> Vec<Source<'_>> {
            slots
                .iter()
                .map(|s| Source {
                    ids: s.seg.reader().ids(),
                    lists: if has_lists {
                        s.seg.reader().lists()
                    } else {
                        None
                    },
                    rows: s.entry.rows,
                    deletions: s.deletions.as_deref(),
                })
                .collect()
        };
        let replay_sources = sources();
        let mut order = RecordedOrder::new(slots.len(), policy.order_budget_bytes);
        let n = policy.buffer_rows as u64;
        let width = self.shared.model.code_bytes as usize;
        let slot = self.write_segment(live, cols, |col, out| {
            if col == Column::Ids {
                let mut cursor = MergeCursor::new(sources(), sorted);
                let cols: Vec<&[u64]> = readers.iter().map(|r| r.ids()).collect();
                let mut buf: Vec<u64> = Vec::with_capacity(n as usize);
                while {
                    buf.clear();
                    cursor.next_chunk(n, |s, a, len| {
                        order.record(s, len);
                        buf.extend_from_slice(&cols[s][a as usize..(a + len) as usize])
                    }) > 0
                } {
                    out.ids(&buf)?;
                }
                if let Some(id) = cursor.duplicate {
                    return Err(StorageError::Format(crate::format::FormatError::Corrupt {
                        path: self.shared.dir.clone(),
                        section: "ids".into(),
                        detail: format!("id {id} is live in two of the segments being merged"),
                    }));
                }
                return Ok(());
            }
            let copy = ColumnCopy {
                readers: &readers,
                vectors: &vector_cols,
                spec: vectors,
                width,
                n,
            };
            if order.overflow {
                copy.run(col, &mut MergeCursor::new(sources(), sorted), out)
            } else {
                copy.run(col, &mut Replay::new(&replay_sources, &order.runs), out)
            }
        })?;
        report.output = Some(slot.entry.segment.name.clone());
        report.bytes_out = slot.seg.file_len();
        Ok(Merged {
            sources: group,
            slot: Some(slot),
            report,
        })
    }

    fn invalid_merge(&self, detail: &str) -> StorageError {
        StorageError::invalid(
            &self.shared.dir,
            "compaction",
            format!("internal: {detail}"),
        )
    }

    /// Phase 3. Errors carry whether the new manifest may already be visible.
    fn publish_compaction(
        &self,
        w: &mut Writer,
        base: &Arc<VersionState>,
        merged: &[Merged],
        policy: &CompactionPolicy,
        created: &mut Vec<String>,
    ) -> std::result::Result<CompactionReport, (StorageError, bool)> {
        let hidden = |e: StorageError| (e, false);
        let dir = &self.shared.dir;
        let fs = &*self.shared.config.fs;
        let cur = w.committed.clone();
        let mut out_slots: Vec<Option<SegmentSlot>> = Vec::with_capacity(merged.len());
        let mut replaced: HashSet<FileId> = HashSet::new();
        for m in merged {
            let mut slot = m.slot.clone();
            let mut late = Vec::new();
            for &si in &m.sources {
                let b = &base.segments[si];
                replaced.insert(b.entry.segment.id);
                let c = cur
                    .segments
                    .iter()
                    .find(|c| c.entry.segment.id == b.entry.segment.id)
                    .ok_or_else(|| {
                        hidden(StorageError::invalid(
                            dir,
                            "compaction",
                            format!(
                                "internal: segment {} vanished during the merge",
                                b.entry.segment.name
                            ),
                        ))
                    })?;
                if c.entry.deletions.as_ref().map(|d| d.id)
                    == b.entry.deletions.as_ref().map(|d| d.id)
                {
                    continue;
                }
                // Rows deleted by commits made during the merge.
                let ids = c.seg.reader().ids();
                for r in 0..c.entry.rows {
                    if c.is_deleted(r) && !b.is_deleted(r) {
                        late.push(ids[r as usize]);
                    }
                }
            }
            if !late.is_empty()
                && let Some(s) = slot.as_mut()
            {
                let mut rows = Vec::with_capacity(late.len());
                for id in late {
                    let row = s
                        .seg
                        .find(id)
                        .map_err(|e| hidden(e.into()))?
                        .ok_or_else(|| {
                            hidden(StorageError::invalid(
                                dir,
                                "compaction",
                                format!("internal: id {id} is missing from the merged segment"),
                            ))
                        })?;
                    rows.push(row);
                }
                let (bm, fref) = self
                    .write_bitmap(s.entry.segment.id, s.entry.rows, None, &rows)
                    .map_err(hidden)?;
                created.push(fref.name.clone());
                s.entry.deleted = bm.deleted_count();
                s.entry.deletions = Some(fref);
                s.deletions = Some(Arc::new(bm));
            }
            out_slots.push(slot);
        }
        // The new segment list: each group's output takes the place of its first source.
        let mut segments = Vec::with_capacity(cur.segments.len());
        let first_source: Vec<FileId> = merged
            .iter()
            .map(|m| base.segments[m.sources[0]].entry.segment.id)
            .collect();
        for c in &cur.segments {
            let id = c.entry.segment.id;
            if let Some(k) = first_source.iter().position(|&f| f == id) {
                if let Some(s) = &out_slots[k] {
                    segments.push(s.clone());
                }
            } else if !replaced.contains(&id) {
                segments.push(c.clone());
            }
        }
        let mut class_files = cur.manifest.class_files.clone();
        let mut classes = cur.classes.clone();
        let mut folded_class_files = 0;
        if policy.fold_classes
            && cur.manifest.class_files.len() > 1
            && let Some(t) = &cur.classes
        {
            let id = FileId::generate();
            let name = data_file_name(FileKind::ClassTable, id);
            let table = ClassTable {
                file_id: id,
                dim: t.dim,
                delta_of: None,
                classes: t.classes.clone(),
            };
            publish(fs, dir, &name, |out, path| {
                table.write_to(out, path)?;
                Ok(())
            })
            .map_err(hidden)?;
            created.push(name.clone());
            folded_class_files = class_files.len();
            class_files = vec![ClassFileEntry {
                file: FileRef { id, name },
                delta: false,
            }];
            classes = Some(Arc::new(table));
        }
        sync_dir(fs, dir).map_err(hidden)?;
        let manifest = Manifest {
            file_id: FileId::generate(),
            version: w.next_version,
            created_unix_ms: now_ms(),
            next_auto_id: cur.manifest.next_auto_id,
            model: cur.manifest.model.clone(),
            segments: segments.iter().map(|s| s.entry.clone()).collect(),
            class_files,
            vectors: cur.manifest.vectors,
        };
        let log = cur.log.clone();
        publish(
            fs,
            dir,
            &super::layout::manifest_file_name(manifest.version),
            |out, path| {
                manifest.write_with_log_to(log.as_ref().map(|l| &l.entry), out, path)?;
                Ok(())
            },
        )
        .map_err(hidden)?;
        sync_dir(fs, dir).map_err(|e| (e, true))?;
        let state = VersionState {
            dir: dir.clone(),
            manifest,
            model: cur.model.clone(),
            segments,
            log,
            classes,
        };
        w.next_version += 1;
        let version = self.install(w, state);
        Ok(CompactionReport {
            version: Some(version),
            based_on: cur.version(),
            merges: merged.iter().map(|m| m.report.clone()).collect(),
            folded_class_files,
            gc: None,
            gc_error: None,
        })
    }
}

/// Whether a segment's rows are in strictly increasing (list id, id) order.
fn sorted_by_list_then_id(r: &crate::format::SegmentReader) -> bool {
    let (ids, Some(lists)) = (r.ids(), r.lists()) else {
        return false;
    };
    (1..ids.len()).all(|i| (lists[i - 1], ids[i - 1]) < (lists[i], ids[i]))
}

/// Copies one non-id column of the merged segment, in the order a [`RunSource`] gives.
struct ColumnCopy<'a, 'b> {
    readers: &'b [&'a crate::format::SegmentReader],
    vectors: &'b [Option<VectorSlice<'a>>],
    spec: Option<VectorSpec>,
    width: usize,
    n: u64,
}

impl ColumnCopy<'_, '_> {
    fn run(
        &self,
        col: Column,
        rs: &mut impl RunSource,
        out: &mut SegmentWriter<&mut std::io::BufWriter<super::fs::SeamWriter>>,
    ) -> Result<()> {
        let n = self.n;
        match col {
            Column::Ids => Ok(()),
            Column::Codes => {
                let w = self.width;
                let mut buf: Vec<u8> = Vec::with_capacity(n as usize * w);
                while {
                    buf.clear();
                    rs.next_chunk(n, |s, a, len| {
                        self.readers[s].codes_into(a as usize..(a + len) as usize, &mut buf)
                    }) > 0
                } {
                    out.codes(&buf)?;
                }
                Ok(())
            }
            Column::Labels | Column::Lists => {
                let (cols, fill): (Vec<Option<&[u32]>>, u32) = if col == Column::Labels {
                    (self.readers.iter().map(|r| r.labels()).collect(), NO_LABEL)
                } else {
                    (self.readers.iter().map(|r| r.lists()).collect(), NO_LIST)
                };
                let mut buf: Vec<u32> = Vec::with_capacity(n as usize);
                while {
                    buf.clear();
                    rs.next_chunk(n, |s, a, len| {
                        let (a, b) = (a as usize, (a + len) as usize);
                        match cols[s] {
                            Some(l) => buf.extend_from_slice(&l[a..b]),
                            None => buf.resize(buf.len() + (b - a), fill),
                        }
                    }) > 0
                } {
                    if col == Column::Labels {
                        out.labels(&buf)?;
                    } else {
                        out.lists(&buf)?;
                    }
                }
                Ok(())
            }
            Column::Vectors => {
                let Some(spec) = self.spec else {
                    return Ok(());
                };
                let dim = spec.dim as usize;
                let mut buf = VectorBuf::empty(spec.dtype);
                let mut ok = true;
                while {
                    buf.clear();
                    rs.next_chunk(n, |s, a, len| {
                        let (a, b) = (a as usize * dim, (a + len) as usize * dim);
                        ok &= self.vectors[s].is_some_and(|v| buf.extend_from(v, a, b));
                    }) > 0
                } {
                    if !ok {
                        return Err(StorageError::Format(crate::format::FormatError::Corrupt {
                            path: self.readers[0].path().to_path_buf(),
                            section: "vectors".into(),
                            detail: "stored vectors do not match the merge's layout".into(),
                        }));
                    }
                    out.vector_rows(spec, buf.as_slice())?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::DeletionBitmap;
    use rand::{Rng, SeedableRng};

    /// Drains a run source into (source, row) pairs, in chunks of `n`.
    fn drain(rs: &mut impl RunSource, n: u64) -> Vec<(usize, u64)> {
        let mut out = Vec::new();
        while rs.next_chunk(n, |s, a, len| out.extend((a..a + len).map(|r| (s, r)))) > 0 {}
        out
    }

    #[test]
    fn heap_and_linear_selection_and_replay_give_the_sorted_live_rows() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for case in 0..200 {
            let k = rng.random_range(1..7usize);
            let with_lists = rng.random_bool(0.5);
            let interleave = rng.random_bool(0.5);
            let mut ids: Vec<Vec<u64>> = Vec::new();
            let mut lists: Vec<Vec<u32>> = Vec::new();
            let mut dels: Vec<DeletionBitmap> = Vec::new();
            let mut next_id = 0u64;
            for s in 0..k {
                let rows = rng.random_range(0..40usize);
                let mut keyed: Vec<(u32, u64)> = (0..rows)
                    .map(|r| {
                        let id = if interleave {
                            (r * k + s) as u64
                        } else {
                            next_id += 1;
                            next_id
                        };
                        (
                            if with_lists {
                                rng.random_range(0..4)
                            } else {
                                0
                            },
                            id,
                        )
                    })
                    .collect();
                keyed.sort_unstable();
                let mut d = DeletionBitmap::new(FileId::ZERO, FileId::ZERO, rows as u64);
                for r in 0..rows {
                    if rng.random_bool(0.2) {
                        d.delete(r as u64);
                    }
                }
                lists.push(keyed.iter().map(|x| x.0).collect());
                ids.push(keyed.iter().map(|x| x.1).collect());
                dels.push(d);
            }
            let sources = || -> Vec<Source<'_>> {
                (0..k)
                    .map(|s| Source {
                        ids: &ids[s],
                        lists: with_lists.then_some(&lists[s][..]),
                        rows: ids[s].len() as u64,
                        deletions: Some(&dels[s]),
                    })
                    .collect()
            };
            let mut want: Vec<(u32, u64, usize, u64)> = Vec::new();
            for s in 0..k {
                for r in 0..ids[s].len() {
                    if !dels[s].is_deleted(r as u64) {
                        let l = if with_lists { lists[s][r] } else { 0 };
                        want.push((l, ids[s][r], s, r as u64));
                    }
                }
            }
            want.sort_unstable();
            let want: Vec<(usize, u64)> = want.iter().map(|w| (w.2, w.3)).collect();
            let n = rng.random_range(1..10u64);
            let linear = drain(&mut MergeCursor::with_selection(sources(), true, 16), n);
            let heap = drain(&mut MergeCursor::with_selection(sources(), true, 0), n);
            assert_eq!(linear, want, "case {case}: linear selection");
            assert_eq!(heap, want, "case {case}: heap selection");
            // Record the order with one chunk size, replay it with another.
            let mut order = RecordedOrder::new(k, 1 << 20);
            let mut c = MergeCursor::new(sources(), true);
            while c.next_chunk(n, |s, _, len| order.record(s, len)) > 0 {}
            assert!(!order.overflow);
            let srcs = sources();
            let replayed = drain(&mut Replay::new(&srcs, &order.runs), n + 3);
            assert_eq!(replayed, want, "case {case}: replay");
            assert!(c.duplicate.is_none());
        }
    }

    #[test]
    fn a_key_live_in_two_sources_is_reported() {
        fn src(ids: &[u64]) -> Source<'_> {
            Source {
                ids,
                lists: None,
                rows: ids.len() as u64,
                deletions: None,
            }
        }
        let (a, b) = (vec![1u64, 5, 9], vec![2u64, 5]);
        for linear_max in [0, 16] {
            let mut c = MergeCursor::with_selection(vec![src(&a), src(&b)], true, linear_max);
            drain(&mut c, 4);
            assert_eq!(c.duplicate, Some(5));
        }
    }

    #[test]
    fn the_recorded_order_stops_at_its_budget() {
        let mut o = RecordedOrder::new(2, 12);
        for _ in 0..3 {
            o.record(1, 2);
        }
        assert!(!o.overflow);
        o.record(0, 1);
        assert!(o.overflow && o.runs.is_empty());
        assert!(
            RecordedOrder::new(300, 1 << 20).overflow,
            "too many sources to encode"
        );
    }
}
