//! Learning from PQ codes decoded per mini-batch (Mensink et al. TPAMI 2013, §5.1): the
//! streamed path of `train_from_index` / `fit_classifier_from_index` holds the codes, not the
//! decoded floats, and must change memory only: the model (pipeline `ncmml:C,…`) and the
//! classifiers `ncm`, `ncmml:d`, `ncmc:dxk` equal, bit for bit, those fitted on the explicitly
//! decoded matrix with the same seed. Also the errors of the index side: non-PQ codes, no
//! live rows, unlabelled rows.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod common;

use codedb::model::{Classifier, ClassifierSpec, ClassifyOptions, fit_classifier};
use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb::{Config, Index, Snapshot};
use codedb::{EncodedOptions, RowBatch};
use codedb::{fit_classifier_from_index, train_from_index};
use ndarray::{Array2, Axis};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/digits");

struct Data {
    x: Array2<f32>,
    y: Vec<i64>,
}

fn digits() -> Data {
    let x = common::npy::load_vectors(format!("{DIR}/pixels.npy"));
    let y = common::npy::load_labels(format!("{DIR}/labels.npy"));
    let tr: Vec<usize> = (0..y.len()).step_by(2).collect();
    Data {
        x: x.select(Axis(0), &tr),
        y: tr.iter().map(|&i| y[i]).collect(),
    }
}

/// An index of `d` under a model trained by `spec`, labelled if asked; returns the model.
fn build_index(dir: &std::path::Path, spec: &str, d: &Data, labelled: bool) -> Model {
    let (model, _) = train(
        &PipelineSpec::parse(spec).unwrap(),
        d.x.view(),
        &TrainOptions::default(),
    )
    .unwrap();
    let index = Index::create(dir, &model.to_model_file(), Config::default()).unwrap();
    let codes = model.encode(d.x.view()).unwrap();
    let labels: Vec<u32> = d.y.iter().map(|&l| l as u32).collect();
    index
        .add_encoded(
            &RowBatch {
                labels: labelled.then_some(&labels[..]),
                ..RowBatch::new(&codes)
            },
            &EncodedOptions::default(),
        )
        .unwrap();
    index.commit().unwrap();
    model
}

/// The live rows of the index decoded explicitly (snapshot order) and their labels.
fn decoded(snap: &Snapshot, model: &Model) -> (Array2<f32>, Vec<i64>) {
    let mut codes = Vec::new();
    let mut labels = Vec::new();
    for r in snap.rows().unwrap() {
        codes.extend_from_slice(r.code);
        labels.push(i64::from(r.label.unwrap()));
    }
    (model.decode(&codes).unwrap(), labels)
}

/// The index's transforms (before its PQ stage) followed by `trained`.
fn with_prefix(index_model: &Model, trained: Model) -> Model {
    let st = index_model.stages();
    let mut stages = st[..st.len() - 1].to_vec();
    stages.extend(trained.stages().iter().cloned());
    Model::new(stages).unwrap()
}

#[test]
fn streamed_ncmml_pipeline_equals_training_on_the_decoded_matrix() {
    let d = digits();
    let tmp = tempfile::tempdir().unwrap();
    for (index_spec, spec, sample) in [
        ("pq:16x8", "ncmml:32,float", None),
        ("pca:32,pq:8x8", "ncmml:16,itq,bits", None),
        ("pq:16x8", "ncmml:24,pq:4x4", Some(600)),
    ] {
        let dir = tmp.path().join(index_spec.replace([':', ','], "_"));
        if !dir.exists() {
            build_index(&dir, index_spec, &d, true);
        }
        let snap = Snapshot::open(&dir).unwrap();
        let index_model = snap.model().unwrap();
        let spec = PipelineSpec::parse(spec).unwrap();
        let opts = TrainOptions {
            seed: 77,
            sample,
            ..TrainOptions::default()
        };
        let (streamed, report) = train_from_index(&snap, &spec, &opts).unwrap();
        let (x, y) = decoded(&snap, index_model);
        let (dense, dense_report) = train(
            &spec,
            x.view(),
            &TrainOptions {
                labels: Some(y.into()),
                ..opts.clone()
            },
        )
        .unwrap();
        let dense = with_prefix(index_model, dense);
        // (Model ids are random per model: compare the stages.)
        assert_eq!(
            streamed.stages(),
            dense.stages(),
            "{index_spec} / {}: streamed != decoded",
            spec.text
        );
        assert_eq!(report.training_rows, dense_report.training_rows);
        assert_eq!(report.training_rows, sample.unwrap_or(d.y.len()));
        assert_eq!(streamed.input_dim(), 64);
    }
}

