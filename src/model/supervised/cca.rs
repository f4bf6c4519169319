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

/// CCA fitted once for both views, for retrieval across them (a text query against images):
/// the image-side directions `u_k` and the matching second-view directions `v_k` of the same
/// singular pair of `T` (eq. 8), so `corr(u_kᵀx, v_kᵀy) = +λ_k` with no sign to align.
#[derive(Debug, Clone, PartialEq)]
pub struct CcaPair {
    /// The first view's fit (`weight`: r × D, unscaled: unit regularised variance).
    pub x: CcaFit,
    /// The second view's fit (`weight`: r × D_b, unscaled).
    pub y: CcaFit,
}

impl CcaPair {
    /// Both weights with direction k multiplied by `λ_k^power`: Gong et al. (TPAMI 2013, eq. 4
    /// and the text after it) scale CCA directions by their eigenvalue (`power = 2`; `1`
    /// scales by the correlation) so that the most correlated dominate a cosine or a
    /// rotation; Gordo et al. (CVPR 2012, §5) retrieve in the same embedding. `power = 0`
    /// leaves every direction at unit variance.
    pub fn scaled(&self, power: f64) -> (Array2<f32>, Array2<f32>) {
        let scale = |w: &Array2<f32>| {
            let mut w = w.clone();
            for (k, mut row) in w.rows_mut().into_iter().enumerate() {
                let l = self.x.correlations.get(k).copied().unwrap_or(0.0).max(0.0);
                let s = if power == 0.0 { 1.0 } else { l.powf(power) } as f32;
                row.mapv_inplace(|v| v * s);
            }
            w
        };
        (scale(&self.x.weight), scale(&self.y.weight))
    }
}

/// Fits CCA between the rows of `x` (row-major, `d` columns) and of `y` (`q` columns, one row
/// per row of `x`), keeping `r ≤ min(d, q)` directions of each view; `rho` as in the module
/// doc. One decomposition gives both sides: `u_k = C_aa^{-1/2} t_k` and
/// `v_k = C_bb^{-1/2} Tᵀ t_k / λ_k` for T's left singular vectors `t_k`.
pub fn fit_cca_pair(
    x: &[f32],
    d: usize,
    y: &[f32],
    q: usize,
    r: usize,
    rho: f64,
) -> Result<CcaPair> {
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
    if q == 0 || y.len() != n * q {
        return Err(ModelError::invalid(
            "view",
            format!(
                "{} values do not form {n} rows (one per training row) of {q} columns",
                y.len()
            ),
        ));
    }
    if let Some(p) = y.iter().position(|v| !v.is_finite()) {
        return Err(ModelError::NonFinite {
            what: "view".into(),
            row: p / q,
            col: p % q,
            value: y[p],
        });
    }
    if r == 0 || r > d.min(q) {
        return Err(ModelError::unsupported(
            "cca",
            format!(
                "R = {r} directions between {d}- and {q}-dimensional views: R must be between 1 \
                 and {}",
                d.min(q)
            ),
        ));
    }
    let (xc, mean_x) = centred(x, d);
    let (yc, mean_y) = centred(y, q);
    let ax = inverse_sqrt_cov(&xc, n, d, rho, "descriptors")?;
    let by = inverse_sqrt_cov(&yc, n, q, rho, "second view")?;
    let mut sxy = at_b_f64(&xc, &yc, n, d, q, par());
    let inv = 1.0 / (n - 1) as f64;
    for v in &mut sxy {
        *v *= inv;
    }
    let t = matmul_f64(&matmul_f64(&ax, &sxy, d, d, q, par()), &by, d, q, q, par());
    let mut tt = vec![0f64; q * d];
    for i in 0..d {
        for j in 0..q {
            tt[j * d + i] = t[i * q + j];
        }
    }
    let (corr, tvec) = thin_svd_right(&tt, q, d)?;
    let m = corr.len();
    // Tᵀ t_k / λ_k: the second view's singular vectors (q × m).
    let mut s = matmul_f64(&tt, &tvec, q, d, m, par());
    for (k, &l) in corr.iter().enumerate() {
        let inv = if l > 1e-12 { 1.0 / l } else { 0.0 };
        for j in 0..q {
            s[j * m + k] *= inv;
        }
    }
    let mut u = matmul_f64(&ax, &tvec, d, d, m, par());
    let mut v = matmul_f64(&by, &s, q, q, m, par());
    // The image side's sign convention, carried to the second view.
    let before = u.clone();
    fix_column_signs(&mut u, d, m);
    for k in 0..m {
        let flipped =
            (0..d).any(|i| before[i * m + k] != 0.0 && before[i * m + k] == -u[i * m + k]);
        if flipped {
            for j in 0..q {
                v[j * m + k] = -v[j * m + k];
            }
        }
    }
    let take = |dirs: &[f64], dim: usize| {
        Array2::from_shape_fn(
            (r, dim),
            |(k, i)| if k < m { dirs[i * m + k] as f32 } else { 0.0 },
        )
    };
    Ok(CcaPair {
        x: CcaFit {
            mean: mean_x.iter().map(|&v| v as f32).collect(),
            weight: take(&u, d),
            correlations: corr.clone(),
        },
        y: CcaFit {
            mean: mean_y.iter().map(|&v| v as f32).collect(),
            weight: take(&v, q),
            correlations: corr,
        },
    })
}
