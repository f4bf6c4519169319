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

/// AVX2 LUT-8 scan of up to 8 queries at once, one query per lane (no gathers).
///
/// `t` holds the queries' tables interleaved (see [`super::entry::QueryLanes`]): entry `j * 256 + v`
/// is the 8 queries' table-`j` entry for code byte value `v`, so one 32-byte load and one
/// `vaddps` add a code byte's term for all 8 queries. Rows go four at a time (four independent
/// accumulator chains; eight measured slower on AMD Zen 3). Lane `l` adds its entries in
/// ascending `j` starting from `0.0`, exactly like the scalar twin [`scalar::score8`], so every
/// query's scores are bit-identical to running it alone. `sinks[l]` collects query `l`;
/// lanes past `sinks.len()` hold zero tables and a `-∞` bound, so they never offer.
#[target_feature(enable = "avx2,fma")]
pub(crate) fn scan8_lanes_avx2<S: Sink>(
    codes: &[u8],
    base: usize,
    m: usize,
    t: &[[f32; 8]],
    sinks: &mut [&mut S],
) {
    debug_assert!(sinks.len() <= 8 && t.len() == m * 256);
    if m == 0 || t.len() != m * 256 || sinks.len() > 8 {
        return;
    }
    match m {
        8 => lanes_rows::<1, S>(codes, base, m, t, sinks),
        16 => lanes_rows::<2, S>(codes, base, m, t, sinks),
        24 => lanes_rows::<3, S>(codes, base, m, t, sinks),
        32 => lanes_rows::<4, S>(codes, base, m, t, sinks),
        _ => lanes_rows::<0, S>(codes, base, m, t, sinks),
    }
}

/// The lane bounds of `sinks` as a vector (`-∞` for unused lanes) and as an array.
#[inline]
#[target_feature(enable = "avx2")]
fn lane_bounds<S: Sink>(sinks: &[&mut S]) -> ([f32; 8], __m256) {
    let b: [f32; 8] = core::array::from_fn(|l| {
        sinks
            .get(l)
            .map_or(f32::NEG_INFINITY, |s| bound_score(s.bound()))
    });
    (b, bytemuck::cast(b))
}

/// Offers `acc`'s lanes (query `l`'s score of row `row`) that are within their bound.
#[inline]
#[target_feature(enable = "avx2")]
fn offer_lanes8<S: Sink>(
    sinks: &mut [&mut S],
    acc: __m256,
    row: usize,
    bounds: &mut [f32; 8],
    bv: &mut __m256,
) {
    let mask = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(acc, *bv)) as u32;
    if mask != 0 {
        offer_lane_scores(sinks, &bytemuck::cast(acc), mask, row, bounds);
        *bv = bytemuck::cast(*bounds);
    }
}

/// The rare path of [`offer_lanes8`]: offers lane `l` of `scores` to `sinks[l]` for each bit
/// `l` of `mask`, updating that lane's bound.
#[inline(never)]
fn offer_lane_scores<S: Sink, const L: usize>(
    sinks: &mut [&mut S],
    scores: &[f32; L],
    mut mask: u32,
    row: usize,
    bounds: &mut [f32; L],
) {
    while mask != 0 {
        let l = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        if let (Some(sink), Some(&s), Some(b)) =
            (sinks.get_mut(l), scores.get(l), bounds.get_mut(l))
            && s <= *b
        {
            *b = bound_score(sink.offer(f32_to_key(s), row));
        }
    }
}

/// Body of [`scan8_lanes_avx2`]: rows of `8 * W` bytes read as u64 words when `W > 0`, rows of
/// `m` bytes read byte by byte when `W == 0`.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn lanes_rows<const W: usize, S: Sink>(
    codes: &[u8],
    base: usize,
    m: usize,
    t: &[[f32; 8]],
    sinks: &mut [&mut S],
) {
    const R: usize = 4;
    let n = codes.len() / m;
    let quads = n / R;
    let table = t.as_ptr().cast::<f32>();
    let (mut bounds, mut bv) = lane_bounds(sinks);
    for (g, rows) in codes.chunks_exact(R * m).take(quads).enumerate() {
        let mut acc = [_mm256_setzero_ps(); R];
        if W > 0 {
            let (words, _) = rows.as_chunks::<8>();
            for w in 0..W {
                let x: [u64; R] = core::array::from_fn(|i| {
                    words.get(i * W + w).map_or(0, |b| u64::from_le_bytes(*b))
                });
                for bi in 0..8 {
                    let j = 8 * w + bi;
                    for (a, &xi) in acc.iter_mut().zip(&x) {
                        let idx = j * 256 + ((xi >> (8 * bi)) & 0xff) as usize;
                        // SAFETY: j < 8W = m and the byte is < 256, so idx < m * 256 =
                        // t.len(); each entry is 8 contiguous f32.
                        let v = unsafe { _mm256_loadu_ps(table.add(idx * 8)) };
                        *a = _mm256_add_ps(*a, v);
                    }
                }
            }
        } else {
            for j in 0..m {
                for (i, a) in acc.iter_mut().enumerate() {
                    let byte = rows.get(i * m + j).copied().unwrap_or(0);
                    let idx = j * 256 + usize::from(byte);
                    // SAFETY: j < m and byte < 256, so idx < m * 256 = t.len().
                    let v = unsafe { _mm256_loadu_ps(table.add(idx * 8)) };
                    *a = _mm256_add_ps(*a, v);
                }
            }
        }
        for (i, &a) in acc.iter().enumerate() {
            offer_lanes8(sinks, a, base + g * R + i, &mut bounds, &mut bv);
        }
    }
    for (r, row) in codes.chunks_exact(m).enumerate().skip(quads * R) {
        let mut a = _mm256_setzero_ps();
        for (j, &byte) in row.iter().enumerate() {
            let idx = j * 256 + usize::from(byte);
            // SAFETY: j < m and byte < 256, so idx < m * 256 = t.len().
            let v = unsafe { _mm256_loadu_ps(table.add(idx * 8)) };
            a = _mm256_add_ps(a, v);
        }
        offer_lanes8(sinks, a, base + r, &mut bounds, &mut bv);
    }
}

