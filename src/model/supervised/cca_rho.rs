//! CCA's ρ chosen on held-out rows.
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
//! So ρ is chosen from a grid, one of two ways:
//! - **instance groups** (`TrainOptions::groups`, the paper's protocol): rows with the same
//!   group id are views of one item (renderings, crops, near-duplicates). CCA is fitted for
//!   each ρ on the rows outside the held-out groups, the held-out rows each query the others
//!   (Euclidean in the projected space, leave-one-out), and the ρ with the best mean average
//!   precision (its group's other rows relevant) wins. Held out: every grouped row when some
//!   rows have no group (−1), so the groups are a separate validation set, as Holidays is
//!   for UKB; otherwise a seeded `validation_fraction` of the groups, whole. Either way at
//!   most `max_validation_rows` rows (whole groups, seeded; at least 2 groups).
//! - **categories** (no groups): the labelled rows are split (stratified, seeded, the
//!   `SupervisedOptions` validation fraction) and each ρ is scored by the leave-one-out class
//!   precision@k of the held-out rows (the score of metric learning's early stopping). This
//!   suits class retrieval; for instance retrieval it picks too small a ρ (0.1 on openclipart,
//!   where instance validation picks 1e3).
//!
//! The best ρ (the smallest on a tie) is kept and CCA refitted on every row with it.

use super::super::error::{ModelError, Result};
use super::super::linalg::a_bt_f32;
use super::super::random::{permuted_indices, rng};
use super::SupervisedOptions;
use super::cca::{CcaFit, CcaView, fit_cca};
use super::triplet_sgd::{Labelled, validation_precision};

/// ρ values `--cca-rho auto` tries: every power of ten from 1e-4 (the ITQ paper's) to 1e3.
pub const CCA_RHO_GRID: [f64; 8] = [1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0];

/// What ρ was validated on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RhoValidation {
    /// Held-out labelled rows, by class precision@k.
    Classes,
    /// Held-out instance groups, by mean average precision.
    Instances,
}

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
    let data = Labelled::new("cca", x, d, labels, opts, 2, seed)?;
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

/// The held-out rows of instance validation (sorted) and how many groups they hold; see
/// the module doc. `groups`: one id per row, negative = no group.
fn held_out_groups(
    groups: &[i64],
    opts: &SupervisedOptions,
    seed: u64,
) -> Result<(Vec<usize>, usize)> {
    let mut by_group: std::collections::BTreeMap<i64, Vec<usize>> = Default::default();
    for (i, &g) in groups.iter().enumerate().filter(|(_, g)| **g >= 0) {
        by_group.entry(g).or_default().push(i);
    }
    let ids: Vec<&Vec<usize>> = by_group.values().collect();
    if !ids.iter().any(|rows| rows.len() >= 2) {
        return Err(ModelError::invalid(
            "groups",
            "no instance group has 2 rows: validating ρ on instances needs rows that share a \
             group id (negative ids mean no group)",
        ));
    }
    let ungrouped = groups.iter().any(|&g| g < 0);
    let g = ids.len();
    let want = if ungrouped {
        g
    } else {
        if g < 3 {
            return Err(ModelError::invalid(
                "groups",
                format!(
                    "every row has a group and there are {g}: holding some out for validation \
                     needs at least 3 (or rows with no group, id -1, to fit on)"
                ),
            ));
        }
        ((opts.validation_fraction * g as f64).ceil() as usize).clamp(2, g - 1)
    };
    let mut held = Vec::new();
    let mut taken = 0;
    for k in permuted_indices(&mut rng(seed), g, g) {
        if taken == want {
            break;
        }
        if taken >= 2 && held.len() + ids[k].len() > opts.max_validation_rows {
            continue;
        }
        held.extend_from_slice(ids[k]);
        taken += 1;
    }
    held.sort_unstable();
    Ok((held, taken))
}

/// Mean average precision and mean same-group count among the 4 nearest (itself included)
/// of the projected rows `p` (`n × r`, row-major) querying each other, leave-one-out,
/// Euclidean; only rows with another row of their group are queries.
fn instance_scores(p: &[f32], r: usize, groups: &[i64]) -> (f64, f64) {
    let n = groups.len();
    let norms: Vec<f64> = p
        .chunks_exact(r)
        .map(|v| v.iter().map(|a| (*a as f64).powi(2)).sum())
        .collect();
    let g = a_bt_f32(p, p, n, r, n, faer::Par::Seq);
    let (mut ap_sum, mut top4_sum, mut queries) = (0f64, 0f64, 0usize);
    let mut dist: Vec<(f64, usize)> = Vec::with_capacity(n);
    for i in 0..n {
        let relevant = (0..n).filter(|&j| j != i && groups[j] == groups[i]).count();
        if relevant == 0 {
            continue;
        }
        dist.clear();
        dist.extend(
            (0..n)
                .filter(|&j| j != i)
                .map(|j| (norms[j] - 2.0 * g[i * n + j] as f64, j)),
        );
        dist.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let (mut found, mut ap) = (0usize, 0f64);
        for (rank, (_, j)) in dist.iter().enumerate() {
            if groups[*j] == groups[i] {
                found += 1;
                ap += found as f64 / (rank + 1) as f64;
                if found == relevant {
                    break;
                }
            }
        }
        ap_sum += ap / relevant as f64;
        top4_sum += 1.0
            + dist[..3.min(dist.len())]
                .iter()
                .filter(|(_, j)| groups[*j] == groups[i])
                .count() as f64;
        queries += 1;
    }
    let q = queries.max(1) as f64;
    (ap_sum / q, top4_sum / q)
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
    let (held, n_groups) = held_out_groups(groups, opts, seed)?;
    let mut is_held = vec![false; n];
    for &i in &held {
        is_held[i] = true;
    }
    let fit_rows: Vec<usize> = (0..n).filter(|&i| !is_held[i]).collect();
    let rows: Vec<f32> = fit_rows
        .iter()
        .flat_map(|&i| &x[i * d..(i + 1) * d])
        .copied()
        .collect();
    let sub = SubView::new(view, &fit_rows);
    let held_groups: Vec<i64> = held.iter().map(|&i| groups[i]).collect();
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
                (None, Some(instance_scores(&p, r, &held_groups)))
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
        validation_groups: n_groups,
    })
}
