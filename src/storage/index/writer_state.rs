//! The writer's state: the committed version it builds on, the active log it appends to, and
//! the changes staged since the last commit.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::format::{ClassTable, DeletionBitmap, FileRef, LogMeta};

use crate::storage::error::{Result, StorageError};
use crate::storage::fs::WriteFile;
use crate::storage::loaded_version::VersionState;
use crate::storage::lock::DirLock;
use crate::storage::log_rows::{LogBatchEntry, find_live};
use crate::storage::recovery_report::SkippedManifest;

/// A live row as the writer sees it (committed state plus uncommitted changes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WLoc {
    /// Row `row` of the committed version's segment `slot`.
    Segment {
        slot: usize,
        row: u64,
    },
    Log(u64),
}

/// The active log as the writer holds it: the file open for appending and every row, committed
/// or not.
pub(crate) struct LogWriter {
    pub file: FileRef,
    pub path: PathBuf,
    pub handle: Box<dyn WriteFile>,
    pub meta: LogMeta,
    pub batches: Vec<Arc<LogBatchEntry>>,
    pub rows: u64,
    /// Bytes written (committed or not).
    pub len: u64,
    pub committed_len: u64,
    /// One bit per row: deleted (committed or not).
    pub deleted: Vec<u64>,
    pub deleted_count: u64,
    /// The bitmap file of the committed version, if any.
    pub committed_deletions: Option<(FileRef, Arc<DeletionBitmap>)>,
    pub deletions_dirty: bool,
    /// Created since the last commit: its directory entry is not yet durable.
    pub new_file: bool,
}

impl std::fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter")
            .field("file", &self.file.name)
            .field("rows", &self.rows)
            .field("len", &self.len)
            .field("committed_len", &self.committed_len)
            .finish()
    }
}

impl LogWriter {
    pub(crate) fn is_deleted(&self, row: u64) -> bool {
        self.deleted
            .get((row / 64) as usize)
            .is_some_and(|w| w >> (row % 64) & 1 == 1)
    }

    pub(super) fn delete(&mut self, row: u64) {
        if let Some(w) = self.deleted.get_mut((row / 64) as usize)
            && *w >> (row % 64) & 1 == 0
        {
            *w |= 1 << (row % 64);
            self.deleted_count += 1;
            self.deletions_dirty = true;
        }
    }

    pub(super) fn find_live(&self, id: u64) -> Option<u64> {
        find_live(&self.batches, id, |r| self.is_deleted(r))
    }
}

/// Changes staged since the last commit (besides the log rows).
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// Ids of sealed-segment rows deleted since the last commit (resolved to rows at commit,
    /// against whatever segments hold them then, so a compaction in between is harmless).
    pub segment_deletes: HashSet<u64>,
    /// Class records added since the last commit, merged per class id.
    pub classes: Option<ClassTable>,
    /// The schema with the columns added since the last commit (`Index::add_column`).
    pub schema: Option<crate::format::Schema>,
    pub changed: bool,
}

#[derive(Debug)]
pub(crate) struct Writer {
    pub(super) _lock: DirLock,
    pub committed: Arc<VersionState>,
    /// Number of the next manifest (past every manifest file seen, readable or not).
    pub next_version: u64,
    pub next_auto_id: u64,
    pub log: Option<LogWriter>,
    pub pending: Pending,
    /// Set by the first failed write: its message (see [`StorageError::Poisoned`]).
    pub poisoned: Option<String>,
    /// `(opened version, newer manifests that do not read)` when the handle fell back: then it
    /// refuses every write.
    pub fell_back: Option<(u64, Vec<SkippedManifest>)>,
}

impl Writer {
    /// The attribute schema writes are checked against: the committed one, with the columns
    /// added since.
    pub(crate) fn schema(&self) -> &crate::format::Schema {
        self.pending
            .schema
            .as_ref()
            .unwrap_or(&self.committed.manifest.attributes)
    }

    /// Refuses a write on a handle that fell back from damaged manifests ([`StorageError::FellBack`])
    /// or that an earlier failure poisoned ([`StorageError::Poisoned`]).
    pub(crate) fn check_poisoned(&self, dir: &Path) -> Result<()> {
        if let Some((version, skipped)) = &self.fell_back {
            return Err(StorageError::FellBack {
                dir: dir.to_path_buf(),
                version: *version,
                skipped: skipped.clone(),
            });
        }
        match &self.poisoned {
            Some(cause) => Err(StorageError::Poisoned {
                dir: dir.to_path_buf(),
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }

    pub(crate) fn poison(&mut self, e: &StorageError) {
        if self.poisoned.is_none() {
            self.poisoned = Some(e.to_string());
        }
    }

    /// Where the live row `id` is, counting uncommitted changes.
    pub(super) fn find(&self, id: u64) -> Result<Option<WLoc>> {
        let segs = self
            .committed
            .find_in_segments(id, |x| self.pending.segment_deletes.contains(&x))?;
        if let Some((slot, row)) = segs {
            return Ok(Some(WLoc::Segment { slot, row }));
        }
        Ok(self
            .log
            .as_ref()
            .and_then(|l| l.find_live(id))
            .map(WLoc::Log))
    }
}
