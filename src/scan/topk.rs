//! Bounded top-k collection with a total, deterministic order.
//!
//! Every candidate is a `(key, id)` pair with a `u32` key, **smaller is better**, ties broken by
//! the smaller id. Because the order is total, the k best of a set do not depend on the order
//! the candidates arrive in, so SIMD, scalar, threaded and per-segment scans that are merged all
//! return the identical list.
//!
//! Hamming distances are keys as they are. `f32` scores become keys through
//! [`f32_to_key`], a monotone bijection from finite floats to `u32` (`-0.0` is first turned into
//! `+0.0`); larger-is-better scores are negated first (exact in IEEE arithmetic), so one
//! collector serves every metric. NaN can never enter: [`ScoreTopK::push`] refuses non-finite
//! scores with an error, and the kernels only produce finite scores because their inputs are
//! validated (see `scan::lut` and `scan::dense`).
//!
//! The collector keeps a max-heap of the k best seen so far; [`TopK::threshold`] is the key of
//! the current k-th (or `u32::MAX` while fewer than k were pushed). Kernels compare each
//! candidate's key against the threshold in registers and only call into the collector for
//! those with `key <= threshold`, so after the first few thousand rows almost nothing touches
//! the heap.

use super::error::{Result, ScanError};

/// Which way a score is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Distances: L2, Hamming, asymmetric binary distance.
    SmallerIsBetter,
    /// Similarities: inner product, linear classifier scores.
    LargerIsBetter,
}

/// Maps a finite `f32` to a `u32` with the same order (smaller float → smaller key).
///
/// `-0.0` and `+0.0` map to the same key. Not meaningful for NaN; callers check finiteness.
#[inline]
pub fn f32_to_key(x: f32) -> u32 {
    let bits = (x + 0.0).to_bits();
    if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// Inverse of [`f32_to_key`].
#[inline]
pub fn key_to_f32(key: u32) -> f32 {
    if key & 0x8000_0000 != 0 {
        f32::from_bits(key & 0x7fff_ffff)
    } else {
        f32::from_bits(!key)
    }
}

/// Inverse of [`ScoreTopK::key`]: the score a key stands for under `direction`.
#[inline]
pub fn key_to_score(key: u32, direction: Direction) -> f32 {
    let s = key_to_f32(key);
    match direction {
        Direction::SmallerIsBetter => s + 0.0,
        Direction::LargerIsBetter => -s + 0.0,
    }
}

/// A bounded collector of the k smallest `(key, id)` pairs.
#[derive(Debug, Clone)]
pub struct TopK {
    k: usize,
    /// Max-heap on `(key, id)`: `heap[0]` is the worst kept entry.
    heap: Vec<(u32, u64)>,
}

impl TopK {
    /// A collector for the `k` best; `k = 0` is an error.
    pub fn new(k: usize) -> Result<Self> {
        if k == 0 {
            return Err(ScanError::ZeroK);
        }
        Ok(TopK {
            k,
            heap: Vec::with_capacity(k.min(1 << 16)),
        })
    }

    /// The k this collector keeps.
    pub fn k(&self) -> usize {
        self.k
    }

    /// How many entries are held (at most k).
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when nothing was pushed yet.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// True once k entries are held: from then on a push must beat the k-th to enter.
    pub fn is_full(&self) -> bool {
        self.heap.len() >= self.k
    }

    /// The key of the current k-th entry, or `u32::MAX` while the collector is not full.
    /// A candidate with `key > threshold()` can never enter; one with `key == threshold()` may
    /// (if its id is smaller), so kernels pass `key <= threshold()` on to [`TopK::push`].
    #[inline]
    pub fn threshold(&self) -> u32 {
        if self.is_full() {
            self.heap.first().map_or(u32::MAX, |e| e.0)
        } else {
            u32::MAX
        }
    }

    /// Offers a candidate; returns true if it was kept.
    #[inline]
    pub fn push(&mut self, key: u32, id: u64) -> bool {
        if self.heap.len() < self.k {
            self.heap.push((key, id));
            self.sift_up(self.heap.len() - 1);
            return true;
        }
        match self.heap.first_mut() {
            Some(top) if (key, id) < *top => {
                *top = (key, id);
                self.sift_down(0);
                true
            }
            _ => false,
        }
    }

    /// Folds another collector (another thread's, another segment's) into this one. The result
    /// is the k best of the union, whatever the order of merges.
    pub fn merge(&mut self, other: TopK) {
        for (key, id) in other.heap {
            self.push(key, id);
        }
    }

    /// The kept entries, best first: ascending key, ties by ascending id.
    pub fn into_sorted_vec(self) -> Vec<(u32, u64)> {
        let mut v = self.heap;
        v.sort_unstable();
        v
    }

    fn sift_up(&mut self, mut i: usize) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[i] > self.heap[parent] {
                self.heap.swap(i, parent);
                i = parent;
            } else {
                break;
            }
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let big = if r < n && self.heap[r] > self.heap[l] {
                r
            } else {
                l
            };
            if self.heap[big] > self.heap[i] {
                self.heap.swap(big, i);
                i = big;
            } else {
                break;
            }
        }
    }
}

