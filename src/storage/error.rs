//! Errors of the storage engine: every variant names the index directory or the file, so a
//! message says which index and which operation went wrong.

use std::path::{Path, PathBuf};

use crate::format::FormatError;

use super::recovery_report::SkippedManifest;

/// An error from an index operation.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// Another writer (in this or another process) holds the index's `LOCK`.
    #[error(
        "{dir}: the index is locked by another writer (only one writer at a time; readers need no lock)"
    )]
    Locked {
        /// The index's directory.
        dir: PathBuf,
    },

    /// A file operation failed; `op` says which (create, write, fsync, rename, …).
    #[error("{path}: {op} failed: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operation that failed.
        op: &'static str,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },

    /// A file of the index does not decode (it names the file and section).
    #[error(transparent)]
    Format(#[from] FormatError),

    /// Rows or classes that do not fit the class table or the model (an unknown label, a
    /// duplicate class, a descriptor of the wrong width).
    #[error(transparent)]
    Class(#[from] crate::classes::ClassError),

    /// The index's model failed to encode rows (bad values, a model file that does not decode).
    #[error(transparent)]
    Model(#[from] crate::model::ModelError),

    /// `add` was given an id that is already a live row (use `upsert` to replace rows).
    #[error("{dir}: id {id} is already a live row (use upsert to replace it)")]
    DuplicateId {
        /// The index's directory.
        dir: PathBuf,
        /// The id.
        id: u64,
    },

    /// `delete` was given an id that is not a live row.
    #[error("{dir}: id {id} is not a live row")]
    UnknownId {
        /// The index's directory.
        dir: PathBuf,
        /// The id.
        id: u64,
    },

    /// An argument is malformed (shape, value, empty input, …).
    #[error("{dir}: invalid argument {argument}: {detail}")]
    InvalidArgument {
        /// The index's directory.
        dir: PathBuf,
        /// The argument at fault.
        argument: String,
        /// What is wrong.
        detail: String,
    },

    /// The directory is not a codedb index (no manifest, or no manifest that reads).
    #[error("{dir}: not a codedb index: {detail}")]
    NotAnIndex {
        /// The index's directory.
        dir: PathBuf,
        /// What is wrong.
        detail: String,
    },

    /// `create` was pointed at a directory that already holds an index.
    #[error("{dir}: already holds a codedb index (open it instead)")]
    AlreadyExists {
        /// The index's directory.
        dir: PathBuf,
    },

    /// A delete or an upsert would remove a row that counts in a class, and the index stores
    /// no vectors, so the row's descriptor (what its class's sum holds for it) is unknown.
    #[error(
        "{dir}: row {id} counts in class {class} ({name:?}), and the index stores no vectors, so \
         its descriptor is unknown and the class's mean cannot be updated without it: remove it \
         with ClassStats::Keep (codedb delete --keep-class-stats) to leave the class's count and \
         sum as they are, or build indexes whose class means must follow deletes with \
         --store-vectors f32"
    )]
    ClassStatsNeedVectors {
        /// The index's directory.
        dir: PathBuf,
        /// The row's id.
        id: u64,
        /// The id of the row's class.
        class: u32,
        /// The class's name.
        name: String,
    },

    /// The newest manifest(s) do not read, so the index opened at an older version: the writes
    /// of the skipped versions are not visible. Every write is refused until the loss is
    /// accepted explicitly ([`crate::storage::Index::recover`], `codedb recover`) or the damaged
    /// files are restored, so nothing is built on the older version and nothing the skipped
    /// manifests name is removed.
    #[error(
        "{dir}: the index fell back to version {version} because {}; writes are refused so nothing is built on the older version: run `codedb recover {dir} --to-version {version}` to accept the loss, or restore the damaged file",
        describe_skipped(skipped)
    )]
    FellBack {
        /// The index's directory.
        dir: PathBuf,
        /// The version the index opened at (the newest manifest that reads).
        version: u64,
        /// The newer manifests that do not read.
        skipped: Vec<SkippedManifest>,
    },

    /// Garbage collection found manifests that do not read: which files they name is unknown,
    /// so it removes nothing until they are restored or set aside by `codedb recover`.
    #[error(
        "{dir}: garbage collection refused: {}, so which files it names is unknown; run `codedb recover {dir} --to-version {version}` to set the damaged manifest aside, or restore it",
        describe_skipped(damaged)
    )]
    DamagedManifest {
        /// The index's directory.
        dir: PathBuf,
        /// The newest version that reads.
        version: u64,
        /// The manifests that do not read.
        damaged: Vec<SkippedManifest>,
    },

    /// [`crate::storage::Index::build`] failed after it had created files, and removing them
    /// failed too.
    #[error(
        "{cause}; removing what the failed build created in {dir} failed too ({cleanup}): \
         remove it by hand before building again"
    )]
    BuildLeftovers {
        /// The directory the build was creating.
        dir: PathBuf,
        /// Why the build failed.
        cause: Box<StorageError>,
        /// Why removing its files failed.
        cleanup: std::io::Error,
    },

    /// An earlier write failed part-way; the handle refuses further writes. Reopening the index
    /// recovers the last committed version.
    #[error(
        "{dir}: the writer stopped after an earlier failure ({cause}); drop it and reopen the index, which opens at the last committed version"
    )]
    Poisoned {
        /// The index's directory.
        dir: PathBuf,
        /// The message of the failure that poisoned the handle. That error itself went, typed,
        /// to the call that failed; it holds a `std::io::Error`, which cannot be cloned, so the
        /// handle keeps a second copy only as text (sharing it would change the type of the
        /// error the failing call returns).
        cause: String,
    },
}

