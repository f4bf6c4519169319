//! Exact Euclidean neighbours, the ground truth every compressed search is judged against
//! (ITQ, Gong et al. TPAMI 2013, §4.2; recall@R of the PQ/FAISS protocol).
//!
//! Exact squared distances are ‖q‖² + ‖x‖² − 2·q·x with every dot product accumulated in f64
//! in a fixed order ([`dot_f64`]: products of two f32 are exact in f64; 8 interleaved partial
//! sums, then a fixed reduction tree). So results do not depend on thread count or CPU, and a
//! vector's distance to an identical vector is exactly 0. Ties go to the smaller index.
//!
//! Doing that for every pair is slow (f64 arithmetic, no cache blocking), so the scan runs in
//! two passes:
//! 1. a blocked f32 matrix product (faer GEMM) gives an approximate distance for every
//!    (query, database row) pair, with a rigorous error bound: for any summation order, with
//!    or without FMA, |fl(q·x) − q·x| ≤ γ_d Σ|q_k x_k| ≤ γ_d ‖q‖‖x‖, γ_d = d·u / (1 − d·u),
//!    u = 2⁻²⁴ (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1). A 10⁻⁶
//!    relative margin on γ_d also covers the f64 rounding of the exact reference's own dot
//!    products (≤ d·2⁻⁵³ relative); an absolute slack covers product underflow (IEEE gradual
//!    underflow, Rust's default) and the f64 combination step. Lower bounds that are not
//!    finite (f32 overflow) become −∞, so such pairs are always re-scored;
//! 2. only the pairs whose lower bound can still beat the answer (the k-th smallest upper
//!    bound, or the radius) are re-scored exactly, and the answer is chosen on exact values.
//!
//! Pass 1 only prunes pairs that provably cannot be in the answer, so the output equals an
//! exhaustive exact scan, bit for bit.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use ndarray::{ArrayView2, CowArray, Ix2};
use rayon::prelude::*;

use crate::error::{EvalError, EvalResult as Result};

/// One neighbour: database row index and squared Euclidean distance (rounded to f32 from the
/// f64 value the ranking used).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbor {
    pub index: u32,
    pub sq_dist: f32,
}

/// Queries processed together by one task.
const QUERY_BLOCK: usize = 64;

/// Database rows per GEMM block: about 1 MiB of f32 data.
fn db_block_rows(dim: usize) -> usize {
    ((1 << 20) / (4 * dim.max(1))).clamp(16, 4096)
}

/// Dot product of two f32 slices accumulated in f64 in a fixed order.
pub(crate) fn dot_f64(a: &[f32], b: &[f32]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [0f64; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for ((s, &u), &v) in acc.iter_mut().zip(x).zip(y) {
            *s += f64::from(u) * f64::from(v);
        }
    }
    let mut tail = 0f64;
    for (&u, &v) in ra.iter().zip(rb) {
        tail += f64::from(u) * f64::from(v);
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + tail
}

/// Validates a vector matrix and returns it in standard (row-major contiguous) layout.
pub(crate) fn checked_matrix<'a>(
    m: ArrayView2<'a, f32>,
    what: &'static str,
) -> Result<CowArray<'a, f32, Ix2>> {
    if m.nrows() == 0 || m.ncols() == 0 {
        return Err(EvalError::Empty { what });
    }
    if m.nrows() > u32::MAX as usize {
        return Err(EvalError::TooLarge {
            what,
            rows: m.nrows(),
        });
    }
    for (r, row) in m.outer_iter().enumerate() {
        if let Some(c) = row.iter().position(|v| !v.is_finite()) {
            return Err(EvalError::NonFinite {
                what,
                row: r,
                col: c,
            });
        }
    }
    Ok(if m.is_standard_layout() {
        CowArray::from(m)
    } else {
        CowArray::from(m.as_standard_layout().into_owned())
    })
}

/// Checks database and queries and returns both in standard layout.
pub(crate) fn checked_pair<'a, 'b>(
    database: ArrayView2<'a, f32>,
    queries: ArrayView2<'b, f32>,
) -> Result<(CowArray<'a, f32, Ix2>, CowArray<'b, f32, Ix2>)> {
    let db = checked_matrix(database, "database")?;
    let q = checked_matrix(queries, "queries")?;
    if q.ncols() != db.ncols() {
        return Err(EvalError::DimensionMismatch {
            what: "queries",
            expected: db.ncols(),
            found: q.ncols(),
        });
    }
    Ok((db, q))
}

