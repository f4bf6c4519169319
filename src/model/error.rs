//! Errors of the model layer and of its classifiers: every variant names the input, stage,
//! tensor, argument, class or SPEC token at fault. An error that comes from elsewhere (ndarray,
//! faer, a classifier) is kept as the [`source`](std::error::Error::source), never turned into
//! text.
//!
//! [`ModelError`] and [`ClassifyError`] are one recursive type: a training step that fits a
//! classifier keeps the classifier's error ([`ModelError::Classifier`]), and a classifier keeps
//! the model layer's error of its data checks, PCA or k-means ([`ClassifyError::Model`]). Both
//! stand in this file so that neither side of the model room imports the other.

/// An error training, loading or applying a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A matrix argument has no rows (or no columns).
    #[error("{what}: empty input ({rows} rows x {cols} columns)")]
    Empty {
        /// The input at fault.
        what: String,
        /// Its number of rows.
        rows: usize,
        /// Its number of columns.
        cols: usize,
    },
    /// A matrix argument has the wrong number of columns.
    #[error("{what}: expected {expected} columns, got {got}")]
    DimensionMismatch {
        /// The input at fault.
        what: String,
        /// The number of columns expected.
        expected: usize,
        /// The number of columns given.
        got: usize,
    },
    /// NaN or infinity in input data.
    #[error("{what}: non-finite value {value} at row {row}, column {col}")]
    NonFinite {
        /// The input at fault.
        what: String,
        /// The row of the value.
        row: usize,
        /// The column of the value.
        col: usize,
        /// The value.
        value: f32,
    },
    /// A finite value the code cannot represent (float16 storage beyond ±65504).
    #[error("{what}: value {value} at row {row}, column {col}: {detail}")]
    OutOfRange {
        /// The input at fault.
        what: String,
        /// The row of the value.
        row: usize,
        /// The column of the value.
        col: usize,
        /// The value.
        value: f32,
        /// What is wrong.
        detail: String,
    },
    /// A tensor of a stored stage is missing, has the wrong dtype or shape, or bad values.
    #[error("model stage {stage}: tensor {tensor:?}: {detail}")]
    BadTensor {
        /// The stage at fault.
        stage: String,
        /// The tensor's name.
        tensor: String,
        /// What is wrong.
        detail: String,
    },
    /// A stored stage is inconsistent as a whole (kind, order, dimensions).
    #[error("model stage {stage}: {detail}")]
    BadStage {
        /// The stage at fault.
        stage: String,
        /// What is wrong.
        detail: String,
    },
    /// The model as a whole is inconsistent (stage order, code layout vs. the file's meta).
    #[error("model: {detail}")]
    BadModel {
        /// What is wrong.
        detail: String,
    },
    /// A pipeline SPEC string could not be parsed; `token` is the offending token.
    #[error("pipeline {spec:?}: bad token {token:?}: {detail}")]
    BadSpec {
        /// The SPEC string.
        spec: String,
        /// The token that does not parse.
        token: String,
        /// What is wrong.
        detail: String,
    },
    /// A FAISS index factory string (`IVF256,PQ16`) that has no codedb pipeline, or does not
    /// parse; `part` is the comma-separated component at fault.
    #[error("FAISS factory {factory:?}: {part:?}: {detail}")]
    FaissFactory {
        /// The factory string.
        factory: String,
        /// The component that has no counterpart or does not parse.
        part: String,
        /// What is wrong, and the nearest codedb way when there is one.
        detail: String,
    },
    /// A FAISS factory string that translates to a pipeline codedb refuses (bit counts,
    /// ranges); `source` is the pipeline parser's error.
    #[error("FAISS factory {factory:?}: translates to {spec:?}, which codedb refuses")]
    FaissFactorySpec {
        /// The factory string.
        factory: String,
        /// The pipeline it translates to.
        spec: String,
        /// Why the pipeline parser refused it.
        #[source]
        source: Box<ModelError>,
    },
    /// A method cannot produce what was asked of it on this data (e.g. PCA to more dimensions
    /// than the input has, PQ with M not dividing the dimension).
    #[error("{method}: {detail}")]
    Unsupported {
        /// The method at fault.
        method: String,
        /// What is wrong.
        detail: String,
    },
    /// Not enough training rows for the method.
    #[error("{method}: needs at least {needed} training rows, got {got}")]
    TooFewRows {
        /// The method at fault.
        method: String,
        /// The least number of rows it needs.
        needed: usize,
        /// The number of rows given.
        got: usize,
    },
    /// An invalid argument to a library call (option out of range, codes of the wrong length).
    #[error("invalid argument {argument}: {detail}")]
    InvalidArgument {
        /// The argument at fault.
        argument: String,
        /// What is wrong.
        detail: String,
    },
    /// A decomposition did not converge (faer reported an error).
    #[error("{operation}: linear algebra failed: {source}")]
    Numerical {
        /// The decomposition that failed.
        operation: String,
        /// faer's error.
        #[source]
        source: LinalgError,
    },
    /// A stored tensor's data does not fill the shape it declares (a hand-built record; files
    /// are checked by the byte layer).
    #[error("model stage {stage}: tensor {tensor:?}: {source}")]
    TensorShape {
        /// The stage at fault.
        stage: String,
        /// The tensor's name.
        tensor: String,
        /// ndarray's error.
        #[source]
        source: ndarray::ShapeError,
    },
    /// A matrix could not take the shape computed for it. Lengths are checked before every
    /// such call, so this names a bug in codedb, not bad input.
    #[error("{what}: internal shape error: {source}")]
    Shape {
        /// The matrix being shaped.
        what: String,
        /// ndarray's error.
        #[source]
        source: ndarray::ShapeError,
    },
    /// A text query that cannot be scored: empty, or none of its words is in the text head's
    /// vocabulary (or all of them are in every training caption, so they carry no weight).
    #[error("text query {query:?}: {detail}")]
    TextQuery {
        /// The query.
        query: String,
        /// What is wrong.
        detail: String,
    },
    /// A step that trains a classifier (NCMML) failed for a reason of the classifier's own
    /// (too few classes, labels of the wrong length, divergence).
    #[error("{method}: {source}")]
    Classifier {
        /// The method whose classifier failed.
        method: String,
        /// The classifier's error.
        #[source]
        source: ClassifyError,
    },
    /// The call was stopped through its [`Cancel`](super::cancel::Cancel) token (Ctrl-C in the Python
    /// package); it returned without a result and changed nothing.
    #[error("cancelled")]
    Cancelled,
}

