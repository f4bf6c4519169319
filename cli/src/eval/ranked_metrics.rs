//! Metrics of ranked retrieval lists: average precision (mAP), precision@k and recall@R.
//!
//! ITQ (Gong et al., TPAMI 2013, §4.2) reports mean average precision — "the area under the
//! recall-precision curve" — for Euclidean-neighbour ground truth, and the average precision of
//! the top 500 ranked items for class-label ground truth. AP here is the standard
//! non-interpolated estimate of that area over the whole ranking:
//!
//! AP(q) = (1 / R_q) · Σ_{i : item at rank i is relevant} precision@i,
//!
//! where R_q is the number of relevant items in the whole database. Relevant items absent from
//! the ranking count as never retrieved (they add nothing), so pass the full ranking to obtain
//! the paper's mAP. Queries with no relevant item have no AP; they are left out of the mean and
//! counted in [`MeanScore::skipped`]. Rankings are supplied by the caller; use
//! [`super::rank_by_score`] to break ties deterministically by smaller index.

use rayon::prelude::*;

use super::ground_truth::{GroundTruth, check_index_list};
use crate::error::{EvalError, EvalResult as Result};

/// The mean of a per-query metric and how many queries it covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeanScore {
    pub mean: f64,
    /// Queries that entered the mean.
    pub evaluated: usize,
    /// Queries left out because the metric is undefined for them (no relevant item).
    pub skipped: usize,
}

impl MeanScore {
    /// Mean of the defined values, summed in query order (deterministic).
    fn from_values(values: &[Option<f64>], what: &'static str) -> Result<MeanScore> {
        let evaluated = values.iter().flatten().count();
        if evaluated == 0 {
            return Err(EvalError::NoRelevant { what });
        }
        let sum: f64 = values.iter().flatten().sum();
        Ok(MeanScore {
            mean: sum / evaluated as f64,
            evaluated,
            skipped: values.len() - evaluated,
        })
    }
}

impl GroundTruth {
    /// Non-interpolated average precision of one query's ranking (module docs); `None` when
    /// the query has no relevant item. The ranking must hold distinct database indices.
    pub fn average_precision(&self, q: usize, ranking: &[u32]) -> Result<Option<f64>> {
        self.check_query(q)?;
        check_index_list("ranking", q, ranking, self.n_database())?;
        let total = self.count_unchecked(q);
        if total == 0 {
            return Ok(None);
        }
        let mut hits = 0usize;
        let mut sum = 0f64;
        for (rank, &i) in ranking.iter().enumerate() {
            if self.is_relevant_unchecked(q, i) {
                hits += 1;
                sum += hits as f64 / (rank + 1) as f64;
                if hits == total {
                    break;
                }
            }
        }
        Ok(Some(sum / total as f64))
    }

    /// Fraction of relevant items among the first `k` of the ranking (ITQ §4.2 uses k = 500
    /// with class labels). The ranking must hold at least `k` distinct indices.
    pub fn precision_at_k(&self, q: usize, ranking: &[u32], k: usize) -> Result<f64> {
        self.check_query(q)?;
        if k == 0 {
            return Err(EvalError::InvalidArgument {
                argument: "k",
                detail: "k must be at least 1".into(),
            });
        }
        if ranking.len() < k {
            return Err(EvalError::TooShort {
                what: "ranking",
                query: q,
                len: ranking.len(),
                required: k,
            });
        }
        let top = &ranking[..k];
        check_index_list("ranking", q, top, self.n_database())?;
        let hits = top
            .iter()
            .filter(|&&i| self.is_relevant_unchecked(q, i))
            .count();
        Ok(hits as f64 / k as f64)
    }
}

/// Mean average precision over all queries (`rankings[q]` ranks the database for query q).
pub fn mean_average_precision<R: AsRef<[u32]> + Sync>(
    truth: &GroundTruth,
    rankings: &[R],
) -> Result<MeanScore> {
    truth.check_query_count("rankings", rankings.len())?;
    let values: Vec<Option<f64>> = rankings
        .par_iter()
        .enumerate()
        .map(|(q, r)| truth.average_precision(q, r.as_ref()))
        .collect::<Result<_>>()?;
    MeanScore::from_values(&values, "mean average precision")
}

/// Mean precision@k over all queries (every query counts, including those with no relevant
/// item, whose precision is 0).
pub fn mean_precision_at_k<R: AsRef<[u32]> + Sync>(
    truth: &GroundTruth,
    rankings: &[R],
    k: usize,
) -> Result<MeanScore> {
    truth.check_query_count("rankings", rankings.len())?;
    let values: Vec<Option<f64>> = rankings
        .par_iter()
        .enumerate()
        .map(|(q, r)| truth.precision_at_k(q, r.as_ref(), k).map(Some))
        .collect::<Result<_>>()?;
    MeanScore::from_values(&values, "precision@k")
}

/// Class-label mAP: relevant iff same label (ITQ §4.2, second protocol, as mAP).
pub fn class_label_map<R: AsRef<[u32]> + Sync>(
    database_labels: &[i64],
    query_labels: &[i64],
    rankings: &[R],
) -> Result<MeanScore> {
    let truth = GroundTruth::from_labels(database_labels.to_vec(), query_labels.to_vec())?;
    mean_average_precision(&truth, rankings)
}

/// Class-label precision@k: "the averaged precision of top 500 ranked images for each query"
/// (ITQ §4.2) with k = 500.
pub fn class_label_precision_at_k<R: AsRef<[u32]> + Sync>(
    database_labels: &[i64],
    query_labels: &[i64],
    rankings: &[R],
    k: usize,
) -> Result<MeanScore> {
    let truth = GroundTruth::from_labels(database_labels.to_vec(), query_labels.to_vec())?;
    mean_precision_at_k(&truth, rankings, k)
}

/// Recall@R as in the PQ/FAISS protocol (Jégou et al.): the fraction of queries whose exact
/// nearest neighbour `nearest[q]` appears among the first `r` items of `rankings[q]`. (A
/// different item at the same exact distance does not count.)
pub fn recall_at_r<R: AsRef<[u32]>>(rankings: &[R], nearest: &[u32], r: usize) -> Result<f64> {
    if rankings.is_empty() {
        return Err(EvalError::Empty { what: "rankings" });
    }
    if nearest.len() != rankings.len() {
        return Err(EvalError::LengthMismatch {
            what: "nearest",
            expected: rankings.len(),
            found: nearest.len(),
        });
    }
    if r == 0 {
        return Err(EvalError::InvalidArgument {
            argument: "r",
            detail: "R must be at least 1".into(),
        });
    }
    let mut found = 0usize;
    for (q, (ranking, nn)) in rankings.iter().zip(nearest).enumerate() {
        let ranking = ranking.as_ref();
        if ranking.len() < r {
            return Err(EvalError::TooShort {
                what: "ranking",
                query: q,
                len: ranking.len(),
                required: r,
            });
        }
        if ranking[..r].contains(nn) {
            found += 1;
        }
    }
    Ok(found as f64 / rankings.len() as f64)
}
