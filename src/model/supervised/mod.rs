//! Supervised projections learned from category-level labels, to precede PQ, ITQ or float
//! storage (Gordo, Rodríguez-Serrano, Perronnin, Valveny, *Leveraging category-level labels
//! for instance-level image retrieval*, CVPR 2012; CCA-ITQ from Gong et al. TPAMI 2013 §5).
//!
//! | file | method | SPEC |
//! |---|---|---|
//! | `metric.rs` | low-rank metric learning on triplets, eq. 1-4 | `metric:R` |
//! | `attributes.rs` | one-vs-rest class scores, then PCA, eq. 5 | `attributes:R` |
//! | `classemes.rs` | thresholded one-vs-rest and random-dichotomy SVMs, then multi-class RFE to C bits (the PiCoDes paper's classeme baseline); stored as LINEAR + BINARIZE | `classemes:C` |
//! | `cca.rs` | CCA with a second view (one-hot labels or a matrix), eq. 6-8; CCA-ITQ eq. 4 | `cca:R` |
//! | `jscl.rs` | joint subspace and classifier learning, eq. 9-13 | `jscl:R` |
//! | `picodes.rs` | PiCoDes basis classifiers, block coordinate descent (Bergamo et al. NIPS 2011, eq. 1-6); stored as LINEAR + BINARIZE | `picodes:C` |
//! | `triplet_sgd.rs` | what the two SGD learners share: standardisation, split, η grid, early stopping | |
//! | `cca_rho.rs` | CCA's ρ: the `cca_rho` word ([`CcaRho`]) and its validation on held-out rows | |
//! | `instance_validation.rs` | the held-out instance groups every step validates on when groups are given (§7.4) | |
//!
//! Each learns an affine map `U (x − m)` and is stored as the existing CENTER + LINEAR stages
//! (FORMAT.md §4.2): nothing new on disk, and every search kernel applies.

mod attributes;
mod cca;
mod cca_rho;
mod classemes;
mod instance_validation;
mod jscl;
mod metric;
mod picodes;
mod triplet_sgd;

pub use attributes::fit_attributes;
pub use cca::{CcaFit, CcaPair, CcaView, fit_cca, fit_cca_pair};
pub use cca_rho::{
    CCA_RHO_GRID, CcaRho, CcaRhoError, DEFAULT_CCA_RHO, RhoChoice, RhoTrial, choose_cca_rho,
    choose_cca_rho_by_groups,
};
pub use classemes::{ClassemesFit, fit_classemes};
pub use instance_validation::RhoValidation;
pub use jscl::fit_jscl;
pub use metric::fit_metric;
pub use picodes::{PicodesFit, PicodesStop, fit_picodes};
pub use triplet_sgd::SgdFit;

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

/// Settings of the supervised steps (`TrainOptions::supervised`).
#[derive(Debug, Clone, PartialEq)]
pub struct SupervisedOptions {
    /// CCA's ρ (eq. 6-8), relative to each view's mean variance: `C_aa = Σ_aa + ρ·tr(Σ_aa)/D_a·I`
    /// (`cca.rs`), one value or a grid to choose it from on held-out rows (`cca_rho.rs`).
    /// `None`, the default: chosen from [`CCA_RHO_GRID`] by the instance mAP of held-out
    /// groups when `TrainOptions::groups` are given (Gordo et al. §7.4 tune ρ for the
    /// instance task), else [`DEFAULT_CCA_RHO`] ([`CcaRho::default_for`]).
    pub cca_rho: Option<CcaRho>,
    /// Step sizes η tried by metric learning and JSCL (the paper validates η); the one with
    /// the best validation score is kept (held-out class precision@k, or the instance mAP of
    /// held-out groups when `TrainOptions::groups` are given).
    pub learning_rates: Vec<f64>,
    /// Most passes over the training split per η (each pass: one triplet per training row).
    pub max_epochs: usize,
    /// Stop a run after this many epochs without a better validation score.
    pub patience: usize,
    /// Fraction of each class held out to validate η and the epoch (early stopping).
    pub validation_fraction: f64,
    /// At most this many held-out rows (seeded subset).
    pub max_validation_rows: usize,
    /// Validation score: precision of the k nearest held-out rows (dot product in the learned
    /// space, leave-one-out) having the query's class.
    pub validation_k: usize,
    /// PiCoDes' λ (eq. 4): the K classifier SVMs cost λ/N per row, N the training rows, so
    /// the balance of margin and loss does not drift with N (`classemes:C` gives its SVMs the
    /// same cost). The projector SVMs have their own, scale-free cost (`picodes.rs`).
    pub picodes_c: f64,
    /// PiCoDes: most rounds of block coordinate descent.
    pub picodes_rounds: usize,
    /// `attributes:R`: the one-vs-rest classifiers that give the class scores.
    pub attribute_classifier: AttributeClassifier,
}

/// The one-vs-rest classifiers of `attributes:R` (Gordo et al. CVPR 2012 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AttributeClassifier {
    /// Linear SVMs (hinge, C validated on the held-out split): the paper's classifiers.
    #[default]
    Svm,
    /// Ridge regression (λ validated), the stand-in used before the in-crate SVM existed.
    Ridge,
}

/// The default λ of PiCoDes' eq. 4 (`picodes_c`), chosen among 1, 10, 100, 300 and 1,000 by
/// novel-category precision on Fashion-MNIST and openclipart (docs/method-picodes.md). With
/// a per-row cost near 1 (λ ≈ N) the K SVMs separate the training rows, almost every hinge
/// is 0, and the projector steps have nothing to lower.
pub const DEFAULT_PICODES_LAMBDA: f64 = 100.0;

impl Default for SupervisedOptions {
    fn default() -> Self {
        SupervisedOptions {
            cca_rho: None,
            learning_rates: vec![0.003, 0.03, 0.3],
            max_epochs: 30,
            patience: 5,
            validation_fraction: 0.1,
            max_validation_rows: 2000,
            validation_k: 10,
            picodes_c: DEFAULT_PICODES_LAMBDA,
            picodes_rounds: 10,
            attribute_classifier: AttributeClassifier::Svm,
        }
    }
}
