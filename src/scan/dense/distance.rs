//! Dense distances between a query and stored vectors: one pair ([`dense_f32`], the
//! fixed-order dot product [`dot_fixed_order`]) and the top-k of a query over many stored
//! rows ([`dense_topk`]), each dispatched to the AVX2+FMA kernel (`x86.rs`) or its scalar twin
//! (`scalar.rs`), which sum in the same fixed order (the module documentation of `dense/`).

use half::f16;

use super::super::dispatch::{Dispatch, Isa};
use super::super::error::{Result, ScanError};
use super::super::rows::{Sink, TopKSink, bit_set};
use super::super::schedule::{ScanOptions, block_rows, run};
use super::super::topk::{Direction, TopK, f32_to_key, key_to_score};

use super::scalar;
#[cfg(target_arch = "x86_64")]
use super::x86;

/// Asks the CPU to start loading every cache line of `values` (a stored row about to be
/// scored) without waiting: re-ranking scores candidate rows scattered over a column larger
/// than the caches, and each row's first lines otherwise stall the kernel. A hint only: no
/// effect on results. A no-op off x86-64.
#[inline]
pub fn prefetch<T>(values: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        let bytes = std::mem::size_of_val(values);
        let p = values.as_ptr().cast::<i8>();
        for off in (0..bytes).step_by(64) {
            // SAFETY: `p + off` stays inside `values` (off < its byte length); a prefetch
            // reads nothing architecturally and never faults.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.add(off))
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = values;
}

/// A dense similarity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Inner product, larger is better.
    Dot,
    /// Squared Euclidean distance, smaller is better.
    L2Sq,
}

impl Metric {
    /// The direction results rank in.
    pub fn direction(self) -> Direction {
        match self {
            Metric::Dot => Direction::LargerIsBetter,
            Metric::L2Sq => Direction::SmallerIsBetter,
        }
    }
}

fn check_len(a: usize, b: usize) -> Result<()> {
    if a != b {
        return Err(ScanError::Length {
            argument: "b",
            expected: a,
            found: b,
        });
    }
    Ok(())
}

fn finite(x: f32, what: &'static str) -> Result<f32> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(ScanError::NonFiniteResult { what })
    }
}

/// Kernel call without checks (lengths equal, isa resolved).
#[inline]
fn eval_f32(isa: Isa, metric: Metric, a: &[f32], b: &[f32]) -> f32 {
    match (isa, metric) {
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx2 | Isa::Avx512, Metric::Dot) => {
            // SAFETY: `Isa::Avx2`/`Avx512` are only produced after the runtime probe found
            // avx2, fma and f16c.
            unsafe { x86::dot_f32(a, b) }
        }
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx2 | Isa::Avx512, Metric::L2Sq) => {
            // SAFETY: `Isa::Avx2`/`Avx512` imply the probe found avx2, fma and f16c.
            unsafe { x86::l2_f32(a, b) }
        }
        (_, Metric::Dot) => scalar::combine::<scalar::Dot, f32>(a, b),
        (_, Metric::L2Sq) => scalar::combine::<scalar::L2, f32>(a, b),
    }
}

#[inline]
fn eval_f16(isa: Isa, metric: Metric, a: &[f32], b: &[f16]) -> f32 {
    match (isa, metric) {
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx2 | Isa::Avx512, Metric::Dot) => {
            // SAFETY: `Isa::Avx2`/`Avx512` are only produced after the runtime probe found
            // avx2, fma and f16c.
            unsafe { x86::dot_f16(a, b) }
        }
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx2 | Isa::Avx512, Metric::L2Sq) => {
            // SAFETY: `Isa::Avx2`/`Avx512` imply the probe found avx2, fma and f16c.
            unsafe { x86::l2_f16(a, b) }
        }
        (_, Metric::Dot) => scalar::combine::<scalar::Dot, f16>(a, b),
        (_, Metric::L2Sq) => scalar::combine::<scalar::L2, f16>(a, b),
    }
}

/// `metric(a, b)` with the kernels `dispatch` selects; lengths must match, result must be finite.
pub fn dense_f32(metric: Metric, a: &[f32], b: &[f32], dispatch: Dispatch) -> Result<f32> {
    check_len(a.len(), b.len())?;
    let isa = dispatch.resolve()?;
    finite(eval_f32(isa, metric, a, b), "dense f32 kernel")
}

/// `metric(a, b)` for a query `a` in f32 and a stored vector `b` in f16.
pub fn dense_f32_f16(metric: Metric, a: &[f32], b: &[f16], dispatch: Dispatch) -> Result<f32> {
    check_len(a.len(), b.len())?;
    let isa = dispatch.resolve()?;
    finite(eval_f16(isa, metric, a, b), "dense f32×f16 kernel")
}

