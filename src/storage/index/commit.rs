//! Commit: every staged change made durable and visible as one new manifest version
//! (FORMAT.md §11.2), and the version installed for snapshots.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::format::{
    ActiveLogEntry, ClassFileEntry, ClassTable, DeletionBitmap, FileId, FileKind, FileRef,
    Manifest, Schema,
};

use super::handle::{Index, now_ms};
use super::writer_state::{LogWriter, Pending, Writer};
use crate::storage::error::{Result, StorageError};
use crate::storage::layout::{data_file_name, manifest_file_name};
use crate::storage::loaded_version::{SegmentSlot, VersionState};
use crate::storage::log_rows::LogView;
use crate::storage::publish::{publish, sync_dir};

impl Index {
    /// Makes every staged change durable and visible as one new version, and returns its
    /// number (the current one when nothing was staged). When the active log has reached
    /// `config.seal_bytes`, this commit also seals it into an immutable segment.
    ///
    /// On `Ok`, the version is durable: a crash after this returns cannot lose it. On `Err`,
    /// the handle is poisoned; the version may or may not have been published (the error may
    /// come from the final directory fsync) — reopen the index to see which.
    pub fn commit(&self) -> Result<u64> {
        let mut w = self.shared.writer.lock();
        w.check_poisoned(&self.shared.dir)?;
        if !w.pending.changed {
            return Ok(w.committed.version());
        }
        let r = self.commit_inner(&mut w, false);
        if let Err(e) = &r {
            w.poison(e);
        }
        r
    }

    /// [`Index::commit`], and the active log is sealed into a segment whatever its size (if it
    /// holds rows): a bulk load ends with its rows in one sorted, immutable segment — the layout
    /// scans are fastest on (fast-scan blocks for pq4, rows grouped by list) — instead of in a
    /// log held in memory until `config.seal_bytes` is reached. Does nothing, and returns the
    /// current version, when nothing is staged and there is no active log.
    pub fn commit_sealed(&self) -> Result<u64> {
        let mut w = self.shared.writer.lock();
        w.check_poisoned(&self.shared.dir)?;
        if !w.pending.changed && w.log.is_none() {
            return Ok(w.committed.version());
        }
        let r = self.commit_inner(&mut w, true);
        if let Err(e) = &r {
            w.poison(e);
        }
        r
    }

    /// The commit protocol (FORMAT.md §11.2): every new file written and synced, then the
    /// directory, then the manifest (the commit point), then memory. Each numbered step below
    /// is one kind of staged change.
    fn commit_inner(&self, w: &mut Writer, force_seal: bool) -> Result<u64> {
        let dir = &self.shared.dir;
        let fs = &*self.shared.config.fs;
        let old = w.committed.clone();
        let mut slots = old.segments.clone();

        // 1. Deletions in sealed segments: one new bitmap per touched segment.
        let mut dir_dirty =
            self.commit_segment_deletes(&old, &w.pending.segment_deletes, &mut slots)?;

        // 2. The active log: seal it, or fsync it (and its bitmap if rows were deleted).
        // The schema this commit publishes: the sealed segment stores its columns.
        let schema = w.schema().clone();
        let log_step = match w.log.as_mut() {
            Some(log) => self.commit_log(log, force_seal, &schema, &mut slots)?,
            None => LogStep::default(),
        };
        dir_dirty |= log_step.dir_dirty;
        let LogStep {
            seal,
            log_view,
            log_deletions,
            ..
        } = log_step;

        // 3. Class records: a base table if there is none yet, else a delta of the base.
        let mut class_files = old.manifest.class_files.clone();
        let mut classes = old.classes.clone();
        if let Some(p) = &w.pending.classes {
            let (file, folded) = self.commit_classes(&old, p)?;
            if !file.delta {
                class_files.clear();
            }
            class_files.push(file);
            classes = Some(Arc::new(folded));
            dir_dirty = true;
        }

        // 4. Every new file's directory entry is durable before the manifest names it.
        if dir_dirty {
            sync_dir(fs, dir)?;
        }

        // 5. The manifest: the commit point.
        let manifest = Manifest {
            file_id: FileId::generate(),
            version: w.next_version,
            created_unix_ms: now_ms(),
            next_auto_id: w.next_auto_id,
            model: old.manifest.model.clone(),
            segments: slots.iter().map(|s| s.entry.clone()).collect(),
            class_files,
            vectors: old.manifest.vectors,
            attributes: schema,
        };
        self.publish_manifest(&manifest, log_view.as_ref().map(|l| &l.entry))?;

        // Published: update memory.
        let state = VersionState {
            dir: dir.clone(),
            manifest,
            model: old.model.clone(),
            segments: slots,
            log: log_view,
            class_means: old.class_means_for(&classes),
            classes,
        };
        if seal {
            w.log = None;
        } else if let Some(log) = w.log.as_mut() {
            log.committed_len = log.len;
            log.new_file = false;
            log.deletions_dirty = false;
            if log_deletions.is_some() {
                log.committed_deletions = log_deletions;
            }
        }
        w.pending = Pending::default();
        w.next_version += 1;
        Ok(self.install(w, state))
    }

