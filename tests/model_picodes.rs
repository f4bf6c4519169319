//! PiCoDes training (`picodes:C`, Bergamo et al. NIPS 2011 §2) on the checked-in digits: the
//! block coordinate descent lowers its objective, the codes are what the stored linear +
//! binarize stages compute, and one-vs-rest SVMs on the learned bits classify held-out digits
//! better than on LSH bits of the same length (the paper's Fig. 3 comparison, small).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use codedb::model::{
    LinearSvmOptions, Model, PipelineSpec, Stage, SvmLoss, TrainOptions, get_bit, train,
    train_linear_svm,
};
use ndarray::{Array2, Axis};

fn split() -> (Array2<f32>, Vec<i64>, Array2<f32>, Vec<i64>) {
    let (x, y) = common::npy::digits();
    let x = x.mapv(|v| v / 16.0);
    let tr: Vec<usize> = (0..y.len()).filter(|i| i % 3 != 0).collect();
    let te: Vec<usize> = (0..y.len()).filter(|i| i % 3 == 0).collect();
    (
        x.select(Axis(0), &tr),
        tr.iter().map(|&i| i64::from(y[i])).collect(),
        x.select(Axis(0), &te),
        te.iter().map(|&i| i64::from(y[i])).collect(),
    )
}

fn opts(labels: &[i64]) -> TrainOptions {
    TrainOptions {
        seed: 3,
        labels: Some(labels.to_vec().into()),
        ..TrainOptions::default()
    }
}

fn bits_of(model: &Model, x: &Array2<f32>) -> Array2<f32> {
    let codes = model.encode(x.view()).unwrap();
    let (cb, c) = (model.code_bytes(), model.code_bits());
    Array2::from_shape_fn((x.nrows(), c), |(i, j)| {
        f32::from(u8::from(get_bit(&codes[i * cb..(i + 1) * cb], j)))
    })
}

/// Accuracy of one-vs-rest hinge SVMs (C = 1) trained on the codes of `xtr`.
fn ovr_accuracy(
    model: &Model,
    xtr: &Array2<f32>,
    ytr: &[i64],
    xte: &Array2<f32>,
    yte: &[i64],
) -> f64 {
    let (htr, hte) = (bits_of(model, xtr), bits_of(model, xte));
    let o = LinearSvmOptions {
        loss: SvmLoss::Hinge,
        ..LinearSvmOptions::default()
    };
    let classes: Vec<i64> = {
        let mut c = ytr.to_vec();
        c.sort_unstable();
        c.dedup();
        c
    };
    let scores: Vec<Vec<f64>> = classes
        .iter()
        .map(|&k| {
            let pos: Vec<bool> = ytr.iter().map(|&l| l == k).collect();
            let svm = train_linear_svm(htr.view(), &pos, None, &o).unwrap();
            svm.decision(hte.view()).unwrap()
        })
        .collect();
    let right = (0..yte.len())
        .filter(|&i| {
            let best = (0..classes.len())
                .max_by(|&a, &b| scores[a][i].total_cmp(&scores[b][i]))
                .unwrap();
            classes[best] == yte[i]
        })
        .count();
    right as f64 / yte.len() as f64
}

#[test]
fn picodes_lowers_its_objective_and_beats_lsh_at_equal_bits() {
    let (xtr, ytr, xte, yte) = split();
    let spec = PipelineSpec::parse("pca:32,picodes:16").unwrap();
    let (model, report) = train(&spec, xtr.view(), &opts(&ytr)).unwrap();
    let e = &report.picodes_objective;
    assert!(e.len() >= 2, "{e:?}");
    for w in e.windows(2) {
        assert!(w[1] <= w[0] * (1.0 + 1e-3), "objective rose: {e:?}");
    }
    assert!(e[e.len() - 1] < 0.8 * e[0], "objective barely moved: {e:?}");
    // Stored as pca (center, linear) + linear (A, β) + binarize, and survives the model file.
    let kinds: Vec<&str> = model.stages().iter().map(Stage::name).collect();
    assert_eq!(kinds, ["center", "linear", "linear", "binarize"]);
    let back = Model::from_model_file(&model.to_model_file()).unwrap();
    assert_eq!(
        back.encode(xte.view()).unwrap(),
        model.encode(xte.view()).unwrap()
    );

    let lsh = train(
        &PipelineSpec::parse("lsh:16").unwrap(),
        xtr.view(),
        &opts(&ytr),
    )
    .unwrap()
    .0;
    let (p, l) = (
        ovr_accuracy(&model, &xtr, &ytr, &xte, &yte),
        ovr_accuracy(&lsh, &xtr, &ytr, &xte, &yte),
    );
    eprintln!("16 bits: picodes {p:.4}, lsh {l:.4}, objective {e:?}");
    assert!(p > l + 0.05, "picodes {p} vs lsh {l}");
}

#[test]
fn picodes_needs_labels_and_bad_bit_counts_are_refused() {
    let (xtr, _, _, _) = split();
    let spec = PipelineSpec::parse("picodes:16").unwrap();
    let err = train(&spec, xtr.view(), &TrainOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("labels") && err.contains("picodes:16"),
        "{err}"
    );
    let err = PipelineSpec::parse("pca:32,picodes:12")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("picodes:12") && err.contains("multiple of 8"),
        "{err}"
    );
    assert!(spec.needs_labels(false) && spec.is_supervised());
}

/// The fast subset of the novel-class protocol (`tests/picodes_claims.rs`, docs/method-picodes.md):
/// codes learned on digits 0-4 describe digits 5-9, never seen: one-vs-rest SVMs on the
/// 5-9 codes of the training rows classify the held-out 5-9 rows far above chance (0.2).
#[test]
fn codes_learned_on_some_digits_describe_the_others() {
    let (xtr, ytr, xte, yte) = split();
    let seen: Vec<usize> = (0..ytr.len()).filter(|&i| ytr[i] < 5).collect();
    let (xs, ys) = (
        xtr.select(Axis(0), &seen),
        seen.iter().map(|&i| ytr[i]).collect::<Vec<_>>(),
    );
    let spec = PipelineSpec::parse("pca:32,picodes:32").unwrap();
    let model = train(&spec, xs.view(), &opts(&ys)).unwrap().0;
    let novel_tr: Vec<usize> = (0..ytr.len()).filter(|&i| ytr[i] >= 5).collect();
    let novel_te: Vec<usize> = (0..yte.len()).filter(|&i| yte[i] >= 5).collect();
    let (ntr, nte) = (
        xtr.select(Axis(0), &novel_tr),
        xte.select(Axis(0), &novel_te),
    );
    let (ltr, lte): (Vec<i64>, Vec<i64>) = (
        novel_tr.iter().map(|&i| ytr[i]).collect(),
        novel_te.iter().map(|&i| yte[i]).collect(),
    );
    let acc = ovr_accuracy(&model, &ntr, &ltr, &nte, &lte);
    eprintln!("novel digits 5-9 on picodes:32 learned from 0-4: accuracy {acc:.4}");
    assert!(acc > 0.8, "accuracy {acc}");
}