impl StorageError {
    pub(crate) fn io(path: &Path, op: &'static str) -> impl FnOnce(std::io::Error) -> StorageError {
        let path = path.to_path_buf();
        move |source| StorageError::Io { path, op, source }
    }

    /// [`StorageError::InvalidArgument`] for attributes a write was handed, naming the column
    /// (argument `attributes column NAME`) and the row (in the detail).
    pub(crate) fn attributes(dir: &Path, e: crate::format::AttributeError) -> StorageError {
        StorageError::InvalidArgument {
            dir: dir.to_path_buf(),
            argument: format!("attributes column {}", e.column),
            detail: match e.row {
                Some(r) => format!("row {r}: {}", e.detail),
                None => e.detail,
            },
        }
    }

    pub(crate) fn invalid(dir: &Path, argument: &str, detail: impl Into<String>) -> StorageError {
        StorageError::InvalidArgument {
            dir: dir.to_path_buf(),
            argument: argument.to_string(),
            detail: detail.into(),
        }
    }

    /// Whether this error came from the file system (as opposed to an argument or a file that
    /// does not decode). Such an error part-way through a write poisons the writer.
    pub fn is_io(&self) -> bool {
        matches!(
            self,
            StorageError::Io { .. } | StorageError::Format(FormatError::Io { .. })
        )
    }

    /// Whether the call was stopped through its [`Cancel`](crate::model::Cancel) token
    /// ([`ModelError::Cancelled`](crate::model::ModelError::Cancelled), which a storage
    /// operation carries in its `Model` variant).
    pub fn is_cancelled(&self) -> bool {
        matches!(
            self,
            StorageError::Model(crate::model::ModelError::Cancelled)
                | StorageError::Class(crate::classes::ClassError::Model(
                    crate::model::ModelError::Cancelled
                ))
        )
    }

    /// Whether the error is "file not found" (a reader racing garbage collection).
    pub(crate) fn is_not_found(&self) -> bool {
        let kind = match self {
            StorageError::Io { source, .. } => source.kind(),
            StorageError::Format(FormatError::Io { source, .. }) => source.kind(),
            _ => return false,
        };
        kind == std::io::ErrorKind::NotFound
    }
}

/// "manifest v4 (v000…4.manifest) does not read (reason)", for each manifest, joined.
pub(crate) fn describe_skipped(skipped: &[SkippedManifest]) -> String {
    let each: Vec<String> = skipped
        .iter()
        .map(|s| {
            format!(
                "manifest version {} ({}) does not read ({})",
                s.version, s.file, s.error
            )
        })
        .collect();
    each.join("; ")
}

/// Shorthand used throughout the storage engine.
pub type Result<T> = std::result::Result<T, StorageError>;