    /// Step 1 of a commit: the staged deletes of sealed segments' rows, grouped by segment,
    /// each touched segment getting a new bitmap (its old bits and the new ones) in `slots`.
    /// Returns whether a file was written (the directory needs a sync).
    fn commit_segment_deletes(
        &self,
        old: &VersionState,
        deletes: &HashSet<u64>,
        slots: &mut [SegmentSlot],
    ) -> Result<bool> {
        let mut by_slot: HashMap<usize, Vec<u64>> = HashMap::new();
        for &id in deletes {
            let (slot, row) = old.find_in_segments(id, |_| false)?.ok_or_else(|| {
                self.invalid(
                    "delete",
                    format!("internal: staged delete of id {id} matches no segment row"),
                )
            })?;
            by_slot.entry(slot).or_default().push(row);
        }
        let mut dir_dirty = false;
        for (slot, rows) in by_slot {
            let s = &mut slots[slot];
            let (bm, fref) = self.write_bitmap(
                s.entry.segment.id,
                s.entry.rows,
                s.deletions.as_deref(),
                &rows,
            )?;
            s.entry.deleted = bm.deleted_count();
            s.entry.deletions = Some(fref);
            s.deletions = Some(Arc::new(bm));
            dir_dirty = true;
        }
        Ok(dir_dirty)
    }

    /// Step 2 of a commit: the active log sealed into a segment (pushed on `slots`) when it is
    /// forced, has reached `config.seal_bytes` or holds no live row; else its appended bytes
    /// fsynced and, if rows of it were deleted, a new bitmap written (FORMAT.md §10.3-10.4).
    fn commit_log(
        &self,
        log: &mut LogWriter,
        force_seal: bool,
        schema: &Schema,
        slots: &mut Vec<SegmentSlot>,
    ) -> Result<LogStep> {
        let mut step = LogStep::default();
        if force_seal || log.len >= self.shared.config.seal_bytes || log.deleted_count == log.rows {
            step.seal = true;
            if let Some(slot) = self.seal(log, schema)? {
                slots.push(slot);
                step.dir_dirty = true;
            }
            return Ok(step);
        }
        if log.len > log.committed_len {
            log.handle
                .sync()
                .map_err(StorageError::io(&log.path, "fsync"))?;
        }
        step.dir_dirty |= log.new_file;
        let deletions = if log.deletions_dirty {
            let rows = bit_rows(&log.deleted);
            let (bm, fref) = self.write_bitmap(log.file.id, log.rows, None, &rows)?;
            step.dir_dirty = true;
            let d = (fref, Arc::new(bm));
            step.log_deletions = Some(d.clone());
            Some(d)
        } else {
            log.committed_deletions.clone()
        };
        step.log_view = Some(LogView {
            entry: ActiveLogEntry {
                log: log.file.clone(),
                committed_len: log.len,
                rows: log.rows,
                deleted: log.deleted_count,
                deletions: deletions.as_ref().map(|d| d.0.clone()),
            },
            meta: log.meta,
            batches: log.batches.clone(),
            deletions: deletions.map(|d| d.1),
        });
        Ok(step)
    }

