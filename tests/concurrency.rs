//! Concurrency: snapshots stay consistent while a writer commits and compaction and garbage
//! collection run; readers in other processes (and threads using `Snapshot::open`) need no lock
//! and survive GC; a second writer — in another process or this one — gets `Locked`.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod storage_support;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use codedb::{CompactionPolicy, Index, Snapshot, StorageError};
use codedb::{EncodedOptions, RowBatch};
use storage_support::*;

const GROUP: u64 = 37;
const LIVE_GROUPS: u64 = 3;

/// The writer's invariant, checked on every snapshot: the live rows are exactly the whole
/// groups `r-2 ..= r` of some round `r` (each commit adds group `r` and deletes group `r-3` in
/// one version), every code and label is the one written for its id.
fn check_snapshot(s: &Snapshot) -> Option<u64> {
    let rows = rows_of(s);
    if rows.is_empty() {
        return None;
    }
    let ids: Vec<u64> = rows.keys().copied().collect();
    let first_group = ids[0] / GROUP;
    let last_group = ids[ids.len() - 1] / GROUP;
    let groups = last_group - first_group + 1;
    assert!(
        groups == LIVE_GROUPS.min(last_group + 1),
        "version {}: groups {first_group}..={last_group} live",
        s.version()
    );
    let want: Vec<u64> = (first_group * GROUP..(last_group + 1) * GROUP).collect();
    assert_eq!(
        ids,
        want,
        "version {}: a group is partly visible",
        s.version()
    );
    for (id, (c, label)) in &rows {
        assert_eq!(
            c[..],
            code(*id, 0)[..],
            "version {}: code of {id}",
            s.version()
        );
        assert_eq!(*label, Some((id / GROUP % 7) as u32));
    }
    Some(last_group)
}

