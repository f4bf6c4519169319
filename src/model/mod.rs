//! Model stages and their training: the math that turns descriptors into compact codes.
//!
//! `model` knows math, not files: each stage converts itself to and from a
//! [`crate::format::StageRecord`] (named, shaped tensors, documented in each stage's module)
//! and validates what it reads; the byte layer (`crate::format::model_file`) does the rest.
//!
//! Matrices in the public API are `ndarray` arrays with rows = vectors. Training uses faer
//! (eigendecomposition, SVD, QR, large products) and rayon; encoding uses fixed-order plain
//! Rust kernels so codes are reproducible bit for bit (`fixed_order.rs`).
//!
//! Entry points: [`PipelineSpec::parse`] → [`train`] (or [`Model::train`]) → [`Model`]
//! (`encode`, `project`, `adc_tables`, `to_model_file` / `from_model_file`).
//!
//! # Stage tensors (FORMAT.md §4.2 defers them to here)
//!
//! Every pipeline stage is written REQUIRED (the text head and the origin, not needed to
//! encode, OPTIONAL). Readers refuse missing, duplicated or unknown tensors,
//! wrong dtypes or shapes, and non-finite values, naming the stage index, kind and tensor.
//!
//! | kind | tensors |
//! |---|---|
//! | center (1) | `mean` f32 `[D]` |
//! | linear (2) | `weight` f32 `[out, in]`; optional `bias` f32 `[out]`, `eigenvalues` f64 `[out]` |
//! | rotation (3) | `rotation` f32 `[c, c]`, orthogonal (`max |RᵀR − I| ≤ 1e-3`), applied as `v R` |
//! | binarize (4) | `thresholds` f32 `[c]` |
//! | pq (5) | `centroids` f32 `[M, K, dsub]`, K ∈ {16, 256} |
//! | float (6) | `dim` u64 `[]`, `bits` u64 `[]` (32 or 16) |
//! | rff (7) | `weight` f32 `[D, d]`, `phase` f32 `[D]`, `bandwidth` f64 `[]` (> 0) |
//! | sklsh (8) | `weight` f32 `[c, d]`, `phase` f32 `[c]`, `threshold` f32 `[c]` in [−1, 1], `bandwidth` f64 `[]` |
//! | hom (11, format 1.6, first stage only) | `dim` u64 `[]`, `kernel` u64 `[]` (1 = χ², 2 = intersection), `order` u64 `[]` (r ≥ 1), `period` f64 `[]` (L > 0) |
//! | ivf (12, right before an 8-bit pq) | `centroids` f32 `[K, D]`, 1 ≤ K ≤ 65,536 (`ivf.rs`) |
//! | text (9, OPTIONAL, after the quantiser) | `words` u8 `[B]`, `word_ends` u64 `[T]`, `idf` f32 `[T]`, `weight` f32 `[T, D]` (FORMAT.md §4.3) |
//! | origin (10, OPTIONAL, after the quantiser, before a text head) | `spec` u8 `[B]`, `stage_steps` u64 `[S]`, `seed` u64 `[]` (`origin.rs`, FORMAT.md §4.4) |
//!
//! A pipeline is any number of transforms (center, linear, rotation, rff) followed by exactly
//! one quantiser (binarize, sklsh, pq, float); each stage's input dimension is the previous
//! stage's output dimension.
//!
//! For research on the models: an application trains with [`Model::train`] and needs only the
//! crate root; this module is the stage level (each stage, k-means, the training reports) and
//! the classifiers and metric learning of Mensink et al. (TPAMI 2013), all flat.

mod binarize;
mod cancel;
mod center;
pub(crate) mod classify;
mod error;
mod faiss_factory;
mod fixed_order;
mod float;
mod hom;
mod input;
mod itq;
mod ivf;
mod kmeans;
mod linalg;
mod linear;
mod neighbour_radius;
mod opq;
mod origin;
mod pca;
mod pipeline;
mod pq;
mod quantizer;
mod random;
mod record;
mod rff;
mod rotation;
mod sklsh;
mod spec;
mod stage;
mod supervised;
mod text;
mod train;
mod train_from_codes;
mod train_options;
mod train_report;
mod transform;

