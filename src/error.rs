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
    Storage(#[from] crate::storage::StorageError),
    /// Training, loading or applying a model: bad data, bad stages, failed linear algebra.
    #[error(transparent)]
    Model(#[from] crate::model::ModelError),
    /// A scan kernel's arguments (k, code widths, lookup tables) checked before it runs.
    #[error(transparent)]
    Scan(#[from] crate::scan::ScanError),
    /// A query over a snapshot: its parameters and mode, the wrong model, missing lists or
    /// vectors.
    #[error(transparent)]
    Search(#[from] crate::search::SearchError),
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
}
