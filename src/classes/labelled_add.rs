//! Labelled adds: rows of known classes go into the index and their descriptors into the
//! class sums in the same commit, so NCM class means (Mensink et al., TPAMI 2013, eq. 2) stay
//! current at O(D) per image — no pass over the data, no retraining.

use std::collections::{BTreeMap, HashMap};

use ndarray::ArrayView2;

use crate::format::ClassRecord;
use crate::format::append_log::NO_LABEL;
use crate::model::Model;
use crate::storage::Index;

use super::class_ref::{ClassLookup, ClassRef};
use super::error::{ClassError, Result};

impl Index {
    /// Encodes the rows of `x` with `model` (the index's model), adds them with their class
    /// labels (`labels[i]` names row i's class, by id or name; the class must exist) and
    /// stages, per class, a delta of count and f64 sum, so the class table and the rows change
    /// together at the next commit. Returns the rows' ids. Everything is checked first; on
    /// error nothing is staged.
    pub fn add_labelled(
        &self,
        model: &Model,
        x: ArrayView2<f32>,
        labels: &[ClassRef],
        ids: Option<&[u64]>,
    ) -> Result<Vec<u64>> {
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
        if labels.len() != n {
            return Err(ClassError::invalid(
                "labels",
                format!("{} labels for {n} rows", labels.len()),
            ));
        }
        if d != model.input_dim() {
            return Err(ClassError::Dimension {
                argument: "data".into(),
                expected: model.input_dim(),
                got: d,
            });
        }
        let table = self.staged_classes()?;
        let lookup = ClassLookup::new(table.as_ref());
        let mut resolved: HashMap<&ClassRef, &ClassRecord> = HashMap::new();
        let mut label_ids = Vec::with_capacity(n);
        for (i, r) in labels.iter().enumerate() {
            let c = match resolved.get(r) {
                Some(c) => *c,
                None => {
                    let c = lookup.resolve(r, &format!("labels[{i}]"))?;
                    resolved.insert(r, c);
                    c
                }
            };
            debug_assert_ne!(c.id, NO_LABEL);
            label_ids.push(c.id);
        }
        // Per-class count and sum, in class-id order (deterministic delta files).
        let mut acc: BTreeMap<u32, (u64, Vec<f64>)> = BTreeMap::new();
        for (i, (row, &id)) in x.rows().into_iter().zip(&label_ids).enumerate() {
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
                *s += *v as f64;
            }
        }
        let deltas: Vec<ClassRecord> = acc
            .into_iter()
            .filter_map(|(id, (count, sum))| {
                let c = lookup.by_id(id)?;
                Some(ClassRecord {
                    id,
                    name: c.name.clone(),
                    parent: c.parent,
                    count,
                    sum,
                    centroids: Vec::new(),
                })
            })
            .collect();
        let codes = model.encode(x)?;
        Ok(self.add_codes_with_classes(&codes, ids, Some(&label_ids), &deltas)?)
    }
}
