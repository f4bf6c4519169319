//! Files and versions: the index directory, its versioned manifests, the single writer, the
//! active append log, snapshots, compaction, garbage collection, inspection and verification.
//!
//! The index owns its model: [`Index::add`] encodes descriptors with it and stores the codes;
//! underneath, the engine works at the level of codes ([`Index::add_encoded`] takes rows
//! already encoded by the index's model). Durability and concurrency guarantees are stated in
//! docs/durability.md and the on-disk protocol in FORMAT.md §10-§11.
//!
//! Every method of [`Index`] lives in `index/`, one file per concern. Compaction is split the
//! way tantivy splits it: `merge_policy` chooses which segments to merge, `merger` merges
//! sorted row sources into a new segment (it knows nothing of the policy), and
//! `index/compact.rs` applies the one with the other and publishes the result.

mod attributes;
pub mod block;
pub mod config;
pub mod error;
pub mod fs;
pub mod index;
pub mod inspect;
pub mod layout;
mod loaded_version;
mod lock;
mod log_rows;
pub mod merge_policy;
mod merger;
pub mod open_segment;
mod publish;
pub mod recovery_report;
pub mod row_batch;
mod segment_columns;
pub mod shard_layout;
pub mod snapshot;
pub mod verify;
pub mod version_list;

pub use block::{Block, Row};
pub use config::{CompactionPolicy, Config, CreateOptions, ReadOptions, Retention};
pub use error::StorageError;
pub use fs::{FileSystem, StdFs, WriteFile};
pub use index::{
    AddOptions, BuildOptions, ClassStats, CompactProgress, CompactProgressFn, CompactionReport,
    EncodedOptions, GcReport, Index, MergeReport, SealedCompaction,
};
pub use merge_policy::MergeReason;
pub use recovery_report::{
    DroppedManifest, LogTailReport, RecoveryRecord, RecoveryRecordError, RecoveryReport,
    SkippedManifest, fell_back_warning, recovery_records,
};
pub use row_batch::RowBatch;
pub use snapshot::Snapshot;
pub use version_list::{VersionInfo, list_versions};
