//! The encoding determinism contract (src/model/fixed_order.rs): a row's code is bit-identical
//! whether it is encoded alone or inside any batch, on any thread count, and on every CPU path.
//!
//! Each model here is checked against a reference encoder written in this file from the
//! model's public tensors with the scalar twin of the fixed-order dot product
//! (`dot_fixed_order_scalar`, one call per output — what encoding computed before the
//! multi-row kernels) and a plain nearest-centroid loop. `Model::encode` runs the best kernels
//! of this CPU, so agreement is also the SIMD = scalar check, and it shows that stored codes do
//! not change. Batches of every size around the kernels' 4-row and 16-row tiles are compared
//! with the rows encoded alone.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod force_scalar_support;

use codedb::kernels::{available_dispatches, detected_isa};
use codedb::kernels::{
    dot_fixed_order, dot_fixed_order_scalar, dot_rows_fixed_order, dot_rows_fixed_order_with,
};
use codedb::model::{
    Binarize, Center, FloatStage, Linear, Model, ProductQuantizer, Rotation, Stage,
};
use ndarray::{Array2, Array3, ArrayView2, s};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn uniform(rng: &mut ChaCha8Rng, n: usize, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|_| (rng.random::<f32>() - 0.5) * scale)
        .collect()
}

fn matrix(rng: &mut ChaCha8Rng, rows: usize, cols: usize, scale: f32) -> Array2<f32> {
    Array2::from_shape_vec((rows, cols), uniform(rng, rows * cols, scale)).unwrap()
}

/// The float vector a model's transforms give one row, one scalar-twin dot per output.
fn reference_transform(model: &Model, x: &[f32]) -> Vec<f32> {
    let mut cur = x.to_vec();
    for stage in model.stages() {
        cur = match stage {
            Stage::Center(c) => cur.iter().zip(c.mean()).map(|(v, m)| v - m).collect(),
            Stage::Linear(l) => l
                .weight()
                .rows()
                .into_iter()
                .enumerate()
                .map(|(j, w)| {
                    let b = l.bias().map_or(0.0, |b| b[j]);
                    dot_fixed_order_scalar(w.as_slice().unwrap(), &cur) + b
                })
                .collect(),
            Stage::Rotation(r) => {
                let m = r.matrix();
                (0..r.dim())
                    .map(|j| {
                        let col: Vec<f32> = m.column(j).to_vec();
                        dot_fixed_order_scalar(&col, &cur)
                    })
                    .collect()
            }
            _ => break,
        };
    }
    cur
}

/// First centroid of the smallest exact squared distance (ties to the smaller index).
fn reference_nearest(x: &[f32], centroids: ArrayView2<f32>) -> usize {
    let mut best = (f32::INFINITY, 0);
    for (c, row) in centroids.rows().into_iter().enumerate() {
        let mut acc = 0.0f32;
        for (&xj, &cj) in x.iter().zip(row) {
            let t = xj - cj;
            acc = t.mul_add(t, acc);
        }
        if acc < best.0 {
            best = (acc, c);
        }
    }
    best.1
}

/// The reference code of one row.
fn reference_code(model: &Model, x: &[f32]) -> Vec<u8> {
    let y = reference_transform(model, x);
    let last = &model.stages()[model.stages().len() - 1];
    match last {
        Stage::Binarize(b) => {
            let mut code = vec![0u8; b.thresholds().len().div_ceil(8)];
            for (j, (v, t)) in y.iter().zip(b.thresholds()).enumerate() {
                if v > t {
                    code[j / 8] |= 1 << (j % 8);
                }
            }
            code
        }
        Stage::Pq(pq) => {
            let (m, ds) = (pq.m(), pq.dsub());
            let mut code = vec![0u8; if pq.ksub() == 256 { m } else { m.div_ceil(2) }];
            for sq in 0..m {
                let k = reference_nearest(
                    &y[sq * ds..(sq + 1) * ds],
                    pq.centroids().index_axis(ndarray::Axis(0), sq),
                ) as u8;
                if pq.ksub() == 256 {
                    code[sq] = k;
                } else {
                    code[sq / 2] |= k << (4 * (sq % 2));
                }
            }
            code
        }
        Stage::Float(_) => y.iter().flat_map(|v| v.to_le_bytes()).collect(),
        other => panic!("no reference for {}", other.name()),
    }
}

