//! One-vs-rest linear baseline: ridge regression (Mensink et al. TPAMI 2013, eq. 13-14, the
//! "Ridge-regression, PCA" row of Table 4). Each class c gets `f(c, x) = w_cᵀ(z − z̄) + N_c/N`
//! on the (projected) features z, with `W = (Z_cᵀZ_c + λI)⁻¹ Z_cᵀ Y` for one-hot targets Y.
//! Solved through one eigendecomposition of `Z_cᵀZ_c`, so every λ of the validation grid
//! (multiples of the mean eigenvalue; lowest top-5 then top-1 error on a held-out split) costs
//! one d × d × C product. Unlike NCM, a new class needs a new regression (no near-zero cost).

use ndarray::ArrayView2;
use rayon::prelude::*;

use super::super::error::{ClassifyError, ClassifyResult as Result};
use super::super::input::checked_rows;
use super::super::linalg::sym_eig_desc;
use super::labels::{ClassIndex, class_counts, top_k_ids, top_k_labels};
use super::ncm::{chain_in_dim, check_chain, project_chain};
use super::projection::Projection;
use super::sgd::{stratified_split, top1_top5};

/// Grid of λ / mean eigenvalue of `Z_cᵀZ_c`.
pub const RIDGE_LAMBDA_GRID: [f64; 7] = [1e-6, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0];

/// A fitted one-vs-rest ridge classifier.
#[derive(Debug, Clone, PartialEq)]
pub struct RidgeOvr {
    chain: Vec<Projection>,
    in_dim: usize,
    dim: usize,
    labels: Vec<i64>,
    /// C × d.
    weight: Vec<f64>,
    bias: Vec<f64>,
    feature_mean: Vec<f64>,
    /// The ridge penalty λ chosen on the validation split.
    pub regularizer: f64,
}

struct Solver {
    d: usize,
    c: usize,
    mean: Vec<f64>,
    evals: Vec<f64>,
    evecs: Vec<f64>,
    /// Vᵀ Z_cᵀ Y  (d × C)
    vtzy: Vec<f64>,
    prior: Vec<f64>,
}

impl Solver {
    fn new(z: &[f32], d: usize, ids: &[u32], rows: &[usize], c: usize) -> Result<Solver> {
        let n = rows.len();
        let mut mean = vec![0f64; d];
        for &i in rows {
            for (m, v) in mean.iter_mut().zip(&z[i * d..(i + 1) * d]) {
                *m += *v as f64;
            }
        }
        for m in &mut mean {
            *m /= n as f64;
        }
        let mut g = vec![0f64; d * d];
        let mut zy = vec![0f64; d * c];
        let mut buf = Vec::with_capacity(1024 * d);
        for chunk in rows.chunks(1024) {
            buf.clear();
            for &i in chunk {
                for (v, m) in z[i * d..(i + 1) * d].iter().zip(&mean) {
                    buf.push(*v as f64 - m);
                }
            }
            super::super::linalg::add_gram_lower_f64(
                &mut g,
                &buf,
                chunk.len(),
                d,
                super::super::linalg::par(),
            );
            for (r, &i) in buf.chunks_exact(d).zip(chunk) {
                let cc = ids[i] as usize;
                for (j, v) in r.iter().enumerate() {
                    zy[j * c + cc] += v;
                }
            }
        }
        super::super::linalg::symmetrize_from_lower(&mut g, d);
        let (evals, evecs) = sym_eig_desc(&g, d)?;
        let mut vtzy = vec![0f64; d * c];
        for k in 0..d {
            for i in 0..d {
                let v = evecs[i * d + k];
                for cc in 0..c {
                    vtzy[k * c + cc] += v * zy[i * c + cc];
                }
            }
        }
        let sub: Vec<u32> = rows.iter().map(|&i| ids[i]).collect();
        let prior = class_counts(&sub, c)
            .into_iter()
            .map(|v| v as f64 / n as f64)
            .collect();
        Ok(Solver {
            d,
            c,
            mean,
            evals,
            evecs,
            vtzy,
            prior,
        })
    }

    /// W (C × d) for λ.
    fn weights(&self, lam: f64) -> Vec<f64> {
        let (d, c) = (self.d, self.c);
        let mut w = vec![0f64; c * d];
        for k in 0..d {
            let s = 1.0 / (self.evals[k].max(0.0) + lam);
            for i in 0..d {
                let v = self.evecs[i * d + k] * s;
                for cc in 0..c {
                    w[cc * d + i] += v * self.vtzy[k * c + cc];
                }
            }
        }
        w
    }
}

fn score_rows(z: &[f32], d: usize, w: &[f64], bias: &[f64], mean: &[f64]) -> Vec<f64> {
    let c = bias.len();
    let mut out = vec![0f64; (z.len() / d) * c];
    out.par_chunks_mut(c)
        .zip(z.par_chunks(d))
        .for_each(|(o, zr)| {
            let zc: Vec<f64> = zr.iter().zip(mean).map(|(a, m)| *a as f64 - m).collect();
            for ((s, wr), b) in o.iter_mut().zip(w.chunks_exact(d)).zip(bias) {
                *s = wr.iter().zip(&zc).map(|(a, b)| a * b).sum::<f64>() + b;
            }
        });
    out
}

