//! Nearest class multiple centroids, NCMC (Mensink et al. TPAMI 2013, §3.3, eq. 16-20): each
//! class is k centroids m_cj, found by k-means within the class (ℓ2, on the training split);
//! `p(c|x) = Σ_j p(m_cj|x)` with a soft-min over all centroids (eq. 16-17), W learned by SGD on
//! the log-likelihood with the gradient of eq. 19-20 (same settings as NCMML).
//!
//! The paper keeps the centroids fixed and notes that iterating k-means and the learning of W
//! "might further improve" results. With `recluster_every = e > 0` this is done every e
//! epochs: each class is re-clustered by k-means on its *projected* rows W x (hot start from
//! the projected centroids), and each centroid is then re-estimated as the input-space mean of
//! the rows assigned to it (so centroids stay in the input space, where new data and new
//! classes are added). Empty clusters keep their previous centroid.
//!
//! Scores: `log Σ_j exp(−½ d_W(x, m_cj)) − log k_c` (eq. 18's mixture with weights 1/k_c; the
//! `−½ ‖W x‖²` common to all classes is dropped, as in eq. 9-11), so a class added later with
//! fewer rows than k (hence fewer centroids) is not favoured.

use ndarray::ArrayView2;
use rayon::prelude::*;

use super::super::cancel::Cancel;
use super::super::error::{ClassifyError, ClassifyResult as Result};
use super::super::input::checked_rows;
use super::super::kmeans::{KMeansInit, KMeansOptions, assign_nearest, kmeans_rows};
use super::super::linalg::{a_bt_f32, par};
use super::super::random::derive_seed;
use super::labels::top_k_labels;
use super::ncm::{check_chain, project_chain};
use super::ncmml::validate;
use super::projection::Projection;
use super::sgd::{
    EarlyStopping, EpochCallback, EpochReport, Prepared, SgdOptions, SgdReport, finish_epoch,
};
use super::softmax_metric::distance_step;
use super::train_rows::RowSource;

/// NCMC settings.
#[derive(Debug, Clone, PartialEq)]
pub struct NcmcOptions {
    /// SGD and early-stopping settings.
    pub sgd: SgdOptions,
    /// Centroids per class.
    pub k: usize,
    /// k-means iterations (per class).
    pub kmeans_iterations: usize,
    /// Re-estimate the centroids in the projected space every this many epochs (0 = never,
    /// the paper's experiments).
    pub recluster_every: usize,
}

impl NcmcOptions {
    /// Defaults for a rank-`dim` metric with `k` centroids per class (20 k-means iterations, no re-clustering).
    pub fn new(dim: usize, k: usize) -> NcmcOptions {
        NcmcOptions {
            sgd: SgdOptions::ncm(dim),
            k,
            kmeans_iterations: 20,
            recluster_every: 0,
        }
    }
}

/// An NCMC classifier: k_c centroids per class, scored through a chain of projections.
#[derive(Debug, Clone, PartialEq)]
pub struct Ncmc {
    chain: Vec<Projection>,
    in_dim: usize,
    dim: usize,
    labels: Vec<i64>,
    /// Number of centroids of each class, and where they start in `proj`.
    groups: Vec<(usize, usize)>,
    /// Projected centroids W m_cj (rows), f64.
    proj: Vec<f64>,
    /// −½ ‖W m_cj‖².
    bias: Vec<f64>,
    kmeans_iterations: usize,
    seed: u64,
}

impl Ncmc {
    fn empty(chain: Vec<Projection>, in_dim: usize, kmeans_iterations: usize, seed: u64) -> Ncmc {
        let dim = chain.last().map_or(in_dim, Projection::out_dim);
        Ncmc {
            chain,
            in_dim,
            dim,
            labels: Vec::new(),
            groups: Vec::new(),
            proj: Vec::new(),
            bias: Vec::new(),
            kmeans_iterations,
            seed,
        }
    }

    fn push(&mut self, label: i64, centroids: &[f64]) {
        let start = self.bias.len();
        let count = centroids.len() / self.in_dim;
        for m in centroids.chunks_exact(self.in_dim) {
            let mut p = m.to_vec();
            for pr in &self.chain {
                p = pr.apply_f64(&p);
            }
            self.bias.push(-0.5 * p.iter().map(|v| v * v).sum::<f64>());
            self.proj.extend(p);
        }
        self.labels.push(label);
        self.groups.push((start, count));
    }

