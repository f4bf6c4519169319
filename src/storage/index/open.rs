//! Creating an index directory and opening one for writing (with what opening repairs).

use std::path::Path;
use std::sync::Arc;

use crate::format::{FileId, FileKind, FileRef, Manifest, ModelFile};

use super::handle::{Index, now_ms};
use super::writer_state::LogWriter;
use crate::storage::config::{Config, CreateOptions};
use crate::storage::error::{Result, StorageError};
use crate::storage::layout::{TMP_SUFFIX, data_file_name, list_manifests, manifest_file_name};
use crate::storage::loaded_version::{IndexModel, VersionState, choose_manifest, load_version};
use crate::storage::lock::DirLock;
use crate::storage::publish::{publish, sync_dir};
use crate::storage::recovery_report::{LogTailReport, RecoveryRecord, RecoveryReport};

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
        Index::create_inner(dir, model, options, config, true)
    }

    /// [`Index::create_with`] that does not publish version 1: the handle holds version 1 (empty)
    /// in memory only, and the directory holds no manifest until the first commit publishes
    /// version 2. [`Index::build`] creates its index so, which makes the build's first visible
    /// version the one holding its rows: a build killed at any instant leaves either no index
    /// (no manifest, only files no version names, which the next build or GC removes) or the
    /// whole built index — never an empty index that a rerun of the same build would refuse.
    pub(crate) fn create_unpublished(
        dir: &Path,
        model: &ModelFile,
        options: &CreateOptions,
        config: Config,
    ) -> Result<Index> {
        Index::create_inner(dir, model, options, config, false)
    }

    fn create_inner(
        dir: &Path,
        model: &ModelFile,
        options: &CreateOptions,
        config: Config,
        publish_version_1: bool,
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
            attributes: options.attributes.clone(),
        };
        if publish_version_1 {
            publish(fs, dir, &manifest_file_name(1), |out, path| {
                manifest.write_to(out, path)?;
                Ok(())
            })?;
            sync_dir(fs, dir)?;
        }
        let state = VersionState {
            dir: dir.to_path_buf(),
            manifest,
            model: Arc::new(IndexModel::new(model.clone())),
            segments: Vec::new(),
            log: None,
            classes: None,
            class_means: Default::default(),
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
}

/// Removes `*.tmp` files (interrupted writes); only a lock holder may, since only it writes them.
fn remove_temp_files(config: &Config, dir: &Path) -> Result<Vec<String>> {
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
