//! The nearest class mean classifier (Mensink et al. TPAMI 2013, eq. 1-2) on any chain of
//! projections (none = ℓ2 on the raw features; PCA; FDA; a learned NCMML W).
//!
//! Scores use the linear form of eq. 9-11: `f(c, x) = w_cᵀ x + b_c` with, in the projected
//! space, `f(c, x) = (W x)ᵀ (W μ_c) − ½ ‖W μ_c‖²`. Since
//! `−½ ‖W x − W μ_c‖² = f(c, x) − ½ ‖W x‖²` and the last term does not depend on c, the
//! ranking of classes is exactly the ranking by ℓ2 distance in the projected space (eq. 1);
//! a centre `m` in the projection shifts x and every μ_c alike and changes nothing either.
//! Projected means `W μ_c` and biases `b_c` are computed once (f64, from f64 means), so adding
//! a class costs one mean and one d-vector: the "near-zero cost" of the paper's title.
//!
//! This is the crate's one NCM. The engine's class means (`classes/class_means.rs`) hold an
//! [`Ncm`] over means already projected by the index's model ([`Ncm::from_projected`]) and
//! classify with its centred f32 scan table ([`CentredScan`], below): the same eq. 9 with every
//! vector shifted by the mean of the projected means, so that f32 rounding cannot reorder close
//! classes of descriptors far from the origin; the ranking is unchanged by the shift (eq. 9-11
//! hold for any common origin).

use ndarray::{Array2, ArrayView2};
use rayon::prelude::*;

use crate::scan::{DenseRows, DenseValues, Metric, ScanError, ScanOptions, dense_topk};

use super::super::error::{ClassifyError, ClassifyResult as Result, ModelError};
use super::super::input::checked_rows;
use super::labels::{ClassIndex, class_means_f64, top_k_ids};
use super::projection::Projection;
use super::train_rows::{RowSource, class_means};

/// Applies a chain of projections to validated rows (identity when empty).
pub(crate) fn project_chain(chain: &[Projection], x: &[f32]) -> Vec<f32> {
    let mut cur = x.to_vec();
    for p in chain {
        cur = p.apply_rows(&cur);
    }
    cur
}

/// Input width of a chain (`None` when empty).
pub(crate) fn chain_in_dim(chain: &[Projection]) -> Option<usize> {
    chain.first().map(Projection::in_dim)
}

pub(crate) fn check_chain(chain: &[Projection]) -> Result<()> {
    for (i, w) in chain.windows(2).enumerate() {
        if w[0].out_dim() != w[1].in_dim() {
            return Err(ClassifyError::invalid(
                "projections",
                format!(
                    "projection {i} outputs {} dimensions but projection {} takes {}",
                    w[0].out_dim(),
                    i + 1,
                    w[1].in_dim()
                ),
            ));
        }
    }
    Ok(())
}

/// A nearest class mean classifier.
#[derive(Debug, Clone, PartialEq)]
pub struct Ncm {
    chain: Vec<Projection>,
    in_dim: usize,
    labels: Vec<i64>,
    /// C × d, row-major: `W μ_c`.
    proj_means: Vec<f64>,
    /// `b_c = −½ ‖W μ_c‖²` (eq. 10), or learned biases (eq. 21).
    bias: Vec<f64>,
    dim: usize,
}

impl Ncm {
    /// Class means (eq. 2) of the rows of `x` by `labels`, through `chain`.
    pub fn fit(x: ArrayView2<f32>, labels: &[i64], chain: Vec<Projection>) -> Result<Ncm> {
        check_chain(&chain)?;
        let rows = checked_rows("ncm: training data", x, chain_in_dim(&chain))?;
        let src = RowSource::Dense {
            x: rows.as_slice(),
            dim: rows.dim(),
        };
        Ncm::fit_rows(&src, labels, chain)
    }

