//! Mean centering, `x − mean` (stage kind CENTER). ITQ's formulation needs zero-centred data
//! (Gong et al. TPAMI 2013, §3: "we assume that the points are zero-centered"), and LSH works
//! well on centred data (§4.2).
//!
//! Stored tensors: `mean` f32 `[D]`.

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use crate::format::{StageRecord, stage_kind};

use super::error::{ModelError, Result};
use super::input::checked_rows;
use super::record::{RecordReader, f32_tensor};
use super::transform::{RowMap, apply_checked};

/// Rows per block of the mean's f64 partial sums (fixed, so the sum is reproducible).
const SUM_BLOCK: usize = 4096;

/// Subtracts a fixed mean vector.
#[derive(Debug, Clone, PartialEq)]
pub struct Center {
    mean: Vec<f32>,
}

/// Column means of a row-major buffer, accumulated in f64: per-block partial sums computed in
/// parallel, combined in block order, so the result does not depend on the thread count.
pub(crate) fn column_means_f64(x: &[f32], dim: usize) -> Vec<f64> {
    let n = x.len() / dim.max(1);
    let partial: Vec<Vec<f64>> = x
        .par_chunks(SUM_BLOCK * dim)
        .map(|block| {
            let mut s = vec![0f64; dim];
            for row in block.chunks_exact(dim) {
                for (a, &v) in s.iter_mut().zip(row) {
                    *a += v as f64;
                }
            }
            s
        })
        .collect();
    let mut sum = vec![0f64; dim];
    for p in partial {
        for (a, v) in sum.iter_mut().zip(p) {
            *a += v;
        }
    }
    let inv = 1.0 / n.max(1) as f64;
    sum.iter().map(|s| s * inv).collect()
}

impl Center {
    /// A centering stage for a given mean (non-empty, finite).
    pub fn new(mean: Vec<f32>) -> Result<Center> {
        if mean.is_empty() {
            return Err(ModelError::bad_tensor("center", "mean", "is empty"));
        }
        if let Some(p) = mean.iter().position(|v| !v.is_finite()) {
            return Err(ModelError::bad_tensor(
                "center",
                "mean",
                format!("non-finite value at element {p}"),
            ));
        }
        Ok(Center { mean })
    }

    /// The mean of the rows of `x`, accumulated in f64 (a sum of 10⁶ f32 pixels loses ~3
    /// digits in f32), stored as f32.
    pub fn fit(x: ArrayView2<f32>) -> Result<Center> {
        let rows = checked_rows("center: training data", x, None)?;
        let mean = column_means_f64(rows.as_slice(), rows.dim());
        Center::new(mean.into_iter().map(|v| v as f32).collect())
    }

    /// The mean subtracted from every input row.
    pub fn mean(&self) -> &[f32] {
        &self.mean
    }

    /// `x − mean` for each row of `x`.
    pub fn apply(&self, x: ArrayView2<f32>) -> Result<Array2<f32>> {
        apply_checked(self, "center: input", x)
    }

    /// The stage as a model-file record (FORMAT.md §4.2).
    pub fn to_record(&self) -> StageRecord {
        StageRecord {
            kind: stage_kind::CENTER,
            required: true,
            tensors: vec![f32_tensor("mean", &[self.mean.len()], self.mean.clone())],
        }
    }

    /// Decodes the stage from its model-file record, checking tensor names and shapes.
    pub fn from_record(rec: &StageRecord) -> Result<Center> {
        let mut r = RecordReader::new("center", stage_kind::CENTER, rec)?;
        let (mean, _) = r.f32("mean", &[None])?;
        r.finish()?;
        Center::new(mean.to_vec())
    }
}

impl RowMap for Center {
    fn in_dim(&self) -> usize {
        self.mean.len()
    }
    fn out_dim(&self) -> usize {
        self.mean.len()
    }
    fn map_row(&self, x: &[f32], out: &mut [f32]) {
        for ((o, &v), &m) in out.iter_mut().zip(x).zip(&self.mean) {
            *o = v - m;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn fit_apply_and_round_trip() {
        let x = array![[1.0f32, 2.0], [3.0, 6.0]];
        let c = Center::fit(x.view()).unwrap();
        assert_eq!(c.mean(), &[2.0, 4.0]);
        let y = c.apply(x.view()).unwrap();
        assert_eq!(y, array![[-1.0f32, -2.0], [1.0, 2.0]]);
        assert_eq!(Center::from_record(&c.to_record()).unwrap(), c);
    }

    #[test]
    fn wrong_dimension_and_bad_records_are_refused() {
        let c = Center::new(vec![0.0; 3]).unwrap();
        let err = c.apply(array![[1.0f32, 2.0]].view()).unwrap_err();
        assert!(
            err.to_string().contains("expected 3 columns, got 2"),
            "{err}"
        );
        let mut rec = c.to_record();
        rec.tensors[0].name = "avg".into();
        let err = Center::from_record(&rec).unwrap_err().to_string();
        assert!(err.contains("\"mean\"") && err.contains("missing"), "{err}");
        let mut rec = c.to_record();
        rec.tensors[0].data = crate::format::TensorData::F32(vec![0.0, f32::NAN, 0.0]);
        let err = Center::from_record(&rec).unwrap_err().to_string();
        assert!(
            err.contains("center") && err.contains("non-finite"),
            "{err}"
        );
    }
}
