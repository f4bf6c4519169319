//! Projected class means and biases: the NCM classifier of an index, derived from its class
//! table and its model (Mensink et al., TPAMI 2013, eq. 1-2 and 9-11).
//!
//! The class table stores, per class, the image count n_c and the f64 **sum** of its raw
//! descriptors; the mean is μ_c = sum / n_c (eq. 2). The index's model maps a descriptor to
//! the space its codes quantise ([`Model::project`]: every stage before quantisation — PCA,
//! rotations, a learned NCM metric W …); NCM works in that space: a query x is assigned to
//! the class whose projected mean Wμ_c is nearest (eq. 1, with d = ‖Wx − Wμ_c‖², eq. 4).
//!
//! Eq. 9-11 write the same rule as a linear classifier, f(c, x) = w_cᵀx + b_c with
//! b_c = −½‖Wμ_c‖²: −½‖Wx − Wμ_c‖² = −½‖Wx‖² + (Wx)ᵀ(Wμ_c) − ½‖Wμ_c‖², and the first term is
//! the same for every class. So classification is a dense *dot-product* scan over the class
//! means — the crate's SIMD dot kernel on rows `[Wμ_c, b_c]` against `[Wx, 1]`.
//!
//! **Centring.** The identity above holds after shifting every projected vector by the same
//! point r, and the rankings are identical. codedb takes r = the mean of the projected class
//! means and scores `(Wx − r)ᵀ(Wμ_c − r) − ½‖Wμ_c − r‖²`: without the shift, descriptors far
//! from the origin (raw pixels, un-centred features) give two large f32 terms that nearly
//! cancel, and rounding could reorder close classes. The score reported is this centred
//! eq. 9 score; `score − ½‖Wx − r‖² = −½ d(Wx, Wμ_c)`, the negated half squared distance.
//!
//! For a model whose stages are affine (center, linear, rotation, and the thresholds of a
//! binariser or the identity of a float/PQ quantiser), the projected mean equals the mean of
//! the projected images. For non-linear stages (random Fourier features, SKLSH) it is the
//! projection of the mean, which is what a class table of raw-descriptor sums can give.
//!
//! Classes with no images (count 0) have no mean and are left out.

use ndarray::Array2;

use crate::format::{ClassTable, FileId};
use crate::model::Model;
use crate::model::classify::ncm::{CentredScan, Ncm};

use super::error::{ClassError, Result};

/// The NCM classifier of one class table under one model: the class table's facts (ids,
/// names, counts) around the crate's one NCM (`model/classify/ncm.rs`) over the projected
/// means, and its centred scan table.
#[derive(Debug, Clone)]
pub struct ClassMeans {
    model_id: FileId,
    /// Projected dimension p.
    dim: usize,
    /// Class ids, ascending (the NCM's class order).
    ids: Vec<u32>,
    names: Vec<String>,
    counts: Vec<u64>,
    /// Wμ_c and b_c = −½‖Wμ_c‖² (eq. 10, uncentred), labelled by class id.
    ncm: Ncm,
    /// The centred f32 scan rows `[Wμ_c − r, −½‖Wμ_c − r‖²]` and r.
    pub(crate) scan: CentredScan,
}

impl ClassMeans {
    /// Projects the mean of every class of `table` that has images through `model`. The
    /// table's dimension must be the model's input dimension (class sums are raw
    /// descriptors).
    pub fn build(table: &ClassTable, model: &Model) -> Result<ClassMeans> {
        let d = table.dim as usize;
        if d != model.input_dim() {
            return Err(ClassError::Dimension {
                argument: "class table".into(),
                expected: model.input_dim(),
                got: d,
            });
        }
        let mut classes: Vec<_> = table.classes.iter().filter(|c| c.count > 0).collect();
        classes.sort_by_key(|c| c.id);
        let p = model.project_dim();
        let mut means = Array2::<f32>::zeros((classes.len(), d));
        for (mut row, c) in means.rows_mut().into_iter().zip(&classes) {
            let n = c.count as f64;
            for (o, s) in row.iter_mut().zip(&c.sum) {
                *o = (s / n) as f32;
            }
        }
        let projected: Vec<f32> = if classes.is_empty() {
            Vec::new()
        } else {
            let pm = model.project(means.view()).map_err(|e| match e {
                crate::model::ModelError::NonFinite {
                    row, col, value, ..
                } => ClassError::NonFinite {
                    argument: format!(
                        "class table: mean of class {}",
                        classes.get(row).map_or(0, |c| c.id)
                    ),
                    row,
                    col,
                    value: value as f64,
                },
                other => ClassError::Model(other),
            })?;
            pm.iter().copied().collect()
        };
        let labels: Vec<i64> = classes.iter().map(|c| c.id as i64).collect();
        let ncm = Ncm::from_projected(&labels, &projected, p);
        let scan = ncm.centred_scan();
        if let Some((k, col, value)) = scan.non_finite() {
            return Err(ClassError::NonFinite {
                argument: format!(
                    "projected mean of class {}",
                    classes.get(k).map_or(0, |c| c.id)
                ),
                row: k,
                col,
                value: value as f64,
            });
        }
        Ok(ClassMeans {
            model_id: model.id(),
            dim: p,
            ids: classes.iter().map(|c| c.id).collect(),
            names: classes.iter().map(|c| c.name.clone()).collect(),
            counts: classes.iter().map(|c| c.count).collect(),
            ncm,
            scan,
        })
    }

    /// Id of the model the means were projected with.
    pub fn model_id(&self) -> FileId {
        self.model_id
    }

    /// Number of classes with a mean.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when there are no classes.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Dimension of the projected space.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Class ids, ascending.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    fn position(&self, id: u32) -> Option<usize> {
        self.ids.binary_search(&id).ok()
    }

    /// The name of class `id`.
    pub fn name(&self, id: u32) -> Option<&str> {
        self.position(id)
            .and_then(|i| self.names.get(i))
            .map(String::as_str)
    }

    /// The image count n_c of class `id` (including prior pseudo-images, see `zero_shot`).
    pub fn count(&self, id: u32) -> Option<u64> {
        self.position(id).and_then(|i| self.counts.get(i).copied())
    }

    /// Wμ_c of class `id`.
    pub fn projected_mean(&self, id: u32) -> Option<&[f32]> {
        self.scan.projected_mean(self.position(id)?)
    }

    /// b_c = −½‖Wμ_c‖² of class `id` (eq. 10, uncentred).
    pub fn bias(&self, id: u32) -> Option<f32> {
        self.position(id)
            .and_then(|i| self.ncm.bias_at(i))
            .map(|b| b as f32)
    }

    /// The centring point r of the scores (module docs).
    pub fn reference(&self) -> &[f32] {
        self.scan.reference()
    }
}