/// Inner product in the fixed lane-blocked order (module doc) with the best kernel of this CPU
/// (`CODEDB_FORCE_SCALAR=1` selects the scalar twin), for encoders: every path returns the
/// same IEEE value, so a vector gets the same code on any CPU, alone or in a batch. Uses the
/// common length of `a` and `b`; no finiteness check (encoders check their outputs).
#[inline]
pub fn dot_fixed_order(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    // `Auto` never fails to resolve.
    let isa = Dispatch::Auto.resolve().unwrap_or(Isa::Scalar);
    eval_f32(isa, Metric::Dot, a, b)
}

/// [`dot_fixed_order`] on the scalar twin (for tests of encoders).
pub fn dot_fixed_order_scalar(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    scalar::combine::<scalar::Dot, f32>(&a[..n], &b[..n])
}

/// Inner product `Σ a_i b_i`.
pub fn dot_f32(a: &[f32], b: &[f32]) -> Result<f32> {
    dense_f32(Metric::Dot, a, b, Dispatch::Auto)
}

/// Squared Euclidean distance `Σ (a_i − b_i)²`.
pub fn l2sq_f32(a: &[f32], b: &[f32]) -> Result<f32> {
    dense_f32(Metric::L2Sq, a, b, Dispatch::Auto)
}

/// Inner product of an f32 query with an f16 stored vector.
pub fn dot_f32_f16(a: &[f32], b: &[f16]) -> Result<f32> {
    dense_f32_f16(Metric::Dot, a, b, Dispatch::Auto)
}

/// Squared Euclidean distance of an f32 query to an f16 stored vector.
pub fn l2sq_f32_f16(a: &[f32], b: &[f16]) -> Result<f32> {
    dense_f32_f16(Metric::L2Sq, a, b, Dispatch::Auto)
}

/// Stored values a dense scan runs over.
#[derive(Debug, Clone, Copy)]
pub enum DenseValues<'a> {
    /// Row-major f32 values.
    F32(&'a [f32]),
    /// Row-major IEEE half-precision values.
    F16(&'a [f16]),
}

impl DenseValues<'_> {
    fn len(&self) -> usize {
        match self {
            DenseValues::F32(v) => v.len(),
            DenseValues::F16(v) => v.len(),
        }
    }
}

/// Stored vectors (`dim` values per row), their ids and deletions, validated to agree.
#[derive(Debug, Clone, Copy)]
pub struct DenseRows<'a> {
    values: DenseValues<'a>,
    dim: usize,
    ids: &'a [u64],
    deleted: Option<&'a [u64]>,
}

