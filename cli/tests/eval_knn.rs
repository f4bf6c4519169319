//! Exact k-NN, radius search and the ITQ Euclidean ground truth against a brute-force
//! reference, on data chosen to stress the pruning pass (ties, duplicates, large offsets,
//! values whose f32 products overflow).
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use codedb_cli::eval::{
    EvalError, ITQ_NEIGHBOUR_RANK, euclidean_ground_truth, knn_l2, mean_neighbour_distance,
    within_radius,
};
use ndarray::{Array2, ArrayView2, array, s};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Exact squared distance as the crate defines it: ‖q‖² + ‖x‖² − 2 q·x with each dot product
/// in f64 over 8 interleaved lanes (products of f32 are exact in f64), clamped at 0.
fn dot(a: &[f32], b: &[f32]) -> f64 {
    let mut acc = [0f64; 8];
    let n8 = a.len() / 8 * 8;
    for c in (0..n8).step_by(8) {
        for l in 0..8 {
            acc[l] += f64::from(a[c + l]) * f64::from(b[c + l]);
        }
    }
    let mut tail = 0.0;
    for i in n8..a.len() {
        tail += f64::from(a[i]) * f64::from(b[i]);
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail
}

fn sq(q: &[f32], x: &[f32]) -> f64 {
    (dot(q, q) + dot(x, x) - 2.0 * dot(q, x)).max(0.0)
}

/// Brute force: all distances, sorted by (distance, index).
fn brute(db: ArrayView2<f32>, q: &[f32]) -> Vec<(f64, u32)> {
    let mut all: Vec<(f64, u32)> = db
        .outer_iter()
        .enumerate()
        .map(|(i, x)| (sq(q, x.as_slice().unwrap()), i as u32))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    all
}

fn check_knn(db: &Array2<f32>, queries: &Array2<f32>, k: usize, label: &str) {
    let got = knn_l2(db.view(), queries.view(), k).unwrap();
    assert_eq!(got.len(), queries.nrows());
    for (qi, list) in got.iter().enumerate() {
        let want = brute(db.view(), queries.row(qi).as_slice().unwrap());
        let got_pairs: Vec<(u32, f32)> = list.iter().map(|n| (n.index, n.sq_dist)).collect();
        let want_pairs: Vec<(u32, f32)> = want[..k].iter().map(|&(d, i)| (i, d as f32)).collect();
        assert_eq!(got_pairs, want_pairs, "{label}: query {qi}");
    }
}

#[test]
fn knn_equals_brute_force_on_random_data() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for &(n, d, nq, k) in &[
        (300, 16, 70, 10),
        (1000, 784, 5, 51),
        (50, 3, 130, 50),
        (200, 2000, 3, 7),
    ] {
        let db = Array2::from_shape_fn((n, d), |_| rng.random_range(-1.0f32..1.0));
        let q = Array2::from_shape_fn((nq, d), |_| rng.random_range(-1.0f32..1.0));
        check_knn(&db, &q, k, &format!("n={n} d={d}"));
    }
}

#[test]
fn knn_equals_brute_force_on_hard_data() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    // Small integers: many exact ties, which must go to the smaller index.
    let db = Array2::from_shape_fn((600, 12), |_| rng.random_range(0..3) as f32);
    let q = Array2::from_shape_fn((40, 12), |_| rng.random_range(0..3) as f32);
    check_knn(&db, &q, 60, "ties");
    // A large common offset: the ‖q‖² + ‖x‖² − 2q·x expansion cancels catastrophically in f32.
    let db = Array2::from_shape_fn((400, 32), |_| 1.0e4 + rng.random_range(-1.0f32..1.0));
    let q = Array2::from_shape_fn((20, 32), |_| 1.0e4 + rng.random_range(-1.0f32..1.0));
    check_knn(&db, &q, 20, "offset");
    // Duplicated rows and queries equal to database rows (distance exactly 0).
    let base = Array2::from_shape_fn((100, 20), |_| rng.random_range(-5.0f32..5.0));
    let db =
        ndarray::concatenate(ndarray::Axis(0), &[base.view(), base.view(), base.view()]).unwrap();
    let q = base.slice(s![..30, ..]).to_owned();
    check_knn(&db, &q, 5, "duplicates");
    let got = knn_l2(db.view(), q.view(), 3).unwrap();
    for (qi, list) in got.iter().enumerate() {
        let idx: Vec<u32> = list.iter().map(|n| n.index).collect();
        assert_eq!(idx, vec![qi as u32, qi as u32 + 100, qi as u32 + 200]);
        assert!(list.iter().all(|n| n.sq_dist == 0.0));
    }
    // Values whose f32 dot products overflow: the approximate pass is useless and every pair
    // must be re-scored exactly.
    let db = Array2::from_shape_fn((50, 8), |_| rng.random_range(-1.0f32..1.0) * 1e20);
    let q = Array2::from_shape_fn((5, 8), |_| rng.random_range(-1.0f32..1.0) * 1e20);
    check_knn(&db, &q, 4, "overflow");
}