fn row<'m>(m: &'m CowArray<'_, f32, Ix2>, i: usize) -> &'m [f32] {
    let d = m.ncols();
    // Standard layout is guaranteed by `checked_matrix`.
    m.as_slice()
        .map(|s| &s[i * d..(i + 1) * d])
        .unwrap_or_default()
}

/// Squared norms of every row, exact as [`dot_f64`] computes them.
pub(crate) fn sq_norms(m: &CowArray<f32, Ix2>) -> Vec<f64> {
    (0..m.nrows())
        .into_par_iter()
        .map(|i| {
            let x = row(m, i);
            dot_f64(x, x)
        })
        .collect()
}

/// The exact squared distance given both exact squared norms.
pub(crate) fn exact_sq_dist(q: &[f32], x: &[f32], qn: f64, xn: f64) -> f64 {
    (qn + xn - 2.0 * dot_f64(q, x)).max(0.0)
}

/// The database side of a scan: rows in standard layout and their exact squared norms.
pub(crate) struct Database<'a> {
    pub rows: CowArray<'a, f32, Ix2>,
    pub norms: Vec<f64>,
}

impl<'a> Database<'a> {
    pub fn new(rows: CowArray<'a, f32, Ix2>) -> Database<'a> {
        let norms = sq_norms(&rows);
        Database { rows, norms }
    }

    pub fn len(&self) -> usize {
        self.rows.nrows()
    }

    pub fn row(&self, i: usize) -> &[f32] {
        row(&self.rows, i)
    }

    /// Exact squared distance from `q` (squared norm `qn`) to row `i`.
    pub fn exact(&self, q: &[f32], qn: f64, i: u32) -> f64 {
        exact_sq_dist(q, self.row(i as usize), qn, self.norms[i as usize])
    }
}

/// Visits every (query, database row) pair with bounds `lower ≤ exact squared distance ≤
/// upper` from the f32 GEMM pass, in increasing database order for each query; one state per
/// query, built by `init(query)` and updated by `visit`. Parallel over blocks of queries.
pub(crate) fn scan_bounds<S, I, V>(
    db: &Database,
    queries: &CowArray<f32, Ix2>,
    q_norms: &[f64],
    init: I,
    visit: V,
) -> Vec<S>
where
    S: Send,
    I: Fn(usize) -> S + Sync,
    V: Fn(&mut S, u32, f64, f64) + Sync,
{
    let n = db.len();
    let d = db.rows.ncols();
    let nq = queries.nrows();
    let u = f64::from(f32::EPSILON) / 2.0;
    let du = d as f64 * u;
    // γ_d with a margin; beyond d·u ≥ 0.5 the bound is useless and every pair is re-scored.
    let gamma = if du < 0.5 {
        du / (1.0 - du) * (1.0 + 1e-6)
    } else {
        f64::INFINITY
    };
    // Underflow of products (at most the smallest normal f32 each) and f64 rounding slack.
    let abs_slack = 4.0 * d as f64 * f64::from(f32::MIN_POSITIVE);
    let db_norm_roots: Vec<f64> = db.norms.iter().map(|v| v.sqrt()).collect();
    let db_slice = db.rows.as_slice().unwrap_or_default();
    let q_slice = queries.as_slice().unwrap_or_default();
    let qb = nq
        .div_ceil(4 * rayon::current_num_threads())
        .clamp(8, QUERY_BLOCK);
    let db_block = db_block_rows(d);
    let starts: Vec<usize> = (0..nq).step_by(qb).collect();
    let per_block: Vec<Vec<S>> = starts
        .into_par_iter()
        .map(|q0| {
            let q1 = (q0 + qb).min(nq);
            let mut states: Vec<S> = (q0..q1).map(&init).collect();
            let q_mat = faer::MatRef::from_row_major_slice(&q_slice[q0 * d..q1 * d], q1 - q0, d);
            let mut gram = vec![0f32; (q1 - q0) * db_block];
            for b0 in (0..n).step_by(db_block) {
                let b1 = (b0 + db_block).min(n);
                let x_mat =
                    faer::MatRef::from_row_major_slice(&db_slice[b0 * d..b1 * d], b1 - b0, d);
                let g = &mut gram[..(q1 - q0) * (b1 - b0)];
                faer::linalg::matmul::matmul(
                    faer::MatMut::from_row_major_slice_mut(g, q1 - q0, b1 - b0),
                    faer::Accum::Replace,
                    q_mat,
                    x_mat.transpose(),
                    1.0f32,
                    faer::Par::Seq,
                );
                for (qi, state) in states.iter_mut().enumerate() {
                    let qn = q_norms[q0 + qi];
                    let q_root = qn.sqrt();
                    let g_row = &g[qi * (b1 - b0)..(qi + 1) * (b1 - b0)];
                    for ((i, &gv), (&xn, &x_root)) in (b0..b1)
                        .zip(g_row)
                        .zip(db.norms[b0..b1].iter().zip(&db_norm_roots[b0..b1]))
                    {
                        let gv = f64::from(gv);
                        let approx = qn + xn - 2.0 * gv;
                        let err = 2.0 * gamma * q_root * x_root
                            + abs_slack
                            + 8.0 * f64::EPSILON * (qn + xn + 2.0 * gv.abs());
                        let (lower, upper) = if approx.is_finite() && err.is_finite() {
                            // Exact distances are clamped at 0, so the upper bound is too.
                            (approx - err, (approx + err).max(0.0))
                        } else {
                            (f64::NEG_INFINITY, f64::INFINITY)
                        };
                        visit(state, i as u32, lower, upper);
                    }
                }
            }
            states
        })
        .collect();
    per_block.into_iter().flatten().collect()
}

/// Max-heap entry ordered by (distance, index): the heap top is the current worst neighbour.
#[derive(Clone, Copy, PartialEq)]
struct Entry(f64, u32);

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// Per-query state of the k-NN scan: the k smallest upper bounds seen so far (their maximum
/// is a bound on the k-th exact distance) and the pairs that may still beat it.
struct KnnState {
    uppers: BinaryHeap<Entry>,
    candidates: Vec<(u32, f64)>,
    /// Candidate count that triggers the next pruning; doubles when pruning removes little,
    /// so the scan stays linear even when no pair can be pruned.
    prune_at: usize,
}

/// The k nearest database rows of every query with their exact squared distances in f64,
/// nearest first, ties by smaller index.
pub(crate) fn knn_l2_f64(
    db: &Database,
    queries: &CowArray<f32, Ix2>,
    k: usize,
) -> Vec<Vec<(u32, f64)>> {
    let q_norms = sq_norms(queries);
    let states = scan_bounds(
        db,
        queries,
        &q_norms,
        |_| KnnState {
            uppers: BinaryHeap::with_capacity(k + 1),
            candidates: Vec::with_capacity(2 * k),
            prune_at: 8 * k + 64,
        },
        |s: &mut KnnState, i, lower, upper| {
            let threshold = if s.uppers.len() < k {
                f64::INFINITY
            } else {
                s.uppers.peek().map_or(f64::INFINITY, |e| e.0)
            };
            if lower <= threshold {
                s.candidates.push((i, lower));
                let e = Entry(upper, i);
                if s.uppers.len() < k {
                    s.uppers.push(e);
                } else if upper < threshold {
                    s.uppers.pop();
                    s.uppers.push(e);
                }
                // Keep the list short when many early candidates are now out of reach.
                if s.candidates.len() > s.prune_at && s.uppers.len() == k {
                    let t = s.uppers.peek().map_or(f64::INFINITY, |e| e.0);
                    s.candidates.retain(|&(_, lo)| lo <= t);
                    s.prune_at = s.prune_at.max(2 * s.candidates.len());
                }
            }
        },
    );
    states
        .into_par_iter()
        .enumerate()
        .map(|(qi, s)| {
            let threshold = s.uppers.peek().map_or(f64::INFINITY, |e| e.0);
            let q = row(queries, qi);
            let mut exact: Vec<Entry> = s
                .candidates
                .iter()
                .filter(|&&(_, lo)| lo <= threshold)
                .map(|&(i, _)| Entry(db.exact(q, q_norms[qi], i), i))
                .collect();
            exact.sort_unstable();
            exact.truncate(k);
            exact.into_iter().map(|e| (e.1, e.0)).collect()
        })
        .collect()
}

/// For every query, the database rows with exact squared distance ≤ `r2`, in index order.
pub(crate) fn within_sq_radius(
    db: &Database,
    queries: &CowArray<f32, Ix2>,
    r2: f64,
) -> Vec<Vec<u32>> {
    let q_norms = sq_norms(queries);
    scan_bounds(
        db,
        queries,
        &q_norms,
        |qi| (qi, Vec::new()),
        |(qi, list): &mut (usize, Vec<u32>), i, lower, upper| {
            if upper <= r2 || (lower <= r2 && db.exact(row(queries, *qi), q_norms[*qi], i) <= r2) {
                list.push(i);
            }
        },
    )
    .into_iter()
    .map(|(_, list)| list)
    .collect()
}

fn check_k(k: usize, n: usize) -> Result<()> {
    if k == 0 || k > n {
        return Err(EvalError::InvalidArgument {
            argument: "k",
            detail: format!("k = {k}, must be between 1 and the database size {n}"),
        });
    }
    Ok(())
}

/// Exact k nearest neighbours in squared Euclidean distance, for every query (rows of
/// `queries`) among the rows of `database`: nearest first, ties broken by the smaller index.
///
/// Errors: empty or non-finite inputs, differing dimensions, `k` outside `1..=database rows`.
pub fn knn_l2(
    database: ArrayView2<f32>,
    queries: ArrayView2<f32>,
    k: usize,
) -> Result<Vec<Vec<Neighbor>>> {
    let (db, q) = checked_pair(database, queries)?;
    check_k(k, db.nrows())?;
    let db = Database::new(db);
    Ok(knn_l2_f64(&db, &q, k)
        .into_iter()
        .map(|list| {
            list.into_iter()
                .map(|(index, d2)| Neighbor {
                    index,
                    sq_dist: d2 as f32,
                })
                .collect()
        })
        .collect())
}

/// For every query, the database rows within Euclidean distance `radius` (‖x − q‖ ≤ radius,
/// compared as squared distances in f64), in increasing index order.
pub fn within_radius(
    database: ArrayView2<f32>,
    queries: ArrayView2<f32>,
    radius: f64,
) -> Result<Vec<Vec<u32>>> {
    if !(radius.is_finite() && radius >= 0.0) {
        return Err(EvalError::InvalidArgument {
            argument: "radius",
            detail: format!("{radius} is not a finite non-negative distance"),
        });
    }
    let (db, q) = checked_pair(database, queries)?;
    Ok(within_sq_radius(&Database::new(db), &q, radius * radius))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array2, array};

