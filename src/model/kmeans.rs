//! Lloyd's k-means as FAISS runs it for product quantisation (`faiss::Clustering`, the
//! trainer of `ProductQuantizer`):
//!
//! - at most `max_points_per_centroid` (256) training points per centroid: larger inputs are
//!   subsampled (seeded), as FAISS does;
//! - initialisation: k distinct random training points (FAISS's random permutation), or
//!   k-means++ (Arthur & Vassilvitskii 2007) on request, or given centroids (hot start, used
//!   by OPQ's inner PQ training, FAISS `Train_hot_start`);
//! - 25 iterations by default (`ClusteringParameters::niter`), each: assign every point to its
//!   nearest centroid (rayon over point blocks), record the objective (sum of squared
//!   distances), recompute the centroids as means (f64 sums);
//! - empty clusters are repaired after each update as FAISS's `split_clusters` does: a donor
//!   cluster is drawn at random with probability proportional to its size (FAISS's cyclic
//!   scan accepting cluster j with probability (n_j − 1) / (n − k), seeded here; the largest
//!   cluster after 10·k rejections), the empty centroid becomes a copy of the donor and both
//!   are pushed apart by a relative ±1/1024 per coordinate (alternating signs), and the
//!   donor's count is shared between the two. The perturbation has a small absolute floor
//!   so a coordinate at exactly 0 still splits (FAISS leaves it at 0).
//!
//!   The random donor matters on real data: always splitting the *largest* cluster (an
//!   earlier version of this file) keeps re-splitting a cluster of identical points (e.g. the
//!   all-zero border sub-vectors of Fashion-MNIST images), whose two halves cannot separate,
//!   so the same centroids go empty again at every iteration and stay wasted — on
//!   Fashion-MNIST PQ 8x8 that was ~19 wasted centroids per iteration in the first
//!   sub-quantiser, a 3 % worse k-means objective there and PQ recall@1 ~0.02 below FAISS
//!   (BENCHMARKS.md "Peers").
//!
//! Assignment uses `‖c‖² − 2 x·c` from a faer product per block of points (training only;
//! encoding uses exact differences, see `kernels.rs`). Blocks have a fixed size and are
//! combined in order, so results do not depend on the thread count.

use faer::Par;
use ndarray::{Array2, ArrayView2};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::cancel::Cancel;
use super::error::{ModelError, Result};
use super::input::checked_rows;
use super::linalg::a_bt_f32;
use super::random::{derive_seed, gather_rows, permuted_indices, rng, sample_indices};

/// FAISS's default number of k-means iterations.
pub const DEFAULT_KMEANS_ITERATIONS: usize = 25;
/// FAISS's default cap on training points per centroid.
pub const DEFAULT_MAX_POINTS_PER_CENTROID: usize = 256;
/// Relative perturbation when splitting a cluster (FAISS: "a bit above machine epsilon for
/// float16").
const SPLIT_EPS: f32 = 1.0 / 1024.0;
/// Points per assignment block.
const ASSIGN_BLOCK: usize = 4096;

/// How the centroids are initialised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KMeansInit {
    /// k distinct training points chosen at random (FAISS).
    Random,
    /// k-means++ seeding (D² sampling).
    PlusPlus,
}

/// k-means parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct KMeansOptions {
    /// Lloyd iterations.
    pub iterations: usize,
    /// Seed of the initialisation and the subsample.
    pub seed: u64,
    /// How the centroids start.
    pub init: KMeansInit,
    /// Subsample to at most `k × max_points_per_centroid` points (0 = never subsample).
    pub max_points_per_centroid: usize,
}

impl Default for KMeansOptions {
    fn default() -> Self {
        KMeansOptions {
            iterations: DEFAULT_KMEANS_ITERATIONS,
            seed: 1234,
            init: KMeansInit::Random,
            max_points_per_centroid: DEFAULT_MAX_POINTS_PER_CENTROID,
        }
    }
}

