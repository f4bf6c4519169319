//! Nearest centroid by squared L2 — the inner loop of product-quantisation encoding (each
//! sub-vector goes to the closest of its sub-quantiser's K centroids; Jégou et al. TPAMI 2011
//! §II-B, as FAISS's `ProductQuantizer::compute_code`).
//!
//! Centroids are stored transposed (`ct[j * k + c]` = coordinate j of centroid c) so the
//! distances to 8 centroids are one AVX2 register. Every distance is computed the same way on
//! every path — from `0.0`, for j ascending, `t = x_j − c_j; acc = fma(t, t, acc)` — and the
//! exact differences are used (no `‖x‖² − 2x·c + ‖c‖²` expansion, which cancels badly). The
//! winner is the smallest distance, ties to the smaller index. So the AVX2 and AVX-512 kernels
//! (8 / 16 centroids per register; AVX-512 where K is a multiple of 16) and the scalar twin
//! pick the same centroid, bit for bit; the tests check it.

use super::super::dispatch::{Dispatch, Isa, avx512_full_width};

/// Index of the nearest of `k` centroids to `x` (`ct` holds `x.len() × k` values, transposed).
/// `k` must be ≥ 1 and `ct.len() == x.len() * k` (callers guarantee it; debug-asserted).
#[inline]
pub fn nearest_centroid_l2(x: &[f32], ct: &[f32], k: usize) -> usize {
    debug_assert!(k >= 1 && ct.len() == x.len() * k);
    nearest_with(auto_isa(), x, ct, k)
}

/// The kernels `Auto` runs. The loop is bound by its subtract and FMA per centroid coordinate,
/// so AVX-512 only pays where 512-bit arithmetic runs at full width: on AMD Zen 4 (two 256-bit
/// halves) the AVX-512 pair kernel measured 0.89× the AVX2 one, so `Auto` stays on AVX2 there
/// ([`crate::scan::dispatch::avx512_full_width`]). An invalid `CODEDB_SCAN_ISA` (an error for
/// scans) runs the scalar twin here, which gives the same answers.
fn auto_isa() -> Isa {
    match Dispatch::Auto.resolve().unwrap_or(Isa::Scalar) {
        Isa::Avx512 if !avx512_full_width() => Isa::Avx2,
        isa => isa,
    }
}

/// [`nearest_centroid_l2`] with an explicit kernel choice (tests compare the paths).
pub fn nearest_centroid_l2_with(x: &[f32], ct: &[f32], k: usize, dispatch: Dispatch) -> usize {
    let isa = dispatch.resolve().unwrap_or(Isa::Scalar);
    nearest_with(isa, x, ct, k)
}

/// [`nearest_centroid_l2`] of two rows at once (`x0`, `x1` of one length): each loaded
/// centroid vector serves both rows. Each answer is exactly the one-row answer.
#[inline]
pub fn nearest_centroid_l2_pair(x0: &[f32], x1: &[f32], ct: &[f32], k: usize) -> [usize; 2] {
    nearest_pair_with(auto_isa(), x0, x1, ct, k)
}

/// [`nearest_centroid_l2_pair`] with an explicit kernel choice (tests compare the paths).
pub fn nearest_centroid_l2_pair_with(
    x0: &[f32],
    x1: &[f32],
    ct: &[f32],
    k: usize,
    dispatch: Dispatch,
) -> [usize; 2] {
    let isa = dispatch.resolve().unwrap_or(Isa::Scalar);
    nearest_pair_with(isa, x0, x1, ct, k)
}

