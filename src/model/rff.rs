//! Random Fourier features (stage kind RFF), the explicit Gaussian-kernel map of Rahimi &
//! Recht (NIPS 2007) used by KPCA-ITQ (Gong et al. TPAMI 2013, §6.1):
//!
//! `Φ(x)_k = sqrt(2/D) · cos(w_k · x + b_k)`, `w_k ~ N(0, σ⁻² I)`, `b_k ~ U[0, 2π)`,
//!
//! so that `Φ(x) · Φ(y) ≈ K(x, y) = exp(−‖x − y‖² / (2σ²))`. The paper writes each coordinate
//! as `sqrt(2) cos(...)`; the extra `1/sqrt(D)` (FORMAT.md's form) only rescales the embedding,
//! which changes neither the PCA directions nor ITQ (§3.2: ITQ "does not care at all about the
//! scaling"). σ defaults to the mean distance to the 50th nearest neighbour (§6.2), D to 3,000.
//!
//! Stored tensors: `weight` f32 `[D, d]` (rows `w_k`, already divided by σ), `phase` f32 `[D]`
//! (`b_k`), `bandwidth` f64 `[]` (σ, informative: for reports and `inspect`).

use ndarray::{Array2, ArrayView2};

use crate::format::{StageRecord, stage_kind};

use super::error::{ModelError, Result};
use super::fixed_order::dot;
use super::random::{gaussian, rng, uniform};
use super::record::{RecordReader, f32_tensor, f64_tensor};
use super::transform::{RowMap, apply_checked};

/// Random features used by KPCA-ITQ in the paper (§6.1).
pub const DEFAULT_RFF_FEATURES: usize = 3000;

/// `x ↦ sqrt(2/D) cos(W x + b)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rff {
    weight: Array2<f32>,
    phase: Vec<f32>,
    bandwidth: f64,
}

/// Checks a kernel bandwidth σ.
pub(crate) fn check_bandwidth(stage: &str, sigma: f64) -> Result<()> {
    if !(sigma.is_finite() && sigma > 0.0) {
        return Err(ModelError::bad_tensor(
            stage,
            "bandwidth",
            format!("must be finite and > 0, got {sigma}"),
        ));
    }
    Ok(())
}

/// Draws `rows` directions `w ~ N(0, σ⁻² I)` in `dim` dimensions and phases `b ~ U[0, 2π)`.
pub(crate) fn fourier_directions(
    rows: usize,
    dim: usize,
    sigma: f64,
    seed: u64,
) -> (Vec<f32>, Vec<f32>) {
    let mut r = rng(seed);
    let w: Vec<f32> = gaussian(&mut r, rows * dim)
        .into_iter()
        .map(|g| (g / sigma) as f32)
        .collect();
    let b: Vec<f32> = uniform(&mut r, rows, 0.0, std::f64::consts::TAU)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    (w, b)
}

impl Rff {
    /// A map from stored parameters (checked: finite, consistent shapes, σ > 0).
    pub fn new(weight: Array2<f32>, phase: Vec<f32>, bandwidth: f64) -> Result<Rff> {
        let (dd, d) = weight.dim();
        if dd == 0 || d == 0 {
            return Err(ModelError::bad_tensor(
                "rff",
                "weight",
                format!("empty shape [{dd}, {d}]"),
            ));
        }
        if weight.iter().any(|v| !v.is_finite()) {
            return Err(ModelError::bad_tensor("rff", "weight", "non-finite value"));
        }
        if phase.len() != dd || phase.iter().any(|v| !v.is_finite()) {
            return Err(ModelError::bad_tensor(
                "rff",
                "phase",
                format!("need {dd} finite values, got {}", phase.len()),
            ));
        }
        check_bandwidth("rff", bandwidth)?;
        Ok(Rff {
            weight: weight.as_standard_layout().into_owned(),
            phase,
            bandwidth,
        })
    }

    /// `features` random features of `input_dim`-dimensional data for the Gaussian kernel of
    /// bandwidth σ = `bandwidth`, seeded.
    pub fn random(input_dim: usize, features: usize, bandwidth: f64, seed: u64) -> Result<Rff> {
        if input_dim == 0 || features == 0 {
            return Err(ModelError::invalid(
                "rff",
                format!("dimensions must be >= 1, got {features} features of {input_dim} inputs"),
            ));
        }
        check_bandwidth("rff", bandwidth)?;
        let (w, b) = fourier_directions(features, input_dim, bandwidth, seed);
        let w = Array2::from_shape_vec((features, input_dim), w)
            .map_err(|e| ModelError::shape("rff weight", e))?;
        Rff::new(w, b, bandwidth)
    }

