//! Long calls obey their `Cancel` token: a cancelled training returns no model, a cancelled add
//! stages nothing, a cancelled build leaves no directory, a cancelled compaction publishes
//! nothing and removes the segment it was writing. Each returns `Cancelled` (one variant of the
//! umbrella `Error`, whichever room noticed) and leaves the index as it was.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use codedb::admin::{FileSystem, StdFs, WriteFile};
use codedb::model::{Cancel, ModelError};
use codedb::{
    AddOptions, BuildOptions, CompactionPolicy, Config, Error, Index, Model, PipelineSpec,
    StorageError, TrainEvent, TrainOptions,
};
use common::files::dir_bytes;
use ndarray::Array2;

/// `n` rows of 32 dimensions, seeded, spread enough for every method.
fn rows(n: usize, seed: u64) -> Array2<f32> {
    Array2::from_shape_fn((n, 32), |(i, j)| {
        let h = (i as u64 * 2_654_435_761 + j as u64 * 40_503 + seed * 97) % 10_007;
        (h as f32 / 10_007.0) * 4.0 - 2.0 + (i % 7) as f32
    })
}

fn model() -> Model {
    let spec = PipelineSpec::parse("pca-itq:16").unwrap();
    Model::train(&spec, rows(2_000, 1).view(), &TrainOptions::default())
        .unwrap()
        .0
}

/// A storage error that is the cancellation, and becomes `Error::Cancelled` at the front door.
fn is_cancelled(e: StorageError) -> bool {
    e.is_cancelled() && matches!(Error::from(e), Error::Cancelled)
}

#[test]
fn opq_training_cancelled_at_its_first_iteration_stops_there_with_cancelled() {
    let cancel = Cancel::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let (c, ev) = (cancel.clone(), events.clone());
    let opts = TrainOptions {
        cancel: cancel.clone(),
        progress: Some(Arc::new(move |e: &TrainEvent| {
            if let TrainEvent::Progress { done, .. } = e {
                ev.lock().unwrap().push(*done);
                if *done == 1 {
                    c.cancel();
                }
            }
        })),
        ..TrainOptions::default()
    };
    let spec = PipelineSpec::parse("opq:4x4").unwrap();
    let err = Model::train(&spec, rows(3_000, 2).view(), &opts).unwrap_err();
    assert!(matches!(err, ModelError::Cancelled), "{err}");
    assert!(matches!(Error::from(err), Error::Cancelled));
    // Events 0 (start) and 1 (first iteration), then the next check stopped it: not 50 more.
    assert_eq!(*events.lock().unwrap(), vec![0, 1]);
}

#[test]
fn every_training_method_checks_its_token() {
    let cancel = Cancel::new();
    cancel.cancel();
    let opts = TrainOptions {
        cancel,
        ..TrainOptions::default()
    };
    for spec in ["pca-itq:16", "pq:4x4", "opq:4x4", "ivf:8,pq:4x8", "lsh:16"] {
        let spec = PipelineSpec::parse(spec).unwrap();
        let r = Model::train(&spec, rows(3_000, 3).view(), &opts);
        assert!(
            matches!(r, Err(ModelError::Cancelled)),
            "{}: {:?}",
            spec.text,
            r.map(|_| ())
        );
    }
}

#[test]
fn encoding_with_a_cancelled_token_returns_cancelled() {
    let m = model();
    let cancel = Cancel::new();
    let x = rows(5_000, 4);
    assert_eq!(
        m.encode_cancellable(x.view(), &cancel).unwrap(),
        m.encode(x.view()).unwrap()
    );
    cancel.cancel();
    assert!(matches!(
        m.encode_cancellable(x.view(), &cancel),
        Err(ModelError::Cancelled)
    ));
}

#[test]
fn a_cancelled_add_stages_nothing_and_changes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let m = model();
    let idx = Index::build(
        dir.path(),
        &m,
        rows(500, 5).view(),
        &BuildOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let before = dir_bytes(dir.path());
    let version = idx.version();
    let cancel = Cancel::new();
    cancel.cancel();
    let opts = AddOptions {
        cancel: Some(&cancel),
        ..AddOptions::default()
    };
    let err = idx.add(rows(20_000, 6).view(), &opts).unwrap_err();
    assert!(is_cancelled(err));
    assert!(!idx.has_uncommitted());
    assert_eq!(idx.version(), version);
    assert_eq!(idx.snapshot().live_rows(), 500);
    assert_eq!(dir_bytes(dir.path()), before);
    // The handle is not poisoned: the same add without the token goes through.
    idx.add(rows(20, 6).view(), &AddOptions::default()).unwrap();
    assert_eq!(idx.commit().unwrap(), version + 1);
    assert_eq!(idx.snapshot().live_rows(), 520);
}

