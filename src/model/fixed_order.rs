//! Deterministic arithmetic for encoding.
//!
//! Codes must not depend on how rows are batched, on the thread count or on the CPU: a query
//! binarised alone must get exactly the bits the same vector got inside a million-row build,
//! and a model saved and loaded must re-encode byte-identically. So encode paths never call a
//! BLAS-style product (whose summation order changes with blocking and SIMD width). Dot
//! products go to the scan layer's fixed-order kernel ([`crate::scan::dense::dot_fixed_order`]:
//! 32 lanes of fused multiply-adds reduced by a fixed tree, AVX2+FMA where the CPU has it, a
//! scalar twin with `f32::mul_add` elsewhere — the same IEEE value on every path, checked by
//! the scan equivalence tests). Linear maps and rotations run many rows at once through the
//! multi-row form of that kernel ([`crate::scan::dense::dot_rows_fixed_order`]), which reuses
//! each loaded weight vector across rows but keeps every output's own summation order, so each
//! output is bit-identical to a lone `dot` — a row alone is the one-row case of the same kernel
//! (tests/encode_determinism.rs checks codes against a one-dot-per-output scalar reference for
//! every batch size, thread count and kernel path). Nearest-centroid search goes to the scan
//! layer's fixed-order kernel too (exact differences, ties to the smaller index).

pub(crate) use crate::scan::dense::ColumnOp;

/// `Σ a_i b_i` in the fixed order of [`crate::scan::dense::dot_fixed_order`] (common length).
#[inline]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    crate::scan::dense::dot_fixed_order(a, b)
}

/// `out[r·o + j] = dot(w_j, x_r)` for the rows `x_r` of a row-major block of `d` columns and
/// a row-major `o × d` weight matrix (`o = w.len() / d`): the scan layer's multi-row kernel
/// ([`crate::scan::dense::dot_rows_fixed_order`]), which gives each output exactly the bits of
/// a lone [`dot`], so a row gets the same values alone or in any block.
#[inline]
pub(crate) fn matmul_rows(w: &[f32], x: &[f32], d: usize, out: &mut [f32]) {
    crate::scan::dense::dot_rows_fixed_order(w, x, d, out);
}

/// `out[r·o + j] += bias_j` over rows of `o` values (a separate rounding after the dot
/// product), a missing bias adding `+0.0`: linear stages have always computed `dot + b` with
/// `b = 0.0` when they have no bias. That is not a no-op — a dot product that underflows to
/// `−0.0` becomes `+0.0` — and float codes store the sign bit, so it stays.
#[inline]
pub(crate) fn add_bias(out: &mut [f32], o: usize, bias: Option<&[f32]>) {
    for orow in out.chunks_exact_mut(o.max(1)) {
        match bias {
            Some(b) => orow.iter_mut().zip(b).for_each(|(v, &bj)| *v += bj),
            None => orow.iter_mut().for_each(|v| *v += 0.0),
        }
    }
}

/// `Σ (a_i − b_i)²` in the dense kernels' fixed lane-blocked order (the same bits on every
/// path); `+∞` when it is not finite (overflow), which the IVF table assembly refuses.
#[inline]
pub(crate) fn l2sq(a: &[f32], b: &[f32]) -> f32 {
    crate::scan::dense::l2sq_f32(a, b).unwrap_or(f32::INFINITY)
}

/// `out[r·k + c] = op(x_r, column c)` for the rows of `xs` (`d` values each) and the `k`
/// columns of `ct` (stored transposed, `ct[j * k + c]`): the scan layer's column kernel
/// ([`crate::scan::dense::columns_fixed_order`]: one FMA chain per output, j ascending, the
/// same bits on every path and for a row alone or in a block) — ADC tables, IVF list terms.
#[inline]
pub(crate) fn columns(op: ColumnOp, xs: &[f32], d: usize, ct: &[f32], k: usize, out: &mut [f32]) {
    crate::scan::dense::columns_fixed_order(op, xs, d, ct, k, out);
}

/// Index of the nearest of `k` centroids to `x` in squared L2, from centroids stored
/// transposed (`ct[j * k + c]` = coordinate j of centroid c): the scan layer's fixed-order
/// kernel ([`crate::scan::dense::nearest_centroid_l2`]; exact differences, ties to the smaller
/// index, the same answer on every CPU path).
#[inline]
pub(crate) fn nearest_transposed(x: &[f32], ct: &[f32], k: usize) -> usize {
    crate::scan::dense::nearest_centroid_l2(x, ct, k)
}

/// [`nearest_transposed`] of two sub-vectors at once (the pair kernel shares each loaded
/// centroid vector; each answer is exactly the one-row answer).
#[inline]
pub(crate) fn nearest_transposed_pair(x0: &[f32], x1: &[f32], ct: &[f32], k: usize) -> [usize; 2] {
    crate::scan::dense::nearest_centroid_l2_pair(x0, x1, ct, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_f64_reference_and_is_order_fixed() {
        for n in [0usize, 1, 7, 16, 17, 100, 333] {
            let a: Vec<f32> = (0..n).map(|i| ((i * 37 % 19) as f32 - 9.0) * 0.1).collect();
            let b: Vec<f32> = (0..n)
                .map(|i| ((i * 11 % 23) as f32 - 11.0) * 0.3)
                .collect();
            let want: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
            let got = dot(&a, &b);
            assert!(
                (got as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()),
                "n={n}"
            );
            // Same inputs, same bits, whatever the slice's alignment, and the same bits as the
            // scalar twin (what a CPU without AVX2+FMA computes).
            let mut pad = vec![0f32; 1];
            pad.extend_from_slice(&a);
            assert_eq!(dot(&pad[1..], &b).to_bits(), got.to_bits());
            assert_eq!(
                crate::scan::dense::dot_fixed_order_scalar(&a, &b).to_bits(),
                got.to_bits(),
                "n={n}"
            );
        }
    }

    #[test]
    fn nearest_picks_closest_and_smaller_index_on_ties() {
        // 3 centroids in 2-D: (0,0), (1,0), (0,0) — transposed.
        let ct = [0.0, 1.0, 0.0, 0.0, 0.0, 0.0];
        assert_eq!(nearest_transposed(&[0.9, 0.1], &ct, 3), 1);
        assert_eq!(nearest_transposed(&[0.1, 0.0], &ct, 3), 0);
    }
}