/// A k-means result.
#[derive(Debug, Clone)]
pub struct KMeans {
    /// k × d.
    pub centroids: Array2<f32>,
    /// Sum of squared distances to the assigned centroid, at each iteration's assignment.
    pub objective: Vec<f64>,
    /// Number of empty clusters repaired by splitting, over all iterations.
    pub splits: usize,
    /// Points actually used (after subsampling).
    pub training_points: usize,
}

/// Nearest centroid of each row (`x`: n×d, `centroids`: k×d, both row-major) and the squared
/// distance to it. Ties go to the smaller index.
pub(crate) fn assign_nearest(
    x: &[f32],
    d: usize,
    centroids: &[f32],
    k: usize,
) -> (Vec<u32>, Vec<f32>) {
    let cnorm: Vec<f32> = centroids
        .chunks_exact(d)
        .map(|c| c.iter().map(|v| v * v).sum())
        .collect();
    let parts: Vec<(Vec<u32>, Vec<f32>)> = x
        .par_chunks(ASSIGN_BLOCK * d)
        .map(|blk| {
            let nb = blk.len() / d;
            let dots = a_bt_f32(blk, centroids, nb, d, k, Par::Seq);
            let mut idx = Vec::with_capacity(nb);
            let mut dist = Vec::with_capacity(nb);
            for (row, xr) in dots.chunks_exact(k).zip(blk.chunks_exact(d)) {
                let mut best = 0usize;
                let mut best_s = f32::INFINITY;
                for (c, (&dot, &cn)) in row.iter().zip(&cnorm).enumerate() {
                    let s = cn - 2.0 * dot;
                    if s < best_s {
                        best_s = s;
                        best = c;
                    }
                }
                let xn: f32 = xr.iter().map(|v| v * v).sum();
                idx.push(best as u32);
                dist.push((xn + best_s).max(0.0));
            }
            (idx, dist)
        })
        .collect();
    let mut idx = Vec::with_capacity(x.len() / d.max(1));
    let mut dist = Vec::with_capacity(idx.capacity());
    for (i, dd) in parts {
        idx.extend(i);
        dist.extend(dd);
    }
    (idx, dist)
}

/// Means of the points of each cluster (f64 sums, block partials combined in order) and the
/// cluster sizes. Empty clusters keep their previous centroid (repaired by the caller).
fn update_centroids(
    x: &[f32],
    d: usize,
    assign: &[u32],
    centroids: &mut [f32],
    k: usize,
) -> Vec<usize> {
    let parts: Vec<(Vec<f64>, Vec<usize>)> = x
        .par_chunks(ASSIGN_BLOCK * d)
        .zip(assign.par_chunks(ASSIGN_BLOCK))
        .map(|(blk, a)| {
            let mut sums = vec![0f64; k * d];
            let mut counts = vec![0usize; k];
            for (xr, &c) in blk.chunks_exact(d).zip(a) {
                let c = c as usize;
                counts[c] += 1;
                for (s, &v) in sums[c * d..(c + 1) * d].iter_mut().zip(xr) {
                    *s += v as f64;
                }
            }
            (sums, counts)
        })
        .collect();
    let mut sums = vec![0f64; k * d];
    let mut counts = vec![0usize; k];
    for (s, c) in parts {
        for (a, b) in sums.iter_mut().zip(s) {
            *a += b;
        }
        for (a, b) in counts.iter_mut().zip(c) {
            *a += b;
        }
    }
    for c in 0..k {
        if counts[c] > 0 {
            let inv = 1.0 / counts[c] as f64;
            for (o, s) in centroids[c * d..(c + 1) * d]
                .iter_mut()
                .zip(&sums[c * d..(c + 1) * d])
            {
                *o = (s * inv) as f32;
            }
        }
    }
    counts
}

