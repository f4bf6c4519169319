//! Compaction (FORMAT.md §11.4): merge small segments into larger ones (size-tiered), drop
//! deleted rows, fold class-table deltas into a new base table — published as one commit.
//!
//! It runs in three phases so that neither readers nor the writer wait for the merge itself:
//!
//! 1. *Plan* (writer mutex held for an `Arc` clone): pin the committed version `B` and choose
//!    the groups of segments to merge.
//! 2. *Merge* (no lock): stream each group into a new segment, skipping rows deleted in `B`
//!    (`storage::merger`: a k-way merge by id, or by (list id, id), in bounded memory).
//! 3. *Publish* (writer mutex held): rows deleted in the committed version `C` but not in `B`
//!    (commits that happened during the merge) are found by id in the merged segment and
//!    written as its deletion bitmap; deltas committed meanwhile are folded too; the manifest
//!    C+1 replaces the sources by the merged segments. Deletes staged but not committed are
//!    kept by id and land on whichever segment holds the row at the next commit.
//!
//! An error before the manifest is published leaves the index as it was (the merged files
//! are removed) and does not poison the writer; an error after it (the directory fsync) does.

use std::collections::HashSet;
use std::sync::Arc;

use serde::Serialize;

use crate::format::{ClassFileEntry, ClassTable, FileId, FileKind, FileRef, Manifest};
use crate::model::Cancel;

use super::gc::GcReport;
use super::handle::{Index, now_ms};
use super::writer_state::Writer;
use crate::storage::config::CompactionPolicy;
use crate::storage::error::{Result, StorageError};
use crate::storage::layout::{data_file_name, manifest_file_name};
use crate::storage::loaded_version::{SegmentSlot, VersionState};
use crate::storage::merge_policy::{MergeReason, PlannedMerge, plan};
use crate::storage::merger::{ColumnProgress, Merger};
use crate::storage::publish::{publish, sync_dir};
use crate::storage::segment_columns::Fill;

/// One merge of a compaction.
#[derive(Debug, Clone, Serialize)]
pub struct MergeReport {
    /// Why the policy chose these segments: `tier` (similar sizes), `deletes` (one segment
    /// whose deleted share reached `max_deleted_fraction`), `full`.
    pub reason: MergeReason,
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
    /// One report per merge it ran.
    pub merges: Vec<MergeReport>,
    /// Class files folded into a new base table (0: none).
    pub folded_class_files: usize,
    /// Deleted rows still stored after this compaction (in segments below the policy's
    /// `max_deleted_fraction`, and in the active log).
    pub deleted_rows_kept: u64,
    /// Garbage collection after the compaction (when `config.auto_gc`).
    pub gc: Option<GcReport>,
    /// A garbage-collection failure (the compaction itself succeeded); serialised as its
    /// message.
    #[serde(serialize_with = "error_message")]
    pub gc_error: Option<Arc<StorageError>>,
}

/// Serialises an optional error as its message (what `codedb compact --json` prints).
fn error_message<S: serde::Serializer>(
    e: &Option<Arc<StorageError>>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match e {
        Some(e) => s.collect_str(e),
        None => s.serialize_none(),
    }
}

/// What [`Index::compact_sealed`] did: the active log sealed into a segment (when it held
/// rows), then the compaction. Serialised flat: the compaction's fields with
/// `sealed_log_rows` and `sealed_version` beside them (`codedb compact --json`).
#[derive(Debug, Clone, Serialize)]
pub struct SealedCompaction {
    /// The compaction that ran after the seal.
    #[serde(flatten)]
    pub compaction: CompactionReport,
    /// Rows the active log held and the seal moved into a segment (0: no seal).
    pub sealed_log_rows: u64,
    /// The version the seal published (`None`: the log held no rows).
    pub sealed_version: Option<u64>,
}

/// How far a compaction is: `done` of the `total` live rows of merge `merge` (1-based, of
/// `merges`) written to its `column` ("ids", "codes", "labels", "lists", "vectors", or
/// "codes (MIH tables)": the pass that builds the multi-index hashing tables). Each column of
/// a merge counts from 0 to `total`.
#[derive(Debug, Clone)]
pub struct CompactProgress {
    /// Which merge, from 1.
    pub merge: usize,
    /// How many merges this compaction runs.
    pub merges: usize,
    /// The column being written.
    pub column: &'static str,
    /// Rows of it written so far.
    pub done: u64,
    /// The merge's live rows.
    pub total: u64,
}

impl CompactProgress {
    /// The step's name as front ends show it: `compact codes`, or `compact 2/3 codes` when the
    /// compaction runs several merges.
    pub fn step(&self) -> String {
        if self.merges > 1 {
            format!("compact {}/{} {}", self.merge, self.merges, self.column)
        } else {
            format!("compact {}", self.column)
        }
    }
}

/// What hears a compaction's progress (see [`Index::compact_cancellable`]).
pub type CompactProgressFn = Arc<dyn Fn(&CompactProgress) + Send + Sync>;

