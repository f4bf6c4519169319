//! The versions an index directory holds (`codedb versions DIR`), read without any lock.

use std::path::Path;

use serde::Serialize;

use super::error::{Result, StorageError};
use super::layout::list_manifests;
use super::loaded_version::read_manifest;

/// One manifest file of an index directory. The counts are `None` for a manifest that does not
/// read (then `error` says why): what it held is unknown, not zero.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionInfo {
    /// Version number, from the file name.
    pub version: u64,
    /// The manifest's file name.
    pub file: String,
    /// Commit time in milliseconds since the Unix epoch.
    pub created_unix_ms: Option<u64>,
    /// Live rows (sealed segments and the active log).
    pub rows: Option<u64>,
    /// Deleted rows still stored.
    pub deleted: Option<u64>,
    /// Number of sealed segments.
    pub segments: Option<usize>,
    /// Rows in the active log (included in `rows` and `deleted`).
    pub log_rows: Option<u64>,
    /// Number of class-table files (base and deltas).
    pub class_files: Option<usize>,
    /// Why the manifest does not read (`None`: it reads).
    pub error: Option<String>,
}

impl VersionInfo {
    /// True when the manifest does not read.
    pub fn is_damaged(&self) -> bool {
        self.error.is_some()
    }
}

/// Every manifest in `dir`, oldest first. A directory without any manifest is
/// [`StorageError::NotAnIndex`].
pub fn list_versions(dir: &Path) -> Result<Vec<VersionInfo>> {
    if !dir.is_dir() {
        return Err(StorageError::NotAnIndex {
            dir: dir.to_path_buf(),
            detail: "no such directory".into(),
        });
    }
    let manifests = list_manifests(dir)?;
    if manifests.is_empty() {
        return Err(StorageError::NotAnIndex {
            dir: dir.to_path_buf(),
            detail: "no manifest found".into(),
        });
    }
    let mut out = Vec::new();
    for (v, path) in manifests {
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push(match read_manifest(&path, v) {
            Ok((m, log)) => VersionInfo {
                version: v,
                file,
                created_unix_ms: Some(m.created_unix_ms),
                rows: Some(m.live_rows_with(log.as_ref())),
                deleted: Some(m.deleted_rows_with(log.as_ref())),
                segments: Some(m.segments.len()),
                log_rows: Some(log.as_ref().map_or(0, |l| l.rows)),
                class_files: Some(m.class_files.len()),
                error: None,
            },
            Err(e) => VersionInfo {
                version: v,
                file,
                created_unix_ms: None,
                rows: None,
                deleted: None,
                segments: None,
                log_rows: None,
                class_files: None,
                error: Some(e.to_string()),
            },
        });
    }
    Ok(out)
}
