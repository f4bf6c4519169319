//! Binary linear SVM by dual coordinate descent (Hsieh, Chang, Lin, Keerthi, Sundararajan,
//! *A dual coordinate descent method for large-scale linear SVM*, ICML 2008 — LIBLINEAR's
//! `solve_l2r_l1l2_svc`, the solver PiCoDes trains its classifiers with, Bergamo et al. NIPS
//! 2011 ref. [9]).
//!
//! Primal: `min_w ½‖w‖² + Σ_i C_i ξ(w; x_i, y_i)` with the hinge `max(0, 1 − y wᵀx)` (L1-loss)
//! or its square (L2-loss), `C_i = C · weight_i` (per-example weights: PiCoDes eq. 5 needs
//! them). The bias is LIBLINEAR's: an extra feature of constant value `B` (`bias_scale`), so
//! it is regularised like the other weights; the decision value is `wᵀx + w_B · B`.
//!
//! Dual: coordinate steps on `α_i ∈ [0, U_i]` (`U_i = C_i`, or ∞ with `D_ii = 1 / (2C_i)` for
//! the L2-loss), visiting the active examples in a seeded random order each outer iteration,
//! with LIBLINEAR's shrinking and its stopping rule: the spread of the projected gradient
//! `max PG − min PG` over one pass at most `tol` (checked again on all examples once the
//! shrunk set meets it). Same data and options → the same model, bit for bit.

use ndarray::ArrayView2;
use rand::Rng;

use super::super::error::{ClassifyError, ClassifyResult as Result};
use super::super::input::checked_rows;
use super::super::random::rng;

/// The loss of [`train_linear_svm`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SvmLoss {
    /// `max(0, 1 − y wᵀx)` (LIBLINEAR `-s 3`, scikit-learn `loss="hinge"`).
    Hinge,
    /// `max(0, 1 − y wᵀx)²` (LIBLINEAR `-s 1`, scikit-learn `loss="squared_hinge"`).
    SquaredHinge,
}

/// Settings of [`train_linear_svm`]; the defaults are scikit-learn `LinearSVC`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearSvmOptions {
    /// The cost C (> 0).
    pub c: f64,
    /// The loss.
    pub loss: SvmLoss,
    /// Value B of the constant bias feature (scikit-learn's `intercept_scaling`); 0: no bias.
    pub bias_scale: f64,
    /// Stop when the projected gradient's spread over a pass is at most this (> 0).
    pub tol: f64,
    /// Upper bound on outer iterations (passes).
    pub max_iter: usize,
    /// Seed of the visiting order.
    pub seed: u64,
}

impl Default for LinearSvmOptions {
    fn default() -> Self {
        LinearSvmOptions {
            c: 1.0,
            loss: SvmLoss::SquaredHinge,
            bias_scale: 1.0,
            tol: 1e-4,
            max_iter: 1000,
            seed: 0,
        }
    }
}

/// A trained linear SVM: `decision(x) = weights · x + bias`, positive ⇒ the positive class.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearSvm {
    /// One weight per input column.
    pub weights: Vec<f64>,
    /// The intercept (`w_B · B`).
    pub bias: f64,
    /// Outer iterations run.
    pub iterations: usize,
    /// Whether the stopping rule was met before `max_iter`.
    pub converged: bool,
}

impl LinearSvm {
    /// Decision values of the rows of `x` (n × d, d = `weights.len()`).
    pub fn decision(&self, x: ArrayView2<f32>) -> Result<Vec<f64>> {
        let rows = checked_rows("svm: rows", x, Some(self.weights.len()))?;
        Ok(rows
            .as_slice()
            .chunks_exact(self.weights.len().max(1))
            .map(|r| self.bias + dot(&self.weights, r))
            .collect())
    }
}

fn dot(w: &[f64], x: &[f32]) -> f64 {
    w.iter().zip(x).map(|(a, &b)| a * f64::from(b)).sum()
}