/// The output of phase 2 for one group.
struct Merged {
    /// Positions of the sources in the base version.
    sources: Vec<usize>,
    slot: Option<SegmentSlot>,
    report: MergeReport,
}

impl Index {
    /// The operator's compaction (`codedb compact`, Python's `Index.compact`): seals the rows
    /// of the active log into a segment first (one commit, when the log holds rows) so they
    /// join the merge, then compacts by `policy` (one commit), and collects garbage even when
    /// no merge ran, so the sealed log file goes. `policy` is checked before anything is
    /// written; a garbage-collection failure after the commits is reported in
    /// `compaction.gc_error`, not raised (the compaction stands).
    pub fn compact_sealed(&self, policy: &CompactionPolicy) -> Result<SealedCompaction> {
        self.compact_sealed_cancellable(policy, &Cancel::new(), None)
    }

    /// [`Index::compact_sealed`] that stops soon after `cancel` is cancelled, with
    /// [`ModelError::Cancelled`](crate::model::ModelError::Cancelled): checked before the seal
    /// and through the merge ([`Index::compact_cancellable`]). A cancel after the seal leaves the
    /// sealed version in place — the same rows, only moved from the log into a segment — and
    /// publishes no merge. `progress` hears the merge as [`Index::compact_cancellable`] says.
    pub fn compact_sealed_cancellable(
        &self,
        policy: &CompactionPolicy,
        cancel: &Cancel,
        progress: Option<CompactProgressFn>,
    ) -> Result<SealedCompaction> {
        policy.validate(&self.shared.dir)?;
        self.check_writable()?;
        cancel.check()?;
        let log_rows = self.snapshot().active_log().map_or(0, |l| l.rows);
        let sealed = if log_rows > 0 {
            Some(self.commit_sealed()?)
        } else {
            None
        };
        let mut r = self.compact_cancellable(policy, cancel, progress)?;
        if sealed.is_some() && r.gc.is_none() && r.gc_error.is_none() {
            // No merge ran (so no GC after it): remove the sealed log file now if no retained
            // version still names it.
            match self.gc() {
                Ok(g) => r.gc = Some(g),
                Err(e) => r.gc_error = Some(Arc::new(e)),
            }
        }
        Ok(SealedCompaction {
            compaction: r,
            sealed_log_rows: log_rows,
            sealed_version: sealed,
        })
    }

    /// Compacts the index by `policy` and publishes the result as one new version (see the
    /// module documentation). Returns what it did; `version: None` when there was nothing to
    /// do. Other compactions and garbage collections wait; readers and the writer do not,
    /// except for the short publish step.
    pub fn compact(&self, policy: &CompactionPolicy) -> Result<CompactionReport> {
        self.compact_cancellable(policy, &Cancel::new(), None)
    }

