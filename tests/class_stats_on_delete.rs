//! Class means follow deletes and upserts (issue 13, item 5): a labelled row that counts in a
//! class leaves it in the same commit — its stored vector subtracted from the class's sum, its
//! count one less — through plain deletes, deletes of uncommitted rows, upserts, compaction and
//! a reopen; a class whose rows are all gone has count 0 and is never a classification answer;
//! an index without stored vectors refuses rather than keep a stale mean unless told to keep the
//! class statistics; and the writer refuses the states that would make a subtraction wrong.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use codedb::format::{ClassTable, VectorDType};
use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb::{AddOptions, BuildOptions, ClassStats, CompactionPolicy, Config, Index, StorageError};
use codedb::{ClassError, ClassSource, NewClass};
use codedb::{EncodedOptions, RowBatch};
use common::npy::digits;
use ndarray::{Array2, ArrayView2, Axis};

fn model(x: ArrayView2<f32>) -> Model {
    let opts = TrainOptions {
        seed: 3,
        ..TrainOptions::default()
    };
    train(&PipelineSpec::parse("pca:16,float").unwrap(), x, &opts)
        .unwrap()
        .0
}

/// Builds an index of the first `n` digits with labels (so a class table), ids 0.., and the
/// given stored vectors.
fn build(
    dir: &Path,
    x: &Array2<f32>,
    y: &[u32],
    n: usize,
    vectors: Option<VectorDType>,
) -> (Index, Model) {
    let m = model(x.view());
    let idx = Index::build(
        dir,
        &m,
        x.slice(ndarray::s![..n, ..]),
        &BuildOptions {
            labels: Some(&y[..n]),
            store_vectors: vectors,
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    (idx, m)
}

/// Count and f64 sum of the rows `ids` of `x`, each value first stored as `dtype`.
fn direct(x: &Array2<f32>, ids: &[u64], dtype: VectorDType) -> (u64, Vec<f64>) {
    let mut sum = vec![0f64; x.ncols()];
    for &i in ids {
        for (s, v) in sum.iter_mut().zip(x.row(i as usize)) {
            *s += match dtype {
                VectorDType::F32 => *v as f64,
                VectorDType::F16 => half::f16::from_f32(*v).to_f32() as f64,
            };
        }
    }
    (ids.len() as u64, sum)
}

fn class(t: &ClassTable, id: u32) -> (u64, Vec<f64>) {
    let c = t.classes.iter().find(|c| c.id == id).unwrap();
    (c.count, c.sum.clone())
}

/// The class's count equals `want`'s and its sum agrees value by value to a relative 1e-12
/// (f64 rounding of the additions and subtractions).
fn assert_class(t: &ClassTable, id: u32, want: &(u64, Vec<f64>), what: &str) {
    let (n, sum) = class(t, id);
    assert_eq!(n, want.0, "{what}: count of class {id}");
    let scale = want.1.iter().fold(1f64, |a, v| a.max(v.abs()));
    for (j, (a, b)) in sum.iter().zip(&want.1).enumerate() {
        assert!(
            (a - b).abs() <= 1e-12 * scale,
            "{what}: class {id} column {j}: {a} vs {b}"
        );
    }
}

/// Live ids per label.
fn ids_by_label(y: &[u32], n: usize) -> BTreeMap<u32, Vec<u64>> {
    let mut m: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for (i, &l) in y[..n].iter().enumerate() {
        m.entry(l).or_default().push(i as u64);
    }
    m
}

#[test]
fn deletes_take_rows_out_of_their_classes_exactly_through_compaction_and_reopen() {
    let (x, y) = digits();
    for dtype in [VectorDType::F32, VectorDType::F16] {
        let tmp = tempfile::tempdir().unwrap();
        let n = 1000;
        let (idx, _) = build(tmp.path(), &x, &y, n, Some(dtype));
        let mut live = ids_by_label(&y, n);
        // The class table of the build holds what is stored: f16-rounded rows with f16.
        let t = idx.snapshot().classes().unwrap().clone();
        for (&c, ids) in &live {
            assert_class(&t, c, &direct(&x, ids, dtype), "after build");
        }
        // Half of class 3, every row of class 0, one row of class 5.
        let half: Vec<u64> = live[&3].iter().copied().step_by(2).collect();
        let zero = live[&0].clone();
        let one = live[&5][0];
        idx.delete(&half).unwrap();
        idx.delete(&zero).unwrap();
        idx.delete(&[one]).unwrap();
        idx.commit().unwrap();
        live.get_mut(&3).unwrap().retain(|i| !half.contains(i));
        live.get_mut(&0).unwrap().clear();
        live.get_mut(&5).unwrap().retain(|&i| i != one);
        let check = |t: &ClassTable, what: &str| {
            for (&c, ids) in &live {
                assert_class(t, c, &direct(&x, ids, dtype), what);
            }
            let zero = t.classes.iter().find(|c| c.id == 0).unwrap();
            assert_eq!(zero.count, 0, "{what}");
            assert!(
                zero.sum.iter().all(|v| v.to_bits() == 0),
                "{what}: sum exactly 0"
            );
            assert_eq!(
                zero.name, "0",
                "{what}: the class stays, as a hierarchy node"
            );
        };
        check(
            idx.snapshot().classes().unwrap(),
            &format!("{dtype:?} after the delete commit"),
        );
        // Rows added and deleted before a commit leave no trace either.
        let extra: Vec<usize> = (n..n + 20).collect();
        let xe = x.select(Axis(0), &extra);
        let ye: Vec<u32> = extra.iter().map(|&i| y[i]).collect();
        let ids: Vec<u64> = extra.iter().map(|&i| i as u64).collect();
        idx.add(
            xe.view(),
            &AddOptions {
                ids: Some(&ids),
                labels: Some(&ye),
                ..AddOptions::default()
            },
        )
        .unwrap();
        idx.delete(&ids[..10]).unwrap();
        idx.commit().unwrap();
        for (&i, &l) in ids[10..].iter().zip(&ye[10..]) {
            live.entry(l).or_default().push(i);
        }
        // Class 0 may have come back with rows 1000.. : recompute its expectation.
        let t = idx.snapshot().classes().unwrap().clone();
        for (&c, ids) in &live {
            assert_class(
                &t,
                c,
                &direct(&x, ids, dtype),
                "after add + delete in one commit",
            );
        }
        // Compaction folds the removals into a new base table and drops the rows.
        idx.commit_sealed().unwrap();
        idx.compact(&CompactionPolicy::full()).unwrap();
        let s = idx.snapshot();
        assert_eq!(s.manifest().class_files.len(), 1, "deltas folded");
        assert_eq!(s.deleted_rows(), 0);
        let folded = s.classes().unwrap().clone();
        assert!(folded.classes.iter().all(|c| c.removed == 0));
        for (&c, ids) in &live {
            assert_class(&folded, c, &direct(&x, ids, dtype), "after compaction");
        }
        drop(s);
        drop(idx);
        let again = Index::open(tmp.path(), Config::default()).unwrap();
        assert_eq!(again.snapshot().classes().unwrap(), &folded, "after reopen");
    }
}

#[test]
fn a_class_without_rows_is_never_a_classification_answer() {
    let (x, y) = digits();
    let tmp = tempfile::tempdir().unwrap();
    let n = 600;
    let (idx, _) = build(tmp.path(), &x, &y, n, Some(VectorDType::F32));
    let q = x.slice(ndarray::s![n..n + 200, ..]);
    let before = idx.snapshot().classify(q, 1).unwrap();
    assert!(
        before.iter().any(|l| l[0].id == 0),
        "class 0 wins some queries before"
    );
    let zero = ids_by_label(&y, n)[&0].clone();
    idx.delete(&zero).unwrap();
    idx.commit().unwrap();
    let s = idx.snapshot();
    let all = s.classify(q, 10).unwrap();
    for l in &all {
        assert_eq!(l.len(), 9, "nine classes have a mean");
        assert!(l.iter().all(|c| c.id != 0));
    }
    // Labelled rows of the class give it its mean again.
    let back: Vec<usize> = (n..x.nrows()).filter(|&i| y[i] == 0).take(3).collect();
    let labels = vec![0u32; back.len()];
    idx.add(
        x.select(Axis(0), &back).view(),
        &AddOptions {
            labels: Some(&labels),
            ..AddOptions::default()
        },
    )
    .unwrap();
    idx.commit().unwrap();
    let t = idx.snapshot().classes().unwrap().clone();
    let ids: Vec<u64> = back.iter().map(|&i| i as u64).collect();
    assert_class(&t, 0, &direct(&x, &ids, VectorDType::F32), "class 0 again");
}

#[test]
fn upserts_move_rows_between_classes_exactly() {
    let (x, y) = digits();
    let tmp = tempfile::tempdir().unwrap();
    let n = 500;
    let (idx, _) = build(tmp.path(), &x, &y, n, Some(VectorDType::F32));
    let mut live = ids_by_label(&y, n);
    // Replace rows 0..30 (committed, in the segment) with other images and other labels, and
    // then replace row 0 again before the commit (its first replacement is in the log).
    let ids: Vec<u64> = (0..30).collect();
    let src: Vec<usize> = (n..n + 30).collect();
    let labels: Vec<u32> = src.iter().map(|&i| y[i]).collect();
    let (_, replaced) = idx
        .upsert(
            x.select(Axis(0), &src).view(),
            &AddOptions {
                ids: Some(&ids),
                labels: Some(&labels),
                ..AddOptions::default()
            },
        )
        .unwrap();
    assert_eq!(replaced, 30);
    let again = [n + 40];
    let again_label = [y[n + 40]];
    idx.upsert(
        x.select(Axis(0), &again).view(),
        &AddOptions {
            ids: Some(&[0]),
            labels: Some(&again_label),
            class_stats: ClassStats::Update,
            ..AddOptions::default()
        },
    )
    .unwrap();
    idx.commit().unwrap();
    // Expected: the class of every row as it is now, over the vector it now stores.
    let mut rows: BTreeMap<u64, usize> = (0..n as u64).map(|i| (i, i as usize)).collect();
    for (&id, &s) in ids.iter().zip(&src) {
        rows.insert(id, s);
    }
    rows.insert(0, n + 40);
    live.clear();
    for (&id, &s) in &rows {
        live.entry(y[s]).or_default().push(id);
    }
    let t = idx.snapshot().classes().unwrap().clone();
    for (&c, ids) in &live {
        let src: Vec<u64> = ids.iter().map(|id| rows[id] as u64).collect();
        assert_class(&t, c, &direct(&x, &src, VectorDType::F32), "after upserts");
    }
}

#[test]
fn without_stored_vectors_a_counted_row_is_not_removed_silently() {
    let (x, y) = digits();
    let tmp = tempfile::tempdir().unwrap();
    let n = 300;
    let (idx, m) = build(tmp.path(), &x, &y, n, None);
    let before = idx.snapshot().classes().unwrap().clone();
    let version = idx.version();
    let e = idx.delete(&[5, 6]).unwrap_err();
    assert!(
        matches!(e, StorageError::ClassStatsNeedVectors { id: 5, .. }),
        "{e}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("--keep-class-stats") && msg.contains("--store-vectors"),
        "{msg}"
    );
    assert!(!idx.has_uncommitted(), "nothing staged");
    let e = idx
        .upsert(
            x.slice(ndarray::s![n..n + 1, ..]),
            &AddOptions {
                ids: Some(&[7]),
                labels: Some(&[y[n]]),
                ..AddOptions::default()
            },
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            ClassError::Storage(StorageError::ClassStatsNeedVectors { id: 7, .. })
        ),
        "{e}"
    );
    assert!(!idx.has_uncommitted(), "nothing staged");
    assert_eq!(idx.commit().unwrap(), version);
    // Told to, the delete keeps the classes as they are.
    idx.delete_with(&[5, 6], ClassStats::Keep).unwrap();
    idx.commit().unwrap();
    assert_eq!(idx.snapshot().classes().unwrap(), &before);
    assert!(idx.snapshot().get(5).unwrap().is_none());
    // So does an upsert told to: the replaced row stays in its class, the new one joins its.
    let (_, replaced) = idx
        .upsert(
            x.slice(ndarray::s![n..n + 1, ..]),
            &AddOptions {
                ids: Some(&[7]),
                labels: Some(&[y[n]]),
                class_stats: ClassStats::Keep,
                ..AddOptions::default()
            },
        )
        .unwrap();
    assert_eq!(replaced, 1);
    idx.commit().unwrap();
    let t = idx.snapshot().classes().unwrap().clone();
    for c in &before.classes {
        assert_eq!(
            class(&t, c.id).0,
            c.count + u64::from(c.id == y[n]),
            "class {}",
            c.id
        );
    }
    // Rows with no label, or a label that is no class, need nothing.
    let plain = tempfile::tempdir().unwrap();
    let i2 = Index::create(plain.path(), &m.to_model_file(), Config::default()).unwrap();
    let codes = m.encode(x.slice(ndarray::s![..4, ..])).unwrap();
    i2.add_encoded(
        &RowBatch::new(&codes).with_labels(&[1, 2, 3, 4]),
        &EncodedOptions::default(),
    )
    .unwrap();
    i2.commit().unwrap();
    i2.delete(&[0, 1]).unwrap();
    i2.commit().unwrap();
}

#[test]
fn the_writer_refuses_labels_that_a_class_would_not_count() {
    let (x, y) = digits();
    let tmp = tempfile::tempdir().unwrap();
    let n = 200;
    let (idx, m) = build(tmp.path(), &x, &y, n, Some(VectorDType::F32));
    let xs = x.slice(ndarray::s![n..n + 2, ..]);
    let codes = m.encode(xs).unwrap();
    // Raw codes labelled with a class, without class records counting them.
    let e = idx
        .add_encoded(
            &codedb::RowBatch::new(&codes)
                .with_labels(&[3, 4])
                .with_vectors(xs),
            &EncodedOptions::default(),
        )
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("label 3, a class of the class table"),
        "{e}"
    );
    // Labels that are no class are stored on the rows only...
    idx.add_encoded(
        &codedb::RowBatch::new(&codes)
            .with_labels(&[40, 41])
            .with_vectors(xs),
        &EncodedOptions::default(),
    )
    .unwrap();
    // ...and a new class cannot take them afterwards (the rows were never counted in it).
    let mean = vec![0f32; x.ncols()];
    let e = idx
        .add_new_classes(&[NewClass::new("forty", ClassSource::Mean(&mean)).with_id(40)])
        .unwrap_err();
    assert!(matches!(e, ClassError::DuplicateId { id: 40, .. }), "{e}");
    let rec = codedb::format::ClassRecord {
        id: 41,
        name: "forty-one".into(),
        parent: None,
        count: 1,
        sum: mean.iter().map(|&v| v as f64).collect(),
        centroids: Vec::new(),
        removed: 0,
    };
    let e = idx.add_class(std::slice::from_ref(&rec)).unwrap_err();
    assert!(
        e.to_string()
            .contains("class id 41 is the label of live rows"),
        "{e}"
    );
    // An automatic id goes past them.
    let p = idx
        .add_new_classes(&[NewClass::new("auto", ClassSource::Mean(&mean))])
        .unwrap();
    assert_eq!(p[0].record.id, 42);
    // Names with control characters are refused wherever classes are created.
    for bad in ["tab\there", "new\nline", "esc\x1b[31m", "nul\0", "c1\u{85}"] {
        let e = idx
            .add_new_classes(&[NewClass::new(bad, ClassSource::Mean(&mean))])
            .unwrap_err();
        assert!(e.to_string().contains("control character"), "{bad:?}: {e}");
        let e = idx
            .add_class(&[codedb::format::ClassRecord {
                id: 77,
                name: bad.into(),
                ..rec.clone()
            }])
            .unwrap_err();
        assert!(e.to_string().contains("control character"), "{bad:?}: {e}");
    }
    // A tidy name with spaces and non-ASCII letters is fine.
    idx.add_new_classes(&[NewClass::new(
        "ankle boot, größe 42",
        ClassSource::Mean(&mean),
    )])
    .unwrap();
}