/// Trains a binary linear SVM on the rows of `x` (n × d, finite), `positive[i]` the class of
/// row i, `weights` (optional, ≥ 0, finite) scaling each row's cost; rows of weight 0 are left
/// out. Errors name the argument: empty or non-finite rows, length mismatches, a class with
/// no row of positive weight, options out of range.
pub fn train_linear_svm(
    x: ArrayView2<f32>,
    positive: &[bool],
    weights: Option<&[f64]>,
    opts: &LinearSvmOptions,
) -> Result<LinearSvm> {
    let bad = |a: &str, d: &str| ClassifyError::invalid(&format!("svm: {a}"), d);
    if !(opts.c.is_finite() && opts.c > 0.0) {
        return Err(bad("c", "must be finite and > 0"));
    }
    if !(opts.tol.is_finite() && opts.tol > 0.0) {
        return Err(bad("tol", "must be finite and > 0"));
    }
    if !(opts.bias_scale.is_finite() && opts.bias_scale >= 0.0) {
        return Err(bad("bias_scale", "must be finite and ≥ 0"));
    }
    if opts.max_iter == 0 {
        return Err(bad("max_iter", "must be at least 1"));
    }
    let rows = checked_rows("svm: rows", x, None)?;
    let (n, d) = (rows.n(), rows.dim());
    let data = rows.as_slice();
    if positive.len() != n {
        return Err(ClassifyError::LengthMismatch {
            what: "svm: labels".into(),
            expected: n,
            got: positive.len(),
        });
    }
    if let Some(w) = weights {
        if w.len() != n {
            return Err(ClassifyError::LengthMismatch {
                what: "svm: weights".into(),
                expected: n,
                got: w.len(),
            });
        }
        if w.iter().any(|v| !(v.is_finite() && *v >= 0.0)) {
            return Err(bad("weights", "must be finite and ≥ 0"));
        }
    }
    let cost = |i: usize| opts.c * weights.map_or(1.0, |w| w[i]);
    let used: Vec<usize> = (0..n).filter(|&i| cost(i) > 0.0).collect();
    let classes = [true, false].map(|c| used.iter().filter(|&&i| positive[i] == c).count());
    if classes.contains(&0) {
        return Err(ClassifyError::TooFewClasses {
            what: "svm: labels (rows of positive weight)".into(),
            needed: 2,
            got: classes.iter().filter(|&&c| c > 0).count(),
        });
    }
    let b = opts.bias_scale;
    let row = |i: usize| &data[i * d..(i + 1) * d];
    let l = used.len();
    let y: Vec<f64> = used
        .iter()
        .map(|&i| if positive[i] { 1.0 } else { -1.0 })
        .collect();
    let (diag, upper): (Vec<f64>, Vec<f64>) = used
        .iter()
        .map(|&i| match opts.loss {
            SvmLoss::Hinge => (0.0, cost(i)),
            SvmLoss::SquaredHinge => (0.5 / cost(i), f64::INFINITY),
        })
        .unzip();
    let qd: Vec<f64> = used
        .iter()
        .zip(&diag)
        .map(|(&i, dg)| dg + row(i).iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() + b * b)
        .collect();
    let mut w = vec![0f64; d];
    let mut wb = 0f64;
    let mut alpha = vec![0f64; l];
    let mut index: Vec<usize> = (0..l).collect();
    let mut active = l;
    let (mut pg_max_old, mut pg_min_old) = (f64::INFINITY, f64::NEG_INFINITY);
    let mut r = rng(opts.seed);
    let mut iter = 0;
    let mut converged = false;
    while iter < opts.max_iter {
        for s in 0..active {
            let j = s + r.random_range(0..active - s);
            index.swap(s, j);
        }
        let (mut pg_max, mut pg_min) = (f64::NEG_INFINITY, f64::INFINITY);
        let mut s = 0;
        while s < active {
            let i = index[s];
            let xi = row(used[i]);
            let g = y[i] * (dot(&w, xi) + wb * b) - 1.0 + alpha[i] * diag[i];
            let c = upper[i];
            let mut pg = 0.0;
            if alpha[i] == 0.0 {
                if g > pg_max_old {
                    active -= 1;
                    index.swap(s, active);
                    continue;
                } else if g < 0.0 {
                    pg = g;
                }
            } else if alpha[i] == c {
                if g < pg_min_old {
                    active -= 1;
                    index.swap(s, active);
                    continue;
                } else if g > 0.0 {
                    pg = g;
                }
            } else {
                pg = g;
            }
            pg_max = pg_max.max(pg);
            pg_min = pg_min.min(pg);
            if pg.abs() > 1e-12 {
                let old = alpha[i];
                alpha[i] = (alpha[i] - g / qd[i]).max(0.0).min(c);
                let step = (alpha[i] - old) * y[i];
                for (wj, &v) in w.iter_mut().zip(xi) {
                    *wj += step * f64::from(v);
                }
                wb += step * b;
            }
            s += 1;
        }
        iter += 1;
        if pg_max - pg_min <= opts.tol {
            if active == l {
                converged = true;
                break;
            }
            active = l;
            pg_max_old = f64::INFINITY;
            pg_min_old = f64::NEG_INFINITY;
            continue;
        }
        pg_max_old = if pg_max <= 0.0 { f64::INFINITY } else { pg_max };
        pg_min_old = if pg_min >= 0.0 {
            f64::NEG_INFINITY
        } else {
            pg_min
        };
    }
    Ok(LinearSvm {
        weights: w,
        bias: wb * b,
        iterations: iter,
        converged,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    fn toy() -> (Array2<f32>, Vec<bool>) {
        let x = Array2::from_shape_vec(
            (6, 2),
            vec![
                2.0, 1.0, 3.0, 2.5, 2.5, 0.5, -1.0, -2.0, -2.0, 0.0, -1.5, -1.0,
            ],
        )
        .unwrap();
        (x, vec![true, true, true, false, false, false])
    }

    #[test]
    fn separates_and_is_deterministic() {
        let (x, y) = toy();
        for loss in [SvmLoss::Hinge, SvmLoss::SquaredHinge] {
            let opts = LinearSvmOptions {
                loss,
                tol: 1e-8,
                ..LinearSvmOptions::default()
            };
            let m = train_linear_svm(x.view(), &y, None, &opts).unwrap();
            assert!(m.converged);
            let d = m.decision(x.view()).unwrap();
            for (v, &p) in d.iter().zip(&y) {
                assert_eq!(*v > 0.0, p, "{loss:?}: {d:?}");
            }
            assert_eq!(m, train_linear_svm(x.view(), &y, None, &opts).unwrap());
        }
    }

    #[test]
    fn weight_zero_rows_are_left_out_and_bad_input_is_named() {
        let (x, y) = toy();
        let opts = LinearSvmOptions::default();
        let w = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0];
        let e = train_linear_svm(x.view(), &y, Some(&w), &opts).unwrap_err();
        assert!(e.to_string().contains("svm: labels"), "{e}");
        let e = train_linear_svm(x.view(), &y[..5], None, &opts).unwrap_err();
        assert!(e.to_string().contains("svm: labels"), "{e}");
        let e = train_linear_svm(x.view(), &y, Some(&[f64::NAN; 6]), &opts).unwrap_err();
        assert!(e.to_string().contains("svm: weights"), "{e}");
        let mut nan = x.clone();
        nan[[2, 1]] = f32::NAN;
        assert!(train_linear_svm(nan.view(), &y, None, &opts).is_err());
    }
}
