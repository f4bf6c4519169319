//! Fitting a [`ClassifierSpec`]: one entry point over every method of this module, used by
//! `codedb eval --task classify`.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use ndarray::{Array2, ArrayView2};

use super::super::error::{ClassifyError, ClassifyResult as Result, ModelError};
use super::super::input::checked_rows;
use super::super::pca::Pca;
use super::fda::fit_fda;
use super::knn_metric::{DEFAULT_K_GRID, Knn, KnnMetricOptions, fit_knn_l2, train_knn_metric};
use super::linear_ovr::{RidgeOvr, fit_ridge_ovr};
use super::mahalanobis::fit_inverse_covariance;
use super::ncm::Ncm;
use super::ncmc::{Ncmc, NcmcOptions, train_ncmc_rows};
use super::ncmml::{NcmmlOptions, train_ncmml_rows};
use super::projection::Projection;
use super::sgd::{EpochCallback, EpochReport, SgdOptions, SgdReport};
use super::spec::{ClassifierSpec, Method};
use super::svm_ovr::{SVM_C_GRID, SvmOvr, fit_svm_ovr, svm_ovr_options};
use super::train_rows::RowSource;

/// A fitted classifier of any kind.
#[derive(Debug, Clone)]
pub enum Classifier {
    /// Nearest class mean, with or without a learned metric.
    Ncm(Ncm),
    /// Nearest class multiple centroids (eq. 16-20).
    Ncmc(Ncmc),
    /// k nearest neighbours, with or without a learned metric.
    Knn(Knn),
    /// One-vs-rest ridge regression (eq. 13-14).
    Ridge(RidgeOvr),
    /// One-vs-rest linear SVMs.
    Svm(SvmOvr),
}

impl Classifier {
    /// Class labels, in score-column order.
    pub fn classes(&self) -> &[i64] {
        match self {
            Classifier::Ncm(c) => c.classes(),
            Classifier::Ncmc(c) => c.classes(),
            Classifier::Knn(c) => c.classes(),
            Classifier::Ridge(c) => c.classes(),
            Classifier::Svm(c) => c.classes(),
        }
    }

    /// The `k` best labels of each row, best first.
    pub fn top_k(&self, x: ArrayView2<f32>, k: usize) -> Result<Vec<Vec<i64>>> {
        match self {
            Classifier::Ncm(c) => c.top_k(x, k),
            Classifier::Ncmc(c) => c.top_k(x, k),
            Classifier::Knn(c) => c.top_k(x, k),
            Classifier::Ridge(c) => c.top_k(x, k),
            Classifier::Svm(c) => c.top_k(x, k),
        }
    }
}

/// Receiver of per-epoch SGD reports.
pub type EpochFn = Arc<dyn Fn(&str, &EpochReport) + Send + Sync>;

/// Settings shared by every SPEC of a run. `None` fields take each method's defaults
/// ([`SgdOptions::ncm`], [`SgdOptions::knn`]).
#[derive(Clone)]
pub struct ClassifyOptions {
    /// Seed of every random choice (splits, initialisation, batches).
    pub seed: u64,
    /// SGD learning rate η; `None` takes the method's default.
    pub learning_rate: Option<f64>,
    /// Images per SGD iteration; `None` takes the method's default.
    pub batch_size: Option<usize>,
    /// Upper bound on SGD epochs; `None` takes the method's default.
    pub max_epochs: Option<usize>,
    /// Held-out fraction of each class for early stopping and for choosing k / λ.
    pub validation_fraction: f64,
    /// Validations without improvement before SGD stops; `None` takes the method's default.
    pub patience: Option<usize>,
    /// NCMC: re-estimate centroids in the projected space every this many epochs (0 = never).
    pub recluster_every: usize,
    /// Called with the SPEC text and each epoch's report.
    pub progress: Option<EpochFn>,
}

impl Default for ClassifyOptions {
    fn default() -> Self {
        ClassifyOptions {
            seed: 1234,
            learning_rate: None,
            batch_size: None,
            max_epochs: None,
            validation_fraction: 0.1,
            patience: None,
            recluster_every: 0,
            progress: None,
        }
    }
}

