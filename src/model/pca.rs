//! PCA (Gong et al. TPAMI 2013, §3.1, eq. 1): the top-c eigenvectors of the data covariance
//! maximise `tr(Wᵀ Xᵀ X W)` subject to `Wᵀ W = I`. Stored as a CENTER stage (the mean) and a
//! LINEAR stage whose rows are the directions, with their eigenvalues.
//!
//! Two paths:
//! - **covariance** (D ≤ N): one streamed pass over row chunks ([`CovarianceAccumulator`]),
//!   each block centred on its own mean and its scatter `XᵀX` accumulated in f64 with a
//!   parallel faer product (lower triangle only), blocks merged with the pairwise update of
//!   Chan, Golub & LeVeque (1979) — numerically safe even when the mean is far from 0, and it
//!   works on chunks coming from a file reader. Then a symmetric eigendecomposition (faer).
//! - **SVD** (D > N, e.g. 3,000 random Fourier features of a small sample): thin SVD of the
//!   centred N×D data; eigenvalues are `s² / (N − 1)`. Needs the rows in memory.
//!
//! Conventions: covariance divides by N − 1 (as scikit-learn's `explained_variance_`);
//! directions are sorted by eigenvalue, largest first; each direction's sign makes its
//! largest-magnitude component positive (the first one on ties), so PCA is deterministic.

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use super::center::{Center, column_means_f64};
use super::error::{ModelError, Result};
use super::input::checked_rows;
use super::linalg::{
    add_gram_lower_f64, fix_column_signs, par, sym_eig_desc, symmetrize_from_lower, thin_svd_right,
};
use super::linear::Linear;
use super::transform::{RowMap, map_rows};

/// f64 values per accumulation block (rows × dim): 32 MB.
const BLOCK_VALUES: usize = 1 << 22;

/// Streaming mean and scatter matrix of rows, in f64.
#[derive(Debug, Clone)]
pub struct CovarianceAccumulator {
    dim: usize,
    count: u64,
    mean: Vec<f64>,
    /// Σ (x − mean)(x − mean)ᵀ, row-major d×d; only the lower triangle is maintained.
    scatter: Vec<f64>,
}

/// The result of [`CovarianceAccumulator::finish`].
#[derive(Debug, Clone)]
pub struct Covariance {
    /// Dimension of the rows.
    pub dim: usize,
    /// Rows accumulated.
    pub count: u64,
    /// Mean of the rows.
    pub mean: Vec<f64>,
    /// Row-major symmetric d×d covariance, divided by `count − 1`.
    pub matrix: Vec<f64>,
}

impl CovarianceAccumulator {
    /// An empty accumulator for rows of `dim` values.
    pub fn new(dim: usize) -> Result<CovarianceAccumulator> {
        if dim == 0 {
            return Err(ModelError::invalid("covariance", "dimension must be >= 1"));
        }
        let cells = dim.checked_mul(dim).ok_or_else(|| {
            ModelError::invalid("covariance", format!("dimension {dim} too large"))
        })?;
        Ok(CovarianceAccumulator {
            dim,
            count: 0,
            mean: vec![0.0; dim],
            scatter: vec![0.0; cells],
        })
    }

    /// Dimension of the rows.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Rows accumulated so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Adds a chunk of rows (validated: dimension and finiteness). Chunks may have any size;
    /// the result does not depend on how rows are split into chunks beyond f64 rounding.
    pub fn add_chunk(&mut self, x: ArrayView2<f32>) -> Result<()> {
        let rows = checked_rows("covariance: chunk", x, Some(self.dim))?;
        self.add_rows(rows.as_slice());
        Ok(())
    }

    /// Adds row-major rows that are already validated.
    pub(crate) fn add_rows(&mut self, data: &[f32]) {
        let d = self.dim;
        let block_rows = (BLOCK_VALUES / d).clamp(256, 4096);
        for block in data.chunks(block_rows * d) {
            let nb = block.len() / d;
            if nb == 0 {
                continue;
            }
            let bmean = column_means_f64(block, d);
            let mut centred = vec![0f64; nb * d];
            centred
                .par_chunks_mut(d)
                .zip(block.par_chunks(d))
                .for_each(|(o, x)| {
                    for ((o, &v), &m) in o.iter_mut().zip(x).zip(&bmean) {
                        *o = v as f64 - m;
                    }
                });
            let mut bscatter = vec![0f64; d * d];
            add_gram_lower_f64(&mut bscatter, &centred, nb, d, par());
            self.merge(nb as u64, &bmean, &bscatter);
        }
    }

