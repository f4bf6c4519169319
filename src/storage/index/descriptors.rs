//! Raw descriptors in: [`Index::add_descriptors`] is the one path from descriptors to rows —
//! it encodes them, keeps their vectors when the index stores vectors, files them under
//! inverted lists ([`ListAssignment`], `classes::assign_lists`) and, when they carry labels and
//! the index has a class table, adds them to their classes' counts and sums in the same commit,
//! so NCM class means (Mensink et al., TPAMI 2013, eq. 2) stay current at O(D) per image.
//! [`Index::upsert_descriptors`] does the same while replacing rows by id, the replaced rows
//! leaving their classes ([`ClassStats`]). With f16 stored vectors the sums are of the
//! f16-rounded rows, what the index stores, so a later delete subtracts exactly what was added.

use std::collections::HashMap;

use ndarray::ArrayView2;

use crate::classes::class_ref::{ClassLookup, ClassRef};
use crate::classes::label_sums::sum_by_label;
use crate::classes::{ClassError, ListAssignment, assign_lists};
use crate::format::ClassRecord;
use crate::format::append_log::NO_LABEL;
use crate::model::Model;
use crate::storage::RowBatch;

use super::{ClassStats, Index};

/// Shorthand: the class layer's errors (an unknown label, a wrong model, …).
type Result<T> = std::result::Result<T, ClassError>;

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

    /// [`assign_lists`] against the class table as the next commit will publish it (committed
    /// classes plus those staged), under `model` (the index's model).
    pub fn assign_lists(
        &self,
        how: ListAssignment,
        model: &Model,
        x: ArrayView2<f32>,
        labels: Option<&[u32]>,
    ) -> Result<Vec<u32>> {
        if model.id() != self.model().model_id {
            return Err(ClassError::ModelMismatch {
                expected: self.model().model_id.to_string(),
                got: model.id().to_string(),
            });
        }
        let table = match how {
            ListAssignment::Label => None,
            ListAssignment::Nearest => self.staged_classes()?,
        };
        assign_lists(how, model, x, labels, table.as_ref())
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
