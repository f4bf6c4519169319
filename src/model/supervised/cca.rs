//! Canonical correlation analysis (Gordo et al. CVPR 2012, §5, eq. 6-8; Hotelling 1936)
//! between the descriptors A and a second view B: class one-hot vectors by default (Gong et
//! al. TPAMI 2013 §5.1), or any matrix with one row per descriptor (e.g. text embeddings).
//! With both views mean-centred and the regularised covariances
//! `C_aa = Σ_aa + ρ_a I`, `C_bb = Σ_bb + ρ_b I`, the directions maximise `uᵀ C_ab v` subject to
//! `uᵀ C_aa u = vᵀ C_bb v = 1` (eq. 6-7), i.e. solve `C_aa⁻¹ C_ab C_bb⁻¹ C_ba u = λ² u` (eq. 8).
//! Solved as the SVD of `T = C_aa^{-1/2} C_ab C_bb^{-1/2}`: its singular values are the
//! canonical correlations λ, and `u = C_aa^{-1/2} t` for its left singular vectors t. The top-R
//! u are the rows of the projection `U (x − m)`; each has unit regularised variance.
//!
//! ρ: Σ are divided by N − 1 and `ρ_a = ρ · tr(Σ_aa) / D_a` (likewise for B), so ρ is relative
//! to the mean variance of each view (default 1e-4, the ITQ paper's value). With one-hot
//! labels the centred B has rank K − 1, so at most K − 1 correlations are non-zero and R must
//! be ≤ K − 1 (≤ the view's columns for a matrix view).
//!
//! CCA-ITQ (Gong et al. eq. 4 and the text after it): before ITQ each direction is scaled by
//! its λ_k ("the leading eigenvectors scaled by the corresponding eigenvalues"; λ_k² is the
//! eigenvalue of eq. 4, λ_k the canonical correlation), so the most discriminative directions
//! dominate the rotation (likewise before a random rotation, CCA-RR). The paper uses "more bits in the code than the number of most
//! informative eigenvectors" (its Fig. 11 goes to 256 bits on 10 CIFAR classes), so with
//! scaling R may exceed the view's rank: directions past it have λ = 0 and enter as zero rows,
//! and ITQ's rotation spreads the informative directions over all R bits.

use ndarray::Array2;

use super::super::center::Center;
use super::super::error::{ModelError, Result};
use super::super::linalg::{
    add_gram_lower_f64, at_b_f64, fix_column_signs, matmul_f64, par, sym_eig_desc,
    symmetrize_from_lower, thin_svd_right,
};
use super::super::linear::Linear;
use super::super::stage::Stage;
use super::triplet_sgd::class_ids;

/// The second view of CCA.
#[derive(Debug, Clone, Copy)]
pub enum CcaView<'a> {
    /// One label per row, encoded one-hot (K columns).
    OneHot(&'a [i64]),
    /// A row-major matrix with one row per descriptor and `cols` columns.
    Matrix {
        /// The values, `rows × cols`.
        values: &'a [f32],
        /// Columns.
        cols: usize,
    },
}

/// A fitted CCA projection.
#[derive(Debug, Clone, PartialEq)]
pub struct CcaFit {
    /// The descriptors' mean (length D).
    pub mean: Vec<f32>,
    /// R × D: the top-R image-side directions, one per row (scaled by λ_k for CCA-ITQ).
    pub weight: Array2<f32>,
    /// Every canonical correlation of the regularised problem, decreasing (min(D, D_b) of them).
    pub correlations: Vec<f64>,
}

impl CcaFit {
    /// The model stages CENTER + LINEAR.
    pub fn to_stages(&self) -> Result<Vec<Stage>> {
        Ok(vec![
            Stage::Center(Center::new(self.mean.clone())?),
            Stage::Linear(Linear::new(self.weight.clone(), None)?),
        ])
    }
}

/// Centred f64 copy of row-major rows and their mean.
fn centred(x: &[f32], d: usize) -> (Vec<f64>, Vec<f64>) {
    let n = x.len() / d;
    let mut mean = vec![0f64; d];
    for r in x.chunks_exact(d) {
        for (m, v) in mean.iter_mut().zip(r) {
            *m += *v as f64;
        }
    }
    for m in &mut mean {
        *m /= n as f64;
    }
    let c = x
        .chunks_exact(d)
        .flat_map(|r| r.iter().zip(&mean).map(|(v, m)| *v as f64 - m))
        .collect();
    (c, mean)
}

/// `(Σ + ρ·tr(Σ)/d·I)^{-1/2}` of centred rows (n × d), symmetric d × d.
fn inverse_sqrt_cov(c: &[f64], n: usize, d: usize, rho: f64, view: &str) -> Result<Vec<f64>> {
    let mut s = vec![0f64; d * d];
    add_gram_lower_f64(&mut s, c, n, d, par());
    symmetrize_from_lower(&mut s, d);
    let inv = 1.0 / (n - 1) as f64;
    for v in &mut s {
        *v *= inv;
    }
    let trace: f64 = (0..d).map(|i| s[i * d + i]).sum();
    if !(trace > 0.0 && trace.is_finite()) {
        return Err(ModelError::invalid(
            view,
            "has zero variance (every row is the same)",
        ));
    }
    let reg = rho * trace / d as f64;
    for i in 0..d {
        s[i * d + i] += reg;
    }
    let (vals, vecs) = sym_eig_desc(&s, d)?;
    let floor = 1e-12 * vals[0].abs();
    if let Some(bad) = vals.iter().position(|v| v.is_nan() || *v <= floor) {
        return Err(ModelError::unsupported(
            "cca",
            format!(
                "the covariance of the {view} is singular (eigenvalue {} of {d} is {:e}): use a \
                 larger rho",
                bad + 1,
                vals[bad]
            ),
        ));
    }
    // V diag(1/√s) Vᵀ
    let mut vs = vecs.clone();
    for i in 0..d {
        for (j, v) in vals.iter().enumerate() {
            vs[i * d + j] /= v.sqrt();
        }
    }
    let mut vt = vec![0f64; d * d];
    for i in 0..d {
        for j in 0..d {
            vt[j * d + i] = vecs[i * d + j];
        }
    }
    Ok(matmul_f64(&vs, &vt, d, d, d, par()))
}