#[test]
fn results_do_not_depend_on_thread_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let db = Array2::from_shape_fn((2000, 64), |_| rng.random_range(-1.0f32..1.0));
    let q = Array2::from_shape_fn((300, 64), |_| rng.random_range(-1.0f32..1.0));
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let three = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let a = one.install(|| knn_l2(db.view(), q.view(), 25).unwrap());
    let b = three.install(|| knn_l2(db.view(), q.view(), 25).unwrap());
    assert_eq!(a, b);
    let ra = one.install(|| mean_neighbour_distance(db.view(), 50, 100, 9).unwrap());
    let rb = three.install(|| mean_neighbour_distance(db.view(), 50, 100, 9).unwrap());
    assert_eq!(ra.to_bits(), rb.to_bits());
}

#[test]
fn radius_search_equals_brute_force() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let db = Array2::from_shape_fn((700, 24), |_| rng.random_range(0..4) as f32);
    let q = Array2::from_shape_fn((30, 24), |_| rng.random_range(0..4) as f32);
    for radius in [0.0, 3.0, 4.5, 6.0] {
        let got = within_radius(db.view(), q.view(), radius).unwrap();
        for (qi, list) in got.iter().enumerate() {
            let want: Vec<u32> = (0..700u32)
                .filter(|&i| {
                    sq(
                        q.row(qi).as_slice().unwrap(),
                        db.row(i as usize).as_slice().unwrap(),
                    ) <= radius * radius
                })
                .collect();
            assert_eq!(list, &want, "radius {radius} query {qi}");
        }
    }
    // Integer data: radius 3 means squared distance ≤ 9 exactly, boundary included.
    let db = array![[0.0f32, 0.0], [3.0, 0.0], [3.0, 0.1], [0.0, -3.0]];
    let got = within_radius(db.view(), array![[0.0f32, 0.0]].view(), 3.0).unwrap();
    assert_eq!(got, vec![vec![0, 1, 3]]);
}

