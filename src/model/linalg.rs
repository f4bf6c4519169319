//! Dense linear algebra for training, on faer: large products, symmetric eigendecomposition,
//! SVD, QR and the orthogonal Procrustes solution. Matrices here are plain row-major buffers
//! (`rows * cols` values), the layout ndarray uses for rows = vectors; faer reads and writes
//! them through strided views, so nothing is transposed in memory.
//!
//! Training-only: encoding never calls faer (see `kernels.rs`), so codes do not depend on
//! faer's blocking or thread count.

use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, Mat, MatMut, MatRef, Par, Side};

use super::error::{ModelError, Result};

/// faer parallelism for large products: the rayon pool.
pub(crate) fn par() -> Par {
    Par::rayon(0)
}

fn view<T>(data: &[T], rows: usize, cols: usize) -> MatRef<'_, T> {
    debug_assert_eq!(data.len(), rows * cols);
    MatRef::from_row_major_slice(data, rows, cols)
}

fn view_mut<T>(data: &mut [T], rows: usize, cols: usize) -> MatMut<'_, T> {
    debug_assert_eq!(data.len(), rows * cols);
    MatMut::from_row_major_slice_mut(data, rows, cols)
}

/// `A (n×k) · B (k×m)`, row-major in and out.
pub(crate) fn matmul_f32(a: &[f32], b: &[f32], n: usize, k: usize, m: usize, p: Par) -> Vec<f32> {
    let mut out = vec![0f32; n * m];
    matmul(
        view_mut(&mut out, n, m),
        Accum::Replace,
        view(a, n, k),
        view(b, k, m),
        1.0f32,
        p,
    );
    out
}

/// `Aᵀ (k×n) · B (n×m)` for row-major `A` (n×k) and `B` (n×m): the cross-product of two
/// data matrices, as used by the Procrustes steps of ITQ and OPQ.
pub(crate) fn at_b_f32(a: &[f32], b: &[f32], n: usize, k: usize, m: usize, p: Par) -> Vec<f32> {
    let mut out = vec![0f32; k * m];
    matmul(
        view_mut(&mut out, k, m),
        Accum::Replace,
        view(a, n, k).transpose(),
        view(b, n, m),
        1.0f32,
        p,
    );
    out
}

/// `A (n×k) · Bᵀ` for row-major `A` (n×k) and `B` (m×k): all pairwise dot products.
pub(crate) fn a_bt_f32(a: &[f32], b: &[f32], n: usize, k: usize, m: usize, p: Par) -> Vec<f32> {
    let mut out = vec![0f32; n * m];
    matmul(
        view_mut(&mut out, n, m),
        Accum::Replace,
        view(a, n, k),
        view(b, m, k).transpose(),
        1.0f32,
        p,
    );
    out
}

/// `A (n×k) · B (k×m)` in f64, row-major in and out.
pub(crate) fn matmul_f64(a: &[f64], b: &[f64], n: usize, k: usize, m: usize, p: Par) -> Vec<f64> {
    let mut out = vec![0f64; n * m];
    matmul(
        view_mut(&mut out, n, m),
        Accum::Replace,
        view(a, n, k),
        view(b, k, m),
        1.0f64,
        p,
    );
    out
}

/// `Aᵀ (k×n) · B (n×m)` in f64 for row-major `A` (n×k) and `B` (n×m): cross-covariances.
pub(crate) fn at_b_f64(a: &[f64], b: &[f64], n: usize, k: usize, m: usize, p: Par) -> Vec<f64> {
    let mut out = vec![0f64; k * m];
    matmul(
        view_mut(&mut out, k, m),
        Accum::Replace,
        view(a, n, k).transpose(),
        view(b, n, m),
        1.0f64,
        p,
    );
    out
}