/// Repairs empty clusters by splitting a donor drawn with probability proportional to its
/// size (FAISS `split_clusters`, see module doc); `n` is the number of training points.
/// Returns the number of splits.
fn split_empty(
    centroids: &mut [f32],
    d: usize,
    counts: &[usize],
    n: usize,
    floor: f32,
    r: &mut ChaCha8Rng,
) -> usize {
    let k = counts.len();
    if counts.iter().all(|&c| c != 0) {
        return 0;
    }
    // FAISS keeps the counts as floats and halves them on a split.
    let mut sizes: Vec<f64> = counts.iter().map(|&c| c as f64).collect();
    let spare = n.saturating_sub(k) as f64;
    let mut splits = 0;
    for ci in 0..k {
        if sizes[ci] != 0.0 {
            continue;
        }
        let mut donor = None;
        if spare > 0.0 {
            let mut cj = 0;
            for _ in 0..10 * k {
                let p = (sizes[cj] - 1.0) / spare;
                if r.random::<f64>() < p {
                    donor = Some(cj);
                    break;
                }
                cj = (cj + 1) % k;
            }
        }
        // Fallback: the largest cluster, smallest index on ties.
        let cj = donor.unwrap_or_else(|| {
            let mut cj = 0;
            for c in 1..k {
                if sizes[c] > sizes[cj] {
                    cj = c;
                }
            }
            cj
        });
        if sizes[cj] < 2.0 {
            break; // nothing left worth splitting
        }
        for j in 0..d {
            let v = centroids[cj * d + j];
            let delta = SPLIT_EPS * (v.abs() + floor);
            let (a, b) = if j % 2 == 0 {
                (v + delta, v - delta)
            } else {
                (v - delta, v + delta)
            };
            centroids[ci * d + j] = a;
            centroids[cj * d + j] = b;
        }
        sizes[ci] = sizes[cj] / 2.0;
        sizes[cj] -= sizes[ci];
        splits += 1;
    }
    splits
}

/// k-means++ seeding: the first centre uniformly, each next one with probability
/// proportional to the squared distance to the nearest centre chosen so far (uniformly when
/// all remaining distances are 0).
fn plus_plus(x: &[f32], n: usize, d: usize, k: usize, seed: u64) -> Vec<f32> {
    let mut r = rng(seed);
    let mut centres = Vec::with_capacity(k * d);
    let first = r.random_range(0..n);
    centres.extend_from_slice(&x[first * d..(first + 1) * d]);
    let mut best: Vec<f64> = vec![f64::INFINITY; n];
    for c in 1..k {
        let last = centres[(c - 1) * d..c * d].to_vec();
        best.par_iter_mut()
            .zip(x.par_chunks(d))
            .for_each(|(b, xr)| {
                let dd: f64 = xr
                    .iter()
                    .zip(&last)
                    .map(|(a, b)| ((a - b) as f64).powi(2))
                    .sum();
                if dd < *b {
                    *b = dd;
                }
            });
        let total: f64 = best.iter().sum();
        let pick = if total > 0.0 && total.is_finite() {
            let mut u = r.random_range(0.0..total);
            let mut p = n - 1;
            for (i, &b) in best.iter().enumerate() {
                if u < b {
                    p = i;
                    break;
                }
                u -= b;
            }
            p
        } else {
            r.random_range(0..n)
        };
        centres.extend_from_slice(&x[pick * d..(pick + 1) * d]);
    }
    centres
}