#[test]
fn mean_neighbour_distance_by_hand() {
    // Points on a line at 0, 1, 3, 6, 10. Second nearest other point:
    // 0 → {1, 3}: 3;  1 → {0 (1), 3 (2)}: 2;  3 → {1 (2), 6 (3)}: 3;  6 → {3 (3), 10 (4)}: 4;
    // 10 → {6 (4), 3 (7)}: 7.  Mean over all five: (3 + 2 + 3 + 4 + 7) / 5 = 3.8.
    let pts = array![[0.0f32], [1.0], [3.0], [6.0], [10.0]];
    assert_eq!(mean_neighbour_distance(pts.view(), 2, 5, 0).unwrap(), 3.8);
    // A sample larger than the data uses every point; the seed is then irrelevant.
    assert_eq!(mean_neighbour_distance(pts.view(), 2, 100, 7).unwrap(), 3.8);
    // Nearest other point: 1, 1, 2, 3, 4 → 11 / 5 = 2.2.
    assert_eq!(mean_neighbour_distance(pts.view(), 1, 5, 0).unwrap(), 2.2);
    // The point itself is excluded even when a duplicate shares its distance 0.
    let dup = array![[0.0f32], [0.0], [5.0]];
    // 0 → {0 (0), 5 (5)}: 2nd = 5; second 0 → same 5; 5 → {0, 0}: 5.  Mean 5.
    assert_eq!(mean_neighbour_distance(dup.view(), 2, 3, 0).unwrap(), 5.0);
    // A seeded sample is reproducible and depends on the seed.
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let data = Array2::from_shape_fn((500, 8), |_| rng.random_range(-1.0f32..1.0));
    let a = mean_neighbour_distance(data.view(), ITQ_NEIGHBOUR_RANK, 40, 11).unwrap();
    let b = mean_neighbour_distance(data.view(), ITQ_NEIGHBOUR_RANK, 40, 11).unwrap();
    let c = mean_neighbour_distance(data.view(), ITQ_NEIGHBOUR_RANK, 40, 12).unwrap();
    assert_eq!(a.to_bits(), b.to_bits());
    assert_ne!(a, c);
    // Errors: rank ≥ rows, rank 0, empty sample.
    assert!(matches!(
        mean_neighbour_distance(pts.view(), 5, 5, 0),
        Err(EvalError::InvalidArgument {
            argument: "rank",
            ..
        })
    ));
    assert!(mean_neighbour_distance(pts.view(), 0, 5, 0).is_err());
    assert!(mean_neighbour_distance(pts.view(), 1, 0, 0).is_err());
}

#[test]
fn euclidean_ground_truth_by_hand() {
    // Database on a line at 0, 1, 3, 6, 10: with rank 2 the radius is 3.8 (see above).
    // Query 2.5 → |x − 2.5| = 2.5, 1.5, 0.5, 3.5, 7.5 → relevant {0, 1, 2, 3}.
    // Query 11  → 11, 10, 8, 5, 1 → relevant {4}.
    let db = array![[0.0f32], [1.0], [3.0], [6.0], [10.0]];
    let q = array![[2.5f32], [11.0]];
    let gt = euclidean_ground_truth(db.view(), q.view(), 2, 5, 0).unwrap();
    assert_eq!(gt.radius, 3.8);
    assert_eq!(gt.truth.relevant_items(0).unwrap(), vec![0, 1, 2, 3]);
    assert_eq!(gt.truth.relevant_items(1).unwrap(), vec![4]);
    assert_eq!(gt.truth.relevant_count(1).unwrap(), 1);
}

#[test]
fn bad_inputs_are_errors() {
    let db = array![[0.0f32, 1.0], [2.0, 3.0]];
    let q3 = array![[0.0f32, 1.0, 2.0]];
    assert!(matches!(
        knn_l2(db.view(), q3.view(), 1),
        Err(EvalError::DimensionMismatch {
            expected: 2,
            found: 3,
            ..
        })
    ));
    assert!(matches!(
        knn_l2(db.view(), db.view(), 0),
        Err(EvalError::InvalidArgument { argument: "k", .. })
    ));
    assert!(matches!(
        knn_l2(db.view(), db.view(), 3),
        Err(EvalError::InvalidArgument { argument: "k", .. })
    ));
    let empty = Array2::<f32>::zeros((0, 2));
    assert!(matches!(
        knn_l2(empty.view(), db.view(), 1),
        Err(EvalError::Empty { what: "database" })
    ));
    let nan = array![[0.0f32, f32::NAN]];
    assert!(matches!(
        knn_l2(db.view(), nan.view(), 1),
        Err(EvalError::NonFinite {
            what: "queries",
            row: 0,
            col: 1
        })
    ));
    assert!(within_radius(db.view(), db.view(), -1.0).is_err());
    assert!(within_radius(db.view(), db.view(), f64::NAN).is_err());
    // Strided views are accepted and give the same answer as contiguous copies.
    let big = Array2::from_shape_fn((10, 6), |(i, j)| (i * 6 + j) as f32);
    let view = big.slice(s![..;2, ..;3]);
    assert_eq!(
        knn_l2(view, view, 2).unwrap(),
        knn_l2(view.to_owned().view(), view.to_owned().view(), 2).unwrap()
    );
}
