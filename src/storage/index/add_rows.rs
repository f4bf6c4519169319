//! Rows in — every write that adds rows. The front door, [`Index::add`]: the descriptors
//! are encoded with the index's model, their vectors kept when the index stores vectors, the
//! rows filed under inverted lists ([`ListAssignment`], `classes::assign_lists`) and, when
//! they carry labels and the index has a class table, added to their classes' counts and sums
//! in the same commit, so NCM class means (Mensink et al., TPAMI 2013, eq. 2) stay current at
//! O(D) per image; [`Index::upsert`] does the same while replacing rows by id, the replaced
//! rows leaving their classes ([`ClassStats`]). With f16 stored vectors the sums are of the
//! f16-rounded rows, what the index stores, so a later delete subtracts exactly what was
//! added. The low-level path, [`Index::add_encoded`] / [`Index::upsert_encoded`], takes rows
//! already encoded ([`RowBatch`]: codes plus optional ids, labels, list ids, stored vectors,
//! attributes), checks them ([`check_batch`], [`conform_write`]) and appends them to the
//! active log at once (unsynced); they become visible at the next commit.

use std::sync::Arc;

use ndarray::ArrayView2;

use crate::classes::class_ref::ClassLookup;
use crate::classes::label_sums::sum_by_label;
use crate::classes::{ClassError, ListAssignment, assign_lists};
use crate::format::{
    Attributes, ClassRecord, FileId, FileKind, FileRef, LogBatch, LogMeta, VectorBuf,
    append_log::{self, LOG_DATA_START, MAX_BATCH_ROWS},
};
use crate::model::{Cancel, Model};
use crate::storage::error::{Result, StorageError};
use crate::storage::layout::{data_file_name, tmp_name};
use crate::storage::log_rows::LogBatchEntry;
use crate::storage::row_batch::{CheckedRows, RowBatch, check_batch, conform_write};

use super::classes::ClassStats;
use super::handle::Index;
use super::writer_state::{LogWriter, Writer};

/// Why `lists` is refused with an IVF model.
pub(crate) const IVF_OWN_LISTS: &str = "the model has a coarse quantiser (ivf:K): it files every \
     row under its nearest k-means list itself, so rows cannot take class lists";

/// What [`Index::add`] and [`Index::upsert`] store besides the descriptors.
#[derive(Clone, Copy, Default)]
pub struct AddOptions<'a> {
    /// One user id per row (default: assigned by the index; required by an upsert).
    pub ids: Option<&'a [u64]>,
    /// One class label (class id) per row. When the index has a class table every label must
    /// be one of its classes, and the rows' descriptors are added to their classes' counts and
    /// sums; without a class table the labels are stored on the rows only. Class names resolve
    /// to ids with [`Index::class_ids`].
    pub labels: Option<&'a [u32]>,
    /// How to give the rows inverted-list ids (`None`: no list ids).
    pub lists: Option<ListAssignment>,
    /// What an upsert does to the classes of the rows it replaces (default
    /// [`ClassStats::Update`]; `Keep` for an index without stored vectors). An add replaces
    /// nothing and ignores it.
    pub class_stats: ClassStats,
    /// Stops the call with [`ModelError::Cancelled`](crate::model::ModelError::Cancelled) (in
    /// [`StorageError::Model`]) soon after the token is cancelled: it is checked while the rows
    /// are encoded and once more before they are staged, so a cancelled call stages nothing.
    /// `None`: never cancelled.
    pub cancel: Option<&'a Cancel>,
    /// Called with the number of rows encoded so far, after each chunk of rows (on the
    /// calling thread), so a front end can draw progress in rows. `None`: no reports.
    pub progress: Option<&'a (dyn Fn(usize) + Sync)>,
    /// The rows' attribute columns, one value per row in `x`'s row order (see
    /// [`EncodedOptions::attributes`]: a column left out takes its default; a column the
    /// index lacks, of another type or another length is refused naming it, nothing staged).
    pub attributes: Option<&'a crate::format::Attributes>,
}

