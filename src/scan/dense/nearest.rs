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

    /// AVX2 + FMA: distances of 8 centroids per register, 8 registers (64 centroids) per group
    /// kept in registers over all coordinates, then the minimum and its first index.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn nearest_avx2(x: &[f32], ct: &[f32], k: usize) -> usize {
        let d = x.len();
        assert!(k.is_multiple_of(8) && k <= MAX_K && ct.len() == d * k);
        let mut dist = [0.0f32; MAX_K];
        let mut g = 0;
        while g < k {
            let vecs = ((k - g) / 8).min(8);
            let mut acc = [_mm256_setzero_ps(); 8];
            for (j, &xj) in x.iter().enumerate() {
                let xb = _mm256_set1_ps(xj);
                let row = j * k + g;
                for (v, a) in acc.iter_mut().enumerate().take(vecs) {
                    let off = row + 8 * v;
                    assert!(off + 8 <= ct.len());
                    // SAFETY: the assert keeps the 8 lanes inside `ct`; `loadu` has no
                    // alignment requirement.
                    let c = unsafe { _mm256_loadu_ps(ct.as_ptr().add(off)) };
                    let t = _mm256_sub_ps(xb, c);
                    *a = _mm256_fmadd_ps(t, t, *a);
                }
            }
            for (v, a) in acc.iter().enumerate().take(vecs) {
                let off = g + 8 * v;
                assert!(off + 8 <= MAX_K);
                // SAFETY: the assert keeps the 8 lanes inside `dist`.
                unsafe { _mm256_storeu_ps(dist.as_mut_ptr().add(off), *a) };
            }
            g += 8 * vecs;
        }
        // Minimum (vectorised), then the first index holding it.
        let dist = &dist[..k];
        let (chunks, _) = dist.as_chunks::<8>();
        let mut m = _mm256_set1_ps(f32::INFINITY);
        for c in chunks {
            // SAFETY: `c` is exactly 8 f32.
            m = _mm256_min_ps(m, unsafe { _mm256_loadu_ps(c.as_ptr()) });
        }
        let lanes: [f32; 8] = bytemuck::cast(m);
        let min = lanes.iter().copied().fold(f32::INFINITY, f32::min);
        dist.iter().position(|&v| v == min).unwrap_or(0)
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
        for &k in &[1usize, 8, 16, 24, 256, 5] {
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
