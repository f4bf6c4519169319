//! The "average distance to the 50th nearest neighbour" of a data set: the Gaussian kernel
//! bandwidth of SKLSH and of the RFF embedding (Gong et al. TPAMI 2013, §4.2 and §6.2, after
//! Raginsky & Lazebnik, NIPS 2009), and the Euclidean ground-truth radius of the mAP protocol
//! (§4.2).
//!
//! Estimated on a seeded sample of query rows; each query's neighbours are searched among all
//! rows (exact, itself excluded), so the radius reflects the density of the full set.

use ndarray::ArrayView2;
use rayon::prelude::*;

use super::error::{ModelError, Result};
use super::input::checked_rows;
use super::linalg::a_bt_f32;
use super::random::{rng, sample_indices};

/// Neighbour rank used by the paper.
pub const DEFAULT_NEIGHBOUR_RANK: usize = 50;
/// Query rows sampled to estimate the mean.
pub const DEFAULT_RADIUS_QUERIES: usize = 1000;
/// Queries per block of distance computations (bounds memory at `QUERY_BLOCK × N` floats).
const QUERY_BLOCK: usize = 64;

/// Mean Euclidean distance from up to `queries` seeded sample rows of `x` to their `k`-th
/// nearest neighbour among the other rows of `x`. With fewer than `k + 1` rows the farthest
/// other row is used (`k` is clamped to `N − 1`). Needs at least two rows.
pub fn mean_kth_neighbour_distance(
    x: ArrayView2<f32>,
    k: usize,
    queries: usize,
    seed: u64,
) -> Result<f64> {
    let rows = checked_rows("neighbour radius: data", x, None)?;
    let (n, d) = (rows.n(), rows.dim());
    if n < 2 {
        return Err(ModelError::TooFewRows {
            method: "neighbour radius".into(),
            needed: 2,
            got: n,
        });
    }
    if k == 0 || queries == 0 {
        return Err(ModelError::invalid(
            "neighbour radius",
            format!("rank k ({k}) and query count ({queries}) must be >= 1"),
        ));
    }
    let k = k.min(n - 1);
    let data = rows.as_slice();
    let norms: Vec<f32> = data
        .par_chunks(d)
        .map(|r| r.iter().map(|v| v * v).sum())
        .collect();
    let qidx = sample_indices(&mut rng(seed), n, queries);
    let mut total = 0f64;
    for block in qidx.chunks(QUERY_BLOCK) {
        let mut q = Vec::with_capacity(block.len() * d);
        for &i in block {
            q.extend_from_slice(&data[i * d..(i + 1) * d]);
        }
        let dots = a_bt_f32(&q, data, block.len(), d, n, super::linalg::par());
        let dists: Vec<f64> = dots
            .par_chunks(n)
            .zip(block.par_iter())
            .map(|(row, &qi)| {
                let mut d2: Vec<f32> = row
                    .iter()
                    .zip(&norms)
                    .map(|(&dot, &nx)| (norms[qi] + nx - 2.0 * dot).max(0.0))
                    .collect();
                d2[qi] = f32::INFINITY; // not its own neighbour
                let (_, kth, _) = d2.select_nth_unstable_by(k - 1, f32::total_cmp);
                (*kth as f64).sqrt()
            })
            .collect();
        total += dists.iter().sum::<f64>();
    }
    Ok(total / qidx.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    #[test]
    fn points_on_a_line() {
        // 0, 1, 2, ..., 9: the 1st neighbour of every point is at distance 1.
        let x = Array2::from_shape_fn((10, 1), |(i, _)| i as f32);
        let r = mean_kth_neighbour_distance(x.view(), 1, 100, 0).unwrap();
        assert!((r - 1.0).abs() < 1e-6);
        // 2nd neighbour: 1 for interior points, 2 for the ends (0 and 9): mean 1.2.
        let r = mean_kth_neighbour_distance(x.view(), 2, 100, 0).unwrap();
        assert!((r - 1.2).abs() < 1e-6, "{r}");
        // k clamped to N-1 = 9: the farthest point; mean over i of max(i, 9-i).
        let want: f64 = (0..10).map(|i: i32| i.max(9 - i) as f64).sum::<f64>() / 10.0;
        let r = mean_kth_neighbour_distance(x.view(), 50, 100, 0).unwrap();
        assert!((r - want).abs() < 1e-5, "{r} vs {want}");
    }

    #[test]
    fn one_row_is_refused() {
        let x = Array2::<f32>::zeros((1, 3));
        assert!(mean_kth_neighbour_distance(x.view(), 50, 10, 0).is_err());
    }
}