impl std::fmt::Debug for AddOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AddOptions")
            .field("ids", &self.ids)
            .field("labels", &self.labels)
            .field("lists", &self.lists)
            .field("class_stats", &self.class_stats)
            .field("attributes", &self.attributes.map(|a| a.schema().known()))
            .field("cancel", &self.cancel)
            .field("progress", &self.progress.map(|_| "Fn(usize)"))
            .finish()
    }
}

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
    /// Encodes the rows of `x` with the index's model and adds them, with their stored vectors
    /// when the index keeps vectors, their list ids per `opts.lists`, and — for labelled rows
    /// of an index with a class table — a count/sum delta per class, so rows, lists and class
    /// means change together at the next commit. A given id that is already live is
    /// [`StorageError::DuplicateId`](crate::StorageError::DuplicateId) (use [`Index::upsert`]).
    /// Everything is checked first (an unknown label is [`ClassError::UnknownLabel`] in
    /// [`StorageError::Class`]); on error nothing is staged. Returns the rows' ids, in `x`'s
    /// order.
    pub fn add(&self, x: ArrayView2<f32>, opts: &AddOptions<'_>) -> Result<Vec<u64>> {
        let p = self.prepare_descriptors(x, opts)?;
        let write = EncodedOptions {
            classes: &p.deltas,
            class_stats: opts.class_stats,
            attributes: opts.attributes,
        };
        self.add_encoded(&p.batch(self, &x, opts), &write)
    }

    /// [`Index::add`] that replaces the live row of each given id instead of refusing it (the
    /// old row is deleted in the same commit); `opts.ids` is required. A replaced row that
    /// counts in a class leaves it per `opts.class_stats` (by default its stored vector is
    /// subtracted) and a new labelled row joins its class. Everything is checked first; on
    /// error nothing is staged. Returns the rows' ids and how many live rows were replaced.
    pub fn upsert(&self, x: ArrayView2<f32>, opts: &AddOptions<'_>) -> Result<(Vec<u64>, u64)> {
        let Some(ids) = opts.ids else {
            return Err(ClassError::invalid("ids", "an upsert needs the ids of its rows").into());
        };
        let p = self.prepare_descriptors(x, opts)?;
        let write = EncodedOptions {
            classes: &p.deltas,
            class_stats: opts.class_stats,
            attributes: opts.attributes,
        };
        let replaced = self.upsert_encoded(&p.batch(self, &x, opts), &write)?;
        Ok((ids.to_vec(), replaced))
    }

    /// Checks, encodes and assigns lists for [`Index::add`] and [`Index::upsert`]; stages
    /// nothing.
    fn prepare_descriptors(
        &self,
        x: ArrayView2<f32>,
        opts: &AddOptions<'_>,
    ) -> Result<PreparedRows> {
        let model = self.model()?;
        let (n, d) = x.dim();
        if n == 0 {
            return Err(ClassError::invalid("data", "no rows").into());
        }
        if d != model.input_dim() {
            return Err(ClassError::Dimension {
                argument: "data".into(),
                expected: model.input_dim(),
                got: d,
            }
            .into());
        }
        if let Some(l) = opts.labels
            && l.len() != n
        {
            return Err(
                ClassError::invalid("labels", format!("{} labels for {n} rows", l.len())).into(),
            );
        }
        let table = self.staged_classes()?;
        let deltas = match (opts.labels, &table) {
            (Some(labels), Some(t)) => {
                let lookup = ClassLookup::new(Some(t));
                if let Some((row, &label)) = labels
                    .iter()
                    .enumerate()
                    .find(|(_, l)| lookup.by_id(**l).is_none())
                {
                    return Err(ClassError::UnknownLabel { row, label }.into());
                }
                sum_by_label(x, labels, self.vector_spec().map(|v| v.dtype), &|id| {
                    lookup
                        .by_id(id)
                        .map_or((String::new(), None), |c| (c.name.clone(), c.parent))
                })?
            }
            _ => Vec::new(),
        };
        if model.ivf().is_some() && opts.lists.is_some() {
            return Err(ClassError::invalid("lists", IVF_OWN_LISTS).into());
        }
        let lists = match opts.lists {
            None => None,
            Some(how) => {
                // Nearest-class lists go by the class table as the next commit will publish it
                // (committed classes plus those staged).
                let table = match how {
                    ListAssignment::Label => None,
                    ListAssignment::Nearest => table.as_ref(),
                };
                Some(assign_lists(how, model, x, opts.labels, table)?)
            }
        };
        let never = Cancel::new();
        let cancel = opts.cancel.unwrap_or(&never);
        let (codes, ivf_lists) = encode_chunked(model, x, cancel, &mut |done| {
            if let Some(p) = opts.progress {
                p(done)
            }
        })?;
        // The point of no return: past it the rows are staged, and a later cancel says it did
        // not take.
        cancel.commit()?;
        let lists = ivf_lists.or(lists);
        Ok(PreparedRows {
            codes,
            lists,
            deltas,
        })
    }

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

    /// Whether each of `ids` is live as the index will see it at the next commit: committed
    /// rows not staged for deletion, and staged rows — the check [`Index::add_encoded`] makes
    /// before refusing a duplicate id, asked without writing. A sharded index partitioned by
    /// list asks every other shard with it before an add, so an id stays unique across shards.
    pub fn holds(&self, ids: &[u64]) -> Result<Vec<bool>> {
        let w = self.shared.writer.lock();
        w.check_poisoned(&self.shared.dir)?;
        ids.iter().map(|&id| Ok(w.find(id)?.is_some())).collect()
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

/// Rows ready to stage: their codes, list ids and per-class count/sum deltas.
struct PreparedRows {
    codes: Vec<u8>,
    lists: Option<Vec<u32>>,
    deltas: Vec<ClassRecord>,
}

impl PreparedRows {
    fn batch<'a>(
        &'a self,
        index: &Index,
        x: &'a ArrayView2<'_, f32>,
        opts: &AddOptions<'a>,
    ) -> RowBatch<'a> {
        RowBatch {
            ids: opts.ids,
            labels: opts.labels,
            lists: self.lists.as_deref(),
            vectors: index.vector_spec().map(|_| x.view()),
            ..RowBatch::new(&self.codes)
        }
    }
}