impl fmt::Debug for ClassifyOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClassifyOptions")
            .field("seed", &self.seed)
            .field("learning_rate", &self.learning_rate)
            .field("batch_size", &self.batch_size)
            .field("max_epochs", &self.max_epochs)
            .field("validation_fraction", &self.validation_fraction)
            .field("patience", &self.patience)
            .field("recluster_every", &self.recluster_every)
            .field("progress", &self.progress.as_ref().map(|_| "<callback>"))
            .finish()
    }
}

impl ClassifyOptions {
    fn sgd(&self, base: SgdOptions) -> SgdOptions {
        SgdOptions {
            learning_rate: self.learning_rate.unwrap_or(base.learning_rate),
            batch_size: self.batch_size.unwrap_or(base.batch_size),
            max_epochs: self.max_epochs.unwrap_or(base.max_epochs),
            patience: self.patience.unwrap_or(base.patience),
            validation_fraction: self.validation_fraction,
            seed: self.seed,
            ..base
        }
    }
}

/// What fitting did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FitReport {
    /// The SGD loss curve, for learned metrics.
    pub sgd: Option<SgdReport>,
    /// Validated hyper-parameters etc., e.g. `k=10`, `lambda=0.3`, `C=1`.
    pub detail: String,
    /// Wall time of the fit, in seconds.
    pub seconds: f64,
    /// Dimension of the space classes are compared in.
    pub dim: usize,
}

pub(crate) fn prepend(c: &mut Classifier, p: Projection) {
    match c {
        Classifier::Ncm(x) => x.prepend(p),
        Classifier::Ncmc(x) => x.prepend(p),
        Classifier::Knn(x) => x.prepend(p),
        Classifier::Ridge(x) => x.prepend(p),
        Classifier::Svm(x) => x.prepend(p),
    }
}

/// Fits `spec` on the rows of `x` labelled `labels`.
pub fn fit_classifier(
    spec: &ClassifierSpec,
    x: ArrayView2<f32>,
    labels: &[i64],
    opts: &ClassifyOptions,
) -> Result<(Classifier, FitReport)> {
    let t = Instant::now();
    let rows = checked_rows("classify: training data", x, None)?;
    let (n, dd) = (rows.n(), rows.dim());
    if labels.len() != n {
        return Err(ClassifyError::LengthMismatch {
            what: "classify: labels".into(),
            expected: n,
            got: labels.len(),
        });
    }
    let (pre, z): (Option<Projection>, Option<Array2<f32>>) = match spec.pca {
        Some(c) => {
            let pca = Pca::fit(x, c)?;
            let p = Projection::from_pca(&pca)?;
            let z = Array2::from_shape_vec((n, c), p.apply_rows(rows.as_slice()))
                .map_err(|e| ModelError::shape("classify: PCA-projected rows", e))?;
            (Some(p), Some(z))
        }
        None => (None, None),
    };
    let xv: ArrayView2<f32> = match &z {
        Some(a) => a.view(),
        None => x.view(),
    };
    let name = spec.text.clone();
    let progress = opts.progress.clone();
    let mut cb = move |e: &EpochReport| {
        if let Some(p) = &progress {
            p(&name, e);
        }
    };
    let mut report = FitReport::default();
    let vf = opts.validation_fraction;
    let mut classifier = match spec.method {
        Method::Ncm | Method::Ncmml { .. } | Method::Ncmc { .. } => {
            let xs = match &z {
                Some(a) => a.as_slice(),
                None => Some(rows.as_slice()),
            };
            let Some(xs) = xs else {
                return Err(ClassifyError::invalid(
                    "classify",
                    "non-contiguous PCA output",
                ));
            };
            let src = RowSource::Dense {
                x: xs,
                dim: xv.ncols(),
            };
            fit_on_rows(spec.method, &src, labels, opts, &mut cb, &mut report)?
        }
        Method::Fda(dim) => {
            let f = fit_fda(xv, labels, dim)?;
            report.dim = dim;
            Classifier::Ncm(Ncm::fit(xv, labels, vec![f.projection])?)
        }
        Method::Mahalanobis(dim) => {
            let m = fit_inverse_covariance(xv, labels, dim, None, vf, opts.seed)?;
            report.detail = format!("lambda={:.4e}", m.regularizer);
            report.dim = dim;
            Classifier::Ncm(Ncm::fit(xv, labels, vec![m.projection])?)
        }
        Method::Knn { dim: None, .. } => {
            let k = fit_knn_l2(xv, labels, Vec::new(), &DEFAULT_K_GRID, vf, 2000, opts.seed)?;
            report.detail = format!("k={}", k.k());
            report.dim = xv.ncols();
            Classifier::Knn(k)
        }
        Method::Knn {
            dim: Some(dim),
            targets,
        } => {
            let o = KnnMetricOptions {
                sgd: opts.sgd(SgdOptions::knn(dim)),
                targets,
                ..KnnMetricOptions::new(dim)
            };
            let tr = train_knn_metric(xv, labels, &o, Some(&mut cb))?;
            report.detail = format!("k={}, best epoch {}", tr.knn.k(), tr.report.best_epoch);
            report.sgd = Some(tr.report);
            report.dim = dim;
            Classifier::Knn(tr.knn)
        }
        Method::Ridge => {
            let r = fit_ridge_ovr(xv, labels, Vec::new(), None, vf, opts.seed)?;
            report.detail = format!("lambda={:.4e}", r.regularizer);
            report.dim = xv.ncols();
            Classifier::Ridge(r)
        }
        Method::Svm => {
            let o = svm_ovr_options(1.0, opts.seed);
            let s = fit_svm_ovr(xv, labels, Vec::new(), &o, &SVM_C_GRID, vf)?;
            report.detail = format!("C={}", s.c);
            report.dim = xv.ncols();
            Classifier::Svm(s)
        }
    };
    if let Some(p) = pre {
        prepend(&mut classifier, p);
    }
    debug_assert_eq!(classifier_in_dim(&classifier), dd);
    report.seconds = t.elapsed().as_secs_f64();
    Ok((classifier, report))
}

