//! x86-64 LUT kernels.
//!
//! LUT-8: 8 (AVX2) or 16 (AVX-512) rows per step, one row per lane. The code bytes of the rows
//! are fetched 4 at a time (one u32 per row, inserted into a register; the last, partial group
//! re-reads the row's final 4 bytes), then each byte indexes its 256-entry table with an f32
//! gather. On AMD Zen 3 the gathers lose to the scalar kernel by 3-5×, so `Dispatch::Auto` runs
//! the scalar kernel for LUT-8 (see `lut/mod.rs`); these kernels run when asked for explicitly. LUT-4: the same code fetch, but each 16-entry table sits
//! in registers and is indexed with `vpermps` (two 8-entry halves and a blend on AVX2, one
//! `vpermps zmm` on AVX-512). In both, lane `i` adds its entries in ascending `j`, exactly like
//! the scalar twin, and the lane scores are compared with the collector's bound in registers.
//!
//! Rows after the last full step, and widths too small for a 4-byte fetch (< 4 code bytes), run
//! through the scalar twin.

use core::arch::x86_64::*;

use super::scalar::{self, bound_score};
use crate::scan::rows::Sink;
use crate::scan::topk::f32_to_key;

/// Largest row width the kernels take: keeps every gather offset and table index in `i32`.
const MAX_ROW_BYTES: usize = 1 << 20;

/// Offers the lanes set in `mask`; lane `l` is row `row0 + l`.
#[inline(never)]
fn offer_lanes<S: Sink, const L: usize>(
    sink: &mut S,
    scores: &[f32; L],
    mut mask: u32,
    row0: usize,
    mut bound: f32,
) -> f32 {
    while mask != 0 {
        let lane = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        if let Some(&s) = scores.get(lane)
            && s <= bound
        {
            bound = bound_score(sink.offer(f32_to_key(s), row0 + lane));
        }
    }
    bound
}

/// The 4-byte words a `row_bytes`-wide row (≥ 4) is fetched in, as `(offset, first)`: bytes
/// `offset + first .. offset + 4` of the word at `offset` are new. Full words at 0, 4, 8, …;
/// a partial last group re-reads the row's final 4 bytes and skips the ones already seen, so
/// bytes are visited once each, in ascending order.
fn word_plan(row_bytes: usize) -> Vec<(usize, usize)> {
    debug_assert!(row_bytes >= 4);
    let mut plan = Vec::with_capacity(row_bytes.div_ceil(4));
    let mut p = 0;
    while p < row_bytes {
        let off = p.min(row_bytes - 4);
        plan.push((off, p - off));
        p = off + 4;
    }
    plan
}

/// The little-endian u32 at byte `off` of each of the 8 rows of `group` (rows of `rb` bytes,
/// `off + 4 <= rb`), one row per lane. Eight scalar loads and inserts: on the CPUs measured
/// this beats a 32-bit gather, which is microcoded and slow on AMD Zen.
#[inline]
#[target_feature(enable = "avx2")]
fn fetch8(group: &[u8], rb: usize, off: usize) -> __m256i {
    let w = |i: usize| -> i32 {
        let at = i * rb + off;
        match group.get(at..at + 4) {
            Some(&[a, b, c, d]) => i32::from_le_bytes([a, b, c, d]),
            _ => 0,
        }
    };
    _mm256_setr_epi32(w(0), w(1), w(2), w(3), w(4), w(5), w(6), w(7))
}

/// As [`fetch8`] for the 16 rows of `group`.
#[inline]
#[target_feature(enable = "avx512f")]
fn fetch16(group: &[u8], rb: usize, off: usize) -> __m512i {
    let w = |i: usize| -> i32 {
        let at = i * rb + off;
        match group.get(at..at + 4) {
            Some(&[a, b, c, d]) => i32::from_le_bytes([a, b, c, d]),
            _ => 0,
        }
    };
    _mm512_setr_epi32(
        w(0),
        w(1),
        w(2),
        w(3),
        w(4),
        w(5),
        w(6),
        w(7),
        w(8),
        w(9),
        w(10),
        w(11),
        w(12),
        w(13),
        w(14),
        w(15),
    )
}

