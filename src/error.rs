//! The umbrella error of the embedded API. Each room keeps its own enum (format, scan, model,
//! classes, storage, search); this one wraps whichever a composite operation hit, whole: match
//! on the variant, or walk [`source`](std::error::Error::source) down to the I/O, zstd,
//! ndarray or classifier error underneath. A room's error is shown as it is (`transparent`),
//! so the chain never repeats a message.

/// Any codedb error, one variant per room that can raise it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a codedb file: I/O, magic bytes, versions, checksums, corrupt or
    /// undecodable sections.
    #[error(transparent)]
    Format(#[from] crate::format::FormatError),
    /// The index directory as a whole: manifests, versions, the writer lock, commits,
    /// compaction, recovery.
    #[error(transparent)]
    Storage(crate::storage::StorageError),
    /// Training, loading or applying a model: bad data, bad stages, failed linear algebra.
    #[error(transparent)]
    Model(crate::model::ModelError),
    /// A scan kernel's arguments (k, code widths, lookup tables) checked before it runs.
    #[error(transparent)]
    Scan(#[from] crate::scan::ScanError),
    /// A query over a snapshot: its parameters and mode, the wrong model, missing lists or
    /// vectors.
    #[error(transparent)]
    Search(crate::search::SearchError),
    /// Defining, updating or classifying with classes.
    #[error(transparent)]
    Classes(#[from] crate::classes::ClassError),
    /// An argument of a composite call that no room checks (the Python package's options).
    #[error("invalid argument {argument}: {detail}")]
    InvalidArgument {
        /// The argument at fault.
        argument: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The call was stopped through its [`Cancel`](crate::model::Cancel) token (Ctrl-C in the
    /// Python package) and changed nothing: whichever room noticed the request, a cancelled call
    /// is this one variant, so a caller matches one name.
    #[error("cancelled")]
    Cancelled,
}

impl Error {
    /// Whether this is [`Error::Cancelled`].
    pub fn is_cancelled(&self) -> bool {
        matches!(self, Error::Cancelled)
    }
}

// A room's cancelled error becomes `Error::Cancelled`; every other error is wrapped whole.
impl From<crate::model::ModelError> for Error {
    fn from(e: crate::model::ModelError) -> Self {
        match e {
            crate::model::ModelError::Cancelled => Error::Cancelled,
            e => Error::Model(e),
        }
    }
}

impl From<crate::storage::StorageError> for Error {
    fn from(e: crate::storage::StorageError) -> Self {
        if e.is_cancelled() {
            Error::Cancelled
        } else {
            Error::Storage(e)
        }
    }
}

impl From<crate::format::AttributeError> for Error {
    fn from(e: crate::format::AttributeError) -> Self {
        Error::Search(e.into())
    }
}

impl From<crate::search::SearchError> for Error {
    fn from(e: crate::search::SearchError) -> Self {
        if e.is_cancelled() {
            Error::Cancelled
        } else {
            Error::Search(e)
        }
    }
}
