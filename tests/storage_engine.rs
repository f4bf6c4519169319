//! The storage engine's behaviour, one rule per test: versions and commits, ids, deletes,
//! upserts, sealing, class deltas, snapshots, locking, recovery choices, GC retention, input
//! validation, the golden index.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod storage_support;

use std::time::Duration;

use codedb::admin::list_versions;
use codedb::format::{CodeKind, FileId, ModelFile};
use codedb::{ClassStats, CompactionPolicy, Config, Index, Retention, Snapshot, StorageError};
use codedb::{EncodedOptions, RowBatch};
use storage_support::*;

#[test]
fn create_add_commit_reopen_round_trips_rows() {
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::create(dir.path(), &model(), Config::default()).unwrap();
    assert_eq!(idx.version(), 1);
    let ids = idx
        .add_encoded(
            &RowBatch::new(&codes(&[0, 1, 2], 0)).with_labels(&[5, 6, 7]),
            &EncodedOptions::default(),
        )
        .unwrap();
    assert_eq!(ids, vec![0, 1, 2]);
    assert!(idx.has_uncommitted());
    assert_eq!(
        idx.snapshot().live_rows(),
        0,
        "uncommitted rows are invisible"
    );
    assert_eq!(idx.commit().unwrap(), 2);
    assert!(!idx.has_uncommitted());
    assert_eq!(
        idx.commit().unwrap(),
        2,
        "a commit with nothing staged is a no-op"
    );
    let rows = rows_of(&idx.snapshot());
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[&1], (code(1, 0).to_vec(), Some(6)));
    drop(idx);
    let idx = Index::open(dir.path(), Config::default()).unwrap();
    assert!(idx.recovery().is_clean(), "{:?}", idx.recovery());
    assert_eq!(rows_of(&idx.snapshot()), rows);
    let more = idx
        .add_encoded(&RowBatch::new(&codes(&[3], 0)), &EncodedOptions::default())
        .unwrap();
    assert_eq!(more, vec![3], "auto ids continue after reopen");
    idx.commit().unwrap();
    let snap = Snapshot::open(dir.path()).unwrap();
    assert_eq!(snap.live_rows(), 4);
    assert_eq!(rows_of(&snap)[&3], (code(3, 0).to_vec(), None));
    let got = snap.get(2).unwrap().unwrap();
    assert_eq!((got.id, got.code, got.label), (2, &code(2, 0)[..], Some(7)));
    assert!(snap.get(99).unwrap().is_none());
    drop(idx);
    assert_verifies(dir.path());
}