#[test]
fn streamed_classifiers_equal_fitting_on_the_decoded_matrix() {
    let d = digits();
    let tmp = tempfile::tempdir().unwrap();
    for index_spec in ["pq:16x8", "pca:32,pq:8x8"] {
        let dir = tmp.path().join(index_spec.replace([':', ','], "_"));
        build_index(&dir, index_spec, &d, true);
        let snap = Snapshot::open(&dir).unwrap();
        let index_model = snap.model().unwrap();
        let (x, y) = decoded(&snap, index_model);
        let opts = ClassifyOptions {
            seed: 5,
            max_epochs: Some(4),
            recluster_every: 2,
            ..ClassifyOptions::default()
        };
        for text in ["ncm", "ncmml:16", "ncmml-dot:12", "ncmc:8x3", "fda:9"] {
            let spec = ClassifierSpec::parse(text).unwrap();
            let (streamed, rep) = fit_classifier_from_index(&snap, &spec, &opts, None).unwrap();
            let (dense, dense_rep) = fit_classifier(&spec, x.view(), &y, &opts).unwrap();
            // Same classes, same learning curve, same learned parameters; the streamed
            // classifier has the index's transforms in front (none for a plain PQ index).
            assert_eq!(streamed.classes(), dense.classes(), "{index_spec} {text}");
            assert_eq!(rep.sgd, dense_rep.sgd, "{index_spec} {text}");
            let raw = d.x.view();
            let through = index_model.project(raw).unwrap();
            let prefix = index_model.stages().len() - 1;
            let same_input = prefix == 0;
            if same_input {
                assert_eq!(
                    streamed.top_k(raw, 3).unwrap(),
                    dense.top_k(raw, 3).unwrap(),
                    "{index_spec} {text}"
                );
            }
            match (&streamed, &dense) {
                (Classifier::Ncm(a), Classifier::Ncm(b)) => {
                    assert_eq!(a.linear_form().0, b.linear_form().0, "{index_spec} {text}");
                    assert_eq!(a.linear_form().1, b.linear_form().1, "{index_spec} {text}");
                    let (pa, pb) = (a.projections(), b.projections());
                    assert_eq!(pa.len(), pb.len() + usize::from(!same_input));
                    assert_eq!(&pa[pa.len() - pb.len()..], pb, "{index_spec} {text}");
                }
                (Classifier::Ncmc(a), Classifier::Ncmc(b)) => {
                    let (pa, pb) = (a.projections(), b.projections());
                    assert_eq!(pa.len(), pb.len() + usize::from(!same_input));
                    assert_eq!(&pa[pa.len() - pb.len()..], pb, "{index_spec} {text}");
                    let (sa, sb) = (a.scores(raw).unwrap(), b.scores(through.view()).unwrap());
                    if same_input {
                        assert_eq!(sa, sb, "{index_spec} {text}");
                    } else {
                        // Only the index's PCA is applied differently (a projection block
                        // vs the model's per-row stages): float rounding.
                        for (x, y) in sa.iter().zip(&sb) {
                            assert!((x - y).abs() <= 1e-3 * (1.0 + y.abs()), "{x} vs {y}");
                        }
                    }
                }
                other => panic!("{index_spec} {text}: unexpected kinds {other:?}"),
            }
        }
    }
}

#[test]
fn index_side_errors_name_the_index() {
    let d = digits();
    let tmp = tempfile::tempdir().unwrap();
    let ncmml = PipelineSpec::parse("ncmml:16,float").unwrap();
    let ncm = ClassifierSpec::parse("ncmc:8x2").unwrap();
    let copts = ClassifyOptions::default();
    // Binary codes do not decode to vectors.
    let bin = tmp.path().join("bin");
    build_index(&bin, "pca-itq:32", &d, true);
    let snap = Snapshot::open(&bin).unwrap();
    let e = train_from_index(&snap, &ncmml, &TrainOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("not PQ") && e.contains("bin"), "{e}");
    let e = fit_classifier_from_index(&snap, &ncm, &copts, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not PQ") && e.contains("bin"), "{e}");
    // No live rows: every row deleted.
    let gone = tmp.path().join("gone");
    build_index(&gone, "pq:16x8", &d, true);
    {
        let index = Index::open(&gone, Config::default()).unwrap();
        let ids: Vec<u64> = index.snapshot().rows().unwrap().map(|r| r.id).collect();
        index.delete(&ids).unwrap();
        index.commit().unwrap();
    }
    let snap = Snapshot::open(&gone).unwrap();
    let e = train_from_index(&snap, &ncmml, &TrainOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("live rows") && e.contains("gone"), "{e}");
    let e = fit_classifier_from_index(&snap, &ncm, &copts, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("live rows"), "{e}");
    // Unlabelled rows: supervised learning is an error naming the spec.
    let unl = tmp.path().join("unl");
    build_index(&unl, "pq:16x8", &d, false);
    let snap = Snapshot::open(&unl).unwrap();
    let e = train_from_index(&snap, &ncmml, &TrainOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ncmml:16,float") && e.contains("have none"),
        "{e}"
    );
    let e = fit_classifier_from_index(&snap, &ncm, &copts, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("ncmc:8x2") && e.contains("have none"), "{e}");
    // Zero-row sample.
    let e = fit_classifier_from_index(&snap, &ncm, &copts, Some(0))
        .unwrap_err()
        .to_string();
    assert!(e.contains("sample"), "{e}");
}
