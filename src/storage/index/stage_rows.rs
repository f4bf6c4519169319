//! Staging rows, the low-level path: rows already encoded ([`RowBatch`]: codes plus optional
//! ids, labels, list ids and stored vectors) are added, upserted or deleted, visible at the next
//! commit. Rows go to the active log at once (unsynced); deletes of sealed rows wait in memory,
//! by id. Descriptors take the front door, [`Index::add`] (`descriptors.rs`), which encodes them
//! and ends here.

use std::collections::HashSet;
use std::sync::Arc;

use crate::format::{
    Attributes, ClassRecord, FileId, FileKind, FileRef, LogBatch, LogMeta, VectorBuf,
    append_log::{self, LOG_DATA_START, MAX_BATCH_ROWS},
};

use super::classes::ClassStats;
use super::handle::Index;
use super::writer_state::{LogWriter, WLoc, Writer};
use crate::storage::attributes::conform_write;
use crate::storage::error::{Result, StorageError};
use crate::storage::layout::{data_file_name, tmp_name};
use crate::storage::log_rows::LogBatchEntry;
use crate::storage::row_batch::{CheckedRows, RowBatch, check_batch};

/// What a low-level write ([`Index::add_encoded`], [`Index::upsert_encoded`]) stages with its
/// rows. The default stages rows only.
#[derive(Debug, Clone, Copy, Default)]
pub struct EncodedOptions<'a> {
    /// Class records staged in the same step, as by [`Index::add_class`] — typically the
    /// count/sum deltas of the rows' classes, so a labelled add updates the class table in the
    /// same commit. In an index with a class table, rows labelled with one of its classes must
    /// be counted by these records. Rows and records are all checked before anything is
    /// staged, so on error neither is.
    pub classes: &'a [ClassRecord],
    /// What an upsert does to the classes of the rows it replaces ([`ClassStats`]; an add
    /// replaces nothing and ignores it).
    pub class_stats: ClassStats,
    /// The rows' attribute columns, one value per row, in the batch's row order (any subset
    /// of the index's columns, in any order: a column left out takes its default; see
    /// [`crate::CreateOptions::attributes`]). `None`: every column takes its default. A column
    /// the index lacks, of another type or of another length is refused naming it, and
    /// nothing is staged. An upsert's new row carries its own attributes, replacing the old
    /// row's.
    pub attributes: Option<&'a Attributes>,
}

impl Index {
    /// Adds rows of codes already encoded by the index's model (see [`RowBatch`]) and stages
    /// `opts.classes` with them: the low-level path under [`Index::add`], for codes made
    /// elsewhere (a copy from another index, generated codes for a benchmark). Without ids,
    /// ids are assigned in increasing order from the manifest's `next_auto_id` (which always
    /// stays above every id ever stored, so an assigned id never collides with a user id). A
    /// given id that is already live is [`StorageError::DuplicateId`] and nothing is added (use
    /// [`Index::upsert_encoded`] to replace rows). Every column is checked (shapes, reserved
    /// values, finite vectors of the index's dimension) before anything is written. Returns
    /// the rows' ids, in the batch's order. The rows become visible at the next commit.
    pub fn add_encoded(&self, batch: &RowBatch<'_>, opts: &EncodedOptions<'_>) -> Result<Vec<u64>> {
        let checked = check_batch(
            &self.shared.dir,
            self.shared.model.file(),
            self.shared.vectors,
            batch,
        )?;
        self.add_checked_rows(batch, checked, opts.classes, opts.attributes)
    }

