//! AVX2 + FMA dense kernels (four 8-lane accumulators; see `scalar.rs` for the exact order the
//! scalar twin reproduces). F16 operands are widened with F16C `vcvtph2ps` (exact).

use core::arch::x86_64::*;

use half::f16;

/// Loads 8 f32 at `off` of a 32-element chunk.
#[inline]
#[target_feature(enable = "avx2")]
fn load_f32(c: &[f32; 32], off: usize) -> __m256 {
    assert!(off + 8 <= 32);
    // SAFETY: the assert keeps the 8 lanes inside the chunk; `loadu` has no alignment needs.
    unsafe { _mm256_loadu_ps(c.as_ptr().add(off)) }
}

/// Loads 8 f16 at `off` of a 32-element chunk, widened to f32.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn load_f16(c: &[f16; 32], off: usize) -> __m256 {
    assert!(off + 8 <= 32);
    // SAFETY: the assert keeps the 16 bytes inside the chunk (f16 is a 2-byte transparent
    // wrapper of u16); `loadu` has no alignment needs.
    let h = unsafe { _mm_loadu_si128(c.as_ptr().add(off).cast()) };
    _mm256_cvtph_ps(h)
}

/// Horizontal sum in the documented order: `(lo + hi)`, then `movehl`, then lane 0 + lane 1.
#[inline]
#[target_feature(enable = "avx2")]
fn hsum(acc: [__m256; 4]) -> f32 {
    let v = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    let s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    let s1 = _mm_add_ss(s2, _mm_shuffle_ps::<1>(s2, s2));
    _mm_cvtss_f32(s1)
}

macro_rules! kernel {
    ($name:ident, $elem:ty, $load:ident, $feat:literal, |$x:ident, $y:ident, $acc:ident| $body:expr, |$sx:ident, $sy:ident, $sacc:ident| $sbody:expr) => {
        #[target_feature(enable = $feat)]
        pub(crate) fn $name(a: &[f32], b: &[$elem]) -> f32 {
            let (ac, at) = a.as_chunks::<32>();
            let (bc, bt) = b.as_chunks::<32>();
            let mut acc = [_mm256_setzero_ps(); 4];
            for (xa, yb) in ac.iter().zip(bc) {
                for (i, lane) in acc.iter_mut().enumerate() {
                    let $x = load_f32(xa, 8 * i);
                    let $y = $load(yb, 8 * i);
                    let $acc = *lane;
                    *lane = $body;
                }
            }
            let mut s = hsum(acc);
            for (&xs, &ys) in at.iter().zip(bt) {
                let ($sx, $sy, $sacc) = (xs, ys, s);
                s = $sbody;
            }
            s
        }
    };
}

kernel!(
    dot_f32,
    f32,
    load_f32,
    "avx2,fma",
    |x, y, acc| _mm256_fmadd_ps(x, y, acc),
    |x, y, acc| x.mul_add(y, acc)
);
kernel!(
    l2_f32,
    f32,
    load_f32,
    "avx2,fma",
    |x, y, acc| {
        let d = _mm256_sub_ps(x, y);
        _mm256_fmadd_ps(d, d, acc)
    },
    |x, y, acc| {
        let d = x - y;
        d.mul_add(d, acc)
    }
);
kernel!(
    dot_f16,
    f16,
    load_f16,
    "avx2,fma,f16c",
    |x, y, acc| _mm256_fmadd_ps(x, y, acc),
    |x, y, acc| x.mul_add(y.to_f32(), acc)
);
kernel!(
    l2_f16,
    f16,
    load_f16,
    "avx2,fma,f16c",
    |x, y, acc| {
        let d = _mm256_sub_ps(x, y);
        _mm256_fmadd_ps(d, d, acc)
    },
    |x, y, acc| {
        let d = x - y.to_f32();
        d.mul_add(d, acc)
    }
);
