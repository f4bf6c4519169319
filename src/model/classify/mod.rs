//! Distance-based classifiers and metric learning (Mensink, Verbeek, Perronnin, Csurka,
//! *Distance-based image classification: generalizing to new classes at near-zero cost*,
//! TPAMI 2013), with the baselines of its §5.
//!
//! | file | method |
//! |---|---|
//! | `ncm.rs` | NCM, eq. 1-2, scored in the linear form of eq. 9-11 on any projection |
//! | `ncmml.rs` | NCMML metric learning, eq. 3-7, and the dot-product + bias variant, eq. 21 |
//! | `ncmc.rs` | NCMC, k centroids per class, eq. 16-20 |
//! | `softmax_metric.rs` | the batch gradient of eq. 7 / eq. 19-20 / eq. 21 |
//! | `sgd.rs` | standardisation, PCA initialisation, held-out split, early stopping (§5.1) |
//! | `fda.rs` | Fisher discriminant analysis, eq. 8 |
//! //! | `train_rows.rs` | the learners' row source: a dense matrix or PQ codes decoded on demand |
//! | `mahalanobis.rs` | PCA + inverse (regularised) covariance metric (§3.2, Table 4) |
//! | `knn_metric.rs` | k-NN with an LMNN-style metric, eq. 25-28 |
//! | `linear_ovr.rs` | one-vs-rest ridge regression, eq. 13-14 |
//! | `linear_svm.rs` | binary linear SVM, LIBLINEAR's dual coordinate descent (Hsieh et al. 2008) |
//! | `svm_ovr.rs` | one-vs-rest linear SVMs: the shared driver and the `svm` classifier |
//! | `spec.rs`, `classifier.rs` | the classifier SPEC grammar and fitting a SPEC |
//!
//! Every learned metric is a [`Projection`] `W (x − m)`, convertible to the model stages
//! CENTER + LINEAR so it can precede ITQ / PQ (the `ncmml:d` step of a pipeline SPEC).

mod classifier;
mod fda;
mod knn_metric;
mod labels;
mod linear_ovr;
mod linear_svm;
mod mahalanobis;
pub(crate) mod ncm;
mod ncmc;
mod ncmml;
mod projection;
mod sgd;
mod softmax_metric;
mod spec;
mod svm_ovr;
mod train_rows;

pub use super::error::ClassifyError;
pub use classifier::{Classifier, ClassifyOptions, FitReport, fit_classifier};
pub use fda::{Fda, fit_fda};
pub use knn_metric::{Knn, KnnMetricOptions, KnnMetricTraining, Targets, train_knn_metric};
pub use labels::ClassIndex;
pub use linear_ovr::{RidgeOvr, fit_ridge_ovr};
pub use linear_svm::{LinearSvm, LinearSvmOptions, SvmLoss, train_linear_svm};
pub use mahalanobis::{InverseCovariance, fit_inverse_covariance};
pub use ncm::Ncm;
pub use ncmc::{Ncmc, NcmcOptions, NcmcTraining, train_ncmc};
pub use ncmml::{NcmmlObjective, NcmmlOptions, NcmmlTraining, TestBias, train_ncmml};
pub use projection::Projection;
pub use sgd::{
    AUTO_TOP5_CLASSES, EpochCallback, EpochReport, SgdOptions, SgdReport, StopOn, WInit,
};
pub use spec::{ClassifierSpec, Method};
pub use svm_ovr::{SVM_C_GRID, SvmOvr, fit_svm_ovr, svm_ovr_options, train_one_vs_rest};

pub(crate) use classifier::{fit_on_rows, prepend, streams_rows};
pub(crate) use ncmml::train_ncmml_rows;
pub(crate) use sgd::stratified_split;
pub(crate) use train_rows::{CodeRows, RowSource, STREAM_ROWS};
