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
        /// The input at fault.
        what: String,
        /// The number of rows.
        expected: usize,
        /// The number of entries given.
        got: usize,
    },
    /// Fewer distinct classes than the method needs.
    #[error("{what}: needs at least {needed} classes, got {got}")]
    TooFewClasses {
        /// The input at fault.
        what: String,
        /// The least number of classes the method needs.
        needed: usize,
        /// The number of distinct classes given.
        got: usize,
    },
    /// A class has too few rows for the method (k-means with k centroids, a validation split).
    #[error("{what}: class {label} has {got} rows, needs at least {needed}")]
    SmallClass {
        /// The input at fault.
        what: String,
        /// The class's label.
        label: i64,
        /// The least number of rows the method needs per class.
        needed: usize,
        /// The class's number of rows.
        got: usize,
    },
    /// `add_class` with a label the classifier already has.
    #[error("class {label} already exists")]
    DuplicateClass {
        /// The class's label.
        label: i64,
    },
    /// A classifier SPEC could not be parsed; `token` is the offending token.
    #[error("classifier {spec:?}: bad token {token:?}: {detail}")]
    BadSpec {
        /// The SPEC string.
        spec: String,
        /// The token that does not parse.
        token: String,
        /// What is wrong.
        detail: String,
    },
    /// An option or argument out of range.
    #[error("invalid argument {argument}: {detail}")]
    InvalidArgument {
        /// The argument at fault.
        argument: String,
        /// What is wrong.
        detail: String,
    },
    /// SGD produced a non-finite matrix (learning rate too large for the data).
    #[error("{method}: training diverged at epoch {epoch} ({detail}); lower the learning rate")]
    Diverged {
        /// The method that diverged.
        method: String,
        /// The epoch at which it diverged.
        epoch: usize,
        /// What is wrong.
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