/// Runs k-means on row-major validated data; `init` gives hot-start centroids (k×d). `cancel`
/// is checked before each Lloyd iteration (one assignment pass: well under a second for the
/// sizes PQ trains on).
pub(crate) fn kmeans_rows(
    x: &[f32],
    d: usize,
    k: usize,
    init: Option<&[f32]>,
    opts: &KMeansOptions,
    cancel: &Cancel,
) -> Result<KMeans> {
    let n = x.len() / d.max(1);
    if k == 0 {
        return Err(ModelError::invalid("k-means", "k must be >= 1"));
    }
    if n < k {
        return Err(ModelError::TooFewRows {
            method: format!("k-means with k = {k}"),
            needed: k,
            got: n,
        });
    }
    // FAISS-style subsampling.
    let cap = k.saturating_mul(opts.max_points_per_centroid);
    let sampled;
    let x: &[f32] = if opts.max_points_per_centroid > 0 && n > cap {
        let idx = sample_indices(&mut rng(derive_seed(opts.seed, 1)), n, cap);
        sampled = gather_rows(x, d, &idx);
        &sampled
    } else {
        x
    };
    let n = x.len() / d;
    let mut centroids: Vec<f32> = match init {
        Some(c) => {
            if c.len() != k * d {
                return Err(ModelError::invalid(
                    "k-means initial centroids",
                    format!("expected {k} x {d} values, got {}", c.len()),
                ));
            }
            c.to_vec()
        }
        None => match opts.init {
            KMeansInit::Random => {
                let idx = permuted_indices(&mut rng(derive_seed(opts.seed, 2)), n, k);
                gather_rows(x, d, &idx)
            }
            KMeansInit::PlusPlus => plus_plus(x, n, d, k, derive_seed(opts.seed, 3)),
        },
    };
    let rms = (x.iter().map(|v| (*v as f64).powi(2)).sum::<f64>() / x.len().max(1) as f64).sqrt();
    let floor = ((rms * 1e-3) as f32).max(f32::MIN_POSITIVE);
    let mut objective = Vec::with_capacity(opts.iterations);
    let mut splits = 0;
    let mut split_rng = rng(derive_seed(opts.seed, 4));
    for _ in 0..opts.iterations {
        cancel.check()?;
        let (assign, dist) = assign_nearest(x, d, &centroids, k);
        objective.push(dist.iter().map(|&v| v as f64).sum());
        let counts = update_centroids(x, d, &assign, &mut centroids, k);
        splits += split_empty(&mut centroids, d, &counts, n, floor, &mut split_rng);
    }
    let centroids = Array2::from_shape_vec((k, d), centroids)
        .map_err(|e| ModelError::shape("k-means centroids", e))?;
    Ok(KMeans {
        centroids,
        objective,
        splits,
        training_points: n,
    })
}

/// k-means of the rows of `x` into `k` clusters.
pub fn kmeans(x: ArrayView2<f32>, k: usize, opts: &KMeansOptions) -> Result<KMeans> {
    let rows = checked_rows("k-means: training data", x, None)?;
    kmeans_rows(rows.as_slice(), rows.dim(), k, None, opts, &Cancel::new())
}