/// How a linear-algebra decomposition failed, as faer reported it (faer's error types do not
/// implement [`std::error::Error`], so this mirrors them to serve as an error source).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinalgError {
    /// The iteration reached its limit before converging.
    #[error("NoConvergence")]
    NoConvergence,
}

impl From<faer::linalg::evd::EvdError> for LinalgError {
    fn from(e: faer::linalg::evd::EvdError) -> Self {
        match e {
            faer::linalg::evd::EvdError::NoConvergence => LinalgError::NoConvergence,
        }
    }
}

impl From<faer::linalg::svd::SvdError> for LinalgError {
    fn from(e: faer::linalg::svd::SvdError) -> Self {
        match e {
            faer::linalg::svd::SvdError::NoConvergence => LinalgError::NoConvergence,
        }
    }
}

/// Result type of the model layer.
pub type Result<T> = std::result::Result<T, ModelError>;

impl ModelError {
    /// The error of a chunk of input starting at row `offset` as an error of the whole input:
    /// the row a value error names moves by `offset` (other errors are unchanged).
    pub(crate) fn rows_from(mut self, offset: usize) -> ModelError {
        if let ModelError::NonFinite { row, .. } | ModelError::OutOfRange { row, .. } = &mut self {
            *row += offset;
        }
        self
    }

    pub(crate) fn bad_tensor(stage: &str, tensor: &str, detail: impl Into<String>) -> ModelError {
        ModelError::BadTensor {
            stage: stage.to_string(),
            tensor: tensor.to_string(),
            detail: detail.into(),
        }
    }

    pub(crate) fn unsupported(method: &str, detail: impl Into<String>) -> ModelError {
        ModelError::Unsupported {
            method: method.to_string(),
            detail: detail.into(),
        }
    }

    pub(crate) fn invalid(argument: &str, detail: impl Into<String>) -> ModelError {
        ModelError::InvalidArgument {
            argument: argument.to_string(),
            detail: detail.into(),
        }
    }

    /// A stored tensor `tensor` of `stage` whose data does not fill its shape.
    pub(crate) fn tensor_shape(stage: &str, tensor: &str, source: ndarray::ShapeError) -> Self {
        ModelError::TensorShape {
            stage: stage.to_string(),
            tensor: tensor.to_string(),
            source,
        }
    }

    /// ndarray refused the shape computed for the matrix `what` (a bug, see [`ModelError::Shape`]).
    pub(crate) fn shape(what: &str, source: ndarray::ShapeError) -> ModelError {
        ModelError::Shape {
            what: what.to_string(),
            source,
        }
    }

    /// A classifier's error met while training `method`: its model-layer errors pass through
    /// unchanged, the classifier's own are kept whole as the source.
    pub(crate) fn from_classifier(method: &str, e: ClassifyError) -> ModelError {
        match e {
            ClassifyError::Model(m) => *m,
            source => ModelError::Classifier {
                method: method.to_string(),
                source,
            },
        }
    }
}

/// An error fitting or applying a classifier, or parsing a classifier SPEC.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClassifyError {
    /// Bad data (empty, NaN/Inf, wrong width), bad linear algebra, a failing PCA / k-means.
    /// Boxed because a model error can hold a classifier error in turn
    /// ([`ModelError::Classifier`]), which is why both types live in this file.
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
pub(crate) type ClassifyResult<T> = std::result::Result<T, ClassifyError>;

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
