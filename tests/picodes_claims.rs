//! PiCoDes' multiclass claims (Bergamo et al. NIPS 2011, Figs. 3-4) on Fashion-MNIST HOG
//! (../shared/DATASETS.md export; `CODEDB_FASHION_MNIST=DIR`, default
//! /tmp/datasets/fashion_mnist). Slow (minutes), so ignored; docs/method-picodes.md gives the command:
//!
//! `cargo test --release --test picodes_claims -- --ignored --nocapture`
//!
//! Training classes {0, 1, 4, 7, 8} learn the codes (6,000 sampled train-split rows); the
//! novel classes {2, 3, 5, 6, 9} (the split `tools/picodes_novel.py --seed 1` draws) are never
//! seen by a model. Fig. 3: one-vs-rest hinge SVMs (C = 1) on the codes of 50 train-split rows
//! per novel class (seeded), multiclass accuracy on all 5,000 test-split novel rows, at 64-512
//! bits, PiCoDes (`hom:chi2,pca:256,picodes:C`) against LSH (`hom:chi2,center,proj:C,bits`),
//! PCA-ITQ (`hom:chi2,pca:C,itq,bits`) and classemes (`hom:chi2,pca:256,classemes:C`: the
//! training classes' SVMs and random dichotomies of them, thresholded, RFE to C). Fig. 4:
//! PiCoDes and classemes at 128 bits learned from the first K of the training classes,
//! K = 2 … 5.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::path::PathBuf;

use codedb::model::{
    LinearSvmOptions, Model, PipelineSpec, SvmLoss, TrainOptions, get_bit, train, train_one_vs_rest,
};
use ndarray::{Array2, Axis};
use rand::seq::SliceRandom;
use rand::{SeedableRng, rngs::StdRng};

const TRAIN_CLASSES: [i64; 5] = [0, 1, 4, 7, 8];
const NOVEL_CLASSES: [i64; 5] = [2, 3, 5, 6, 9];
const PER_CLASS: usize = 50;

struct Data {
    x: Array2<f32>,
    y: Vec<i64>,
    split: Vec<i64>,
}

fn load() -> Data {
    let dir = std::env::var_os("CODEDB_FASHION_MNIST").map_or_else(
        || PathBuf::from("/tmp/datasets/fashion_mnist"),
        PathBuf::from,
    );
    assert!(
        dir.join("hog.npy").exists(),
        "{}: no Fashion-MNIST export (bash ../shared/datasets/export.sh fashion_mnist)",
        dir.display()
    );
    Data {
        x: common::npy::load_vectors(dir.join("hog.npy")),
        y: common::npy::load_labels(dir.join("labels.npy")),
        split: common::npy::load_labels(dir.join("split.npy")),
    }
}

fn rows(d: &Data, classes: &[i64], split: i64) -> Vec<usize> {
    (0..d.y.len())
        .filter(|&i| classes.contains(&d.y[i]) && d.split[i] == split)
        .collect()
}

fn bits_of(model: &Model, x: &Array2<f32>) -> Array2<f32> {
    let codes = model.encode(x.view()).unwrap();
    let (cb, c) = (model.code_bytes(), model.code_bits());
    Array2::from_shape_fn((x.nrows(), c), |(i, j)| {
        f32::from(u8::from(get_bit(&codes[i * cb..(i + 1) * cb], j)))
    })
}