#[test]
fn readers_see_whole_versions_while_the_writer_compaction_and_gc_run() {
    let dir = scratch_dir();
    let idx = Arc::new(Index::create(dir.path(), &model(), small_config(2 << 10)).unwrap());
    let rounds = 300u64;
    let done = Arc::new(AtomicBool::new(false));
    let checks = Arc::new(AtomicUsize::new(0));
    let compactions = Arc::new(AtomicUsize::new(0));

    let writer = {
        let idx = idx.clone();
        std::thread::spawn(move || {
            for r in 0..rounds {
                let ids: Vec<u64> = (r * GROUP..(r + 1) * GROUP).collect();
                let labels = vec![(r % 7) as u32; ids.len()];
                idx.add_encoded(
                    &RowBatch::new(&codes(&ids, 0))
                        .with_ids(&ids)
                        .with_labels(&labels),
                    &EncodedOptions::default(),
                )
                .unwrap();
                if r >= LIVE_GROUPS {
                    let old: Vec<u64> = ((r - LIVE_GROUPS) * GROUP..(r - 2) * GROUP).collect();
                    idx.delete(&old).unwrap();
                }
                idx.commit().unwrap();
            }
        })
    };
    let compactor = {
        let (idx, done, compactions) = (idx.clone(), done.clone(), compactions.clone());
        std::thread::spawn(move || {
            let mut k = 0;
            while !done.load(Ordering::SeqCst) {
                let policy = if k % 3 == 0 {
                    CompactionPolicy {
                        buffer_rows: 5,
                        ..CompactionPolicy::full()
                    }
                } else {
                    CompactionPolicy {
                        min_merge: 2,
                        buffer_rows: 16,
                        max_deleted_fraction: 0.1,
                        ..CompactionPolicy::default()
                    }
                };
                if idx.compact(&policy).unwrap().version.is_some() {
                    compactions.fetch_add(1, Ordering::SeqCst);
                }
                if k % 4 == 0 {
                    idx.gc().unwrap();
                }
                k += 1;
            }
        })
    };
    let readers: Vec<_> = (0..3)
        .map(|t| {
            let (idx, done, checks) = (idx.clone(), done.clone(), checks.clone());
            let dir = dir.path().to_path_buf();
            std::thread::spawn(move || {
                let mut last_version = 0;
                let mut last_group = 0;
                while !done.load(Ordering::SeqCst) {
                    // Thread 0 reads like another process would: from the directory, no lock.
                    let s = if t == 0 {
                        Snapshot::open(&dir).unwrap()
                    } else {
                        idx.snapshot()
                    };
                    assert!(s.version() >= last_version, "versions never go back");
                    last_version = s.version();
                    if let Some(g) = check_snapshot(&s) {
                        assert!(g >= last_group);
                        last_group = g;
                    }
                    // The same snapshot reads the same rows later, whatever happened meanwhile.
                    let again = rows_of(&s);
                    std::thread::yield_now();
                    assert_eq!(rows_of(&s), again);
                    checks.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    writer.join().unwrap();
    // Let compaction finish a last round on the final version.
    let final_compaction = idx.compact(&CompactionPolicy::full()).unwrap();
    done.store(true, Ordering::SeqCst);
    compactor.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    let s = idx.snapshot();
    assert_eq!(check_snapshot(&s), Some(rounds - 1));
    assert!(final_compaction.version.is_some() || s.segment_count() <= 1);
    eprintln!(
        "concurrency: {} snapshot checks, {} compactions published, final version {}",
        checks.load(Ordering::SeqCst),
        compactions.load(Ordering::SeqCst),
        s.version()
    );
    assert!(checks.load(Ordering::SeqCst) > 0);
    drop(s);
    drop(idx);
    assert_verifies(dir.path());
}

#[test]
fn a_reader_opened_from_disk_survives_gc_removing_its_files() {
    let dir = scratch_dir();
    let idx = Index::create(dir.path(), &model(), small_config(1)).unwrap();
    for k in 0..4u64 {
        idx.add_encoded(
            &RowBatch::new(&codes(&[k * 10, k * 10 + 1], 0)),
            &EncodedOptions::default(),
        )
        .unwrap();
        idx.commit().unwrap();
    }
    idx.delete(&[0]).unwrap();
    idx.commit().unwrap();
    // Not pinned in the writer's process (it came from the directory, as another process's
    // reader would): GC is free to unlink its files; its mappings stay valid.
    let reader = Snapshot::open(dir.path()).unwrap();
    let before = rows_of(&reader);
    let names: Vec<String> = reader
        .manifest()
        .segments
        .iter()
        .map(|s| s.segment.name.clone())
        .collect();
    idx.compact(&CompactionPolicy::full()).unwrap();
    idx.add_encoded(&RowBatch::new(&codes(&[99], 0)), &EncodedOptions::default())
        .unwrap();
    idx.commit().unwrap();
    idx.add_encoded(&RowBatch::new(&codes(&[98], 0)), &EncodedOptions::default())
        .unwrap();
    idx.commit().unwrap();
    idx.gc().unwrap();
    assert!(
        names.iter().all(|n| !dir.path().join(n).exists()),
        "GC removed them"
    );
    assert_eq!(rows_of(&reader), before);
    assert_eq!(reader.get(1).unwrap().unwrap().code, &code(1, 0)[..]);
}

const LOCK_CHILD_DIR: &str = "CODEDB_LOCK_CHILD_DIR";
const LOCK_CHILD_EXPECT: &str = "CODEDB_LOCK_CHILD_EXPECT";

/// Child process: tries to open the index as a writer and exits 0 iff the outcome is the
/// expected one (`locked` or `opened`); reading must work either way.
#[test]
#[ignore = "child process of a_second_writer_process_gets_locked"]
fn lock_child() {
    let (Ok(dir), Ok(expect)) = (
        std::env::var(LOCK_CHILD_DIR),
        std::env::var(LOCK_CHILD_EXPECT),
    ) else {
        eprintln!("lock_child runs only as a child process");
        return;
    };
    let dir = Path::new(&dir);
    let s = Snapshot::open(dir).unwrap();
    assert_eq!(
        s.live_rows(),
        3,
        "a reader in another process needs no lock"
    );
    match (Index::open(dir, small_config(1 << 20)), expect.as_str()) {
        (Err(StorageError::Locked { dir: d }), "locked") => assert_eq!(d, dir),
        (Ok(idx), "opened") => {
            idx.add_encoded(&RowBatch::new(&codes(&[5], 0)), &EncodedOptions::default())
                .unwrap();
            idx.commit().unwrap();
        }
        (r, e) => panic!("expected {e}, got {r:?}"),
    }
}

fn run_lock_child(dir: &Path, expect: &str) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["lock_child", "--exact", "--ignored", "--test-threads=1"])
        .env(LOCK_CHILD_DIR, dir)
        .env(LOCK_CHILD_EXPECT, expect)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child expecting {expect}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "the child test did not run"
    );
}

#[test]
fn a_second_writer_process_gets_locked() {
    let dir = scratch_dir();
    let idx = Index::create(dir.path(), &model(), small_config(1 << 20)).unwrap();
    idx.add_encoded(
        &RowBatch::new(&codes(&[1, 2, 3], 0)),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.commit().unwrap();
    run_lock_child(dir.path(), "locked");
    // The same process is refused too.
    assert!(matches!(
        Index::open(dir.path(), small_config(1 << 20)),
        Err(StorageError::Locked { .. })
    ));
    drop(idx);
    run_lock_child(dir.path(), "opened");
    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(s.live_rows(), 4, "the child's commit is visible");
}
