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
//! | `cca_rho.rs` | CCA's ρ: its validation on held-out rows | |
//! | `options.rs` | the settings of every step ([`SupervisedOptions`]) and CCA's `cca_rho` word ([`CcaRho`]) | |
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
mod options;
mod picodes;
mod triplet_sgd;

pub use attributes::fit_attributes;
pub use cca::{CcaFit, CcaPair, CcaView, fit_cca, fit_cca_pair};
pub use cca_rho::{RhoChoice, RhoTrial, choose_cca_rho, choose_cca_rho_by_groups};
pub use classemes::{ClassemesFit, fit_classemes};
pub use instance_validation::RhoValidation;
pub use jscl::fit_jscl;
pub use metric::fit_metric;
pub use options::{
    AttributeClassifier, CCA_RHO_GRID, CcaRho, CcaRhoError, DEFAULT_CCA_RHO, SupervisedOptions,
};
pub use picodes::{PicodesFit, PicodesStop, fit_picodes};
pub use triplet_sgd::{SgdChoice, SgdFit};
