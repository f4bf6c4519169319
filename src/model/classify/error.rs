//! Errors of the classifiers: every variant names the argument, class or SPEC token at fault.

use super::super::error::ModelError;

/// An error fitting or applying a classifier, or parsing a classifier SPEC.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClassifyError {
    /// Bad data (empty, NaN/Inf, wrong width), bad linear algebra, a failing PCA / k-means.
    /// Boxed because a model error can hold a classifier error in turn
    /// ([`ModelError::Classifier`]).
    #[error(transparent)]
    Model(Box<ModelError>),
    /// `labels` (or `split`) does not have one entry per row.
    #[error("{what}: {got} entries for {expected} rows")]
    LengthMismatch {
        what: String,
        expected: usize,
        got: usize,
    },
    /// Fewer distinct classes than the method needs.
    #[error("{what}: needs at least {needed} classes, got {got}")]
    TooFewClasses {
        what: String,
        needed: usize,
        got: usize,
    },
    /// A class has too few rows for the method (k-means with k centroids, a validation split).
    #[error("{what}: class {label} has {got} rows, needs at least {needed}")]
    SmallClass {
        what: String,
        label: i64,
        needed: usize,
        got: usize,
    },
    /// `add_class` with a label the classifier already has.
    #[error("class {label} already exists")]
    DuplicateClass { label: i64 },
    /// A classifier SPEC could not be parsed; `token` is the offending token.
    #[error("classifier {spec:?}: bad token {token:?}: {detail}")]
    BadSpec {
        spec: String,
        token: String,
        detail: String,
    },
    /// An option or argument out of range.
    #[error("invalid argument {argument}: {detail}")]
    InvalidArgument { argument: String, detail: String },
    /// SGD produced a non-finite matrix (learning rate too large for the data).
    #[error("{method}: training diverged at epoch {epoch} ({detail}); lower the learning rate")]
    Diverged {
        method: String,
        epoch: usize,
        detail: String,
    },
}

/// Result type of the classifiers.
pub type Result<T> = std::result::Result<T, ClassifyError>;

impl From<ModelError> for ClassifyError {
    fn from(e: ModelError) -> Self {
        ClassifyError::Model(Box::new(e))
    }
}

impl ClassifyError {
    pub(crate) fn invalid(argument: &str, detail: impl Into<String>) -> ClassifyError {
        ClassifyError::InvalidArgument {
            argument: argument.to_string(),
            detail: detail.into(),
        }
    }
}
