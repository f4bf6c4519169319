//! What metric learning (eq. 1-4) and JSCL (eq. 9-13) share (Gordo et al. CVPR 2012, §3 and
//! §6): one triplet per SGD step, U ∈ R^{R×D} started from a seeded zero-mean Normal (entries
//! N(0, 1/D)), no explicit regulariser but early stopping, and "the step size η and the
//! number of iterations validated" (§7.2, §7.4): every η of the grid is run, each run keeps
//! its U of best validation score and stops after `patience` epochs without a better one,
//! and the run with the best score wins (ties: the smaller η).
//!
//! The rows are standardised first, `x' = (x − m) / s` with `s` the root mean squared
//! distance to the mean, so a grid of η means the same on pixels as on unit-norm features;
//! the result `U (x − m) / s` is stored as CENTER + LINEAR. Validation: the held-out rows
//! each query the others, leave-one-out, by Euclidean distance in the learned space (what a
//! PQ or float index searches with). Without instance groups they are a stratified, seeded
//! split and the score is the precision of the `k` nearest having the query's class; with
//! groups (`TrainOptions::groups`) they are held-out groups and the score is their instance
//! mAP (`instance_validation.rs`): the paper validates its parameters for the instance task
//! (§7.4), and the epoch that separates categories best is not the one that keeps the
//! instances of a category apart. Instance validation holds whole groups out of learning, so
//! the chosen η is then rerun for the chosen number of epochs on every row (as CCA is
//! refitted with its chosen ρ).
//!
//! Deterministic per seed: the split, the start, every epoch's order and every sampled
//! triplet come from seeds derived from the step's seed; updates run sequentially.

use ndarray::Array2;
use rand::Rng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::super::center::Center;
use super::super::classify::{ClassIndex, stratified_split};
use super::super::error::{ModelError, Result};
use super::super::linalg::a_bt_f32;
use super::super::linear::Linear;
use super::super::random::{derive_seed, gaussian, rng};
use super::super::stage::Stage;
use super::instance_validation::{HeldOutGroups, RhoValidation};
use super::options::SupervisedOptions;

/// Rows standardised, with class ids and the validation split.
pub(crate) struct Labelled {
    /// Standardised rows, row-major n × dim.
    pub x: Vec<f32>,
    pub dim: usize,
    pub ids: Vec<u32>,
    pub classes: usize,
    pub mean: Vec<f64>,
    pub scale: f64,
    pub train: Vec<usize>,
    pub val: Vec<usize>,
    /// Training rows of each class, sorted.
    pub members: Vec<Vec<usize>>,
    /// Instance validation: `val` are these held-out groups' rows, scored by instance mAP.
    pub held: Option<HeldOutGroups>,
}

