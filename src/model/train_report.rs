//! What a training run found: the [`TrainReport`] of the driver (`train.rs`) and its parts.
//! Apart from the driver so that training from codes and the learners read and fill it
//! without importing the driver.

use super::supervised::{PicodesStop, RhoChoice, SgdChoice};

/// Wall time of one step.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StepTiming {
    /// Name of the step.
    pub step: String,
    /// Wall time, in seconds.
    pub seconds: f64,
}

/// What a PCA step found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PcaReport {
    /// Variance along each kept direction, decreasing.
    pub eigenvalues: Vec<f64>,
    /// Total variance of its input.
    pub total_variance: f64,
    /// Fraction of the variance kept.
    pub explained_variance_ratio: f64,
}

/// What a PQ / OPQ quantiser found.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PqReport {
    /// Mean squared reconstruction error per training vector.
    pub mse: f64,
    /// Empty clusters repaired.
    pub splits: usize,
    /// Rows the k-means runs used.
    pub training_points: usize,
    /// Final k-means objective of each sub-quantiser.
    pub final_objective: Vec<f64>,
}

/// What training did, for `--verbose` output and reports.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct TrainReport {
    /// The pipeline SPEC as given.
    pub spec: String,
    /// Explicit stage list of the spec.
    pub canonical: String,
    /// Rows given.
    pub input_rows: usize,
    /// Rows trained on after sampling.
    pub training_rows: usize,
    /// Dimension of the input rows.
    pub input_dim: usize,
    /// Wall time of each step, in order.
    pub steps: Vec<StepTiming>,
    /// The last PCA step's report.
    pub pca: Option<PcaReport>,
    /// ITQ quantisation loss before the first iteration (= PCA-RR) and after each one.
    pub itq_loss: Vec<f64>,
    /// Kernel bandwidth σ of the RFF / SKLSH step (mean 50-NN distance).
    pub bandwidth: Option<f64>,
    /// What the PQ or OPQ quantiser found.
    pub pq: Option<PqReport>,
    /// OPQ mean squared error per outer iteration.
    pub opq_loss: Vec<f64>,
    /// Wall time of the whole training, in seconds.
    pub total_seconds: f64,
    /// Canonical correlations of the last `cca:R` step (all of them, decreasing).
    pub cca_correlations: Vec<f64>,
    /// What the validation of the last `metric:R` / `jscl:R` step chose.
    pub sgd_choice: Option<SgdChoice>,
    /// PiCoDes objective E (eq. 4) after the classifier step of each round.
    pub picodes_objective: Vec<f64>,
    /// PiCoDes basis classifiers updated in each round's projector step.
    pub picodes_updated: Vec<usize>,
    /// Why the PiCoDes descent stopped (`rounds`, `converged`, `stalled`).
    pub picodes_stop: Option<PicodesStop>,
    /// What the caller should know about how training ended (e.g. a PiCoDes descent that
    /// stopped without improving on its initialisation); the CLI prints each on stderr.
    pub notes: Vec<String>,
    /// What the ρ validation of the last `cca:R` step chose (when a ρ grid was given).
    pub cca_rho_choice: Option<RhoChoice>,
}
