//! Training on PQ-compressed data (Mensink et al. TPAMI 2013, §5.1): `train_from_index` /
//! `codedb train --from-index` learn NCMML from the decoded PQ codes and labels of an index.
//! On the digits (tests/data/digits, even rows train, odd rows test) the NCM top-1 error of a
//! metric learned from `pq:16x8` reconstructions is within a few points of one learned from
//! the raw floats; non-PQ indexes, unlabelled rows and conflicting arguments are errors.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::Path;

use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb::train_from_index;
use codedb::{Config, Index, Snapshot};
use codedb::{EncodedOptions, RowBatch};
use ndarray::ArrayView2;

mod cli_support;
use cli_support::{Digits, digits_split as digits};

/// An index of the training rows under a model trained by `spec`, with labels if given.
fn build_index(dir: &Path, spec: &str, d: &Digits, labelled: bool) {
    let (model, _) = train(
        &PipelineSpec::parse(spec).unwrap(),
        d.xtr.view(),
        &TrainOptions::default(),
    )
    .unwrap();
    let index = Index::create(dir, &model.to_model_file(), Config::default()).unwrap();
    let codes = model.encode(d.xtr.view()).unwrap();
    let labels: Vec<u32> = d.ytr.iter().map(|&l| l as u32).collect();
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
}

/// NCM top-1 error in the model's projected space (class means of the training rows).
fn ncm_error(model: &Model, d: &Digits) -> f64 {
    let ptr = model.project(d.xtr.view()).unwrap();
    let pte = model.project(d.xte.view()).unwrap();
    let dim = ptr.ncols();
    let mut sums = vec![vec![0f64; dim]; 10];
    let mut counts = [0usize; 10];
    for (r, &l) in ptr.rows().into_iter().zip(&d.ytr) {
        counts[l as usize] += 1;
        for (s, v) in sums[l as usize].iter_mut().zip(r) {
            *s += *v as f64;
        }
    }
    let means: Vec<Vec<f64>> = sums
        .iter()
        .zip(counts)
        .map(|(s, c)| s.iter().map(|v| v / c as f64).collect())
        .collect();
    let wrong = pte
        .rows()
        .into_iter()
        .zip(&d.yte)
        .filter(|(r, l)| {
            let best = (0..10)
                .min_by(|&a, &b| {
                    let da: f64 = r
                        .iter()
                        .zip(&means[a])
                        .map(|(x, m)| (*x as f64 - m).powi(2))
                        .sum();
                    let db: f64 = r
                        .iter()
                        .zip(&means[b])
                        .map(|(x, m)| (*x as f64 - m).powi(2))
                        .sum();
                    da.total_cmp(&db)
                })
                .unwrap();
            best as i64 != **l
        })
        .count();
    wrong as f64 / d.yte.len() as f64
}

fn raw_view(d: &Digits) -> ArrayView2<'_, f32> {
    d.xtr.view()
}

#[test]
fn ncmml_from_pq_codes_is_within_a_few_points_of_raw_floats() {
    let d = digits();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pq");
    build_index(&dir, "pq:16x8", &d, true);
    let spec = PipelineSpec::parse("ncmml:32,float").unwrap();
    let snap = Snapshot::open(&dir).unwrap();
    let (from_pq, report) = train_from_index(&snap, &spec, &TrainOptions::default()).unwrap();
    assert_eq!(report.input_rows, d.ytr.len());
    assert_eq!(from_pq.input_dim(), 64);
    let (from_raw, _) = train(
        &spec,
        raw_view(&d),
        &TrainOptions {
            labels: Some(d.ytr.clone().into()),
            ..TrainOptions::default()
        },
    )
    .unwrap();
    let (e_pq, e_raw) = (ncm_error(&from_pq, &d), ncm_error(&from_raw, &d));
    // A plain ℓ2 NCM on the raw pixels, for scale.
    let (l2, _) = train(
        &PipelineSpec::parse("float").unwrap(),
        raw_view(&d),
        &TrainOptions::default(),
    )
    .unwrap();
    let e_l2 = ncm_error(&l2, &d);
    eprintln!(
        "NCM top-1 error: ncmml:32 from pq:16x8 codes {e_pq:.4}, from raw {e_raw:.4}, l2 NCM {e_l2:.4}"
    );
    assert!((e_pq - e_raw).abs() < 0.03, "pq {e_pq} vs raw {e_raw}");
    assert!(e_pq < e_l2, "pq-trained NCMML {e_pq} vs l2 NCM {e_l2}");
}

#[test]
fn pca_pq_index_keeps_its_transforms_in_front() {
    let d = digits();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("opq");
    build_index(&dir, "pca:32,pq:8x8", &d, true);
    let snap = Snapshot::open(&dir).unwrap();
    let (m, _) = train_from_index(
        &snap,
        &PipelineSpec::parse("ncmml:16,itq,bits").unwrap(),
        &TrainOptions::default(),
    )
    .unwrap();
    // The index's PCA (centre + linear) comes first, so the model takes raw 64-D pixels.
    assert_eq!(m.input_dim(), 64);
    assert_eq!(m.code_bits(), 16);
    assert!(m.encode(d.xte.view()).is_ok());
}

#[test]
fn non_pq_index_and_unlabelled_rows_are_errors() {
    let d = digits();
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    build_index(&bin, "pca-itq:32", &d, true);
    let spec = PipelineSpec::parse("ncmml:16,float").unwrap();
    let e = train_from_index(
        &Snapshot::open(&bin).unwrap(),
        &spec,
        &TrainOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("not PQ") && e.contains("bin"), "{e}");
    let unl = tmp.path().join("unl");
    build_index(&unl, "pq:16x8", &d, false);
    let snap = Snapshot::open(&unl).unwrap();
    let e = train_from_index(&snap, &spec, &TrainOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ncmml:16,float") && e.contains("have none"),
        "{e}"
    );
    // Unsupervised pipelines do not need labels.
    let (m, _) = train_from_index(
        &snap,
        &PipelineSpec::parse("pca-itq:16").unwrap(),
        &TrainOptions::default(),
    )
    .unwrap();
    assert_eq!(m.code_bits(), 16);
}

#[test]
fn cli_train_from_index_writes_a_model() {
    let d = digits();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pq");
    build_index(&dir, "pq:16x8", &d, true);
    let out = tmp.path().join("ncm.model");
    let run = cli_support::codedb;
    let o = run(&[
        "train",
        "--from-index",
        dir.to_str().unwrap(),
        "--pipeline",
        "ncmml:32,itq,bits",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["code_bits"], 32);
    assert_eq!(j["training_rows"], d.ytr.len());
    assert!(out.exists());
    // --data with a supervised pipeline and no --labels: a usage error naming the pipeline.
    let o = run(&[
        "train",
        "--data",
        cli_support::s(&cli_support::digits().0),
        "--pipeline",
        "ncmml:16,itq,bits",
        "--out",
        tmp.path().join("x.model").to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("ncmml:16,itq,bits"));
}