pub use binarize::Binarize;
pub use cancel::Cancel;
pub use center::Center;
// The classifiers, named one by one (`classify/mod.rs` is their curated list).
pub use classify::{
    AUTO_TOP5_CLASSES, ClassIndex, Classifier, ClassifierSpec, ClassifyError, ClassifyOptions,
    EpochCallback, EpochReport, Fda, FitReport, InverseCovariance, Knn, KnnMetricOptions,
    KnnMetricTraining, LinearSvm, LinearSvmOptions, Method, Ncm, Ncmc, NcmcOptions, NcmcTraining,
    NcmmlObjective, NcmmlOptions, NcmmlTraining, Projection, RidgeOvr, SVM_C_GRID, SgdOptions,
    SgdReport, StopOn, SvmLoss, SvmOvr, Targets, TestBias, WInit, fit_classifier, fit_fda,
    fit_inverse_covariance, fit_ridge_ovr, fit_svm_ovr, svm_ovr_options, train_knn_metric,
    train_linear_svm, train_ncmc, train_ncmml, train_one_vs_rest,
};
pub use error::{LinalgError, ModelError, Result};
pub use faiss_factory::FaissTranslation;
pub use float::FloatStage;
pub use hom::{
    DEFAULT_HOM_ORDER, DEFAULT_HOM_PERIOD, DEFAULT_HOM_PERIOD_INTERSECTION, Hom, HomKernel,
};
pub use itq::{DEFAULT_ITQ_ITERATIONS, ItqTraining, quantization_loss, train_itq};
pub use ivf::{CoarseQuantizer, MAX_IVF_LISTS};
pub use kmeans::{
    DEFAULT_KMEANS_ITERATIONS, DEFAULT_MAX_POINTS_PER_CENTROID, KMeans, KMeansInit, KMeansOptions,
    kmeans, kmeans_from,
};
pub use linear::Linear;
pub use neighbour_radius::{
    DEFAULT_NEIGHBOUR_RANK, DEFAULT_RADIUS_QUERIES, mean_kth_neighbour_distance,
};
pub use opq::{OpqOptions, OpqTraining, train_opq};
pub use origin::{MAX_ORIGIN_SPEC, Origin};
pub use pca::{Covariance, CovarianceAccumulator, Pca};
pub use pipeline::Model;
pub use pq::{AdcMetric, PqTraining, ProductQuantizer};
pub use quantizer::{RowFault, RowQuantizer, get_bit};
pub use random::DEFAULT_SEED;
pub use random::derive_seed;
pub use rff::{DEFAULT_RFF_FEATURES, Rff};
pub use rotation::{ORTHOGONALITY_TOLERANCE, Rotation};
pub use sklsh::Sklsh;
pub use spec::{MAX_BINARY_BITS, MAX_SPEC_DIM, PipelineSpec, QuantizerSpec, StepSpec};
pub use stage::Stage;
pub use supervised::{
    AttributeClassifier, ClassemesFit, PicodesFit, PicodesStop, fit_classemes, fit_picodes,
};
pub use supervised::{
    CCA_RHO_GRID, CcaFit, CcaPair, CcaRho, CcaRhoError, CcaView, DEFAULT_CCA_RHO, RhoChoice,
    RhoTrial, RhoValidation, SgdChoice, SgdFit, SupervisedOptions, choose_cca_rho,
    choose_cca_rho_by_groups, fit_attributes, fit_cca, fit_cca_pair, fit_jscl, fit_metric,
};
pub use text::{
    MARGIN_NAMES, MAX_TEXT_WEIGHTS, MAX_VOCABULARY, MAX_WORD_BYTES, MarginPolicy,
    PAMIR_DEFAULT_ITERATIONS, PamirCheckpoint, PamirOptions, PamirReport, PamirStop, PamirTrial,
    RankingMetrics, TextHead, TextQuery, TextVector, UnknownMargin, Vocabulary, tokenize,
    train_pamir,
};
pub use train::train;
pub use train_from_codes::{
    DECODE_BATCH_ROWS, LabelledCodes, fit_classifier_from_codes, train_from_codes,
};
pub use train_options::{DEFAULT_TRAIN_SAMPLE_CAP, ProgressFn, TrainEvent, TrainOptions};
pub use train_report::{PcaReport, PqReport, StepTiming, TrainReport};
pub use transform::RowMap;
