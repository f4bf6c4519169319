//! The in-crate linear SVM (LIBLINEAR's dual coordinate descent) against scikit-learn's
//! `LinearSVC` on the same data: reference numbers written by `python3 tools/compare_svm.py
//! --write-golden` (see that script for the data and the three cases). Both sides run to
//! tolerance 1e-9, so both are at the unique optimum: every test-row decision value and every
//! weight must agree within 1e-6 (absolute; the values are of order 1-10; measured: ≤ 7e-9), and every
//! prediction must be the same.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::path::Path;

use codedb::model::{LinearSvmOptions, SvmLoss, train_linear_svm, train_one_vs_rest};
use common::npy::load_values;
use ndarray::{Array2, Axis};

const TOLERANCE: f64 = 1e-6;

fn data() -> (Array2<f32>, Vec<bool>, Array2<f32>) {
    let (x, y) = common::npy::digits();
    let x = x.mapv(|v| v / 16.0);
    let tr: Vec<usize> = (0..y.len()).step_by(2).collect();
    let te: Vec<usize> = (1..y.len()).step_by(2).collect();
    let positive = tr.iter().map(|&i| y[i] == 3).collect();
    (x.select(Axis(0), &tr), positive, x.select(Axis(0), &te))
}

fn check(case: &str, loss: SvmLoss, c: f64, weighted: bool, bias_scale: f64) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/svm");
    let (xtr, ytr, xte) = data();
    let weights = load_values(root.join("weights.npy"));
    let opts = LinearSvmOptions {
        c,
        loss,
        bias_scale,
        tol: 1e-9,
        max_iter: 1_000_000,
        seed: 7,
    };
    let w = weighted.then_some(weights.as_slice());
    let svm = train_linear_svm(xtr.view(), &ytr, w, &opts).unwrap();
    assert!(svm.converged, "{case}: not converged");
    let want = load_values(root.join(format!("{case}_decision.npy")));
    let got = svm.decision(xte.view()).unwrap();
    assert_eq!(got.len(), want.len());
    let mut worst = 0f64;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            *g > 0.0,
            *w > 0.0,
            "{case}: test row {i}: {g} vs sklearn {w}"
        );
        worst = worst.max((g - w).abs());
    }
    assert!(
        worst <= TOLERANCE,
        "{case}: decision values differ by {worst:e}"
    );
    let coef = load_values(root.join(format!("{case}_coef.npy")));
    let mine: Vec<f64> = svm.weights.iter().copied().chain([svm.bias]).collect();
    for (j, (g, w)) in mine.iter().zip(&coef).enumerate() {
        assert!(
            (g - w).abs() <= TOLERANCE,
            "{case}: weight {j}: {g} vs sklearn {w}"
        );
    }
    eprintln!(
        "{case}: max |decision − sklearn| = {worst:.2e}, {} passes",
        svm.iterations
    );
}

#[test]
fn hinge_matches_sklearn() {
    check("hinge_c1", SvmLoss::Hinge, 1.0, false, 1.0);
}

#[test]
fn squared_hinge_with_weights_matches_sklearn() {
    check("sqhinge_c01_w", SvmLoss::SquaredHinge, 0.1, true, 1.0);
}

#[test]
fn hinge_with_weights_and_bias_scale_matches_sklearn() {
    check("hinge_c5_w_b3", SvmLoss::Hinge, 5.0, true, 3.0);
}

/// One-vs-rest over the 10 digit classes (`train_one_vs_rest`, the driver of PiCoDes,
/// classemes, attributes and the `svm` classifier) against `LinearSVC`'s one-vs-rest: every
/// prediction on the 899 test rows is the same, and the decision values of the first 200
/// agree within 1e-6.
#[test]
fn one_vs_rest_matches_sklearn() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/svm");
    let (x, y) = common::npy::digits();
    let x = x.mapv(|v| v / 16.0);
    let tr: Vec<usize> = (0..y.len()).step_by(2).collect();
    let te: Vec<usize> = (1..y.len()).step_by(2).collect();
    let ids: Vec<u32> = tr.iter().map(|&i| y[i]).collect();
    let opts = LinearSvmOptions {
        c: 1.0,
        loss: SvmLoss::Hinge,
        bias_scale: 1.0,
        tol: 1e-9,
        max_iter: 1_000_000,
        seed: 7,
    };
    let xte = x.select(Axis(0), &te);
    let svms = train_one_vs_rest(
        x.select(Axis(0), &tr).view(),
        &ids,
        10,
        &opts,
        &|k: usize| k as u64,
    )
    .unwrap();
    assert!(svms.iter().all(|s| s.converged));
    let dec: Vec<Vec<f64>> = svms
        .iter()
        .map(|s| s.decision(xte.view()).unwrap())
        .collect();
    let want = load_values(root.join("ovr_hinge_c1_decision.npy"));
    let mut worst = 0f64;
    for (t, row) in want.chunks_exact(10).enumerate() {
        for (k, w) in row.iter().enumerate() {
            worst = worst.max((dec[k][t] - w).abs());
        }
    }
    assert_eq!(want.len(), 2000);
    assert!(
        worst <= TOLERANCE,
        "one-vs-rest decision values differ by {worst:e}"
    );
    let predict = common::npy::load_labels(root.join("ovr_hinge_c1_predict.npy"));
    assert_eq!(predict.len(), te.len());
    for (t, &p) in predict.iter().enumerate() {
        let best = (0..10)
            .max_by(|&a, &b| dec[a][t].total_cmp(&dec[b][t]))
            .unwrap();
        assert_eq!(best as i64, p, "test row {t}");
    }
    eprintln!("ovr_hinge_c1: max |decision − sklearn| = {worst:.2e}");
}
