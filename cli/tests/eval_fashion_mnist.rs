//! Real-data checks on Debian's Fashion-MNIST (skipped with a message when the package
//! `dataset-fashion-mnist` is not installed):
//! - class-label mAP@all and P@10 of exact search on L2-normalised pixels reproduce the
//!   reference numbers of `shared/datasets/sanity_eval.py` (mAP 0.475, P@10 0.815, computed by
//!   numpy on 2,000 random queries, the query excluded from its own ranking);
//! - exact k-NN on raw pixels equals a brute-force scan.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use codedb_cli::eval::{
    GroundTruth, Order, knn_l2, mean_average_precision, mean_precision_at_k, rank_by_score,
};
use codedb_cli::io::{FASHION_MNIST_DEBIAN_DIR, is_fashion_mnist_dir, load_fashion_mnist};
use ndarray::{Array2, Axis};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn load() -> Option<codedb_cli::io::LabeledVectors> {
    if !is_fashion_mnist_dir(FASHION_MNIST_DEBIAN_DIR) {
        println!(
            "skipped: {FASHION_MNIST_DEBIAN_DIR} not installed (Debian dataset-fashion-mnist)"
        );
        return None;
    }
    Some(load_fashion_mnist(FASHION_MNIST_DEBIAN_DIR).unwrap())
}

#[test]
fn class_label_map_matches_the_numpy_reference() {
    let Some(data) = load() else { return };
    let mut x = data.vectors.clone();
    for mut row in x.axis_iter_mut(Axis(0)) {
        let n = row.dot(&row).sqrt();
        row /= n;
    }
    let n = x.nrows();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let queries: Vec<usize> = rand::seq::index::sample(&mut rng, n, 400).into_vec();
    let qx = x.select(Axis(0), &queries);
    let sims: Array2<f32> = qx.dot(&x.t());
    let mut rankings = Vec::new();
    let mut sets = Vec::new();
    for (qi, &q) in queries.iter().enumerate() {
        // The query is excluded from its ranking and from its relevant set, as in sanity_eval.
        let ranking: Vec<u32> = rank_by_score(sims.row(qi).as_slice().unwrap(), Order::Descending)
            .unwrap()
            .into_iter()
            .filter(|&i| i as usize != q)
            .collect();
        rankings.push(ranking);
        sets.push(
            (0..n as u32)
                .filter(|&i| i as usize != q && data.labels[i as usize] == data.labels[q])
                .collect::<Vec<u32>>(),
        );
    }
    let gt = GroundTruth::from_neighbour_sets(sets, n).unwrap();
    let map = mean_average_precision(&gt, &rankings).unwrap();
    let p10 = mean_precision_at_k(&gt, &rankings, 10).unwrap();
    println!(
        "Fashion-MNIST pixels, 400 queries: mAP {:.4}, P@10 {:.4}",
        map.mean, p10.mean
    );
    // 400 random queries: the standard error of the mean AP is about 0.01.
    assert!((map.mean - 0.475).abs() < 0.035, "mAP {}", map.mean);
    assert!((p10.mean - 0.815).abs() < 0.035, "P@10 {}", p10.mean);
    assert_eq!(map.skipped, 0);
}

#[test]
fn knn_on_raw_pixels_equals_brute_force() {
    let Some(data) = load() else { return };
    let x = &data.vectors;
    let queries = x.select(Axis(0), &[60_000, 65_432, 69_999]);
    let got = knn_l2(x.view(), queries.view(), 20).unwrap();
    for (qi, list) in got.iter().enumerate() {
        let q = queries.row(qi);
        // Pixel values are integers ≤ 255: every squared distance is an exact integer in f64.
        let mut all: Vec<(f64, u32)> = x
            .outer_iter()
            .enumerate()
            .map(|(i, r)| {
                (
                    r.iter()
                        .zip(q.iter())
                        .map(|(a, b)| f64::from(a - b).powi(2))
                        .sum(),
                    i as u32,
                )
            })
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let want: Vec<(u32, f32)> = all[..20].iter().map(|&(d, i)| (i, d as f32)).collect();
        let have: Vec<(u32, f32)> = list.iter().map(|nb| (nb.index, nb.sq_dist)).collect();
        assert_eq!(have, want, "query {qi}");
        // The query itself (it is in the database) comes first at distance 0.
        assert_eq!(list[0].sq_dist, 0.0);
    }
}
