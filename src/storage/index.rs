//! The index handle: the single writer of an index directory (FORMAT.md §11).
//!
//! Writes (`add_codes`, `upsert_codes`, `delete`, `add_class`) are staged: rows go to the
//! active log at once (unsynced), deletes and class records wait in memory. `commit` makes them
//! durable and visible together, as one new manifest version; until then no snapshot and no
//! other process sees them, and a crash loses exactly the uncommitted ones.
//!
//! Concurrency inside the process: every method takes `&self`. Writes serialise on one mutex;
//! [`Index::snapshot`] only clones an `Arc` under a read lock held for that clone, so readers
//! never wait for a commit, a compaction or a garbage collection. Compaction merges outside the
//! writer mutex and takes it only to publish (see `compaction.rs`).
//!
//! Failure model: an I/O error part-way through `add_codes`, `commit` or a compaction's publish
//! step *poisons* the handle: later writes return [`StorageError::Poisoned`]. The reason is
//! that after a failed write or fsync the state of the page cache is unknown (a retried fsync
//! can report success for data the kernel already dropped), so the only safe continuation is to
//! reopen, which recovers the last committed version from disk. Argument errors (a duplicate id,
//! a wrong shape) are checked before anything is written and never poison.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use parking_lot::{FairMutex, Mutex, RwLock};

use crate::format::{
    ActiveLogEntry, ClassFileEntry, ClassRecord, ClassTable, DeletionBitmap, FileId, FileKind,
    FileRef, LogBatch, LogMeta, Manifest, ModelFile, SegmentEntry, SegmentLayout, SegmentWriter,
    VectorBuf, VectorSpec,
    append_log::{self, LOG_DATA_START, MAX_BATCH_ROWS, NO_LABEL, NO_LIST},
    class_table::class_name_problem,
};

use super::class_accounting::ClassStats;
use super::config::{Config, CreateOptions};
use super::error::{Result, StorageError};
use super::fs::WriteFile;
use super::layout::{TMP_SUFFIX, data_file_name, list_manifests, manifest_file_name};
use super::lock::DirLock;
use super::log_rows::{LogBatchEntry, LogView, find_live};
use super::open_segment::OpenSegment;
use super::publish::{publish, sync_dir};
use super::recovery::{LogTailReport, RecoveryRecord, RecoveryReport, SkippedManifest};
use super::row_batch::{CheckedRows, RowBatch, check_batch};
use super::snapshot::Snapshot;
use super::version::{SegmentSlot, VersionState, choose_manifest, load_version};

/// The writer handle of an index directory. Dropping it releases the lock and discards
/// uncommitted changes.
#[derive(Debug)]
pub struct Index {
    pub(crate) shared: Arc<Shared>,
}

#[derive(Debug)]
pub(crate) struct Shared {
    pub dir: PathBuf,
    pub config: Config,
    pub model: Arc<ModelFile>,
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
    path: PathBuf,
    handle: Box<dyn WriteFile>,
    pub meta: LogMeta,
    pub batches: Vec<Arc<LogBatchEntry>>,
    pub rows: u64,
    /// Bytes written (committed or not).
    pub len: u64,
    pub committed_len: u64,
    /// One bit per row: deleted (committed or not).
    deleted: Vec<u64>,
    deleted_count: u64,
    /// The bitmap file of the committed version, if any.
    committed_deletions: Option<(FileRef, Arc<DeletionBitmap>)>,
    deletions_dirty: bool,
    /// Created since the last commit: its directory entry is not yet durable.
    new_file: bool,
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

    fn delete(&mut self, row: u64) {
        if let Some(w) = self.deleted.get_mut((row / 64) as usize)
            && *w >> (row % 64) & 1 == 0
        {
            *w |= 1 << (row % 64);
            self.deleted_count += 1;
            self.deletions_dirty = true;
        }
    }

