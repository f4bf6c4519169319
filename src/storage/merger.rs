//! The k-way merge of segments (FORMAT.md §11.4): the live rows of several segments streamed
//! into one new segment, in id order — or (list id, id) order when the segments are grouped by
//! list — when the sources are sorted (the engine always writes them sorted), concatenated
//! otherwise. It knows nothing of which segments to merge (`merge_policy`) or of publishing
//! the result (`index/compact.rs`): tantivy's `merger` beside its `merge_policy`.
//!
//! Each column is a separate streaming pass (the merge on a scoped helper thread, overlapping
//! the writes: [`stream_column`]), so memory is O(`buffer_rows` × row width + group size)
//! whatever the index size, and I/O is O(rows): every source column is read once to check its
//! checksum (a damaged column must not be rewritten under a fresh checksum), once to copy, and
//! the id column once. The first column's pass (ids) runs the k-way merge and records the row
//! order (within a budget, [`RecordedOrder`]); every later column replays it, copying runs of
//! rows straight out of the mapped sources.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::format::{
    Attributes, AttributesBuilder, Schema, SegmentReader, VectorBuf, VectorSlice, VectorSpec,
    append_log::{NO_LABEL, NO_LIST},
};

use crate::model::Cancel;

use super::error::{Result, StorageError};
use super::loaded_version::SegmentSlot;
use super::segment_columns::{Column, ColumnWriter, SegmentColumns};

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

    /// The merge key of row `r` (see [`MergeKey`]).
    #[inline(always)]
    fn key<K: MergeKey>(&self, r: usize) -> K {
        K::of(self, r)
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

/// The order of a merge: the id, or (list id, id) when the segments are grouped by list. Ids
/// alone compare as one `u64` (the common case, and the cheapest comparison in the per-row
/// path of an interleaved merge).
trait MergeKey: Copy + Ord {
    /// The head of an exhausted source. No row has this key: ids are at most 2^64 − 2
    /// (FORMAT.md §11.6).
    const EXHAUSTED: Self;
    fn of(src: &Source<'_>, r: usize) -> Self;
}

impl MergeKey for u64 {
    const EXHAUSTED: u64 = u64::MAX;
    #[inline(always)]
    fn of(src: &Source<'_>, r: usize) -> u64 {
        src.ids[r]
    }
}

impl MergeKey for u128 {
    const EXHAUSTED: u128 = u128::MAX;
    #[inline(always)]
    fn of(src: &Source<'_>, r: usize) -> u128 {
        let list = src.lists.map_or(0, |l| l[r]);
        (list as u128) << 64 | src.ids[r] as u128
    }
}

/// Streams the live rows of several segments in merged order, as runs of consecutive rows of
/// one source handed to a sink.
///
/// With sorted sources it is a k-way merge by key that *gallops*: the source with the smallest
/// head emits rows until its keys reach the runner-up head, then the next source is chosen —
/// one selection step per run, and per row only when the sources interleave row by row. The
/// selection is a *loser tree* (a tournament tree whose inner nodes keep the loser of each
/// match; Knuth, TAOCP vol. 3 §5.4.1): after the winner's head moves, one pass up its leaf's
/// path of ⌈log₂ k⌉ nodes restores the tree, and the runner-up — the bound of the gallop — is
/// the smallest loser on that same path. That is ⌈log₂ k⌉ comparisons per step where a scan of
/// the heads costs k, and no heap bookkeeping. Equal keys (only possible in a damaged input:
/// an id live in two sources) keep the earlier winner.
/// Unsorted sources are concatenated.
struct MergeCursor<'a, K: MergeKey> {
    sources: Vec<Source<'a>>,
    next: Vec<u64>,
    /// `tree[i]` for inner node `i` in `1..leaves` is the (head key, source) of the loser of
    /// the match at `i`; `tree[0]` is the overall winner. Leaf `s` (source `s`) is node
    /// `leaves + s`; exhausted sources and the padding up to `leaves` have the key
    /// [`MergeKey::EXHAUSTED`]. Keys live in the nodes, so a replay or a runner-up search
    /// reads its path's nodes without chasing a source index per level.
    tree: Vec<(K, u32)>,
    leaves: usize,
    sorted: bool,
    concat_src: usize,
    /// A key found live in two sources (damaged input): the merge still advances, and the
    /// caller refuses the result.
    duplicate: Option<u64>,
}

impl<'a, K: MergeKey> MergeCursor<'a, K> {
    fn new(sources: Vec<Source<'a>>, sorted: bool) -> Self {
        let leaves = sources.len().max(1).next_power_of_two();
        let mut m = MergeCursor {
            next: vec![0; sources.len()],
            tree: vec![(K::EXHAUSTED, 0); leaves],
            leaves,
            sources,
            sorted,
            concat_src: 0,
            duplicate: None,
        };
        if sorted {
            let mut leaf = vec![(K::EXHAUSTED, 0u32); leaves];
            for (s, l) in leaf.iter_mut().enumerate() {
                l.1 = s as u32;
                if s < m.sources.len() {
                    m.next[s] = m.sources[s].skip_deleted(0);
                    l.0 = m.head(s).unwrap_or(K::EXHAUSTED);
                }
            }
            m.build(leaf);
        }
        m
    }

    /// Plays every match bottom-up. A match is won by the smaller key; equal keys (an id live
    /// in two sources, a damaged input) keep the earlier winner, so the merge stays
    /// deterministic and the caller refuses the result.
    fn build(&mut self, leaf: Vec<(K, u32)>) {
        let p = self.leaves;
        let mut winners = vec![(K::EXHAUSTED, 0u32); p];
        winners.extend(leaf);
        for i in (1..p).rev() {
            let (a, b) = (winners[2 * i], winners[2 * i + 1]);
            let (w, l) = if a.0 < b.0 { (a, b) } else { (b, a) };
            winners[i] = w;
            self.tree[i] = l;
        }
        // With one leaf, `winners[1]` is that leaf; otherwise it is the root's winner.
        self.tree[0] = winners[1];
    }

    /// Replays the matches on source `s`'s path after its head changed to `key`.
    #[inline(always)]
    fn replay(&mut self, s: usize, key: K) {
        let mut winner = (key, s as u32);
        let mut node = (s + self.leaves) >> 1;
        while node >= 1 {
            let l = self.tree[node];
            if l.0 < winner.0 {
                self.tree[node] = winner;
                winner = l;
            }
            node >>= 1;
        }
        self.tree[0] = winner;
    }

    /// The smallest head other than the winner `w`'s: the smallest loser on its path.
    #[inline(always)]
    fn runner_up(&self, w: usize) -> K {
        let mut node = (w + self.leaves) >> 1;
        let mut best = K::EXHAUSTED;
        while node >= 1 {
            best = best.min(self.tree[node].0);
            node >>= 1;
        }
        best
    }

    /// The key at source `s`'s cursor (a live row), if any.
    fn head(&self, s: usize) -> Option<K> {
        let src = &self.sources[s];
        (self.next[s] < src.rows).then(|| src.key(self.next[s] as usize))
    }

    /// Emits live rows of source `s` from its cursor while their keys are below `bound`, at
    /// most `room` of them; returns how many.
    #[inline(always)]
    fn emit(
        &mut self,
        s: usize,
        bound: Option<K>,
        room: u64,
        sink: &mut impl FnMut(usize, u64, u64),
    ) -> u64 {
        let src = &self.sources[s];
        let first = self.next[s];
        if let Some(b) = bound
            && first < src.rows
            && src.key::<K>(first as usize) >= b
        {
            self.duplicate = Some(src.ids[first as usize]);
        }
        let (mut start, mut r, mut emitted) = (first, first, 0);
        while r < src.rows
            && emitted + (r - start) < room
            && (r == first || bound.is_none_or(|b| src.key::<K>(r as usize) < b))
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

impl<K: MergeKey> RunSource for MergeCursor<'_, K> {
    fn next_chunk(&mut self, n: u64, mut sink: impl FnMut(usize, u64, u64)) -> u64 {
        let mut rows = 0;
        if self.sorted {
            while rows < n {
                let (best, w) = self.tree[0];
                let w = w as usize;
                if best == K::EXHAUSTED {
                    return rows;
                }
                let second = self.runner_up(w);
                // Sources interleaving row by row: the winner's row is the only one below the
                // bound, so emit it without the run loop.
                let src = &self.sources[w];
                let r = self.next[w];
                if best < second && (r + 1 >= src.rows || src.key::<K>(r as usize + 1) >= second) {
                    sink(w, r, 1);
                    rows += 1;
                    let nr = src.skip_deleted(r + 1);
                    self.next[w] = nr;
                    let head = if nr < src.rows {
                        src.key(nr as usize)
                    } else {
                        K::EXHAUSTED
                    };
                    self.replay(w, head);
                } else {
                    let bound = (second != K::EXHAUSTED).then_some(second);
                    rows += self.emit(w, bound, n - rows, &mut sink);
                    let head = self.head(w).unwrap_or(K::EXHAUSTED);
                    self.replay(w, head);
                }
            }
            return rows;
        }
        while rows < n {
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
        rows
    }
}

/// A merge keyed by id, or by (list id, id) when the sources carry list ids.
enum Cursor<'a> {
    Id(MergeCursor<'a, u64>),
    ListId(MergeCursor<'a, u128>),
}

impl<'a> Cursor<'a> {
    fn new(sources: Vec<Source<'a>>, sorted: bool) -> Self {
        if sources.iter().any(|s| s.lists.is_some()) {
            Cursor::ListId(MergeCursor::new(sources, sorted))
        } else {
            Cursor::Id(MergeCursor::new(sources, sorted))
        }
    }

    /// A key found live in two sources, if any.
    fn duplicate(&self) -> Option<u64> {
        match self {
            Cursor::Id(c) => c.duplicate,
            Cursor::ListId(c) => c.duplicate,
        }
    }
}

impl RunSource for Cursor<'_> {
    fn next_chunk(&mut self, n: u64, sink: impl FnMut(usize, u64, u64)) -> u64 {
        match self {
            Cursor::Id(c) => c.next_chunk(n, sink),
            Cursor::ListId(c) => c.next_chunk(n, sink),
        }
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

/// The live rows of a group of segments, checked and ready to be streamed into one new
/// segment ([`Merger::filler`]).
pub(crate) struct Merger<'a> {
    dir: PathBuf,
    slots: Vec<&'a SegmentSlot>,
    readers: Vec<&'a SegmentReader>,
    has_lists: bool,
    sorted: bool,
    columns: SegmentColumns,
    /// The merged segment's attribute schema, and every source's columns as its (a source
    /// written before a column was added takes the default).
    schema: Schema,
    attributes: Vec<Cow<'a, Attributes>>,
}

impl<'a> Merger<'a> {
    /// Checks every column of the sources (not checked at open), and whether their rows are
    /// sorted. `dir` names the index in errors; `schema` is the index's attribute schema, the
    /// merged segment's columns.
    pub fn new(dir: &Path, slots: &[&'a SegmentSlot], schema: &Schema) -> Result<Merger<'a>> {
        let readers: Vec<&SegmentReader> = slots.iter().map(|s| s.seg.reader()).collect();
        let has_lists = readers.iter().all(|r| r.lists().is_some());
        let mut sorted = true;
        for s in slots {
            s.seg.verify_columns()?;
            sorted &= if has_lists {
                sorted_by_list_then_id(s.seg.reader())
            } else {
                s.seg.is_sorted()?
            };
        }
        let vectors = readers
            .first()
            .and_then(|r| r.meta().vectors)
            .map(|(t, d)| VectorSpec::new(t, d));
        let columns = SegmentColumns {
            labels: readers.iter().any(|r| r.labels().is_some()),
            lists: has_lists,
            vectors,
            attributes: !schema.is_empty(),
        };
        let mut attributes = Vec::new();
        if !schema.is_empty() {
            for r in &readers {
                // Checked (checksum, structure, codes) before anything is rewritten.
                let a = super::attributes::conformed(schema, r.attributes()?, r.rows()).map_err(
                    |e| {
                        StorageError::Format(crate::format::FormatError::Corrupt {
                            path: r.path().to_path_buf(),
                            section: "attributes".into(),
                            detail: e.to_string(),
                        })
                    },
                )?;
                attributes.push(a);
            }
        }
        Ok(Merger {
            dir: dir.to_path_buf(),
            slots: slots.to_vec(),
            readers,
            has_lists,
            sorted,
            columns,
            schema: schema.clone(),
            attributes,
        })
    }

    /// Rows of the sources, deleted ones included.
    pub fn rows(&self) -> u64 {
        self.slots.iter().map(|s| s.entry.rows).sum()
    }

    /// Rows of the merged segment.
    pub fn live_rows(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| s.entry.rows - s.entry.deleted)
            .sum()
    }

    /// The optional columns of the merged segment.
    pub fn columns(&self) -> SegmentColumns {
        self.columns
    }

    fn sources(&self) -> Vec<Source<'a>> {
        self.slots
            .iter()
            .map(|s| Source {
                ids: s.seg.reader().ids(),
                lists: if self.has_lists {
                    s.seg.reader().lists()
                } else {
                    None
                },
                rows: s.entry.rows,
                deletions: s.deletions.as_deref(),
            })
            .collect()
    }

    /// What streams the merged columns, `buffer_rows` rows at a time, into a segment writer
    /// (see [`ColumnFill::column`]); the merged order is recorded within
    /// `order_budget_bytes`. `code_width` is the sources' code bytes per row. `cancel` is
    /// checked per buffer written: a cancelled merge stops with `ModelError::Cancelled` within
    /// one buffer. `progress(column, rows_done)` hears of every buffer written.
    pub fn filler(
        &self,
        buffer_rows: usize,
        order_budget_bytes: usize,
        code_width: usize,
        cancel: &Cancel,
        progress: ColumnProgress,
    ) -> Result<ColumnFill<'_, 'a>> {
        let vectors: Vec<Option<VectorSlice<'a>>> =
            self.readers.iter().map(|r| r.vector_column()).collect();
        let spec = self.columns.vectors;
        if spec.is_some()
            && (vectors.iter().any(|v| v.is_none())
                || self
                    .readers
                    .iter()
                    .any(|r| r.meta().vectors != spec.map(|v| v.pair())))
        {
            return Err(StorageError::invalid(
                &self.dir,
                "compaction",
                "internal: sources with different or compressed stored vectors",
            ));
        }
        Ok(ColumnFill {
            merger: self,
            replay_sources: self.sources(),
            order: RecordedOrder::new(self.slots.len(), order_budget_bytes),
            vectors,
            n: buffer_rows as u64,
            width: code_width,
            cancel: cancel.clone(),
            progress,
        })
    }
}

/// Hears how many rows of a column a merge has written so far (the name: a
/// [`Column::name`], or `"codes (MIH tables)"` for the pass that builds the MIH tables).
pub(crate) type ColumnProgress = Arc<dyn Fn(&'static str, u64) + Send + Sync>;

/// Streams the columns of a merge, in file order: the id column runs the k-way merge and
/// records its order, the others replay it (or merge again when the order outgrew its
/// budget).
pub(crate) struct ColumnFill<'m, 'a> {
    merger: &'m Merger<'a>,
    replay_sources: Vec<Source<'a>>,
    order: RecordedOrder,
    vectors: Vec<Option<VectorSlice<'a>>>,
    n: u64,
    width: usize,
    cancel: Cancel,
    progress: ColumnProgress,
}

impl ColumnFill<'_, '_> {
    /// Writes column `col` of the merged segment to `out`.
    pub fn column(&mut self, col: Column, out: &mut ColumnWriter<'_>) -> Result<()> {
        let m = self.merger;
        let n = self.n;
        if col == Column::Ids {
            let mut cursor = Cursor::new(m.sources(), m.sorted);
            let cols: Vec<&[u64]> = m.readers.iter().map(|r| r.ids()).collect();
            let order = &mut self.order;
            let progress = &self.progress;
            stream_column(
                &mut cursor,
                n,
                n as usize,
                &self.cancel,
                &mut |rows| progress(col.name(), rows),
                |buf: &mut Vec<u64>, s, a, len| {
                    order.record(s, len);
                    if len == 1 {
                        buf.push(cols[s][a as usize]);
                    } else {
                        buf.extend_from_slice(&cols[s][a as usize..(a + len) as usize])
                    }
                },
                |buf| Ok(out.ids(buf)?),
            )?;
            if let Some(id) = cursor.duplicate() {
                return Err(StorageError::Format(crate::format::FormatError::Corrupt {
                    path: m.dir.clone(),
                    section: "ids".into(),
                    detail: format!("id {id} is live in two of the segments being merged"),
                }));
            }
            return Ok(());
        }
        if col == Column::Attributes {
            // The columns are built in memory in the merged order, re-coding dictionaries,
            // then written as one section (FORMAT.md §3.7).
            let mut b = AttributesBuilder::new(&m.schema);
            let progress = |rows| (self.progress)(col.name(), rows);
            if self.order.overflow {
                let mut rs = Cursor::new(m.sources(), m.sorted);
                gather_attributes(&mut rs, &m.attributes, &mut b, n, &self.cancel, &progress)?;
            } else {
                let mut rs = Replay::new(&self.replay_sources, &self.order.runs);
                gather_attributes(&mut rs, &m.attributes, &mut b, n, &self.cancel, &progress)?;
            }
            return Ok(out.attributes(&b.finish())?);
        }
        let copy = ColumnCopy {
            readers: &m.readers,
            vectors: &self.vectors,
            spec: m.columns.vectors,
            width: self.width,
            n,
            cancel: &self.cancel,
            progress: &|rows| (self.progress)(col.name(), rows),
        };
        if self.order.overflow {
            copy.run(col, &mut Cursor::new(m.sources(), m.sorted), out)
        } else {
            copy.run(
                col,
                &mut Replay::new(&self.replay_sources, &self.order.runs),
                out,
            )
        }
    }
}

impl ColumnFill<'_, '_> {
    /// Streams the merged code column once more into `sink` (row-major, in row order): the
    /// passes that build the merged segment's multi-index hashing tables.
    pub fn codes_again(&mut self, sink: &mut dyn FnMut(&[u8])) -> Result<()> {
        let m = self.merger;
        let progress = self.progress.clone();
        let copy = ColumnCopy {
            readers: &m.readers,
            vectors: &self.vectors,
            spec: m.columns.vectors,
            width: self.width,
            n: self.n,
            cancel: &self.cancel,
            progress: &|rows| progress("codes (MIH tables)", rows),
        };
        let write = |buf: &[u8]| {
            sink(buf);
            Ok(())
        };
        if self.order.overflow {
            copy.codes(&mut Cursor::new(m.sources(), m.sorted), write)
        } else {
            copy.codes(
                &mut Replay::new(&self.replay_sources, &self.order.runs),
                write,
            )
        }
    }
}

/// Whether a segment's rows are in strictly increasing (list id, id) order.
fn sorted_by_list_then_id(r: &SegmentReader) -> bool {
    let (ids, Some(lists)) = (r.ids(), r.lists()) else {
        return false;
    };
    (1..ids.len()).all(|i| (lists[i - 1], ids[i - 1]) < (lists[i], ids[i]))
}

/// Appends the merged rows' attributes, in the order `rs` gives, to `b`; `cancel` is checked
/// and `progress(rows)` told after every `n` rows.
fn gather_attributes<'x>(
    rs: &mut impl RunSource,
    attrs: &'x [Cow<'_, Attributes>],
    b: &mut AttributesBuilder<'x>,
    n: u64,
    cancel: &Cancel,
    progress: &dyn Fn(u64),
) -> Result<()> {
    let mut written = 0;
    loop {
        let rows = rs.next_chunk(n, |s, a, len| {
            b.push(&attrs[s], a as usize..(a + len) as usize)
        });
        if rows == 0 {
            return Ok(());
        }
        cancel.check()?;
        written += rows;
        progress(written);
    }
}

/// Copies one non-id column of the merged segment, in the order a [`RunSource`] gives.
struct ColumnCopy<'a, 'b> {
    readers: &'b [&'a SegmentReader],
    vectors: &'b [Option<VectorSlice<'a>>],
    spec: Option<VectorSpec>,
    width: usize,
    n: u64,
    cancel: &'b Cancel,
    /// Hears the rows written so far.
    progress: &'b (dyn Fn(u64) + Sync),
}

impl ColumnCopy<'_, '_> {
    /// Streams the merged code column to `write`, row-major.
    fn codes(
        &self,
        rs: &mut (impl RunSource + Send),
        write: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let (n, w) = (self.n, self.width);
        // Row-major columns are sliced in place; fast-scan columns (format 1.2, 4-bit PQ) are
        // unpacked row by row for the writer to repack.
        let cols: Vec<Option<&[u8]>> = self
            .readers
            .iter()
            .map(|r| r.fastscan_codes().is_none().then(|| r.stored_codes()))
            .collect();
        let readers = self.readers;
        stream_column(
            rs,
            n,
            n as usize * w,
            self.cancel,
            &mut |rows| (self.progress)(rows),
            |buf: &mut Vec<u8>, s, a, len| match cols[s] {
                Some(c) => {
                    let (a, b) = (a as usize * w, (a + len) as usize * w);
                    copy_code_rows(buf, &c[a..b], w)
                }
                None => readers[s].codes_into(a as usize..(a + len) as usize, buf),
            },
            write,
        )
    }

    fn run(
        &self,
        col: Column,
        rs: &mut (impl RunSource + Send),
        out: &mut ColumnWriter<'_>,
    ) -> Result<()> {
        let n = self.n;
        match col {
            Column::Ids | Column::Attributes => Ok(()),
            Column::Codes => self.codes(rs, |buf| Ok(out.codes(buf)?)),
            Column::Labels | Column::Lists => {
                let (cols, fill): (Vec<Option<&[u32]>>, u32) = if col == Column::Labels {
                    (self.readers.iter().map(|r| r.labels()).collect(), NO_LABEL)
                } else {
                    (self.readers.iter().map(|r| r.lists()).collect(), NO_LIST)
                };
                stream_column(
                    rs,
                    n,
                    n as usize,
                    self.cancel,
                    &mut |rows| (self.progress)(rows),
                    |buf: &mut Vec<u32>, s, a, len| {
                        let (a, b) = (a as usize, (a + len) as usize);
                        match cols[s] {
                            Some(l) => buf.extend_from_slice(&l[a..b]),
                            None => buf.resize(buf.len() + (b - a), fill),
                        }
                    },
                    |buf| {
                        if col == Column::Labels {
                            out.labels(buf)?
                        } else {
                            out.lists(buf)?
                        }
                        Ok(())
                    },
                )
            }
            Column::Vectors => {
                let Some(spec) = self.spec else {
                    return Ok(());
                };
                let dim = spec.dim as usize;
                let mut buf = VectorBuf::empty(spec.dtype);
                let mut ok = true;
                let mut written = 0;
                let mut rows;
                while {
                    buf.clear();
                    rows = rs.next_chunk(n, |s, a, len| {
                        let (a, b) = (a as usize * dim, (a + len) as usize * dim);
                        ok &= self.vectors[s].is_some_and(|v| buf.extend_from(v, a, b));
                    });
                    rows > 0
                } {
                    self.cancel.check()?;
                    if !ok {
                        return Err(StorageError::Format(crate::format::FormatError::Corrupt {
                            path: self.readers[0].path().to_path_buf(),
                            section: "vectors".into(),
                            detail: "stored vectors do not match the merge's layout".into(),
                        }));
                    }
                    out.vector_rows(spec, buf.as_slice())?;
                    written += rows;
                    (self.progress)(written);
                }
                Ok(())
            }
        }
    }
}

/// Streams one column of a merge: a scoped helper thread walks the run source and fills
/// chunk buffers of up to `n` rows with `fill`, while this thread hands each full chunk to
/// `write` — so the merge's CPU work overlaps the write (the kernel's copy into the page cache)
/// instead of adding to it. Two buffers circulate, so memory stays O(`buffer_rows` × width).
/// An error from `write` (or `cancel`, checked before each chunk is written) drops this side's
/// channel ends, which stops the helper, and is returned. `progress(rows_written)` follows
/// each chunk written.
fn stream_column<T: Send, R: RunSource + Send>(
    rs: &mut R,
    n: u64,
    capacity: usize,
    cancel: &Cancel,
    progress: &mut dyn FnMut(u64),
    mut fill: impl FnMut(&mut Vec<T>, usize, u64, u64) + Send,
    mut write: impl FnMut(&[T]) -> Result<()>,
) -> Result<()> {
    let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<(Vec<T>, u64)>(1);
    let (free_tx, free_rx) = std::sync::mpsc::sync_channel::<Vec<T>>(2);
    for _ in 0..2 {
        // Cannot fail: the receiver is alive and the channel has room for both.
        let _ = free_tx.send(Vec::with_capacity(capacity));
    }
    std::thread::scope(|scope| {
        scope.spawn(move || {
            while let Ok(mut buf) = free_rx.recv() {
                buf.clear();
                let rows = rs.next_chunk(n, |s, a, len| fill(&mut buf, s, a, len));
                if rows == 0 || full_tx.send((buf, rows)).is_err() {
                    return;
                }
            }
        });
        // Owns the consumer's channel ends; they drop (releasing the helper) when this
        // closure returns, before the scope joins the helper.
        let mut consume = move || -> Result<()> {
            let mut written = 0;
            for (buf, rows) in full_rx.iter() {
                cancel.check()?;
                write(&buf)?;
                written += rows;
                progress(written);
                let _ = free_tx.send(buf);
            }
            Ok(())
        };
        consume()
    })
}

/// Appends whole codes to `buf`. A single 8- or 16-byte code (64/128-bit codes, PQ 8×8 and
/// 16×8: the common widths) is copied as a fixed-size array, so the per-row case of an
/// interleaved merge costs a move instead of a `memcpy` call.
#[inline(always)]
fn copy_code_rows(buf: &mut Vec<u8>, rows: &[u8], width: usize) {
    match (rows.len(), width) {
        (8, 8) => {
            if let Ok(c) = <[u8; 8]>::try_from(rows) {
                buf.extend_from_slice(&c);
            }
        }
        (16, 16) => {
            if let Ok(c) = <[u8; 16]>::try_from(rows) {
                buf.extend_from_slice(&c);
            }
        }
        _ => buf.extend_from_slice(rows),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{DeletionBitmap, FileId};
    use rand::{Rng, SeedableRng};

    /// Drains a run source into (source, row) pairs, in chunks of `n`.
    fn drain(rs: &mut impl RunSource, n: u64) -> Vec<(usize, u64)> {
        let mut out = Vec::new();
        while rs.next_chunk(n, |s, a, len| out.extend((a..a + len).map(|r| (s, r)))) > 0 {}
        out
    }

    #[test]
    fn the_merge_and_its_replay_give_the_sorted_live_rows() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for case in 0..200 {
            // 1 to 19 sources: one leaf, powers of two and padded trees.
            let k = rng.random_range(1..20usize);
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
            let merged = drain(&mut Cursor::new(sources(), true), n);
            assert_eq!(merged, want, "case {case}: loser-tree merge");
            // Record the order with one chunk size, replay it with another.
            let mut order = RecordedOrder::new(k, 1 << 20);
            let mut c = Cursor::new(sources(), true);
            while c.next_chunk(n, |s, _, len| order.record(s, len)) > 0 {}
            assert!(!order.overflow);
            let srcs = sources();
            let replayed = drain(&mut Replay::new(&srcs, &order.runs), n + 3);
            assert_eq!(replayed, want, "case {case}: replay");
            assert!(c.duplicate().is_none());
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
        let (a, b, c) = (vec![1u64, 5, 9], vec![2u64, 5], vec![3u64, 4, 8]);
        for sources in [vec![src(&a), src(&b)], vec![src(&c), src(&b), src(&a)]] {
            let total: u64 = sources.iter().map(|s| s.rows).sum();
            let mut m = Cursor::new(sources, true);
            let rows = drain(&mut m, 4);
            assert_eq!(m.duplicate(), Some(5));
            assert_eq!(rows.len() as u64, total, "the merge still advances past it");
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
