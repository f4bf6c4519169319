//! Classifiers on the digits data (tests/data/digits, 1,797 × 64), split by row parity (even
//! rows train, odd rows test; the split tools/compare_classifiers.py uses):
//! - NCM predictions are identical to scikit-learn's NearestCentroid (golden file written by
//!   tools/compare_classifiers.py), and the FDA projection equals scikit-learn LDA's up to
//!   sign and scale per direction;
//! - NCM's eq. 9-11 scores rank classes exactly as ℓ2 distances; a class added by its mean
//!   scores as if it had been fitted;
//! - NCMML, NCMC, LMNN k-NN, the inverse-covariance metric, ridge and one-vs-rest SVMs beat
//!   ℓ2 NCM's error; training is reproducible for a seed and reports a decreasing loss;
//! - an NCMML W becomes model stages (`ncmml:16,itq,bits`) that survive a model file round
//!   trip; without labels that pipeline is refused;
//! - bad input (NaN, label count, duplicate class, bad SPEC token, bad split) is an error.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::sync::Arc;

use codedb::model::{
    ClassifierSpec, ClassifyOptions, KnnMetricOptions, Ncm, NcmcOptions, NcmmlObjective,
    NcmmlOptions, Projection, TestBias, fit_classifier, fit_fda, train_knn_metric, train_ncmc,
    train_ncmml,
};
use codedb::model::{Model, PipelineSpec, TrainOptions, train};
use codedb_cli::eval::classify_eval;
use codedb_cli::io::{load_labels, load_vectors};
use ndarray::Axis;

mod cli_support;
use cli_support::digits_split as digits;

fn top1_error(pred: &[Vec<i64>], truth: &[i64]) -> f64 {
    pred.iter().zip(truth).filter(|(p, t)| p[0] != **t).count() as f64 / truth.len() as f64
}

#[test]
fn sklearn_nearest_centroid_predictions_are_identical() {
    let d = digits();
    let golden = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/data/digits/sklearn_nearest_centroid.npy"
    );
    let want = load_labels(golden).unwrap();
    let ncm = Ncm::fit(d.xtr.view(), &d.ytr, Vec::new()).unwrap();
    let got: Vec<i64> = ncm
        .top_k(d.xte.view(), 1)
        .unwrap()
        .into_iter()
        .map(|p| p[0])
        .collect();
    assert_eq!(got.len(), want.len());
    let diff = got.iter().zip(&want).filter(|(a, b)| a != b).count();
    assert_eq!(
        diff, 0,
        "{diff} predictions differ from scikit-learn NearestCentroid"
    );
}

#[test]
fn sklearn_lda_projection_matches_fda_up_to_sign_and_scale() {
    let d = digits();
    let golden = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/data/digits/sklearn_lda_transform.npy"
    );
    let want = load_vectors(golden).unwrap();
    let fda = fit_fda(d.xtr.view(), &d.ytr, 9).unwrap();
    let got = fda.projection.apply(d.xte.view()).unwrap();
    for j in 0..9 {
        let a = got.column(j);
        let b = want.column(j);
        let (ma, mb) = (a.mean().unwrap(), b.mean().unwrap());
        let cov: f32 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
        let va: f32 = a.iter().map(|x| (x - ma).powi(2)).sum();
        let vb: f32 = b.iter().map(|y| (y - mb).powi(2)).sum();
        let corr = cov / (va * vb).sqrt();
        assert!(corr.abs() > 0.9999, "direction {j}: |correlation| {corr}");
    }
    // Fisher ratios decrease.
    assert!(
        fda.ratios.windows(2).all(|w| w[0] >= w[1]),
        "{:?}",
        fda.ratios
    );
    assert!(
        fit_fda(d.xtr.view(), &d.ytr, 10)
            .unwrap_err()
            .to_string()
            .contains("C − 1 = 9")
    );
}

