//! Raw descriptors in — the front door for writes: [`Index::add`] encodes the rows with the
//! index's model, keeps their vectors when the index stores vectors, files them under inverted
//! lists ([`ListAssignment`], `classes::assign_lists`) and, when they carry labels and the
//! index has a class table, adds them to their classes' counts and sums in the same commit, so
//! NCM class means (Mensink et al., TPAMI 2013, eq. 2) stay current at O(D) per image.
//! [`Index::upsert`] does the same while replacing rows by id, the replaced rows leaving their
//! classes ([`ClassStats`]). With f16 stored vectors the sums are of the f16-rounded rows, what
//! the index stores, so a later delete subtracts exactly what was added. Rows already encoded
//! take the low-level path in `stage_rows.rs` ([`Index::add_encoded`]).

use std::collections::HashMap;

use ndarray::ArrayView2;

use crate::classes::class_ref::{ClassLookup, ClassRef};
use crate::classes::label_sums::sum_by_label;
use crate::classes::{ClassError, ListAssignment, assign_lists};
use crate::format::ClassRecord;
use crate::format::append_log::NO_LABEL;
use crate::model::Cancel;
use crate::storage::error::StorageError;
use crate::storage::row_batch::RowBatch;

use super::build::encode_chunked;
use super::classes::ClassStats;
use super::handle::Index;
use super::stage_rows::EncodedOptions;

/// Shorthand: the class layer's errors (an unknown label, a wrong model, …).
type Result<T> = std::result::Result<T, StorageError>;

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
            return Err(ClassError::invalid("lists", super::build::IVF_OWN_LISTS).into());
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

    /// The class ids of `classes` (each a name or an id) in the class table as the next commit
    /// will publish it (committed classes plus those staged), for [`AddOptions::labels`]. A
    /// class that does not exist is [`ClassError::UnknownClass`] (in [`StorageError::Class`])
    /// naming `classes[i]`.
    pub fn class_ids(&self, classes: &[ClassRef]) -> Result<Vec<u32>> {
        let table = self.staged_classes()?;
        let lookup = ClassLookup::new(table.as_ref());
        let mut resolved: HashMap<&ClassRef, u32> = HashMap::new();
        let mut ids = Vec::with_capacity(classes.len());
        for (i, r) in classes.iter().enumerate() {
            let id = match resolved.get(r) {
                Some(id) => *id,
                None => {
                    let c = lookup.resolve(r, &format!("classes[{i}]"))?;
                    resolved.insert(r, c.id);
                    c.id
                }
            };
            debug_assert_ne!(id, NO_LABEL);
            ids.push(id);
        }
        Ok(ids)
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
