//! A snapshot owns its index's model and class means: searching and classifying need only the
//! snapshot; the model is decoded once per model file and the class means projected once per
//! class table, kept by the index handle (shared by its versions), not by process-global state.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::ptr;

use codedb::admin::inspect_dir;
use codedb::admin::verify_path;
use codedb::format::{CodeKind, FileId, ModelFile};
use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb::{ClassSource, NewClass};
use codedb::{CompactionPolicy, Config, Index, Snapshot};
use codedb::{EncodedOptions, RowBatch};
use codedb::{SearchError, SearchMode, SearchParams};
use ndarray::{Array2, array};

/// A 3-D → 3 × float32 model (codes are the vectors themselves).
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

fn codes(m: &Model, x: &Array2<f32>) -> Vec<u8> {
    m.encode(x.view()).unwrap()
}

#[test]
fn versions_of_one_index_share_the_decoded_model_and_their_class_means() {
    let dir = tempfile::tempdir().unwrap();
    let m = float_model();
    let index = Index::create(dir.path(), &m.to_model_file(), Config::default()).unwrap();
    index
        .add_new_classes(&[
            NewClass::new("a", ClassSource::Mean(&[0.0, 0.0, 0.0])),
            NewClass::new("b", ClassSource::Mean(&[1.0, 1.0, 1.0])),
        ])
        .unwrap();
    index.commit().unwrap();
    let q = array![[0.9f32, 1.0, 1.1]];
    let s1 = index.snapshot();
    assert_eq!(s1.model().unwrap().id(), m.id());
    assert_eq!(s1.model_file().model_id, m.id());
    assert_eq!(s1.classify(q.view(), 1).unwrap()[0][0].name, "b");

    // A commit of rows only: a new version, the same decoded model and class means.
    let rows = array![[1.0f32, 1.0, 1.0], [0.0, 0.0, 0.5]];
    index
        .add_encoded(
            &RowBatch::new(&codes(&m, &rows)),
            &EncodedOptions::default(),
        )
        .unwrap();
    index.commit().unwrap();
    let s2 = index.snapshot();
    assert!(s2.version() > s1.version());
    assert!(ptr::eq(s1.model().unwrap(), s2.model().unwrap()));
    assert!(ptr::eq(
        s1.class_means().unwrap(),
        s2.class_means().unwrap()
    ));
    let hits = s2
        .search(q.view(), &SearchParams::new(1, SearchMode::FloatL2))
        .unwrap();
    assert_eq!(hits[0][0].id, 0);

    // New class records: the new version projects its own means; the old snapshot keeps its.
    index
        .add_new_classes(&[NewClass::new("c", ClassSource::Mean(&[5.0, 5.0, 5.0]))])
        .unwrap();
    index.commit().unwrap();
    let s3 = index.snapshot();
    assert!(ptr::eq(s1.model().unwrap(), s3.model().unwrap()));
    assert!(!ptr::eq(
        s2.class_means().unwrap(),
        s3.class_means().unwrap()
    ));
    assert_eq!(s2.class_means().unwrap().len(), 2);
    assert_eq!(s3.class_means().unwrap().len(), 3);
    let far = array![[4.0f32, 6.0, 5.0]];
    assert_eq!(s3.classify(far.view(), 1).unwrap()[0][0].name, "c");
    assert_eq!(s2.classify(far.view(), 1).unwrap()[0][0].name, "b");

    // A compaction that folds the class files: the same answers from the same model.
    index.compact(&CompactionPolicy::full()).unwrap();
    let s4 = index.snapshot();
    assert!(s4.version() > s3.version());
    assert!(ptr::eq(s1.model().unwrap(), s4.model().unwrap()));
    assert_eq!(
        s4.classify(far.view(), 3).unwrap(),
        s3.classify(far.view(), 3).unwrap()
    );

    // A snapshot opened from disk decodes its own model, with the same answers.
    let s5 = Snapshot::open(dir.path()).unwrap();
    assert!(!ptr::eq(s4.model().unwrap(), s5.model().unwrap()));
    assert_eq!(s5.model().unwrap().id(), m.id());
    assert_eq!(
        s5.classify(far.view(), 3).unwrap(),
        s4.classify(far.view(), 3).unwrap()
    );
}

#[test]
fn an_index_whose_model_does_not_decode_still_reads_inspects_and_verifies() {
    // A model file with no stages: it reads (the engine stores codes without interpreting
    // the model) but does not decode to a `Model`.
    let mf = ModelFile {
        model_id: FileId::from_u128(0x5EED_0000_0000_0000_0000_0000_0000_0007),
        input_dim: 4,
        code_kind: CodeKind::Binary,
        code_bytes: 8,
        code_bits: 64,
        stages: vec![],
        skipped_stages: vec![],
    };
    let dir = tempfile::tempdir().unwrap();
    let index = Index::create(dir.path(), &mf, Config::default()).unwrap();
    index
        .add_encoded(&RowBatch::new(&[7u8; 16]), &EncodedOptions::default())
        .unwrap();
    index.commit().unwrap();
    drop(index);

    let snap = Snapshot::open(dir.path()).unwrap();
    assert_eq!(snap.rows().unwrap().count(), 2);
    assert_eq!(snap.model_file().model_id, mf.model_id);
    // The decoding error, every time it is asked for (a failure is not cached).
    let first = snap.model().unwrap_err().to_string();
    assert_eq!(snap.model().unwrap_err().to_string(), first);
    let q = Array2::<f32>::zeros((1, 4));
    let e = snap
        .search(q.view(), &SearchParams::new(1, SearchMode::Hamming))
        .unwrap_err();
    assert!(matches!(e, SearchError::Model(_)), "{e}");
    assert_eq!(e.to_string(), first);
    assert!(snap.search_radius(q.view(), 1).is_err());
    assert!(snap.classify(q.view(), 1).is_err());

    // Inspection and verification read the model file as stored.
    let report = inspect_dir(dir.path()).unwrap();
    assert_eq!(report.rows, 2);
    let v = verify_path(dir.path(), &mut |_| {});
    assert!(v.ok(), "{:?}", v.problems);
}
