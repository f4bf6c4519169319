//! The Euclidean ground truth of ITQ (Gong et al., TPAMI 2013, §4.2, following Raginsky &
//! Lazebnik's SKLSH protocol): "a nominal threshold of the average distance to the 50th nearest
//! neighbor is used to determine whether a database point returned for a given query is
//! considered a true positive".
//!
//! Precisely, as computed here:
//! - the threshold is the mean, over a seeded uniform sample (without replacement) of
//!   `sample` training/database points — all of them if `sample` ≥ N — of the Euclidean
//!   distance ‖x − y‖ (not squared) from the point to its `rank`-th nearest *other* database
//!   point (the point itself is excluded; exact duplicates of it are not);
//! - database point i is relevant to query q iff ‖x_i − q‖ ≤ threshold (compared as squared
//!   distances in f64).
//!
//! The Spectral Hashing evaluation code the ITQ experiments reused samples 100 points and
//! keeps the point itself in its sorted distance row (so its "50th" is the 49th other point);
//! codedb excludes the point and lets the caller choose the sample, default 1,000 in the CLI.

use ndarray::{Array2, ArrayView2};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::ground_truth::GroundTruth;
use super::knn::{Database, checked_matrix, checked_pair, knn_l2_f64, within_sq_radius};
use crate::error::{EvalError, EvalResult as Result};

/// The neighbour rank of the paper's threshold (ITQ §4.2 and §6.2).
pub const ITQ_NEIGHBOUR_RANK: usize = 50;

/// Mean Euclidean distance from a seeded sample of the rows of `data` to their `rank`-th
/// nearest other row (see the module docs). Requires more than `rank` rows.
pub fn mean_neighbour_distance(
    data: ArrayView2<f32>,
    rank: usize,
    sample: usize,
    seed: u64,
) -> Result<f64> {
    let data = checked_matrix(data, "data")?;
    let n = data.nrows();
    if rank == 0 || rank >= n {
        return Err(EvalError::InvalidArgument {
            argument: "rank",
            detail: format!(
                "rank {rank} needs between 1 and {} (rows − 1)",
                n.saturating_sub(1)
            ),
        });
    }
    if sample == 0 {
        return Err(EvalError::InvalidArgument {
            argument: "sample",
            detail: "at least one point must be sampled".into(),
        });
    }
    let mut chosen: Vec<usize> = if sample >= n {
        (0..n).collect()
    } else {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rand::seq::index::sample(&mut rng, n, sample).into_vec()
    };
    chosen.sort_unstable();
    let d = data.ncols();
    let mut points = Array2::<f32>::zeros((chosen.len(), d));
    for (dst, &src) in points.outer_iter_mut().zip(&chosen) {
        let mut dst = dst;
        dst.assign(&data.row(src));
    }
    let points = points.into();
    let lists = knn_l2_f64(&Database::new(data), &points, rank + 1);
    let mut sum = 0f64;
    for (list, &me) in lists.iter().zip(&chosen) {
        // Drop the point itself; if it is not in the list (more than `rank` exact duplicates
        // with smaller indices), every listed neighbour is another point.
        let mut others = list.iter().filter(|(i, _)| *i as usize != me);
        let (_, d2) = others.nth(rank - 1).copied().unwrap_or((0, 0.0));
        sum += d2.sqrt();
    }
    Ok(sum / chosen.len() as f64)
}

/// Euclidean ground truth together with the threshold it used.
#[derive(Debug, Clone, PartialEq)]
pub struct EuclideanTruth {
    /// The distance threshold (not squared).
    pub radius: f64,
    pub truth: GroundTruth,
}

/// The paper's Euclidean ground truth: the threshold is [`mean_neighbour_distance`] over the
/// database (the training set, as in §4.2 where the training set is also the database), and
/// the relevant items of each query are the database rows within it.
pub fn euclidean_ground_truth(
    database: ArrayView2<f32>,
    queries: ArrayView2<f32>,
    rank: usize,
    sample: usize,
    seed: u64,
) -> Result<EuclideanTruth> {
    let radius = mean_neighbour_distance(database, rank, sample, seed)?;
    let (db, q) = checked_pair(database, queries)?;
    let n = db.nrows();
    let sets = within_sq_radius(&Database::new(db), &q, radius * radius);
    Ok(EuclideanTruth {
        radius,
        truth: GroundTruth::from_neighbour_sets(sets, n)?,
    })
}
