//! The index handle: [`Index`], what it shares with every clone of its `Arc` (`Shared`: the
//! directory, the settings fixed at creation, the newest committed version, the writer), and
//! its accessors. Every write method is in a file of its own beside this one (`open.rs`,
//! `add_rows.rs`, `commit.rs`, …; the module documentation lists them).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use parking_lot::{FairMutex, Mutex, RwLock};

use crate::format::{ModelFile, VectorSpec};
use crate::model::{Model, ModelError};

use crate::storage::config::Config;
use crate::storage::error::{Result, StorageError};
use crate::storage::loaded_version::{IndexModel, VersionState};
use crate::storage::lock::DirLock;
use crate::storage::recovery_report::{RecoveryReport, SkippedManifest};
use crate::storage::snapshot::Snapshot;

use super::writer_state::{LogWriter, Pending, Writer};

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
    pub(super) fn assemble(
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
