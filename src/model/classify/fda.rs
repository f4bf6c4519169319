//! Fisher discriminant analysis (Mensink et al. TPAMI 2013, eq. 8, after Webb 2002): the
//! projection maximising `tr((W S_W Wᵀ)⁻¹ W S_B Wᵀ)` with the class-size weighted between-class
//! scatter `S_B = Σ_c (N_c/N)(μ − μ_c)(μ − μ_c)ᵀ` and within-class scatter
//! `S_W = Σ_c (N_c/N) Σ_c`. Solved as a generalised eigenproblem `S_B v = λ S_W v` by whitening
//! S_W (eigendecomposition; directions with eigenvalue ≤ 1e-10 · the largest are dropped,
//! as scikit-learn's `LinearDiscriminantAnalysis(solver="svd")` drops rank-deficient ones),
//! then an eigendecomposition of the whitened S_B. The rows of W satisfy `W S_W Wᵀ = I`, so ℓ2
//! NCM in the FDA space uses the within-class-whitened scale. At most C − 1 directions exist.

use ndarray::{Array2, ArrayView2};

use super::super::center::column_means_f64;
use super::super::error::{ClassifyError, ClassifyResult as Result};
use super::super::input::checked_rows;
use super::super::linalg::{fix_column_signs, sym_eig_desc};
use super::labels::{ClassIndex, class_means_f64};
use super::projection::Projection;

/// Relative eigenvalue floor of S_W.
const RANK_TOL: f64 = 1e-10;

/// A fitted FDA projection.
#[derive(Debug, Clone, PartialEq)]
pub struct Fda {
    /// Centring and the top FDA directions (eq. 8).
    pub projection: Projection,
    /// The generalised eigenvalues λ (between / within variance ratio) of each direction,
    /// decreasing.
    pub ratios: Vec<f64>,
}

/// Fits FDA with `dim` ≤ C − 1 directions.
pub fn fit_fda(x: ArrayView2<f32>, labels: &[i64], dim: usize) -> Result<Fda> {
    let rows = checked_rows("fda: training data", x, None)?;
    let (n, dd) = (rows.n(), rows.dim());
    let (idx, ids) = ClassIndex::from_labels("fda: labels", labels, n)?;
    let c = idx.len();
    if c < 2 {
        return Err(ClassifyError::TooFewClasses {
            what: "fda".into(),
            needed: 2,
            got: c,
        });
    }
    if dim == 0 || dim > c - 1 {
        return Err(ClassifyError::invalid(
            "fda: dim",
            format!(
                "FDA has at most C − 1 = {} directions for {c} classes, asked for {dim}",
                c - 1
            ),
        ));
    }
    let xs = rows.as_slice();
    let all: Vec<usize> = (0..n).collect();
    let (means, counts) = class_means_f64(xs, dd, &ids, &all, c);
    let mu = column_means_f64(xs, dd);
    // S_W = (1/N) Σ_i (x_i − μ_{y_i})(x_i − μ_{y_i})ᵀ, accumulated in f64 row blocks.
    let mut sw = vec![0f64; dd * dd];
    let block = 1024;
    let mut buf = vec![0f64; block * dd];
    for chunk in all.chunks(block) {
        for (b, &i) in buf.chunks_exact_mut(dd).zip(chunk) {
            let cm = &means[ids[i] as usize * dd..(ids[i] as usize + 1) * dd];
            for ((o, &v), m) in b.iter_mut().zip(&xs[i * dd..(i + 1) * dd]).zip(cm) {
                *o = v as f64 - m;
            }
        }
        super::super::linalg::add_gram_lower_f64(
            &mut sw,
            &buf[..chunk.len() * dd],
            chunk.len(),
            dd,
            super::super::linalg::par(),
        );
    }
    super::super::linalg::symmetrize_from_lower(&mut sw, dd);
    for v in &mut sw {
        *v /= n as f64;
    }
    let mut sb = vec![0f64; dd * dd];
    for ci in 0..c {
        let wgt = counts[ci] as f64 / n as f64;
        let diff: Vec<f64> = means[ci * dd..(ci + 1) * dd]
            .iter()
            .zip(&mu)
            .map(|(a, b)| a - b)
            .collect();
        for i in 0..dd {
            for j in 0..dd {
                sb[i * dd + j] += wgt * diff[i] * diff[j];
            }
        }
    }
    let (ew, uw) = sym_eig_desc(&sw, dd)?;
    let top = ew.first().copied().unwrap_or(0.0);
    let r = ew
        .iter()
        .take_while(|&&v| v > RANK_TOL * top && v > 0.0)
        .count();
    if r == 0 {
        return Err(ClassifyError::invalid(
            "fda: training data",
            "no within-class variance",
        ));
    }
    // T = U_r Λ_r^{-1/2}  (D × r)
    let mut t = vec![0f64; dd * r];
    for i in 0..dd {
        for j in 0..r {
            t[i * r + j] = uw[i * dd + j] / ew[j].sqrt();
        }
    }
    // B = Tᵀ S_B T (r × r)
    let mut sbt = vec![0f64; dd * r];
    for i in 0..dd {
        for k in 0..dd {
            let s = sb[i * dd + k];
            if s != 0.0 {
                for j in 0..r {
                    sbt[i * r + j] += s * t[k * r + j];
                }
            }
        }
    }
    let mut b = vec![0f64; r * r];
    for i in 0..dd {
        for a in 0..r {
            let ta = t[i * r + a];
            if ta != 0.0 {
                for j in 0..r {
                    b[a * r + j] += ta * sbt[i * r + j];
                }
            }
        }
    }
    let (eb, mut vb) = sym_eig_desc(&b, r)?;
    fix_column_signs(&mut vb, r, r);
    if dim > r {
        return Err(ClassifyError::invalid(
            "fda: dim",
            format!("the within-class scatter has rank {r}, fewer than the {dim} directions asked"),
        ));
    }
    let mut w = Array2::<f32>::zeros((dim, dd));
    for k in 0..dim {
        for i in 0..dd {
            let v: f64 = (0..r).map(|j| t[i * r + j] * vb[j * r + k]).sum();
            w[(k, i)] = v as f32;
        }
    }
    let projection = Projection::new(mu.iter().map(|&v| v as f32).collect(), w)?;
    Ok(Fda {
        projection,
        ratios: eb.into_iter().take(dim).collect(),
    })
}