/// AVX2 LUT-8 scan of rows of `lut.len()` bytes, the first being row `base`.
#[target_feature(enable = "avx2,fma")]
pub(crate) fn scan8_avx2<S: Sink>(codes: &[u8], base: usize, lut: &[[f32; 256]], sink: &mut S) {
    let m = lut.len();
    if !(4..=MAX_ROW_BYTES).contains(&m) {
        return scalar::scan8(codes, base, lut, sink);
    }
    let n = codes.len() / m;
    let groups = n / 8;
    let plan = word_plan(m);
    let low8 = _mm256_set1_epi32(0xff);
    let table = lut.as_ptr().cast::<f32>();
    let mut bound = bound_score(sink.bound());
    let mut bv = _mm256_set1_ps(bound);
    for g in 0..groups {
        let group = &codes[g * 8 * m..(g + 1) * 8 * m];
        let mut acc = _mm256_setzero_ps();
        for &(off, first) in &plan {
            let words = fetch8(group, m, off);
            for b in first..4 {
                let pos = off + b;
                let byte = _mm256_and_si256(
                    _mm256_srl_epi32(words, _mm_cvtsi32_si128(8 * b as i32)),
                    low8,
                );
                let idx = _mm256_add_epi32(byte, _mm256_set1_epi32((pos * 256) as i32));
                // SAFETY: idx = pos*256 + byte with pos < m and byte < 256, inside the m*256
                // entries of `lut`.
                let v = unsafe { _mm256_i32gather_ps::<4>(table, idx) };
                acc = _mm256_add_ps(acc, v);
            }
        }
        let mask = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(acc, bv)) as u32;
        if mask != 0 {
            let scores: [f32; 8] = bytemuck::cast(acc);
            bound = offer_lanes(sink, &scores, mask, base + g * 8, bound);
            bv = _mm256_set1_ps(bound);
        }
    }
    let done = groups * 8;
    scalar::scan8(&codes[done * m..], base + done, lut, sink);
}

/// AVX-512 LUT-8 scan: as [`scan8_avx2`] with 16 rows per step.
#[target_feature(enable = "avx512f,avx512bw,avx2,fma")]
pub(crate) fn scan8_avx512<S: Sink>(codes: &[u8], base: usize, lut: &[[f32; 256]], sink: &mut S) {
    let m = lut.len();
    if !(4..=MAX_ROW_BYTES).contains(&m) {
        return scalar::scan8(codes, base, lut, sink);
    }
    let n = codes.len() / m;
    let groups = n / 16;
    let plan = word_plan(m);
    let low8 = _mm512_set1_epi32(0xff);
    let table = lut.as_ptr().cast::<f32>();
    let mut bound = bound_score(sink.bound());
    let mut bv = _mm512_set1_ps(bound);
    for g in 0..groups {
        let group = &codes[g * 16 * m..(g + 1) * 16 * m];
        let mut acc = _mm512_setzero_ps();
        for &(off, first) in &plan {
            let words = fetch16(group, m, off);
            for b in first..4 {
                let pos = off + b;
                let byte = _mm512_and_si512(
                    _mm512_srl_epi32(words, _mm_cvtsi32_si128(8 * b as i32)),
                    low8,
                );
                let idx = _mm512_add_epi32(byte, _mm512_set1_epi32((pos * 256) as i32));
                // SAFETY: idx = pos*256 + byte with pos < m and byte < 256, inside the m*256
                // entries of `lut`.
                let v = unsafe { _mm512_i32gather_ps::<4>(idx, table) };
                acc = _mm512_add_ps(acc, v);
            }
        }
        let mask = u32::from(_mm512_cmp_ps_mask::<_CMP_LE_OQ>(acc, bv));
        if mask != 0 {
            // SAFETY: __m512 and [f32; 16] have the same size; every bit pattern is valid.
            let scores: [f32; 16] = unsafe { core::mem::transmute::<__m512, [f32; 16]>(acc) };
            bound = offer_lanes(sink, &scores, mask, base + g * 16, bound);
            bv = _mm512_set1_ps(bound);
        }
    }
    let done = groups * 16;
    scalar::scan8(&codes[done * m..], base + done, lut, sink);
}