#[test]
fn ncm_scores_rank_like_l2_distances_and_new_classes_cost_a_mean() {
    let d = digits();
    let pca = codedb::model::Pca::fit(d.xtr.view(), 20).unwrap();
    let chain = vec![Projection::from_pca(&pca).unwrap()];
    let ncm = Ncm::fit(d.xtr.view(), &d.ytr, chain.clone()).unwrap();
    let s = ncm.scores(d.xte.view()).unwrap();
    let y = chain[0].apply(d.xte.view()).unwrap();
    let (pm, _) = ncm.linear_form();
    for i in 0..50 {
        // −½‖Wx − Wμ_c‖² = f(c, x) − ½‖Wx‖² for every class.
        let q = y.row(i);
        let half_q: f64 = 0.5 * q.iter().map(|v| (*v as f64).powi(2)).sum::<f64>();
        for c in 0..10 {
            let dist: f64 = q
                .iter()
                .zip(pm.row(c))
                .map(|(a, b)| (*a as f64 - b).powi(2))
                .sum();
            assert!(
                (-0.5 * dist - (s[(i, c)] - half_q)).abs() < 1e-3 * (1.0 + dist),
                "row {i} class {c}"
            );
        }
    }
    // Add class 9 from its rows to a classifier fitted without it: same scores as fitted.
    let keep: Vec<usize> = (0..d.ytr.len()).filter(|&i| d.ytr[i] != 9).collect();
    let nine: Vec<usize> = (0..d.ytr.len()).filter(|&i| d.ytr[i] == 9).collect();
    let y9: Vec<i64> = keep.iter().map(|&i| d.ytr[i]).collect();
    let mut part = Ncm::fit(d.xtr.select(Axis(0), &keep).view(), &y9, chain.clone()).unwrap();
    part.add_class_from_rows(9, d.xtr.select(Axis(0), &nine).view())
        .unwrap();
    let s2 = part.scores(d.xte.view()).unwrap();
    for (a, b) in s.iter().zip(s2.iter()) {
        assert!((a - b).abs() < 1e-6 * (1.0 + a.abs()), "{a} vs {b}");
    }
    // Duplicate and malformed classes are refused, leaving the classifier unchanged.
    let mean = vec![0f32; 64];
    assert!(
        part.add_class(9, &mean)
            .unwrap_err()
            .to_string()
            .contains("class 9 already exists")
    );
    assert!(
        part.add_class(11, &mean[..10])
            .unwrap_err()
            .to_string()
            .contains("10 entries")
    );
    let mut nan = mean.clone();
    nan[3] = f32::NAN;
    assert!(
        part.add_class(11, &nan)
            .unwrap_err()
            .to_string()
            .contains("column 3")
    );
    assert_eq!(part.classes().len(), 10);
}

fn quick_ncmml(dim: usize) -> NcmmlOptions {
    let mut o = NcmmlOptions::new(dim);
    o.sgd.batch_size = 200;
    o.sgd.max_epochs = 15;
    o.sgd.seed = 7;
    o
}

#[test]
fn ncmml_beats_l2_ncm_is_reproducible_and_reports_its_loss() {
    let d = digits();
    let l2 = Ncm::fit(d.xtr.view(), &d.ytr, Vec::new()).unwrap();
    let e_l2 = top1_error(&l2.top_k(d.xte.view(), 1).unwrap(), &d.yte);
    let mut losses = Vec::new();
    let mut cb = |e: &codedb::model::EpochReport| losses.push(e.train_loss);
    let t = train_ncmml(d.xtr.view(), &d.ytr, &quick_ncmml(16), Some(&mut cb)).unwrap();
    let e = top1_error(&t.ncm.top_k(d.xte.view(), 1).unwrap(), &d.yte);
    println!("digits top-1: ℓ2 NCM {e_l2:.4}, NCMML d=16 {e:.4}");
    assert!(e < 0.8 * e_l2, "NCMML {e} vs ℓ2 {e_l2}");
    assert_eq!(losses.len(), t.report.epochs.len());
    assert!(losses.last().unwrap() < &(0.7 * losses[0]), "{losses:?}");
    let t2 = train_ncmml(d.xtr.view(), &d.ytr, &quick_ncmml(16), None).unwrap();
    assert_eq!(t.projection, t2.projection, "same seed, different W");
    // Dot-product + bias variant (eq. 21), with b_c and with the learned s_c.
    for tb in [TestBias::Norm, TestBias::Learned] {
        let mut o = quick_ncmml(16);
        o.objective = NcmmlObjective::DotBias(tb);
        let t = train_ncmml(d.xtr.view(), &d.ytr, &o, None).unwrap();
        let e = top1_error(&t.ncm.top_k(d.xte.view(), 1).unwrap(), &d.yte);
        println!("digits top-1: NCMML-dot ({tb:?}) {e:.4}");
        assert!(e < e_l2, "{tb:?}: {e} vs ℓ2 {e_l2}");
        assert_eq!(t.learned_bias.as_ref().map(Vec::len), Some(10));
    }
}