/// k-means started from the given centroids (k × d).
pub fn kmeans_from(
    x: ArrayView2<f32>,
    initial: ArrayView2<f32>,
    opts: &KMeansOptions,
) -> Result<KMeans> {
    let rows = checked_rows("k-means: training data", x, None)?;
    let init = checked_rows("k-means: initial centroids", initial, Some(rows.dim()))?;
    kmeans_rows(
        rows.as_slice(),
        rows.dim(),
        init.n(),
        Some(init.as_slice()),
        opts,
        &Cancel::new(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::random::gaussian;

    fn blobs(n_per: usize, centres: &[[f32; 2]], seed: u64) -> Array2<f32> {
        let g = gaussian(&mut rng(seed), n_per * centres.len() * 2);
        Array2::from_shape_fn((n_per * centres.len(), 2), |(i, j)| {
            centres[i / n_per][j] + 0.05 * g[i * 2 + j] as f32
        })
    }

    #[test]
    fn finds_separated_blobs_and_objective_decreases() {
        let centres = [[0.0, 0.0], [5.0, 0.0], [0.0, 5.0], [5.0, 5.0]];
        let x = blobs(200, &centres, 1);
        for init in [KMeansInit::Random, KMeansInit::PlusPlus] {
            let opts = KMeansOptions {
                init,
                seed: 9,
                ..Default::default()
            };
            let km = kmeans(x.view(), 4, &opts).unwrap();
            for w in km.objective.windows(2) {
                assert!(w[1] <= w[0] * (1.0 + 1e-6));
            }
            for c in centres {
                let near = km
                    .centroids
                    .rows()
                    .into_iter()
                    .any(|r| (r[0] - c[0]).abs() < 0.1 && (r[1] - c[1]).abs() < 0.1);
                assert!(
                    near || init == KMeansInit::Random,
                    "{init:?} missed {c:?}: {:?}",
                    km.centroids
                );
            }
            assert_eq!(
                kmeans(x.view(), 4, &opts).unwrap().centroids,
                km.centroids,
                "not reproducible"
            );
        }
    }

    #[test]
    fn empty_clusters_are_repaired_by_splitting() {
        // 3 distinct values, many duplicates, k = 6 from a hot start where 3 centroids are far
        // away and attract nothing: every iteration must split.
        let mut v = Vec::new();
        for i in 0..300 {
            v.push((i % 3) as f32);
        }
        let x = Array2::from_shape_vec((300, 1), v).unwrap();
        let init =
            Array2::from_shape_vec((6, 1), vec![0.0, 1.0, 2.0, 100.0, 200.0, 300.0]).unwrap();
        let opts = KMeansOptions {
            iterations: 3,
            ..Default::default()
        };
        let km = kmeans_from(x.view(), init.view(), &opts).unwrap();
        assert!(km.splits >= 3, "splits = {}", km.splits);
        // No centroid is left far away: all were moved next to a populated one.
        assert!(
            km.centroids.iter().all(|&c| c > -0.1 && c < 2.1),
            "{:?}",
            km.centroids
        );
        // Points on 0 are still at distance ~0.
        assert!(km.objective.last().unwrap() < &1e-3);
    }

    #[test]
    fn splits_do_not_stay_stuck_on_a_cluster_of_identical_points() {
        // 600 identical all-zero rows (like the blank border sub-vectors of Fashion-MNIST)
        // and 400 rows in 4 spread-out blobs; k = 40 from a random start draws ~24 copies of
        // the zero row, 23 of which are empty after the first assignment. Splitting always
        // the largest cluster (the zero rows, whose halves cannot separate) left them empty at
        // every iteration; donors drawn in proportion to size end up in the blobs.
        let centres = [[50.0, 0.0], [0.0, 50.0], [50.0, 50.0], [-50.0, 50.0]];
        let g = gaussian(&mut rng(4), 800);
        let mut v = vec![0f32; 600 * 2];
        for i in 0..400 {
            for j in 0..2 {
                v.push(centres[i / 100][j] + 3.0 * g[i * 2 + j] as f32);
            }
        }
        let x = Array2::from_shape_vec((1000, 2), v).unwrap();
        let k = 40;
        let opts = KMeansOptions {
            seed: 5,
            ..Default::default()
        };
        let km = kmeans(x.view(), k, &opts).unwrap();
        assert!(
            km.splits >= 10,
            "the start should need splits: {}",
            km.splits
        );
        let flat: Vec<f32> = km.centroids.iter().copied().collect();
        let (assign, _) = assign_nearest(x.as_slice().unwrap(), 2, &flat, k);
        let mut used = vec![false; k];
        for a in assign {
            used[a as usize] = true;
        }
        let used = used.iter().filter(|&&u| u).count();
        assert!(used >= k - 2, "only {used} of {k} centroids attract points");
    }

    #[test]
    fn too_few_points_is_an_error() {
        let x = Array2::<f32>::zeros((5, 2));
        let err = kmeans(x.view(), 16, &KMeansOptions::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("k = 16") && err.contains("got 5"), "{err}");
    }
}
