//! Labelled adds: rows of known classes go into the index and their descriptors into the
//! class sums in the same commit, so NCM class means (Mensink et al., TPAMI 2013, eq. 2) stay
//! current at O(D) per image — no pass over the data, no retraining.
//!
//! [`Index::add_descriptors`] is the one path from raw descriptors to rows: it encodes them,
//! keeps their vectors when the index stores vectors, files them under inverted lists
//! ([`ListAssignment`]) and, when they carry labels and the index has a class table, adds them
//! to their classes' counts and sums. [`Index::upsert_descriptors`] does the same while
//! replacing rows by id, the replaced rows leaving their classes (`storage::ClassStats`).
//! [`class_records_from_labels`] turns a labelled data set into a class table (what `codedb
//! build --labels` creates). With f16 stored vectors the sums are of the f16-rounded rows, what
//! the index stores, so a later delete subtracts exactly what was added.

use std::collections::{BTreeMap, HashMap};

use ndarray::ArrayView2;

use crate::format::append_log::NO_LABEL;
use crate::format::{ClassRecord, VectorDType};
use crate::model::Model;
use crate::storage::{ClassStats, Index, RowBatch};

use super::class_ref::{ClassLookup, ClassRef};
use super::error::{ClassError, Result};
use super::list_assign::ListAssignment;

/// What [`Index::add_descriptors`] adds besides the descriptors.
#[derive(Debug, Clone, Copy, Default)]
pub struct AddOptions<'a> {
    /// One user id per row (default: assigned by the index).
    pub ids: Option<&'a [u64]>,
    /// One class label (class id) per row. When the index has a class table every label must
    /// be one of its classes, and the rows' descriptors are added to their classes' counts and
    /// sums; without a class table the labels are stored on the rows only.
    pub labels: Option<&'a [u32]>,
    /// How to give the rows inverted-list ids (`None`: no list ids).
    pub lists: Option<ListAssignment>,
}

/// Per-class count and f64 sum of the rows of `x` with `labels` (one per row), in class-id
/// order; a class's name is `name(id)`, its parent none. With `stored = Some(F16)` each value
/// is first rounded to f16 as the index stores it, so the class sum holds exactly the stored
/// vectors and a delete can subtract exactly what was added (`storage::class_accounting`).
/// NaN/Inf in `x` is an error naming the row and column.
pub(crate) fn sum_by_label(
    x: ArrayView2<f32>,
    labels: &[u32],
    stored: Option<VectorDType>,
    name: &dyn Fn(u32) -> (String, Option<u32>),
) -> Result<Vec<ClassRecord>> {
    let round = stored == Some(VectorDType::F16);
    let d = x.ncols();
    let mut acc: BTreeMap<u32, (u64, Vec<f64>)> = BTreeMap::new();
    for (i, (row, &id)) in x.rows().into_iter().zip(labels).enumerate() {
        let (count, sum) = acc.entry(id).or_insert_with(|| (0, vec![0f64; d]));
        *count += 1;
        for (j, (s, v)) in sum.iter_mut().zip(row.iter()).enumerate() {
            if !v.is_finite() {
                return Err(ClassError::NonFinite {
                    argument: "data".into(),
                    row: i,
                    col: j,
                    value: *v as f64,
                });
            }
            *s += if round {
                half::f16::from_f32(*v).to_f32() as f64
            } else {
                *v as f64
            };
        }
    }
    Ok(acc
        .into_iter()
        .map(|(id, (count, sum))| {
            let (name, parent) = name(id);
            ClassRecord {
                id,
                name,
                parent,
                count,
                sum,
                centroids: Vec::new(),
                removed: 0,
            }
        })
        .collect())
}

/// The class table a labelled data set defines: one class per distinct label, class id = the
/// label, name = the label in decimal, no parent, count and f64 sum of its rows. Labels must
/// not be `u32::MAX` (reserved for "no label").
pub fn class_records_from_labels(x: ArrayView2<f32>, labels: &[u32]) -> Result<Vec<ClassRecord>> {
    class_records_stored(x, labels, None)
}

/// [`class_records_from_labels`] for an index that stores the rows' vectors as `stored`: with
/// f16 the sums are of the f16-rounded rows (see [`sum_by_label`]).
pub(crate) fn class_records_stored(
    x: ArrayView2<f32>,
    labels: &[u32],
    stored: Option<VectorDType>,
) -> Result<Vec<ClassRecord>> {
    if labels.len() != x.nrows() {
        return Err(ClassError::invalid(
            "labels",
            format!("{} labels for {} rows", labels.len(), x.nrows()),
        ));
    }
    if let Some(r) = labels.iter().position(|&l| l == NO_LABEL) {
        return Err(ClassError::invalid(
            "labels",
            format!("row {r}: {NO_LABEL} is reserved (it means \"no label\")"),
        ));
    }
    sum_by_label(x, labels, stored, &|id| (id.to_string(), None))
}

