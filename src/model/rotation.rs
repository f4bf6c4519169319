//! Orthogonal rotation of projected data (stage kind ROTATION): a random rotation (PCA-RR,
//! Gong et al. TPAMI 2013 §4.2, after Jégou et al. 2010) or the ITQ rotation (§3.2).
//!
//! Convention: rows are vectors, and a row `v` maps to `ṽ = v R`, exactly the paper's
//! `Ṽ = V R` (eq. 2); for column vectors that is `Rᵀ v`, as FORMAT.md §4.2 writes it.
//!
//! Stored tensors: `rotation` f32 `[c, c]`, the paper's `R`. On load it must be orthogonal:
//! `max |RᵀR − I| ≤ 1e-3` (f32 storage keeps it near 1e-6; anything worse is corruption).

use ndarray::{Array2, ArrayView2};

use crate::format::{StageRecord, stage_kind};

use super::error::{ModelError, Result};
use super::fixed_order::matmul_rows;
use super::linalg::{orthogonal_from_gaussian, orthogonality_error};
use super::random::{gaussian, rng};
use super::record::{RecordReader, f32_tensor};
use super::transform::{RowMap, apply_checked};

/// Largest accepted deviation of `RᵀR` from the identity.
pub const ORTHOGONALITY_TOLERANCE: f64 = 1e-3;

/// `ṽ = v R` for an orthogonal `R`.
#[derive(Debug, Clone, PartialEq)]
pub struct Rotation {
    /// `R`, c×c, standard layout.
    r: Array2<f32>,
    /// `Rᵀ`, row-major: row j is column j of `R`, so `ṽ_j = dot(rt_j, v)`.
    rt: Vec<f32>,
    c: usize,
}

impl Rotation {
    /// A rotation from a square, finite, orthogonal matrix `R` (checked).
    pub fn new(r: Array2<f32>) -> Result<Rotation> {
        let (a, b) = r.dim();
        if a != b || a == 0 {
            return Err(ModelError::bad_tensor(
                "rotation",
                "rotation",
                format!("must be square and non-empty, got [{a}, {b}]"),
            ));
        }
        if r.iter().any(|v| !v.is_finite()) {
            return Err(ModelError::bad_tensor(
                "rotation",
                "rotation",
                "non-finite value",
            ));
        }
        let c = a;
        let r = r.as_standard_layout().into_owned();
        let flat: Vec<f32> = r.iter().copied().collect();
        let err = orthogonality_error(&flat, c);
        if err.is_nan() || err > ORTHOGONALITY_TOLERANCE {
            return Err(ModelError::bad_tensor(
                "rotation",
                "rotation",
                format!("not orthogonal: max |RᵀR − I| = {err:.3e} > {ORTHOGONALITY_TOLERANCE:e}"),
            ));
        }
        let mut rt = vec![0f32; c * c];
        for i in 0..c {
            for j in 0..c {
                rt[j * c + i] = flat[i * c + j];
            }
        }
        Ok(Rotation { r, rt, c })
    }

    /// A Haar-random c×c rotation: QR of a seeded standard normal matrix with the sign fix
    /// (see `linalg::orthogonal_from_gaussian`). PCA-RR's rotation and ITQ's initialisation.
    pub fn random(c: usize, seed: u64) -> Result<Rotation> {
        if c == 0 {
            return Err(ModelError::invalid(
                "random rotation",
                "dimension must be >= 1",
            ));
        }
        let g = gaussian(&mut rng(seed), c * c);
        let q = orthogonal_from_gaussian(&g, c);
        Rotation::from_f64(&q, c)
    }

    pub(crate) fn from_f64(r: &[f64], c: usize) -> Result<Rotation> {
        let m = Array2::from_shape_vec((c, c), r.iter().map(|&v| v as f32).collect())
            .map_err(|e| ModelError::shape("rotation", e))?;
        Rotation::new(m)
    }

    /// `R` (c × c).
    pub fn matrix(&self) -> ArrayView2<'_, f32> {
        self.r.view()
    }

    /// `R` as a row-major slice.
    pub(crate) fn as_slice(&self) -> &[f32] {
        // `new` stores R in standard layout, so the slice view always exists.
        self.r.as_slice().unwrap_or(&[])
    }

    /// Dimension of the rotated space.
    pub fn dim(&self) -> usize {
        self.c
    }

    /// `x R` for each row of `x`.
    pub fn apply(&self, x: ArrayView2<f32>) -> Result<Array2<f32>> {
        apply_checked(self, "rotation: input", x)
    }

    /// The stage as a model-file record (FORMAT.md §4.2).
    pub fn to_record(&self) -> StageRecord {
        StageRecord {
            kind: stage_kind::ROTATION,
            required: true,
            tensors: vec![f32_tensor(
                "rotation",
                &[self.c, self.c],
                self.r.iter().copied().collect(),
            )],
        }
    }

    /// Decodes the stage from its model-file record, checking tensor names and shapes.
    pub fn from_record(rec: &StageRecord) -> Result<Rotation> {
        let mut r = RecordReader::new("rotation", stage_kind::ROTATION, rec)?;
        let (m, shape) = r.f32("rotation", &[None, None])?;
        r.finish()?;
        let arr = Array2::from_shape_vec((shape[0], shape[1]), m.to_vec())
            .map_err(|e| ModelError::tensor_shape("rotation", "rotation", e))?;
        Rotation::new(arr)
    }
}

impl RowMap for Rotation {
    fn in_dim(&self) -> usize {
        self.c
    }
    fn out_dim(&self) -> usize {
        self.c
    }
    fn map_row(&self, x: &[f32], out: &mut [f32]) {
        self.map_block(x, out);
    }
    /// `ṽ_j = dot(rt_j, v)` for every row (the multi-row kernel; the same bits as one row at a
    /// time).
    fn map_block(&self, x: &[f32], out: &mut [f32]) {
        matmul_rows(&self.rt, x, self.c, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn random_rotation_is_orthogonal_and_seeded() {
        for c in [1usize, 2, 8, 64, 200] {
            let r = Rotation::random(c, 42).unwrap();
            assert!(orthogonality_error(r.as_slice(), c) < 1e-5, "c={c}");
            assert_eq!(r, Rotation::random(c, 42).unwrap());
        }
        assert_ne!(
            Rotation::random(8, 1).unwrap(),
            Rotation::random(8, 2).unwrap()
        );
    }

    #[test]
    fn apply_is_row_times_r() {
        // 90° rotation: R = [[0, 1], [-1, 0]]; (1, 0) R = (0, 1).
        let r = Rotation::new(array![[0.0f32, 1.0], [-1.0, 0.0]]).unwrap();
        let y = r.apply(array![[1.0f32, 0.0], [0.0, 2.0]].view()).unwrap();
        assert_eq!(y, array![[0.0f32, 1.0], [-2.0, 0.0]]);
        assert_eq!(Rotation::from_record(&r.to_record()).unwrap(), r);
    }

    #[test]
    fn non_orthogonal_is_refused_by_name() {
        let err = Rotation::new(array![[1.0f32, 0.5], [0.0, 1.0]])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("rotation") && err.contains("not orthogonal"),
            "{err}"
        );
        let err = Rotation::new(array![[1.0f32, 0.0, 0.0], [0.0, 1.0, 0.0]])
            .unwrap_err()
            .to_string();
        assert!(err.contains("square"), "{err}");
    }
}
