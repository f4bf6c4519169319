//! Seeded random draws. Every random choice of the model layer goes through here so that a
//! training run is a pure function of its data and its `seed` (ChaCha8, portable across
//! platforms and rand versions that keep the stream).

use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

/// SplitMix64 finaliser: decorrelates nearby seeds.
pub(crate) fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The seed every random choice of the engine takes when the caller gives none: training
/// (`TrainOptions::seed`), evaluation, and the random negatives and SVM visiting order of a
/// query by examples. The CLI's `--seed` and Python's `seed=` default to it in every command.
pub const DEFAULT_SEED: u64 = 1234;

/// The seed of an independent sub-stream `tag` of `seed` (one per pipeline step, per PQ
/// sub-quantiser, ...), so adding a step never shifts the random numbers of another.
pub fn derive_seed(seed: u64, tag: u64) -> u64 {
    splitmix64(seed ^ splitmix64(tag.wrapping_add(0x632b_e59b_d9b4_e019)))
}

/// A ChaCha8 generator for `seed`.
pub(crate) fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// `n` independent standard normal draws (f64).
pub(crate) fn gaussian(rng: &mut ChaCha8Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| StandardNormal.sample(rng)).collect()
}

/// `n` independent uniform draws in `[lo, hi)`.
pub(crate) fn uniform(rng: &mut ChaCha8Rng, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n).map(|_| rng.random_range(lo..hi)).collect()
}

/// `k` distinct indices out of `0..n` (all of them when `k >= n`), in increasing order.
pub(crate) fn sample_indices(rng: &mut ChaCha8Rng, n: usize, k: usize) -> Vec<usize> {
    if k >= n {
        return (0..n).collect();
    }
    let mut idx = rand::seq::index::sample(rng, n, k).into_vec();
    idx.sort_unstable();
    idx
}

/// `k` distinct indices out of `0..n` in random order (FAISS-like random k-means seeding).
pub(crate) fn permuted_indices(rng: &mut ChaCha8Rng, n: usize, k: usize) -> Vec<usize> {
    rand::seq::index::sample(rng, n, k.min(n)).into_vec()
}

/// Copies the rows `idx` of a row-major `dim`-column buffer.
pub(crate) fn gather_rows(data: &[f32], dim: usize, idx: &[usize]) -> Vec<f32> {
    let mut out = Vec::with_capacity(idx.len() * dim);
    for &i in idx {
        if let Some(row) = data.get(i * dim..(i + 1) * dim) {
            out.extend_from_slice(row);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_distinct_tags() {
        let a = gaussian(&mut rng(7), 5);
        let b = gaussian(&mut rng(7), 5);
        assert_eq!(a, b);
        assert_ne!(derive_seed(7, 0), derive_seed(7, 1));
        assert_ne!(derive_seed(7, 0), derive_seed(8, 0));
    }

    #[test]
    fn sampled_indices_are_sorted_distinct_and_in_range() {
        let idx = sample_indices(&mut rng(3), 100, 30);
        assert_eq!(idx.len(), 30);
        assert!(idx.windows(2).all(|w| w[0] < w[1]));
        assert!(idx.iter().all(|&i| i < 100));
        assert_eq!(sample_indices(&mut rng(3), 5, 30), vec![0, 1, 2, 3, 4]);
    }
}