/// Adds `Xᵀ X` of a row-major f64 block (n×d) into the lower triangle of `acc` (d×d,
/// row-major). Only the lower triangle (diagonal included) is written: half the flops.
pub(crate) fn add_gram_lower_f64(acc: &mut [f64], x: &[f64], n: usize, d: usize, p: Par) {
    let xv = view(x, n, d);
    triangular::matmul(
        view_mut(acc, d, d),
        BlockStructure::TriangularLower,
        Accum::Add,
        xv.transpose(),
        BlockStructure::Rectangular,
        xv,
        BlockStructure::Rectangular,
        1.0f64,
        p,
    );
}

/// Mirrors the lower triangle of a row-major square matrix into its upper triangle.
pub(crate) fn symmetrize_from_lower(a: &mut [f64], d: usize) {
    for i in 0..d {
        for j in 0..i {
            a[j * d + i] = a[i * d + j];
        }
    }
}

/// Makes the entry of largest magnitude of each column of `v` (rows×cols, row-major)
/// positive (the first such entry on ties). Eigenvectors and singular vectors are defined up
/// to sign; this convention makes PCA deterministic and comparable across libraries.
pub(crate) fn fix_column_signs(v: &mut [f64], rows: usize, cols: usize) {
    for j in 0..cols {
        let mut best = 0usize;
        let mut best_abs = -1.0f64;
        for i in 0..rows {
            let a = v[i * cols + j].abs();
            if a > best_abs {
                best_abs = a;
                best = i;
            }
        }
        if v[best * cols + j] < 0.0 {
            for i in 0..rows {
                v[i * cols + j] = -v[i * cols + j];
            }
        }
    }
}

/// Symmetric eigendecomposition of a row-major d×d matrix (lower triangle read).
/// Returns eigenvalues in *decreasing* order and the matching eigenvectors as the columns of
/// a row-major d×d matrix.
pub(crate) fn sym_eig_desc(a: &[f64], d: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let eig = view(a, d, d)
        .self_adjoint_eigen(Side::Lower)
        .map_err(|e| ModelError::Numerical {
            operation: "symmetric eigendecomposition".into(),
            source: e.into(),
        })?;
    let s = eig.S().column_vector();
    let u = eig.U();
    // faer sorts nondecreasing: reverse.
    let mut values = Vec::with_capacity(d);
    let mut vectors = vec![0f64; d * d];
    for (jo, ji) in (0..d).rev().enumerate() {
        values.push(s[ji]);
        for i in 0..d {
            vectors[i * d + jo] = u[(i, ji)];
        }
    }
    Ok((values, vectors))
}

/// Thin SVD of a row-major n×d matrix: returns the singular values (decreasing) and the right
/// singular vectors as the columns of a row-major d×r matrix, r = min(n, d).
pub(crate) fn thin_svd_right(a: &[f64], n: usize, d: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let svd = view(a, n, d)
        .thin_svd()
        .map_err(|e| ModelError::Numerical {
            operation: "thin SVD".into(),
            source: e.into(),
        })?;
    let s = svd.S().column_vector();
    let v = svd.V();
    let r = s.nrows();
    let values: Vec<f64> = (0..r).map(|j| s[j]).collect();
    let mut vectors = vec![0f64; d * r];
    for i in 0..d {
        for j in 0..r {
            vectors[i * r + j] = v[(i, j)];
        }
    }
    Ok((values, vectors))
}

/// Orthogonal Procrustes: the orthogonal `R` (c×c) maximising `tr(Rᵀ M)` for a row-major
/// c×c `M`, i.e. minimising `‖A R − B‖_F` when `M = Aᵀ B` (Schönemann 1966). With
/// `M = U Σ Wᵀ`, `R = U Wᵀ`. Computed in f64.
pub(crate) fn procrustes(m: &[f64], c: usize) -> Result<Vec<f64>> {
    let svd = view(m, c, c).svd().map_err(|e| ModelError::Numerical {
        operation: "Procrustes SVD".into(),
        source: e.into(),
    })?;
    let mut r = Mat::<f64>::zeros(c, c);
    matmul(
        r.as_mut(),
        Accum::Replace,
        svd.U(),
        svd.V().transpose(),
        1.0,
        Par::Seq,
    );
    let mut out = vec![0f64; c * c];
    for i in 0..c {
        for j in 0..c {
            out[i * c + j] = r[(i, j)];
        }
    }
    Ok(out)
}

