//! AVX2 fast-scan kernel: per block of 32 rows, each pair of sub-quantisers is one 32-byte load;
//! its low and high nibble planes index the pair's two u8 tables (one register, one table per
//! 128-bit lane) with `vpshufb`; the bytes are widened and summed in four u16 accumulators, and
//! the 32 sums are compared with the quantised bound in registers. Integer sums: identical to
//! the scalar twin.

use core::arch::x86_64::*;
use std::ops::Range;

use super::QuantLut;
use super::layout::{BLOCK_ROWS, block_bytes};
use crate::scan::rows::Sink;

#[inline]
#[target_feature(enable = "avx2")]
fn load(a: &[u8; 32]) -> __m256i {
    // SAFETY: `a` is 32 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm256_loadu_si256(a.as_ptr().cast()) }
}

/// The quantised sums of one block: rows 0-15 and rows 16-31, u16 lanes in row order.
#[inline]
#[target_feature(enable = "avx2")]
fn block_sums(blk: &[[u8; 32]], q: &[[u8; 32]]) -> (__m256i, __m256i) {
    let low = _mm256_set1_epi8(0x0f);
    let zero = _mm256_setzero_si256();
    let (mut a0, mut a1, mut a2, mut a3) = (zero, zero, zero, zero);
    for (v, t) in blk.iter().zip(q) {
        let v = load(v);
        let t = load(t);
        let lo = _mm256_shuffle_epi8(t, _mm256_and_si256(v, low));
        let hi = _mm256_shuffle_epi8(t, _mm256_and_si256(_mm256_srli_epi16::<4>(v), low));
        a0 = _mm256_add_epi16(a0, _mm256_unpacklo_epi8(lo, zero));
        a1 = _mm256_add_epi16(a1, _mm256_unpackhi_epi8(lo, zero));
        a2 = _mm256_add_epi16(a2, _mm256_unpacklo_epi8(hi, zero));
        a3 = _mm256_add_epi16(a3, _mm256_unpackhi_epi8(hi, zero));
    }
    // a0 = [rows 0-7 of even j | rows 0-7 of odd j], a1 the same for rows 8-15.
    let x = _mm256_add_epi16(
        _mm256_permute2x128_si256::<0x20>(a0, a1),
        _mm256_permute2x128_si256::<0x31>(a0, a1),
    );
    let y = _mm256_add_epi16(
        _mm256_permute2x128_si256::<0x20>(a2, a3),
        _mm256_permute2x128_si256::<0x31>(a2, a3),
    );
    (x, y)
}

/// Bit i set when u16 lane i of `s` is `<= t` (16 bits).
#[inline]
#[target_feature(enable = "avx2,bmi2")]
fn le_mask(s: __m256i, t: __m256i) -> u32 {
    let le = _mm256_cmpeq_epi16(_mm256_min_epu16(s, t), s);
    // Two mask bits per u16 lane: keep the even ones and compress them.
    _pext_u32(_mm256_movemask_epi8(le) as u32, 0x5555_5555)
}

/// Scans rows `rows` (start on a block boundary) of the packed column.
#[target_feature(enable = "avx2,bmi2")]
pub(crate) fn scan_avx2<S: Sink>(
    packed: &[u8],
    m: usize,
    rows: Range<usize>,
    ql: &QuantLut<'_>,
    sink: &mut S,
) {
    let bb = block_bytes(m);
    let (q, _) = ql.q.as_chunks::<32>();
    let mut tq = ql.q_bound(sink.bound());
    let mut tv = _mm256_set1_epi16(tq as i16);
    for b in rows.start / BLOCK_ROWS..rows.end.div_ceil(BLOCK_ROWS) {
        let Some(blk) = packed.get(b * bb..(b + 1) * bb) else {
            return;
        };
        let (blk, _) = blk.as_chunks::<32>();
        let (x, y) = block_sums(blk, q);
        let pass = le_mask(x, tv) | (le_mask(y, tv) << 16);
        if pass != 0 {
            tq = ql.rescore(packed, b, pass, rows.end, sink);
            tv = _mm256_set1_epi16(tq as i16);
        }
    }
}
