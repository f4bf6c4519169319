//! Files and versions: the index directory, its versioned manifests, the single writer, the
//! active append log, snapshots, compaction, garbage collection, inspection and verification.
//!
//! The engine works at the level of *codes*: [`Index::add_codes`] takes rows already encoded
//! by the index's model (kept in the index as a [`crate::format::ModelFile`]); encoding vectors
//! is the model layer's job. Durability and concurrency guarantees are stated in
//! README.md ("Durability and concurrency") and the on-disk protocol in FORMAT.md §10-§11.

mod class_accounting;
pub mod compaction;
pub mod config;
pub mod error;
pub mod fs;
pub mod gc;
pub mod index;
pub mod inspect;
pub mod layout;
mod lock;
mod log_rows;
pub mod manifest_recovery;
pub mod merge_policy;
pub mod open_segment;
mod publish;
pub mod recovery;
pub mod row_batch;
pub mod snapshot;
pub mod verify;
mod version;
pub mod versions;

pub use class_accounting::ClassStats;
pub use compaction::{CompactionReport, MergeReport};
pub use config::{CompactionPolicy, Config, CreateOptions, ReadOptions, Retention};
pub use error::StorageError;
pub use fs::{FileSystem, StdFs, WriteFile};
pub use gc::GcReport;
pub use index::Index;
pub use manifest_recovery::recovery_records;
pub use merge_policy::MergeReason;
pub use recovery::{
    DroppedManifest, LogTailReport, RecoveryRecord, RecoveryReport, SkippedManifest,
};
pub use row_batch::RowBatch;
pub use snapshot::{Block, Row, Snapshot};
pub use versions::{VersionInfo, list_versions};
