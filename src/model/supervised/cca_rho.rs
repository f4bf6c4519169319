//! CCA's ρ: its choice on held-out rows. The `cca_rho` word of every front end,
//! [`CcaRho`](super::options::CcaRho), is in `options.rs`.
//!
//! Gordo et al. (§5, eq. 6-8) call ρ "a small regularization factor usually added to avoid
//! numerically ill-conditioned situations" and tune it (§7.4) for *instance* retrieval: the
//! UKB parameters are validated on Holidays and vice versa. ρ is relative to each view's mean
//! variance (`cca.rs`), but image descriptors have skewed spectra: on openclipart's HOG +
//! colour rows the top eigenvalue is 228 × the mean, the smallest 1e-3 × the mean, so the ITQ
//! paper's 1e-4 adds less than the smallest eigenvalue and CCA whitens all 1,696 directions:
//! it fits the labels with low-variance directions that a crop or a zoom changes more than
//! the drawing does (instance mAP 0.02 against PCA's 0.44; docs/method-supervised.md). Large ρ
//! makes `C_aa` nearly isotropic, so the directions tend to the leading eigenvectors of the
//! between-class scatter `Σ_ab Σ_bb⁻¹ Σ_ba`, which keep the high-variance detail.
//!
//! So ρ is chosen from a grid ([`CcaRho::Grid`](super::options::CcaRho::Grid); `auto` is
//! [`CCA_RHO_GRID`](super::options::CCA_RHO_GRID), and the default whenever groups are
//! given), one of two ways:
//! - **instance groups** (`TrainOptions::groups`, the paper's protocol): rows with the same
//!   group id are views of one item (renderings, crops, near-duplicates). CCA is fitted for
//!   each ρ on the rows outside the held-out groups, the held-out rows each query the others
//!   (Euclidean in the projected space, leave-one-out), and the ρ with the best mean average
//!   precision (its group's other rows relevant) wins. Which groups are held out, and the
//!   score, are `instance_validation.rs`'s, shared with metric learning and JSCL.
//! - **categories** (no groups): the labelled rows are split (stratified, seeded, the
//!   `SupervisedOptions` validation fraction) and each ρ is scored by the leave-one-out class
//!   precision@k of the held-out rows (the score of metric learning's early stopping). This
//!   suits class retrieval; for instance retrieval it picks too small a ρ (0.1 on openclipart,
//!   where instance validation picks 1e3).
//!
//! The best ρ (the smallest on a tie) is kept and CCA refitted on every row with it.

use super::super::error::{ModelError, Result};
use super::super::linalg::a_bt_f32;
use super::cca::{CcaFit, CcaView, fit_cca};
use super::instance_validation::{HeldOutGroups, RhoValidation};
use super::options::SupervisedOptions;
use super::triplet_sgd::{Labelled, validation_precision};

/// One ρ of the grid and what it scored.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RhoTrial {
    /// The ρ tried.
    pub rho: f64,
    /// Held-out class precision@k of its projection (category validation); `None` when CCA
    /// could not be fitted or ρ was validated on instance groups.
    pub validation_precision: Option<f64>,
    /// Instance validation: mean average precision of the held-out grouped rows.
    pub instance_map: Option<f64>,
    /// Instance validation: mean number of a row's group among its 4 nearest held-out rows,
    /// itself included (UKB's 4×recall@4 when every group has 4 rows).
    pub instance_top4: Option<f64>,
    /// Why CCA could not be fitted with this ρ (e.g. a singular covariance), if it could not.
    pub error: Option<String>,
}

/// What the ρ validation of a `cca:R` step chose.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RhoChoice {
    /// The ρ kept.
    pub rho: f64,
    /// What it was validated on.
    pub validation: RhoValidation,
    /// Every ρ tried, in grid order.
    pub trials: Vec<RhoTrial>,
    /// Rows CCA was fitted on while validating, and rows held out.
    pub train_rows: usize,
    /// Held-out rows scored.
    pub validation_rows: usize,
    /// Instance validation: the held-out groups (0 for category validation).
    pub validation_groups: usize,
}

/// The rows `idx` of `view`, owned: the labels of a one-hot view or the rows of a matrix.
enum SubView {
    OneHot(Vec<i64>),
    Matrix(Vec<f32>, usize),
}

impl SubView {
    fn new(view: CcaView, idx: &[usize]) -> SubView {
        match view {
            CcaView::OneHot(l) => SubView::OneHot(idx.iter().map(|&i| l[i]).collect()),
            CcaView::Matrix { values, cols } => SubView::Matrix(
                idx.iter()
                    .flat_map(|&i| &values[i * cols..(i + 1) * cols])
                    .copied()
                    .collect(),
                cols,
            ),
        }
    }

    fn view(&self) -> CcaView<'_> {
        match self {
            SubView::OneHot(l) => CcaView::OneHot(l),
            SubView::Matrix(values, cols) => CcaView::Matrix {
                values,
                cols: *cols,
            },
        }
    }
}

/// Runs `trial` for every ρ of `grid` and keeps the best `score` (the first on a tie). A
/// trial's `Err` is the caller's (a bad ρ); a fit that fails is a trial with `error`.
fn best_rho(
    grid: &[f64],
    mut trial: impl FnMut(f64) -> Result<RhoTrial>,
    score: impl Fn(&RhoTrial) -> Option<f64>,
) -> Result<(f64, Vec<RhoTrial>)> {
    if grid.is_empty() {
        return Err(ModelError::invalid("cca_rho", "the ρ grid is empty"));
    }
    let mut trials = Vec::with_capacity(grid.len());
    let mut best: Option<(f64, f64)> = None;
    for &rho in grid {
        let t = trial(rho)?;
        if let Some(s) = score(&t)
            && best.is_none_or(|(_, b)| s > b)
        {
            best = Some((rho, s));
        }
        trials.push(t);
    }
    let Some((rho, _)) = best else {
        let why: Vec<String> = trials
            .iter()
            .map(|t| format!("ρ = {}: {}", t.rho, t.error.as_deref().unwrap_or("?")))
            .collect();
        return Err(ModelError::unsupported(
            "cca",
            format!("no ρ of the grid could be fitted ({})", why.join("; ")),
        ));
    };
    Ok((rho, trials))
}