#[test]
fn ncmc_and_learned_knn_beat_l2_ncm() {
    let d = digits();
    let l2 = Ncm::fit(d.xtr.view(), &d.ytr, Vec::new()).unwrap();
    let e_l2 = top1_error(&l2.top_k(d.xte.view(), 1).unwrap(), &d.yte);
    let mut o = NcmcOptions::new(16, 3);
    o.sgd = quick_ncmml(16).sgd;
    o.recluster_every = 5;
    let t = train_ncmc(d.xtr.view(), &d.ytr, &o, None).unwrap();
    let e = top1_error(&t.ncmc.top_k(d.xte.view(), 1).unwrap(), &d.yte);
    println!("digits top-1: NCMC 16x3 {e:.4}");
    assert!(e < 0.8 * e_l2, "NCMC {e} vs ℓ2 {e_l2}");
    let mut k = KnnMetricOptions::new(16);
    k.sgd.max_epochs = 4;
    k.sgd.batch_size = 120;
    let t = train_knn_metric(d.xtr.view(), &d.ytr, &k, None).unwrap();
    let e = top1_error(&t.knn.top_k(d.xte.view(), 1).unwrap(), &d.yte);
    println!("digits top-1: LMNN k-NN d=16 (k={}) {e:.4}", t.knn.k());
    assert!(e < 0.8 * e_l2, "k-NN {e} vs ℓ2 {e_l2}");
}

#[test]
fn classify_eval_runs_every_method_and_names_bad_input() {
    let d = digits();
    let x = ndarray::concatenate(Axis(0), &[d.xtr.view(), d.xte.view()]).unwrap();
    let labels: Vec<i64> = d.ytr.iter().chain(&d.yte).copied().collect();
    let split: Vec<i32> = (0..x.nrows()).map(|i| (i >= d.ytr.len()) as i32).collect();
    let opts = ClassifyOptions {
        max_epochs: Some(3),
        batch_size: Some(200),
        ..ClassifyOptions::default()
    };
    let list = "ncm; pca:20,ncm; fda:9; mahal:20; ridge; svm; knn; ncmml:16; ncmc:16x2";
    let rows = classify_eval(x.view(), &labels, &split, list, &opts).unwrap();
    assert_eq!(rows.len(), 9);
    assert!(rows[5].detail.starts_with("C="), "{:?}", rows[5]);
    let l2 = rows[0].top1_error;
    for r in &rows {
        println!(
            "{:<14} top-1 {:.4} top-5 {:.4} {}",
            r.pipeline, r.top1_error, r.top5_error, r.detail
        );
        assert!(r.top5_error <= r.top1_error && r.top1_error < 0.5, "{r:?}");
        assert_eq!((r.classes, r.test_rows), (10, d.yte.len()));
    }
    for r in &rows[2..] {
        assert!(
            r.top1_error < l2,
            "{} {} vs ℓ2 NCM {l2}",
            r.pipeline,
            r.top1_error
        );
    }
    let err = |list: &str, labels: &[i64], split: &[i32]| {
        classify_eval(x.view(), labels, split, list, &opts)
            .unwrap_err()
            .to_string()
    };
    assert!(err("ncm; ncmml:16,fda:3", &labels, &split).contains("bad token \"fda:3\""));
    assert!(err("ncm; knn-all", &labels, &split).contains("bad token \"knn-all\""));
    assert!(err("ncm", &labels[1..], &split).contains("labels"));
    let mut s2 = split.clone();
    s2[5] = 2;
    assert!(err("ncm", &labels, &s2).contains("row 5: value 2"));
    assert!(err("fda:12", &labels, &split).contains("C − 1 = 9"));
    assert!(err("ncmml:100", &labels, &split).contains("d must be <= 64"));
    let mut bad = x.clone();
    bad[(3, 7)] = f32::NAN;
    let e = classify_eval(bad.view(), &labels, &split, "ncm", &opts)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("non-finite") && e.contains("row 3") && e.contains("column 7"),
        "{e}"
    );
    // A single class cannot train a metric.
    let one = vec![1i64; d.ytr.len()];
    let spec = ClassifierSpec::parse("ncmml:4").unwrap();
    let e = fit_classifier(&spec, d.xtr.view(), &one, &opts)
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least 2 classes"), "{e}");
}

