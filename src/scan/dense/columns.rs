//! One vector against every column of a transposed matrix — the ADC tables of product
//! quantisation (Jégou et al., TPAMI 2011, §4.1 and §IV: `⟨x_m, p_{m,j}⟩` or `‖x_m − p_{m,j}‖²`
//! for the K centroids of each sub-quantiser) and the list terms of IVFADC.
//!
//! The matrix is stored transposed (`ct[j * k + c]` = coordinate j of column c, the layout of
//! the encoder's codebooks), so 8 (AVX2) or 16 (AVX-512) columns are one register and each
//! output is one chain of fused multiply-adds, from `0.0`, j ascending: `acc = fma(x_j, c_j,
//! acc)` for [`ColumnOp::Dot`], `t = x_j − c_j; acc = fma(t, t, acc)` for [`ColumnOp::L2`].
//! Lanes never meet, so every path (the scalar twin with `f32::mul_add` included) gives the
//! same IEEE value, bit for bit; the tests check it. A dot product per column (the
//! fixed-order kernel of `block.rs`, 32-lane blocks then a sequential tail) spent most of a
//! Fashion-MNIST IVFADC query in the 17-element tails of its 49-wide sub-vectors (BENCHMARKS.md).

use super::super::dispatch::{Dispatch, Isa};

/// What each output holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnOp {
    /// `Σ_j x_j · c_j`.
    Dot,
    /// `Σ_j (x_j − c_j)²`.
    L2,
}

/// `out[r·k + c] = op(x_r, column c)` for the rows `x_r` of `xs` (row-major, `d` values each)
/// and the `k` columns of `ct` (`d × k` values, transposed). `d >= 1`, `xs.len()` a multiple
/// of `d`, `out.len() == xs.len() / d · k` and `ct.len() == d · k` (asserted). The SIMD kernels
/// sweep the rows for each block of columns, so the block (`d ×` 64 or 128 columns) stays in
/// L1 across the rows; every output is the one-row value.
#[inline]
pub fn columns_fixed_order(
    op: ColumnOp,
    xs: &[f32],
    d: usize,
    ct: &[f32],
    k: usize,
    out: &mut [f32],
) {
    columns_with(auto_isa(), op, xs, d, ct, k, out);
}

/// [`columns_fixed_order`] with an explicit kernel choice (tests compare the paths).
pub fn columns_fixed_order_with(
    op: ColumnOp,
    xs: &[f32],
    d: usize,
    ct: &[f32],
    k: usize,
    out: &mut [f32],
    dispatch: Dispatch,
) {
    let isa = match dispatch {
        Dispatch::Auto => auto_isa(),
        _ => dispatch.resolve().unwrap_or(Isa::Scalar),
    };
    columns_with(isa, op, xs, d, ct, k, out);
}

/// The kernels `Auto` runs: the best this CPU has. Unlike the nearest-centroid kernel
/// (`nearest.rs`), AVX-512 wins here even where 512-bit arithmetic is split in two halves: on
/// AMD Zen 4 it ran 53 G multiply-adds/s against AVX2's 46 G (`cargo bench --bench scan --
/// adc_tables`), half the loads and instructions per column. An invalid `CODEDB_SCAN_ISA`
/// runs the scalar twin, which gives the same values.
fn auto_isa() -> Isa {
    Dispatch::Auto.resolve().unwrap_or(Isa::Scalar)
}

fn columns_with(
    isa: Isa,
    op: ColumnOp,
    x: &[f32],
    d: usize,
    ct: &[f32],
    k: usize,
    out: &mut [f32],
) {
    assert!(d >= 1 && x.len().is_multiple_of(d) && ct.len() == d * k);
    assert!(out.len() == x.len() / d * k);
    match (isa, op) {
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx512, ColumnOp::Dot) => {
            // SAFETY: `Isa::Avx512` is only produced after the runtime probe found avx512f,
            // avx2 and fma; the lengths are asserted above.
            unsafe { x86::columns_avx512::<false>(x, d, ct, k, out) }
        }
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx512, ColumnOp::L2) => {
            // SAFETY: as above.
            unsafe { x86::columns_avx512::<true>(x, d, ct, k, out) }
        }
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx2, ColumnOp::Dot) => {
            // SAFETY: `Isa::Avx2` is only produced after the runtime probe found avx2 and
            // fma; the lengths are asserted above.
            unsafe { x86::columns_avx2::<false>(x, d, ct, k, out) }
        }
        #[cfg(target_arch = "x86_64")]
        (Isa::Avx2, ColumnOp::L2) => {
            // SAFETY: as above.
            unsafe { x86::columns_avx2::<true>(x, d, ct, k, out) }
        }
        _ => columns_scalar(op, x, d, ct, k, 0, out),
    }
}

