//! The error of the lab code in this crate (dataset readers, evaluation protocols, the demo and
//! the bench harness): the engine's [`codedb::Error`] plus the two rooms that live here.

/// Any error of the CLI's library-like modules.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An engine operation failed.
    #[error(transparent)]
    Engine(#[from] codedb::Error),
    /// Reading or writing a dataset file failed.
    #[error(transparent)]
    Io(#[from] crate::io::IoError),
    /// An evaluation protocol was given inconsistent input.
    #[error(transparent)]
    Eval(#[from] crate::eval::EvalError),
    /// An argument out of range or inconsistent with another.
    #[error("invalid argument {argument}: {detail}")]
    InvalidArgument { argument: String, detail: String },
}

/// `?` on any engine room's error converts through [`codedb::Error`].
macro_rules! from_engine {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Error {
                Error::Engine(e.into())
            }
        }
    )*};
}
from_engine!(
    codedb::format::FormatError,
    codedb::StorageError,
    codedb::model::ModelError,
    codedb::ScanError,
    codedb::SearchError,
    codedb::ClassError
);
