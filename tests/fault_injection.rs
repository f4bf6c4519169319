//! Fault injection: every file operation of a workload (create, write, fsync, truncate,
//! rename, remove, chmod, directory fsync) is made to fail in turn — with EIO, and for writes,
//! file creation and fsyncs also with ENOSPC after a half-written buffer — at each of its calls.
//! Every case must return an error to the caller (never swallow it, never panic), and the index
//! must then open at the last acknowledged version, or — when the fault hit a commit after its
//! manifest was renamed into place — at exactly the version that commit was publishing; `verify`
//! must be clean and the index writable again. The workload's index stores f32 vectors and
//! most of its rows carry list ids: they are part of the state compared.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod storage_support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use codedb::EncodedOptions;
use codedb::admin::FileSystem;
use codedb::format::{VectorDType, VectorSpec};
use codedb::{
    CompactionPolicy, Config, CreateOptions, Index, Retention, RowBatch, Snapshot, StorageError,
};
use storage_support::*;

#[derive(Debug, Clone, Default, PartialEq)]
struct State {
    rows: RowMap,
    extras: Extras,
    classes: BTreeMap<u32, (String, u64)>,
}

fn state_of(s: &Snapshot) -> State {
    State {
        rows: rows_of(s),
        extras: extras_of(s),
        classes: s
            .classes()
            .map(|t| {
                t.classes
                    .iter()
                    .map(|c| (c.id, (c.name.clone(), c.count)))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The acknowledged state and the state the operation in flight would publish.
#[derive(Debug, Default)]
struct Tracker {
    acked: State,
    attempt: State,
    /// A commit or compaction is running: its version may be visible after a failure.
    publishing: bool,
    /// `Index::create` returned successfully.
    created: bool,
}

fn config(fs: Arc<dyn FileSystem>) -> Config {
    Config {
        seal_bytes: 600,
        retention: Retention {
            keep_versions: 2,
            keep_for: Duration::ZERO,
        },
        fs,
        ..Config::default()
    }
}

fn add(
    idx: &Index,
    t: &mut Tracker,
    ids: Option<&[u64]>,
    n: usize,
    labels: Option<&[u32]>,
    generation: u64,
) -> Result<Vec<u64>, StorageError> {
    let probe: Vec<u64> = match ids {
        Some(i) => i.to_vec(),
        None => vec![0; n],
    };
    // Auto ids are only known after the call; codes depend on the position for auto rows.
    let codes: Vec<u8> = (0..probe.len())
        .flat_map(|k| code(probe[k] + k as u64, generation))
        .collect();
    let n = probe.len();
    let (vecs, lists) = extras_for(n, generation);
    let got = idx.add_encoded(
        &RowBatch {
            codes: &codes,
            ids,
            labels,
            // Batches of generation 1 carry no list ids (their sealed rows get "no list").
            lists: (generation != 1).then_some(&lists[..]),
            vectors: Some(vecs.view()),
        },
        &EncodedOptions::default(),
    )?;
    for (k, &id) in got.iter().enumerate() {
        let c = codes[k * CODE_BYTES..(k + 1) * CODE_BYTES].to_vec();
        t.attempt.rows.insert(id, (c, labels.map(|l| l[k])));
        let v = vecs.row(k).to_vec();
        t.attempt
            .extras
            .insert(id, ((generation != 1).then_some(lists[k]), Some(v)));
    }
    Ok(got)
}

const VDIM: usize = 2;

fn vector_options() -> CreateOptions {
    CreateOptions {
        store_vectors: Some(VectorSpec::new(VectorDType::F32, VDIM as u32)),
        ..CreateOptions::default()
    }
}

/// Stored vectors and list ids of `n` rows of a generation.
fn extras_for(n: usize, generation: u64) -> (ndarray::Array2<f32>, Vec<u32>) {
    let v = ndarray::Array2::from_shape_fn((n, VDIM), |(r, c)| {
        (r * VDIM + c) as f32 * 0.1 + generation as f32
    });
    (v, (0..n as u32).map(|r| r % 3).collect())
}

fn commit(idx: &Index, t: &mut Tracker) -> Result<(), StorageError> {
    t.publishing = true;
    idx.commit()?;
    t.publishing = false;
    t.acked = t.attempt.clone();
    Ok(())
}

/// A workload touching every storage path: log creation and appends, log and segment
/// bitmaps, class base and delta, sealing (twice), an upsert, reopening with a torn log tail,
/// compaction (merge, fold, GC) and an explicit GC.
fn workload(dir: &Path, cfg: &Config, t: &mut Tracker) -> Result<(), Box<dyn std::error::Error>> {
    let idx = Index::create_with(dir, &model(), &vector_options(), cfg.clone())?;
    t.created = true;
    add(&idx, t, None, 5, None, 0)?;
    commit(&idx, t)?;

    add(&idx, t, Some(&[100, 101, 102]), 3, Some(&[1, 2, 3]), 0)?;
    idx.delete(&[2])?;
    t.attempt.rows.remove(&2);
    t.attempt.extras.remove(&2);
    // Class ids apart from the rows' labels 1-3: a labelled row of a class counts in it, and
    // these raw records count no row.
    idx.add_class(&[
        class(11, "a", None, 1, 2, 0.5),
        class(12, "b", Some(11), 2, 2, 1.0),
    ])?;
    t.attempt.classes.insert(11, ("a".into(), 1));
    t.attempt.classes.insert(12, ("b".into(), 2));
    commit(&idx, t)?;

    add(&idx, t, None, 40, None, 0)?; // passes seal_bytes: sealed
    commit(&idx, t)?;

    idx.delete(&[0, 101])?;
    for id in [0, 101] {
        t.attempt.rows.remove(&id);
        t.attempt.extras.remove(&id);
    }
    idx.add_class(&[class(12, "b", Some(11), 1, 2, 1.0)])?;
    t.attempt.classes.insert(12, ("b".into(), 3));
    let (v, _) = extras_for(1, 7);
    idx.upsert_encoded(
        &RowBatch {
            vectors: Some(v.view()),
            ..RowBatch::new(&code(3, 7)).with_ids(&[3]).with_labels(&[9])
        },
        &EncodedOptions::default(),
    )?;
    t.attempt.rows.insert(3, (code(3, 7).to_vec(), Some(9)));
    t.attempt.extras.insert(3, (None, Some(v.row(0).to_vec())));
    commit(&idx, t)?;

    // Uncommitted rows, then a reopen that cuts them off the log.
    add(&idx, t, None, 2, None, 0)?;
    t.attempt = t.acked.clone();
    drop(idx);
    let idx = Index::open(dir, cfg.clone())?;

    add(&idx, t, None, 40, Some(&[5; 40]), 1)?;
    commit(&idx, t)?;

    t.publishing = true;
    let r = idx.compact(&CompactionPolicy::full())?;
    t.publishing = false;
    if let Some(e) = r.gc_error {
        // The compaction is committed; its garbage collection failed and says so.
        return Err(e.into());
    }

    idx.delete(&[100])?;
    t.attempt.rows.remove(&100);
    t.attempt.extras.remove(&100);
    commit(&idx, t)?;
    idx.gc()?;
    Ok(())
}

/// Runs the workload with `fs`; returns the tracker and the error, if any.
type Outcome = Result<(), Box<dyn std::error::Error>>;

fn run(fs: Arc<dyn FileSystem>) -> (Tracker, tempfile::TempDir, Outcome) {
    let dir = scratch_dir();
    let mut t = Tracker::default();
    let r = workload(dir.path(), &config(fs), &mut t);
    (t, dir, r)
}

#[test]
fn every_failing_file_operation_is_reported_and_the_index_recovers() {
    let counting = HookFs::counting();
    let (t, dir, r) = run(Arc::new(Hooked(counting.clone())));
    r.unwrap();
    let clean = state_of(&Snapshot::open(dir.path()).unwrap());
    assert_eq!(clean, t.acked);
    assert_verifies(dir.path());

    let mut cases = 0;
    let mut by_op = BTreeMap::new();
    let mut published_anyway = 0;
    for op in Op::ALL {
        let faults: &[Fault] = match op {
            Op::Write | Op::Create | Op::Sync => &[Fault::Eio, Fault::NoSpace],
            _ => &[Fault::Eio],
        };
        for &fault in faults {
            for n in 1..=counting.count(op) {
                let what = format!("{op:?} #{n} {fault:?}");
                let hook = HookFs::failing(op, n, fault);
                let (t, dir, r) = run(Arc::new(Hooked(hook.clone())));
                let err = r.expect_err(&format!("{what}: the fault was not reported"));
                let msg = err.to_string();
                assert!(
                    msg.contains("injected") || msg.contains("no space left"),
                    "{what}: the error hides its cause: {msg}"
                );
                assert!(
                    msg.contains(&*dir.path().to_string_lossy()),
                    "{what}: {msg}"
                );
                match Index::open(dir.path(), config(Arc::new(codedb::admin::StdFs))) {
                    Ok(idx) => {
                        let got = state_of(&idx.snapshot());
                        if got != t.acked {
                            assert!(
                                t.publishing && got == t.attempt,
                                "{what}: reopened state is neither the acknowledged one nor the one being published\n got {got:?}\n acked {:?}",
                                t.acked
                            );
                            published_anyway += 1;
                        }
                        // Writable again.
                        let (v, _) = extras_for(1, 99);
                        let id = idx
                            .add_encoded(
                                &RowBatch::new(&code(0, 99)).with_vectors(v.view()),
                                &EncodedOptions::default(),
                            )
                            .unwrap()[0];
                        idx.commit().unwrap();
                        assert!(idx.snapshot().get(id).unwrap().is_some());
                        drop(idx);
                        assert_verifies(dir.path());
                    }
                    Err(StorageError::NotAnIndex { .. }) if !t.created => {
                        // The fault hit `create` before its first manifest: create again.
                        drop(
                            Index::create_with(
                                dir.path(),
                                &model(),
                                &vector_options(),
                                config(Arc::new(codedb::admin::StdFs)),
                            )
                            .unwrap(),
                        );
                        assert_verifies(dir.path());
                    }
                    Err(e) => panic!("{what}: the index does not open after the fault: {e}"),
                }
                cases += 1;
                *by_op.entry(format!("{op:?}/{fault:?}")).or_insert(0) += 1;
            }
        }
    }
    eprintln!(
        "fault injection: {cases} cases ({published_anyway} published before the fault); per operation: {by_op:?}"
    );
    assert!(cases >= 150, "only {cases} fault cases");
    for op in [
        Op::Create,
        Op::Write,
        Op::Sync,
        Op::Truncate,
        Op::Rename,
        Op::Remove,
        Op::SetReadOnly,
        Op::SyncDir,
        Op::OpenAppend,
    ] {
        assert!(counting.count(op) > 0, "the workload never calls {op:?}");
    }
}

#[test]
fn a_failed_fsync_poisons_the_writer_until_it_is_reopened() {
    let dir = scratch_dir();
    let armed = Arc::new(AtomicBool::new(false));
    let a = armed.clone();
    let hook = HookFs::new(move |op, _, _| {
        (a.load(Ordering::SeqCst) && op == Op::Sync).then_some(Fault::Eio)
    });
    let cfg = config(Arc::new(Hooked(hook)));
    let idx = Index::create(dir.path(), &model(), cfg).unwrap();
    idx.add_encoded(&RowBatch::new(&codes(&[1], 0)), &EncodedOptions::default())
        .unwrap();
    idx.commit().unwrap();
    idx.add_encoded(&RowBatch::new(&codes(&[2], 0)), &EncodedOptions::default())
        .unwrap();
    armed.store(true, Ordering::SeqCst);
    let e = idx.commit().unwrap_err();
    assert!(e.is_io(), "{e}");
    armed.store(false, Ordering::SeqCst);
    // Even with the disk healthy again, the handle refuses: the page cache state is unknown.
    for e in [
        idx.add_encoded(&RowBatch::new(&codes(&[3], 0)), &EncodedOptions::default())
            .unwrap_err(),
        idx.commit().unwrap_err(),
        idx.delete(&[0]).unwrap_err(),
        idx.gc().unwrap_err(),
    ] {
        assert!(matches!(e, StorageError::Poisoned { .. }), "{e}");
        assert!(e.to_string().contains("injected"), "{e}");
    }
    assert_eq!(idx.snapshot().live_rows(), 1, "snapshots still work");
    drop(idx);
    let idx = Index::open(dir.path(), config(Arc::new(codedb::admin::StdFs))).unwrap();
    assert_eq!(
        rows_of(&idx.snapshot()).keys().copied().collect::<Vec<_>>(),
        vec![0]
    );
}

#[test]
fn a_compaction_that_fails_before_publishing_leaves_no_trace_and_no_poison() {
    let dir = scratch_dir();
    let armed = Arc::new(AtomicBool::new(false));
    let a = armed.clone();
    let hook = HookFs::new(move |op, path, _| {
        let manifest = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with(".manifest"));
        (a.load(Ordering::SeqCst) && op == Op::Rename && manifest).then_some(Fault::NoSpace)
    });
    let cfg = Config {
        seal_bytes: 1,
        ..config(Arc::new(Hooked(hook)))
    };
    let idx = Index::create(dir.path(), &model(), cfg).unwrap();
    for k in 0..3u64 {
        idx.add_encoded(&RowBatch::new(&codes(&[k], 0)), &EncodedOptions::default())
            .unwrap();
        idx.add_class(&[class(k as u32, &format!("c{k}"), None, 1, 2, 1.0)])
            .unwrap();
        idx.commit().unwrap();
    }
    idx.delete(&[1]).unwrap();
    idx.commit().unwrap();
    idx.gc().unwrap();
    let before = state_of(&idx.snapshot());
    let files_before = files(dir.path());
    armed.store(true, Ordering::SeqCst);
    let e = idx.compact(&CompactionPolicy::full()).unwrap_err();
    assert!(e.to_string().contains("no space left"), "{e}");
    armed.store(false, Ordering::SeqCst);
    assert_eq!(
        files(dir.path()),
        files_before,
        "merged segment and new class table removed"
    );
    assert_eq!(state_of(&idx.snapshot()), before);
    // Not poisoned: the writer and a retried compaction work.
    idx.add_encoded(&RowBatch::new(&codes(&[9], 0)), &EncodedOptions::default())
        .unwrap();
    idx.commit().unwrap();
    let r = idx.compact(&CompactionPolicy::full()).unwrap();
    assert!(r.version.is_some());
    assert_eq!(idx.snapshot().segment_count(), 1);
    drop(idx);
    assert_verifies(dir.path());
}