impl<'a> DenseRows<'a> {
    /// Checks `dim > 0`, whole rows, one id per row and a deletion bitmap of `rows.div_ceil(64)`
    /// words.
    pub fn new(
        values: DenseValues<'a>,
        dim: usize,
        ids: &'a [u64],
        deleted: Option<&'a [u64]>,
    ) -> Result<Self> {
        if dim == 0 {
            return Err(ScanError::Invalid {
                argument: "dim",
                detail: "must be at least 1".into(),
            });
        }
        if !values.len().is_multiple_of(dim) {
            return Err(ScanError::NotMultiple {
                argument: "vectors",
                found: values.len(),
                unit: dim,
                what: "dim",
            });
        }
        let rows = values.len() / dim;
        if ids.len() != rows {
            return Err(ScanError::IdsLength {
                ids_len: ids.len(),
                rows,
            });
        }
        if let Some(d) = deleted
            && d.len() != rows.div_ceil(64)
        {
            return Err(ScanError::DeletedLength {
                words: d.len(),
                rows,
                expected: rows.div_ceil(64),
            });
        }
        Ok(DenseRows {
            values,
            dim,
            ids,
            deleted,
        })
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// The `k` best live rows for each query in `queries` (`dim` f32 values each), by `metric`,
/// best first, ties by smaller id.
///
/// One kernel call per row (rows are long compared to codes); a non-finite score (non-finite
/// stored values, or overflow) of a live row is an error naming the row, never a silently
/// dropped row.
pub fn dense_topk(
    column: &DenseRows<'_>,
    queries: &[f32],
    metric: Metric,
    k: usize,
    opts: ScanOptions,
) -> Result<Vec<Vec<(f32, u64)>>> {
    let dim = column.dim;
    let vectors = column.values;
    if queries.is_empty() {
        return Err(ScanError::Empty {
            argument: "queries",
        });
    }
    if !queries.len().is_multiple_of(dim) {
        return Err(ScanError::NotMultiple {
            argument: "queries",
            found: queries.len(),
            unit: dim,
            what: "dim",
        });
    }
    if let Some((index, &value)) = queries.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(ScanError::NonFinite {
            argument: "queries",
            index,
            value,
        });
    }
    let n = vectors.len() / dim;
    let isa = opts.dispatch.resolve()?;
    TopK::new(k)?;
    let nq = queries.len() / dim;
    let direction = metric.direction();
    let parts = run(
        n,
        nq,
        opts.threads,
        block_rows(dim * 4, nq),
        |_| (TopKSink::new(k, column.ids, column.deleted), None::<usize>),
        |range, q, (sink, bad): &mut (Result<TopKSink<'_>>, Option<usize>)| {
            let (Ok(sink), Some(query)) = (sink, queries.get(q * dim..(q + 1) * dim)) else {
                return;
            };
            let mut bound = sink.bound();
            for r in range {
                let s = match vectors {
                    DenseValues::F32(v) => eval_f32(isa, metric, query, &v[r * dim..(r + 1) * dim]),
                    DenseValues::F16(v) => eval_f16(isa, metric, query, &v[r * dim..(r + 1) * dim]),
                };
                if !s.is_finite() {
                    if bit_set(column.deleted, r) {
                        continue;
                    }
                    bad.get_or_insert(r);
                    continue;
                }
                let key = match direction {
                    Direction::SmallerIsBetter => f32_to_key(s),
                    Direction::LargerIsBetter => f32_to_key(-s),
                };
                if key <= bound {
                    bound = sink.offer(key, r);
                }
            }
        },
    );
    let mut merged: Vec<TopK> = (0..nq).map(|_| TopK::new(k)).collect::<Result<_>>()?;
    for task in parts {
        for (m, (sink, bad)) in merged.iter_mut().zip(task) {
            if let Some(row) = bad {
                return Err(ScanError::Invalid {
                    argument: "vectors",
                    detail: format!("row {row} gives a non-finite {metric:?} score"),
                });
            }
            m.merge(sink?.topk);
        }
    }
    Ok(merged
        .into_iter()
        .map(|t| {
            t.into_sorted_vec()
                .into_iter()
                .map(|(key, id)| (key_to_score(key, direction), id))
                .collect()
        })
        .collect())
}

/// A tiny seeded generator of values in [-0.5, 0.5) for the kernels' unit tests (no rand
/// dependency inside the SIMD modules' tests).
#[cfg(test)]
pub(crate) fn test_lcg(seed: &mut u64) -> f32 {
    *seed = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    ((*seed >> 40) as f32) / (1u64 << 24) as f32 - 0.5
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values() {
        let a = [1.0f32, 2.0, 3.0];
        let b = [4.0f32, -5.0, 6.0];
        assert_eq!(dot_f32(&a, &b).unwrap(), 12.0);
        assert_eq!(l2sq_f32(&a, &b).unwrap(), 9.0 + 49.0 + 9.0);
        let bh: Vec<f16> = b.iter().map(|&x| f16::from_f32(x)).collect();
        assert_eq!(dot_f32_f16(&a, &bh).unwrap(), 12.0);
        assert_eq!(l2sq_f32_f16(&a, &bh).unwrap(), 67.0);
        assert_eq!(dot_f32(&[], &[]).unwrap(), 0.0);
    }

    #[test]
    fn errors() {
        assert!(matches!(
            dot_f32(&[1.0], &[1.0, 2.0]),
            Err(ScanError::Length { .. })
        ));
        assert!(matches!(
            dot_f32(&[f32::NAN], &[1.0]),
            Err(ScanError::NonFiniteResult { .. })
        ));
        assert!(matches!(
            l2sq_f32(&[f32::MAX], &[-f32::MAX]),
            Err(ScanError::NonFiniteResult { .. })
        ));
        let v = [1.0f32, f32::INFINITY, 0.0, 0.0];
        let col = DenseRows::new(DenseValues::F32(&v), 2, &[1, 2], None).unwrap();
        let e = dense_topk(&col, &[1.0, 1.0], Metric::Dot, 1, ScanOptions::default());
        assert!(
            matches!(
                e,
                Err(ScanError::Invalid {
                    argument: "vectors",
                    ..
                })
            ),
            "{e:?}"
        );
        assert!(DenseRows::new(DenseValues::F32(&v), 3, &[1], None).is_err());
        assert!(DenseRows::new(DenseValues::F32(&v), 2, &[1], None).is_err());
        assert!(DenseRows::new(DenseValues::F32(&v), 0, &[], None).is_err());
        // The same row deleted: no error.
        let col = DenseRows::new(DenseValues::F32(&v), 2, &[1, 2], Some(&[1])).unwrap();
        let ok = dense_topk(&col, &[1.0, 1.0], Metric::Dot, 1, ScanOptions::default());
        assert_eq!(ok.unwrap(), vec![vec![(0.0, 2)]]);
    }
}
