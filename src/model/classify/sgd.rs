//! What the SGD metric learners share (Mensink et al. TPAMI 2013, §5.1 "SGD training and early
//! stopping"): a fixed learning rate, no explicit regulariser (the rank d and the number of
//! iterations regularise), mini-batches of m images, validation on a held-out split, and the
//! metric with the lowest top-5 error kept (ties: lowest top-1, then the earliest); see
//! [`StopOn`] for the top-1 rule used with few classes.
//!
//! Data preparation: the learners work on `x' = (x − m) / s`, m the training mean and s the
//! root mean squared distance of the rows to m, so the fixed learning rate means the same
//! thing on pixels in 0..255 as on ℓ2-normalised Fisher vectors (the paper's features, whose
//! norm is 1). The learned `W'` is returned as the projection `W (x − m)` with `W = W' / s`,
//! exact on the raw data.
//!
//! Memory: the rows are read from a [`RowSource`] (a dense matrix, or PQ codes decoded on
//! demand, as the paper trains on compressed ImageNet Fisher vectors) and standardised as
//! they are read: the mean, the scale, the class means, the PCA start (streamed covariance
//! when the training split has at least D rows), every SGD mini-batch and every validation
//! pass go block by block, in the same order for either source, so nothing here holds the
//! standardised training set and learning from codes equals learning from their decoding.
//!
//! Initialisation (§5.2 "We initialize W as a PCA projection"): the top-d PCA directions,
//! scaled by γ with γ² = d / E‖P(x' − μ_y)‖², i.e. so that the projected within-class spread
//! matches the unit-covariance Gaussian that eq. 5 assumes; or seeded Gaussian rows with the
//! same scale (§3.5 checks that random starts reach the same error).

use rand::seq::SliceRandom;

use super::super::error::{ClassifyError, ClassifyResult as Result, ModelError};
use super::super::linalg::{a_bt_f32, par};
use super::super::pca::{CovarianceAccumulator, Pca};
use super::super::random::{derive_seed, gaussian, rng};
use super::labels::ClassIndex;
use super::projection::Projection;
use super::train_rows::{RowSource, STREAM_ROWS, class_means, standardise};
use ndarray::{Array2, ArrayView2};

/// The validation error early stopping minimises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopOn {
    /// Top-5, ties by top-1 (the paper's rule, for 1,000 classes).
    Top5,
    /// Top-1, ties by top-5.
    Top1,
    /// Top-5 with at least [`AUTO_TOP5_CLASSES`] classes, top-1 below: with 10 classes the
    /// top-5 error is near 0 and too noisy to select on (measured on Fashion-MNIST: it stopped
    /// NCMML after one epoch at 25% top-1 error, where training on reaches 17%).
    Auto,
}

/// Class count from which [`StopOn::Auto`] selects on top-5.
pub const AUTO_TOP5_CLASSES: usize = 50;

/// How W starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WInit {
    /// Top-d PCA directions (the paper's choice).
    Pca,
    /// Seeded Gaussian rows.
    Random,
}

/// SGD and early-stopping settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SgdOptions {
    /// Rank d of W (rows).
    pub dim: usize,
    /// Fixed learning rate η (on the standardised data, see the module doc).
    pub learning_rate: f64,
    /// Images per SGD iteration (m).
    pub batch_size: usize,
    /// Upper bound on passes over the training split.
    pub max_epochs: usize,
    /// Fraction of each class held out for validation / early stopping (0 = none: the last
    /// W is kept).
    pub validation_fraction: f64,
    /// At most this many held-out rows are used per validation (seeded subset).
    pub max_validation_rows: usize,
    /// Stop after this many validations without a new best (0 = run all epochs).
    pub patience: usize,
    /// How W starts.
    pub init: WInit,
    /// The validation error early stopping minimises.
    pub stop_on: StopOn,
    /// Seed of the split, the initialisation and the batches.
    pub seed: u64,
}