#[test]
fn user_ids_duplicates_and_auto_ids() {
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::create(dir.path(), &model(), Config::default()).unwrap();
    idx.add_encoded(
        &RowBatch::new(&codes(&[10, 1000], 0)).with_ids(&[10, 1000]),
        &EncodedOptions::default(),
    )
    .unwrap();
    // A duplicate of a staged (uncommitted) row is refused as well as of a committed one.
    let e = idx
        .add_encoded(
            &RowBatch::new(&codes(&[1000], 1)).with_ids(&[1000]),
            &EncodedOptions::default(),
        )
        .unwrap_err();
    assert!(
        matches!(e, StorageError::DuplicateId { id: 1000, .. }),
        "{e}"
    );
    idx.commit().unwrap();
    let e = idx
        .add_encoded(
            &RowBatch::new(&codes(&[11, 10], 1)).with_ids(&[11, 10]),
            &EncodedOptions::default(),
        )
        .unwrap_err();
    assert!(matches!(e, StorageError::DuplicateId { id: 10, .. }), "{e}");
    assert!(e.to_string().contains("upsert"), "{e}");
    assert!(!idx.has_uncommitted(), "a refused add stages nothing");
    let e = idx
        .add_encoded(
            &RowBatch::new(&codes(&[7, 7], 0)).with_ids(&[7, 7]),
            &EncodedOptions::default(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("appears twice"), "{e}");
    let auto = idx
        .add_encoded(
            &RowBatch::new(&codes(&[0, 0], 0)),
            &EncodedOptions::default(),
        )
        .unwrap();
    assert_eq!(auto, vec![1001, 1002], "auto ids start above every user id");
    idx.commit().unwrap();
    assert_eq!(idx.snapshot().manifest().next_auto_id, 1003);
    let ids: Vec<u64> = rows_of(&idx.snapshot()).keys().copied().collect();
    assert_eq!(ids, vec![10, 1000, 1001, 1002]);
    // `holds` answers the duplicate check without writing: committed, staged, staged deletes.
    idx.add_encoded(
        &RowBatch::new(&codes(&[5], 0)).with_ids(&[5]),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.delete(&[10]).unwrap();
    assert_eq!(
        idx.holds(&[10, 1000, 5, 6]).unwrap(),
        vec![false, true, true, false]
    );
}

#[test]
fn deletes_are_per_version_and_unknown_ids_delete_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // Tiny seal threshold: the first commit seals its rows into a segment, the later rows stay
    // in the log, so deletes hit both.
    let idx = Index::create(dir.path(), &model(), small_config(1)).unwrap();
    idx.add_encoded(
        &RowBatch::new(&codes(&[0, 1, 2, 3], 0)),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.commit().unwrap();
    assert_eq!(idx.snapshot().segment_count(), 1);
    let cfg = Config {
        seal_bytes: 1 << 30,
        ..small_config(1)
    };
    drop(idx);
    let idx = Index::open(dir.path(), cfg).unwrap();
    idx.add_encoded(
        &RowBatch::new(&codes(&[4, 5, 6], 0)),
        &EncodedOptions::default(),
    )
    .unwrap();
    let v_before = idx.commit().unwrap();
    let before = idx.snapshot();
    let e = idx.delete(&[1, 77]).unwrap_err();
    assert!(matches!(e, StorageError::UnknownId { id: 77, .. }), "{e}");
    assert!(!idx.has_uncommitted());
    idx.delete(&[1, 5]).unwrap();
    let e = idx.delete(&[1]).unwrap_err();
    assert!(
        matches!(e, StorageError::UnknownId { id: 1, .. }),
        "already deleted: {e}"
    );
    let v = idx.commit().unwrap();
    assert_eq!(v, v_before + 1);
    let after = idx.snapshot();
    assert_eq!(
        rows_of(&after).keys().copied().collect::<Vec<_>>(),
        vec![0, 2, 3, 4, 6]
    );
    assert_eq!(after.deleted_rows(), 2);
    assert_eq!(
        rows_of(&before).len(),
        7,
        "the older snapshot still sees its version"
    );
    // Deleted then re-added in one commit: the new row is the live one.
    idx.delete(&[2]).unwrap();
    idx.add_encoded(
        &RowBatch::new(&codes(&[2], 9))
            .with_ids(&[2])
            .with_labels(&[4]),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.commit().unwrap();
    assert_eq!(rows_of(&idx.snapshot())[&2], (code(2, 9).to_vec(), Some(4)));
    drop(idx);
    let s = Snapshot::open(dir.path()).unwrap();
    assert_eq!(rows_of(&s).len(), 5);
    assert_verifies(dir.path());
}

#[test]
fn upsert_replaces_live_rows_and_adds_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::create(dir.path(), &model(), small_config(1)).unwrap();
    idx.add_encoded(
        &RowBatch::new(&codes(&[1, 2], 0))
            .with_ids(&[1, 2])
            .with_labels(&[1, 1]),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.commit().unwrap(); // sealed into a segment
    let replaced = idx
        .upsert_encoded(
            &RowBatch::new(&codes(&[2, 3], 1))
                .with_ids(&[2, 3])
                .with_labels(&[8, 9]),
            &EncodedOptions::default(),
        )
        .unwrap();
    assert_eq!(replaced, 1);
    // Upserting a row staged in this same commit replaces it too.
    let replaced = idx
        .upsert_encoded(
            &RowBatch::new(&codes(&[3], 2)).with_ids(&[3]),
            &EncodedOptions::default(),
        )
        .unwrap();
    assert_eq!(replaced, 1);
    idx.commit().unwrap();
    let rows = rows_of(&idx.snapshot());
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[&1], (code(1, 0).to_vec(), Some(1)));
    assert_eq!(rows[&2], (code(2, 1).to_vec(), Some(8)));
    assert_eq!(rows[&3], (code(3, 2).to_vec(), None));
    drop(idx);
    assert_verifies(dir.path());
}

#[test]
fn the_log_is_sealed_into_a_sorted_segment_past_the_threshold() {
    let dir = tempfile::tempdir().unwrap();
    // Each row takes 16 bytes of payload + 32 per record; 400 bytes holds a few batches.
    let idx = Index::create(dir.path(), &model(), small_config(400)).unwrap();
    let mut expect = Vec::new();
    for k in 0..6u64 {
        let ids = [100 - k * 3, 50 + k];
        idx.add_encoded(
            &RowBatch::new(&codes(&ids, 0)).with_ids(&ids),
            &EncodedOptions::default(),
        )
        .unwrap();
        idx.delete(&[ids[1]]).unwrap();
        expect.push(ids[0]);
        idx.commit().unwrap();
    }
    let s = idx.snapshot();
    assert!(s.segment_count() >= 1, "the log was sealed");
    for b in s.blocks().filter(|b| b.segment().is_some()) {
        assert!(
            b.ids().unwrap().windows(2).all(|w| w[0] < w[1]),
            "sealed rows sorted by id"
        );
        assert!(
            (0..b.rows()).all(|i| !b.is_deleted(i)),
            "deleted log rows are dropped"
        );
    }
    expect.sort();
    assert_eq!(rows_of(&s).keys().copied().collect::<Vec<_>>(), expect);
    drop(idx);
    assert_verifies(dir.path());
}

#[test]
fn commit_sealed_seals_a_log_of_any_size_and_is_a_no_op_without_one() {
    let dir = tempfile::tempdir().unwrap();
    // A threshold no test log reaches: only `commit_sealed` seals.
    let idx = Index::create(dir.path(), &model(), small_config(1 << 30)).unwrap();
    let v0 = idx.version();
    assert_eq!(
        idx.commit_sealed().unwrap(),
        v0,
        "nothing staged, no log: no new version"
    );

    let ids = [30u64, 10, 20, 40];
    idx.add_encoded(
        &RowBatch::new(&codes(&ids, 0)).with_ids(&ids),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.commit().unwrap();
    assert!(
        idx.snapshot().active_log().is_some(),
        "a plain commit keeps the log"
    );
    idx.delete(&[20]).unwrap();
    let before = rows_of(&idx.snapshot());
    let v = idx.commit_sealed().unwrap();
    let s = idx.snapshot();
    assert!(s.active_log().is_none(), "sealed: no active log");
    assert_eq!(s.segment_count(), 1);
    let seg: Vec<u64> = s
        .blocks()
        .filter(|b| b.segment().is_some())
        .flat_map(|b| b.ids().unwrap().to_vec())
        .collect();
    assert_eq!(seg, vec![10, 30, 40], "live rows, sorted by id");
    let mut want = before.clone();
    want.remove(&20);
    assert_eq!(rows_of(&s), want);
    // Already sealed and nothing staged: no new version.
    assert_eq!(idx.commit_sealed().unwrap(), v);

    // Staged rows are committed and sealed in one version, beside the first segment.
    idx.add_encoded(
        &RowBatch::new(&codes(&[5], 1)).with_ids(&[5]),
        &EncodedOptions::default(),
    )
    .unwrap();
    assert_eq!(idx.commit_sealed().unwrap(), v + 1);
    let s = idx.snapshot();
    assert_eq!(s.segment_count(), 2);
    assert!(s.active_log().is_none());
    want.insert(5, (code(5, 1).to_vec(), None));
    assert_eq!(rows_of(&s), want);

    // A log whose rows are all deleted is dropped, not sealed into an empty segment.
    idx.add_encoded(
        &RowBatch::new(&codes(&[7], 0)).with_ids(&[7]),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.commit().unwrap();
    idx.delete(&[7]).unwrap();
    idx.commit_sealed().unwrap();
    let s = idx.snapshot();
    assert!(s.active_log().is_none());
    assert_eq!(s.segment_count(), 2);
    assert_eq!(rows_of(&s), want);
    drop(idx);
    let reopened = Index::open(dir.path(), small_config(1 << 30)).unwrap();
    assert_eq!(rows_of(&reopened.snapshot()), want);
    drop(reopened);
    assert_verifies(dir.path());
}

#[test]
fn snapshots_pin_their_files_until_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::create(dir.path(), &model(), small_config(1)).unwrap();
    for k in 0..3u64 {
        idx.add_encoded(&RowBatch::new(&codes(&[k], 0)), &EncodedOptions::default())
            .unwrap();
        idx.commit().unwrap();
    }
    idx.delete(&[0]).unwrap();
    idx.commit().unwrap();
    let pinned = idx.snapshot();
    let pinned_rows = rows_of(&pinned);
    let pinned_files: Vec<String> = pinned
        .manifest()
        .segments
        .iter()
        .map(|s| s.segment.name.clone())
        .collect();
    // Compaction (with GC) rewrites everything into one segment.
    let r = idx.compact(&CompactionPolicy::full()).unwrap();
    assert!(r.version.is_some());
    assert_eq!(idx.snapshot().segment_count(), 1);
    // Two more versions: the pinned one is no longer among the newest two GC keeps.
    for k in 10..12u64 {
        idx.add_encoded(
            &RowBatch::new(&codes(&[k], 0)).with_ids(&[k]),
            &EncodedOptions::default(),
        )
        .unwrap();
        idx.delete(&[k]).unwrap();
        idx.commit().unwrap();
    }
    idx.gc().unwrap();
    for f in &pinned_files {
        assert!(
            dir.path().join(f).exists(),
            "{f} is pinned by a live snapshot"
        );
    }
    assert_eq!(rows_of(&pinned), pinned_rows);
    drop(pinned);
    let g = idx.gc().unwrap();
    for f in &pinned_files {
        assert!(!dir.path().join(f).exists(), "{f} is garbage once unpinned");
        assert!(g.removed.contains(f));
    }
    assert_eq!(rows_of(&idx.snapshot()), pinned_rows);
    drop(idx);
    assert_verifies(dir.path());
}

#[test]
fn retention_keeps_the_newest_versions_and_young_ones() {
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::create(dir.path(), &model(), small_config(1 << 20)).unwrap();
    let mut prev = None;
    for k in 0..5u64 {
        let ids = idx
            .add_encoded(&RowBatch::new(&codes(&[k], 0)), &EncodedOptions::default())
            .unwrap();
        if let Some(p) = prev {
            idx.delete(&[p]).unwrap(); // every commit after the first writes a bitmap
        }
        prev = Some(ids[0]);
        idx.commit().unwrap();
    }
    assert_eq!(list_versions(dir.path()).unwrap().len(), 6);
    let g = idx.gc().unwrap();
    assert_eq!(g.kept_versions, vec![6, 5]);
    let versions: Vec<u64> = list_versions(dir.path())
        .unwrap()
        .iter()
        .map(|v| v.version)
        .collect();
    assert_eq!(versions, vec![5, 6]);
    assert!(g.removed.iter().any(|f| f.starts_with("del-")), "{g:?}");
    let s5 = Snapshot::open(dir.path()).unwrap();
    assert_eq!(s5.version(), 6);
    drop(idx);
    assert_verifies(dir.path());

    // With a time window, young versions are all kept.
    let cfg = Config {
        retention: Retention {
            keep_versions: 1,
            keep_for: Duration::from_secs(3600),
        },
        ..Config::default()
    };
    let idx = Index::open(dir.path(), cfg).unwrap();
    idx.add_encoded(&RowBatch::new(&codes(&[0], 0)), &EncodedOptions::default())
        .unwrap();
    idx.commit().unwrap();
    assert_eq!(idx.gc().unwrap().kept_versions, vec![7, 6, 5]);
}

#[test]
fn one_writer_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::create(dir.path(), &model(), Config::default()).unwrap();
    let e = Index::open(dir.path(), Config::default()).unwrap_err();
    assert!(matches!(e, StorageError::Locked { .. }), "{e}");
    assert!(e.to_string().contains(&dir.path().display().to_string()));
    // Readers need no lock.
    assert_eq!(Snapshot::open(dir.path()).unwrap().version(), 1);
    drop(idx);
    Index::open(dir.path(), Config::default()).unwrap();
}

#[test]
fn create_and_open_refuse_the_wrong_directory() {
    let dir = tempfile::tempdir().unwrap();
    let e = Index::open(&dir.path().join("missing"), Config::default()).unwrap_err();
    assert!(matches!(e, StorageError::NotAnIndex { .. }), "{e}");
    let e = Index::open(dir.path(), Config::default()).unwrap_err();
    assert!(matches!(e, StorageError::NotAnIndex { .. }), "{e}");
    assert!(matches!(
        Snapshot::open(dir.path()).unwrap_err(),
        StorageError::NotAnIndex { .. }
    ));
    drop(Index::create(dir.path(), &model(), Config::default()).unwrap());
    let e = Index::create(dir.path(), &model(), Config::default()).unwrap_err();
    assert!(matches!(e, StorageError::AlreadyExists { .. }), "{e}");
    let bad = Config {
        seal_bytes: 0,
        ..Config::default()
    };
    let e = Index::open(dir.path(), bad).unwrap_err();
    assert!(e.to_string().contains("seal_bytes"), "{e}");
}

#[test]
fn bad_arguments_are_typed_errors_naming_the_argument() {
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::create(dir.path(), &model(), Config::default()).unwrap();
    let cases: Vec<(StorageError, &str)> = vec![
        (
            idx.add_encoded(&RowBatch::new(&[]), &EncodedOptions::default())
                .unwrap_err(),
            "codes",
        ),
        (
            idx.add_encoded(&RowBatch::new(&[0; 12]), &EncodedOptions::default())
                .unwrap_err(),
            "codes",
        ),
        (
            idx.add_encoded(
                &RowBatch::new(&[0; 16]).with_ids(&[1]),
                &EncodedOptions::default(),
            )
            .unwrap_err(),
            "ids",
        ),
        (
            idx.add_encoded(
                &RowBatch::new(&[0; 8]).with_labels(&[1, 2]),
                &EncodedOptions::default(),
            )
            .unwrap_err(),
            "labels",
        ),
        (
            idx.add_encoded(
                &RowBatch::new(&[0; 8]).with_labels(&[u32::MAX]),
                &EncodedOptions::default(),
            )
            .unwrap_err(),
            "labels",
        ),
        (
            idx.add_encoded(
                &RowBatch::new(&[0; 8]).with_ids(&[u64::MAX]),
                &EncodedOptions::default(),
            )
            .unwrap_err(),
            "ids",
        ),
        (idx.delete(&[]).unwrap_err(), "ids"),
        (idx.add_class(&[]).unwrap_err(), "classes"),
        (
            idx.compact(&CompactionPolicy {
                buffer_rows: 0,
                ..CompactionPolicy::default()
            })
            .unwrap_err(),
            "buffer_rows",
        ),
    ];
    for (e, arg) in cases {
        assert!(
            matches!(&e, StorageError::InvalidArgument { argument, .. } if argument.contains(arg)),
            "{e}"
        );
    }
    assert!(!idx.has_uncommitted());

    // Codes are checked against the model's layout: padding bits, NaN/Inf.
    let m12 = ModelFile {
        code_kind: CodeKind::Binary,
        code_bytes: 2,
        code_bits: 12,
        model_id: FileId::from_u128(5),
        ..model()
    };
    let d12 = tempfile::tempdir().unwrap();
    let i12 = Index::create(d12.path(), &m12, Config::default()).unwrap();
    i12.add_encoded(&RowBatch::new(&[0xff, 0x0f]), &EncodedOptions::default())
        .unwrap();
    let e = i12
        .add_encoded(
            &RowBatch::new(&[0xff, 0x0f, 0x00, 0x10]),
            &EncodedOptions::default(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("row 1"), "{e}");
    let mf = ModelFile {
        code_kind: CodeKind::Float32,
        code_bytes: 8,
        code_bits: 64,
        model_id: FileId::from_u128(6),
        ..model()
    };
    let df = tempfile::tempdir().unwrap();
    let ifl = Index::create(df.path(), &mf, Config::default()).unwrap();
    let mut c: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    ifl.add_encoded(&RowBatch::new(&c), &EncodedOptions::default())
        .unwrap();
    c.extend(1.0f32.to_le_bytes());
    c.extend(f32::NAN.to_le_bytes());
    let e = ifl
        .add_encoded(&RowBatch::new(&c), &EncodedOptions::default())
        .unwrap_err();
    assert!(e.to_string().contains("NaN"), "{e}");
}

#[test]
fn class_records_become_a_base_table_then_deltas_folded_per_version() {
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::create(dir.path(), &model(), small_config(1 << 20)).unwrap();
    idx.add_class(&[
        class(1, "animal", None, 0, 3, 0.0),
        class(2, "cat", Some(1), 2, 3, 1.0),
    ])
    .unwrap();
    // Two calls in one commit merge into one record per class.
    idx.add_class(&[class(2, "cat", Some(1), 1, 3, 0.5)])
        .unwrap();
    idx.commit().unwrap();
    let s1 = idx.snapshot();
    let t = s1.classes().unwrap();
    assert_eq!(t.classes.len(), 2);
    assert_eq!(s1.manifest().class_files.len(), 1);
    let cat = t.classes.iter().find(|c| c.id == 2).unwrap();
    assert_eq!((cat.count, cat.sum.clone()), (3, vec![1.5; 3]));

    idx.add_class(&[
        class(3, "dog", Some(1), 4, 3, 2.0),
        class(2, "cat", Some(1), 1, 3, 1.0),
    ])
    .unwrap();
    idx.commit().unwrap();
    let s2 = idx.snapshot();
    assert_eq!(s2.manifest().class_files.len(), 2, "base + one delta");
    let cat = s2
        .classes()
        .unwrap()
        .classes
        .iter()
        .find(|c| c.id == 2)
        .unwrap();
    assert_eq!(cat.count, 4);
    assert_eq!(
        s1.classes().unwrap().classes.len(),
        2,
        "the older version is unchanged"
    );

    // Conflicts are refused before anything is staged.
    for bad in [
        vec![class(2, "kitten", Some(1), 1, 3, 0.0)], // renames a class
        vec![class(9, "x", Some(42), 1, 3, 0.0)],     // parent does not exist
        vec![class(9, "y", None, 1, 2, 0.0)],         // wrong dimension
        vec![class(9, "cat", None, 1, 3, 0.0)],       // name taken
        vec![class(9, "z", None, 1, 3, f64::NAN)],    // NaN sum
    ] {
        let e = idx.add_class(&bad).unwrap_err();
        assert!(matches!(e, StorageError::InvalidArgument { .. }), "{e}");
    }
    assert!(!idx.has_uncommitted());

    let r = idx.compact(&CompactionPolicy::default()).unwrap();
    assert_eq!(r.folded_class_files, 2);
    let s3 = idx.snapshot();
    assert_eq!(s3.manifest().class_files.len(), 1);
    assert_eq!(s3.classes().unwrap().classes, s2.classes().unwrap().classes);
    drop(idx);
    let back = Snapshot::open(dir.path()).unwrap();
    assert_eq!(
        back.classes().unwrap().classes,
        s2.classes().unwrap().classes
    );
    assert_verifies(dir.path());
}

#[test]
fn dropping_the_writer_discards_uncommitted_rows_and_reopening_reports_the_tail() {
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::create(dir.path(), &model(), small_config(1 << 20)).unwrap();
    idx.add_encoded(
        &RowBatch::new(&codes(&[1, 2], 0)),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.commit().unwrap();
    idx.add_encoded(
        &RowBatch::new(&codes(&[3, 4, 5], 0)),
        &EncodedOptions::default(),
    )
    .unwrap();
    drop(idx);
    let idx = Index::open(dir.path(), small_config(1 << 20)).unwrap();
    let tail = idx.recovery().log_tail.clone().expect("tail reported");
    assert_eq!(
        (
            tail.uncommitted_batches,
            tail.uncommitted_rows,
            tail.torn_bytes
        ),
        (1, 3, 0)
    );
    assert_eq!(rows_of(&idx.snapshot()).len(), 2);
    let ids = idx
        .add_encoded(&RowBatch::new(&codes(&[0], 0)), &EncodedOptions::default())
        .unwrap();
    assert_eq!(ids, vec![2], "ids of uncommitted rows are handed out again");
    idx.commit().unwrap();
    drop(idx);
    let idx = Index::open(dir.path(), small_config(1 << 20)).unwrap();
    assert!(idx.recovery().is_clean());
    assert_eq!(rows_of(&idx.snapshot()).len(), 3);
}

#[test]
fn the_golden_index_opens_read_only_and_as_a_writer_on_a_copy() {
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("format/golden/v1.0");
    let s = Snapshot::open(&golden).unwrap();
    let rows = rows_of(&s);
    assert_eq!(
        rows.keys().copied().collect::<Vec<_>>(),
        vec![10, 12, 21, 30, 31, 32]
    );
    assert_eq!(rows[&12], (vec![0x0f, 0xf0], Some(2)));
    assert_eq!(rows[&31].1, None);
    assert_eq!(s.classes().unwrap().classes.len(), 4);
    assert!(!golden.join("LOCK").exists(), "readers take no lock");

    let dir = tempfile::tempdir().unwrap();
    for f in files(&golden) {
        std::fs::copy(golden.join(&f), dir.path().join(&f)).unwrap();
    }
    let idx = Index::open(dir.path(), small_config(1)).unwrap();
    let ids = idx
        .add_encoded(
            &RowBatch::new(&[1, 2, 3, 4]).with_labels(&[9, 9]),
            &EncodedOptions::default(),
        )
        .unwrap();
    assert_eq!(ids, vec![33, 34]);
    // Row 12 carries label 2, a class of the golden table, so it counts in it; its segment
    // stores no vectors, so the class statistics can only be kept as they are.
    let e = idx.delete(&[30, 12]).unwrap_err();
    assert!(
        matches!(
            e,
            StorageError::ClassStatsNeedVectors {
                id: 12,
                class: 2,
                ..
            }
        ),
        "{e}"
    );
    idx.delete_with(&[30, 12], ClassStats::Keep).unwrap();
    idx.commit().unwrap();
    let r = idx.compact(&CompactionPolicy::full()).unwrap();
    // The segment with stored vectors is left alone; the others merge.
    assert_eq!(r.merges.len(), 1);
    let s = idx.snapshot();
    assert_eq!(
        rows_of(&s).keys().copied().collect::<Vec<_>>(),
        vec![10, 21, 31, 32, 33, 34]
    );
    assert_eq!(s.segment_count(), 2);
    drop(idx);
    assert_verifies(dir.path());
}

#[test]
fn versions_and_inspect_report_the_active_log() {
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::create(dir.path(), &model(), small_config(1 << 20)).unwrap();
    idx.add_encoded(
        &RowBatch::new(&codes(&[1, 2, 3], 0)),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.commit().unwrap();
    idx.delete(&[1]).unwrap();
    idx.commit().unwrap();
    drop(idx);
    let v = list_versions(dir.path()).unwrap();
    assert_eq!(
        v.iter()
            .map(|v| (v.version, v.rows, v.deleted, v.log_rows))
            .collect::<Vec<_>>(),
        vec![
            (1, Some(0), Some(0), Some(0)),
            (2, Some(3), Some(0), Some(3)),
            (3, Some(2), Some(1), Some(3))
        ]
    );
    let r = codedb::admin::inspect_dir(dir.path()).unwrap();
    assert_eq!((r.version, r.rows, r.deleted, r.segments), (3, 2, 1, 0));
    let log = r.active_log.as_ref().unwrap();
    assert_eq!((log.rows, log.deleted), (3, 1));
    let lf = r
        .files
        .iter()
        .find(|f| f.file_kind == "append log")
        .unwrap();
    assert_eq!(lf.log.as_ref().unwrap().rows, 3);
    let json = serde_json::to_value(&r).unwrap();
    for key in [
        "version", "rows", "deleted", "segments", "classes", "model", "bytes",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
}

#[test]
fn row_batches_are_checked_column_by_column_before_anything_is_written() {
    use codedb::format::{VectorDType, VectorSpec};
    use codedb::{CreateOptions, RowBatch};
    let dir = scratch_dir();
    let options = CreateOptions {
        store_vectors: Some(VectorSpec::new(VectorDType::F16, 2)),
        ..CreateOptions::default()
    };
    let idx = Index::create_with(dir.path(), &model(), &options, Config::default()).unwrap();
    assert_eq!(idx.vector_spec(), options.store_vectors);
    let c = codes(&[1, 2], 0);
    let good = ndarray::arr2(&[[1.0f32, 2.0], [3.0, 4.0]]);
    let bad_shape = ndarray::arr2(&[[1.0f32, 2.0, 3.0], [3.0, 4.0, 5.0]]);
    let nan = ndarray::arr2(&[[1.0f32, f32::NAN], [3.0, 4.0]]);
    let too_big = ndarray::arr2(&[[1.0f32, 1.0e6], [3.0, 4.0]]);
    let cases: Vec<(RowBatch, &str)> = vec![
        (RowBatch::new(&c), "none given"),
        (
            RowBatch::new(&c).with_vectors(bad_shape.view()),
            "shape 2x3, expected 2x2",
        ),
        (
            RowBatch::new(&c).with_vectors(nan.view()),
            "row 0 column 1 is NaN",
        ),
        (
            RowBatch::new(&c).with_vectors(too_big.view()),
            "overflows f16",
        ),
        (
            RowBatch::new(&c).with_vectors(good.view()).with_lists(&[1]),
            "1 lists for 2 codes",
        ),
        (
            RowBatch::new(&c)
                .with_vectors(good.view())
                .with_lists(&[1, u32::MAX]),
            "row 1: 4294967295 is reserved (it means \"no list\")",
        ),
        (
            RowBatch::new(&c)
                .with_vectors(good.view())
                .with_ids(&[5, 5]),
            "id 5 appears twice",
        ),
    ];
    for (batch, want) in cases {
        let e = idx
            .add_encoded(&batch, &EncodedOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "expected {want:?} in {e}");
    }
    let e = idx
        .upsert_encoded(
            &RowBatch::new(&c).with_vectors(good.view()),
            &EncodedOptions::default(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("needs the ids"), "{e}");
    assert!(!idx.has_uncommitted(), "a refused batch stages nothing");
    let ids = idx
        .add_encoded(
            &RowBatch::new(&c)
                .with_vectors(good.view())
                .with_lists(&[7, 3]),
            &EncodedOptions::default(),
        )
        .unwrap();
    idx.commit().unwrap();
    let s = idx.snapshot();
    assert_eq!(s.vector(ids[1]).unwrap(), Some(vec![3.0, 4.0]));
    let (b, i) = s.locate(ids[0]).unwrap().unwrap();
    assert_eq!(
        (b.list(i).unwrap(), b.vector(i).unwrap()),
        (Some(7), Some(vec![1.0, 2.0]))
    );
    // The log batch is grouped by list: list 3 (the second row given) comes first.
    assert_eq!(b.list_range(3), Some(0..1));
    assert_eq!(b.list_range(7), Some(1..2));

    // An index without stored vectors refuses them.
    let dir2 = scratch_dir();
    let plain = Index::create(dir2.path(), &model(), Config::default()).unwrap();
    let e = plain
        .add_encoded(
            &RowBatch::new(&c).with_vectors(good.view()),
            &EncodedOptions::default(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("stores no vectors"), "{e}");
    let e = Index::create_with(
        scratch_dir().path(),
        &model(),
        &CreateOptions {
            store_vectors: Some(VectorSpec::new(VectorDType::F32, 0)),
            ..CreateOptions::default()
        },
        Config::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("store_vectors"), "{e}");
}