/// A top-k collector of finite `f32` scores with an explicit [`Direction`].
#[derive(Debug, Clone)]
pub struct ScoreTopK {
    inner: TopK,
    direction: Direction,
}

impl ScoreTopK {
    /// A collector for the `k` best scores; `k = 0` is an error.
    pub fn new(k: usize, direction: Direction) -> Result<Self> {
        Ok(ScoreTopK {
            inner: TopK::new(k)?,
            direction,
        })
    }

    /// Wraps a key collector whose keys were made by [`ScoreTopK::key`] with this direction.
    pub fn from_keys(inner: TopK, direction: Direction) -> Self {
        ScoreTopK { inner, direction }
    }

    /// The direction scores are ranked in.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// The order-preserving key of a finite score under `direction`.
    #[inline]
    pub fn key(score: f32, direction: Direction) -> u32 {
        match direction {
            Direction::SmallerIsBetter => f32_to_key(score),
            Direction::LargerIsBetter => f32_to_key(-score),
        }
    }

    fn score_of(key: u32, direction: Direction) -> f32 {
        key_to_score(key, direction)
    }

    /// Offers a score; NaN and ±∞ are refused with an error (they have no place in a total
    /// order of results). Returns whether the score was kept.
    pub fn push(&mut self, score: f32, id: u64) -> Result<bool> {
        if !score.is_finite() {
            return Err(ScanError::NonFinite {
                argument: "score",
                index: 0,
                value: score,
            });
        }
        Ok(self.inner.push(Self::key(score, self.direction), id))
    }

    /// The current k-th score, or `None` while fewer than k scores were pushed.
    pub fn threshold(&self) -> Option<f32> {
        if self.inner.is_full() {
            Some(Self::score_of(self.inner.threshold(), self.direction))
        } else {
            None
        }
    }

    /// Folds another collector with the same direction into this one.
    pub fn merge(&mut self, other: ScoreTopK) -> Result<()> {
        if other.direction != self.direction {
            return Err(ScanError::Invalid {
                argument: "other",
                detail: "cannot merge collectors ranking in opposite directions".into(),
            });
        }
        self.inner.merge(other.inner);
        Ok(())
    }

    /// Number of scores held.
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// True when nothing was pushed yet.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The kept scores, best first, ties by smaller id.
    pub fn into_sorted_vec(self) -> Vec<(f32, u64)> {
        let d = self.direction;
        self.inner
            .into_sorted_vec()
            .into_iter()
            .map(|(key, id)| (Self::score_of(key, d), id))
            .collect()
    }
}

/// Merges per-segment (or per-shard) distance lists into the k best overall, best first.
pub fn merge_distance_lists(
    lists: impl IntoIterator<Item = Vec<(u32, u64)>>,
    k: usize,
) -> Result<Vec<(u32, u64)>> {
    let mut t = TopK::new(k)?;
    for (d, id) in lists.into_iter().flatten() {
        t.push(d, id);
    }
    Ok(t.into_sorted_vec())
}

