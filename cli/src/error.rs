//! The errors of the lab code in this crate (dataset readers, evaluation protocols, the demo and
//! the bench harness): [`Error`], the engine's [`codedb::Error`] plus the errors of the two
//! rooms that live here, and those two: [`IoError`] (the input layer: every variant names the
//! file, or for in-memory data the name the caller gave it, and says what is wrong, so a user
//! can act on the message) and [`EvalError`] (the evaluation layer: shape mismatches and
//! invalid rankings, each naming the argument, and query, that is wrong). They stand in one
//! file because [`Error`] holds the other two while the protocols of `eval/` return [`Error`]:
//! each folder takes its error from here, below both.

use std::path::{Path, PathBuf};

/// Any error of the CLI's library-like modules.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An engine operation failed.
    #[error(transparent)]
    Engine(#[from] codedb::Error),
    /// Reading or writing a dataset file failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// An evaluation protocol was given inconsistent input.
    #[error(transparent)]
    Eval(#[from] EvalError),
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

/// An error reading or writing an input/output file (`.npy`, `.fvecs`, IDX, …).
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The operating system refused an open/read/write/rename.
    #[error("{path}: I/O error: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file ended before the header or data it announces.
    #[error("{path}: truncated: {detail}")]
    Truncated { path: PathBuf, detail: String },
    /// The file does not start with the magic bytes of the format it claims to be.
    #[error("{path}: not a {format} file: {detail}")]
    BadMagic {
        path: PathBuf,
        format: &'static str,
        detail: String,
    },
    /// The header is present but malformed or not supported (version, keys, syntax).
    #[error("{path}: bad {format} header: {detail}")]
    BadHeader {
        path: PathBuf,
        format: &'static str,
        detail: String,
    },
    /// The element type is unknown, or known but not accepted for this use.
    #[error("{path}: unsupported element type {dtype}: {detail}")]
    UnsupportedDtype {
        path: PathBuf,
        dtype: String,
        detail: String,
    },
    /// The array is stored column-major; codedb reads row-major (C order) only.
    #[error(
        "{path}: array is stored in Fortran (column-major) order; save it in C order (numpy: np.ascontiguousarray)"
    )]
    FortranOrder { path: PathBuf },
    /// The shape is not the one this reader needs (e.g. 1-D where a matrix is required), or the
    /// element count overflows.
    #[error("{path}: wrong shape {shape:?}: {detail}")]
    WrongShape {
        path: PathBuf,
        shape: Vec<usize>,
        detail: String,
    },
    /// Bytes follow the data the header announces.
    #[error(
        "{path}: {extra} unexpected bytes after the {expected} data bytes the header announces"
    )]
    TrailingData {
        path: PathBuf,
        expected: u64,
        extra: u64,
    },
    /// A `.fvecs`/`.bvecs`/`.ivecs` record whose dimension differs from the first record's, or
    /// is not positive.
    #[error("{path}: record {record}: dimension {found}, expected {expected}")]
    InconsistentRecord {
        path: PathBuf,
        record: usize,
        found: i64,
        expected: usize,
    },
    /// A value that cannot be represented in the requested type (negative id, f64 beyond the
    /// f32 range, id above `i64::MAX` as label, …).
    #[error("{path}: element {index}: {detail}")]
    InvalidValue {
        path: PathBuf,
        index: usize,
        detail: String,
    },
    /// The data contain NaN or ±Inf. `what` is the file path or the caller's name for the input.
    #[error("{what}: non-finite value {value} at row {row}, column {col}")]
    NonFinite {
        what: String,
        row: usize,
        col: usize,
        value: f32,
    },
    /// A matrix was required but the input has no rows or no columns.
    #[error("{what}: empty input ({rows} rows × {cols} columns); a non-empty matrix is required")]
    Empty {
        what: String,
        rows: usize,
        cols: usize,
    },
    /// The path's extension does not name a format this crate reads.
    #[error(
        "{path}: unknown input format (supported: .npy, .fvecs, .bvecs, .ivecs, *-idx3-ubyte[.gz], or a Fashion-MNIST directory)"
    )]
    UnknownFormat { path: PathBuf },
    /// A compressed stream is damaged (bad deflate data, CRC mismatch).
    #[error("{path}: corrupt {format} data: {detail}")]
    Corrupt {
        path: PathBuf,
        format: &'static str,
        detail: String,
    },
    /// A caller-supplied argument is invalid (e.g. `max_rows = 0`).
    #[error("{path}: invalid argument {argument}: {detail}")]
    InvalidArgument {
        path: PathBuf,
        argument: &'static str,
        detail: String,
    },
}

/// Shorthand for results of the dataset readers and writers.
pub type IoResult<T> = std::result::Result<T, IoError>;

impl IoError {
    /// Wraps an OS error, turning an unexpected end of file into [`IoError::Truncated`] so that
    /// a short file is reported as such rather than as a bare "failed to fill whole buffer".
    pub(crate) fn from_io(path: &Path, source: std::io::Error, reading: &str) -> IoError {
        match source.kind() {
            std::io::ErrorKind::UnexpectedEof => IoError::Truncated {
                path: path.to_path_buf(),
                detail: format!("file ends inside the {reading}"),
            },
            _ => IoError::Io {
                path: path.to_path_buf(),
                source,
            },
        }
    }
}

/// An invalid input to a metric or ground-truth computation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    #[error("{what}: dimension {found} does not match the {expected} of the database")]
    DimensionMismatch {
        what: &'static str,
        expected: usize,
        found: usize,
    },
    #[error("{what}: {found} entries, expected {expected}")]
    LengthMismatch {
        what: &'static str,
        expected: usize,
        found: usize,
    },
    #[error("{what} is empty")]
    Empty { what: &'static str },
    #[error("{what}: non-finite value at row {row}, column {col}")]
    NonFinite {
        what: &'static str,
        row: usize,
        col: usize,
    },
    #[error("invalid argument {argument}: {detail}")]
    InvalidArgument {
        argument: &'static str,
        detail: String,
    },
    #[error(
        "{what}: query {query}: index {index} is out of range (database has {n_database} items)"
    )]
    IndexOutOfRange {
        what: &'static str,
        query: usize,
        index: u64,
        n_database: usize,
    },
    #[error("{what}: query {query}: index {index} appears more than once")]
    DuplicateIndex {
        what: &'static str,
        query: usize,
        index: u32,
    },
    #[error("{what}: query {query}: {len} entries, at least {required} required")]
    TooShort {
        what: &'static str,
        query: usize,
        len: usize,
        required: usize,
    },
    #[error("{what}: no query has any relevant item, the mean is undefined")]
    NoRelevant { what: &'static str },
    #[error("{what}: {rows} rows exceed the u32 index range")]
    TooLarge { what: &'static str, rows: usize },
}

/// Shorthand for results of the evaluation protocols.
pub type EvalResult<T> = std::result::Result<T, EvalError>;
