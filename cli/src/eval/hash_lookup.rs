//! Hash-lookup evaluation (ITQ, Gong et al., TPAMI 2013, §4.5, Figs. 9-10): codes of at most
//! 32 bits used as hash keys, retrieving every database item within Hamming radius r ∈ {0,1,2}
//! of the query code, scored by precision and recall of the retrieved set.
//!
//! The paper does not state how a query that retrieves nothing enters the mean precision. We
//! follow the convention of the Spectral Hashing evaluation code the ITQ experiments reused
//! (and of most later hashing papers): such a query has precision 0 and still counts, so
//! [`LookupScores::precision`] penalises codes whose buckets are mostly empty. The pooled
//! variants (all hits over all retrieved items) and the number of empty lookups are reported
//! alongside, since §4.5 discusses how queries with many matches dominate the precision.

use ndarray::ArrayView2;
use rayon::prelude::*;

use super::ground_truth::{GroundTruth, check_index_list};
use crate::error::{EvalError, EvalResult as Result};

/// Precision and recall of radius lookups over a set of queries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LookupScores {
    /// Mean over all queries of |retrieved ∩ relevant| / |retrieved|, 0 for an empty lookup.
    pub precision: f64,
    /// Mean over queries with at least one relevant item of |retrieved ∩ relevant| / |relevant|.
    pub recall: f64,
    /// Σ hits / Σ retrieved over all queries (0 when nothing was retrieved).
    pub pooled_precision: f64,
    /// Σ hits / Σ relevant over all queries.
    pub pooled_recall: f64,
    /// Queries whose lookup retrieved nothing.
    pub empty_lookups: usize,
    /// Queries with no relevant item (left out of `recall`).
    pub no_relevant: usize,
    /// Mean number of items retrieved per query.
    pub mean_retrieved: f64,
}

/// Database rows whose packed code lies within Hamming distance `radius` of `query`, in
/// increasing index order (brute force; the reference for hash-table lookups).
pub fn hamming_ball(codes: ArrayView2<u8>, query: &[u8], radius: u32) -> Result<Vec<u32>> {
    if codes.ncols() != query.len() {
        return Err(EvalError::DimensionMismatch {
            what: "query code bytes",
            expected: codes.ncols(),
            found: query.len(),
        });
    }
    if codes.nrows() > u32::MAX as usize {
        return Err(EvalError::TooLarge {
            what: "codes",
            rows: codes.nrows(),
        });
    }
    Ok(codes
        .outer_iter()
        .enumerate()
        .filter(|(_, c)| {
            c.iter()
                .zip(query)
                .map(|(a, b)| (a ^ b).count_ones())
                .sum::<u32>()
                <= radius
        })
        .map(|(i, _)| i as u32)
        .collect())
}

/// [`hamming_ball`] for every query code (rows of `queries`), in parallel.
pub fn hamming_balls(
    codes: ArrayView2<u8>,
    queries: ArrayView2<u8>,
    radius: u32,
) -> Result<Vec<Vec<u32>>> {
    let rows: Vec<_> = queries.outer_iter().collect();
    rows.par_iter()
        .map(|q| {
            let q = q.to_vec();
            hamming_ball(codes, &q, radius)
        })
        .collect()
}

impl GroundTruth {
    /// Scores the retrieved set of every query (`retrieved[q]`: distinct database indices).
    pub fn lookup_scores<R: AsRef<[u32]> + Sync>(&self, retrieved: &[R]) -> Result<LookupScores> {
        self.check_query_count("retrieved", retrieved.len())?;
        // (hits, retrieved, relevant) per query.
        let counts: Vec<(usize, usize, usize)> = retrieved
            .par_iter()
            .enumerate()
            .map(|(q, r)| {
                let r = r.as_ref();
                check_index_list("retrieved", q, r, self.n_database())?;
                let hits = r
                    .iter()
                    .filter(|&&i| self.is_relevant_unchecked(q, i))
                    .count();
                Ok((hits, r.len(), self.count_unchecked(q)))
            })
            .collect::<Result<_>>()?;
        let n = counts.len() as f64;
        let mut precision = 0f64;
        let mut recall = 0f64;
        let (mut hits_all, mut ret_all, mut rel_all) = (0usize, 0usize, 0usize);
        let (mut empty, mut no_rel) = (0usize, 0usize);
        for &(hits, ret, rel) in &counts {
            if ret == 0 {
                empty += 1;
            } else {
                precision += hits as f64 / ret as f64;
            }
            if rel == 0 {
                no_rel += 1;
            } else {
                recall += hits as f64 / rel as f64;
            }
            hits_all += hits;
            ret_all += ret;
            rel_all += rel;
        }
        let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let with_rel = counts.len() - no_rel;
        Ok(LookupScores {
            precision: precision / n,
            recall: if with_rel == 0 {
                0.0
            } else {
                recall / with_rel as f64
            },
            pooled_precision: ratio(hits_all, ret_all),
            pooled_recall: ratio(hits_all, rel_all),
            empty_lookups: empty,
            no_relevant: no_rel,
            mean_retrieved: ret_all as f64 / n,
        })
    }
}
