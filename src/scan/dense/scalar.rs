//! Portable dense kernels, summing in the SIMD kernels' fixed order.
//!
//! The order (the "lane-blocked" order): the first `32 * (n / 32)` elements go to 32 lanes,
//! element `i` to lane `i % 32`, each lane a fused multiply-add chain `acc = fma(x, y, acc)`
//! from `0.0` in ascending `i`. Lane `l` is lane `l % 8` of accumulator `l / 8`. The lanes are
//! reduced as `v[l] = (a0[l] + a1[l]) + (a2[l] + a3[l])` for l in 0..8, then
//! `s4[l] = v[l] + v[l + 4]` (l < 4), `s2[l] = s4[l] + s4[l + 2]` (l < 2), `s = s2[0] + s2[1]`;
//! the remaining `n % 32` elements are then added to `s` one at a time with `fma`, ascending.
//! This is exactly what four 8-lane AVX2 accumulators and the usual extract/movehl/shuffle
//! horizontal sum compute, so scalar and SIMD results are bit-identical.

use half::f16;

/// The term an element contributes: `x * y` for dot, `(x - y)²` for squared L2, as an fma into
/// `acc`.
pub(crate) trait Term {
    fn fma(x: f32, y: f32, acc: f32) -> f32;
}

pub(crate) struct Dot;
pub(crate) struct L2;

impl Term for Dot {
    #[inline(always)]
    fn fma(x: f32, y: f32, acc: f32) -> f32 {
        x.mul_add(y, acc)
    }
}

impl Term for L2 {
    #[inline(always)]
    fn fma(x: f32, y: f32, acc: f32) -> f32 {
        let d = x - y;
        d.mul_add(d, acc)
    }
}

/// An element type the second vector may be stored in (exactly convertible to f32).
pub(crate) trait Elem: Copy {
    fn f32(self) -> f32;
}

impl Elem for f32 {
    #[inline(always)]
    fn f32(self) -> f32 {
        self
    }
}

impl Elem for f16 {
    #[inline(always)]
    fn f32(self) -> f32 {
        self.to_f32()
    }
}

/// Reduces 4 × 8 lane accumulators in the documented order.
#[inline]
pub(crate) fn reduce(acc: &[[f32; 8]; 4]) -> f32 {
    let v: [f32; 8] = core::array::from_fn(|l| (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]));
    let s4: [f32; 4] = core::array::from_fn(|l| v[l] + v[l + 4]);
    let s2 = [s4[0] + s4[2], s4[1] + s4[3]];
    s2[0] + s2[1]
}

/// The kernel: `Σ term(a_i, b_i)` in the documented order (lengths already checked equal).
pub(crate) fn combine<T: Term, E: Elem>(a: &[f32], b: &[E]) -> f32 {
    let (ac, at) = a.as_chunks::<32>();
    let (bc, bt) = b.as_chunks::<32>();
    let mut acc = [[0.0f32; 8]; 4];
    for (x, y) in ac.iter().zip(bc) {
        for (i, (&xi, &yi)) in x.iter().zip(y).enumerate() {
            let lane = &mut acc[i / 8][i % 8];
            *lane = T::fma(xi, yi.f32(), *lane);
        }
    }
    let mut s = reduce(&acc);
    for (&x, &y) in at.iter().zip(bt) {
        s = T::fma(x, y.f32(), s);
    }
    s
}
