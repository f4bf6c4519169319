//! Precision–recall curves of ranked retrieval ("Hamming ranking" curves of ITQ, Gong et al.,
//! TPAMI 2013, §4.2, Figs. 7-8): precision and recall of the first n ranked items for a
//! log-spaced set of list lengths n from 1 to the database size, averaged over the queries that
//! have at least one relevant item. The area under such a curve is the mAP of
//! [`super::ranked_metrics`]. Ties in the ranking are broken as the ranking was (by smaller
//! index), so a cut inside a group of equal distances takes its first members.

use serde::Serialize;

use super::ground_truth::{GroundTruth, check_index_list};
use crate::error::{EvalError, EvalResult as Result};

/// Points of a curve: list lengths and the mean precision and recall at each.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrCurve {
    /// n: how many ranked items were retrieved (increasing, from 1 to the database size).
    pub retrieved: Vec<usize>,
    pub precision: Vec<f64>,
    pub recall: Vec<f64>,
}

/// About `points` list lengths from 1 to `n`, spaced evenly on a log scale, distinct and
/// increasing, always ending at `n` (recall 1 there).
pub fn log_spaced_cutoffs(n: usize, points: usize) -> Vec<usize> {
    if n == 0 {
        return Vec::new();
    }
    let steps = points.max(2) - 1;
    let mut out: Vec<usize> = (0..=steps)
        .map(|i| ((n as f64).powf(i as f64 / steps as f64).round() as usize).clamp(1, n))
        .collect();
    out.dedup();
    if out.last() != Some(&n) {
        out.push(n);
    }
    out
}

/// Running sums of a curve over queries; [`PrSums::mean`] gives the curve.
#[derive(Debug, Clone, PartialEq)]
pub struct PrSums {
    cutoffs: Vec<usize>,
    precision: Vec<f64>,
    recall: Vec<f64>,
    queries: usize,
}

impl PrSums {
    pub fn new(cutoffs: Vec<usize>) -> PrSums {
        let n = cutoffs.len();
        PrSums {
            cutoffs,
            precision: vec![0.0; n],
            recall: vec![0.0; n],
            queries: 0,
        }
    }

    /// Adds query `q`'s ranking (the full ranking: the last cutoff must not exceed its length).
    /// A query without relevant items adds nothing, as in mAP.
    pub fn add(&mut self, truth: &GroundTruth, q: usize, ranking: &[u32]) -> Result<()> {
        truth.check_query(q)?;
        check_index_list("ranking", q, ranking, truth.n_database())?;
        if let Some(&last) = self.cutoffs.last()
            && last > ranking.len()
        {
            return Err(EvalError::InvalidArgument {
                argument: "ranking",
                detail: format!(
                    "query {q}: {} ranked items for a curve up to {last}",
                    ranking.len()
                ),
            });
        }
        let total = truth.count_unchecked(q);
        if total == 0 {
            return Ok(());
        }
        let (mut hits, mut at) = (0usize, 0usize);
        for (j, &cut) in self.cutoffs.iter().enumerate() {
            for &i in &ranking[at..cut] {
                hits += usize::from(truth.is_relevant_unchecked(q, i));
            }
            at = cut;
            self.precision[j] += hits as f64 / cut as f64;
            self.recall[j] += hits as f64 / total as f64;
        }
        self.queries += 1;
        Ok(())
    }

    /// Queries that entered the sums.
    pub fn queries(&self) -> usize {
        self.queries
    }

    /// The mean curve; `NoRelevant` when no query had a relevant item.
    pub fn mean(&self, what: &'static str) -> Result<PrCurve> {
        if self.queries == 0 {
            return Err(EvalError::NoRelevant { what });
        }
        let m = self.queries as f64;
        Ok(PrCurve {
            retrieved: self.cutoffs.clone(),
            precision: self.precision.iter().map(|p| p / m).collect(),
            recall: self.recall.iter().map(|r| r / m).collect(),
        })
    }
}

/// The mean of curves with the same list lengths (one per run).
pub fn mean_curve(curves: &[&PrCurve]) -> Option<PrCurve> {
    let first = curves.first()?;
    let m = curves.len() as f64;
    let avg = |f: fn(&PrCurve) -> &Vec<f64>| -> Vec<f64> {
        (0..first.retrieved.len())
            .map(|j| curves.iter().map(|c| f(c)[j]).sum::<f64>() / m)
            .collect()
    };
    Some(PrCurve {
        retrieved: first.retrieved.clone(),
        precision: avg(|c| &c.precision),
        recall: avg(|c| &c.recall),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutoffs_are_log_spaced_distinct_and_end_at_n() {
        assert_eq!(log_spaced_cutoffs(1000, 4), [1, 10, 100, 1000]);
        assert_eq!(log_spaced_cutoffs(3, 10), [1, 2, 3]);
        assert_eq!(log_spaced_cutoffs(1, 10), [1]);
        assert!(log_spaced_cutoffs(0, 10).is_empty());
    }

    #[test]
    fn curve_counts_hits_in_each_prefix() {
        // Query 0: relevant {0, 2}; query 1: relevant {3}; query 2: none (left out).
        let truth = GroundTruth::from_neighbour_sets(vec![vec![0, 2], vec![3], vec![]], 4).unwrap();
        let mut s = PrSums::new(vec![1, 2, 4]);
        s.add(&truth, 0, &[0, 1, 2, 3]).unwrap();
        s.add(&truth, 1, &[0, 1, 2, 3]).unwrap();
        s.add(&truth, 2, &[3, 2, 1, 0]).unwrap();
        assert_eq!(s.queries(), 2);
        let c = s.mean("test").unwrap();
        assert_eq!(c.retrieved, [1, 2, 4]);
        // n=1: q0 1/1, q1 0/1; n=2: q0 1/2, q1 0; n=4: q0 2/4, q1 1/4.
        assert_eq!(c.precision, [0.5, 0.25, 0.375]);
        // n=1: q0 1/2, q1 0; n=2: q0 1/2, q1 0; n=4: both 1.
        assert_eq!(c.recall, [0.25, 0.25, 1.0]);
        assert!(
            s.add(&truth, 0, &[0, 1]).is_err(),
            "ranking shorter than the curve"
        );
        assert!(PrSums::new(vec![1]).mean("none").is_err());
        let m = mean_curve(&[&c, &c]).unwrap();
        assert_eq!(m, c);
    }
}
