//! Class labels: arbitrary `i64` labels mapped to dense ids `0..C` in increasing label order
//! (the order scikit-learn's `classes_` uses, so ties resolve to the same class), and the
//! class means of eq. 2 (Mensink et al. TPAMI 2013), summed in f64.

use rayon::prelude::*;

use super::super::error::{ClassifyError, ClassifyResult as Result};

/// The distinct labels of a training set, sorted; a label's position is its dense id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassIndex {
    labels: Vec<i64>,
}

impl ClassIndex {
    /// The classes of `labels` (one per row of `rows` rows) and each row's dense id.
    pub fn from_labels(what: &str, labels: &[i64], rows: usize) -> Result<(ClassIndex, Vec<u32>)> {
        if labels.len() != rows {
            return Err(ClassifyError::LengthMismatch {
                what: what.to_string(),
                expected: rows,
                got: labels.len(),
            });
        }
        let mut distinct = labels.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() > u32::MAX as usize {
            return Err(ClassifyError::invalid(what, "more than 2^32 classes"));
        }
        let idx = ClassIndex { labels: distinct };
        let ids = labels
            .iter()
            .map(|l| idx.id(*l).unwrap_or(0) as u32)
            .collect();
        Ok((idx, ids))
    }

    /// Dense id of a label.
    pub fn id(&self, label: i64) -> Option<usize> {
        self.labels.binary_search(&label).ok()
    }

    /// The distinct labels, sorted; a label's dense id is its position.
    pub fn labels(&self) -> &[i64] {
        &self.labels
    }

    /// Number of distinct labels.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// True when there are no labels.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
}

/// Per-class row counts.
pub(crate) fn class_counts(ids: &[u32], classes: usize) -> Vec<usize> {
    let mut counts = vec![0usize; classes];
    for &c in ids {
        counts[c as usize] += 1;
    }
    counts
}

/// Class means (eq. 2) of row-major `x` (`d` columns) restricted to `rows`, in f64:
/// `classes × d`, row-major. Classes without rows get a zero mean (callers check counts).
pub(crate) fn class_means_f64(
    x: &[f32],
    d: usize,
    ids: &[u32],
    rows: &[usize],
    classes: usize,
) -> (Vec<f64>, Vec<usize>) {
    const BLOCK: usize = 2048;
    let parts: Vec<(Vec<f64>, Vec<usize>)> = rows
        .par_chunks(BLOCK)
        .map(|blk| {
            let mut sums = vec![0f64; classes * d];
            let mut counts = vec![0usize; classes];
            for &r in blk {
                let c = ids[r] as usize;
                counts[c] += 1;
                for (s, &v) in sums[c * d..(c + 1) * d]
                    .iter_mut()
                    .zip(&x[r * d..(r + 1) * d])
                {
                    *s += v as f64;
                }
            }
            (sums, counts)
        })
        .collect();
    let mut sums = vec![0f64; classes * d];
    let mut counts = vec![0usize; classes];
    for (s, c) in parts {
        for (a, b) in sums.iter_mut().zip(s) {
            *a += b;
        }
        for (a, b) in counts.iter_mut().zip(c) {
            *a += b;
        }
    }
    for c in 0..classes {
        if counts[c] > 0 {
            let inv = 1.0 / counts[c] as f64;
            for v in &mut sums[c * d..(c + 1) * d] {
                *v *= inv;
            }
        }
    }
    (sums, counts)
}

/// The `k` best of `labels` for each row of `scores` (rows of `labels.len()` class scores, as
/// a one-vs-rest or class-mean classifier gives them), best first; `k = 0` is an error.
pub(crate) fn top_k_labels(scores: &[f64], labels: &[i64], k: usize) -> Result<Vec<Vec<i64>>> {
    if k == 0 {
        return Err(ClassifyError::invalid("k", "must be at least 1"));
    }
    Ok(scores
        .par_chunks(labels.len().max(1))
        .map(|r| top_k_ids(r, k).into_iter().map(|i| labels[i]).collect())
        .collect())
}

/// The dense ids ranked by decreasing score (ties: smaller id first), first `k` of them.
pub(crate) fn top_k_ids(scores: &[f64], k: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    let cmp = |a: &usize, b: &usize| {
        scores[*b]
            .partial_cmp(&scores[*a])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(b))
    };
    let k = k.min(order.len());
    if k < order.len() && k > 0 {
        order.select_nth_unstable_by(k - 1, cmp);
        order.truncate(k);
    }
    order.sort_by(cmp);
    order.truncate(k);
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_map_to_sorted_dense_ids() {
        let (idx, ids) = ClassIndex::from_labels("labels", &[7, -2, 7, 30], 4).unwrap();
        assert_eq!(idx.labels(), &[-2, 7, 30]);
        assert_eq!(ids, vec![1, 0, 1, 2]);
        let err = ClassIndex::from_labels("labels", &[1, 2], 3).unwrap_err();
        assert!(err.to_string().contains("2 entries for 3 rows"), "{err}");
    }

    #[test]
    fn top_k_breaks_ties_by_smaller_id() {
        assert_eq!(top_k_ids(&[1.0, 3.0, 3.0, 0.5], 3), vec![1, 2, 0]);
        assert_eq!(top_k_ids(&[1.0, 3.0], 5), vec![1, 0]);
    }
}