impl SgdOptions {
    /// Defaults for NCM / NCMC learning: m = 1,000 (the paper's batch for NCM, §5.1), η = 3
    /// (chosen on Fashion-MNIST's held-out split: η = 0.05 / 0.5 / 3 reach 25.7% / 20.0% /
    /// 17.1% validation top-1 error after 8-10 epochs at d = 64).
    pub fn ncm(dim: usize) -> SgdOptions {
        SgdOptions {
            dim,
            learning_rate: 3.0,
            batch_size: 1000,
            max_epochs: 30,
            validation_fraction: 0.1,
            max_validation_rows: 5000,
            patience: 5,
            init: WInit::Pca,
            stop_on: StopOn::Auto,
            seed: 1234,
        }
    }

    /// Defaults for k-NN metric learning: m = 300 (the paper's batch for k-NN, §4).
    pub fn knn(dim: usize) -> SgdOptions {
        SgdOptions {
            batch_size: 300,
            learning_rate: 1.0,
            max_epochs: 10,
            max_validation_rows: 2000,
            ..SgdOptions::ncm(dim)
        }
    }

    pub(crate) fn check(&self, method: &str) -> Result<()> {
        let bad = |a: &str, d: String| ClassifyError::invalid(&format!("{method}: {a}"), d);
        if self.dim == 0 {
            return Err(bad("dim", "must be at least 1".into()));
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            return Err(bad(
                "learning_rate",
                format!("must be finite and > 0, got {}", self.learning_rate),
            ));
        }
        if self.batch_size == 0 {
            return Err(bad("batch_size", "must be at least 1".into()));
        }
        if self.max_epochs == 0 {
            return Err(bad("max_epochs", "must be at least 1".into()));
        }
        if !(0.0..1.0).contains(&self.validation_fraction) {
            return Err(bad(
                "validation_fraction",
                format!("must be in [0, 1), got {}", self.validation_fraction),
            ));
        }
        if self.validation_fraction > 0.0 && self.max_validation_rows == 0 {
            return Err(bad("max_validation_rows", "must be at least 1".into()));
        }
        Ok(())
    }
}

/// One epoch of SGD, as reported to the progress callback.
#[derive(Debug, Clone, PartialEq)]
pub struct EpochReport {
    /// The method being trained (e.g. `ncmml`), for display.
    pub method: &'static str,
    /// 1-based.
    pub epoch: usize,
    /// SGD iterations so far.
    pub iterations: usize,
    /// Mean training loss over the epoch's batches (negative log-likelihood of eq. 6 for
    /// NCMML / NCMC, mean hinge per triplet of eq. 25 for LMNN).
    pub train_loss: f64,
    /// Validation top-1 / top-5 error (NaN without a validation split).
    pub val_top1: f64,
    /// Validation top-5 error (NaN without a validation split).
    pub val_top5: f64,
    /// Whether this epoch's W is the best so far (and kept).
    pub best: bool,
}

/// The loss curve and the early-stopping decision.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SgdReport {
    /// One report per epoch, in order.
    pub epochs: Vec<EpochReport>,
    /// Epoch whose W was kept (1-based; 0 = the initial W).
    pub best_epoch: usize,
    /// Whether patience ran out before `max_epochs`.
    pub stopped_early: bool,
    /// The standardisation scale s (see the module doc).
    pub scale: f64,
}

/// Receiver of per-epoch reports.
pub type EpochCallback<'a> = &'a mut dyn FnMut(&EpochReport);

/// Standardised training data with its split. The rows stay in their [`RowSource`] (a dense
/// matrix or PQ codes) and are standardised block by block as they are read, so no pass holds
/// the standardised (or, from codes, the decoded) training set.
pub(crate) struct Prepared<'a> {
    src: RowSource<'a>,
    pub dim: usize,
    pub ids: Vec<u32>,
    pub classes: ClassIndex,
    pub mean: Vec<f64>,
    pub scale: f64,
    pub train: Vec<usize>,
    pub val: Vec<usize>,
}

/// Column means (f64) of the rows of `src`, streamed in blocks of [`STREAM_ROWS`].
fn streamed_mean(src: &RowSource, buf: &mut Vec<f32>) -> Vec<f64> {
    let (n, d) = (src.n(), src.dim());
    let mut sum = vec![0f64; d];
    let all: Vec<usize> = (0..n).collect();
    for blk in all.chunks(STREAM_ROWS) {
        src.fill(blk, buf);
        let mut part = vec![0f64; d];
        for r in buf.chunks_exact(d) {
            for (a, &v) in part.iter_mut().zip(r) {
                *a += v as f64;
            }
        }
        for (a, b) in sum.iter_mut().zip(part) {
            *a += b;
        }
    }
    let inv = 1.0 / n.max(1) as f64;
    sum.iter().map(|s| s * inv).collect()
}