/// Fits CCA between the rows of `x` (row-major, `d` columns, validated) and `view`, keeping
/// `r` directions; `scale_by_correlation` for CCA-ITQ. `rho` as in the module doc (≥ 0).
pub fn fit_cca(
    x: &[f32],
    d: usize,
    view: CcaView,
    r: usize,
    rho: f64,
    scale_by_correlation: bool,
) -> Result<CcaFit> {
    let n = x.len() / d.max(1);
    if !(rho.is_finite() && rho >= 0.0) {
        return Err(ModelError::invalid(
            "cca_rho",
            format!("must be finite and >= 0, got {rho}"),
        ));
    }
    if n < 2 {
        return Err(ModelError::TooFewRows {
            method: "cca".into(),
            needed: 2,
            got: n,
        });
    }
    if r == 0 || r > d {
        return Err(ModelError::unsupported(
            "cca",
            format!("R = {r} directions of {d}-dimensional data: R must be between 1 and {d}"),
        ));
    }
    let (y, q): (Vec<f32>, usize) = match view {
        CcaView::OneHot(labels) => {
            let (classes, ids) = class_ids("cca", labels, n)?;
            let k = classes.len();
            if r > k - 1 && !scale_by_correlation {
                return Err(ModelError::unsupported(
                    "cca",
                    format!(
                        "with one-hot labels CCA has at most classes − 1 = {} directions, R = {r} \
                         asked (use fewer, --view with a richer second view, or CCA-ITQ: \
                         `cca:R,itq,bits` takes any R)",
                        k - 1
                    ),
                ));
            }
            let mut y = vec![0f32; n * k];
            for (i, &c) in ids.iter().enumerate() {
                y[i * k + c as usize] = 1.0;
            }
            (y, k)
        }
        CcaView::Matrix { values, cols } => {
            if cols == 0 || values.len() != n * cols {
                return Err(ModelError::invalid(
                    "view",
                    format!(
                        "{} values do not form {n} rows (one per training row) of {cols} columns",
                        values.len()
                    ),
                ));
            }
            if let Some(p) = values.iter().position(|v| !v.is_finite()) {
                return Err(ModelError::NonFinite {
                    what: "view".into(),
                    row: p / cols,
                    col: p % cols,
                    value: values[p],
                });
            }
            if r > cols && !scale_by_correlation {
                return Err(ModelError::unsupported(
                    "cca",
                    format!(
                        "the view has {cols} columns: at most {cols} directions, R = {r} asked"
                    ),
                ));
            }
            (values.to_vec(), cols)
        }
    };
    let (xc, mean) = centred(x, d);
    let (yc, _) = centred(&y, q);
    let ax = inverse_sqrt_cov(&xc, n, d, rho, "descriptors")?;
    let by = inverse_sqrt_cov(&yc, n, q, rho, "second view")?;
    let mut sxy = at_b_f64(&xc, &yc, n, d, q, par());
    let inv = 1.0 / (n - 1) as f64;
    for v in &mut sxy {
        *v *= inv;
    }
    // T = C_aa^{-1/2} C_ab C_bb^{-1/2} (d × q); its transpose's right singular vectors are
    // T's left ones.
    let t = matmul_f64(&matmul_f64(&ax, &sxy, d, d, q, par()), &by, d, q, q, par());
    let mut tt = vec![0f64; q * d];
    for i in 0..d {
        for j in 0..q {
            tt[j * d + i] = t[i * q + j];
        }
    }
    let (corr, tvec) = thin_svd_right(&tt, q, d)?;
    let m = corr.len();
    // u = C_aa^{-1/2} t, one direction per column (d × m).
    let mut u = matmul_f64(&ax, &tvec, d, d, m, par());
    fix_column_signs(&mut u, d, m);
    // Past the view's rank (one-hot: K − 1) the correlations are 0 up to rounding: CCA-ITQ
    // gives those directions weight 0 exactly, so the rows stay zero.
    let rank = match view {
        CcaView::OneHot(_) => q - 1,
        CcaView::Matrix { .. } => m,
    }
    .min(m);
    let mut w = Array2::<f32>::zeros((r, d));
    for k in 0..r.min(rank) {
        let s = if scale_by_correlation { corr[k] } else { 1.0 };
        for i in 0..d {
            w[(k, i)] = (u[i * m + k] * s) as f32;
        }
    }
    Ok(CcaFit {
        mean: mean.iter().map(|&v| v as f32).collect(),
        weight: w,
        correlations: corr,
    })
}
