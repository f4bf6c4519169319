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

/// One f16 widened to f32 by F16C (exact, as `f16::to_f32`, which dispatches on the CPU at
/// every call: in the scalar tail of a 784-wide row that call cost more than the row's FMAs).
#[inline]
#[target_feature(enable = "f16c")]
fn widen(h: f16) -> f32 {
    _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(i32::from(h.to_bits()))))
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
    |x, y, acc| x.mul_add(widen(y), acc)
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
        let d = x - widen(y);
        d.mul_add(d, acc)
    }
);

/// Row tile of [`dot_rows_f32`]: input rows computed together.
const TILE_ROWS: usize = 4;
/// Weight tile of [`dot_rows_f32`]: weight rows computed together.
const TILE_WEIGHTS: usize = 2;

/// `out[r·o + j] = dot_f32(w_j, x_r)` for all rows (see `block.rs`): tiles of 4 rows × 2
/// weights; smaller tiles for the remainders. `w.len() == o·d`, `x.len() == n·d`,
/// `out.len() == n·o`, `d >= 1` (asserted).
#[target_feature(enable = "avx2,fma")]
pub(crate) fn dot_rows_f32(w: &[f32], x: &[f32], d: usize, out: &mut [f32]) {
    assert!(d >= 1 && w.len().is_multiple_of(d));
    let o = w.len() / d;
    assert!(o >= 1 && x.len() == out.len() / o * d && out.len().is_multiple_of(o));
    let mut rows = x.chunks_exact(d * TILE_ROWS);
    let mut outs = out.chunks_exact_mut(o * TILE_ROWS);
    for (xt, ot) in (&mut rows).zip(&mut outs) {
        row_tile::<TILE_ROWS>(w, xt, d, ot);
    }
    let (xt, ot) = (rows.remainder(), outs.into_remainder());
    match xt.len() / d {
        3 => row_tile::<3>(w, xt, d, ot),
        2 => row_tile::<2>(w, xt, d, ot),
        1 => row_tile::<1>(w, xt, d, ot),
        _ => {}
    }
}

/// `R` rows (`xt`, `R·d` values) against every weight row, into `ot` (`R·o` values).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn row_tile<const R: usize>(w: &[f32], xt: &[f32], d: usize, ot: &mut [f32]) {
    let o = w.len() / d;
    let xs: [&[f32]; R] = core::array::from_fn(|r| &xt[r * d..(r + 1) * d]);
    let mut j = 0;
    while j + TILE_WEIGHTS <= o {
        let ws: [&[f32]; TILE_WEIGHTS] = core::array::from_fn(|s| &w[(j + s) * d..(j + s + 1) * d]);
        let v = tile::<R, TILE_WEIGHTS>(&ws, &xs);
        for (r, vr) in v.iter().enumerate() {
            ot[r * o + j..r * o + j + TILE_WEIGHTS].copy_from_slice(vr);
        }
        j += TILE_WEIGHTS;
    }
    while j < o {
        let v = tile::<R, 1>(&[&w[j * d..(j + 1) * d]], &xs);
        for (r, vr) in v.iter().enumerate() {
            ot[r * o + j] = vr[0];
        }
        j += 1;
    }
}

/// The `R × S` dot products of rows `xs` with weights `ws` (all of one length `d`), each in
/// the documented order: lane group g (elements `32c + 8g .. 32c + 8g + 8`, c ascending) is
/// one 8-lane FMA chain; the four groups then go through [`hsum`], then the `d mod 32` tail is
/// added with sequential FMAs.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn tile<const R: usize, const S: usize>(ws: &[&[f32]; S], xs: &[&[f32]; R]) -> [[f32; S]; R] {
    let d = xs.first().map_or(0, |x| x.len());
    assert!(xs.iter().all(|x| x.len() == d) && ws.iter().all(|w| w.len() == d));
    let body = d - d % 32;
    let mut groups = [[[_mm256_setzero_ps(); 4]; S]; R];
    for g in 0..4 {
        let mut acc = [[_mm256_setzero_ps(); S]; R];
        let mut off = 8 * g;
        while off < body {
            // SAFETY (all loads below): `off + 8 <= body <= d`, the common length of every
            // row in `ws` and `xs` (asserted above); `loadu` has no alignment requirement.
            let wv: [__m256; S] = core::array::from_fn(|s| {
                // SAFETY: as above (`off + 8 <= d` for every row of `ws`).
                unsafe { _mm256_loadu_ps(ws[s].as_ptr().add(off)) }
            });
            for (a, x) in acc.iter_mut().zip(xs) {
                // SAFETY: as above.
                let xv = unsafe { _mm256_loadu_ps(x.as_ptr().add(off)) };
                for (a, &wv) in a.iter_mut().zip(&wv) {
                    *a = _mm256_fmadd_ps(wv, xv, *a);
                }
            }
            off += 32;
        }
        for (gr, ar) in groups.iter_mut().zip(&acc) {
            for (gs, &a) in gr.iter_mut().zip(ar) {
                gs[g] = a;
            }
        }
    }
    let mut sums = [[0.0f32; S]; R];
    for (sr, gr) in sums.iter_mut().zip(&groups) {
        for (s, &g) in sr.iter_mut().zip(gr) {
            *s = hsum(g);
        }
    }
    for i in body..d {
        for (sr, x) in sums.iter_mut().zip(xs) {
            for (s, w) in sr.iter_mut().zip(ws) {
                *s = w[i].mul_add(x[i], *s);
            }
        }
    }
    sums
}