    /// [`Ncm::fit`] on a row source (dense, or PQ codes decoded block by block: the means are
    /// summed as the rows stream by, the decoded rows are never held).
    pub(crate) fn fit_rows(src: &RowSource, labels: &[i64], chain: Vec<Projection>) -> Result<Ncm> {
        check_chain(&chain)?;
        let d = src.dim();
        if let Some(want) = chain_in_dim(&chain)
            && want != d
        {
            return Err(ClassifyError::LengthMismatch {
                what: "ncm: training data columns".into(),
                expected: want,
                got: d,
            });
        }
        let (idx, ids) = ClassIndex::from_labels("ncm: labels", labels, src.n())?;
        let all: Vec<usize> = (0..src.n()).collect();
        let (means, _) = class_means(src, &all, &ids, idx.len(), None);
        Ncm::from_means_f64(chain, idx.labels().to_vec(), &means, d)
    }

    /// A classifier from given class means (`labels.len()` × D, in the input space).
    pub fn from_means(
        chain: Vec<Projection>,
        labels: Vec<i64>,
        means: ArrayView2<f32>,
    ) -> Result<Ncm> {
        check_chain(&chain)?;
        let rows = checked_rows("ncm: class means", means, chain_in_dim(&chain))?;
        let m: Vec<f64> = rows.as_slice().iter().map(|&v| v as f64).collect();
        Ncm::from_means_f64(chain, labels, &m, rows.dim())
    }