/// AVX2 LUT-4 scan of rows of `row_bytes` bytes holding `lut.len()` nibbles.
#[target_feature(enable = "avx2,fma")]
pub(crate) fn scan4_avx2<S: Sink>(
    codes: &[u8],
    row_bytes: usize,
    base: usize,
    lut: &[[f32; 16]],
    sink: &mut S,
) {
    let m = lut.len();
    if !(4..=MAX_ROW_BYTES).contains(&row_bytes) {
        return scalar::scan4(codes, row_bytes, base, lut, sink);
    }
    let n = codes.len() / row_bytes;
    let groups = n / 8;
    let plan = word_plan(row_bytes);
    let low4 = _mm256_set1_epi32(0x0f);
    let mut bound = bound_score(sink.bound());
    let mut bv = _mm256_set1_ps(bound);
    for g in 0..groups {
        let group = &codes[g * 8 * row_bytes..(g + 1) * 8 * row_bytes];
        let mut acc = _mm256_setzero_ps();
        for &(off, first) in &plan {
            let words = fetch8(group, row_bytes, off);
            for b in first..4 {
                let pos = off + b;
                for half in 0..2 {
                    let j = 2 * pos + half;
                    let Some(t) = lut.get(j) else { break };
                    let idx = _mm256_and_si256(
                        _mm256_srl_epi32(words, _mm_cvtsi32_si128((8 * b + 4 * half) as i32)),
                        low4,
                    );
                    let (lo_half, hi_half) = t.split_at(8);
                    // SAFETY: both halves hold exactly 8 f32.
                    let (tlo, thi) = unsafe {
                        (
                            _mm256_loadu_ps(lo_half.as_ptr()),
                            _mm256_loadu_ps(hi_half.as_ptr()),
                        )
                    };
                    let lo = _mm256_permutevar8x32_ps(tlo, idx);
                    let hi = _mm256_permutevar8x32_ps(thi, idx);
                    // Bit 3 of the index picks the upper half: move it to the sign bit for blendv.
                    let sel = _mm256_castsi256_ps(_mm256_slli_epi32::<28>(idx));
                    acc = _mm256_add_ps(acc, _mm256_blendv_ps(lo, hi, sel));
                }
            }
        }
        let mask = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(acc, bv)) as u32;
        if mask != 0 {
            let scores: [f32; 8] = bytemuck::cast(acc);
            bound = offer_lanes(sink, &scores, mask, base + g * 8, bound);
            bv = _mm256_set1_ps(bound);
        }
    }
    let done = groups * 8;
    debug_assert!(m <= 2 * row_bytes);
    scalar::scan4(
        &codes[done * row_bytes..],
        row_bytes,
        base + done,
        lut,
        sink,
    );
}

/// AVX-512 LUT-4 scan: 16 rows per step, each table one register indexed by `vpermps zmm`.
#[target_feature(enable = "avx512f,avx512bw,avx2,fma")]
pub(crate) fn scan4_avx512<S: Sink>(
    codes: &[u8],
    row_bytes: usize,
    base: usize,
    lut: &[[f32; 16]],
    sink: &mut S,
) {
    if !(4..=MAX_ROW_BYTES).contains(&row_bytes) {
        return scalar::scan4(codes, row_bytes, base, lut, sink);
    }
    let n = codes.len() / row_bytes;
    let groups = n / 16;
    let plan = word_plan(row_bytes);
    let low4 = _mm512_set1_epi32(0x0f);
    let mut bound = bound_score(sink.bound());
    let mut bv = _mm512_set1_ps(bound);
    for g in 0..groups {
        let group = &codes[g * 16 * row_bytes..(g + 1) * 16 * row_bytes];
        let mut acc = _mm512_setzero_ps();
        for &(off, first) in &plan {
            let words = fetch16(group, row_bytes, off);
            for b in first..4 {
                let pos = off + b;
                for half in 0..2 {
                    let j = 2 * pos + half;
                    let Some(t) = lut.get(j) else { break };
                    let idx = _mm512_and_si512(
                        _mm512_srl_epi32(words, _mm_cvtsi32_si128((8 * b + 4 * half) as i32)),
                        low4,
                    );
                    // SAFETY: `t` holds exactly 16 f32.
                    let tv = unsafe { _mm512_loadu_ps(t.as_ptr()) };
                    acc = _mm512_add_ps(acc, _mm512_permutexvar_ps(idx, tv));
                }
            }
        }
        let mask = u32::from(_mm512_cmp_ps_mask::<_CMP_LE_OQ>(acc, bv));
        if mask != 0 {
            // SAFETY: __m512 and [f32; 16] have the same size; every bit pattern is valid.
            let scores: [f32; 16] = unsafe { core::mem::transmute::<__m512, [f32; 16]>(acc) };
            bound = offer_lanes(sink, &scores, mask, base + g * 16, bound);
            bv = _mm512_set1_ps(bound);
        }
    }
    let done = groups * 16;
    scalar::scan4(
        &codes[done * row_bytes..],
        row_bytes,
        base + done,
        lut,
        sink,
    );
}