#[test]
fn a_cancelled_build_leaves_no_directory() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("idx");
    let cancel = Cancel::new();
    cancel.cancel();
    let opts = BuildOptions {
        cancel: Some(&cancel),
        ..BuildOptions::default()
    };
    let err = Index::build(&dir, &model(), rows(500, 7).view(), &opts, &mut |_| {}).unwrap_err();
    assert!(is_cancelled(err));
    assert!(!dir.exists());
}

/// The standard file system, cancelling the armed token when a file whose name holds the
/// armed text is created (`.seg`: a compaction is stopped while it writes its merged segment;
/// `.manifest`: while it publishes), and recording whether each cancel took.
#[derive(Debug, Default)]
struct CancelOnCreate {
    armed: Mutex<Option<(Cancel, &'static str)>>,
    took: Mutex<Vec<bool>>,
}

impl FileSystem for CancelOnCreate {
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        if let Some((c, text)) = &*self.armed.lock().unwrap()
            && path.to_string_lossy().contains(text)
        {
            self.took.lock().unwrap().push(c.cancel());
        }
        StdFs.create_new(path)
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        StdFs.open_append(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        StdFs.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        StdFs.remove_file(path)
    }
    fn set_read_only(&self, path: &Path) -> io::Result<()> {
        StdFs.set_read_only(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        StdFs.sync_dir(dir)
    }
}

#[test]
fn a_compaction_cancelled_while_writing_its_segment_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Arc::new(CancelOnCreate::default());
    let config = Config {
        fs: fs.clone(),
        auto_gc: false,
        ..Config::default()
    };
    let idx = Index::build(
        dir.path(),
        &model(),
        rows(300, 8).view(),
        &BuildOptions {
            config,
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    for s in 0..4 {
        idx.add(rows(300, 9 + s).view(), &AddOptions::default())
            .unwrap();
        idx.commit_sealed().unwrap();
    }
    let (version, live) = (idx.version(), idx.snapshot().live_rows());
    let before = dir_bytes(dir.path());
    let cancel = Cancel::new();
    *fs.armed.lock().unwrap() = Some((cancel.clone(), ".seg"));
    let err = idx
        .compact_cancellable(&CompactionPolicy::full(), &cancel, None)
        .unwrap_err();
    assert!(cancel.is_cancelled(), "the merge wrote a segment");
    assert!(is_cancelled(err));
    assert_eq!(idx.version(), version);
    assert_eq!(idx.snapshot().live_rows(), live);
    assert_eq!(
        dir_bytes(dir.path()),
        before,
        "no segment or manifest left behind"
    );
    // Not poisoned: the same compaction without a cancel goes through.
    assert_eq!(*fs.took.lock().unwrap(), [true]);
    // A cancel that comes while the merge is published is past the point of no return: it
    // does not take, says so, and the compaction completes.
    let late = Cancel::new();
    *fs.armed.lock().unwrap() = Some((late.clone(), ".manifest"));
    let report = idx
        .compact_cancellable(&CompactionPolicy::full(), &late, None)
        .unwrap();
    assert_eq!(*fs.took.lock().unwrap(), [true, false]);
    assert!(!late.is_cancelled());
    assert_eq!(report.version, Some(version + 1));
    assert_eq!(idx.snapshot().live_rows(), live);
}

#[test]
fn an_operators_compaction_cancelled_before_it_starts_seals_and_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = model();
    let idx = Index::build(
        dir.path(),
        &m,
        rows(500, 7).view(),
        &BuildOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    idx.add(rows(50, 8).view(), &AddOptions::default()).unwrap();
    idx.commit().unwrap();
    let before = dir_bytes(dir.path());
    let version = idx.version();
    let cancel = Cancel::new();
    cancel.cancel();
    let policy = codedb::CompactionPolicy {
        full: true,
        ..codedb::CompactionPolicy::default()
    };
    let err = idx
        .compact_sealed_cancellable(&policy, &cancel, None)
        .unwrap_err();
    assert!(is_cancelled(err));
    assert_eq!(idx.version(), version);
    assert_eq!(dir_bytes(dir.path()), before);
    // Without the token the same compaction seals the log and merges.
    let done = idx.compact_sealed(&policy).unwrap();
    assert_eq!(done.sealed_log_rows, 50);
    assert_eq!(idx.snapshot().live_rows(), 550);
}
