//! The Fashion-MNIST protocols of the book's classification page (docs/classification.md) (ignored: minutes of
//! release-mode compute, not for CI). Run:
//! `cargo test --release --test classify_fashion_protocol -- --ignored --nocapture --test-threads 1`
//! Environment: `PIPELINES` overrides protocol 1's list; `CLASSIFY_LR`, `CLASSIFY_EPOCHS`.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use codedb::model::{ClassifyOptions, Ncm, NcmmlOptions, train_ncmml};
use codedb_cli::eval::classify_eval;
use codedb_cli::io::{FASHION_MNIST_DEBIAN_DIR, is_fashion_mnist_dir, load_fashion_mnist};
use ndarray::Axis;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

fn opts() -> ClassifyOptions {
    let env = |k: &str| std::env::var(k).ok();
    ClassifyOptions {
        learning_rate: env("CLASSIFY_LR").and_then(|v| v.parse().ok()),
        max_epochs: env("CLASSIFY_EPOCHS").and_then(|v| v.parse().ok()),
        progress: Some(Arc::new(|p: &str, e: &codedb::model::EpochReport| {
            eprintln!(
                "  {p} epoch {:>2}: loss {:.4} val top1 {:.4} top5 {:.4}{}",
                e.epoch,
                e.train_loss,
                e.val_top1,
                e.val_top5,
                if e.best { " *" } else { "" }
            )
        })),
        ..ClassifyOptions::default()
    }
}

#[test]
#[ignore]
fn protocol1_flat_errors() {
    if !is_fashion_mnist_dir(FASHION_MNIST_DEBIAN_DIR) {
        println!("skipped: {FASHION_MNIST_DEBIAN_DIR} not installed");
        return;
    }
    let data = load_fashion_mnist(FASHION_MNIST_DEBIAN_DIR).unwrap();
    let pipelines = std::env::var("PIPELINES").unwrap_or_else(|_| {
        "ncm; pca:32,ncm; pca:128,ncm; fda:9; mahal:32; mahal:128; ridge; \
         ncmml:32; ncmml:128; ncmml:256; ncmml-dot:128; ncmml-dot-sc:128; ncmc:32x5; \
         ncmc:128x5; pca:128,knn; knn:32"
            .to_string()
    });
    let rows = classify_eval(
        data.vectors.view(),
        &data.labels,
        &data.split,
        &pipelines,
        &opts(),
    )
    .unwrap();
    println!("| pipeline | d | top-1 error | top-5 error | train s | test s | detail |");
    println!("|---|---|---|---|---|---|---|");
    for r in rows {
        println!(
            "| `{}` | {} | {:.4} | {:.4} | {:.1} | {:.1} | {} |",
            r.pipeline, r.dim, r.top1_error, r.top5_error, r.train_s, r.test_s, r.detail
        );
    }
}