/// Rows encoded per chunk (bounds the memory of the float → code step).
const ENCODE_CHUNK: usize = 65_536;

/// Encodes `data` with `model` in chunks of [`ENCODE_CHUNK`] rows (each encoded in parallel),
/// calling `progress(rows_done)` after each: the codes, and with an IVF model each row's list.
/// `cancel` is checked inside each chunk's encoding. Shared by [`Index::build`] and
/// [`Index::add`], so both report progress the same way.
pub(crate) fn encode_chunked(
    model: &Model,
    data: ArrayView2<f32>,
    cancel: &Cancel,
    progress: &mut dyn FnMut(usize),
) -> std::result::Result<(Vec<u8>, Option<Vec<u32>>), StorageError> {
    let n = data.nrows();
    let mut codes = Vec::with_capacity(n * model.code_bytes());
    // An IVF model files each row under its nearest coarse centroid as it encodes it.
    let mut lists = model.ivf().map(|_| Vec::with_capacity(n));
    let mut start = 0;
    while start < n {
        let end = (start + ENCODE_CHUNK).min(n);
        let chunk = data.slice(ndarray::s![start..end, ..]);
        let (c, l) = model
            .encode_lists_cancellable(chunk, cancel)
            .map_err(|e| e.rows_from(start))?;
        codes.extend(c);
        if let (Some(all), Some(l)) = (lists.as_mut(), l) {
            all.extend(l);
        }
        start = end;
        progress(end);
    }
    Ok((codes, lists))
}

/// Appends rows `order` (of `dim` values each) of `src` to `out` (same dtype).
fn out_extend_rows(out: &mut VectorBuf, src: &VectorBuf, order: &[usize], dim: usize) {
    let s = src.as_slice();
    for &r in order {
        let ok = out.extend_from(s, r * dim, (r + 1) * dim);
        debug_assert!(ok, "vector rows were checked against the batch");
    }
}
