//! Linear map `y = W x (+ b)` (stage kind LINEAR): PCA projections (Gong et al. TPAMI 2013,
//! eq. 1: `V = X W`, stored here as the c×d matrix `Wᵀ`, one direction per row), LSH's
//! Gaussian random projections (§4.2), and any later learned projection (CCA, ...).
//!
//! Stored tensors: `weight` f32 `[out, in]`; optional `bias` f32 `[out]`; optional
//! `eigenvalues` f64 `[out]` (PCA variances of each output, kept for reports and for
//! eigenvalue-scaled embeddings such as CCA-ITQ, eq. 4).

use ndarray::{Array2, ArrayView2};

use crate::format::{StageRecord, stage_kind};

use super::error::{ModelError, Result};
use super::fixed_order::{add_bias, matmul_rows};
use super::random::{gaussian, rng};
use super::record::{RecordReader, f32_tensor, f64_tensor};
use super::transform::{RowMap, apply_checked};

/// `y = W x + b` on each row.
#[derive(Debug, Clone, PartialEq)]
pub struct Linear {
    weight: Array2<f32>,
    bias: Option<Vec<f32>>,
    eigenvalues: Option<Vec<f64>>,
}

impl Linear {
    /// A linear map from `weight` (out × in, one output direction per row) and an optional
    /// bias of length `out`. Everything must be finite and non-empty.
    pub fn new(weight: Array2<f32>, bias: Option<Vec<f32>>) -> Result<Linear> {
        let (o, i) = weight.dim();
        if o == 0 || i == 0 {
            return Err(ModelError::bad_tensor(
                "linear",
                "weight",
                format!("empty shape [{o}, {i}]"),
            ));
        }
        if weight.iter().any(|v| !v.is_finite()) {
            return Err(ModelError::bad_tensor(
                "linear",
                "weight",
                "non-finite value",
            ));
        }
        if let Some(b) = &bias {
            if b.len() != o {
                return Err(ModelError::bad_tensor(
                    "linear",
                    "bias",
                    format!("length {} does not match {o} outputs", b.len()),
                ));
            }
            if b.iter().any(|v| !v.is_finite()) {
                return Err(ModelError::bad_tensor("linear", "bias", "non-finite value"));
            }
        }
        let weight = weight.as_standard_layout().into_owned();
        Ok(Linear {
            weight,
            bias,
            eigenvalues: None,
        })
    }

    /// Attaches the variance of each output (PCA eigenvalues), one per output, finite.
    pub fn with_eigenvalues(mut self, eigenvalues: Vec<f64>) -> Result<Linear> {
        if eigenvalues.len() != self.weight.nrows() || eigenvalues.iter().any(|v| !v.is_finite()) {
            return Err(ModelError::bad_tensor(
                "linear",
                "eigenvalues",
                format!(
                    "need {} finite values, got {}",
                    self.weight.nrows(),
                    eigenvalues.len()
                ),
            ));
        }
        self.eigenvalues = Some(eigenvalues);
        Ok(self)
    }

    /// LSH projections (Gong et al. §4.2, after Andoni & Indyk 2008): `out` directions with
    /// i.i.d. standard normal entries, seeded.
    pub fn random_projection(out: usize, input: usize, seed: u64) -> Result<Linear> {
        if out == 0 || input == 0 {
            return Err(ModelError::invalid(
                "random projection",
                format!("dimensions must be >= 1, got {out} x {input}"),
            ));
        }
        let g = gaussian(&mut rng(seed), out * input);
        let w = Array2::from_shape_vec((out, input), g.iter().map(|&v| v as f32).collect())
            .map_err(|e| ModelError::shape("random projection", e))?;
        Linear::new(w, None)
    }

