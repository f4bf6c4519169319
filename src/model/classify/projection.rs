//! An affine projection `y = W (x − m)`: the metric `d_W(x, x') = ‖W x − W x'‖²` of
//! Mensink et al. TPAMI 2013 eq. 4, with the centre `m` kept so that the projected data is
//! zero-mean (what ITQ / PQ stages after it expect). Every learned or fixed metric of this
//! module (PCA, FDA, inverse covariance, NCMML, NCMC, LMNN) is one of these, and converts to
//! the model stages CENTER + LINEAR (`Linear` is stage kind 2 of the model file), so a learned
//! W can precede ITQ or PQ (the paper's Table 8 use).
//!
//! Rows are projected in fixed blocks with sequential faer products, so the result does not
//! depend on the thread count.

use faer::Par;
use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use super::super::center::Center;
use super::super::error::{ClassifyError, ClassifyResult as Result, ModelError};
use super::super::input::checked_rows;
use super::super::linalg::a_bt_f32;
use super::super::linear::Linear;
use super::super::stage::Stage;

/// Rows per projection block.
const BLOCK: usize = 512;

/// `y = W (x − m)`, `W` d×D (one output direction per row).
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    mean: Vec<f32>,
    weight: Array2<f32>,
}

impl Projection {
    /// A projection from the centre `mean` (length D) and `weight` (d × D); all finite.
    pub fn new(mean: Vec<f32>, weight: Array2<f32>) -> Result<Projection> {
        let (d, dd) = weight.dim();
        if d == 0 || dd == 0 {
            return Err(ClassifyError::invalid(
                "projection weight",
                format!("empty shape [{d}, {dd}]"),
            ));
        }
        if mean.len() != dd {
            return Err(ClassifyError::invalid(
                "projection mean",
                format!(
                    "length {} does not match the {dd} input columns",
                    mean.len()
                ),
            ));
        }
        if weight.iter().chain(&mean).any(|v| !v.is_finite()) {
            return Err(ClassifyError::invalid(
                "projection",
                "non-finite value in the mean or weight",
            ));
        }
        Ok(Projection {
            mean,
            weight: weight.as_standard_layout().into_owned(),
        })
    }

    /// The PCA projection (centre + top directions) of a fitted [`Pca`](super::super::pca::Pca).
    pub fn from_pca(pca: &super::super::pca::Pca) -> Result<Projection> {
        Projection::new(
            pca.center().mean().to_vec(),
            pca.linear().weight().to_owned(),
        )
    }

    /// Dimension of the input rows.
    pub fn in_dim(&self) -> usize {
        self.weight.ncols()
    }

    /// Dimension of the projected rows.
    pub fn out_dim(&self) -> usize {
        self.weight.nrows()
    }

    /// The mean subtracted before the weight is applied.
    pub fn mean(&self) -> &[f32] {
        &self.mean
    }

    /// d × D.
    pub fn weight(&self) -> ArrayView2<'_, f32> {
        self.weight.view()
    }

    /// Projects the rows of `x` (validated: width, finiteness).
    pub fn apply(&self, x: ArrayView2<f32>) -> Result<Array2<f32>> {
        let rows = checked_rows("projection: input", x, Some(self.in_dim()))?;
        let y = self.apply_rows(rows.as_slice());
        Array2::from_shape_vec((rows.n(), self.out_dim()), y)
            .map_err(|e| ModelError::shape("projection output", e).into())
    }

    /// Projects validated row-major rows.
    pub(crate) fn apply_rows(&self, x: &[f32]) -> Vec<f32> {
        let (d, dd) = self.weight.dim();
        let w = self.weight.as_slice().unwrap_or(&[]);
        let n = x.len() / dd;
        let mut out = vec![0f32; n * d];
        out.par_chunks_mut(BLOCK * d)
            .zip(x.par_chunks(BLOCK * dd))
            .for_each(|(o, blk)| {
                let nb = blk.len() / dd;
                let mut c = blk.to_vec();
                for row in c.chunks_exact_mut(dd) {
                    for (v, m) in row.iter_mut().zip(&self.mean) {
                        *v -= m;
                    }
                }
                o.copy_from_slice(&a_bt_f32(&c, w, nb, dd, d, Par::Seq));
            });
        out
    }

    /// Projects one vector in f64 (class means: exact sums, no f32 rounding of the input).
    pub(crate) fn apply_f64(&self, v: &[f64]) -> Vec<f64> {
        let centred: Vec<f64> = v
            .iter()
            .zip(&self.mean)
            .map(|(a, m)| a - *m as f64)
            .collect();
        self.weight
            .rows()
            .into_iter()
            .map(|w| w.iter().zip(&centred).map(|(a, b)| *a as f64 * b).sum())
            .collect()
    }

    /// The model stages CENTER (`m`) and LINEAR (`W`, stage kind 2).
    pub fn to_stages(&self) -> Result<Vec<Stage>> {
        let center = Center::new(self.mean.clone())?;
        let linear = Linear::new(self.weight.clone(), None)?;
        Ok(vec![Stage::Center(center), Stage::Linear(linear)])
    }
}