/// Fits the methods that read their training rows from a [`RowSource`] without holding them
/// (NCM, NCMML, NCMC: class means, SGD mini-batches and validation are streamed, so PQ codes
/// are decoded per block); an error for the other methods (see [`streams_rows`]).
pub(crate) fn fit_on_rows(
    method: Method,
    src: &RowSource,
    labels: &[i64],
    opts: &ClassifyOptions,
    cb: EpochCallback,
    report: &mut FitReport,
) -> Result<Classifier> {
    Ok(match method {
        Method::Ncm => {
            report.dim = src.dim();
            Classifier::Ncm(Ncm::fit_rows(src, labels, Vec::new())?)
        }
        Method::Ncmml { dim, objective } => {
            let o = NcmmlOptions {
                sgd: opts.sgd(SgdOptions::ncm(dim)),
                objective,
            };
            let tr = train_ncmml_rows(src.clone(), labels, &o, Some(cb))?;
            report.detail = format!("best epoch {}", tr.report.best_epoch);
            report.sgd = Some(tr.report);
            report.dim = dim;
            Classifier::Ncm(tr.ncm)
        }
        Method::Ncmc { dim, k } => {
            let o = NcmcOptions {
                sgd: opts.sgd(SgdOptions::ncm(dim)),
                recluster_every: opts.recluster_every,
                ..NcmcOptions::new(dim, k)
            };
            let tr = train_ncmc_rows(src.clone(), labels, &o, Some(cb))?;
            report.detail = format!("best epoch {}", tr.report.best_epoch);
            report.sgd = Some(tr.report);
            report.dim = dim;
            Classifier::Ncmc(tr.ncmc)
        }
        other => {
            return Err(ClassifyError::invalid(
                "classifier",
                format!("{other:?} does not train from a row source"),
            ));
        }
    })
}

/// Whether [`fit_on_rows`] fits `spec` (no `pca:C` prefix, NCM / NCMML / NCMC).
pub(crate) fn streams_rows(spec: &ClassifierSpec) -> bool {
    spec.pca.is_none()
        && matches!(
            spec.method,
            Method::Ncm | Method::Ncmml { .. } | Method::Ncmc { .. }
        )
}

fn classifier_in_dim(c: &Classifier) -> usize {
    match c {
        Classifier::Ncm(x) => x.input_dim(),
        Classifier::Ncmc(x) => x.input_dim(),
        Classifier::Knn(x) => x.input_dim(),
        Classifier::Ridge(x) => x.input_dim(),
        Classifier::Svm(x) => x.input_dim(),
    }
}