    pub(crate) fn from_means_f64(
        chain: Vec<Projection>,
        labels: Vec<i64>,
        means: &[f64],
        in_dim: usize,
    ) -> Result<Ncm> {
        if labels.is_empty() || means.len() != labels.len() * in_dim {
            return Err(ClassifyError::LengthMismatch {
                what: "ncm: class labels".into(),
                expected: means.len() / in_dim.max(1),
                got: labels.len(),
            });
        }
        let mut sorted = labels.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(ClassifyError::DuplicateClass { label: w[0] });
        }
        let dim = chain.last().map_or(in_dim, Projection::out_dim);
        let mut ncm = Ncm {
            chain,
            in_dim,
            labels: Vec::with_capacity(labels.len()),
            proj_means: Vec::with_capacity(labels.len() * dim),
            bias: Vec::with_capacity(labels.len()),
            dim,
        };
        for (l, m) in labels.iter().zip(means.chunks_exact(in_dim)) {
            ncm.push_class(*l, m.to_vec());
        }
        Ok(ncm)
    }

    /// A classifier over class means already projected (`projected`: `labels.len()` × `dim`,
    /// row-major f32; no projection chain, so [`Ncm::input_dim`] is `dim`). The engine's class
    /// means are projected by the index's model, whose non-linear stages a [`Projection`]
    /// chain cannot express. The caller guarantees distinct labels (a class table's ids);
    /// zero classes give an empty classifier.
    pub(crate) fn from_projected(labels: &[i64], projected: &[f32], dim: usize) -> Ncm {
        let mut ncm = Ncm {
            chain: Vec::new(),
            in_dim: dim,
            labels: Vec::with_capacity(labels.len()),
            proj_means: Vec::with_capacity(labels.len() * dim),
            bias: Vec::with_capacity(labels.len()),
            dim,
        };
        for (l, m) in labels.iter().zip(projected.chunks_exact(dim.max(1))) {
            ncm.push_class(*l, m.iter().map(|&v| v as f64).collect());
        }
        ncm
    }

    /// Bias `b_c = −½ ‖W μ_c‖²` (eq. 10) of the class in column `i`.
    pub(crate) fn bias_at(&self, i: usize) -> Option<f64> {
        self.bias.get(i).copied()
    }

    /// The centred f32 scan table of the classifier (module docs): `r` = the mean of the
    /// projected means, rows `[W μ_c − r, −½ ‖W μ_c − r‖²]` for the dense dot kernel. Valid for
    /// the eq. 10 biases only (a classifier of [`Ncm::from_projected`]).
    pub(crate) fn centred_scan(&self) -> CentredScan {
        let p = self.dim;
        let c = self.labels.len();
        let projected: Vec<f32> = self.proj_means.iter().map(|&v| v as f32).collect();
        let mut reference = vec![0f64; p];
        for row in projected.chunks_exact(p.max(1)) {
            for (r, v) in reference.iter_mut().zip(row) {
                *r += *v as f64;
            }
        }
        let reference: Vec<f32> = reference
            .iter()
            .map(|r| (r / c.max(1) as f64) as f32)
            .collect();
        let mut augmented = Vec::with_capacity(c * (p + 1));
        for row in projected.chunks_exact(p.max(1)).take(c) {
            let mut centred_norm = 0f64;
            for (v, r) in row.iter().zip(&reference) {
                let x = v - r;
                augmented.push(x);
                centred_norm += x as f64 * x as f64;
            }
            augmented.push((-0.5 * centred_norm) as f32);
        }
        CentredScan {
            dim: p,
            ids: self.labels.iter().map(|&l| l as u64).collect(),
            projected,
            reference,
            augmented,
        }
    }

    fn push_class(&mut self, label: i64, mean: Vec<f64>) {
        let mut p = mean;
        for proj in &self.chain {
            p = proj.apply_f64(&p);
        }
        let b = -0.5 * p.iter().map(|v| v * v).sum::<f64>();
        self.labels.push(label);
        self.proj_means.extend(p);
        self.bias.push(b);
    }

    /// Adds a class from its mean in the input space (no retraining: §5.4 of the paper).
    pub fn add_class(&mut self, label: i64, mean: &[f32]) -> Result<()> {
        if mean.len() != self.in_dim {
            return Err(ClassifyError::LengthMismatch {
                what: format!("ncm: mean of class {label}"),
                expected: self.in_dim,
                got: mean.len(),
            });
        }
        if let Some(i) = mean.iter().position(|v| !v.is_finite()) {
            return Err(ClassifyError::invalid(
                "ncm: class mean",
                format!("class {label}: non-finite value at column {i}"),
            ));
        }
        if self.labels.contains(&label) {
            return Err(ClassifyError::DuplicateClass { label });
        }
        self.push_class(label, mean.iter().map(|&v| v as f64).collect());
        Ok(())
    }

    /// Adds a class as the mean of its rows (eq. 2).
    pub fn add_class_from_rows(&mut self, label: i64, rows: ArrayView2<f32>) -> Result<()> {
        let r = checked_rows("ncm: rows of the new class", rows, Some(self.in_dim))?;
        let all: Vec<usize> = (0..r.n()).collect();
        let ids = vec![0u32; r.n()];
        let (mean, _) = class_means_f64(r.as_slice(), self.in_dim, &ids, &all, 1);
        if self.labels.contains(&label) {
            return Err(ClassifyError::DuplicateClass { label });
        }
        self.push_class(label, mean);
        Ok(())
    }

    /// Replaces the biases `b_c` (eq. 21's learned `s_c`), one per class.
    pub(crate) fn set_biases(&mut self, bias: Vec<f64>) {
        debug_assert_eq!(bias.len(), self.labels.len());
        self.bias = bias;
    }

    /// Puts `p` in front of the projection chain (a `pca:C` prefix fitted separately): the
    /// stored projected means / centroids / rows are unchanged.
    pub(crate) fn prepend(&mut self, p: Projection) {
        self.in_dim = p.in_dim();
        self.chain.insert(0, p);
    }

    /// Class labels, in score-column order.
    pub fn classes(&self) -> &[i64] {
        &self.labels
    }

    /// Dimension of the input rows.
    pub fn input_dim(&self) -> usize {
        self.in_dim
    }

    /// Dimension of the space the means live in (d).
    pub fn projected_dim(&self) -> usize {
        self.dim
    }

    /// The projections applied to an input row before it is compared with the means, in order.
    pub fn projections(&self) -> &[Projection] {
        &self.chain
    }

    /// Projected class means `W μ_c` (C × d) and biases `b_c`: the `w_c, b_c` of eq. 9-11 in
    /// the projected space.
    pub fn linear_form(&self) -> (Array2<f64>, &[f64]) {
        let m = Array2::from_shape_vec((self.labels.len(), self.dim), self.proj_means.clone())
            .unwrap_or_else(|_| Array2::zeros((0, self.dim)));
        (m, &self.bias)
    }

    /// Scores of eq. 9 for already projected rows.
    pub(crate) fn scores_projected(&self, y: &[f32]) -> Vec<f64> {
        let c = self.labels.len();
        let d = self.dim;
        let mut out = vec![0f64; (y.len() / d) * c];
        out.par_chunks_mut(c)
            .zip(y.par_chunks(d))
            .for_each(|(o, q)| {
                for ((s, m), b) in o
                    .iter_mut()
                    .zip(self.proj_means.chunks_exact(d))
                    .zip(&self.bias)
                {
                    let dot: f64 = q.iter().zip(m).map(|(a, b)| *a as f64 * b).sum();
                    *s = dot + b;
                }
            });
        out
    }

    /// Scores `f(c, x)` (eq. 9-11), one column per class of [`Ncm::classes`]; larger is nearer.
    pub fn scores(&self, x: ArrayView2<f32>) -> Result<Array2<f64>> {
        let rows = checked_rows("ncm: input", x, Some(self.in_dim))?;
        let y = project_chain(&self.chain, rows.as_slice());
        let s = self.scores_projected(&y);
        Array2::from_shape_vec((rows.n(), self.labels.len()), s)
            .map_err(|e| ModelError::shape("ncm scores", e).into())
    }

    /// The `k` best class labels of each row, best first (ties: smaller label).
    pub fn top_k(&self, x: ArrayView2<f32>, k: usize) -> Result<Vec<Vec<i64>>> {
        if k == 0 {
            return Err(ClassifyError::invalid("k", "must be at least 1"));
        }
        let s = self.scores(x)?;
        Ok(rank_score_rows(
            s.as_slice().unwrap_or(&[]),
            self.labels.len(),
            k,
            &self.labels,
        ))
    }
}

