//! `Snapshot::open_version`: a reader pins a version that is not the newest (how a sharded
//! index's readers pin the versions a cut record names, FORMAT.md §8.2), and `verify` reads a
//! shard's cut record beside its index.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use codedb::admin::{SHARD_CUT_FILE, parse_shard_cut, verify_path};
use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb::{Config, EncodedOptions, Index, RowBatch, Snapshot, StorageError};
use ndarray::{Array2, array};

fn float_model() -> Model {
    let x = array![[0.0f32, 1.0, 2.0], [1.0, 0.5, 0.25], [4.0, 2.0, 1.0]];
    train(
        &PipelineSpec::parse("float").unwrap(),
        x.view(),
        &TrainOptions::default(),
    )
    .unwrap()
    .0
}

fn add(index: &Index, m: &Model, rows: &Array2<f32>) {
    let codes = m.encode(rows.view()).unwrap();
    index
        .add_encoded(&RowBatch::new(&codes), &EncodedOptions::default())
        .unwrap();
    index.commit().unwrap();
}

#[test]
fn an_older_version_opens_as_it_was_committed() {
    let dir = tempfile::tempdir().unwrap();
    let m = float_model();
    let index = Index::create(dir.path(), &m.to_model_file(), Config::default()).unwrap();
    add(&index, &m, &array![[1.0f32, 1.0, 1.0], [0.0, 0.0, 0.5]]);
    add(&index, &m, &array![[2.0f32, 1.0, 1.0]]);
    let v2 = Snapshot::open_version(dir.path(), 2).unwrap();
    let v3 = Snapshot::open_version(dir.path(), 3).unwrap();
    assert_eq!((v2.version(), v2.live_rows()), (2, 2));
    assert_eq!((v3.version(), v3.live_rows()), (3, 3));
    assert_eq!(Snapshot::open(dir.path()).unwrap().version(), 3);
    assert!(v2.skipped_manifests().is_empty());
    let err = Snapshot::open_version(dir.path(), 9).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("invalid argument version") && text.contains("versions there: 1, 2, 3"),
        "{text}"
    );
    let none = tempfile::tempdir().unwrap();
    assert!(matches!(
        Snapshot::open_version(none.path(), 1),
        Err(StorageError::NotAnIndex { .. })
    ));
}

#[test]
fn verify_reads_a_cut_record_and_names_a_damaged_one() {
    let dir = tempfile::tempdir().unwrap();
    let m = float_model();
    let index = Index::create(dir.path(), &m.to_model_file(), Config::default()).unwrap();
    add(&index, &m, &array![[1.0f32, 1.0, 1.0]]);
    let body =
        r#"{"format":1,"layout":"0123456789abcdef0123456789abcdef","cut":2,"versions":[2,5]}"#;
    let good = format!("{body}\ncrc32 {:08x}\n", crc32fast::hash(body.as_bytes()));
    assert_eq!(
        parse_shard_cut(good.as_bytes()).unwrap().versions,
        vec![2, 5]
    );
    std::fs::write(dir.path().join(SHARD_CUT_FILE), &good).unwrap();
    let v = verify_path(dir.path(), &mut |_| {});
    assert!(v.ok(), "{:?}", v.problems);
    assert!(!v.unreferenced.iter().any(|n| n == SHARD_CUT_FILE));
    index.gc().unwrap();
    assert!(
        dir.path().join(SHARD_CUT_FILE).exists(),
        "GC removes codedb names only"
    );
    std::fs::write(
        dir.path().join(SHARD_CUT_FILE),
        good.replace("[2,5]", "[2,6]"),
    )
    .unwrap();
    let v = verify_path(dir.path(), &mut |_| {});
    assert!(!v.ok());
    assert!(format!("{:?}", v.problems).contains("cut record does not read"));
}
