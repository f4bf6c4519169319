//! Garbage collection (FORMAT.md §11.5): remove the files that no retained version needs.
//!
//! Retained versions: the newest `retention.keep_versions`, every version younger than
//! `retention.keep_for`, every version a snapshot of this process still pins, and the
//! committed one. Retained manifests and every file they name are kept, as are the writer's
//! active log (it may hold staged rows no manifest names yet), the `LOCK` file and any file
//! whose name is not a codedb name. Everything else — older manifests, segments, bitmaps,
//! class files and logs they alone named, `*.tmp` leftovers — is unlinked: manifests first
//! (so a crash part-way never leaves a manifest naming a removed file), then the rest.
//!
//! A manifest that does not read might name any file, so while one is in the directory GC
//! removes nothing ([`StorageError::DamagedManifest`]) until it is restored or set aside by
//! [`Index::recover`].
//!
//! GC holds the compaction lock and the writer mutex, so it never races a commit or a merge.

use std::collections::HashSet;

use serde::Serialize;

use crate::format::Manifest;

use super::handle::{Index, now_ms};
use super::writer_state::Writer;
use crate::storage::error::{Result, StorageError};
use crate::storage::layout::{
    LOCK_FILE, TMP_SUFFIX, manifest_file_name, parse_data_file_name, parse_manifest_file_name,
};
use crate::storage::loaded_version::read_manifest;
use crate::storage::publish::sync_dir;
use crate::storage::recovery_report::SkippedManifest;

/// What a garbage collection kept and removed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GcReport {
    /// Versions retained, newest first.
    pub kept_versions: Vec<u64>,
    /// Files removed.
    pub removed: Vec<String>,
    /// Bytes of the files removed.
    pub removed_bytes: u64,
}

impl Index {
    /// Removes every file that no retained version needs (see the module documentation).
    pub fn gc(&self) -> Result<GcReport> {
        let _guard = self.shared.compaction.lock();
        let w = self.shared.writer.lock();
        w.check_poisoned(&self.shared.dir)?;
        self.gc_locked(&w)
    }

    pub(crate) fn gc_locked(&self, w: &Writer) -> Result<GcReport> {
        let dir = &self.shared.dir;
        let fs = &*self.shared.config.fs;
        let retention = self.shared.config.retention;
        let mut files = Vec::new();
        for e in std::fs::read_dir(dir).map_err(StorageError::io(dir, "list directory"))? {
            let e = e.map_err(StorageError::io(dir, "list directory"))?;
            let name = e.file_name().to_string_lossy().into_owned();
            let len = e.metadata().map(|m| m.len()).unwrap_or(0);
            files.push((name, len));
        }
        let mut valid: Vec<(u64, Manifest, Option<crate::format::ActiveLogEntry>)> = Vec::new();
        let mut unreadable = Vec::new();
        for (name, _) in &files {
            if let Some(v) = parse_manifest_file_name(name) {
                let path = dir.join(name);
                match read_manifest(&path, v) {
                    Ok((m, log)) => valid.push((v, m, log)),
                    Err(e) => unreadable.push(SkippedManifest::new(v, &path, &e)),
                }
            }
        }
        if !unreadable.is_empty() {
            unreadable.sort_by_key(|s| s.version);
            return Err(StorageError::DamagedManifest {
                dir: dir.clone(),
                version: w.committed.version(),
                damaged: unreadable,
            });
        }
        valid.sort_by_key(|b| std::cmp::Reverse(b.0));
        let pinned: HashSet<u64> = self
            .shared
            .versions
            .lock()
            .iter()
            .filter_map(|v| v.upgrade().map(|s| s.version()))
            .collect();
        let committed = w.committed.version();
        let now = now_ms();
        let keep_ms = retention.keep_for.as_millis() as u64;
        let mut keep_names: HashSet<String> = HashSet::new();
        keep_names.insert(LOCK_FILE.to_string());
        if let Some(l) = &w.log {
            keep_names.insert(l.file.name.clone());
        }
        let mut kept_versions = Vec::new();
        let mut drop_manifests = Vec::new();
        for (i, (v, m, log)) in valid.iter().enumerate() {
            let retained = i < retention.keep_versions
                || now.saturating_sub(m.created_unix_ms) < keep_ms
                || pinned.contains(v)
                || *v >= committed;
            if !retained {
                drop_manifests.push(manifest_file_name(*v));
                continue;
            }
            kept_versions.push(*v);
            keep_names.insert(manifest_file_name(*v));
            keep_names.insert(m.model.name.clone());
            for s in &m.segments {
                keep_names.insert(s.segment.name.clone());
                if let Some(d) = &s.deletions {
                    keep_names.insert(d.name.clone());
                }
            }
            for c in &m.class_files {
                keep_names.insert(c.file.name.clone());
            }
            if let Some(l) = log {
                keep_names.insert(l.log.name.clone());
                if let Some(d) = &l.deletions {
                    keep_names.insert(d.name.clone());
                }
            }
        }
        let size = |n: &str| files.iter().find(|f| f.0 == n).map_or(0, |f| f.1);
        let mut report = GcReport {
            kept_versions,
            ..GcReport::default()
        };
        let remove = |name: &str, report: &mut GcReport| -> Result<()> {
            let path = dir.join(name);
            match fs.remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(StorageError::io(&path, "remove")(e)),
            }
            report.removed.push(name.to_string());
            report.removed_bytes += size(name);
            Ok(())
        };
        for name in &drop_manifests {
            remove(name, &mut report)?;
        }
        if !drop_manifests.is_empty() {
            sync_dir(fs, dir)?;
        }
        for (name, _) in &files {
            let garbage = name.ends_with(TMP_SUFFIX)
                || (parse_data_file_name(name).is_some() && !keep_names.contains(name));
            if garbage {
                remove(name, &mut report)?;
            }
        }
        if !report.removed.is_empty() {
            sync_dir(fs, dir)?;
        }
        Ok(report)
    }
}
