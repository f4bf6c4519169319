//! Operating an index from outside: what `codedb inspect`, `verify`, `versions` and
//! `recover` are built on, and the file-system hooks the crash and fault-injection tests
//! drive. For tools and operators; an application that only reads and writes its index needs
//! none of it ([`Index::recovery`](crate::Index::recovery) and
//! [`Snapshot::skipped_manifests`](crate::Snapshot::skipped_manifests) report what opening
//! found).
//!
//! - Inspection: [`inspect_dir`] / [`inspect_file`] describe an index or any codedb file
//!   without trusting it further than its checksums.
//! - Verification: [`verify_path`] checks every checksum of a file or an index directory.
//! - Versions and recovery: [`list_versions`], the [`RecoveryReport`] of an open, and the
//!   records `Index::recover` leaves ([`recovery_records`]).
//! - Fault injection: every file operation of the writer goes through a [`FileSystem`]
//!   ([`Config::fs`](crate::Config::fs); [`StdFs`] by default).

pub use crate::storage::inspect::{
    ActiveLogReport, AttributeColumnReport, AttributeIndexReport, ClassReport, ColumnIndexReport,
    Contents, FileReport, IndexReport, LogReport, ManifestSegmentReport, ModelSummary,
    SectionReport, StageReport, TensorReport, VersionReport, attribute_columns, inspect_dir,
    inspect_file,
};
pub use crate::storage::recovery_report::RECOVERY_RECORD_FORMAT;
pub use crate::storage::shard_layout::{
    SHARD_CUT_FILE, SHARD_CUT_FORMAT, SHARD_LAYOUT_FILE, SHARD_LAYOUT_FORMAT, ShardCut,
    ShardLayout, ShardLayoutError, parse_shard_cut, parse_shard_layout, read_shard_cut,
    read_shard_layout,
};
pub use crate::storage::verify::{Note, Problem, VerifyReport, bytes_to_verify, verify_path};
pub use crate::storage::{
    DroppedManifest, FileSystem, LogTailReport, RecoveryRecord, RecoveryRecordError,
    RecoveryReport, SkippedManifest, StdFs, VersionInfo, WriteFile, fell_back_warning,
    list_versions, recovery_records,
};
