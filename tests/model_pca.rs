//! PCA: known principal directions and eigenvalues are recovered, the covariance (streamed)
//! and SVD paths agree, and the sign convention is deterministic.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use codedb::model::{CovarianceAccumulator, Pca};
use ndarray::{Array2, s};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

fn normals(n: usize, seed: u64) -> Vec<f64> {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| StandardNormal.sample(&mut r)).collect()
}

/// Orthonormal directions: a seeded Gram-Schmidt basis of `k` vectors in `d` dimensions.
fn orthonormal(k: usize, d: usize, seed: u64) -> Vec<Vec<f64>> {
    let g = normals(k * d, seed);
    let mut basis: Vec<Vec<f64>> = Vec::new();
    for i in 0..k {
        let mut v = g[i * d..(i + 1) * d].to_vec();
        for b in &basis {
            let p: f64 = v.iter().zip(b).map(|(x, y)| x * y).sum();
            for (x, y) in v.iter_mut().zip(b) {
                *x -= p * y;
            }
        }
        let n: f64 = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
        basis.push(v);
    }
    basis
}

/// Data with mean `offset`, variances `stds²` along the `dirs`, plus isotropic noise.
fn low_rank(
    n: usize,
    d: usize,
    dirs: &[Vec<f64>],
    stds: &[f64],
    noise: f64,
    seed: u64,
) -> Array2<f32> {
    let z = normals(n * dirs.len(), seed);
    let e = normals(n * d, seed + 1);
    Array2::from_shape_fn((n, d), |(i, j)| {
        let mut v = 3.0 + noise * e[i * d + j];
        for (k, dir) in dirs.iter().enumerate() {
            v += stds[k] * z[i * dirs.len() + k] * dir[j];
        }
        v as f32
    })
}

#[test]
fn recovers_known_directions_and_eigenvalues() {
    let (n, d) = (20_000, 30);
    let dirs = orthonormal(3, d, 7);
    let stds = [5.0, 3.0, 2.0];
    let noise = 0.1;
    let x = low_rank(n, d, &dirs, &stds, noise, 8);
    let pca = Pca::fit(x.view(), 3).unwrap();
    let w = pca.linear().weight();
    for k in 0..3 {
        // Direction k matches up to sign, to within sampling error.
        let cos: f64 = (0..d).map(|j| w[(k, j)] as f64 * dirs[k][j]).sum();
        assert!(cos.abs() > 0.999, "direction {k}: |cos| = {}", cos.abs());
        // Eigenvalue = std² + noise² within 3% (n = 20,000 samples).
        let want = stds[k] * stds[k] + noise * noise;
        let got = pca.eigenvalues()[k];
        assert!(
            (got - want).abs() < 0.03 * want,
            "eigenvalue {k}: {got} vs {want}"
        );
        // Sign convention: the largest-magnitude component is positive.
        let row: Vec<f32> = (0..d).map(|j| w[(k, j)]).collect();
        let big = row
            .iter()
            .copied()
            .fold(0f32, |a, v| if v.abs() > a.abs() { v } else { a });
        assert!(big > 0.0);
    }
    // Orthonormal rows.
    for a in 0..3 {
        for b in 0..3 {
            let dot: f32 = (0..d).map(|j| w[(a, j)] * w[(b, j)]).sum();
            let want = if a == b { 1.0 } else { 0.0 };
            assert!((dot - want).abs() < 1e-5);
        }
    }
    // The mean is the offset.
    assert!(pca.center().mean().iter().all(|m| (m - 3.0).abs() < 0.1));
    // Explained variance: the 3 directions carry almost everything.
    let ratio: f64 = pca.explained_variance_ratio().iter().sum();
    let total = stds.iter().map(|s| s * s).sum::<f64>() + d as f64 * noise * noise;
    assert!(
        (ratio - (total - (d - 3) as f64 * noise * noise) / total).abs() < 0.01,
        "{ratio}"
    );
    // Projections are decorrelated with the eigenvalues as variances.
    let y = pca.apply(x.view()).unwrap();
    for k in 0..3 {
        let col = y.column(k);
        let var = col.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / (n - 1) as f64;
        assert!((var - pca.eigenvalues()[k]).abs() < 1e-3 * var, "{var}");
    }
}

#[test]
fn svd_path_matches_covariance_path() {
    // D > N: `Pca::fit` takes the SVD path; feeding the same rows to the covariance
    // accumulator forces the eigendecomposition path. Both divide by N − 1.
    let (n, d) = (40, 60);
    let dirs = orthonormal(4, d, 1);
    let x = low_rank(n, d, &dirs, &[4.0, 3.0, 2.0, 1.0], 0.05, 2);
    let svd = Pca::fit(x.view(), 4).unwrap();
    let mut acc = CovarianceAccumulator::new(d).unwrap();
    acc.add_chunk(x.view()).unwrap();
    let cov = Pca::from_covariance(&acc.finish().unwrap(), 4).unwrap();
    for k in 0..4 {
        let a = svd.eigenvalues()[k];
        let b = cov.eigenvalues()[k];
        assert!((a - b).abs() < 1e-6 * a, "eigenvalue {k}: {a} vs {b}");
        for j in 0..d {
            let (u, v) = (svd.linear().weight()[(k, j)], cov.linear().weight()[(k, j)]);
            assert!(
                (u - v).abs() < 1e-4,
                "direction {k} component {j}: {u} vs {v}"
            );
        }
    }
}

#[test]
fn streamed_chunks_give_the_same_pca() {
    let (n, d) = (5000, 12);
    let dirs = orthonormal(2, d, 3);
    let x = low_rank(n, d, &dirs, &[3.0, 1.0], 0.2, 4);
    let whole = Pca::fit(x.view(), 2).unwrap();
    let mut acc = CovarianceAccumulator::new(d).unwrap();
    for c in [0, 1000, 1001, 3333, 5000].windows(2) {
        acc.add_chunk(x.slice(s![c[0]..c[1], ..])).unwrap();
    }
    assert_eq!(acc.count(), 5000);
    let streamed = Pca::from_covariance(&acc.finish().unwrap(), 2).unwrap();
    for (a, b) in whole.eigenvalues().iter().zip(streamed.eigenvalues()) {
        assert!((a - b).abs() < 1e-9 * a);
    }
    for (a, b) in whole
        .linear()
        .weight()
        .iter()
        .zip(streamed.linear().weight().iter())
    {
        assert!((a - b).abs() < 1e-6);
    }
}

#[test]
fn bad_inputs_are_refused() {
    let mut x = Array2::<f32>::zeros((10, 4));
    x[(3, 2)] = f32::NAN;
    let err = Pca::fit(x.view(), 2).unwrap_err().to_string();
    assert!(err.contains("row 3, column 2"), "{err}");
    let err = Pca::fit(Array2::<f32>::zeros((0, 4)).view(), 2)
        .unwrap_err()
        .to_string();
    assert!(err.contains("empty"), "{err}");
    let err = Pca::fit(Array2::<f32>::zeros((1, 4)).view(), 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("at least 2"), "{err}");
    let mut acc = CovarianceAccumulator::new(4).unwrap();
    let err = acc
        .add_chunk(Array2::<f32>::zeros((3, 5)).view())
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected 4 columns, got 5"), "{err}");
}
