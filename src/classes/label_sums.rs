//! Class sums of a labelled data set: per label, the count and f64 sum of its rows (FORMAT.md
//! §5) — the class table [`class_records_stored`] makes (what `codedb build --labels`
//! creates), and the count/sum deltas a labelled add stages (`storage::Index::add`).
//! With f16 stored vectors the sums are of the f16-rounded rows, what the index stores, so a
//! later delete subtracts exactly what was added.

use std::collections::BTreeMap;

use ndarray::ArrayView2;

use crate::format::append_log::NO_LABEL;
use crate::format::{ClassRecord, VectorDType};

use super::error::{ClassError, Result};

/// Per-class count and f64 sum of the rows of `x` with `labels` (one per row), in class-id
/// order; a class's name is `name(id)`, its parent none. With `stored = Some(F16)` each value
/// is first rounded to f16 as the index stores it, so the class sum holds exactly the stored
/// vectors and a delete can subtract exactly what was added (`storage::ClassStats`).
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

/// The class table a labelled data set defines — one class per distinct label, class id = the
/// label, name = the label in decimal, no parent, count and f64 sum of its rows (labels must not
/// be `u32::MAX`, reserved for "no label") — for an index that stores the rows' vectors as
/// `stored`: with f16 the sums are of the f16-rounded rows (see [`sum_by_label`]).
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