/// Multiclass accuracy of one-vs-rest SVMs on the novel classes' codes.
fn novel_accuracy(model: &Model, d: &Data, svm_rows: &[usize], test_rows: &[usize]) -> f64 {
    let htr = bits_of(model, &d.x.select(Axis(0), svm_rows));
    let hte = bits_of(model, &d.x.select(Axis(0), test_rows));
    let o = LinearSvmOptions {
        loss: SvmLoss::Hinge,
        ..LinearSvmOptions::default()
    };
    let ids: Vec<u32> = svm_rows
        .iter()
        .map(|&i| NOVEL_CLASSES.iter().position(|&k| k == d.y[i]).unwrap() as u32)
        .collect();
    let scores: Vec<Vec<f64>> =
        train_one_vs_rest(htr.view(), &ids, NOVEL_CLASSES.len(), &o, &|_: usize| 0)
            .unwrap()
            .iter()
            .map(|svm| svm.decision(hte.view()).unwrap())
            .collect();
    let right = test_rows
        .iter()
        .enumerate()
        .filter(|&(t, &i)| {
            let best = (0..NOVEL_CLASSES.len())
                .max_by(|&a, &b| scores[a][t].total_cmp(&scores[b][t]))
                .unwrap();
            NOVEL_CLASSES[best] == d.y[i]
        })
        .count();
    right as f64 / test_rows.len() as f64
}

fn trained(spec: &str, d: &Data, classes: &[i64]) -> Model {
    let learn = rows(d, classes, 0);
    let x = d.x.select(Axis(0), &learn);
    let labels: Vec<i64> = learn.iter().map(|&i| d.y[i]).collect();
    let opts = TrainOptions {
        seed: 1,
        sample: Some(6000),
        labels: Some(labels.into()),
        ..TrainOptions::default()
    };
    train(&PipelineSpec::parse(spec).unwrap(), x.view(), &opts)
        .unwrap_or_else(|e| panic!("{spec}: {e}"))
        .0
}

#[test]
#[ignore = "minutes on Fashion-MNIST; docs/method-picodes.md"]
fn picodes_multiclass_accuracy_on_novel_classes() {
    let d = load();
    let mut rng = StdRng::seed_from_u64(1);
    let mut svm_rows = Vec::new();
    for &k in &NOVEL_CLASSES {
        let mut r = rows(&d, &[k], 0);
        r.shuffle(&mut rng);
        svm_rows.extend_from_slice(&r[..PER_CLASS]);
    }
    let test_rows = rows(&d, &NOVEL_CLASSES, 1);
    println!(
        "Fig. 3: novel-class multiclass accuracy ({PER_CLASS} SVM rows per class, {} test rows)",
        test_rows.len()
    );
    println!("| bits | picodes | lsh | pca-itq | classemes | claim |");
    println!("|---:|---:|---:|---:|---:|---|");
    for c in [64usize, 128, 256, 512] {
        let specs = [
            format!("hom:chi2,pca:256,picodes:{c}"),
            format!("hom:chi2,center,proj:{c},bits"),
            format!("hom:chi2,pca:{c},itq,bits"),
            format!("hom:chi2,pca:256,classemes:{c}"),
        ];
        let acc: Vec<f64> = specs
            .iter()
            .map(|s| novel_accuracy(&trained(s, &d, &TRAIN_CLASSES), &d, &svm_rows, &test_rows))
            .collect();
        let holds = acc[1..].iter().all(|&a| acc[0] > a);
        println!(
            "| {c} | {:.4} | {:.4} | {:.4} | {:.4} | {} |",
            acc[0],
            acc[1],
            acc[2],
            acc[3],
            if holds { "holds" } else { "does not hold" }
        );
        assert!(acc.iter().all(|&a| a > 0.3), "{acc:?}: near chance (0.2)");
    }
    println!("\nFig. 4: PiCoDes and classemes, 128 bits, learned from K training classes");
    println!("| K | classes | picodes | classemes |");
    println!("|---:|---|---:|---:|");
    for k in 2..=TRAIN_CLASSES.len() {
        let a: Vec<f64> = ["picodes", "classemes"]
            .iter()
            .map(|m| {
                let spec = format!("hom:chi2,pca:256,{m}:128");
                let model = trained(&spec, &d, &TRAIN_CLASSES[..k]);
                novel_accuracy(&model, &d, &svm_rows, &test_rows)
            })
            .collect();
        println!(
            "| {k} | {:?} | {:.4} | {:.4} |",
            &TRAIN_CLASSES[..k],
            a[0],
            a[1]
        );
    }
}