    /// Chan et al.'s pairwise merge: M = Ma + Mb + δδᵀ·na·nb/n, δ = mean_b − mean_a.
    fn merge(&mut self, nb: u64, bmean: &[f64], bscatter: &[f64]) {
        let d = self.dim;
        let na = self.count;
        let n = na + nb;
        let delta: Vec<f64> = bmean.iter().zip(&self.mean).map(|(b, a)| b - a).collect();
        let f = (na as f64) * (nb as f64) / (n as f64);
        self.scatter
            .par_chunks_mut(d)
            .zip(bscatter.par_chunks(d))
            .enumerate()
            .for_each(|(i, (row, brow))| {
                for j in 0..=i {
                    row[j] += brow[j] + f * delta[i] * delta[j];
                }
            });
        let w = nb as f64 / n as f64;
        for (m, dl) in self.mean.iter_mut().zip(&delta) {
            *m += dl * w;
        }
        self.count = n;
    }

    /// The mean and the covariance (divided by N − 1). Needs at least two rows.
    pub fn finish(self) -> Result<Covariance> {
        if self.count < 2 {
            return Err(ModelError::TooFewRows {
                method: "covariance".into(),
                needed: 2,
                got: self.count as usize,
            });
        }
        let d = self.dim;
        let mut m = self.scatter;
        symmetrize_from_lower(&mut m, d);
        let inv = 1.0 / (self.count - 1) as f64;
        m.par_iter_mut().for_each(|v| *v *= inv);
        Ok(Covariance {
            dim: d,
            count: self.count,
            mean: self.mean,
            matrix: m,
        })
    }
}

/// A fitted PCA: centering, then projection on the top directions.
#[derive(Debug, Clone, PartialEq)]
pub struct Pca {
    center: Center,
    linear: Linear,
    eigenvalues: Vec<f64>,
    total_variance: f64,
}

fn check_dims(dims: usize, d: usize, n: u64) -> Result<()> {
    if dims == 0 {
        return Err(ModelError::unsupported(
            "pca",
            "must keep at least 1 direction",
        ));
    }
    if dims > d {
        return Err(ModelError::unsupported(
            "pca",
            format!(
                "cannot keep {dims} principal directions of {d}-dimensional data (at most {d}); \
                 use fewer bits, or a random-feature map (kpca-itq, sklsh) or LSH for longer codes"
            ),
        ));
    }
    if dims as u64 > n {
        return Err(ModelError::unsupported(
            "pca",
            format!("cannot keep {dims} principal directions from only {n} training rows"),
        ));
    }
    Ok(())
}

impl Pca {
    /// Fits PCA to the rows of `x`, keeping `dims` directions: covariance path when
    /// D ≤ N, SVD path otherwise. Errors when `dims` exceeds the dimension or the row count.
    pub fn fit(x: ArrayView2<f32>, dims: usize) -> Result<Pca> {
        let rows = checked_rows("pca: training data", x, None)?;
        let (n, d) = (rows.n(), rows.dim());
        if n < 2 {
            return Err(ModelError::TooFewRows {
                method: "pca".into(),
                needed: 2,
                got: n,
            });
        }
        check_dims(dims, d, n as u64)?;
        if d > n {
            Pca::svd_path(rows.as_slice(), n, d, dims)
        } else {
            let mut acc = CovarianceAccumulator::new(d)?;
            acc.add_rows(rows.as_slice());
            Pca::from_covariance(&acc.finish()?, dims)
        }
    }

    /// PCA from an accumulated covariance (the streamed path).
    pub fn from_covariance(cov: &Covariance, dims: usize) -> Result<Pca> {
        let d = cov.dim;
        check_dims(dims, d, cov.count)?;
        if cov.matrix.len() != d * d || cov.mean.len() != d {
            return Err(ModelError::invalid("covariance", "inconsistent sizes"));
        }
        if cov.matrix.iter().chain(&cov.mean).any(|v| !v.is_finite()) {
            return Err(ModelError::invalid("covariance", "non-finite entry"));
        }
        let total: f64 = (0..d).map(|i| cov.matrix[i * d + i]).sum();
        let (values, mut vectors) = sym_eig_desc(&cov.matrix, d)?;
        fix_column_signs(&mut vectors, d, d);
        Pca::assemble(&cov.mean, &values, &vectors, d, d, dims, total)
    }

    fn svd_path(x: &[f32], n: usize, d: usize, dims: usize) -> Result<Pca> {
        let mean = column_means_f64(x, d);
        let mut centred = vec![0f64; n * d];
        centred
            .par_chunks_mut(d)
            .zip(x.par_chunks(d))
            .for_each(|(o, r)| {
                for ((o, &v), &m) in o.iter_mut().zip(r).zip(&mean) {
                    *o = v as f64 - m;
                }
            });
        let total: f64 = centred.iter().map(|v| v * v).sum::<f64>() / (n - 1) as f64;
        let (s, mut vectors) = thin_svd_right(&centred, n, d)?;
        let r = s.len();
        fix_column_signs(&mut vectors, d, r);
        let values: Vec<f64> = s.iter().map(|v| v * v / (n - 1) as f64).collect();
        Pca::assemble(&mean, &values, &vectors, d, r, dims, total)
    }

