//! The settings of the supervised steps (`TrainOptions::supervised`) and the words they are
//! given in (CCA's ρ, [`CcaRho`]): what every learner of this folder reads, in a file of its
//! own, so the learners take it from here and the folder's `mod.rs` only declares and
//! re-exports.

/// ρ values `--cca-rho auto` tries: every power of ten from 1e-4 (the ITQ paper's) to 1e3.
pub const CCA_RHO_GRID: [f64; 8] = [1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0];

/// CCA's ρ without instance groups or a grid: 1e-4, the ITQ paper's value (Gong et al. TPAMI
/// 2013 §5.1), relative to each view's mean variance (`C_aa = Σ_aa + ρ·tr(Σ_aa)/D_a·I`,
/// `cca.rs`), so it means the same on pixels and on unit-norm features. It suits class
/// retrieval (held-out class precision@10 on openclipart: 0.587 at 1e-4, 0.603 at the best
/// ρ = 1e-2, 0.471 at 1e3; docs/method-supervised.md); instance retrieval needs ρ chosen on
/// instances, which is the default when groups are given.
pub const DEFAULT_CCA_RHO: f64 = 1e-4;

/// The `cca_rho` word of every front end (`codedb train --cca-rho`, Python's
/// `codedb.train(cca_rho=...)`): one ρ, or a grid to choose it from on held-out rows.
/// Parsed by [`str::parse`]: a number ≥ 0, a comma-separated list of them, or `auto`
/// ([`CCA_RHO_GRID`]).
#[derive(Debug, Clone, PartialEq)]
pub enum CcaRho {
    /// This ρ, no validation.
    Fixed(f64),
    /// Chosen from these on held-out rows: by the instance mAP of held-out groups when
    /// `TrainOptions::groups` are given, else by held-out class precision@k.
    Grid(Vec<f64>),
}

impl CcaRho {
    /// `auto`: the grid [`CCA_RHO_GRID`].
    pub fn auto() -> CcaRho {
        CcaRho::Grid(CCA_RHO_GRID.to_vec())
    }

    /// What `SupervisedOptions::cca_rho = None` means: ρ chosen on instances
    /// ([`CcaRho::auto`]) when instance groups are given, else [`DEFAULT_CCA_RHO`].
    pub fn default_for(groups: bool) -> CcaRho {
        if groups {
            CcaRho::auto()
        } else {
            CcaRho::Fixed(DEFAULT_CCA_RHO)
        }
    }

    /// One ρ, checked: finite and ≥ 0.
    pub fn fixed(rho: f64) -> std::result::Result<CcaRho, CcaRhoError> {
        check_rho(rho, &rho.to_string())?;
        Ok(CcaRho::Fixed(rho))
    }

    /// A grid, checked: not empty, every value finite and ≥ 0.
    pub fn grid(values: Vec<f64>) -> std::result::Result<CcaRho, CcaRhoError> {
        if values.is_empty() {
            return Err(CcaRhoError {
                input: String::new(),
                detail: "the ρ grid is empty".into(),
            });
        }
        for &v in &values {
            check_rho(v, &v.to_string())?;
        }
        Ok(CcaRho::Grid(values))
    }

    /// The values: the one ρ, or the grid.
    pub fn values(&self) -> &[f64] {
        match self {
            CcaRho::Fixed(v) => std::slice::from_ref(v),
            CcaRho::Grid(g) => g,
        }
    }
}

/// A `cca_rho` that is not a number ≥ 0, a list of them or `auto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CcaRhoError {
    /// The offending part of the input (empty for an empty grid).
    pub input: String,
    /// What is wrong with it.
    pub detail: String,
}

impl std::fmt::Display for CcaRhoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.input.is_empty() {
            write!(f, "{}", self.detail)?;
        } else {
            write!(f, "'{}': {}", self.input, self.detail)?;
        }
        write!(
            f,
            " (cca_rho is a number >= 0, a comma-separated list of them, or auto)"
        )
    }
}

impl std::error::Error for CcaRhoError {}

fn check_rho(v: f64, text: &str) -> std::result::Result<(), CcaRhoError> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(CcaRhoError {
            input: text.to_string(),
            detail: "must be a finite number >= 0".into(),
        })
    }
}

impl std::str::FromStr for CcaRho {
    type Err = CcaRhoError;

    fn from_str(s: &str) -> std::result::Result<CcaRho, CcaRhoError> {
        if s.trim().eq_ignore_ascii_case("auto") {
            return Ok(CcaRho::auto());
        }
        let values = s
            .split(',')
            .map(|p| {
                let p = p.trim();
                let v = p.parse::<f64>().map_err(|_| CcaRhoError {
                    input: p.to_string(),
                    detail: "not a number".into(),
                })?;
                check_rho(v, p)?;
                Ok(v)
            })
            .collect::<std::result::Result<Vec<f64>, CcaRhoError>>()?;
        match values.as_slice() {
            [v] => Ok(CcaRho::Fixed(*v)),
            _ => Ok(CcaRho::Grid(values)),
        }
    }
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