impl<'a> Prepared<'a> {
    /// Standardisation and split of the rows of `src` labelled `labels` (one per row). Dense
    /// sources must hold validated (finite) rows; code sources decode to finite rows.
    pub(crate) fn new(
        method: &str,
        src: RowSource<'a>,
        labels: &[i64],
        opts: &SgdOptions,
        min_per_class: usize,
    ) -> Result<Prepared<'a>> {
        opts.check(method)?;
        let (n, d) = (src.n(), src.dim());
        if n == 0 || d == 0 {
            return Err(ModelError::Empty {
                what: format!("{method}: training data"),
                rows: n,
                cols: d,
            }
            .into());
        }
        let (classes, ids) = ClassIndex::from_labels(&format!("{method}: labels"), labels, n)?;
        if classes.len() < 2 {
            return Err(ClassifyError::TooFewClasses {
                what: method.to_string(),
                needed: 2,
                got: classes.len(),
            });
        }
        let mut buf = Vec::new();
        let mean = streamed_mean(&src, &mut buf);
        let all: Vec<usize> = (0..n).collect();
        let mut ms = 0f64;
        for blk in all.chunks(STREAM_ROWS) {
            src.fill(blk, &mut buf);
            ms += buf
                .chunks_exact(d)
                .map(|r| {
                    r.iter()
                        .zip(&mean)
                        .map(|(a, m)| (*a as f64 - m).powi(2))
                        .sum::<f64>()
                })
                .sum::<f64>();
        }
        let ms = ms / n as f64;
        if !(ms > 0.0 && ms.is_finite()) {
            return Err(ClassifyError::invalid(
                &format!("{method}: training data"),
                "all rows are identical",
            ));
        }
        let scale = ms.sqrt();
        let (train, val) = stratified_split(
            method,
            &ids,
            &classes,
            opts.validation_fraction,
            opts.max_validation_rows,
            min_per_class,
            opts.seed,
        )?;
        Ok(Prepared {
            src,
            dim: d,
            ids,
            classes,
            mean,
            scale,
            train,
            val,
        })
    }

    /// Replaces `out` with the standardised rows `idx`.
    pub(crate) fn gather_into(&self, idx: &[usize], out: &mut Vec<f32>) {
        self.src.fill(idx, out);
        standardise(out, &self.mean, 1.0 / self.scale);
    }

    /// The standardised rows `idx`, row-major.
    pub(crate) fn gather(&self, idx: &[usize]) -> Vec<f32> {
        let mut out = Vec::new();
        self.gather_into(idx, &mut out);
        out
    }

    /// Runs `f(block_rows, standardised_block)` over `rows` in blocks of [`STREAM_ROWS`],
    /// in order, with one reused buffer.
    pub(crate) fn for_blocks(&self, rows: &[usize], mut f: impl FnMut(&[usize], &[f32])) {
        let mut buf = Vec::new();
        for blk in rows.chunks(STREAM_ROWS) {
            self.gather_into(blk, &mut buf);
            f(blk, &buf);
        }
    }

    /// Rows `rows` projected by W' (d × D), streamed: `rows.len()` × d.
    pub(crate) fn project(&self, rows: &[usize], w: &[f32], d: usize) -> Vec<f32> {
        let mut q = Vec::with_capacity(rows.len() * d);
        self.for_blocks(rows, |blk, x| {
            q.extend(a_bt_f32(x, w, blk.len(), self.dim, d, par()));
        });
        q
    }

    /// Class means of the training split (standardised space), C × D, f32.
    pub(crate) fn train_means(&self) -> Vec<f32> {
        let (m, _) = self.class_means(&self.train, true);
        m.into_iter().map(|v| v as f32).collect()
    }

    /// Class means (eq. 2) of `rows`, f64, C × D, standardised or raw, streamed; classes
    /// without rows get a zero mean. Also the per-class counts.
    pub(crate) fn class_means(&self, rows: &[usize], standardised: bool) -> (Vec<f64>, Vec<usize>) {
        let st = standardised.then_some((&self.mean[..], 1.0 / self.scale));
        class_means(&self.src, rows, &self.ids, self.classes.len(), st)
    }

    /// Initial W' (d × D, row-major) per [`WInit`], scaled as in the module doc. The PCA is
    /// accumulated over streamed blocks (covariance path) when the training split has at
    /// least D rows; with fewer rows than dimensions the split is small and is gathered for
    /// the SVD path.
    pub(crate) fn init_w(&self, method: &str, opts: &SgdOptions) -> Result<Vec<f32>> {
        let (d, dd) = (opts.dim, self.dim);
        if d > dd {
            return Err(ClassifyError::invalid(
                &format!("{method}: dim"),
                format!("a rank-{d} projection of {dd}-dimensional data: d must be <= {dd}"),
            ));
        }
        let mut w: Vec<f32> = match opts.init {
            WInit::Pca if self.train.len() >= dd => {
                let mut acc = CovarianceAccumulator::new(dd)?;
                self.for_blocks(&self.train, |_, x| acc.add_rows(x));
                let pca = Pca::from_covariance(&acc.finish()?, d)?;
                pca.linear().weight().iter().copied().collect()
            }
            WInit::Pca => {
                let xt = self.gather(&self.train);
                let v = ArrayView2::from_shape((self.train.len(), dd), &xt)
                    .map_err(|e| ModelError::shape(&format!("{method}: training rows"), e))?;
                let pca = Pca::fit(v, d)?;
                pca.linear().weight().iter().copied().collect()
            }
            WInit::Random => gaussian(&mut rng(derive_seed(opts.seed, 0x1417)), d * dd)
                .into_iter()
                .map(|v| (v / (dd as f64).sqrt()) as f32)
                .collect(),
        };
        // γ² = d / E‖W (x − μ_y)‖² over the training split.
        let means = self.train_means();
        let mut acc = 0f64;
        self.for_blocks(&self.train, |blk, xs| {
            for (&i, x) in blk.iter().zip(xs.chunks_exact(dd)) {
                let c = self.ids[i] as usize;
                let mu = &means[c * dd..(c + 1) * dd];
                for wr in w.chunks_exact(dd) {
                    let p: f64 = wr
                        .iter()
                        .zip(x.iter().zip(mu))
                        .map(|(a, (b, m))| *a as f64 * (*b - *m) as f64)
                        .sum();
                    acc += p * p;
                }
            }
        });
        let spread = acc / self.train.len() as f64;
        if spread > 0.0 && spread.is_finite() {
            let g = ((d as f64) / spread).sqrt() as f32;
            for v in &mut w {
                *v *= g;
            }
        }
        Ok(w)
    }

    /// W = W' / s as a projection `W (x − m)` on the raw data.
    pub(crate) fn to_projection(&self, w: &[f32], d: usize) -> Result<Projection> {
        let inv = (1.0 / self.scale) as f32;
        let weight = Array2::from_shape_vec((d, self.dim), w.iter().map(|v| v * inv).collect())
            .map_err(|e| ModelError::shape("projection weight", e))?;
        Projection::new(self.mean.iter().map(|&v| v as f32).collect(), weight)
    }

    /// Seeded permutation of the training rows for an epoch.
    pub(crate) fn epoch_order(&self, seed: u64, epoch: usize) -> Vec<usize> {
        let mut order = self.train.clone();
        order.shuffle(&mut rng(derive_seed(seed, 0xe0c + epoch as u64)));
        order
    }
}

