//! What opening an index found and repaired: manifests that did not read, temporary files of
//! interrupted commits, and the uncommitted or torn tail cut off the active log.

use serde::Serialize;

/// A manifest newer than the opened version that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedManifest {
    pub version: u64,
    pub file: String,
    pub error: String,
}

/// Bytes found past the active log's committed length, and removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogTailReport {
    pub log: String,
    /// The length the manifest commits.
    pub committed_len: u64,
    /// The file's length before the cut.
    pub file_len: u64,
    /// Whole, checksum-valid batches past the committed length: written by a commit that never
    /// completed, so never acknowledged.
    pub uncommitted_batches: u64,
    pub uncommitted_rows: u64,
    /// Bytes of a partly written batch (a torn write).
    pub torn_bytes: u64,
    /// Why those bytes are not a valid batch.
    pub torn_reason: Option<String>,
}

/// What [`crate::storage::Index::open`] found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecoveryReport {
    /// The version opened.
    pub version: u64,
    /// Newer manifests that did not read (damaged files): the index opened at an older
    /// version, and the writes of the skipped versions are not visible.
    pub skipped_manifests: Vec<SkippedManifest>,
    /// `*.tmp` files of interrupted writes, removed.
    pub removed_temp_files: Vec<String>,
    /// The active log's tail past its committed length, cut off.
    pub log_tail: Option<LogTailReport>,
}

impl RecoveryReport {
    /// Whether opening found anything to repair or report.
    pub fn is_clean(&self) -> bool {
        self.skipped_manifests.is_empty()
            && self.removed_temp_files.is_empty()
            && self.log_tail.is_none()
    }
}