/// §5.4: W learned on classes 0-4, classes 5-9 added as means of n images each.
#[test]
#[ignore]
fn protocol2_new_classes() {
    if !is_fashion_mnist_dir(FASHION_MNIST_DEBIAN_DIR) {
        println!("skipped: {FASHION_MNIST_DEBIAN_DIR} not installed");
        return;
    }
    let data = load_fashion_mnist(FASHION_MNIST_DEBIAN_DIR).unwrap();
    let dim: usize = std::env::var("DIM")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128);
    let idx = |s: i32, f: &dyn Fn(i64) -> bool| -> Vec<usize> {
        (0..data.labels.len())
            .filter(|&i| data.split[i] == s && f(data.labels[i]))
            .collect()
    };
    let tr_all = idx(0, &|_| true);
    let tr_old = idx(0, &|l| l < 5);
    let te_all = idx(1, &|_| true);
    let x = &data.vectors;
    let lab = |v: &[usize]| -> Vec<i64> { v.iter().map(|&i| data.labels[i]).collect() };
    let xte = x.select(Axis(0), &te_all);
    let yte = lab(&te_all);
    let err = |ncm: &Ncm, rows: &[usize]| -> f64 {
        let sub = xte.select(Axis(0), rows);
        let p = ncm.top_k(sub.view(), 1).unwrap();
        p.iter().zip(rows).filter(|(p, i)| p[0] != yte[**i]).count() as f64 / rows.len() as f64
    };
    let new_te: Vec<usize> = (0..te_all.len()).filter(|&i| yte[i] >= 5).collect();
    let old_te: Vec<usize> = (0..te_all.len()).filter(|&i| yte[i] < 5).collect();
    let all_te: Vec<usize> = (0..te_all.len()).collect();
    let o = NcmmlOptions::new(dim);
    let full = train_ncmml(x.select(Axis(0), &tr_all).view(), &lab(&tr_all), &o, None).unwrap();
    let l2 = Ncm::fit(x.select(Axis(0), &tr_all).view(), &lab(&tr_all), Vec::new()).unwrap();
    println!("d = {dim}");
    println!(
        "W on all 10 classes: top-1 error all {:.4}, classes 5-9 {:.4}, classes 0-4 {:.4}; ℓ2 NCM: all {:.4}, classes 5-9 {:.4}",
        err(&full.ncm, &all_te),
        err(&full.ncm, &new_te),
        err(&full.ncm, &old_te),
        err(&l2, &all_te),
        err(&l2, &new_te)
    );
    let half = train_ncmml(x.select(Axis(0), &tr_old).view(), &lab(&tr_old), &o, None).unwrap();
    println!(
        "| images per new class | top-1 all 10 (W on 5) | top-1 classes 5-9 (W on 5) | top-1 all 10 (W on 10, same means) | top-1 all 10 (ℓ2) |"
    );
    println!("|---|---|---|---|---|");
    for n in [1usize, 5, 10, 100, usize::MAX] {
        let reps = if n <= 10 { 10 } else { 1 };
        let mut acc = [0f64; 4];
        for rep in 0..reps {
            let mut rng = ChaCha8Rng::seed_from_u64(1000 + rep as u64);
            let mut a = half.ncm.clone();
            let mut b = full.ncm.clone();
            let mut c = l2.clone();
            // Replace the new classes' means by means of n images in all three classifiers.
            let mut b_means = Vec::new();
            for cls in 5..10i64 {
                let mut rows = idx(0, &|l| l == cls);
                rows.shuffle(&mut rng);
                rows.truncate(n);
                let sub = x.select(Axis(0), &rows);
                a.add_class_from_rows(cls, sub.view()).unwrap();
                b_means.push((cls, sub.mean_axis(Axis(0)).unwrap()));
            }
            // Classifiers on 10 classes: rebuild with old means from all data + the n-image means.
            let rebuild = |ncm: &Ncm| -> Ncm {
                let mut m = Vec::new();
                let mut l = Vec::new();
                for cls in 0..5i64 {
                    let rows = idx(0, &|v| v == cls);
                    m.push(x.select(Axis(0), &rows).mean_axis(Axis(0)).unwrap());
                    l.push(cls);
                }
                for (cls, mu) in &b_means {
                    m.push(mu.clone());
                    l.push(*cls);
                }
                let views: Vec<_> = m.iter().map(|v| v.view()).collect();
                let mm = ndarray::stack(Axis(0), &views).unwrap();
                Ncm::from_means(ncm.projections().to_vec(), l, mm.view()).unwrap()
            };
            b = rebuild(&b);
            c = rebuild(&c);
            acc[0] += err(&a, &all_te);
            acc[1] += err(&a, &new_te);
            acc[2] += err(&b, &all_te);
            acc[3] += err(&c, &all_te);
        }
        let label = if n == usize::MAX {
            "all (6000)".to_string()
        } else {
            n.to_string()
        };
        println!(
            "| {label} | {:.4} | {:.4} | {:.4} | {:.4} |",
            acc[0] / reps as f64,
            acc[1] / reps as f64,
            acc[2] / reps as f64,
            acc[3] / reps as f64
        );
    }
}
