//! Damaged manifests: a reader that falls back says so, no writer builds on the older version,
//! garbage collection removes nothing a manifest it cannot read might name, and
//! `Index::recover` is the explicit decision that sets the damage aside and lets writers work.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod common;
mod storage_support;

use std::path::Path;

use codedb::{CompactionPolicy, Config, Index, Snapshot, StorageError};
use codedb::{EncodedOptions, RowBatch};
use common::files::{dir_bytes, flip_middle};
use storage_support::*;

const V: fn(u64) -> String = |v| format!("v{v:020}.manifest");

/// An index whose version 4 deletes ids 10, 20, 30 and 55 (one bitmap each for the sealed
/// segment and the log) and appends id 60 to the log; returns the rows of version 3.
fn index_with_deletes_in_v4(dir: &Path) -> RowMap {
    let idx = Index::create(dir, &model(), small_config(1 << 20)).unwrap();
    idx.add_encoded(
        &RowBatch::new(&codes(&(0..50).collect::<Vec<_>>(), 0)),
        &EncodedOptions::default(),
    )
    .unwrap();
    idx.commit_sealed().unwrap();
    idx.add_encoded(
        &RowBatch::new(&codes(&(50..60).collect::<Vec<_>>(), 0)),
        &EncodedOptions::default(),
    )
    .unwrap();
    assert_eq!(idx.commit().unwrap(), 3);
    let v3 = rows_of(&idx.snapshot());
    idx.delete(&[10, 20, 30, 55]).unwrap();
    idx.add_encoded(&RowBatch::new(&codes(&[60], 0)), &EncodedOptions::default())
        .unwrap();
    assert_eq!(idx.commit().unwrap(), 4);
    v3
}

#[test]
fn a_damaged_newest_manifest_is_reported_on_every_open_and_refuses_every_writer() {
    let dir = tempfile::tempdir().unwrap();
    let v3 = index_with_deletes_in_v4(dir.path());
    flip_middle(&dir.path().join(V(4)));
    let before = dir_bytes(dir.path());

    // Readers serve version 3 and say so.
    let snap = Snapshot::open(dir.path()).unwrap();
    assert_eq!(snap.version(), 3);
    assert_eq!(snap.skipped_manifests().len(), 1);
    assert_eq!(snap.skipped_manifests()[0].version, 4);
    assert_eq!(
        rows_of(&snap),
        v3,
        "the deleted rows are back: hence the warning"
    );

    // A writer opens, reports, and refuses everything.
    let idx = Index::open(dir.path(), small_config(1 << 20)).unwrap();
    let rec = idx.recovery();
    assert_eq!(rec.version, 3);
    assert_eq!(rec.skipped_manifests.len(), 1);
    assert_eq!(rec.skipped_manifests[0].version, 4);
    assert_eq!(rec.skipped_manifests[0].file, V(4));
    assert!(
        rec.skipped_manifests[0].error.contains("checksum"),
        "{rec:?}"
    );
    assert!(!rec.is_clean());
    assert_eq!(idx.snapshot().skipped_manifests(), rec.skipped_manifests);
    let refused: Vec<(&str, StorageError)> = vec![
        ("check_writable", idx.check_writable().unwrap_err()),
        (
            "add",
            idx.add_encoded(
                &RowBatch::new(&codes(&[100], 0)),
                &EncodedOptions::default(),
            )
            .unwrap_err(),
        ),
        (
            "upsert",
            idx.upsert_encoded(
                &RowBatch::new(&codes(&[1], 1)).with_ids(&[1]),
                &EncodedOptions::default(),
            )
            .unwrap_err(),
        ),
        ("delete", idx.delete(&[1]).unwrap_err()),
        (
            "add_class",
            idx.add_class(&[class(1, "a", None, 1, 4, 0.5)])
                .unwrap_err(),
        ),
        ("commit", idx.commit().unwrap_err()),
        ("commit_sealed", idx.commit_sealed().unwrap_err()),
        (
            "compact",
            idx.compact(&CompactionPolicy::full()).unwrap_err(),
        ),
        ("gc", idx.gc().unwrap_err()),
    ];
    for (what, e) in refused {
        assert!(
            matches!(&e, StorageError::FellBack { version: 3, skipped, .. } if skipped[0].version == 4),
            "{what}: {e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains("--to-version 3") && msg.contains(&V(4)),
            "{what}: {msg}"
        );
    }
    drop(idx);
    assert_eq!(
        dir_bytes(dir.path()),
        before,
        "a fallen-back writer changes nothing: no log tail cut, no bitmap of version 4 removed"
    );
}