/// A trial from a fit (scored by `score`) or its failure; a bad ρ is returned as `Err`.
fn trial_of(
    rho: f64,
    fit: Result<CcaFit>,
    score: impl FnOnce(&CcaFit) -> (Option<f64>, Option<(f64, f64)>),
) -> Result<RhoTrial> {
    match fit {
        Ok(fit) => {
            let (p, inst) = score(&fit);
            Ok(RhoTrial {
                rho,
                validation_precision: p,
                instance_map: inst.map(|s| s.0),
                instance_top4: inst.map(|s| s.1),
                error: None,
            })
        }
        // A bad ρ (negative, NaN) is the caller's error, not a trial's.
        Err(e @ ModelError::InvalidArgument { .. }) => Err(e),
        Err(e) => Ok(RhoTrial {
            rho,
            validation_precision: None,
            instance_map: None,
            instance_top4: None,
            error: Some(e.to_string()),
        }),
    }
}

/// Chooses ρ from `grid` for `cca:r` of `x` (row-major, `d` columns) with `view`, scoring on
/// held-out rows of `labels` (category validation). The caller then fits on all rows with
/// the chosen ρ.
#[allow(clippy::too_many_arguments)]
pub fn choose_cca_rho(
    x: &[f32],
    d: usize,
    view: CcaView,
    labels: &[i64],
    r: usize,
    scaled: bool,
    grid: &[f64],
    opts: &SupervisedOptions,
    seed: u64,
) -> Result<RhoChoice> {
    if grid.is_empty() {
        return Err(ModelError::invalid("cca_rho", "the ρ grid is empty"));
    }
    if opts.validation_k == 0 {
        return Err(ModelError::invalid("validation_k", "must be >= 1"));
    }
    let data = Labelled::new("cca", x, d, labels, None, opts, 2, seed)?;
    if data.val.len() < 2 {
        return Err(ModelError::invalid(
            "cca_rho",
            format!(
                "choosing ρ needs at least 2 held-out rows; the validation fraction {} of {} \
                 rows gives {}",
                opts.validation_fraction,
                labels.len(),
                data.val.len()
            ),
        ));
    }
    let rows: Vec<f32> = data
        .train
        .iter()
        .flat_map(|&i| &x[i * d..(i + 1) * d])
        .copied()
        .collect();
    let sub = SubView::new(view, &data.train);
    let (rho, trials) = best_rho(
        grid,
        |rho| {
            trial_of(rho, fit_cca(&rows, d, sub.view(), r, rho, scaled), |fit| {
                let w: Vec<f32> = fit.weight.iter().copied().collect();
                let p = validation_precision(&data, &w, r, opts.validation_k);
                (Some(p), None)
            })
        },
        |t| t.validation_precision,
    )?;
    Ok(RhoChoice {
        rho,
        validation: RhoValidation::Classes,
        trials,
        train_rows: data.train.len(),
        validation_rows: data.val.len(),
        validation_groups: 0,
    })
}

/// Chooses ρ from `grid` for `cca:r` of `x` (row-major, `d` columns) with `view` by instance
/// retrieval on held-out `groups` (one id per row, negative = none; module doc): Gordo et
/// al. §7.4 tune ρ for the instance task. The caller then fits on all rows with the chosen ρ.
#[allow(clippy::too_many_arguments)]
pub fn choose_cca_rho_by_groups(
    x: &[f32],
    d: usize,
    view: CcaView,
    groups: &[i64],
    r: usize,
    scaled: bool,
    grid: &[f64],
    opts: &SupervisedOptions,
    seed: u64,
) -> Result<RhoChoice> {
    let n = x.len() / d.max(1);
    if groups.len() != n {
        return Err(ModelError::invalid(
            "groups",
            format!("{} group ids for {n} training rows", groups.len()),
        ));
    }
    let split = HeldOutGroups::new(groups, opts, seed)?;
    let (held, fit_rows) = (&split.rows, &split.fit_rows);
    let rows: Vec<f32> = fit_rows
        .iter()
        .flat_map(|&i| &x[i * d..(i + 1) * d])
        .copied()
        .collect();
    let sub = SubView::new(view, fit_rows);
    let (rho, trials) = best_rho(
        grid,
        |rho| {
            trial_of(rho, fit_cca(&rows, d, sub.view(), r, rho, scaled), |fit| {
                let xc: Vec<f32> = held
                    .iter()
                    .flat_map(|&i| {
                        x[i * d..(i + 1) * d]
                            .iter()
                            .zip(&fit.mean)
                            .map(|(v, m)| v - m)
                    })
                    .collect();
                let w: Vec<f32> = fit.weight.iter().copied().collect();
                let p = a_bt_f32(&xc, &w, held.len(), d, r, faer::Par::Seq);
                (None, Some(split.scores(&p, r)))
            })
        },
        |t| t.instance_map,
    )?;
    Ok(RhoChoice {
        rho,
        validation: RhoValidation::Instances,
        trials,
        train_rows: fit_rows.len(),
        validation_rows: held.len(),
        validation_groups: split.count,
    })
}
