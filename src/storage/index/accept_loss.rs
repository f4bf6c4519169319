//! Accepting the loss of damaged manifests (FORMAT.md §11.7): the explicit decision that lets
//! writers work again on an index whose newest manifest does not read.
//!
//! Until it is made, readers serve the newest version that reads and say so, and writers refuse
//! ([`StorageError::FellBack`]): a write would build on the older version and garbage
//! collection would remove the files only the damaged manifest names — the deletion bitmaps of
//! the lost version, say — destroying what a restore from backup could still bring back.

use std::io::Write;
use std::path::Path;

use crate::format::{FileId, Manifest};

use super::handle::{Index, now_ms};
use super::open::check_is_index;
use crate::storage::config::Config;
use crate::storage::error::{Result, StorageError};
use crate::storage::layout::{RECOVERED_DIR, list_manifests, manifest_file_name};
use crate::storage::loaded_version::{load_version, read_manifest};
use crate::storage::lock::DirLock;
use crate::storage::publish::{publish, sync_dir};
use crate::storage::recovery_report::{
    DroppedManifest, RECOVERY_RECORD_FORMAT, RecoveryRecord, SkippedManifest,
};

impl Index {
    /// Accepts the loss of every version whose manifest does not read, and opens the index for
    /// writing. `to_version` must be the newest version that reads — the one readers already
    /// serve — so the caller states which version survives. Holding the writer lock, it:
    ///
    /// 1. checks that every file of `to_version` loads;
    /// 2. when damaged manifests are newer than `to_version`, publishes a manifest with
    ///    `to_version`'s contents numbered above every manifest in the directory, so no version
    ///    number is ever used twice;
    /// 3. writes a [`RecoveryRecord`] to `recovered/recovery-<id>.json`;
    /// 4. moves every damaged manifest into `recovered/`, unchanged;
    ///
    /// then opens as [`Index::open`] does, with the record in `recovery().recovered`. Drop any
    /// other handle of the index first (it holds the lock). A crash part-way leaves either the
    /// index as it was or a readable newest version with damaged manifests still beside it,
    /// which a second `recover` sets aside. Automatic ids handed out by the dropped versions may
    /// be handed out again.
    pub fn recover(dir: &Path, to_version: u64, config: Config) -> Result<Index> {
        config.validate(dir)?;
        check_is_index(dir)?;
        let lock = DirLock::acquire(dir, config.lock_wait)?;
        let record = set_aside(dir, to_version, &config)?;
        Index::open_locked(dir, config, lock, Some(record))
    }
}

/// Steps 1-4 of [`Index::recover`], under the lock.
fn set_aside(dir: &Path, to_version: u64, config: &Config) -> Result<RecoveryRecord> {
    let fs = &*config.fs;
    let all = list_manifests(dir)?;
    let max_seen = all.last().map_or(0, |(v, _)| *v);
    let mut newest = None;
    let mut damaged = Vec::new();
    for (v, path) in all {
        match read_manifest(&path, v) {
            Ok(m) => newest = Some(m),
            Err(e) => damaged.push(SkippedManifest::new(v, &path, &e)),
        }
    }
    let Some((manifest, log)) = newest else {
        return Err(StorageError::NotAnIndex {
            dir: dir.to_path_buf(),
            detail: "no manifest reads, so there is no version to recover to".into(),
        });
    };
    let kept = manifest.version;
    let versions = |d: &[SkippedManifest]| {
        d.iter()
            .map(|s| s.version.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if damaged.is_empty() {
        return Err(StorageError::invalid(
            dir,
            "to_version",
            format!("nothing to recover: every manifest reads (the newest is version {kept})"),
        ));
    }
    if to_version != kept {
        return Err(StorageError::invalid(
            dir,
            "to_version",
            format!(
                "{to_version} is not the newest version that reads, {kept}: recovery keeps \
                 version {kept} and sets aside the damaged manifest(s) of version(s) {}",
                versions(&damaged)
            ),
        ));
    }
    let rdir = dir.join(RECOVERED_DIR);
    if let Some(d) = damaged.iter().find(|d| rdir.join(&d.file).exists()) {
        return Err(StorageError::invalid(
            dir,
            "to_version",
            format!(
                "{RECOVERED_DIR}/{} exists already: move it away before recovering",
                d.file
            ),
        ));
    }
    load_version(dir, manifest.clone(), log.clone(), &config.read, false)?;

    let published_version = if damaged.iter().any(|d| d.version > kept) {
        let version = max_seen
            .checked_add(1)
            .ok_or_else(|| StorageError::invalid(dir, "to_version", "version numbers exhausted"))?;
        let m = Manifest {
            file_id: FileId::generate(),
            version,
            created_unix_ms: now_ms(),
            ..manifest
        };
        publish(fs, dir, &manifest_file_name(version), |out, path| {
            m.write_with_log_to(log.as_ref(), out, path)?;
            Ok(())
        })?;
        sync_dir(fs, dir)?;
        Some(version)
    } else {
        None
    };

    std::fs::create_dir_all(&rdir).map_err(StorageError::io(&rdir, "create directory"))?;
    sync_dir(fs, dir)?;
    let record = RecoveryRecord {
        format: RECOVERY_RECORD_FORMAT,
        recovered_unix_ms: now_ms(),
        kept_version: kept,
        published_version,
        dropped: damaged
            .into_iter()
            .map(|d| DroppedManifest {
                moved_to: format!("{RECOVERED_DIR}/{}", d.file),
                version: d.version,
                file: d.file,
                error: d.error,
            })
            .collect(),
    };
    let name = format!("recovery-{}.json", FileId::generate().to_hex());
    publish(fs, &rdir, &name, |out, path| {
        serde_json::to_writer_pretty(&mut *out, &record)
            .map_err(|e| StorageError::io(path, "write")(e.into()))?;
        out.write_all(b"\n")
            .map_err(StorageError::io(path, "write"))?;
        Ok(())
    })?;
    for d in &record.dropped {
        let from = dir.join(&d.file);
        fs.rename(&from, &rdir.join(&d.file))
            .map_err(StorageError::io(&from, "move into recovered/"))?;
    }
    sync_dir(fs, &rdir)?;
    sync_dir(fs, dir)?;
    Ok(record)
}