    /// The weight matrix, out × in (one output direction per row).
    pub fn weight(&self) -> ArrayView2<'_, f32> {
        self.weight.view()
    }

    /// The bias added after the weight, if any.
    pub fn bias(&self) -> Option<&[f32]> {
        self.bias.as_deref()
    }

    /// PCA eigenvalues (variance of each output), when this map came from PCA.
    pub fn eigenvalues(&self) -> Option<&[f64]> {
        self.eigenvalues.as_deref()
    }

    /// `W x + b` for each row of `x`.
    pub fn apply(&self, x: ArrayView2<f32>) -> Result<Array2<f32>> {
        apply_checked(self, "linear: input", x)
    }

    /// The stage as a model-file record (FORMAT.md §4.2).
    pub fn to_record(&self) -> StageRecord {
        let (o, i) = self.weight.dim();
        let mut tensors = vec![f32_tensor(
            "weight",
            &[o, i],
            self.weight.iter().copied().collect(),
        )];
        if let Some(b) = &self.bias {
            tensors.push(f32_tensor("bias", &[o], b.clone()));
        }
        if let Some(e) = &self.eigenvalues {
            tensors.push(f64_tensor("eigenvalues", &[o], e.clone()));
        }
        StageRecord {
            kind: stage_kind::LINEAR,
            required: true,
            tensors,
        }
    }

    /// Decodes the stage from its model-file record, checking tensor names and shapes.
    pub fn from_record(rec: &StageRecord) -> Result<Linear> {
        let mut r = RecordReader::new("linear", stage_kind::LINEAR, rec)?;
        let (w, shape) = r.f32("weight", &[None, None])?;
        let (o, i) = (shape[0], shape[1]);
        let bias = r.opt_f32("bias", &[Some(o)])?.map(|b| b.to_vec());
        let eig = r.opt_f64("eigenvalues", &[Some(o)])?.map(|e| e.to_vec());
        r.finish()?;
        let weight = Array2::from_shape_vec((o, i), w.to_vec())
            .map_err(|e| ModelError::tensor_shape("linear", "weight", e))?;
        let lin = Linear::new(weight, bias)?;
        match eig {
            Some(e) => lin.with_eigenvalues(e),
            None => Ok(lin),
        }
    }
}

impl RowMap for Linear {
    fn in_dim(&self) -> usize {
        self.weight.ncols()
    }
    fn out_dim(&self) -> usize {
        self.weight.nrows()
    }
    fn map_row(&self, x: &[f32], out: &mut [f32]) {
        self.map_block(x, out);
    }
    fn map_block(&self, x: &[f32], out: &mut [f32]) {
        // `new` stores the weight in standard layout, so the slice view always exists.
        let w = self.weight.as_slice().unwrap_or(&[]);
        matmul_rows(w, x, self.weight.ncols(), out);
        add_bias(out, self.weight.nrows(), self.bias.as_deref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn apply_and_round_trip() {
        let w = array![[1.0f32, 0.0, 2.0], [0.0, -1.0, 0.5]];
        let lin = Linear::new(w, Some(vec![1.0, 0.0]))
            .unwrap()
            .with_eigenvalues(vec![3.0, 1.0])
            .unwrap();
        let y = lin.apply(array![[1.0f32, 2.0, 3.0]].view()).unwrap();
        assert_eq!(y, array![[8.0f32, -0.5]]);
        assert_eq!(Linear::from_record(&lin.to_record()).unwrap(), lin);
    }

    #[test]
    fn bad_records_name_the_tensor() {
        let lin = Linear::new(array![[1.0f32, 2.0]], None).unwrap();
        let mut rec = lin.to_record();
        rec.tensors.push(f32_tensor("bias", &[3], vec![0.0; 3]));
        let err = Linear::from_record(&rec).unwrap_err().to_string();
        assert!(
            err.contains("linear") && err.contains("\"bias\"") && err.contains("[1]"),
            "{err}"
        );
        let mut rec = lin.to_record();
        rec.tensors.push(f32_tensor("scale", &[1], vec![1.0]));
        let err = Linear::from_record(&rec).unwrap_err().to_string();
        assert!(err.contains("\"scale\""), "{err}");
        let mut rec = lin.to_record();
        rec.tensors[0].data = crate::format::TensorData::F64(vec![1.0, 2.0]);
        let err = Linear::from_record(&rec).unwrap_err().to_string();
        assert!(err.contains("dtype f32"), "{err}");
    }

    #[test]
    fn random_projection_is_seeded() {
        let a = Linear::random_projection(4, 3, 9).unwrap();
        let b = Linear::random_projection(4, 3, 9).unwrap();
        let c = Linear::random_projection(4, 3, 10).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