impl Index {
    /// Encodes the rows of `x` with `model` (the index's model) and adds them, with their
    /// stored vectors when the index keeps vectors, their list ids per `opts.lists`, and — for
    /// labelled rows of an index with a class table — a count/sum delta per class, so rows,
    /// lists and class means change together at the next commit. Everything is checked first
    /// (an unknown label is [`ClassError::UnknownLabel`]); on error nothing is staged. Returns
    /// the rows' ids.
    pub fn add_descriptors(
        &self,
        model: &Model,
        x: ArrayView2<f32>,
        opts: &AddOptions<'_>,
    ) -> Result<Vec<u64>> {
        let p = self.prepare_descriptors(model, x, opts)?;
        Ok(self.add_rows_with_classes(&p.batch(self, &x, opts), &p.deltas)?)
    }

    /// [`Index::add_descriptors`] that replaces the live row of each given id instead of
    /// refusing it (the old row is deleted in the same commit, [`Index::upsert_rows`]);
    /// `opts.ids` is required. A replaced row that counts in a class leaves it (its stored
    /// vector is subtracted) and a new labelled row joins its class: [`ClassStats::Update`],
    /// see [`Index::upsert_descriptors_with`]. Returns the rows' ids and how many live rows
    /// were replaced.
    pub fn upsert_descriptors(
        &self,
        model: &Model,
        x: ArrayView2<f32>,
        opts: &AddOptions<'_>,
    ) -> Result<(Vec<u64>, u64)> {
        self.upsert_descriptors_with(model, x, opts, ClassStats::Update)
    }

    /// [`Index::upsert_descriptors`] with what happens to the classes of the replaced rows
    /// ([`ClassStats`]; `Keep` for an index without stored vectors). Everything is checked
    /// first; on error nothing is staged.
    pub fn upsert_descriptors_with(
        &self,
        model: &Model,
        x: ArrayView2<f32>,
        opts: &AddOptions<'_>,
        stats: ClassStats,
    ) -> Result<(Vec<u64>, u64)> {
        let Some(ids) = opts.ids else {
            return Err(ClassError::invalid(
                "ids",
                "an upsert needs the ids of its rows",
            ));
        };
        let p = self.prepare_descriptors(model, x, opts)?;
        let replaced = self.upsert_rows_with(&p.batch(self, &x, opts), &p.deltas, stats)?;
        Ok((ids.to_vec(), replaced))
    }

    /// Checks, encodes and assigns lists for [`Index::add_descriptors`] and
    /// [`Index::upsert_descriptors`]; stages nothing.
    fn prepare_descriptors(
        &self,
        model: &Model,
        x: ArrayView2<f32>,
        opts: &AddOptions<'_>,
    ) -> Result<PreparedRows> {
        if model.id() != self.model().model_id {
            return Err(ClassError::ModelMismatch {
                expected: self.model().model_id.to_string(),
                got: model.id().to_string(),
            });
        }
        let (n, d) = x.dim();
        if n == 0 {
            return Err(ClassError::invalid("data", "no rows"));
        }
        if d != model.input_dim() {
            return Err(ClassError::Dimension {
                argument: "data".into(),
                expected: model.input_dim(),
                got: d,
            });
        }
        if let Some(l) = opts.labels
            && l.len() != n
        {
            return Err(ClassError::invalid(
                "labels",
                format!("{} labels for {n} rows", l.len()),
            ));
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
                    return Err(ClassError::UnknownLabel { row, label });
                }
                sum_by_label(x, labels, self.vector_spec().map(|v| v.dtype), &|id| {
                    lookup
                        .by_id(id)
                        .map_or((String::new(), None), |c| (c.name.clone(), c.parent))
                })?
            }
            _ => Vec::new(),
        };
        let lists = match opts.lists {
            None => None,
            Some(how) => Some(self.assign_lists(how, model, x, opts.labels)?),
        };
        let codes = model.encode(x)?;
        Ok(PreparedRows {
            codes,
            lists,
            deltas,
        })
    }

    /// Encodes the rows of `x` with `model` (the index's model), adds them with their class
    /// labels (`labels[i]` names row i's class, by id or name; the class must exist) and
    /// stages, per class, a delta of count and f64 sum, so the class table and the rows change
    /// together at the next commit ([`Index::add_descriptors`] with the labels resolved to
    /// class ids). Returns the rows' ids. Everything is checked first; on error nothing is
    /// staged.
    pub fn add_labelled(
        &self,
        model: &Model,
        x: ArrayView2<f32>,
        labels: &[ClassRef],
        ids: Option<&[u64]>,
    ) -> Result<Vec<u64>> {
        if labels.len() != x.nrows() {
            return Err(ClassError::invalid(
                "labels",
                format!("{} labels for {} rows", labels.len(), x.nrows()),
            ));
        }
        let table = self.staged_classes()?;
        let lookup = ClassLookup::new(table.as_ref());
        let mut resolved: HashMap<&ClassRef, u32> = HashMap::new();
        let mut label_ids = Vec::with_capacity(labels.len());
        for (i, r) in labels.iter().enumerate() {
            let id = match resolved.get(r) {
                Some(id) => *id,
                None => {
                    let c = lookup.resolve(r, &format!("labels[{i}]"))?;
                    resolved.insert(r, c.id);
                    c.id
                }
            };
            debug_assert_ne!(id, NO_LABEL);
            label_ids.push(id);
        }
        self.add_descriptors(
            model,
            x,
            &AddOptions {
                ids,
                labels: Some(&label_ids),
                lists: None,
            },
        )
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
