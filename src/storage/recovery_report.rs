//! What opening an index found and repaired: manifests that did not read, temporary files of
//! interrupted commits, and the uncommitted or torn tail cut off the active log; and the record
//! an explicit recovery from damaged manifests leaves (FORMAT.md §11.7).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::layout::RECOVERED_DIR;

/// Layout version of [`RecoveryRecord`] files.
pub const RECOVERY_RECORD_FORMAT: u32 = 1;

/// A manifest that could not be used (one newer than the opened version, for a reader).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedManifest {
    /// Version number the file name claims.
    pub version: u64,
    /// The manifest's file name.
    pub file: String,
    /// Why it could not be used.
    pub error: String,
}

/// What a reader or writer says when it opened `dir` at `version` because newer manifests
/// (`skipped`) do not read: one line per skipped manifest, then what is lost and how to accept
/// it. Empty when nothing was skipped. The CLI prints each line after `codedb: warning: `; the
/// Python package raises it as one `FallbackWarning` — both from this one text, which names
/// `dir` so a sharded index can tell which shard fell back.
pub fn fell_back_warning(dir: &Path, version: u64, skipped: &[SkippedManifest]) -> Vec<String> {
    if skipped.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<String> = skipped
        .iter()
        .map(|s| {
            format!(
                "{}: manifest version {} ({}) does not read: {}",
                dir.display(),
                s.version,
                s.file,
                s.error
            )
        })
        .collect();
    let lost: Vec<String> = skipped.iter().map(|s| s.version.to_string()).collect();
    lines.push(format!(
        "{}: serving version {version}, without the writes of version(s) {}; writers refuse \
         until `codedb recover {} --to-version {version}` accepts the loss (or the damaged file \
         is restored)",
        dir.display(),
        lost.join(", "),
        dir.display()
    ));
    lines
}

/// Bytes found past the active log's committed length, and removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogTailReport {
    /// The log's file name.
    pub log: String,
    /// The length the manifest commits.
    pub committed_len: u64,
    /// The file's length before the cut.
    pub file_len: u64,
    /// Whole, checksum-valid batches past the committed length: written by a commit that never
    /// completed, so never acknowledged.
    pub uncommitted_batches: u64,
    /// Rows in those batches.
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
    /// version, and the writes of the skipped versions are not visible. When this is not
    /// empty the handle refuses every write
    /// ([`StorageError::FellBack`](super::error::StorageError::FellBack)) and repaired nothing
    /// (no temporary file removed, no log tail cut).
    pub skipped_manifests: Vec<SkippedManifest>,
    /// `*.tmp` files of interrupted writes, removed.
    pub removed_temp_files: Vec<String>,
    /// The active log's tail past its committed length, cut off.
    pub log_tail: Option<LogTailReport>,
    /// What [`crate::storage::Index::recover`] set aside before this open (`None` for
    /// [`crate::storage::Index::open`]).
    pub recovered: Option<RecoveryRecord>,
}

/// The record of one explicit recovery (`codedb recover`, [`crate::storage::Index::recover`]),
/// kept as JSON in `DIR/recovered/` beside the manifests it set aside (FORMAT.md §11.7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryRecord {
    /// Version of the record's layout (1).
    pub format: u32,
    /// When the recovery ran, in milliseconds since the Unix epoch.
    pub recovered_unix_ms: u64,
    /// The version whose contents the index keeps: the newest manifest that read.
    pub kept_version: u64,
    /// The manifest the recovery published with the kept version's contents, numbered above
    /// every dropped version so no version number is used twice (`None` when every damaged
    /// manifest was older than the kept version, so nothing newer was lost).
    pub published_version: Option<u64>,
    /// The manifests set aside, oldest first.
    pub dropped: Vec<DroppedManifest>,
}

/// A damaged manifest a recovery set aside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedManifest {
    /// Version number of the dropped manifest.
    pub version: u64,
    /// Its file name in the index directory.
    pub file: String,
    /// Why it did not read.
    pub error: String,
    /// Where it is now, relative to the index directory (`recovered/<file>`).
    pub moved_to: String,
}

impl RecoveryReport {
    /// Whether opening found anything to repair or report.
    pub fn is_clean(&self) -> bool {
        self.skipped_manifests.is_empty()
            && self.removed_temp_files.is_empty()
            && self.log_tail.is_none()
            && self.recovered.is_none()
    }
}

/// Why a recovery record file does not read.
#[derive(Debug, thiserror::Error)]
pub enum RecoveryRecordError {
    /// The file could not be read.
    #[error(transparent)]
    Read(#[from] std::io::Error),
    /// The file is not a JSON recovery record.
    #[error(transparent)]
    Parse(#[from] serde_json::Error),
    /// A record format number this build does not know.
    #[error("unknown record format {0}")]
    UnknownFormat(u32),
}

/// The recovery records of an index directory (none when it has no `recovered/`), each with
/// its path, by file name; a record that does not parse is returned as its error.
pub fn recovery_records(dir: &Path) -> Vec<(PathBuf, Result<RecoveryRecord, RecoveryRecordError>)> {
    let rdir = dir.join(RECOVERED_DIR);
    let Ok(rd) = std::fs::read_dir(&rdir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let n = file_name(p);
            n.starts_with("recovery-") && n.ends_with(".json")
        })
        .map(|p| {
            let r = std::fs::read(&p)
                .map_err(RecoveryRecordError::from)
                .and_then(|b| Ok(serde_json::from_slice::<RecoveryRecord>(&b)?))
                .and_then(|r| {
                    if r.format == RECOVERY_RECORD_FORMAT {
                        Ok(r)
                    } else {
                        Err(RecoveryRecordError::UnknownFormat(r.format))
                    }
                });
            (p, r)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