/// An [`Ncm`]'s scan table in f32, centred on the mean of its projected means (module docs):
/// what the engine's class means classify and probe with.
#[derive(Debug, Clone)]
pub(crate) struct CentredScan {
    /// Projected dimension p.
    dim: usize,
    /// The classes' labels as the kernel's row ids, in row order.
    ids: Vec<u64>,
    /// `W μ_c`, C × p.
    projected: Vec<f32>,
    /// r: the centring point (mean of the projected means).
    reference: Vec<f32>,
    /// Scan rows `[W μ_c − r, −½ ‖W μ_c − r‖²]`, C × (p + 1).
    augmented: Vec<f32>,
}

impl CentredScan {
    /// The centring point r.
    pub(crate) fn reference(&self) -> &[f32] {
        &self.reference
    }

    /// `W μ_c` of the class in row `i`, in f32.
    pub(crate) fn projected_mean(&self, i: usize) -> Option<&[f32]> {
        self.projected.get(i * self.dim..(i + 1) * self.dim)
    }

    /// The first non-finite value of the scan rows, as (row, column, value).
    pub(crate) fn non_finite(&self) -> Option<(usize, usize, f32)> {
        let p1 = self.dim + 1;
        self.augmented
            .iter()
            .position(|v| !v.is_finite())
            .map(|i| (i / p1, i % p1, self.augmented[i]))
    }

    /// The `k` best classes of each centred query row `[W x − r, 1]` (`q`: rows of p + 1),
    /// as (centred eq. 9 score, label), best first, ties by smaller label.
    pub(crate) fn top_k(
        &self,
        q: &[f32],
        k: usize,
    ) -> std::result::Result<Vec<Vec<(f32, u64)>>, ScanError> {
        let rows = DenseRows::new(
            DenseValues::F32(&self.augmented),
            self.dim + 1,
            &self.ids,
            None,
        )?;
        dense_topk(&rows, q, Metric::Dot, k, ScanOptions::default())
    }
}

/// Ranks each row of a row-major score matrix (`c` columns) and maps ids to labels. Ties go
/// to the smaller id; callers keep ids in increasing label order so that means smaller label.
pub(crate) fn rank_score_rows(scores: &[f64], c: usize, k: usize, labels: &[i64]) -> Vec<Vec<i64>> {
    scores
        .par_chunks(c)
        .map(|row| top_k_ids(row, k).into_iter().map(|i| labels[i]).collect())
        .collect()
}
