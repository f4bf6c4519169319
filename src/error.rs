//! The umbrella error of the embedded API: each layer keeps its own enum (format, storage,
//! model, scan, search, classes) and this one wraps whichever a composite operation hit.

/// Any codedb error.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Format(#[from] crate::format::FormatError),
    #[error(transparent)]
    Storage(#[from] crate::storage::StorageError),
    #[error(transparent)]
    Model(#[from] crate::model::ModelError),
    #[error(transparent)]
    Scan(#[from] crate::scan::ScanError),
    #[error(transparent)]
    Search(#[from] crate::search::SearchError),
    #[error(transparent)]
    Classes(#[from] crate::classes::ClassError),
    #[error("invalid argument {argument}: {detail}")]
    InvalidArgument { argument: String, detail: String },
    /// A build failed after it had created files, and removing them failed too.
    #[error(
        "{cause}; removing what the failed build created in {dir} failed too ({cleanup}): \
         remove it by hand before building again"
    )]
    BuildLeftovers {
        dir: std::path::PathBuf,
        cause: Box<Error>,
        cleanup: std::io::Error,
    },
}
