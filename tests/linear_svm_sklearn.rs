//! The in-crate linear SVM (LIBLINEAR's dual coordinate descent) against scikit-learn's
//! `LinearSVC` on the same data: reference numbers written by `python3 tools/compare_svm.py
//! --write-golden` (see that script for the data and the three cases). Both sides run to
//! tolerance 1e-9, so both are at the unique optimum: every test-row decision value and every
//! weight must agree within 1e-6 (absolute; the values are of order 1-10; measured: ≤ 7e-9), and every
//! prediction must be the same.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::path::Path;

use codedb::model::{LinearSvmOptions, SvmLoss, train_linear_svm};
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