    /// Builds the stages from eigenpairs (`vectors`: row-major d×r, one direction per column).
    fn assemble(
        mean: &[f64],
        values: &[f64],
        vectors: &[f64],
        d: usize,
        r: usize,
        dims: usize,
        total: f64,
    ) -> Result<Pca> {
        let mut w = Array2::<f32>::zeros((dims, d));
        for k in 0..dims {
            for i in 0..d {
                w[(k, i)] = vectors[i * r + k] as f32;
            }
        }
        let eig: Vec<f64> = values.iter().take(dims).map(|v| v.max(0.0)).collect();
        let center = Center::new(mean.iter().map(|&v| v as f32).collect())?;
        let linear = Linear::new(w, None)?.with_eigenvalues(eig.clone())?;
        Ok(Pca {
            center,
            linear,
            eigenvalues: eig,
            total_variance: total,
        })
    }

    /// The centring step (the training mean).
    pub fn center(&self) -> &Center {
        &self.center
    }

    /// The projection onto the top principal directions (eq. 1).
    pub fn linear(&self) -> &Linear {
        &self.linear
    }

    /// Variance along each kept direction, decreasing.
    pub fn eigenvalues(&self) -> &[f64] {
        &self.eigenvalues
    }

    /// Total variance of the data (trace of the covariance).
    pub fn total_variance(&self) -> f64 {
        self.total_variance
    }

    /// Fraction of the total variance kept by each direction.
    pub fn explained_variance_ratio(&self) -> Vec<f64> {
        let t = self.total_variance;
        self.eigenvalues
            .iter()
            .map(|v| if t > 0.0 { v / t } else { 0.0 })
            .collect()
    }

    /// The CENTER and LINEAR stages.
    pub fn into_stages(self) -> (Center, Linear) {
        (self.center, self.linear)
    }

    /// Centres and projects the rows of `x`.
    pub fn apply(&self, x: ArrayView2<f32>) -> Result<Array2<f32>> {
        let rows = checked_rows("pca: input", x, Some(self.center.in_dim()))?;
        let c = map_rows(&self.center, rows.as_slice());
        let y = map_rows(&self.linear, &c);
        Array2::from_shape_vec((rows.n(), self.linear.out_dim()), y)
            .map_err(|e| ModelError::shape("pca output", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::random::{gaussian, rng};

    #[test]
    fn chunked_accumulation_matches_one_pass() {
        let n = 700;
        let d = 5;
        let g = gaussian(&mut rng(1), n * d);
        let x: Vec<f32> = g
            .iter()
            .enumerate()
            .map(|(i, v)| *v as f32 * (1.0 + (i % d) as f32) + 1000.0)
            .collect();
        let a = Array2::from_shape_vec((n, d), x).unwrap();
        let mut one = CovarianceAccumulator::new(d).unwrap();
        one.add_chunk(a.view()).unwrap();
        let mut many = CovarianceAccumulator::new(d).unwrap();
        for s in [0usize, 1, 100, 333, 700].windows(2) {
            many.add_chunk(a.slice(ndarray::s![s[0]..s[1], ..]))
                .unwrap();
        }
        let (c1, c2) = (one.finish().unwrap(), many.finish().unwrap());
        for (x, y) in c1.matrix.iter().zip(&c2.matrix) {
            assert!((x - y).abs() < 1e-9 * (1.0 + x.abs()), "{x} vs {y}");
        }
        // Variances ≈ (1 + j)² despite the offset of 1000 (no cancellation).
        for j in 0..d {
            let v = c1.matrix[j * d + j];
            let want = ((1 + j) * (1 + j)) as f64;
            assert!((v - want).abs() < 0.15 * want, "var {j} = {v}");
        }
    }

    #[test]
    fn too_many_directions_is_refused() {
        let x = Array2::<f32>::from_shape_fn((10, 3), |(i, j)| (i * j) as f32);
        let err = Pca::fit(x.view(), 4).unwrap_err().to_string();
        assert!(
            err.contains("4 principal directions of 3-dimensional"),
            "{err}"
        );
        let x = Array2::<f32>::from_shape_fn((3, 10), |(i, j)| (i + j * j) as f32);
        let err = Pca::fit(x.view(), 5).unwrap_err().to_string();
        assert!(err.contains("only 3 training rows"), "{err}");
    }
}
