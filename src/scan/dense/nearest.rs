//! Nearest centroid by squared L2 — the inner loop of product-quantisation encoding (each
//! sub-vector goes to the closest of its sub-quantiser's K centroids; Jégou et al. TPAMI 2011
//! §II-B, as FAISS's `ProductQuantizer::compute_code`).
//!
//! Centroids are stored transposed (`ct[j * k + c]` = coordinate j of centroid c) so the
//! distances to 8 centroids are one AVX2 register. Every distance is computed the same way on
//! every path — from `0.0`, for j ascending, `t = x_j − c_j; acc = fma(t, t, acc)` — and the
//! exact differences are used (no `‖x‖² − 2x·c + ‖c‖²` expansion, which cancels badly). The
//! winner is the smallest distance, ties to the smaller index. So the AVX2 kernel and the
//! scalar twin pick the same centroid, bit for bit; the tests check it.

use super::super::dispatch::{Dispatch, Isa};

/// Index of the nearest of `k` centroids to `x` (`ct` holds `x.len() × k` values, transposed).
/// `k` must be ≥ 1 and `ct.len() == x.len() * k` (callers guarantee it; debug-asserted).
#[inline]
pub fn nearest_centroid_l2(x: &[f32], ct: &[f32], k: usize) -> usize {
    debug_assert!(k >= 1 && ct.len() == x.len() * k);
    // `Auto` never fails to resolve.
    let isa = Dispatch::Auto.resolve().unwrap_or(Isa::Scalar);
    nearest_with(isa, x, ct, k)
}

/// [`nearest_centroid_l2`] with an explicit kernel choice (tests compare the paths).
pub fn nearest_centroid_l2_with(x: &[f32], ct: &[f32], k: usize, dispatch: Dispatch) -> usize {
    let isa = dispatch.resolve().unwrap_or(Isa::Scalar);
    nearest_with(isa, x, ct, k)
}

fn nearest_with(isa: Isa, x: &[f32], ct: &[f32], k: usize) -> usize {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512 if k.is_multiple_of(8) && k <= MAX_K && ct.len() == x.len() * k => {
            // SAFETY: `Isa::Avx2`/`Avx512` are only produced after the runtime probe found
            // avx2 and fma; the guard gives the lengths the kernel relies on.
            unsafe { x86::nearest_avx2(x, ct, k) }
        }
        _ => nearest_scalar(x, ct, k),
    }
}

/// Largest K the SIMD kernel handles (its distance buffer); 8-bit PQ has 256.
#[cfg(target_arch = "x86_64")]
const MAX_K: usize = 256;

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

    /// AVX2 + FMA: the distances of 8 centroids per register, `V` registers (8·V centroids)
    /// kept in registers over all coordinates; then, per lane, a running minimum and its index
    /// (strict `<` over ascending centroids keeps the first of equal distances, as the scalar
    /// twin does), and a final pass over the 8 lanes picks the smallest distance, ties to the
    /// smaller index. No distance buffer and no scan of it.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn nearest_avx2(x: &[f32], ct: &[f32], k: usize) -> usize {
        assert!(k.is_multiple_of(8) && k <= MAX_K && ct.len() == x.len() * k);
        let mut best = Best::new();
        let mut g = 0;
        while g + 64 <= k {
            best.offer(&group::<8>(x, ct, k, g));
            g += 64;
        }
        while g < k {
            best.offer(&group::<1>(x, ct, k, g));
            g += 8;
        }
        best.index()
    }

    /// Squared distances of `x` to centroids `g .. g + 8·V` (`V` registers of 8).
    /// The caller guarantees `g + 8·V <= k` and `ct.len() == x.len() * k`.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn group<const V: usize>(x: &[f32], ct: &[f32], k: usize, g: usize) -> [__m256; V] {
        assert!(g + 8 * V <= k && ct.len() == x.len() * k);
        let mut acc = [_mm256_setzero_ps(); V];
        for (j, &xj) in x.iter().enumerate() {
            let xb = _mm256_set1_ps(xj);
            // SAFETY: row j of the transposed codebook is `ct[j·k .. (j+1)·k]` (j < x.len() and
            // `ct.len() == x.len()·k`, asserted); the 8·V lanes from `g` stay inside it because
            // `g + 8·V <= k` (asserted). `loadu` has no alignment requirement.
            let row = unsafe { ct.as_ptr().add(j * k + g) };
            for (v, a) in acc.iter_mut().enumerate() {
                // SAFETY: see above; `8·v + 8 <= 8·V`.
                let c = unsafe { _mm256_loadu_ps(row.add(8 * v)) };
                let t = _mm256_sub_ps(xb, c);
                *a = _mm256_fmadd_ps(t, t, *a);
            }
        }
        acc
    }

    /// Per-lane running minimum over centroids offered in ascending order.
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::dispatch::available_dispatches;

    fn lcg(seed: &mut u64) -> f32 {
        *seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((*seed >> 40) as f32) / (1u64 << 24) as f32 - 0.5
    }

    #[test]
    fn every_path_picks_the_same_centroid() {
        let mut s = 7u64;
        for &k in &[1usize, 8, 16, 24, 72, 256, 5] {
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
                    for disp in available_dispatches() {
                        assert_eq!(
                            nearest_centroid_l2_with(&x, &ct, k, disp),
                            want,
                            "k={k} d={d} round={round} {disp:?}"
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
