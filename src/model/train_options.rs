//! What a training run is given and what it says while it runs: [`TrainOptions`] (seed,
//! sample, iteration counts, labels and views of the supervised steps, cancel token) and the
//! [`TrainEvent`]s a [`ProgressFn`] receives. Apart from the driver (`train.rs`) so that the
//! learners it drives (`classify/`, `supervised/`, `text/`) take their options and send their
//! events without importing the driver: every arrow inside `model/` runs down.

use std::fmt;
use std::sync::Arc;

use super::cancel::Cancel;
use super::itq::DEFAULT_ITQ_ITERATIONS;
use super::kmeans::{DEFAULT_KMEANS_ITERATIONS, KMeansInit};
use super::opq::OpqOptions;
use super::supervised::SupervisedOptions;

/// Training rows used when `TrainOptions::sample` is `None`.
pub const DEFAULT_TRAIN_SAMPLE_CAP: usize = 100_000;
/// A training progress event (for progress bars and `--verbose`).
#[derive(Debug, Clone, PartialEq)]
pub enum TrainEvent {
    /// `done` of `total` `unit`s of step `step` are finished (`unit`: "rows", "iterations",
    /// "epochs", "sub-quantisers" or "steps", plural, for display).
    Progress {
        /// Name of the step.
        step: String,
        /// What is counted.
        unit: &'static str,
        /// Units finished.
        done: u64,
        /// Units in the step.
        total: u64,
    },
    /// A line of detail (ITQ loss per iteration, ...), sent only when `verbose` is set.
    Message(String),
}

/// Receiver of [`TrainEvent`]s.
pub type ProgressFn = Arc<dyn Fn(&TrainEvent) + Send + Sync>;

/// Training parameters.
#[derive(Clone)]
pub struct TrainOptions {
    /// Seed of every random choice (sampling, rotations, projections, k-means).
    pub seed: u64,
    /// Rows to train on, sampled without replacement (seeded); `None` = all rows up to
    /// [`DEFAULT_TRAIN_SAMPLE_CAP`].
    pub sample: Option<usize>,
    /// ITQ iterations (paper: 50).
    pub itq_iterations: usize,
    /// k-means iterations per PQ sub-quantiser (FAISS: 25).
    pub kmeans_iterations: usize,
    /// k-means initialisation.
    pub kmeans_init: KMeansInit,
    /// OPQ outer iterations (FAISS `OPQMatrix::niter`: 50).
    pub opq_iterations: usize,
    /// Receiver of progress events; `None` sends none.
    pub progress: Option<ProgressFn>,
    /// Stops the training early with
    /// [`ModelError::Cancelled`](super::error::ModelError::Cancelled) (checked between steps,
    /// streamed chunks, and ITQ, OPQ and k-means iterations; a supervised step's SGD runs to
    /// its end).
    pub cancel: Cancel,
    /// Send [`TrainEvent::Message`] details.
    pub verbose: bool,
    /// One class label per input row: needed by supervised steps (`ncmml:C`), ignored
    /// otherwise. Rows sampled for training keep their labels.
    pub labels: Option<Arc<[i64]>>,
    /// A second view for `cca:R` (one row per input row, any columns, e.g. text embeddings);
    /// `None`: CCA uses the one-hot `labels`. Rows sampled for training keep their view rows.
    pub view: Option<Arc<ndarray::Array2<f32>>>,
    /// Instance groups, one id per input row (negative: none): rows sharing an id are views
    /// of one item (renderings, crops, near-duplicates). The supervised steps then validate
    /// their free parameters by instance retrieval on held-out groups instead of class
    /// precision (Gordo et al. §7.4 tune them for the instance task;
    /// `supervised/instance_validation.rs`): `cca:R` its ρ (from the grid, by default
    /// [`CCA_RHO_GRID`](super::supervised::CCA_RHO_GRID), unless a fixed ρ is given),
    /// `metric:R` and `jscl:R` their η and epoch. Rows sampled for training keep their ids.
    pub groups: Option<Arc<[i64]>>,
    /// Settings of `metric:R`, `attributes:R`, `cca:R`, `jscl:R`.
    pub supervised: SupervisedOptions,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            seed: super::random::DEFAULT_SEED,
            sample: None,
            itq_iterations: DEFAULT_ITQ_ITERATIONS,
            kmeans_iterations: DEFAULT_KMEANS_ITERATIONS,
            kmeans_init: KMeansInit::Random,
            opq_iterations: OpqOptions::default().iterations,
            progress: None,
            cancel: Cancel::default(),
            verbose: false,
            labels: None,
            view: None,
            groups: None,
            supervised: SupervisedOptions::default(),
        }
    }
}

impl fmt::Debug for TrainOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrainOptions")
            .field("seed", &self.seed)
            .field("sample", &self.sample)
            .field("itq_iterations", &self.itq_iterations)
            .field("kmeans_iterations", &self.kmeans_iterations)
            .field("kmeans_init", &self.kmeans_init)
            .field("opq_iterations", &self.opq_iterations)
            .field("progress", &self.progress.as_ref().map(|_| "<callback>"))
            .field("cancelled", &self.cancel.is_cancelled())
            .field("verbose", &self.verbose)
            .field("labels", &self.labels.as_ref().map(|l| l.len()))
            .field("view", &self.view.as_ref().map(|v| v.dim()))
            .field("groups", &self.groups.as_ref().map(|g| g.len()))
            .field("supervised", &self.supervised)
            .finish()
    }
}