/// Merges per-segment score lists (all ranked in `direction`) into the k best overall, best
/// first; a non-finite score is an error.
pub fn merge_score_lists(
    lists: impl IntoIterator<Item = Vec<(f32, u64)>>,
    direction: Direction,
    k: usize,
) -> Result<Vec<(f32, u64)>> {
    let mut t = ScoreTopK::new(k, direction)?;
    for (s, id) in lists.into_iter().flatten() {
        t.push(s, id)?;
    }
    Ok(t.into_sorted_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn zero_k_is_an_error() {
        assert_eq!(TopK::new(0).unwrap_err(), ScanError::ZeroK);
        assert!(ScoreTopK::new(0, Direction::LargerIsBetter).is_err());
    }

    #[test]
    fn keeps_k_smallest_with_ties_by_id() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for k in [1usize, 2, 5, 64, 1000, 5000] {
            let items: Vec<(u32, u64)> = (0..3000u64)
                .map(|i| (rng.random_range(0..50u32), (i * 7919) % 3001))
                .collect();
            let mut t = TopK::new(k).unwrap();
            for &(key, id) in &items {
                t.push(key, id);
            }
            let mut want = items.clone();
            want.sort_unstable();
            want.truncate(k);
            assert_eq!(t.into_sorted_vec(), want, "k = {k}");
        }
    }

    #[test]
    fn threshold_tracks_kth() {
        let mut t = TopK::new(3).unwrap();
        assert_eq!(t.threshold(), u32::MAX);
        t.push(5, 1);
        t.push(9, 2);
        assert_eq!(t.threshold(), u32::MAX);
        t.push(7, 3);
        assert_eq!(t.threshold(), 9);
        assert!(!t.push(9, 4), "tie with larger id must not enter");
        assert!(t.push(9, 0), "tie with smaller id must enter");
        assert_eq!(t.threshold(), 9);
        assert!(t.push(1, 10));
        assert_eq!(t.threshold(), 7);
        assert_eq!(t.into_sorted_vec(), vec![(1, 10), (5, 1), (7, 3)]);
    }

    #[test]
    fn merge_equals_single_pass() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let items: Vec<(u32, u64)> = (0..2000u64)
            .map(|i| (rng.random_range(0..100u32), i))
            .collect();
        let mut whole = TopK::new(37).unwrap();
        items.iter().for_each(|&(k, i)| {
            whole.push(k, i);
        });
        let mut parts: Vec<TopK> = (0..4).map(|_| TopK::new(37).unwrap()).collect();
        for (j, &(k, i)) in items.iter().enumerate() {
            parts[j % 4].push(k, i);
        }
        let mut merged = TopK::new(37).unwrap();
        for p in parts.into_iter().rev() {
            merged.merge(p);
        }
        assert_eq!(merged.into_sorted_vec(), whole.into_sorted_vec());
    }

    #[test]
    fn f32_keys_are_monotone() {
        let xs = [
            f32::MIN,
            -1e30,
            -1.0,
            -f32::MIN_POSITIVE,
            -1e-45,
            0.0,
            1e-45,
            f32::MIN_POSITIVE,
            1.0,
            3.5,
            1e30,
            f32::MAX,
        ];
        for w in xs.windows(2) {
            assert!(f32_to_key(w[0]) < f32_to_key(w[1]), "{} < {}", w[0], w[1]);
        }
        for &x in &xs {
            assert_eq!(key_to_f32(f32_to_key(x)).to_bits(), x.to_bits());
        }
        assert_eq!(f32_to_key(-0.0), f32_to_key(0.0));
    }

    #[test]
    fn score_topk_both_directions() {
        let scores = [0.5f32, -2.0, 3.0, 3.0, -0.0, 7.25];
        let mut small = ScoreTopK::new(3, Direction::SmallerIsBetter).unwrap();
        let mut large = ScoreTopK::new(3, Direction::LargerIsBetter).unwrap();
        for (i, &s) in scores.iter().enumerate() {
            small.push(s, i as u64).unwrap();
            large.push(s, i as u64).unwrap();
        }
        assert_eq!(large.threshold(), Some(3.0));
        assert_eq!(small.threshold(), Some(0.5));
        assert_eq!(small.into_sorted_vec(), vec![(-2.0, 1), (0.0, 4), (0.5, 0)]);
        assert_eq!(large.into_sorted_vec(), vec![(7.25, 5), (3.0, 2), (3.0, 3)]);
    }

    #[test]
    fn non_finite_scores_are_refused() {
        let mut t = ScoreTopK::new(2, Direction::SmallerIsBetter).unwrap();
        assert!(t.push(f32::NAN, 1).is_err());
        assert!(t.push(f32::INFINITY, 1).is_err());
        assert!(t.push(f32::NEG_INFINITY, 1).is_err());
        assert!(t.is_empty());
    }

    #[test]
    fn merging_lists() {
        let a = vec![(1u32, 5u64), (3, 1)];
        let b = vec![(1u32, 2u64), (2, 9)];
        assert_eq!(
            merge_distance_lists([a, b], 3).unwrap(),
            vec![(1, 2), (1, 5), (2, 9)]
        );
        let x = vec![(0.5f32, 1u64), (0.25, 2)];
        let y = vec![(0.5f32, 0u64)];
        assert_eq!(
            merge_score_lists([x.clone(), y], Direction::LargerIsBetter, 2).unwrap(),
            vec![(0.5, 0), (0.5, 1)]
        );
        assert!(merge_score_lists([vec![(f32::NAN, 1u64)]], Direction::LargerIsBetter, 2).is_err());
        assert!(merge_score_lists([x], Direction::LargerIsBetter, 0).is_err());
    }

    #[test]
    fn k_larger_than_input_returns_all() {
        let mut t = TopK::new(100).unwrap();
        for i in 0..10u64 {
            t.push(10 - i as u32, i);
        }
        let v = t.into_sorted_vec();
        assert_eq!(v.len(), 10);
        assert_eq!(v[0], (1, 9));
    }
}