    /// Adds a class from its rows: k-means with k centroids (fewer when the class has fewer
    /// rows), no retraining of W.
    pub fn add_class_from_rows(
        &mut self,
        label: i64,
        k: usize,
        rows: ArrayView2<f32>,
    ) -> Result<()> {
        if self.labels.contains(&label) {
            return Err(ClassifyError::DuplicateClass { label });
        }
        if k == 0 {
            return Err(ClassifyError::invalid("ncmc: k", "must be at least 1"));
        }
        let r = checked_rows("ncmc: rows of the new class", rows, Some(self.in_dim))?;
        let k = k.min(r.n());
        let opts = KMeansOptions {
            iterations: self.kmeans_iterations,
            seed: derive_seed(self.seed, label as u64),
            init: KMeansInit::PlusPlus,
            max_points_per_centroid: 0,
        };
        let km = kmeans_rows(r.as_slice(), self.in_dim, k, None, &opts, &Cancel::new())?;
        let c: Vec<f64> = km.centroids.iter().map(|&v| v as f64).collect();
        self.push(label, &c);
        Ok(())
    }

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

    /// Class labels, in score-column order.
    pub fn classes(&self) -> &[i64] {
        &self.labels
    }

    /// The projections applied to an input row before it is compared with the centroids, in order.
    pub fn projections(&self) -> &[Projection] {
        &self.chain
    }

    /// Class scores (eq. 16-18, log scale), one column per class; larger is better.
    pub fn scores(&self, x: ArrayView2<f32>) -> Result<Vec<f64>> {
        let rows = checked_rows("ncmc: input", x, Some(self.in_dim))?;
        let y = project_chain(&self.chain, rows.as_slice());
        let d = self.dim;
        let c = self.labels.len();
        let mut out = vec![0f64; rows.n() * c];
        out.par_chunks_mut(c)
            .zip(y.par_chunks(d))
            .for_each(|(o, q)| {
                for (s, &(start, count)) in o.iter_mut().zip(&self.groups) {
                    let logits: Vec<f64> = (start..start + count)
                        .map(|j| {
                            let p = &self.proj[j * d..(j + 1) * d];
                            q.iter().zip(p).map(|(a, b)| *a as f64 * b).sum::<f64>() + self.bias[j]
                        })
                        .collect();
                    let mx = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    *s = mx + logits.iter().map(|v| (v - mx).exp()).sum::<f64>().ln()
                        - (count as f64).ln();
                }
            });
        Ok(out)
    }

    /// The `k` best class labels of each row, best first.
    pub fn top_k(&self, x: ArrayView2<f32>, k: usize) -> Result<Vec<Vec<i64>>> {
        top_k_labels(&self.scores(x)?, &self.labels, k)
    }
}

/// A learned NCMC metric and its classifier.
#[derive(Debug, Clone)]
pub struct NcmcTraining {
    /// The learned metric W, as a projection of the raw data.
    pub projection: Projection,
    /// The NCMC classifier in the learned space.
    pub ncmc: Ncmc,
    /// The SGD loss curve and early-stopping decision.
    pub report: SgdReport,
}

/// k-means (k-means++ seeding) within each class of the training split; C·k × D, class-major.
/// Classes are clustered one after the other, so at most one class's rows are held (never
/// the training set; from PQ codes, one class's reconstructions).
fn class_centroids(prep: &Prepared, k: usize, iters: usize, seed: u64) -> Result<Vec<f32>> {
    let c = prep.classes.len();
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); c];
    for &i in &prep.train {
        members[prep.ids[i] as usize].push(i);
    }
    let mut out = Vec::with_capacity(c * k * prep.dim);
    let mut xs = Vec::new();
    for (ci, m) in members.iter().enumerate() {
        prep.gather_into(m, &mut xs);
        let opts = KMeansOptions {
            iterations: iters,
            seed: derive_seed(seed, 0xc1 + ci as u64),
            init: KMeansInit::PlusPlus,
            max_points_per_centroid: 0,
        };
        out.extend(
            kmeans_rows(&xs, prep.dim, k, None, &opts, &Cancel::new())?
                .centroids
                .iter(),
        );
    }
    Ok(out)
}

/// Re-estimates the centroids in the projected space (module doc).
fn recluster(
    prep: &Prepared,
    w: &[f32],
    d: usize,
    cent: &mut [f32],
    k: usize,
    iters: usize,
    seed: u64,
) -> Result<()> {
    let dd = prep.dim;
    let c = prep.classes.len();
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); c];
    for &i in &prep.train {
        members[prep.ids[i] as usize].push(i);
    }
    let mut xs = Vec::new();
    for (ci, m) in members.iter().enumerate() {
        prep.gather_into(m, &mut xs);
        let y = a_bt_f32(&xs, w, m.len(), dd, d, par());
        let block = &mut cent[ci * k * dd..(ci + 1) * k * dd];
        let p0 = a_bt_f32(block, w, k, dd, d, par());
        let opts = KMeansOptions {
            iterations: iters,
            seed: derive_seed(seed, ci as u64),
            init: KMeansInit::Random,
            max_points_per_centroid: 0,
        };
        let km = kmeans_rows(&y, d, k, Some(&p0), &opts, &Cancel::new())?;
        let pc: Vec<f32> = km.centroids.iter().copied().collect();
        let (assign, _) = assign_nearest(&y, d, &pc, k);
        let mut sums = vec![0f64; k * dd];
        let mut counts = vec![0usize; k];
        for (xr, &a) in xs.chunks_exact(dd).zip(&assign) {
            counts[a as usize] += 1;
            for (s, v) in sums[a as usize * dd..(a as usize + 1) * dd]
                .iter_mut()
                .zip(xr)
            {
                *s += *v as f64;
            }
        }
        for j in 0..k {
            if counts[j] > 0 {
                for (o, s) in block[j * dd..(j + 1) * dd]
                    .iter_mut()
                    .zip(&sums[j * dd..(j + 1) * dd])
                {
                    *o = (s / counts[j] as f64) as f32;
                }
            }
        }
    }
    Ok(())
}