#[test]
fn ncmml_projection_precedes_itq_in_a_model() {
    let d = digits();
    let spec = PipelineSpec::parse("ncmml:16,itq,bits").unwrap();
    let e = train(&spec, d.xtr.view(), &TrainOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("labels"), "{e}");
    let opts = TrainOptions {
        labels: Some(Arc::from(d.ytr.clone())),
        ..TrainOptions::default()
    };
    let (model, _) = train(&spec, d.xtr.view(), &opts).unwrap();
    let kinds: Vec<&str> = model.stages().iter().map(|s| s.name()).collect();
    assert_eq!(kinds[..2], ["center", "linear"], "{kinds:?}");
    assert_eq!(model.code_bits(), 16);
    let file = model.to_model_file();
    let back = Model::from_model_file(&file).unwrap();
    assert_eq!(
        back.encode(d.xte.view()).unwrap(),
        model.encode(d.xte.view()).unwrap()
    );
    let wrong = TrainOptions {
        labels: Some(Arc::from(vec![0i64; 3])),
        ..TrainOptions::default()
    };
    assert!(
        train(&spec, d.xtr.view(), &wrong)
            .unwrap_err()
            .to_string()
            .contains("3 labels")
    );
}

/// Run by tools/compare_classifiers.py --fashion with `CODEDB_SKLEARN_FASHION_NC` set.
#[test]
#[ignore]
fn fashion_ncm_matches_sklearn() {
    let Ok(path) = std::env::var("CODEDB_SKLEARN_FASHION_NC") else {
        println!(
            "skipped: CODEDB_SKLEARN_FASHION_NC not set (run tools/compare_classifiers.py --fashion)"
        );
        return;
    };
    let data =
        codedb_cli::io::load_fashion_mnist(codedb_cli::io::FASHION_MNIST_DEBIAN_DIR).unwrap();
    let tr: Vec<usize> = (0..data.split.len())
        .filter(|&i| data.split[i] == 0)
        .collect();
    let te: Vec<usize> = (0..data.split.len())
        .filter(|&i| data.split[i] == 1)
        .collect();
    let ytr: Vec<i64> = tr.iter().map(|&i| data.labels[i]).collect();
    let ncm = Ncm::fit(data.vectors.select(Axis(0), &tr).view(), &ytr, Vec::new()).unwrap();
    let got: Vec<i64> = ncm
        .top_k(data.vectors.select(Axis(0), &te).view(), 1)
        .unwrap()
        .into_iter()
        .map(|p| p[0])
        .collect();
    let want = load_labels(path).unwrap();
    let diff = got.iter().zip(&want).filter(|(a, b)| a != b).count();
    println!(
        "Fashion-MNIST: {} test predictions, {diff} differ from scikit-learn",
        got.len()
    );
    assert_eq!(diff, 0);
}