    /// Step 3 of a commit: the staged class records `p` written as a delta of the base table
    /// when the version has one, else as the first base table (FORMAT.md §5). Returns the new
    /// file's manifest entry and the table with the records folded in.
    fn commit_classes(
        &self,
        old: &VersionState,
        p: &ClassTable,
    ) -> Result<(ClassFileEntry, ClassTable)> {
        let dir = &self.shared.dir;
        let fs = &*self.shared.config.fs;
        let id = FileId::generate();
        let name = data_file_name(FileKind::ClassTable, id);
        // The file written: the delta, or for a first table the base with the records folded in.
        let (delta, folded) = match (&old.classes, old.manifest.class_files.first()) {
            (Some(base), Some(base_file)) => {
                let delta = ClassTable {
                    file_id: id,
                    dim: p.dim,
                    delta_of: Some(base_file.file.id),
                    classes: p.classes.clone(),
                };
                let mut folded = (**base).clone();
                folded.fold(&delta, &dir.join(&name))?;
                (Some(delta), folded)
            }
            _ => {
                let mut base = ClassTable {
                    file_id: id,
                    dim: p.dim,
                    delta_of: None,
                    classes: Vec::new(),
                };
                let mut delta = p.clone();
                delta.delta_of = Some(id);
                base.fold(&delta, &dir.join(&name))?;
                (None, base)
            }
        };
        let written = delta.as_ref().unwrap_or(&folded);
        publish(fs, dir, &name, |out, path| {
            written.write_to(out, path)?;
            Ok(())
        })?;
        let entry = ClassFileEntry {
            file: FileRef { id, name },
            delta: delta.is_some(),
        };
        Ok((entry, folded))
    }

    /// Writes the manifest (temporary name, fsync, read-only, rename) and syncs the directory.
    pub(crate) fn publish_manifest(
        &self,
        manifest: &Manifest,
        log: Option<&ActiveLogEntry>,
    ) -> Result<()> {
        let fs = &*self.shared.config.fs;
        let dir = &self.shared.dir;
        publish(
            fs,
            dir,
            &manifest_file_name(manifest.version),
            |out, path| {
                manifest.write_with_log_to(log, out, path)?;
                Ok(())
            },
        )?;
        sync_dir(fs, dir)
    }

    /// Makes `state` the committed version (writer and snapshots) and returns its number.
    pub(crate) fn install(&self, w: &mut Writer, state: VersionState) -> u64 {
        let version = state.manifest.version;
        let state = Arc::new(state);
        {
            let mut versions = self.shared.versions.lock();
            versions.retain(|v| v.strong_count() > 0);
            versions.push(Arc::downgrade(&state));
        }
        w.committed = state.clone();
        *self.shared.current.write() = state;
        version
    }

    /// Publishes a deletion bitmap for `segment` (`rows` rows): `base`'s bits plus `new_rows`.
    pub(crate) fn write_bitmap(
        &self,
        segment: FileId,
        rows: u64,
        base: Option<&DeletionBitmap>,
        new_rows: &[u64],
    ) -> Result<(DeletionBitmap, FileRef)> {
        let id = FileId::generate();
        let mut bm = match base {
            Some(b) => {
                let mut b = b.clone();
                b.file_id = id;
                b
            }
            None => DeletionBitmap::new(id, segment, rows),
        };
        for &r in new_rows {
            bm.delete(r);
        }
        let name = data_file_name(FileKind::DeletionBitmap, id);
        publish(
            &*self.shared.config.fs,
            &self.shared.dir,
            &name,
            |out, path| {
                bm.write_to(out, path)?;
                Ok(())
            },
        )?;
        Ok((bm, FileRef { id, name }))
    }
}

/// The row numbers whose bit is set.
fn bit_rows(words: &[u64]) -> Vec<u64> {
    let mut out = Vec::new();
    for (k, &w) in words.iter().enumerate() {
        let mut w = w;
        while w != 0 {
            let b = w.trailing_zeros() as u64;
            out.push(k as u64 * 64 + b);
            w &= w - 1;
        }
    }
    out
}

/// What step 2 of a commit did to the active log.
#[derive(Default)]
struct LogStep {
    /// The log was sealed into a segment (the writer drops it once the commit is published).
    seal: bool,
    /// The committed log as the new version reads it (none when sealed or absent).
    log_view: Option<LogView>,
    /// A new deletion bitmap of the log, which becomes its committed one once published.
    log_deletions: Option<(FileRef, Arc<DeletionBitmap>)>,
    /// A file was written or created: the directory needs a sync.
    dir_dirty: bool,
}