/// The scalar twin, for columns `from..k` of every row (the SIMD kernels finish their
/// remainders with it).
#[inline]
fn columns_scalar(
    op: ColumnOp,
    xs: &[f32],
    d: usize,
    ct: &[f32],
    k: usize,
    from: usize,
    out: &mut [f32],
) {
    for (x, orow) in xs.chunks_exact(d).zip(out.chunks_exact_mut(k)) {
        columns_row(op, x, ct, k, from, orow);
    }
}

/// One row of [`columns_scalar`].
#[inline]
fn columns_row(op: ColumnOp, x: &[f32], ct: &[f32], k: usize, from: usize, out: &mut [f32]) {
    for (c, o) in out.iter_mut().enumerate().skip(from) {
        let mut acc = 0.0f32;
        for (j, &xj) in x.iter().enumerate() {
            let v = ct[j * k + c];
            acc = match op {
                ColumnOp::Dot => xj.mul_add(v, acc),
                ColumnOp::L2 => {
                    let t = xj - v;
                    t.mul_add(t, acc)
                }
            };
        }
        *o = acc;
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    use super::{ColumnOp, columns_scalar};

    /// Rows sharing each loaded column vector, and registers of columns per row: `R·W` = 12
    /// independent accumulators, each column load feeding three FMAs. At 49 × 256 (a
    /// Fashion-MNIST `pq:16x8` table) AVX2 ran 23 G multiply-adds/s with one row × 8
    /// registers, 35 G with 2 × 4, 47 G with 3 × 4 (`cargo bench --bench scan --
    /// adc_tables`, AMD Zen 4).
    const R: usize = 3;
    const W: usize = 4;

    /// AVX2 + FMA: 8 columns per register; [`R`] rows at a time share each loaded column
    /// vector, [`W`] registers of columns per row (`R·W` accumulators), each block of
    /// columns swept over all rows; then single rows, single registers, and the scalar twin
    /// for the last `k mod 8` columns. The caller guarantees the lengths of
    /// [`super::columns_fixed_order`].
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn columns_avx2<const L2: bool>(
        xs: &[f32],
        d: usize,
        ct: &[f32],
        k: usize,
        out: &mut [f32],
    ) {
        let mut g = 0;
        while g + 8 * W <= k {
            rows256::<L2, W>(xs, d, ct, k, g, out);
            g += 8 * W;
        }
        while g + 8 <= k {
            rows256::<L2, 1>(xs, d, ct, k, g, out);
            g += 8;
        }
        let op = if L2 { ColumnOp::L2 } else { ColumnOp::Dot };
        columns_scalar(op, xs, d, ct, k, g, out);
    }

    /// Columns `g .. g + 8·V` of every row: [`R`] rows at a time, then one.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn rows256<const L2: bool, const V: usize>(
        xs: &[f32],
        d: usize,
        ct: &[f32],
        k: usize,
        g: usize,
        out: &mut [f32],
    ) {
        let mut xb = xs.chunks_exact(d * R);
        let mut ob = out.chunks_exact_mut(k * R);
        for (x, o) in (&mut xb).zip(&mut ob) {
            pass256::<L2, R, V>(x, d, ct, k, g, o);
        }
        for (x, o) in xb
            .remainder()
            .chunks_exact(d)
            .zip(ob.into_remainder().chunks_exact_mut(k))
        {
            pass256::<L2, 1, V>(x, d, ct, k, g, o);
        }
    }

    /// Columns `g .. g + 8·V` of the `N` rows of `x` (`N·d` values) into `out` (`N·k`); the
    /// caller guarantees `g + 8·V <= k`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn pass256<const L2: bool, const N: usize, const V: usize>(
        x: &[f32],
        d: usize,
        ct: &[f32],
        k: usize,
        g: usize,
        out: &mut [f32],
    ) {
        assert!(g + 8 * V <= k && ct.len() == d * k && x.len() == N * d && out.len() == N * k);
        let mut acc = [[_mm256_setzero_ps(); V]; N];
        for j in 0..d {
            let b: [__m256; N] = core::array::from_fn(|r| _mm256_set1_ps(x[r * d + j]));
            // SAFETY: row j of `ct` is `ct[j·k .. (j+1)·k]` (j < d, `ct.len() == d·k`,
            // asserted); lanes `g .. g + 8·V` lie inside it (`g + 8·V <= k`). `loadu` has no
            // alignment requirement.
            let row = unsafe { ct.as_ptr().add(j * k + g) };
            #[allow(clippy::needless_range_loop)] // v and r index the accumulator grid
            for v in 0..V {
                // SAFETY: see above; `8·v + 8 <= 8·V`.
                let c = unsafe { _mm256_loadu_ps(row.add(8 * v)) };
                for r in 0..N {
                    acc[r][v] = if L2 {
                        let t = _mm256_sub_ps(b[r], c);
                        _mm256_fmadd_ps(t, t, acc[r][v])
                    } else {
                        _mm256_fmadd_ps(b[r], c, acc[r][v])
                    };
                }
            }
        }
        for (r, a) in acc.iter().enumerate() {
            for (v, a) in a.iter().enumerate() {
                // SAFETY: `r·k + g + 8·v + 8 <= r·k + k <= N·k == out.len()` (asserted).
                unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(r * k + g + 8 * v), *a) };
            }
        }
    }

    /// AVX-512: as [`columns_avx2`] with 16 columns per register (the same blocking), then
    /// the AVX2 kernel for a last block of 8 columns and the scalar twin for `k mod 8` (the
    /// same per-column operations, so the same values).
    #[target_feature(enable = "avx512f,avx2,fma")]
    pub(super) fn columns_avx512<const L2: bool>(
        xs: &[f32],
        d: usize,
        ct: &[f32],
        k: usize,
        out: &mut [f32],
    ) {
        let mut g = 0;
        while g + 16 * W <= k {
            rows512::<L2, W>(xs, d, ct, k, g, out);
            g += 16 * W;
        }
        while g + 16 <= k {
            rows512::<L2, 1>(xs, d, ct, k, g, out);
            g += 16;
        }
        while g + 8 <= k {
            rows256::<L2, 1>(xs, d, ct, k, g, out);
            g += 8;
        }
        let op = if L2 { ColumnOp::L2 } else { ColumnOp::Dot };
        columns_scalar(op, xs, d, ct, k, g, out);
    }

    /// Columns `g .. g + 16·V` of every row: [`R`] rows at a time, then one.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn rows512<const L2: bool, const V: usize>(
        xs: &[f32],
        d: usize,
        ct: &[f32],
        k: usize,
        g: usize,
        out: &mut [f32],
    ) {
        let mut xb = xs.chunks_exact(d * R);
        let mut ob = out.chunks_exact_mut(k * R);
        for (x, o) in (&mut xb).zip(&mut ob) {
            pass512::<L2, R, V>(x, d, ct, k, g, o);
        }
        for (x, o) in xb
            .remainder()
            .chunks_exact(d)
            .zip(ob.into_remainder().chunks_exact_mut(k))
        {
            pass512::<L2, 1, V>(x, d, ct, k, g, o);
        }
    }

    /// As [`pass256`], 16 columns per register (the caller guarantees `g + 16·V <= k`).
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn pass512<const L2: bool, const N: usize, const V: usize>(
        x: &[f32],
        d: usize,
        ct: &[f32],
        k: usize,
        g: usize,
        out: &mut [f32],
    ) {
        assert!(g + 16 * V <= k && ct.len() == d * k && x.len() == N * d && out.len() == N * k);
        let mut acc = [[_mm512_setzero_ps(); V]; N];
        for j in 0..d {
            let b: [__m512; N] = core::array::from_fn(|r| _mm512_set1_ps(x[r * d + j]));
            // SAFETY: as in `pass256`, with `g + 16·V <= k`.
            let row = unsafe { ct.as_ptr().add(j * k + g) };
            #[allow(clippy::needless_range_loop)] // v and r index the accumulator grid
            for v in 0..V {
                // SAFETY: see above; `16·v + 16 <= 16·V`.
                let c = unsafe { _mm512_loadu_ps(row.add(16 * v)) };
                for r in 0..N {
                    acc[r][v] = if L2 {
                        let t = _mm512_sub_ps(b[r], c);
                        _mm512_fmadd_ps(t, t, acc[r][v])
                    } else {
                        _mm512_fmadd_ps(b[r], c, acc[r][v])
                    };
                }
            }
        }
        for (r, a) in acc.iter().enumerate() {
            for (v, a) in a.iter().enumerate() {
                // SAFETY: `r·k + g + 16·v + 16 <= N·k == out.len()` (asserted).
                unsafe { _mm512_storeu_ps(out.as_mut_ptr().add(r * k + g + 16 * v), *a) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::dispatch::available_dispatches;

    fn lcg(seed: &mut u64) -> f32 {
        crate::scan::dense::distance::test_lcg(seed)
    }

    fn same_bits(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
    }

    /// Every path gives the scalar twin's bits, for a row alone and for every row of a block,
    /// at the K of the PQ codebooks (16, 256), an IVF coarse quantiser's, and ragged K that
    /// exercise every remainder.
    #[test]
    fn every_path_matches_the_scalar_twin_bit_for_bit() {
        let mut seed = 7u64;
        for &(d, k) in &[
            (1, 1),
            (3, 7),
            (49, 256),
            (6, 256),
            (8, 16),
            (5, 1024),
            (17, 200),
        ] {
            let rows = 3;
            let xs: Vec<f32> = (0..rows * d).map(|_| lcg(&mut seed)).collect();
            let ct: Vec<f32> = (0..d * k).map(|_| lcg(&mut seed)).collect();
            for op in [ColumnOp::Dot, ColumnOp::L2] {
                let mut want = vec![0f32; rows * k];
                for (x, o) in xs.chunks_exact(d).zip(want.chunks_exact_mut(k)) {
                    columns_row(op, x, &ct, k, 0, o);
                }
                for disp in available_dispatches() {
                    let mut block = vec![f32::NAN; rows * k];
                    columns_fixed_order_with(op, &xs, d, &ct, k, &mut block, disp);
                    assert!(same_bits(&block, &want), "{op:?} d={d} k={k} {disp:?}");
                    let mut one = vec![f32::NAN; k];
                    columns_fixed_order_with(op, &xs[d..2 * d], d, &ct, k, &mut one, disp);
                    assert!(
                        same_bits(&one, &want[k..2 * k]),
                        "{op:?} d={d} k={k} {disp:?}"
                    );
                }
                let mut auto = vec![f32::NAN; rows * k];
                columns_fixed_order(op, &xs, d, &ct, k, &mut auto);
                assert!(same_bits(&auto, &want), "{op:?} d={d} k={k} auto");
            }
        }
    }

    /// The values are the dot products and squared distances (f64 reference).
    #[test]
    fn values_match_an_f64_reference() {
        let mut seed = 11u64;
        let (d, k) = (49, 256);
        let x: Vec<f32> = (0..d).map(|_| lcg(&mut seed)).collect();
        let ct: Vec<f32> = (0..d * k).map(|_| lcg(&mut seed)).collect();
        let mut dot = vec![0f32; k];
        let mut l2 = vec![0f32; k];
        columns_fixed_order(ColumnOp::Dot, &x, d, &ct, k, &mut dot);
        columns_fixed_order(ColumnOp::L2, &x, d, &ct, k, &mut l2);
        for c in 0..k {
            let (mut wd, mut wl) = (0f64, 0f64);
            for j in 0..d {
                let (a, b) = (x[j] as f64, ct[j * k + c] as f64);
                wd += a * b;
                wl += (a - b) * (a - b);
            }
            assert!(
                (dot[c] as f64 - wd).abs() <= 1e-4 * (1.0 + wd.abs()),
                "dot {c}"
            );
            assert!((l2[c] as f64 - wl).abs() <= 1e-4 * (1.0 + wl), "l2 {c}");
        }
    }
}