/// Keeps the best W by (top-5, top-1) validation error and decides when to stop.
pub(crate) struct EarlyStopping {
    best: Option<(f64, f64)>,
    pub best_w: Vec<f32>,
    pub best_extra: Vec<f64>,
    pub best_epoch: usize,
    since: usize,
    patience: usize,
    top5_first: bool,
}

impl EarlyStopping {
    pub(crate) fn new(
        w0: Vec<f32>,
        extra: Vec<f64>,
        opts: &SgdOptions,
        classes: usize,
    ) -> EarlyStopping {
        let top5_first = match opts.stop_on {
            StopOn::Top5 => true,
            StopOn::Top1 => false,
            StopOn::Auto => classes >= AUTO_TOP5_CLASSES,
        };
        EarlyStopping {
            top5_first,
            patience: opts.patience,
            best: None,
            best_w: w0,
            best_extra: extra,
            best_epoch: 0,
            since: 0,
        }
    }

    /// Records a validation; returns whether it is the new best.
    pub(crate) fn offer(
        &mut self,
        epoch: usize,
        top1: f64,
        top5: f64,
        w: &[f32],
        extra: &[f64],
    ) -> bool {
        let key = if self.top5_first {
            (top5, top1)
        } else {
            (top1, top5)
        };
        let better = match self.best {
            None => true,
            Some((a, b)) => key.0 < a || (key.0 == a && key.1 < b),
        };
        if better {
            self.best = Some(key);
            self.best_w = w.to_vec();
            self.best_extra = extra.to_vec();
            self.best_epoch = epoch;
            self.since = 0;
        } else {
            self.since += 1;
        }
        better
    }