/// PCA-ITQ's shape (784 → 64 → rotation → 64 sign bits, with thresholds).
fn itq_model(rng: &mut ChaCha8Rng) -> Model {
    let d = 784;
    Model::new(vec![
        Stage::Center(Center::new(uniform(rng, d, 0.2)).unwrap()),
        Stage::Linear(Linear::new(matrix(rng, 64, d, 0.1), None).unwrap()),
        Stage::Rotation(Rotation::random(64, 5).unwrap()),
        Stage::Binarize(Binarize::new(uniform(rng, 64, 0.01)).unwrap()),
    ])
    .unwrap()
}

/// Odd sizes everywhere: a 4-element tail, an odd output count, a bias, float codes (exact).
fn float_model(rng: &mut ChaCha8Rng) -> Model {
    let (d, o) = (100, 37);
    Model::new(vec![
        Stage::Linear(Linear::new(matrix(rng, o, d, 1.0), Some(uniform(rng, o, 1.0))).unwrap()),
        Stage::Rotation(Rotation::random(o, 9).unwrap()),
        Stage::Float(FloatStage::new(o, false).unwrap()),
    ])
    .unwrap()
}

/// PQ16x8 on 128-D input (after centering), with duplicate centroids for ties.
fn pq8_model(rng: &mut ChaCha8Rng) -> Model {
    let (m, k, ds) = (16, 256, 8);
    let mut c = Array3::from_shape_vec((m, k, ds), uniform(rng, m * k * ds, 2.0)).unwrap();
    for sq in 0..m {
        let first = c.slice(s![sq, 3, ..]).to_owned();
        c.slice_mut(s![sq, 200, ..]).assign(&first);
    }
    Model::new(vec![
        Stage::Center(Center::new(uniform(rng, m * ds, 0.1)).unwrap()),
        Stage::Pq(ProductQuantizer::new(c).unwrap()),
    ])
    .unwrap()
}

/// 4-bit PQ with an odd M after a linear map (dsub 3).
fn pq4_model(rng: &mut ChaCha8Rng) -> Model {
    let (m, k, ds) = (5, 16, 3);
    let c = Array3::from_shape_vec((m, k, ds), uniform(rng, m * k * ds, 2.0)).unwrap();
    Model::new(vec![
        Stage::Linear(Linear::new(matrix(rng, m * ds, 40, 0.5), None).unwrap()),
        Stage::Pq(ProductQuantizer::new(c).unwrap()),
    ])
    .unwrap()
}

fn models() -> Vec<(&'static str, Model)> {
    let mut rng = ChaCha8Rng::seed_from_u64(0xe7c0de);
    vec![
        ("itq", itq_model(&mut rng)),
        ("float", float_model(&mut rng)),
        ("pq8", pq8_model(&mut rng)),
        ("pq4", pq4_model(&mut rng)),
    ]
}

/// Rows for a model; for PQ models some rows sit exactly on a centroid (after the centering)
/// or on its duplicate, so ties are exercised.
fn rows_for(model: &Model, n: usize, rng: &mut ChaCha8Rng) -> Array2<f32> {
    let d = model.input_dim();
    let mut x = matrix(rng, n, d, 3.0);
    if let (Some(pq), Stage::Center(c)) = (model.pq(), &model.stages()[0]) {
        for r in (0..n).step_by(5) {
            for sq in 0..pq.m() {
                for j in 0..pq.dsub() {
                    let at = sq * pq.dsub() + j;
                    x[(r, at)] = pq.centroids()[(sq, 3, j)] + c.mean()[at];
                }
            }
        }
    }
    x
}

