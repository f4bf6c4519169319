//! The umbrella error of the embedded API: each layer keeps its own enum (format, storage,
//! model, scan, io, eval, search) and this one wraps whichever a composite operation hit.

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
    Io(#[from] crate::io::IoError),
    #[error(transparent)]
    Eval(#[from] crate::eval::EvalError),
    #[error(transparent)]
    Search(#[from] crate::search::SearchError),
    #[error(transparent)]
    Classes(#[from] crate::classes::ClassError),
    #[error("invalid argument {argument}: {detail}")]
    InvalidArgument { argument: String, detail: String },
}