fn nearest_pair_with(isa: Isa, x0: &[f32], x1: &[f32], ct: &[f32], k: usize) -> [usize; 2] {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512
            if k.is_multiple_of(16)
                && k <= MAX_K
                && x0.len() == x1.len()
                && ct.len() == x0.len() * k =>
        {
            // SAFETY: `Isa::Avx512` is only produced after the runtime probe found avx512f,
            // avx2 and fma; the guard gives the lengths the kernel relies on.
            unsafe { x86::nearest2_avx512(x0, x1, ct, k) }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512
            if k.is_multiple_of(8)
                && k <= MAX_K
                && x0.len() == x1.len()
                && ct.len() == x0.len() * k =>
        {
            // SAFETY: `Isa::Avx2`/`Avx512` are only produced after the runtime probe found
            // avx2 and fma; the guard gives the lengths the kernel relies on.
            unsafe { x86::nearest2_avx2(x0, x1, ct, k) }
        }
        _ => [nearest_scalar(x0, ct, k), nearest_scalar(x1, ct, k)],
    }
}

fn nearest_with(isa: Isa, x: &[f32], ct: &[f32], k: usize) -> usize {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 if k.is_multiple_of(16) && k <= MAX_K && ct.len() == x.len() * k => {
            // SAFETY: `Isa::Avx512` is only produced after the runtime probe found avx512f,
            // avx2 and fma; the guard gives the lengths the kernel relies on.
            unsafe { x86::nearest_avx512(x, ct, k) }
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512 if k.is_multiple_of(8) && k <= MAX_K && ct.len() == x.len() * k => {
            // SAFETY: `Isa::Avx2`/`Avx512` are only produced after the runtime probe found
            // avx2 and fma; the guard gives the lengths the kernel relies on.
            unsafe { x86::nearest_avx2(x, ct, k) }
        }
        _ => nearest_scalar(x, ct, k),
    }
}

/// Largest K the SIMD kernels are used for: 8-bit PQ has 256 centroids, an IVF coarse
/// quantiser up to 65,536 (their lane indices are i32). Above 256 it used to fall to the
/// scalar twin, whose `mul_add` is a library call without FMA in the base target: filing rows
/// under 1,024 lists ran at ~5,000 rows/s on 2 cores.
#[cfg(target_arch = "x86_64")]
const MAX_K: usize = 1 << 16;