    /// [`Index::compact`] that stops soon after `cancel` is cancelled (checked per merged
    /// buffer of `policy.buffer_rows` rows and before the publish) with
    /// [`ModelError::Cancelled`](crate::model::ModelError::Cancelled) in
    /// [`StorageError::Model`]: the segments it had written are removed and the index stays at
    /// the version it was. `progress` (when given) hears every merged buffer: a
    /// [`CompactProgress`] of rows written per column, on the calling thread.
    pub fn compact_cancellable(
        &self,
        policy: &CompactionPolicy,
        cancel: &Cancel,
        progress: Option<CompactProgressFn>,
    ) -> Result<CompactionReport> {
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
                deleted_rows_kept: base.manifest.deleted_rows_with(base.log_entry()),
                gc: None,
                gc_error: None,
            });
        }
        let mut merged = Vec::with_capacity(groups.len());
        let merges = groups.len();
        for (i, g) in groups.into_iter().enumerate() {
            let m = cancel.check().map_err(StorageError::from).and_then(|()| {
                self.merge_group(&base, g, policy, cancel, (progress.as_ref(), i + 1, merges))
            });
            match m {
                Ok(m) => merged.push(m),
                Err(e) => {
                    self.remove_quietly(merged.iter().filter_map(|m| m.report.output.clone()));
                    return Err(e);
                }
            }
        }
        // The point of no return: past it the merge is published.
        if let Err(e) = cancel.commit() {
            self.remove_quietly(merged.iter().filter_map(|m| m.report.output.clone()));
            return Err(e.into());
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
                Err(e) => report.gc_error = Some(Arc::new(e)),
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
    fn merge_group(
        &self,
        base: &VersionState,
        planned: PlannedMerge,
        policy: &CompactionPolicy,
        cancel: &Cancel,
        (progress, merge, merges): (Option<&CompactProgressFn>, usize, usize),
    ) -> Result<Merged> {
        let PlannedMerge {
            segments: group,
            reason,
        } = planned;
        let slots: Vec<&SegmentSlot> = group.iter().map(|&i| &base.segments[i]).collect();
        let merger = Merger::new(&self.shared.dir, &slots, &base.manifest.attributes)?;
        let live = merger.live_rows();
        let mut report = MergeReport {
            reason,
            sources: slots.iter().map(|s| s.entry.segment.name.clone()).collect(),
            output: None,
            rows: live,
            dropped: merger.rows() - live,
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
        let heard: ColumnProgress = match progress {
            None => Arc::new(|_, _| {}),
            Some(p) => {
                let p = p.clone();
                Arc::new(move |column, done| {
                    p(&CompactProgress {
                        merge,
                        merges,
                        column,
                        done,
                        total: live,
                    })
                })
            }
        };
        let mut fill = merger.filler(
            policy.buffer_rows,
            policy.order_budget_bytes,
            self.shared.model.file().code_bytes as usize,
            cancel,
            heard,
        )?;
        let slot = self.write_segment(live, merger.columns(), |f| match f {
            Fill::Column(col, out) => fill.column(col, out),
            Fill::CodesAgain(sink) => fill.codes_again(sink),
        })?;
        report.output = Some(slot.entry.segment.name.clone());
        report.bytes_out = slot.seg.file_len();
        Ok(Merged {
            sources: group,
            slot: Some(slot),
            report,
        })
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
            out_slots.push(
                self.carry_late_deletions(base, &cur, m, &mut replaced, created)
                    .map_err(hidden)?,
            );
        }
        let segments = new_segment_list(base, &cur, merged, &out_slots, &replaced);
        let (class_files, classes, folded_class_files) = if policy.fold_classes
            && cur.manifest.class_files.len() > 1
            && let Some(t) = &cur.classes
        {
            let (entry, table) = self.fold_class_files(t, created).map_err(hidden)?;
            (vec![entry], Some(table), cur.manifest.class_files.len())
        } else {
            (cur.manifest.class_files.clone(), cur.classes.clone(), 0)
        };
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
            attributes: cur.manifest.attributes.clone(),
        };
        let log = cur.log.clone();
        publish(
            fs,
            dir,
            &manifest_file_name(manifest.version),
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
            class_means: cur.class_means_for(&classes),
            classes,
        };
        w.next_version += 1;
        let deleted_rows_kept = state.manifest.deleted_rows_with(state.log_entry());
        let version = self.install(w, state);
        Ok(CompactionReport {
            version: Some(version),
            based_on: cur.version(),
            merges: merged.iter().map(|m| m.report.clone()).collect(),
            folded_class_files,
            deleted_rows_kept,
            gc: None,
            gc_error: None,
        })
    }

    /// The merge group `m`'s output slot with the rows deleted by commits made while it merged
    /// (FORMAT.md §11.4): a row deleted in the committed
    /// version `cur` but not in the merge's `base` is found by id in the output and marked in a
    /// new deletion bitmap. Adds the group's sources to `replaced`.
    fn carry_late_deletions(
        &self,
        base: &VersionState,
        cur: &VersionState,
        m: &Merged,
        replaced: &mut HashSet<FileId>,
        created: &mut Vec<String>,
    ) -> Result<Option<SegmentSlot>> {
        let dir = &self.shared.dir;
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
                    StorageError::invalid(
                        dir,
                        "compaction",
                        format!(
                            "internal: segment {} vanished during the merge",
                            b.entry.segment.name
                        ),
                    )
                })?;
            if c.entry.deletions.as_ref().map(|d| d.id) == b.entry.deletions.as_ref().map(|d| d.id)
            {
                continue;
            }
            // Rows deleted by commits made during the merge.
            c.seg
                .reader()
                .check_column(crate::format::RowColumn::Ids)
                .map_err(StorageError::from)?;
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
                let row = s.seg.find(id).map_err(StorageError::from)?.ok_or_else(|| {
                    StorageError::invalid(
                        dir,
                        "compaction",
                        format!("internal: id {id} is missing from the merged segment"),
                    )
                })?;
                rows.push(row);
            }
            let (bm, fref) = self.write_bitmap(s.entry.segment.id, s.entry.rows, None, &rows)?;
            created.push(fref.name.clone());
            s.entry.deleted = bm.deleted_count();
            s.entry.deletions = Some(fref);
            s.deletions = Some(Arc::new(bm));
        }
        Ok(slot)
    }

    /// Folds the class table's full file and its deltas into one full file (the compaction
    /// policy's `fold_classes`): the table `t` as the committed version reads it, published
    /// under a new id. Returns its manifest entry and the table.
    fn fold_class_files(
        &self,
        t: &ClassTable,
        created: &mut Vec<String>,
    ) -> Result<(ClassFileEntry, Arc<ClassTable>)> {
        let (fs, dir) = (&*self.shared.config.fs, &self.shared.dir);
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
        })?;
        created.push(name.clone());
        let entry = ClassFileEntry {
            file: FileRef { id, name },
            delta: false,
        };
        Ok((entry, Arc::new(table)))
    }
}

/// The segment list after the compaction: the committed version's, each merge group's
/// output in the place of its first source, the other sources dropped (an output with no
/// live row is none), every segment the merge did not touch kept in order.
fn new_segment_list(
    base: &VersionState,
    cur: &VersionState,
    merged: &[Merged],
    out_slots: &[Option<SegmentSlot>],
    replaced: &HashSet<FileId>,
) -> Vec<SegmentSlot> {
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
    segments
}