const REFERENCE_TEST: &str = "codes_equal_the_scalar_reference_alone_and_in_every_batch";

#[test]
fn codes_equal_the_scalar_reference_alone_and_in_every_batch() {
    if std::env::var("CODEDB_FORCE_SCALAR").is_ok_and(|v| v == "1") {
        assert_eq!(detected_isa(), "scalar", "the child runs the scalar twins");
    }
    let mut rng = ChaCha8Rng::seed_from_u64(77);
    for (name, model) in models() {
        let n = 70;
        let x = rows_for(&model, n, &mut rng);
        let cb = model.code_bytes();
        let want: Vec<u8> = x
            .rows()
            .into_iter()
            .flat_map(|r| reference_code(&model, r.as_slice().unwrap()))
            .collect();
        assert_eq!(model.encode(x.view()).unwrap(), want, "{name}: whole batch");
        for r in 0..n {
            let alone = model.encode(x.slice(s![r..r + 1, ..])).unwrap();
            assert_eq!(alone, want[r * cb..(r + 1) * cb], "{name}: row {r} alone");
        }
        // Consecutive batches of each size: every remainder of the 4-row and 16-row tiles,
        // at shifting offsets.
        for size in (1..=9).chain([15, 16, 17, 31, 33]) {
            let mut start = 0;
            while start < n {
                let end = (start + size).min(n);
                let got = model.encode(x.slice(s![start..end, ..])).unwrap();
                assert_eq!(
                    got,
                    want[start * cb..end * cb],
                    "{name}: rows {start}..{end}"
                );
                start = end;
            }
        }
    }
}

#[test]
fn codes_do_not_depend_on_the_thread_count_or_block_boundaries() {
    let mut rng = ChaCha8Rng::seed_from_u64(78);
    for (name, model) in models() {
        // More than one 256-row parallel block, not a multiple of any tile.
        let x = rows_for(&model, 600, &mut rng);
        let runs: Vec<Vec<u8>> = [1usize, 2, 3]
            .iter()
            .map(|&t| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .unwrap();
                pool.install(|| model.encode(x.view()).unwrap())
            })
            .collect();
        assert_eq!(runs[0], runs[1], "{name}");
        assert_eq!(runs[0], runs[2], "{name}");
        let cb = model.code_bytes();
        for r in [0usize, 255, 256, 257, 511, 512, 599] {
            let want = reference_code(&model, x.row(r).as_slice().unwrap());
            assert_eq!(runs[0][r * cb..(r + 1) * cb], want[..], "{name}: row {r}");
        }
    }
}

#[test]
fn projections_equal_the_scalar_reference() {
    let mut rng = ChaCha8Rng::seed_from_u64(79);
    for (name, model) in models() {
        let x = rows_for(&model, 23, &mut rng);
        let p = model.project(x.view()).unwrap();
        for (r, xr) in x.rows().into_iter().enumerate() {
            let want = reference_transform(&model, xr.as_slice().unwrap());
            let got = p.row(r);
            // Binary models project to `x − threshold`; the others to the quantiser's input.
            let want: Vec<f32> = match model.stages().last() {
                Some(Stage::Binarize(b)) => want
                    .iter()
                    .zip(b.thresholds())
                    .map(|(v, t)| v - t)
                    .collect(),
                _ => want,
            };
            let got: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
            let want: Vec<u32> = want.iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "{name}: row {r}");
        }
    }
}