/// Learns W for NCMC on the rows of `x` labelled `labels`.
pub fn train_ncmc(
    x: ArrayView2<f32>,
    labels: &[i64],
    opts: &NcmcOptions,
    callback: Option<EpochCallback>,
) -> Result<NcmcTraining> {
    let rows = checked_rows("ncmc: training data", x, None)?;
    let src = RowSource::Dense {
        x: rows.as_slice(),
        dim: rows.dim(),
    };
    train_ncmc_rows(src, labels, opts, callback)
}

/// [`train_ncmc`] on any row source (dense or PQ codes decoded per mini-batch).
pub(crate) fn train_ncmc_rows(
    src: RowSource,
    labels: &[i64],
    opts: &NcmcOptions,
    mut callback: Option<EpochCallback>,
) -> Result<NcmcTraining> {
    let method = "ncmc";
    let s = &opts.sgd;
    if opts.k == 0 {
        return Err(ClassifyError::invalid("ncmc: k", "must be at least 1"));
    }
    let prep = Prepared::new(method, src, labels, s, opts.k)?;
    let (d, dd, c, k) = (s.dim, prep.dim, prep.classes.len(), opts.k);
    let kc = c * k;
    let mut cent = class_centroids(&prep, k, opts.kmeans_iterations, s.seed)?;
    let mut w = prep.init_w(method, s)?;
    let mut stop = EarlyStopping::new(w.clone(), Vec::new(), s, c);
    let mut best_cent = cent.clone();
    let mut report = SgdReport {
        scale: prep.scale,
        ..SgdReport::default()
    };
    if !prep.val.is_empty() {
        let (t1, t5) = validate(&prep, &w, d, &cent, k, None);
        stop.offer(0, t1, t5, &w, &[]);
    }
    let lr = s.learning_rate as f32;
    let mut iterations = 0;
    let mut xb = Vec::new();
    for epoch in 1..=s.max_epochs {
        let order = prep.epoch_order(s.seed, epoch);
        let mut loss = 0f64;
        for batch in order.chunks(s.batch_size) {
            prep.gather_into(batch, &mut xb);
            let y: Vec<u32> = batch.iter().map(|&i| prep.ids[i]).collect();
            let step = distance_step(&w, d, dd, &xb, &cent, kc, k, &y);
            for (a, g) in w.iter_mut().zip(&step.grad) {
                *a += lr * g;
            }
            loss += step.loss;
            iterations += 1;
        }
        let loss = loss / order.len() as f64;
        if !loss.is_finite() || w.iter().any(|v| !v.is_finite()) {
            return Err(ClassifyError::Diverged {
                method: method.into(),
                epoch,
                detail: format!("loss {loss}"),
            });
        }
        if opts.recluster_every > 0 && epoch % opts.recluster_every == 0 {
            recluster(
                &prep,
                &w,
                d,
                &mut cent,
                k,
                opts.kmeans_iterations,
                derive_seed(s.seed, epoch as u64),
            )?;
        }
        let (t1, t5) = validate(&prep, &w, d, &cent, k, None);
        let best = stop.record(!prep.val.is_empty(), epoch, (t1, t5), &w, &[]);
        if best {
            best_cent = cent.clone();
        }
        let e = EpochReport {
            method,
            epoch,
            iterations,
            train_loss: loss,
            val_top1: t1,
            val_top5: t5,
            best,
        };
        if finish_epoch(&mut report, &mut callback, &stop, e, s.max_epochs) {
            break;
        }
    }
    report.best_epoch = stop.best_epoch;
    let projection = prep.to_projection(&stop.best_w, d)?;
    check_chain(std::slice::from_ref(&projection))?;
    let mut ncmc = Ncmc::empty(vec![projection.clone()], dd, opts.kmeans_iterations, s.seed);
    // Centroids back to the raw input space: m = m' s + mean.
    for (ci, label) in prep.classes.labels().iter().enumerate() {
        let raw: Vec<f64> = best_cent[ci * k * dd..(ci + 1) * k * dd]
            .iter()
            .enumerate()
            .map(|(j, &v)| v as f64 * prep.scale + prep.mean[j % dd])
            .collect();
        ncmc.push(*label, &raw);
    }
    Ok(NcmcTraining {
        projection,
        ncmc,
        report,
    })
}
