//! CCA's ρ chosen on held-out rows.
//!
//! Gordo et al. (§5, eq. 6-8) regularise CCA's covariances but give no value; the ITQ paper's
//! 1e-4 suits N ≫ D. On openclipart's 1696-D descriptors with 5,792 labelled rows it lets CCA
//! fit the labels with noise directions (instance mAP 0.02 against PCA's 0.44; docs/method-supervised.md), while
//! ρ = 100 nears PCA. So, as metric learning validates η: split the labelled rows (stratified,
//! seeded, the `SupervisedOptions` validation fraction), fit CCA on the training part for each ρ
//! of a grid, score each projection by the leave-one-out class precision@k of the held-out rows
//! (Euclidean, the same score as metric learning's early stopping), keep the best ρ (the
//! smallest on a tie) and refit on every row with it.

use super::super::error::{ModelError, Result};
use super::SupervisedOptions;
use super::cca::{CcaView, fit_cca};
use super::triplet_sgd::{Labelled, validation_precision};

/// ρ values `--cca-rho auto` tries: every power of ten from 1e-4 (the ITQ paper's) to 1e3.
pub const CCA_RHO_GRID: [f64; 8] = [1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0];

/// One ρ of the grid and what it scored.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RhoTrial {
    /// The ρ tried.
    pub rho: f64,
    /// Held-out class precision@k of its projection; `None` when CCA could not be fitted.
    pub validation_precision: Option<f64>,
    /// Why CCA could not be fitted with this ρ (e.g. a singular covariance), if it could not.
    pub error: Option<String>,
}

/// What the ρ validation of a `cca:R` step chose.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RhoChoice {
    /// The ρ kept.
    pub rho: f64,
    /// Every ρ tried, in grid order.
    pub trials: Vec<RhoTrial>,
    /// Rows CCA was fitted on while validating, and rows held out.
    pub train_rows: usize,
    /// Held-out rows scored.
    pub validation_rows: usize,
}

/// Chooses ρ from `grid` for `cca:r` of `x` (row-major, `d` columns) with `view`, scoring on
/// held-out rows of `labels`. The caller then fits on all rows with the chosen ρ.
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
    let train_labels: Vec<i64> = data.train.iter().map(|&i| labels[i]).collect();
    let matrix_rows: Vec<f32>;
    let train_view = match view {
        CcaView::OneHot(_) => CcaView::OneHot(&train_labels),
        CcaView::Matrix { values, cols } => {
            matrix_rows = data
                .train
                .iter()
                .flat_map(|&i| &values[i * cols..(i + 1) * cols])
                .copied()
                .collect();
            CcaView::Matrix {
                values: &matrix_rows,
                cols,
            }
        }
    };
    let mut trials = Vec::with_capacity(grid.len());
    let mut best: Option<(f64, f64)> = None;
    for &rho in grid {
        match fit_cca(&rows, d, train_view, r, rho, scaled) {
            Ok(fit) => {
                let w: Vec<f32> = fit.weight.iter().copied().collect();
                let p = validation_precision(&data, &w, r, opts.validation_k);
                if best.is_none_or(|(_, b)| p > b) {
                    best = Some((rho, p));
                }
                trials.push(RhoTrial {
                    rho,
                    validation_precision: Some(p),
                    error: None,
                });
            }
            // A bad ρ (negative, NaN) is the caller's error, not a trial's.
            Err(e @ ModelError::InvalidArgument { .. }) => return Err(e),
            Err(e) => trials.push(RhoTrial {
                rho,
                validation_precision: None,
                error: Some(e.to_string()),
            }),
        }
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
    Ok(RhoChoice {
        rho,
        trials,
        train_rows: data.train.len(),
        validation_rows: data.val.len(),
    })
}