#[test]
fn multi_row_kernel_equals_lone_dots_on_every_path() {
    let mut rng = ChaCha8Rng::seed_from_u64(80);
    for d in [1usize, 5, 8, 24, 32, 40, 63, 64, 65, 128, 784] {
        for o in [1usize, 2, 3, 4, 7, 64] {
            let w = uniform(&mut rng, o * d, 4.0);
            for n in [1usize, 2, 3, 4, 5, 6, 7, 8, 9, 13] {
                let x = uniform(&mut rng, n * d, 4.0);
                let mut auto = vec![0f32; n * o];
                dot_rows_fixed_order(&w, &x, d, &mut auto);
                for disp in available_dispatches() {
                    let mut got = vec![0f32; n * o];
                    dot_rows_fixed_order_with(&w, &x, d, &mut got, disp);
                    for r in 0..n {
                        for j in 0..o {
                            let (wj, xr) = (&w[j * d..(j + 1) * d], &x[r * d..(r + 1) * d]);
                            let want = dot_fixed_order_scalar(wj, xr).to_bits();
                            assert_eq!(
                                got[r * o + j].to_bits(),
                                want,
                                "{disp:?} d={d} o={o} n={n}"
                            );
                            assert_eq!(dot_fixed_order(wj, xr).to_bits(), want);
                            assert_eq!(auto[r * o + j].to_bits(), want);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn underflowing_dot_products_keep_their_sign_through_a_linear_stage() {
    // A product of two tiny values underflows to −0.0; a linear stage without bias has always
    // returned `dot + 0.0` = +0.0, and float codes store the sign bit.
    let w = Array2::from_shape_vec((1, 1), vec![1e-30f32]).unwrap();
    let model = Model::new(vec![
        Stage::Linear(Linear::new(w, None).unwrap()),
        Stage::Float(FloatStage::new(1, false).unwrap()),
    ])
    .unwrap();
    let x = Array2::from_shape_vec((1, 1), vec![-1e-30f32]).unwrap();
    assert_eq!(
        dot_fixed_order_scalar(&[1e-30], &[-1e-30]).to_bits(),
        (-0.0f32).to_bits()
    );
    assert_eq!(model.encode(x.view()).unwrap(), 0.0f32.to_le_bytes());
}

/// The same reference check in a child process with `CODEDB_FORCE_SCALAR=1` (read once per
/// process): the scalar twins that a CPU without AVX2+FMA runs give the same codes.
#[test]
fn scalar_twins_give_the_same_codes() {
    if force_scalar_support::in_forced_scalar_child() {
        return;
    }
    force_scalar_support::rerun_forced_scalar(REFERENCE_TEST, &[]);
}

#[test]
fn the_first_non_finite_value_is_reported_wherever_it_falls() {
    use codedb::model::ModelError;
    let mut rng = ChaCha8Rng::seed_from_u64(81);
    let (_, model) = models().swap_remove(0);
    let d = model.input_dim();
    // Positions in different tiles and parallel blocks; the first in row-major order wins.
    for (bad, later) in [
        ((0, 0), (0, 1)),
        ((300, 5), (700, 0)),
        ((517, 783), (518, 0)),
    ] {
        let mut x = rows_for(&model, 800, &mut rng);
        x[bad] = f32::NAN;
        x[later] = f32::INFINITY;
        match model.encode(x.view()) {
            Err(ModelError::NonFinite { row, col, .. }) => {
                assert_eq!((row, col), bad, "first bad value");
            }
            other => panic!("expected a non-finite error, got {other:?}"),
        }
    }
    // A NaN is reported before an earlier value a float16 code cannot hold.
    let half = Model::new(vec![
        Stage::Linear(Linear::new(matrix(&mut rng, 4, d, 1.0), None).unwrap()),
        Stage::Float(FloatStage::new(4, true).unwrap()),
    ])
    .unwrap();
    let mut x = matrix(&mut rng, 600, d, 1.0);
    x[(10, 0)] = 1e9;
    let err = half.encode(x.view()).unwrap_err();
    assert!(
        matches!(err, ModelError::OutOfRange { row: 10, .. }),
        "{err:?}"
    );
    x[(599, 3)] = f32::NEG_INFINITY;
    let err = half.encode(x.view()).unwrap_err();
    assert!(
        matches!(
            err,
            ModelError::NonFinite {
                row: 599,
                col: 3,
                ..
            }
        ),
        "{err:?}"
    );
}