impl Labelled {
    /// `x`: validated row-major rows of `dim`; one label per row; each class keeps at least
    /// `min_train` training rows after the split. With `groups` (one id per row, negative =
    /// none) the held-out rows are instance groups (`instance_validation.rs`), else a
    /// stratified split.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        method: &str,
        x: &[f32],
        dim: usize,
        labels: &[i64],
        groups: Option<&[i64]>,
        opts: &SupervisedOptions,
        min_train: usize,
        seed: u64,
    ) -> Result<Labelled> {
        let n = x.len() / dim.max(1);
        let (classes, ids) = class_ids(method, labels, n)?;
        let mean = super::super::center::column_means_f64(x, dim);
        let ms: f64 = x
            .chunks_exact(dim)
            .map(|r| {
                r.iter()
                    .zip(&mean)
                    .map(|(a, m)| (*a as f64 - m).powi(2))
                    .sum::<f64>()
            })
            .sum::<f64>()
            / n as f64;
        if !(ms > 0.0 && ms.is_finite()) {
            return Err(ModelError::invalid(
                &format!("{method}: training data"),
                "all rows are identical",
            ));
        }
        let scale = ms.sqrt();
        let inv = 1.0 / scale;
        let xs: Vec<f32> = x
            .chunks_exact(dim)
            .flat_map(|r| {
                r.iter()
                    .zip(&mean)
                    .map(move |(a, m)| ((*a as f64 - m) * inv) as f32)
            })
            .collect();
        let (train, val, held) = match groups {
            Some(g) => {
                if g.len() != n {
                    return Err(ModelError::invalid(
                        "groups",
                        format!("{} group ids for {n} training rows", g.len()),
                    ));
                }
                let held = HeldOutGroups::new(g, opts, seed)?;
                (held.fit_rows.clone(), held.rows.clone(), Some(held))
            }
            None => {
                let (train, val) = stratified_split(
                    method,
                    &ids,
                    &classes,
                    opts.validation_fraction,
                    opts.max_validation_rows,
                    min_train,
                    seed,
                )
                .map_err(|e| ModelError::from_classifier(method, e))?;
                (train, val, None)
            }
        };
        let mut members = vec![Vec::new(); classes.len()];
        for &i in &train {
            members[ids[i] as usize].push(i);
        }
        if held.is_some() {
            // The rows outside the held-out groups must still pose the triplets.
            let present = members.iter().filter(|m| !m.is_empty()).count();
            if present < 2 {
                return Err(ModelError::invalid(
                    "groups",
                    format!(
                        "{method}: the rows outside the held-out instance groups hold {present}                          class(es); learning needs at least 2"
                    ),
                ));
            }
            if let Some((c, m)) = members
                .iter()
                .enumerate()
                .find(|(_, m)| !m.is_empty() && m.len() < min_train)
            {
                return Err(ModelError::invalid(
                    "groups",
                    format!(
                        "{method}: class {} has {} row(s) outside the held-out instance groups; \
                         it needs at least {min_train}",
                        classes.labels()[c],
                        m.len()
                    ),
                ));
            }
        }
        Ok(Labelled {
            x: xs,
            dim,
            ids,
            classes: classes.len(),
            mean,
            scale,
            train,
            val,
            members,
            held,
        })
    }

    /// The same rows with every one of them a training row and none held out (the refit
    /// after instance validation).
    fn with_every_row_training(&self) -> Labelled {
        let n = self.ids.len();
        let mut members = vec![Vec::new(); self.classes];
        for i in 0..n {
            members[self.ids[i] as usize].push(i);
        }
        Labelled {
            x: self.x.clone(),
            dim: self.dim,
            ids: self.ids.clone(),
            classes: self.classes,
            mean: self.mean.clone(),
            scale: self.scale,
            train: (0..n).collect(),
            val: Vec::new(),
            members,
            held: None,
        }
    }

    /// Standardised row `i`.
    pub(crate) fn row(&self, i: usize) -> &[f32] {
        &self.x[i * self.dim..(i + 1) * self.dim]
    }
}

/// Dense class ids of `labels` (one per row of `n`); at least two classes.
pub(crate) fn class_ids(method: &str, labels: &[i64], n: usize) -> Result<(ClassIndex, Vec<u32>)> {
    let (classes, ids) = ClassIndex::from_labels(&format!("{method}: labels"), labels, n)
        .map_err(|e| ModelError::from_classifier(method, e))?;
    if classes.len() < 2 {
        return Err(ModelError::invalid(
            "labels",
            format!(
                "{method} learns from class labels and needs at least 2 classes, got {}",
                classes.len()
            ),
        ));
    }
    Ok((classes, ids))
}

/// A learner that takes one SGD step per query row.
pub(crate) trait TripletLearner: Clone {
    /// U, R × D row-major (standardised space).
    fn u(&self) -> &[f32];
    /// One step with training row `q` as the query; returns the hinge loss of its triplet.
    fn step(&mut self, data: &Labelled, q: usize, rng: &mut ChaCha8Rng, eta: f32) -> f64;
}

/// What the η / epoch validation of `metric:R` or `jscl:R` chose.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SgdChoice {
    /// The step: `metric:R` or `jscl:R`.
    pub step: String,
    /// The step size η kept.
    pub learning_rate: f64,
    /// The epoch whose U was kept (0 = the random start).
    pub best_epoch: usize,
    /// What η and the epoch were validated on: held-out class precision@k, or the instance
    /// mAP of held-out groups (`TrainOptions::groups`).
    pub validation: RhoValidation,
    /// Its validation score: class precision@k or instance mAP (NaN without held-out rows).
    pub validation_score: f64,
    /// Rows learned on while validating, and rows held out.
    pub train_rows: usize,
    /// Held-out rows scored.
    pub validation_rows: usize,
    /// Instance validation: the held-out groups (0 for category validation).
    pub validation_groups: usize,
}

/// What an SGD learner found.
#[derive(Debug, Clone, PartialEq)]
pub struct SgdFit {
    /// The mean subtracted first (length D).
    pub mean: Vec<f32>,
    /// R × D, on the raw (unstandardised) rows.
    pub weight: Array2<f32>,
    /// The η kept.
    pub learning_rate: f64,
    /// The epoch whose U was kept (0 = the random start).
    pub best_epoch: usize,
    /// What η and the epoch were validated on.
    pub validation: RhoValidation,
    /// Validation score of the kept U: class precision@k or instance mAP (NaN without a
    /// validation split).
    pub validation_score: f64,
    /// Rows learned on, and rows held out for validation.
    pub train_rows: usize,
    /// Held-out rows.
    pub validation_rows: usize,
    /// Held-out instance groups (0 without groups).
    pub validation_groups: usize,
}

