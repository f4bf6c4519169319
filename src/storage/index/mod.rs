//! The index handle: the single writer of an index directory (FORMAT.md §11).
//!
//! Writes (`add`, `upsert`, `delete`, `add_new_classes`) are staged: rows go to the
//! active log at once (unsynced), deletes and class records wait in memory. `commit` makes them
//! durable and visible together, as one new manifest version; until then no snapshot and no
//! other process sees them, and a crash loses exactly the uncommitted ones.
//!
//! Concurrency inside the process: every method takes `&self`. Writes serialise on one mutex;
//! [`Index::snapshot`] only clones an `Arc` under a read lock held for that clone, so readers
//! never wait for a commit, a compaction or a garbage collection. Compaction merges outside the
//! writer mutex and takes it only to publish (see `compact.rs`).
//!
//! Failure model: an I/O error part-way through an add, `commit` or a compaction's publish
//! step *poisons* the handle: later writes return [`StorageError::Poisoned`]. The reason is
//! that after a failed write or fsync the state of the page cache is unknown (a retried fsync
//! can report success for data the kernel already dropped), so the only safe continuation is to
//! reopen, which recovers the last committed version from disk. Argument errors (a duplicate id,
//! a wrong shape) are checked before anything is written and never poison.
//!
//! One file per concern: `open` (create, open), `descriptors` (the front door for writes:
//! descriptors in — encode, file under lists, count in classes), `write` (the low-level path:
//! add, upsert and delete encoded rows), `classes` (class records and the class statistics of
//! rows), `commit`, `seal` (log → segment), `compact`
//! (apply the merge policy, publish), `gc`, `recover` (accept the loss of damaged manifests),
//! `build` (a whole index from raw descriptors). The writer's state is in `writer`.

mod accept_loss;
mod build;
mod classes;
mod columns;
mod commit;
mod compact;
mod descriptors;
mod gc;
mod open;
mod seal;
mod stage_rows;
mod writer_state;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use parking_lot::{FairMutex, Mutex, RwLock};

use crate::format::{ModelFile, VectorSpec};
use crate::model::{Model, ModelError};

use super::config::Config;
use super::error::{Result, StorageError};
use super::loaded_version::{IndexModel, VersionState};
use super::lock::DirLock;
use super::recovery_report::{RecoveryReport, SkippedManifest};
use super::snapshot::Snapshot;

pub use build::BuildOptions;
pub use classes::ClassStats;
pub use compact::{
    CompactProgress, CompactProgressFn, CompactionReport, MergeReport, SealedCompaction,
};
pub use descriptors::AddOptions;
pub use gc::GcReport;
pub(crate) use open::check_is_index;
pub use stage_rows::EncodedOptions;
pub(crate) use writer_state::{LogWriter, Pending, WLoc, Writer};

/// The writer handle of an index directory. Dropping it releases the lock and discards
/// uncommitted changes. Its methods are in `storage/index/`, one file per concern (see the
/// module documentation); the search methods are in `search/`.
#[derive(Debug)]
pub struct Index {
    pub(crate) shared: Arc<Shared>,
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub dir: PathBuf,
    pub config: Config,
    pub model: Arc<IndexModel>,
    /// The index's stored-vector setting (fixed at creation, FORMAT.md §7.3).
    pub vectors: Option<VectorSpec>,
    /// The newest committed version: what [`Index::snapshot`] returns.
    pub current: RwLock<Arc<VersionState>>,
    /// Fair, so a compaction's publish step or a GC gets its turn between the writer's calls
    /// instead of waiting for a busy writer to pause.
    pub writer: FairMutex<Writer>,
    /// Held for a whole compaction or garbage collection (one at a time).
    pub compaction: Mutex<()>,
    pub recovery: RecoveryReport,
    /// `recovery.skipped_manifests`, shared with every snapshot of this handle.
    pub skipped: Arc<[SkippedManifest]>,
    /// Every version created by this handle that may still be alive (pinned by snapshots).
    pub versions: Mutex<Vec<Weak<VersionState>>>,
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Index {
    /// The handle over a loaded version: where [`Index::create`] and [`Index::open`] end.
    fn assemble(
        dir: &Path,
        config: Config,
        lock: DirLock,
        state: VersionState,
        next_version: u64,
        log: Option<LogWriter>,
        recovery: RecoveryReport,
    ) -> Index {
        let model = state.model.clone();
        let vectors = state.manifest.vectors;
        let next_auto_id = state.manifest.next_auto_id;
        let state = Arc::new(state);
        let fell_back = (!recovery.skipped_manifests.is_empty())
            .then(|| (recovery.version, recovery.skipped_manifests.clone()));
        let skipped: Arc<[SkippedManifest]> = Arc::from(recovery.skipped_manifests.clone());
        Index {
            shared: Arc::new(Shared {
                dir: dir.to_path_buf(),
                config,
                model,
                vectors,
                current: RwLock::new(state.clone()),
                versions: Mutex::new(vec![Arc::downgrade(&state)]),
                writer: FairMutex::new(Writer {
                    _lock: lock,
                    committed: state,
                    next_version,
                    next_auto_id,
                    log,
                    pending: Pending::default(),
                    poisoned: None,
                    fell_back,
                }),
                compaction: Mutex::new(()),
                recovery,
                skipped,
            }),
        }
    }

    /// The index's directory.
    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// The index's configuration (segment size, compaction policy, retention).
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The model that encodes this index's codes, decoded once per handle (shared with its
    /// snapshots). An error when the stored model file does not decode; the index still opens,
    /// so inspection and verification can report on it.
    pub fn model(&self) -> std::result::Result<&Model, ModelError> {
        self.shared.model.decoded()
    }

    /// The model as stored in the index's model file (ids, code width, stage records).
    pub fn model_file(&self) -> &ModelFile {
        self.shared.model.file()
    }

    /// The vectors every row stores (fixed at creation), if any.
    pub fn vector_spec(&self) -> Option<VectorSpec> {
        self.shared.vectors
    }

    /// What opening the index found and repaired.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.shared.recovery
    }

    /// The newest committed version number.
    pub fn version(&self) -> u64 {
        self.shared.current.read().version()
    }

    /// Pins the newest committed version. Never waits for a writer. Its
    /// [`Snapshot::skipped_manifests`] are this handle's (non-empty when it fell back).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::from_state(
            self.shared.current.read().clone(),
            self.shared.skipped.clone(),
        )
    }

    /// Whether the handle accepts writes: `Err(`[`StorageError::FellBack`]`)` when it opened at
    /// an older version because newer manifests do not read, `Err(`[`StorageError::Poisoned`]`)`
    /// after a failed write. Every write method checks this itself; call it to fail before
    /// expensive preparation (encoding rows, say).
    pub fn check_writable(&self) -> Result<()> {
        self.shared.writer.lock().check_poisoned(&self.shared.dir)
    }

    /// Whether changes were staged since the last commit.
    pub fn has_uncommitted(&self) -> bool {
        self.shared.writer.lock().pending.changed
    }

    pub(crate) fn invalid(&self, argument: &str, detail: impl Into<String>) -> StorageError {
        StorageError::invalid(&self.shared.dir, argument, detail)
    }
}
