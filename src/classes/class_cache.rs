//! The process-wide cache of [`ClassMeans`]: projecting every class mean costs C × (model
//! cost), so it is done once per (model id, class files) and shared by every snapshot that
//! has that table.
//!
//! The key is the model's file id and the ids of the class-table files (the base table and its
//! deltas) the version's manifest names: a version's folded table is a function of exactly
//! these files, and file ids are unique 128-bit values, so two versions share an entry exactly
//! when their tables are the same — a commit that only adds rows keeps the entry, a commit
//! with `add_class` (a new delta) or a compaction (a new base) makes a new one, and so does a
//! different model. The newest [`CAPACITY`] entries are kept.

use std::sync::{Arc, Mutex};

use crate::format::FileId;
use crate::model::Model;
use crate::storage::Snapshot;

use super::class_means::ClassMeans;
use super::error::{ClassError, Result};

/// Entries kept (most recently used first).
pub const CAPACITY: usize = 8;

/// A model with the class means projected through it.
#[derive(Debug)]
pub struct CachedClasses {
    pub model: Model,
    pub means: ClassMeans,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    model: FileId,
    class_files: Vec<FileId>,
}

type Entries = Vec<(Key, Arc<CachedClasses>)>;

static CACHE: Mutex<Entries> = Mutex::new(Vec::new());

fn lock() -> std::sync::MutexGuard<'static, Entries> {
    // A panic while holding the lock cannot leave a half-written entry (entries are inserted
    // whole), so a poisoned lock is still consistent.
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The model and projected class means of `snap`'s version, built on first use.
pub fn for_snapshot(snap: &Snapshot) -> Result<Arc<CachedClasses>> {
    let key = Key {
        model: snap.model().model_id,
        class_files: snap
            .manifest()
            .class_files
            .iter()
            .map(|c| c.file.id)
            .collect(),
    };
    {
        let mut entries = lock();
        if let Some(i) = entries.iter().position(|(k, _)| *k == key) {
            let e = entries.remove(i);
            let hit = e.1.clone();
            entries.insert(0, e);
            return Ok(hit);
        }
    }
    let Some(table) = snap.classes() else {
        return Err(ClassError::NoClasses {
            dir: snap.dir().display().to_string(),
        });
    };
    let model = Model::from_model_file(snap.model())?;
    let means = ClassMeans::build(table, &model)?;
    if means.is_empty() {
        return Err(ClassError::NoClasses {
            dir: snap.dir().display().to_string(),
        });
    }
    let built = Arc::new(CachedClasses { model, means });
    let mut entries = lock();
    entries.retain(|(k, _)| *k != key);
    entries.insert(0, (key, built.clone()));
    entries.truncate(CAPACITY);
    Ok(built)
}

/// Whether an entry for `snap`'s (model, class files) is cached (for tests and benchmarks).
pub fn is_cached(snap: &Snapshot) -> bool {
    let model = snap.model().model_id;
    let files: Vec<FileId> = snap
        .manifest()
        .class_files
        .iter()
        .map(|c| c.file.id)
        .collect();
    lock()
        .iter()
        .any(|(k, _)| k.model == model && k.class_files == files)
}

/// Drops every entry (benchmarks use it to time a cold first classification).
pub fn clear() {
    lock().clear();
}