impl SgdFit {
    /// The model stages CENTER + LINEAR.
    pub fn to_stages(&self) -> Result<Vec<Stage>> {
        Ok(vec![
            Stage::Center(Center::new(self.mean.clone())?),
            Stage::Linear(Linear::new(self.weight.clone(), None)?),
        ])
    }
}

/// One finished epoch, for progress reports.
pub(crate) struct EpochInfo {
    pub eta: f64,
    pub epoch: usize,
    pub loss: f64,
    pub precision: f64,
}

/// The seeded zero-mean Normal start, entries N(0, 1/D).
pub(crate) fn normal_start(r: usize, d: usize, seed: u64) -> Vec<f32> {
    let s = 1.0 / (d as f64).sqrt();
    gaussian(&mut rng(derive_seed(seed, 0x1417)), r * d)
        .into_iter()
        .map(|v| (v * s) as f32)
        .collect()
}

/// A uniformly drawn training row of `q`'s class other than `q` (the class has ≥ 2).
pub(crate) fn positive(data: &Labelled, q: usize, rng: &mut ChaCha8Rng) -> usize {
    let m = &data.members[data.ids[q] as usize];
    let at = m.binary_search(&q).unwrap_or(0);
    let j = rng.random_range(0..m.len() - 1);
    m[if j >= at { j + 1 } else { j }]
}

/// A uniformly drawn class other than `c` (there are ≥ 2).
pub(crate) fn other_class(classes: usize, c: u32, rng: &mut ChaCha8Rng) -> u32 {
    let j = rng.random_range(0..classes as u32 - 1);
    if j >= c { j + 1 } else { j }
}

/// A training row of another class than `q`'s: a uniform class, then a uniform member.
pub(crate) fn negative(data: &Labelled, q: usize, rng: &mut ChaCha8Rng) -> usize {
    loop {
        let c = other_class(data.classes, data.ids[q], rng) as usize;
        let m = &data.members[c];
        if !m.is_empty() {
            return m[rng.random_range(0..m.len())];
        }
    }
}

/// The validation score of U: the instance mAP of the held-out groups when `data` has them,
/// else the class precision@k of the held-out rows.
pub(crate) fn validation_score(data: &Labelled, u: &[f32], r: usize, k: usize) -> f64 {
    match &data.held {
        Some(held) if data.val.len() >= 2 => held.scores(&project_val(data, u, r), r).0,
        _ => validation_precision(data, u, r, k),
    }
}

/// The held-out rows under U (`val.len() × r`, row-major).
fn project_val(data: &Labelled, u: &[f32], r: usize) -> Vec<f32> {
    let xv: Vec<f32> = data
        .val
        .iter()
        .flat_map(|&i| data.row(i))
        .copied()
        .collect();
    a_bt_f32(&xv, u, data.val.len(), data.dim, r, faer::Par::Seq)
}