    #[test]
    fn dot_is_exact_on_small_integers_and_lengths() {
        for len in [0usize, 1, 7, 8, 9, 17, 100] {
            let a: Vec<f32> = (0..len).map(|i| i as f32 - 3.0).collect();
            let b: Vec<f32> = (0..len).map(|i| 2.0 * i as f32 + 1.0).collect();
            let expected: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(x * y)).sum();
            assert_eq!(dot_f64(&a, &b), expected, "len {len}");
        }
    }

    #[test]
    fn identical_vectors_are_at_distance_zero() {
        let db = array![[0.1f32, 0.7, -0.3], [1e3, 2e-3, 7.7], [0.1, 0.7, -0.3]];
        let r = knn_l2(db.view(), db.view(), 3).unwrap();
        assert_eq!(
            r[0][0],
            Neighbor {
                index: 0,
                sq_dist: 0.0
            }
        );
        // Rows 0 and 2 are equal: both at 0, the smaller index first.
        assert_eq!(
            r[2][0],
            Neighbor {
                index: 0,
                sq_dist: 0.0
            }
        );
        assert_eq!(
            r[2][1],
            Neighbor {
                index: 2,
                sq_dist: 0.0
            }
        );
        assert_eq!(
            r[1][0],
            Neighbor {
                index: 1,
                sq_dist: 0.0
            }
        );
    }

    #[test]
    fn blocks_do_not_change_results() {
        // More queries than a query block and more rows than a database block.
        let dim = 300;
        let n = db_block_rows(dim) * 2 + 5;
        let db = Array2::from_shape_fn((n, dim), |(i, j)| ((i * 7 + j * 13) % 17) as f32);
        let q = Array2::from_shape_fn((QUERY_BLOCK + 3, dim), |(i, j)| ((i + j) % 5) as f32);
        let r = knn_l2(db.view(), q.view(), 4).unwrap();
        for (qi, list) in r.iter().enumerate() {
            let mut all: Vec<(f64, u32)> = (0..n)
                .map(|i| {
                    let d: f64 = (0..dim)
                        .map(|j| f64::from(db[[i, j]] - q[[qi, j]]).powi(2))
                        .sum();
                    (d, i as u32)
                })
                .collect();
            all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let got: Vec<u32> = list.iter().map(|nb| nb.index).collect();
            let want: Vec<u32> = all[..4].iter().map(|x| x.1).collect();
            assert_eq!(got, want, "query {qi}");
        }
    }
}