    /// [`Index::add_encoded`] of a batch [`check_batch`] already passed against this
    /// index's model and vector setting (`codedb build` checks before it creates the index).
    pub(crate) fn add_checked_rows(
        &self,
        batch: &RowBatch<'_>,
        checked: CheckedRows,
        classes: &[ClassRecord],
        attributes: Option<&Attributes>,
    ) -> Result<Vec<u64>> {
        let rows = checked.rows;
        let mut w = self.shared.writer.lock();
        w.check_poisoned(&self.shared.dir)?;
        let attrs = conform_write(&self.shared.dir, w.schema(), attributes, rows)?;
        self.check_labels_counted(&w, batch.labels, classes)?;
        let staged_classes = if classes.is_empty() {
            None
        } else {
            Some(self.stage_classes(&w, classes)?)
        };
        let ids = match batch.ids {
            Some(ids) => {
                for &id in ids {
                    if w.find(id)?.is_some() {
                        return Err(StorageError::DuplicateId {
                            dir: self.shared.dir.clone(),
                            id,
                        });
                    }
                }
                ids.to_vec()
            }
            None => {
                let first = w.next_auto_id;
                let end = first
                    .checked_add(rows as u64)
                    .filter(|&e| e < u64::MAX)
                    .ok_or_else(|| self.invalid("ids", "the automatic id space is exhausted"))?;
                (first..end).collect()
            }
        };
        self.append_locked(
            &mut w,
            &ids,
            batch,
            checked.vectors.as_ref(),
            attrs.as_ref(),
        )?;
        if let Some(t) = staged_classes {
            w.pending.classes = Some(t);
        }
        Ok(ids)
    }

    /// [`Index::add_encoded`] that replaces the live row of each given id instead of refusing
    /// it (the old row is deleted in the same commit); `batch.ids` is required. A replaced row
    /// that counts in a class leaves it per `opts.class_stats` (see [`ClassStats`]; its stored
    /// vector is subtracted), and `opts.classes` count the new rows. Everything is checked
    /// before anything is staged. Returns how many rows were replaced.
    pub fn upsert_encoded(&self, batch: &RowBatch<'_>, opts: &EncodedOptions<'_>) -> Result<u64> {
        let (classes, stats) = (opts.classes, opts.class_stats);
        let Some(ids) = batch.ids else {
            return Err(self.invalid("ids", "an upsert needs the ids of its rows"));
        };
        let checked = check_batch(
            &self.shared.dir,
            self.shared.model.file(),
            self.shared.vectors,
            batch,
        )?;
        let mut w = self.shared.writer.lock();
        w.check_poisoned(&self.shared.dir)?;
        let attrs = conform_write(&self.shared.dir, w.schema(), opts.attributes, checked.rows)?;
        let mut found = Vec::new();
        for &id in ids {
            if let Some(loc) = w.find(id)? {
                found.push((id, loc));
            }
        }
        self.check_labels_counted(&w, batch.labels, classes)?;
        let mut records = self.removal_records(&w, &found, stats)?;
        records.extend_from_slice(classes);
        let staged_classes = if records.is_empty() {
            None
        } else {
            Some(self.stage_classes(&w, &records)?)
        };
        Self::stage_deletes(&mut w, &found);
        self.append_locked(&mut w, ids, batch, checked.vectors.as_ref(), attrs.as_ref())?;
        if let Some(t) = staged_classes {
            w.pending.classes = Some(t);
        }
        Ok(found.len() as u64)
    }

    /// Marks located live rows deleted (segment rows by id, resolved at commit).
    fn stage_deletes(w: &mut Writer, rows: &[(u64, WLoc)]) {
        for &(id, loc) in rows {
            match loc {
                WLoc::Segment { .. } => {
                    w.pending.segment_deletes.insert(id);
                }
                WLoc::Log(row) => {
                    if let Some(l) = w.log.as_mut() {
                        l.delete(row);
                    }
                }
            }
        }
        w.pending.changed |= !rows.is_empty();
    }

    /// Deletes the live rows with these ids (visible at the next commit). An id that is not
    /// live is [`StorageError::UnknownId`] and nothing is deleted. A deleted row that counts in
    /// a class leaves it in the same commit (its stored vector is subtracted from its class's
    /// sum: [`ClassStats::Update`]; [`Index::delete_with`] can keep the classes as they are).
    pub fn delete(&self, ids: &[u64]) -> Result<()> {
        self.delete_with(ids, ClassStats::Update)
    }