/// AVX-512 LUT-8 scan of up to 16 queries at once: [`scan8_lanes_avx2`] with 16 lanes.
///
/// `t` holds 16 queries' tables interleaved (entry `j * 256 + v` is 64 bytes), so one 64-byte
/// load and one `vaddps zmm` add a code byte's term for 16 queries: per code byte and query half
/// the loads, adds and byte extractions of the 8-lane kernel. That only pays where 512-bit adds
/// run at full width (Intel Xeon, AMD Zen 5); on Zen 4 they split into two 256-bit halves and
/// the tables double (16 KiB per code byte), so `Dispatch::Auto` keeps the 8-lane kernel there
/// (see `lut8_kernel`). Lane `l` adds its entries in ascending `j` from `0.0`, exactly like the
/// scalar twin, so scores are bit-identical to running each query alone.
#[target_feature(enable = "avx512f,avx512bw,avx2,fma")]
pub(crate) fn scan8_lanes_avx512<S: Sink>(
    codes: &[u8],
    base: usize,
    m: usize,
    t: &[[f32; 16]],
    sinks: &mut [&mut S],
) {
    debug_assert!(sinks.len() <= 16 && t.len() == m * 256);
    if m == 0 || t.len() != m * 256 || sinks.len() > 16 {
        return;
    }
    const R: usize = 4;
    let n = codes.len() / m;
    let quads = n / R;
    let table = t.as_ptr().cast::<f32>();
    let add = |a: &mut __m512, j: usize, byte: u64| {
        let idx = j * 256 + (byte & 0xff) as usize;
        // SAFETY: j < m and the byte is < 256, so idx < m * 256 = t.len(); each entry is 16
        // contiguous f32. (The closure runs inside this avx512f function and is inlined.)
        *a = unsafe { _mm512_add_ps(*a, _mm512_loadu_ps(table.add(idx * 16))) };
    };
    let mut bounds: [f32; 16] = core::array::from_fn(|l| {
        sinks
            .get(l)
            .map_or(f32::NEG_INFINITY, |s| bound_score(s.bound()))
    });
    // SAFETY: `bounds` is 16 contiguous f32.
    let mut bv = unsafe { _mm512_loadu_ps(bounds.as_ptr()) };
    // Rows of a multiple of 8 bytes are read as u64 words (one load per 8 code bytes).
    let words_per_row = if m.is_multiple_of(8) { m / 8 } else { 0 };
    for (g, rows) in codes.chunks_exact(R * m).take(quads).enumerate() {
        let mut acc = [_mm512_setzero_ps(); R];
        if words_per_row > 0 {
            let (words, _) = rows.as_chunks::<8>();
            for w in 0..words_per_row {
                let x: [u64; R] = core::array::from_fn(|i| {
                    words
                        .get(i * words_per_row + w)
                        .map_or(0, |b| u64::from_le_bytes(*b))
                });
                for bi in 0..8 {
                    for (a, &xi) in acc.iter_mut().zip(&x) {
                        add(a, 8 * w + bi, xi >> (8 * bi));
                    }
                }
            }
        } else {
            for j in 0..m {
                for (i, a) in acc.iter_mut().enumerate() {
                    add(a, j, u64::from(rows.get(i * m + j).copied().unwrap_or(0)));
                }
            }
        }
        for (i, &a) in acc.iter().enumerate() {
            offer_lanes16(sinks, a, base + g * R + i, &mut bounds, &mut bv);
        }
    }
    for (r, row) in codes.chunks_exact(m).enumerate().skip(quads * R) {
        let mut a = _mm512_setzero_ps();
        for (j, &byte) in row.iter().enumerate() {
            add(&mut a, j, u64::from(byte));
        }
        offer_lanes16(sinks, a, base + r, &mut bounds, &mut bv);
    }
}

/// [`offer_lanes8`] for 16 lanes.
#[inline]
#[target_feature(enable = "avx512f")]
fn offer_lanes16<S: Sink>(
    sinks: &mut [&mut S],
    acc: __m512,
    row: usize,
    bounds: &mut [f32; 16],
    bv: &mut __m512,
) {
    let mask = u32::from(_mm512_cmp_ps_mask::<_CMP_LE_OQ>(acc, *bv));
    if mask != 0 {
        let mut scores = [0f32; 16];
        // SAFETY: `scores` and `bounds` are 16 contiguous f32 each.
        unsafe { _mm512_storeu_ps(scores.as_mut_ptr(), acc) };
        offer_lane_scores(sinks, &scores, mask, row, bounds);
        // SAFETY: as above.
        *bv = unsafe { _mm512_loadu_ps(bounds.as_ptr()) };
    }
}