/// A Haar-distributed random orthogonal c×c matrix from c² standard normal draws `g`
/// (row-major): `G = Q R` by Householder QR, then `Q · diag(sign(diag R))`. The sign fix makes
/// the distribution exactly Haar (Mezzadri, "How to generate random matrices from the
/// classical compact groups", Notices AMS 2007); without it QR's sign convention biases it.
pub(crate) fn orthogonal_from_gaussian(g: &[f64], c: usize) -> Vec<f64> {
    let qr = view(g, c, c).qr();
    let q = qr.compute_Q();
    let r = qr.R();
    let mut out = vec![0f64; c * c];
    for j in 0..c {
        let s = if r[(j, j)] < 0.0 { -1.0 } else { 1.0 };
        for i in 0..c {
            out[i * c + j] = q[(i, j)] * s;
        }
    }
    out
}

/// Largest |(AᵀA − I)_ij| of a row-major c×c matrix (orthogonality check).
pub(crate) fn orthogonality_error(a: &[f32], c: usize) -> f64 {
    let a64: Vec<f64> = a.iter().map(|&v| v as f64).collect();
    let mut g = vec![0f64; c * c];
    matmul(
        view_mut(&mut g, c, c),
        Accum::Replace,
        view(&a64, c, c).transpose(),
        view(&a64, c, c),
        1.0,
        par(),
    );
    let mut worst = 0f64;
    for i in 0..c {
        for j in 0..c {
            let want = if i == j { 1.0 } else { 0.0 };
            worst = worst.max((g[i * c + j] - want).abs());
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eig_sorted_descending_and_reconstructs() {
        let a = vec![4.0, 1.0, 0.0, 1.0, 3.0, 0.5, 0.0, 0.5, 1.0];
        let (w, v) = sym_eig_desc(&a, 3).unwrap();
        assert!(w[0] >= w[1] && w[1] >= w[2]);
        // A v_j = w_j v_j
        for j in 0..3 {
            for i in 0..3 {
                let av: f64 = (0..3).map(|k| a[i * 3 + k] * v[k * 3 + j]).sum();
                assert!((av - w[j] * v[i * 3 + j]).abs() < 1e-10);
            }
        }
    }

    #[test]
    fn procrustes_recovers_a_known_rotation() {
        let g: Vec<f64> = (0..16).map(|i| ((i * 7 % 11) as f64) - 5.0).collect();
        let q = orthogonal_from_gaussian(&g, 4);
        // M = Aᵀ B with A = I, B = Q  =>  R = Q.
        let r = procrustes(&q, 4).unwrap();
        for (x, y) in r.iter().zip(&q) {
            assert!((x - y).abs() < 1e-10);
        }
    }

    #[test]
    fn products_match_naive() {
        let a: Vec<f32> = (0..12).map(|i| i as f32 * 0.5 - 2.0).collect(); // 4×3
        let b: Vec<f32> = (0..6).map(|i| 1.0 - i as f32).collect(); // 3×2
        let c = matmul_f32(&a, &b, 4, 3, 2, Par::Seq);
        for i in 0..4 {
            for j in 0..2 {
                let want: f32 = (0..3).map(|k| a[i * 3 + k] * b[k * 2 + j]).sum();
                assert!((c[i * 2 + j] - want).abs() < 1e-5);
            }
        }
        let d: Vec<f32> = (0..8).map(|i| (i as f32).sin()).collect(); // 4×2
        let e = at_b_f32(&a, &d, 4, 3, 2, Par::Seq);
        for i in 0..3 {
            for j in 0..2 {
                let want: f32 = (0..4).map(|k| a[k * 3 + i] * d[k * 2 + j]).sum();
                assert!((e[i * 2 + j] - want).abs() < 1e-5);
            }
        }
    }
}