#[test]
fn recover_keeps_the_newest_readable_version_under_a_new_number_and_records_the_loss() {
    let dir = tempfile::tempdir().unwrap();
    let v3 = index_with_deletes_in_v4(dir.path());
    flip_middle(&dir.path().join(V(4)));
    let damaged = std::fs::read(dir.path().join(V(4))).unwrap();

    for wrong in [2, 4, 9] {
        let e = Index::recover(dir.path(), wrong, small_config(1 << 20)).unwrap_err();
        assert!(
            matches!(&e, StorageError::InvalidArgument { argument, .. } if argument == "to_version"),
            "{e}"
        );
        assert!(
            e.to_string().contains("newest version that reads, 3"),
            "{e}"
        );
    }
    assert!(
        dir.path().join(V(4)).exists(),
        "a refused recover changes nothing"
    );

    let idx = Index::recover(dir.path(), 3, small_config(1 << 20)).unwrap();
    assert_eq!(
        idx.version(),
        5,
        "the kept version is numbered above the dropped one"
    );
    assert!(idx.recovery().skipped_manifests.is_empty());
    let r = idx.recovery().recovered.clone().unwrap();
    assert_eq!((r.kept_version, r.published_version), (3, Some(5)));
    assert_eq!(r.dropped.len(), 1);
    assert_eq!(r.dropped[0].version, 4);
    assert_eq!(r.dropped[0].moved_to, format!("recovered/{}", V(4)));
    assert!(!dir.path().join(V(4)).exists());
    assert_eq!(
        std::fs::read(dir.path().join("recovered").join(V(4))).unwrap(),
        damaged,
        "the damaged manifest is kept, unchanged"
    );
    let records = codedb::admin::recovery_records(dir.path());
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].1.as_ref().unwrap(), &r);
    assert_eq!(rows_of(&idx.snapshot()), v3);

    // Writers work again, and never reuse a dropped version number.
    idx.delete(&[10]).unwrap();
    assert_eq!(idx.commit().unwrap(), 6);
    idx.gc().unwrap();
    drop(idx);
    let snap = Snapshot::open(dir.path()).unwrap();
    assert!(snap.skipped_manifests().is_empty());
    assert_eq!(snap.version(), 6);
    assert_verifies(dir.path());

    let e = Index::recover(dir.path(), 6, small_config(1 << 20)).unwrap_err();
    assert!(e.to_string().contains("nothing to recover"), "{e}");
}

#[test]
fn gc_removes_nothing_while_an_older_manifest_does_not_read() {
    let dir = tempfile::tempdir().unwrap();
    index_with_deletes_in_v4(dir.path());
    flip_middle(&dir.path().join(V(2)));
    let idx = Index::open(dir.path(), small_config(1 << 20)).unwrap();
    assert_eq!(
        idx.version(),
        4,
        "an older damaged manifest is no fall-back"
    );
    idx.check_writable().unwrap();
    let before = dir_bytes(dir.path());
    let e = idx.gc().unwrap_err();
    assert!(
        matches!(&e, StorageError::DamagedManifest { damaged, .. } if damaged[0].version == 2),
        "{e}"
    );
    assert!(e.to_string().contains("--to-version 4"), "{e}");
    assert_eq!(dir_bytes(dir.path()), before, "GC removed nothing");
    // Writers still work; the compaction's own GC reports the refusal.
    idx.add_encoded(
        &RowBatch::new(&codes(&[500], 0)),
        &EncodedOptions::default(),
    )
    .unwrap();
    assert_eq!(idx.commit().unwrap(), 5);
    let r = idx.compact(&CompactionPolicy::full()).unwrap();
    assert!(r.version.is_some());
    assert!(r.gc.is_none());
    assert!(
        r.gc_error
            .unwrap()
            .to_string()
            .contains("garbage collection refused")
    );
    drop(idx);

    let idx = Index::recover(dir.path(), 6, small_config(1 << 20)).unwrap();
    let r = idx.recovery().recovered.clone().unwrap();
    assert_eq!((r.kept_version, r.published_version), (6, None));
    assert_eq!(r.dropped[0].version, 2);
    assert_eq!(idx.version(), 6);
    assert!(!idx.gc().unwrap().removed.is_empty());
    drop(idx);
    assert_verifies(dir.path());
}

#[test]
fn writers_create_nothing_in_a_directory_that_is_not_an_index() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
    for e in [
        Index::open(dir.path(), Config::default()).unwrap_err(),
        Index::recover(dir.path(), 1, Config::default()).unwrap_err(),
    ] {
        assert!(matches!(e, StorageError::NotAnIndex { .. }), "{e}");
    }
    assert_eq!(files(dir.path()), vec!["notes.txt".to_string()]);
    let e = codedb::admin::list_versions(dir.path()).unwrap_err();
    assert!(matches!(e, StorageError::NotAnIndex { .. }), "{e}");
}
