//! Product quantisation (FAISS-style PQ, 4-bit PQ, OPQ) and ADC tables.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use codedb::format::CodeKind;
use codedb::model::{AdcMetric, Model, PipelineSpec, Rotation, TrainOptions, TrainReport, train};
use ndarray::Array2;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

fn normals(n: usize, seed: u64) -> Vec<f64> {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| StandardNormal.sample(&mut r)).collect()
}

/// Gaussian data with standard deviation `top · decay^j` along axis j.
fn anisotropic(n: usize, d: usize, top: f64, decay: f64, seed: u64) -> Array2<f32> {
    let g = normals(n * d, seed);
    Array2::from_shape_fn((n, d), |(i, j)| {
        (g[i * d + j] * top * decay.powi(j as i32)) as f32
    })
}

fn run(spec: &str, x: &Array2<f32>, opts: &TrainOptions) -> (Model, TrainReport) {
    train(&PipelineSpec::parse(spec).unwrap(), x.view(), opts).unwrap()
}

/// Mean squared reconstruction error per vector, in the projected space.
fn mse(m: &Model, x: &Array2<f32>) -> f64 {
    let p = m.project(x.view()).unwrap();
    let r = m.decode(&m.encode(x.view()).unwrap()).unwrap();
    p.iter()
        .zip(r.iter())
        .map(|(a, b)| ((a - b) as f64).powi(2))
        .sum::<f64>()
        / x.nrows() as f64
}

#[test]
fn mse_decreases_with_m_and_beats_untrained_codebooks() {
    let x = anisotropic(4000, 32, 2.0, 0.95, 1);
    let opts = TrainOptions::default();
    let mut last = f64::INFINITY;
    for m in [2, 4, 8, 16] {
        let (model, report) = run(&format!("pq:{m}x8"), &x, &opts);
        assert_eq!(model.code_kind(), CodeKind::Pq8);
        assert_eq!(model.code_bytes(), m);
        let e = mse(&model, &x);
        // The training report agrees with an encode/decode round trip.
        let rep = report.pq.unwrap().mse;
        assert!((rep - e).abs() < 1e-3 * e, "report {rep} vs measured {e}");
        assert!(e < last, "M = {m}: MSE {e} not below {last}");
        last = e;
    }
    // k-means-free baseline: codebooks = random training points (0 iterations).
    let untrained = TrainOptions {
        kmeans_iterations: 0,
        ..TrainOptions::default()
    };
    let (base, _) = run("pq:8x8", &x, &untrained);
    let (good, _) = run("pq:8x8", &x, &opts);
    assert!(
        mse(&good, &x) < 0.8 * mse(&base, &x),
        "{} vs {}",
        mse(&good, &x),
        mse(&base, &x)
    );
}

#[test]
fn four_bit_pq_packs_nibbles_and_loses_more_than_eight_bit() {
    let x = anisotropic(3000, 16, 1.0, 0.9, 2);
    let opts = TrainOptions::default();
    let (p4, _) = run("pq4:8", &x, &opts);
    let (p8, _) = run("pq:8x8", &x, &opts);
    assert_eq!(
        (p4.code_kind(), p4.code_bytes(), p4.code_bits()),
        (CodeKind::Pq4, 4, 32)
    );
    assert_eq!(p4.pq().unwrap().ksub(), 16);
    assert!(mse(&p4, &x) > mse(&p8, &x));
    let (p4b, _) = run("pq:8x4", &x, &opts);
    assert_eq!(
        p4b.encode(x.view()).unwrap(),
        p4.encode(x.view()).unwrap(),
        "pq4:8 == pq:8x4"
    );
}

#[test]
fn opq_is_no_worse_than_pq_on_rotated_anisotropic_data() {
    // Variance concentrated on a few axes, then hidden by a random rotation: plain PQ splits
    // the energy badly across sub-vectors, OPQ learns to undo the rotation.
    let d = 16;
    let raw = anisotropic(4000, d, 4.0, 0.7, 3);
    let q = Rotation::random(d, 4).unwrap();
    let x = q.apply(raw.view()).unwrap();
    let opts = TrainOptions {
        opq_iterations: 10,
        ..TrainOptions::default()
    };
    let (pq, _) = run("pq:4x8", &x, &opts);
    let (opq, rep) = run("opq:4x8", &x, &opts);
    assert_eq!(opq.code_bytes(), 4);
    let (a, b) = (mse(&pq, &x), mse(&opq, &x));
    assert!(b <= a, "OPQ MSE {b} > PQ MSE {a}");
    assert_eq!(rep.opq_loss.len(), 10);
    // Codes are the same through a save/load round trip (rotation + PQ stages).
    let back = Model::from_model_file(&opq.to_model_file()).unwrap();
    assert_eq!(
        back.encode(x.view()).unwrap(),
        opq.encode(x.view()).unwrap()
    );
}

