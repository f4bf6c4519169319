//! Binary codes (Gong et al. TPAMI 2013, §3-§4, §6.1): rotations are orthogonal, ITQ's loss
//! never increases and ends below PCA-RR's, ITQ codes rank clustered data better than random
//! projections, every preset gives the code length asked for, and impossible lengths are
//! refused per method.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use codedb::format::CodeKind;
use codedb::model::{Model, PipelineSpec, Rotation, TrainOptions, train};
use ndarray::Array2;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

fn normals(n: usize, seed: u64) -> Vec<f64> {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| StandardNormal.sample(&mut r)).collect()
}

/// `k` Gaussian clusters in `d` dimensions (centres N(0, 1), points centre + N(0, spread²)),
/// `n` points assigned round-robin; returns the points and their cluster labels.
fn clusters(n: usize, d: usize, k: usize, spread: f64, seed: u64) -> (Array2<f32>, Vec<usize>) {
    let c = normals(k * d, seed);
    let e = normals(n * d, seed + 1);
    let x = Array2::from_shape_fn((n, d), |(i, j)| {
        (c[(i % k) * d + j] + spread * e[i * d + j]) as f32
    });
    (x, (0..n).map(|i| i % k).collect())
}

fn train_spec(spec: &str, x: &Array2<f32>, seed: u64) -> Model {
    let opts = TrainOptions {
        seed,
        ..TrainOptions::default()
    };
    train(&PipelineSpec::parse(spec).unwrap(), x.view(), &opts)
        .unwrap()
        .0
}