    /// [`Index::delete`], with what happens to the class statistics of deleted labelled rows
    /// (see [`ClassStats`]): with `Update`, each one's stored vector is subtracted from its
    /// class's sum and the class's count drops by one, and an index without stored vectors
    /// refuses ([`StorageError::ClassStatsNeedVectors`]); with `Keep` the classes stay as they
    /// are. Everything is checked before anything is staged.
    pub fn delete_with(&self, ids: &[u64], stats: ClassStats) -> Result<()> {
        self.delete_rows(ids, stats, false).map(|_| ())
    }

    /// [`Index::delete_with`] that skips the ids that are not live (as the index will see
    /// them at the next commit, staged writes included) instead of refusing the batch:
    /// `codedb delete --ignore-missing`, Python's `delete(ignore_missing=True)`. Returns the
    /// skipped ids, in `ids`' order; the others are staged for deletion. Nothing is staged when
    /// every id is missing.
    pub fn delete_live(&self, ids: &[u64], stats: ClassStats) -> Result<Vec<u64>> {
        self.delete_rows(ids, stats, true)
    }

    /// Whether each of `ids` is live as the index will see it at the next commit: committed
    /// rows not staged for deletion, and staged rows — the check [`Index::add_encoded`] makes
    /// before refusing a duplicate id, asked without writing. A sharded index partitioned by
    /// list asks every other shard with it before an add, so an id stays unique across shards.
    pub fn holds(&self, ids: &[u64]) -> Result<Vec<bool>> {
        let w = self.shared.writer.lock();
        w.check_poisoned(&self.shared.dir)?;
        ids.iter().map(|&id| Ok(w.find(id)?.is_some())).collect()
    }

    /// The delete of [`Index::delete_with`] and [`Index::delete_live`]; returns the ids skipped
    /// (only with `skip_missing`).
    fn delete_rows(&self, ids: &[u64], stats: ClassStats, skip_missing: bool) -> Result<Vec<u64>> {
        if ids.is_empty() {
            return Err(self.invalid("ids", "no ids given"));
        }
        let mut seen = HashSet::with_capacity(ids.len());
        if let Some(&dup) = ids.iter().find(|&&x| !seen.insert(x)) {
            return Err(self.invalid("ids", format!("id {dup} appears twice")));
        }
        let mut w = self.shared.writer.lock();
        w.check_poisoned(&self.shared.dir)?;
        let mut locs = Vec::with_capacity(ids.len());
        let mut missing = Vec::new();
        for &id in ids {
            match w.find(id)? {
                Some(loc) => locs.push((id, loc)),
                None if skip_missing => missing.push(id),
                None => {
                    return Err(StorageError::UnknownId {
                        dir: self.shared.dir.clone(),
                        id,
                    });
                }
            }
        }
        let records = self.removal_records(&w, &locs, stats)?;
        let staged_classes = if records.is_empty() {
            None
        } else {
            Some(self.stage_classes(&w, &records)?)
        };
        Self::stage_deletes(&mut w, &locs);
        if let Some(t) = staged_classes {
            w.pending.classes = Some(t);
        }
        Ok(missing)
    }

    /// Appends rows to the active log (creating it if needed). An I/O failure poisons.
    fn append_locked(
        &self,
        w: &mut Writer,
        ids: &[u64],
        batch: &RowBatch<'_>,
        vectors: Option<&VectorBuf>,
        attrs: Option<&Attributes>,
    ) -> Result<()> {
        let r = self.append_inner(w, ids, batch, vectors, attrs);
        if let Err(e) = &r {
            w.poison(e);
        }
        r
    }