#[test]
fn adc_tables_sum_to_the_distance_to_the_reconstruction() {
    let x = anisotropic(2000, 32, 1.5, 0.9, 5);
    let queries = anisotropic(20, 32, 1.5, 0.9, 6);
    let opts = TrainOptions::default();
    // Gordo et al.'s pipeline: PCA, then PQ with 8-dim sub-vectors × 8 bits (C bits per code).
    for spec in ["pca:16,pq:2x8", "pq:8x8", "pq4:8", "opq:4x8"] {
        let (m, _) = run(
            spec,
            &x,
            &TrainOptions {
                opq_iterations: 3,
                ..opts.clone()
            },
        );
        let pq = m.pq().unwrap();
        let (mm, k) = (pq.m(), pq.ksub());
        let codes = m.encode(x.view()).unwrap();
        let recon = m.decode(&codes).unwrap();
        let proj = m.project(queries.view()).unwrap();
        let l2 = m.adc_tables(queries.view(), AdcMetric::L2).unwrap();
        let ip = m
            .adc_tables(queries.view(), AdcMetric::InnerProduct)
            .unwrap();
        assert_eq!(l2.ncols(), mm * k, "{spec}: M × K table");
        let cb = m.code_bytes();
        for qi in 0..queries.nrows() {
            for xi in (0..x.nrows()).step_by(97) {
                let code = &codes[xi * cb..(xi + 1) * cb];
                let (mut s2, mut sd) = (0f64, 0f64);
                for s in 0..mm {
                    let c = pq.code_index(code, s);
                    s2 += l2[(qi, s * k + c)] as f64;
                    sd += ip[(qi, s * k + c)] as f64;
                }
                let want2: f64 = (0..pq.dim())
                    .map(|j| ((proj[(qi, j)] - recon[(xi, j)]) as f64).powi(2))
                    .sum();
                let wantd: f64 = (0..pq.dim())
                    .map(|j| proj[(qi, j)] as f64 * recon[(xi, j)] as f64)
                    .sum();
                assert!(
                    (s2 - want2).abs() <= 1e-4 * (1.0 + want2),
                    "{spec}: L2 {s2} vs {want2}"
                );
                assert!(
                    (sd - wantd).abs() <= 1e-4 * (1.0 + wantd.abs()),
                    "{spec}: IP {sd} vs {wantd}"
                );
            }
        }
    }
    let (pca_pq, _) = run("pca:32,pq:4x8", &x, &opts);
    assert_eq!((pca_pq.code_bytes(), pca_pq.code_bits()), (4, 32));
    // Binary models have no ADC tables.
    let (bin, _) = run("pca-itq:16", &x, &opts);
    let err = bin
        .adc_tables(queries.view(), AdcMetric::L2)
        .unwrap_err()
        .to_string();
    assert!(err.contains("PQ model"), "{err}");
}

#[test]
fn empty_clusters_are_repaired_on_degenerate_data() {
    // 300 rows but only 10 distinct vectors: 246 of 256 centroids per sub-quantiser start or
    // end up empty and must be split from populated ones every iteration.
    let distinct = anisotropic(10, 8, 1.0, 1.0, 7);
    let x = Array2::from_shape_fn((300, 8), |(i, j)| distinct[(i % 10, j)]);
    let (m, rep) = run("pq:2x8", &x, &TrainOptions::default());
    let r = rep.pq.unwrap();
    assert!(r.splits > 0, "no empty-cluster repair happened");
    assert!(
        mse(&m, &x) < 1e-6,
        "distinct points must be reconstructed exactly"
    );
}

#[test]
fn pq_parameter_errors() {
    let x = anisotropic(500, 32, 1.0, 1.0, 8);
    let opts = TrainOptions::default();
    let err = train(&PipelineSpec::parse("pq:3x8").unwrap(), x.view(), &opts)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("3 sub-quantisers cannot split 32 dimensions"),
        "{err}"
    );
    let small = anisotropic(100, 32, 1.0, 1.0, 9);
    let err = train(&PipelineSpec::parse("pq:4x8").unwrap(), small.view(), &opts)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("needs at least 256 training rows, got 100"),
        "{err}"
    );
}