/// The scalar twin.
pub(crate) fn nearest_scalar(x: &[f32], ct: &[f32], k: usize) -> usize {
    let mut best = 0usize;
    let mut best_d = f32::INFINITY;
    for c in 0..k {
        let mut acc = 0.0f32;
        for (j, &xj) in x.iter().enumerate() {
            let t = xj - ct.get(j * k + c).copied().unwrap_or(0.0);
            acc = t.mul_add(t, acc);
        }
        if acc < best_d {
            best_d = acc;
            best = c;
        }
    }
    best
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    use super::MAX_K;

    /// One row: 8 registers (64 centroids) of distances per pass.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn nearest_avx2(x: &[f32], ct: &[f32], k: usize) -> usize {
        nearest_rows::<1, 8>([x], ct, k)[0]
    }

    /// Two rows sharing each loaded centroid vector: 4 registers (32 centroids) per row and
    /// pass, so each load feeds two subtract-FMA pairs.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn nearest2_avx2(x0: &[f32], x1: &[f32], ct: &[f32], k: usize) -> [usize; 2] {
        nearest_rows::<2, 4>([x0, x1], ct, k)
    }

    /// AVX2 + FMA for `R` rows: the distances of 8 centroids per register, `V` registers per
    /// row kept in registers over all coordinates; then, per lane, a running minimum and its
    /// index (strict `<` over ascending centroids keeps the first of equal distances, as the
    /// scalar twin does), and a final pass over the 8 lanes picks the smallest distance, ties to
    /// the smaller index. Each row's distances are computed exactly as with `R = 1`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn nearest_rows<const R: usize, const V: usize>(
        xs: [&[f32]; R],
        ct: &[f32],
        k: usize,
    ) -> [usize; R] {
        let d = xs.first().map_or(0, |x| x.len());
        assert!(k.is_multiple_of(8) && k <= MAX_K && ct.len() == d * k);
        assert!(xs.iter().all(|x| x.len() == d));
        let mut best = [Best::new(); R];
        let mut g = 0;
        while g + 8 * V <= k {
            let acc = group::<R, V>(&xs, ct, k, g);
            for (b, a) in best.iter_mut().zip(&acc) {
                b.offer(a);
            }
            g += 8 * V;
        }
        while g < k {
            let acc = group::<R, 1>(&xs, ct, k, g);
            for (b, a) in best.iter_mut().zip(&acc) {
                b.offer(a);
            }
            g += 8;
        }
        let mut out = [0usize; R];
        for (o, b) in out.iter_mut().zip(&best) {
            *o = b.index();
        }
        out
    }

    /// Squared distances of each row of `xs` to centroids `g .. g + 8·V` (`V` registers of 8
    /// per row). The caller guarantees `g + 8·V <= k`, rows of one length `d` and
    /// `ct.len() == d * k`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn group<const R: usize, const V: usize>(
        xs: &[&[f32]; R],
        ct: &[f32],
        k: usize,
        g: usize,
    ) -> [[__m256; V]; R] {
        let d = xs.first().map_or(0, |x| x.len());
        assert!(g + 8 * V <= k && ct.len() == d * k);
        let mut acc = [[_mm256_setzero_ps(); V]; R];
        let mut xb = [_mm256_setzero_ps(); R];
        for j in 0..d {
            for (b, x) in xb.iter_mut().zip(xs) {
                *b = _mm256_set1_ps(x[j]);
            }
            // SAFETY: row j of the transposed codebook is `ct[j·k .. (j+1)·k]` (j < d and
            // `ct.len() == d·k`, asserted); the 8·V lanes from `g` stay inside it because
            // `g + 8·V <= k` (asserted). `loadu` has no alignment requirement.
            let row = unsafe { ct.as_ptr().add(j * k + g) };
            for v in 0..V {
                // SAFETY: see above; `8·v + 8 <= 8·V`.
                let c = unsafe { _mm256_loadu_ps(row.add(8 * v)) };
                for (a, &b) in acc.iter_mut().zip(&xb) {
                    let t = _mm256_sub_ps(b, c);
                    a[v] = _mm256_fmadd_ps(t, t, a[v]);
                }
            }
        }
        acc
    }

    /// Per-lane running minimum over centroids offered in ascending order.
    #[derive(Clone, Copy)]
    struct Best {
        dist: __m256,
        index: __m256i,
        next: __m256i,
    }

    impl Best {
        #[inline]
        #[target_feature(enable = "avx2")]
        fn new() -> Best {
            Best {
                dist: _mm256_set1_ps(f32::INFINITY),
                index: _mm256_setzero_si256(),
                next: _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
            }
        }

        /// Offers the next `8·V` centroids' distances (lane l of register v is centroid
        /// `next + 8·v + l`).
        #[inline]
        #[target_feature(enable = "avx2")]
        fn offer<const V: usize>(&mut self, d: &[__m256; V]) {
            let eight = _mm256_set1_epi32(8);
            for &dv in d {
                // Strictly smaller only (NaN compares false, as in the scalar twin).
                let lt = _mm256_cmp_ps::<_CMP_LT_OQ>(dv, self.dist);
                self.dist = _mm256_blendv_ps(self.dist, dv, lt);
                self.index = _mm256_blendv_epi8(self.index, self.next, _mm256_castps_si256(lt));
                self.next = _mm256_add_epi32(self.next, eight);
            }
        }

        /// The smallest distance over the lanes, ties to the smaller centroid index.
        #[inline]
        #[target_feature(enable = "avx2")]
        fn index(&self) -> usize {
            let dist: [f32; 8] = bytemuck::cast(self.dist);
            let index: [u32; 8] = bytemuck::cast(self.index);
            let mut best = (f32::INFINITY, 0u32);
            for (&d, &i) in dist.iter().zip(&index) {
                if d < best.0 || (d == best.0 && i < best.1) {
                    best = (d, i);
                }
            }
            best.1 as usize
        }
    }

    /// AVX-512 for one row: 8 registers (128 centroids) of distances per pass.
    #[target_feature(enable = "avx512f,avx2,fma")]
    pub(super) fn nearest_avx512(x: &[f32], ct: &[f32], k: usize) -> usize {
        nearest_rows512::<1, 8>([x], ct, k)[0]
    }

    /// AVX-512 for two rows sharing each loaded centroid vector: 8 registers per row, 16 of
    /// the 32 vector registers.
    #[target_feature(enable = "avx512f,avx2,fma")]
    pub(super) fn nearest2_avx512(x0: &[f32], x1: &[f32], ct: &[f32], k: usize) -> [usize; 2] {
        nearest_rows512::<2, 8>([x0, x1], ct, k)
    }

    /// [`nearest_rows`] with 16 centroids per register (`k` a multiple of 16); lanes compute
    /// the same per-centroid sequence of operations, so the answers are identical.
    #[inline]
    #[target_feature(enable = "avx512f,avx2,fma")]
    fn nearest_rows512<const R: usize, const V: usize>(
        xs: [&[f32]; R],
        ct: &[f32],
        k: usize,
    ) -> [usize; R] {
        let d = xs.first().map_or(0, |x| x.len());
        assert!(k.is_multiple_of(16) && k <= MAX_K && ct.len() == d * k);
        assert!(xs.iter().all(|x| x.len() == d));
        let mut best = [Best512::new(); R];
        let mut g = 0;
        while g + 16 * V <= k {
            let acc = group512::<R, V>(&xs, ct, k, g);
            for (b, a) in best.iter_mut().zip(&acc) {
                b.offer(a);
            }
            g += 16 * V;
        }
        while g < k {
            let acc = group512::<R, 1>(&xs, ct, k, g);
            for (b, a) in best.iter_mut().zip(&acc) {
                b.offer(a);
            }
            g += 16;
        }
        let mut out = [0usize; R];
        for (o, b) in out.iter_mut().zip(&best) {
            *o = b.index();
        }
        out
    }

    /// As [`group`], 16 centroids per register: distances of each row of `xs` to centroids
    /// `g .. g + 16·V`. The caller guarantees `g + 16·V <= k`, rows of one length `d` and
    /// `ct.len() == d * k`.
    #[inline]
    #[target_feature(enable = "avx512f,fma")]
    fn group512<const R: usize, const V: usize>(
        xs: &[&[f32]; R],
        ct: &[f32],
        k: usize,
        g: usize,
    ) -> [[__m512; V]; R] {
        let d = xs.first().map_or(0, |x| x.len());
        assert!(g + 16 * V <= k && ct.len() == d * k);
        let mut acc = [[_mm512_setzero_ps(); V]; R];
        let mut xb = [_mm512_setzero_ps(); R];
        for j in 0..d {
            for (b, x) in xb.iter_mut().zip(xs) {
                *b = _mm512_set1_ps(x[j]);
            }
            // SAFETY: row j of the transposed codebook is `ct[j·k .. (j+1)·k]` (j < d and
            // `ct.len() == d·k`, asserted); the 16·V lanes from `g` stay inside it because
            // `g + 16·V <= k` (asserted). `loadu` has no alignment requirement.
            let row = unsafe { ct.as_ptr().add(j * k + g) };
            for v in 0..V {
                // SAFETY: see above; `16·v + 16 <= 16·V`.
                let c = unsafe { _mm512_loadu_ps(row.add(16 * v)) };
                for (a, &b) in acc.iter_mut().zip(&xb) {
                    let t = _mm512_sub_ps(b, c);
                    a[v] = _mm512_fmadd_ps(t, t, a[v]);
                }
            }
        }
        acc
    }

    /// [`Best`] with 16 lanes.
    #[derive(Clone, Copy)]
    struct Best512 {
        dist: __m512,
        index: __m512i,
        next: __m512i,
    }

    impl Best512 {
        #[inline]
        #[target_feature(enable = "avx512f")]
        fn new() -> Best512 {
            Best512 {
                dist: _mm512_set1_ps(f32::INFINITY),
                index: _mm512_setzero_si512(),
                next: _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            }
        }

        /// Offers the next `16·V` centroids' distances (lane l of register v is centroid
        /// `next + 16·v + l`).
        #[inline]
        #[target_feature(enable = "avx512f")]
        fn offer<const V: usize>(&mut self, d: &[__m512; V]) {
            let sixteen = _mm512_set1_epi32(16);
            for &dv in d {
                // Strictly smaller only (NaN compares false, as in the scalar twin).
                let lt = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(dv, self.dist);
                self.dist = _mm512_mask_mov_ps(self.dist, lt, dv);
                self.index = _mm512_mask_mov_epi32(self.index, lt, self.next);
                self.next = _mm512_add_epi32(self.next, sixteen);
            }
        }

        /// The smallest distance over the lanes, ties to the smaller centroid index.
        #[inline]
        #[target_feature(enable = "avx512f")]
        fn index(&self) -> usize {
            // SAFETY: __m512 / __m512i and [f32; 16] / [u32; 16] have the same size and every
            // bit pattern is valid for both.
            let dist: [f32; 16] = unsafe { core::mem::transmute::<__m512, [f32; 16]>(self.dist) };
            // SAFETY: as above.
            let index: [u32; 16] =
                unsafe { core::mem::transmute::<__m512i, [u32; 16]>(self.index) };
            let mut best = (f32::INFINITY, 0u32);
            for (&d, &i) in dist.iter().zip(&index) {
                if d < best.0 || (d == best.0 && i < best.1) {
                    best = (d, i);
                }
            }
            best.1 as usize
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::dispatch::available_dispatches;

    use crate::scan::dense::distance::test_lcg as lcg;

    #[test]
    fn every_path_picks_the_same_centroid() {
        let mut s = 7u64;
        for &k in &[1usize, 8, 16, 24, 40, 72, 256, 5, 1024, 1048] {
            for &d in &[1usize, 2, 4, 8, 16, 3] {
                for round in 0..50 {
                    let mut ct: Vec<f32> = (0..d * k).map(|_| lcg(&mut s)).collect();
                    // Duplicate centroids on some rounds: ties must go to the smaller index.
                    if round % 3 == 0 && k > 1 {
                        for j in 0..d {
                            ct[j * k + k - 1] = ct[j * k];
                        }
                    }
                    let x: Vec<f32> = if round % 3 == 0 {
                        (0..d).map(|j| ct[j * k]).collect()
                    } else {
                        (0..d).map(|_| lcg(&mut s)).collect()
                    };
                    let want = nearest_scalar(&x, &ct, k);
                    // The previous round's row (or a fresh one) as the second row of a pair.
                    let other: Vec<f32> = (0..d).map(|_| lcg(&mut s)).collect();
                    let want_other = nearest_scalar(&other, &ct, k);
                    for disp in available_dispatches() {
                        assert_eq!(
                            nearest_centroid_l2_with(&x, &ct, k, disp),
                            want,
                            "k={k} d={d} round={round} {disp:?}"
                        );
                        assert_eq!(
                            nearest_centroid_l2_pair_with(&x, &other, &ct, k, disp),
                            [want, want_other],
                            "pair k={k} d={d} round={round} {disp:?}"
                        );
                        assert_eq!(
                            nearest_centroid_l2_pair_with(&other, &x, &ct, k, disp),
                            [want_other, want],
                            "pair k={k} d={d} round={round} {disp:?}"
                        );
                    }
                    if round % 3 == 0 && k > 1 {
                        assert_eq!(want, 0, "exact match and its duplicate: smaller index wins");
                    }
                }
            }
        }
    }

    #[test]
    fn scalar_twin_is_the_true_nearest() {
        // Centroid c = (c, c); the query (3.2, 3.2) is nearest centroid 3.
        let k = 8;
        let ct: Vec<f32> = (0..2).flat_map(|_| (0..k).map(|c| c as f32)).collect();
        assert_eq!(nearest_scalar(&[3.2, 3.2], &ct, k), 3);
        assert_eq!(nearest_centroid_l2(&[3.2, 3.2], &ct, k), 3);
    }
}