    /// Kernel bandwidth σ.
    pub fn bandwidth(&self) -> f64 {
        self.bandwidth
    }

    /// Number of features D.
    pub fn features(&self) -> usize {
        self.weight.nrows()
    }

    /// The directions `w_k` (D × d, already divided by σ).
    pub fn weight(&self) -> ArrayView2<'_, f32> {
        self.weight.view()
    }

    /// The phases `b_k`.
    pub fn phase(&self) -> &[f32] {
        &self.phase
    }

    /// `sqrt(2/D)`.
    pub(crate) fn scale(&self) -> f64 {
        (2.0 / self.weight.nrows() as f64).sqrt()
    }

    /// Maps rows to their random Fourier features Φ(x) (Rahimi & Recht, NIPS 2007).
    pub fn apply(&self, x: ArrayView2<f32>) -> Result<Array2<f32>> {
        apply_checked(self, "rff: input", x)
    }

    /// The stage as a model-file record (FORMAT.md §4.2).
    pub fn to_record(&self) -> StageRecord {
        let (dd, d) = self.weight.dim();
        StageRecord {
            kind: stage_kind::RFF,
            required: true,
            tensors: vec![
                f32_tensor("weight", &[dd, d], self.weight.iter().copied().collect()),
                f32_tensor("phase", &[dd], self.phase.clone()),
                f64_tensor("bandwidth", &[], vec![self.bandwidth]),
            ],
        }
    }

    /// Decodes the stage from its model-file record, checking tensor names and shapes.
    pub fn from_record(rec: &StageRecord) -> Result<Rff> {
        let mut r = RecordReader::new("rff", stage_kind::RFF, rec)?;
        let (w, shape) = r.f32("weight", &[None, None])?;
        let (phase, _) = r.f32("phase", &[Some(shape[0])])?;
        let sigma = r.f64_scalar("bandwidth")?;
        r.finish()?;
        let w = Array2::from_shape_vec((shape[0], shape[1]), w.to_vec())
            .map_err(|e| ModelError::tensor_shape("rff", "weight", e))?;
        Rff::new(w, phase.to_vec(), sigma)
    }
}

/// `scale · cos(arg)`, the cosine in f64: arguments reach tens of radians, where f32 range
/// reduction is coarse.
#[inline]
pub(crate) fn feature(arg: f32, scale: f64) -> f32 {
    ((arg as f64).cos() * scale) as f32
}

impl RowMap for Rff {
    fn in_dim(&self) -> usize {
        self.weight.ncols()
    }
    fn out_dim(&self) -> usize {
        self.weight.nrows()
    }
    fn map_row(&self, x: &[f32], out: &mut [f32]) {
        let d = self.weight.ncols();
        let scale = self.scale();
        let w = self.weight.as_slice().unwrap_or(&[]);
        for ((o, row), &b) in out.iter_mut().zip(w.chunks_exact(d)).zip(&self.phase) {
            *o = feature(dot(row, x) + b, scale);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    #[test]
    fn inner_products_approximate_the_gaussian_kernel() {
        let sigma = 2.0;
        let rff = Rff::random(3, 20000, sigma, 11).unwrap();
        let x = Array2::from_shape_vec(
            (3, 3),
            vec![0.0f32, 0.0, 0.0, 1.0, 1.0, 0.0, 3.0, -1.0, 2.0],
        )
        .unwrap();
        let phi = rff.apply(x.view()).unwrap();
        for i in 0..3 {
            for j in 0..3 {
                let d2: f64 = (0..3)
                    .map(|k| ((x[(i, k)] - x[(j, k)]) as f64).powi(2))
                    .sum();
                let want = (-d2 / (2.0 * sigma * sigma)).exp();
                let got: f64 = (0..20000).map(|k| (phi[(i, k)] * phi[(j, k)]) as f64).sum();
                assert!((got - want).abs() < 0.03, "K({i},{j}) = {got} vs {want}");
            }
        }
        assert_eq!(Rff::from_record(&rff.to_record()).unwrap(), rff);
    }

    #[test]
    fn bad_bandwidth_is_refused() {
        let rff = Rff::random(2, 4, 1.0, 0).unwrap();
        let mut rec = rff.to_record();
        rec.tensors[2].data = crate::format::TensorData::F64(vec![0.0]);
        let err = Rff::from_record(&rec).unwrap_err().to_string();
        assert!(err.contains("rff") && err.contains("bandwidth"), "{err}");
    }
}