    fn find_live(&self, id: u64) -> Option<u64> {
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
    pub changed: bool,
}

#[derive(Debug)]
pub(crate) struct Writer {
    _lock: DirLock,
    pub committed: Arc<VersionState>,
    /// Number of the next manifest (past every manifest file seen, readable or not).
    pub next_version: u64,
    pub next_auto_id: u64,
    pub log: Option<LogWriter>,
    pub pending: Pending,
    pub poisoned: Option<String>,
    /// `(opened version, newer manifests that do not read)` when the handle fell back: then it
    /// refuses every write.
    pub fell_back: Option<(u64, Vec<SkippedManifest>)>,
}

impl Writer {
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
    fn find(&self, id: u64) -> Result<Option<WLoc>> {
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

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Rows per chunk when streaming a sealed segment.
const SEAL_CHUNK: usize = 64 * 1024;

impl Index {
    /// Creates an index in `dir` (created if missing; it must not hold an index yet) with
    /// `model` as its encoder, and commits version 1 (empty). It stores no vectors.
    pub fn create(dir: &Path, model: &ModelFile, config: Config) -> Result<Index> {
        Index::create_with(dir, model, &CreateOptions::default(), config)
    }

    /// [`Index::create`] with settings fixed for the life of the index (stored vectors).
    pub fn create_with(
        dir: &Path,
        model: &ModelFile,
        options: &CreateOptions,
        config: Config,
    ) -> Result<Index> {
        config.validate(dir)?;
        if let Some(v) = options.store_vectors
            && v.dim == 0
        {
            return Err(StorageError::invalid(
                dir,
                "store_vectors",
                "dimension must be at least 1",
            ));
        }
        std::fs::create_dir_all(dir).map_err(StorageError::io(dir, "create directory"))?;
        let lock = DirLock::acquire(dir, config.lock_wait)?;
        if !list_manifests(dir)?.is_empty() {
            return Err(StorageError::AlreadyExists {
                dir: dir.to_path_buf(),
            });
        }
        let fs = &*config.fs;
        let removed_temp_files = remove_temp_files(&config, dir)?;
        let model_name = data_file_name(FileKind::Model, model.model_id);
        let model_path = dir.join(&model_name);
        if model_path.exists() {
            // Left by an earlier create that crashed before its manifest: nothing refers to it.
            fs.remove_file(&model_path)
                .map_err(StorageError::io(&model_path, "remove"))?;
        }
        publish(fs, dir, &model_name, |out, path| {
            model.write_to(out, path)?;
            Ok(())
        })?;
        sync_dir(fs, dir)?;
        let manifest = Manifest {
            file_id: FileId::generate(),
            version: 1,
            created_unix_ms: now_ms(),
            next_auto_id: 0,
            model: FileRef {
                id: model.model_id,
                name: model_name,
            },
            segments: Vec::new(),
            class_files: Vec::new(),
            vectors: options.store_vectors,
        };
        publish(fs, dir, &manifest_file_name(1), |out, path| {
            manifest.write_to(out, path)?;
            Ok(())
        })?;
        sync_dir(fs, dir)?;
        let state = VersionState {
            dir: dir.to_path_buf(),
            manifest,
            model: Arc::new(model.clone()),
            segments: Vec::new(),
            log: None,
            classes: None,
        };
        let recovery = RecoveryReport {
            version: 1,
            removed_temp_files,
            ..RecoveryReport::default()
        };
        Ok(Index::assemble(dir, config, lock, state, 2, None, recovery))
    }

    /// Opens the index in `dir` for writing: takes the lock, picks the newest manifest that
    /// reads, removes temporary files of interrupted writes, and cuts off the active log's tail
    /// past its committed length. What it found is in [`Index::recovery`].
    ///
    /// When newer manifests do not read, the handle *falls back*: it opens at the newest
    /// version that reads, lists the others in `recovery().skipped_manifests`, repairs nothing,
    /// and refuses every write with [`StorageError::FellBack`] (its snapshots still read).
    /// [`Index::recover`] accepts the loss explicitly. A directory without a manifest is
    /// refused before anything is created in it.
    pub fn open(dir: &Path, config: Config) -> Result<Index> {
        config.validate(dir)?;
        check_is_index(dir)?;
        let lock = DirLock::acquire(dir, config.lock_wait)?;
        Index::open_locked(dir, config, lock, None)
    }

    /// [`Index::open`] once the lock is held; `recovered` is what [`Index::recover`] just did.
    pub(crate) fn open_locked(
        dir: &Path,
        config: Config,
        lock: DirLock,
        recovered: Option<RecoveryRecord>,
    ) -> Result<Index> {
        let choice = choose_manifest(dir)?;
        let Some((_, manifest, log_entry)) = choice.newest else {
            return Err(StorageError::NotAnIndex {
                dir: dir.to_path_buf(),
                detail: match choice.skipped.first() {
                    Some(s) => format!("no manifest reads (newest: {})", s.error),
                    None => "no manifest found".into(),
                },
            });
        };
        // A fallen-back handle changes nothing: the log bytes past this version's committed
        // length may be rows a skipped manifest committed.
        let fell_back = !choice.skipped.is_empty();
        let removed_temp_files = if fell_back {
            Vec::new()
        } else {
            remove_temp_files(&config, dir)?
        };
        let loaded = load_version(dir, manifest, log_entry, &config.read, true)?;
        let state = loaded.state;
        let fs = &*config.fs;
        let mut log_tail = None;
        let log = match &state.log {
            None => None,
            Some(view) => {
                let path = dir.join(&view.entry.log.name);
                let mut handle = fs
                    .open_append(&path)
                    .map_err(StorageError::io(&path, "open for append"))?;
                if let Some((tail, file_len)) = &loaded.log_tail
                    && tail.bytes > 0
                    && !fell_back
                {
                    handle
                        .truncate(view.entry.committed_len)
                        .map_err(StorageError::io(&path, "truncate torn tail"))?;
                    handle.sync().map_err(StorageError::io(&path, "fsync"))?;
                    log_tail = Some(LogTailReport {
                        log: view.entry.log.name.clone(),
                        committed_len: view.entry.committed_len,
                        file_len: *file_len,
                        uncommitted_batches: tail.complete_batches,
                        uncommitted_rows: tail.complete_rows,
                        torn_bytes: tail.torn_bytes,
                        torn_reason: tail.torn_reason.clone(),
                    });
                }
                let rows = view.entry.rows;
                let mut deleted = vec![0u64; rows.div_ceil(64) as usize];
                let mut deleted_count = 0;
                if let Some(bm) = &view.deletions {
                    for (w, b) in deleted.iter_mut().zip(bm.words()) {
                        *w = *b;
                        deleted_count += b.count_ones() as u64;
                    }
                }
                Some(LogWriter {
                    file: view.entry.log.clone(),
                    path,
                    handle,
                    meta: view.meta,
                    batches: view.batches.clone(),
                    rows,
                    len: view.entry.committed_len,
                    committed_len: view.entry.committed_len,
                    deleted,
                    deleted_count,
                    committed_deletions: view.entry.deletions.clone().zip(view.deletions.clone()),
                    deletions_dirty: false,
                    new_file: false,
                })
            }
        };
        let recovery = RecoveryReport {
            version: state.version(),
            skipped_manifests: choice.skipped,
            removed_temp_files,
            log_tail,
            recovered,
        };
        let next_version = choice.max_version_seen.max(state.version()) + 1;
        Ok(Index::assemble(
            dir,
            config,
            lock,
            state,
            next_version,
            log,
            recovery,
        ))
    }

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

    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The model that encodes this index's codes.
    pub fn model(&self) -> &ModelFile {
        &self.shared.model
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

    /// Adds rows of already-encoded codes (`code_bytes` per row, row-major), with optional
    /// user ids and class labels: [`Index::add_rows`] without list ids or vectors.
    pub fn add_codes(
        &self,
        codes: &[u8],
        ids: Option<&[u64]>,
        labels: Option<&[u32]>,
    ) -> Result<Vec<u64>> {
        self.add_codes_with_classes(codes, ids, labels, &[])
    }

    /// [`Index::add_codes`] and [`Index::add_class`] as one step: the rows and the class
    /// records (typically count/sum deltas of the rows' classes, so a labelled add updates the
    /// class table in the same commit) are all checked before anything is staged, so on error
    /// neither is. An empty `classes` is plain `add_codes`.
    pub fn add_codes_with_classes(
        &self,
        codes: &[u8],
        ids: Option<&[u64]>,
        labels: Option<&[u32]>,
        classes: &[ClassRecord],
    ) -> Result<Vec<u64>> {
        self.add_rows_with_classes(
            &RowBatch {
                ids,
                labels,
                ..RowBatch::new(codes)
            },
            classes,
        )
    }

    /// Adds rows (codes and their optional columns, see [`RowBatch`]). Without ids, ids are
    /// assigned in increasing order from the manifest's `next_auto_id` (which always stays
    /// above every id ever stored, so an assigned id never collides with a user id). A given
    /// id that is already live is [`StorageError::DuplicateId`] and nothing is added (use
    /// [`Index::upsert_rows`] to replace rows). Every column is checked (shapes, reserved
    /// values, finite vectors of the index's dimension) before anything is written. Returns
    /// the rows' ids, in the batch's order. The rows become visible at the next commit.
    pub fn add_rows(&self, batch: &RowBatch<'_>) -> Result<Vec<u64>> {
        self.add_rows_with_classes(batch, &[])
    }

    /// [`Index::add_rows`] and [`Index::add_class`] as one step, all checked before anything
    /// is staged (see [`Index::add_codes_with_classes`]).
    pub fn add_rows_with_classes(
        &self,
        batch: &RowBatch<'_>,
        classes: &[ClassRecord],
    ) -> Result<Vec<u64>> {
        let checked = check_batch(
            &self.shared.dir,
            &self.shared.model,
            self.shared.vectors,
            batch,
        )?;
        self.add_checked_rows(batch, checked, classes)
    }

    /// [`Index::add_rows_with_classes`] of a batch [`check_batch`] already passed against this
    /// index's model and vector setting (`codedb build` checks before it creates the index).
    pub(crate) fn add_checked_rows(
        &self,
        batch: &RowBatch<'_>,
        checked: CheckedRows,
        classes: &[ClassRecord],
    ) -> Result<Vec<u64>> {
        let rows = checked.rows;
        let mut w = self.shared.writer.lock();
        w.check_poisoned(&self.shared.dir)?;
        self.check_labels_counted(&w, batch.labels, classes)?;
        let staged_classes = if classes.is_empty() {
            None
        } else {
            Some(self.stage_classes(&w, classes)?)
        };
        let ids = match batch.ids {
            Some(ids) => {
                for &id in ids {
                    if w.find(id)?.is_some() {
                        return Err(StorageError::DuplicateId {
                            dir: self.shared.dir.clone(),
                            id,
                        });
                    }
                }
                ids.to_vec()
            }
            None => {
                let first = w.next_auto_id;
                let end = first
                    .checked_add(rows as u64)
                    .filter(|&e| e < u64::MAX)
                    .ok_or_else(|| self.invalid("ids", "the automatic id space is exhausted"))?;
                (first..end).collect()
            }
        };
        self.append_locked(&mut w, &ids, batch, checked.vectors.as_ref())?;
        if let Some(t) = staged_classes {
            w.pending.classes = Some(t);
        }
        Ok(ids)
    }

    /// Adds rows with the given ids, replacing the live row of each id that has one (the old
    /// row is deleted in the same commit). Returns how many rows were replaced.
    pub fn upsert_codes(&self, codes: &[u8], ids: &[u64], labels: Option<&[u32]>) -> Result<u64> {
        self.upsert_rows(&RowBatch {
            ids: Some(ids),
            labels,
            ..RowBatch::new(codes)
        })
    }

    /// [`Index::add_rows`] that replaces the live row of each given id instead of refusing it
    /// (the old row is deleted in the same commit). `batch.ids` is required. Returns how many
    /// rows were replaced. [`Index::upsert_rows_with_classes`] with no class records and
    /// [`ClassStats::Update`].
    pub fn upsert_rows(&self, batch: &RowBatch<'_>) -> Result<u64> {
        self.upsert_rows_with(batch, &[], ClassStats::Update)
    }

    /// [`Index::upsert_rows`] and [`Index::add_class`] as one step, all checked before anything
    /// is staged (see [`Index::add_codes_with_classes`]): [`Index::upsert_rows_with`] with
    /// [`ClassStats::Update`].
    pub fn upsert_rows_with_classes(
        &self,
        batch: &RowBatch<'_>,
        classes: &[ClassRecord],
    ) -> Result<u64> {
        self.upsert_rows_with(batch, classes, ClassStats::Update)
    }

    /// [`Index::upsert_rows_with_classes`] with what happens to the classes of the replaced
    /// rows: a replaced row that counts in a class leaves it (per `stats`, see [`ClassStats`];
    /// its stored vector is subtracted), and `classes` count the new rows (as for
    /// [`Index::add_rows_with_classes`]). Everything is checked before anything is staged.
    pub fn upsert_rows_with(
        &self,
        batch: &RowBatch<'_>,
        classes: &[ClassRecord],
        stats: ClassStats,
    ) -> Result<u64> {
        let Some(ids) = batch.ids else {
            return Err(self.invalid("ids", "an upsert needs the ids of its rows"));
        };
        let checked = check_batch(
            &self.shared.dir,
            &self.shared.model,
            self.shared.vectors,
            batch,
        )?;
        let mut w = self.shared.writer.lock();
        w.check_poisoned(&self.shared.dir)?;
        let mut found = Vec::new();
        for &id in ids {
            if let Some(loc) = w.find(id)? {
                found.push((id, loc));
            }
        }
        self.check_labels_counted(&w, batch.labels, classes)?;
        let mut records = self.removal_records(&w, &found, stats)?;
        records.extend_from_slice(classes);
        let staged_classes = if records.is_empty() {
            None
        } else {
            Some(self.stage_classes(&w, &records)?)
        };
        Self::stage_deletes(&mut w, &found);
        self.append_locked(&mut w, ids, batch, checked.vectors.as_ref())?;
        if let Some(t) = staged_classes {
            w.pending.classes = Some(t);
        }
        Ok(found.len() as u64)
    }

    /// Marks located live rows deleted (segment rows by id, resolved at commit).
    fn stage_deletes(w: &mut Writer, rows: &[(u64, WLoc)]) {
        for &(id, loc) in rows {
            match loc {
                WLoc::Segment { .. } => {
                    w.pending.segment_deletes.insert(id);
                }
                WLoc::Log(row) => {
                    if let Some(l) = w.log.as_mut() {
                        l.delete(row);
                    }
                }
            }
        }
        w.pending.changed |= !rows.is_empty();
    }

    /// Deletes the live rows with these ids (visible at the next commit). An id that is not
    /// live is [`StorageError::UnknownId`] and nothing is deleted. A deleted row that counts in
    /// a class leaves it in the same commit: [`Index::delete_with`] and [`ClassStats::Update`].
    pub fn delete(&self, ids: &[u64]) -> Result<()> {
        self.delete_with(ids, ClassStats::Update)
    }

    /// [`Index::delete`], with what happens to the class statistics of deleted labelled rows
    /// (see [`ClassStats`]): with `Update`, each one's stored vector is subtracted from its
    /// class's sum and the class's count drops by one, and an index without stored vectors
    /// refuses ([`StorageError::ClassStatsNeedVectors`]); with `Keep` the classes stay as they
    /// are. Everything is checked before anything is staged.
    pub fn delete_with(&self, ids: &[u64], stats: ClassStats) -> Result<()> {
        if ids.is_empty() {
            return Err(self.invalid("ids", "no ids given"));
        }
        let mut seen = HashSet::with_capacity(ids.len());
        if let Some(&dup) = ids.iter().find(|&&x| !seen.insert(x)) {
            return Err(self.invalid("ids", format!("id {dup} appears twice")));
        }
        let mut w = self.shared.writer.lock();
        w.check_poisoned(&self.shared.dir)?;
        let mut locs = Vec::with_capacity(ids.len());
        for &id in ids {
            match w.find(id)? {
                Some(loc) => locs.push((id, loc)),
                None => {
                    return Err(StorageError::UnknownId {
                        dir: self.shared.dir.clone(),
                        id,
                    });
                }
            }
        }
        let records = self.removal_records(&w, &locs, stats)?;
        let staged_classes = if records.is_empty() {
            None
        } else {
            Some(self.stage_classes(&w, &records)?)
        };
        Self::stage_deletes(&mut w, &locs);
        if let Some(t) = staged_classes {
            w.pending.classes = Some(t);
        }
        Ok(())
    }

    /// Stages class records for the class table (visible at the next commit, as one delta
    /// file). Per class id, counts and sums add to the existing class and centroids replace
    /// its centroids; new ids create classes (FORMAT.md §5). The records are checked against
    /// the table as it will be after the commit: names and parents must agree with existing
    /// classes, parents must exist, sums must be finite and of the table's dimension.
    pub fn add_class(&self, classes: &[ClassRecord]) -> Result<()> {
        let mut w = self.shared.writer.lock();
        w.check_poisoned(&self.shared.dir)?;
        let pending = self.stage_classes(&w, classes)?;
        w.pending.classes = Some(pending);
        w.pending.changed = true;
        Ok(())
    }

    /// The class table as the next commit will publish it: the committed table with the
    /// staged records folded in (`None` when there is neither).
    pub fn staged_classes(&self) -> Result<Option<ClassTable>> {
        let w = self.shared.writer.lock();
        let dir = &self.shared.dir;
        let committed = w.committed.classes.clone();
        match (committed, &w.pending.classes) {
            (c, None) => Ok(c.map(|t| (*t).clone())),
            (Some(base), Some(p)) => {
                let mut t = (*base).clone();
                t.fold(p, dir)?;
                Ok(Some(t))
            }
            (None, Some(p)) => {
                let mut t = ClassTable {
                    file_id: p.delta_of.unwrap_or(FileId::ZERO),
                    dim: p.dim,
                    delta_of: None,
                    classes: Vec::new(),
                };
                t.fold(p, dir)?;
                Ok(Some(t))
            }
        }
    }

    /// The pending class table after staging `classes` (checked against the committed table
    /// with everything staged so far), without installing it.
    fn stage_classes(&self, w: &Writer, classes: &[ClassRecord]) -> Result<ClassTable> {
        let dir = &self.shared.dir;
        let Some(first) = classes.first() else {
            return Err(self.invalid("classes", "no class records given"));
        };
        let committed = w.committed.classes.clone();
        let dim = committed
            .as_ref()
            .map(|t| t.dim)
            .or(w.pending.classes.as_ref().map(|t| t.dim))
            .unwrap_or(first.sum.len() as u32);
        let exists = |id: u32| {
            let has = |t: &ClassTable| t.classes.iter().any(|c| c.id == id);
            committed.as_deref().is_some_and(has) || w.pending.classes.as_ref().is_some_and(has)
        };
        if let Some(problem) = classes
            .iter()
            .filter(|c| !exists(c.id))
            .find_map(|c| class_name_problem(&c.name))
        {
            return Err(self.invalid("classes", format!("class name {problem}")));
        }
        self.check_new_class_ids(w, classes)?;
        if let Some(c) = classes.iter().find(|c| c.sum.len() != dim as usize) {
            return Err(self.invalid(
                "classes",
                format!(
                    "class {} has a sum of {} values, the table's dimension is {dim}",
                    c.id,
                    c.sum.len()
                ),
            ));
        }
        let base = match &committed {
            Some(t) => (**t).clone(),
            None => ClassTable {
                file_id: FileId::generate(),
                dim,
                delta_of: None,
                classes: Vec::new(),
            },
        };
        let mut pending = w.pending.classes.clone().unwrap_or_else(|| ClassTable {
            file_id: FileId::generate(),
            dim,
            delta_of: Some(base.file_id),
            classes: Vec::new(),
        });
        pending.delta_of = Some(base.file_id);
        let call = ClassTable {
            file_id: FileId::generate(),
            dim,
            delta_of: Some(pending.file_id),
            classes: classes.to_vec(),
        };
        let map = |e: crate::format::FormatError| match e {
            crate::format::FormatError::Corrupt { detail, .. } => self.invalid("classes", detail),
            other => StorageError::Format(other),
        };
        pending.fold(&call, dir).map_err(map)?;
        let mut trial = base;
        trial.fold(&pending, dir).map_err(map)?;
        Ok(pending)
    }

    /// Appends rows to the active log (creating it if needed). An I/O failure poisons.
    fn append_locked(
        &self,
        w: &mut Writer,
        ids: &[u64],
        batch: &RowBatch<'_>,
        vectors: Option<&VectorBuf>,
    ) -> Result<()> {
        let r = self.append_inner(w, ids, batch, vectors);
        if let Err(e) = &r {
            w.poison(e);
        }
        r
    }

    fn append_inner(
        &self,
        w: &mut Writer,
        ids: &[u64],
        batch: &RowBatch<'_>,
        vectors: Option<&VectorBuf>,
    ) -> Result<()> {
        let dir = &self.shared.dir;
        let fs = &*self.shared.config.fs;
        let model = &self.shared.model;
        if w.log.is_none() {
            let id = FileId::generate();
            let name = data_file_name(FileKind::AppendLog, id);
            let path = dir.join(&name);
            let meta = LogMeta {
                code_kind: model.code_kind,
                code_bytes: model.code_bytes,
                code_bits: model.code_bits,
                model_id: model.model_id,
                vectors: self.shared.vectors,
            };
            // The prelude is published like any file (temporary name, fsync, rename), so a
            // log under its final name always starts with a valid header and meta.
            let tmp = dir.join(super::layout::tmp_name(&name));
            let mut handle = fs
                .create_new(&tmp)
                .map_err(StorageError::io(&tmp, "create"))?;
            handle
                .write_all(&append_log::encode_prelude(id, &meta))
                .map_err(StorageError::io(&tmp, "write"))?;
            handle.sync().map_err(StorageError::io(&tmp, "fsync"))?;
            drop(handle);
            fs.rename(&tmp, &path)
                .map_err(StorageError::io(&path, "rename"))?;
            let handle = fs
                .open_append(&path)
                .map_err(StorageError::io(&path, "open for append"))?;
            w.log = Some(LogWriter {
                file: FileRef { id, name },
                path,
                handle,
                meta,
                batches: Vec::new(),
                rows: 0,
                len: LOG_DATA_START,
                committed_len: LOG_DATA_START,
                deleted: Vec::new(),
                deleted_count: 0,
                committed_deletions: None,
                deletions_dirty: false,
                new_file: true,
            });
        }
        let Some(log) = w.log.as_mut() else {
            return Ok(());
        };
        let width = model.code_bytes as usize;
        let dim = self.shared.vectors.map_or(0, |v| v.dim as usize);
        let chunk = MAX_BATCH_ROWS as usize;
        for (k, id_chunk) in ids.chunks(chunk).enumerate() {
            let start = k * chunk;
            let end = start + id_chunk.len();
            // Rows with list ids are stored grouped by list, then by id (FORMAT.md §10.2), so
            // every block of rows a scan sees, logged or sealed, has contiguous lists.
            let order: Vec<usize> = match batch.lists {
                Some(l) => {
                    let mut o: Vec<usize> = (start..end).collect();
                    o.sort_unstable_by_key(|&r| (l[r], ids[r]));
                    o
                }
                None => (start..end).collect(),
            };
            let mut codes = Vec::with_capacity(order.len() * width);
            for &r in &order {
                codes.extend_from_slice(&batch.codes[r * width..(r + 1) * width]);
            }
            let vecs = vectors.map(|v| {
                let mut out = VectorBuf::empty(v.dtype());
                out_extend_rows(&mut out, v, &order, dim);
                out
            });
            let record_batch = LogBatch {
                ids: order.iter().map(|&r| ids[r]).collect(),
                codes,
                labels: batch.labels.map(|l| order.iter().map(|&r| l[r]).collect()),
                lists: batch.lists.map(|l| order.iter().map(|&r| l[r]).collect()),
                vectors: vecs,
            };
            let batch = record_batch;
            let record = batch.encode(&log.meta, &log.path)?;
            log.handle
                .write_all(&record)
                .map_err(StorageError::io(&log.path, "write"))?;
            log.len += record.len() as u64;
            let entry = LogBatchEntry::new(batch, log.rows);
            log.rows += entry.rows();
            log.deleted.resize(log.rows.div_ceil(64) as usize, 0);
            log.batches.push(Arc::new(entry));
        }
        if let Some(&max) = ids.iter().max() {
            w.next_auto_id = w.next_auto_id.max(max + 1);
        }
        w.pending.changed = true;
        Ok(())
    }

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

    fn commit_inner(&self, w: &mut Writer, force_seal: bool) -> Result<u64> {
        let dir = &self.shared.dir;
        let config = &self.shared.config;
        let fs = &*config.fs;
        let old = w.committed.clone();
        let mut slots = old.segments.clone();
        let mut dir_dirty = false;

        // 1. Deletions in sealed segments: one new bitmap per touched segment.
        let mut by_slot: HashMap<usize, Vec<u64>> = HashMap::new();
        for &id in &w.pending.segment_deletes {
            let (slot, row) = old.find_in_segments(id, |_| false)?.ok_or_else(|| {
                self.invalid(
                    "delete",
                    format!("internal: staged delete of id {id} matches no segment row"),
                )
            })?;
            by_slot.entry(slot).or_default().push(row);
        }
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

        // 2. The active log: seal it, or fsync it (and its bitmap if rows were deleted).
        let mut seal = false;
        let mut log_view = None;
        let mut log_deletions = None;
        if let Some(log) = w.log.as_mut() {
            if force_seal || log.len >= config.seal_bytes || log.deleted_count == log.rows {
                seal = true;
                if let Some(slot) = self.seal(log)? {
                    slots.push(slot);
                    dir_dirty = true;
                }
            } else {
                if log.len > log.committed_len {
                    log.handle
                        .sync()
                        .map_err(StorageError::io(&log.path, "fsync"))?;
                }
                dir_dirty |= log.new_file;
                let deletions = if log.deletions_dirty {
                    let rows = bit_rows(&log.deleted);
                    let (bm, fref) = self.write_bitmap(log.file.id, log.rows, None, &rows)?;
                    dir_dirty = true;
                    let d = (fref, Arc::new(bm));
                    log_deletions = Some(d.clone());
                    Some(d)
                } else {
                    log.committed_deletions.clone()
                };
                log_view = Some(LogView {
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
            }
        }

        // 3. Class records: a base table if there is none yet, else a delta of the base.
        let mut class_files = old.manifest.class_files.clone();
        let mut classes = old.classes.clone();
        if let Some(p) = &w.pending.classes {
            let id = FileId::generate();
            let name = data_file_name(FileKind::ClassTable, id);
            let (file, folded) = match (&old.classes, old.manifest.class_files.first()) {
                (Some(base), Some(base_file)) => {
                    let delta = ClassTable {
                        file_id: id,
                        dim: p.dim,
                        delta_of: Some(base_file.file.id),
                        classes: p.classes.clone(),
                    };
                    let mut folded = (**base).clone();
                    folded.fold(&delta, &dir.join(&name))?;
                    publish(fs, dir, &name, |out, path| {
                        delta.write_to(out, path)?;
                        Ok(())
                    })?;
                    (
                        ClassFileEntry {
                            file: FileRef { id, name },
                            delta: true,
                        },
                        folded,
                    )
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
                    publish(fs, dir, &name, |out, path| {
                        base.write_to(out, path)?;
                        Ok(())
                    })?;
                    class_files.clear();
                    (
                        ClassFileEntry {
                            file: FileRef { id, name },
                            delta: false,
                        },
                        base,
                    )
                }
            };
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
        };
        self.publish_manifest(&manifest, log_view.as_ref().map(|l| &l.entry))?;

        // Published: update memory.
        let state = VersionState {
            dir: dir.clone(),
            manifest,
            model: old.model.clone(),
            segments: slots,
            log: log_view,
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

    /// Writes the log's live rows as a new segment (`None` if none is live): sorted by id, or
    /// by (list id, id) when any row has a list id (rows without one get [`NO_LIST`], last).
    fn seal(&self, log: &LogWriter) -> Result<Option<SegmentSlot>> {
        let has_lists = log.batches.iter().any(|b| b.batch.lists.is_some());
        let mut order: Vec<(u32, u64, u32, u32)> = Vec::with_capacity(log.rows as usize);
        for (bi, b) in log.batches.iter().enumerate() {
            for (r, &id) in b.batch.ids.iter().enumerate() {
                if !log.is_deleted(b.first_row + r as u64) {
                    let list = match &b.batch.lists {
                        Some(l) => l[r],
                        None if has_lists => NO_LIST,
                        None => 0,
                    };
                    order.push((list, id, bi as u32, r as u32));
                }
            }
        }
        if order.is_empty() {
            return Ok(None);
        }
        order.sort_unstable();
        let cols = SegmentColumns {
            labels: log.batches.iter().any(|b| b.batch.labels.is_some()),
            lists: has_lists,
            vectors: self.shared.vectors,
        };
        let batch = |b: u32| &log.batches[b as usize].batch;
        let slot = self.write_segment(order.len() as u64, cols, |col, out| {
            for chunk in order.chunks(SEAL_CHUNK) {
                match col {
                    Column::Ids => out.ids(&chunk.iter().map(|c| c.1).collect::<Vec<_>>())?,
                    Column::Codes => {
                        let mut buf = Vec::new();
                        let w = log.meta.code_bytes as usize;
                        for &(_, _, b, r) in chunk {
                            let codes = &batch(b).codes;
                            buf.extend_from_slice(&codes[r as usize * w..(r as usize + 1) * w]);
                        }
                        out.codes(&buf)?
                    }
                    Column::Labels => out.labels(
                        &chunk
                            .iter()
                            .map(|&(_, _, b, r)| {
                                batch(b).labels.as_ref().map_or(NO_LABEL, |l| l[r as usize])
                            })
                            .collect::<Vec<_>>(),
                    )?,
                    Column::Lists => out.lists(&chunk.iter().map(|c| c.0).collect::<Vec<_>>())?,
                    Column::Vectors => {
                        let Some(spec) = cols.vectors else {
                            continue;
                        };
                        let dim = spec.dim as usize;
                        let mut buf = VectorBuf::empty(spec.dtype);
                        for &(_, _, b, r) in chunk {
                            let r = r as usize;
                            let ok = batch(b).vectors.as_ref().is_some_and(|v| {
                                buf.extend_from(v.as_slice(), r * dim, (r + 1) * dim)
                            });
                            if !ok {
                                return Err(self.invalid(
                                    "vectors",
                                    format!("internal: log row {r} of batch {b} has no vector"),
                                ));
                            }
                        }
                        out.vector_rows(spec, buf.as_slice())?
                    }
                }
            }
            Ok(())
        })?;
        Ok(Some(slot))
    }

    /// Publishes a new segment whose columns `fill(column, writer)` streams, column by column
    /// in file order, and opens it.
    pub(crate) fn write_segment(
        &self,
        rows: u64,
        cols: SegmentColumns,
        mut fill: impl FnMut(
            Column,
            &mut SegmentWriter<&mut std::io::BufWriter<super::fs::SeamWriter>>,
        ) -> Result<()>,
    ) -> Result<SegmentSlot> {
        let model = &self.shared.model;
        let id = FileId::generate();
        let name = data_file_name(FileKind::Segment, id);
        let layout = SegmentLayout {
            code_kind: model.code_kind,
            code_bytes: model.code_bytes,
            code_bits: model.code_bits,
            model_id: model.model_id,
        };
        let dir = &self.shared.dir;
        let (meta, _) = publish(&*self.shared.config.fs, dir, &name, |out, path| {
            let mut sw = SegmentWriter::new(out, id, layout, path)?;
            fill(Column::Ids, &mut sw)?;
            fill(Column::Codes, &mut sw)?;
            if cols.labels {
                fill(Column::Labels, &mut sw)?;
            }
            if cols.lists {
                fill(Column::Lists, &mut sw)?;
            }
            if cols.vectors.is_some() {
                fill(Column::Vectors, &mut sw)?;
            }
            Ok(sw.finish()?.1)
        })?;
        if meta.rows != rows || meta.vectors != cols.vectors.map(|v| v.pair()) {
            return Err(self.invalid(
                "segment",
                format!(
                    "internal: wrote {} rows with vectors {:?}, expected {rows} with {:?}",
                    meta.rows, meta.vectors, cols.vectors
                ),
            ));
        }
        let seg = OpenSegment::open(&dir.join(&name), &self.shared.config.read)?;
        Ok(SegmentSlot {
            entry: SegmentEntry {
                segment: FileRef { id, name },
                rows,
                deleted: 0,
                deletions: None,
            },
            seg: Arc::new(seg),
            deletions: None,
        })
    }
}

/// Which optional columns a new segment has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SegmentColumns {
    pub labels: bool,
    pub lists: bool,
    pub vectors: Option<VectorSpec>,
}

/// Appends rows `order` (of `dim` values each) of `src` to `out` (same dtype).
fn out_extend_rows(out: &mut VectorBuf, src: &VectorBuf, order: &[usize], dim: usize) {
    let s = src.as_slice();
    for &r in order {
        let ok = out.extend_from(s, r * dim, (r + 1) * dim);
        debug_assert!(ok, "vector rows were checked against the batch");
    }
}

/// A segment column, in the order they are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Column {
    Ids,
    Codes,
    Labels,
    Lists,
    Vectors,
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

/// Refuses a directory that is not an index (missing, or without any manifest) before a writer
/// creates anything in it (the lock file included).
pub(crate) fn check_is_index(dir: &Path) -> Result<()> {
    if !dir.is_dir() {
        return Err(StorageError::NotAnIndex {
            dir: dir.to_path_buf(),
            detail: "no such directory".into(),
        });
    }
    if list_manifests(dir)?.is_empty() {
        return Err(StorageError::NotAnIndex {
            dir: dir.to_path_buf(),
            detail: "no manifest found".into(),
        });
    }
    Ok(())
}

/// Removes `*.tmp` files (interrupted writes); only a lock holder may, since only it writes them.
pub(crate) fn remove_temp_files(config: &Config, dir: &Path) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    let rd = std::fs::read_dir(dir).map_err(StorageError::io(dir, "list directory"))?;
    for e in rd {
        let e = e.map_err(StorageError::io(dir, "list directory"))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(TMP_SUFFIX) {
            let path = dir.join(&name);
            config
                .fs
                .remove_file(&path)
                .map_err(StorageError::io(&path, "remove temporary file"))?;
            removed.push(name);
        }
    }
    if !removed.is_empty() {
        sync_dir(&*config.fs, dir)?;
    }
    removed.sort();
    Ok(removed)
}
