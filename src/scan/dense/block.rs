//! Many rows against one weight matrix, in the fixed order of [`super::dot_fixed_order`]:
//! `out[r·o + j] = dot_fixed_order(w_j, x_r)` for the `n` rows `x_r` and `o` weight rows `w_j`
//! (all of length `d`, row-major). This is the encoders' matrix product (PCA/LSH projections,
//! ITQ rotations), so it must give every output exactly the bits a lone
//! [`super::dot_fixed_order`] gives — whatever `n` is, and on every CPU path.
//!
//! The AVX2+FMA kernel gets its speed from reuse, not from reordering: it computes a tile of
//! up to 4 rows × 2 weight rows at once, so each loaded weight vector serves 4 rows and each
//! loaded row vector serves 2 weights (6 loads per 8 FMAs instead of 2 per 1), and the 8
//! independent FMA chains hide the FMA latency. Each output still runs the documented order
//! (`scalar.rs`): its lane `l` is one FMA chain over elements `i ≡ l (mod 32)`, ascending; the
//! kernel runs the four 8-lane accumulators of a tile one after the other (lane group g = 0..4,
//! each over the whole row) instead of interleaved, which changes no chain. Then the same
//! reduction tree and the same sequential FMA tail. Row and weight remainders (`n mod 4`,
//! `o mod 2`) use the same kernel with a smaller tile, so a row alone gets the same bits as in
//! any batch; the tests check all of it against the scalar twin and against `dot_fixed_order`.

use super::super::dispatch::{Dispatch, Isa};
use super::scalar;

/// `out[r·o + j] = dot_fixed_order(w[j·d..][..d], x[r·d..][..d])` with `o = w.len() / d` weight
/// rows and `n = x.len() / d` input rows, with the best kernel of this CPU
/// (`CODEDB_FORCE_SCALAR=1` selects the scalar twin). `w.len()` and `x.len()` must be
/// multiples of `d` and `out.len()` must be `n · o` (callers guarantee it; debug-asserted,
/// and otherwise only whole rows that fit are computed). `d == 0` gives zeros.
#[inline]
pub fn dot_rows_fixed_order(w: &[f32], x: &[f32], d: usize, out: &mut [f32]) {
    // `Auto` never fails to resolve.
    let isa = Dispatch::Auto.resolve().unwrap_or(Isa::Scalar);
    dot_rows_isa(isa, w, x, d, out);
}

/// [`dot_rows_fixed_order`] with an explicit kernel choice (tests compare the paths; a
/// dispatch this CPU cannot run falls back to the scalar twin).
pub fn dot_rows_fixed_order_with(
    w: &[f32],
    x: &[f32],
    d: usize,
    out: &mut [f32],
    dispatch: Dispatch,
) {
    let isa = dispatch.resolve().unwrap_or(Isa::Scalar);
    dot_rows_isa(isa, w, x, d, out);
}

fn dot_rows_isa(isa: Isa, w: &[f32], x: &[f32], d: usize, out: &mut [f32]) {
    if d == 0 {
        out.fill(0.0);
        return;
    }
    debug_assert!(w.len().is_multiple_of(d) && x.len().is_multiple_of(d));
    let o = w.len() / d;
    debug_assert_eq!(out.len(), x.len() / d * o);
    if o == 0 {
        return;
    }
    // Only whole rows that have a whole output row.
    let n = (x.len() / d).min(out.len() / o);
    let (w, x, out) = (&w[..o * d], &x[..n * d], &mut out[..n * o]);
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 | Isa::Avx512 => {
            // SAFETY: `Isa::Avx2`/`Avx512` are only produced after the runtime probe found
            // avx2, fma and f16c.
            unsafe { super::x86::dot_rows_f32(w, x, d, out) }
        }
        _ => dot_rows_scalar(w, x, d, out),
    }
}

/// The scalar twin: one [`scalar::combine`] per output (the definition of the order).
fn dot_rows_scalar(w: &[f32], x: &[f32], d: usize, out: &mut [f32]) {
    let o = w.len() / d;
    for (orow, xr) in out.chunks_exact_mut(o).zip(x.chunks_exact(d)) {
        for (v, wj) in orow.iter_mut().zip(w.chunks_exact(d)) {
            *v = scalar::combine::<scalar::Dot, f32>(wj, xr);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::dispatch::available_dispatches;

    use crate::scan::dense::distance::test_lcg as lcg;

    #[test]
    fn every_output_is_the_lone_fixed_order_dot_on_every_path() {
        let mut s = 11u64;
        // Lengths around the 32-lane blocks and the 8-lane groups; row counts over every
        // remainder of the 4-row tile, weight counts over both remainders of the 2-weight tile.
        for d in [1usize, 7, 8, 31, 32, 33, 64, 100, 784] {
            for o in [1usize, 2, 3, 5, 8] {
                let w: Vec<f32> = (0..o * d).map(|_| lcg(&mut s) * 3.0).collect();
                for n in 0..=9usize {
                    let x: Vec<f32> = (0..n * d).map(|_| lcg(&mut s) * 7.0).collect();
                    let want: Vec<u32> = x
                        .chunks_exact(d)
                        .flat_map(|xr| {
                            w.chunks_exact(d).map(|wj| {
                                super::super::distance::dot_fixed_order_scalar(wj, xr).to_bits()
                            })
                        })
                        .collect();
                    for disp in available_dispatches() {
                        let mut out = vec![f32::NAN; n * o];
                        dot_rows_fixed_order_with(&w, &x, d, &mut out, disp);
                        let got: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
                        assert_eq!(got, want, "d={d} o={o} n={n} {disp:?}");
                    }
                    let mut out = vec![f32::NAN; n * o];
                    dot_rows_fixed_order(&w, &x, d, &mut out);
                    for (r, xr) in x.chunks_exact(d).enumerate() {
                        for (j, wj) in w.chunks_exact(d).enumerate() {
                            assert_eq!(
                                out[r * o + j].to_bits(),
                                super::super::distance::dot_fixed_order(wj, xr).to_bits(),
                                "d={d} o={o} n={n} r={r} j={j}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn zero_length_rows_give_zeros() {
        let mut out = [1.0f32; 3];
        dot_rows_fixed_order(&[], &[], 0, &mut out);
        assert_eq!(out, [0.0; 3]);
    }
}
