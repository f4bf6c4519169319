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

/// A seeded synthetic category set where what separates categories is not where the variance
/// is: `classes` categories with means on 8 shared "semantic" coordinates (N(0, 1), rows
/// around them with σ 0.35) and 24 nuisance coordinates of σ 3 that no category uses. New
/// categories draw new means in the same 8 coordinates, so codes that learned where
/// categories differ transfer; random hyperplanes (LSH) mostly cut the nuisance.
fn synthetic(classes: usize, rows_per_class: usize, seed: u64) -> (Array2<f32>, Vec<i64>) {
    use rand::{Rng, SeedableRng};
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut normal = move || {
        // Box-Muller: the test needs no distribution crate.
        let (u, v): (f64, f64) = (r.random_range(1e-12..1.0), r.random_range(0.0..1.0));
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    };
    let (sem, dim) = (8, 32);
    let means: Vec<Vec<f64>> = (0..classes)
        .map(|_| (0..sem).map(|_| normal()).collect())
        .collect();
    let n = classes * rows_per_class;
    let mut x = Array2::<f32>::zeros((n, dim));
    let mut y = Vec::with_capacity(n);
    for i in 0..n {
        let c = i % classes;
        for j in 0..dim {
            let v = if j < sem {
                means[c][j] + 0.35 * normal()
            } else {
                3.0 * normal()
            };
            x[[i, j]] = v as f32;
        }
        y.push(c as i64);
    }
    (x, y)
}

/// Novel-category search as `search --examples` does it (PiCoDes §3, Fig. 5, small): for
/// each novel class, an SVM on the ±1 codes of `p` positives and `p` negatives of every other
/// novel class ranks the database (other rows of the novel classes); mean precision@25.
fn novel_precision(model: &Model, x: &Array2<f32>, y: &[i64], p: usize) -> f64 {
    let pm = |m: &Array2<f32>| m.mapv(|v| 2.0 * v - 1.0);
    let h = pm(&bits_of(model, x));
    let classes: Vec<i64> = {
        let mut c = y.to_vec();
        c.sort_unstable();
        c.dedup();
        c
    };
    // The first p rows of each class are its examples, the rest the database.
    let mut seen = std::collections::HashMap::new();
    let is_example: Vec<bool> = y
        .iter()
        .map(|&c| {
            let k = seen.entry(c).or_insert(0usize);
            *k += 1;
            *k <= p
        })
        .collect();
    let db: Vec<usize> = (0..y.len()).filter(|&i| !is_example[i]).collect();
    let hdb = h.select(Axis(0), &db);
    let o = LinearSvmOptions {
        loss: SvmLoss::Hinge,
        ..LinearSvmOptions::default()
    };
    let mut total = 0.0;
    for &c in &classes {
        let ex: Vec<usize> = (0..y.len()).filter(|&i| is_example[i]).collect();
        let pos: Vec<bool> = ex.iter().map(|&i| y[i] == c).collect();
        let svm = train_linear_svm(h.select(Axis(0), &ex).view(), &pos, None, &o).unwrap();
        let s = svm.decision(hdb.view()).unwrap();
        let mut order: Vec<usize> = (0..db.len()).collect();
        order.sort_by(|&a, &b| s[b].total_cmp(&s[a]).then(a.cmp(&b)));
        let hits = order[..25].iter().filter(|&&j| y[db[j]] == c).count();
        total += hits as f64 / 25.0;
    }
    total / classes.len() as f64
}

/// The method at its defaults learns: on the synthetic categories, codes learned from 20
/// training categories find 10 new categories from 5 examples better than LSH bits of the
/// same length (several seeds of the LSH baseline), and the descent updates basis classifiers
/// in its first two rounds.
#[test]
fn learned_codes_beat_random_codes_on_new_categories_at_the_defaults() {
    let (xtr, ytr) = synthetic(20, 60, 11);
    let (xnew, ynew) = synthetic(10, 60, 12);
    let spec = PipelineSpec::parse("picodes:16").unwrap();
    let t = std::time::Instant::now();
    let (model, report) = train(&spec, xtr.view(), &opts(&ytr)).unwrap();
    let u = &report.picodes_updated;
    assert!(
        u.len() >= 2 && u[0] > 0 && u[1] > 0,
        "updated per round {u:?}"
    );
    assert_eq!(report.picodes_objective.len(), u.len());
    let e = &report.picodes_objective;
    assert!(e[e.len() - 1] < 0.9 * e[0], "objective barely moved: {e:?}");
    let mine = novel_precision(&model, &xnew, &ynew, 5);
    let mut best_lsh: f64 = 0.0;
    for seed in [1, 2, 3] {
        let o = TrainOptions { seed, ..opts(&ytr) };
        let lsh = train(&PipelineSpec::parse("lsh:16").unwrap(), xtr.view(), &o)
            .unwrap()
            .0;
        best_lsh = best_lsh.max(novel_precision(&lsh, &xnew, &ynew, 5));
    }
    eprintln!(
        "synthetic, 16 bits, p = 5: picodes {mine:.4}, best of 3 lsh {best_lsh:.4}, updated \
         {u:?}, objective {e:?}, {:.2} s",
        t.elapsed().as_secs_f64()
    );
    assert!(mine > best_lsh + 0.1, "picodes {mine} vs lsh {best_lsh}");
}

/// The default λ updates bits in rounds 1 and 2 on the digits (`pca:32,picodes:32`), and the
/// report says why the descent stopped, with no note (it did not stop without improving).
#[test]
fn the_default_cost_updates_bits_in_the_first_two_rounds() {
    let (xtr, ytr, _, _) = split();
    let spec = PipelineSpec::parse("pca:32,picodes:32").unwrap();
    let (_, report) = train(&spec, xtr.view(), &opts(&ytr)).unwrap();
    let u = &report.picodes_updated;
    assert!(u.len() >= 2 && u[0] > 0 && u[1] > 0, "{u:?}");
    assert!(report.picodes_stop.is_some());
    assert!(report.notes.is_empty(), "{:?}", report.notes);
}
