//! The versions an index directory holds (`codedb versions DIR`), read without any lock.

use std::path::Path;

use serde::Serialize;

use crate::format::Manifest;

use super::error::Result;
use super::layout::list_manifests;

/// One manifest file of an index directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionInfo {
    pub version: u64,
    pub file: String,
    /// `None` when the manifest does not read (then `error` says why).
    pub created_unix_ms: Option<u64>,
    /// Live rows (sealed segments and the active log).
    pub rows: u64,
    /// Deleted rows still stored.
    pub deleted: u64,
    pub segments: usize,
    /// Rows in the active log (included in `rows` and `deleted`).
    pub log_rows: u64,
    pub class_files: usize,
    pub error: Option<String>,
}

/// Every manifest in `dir`, oldest first.
pub fn list_versions(dir: &Path) -> Result<Vec<VersionInfo>> {
    let mut out = Vec::new();
    for (v, path) in list_manifests(dir)? {
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push(match Manifest::open_with_log(&path) {
            Ok((m, log)) => VersionInfo {
                version: v,
                file,
                created_unix_ms: Some(m.created_unix_ms),
                rows: m.live_rows_with(log.as_ref()),
                deleted: m.deleted_rows_with(log.as_ref()),
                segments: m.segments.len(),
                log_rows: log.as_ref().map_or(0, |l| l.rows),
                class_files: m.class_files.len(),
                error: (m.version != v)
                    .then(|| format!("file name says version {v}, contents say {}", m.version)),
            },
            Err(e) => VersionInfo {
                version: v,
                file,
                created_unix_ms: None,
                rows: 0,
                deleted: 0,
                segments: 0,
                log_rows: 0,
                class_files: 0,
                error: Some(e.to_string()),
            },
        });
    }
    Ok(out)
}