    fn append_inner(
        &self,
        w: &mut Writer,
        ids: &[u64],
        batch: &RowBatch<'_>,
        vectors: Option<&VectorBuf>,
        attrs: Option<&Attributes>,
    ) -> Result<()> {
        let dir = &self.shared.dir;
        let fs = &*self.shared.config.fs;
        let model = self.shared.model.file();
        if w.log.is_none() {
            let id = FileId::generate();
            let name = data_file_name(FileKind::AppendLog, id);
            let path = dir.join(&name);
            let meta = LogMeta {
                code_kind: model.code_kind,
                code_bytes: model.code_bytes,
                code_bits: model.code_bits,
                model_id: model.model_id,
                vectors: self.shared.vectors,
            };
            // The prelude is published like any file (temporary name, fsync, rename), so a
            // log under its final name always starts with a valid header and meta.
            let tmp = dir.join(tmp_name(&name));
            let mut handle = fs
                .create_new(&tmp)
                .map_err(StorageError::io(&tmp, "create"))?;
            handle
                .write_all(&append_log::encode_prelude(id, &meta))
                .map_err(StorageError::io(&tmp, "write"))?;
            handle.sync().map_err(StorageError::io(&tmp, "fsync"))?;
            drop(handle);
            fs.rename(&tmp, &path)
                .map_err(StorageError::io(&path, "rename"))?;
            let handle = fs
                .open_append(&path)
                .map_err(StorageError::io(&path, "open for append"))?;
            w.log = Some(LogWriter {
                file: FileRef { id, name },
                path,
                handle,
                meta,
                batches: Vec::new(),
                rows: 0,
                len: LOG_DATA_START,
                committed_len: LOG_DATA_START,
                deleted: Vec::new(),
                deleted_count: 0,
                committed_deletions: None,
                deletions_dirty: false,
                new_file: true,
            });
        }
        let Some(log) = w.log.as_mut() else {
            return Ok(());
        };
        let width = model.code_bytes as usize;
        let dim = self.shared.vectors.map_or(0, |v| v.dim as usize);
        let chunk = MAX_BATCH_ROWS as usize;
        for (k, id_chunk) in ids.chunks(chunk).enumerate() {
            let start = k * chunk;
            let end = start + id_chunk.len();
            // Rows with list ids are stored grouped by list, then by id (FORMAT.md §10.2), so
            // every block of rows a scan sees, logged or sealed, has contiguous lists.
            let order: Vec<usize> = match batch.lists {
                Some(l) => {
                    let mut o: Vec<usize> = (start..end).collect();
                    o.sort_unstable_by_key(|&r| (l[r], ids[r]));
                    o
                }
                None => (start..end).collect(),
            };
            let mut codes = Vec::with_capacity(order.len() * width);
            for &r in &order {
                codes.extend_from_slice(&batch.codes[r * width..(r + 1) * width]);
            }
            let vecs = vectors.map(|v| {
                let mut out = VectorBuf::empty(v.dtype());
                out_extend_rows(&mut out, v, &order, dim);
                out
            });
            let record_batch = LogBatch {
                ids: order.iter().map(|&r| ids[r]).collect(),
                codes,
                labels: batch.labels.map(|l| order.iter().map(|&r| l[r]).collect()),
                lists: batch.lists.map(|l| order.iter().map(|&r| l[r]).collect()),
                vectors: vecs,
                attributes: attrs.map(|a| a.take(&order)),
            };
            let batch = record_batch;
            let record = batch.encode(&log.meta, &log.path)?;
            log.handle
                .write_all(&record)
                .map_err(StorageError::io(&log.path, "write"))?;
            log.len += record.len() as u64;
            let entry = LogBatchEntry::new(batch, log.rows);
            log.rows += entry.rows();
            log.deleted.resize(log.rows.div_ceil(64) as usize, 0);
            log.batches.push(Arc::new(entry));
        }
        if let Some(&max) = ids.iter().max() {
            w.next_auto_id = w.next_auto_id.max(max + 1);
        }
        w.pending.changed = true;
        Ok(())
    }
}

/// Appends rows `order` (of `dim` values each) of `src` to `out` (same dtype).
fn out_extend_rows(out: &mut VectorBuf, src: &VectorBuf, order: &[usize], dim: usize) {
    let s = src.as_slice();
    for &r in order {
        let ok = out.extend_from(s, r * dim, (r + 1) * dim);
        debug_assert!(ok, "vector rows were checked against the batch");
    }
}