/// Fits the ridge classifier on `chain(x)`; λ given or validated on a stratified split.
pub fn fit_ridge_ovr(
    x: ArrayView2<f32>,
    labels: &[i64],
    chain: Vec<Projection>,
    lambda: Option<f64>,
    validation_fraction: f64,
    seed: u64,
) -> Result<RidgeOvr> {
    check_chain(&chain)?;
    let rows = checked_rows("ridge: training data", x, chain_in_dim(&chain))?;
    let (n, in_dim) = (rows.n(), rows.dim());
    let (idx, ids) = ClassIndex::from_labels("ridge: labels", labels, n)?;
    let c = idx.len();
    let z = project_chain(&chain, rows.as_slice());
    let d = z.len() / n;
    let all: Vec<usize> = (0..n).collect();
    let lam = match lambda {
        Some(l) if l.is_finite() && l >= 0.0 => l,
        Some(l) => {
            return Err(ClassifyError::invalid(
                "ridge: lambda",
                format!("must be finite and >= 0, got {l}"),
            ));
        }
        None => {
            if !(validation_fraction > 0.0 && validation_fraction < 1.0) {
                return Err(ClassifyError::invalid(
                    "ridge: validation_fraction",
                    format!("must be in (0, 1) to choose λ, got {validation_fraction}"),
                ));
            }
            let (train, val) = stratified_split(
                "ridge",
                &ids,
                &idx,
                validation_fraction,
                usize::MAX,
                1,
                seed,
            )?;
            let s = Solver::new(&z, d, &ids, &train, c)?;
            let mean_eig = s.evals.iter().map(|v| v.max(0.0)).sum::<f64>() / d as f64;
            let zv: Vec<f32> = val
                .iter()
                .flat_map(|&i| z[i * d..(i + 1) * d].iter().copied())
                .collect();
            let truth: Vec<u32> = val.iter().map(|&i| ids[i]).collect();
            let mut best: Option<((f64, f64), f64)> = None;
            for g in RIDGE_LAMBDA_GRID {
                let lam = g * mean_eig.max(f64::MIN_POSITIVE);
                let w = s.weights(lam);
                let sc = score_rows(&zv, d, &w, &s.prior, &s.mean);
                let ranked: Vec<Vec<usize>> = sc.chunks_exact(c).map(|r| top_k_ids(r, 5)).collect();
                let (t1, t5) = top1_top5(&ranked, &truth);
                if best.is_none_or(|((b5, b1), _)| t5 < b5 || (t5 == b5 && t1 < b1)) {
                    best = Some(((t5, t1), g));
                }
            }
            // The chosen multiple, rescaled to the full data's eigenvalues below.
            -best.map_or(1e-3, |b| b.1)
        }
    };
    let s = Solver::new(&z, d, &ids, &all, c)?;
    let lam = if lam < 0.0 {
        let mean_eig = s.evals.iter().map(|v| v.max(0.0)).sum::<f64>() / d as f64;
        -lam * mean_eig.max(f64::MIN_POSITIVE)
    } else {
        lam
    };
    Ok(RidgeOvr {
        chain,
        in_dim,
        dim: d,
        labels: idx.labels().to_vec(),
        weight: s.weights(lam),
        bias: s.prior.clone(),
        feature_mean: s.mean.clone(),
        regularizer: lam,
    })
}

impl RidgeOvr {
    /// Puts `p` in front of the projection chain (a `pca:C` prefix fitted separately): the
    /// stored projected means / centroids / rows are unchanged.
    pub(crate) fn prepend(&mut self, p: Projection) {
        self.in_dim = p.in_dim();
        self.chain.insert(0, p);
    }

    /// Dimension of the input rows.
    pub fn input_dim(&self) -> usize {
        self.in_dim
    }

    /// The affine score map `f(x) = W (z − z̄) + b` on the projected rows z: (W, C × d
    /// row-major; b; z̄), for composing it with later linear steps (attributes, eq. 5 of
    /// Gordo et al. CVPR 2012).
    pub(crate) fn affine(&self) -> (&[f64], &[f64], &[f64]) {
        (&self.weight, &self.bias, &self.feature_mean)
    }

    /// Class labels, in score-column order.
    pub fn classes(&self) -> &[i64] {
        &self.labels
    }

    /// Scores `f(c, x)` (eq. 9 with the ridge solution), one column per class.
    pub fn scores(&self, x: ArrayView2<f32>) -> Result<Vec<f64>> {
        let rows = checked_rows("ridge: input", x, Some(self.in_dim))?;
        let z = project_chain(&self.chain, rows.as_slice());
        Ok(score_rows(
            &z,
            self.dim,
            &self.weight,
            &self.bias,
            &self.feature_mean,
        ))
    }

    /// The `k` best labels of each row, best first.
    pub fn top_k(&self, x: ArrayView2<f32>, k: usize) -> Result<Vec<Vec<i64>>> {
        top_k_labels(&self.scores(x)?, &self.labels, k)
    }
}