    /// Records an epoch's W: with a validation split, [`Self::offer`]; without one, every
    /// epoch's W is kept (the last one trained is the model). Returns whether it was kept.
    pub(crate) fn record(
        &mut self,
        validated: bool,
        epoch: usize,
        (top1, top5): (f64, f64),
        w: &[f32],
        extra: &[f64],
    ) -> bool {
        if validated {
            return self.offer(epoch, top1, top5, w, extra);
        }
        self.best_w = w.to_vec();
        self.best_extra = extra.to_vec();
        self.best_epoch = epoch;
        true
    }

    pub(crate) fn should_stop(&self) -> bool {
        self.patience > 0 && self.since >= self.patience
    }
}

/// Ends an epoch: passes its report to the callback, keeps it, and returns whether training
/// stops here (patience exhausted), noting in `report` when that is before `max_epochs`.
pub(crate) fn finish_epoch(
    report: &mut SgdReport,
    callback: &mut Option<EpochCallback>,
    stop: &EarlyStopping,
    e: EpochReport,
    max_epochs: usize,
) -> bool {
    if let Some(cb) = callback.as_mut() {
        cb(&e);
    }
    let epoch = e.epoch;
    report.epochs.push(e);
    let halt = stop.should_stop();
    if halt {
        report.stopped_early = epoch < max_epochs;
    }
    halt
}

/// Top-1 and top-5 error of ranked dense ids against the truth.
pub(crate) fn top1_top5(ranked: &[Vec<usize>], truth: &[u32]) -> (f64, f64) {
    let n = ranked.len().max(1) as f64;
    let mut e1 = 0usize;
    let mut e5 = 0usize;
    for (r, &t) in ranked.iter().zip(truth) {
        if r.first() != Some(&(t as usize)) {
            e1 += 1;
        }
        if !r.iter().take(5).any(|&c| c == t as usize) {
            e5 += 1;
        }
    }
    (e1 as f64 / n, e5 as f64 / n)
}

/// Stratified held-out split: ⌊f · n_c⌋ rows of each class (seeded), at most `max_val` of them
/// kept; every class keeps at least `min_train` training rows (error naming the class).
pub(crate) fn stratified_split(
    method: &str,
    ids: &[u32],
    classes: &ClassIndex,
    fraction: f64,
    max_val: usize,
    min_train: usize,
    seed: u64,
) -> Result<(Vec<usize>, Vec<usize>)> {
    let mut by_class: Vec<Vec<usize>> = vec![Vec::new(); classes.len()];
    for (i, &c) in ids.iter().enumerate() {
        by_class[c as usize].push(i);
    }
    let mut r = rng(derive_seed(seed, 0x5e1));
    let mut train = Vec::with_capacity(ids.len());
    let mut val = Vec::new();
    for (c, mut members) in by_class.into_iter().enumerate() {
        let nv = (fraction * members.len() as f64).floor() as usize;
        let nt = members.len() - nv;
        if nt < min_train {
            return Err(ClassifyError::SmallClass {
                what: format!("{method} (training part after the validation split)"),
                label: classes.labels()[c],
                needed: min_train,
                got: nt,
            });
        }
        members.shuffle(&mut r);
        val.extend_from_slice(&members[..nv]);
        train.extend_from_slice(&members[nv..]);
    }
    train.sort_unstable();
    val.shuffle(&mut r);
    val.truncate(max_val);
    val.sort_unstable();
    Ok((train, val))
}