/// Leave-one-out precision@k of the validation rows under U (Euclidean distance).
pub(crate) fn validation_precision(data: &Labelled, u: &[f32], r: usize, k: usize) -> f64 {
    let nv = data.val.len();
    if nv < 2 {
        return f64::NAN;
    }
    let p = project_val(data, u, r);
    let norms: Vec<f64> = p
        .chunks_exact(r)
        .map(|v| v.iter().map(|a| (*a as f64).powi(2)).sum())
        .collect();
    let g = a_bt_f32(&p, &p, nv, r, nv, faer::Par::Seq);
    let k = k.min(nv - 1);
    let mut hits = 0usize;
    let mut dist: Vec<(f64, usize)> = Vec::with_capacity(nv);
    for i in 0..nv {
        dist.clear();
        for j in 0..nv {
            if j != i {
                dist.push((norms[j] - 2.0 * g[i * nv + j] as f64, j));
            }
        }
        dist.select_nth_unstable_by(k - 1, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let c = data.ids[data.val[i]];
        hits += dist[..k]
            .iter()
            .filter(|(_, j)| data.ids[data.val[*j]] == c)
            .count();
    }
    hits as f64 / (nv * k) as f64
}

/// Runs the η grid with early stopping and returns the best U as a projection of raw rows.
pub(crate) fn fit<L: TripletLearner>(
    method: &str,
    data: &Labelled,
    r: usize,
    opts: &SupervisedOptions,
    seed: u64,
    init: impl Fn() -> L,
    mut on_epoch: impl FnMut(&EpochInfo),
) -> Result<SgdFit> {
    if opts.learning_rates.is_empty()
        || opts
            .learning_rates
            .iter()
            .any(|v| !(v.is_finite() && *v > 0.0))
    {
        return Err(ModelError::invalid(
            "learning_rates",
            format!(
                "{method}: need at least one finite step size > 0, got {:?}",
                opts.learning_rates
            ),
        ));
    }
    if opts.max_epochs == 0 || opts.validation_k == 0 {
        return Err(ModelError::invalid(
            "max_epochs / validation_k",
            format!("{method}: must be at least 1"),
        ));
    }
    let validate = !data.val.is_empty();
    // Without held-out rows nothing can be selected: the middle η, all epochs, the last U.
    let grid: Vec<f64> = if validate {
        opts.learning_rates.clone()
    } else {
        vec![opts.learning_rates[opts.learning_rates.len() / 2]]
    };
    let k = opts.validation_k;
    // (precision, η, epoch, U)
    let mut best: Option<(f64, f64, usize, Vec<f32>)> = None;
    for (run, &eta) in grid.iter().enumerate() {
        let mut l = init();
        let p0 = validation_score(data, l.u(), r, k);
        let mut run_best = (p0, 0usize, l.u().to_vec());
        let mut since = 0usize;
        for epoch in 1..=opts.max_epochs {
            let mut order = data.train.clone();
            let mut g = rng(derive_seed(seed, ((run as u64) << 32) | epoch as u64));
            order.shuffle(&mut g);
            let mut loss = 0f64;
            for &q in &order {
                loss += l.step(data, q, &mut g, eta as f32);
            }
            let loss = loss / order.len().max(1) as f64;
            if !loss.is_finite() || l.u().iter().any(|v| !v.is_finite()) {
                // This η diverged: its best U so far stands.
                break;
            }
            let p = validation_score(data, l.u(), r, k);
            on_epoch(&EpochInfo {
                eta,
                epoch,
                loss,
                precision: p,
            });
            if !validate || p > run_best.0 {
                run_best = (p, epoch, l.u().to_vec());
                since = 0;
            } else {
                since += 1;
                if opts.patience > 0 && since >= opts.patience {
                    break;
                }
            }
        }
        let better = match &best {
            None => true,
            Some((bp, ..)) => run_best.0 > *bp,
        };
        if better {
            best = Some((run_best.0, eta, run_best.1, run_best.2));
        }
    }
    let Some((precision, eta, epoch, mut u)) = best else {
        return Err(ModelError::unsupported(method, "no step size was run"));
    };
    if data.held.is_some() && epoch > 0 {
        // Instance validation held whole groups out of learning (every grouped row when some
        // rows have none): as CCA is refitted with its chosen ρ (`cca_rho.rs`), the chosen η
        // is rerun for the chosen number of epochs on every row, so the groups' views teach
        // the projection too (the same start and per-epoch seeds).
        let all = data.with_every_row_training();
        let run = grid.iter().position(|&v| v == eta).unwrap_or(0);
        let mut l = init();
        for e in 1..=epoch {
            let mut order = all.train.clone();
            let mut g = rng(derive_seed(seed, ((run as u64) << 32) | e as u64));
            order.shuffle(&mut g);
            // A class only the held-out groups hold, in one row, poses no triplet.
            for &q in order
                .iter()
                .filter(|&&q| all.members[all.ids[q] as usize].len() >= 2)
            {
                l.step(&all, q, &mut g, eta as f32);
            }
        }
        if l.u().iter().all(|v| v.is_finite()) {
            u = l.u().to_vec();
        }
    }
    let inv = (1.0 / data.scale) as f32;
    let weight = Array2::from_shape_vec((r, data.dim), u.iter().map(|v| v * inv).collect())
        .map_err(|e| ModelError::shape(&format!("{method}: U"), e))?;
    Ok(SgdFit {
        mean: data.mean.iter().map(|&v| v as f32).collect(),
        weight,
        learning_rate: eta,
        best_epoch: epoch,
        validation: match data.held {
            Some(_) => RhoValidation::Instances,
            None => RhoValidation::Classes,
        },
        validation_score: precision,
        train_rows: data.train.len(),
        validation_rows: data.val.len(),
        validation_groups: data.held.as_ref().map_or(0, |h| h.count),
    })
}

/// Checks `r` against the input dimension.
pub(crate) fn check_rank(method: &str, r: usize, d: usize) -> Result<()> {
    if r == 0 || r > d {
        return Err(ModelError::unsupported(
            method,
            format!("R = {r} directions of {d}-dimensional data: R must be between 1 and {d}"),
        ));
    }
    Ok(())
}