fn hamming(a: &[u8], b: &[u8]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// Mean precision@k of Hamming ranking (ties by smaller id), with same-label neighbours as
/// ground truth; each of the first `queries` rows queries all other rows.
fn precision_at_k(codes: &[u8], cb: usize, labels: &[usize], queries: usize, k: usize) -> f64 {
    let n = labels.len();
    let mut total = 0.0;
    for q in 0..queries {
        let qc = &codes[q * cb..(q + 1) * cb];
        let mut order: Vec<(u32, usize)> = (0..n)
            .filter(|&i| i != q)
            .map(|i| (hamming(qc, &codes[i * cb..(i + 1) * cb]), i))
            .collect();
        order.sort_unstable();
        let hits = order[..k]
            .iter()
            .filter(|(_, i)| labels[*i] == labels[q])
            .count();
        total += hits as f64 / k as f64;
    }
    total / queries as f64
}

#[test]
fn random_rotations_are_orthogonal() {
    for c in [8usize, 64, 256] {
        let r = Rotation::random(c, 99).unwrap();
        let m = r.matrix();
        let g = m.t().dot(&m);
        for i in 0..c {
            for j in 0..c {
                let want = if i == j { 1.0 } else { 0.0 };
                assert!(
                    (g[(i, j)] - want).abs() < 1e-5,
                    "c={c} ({i},{j}) = {}",
                    g[(i, j)]
                );
            }
        }
    }
}

#[test]
fn itq_loss_is_non_increasing_and_below_pca_rr() {
    let (x, _) = clusters(3000, 64, 20, 0.3, 1);
    let opts = TrainOptions {
        seed: 5,
        ..TrainOptions::default()
    };
    let (itq, report) =
        train(&PipelineSpec::parse("pca-itq:32").unwrap(), x.view(), &opts).unwrap();
    let loss = &report.itq_loss;
    assert_eq!(loss.len(), 51, "50 iterations by default, plus the start");
    for w in loss.windows(2) {
        assert!(
            w[1] <= w[0] * (1.0 + 1e-6),
            "ITQ loss went up: {} -> {}",
            w[0],
            w[1]
        );
    }
    // PCA-RR: same PCA, a random rotation; its loss ‖sgn(V R) − V R‖² from the projection.
    let rr = train_spec("pca-rr:32", &x, 5);
    let v = rr.project(x.view()).unwrap();
    let rr_loss: f64 = v
        .iter()
        .map(|&t| {
            let b = if t >= 0.0 { 1.0 } else { -1.0 };
            ((b - t) as f64).powi(2)
        })
        .sum();
    let itq_loss = *loss.last().unwrap();
    assert!(
        itq_loss < 0.9 * rr_loss,
        "ITQ {itq_loss} vs PCA-RR {rr_loss}"
    );
    // And the ITQ model's own projection reproduces its final loss.
    let v = itq.project(x.view()).unwrap();
    let own: f64 = v
        .iter()
        .map(|&t| ((if t >= 0.0 { 1.0 } else { -1.0 }) - t as f64).powi(2))
        .sum();
    assert!(
        (own - itq_loss).abs() < 1e-3 * itq_loss,
        "{own} vs {itq_loss}"
    );
}

#[test]
fn itq_hamming_ranking_beats_random_projections_on_clusters() {
    let (x, labels) = clusters(4000, 64, 20, 0.6, 2);
    let mut p = Vec::new();
    for spec in ["pca-itq:32", "lsh:32"] {
        let m = train_spec(spec, &x, 3);
        let codes = m.encode(x.view()).unwrap();
        p.push(precision_at_k(&codes, m.code_bytes(), &labels, 300, 50));
    }
    assert!(
        p[0] > p[1] + 0.05,
        "precision@50: pca-itq {} vs lsh {}",
        p[0],
        p[1]
    );
}

#[test]
fn presets_give_the_requested_code_length() {
    let (x, _) = clusters(600, 64, 10, 0.5, 4);
    for bits in [8usize, 16, 32, 64] {
        for preset in ["lsh", "pca-direct", "pca-rr", "pca-itq", "sklsh"] {
            let m = train_spec(&format!("{preset}:{bits}"), &x, 1);
            assert_eq!(m.code_kind(), CodeKind::Binary);
            assert_eq!(
                (m.code_bits(), m.code_bytes()),
                (bits, bits / 8),
                "{preset}:{bits}"
            );
            assert_eq!(m.encode(x.view()).unwrap().len(), 600 * bits / 8);
        }
    }
    // Longer than the 64 input dimensions: random-feature methods only.
    for spec in [
        "lsh:128",
        "lsh:256",
        "sklsh:128",
        "sklsh:256",
        "lsh:1024",
        "kpca-itq:128",
    ] {
        let m = train_spec(spec, &x, 1);
        let bits: usize = spec.rsplit(':').next().unwrap().parse().unwrap();
        assert_eq!(m.code_bits(), bits, "{spec}");
    }
}

#[test]
fn impossible_code_lengths_are_refused_per_method() {
    let (x, _) = clusters(300, 64, 10, 0.5, 5);
    let opts = TrainOptions::default();
    for spec in ["pca-itq:128", "pca-rr:128", "pca-direct:128"] {
        let err = train(&PipelineSpec::parse(spec).unwrap(), x.view(), &opts)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("128 principal directions of 64-dimensional"),
            "{spec}: {err}"
        );
    }
    // kpca-itq: more bits than training rows.
    let err = train(
        &PipelineSpec::parse("kpca-itq:512").unwrap(),
        x.view(),
        &opts,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("only 300 training rows"), "{err}");
    // `bits` straight on 60-dimensional data: not a multiple of 8.
    let (y, _) = clusters(100, 60, 4, 0.5, 6);
    let err = train(
        &PipelineSpec::parse("center,bits").unwrap(),
        y.view(),
        &opts,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("multiple of 8") && err.contains("60"), "{err}");
}

#[test]
fn training_is_reproducible_and_seeded() {
    let (x, _) = clusters(500, 32, 5, 0.5, 7);
    for spec in ["pca-itq:16", "lsh:16", "sklsh:16", "kpca-itq:16"] {
        let a = train_spec(spec, &x, 11).encode(x.view()).unwrap();
        let b = train_spec(spec, &x, 11).encode(x.view()).unwrap();
        let c = train_spec(spec, &x, 12).encode(x.view()).unwrap();
        assert_eq!(a, b, "{spec}: same seed, different codes");
        assert_ne!(a, c, "{spec}: different seeds, same codes");
    }
}

#[test]
fn sklsh_and_kpca_record_the_kernel_bandwidth() {
    // Points on a line 0, 1, ..., 199 in 2-D: the 50th neighbour of an interior point is at
    // distance 25, near the ends up to 50.
    let x = Array2::from_shape_fn((200, 2), |(i, j)| if j == 0 { i as f32 } else { 0.0 });
    let opts = TrainOptions::default();
    let (_, rep) = train(&PipelineSpec::parse("sklsh:16").unwrap(), x.view(), &opts).unwrap();
    let sigma = rep.bandwidth.unwrap();
    assert!(sigma > 25.0 && sigma < 31.0, "{sigma}");
}
