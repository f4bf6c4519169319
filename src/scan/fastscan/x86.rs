//! x86 fast-scan kernels. Integer sums: identical to the scalar twin.
//!
//! **AVX2**: per block of 32 rows, each pair of sub-quantisers is one 32-byte load; its low and
//! high nibble planes index the pair's two u8 tables (one register, one table per 128-bit lane)
//! with `vpshufb`; the lookups of four loads are added as bytes before they are widened into
//! u16 accumulators (as the AVX-512 kernel does, below). The kernel takes one nibble plane
//! (16 rows) at a time for up to [`GROUP_AVX2`] = 4 queries, so every accumulator stays in the
//! 16 ymm registers, and compares the sums with the quantised bounds in registers.
//!
//! **AVX-512 (BW)**: four sub-quantisers per 64-byte load, their four tables in one register
//! (one per 128-bit lane, so `vpshufb zmm` looks all four up at once). The lookups of up to
//! four loads (16 sub-quantisers) are added as bytes — table entries are at most
//! [`super::quant_lut::LEVELS`] = 63, so four sum to at most 252 — and only then widened: the bytes are
//! added as u16 words (`even + 256·odd`) and, shifted right by 8, as the odd bytes alone;
//! `even = words − 256·odd` at the end of the block, exact in u16 arithmetic because the true
//! sums stay below 2¹⁶ (FAISS's fast-scan accumulators use the same trick). Per 256 bytes of
//! codes and query that is 8 shuffles, 6 byte adds and 6 widening operations, against 32
//! shuffles/unpacks and 32 adds for AVX2. The kernel scores up to [`GROUP`] queries per pass:
//! the nibble planes are split once per load and looked up in each query's tables, so several
//! queries cost little more than one in loads and bit operations.

use core::arch::x86_64::*;
use std::ops::Range;

use super::layout::{BLOCK_ROWS, block_bytes};
use super::quant_lut::QuantLut;
use crate::scan::rows::Sink;

#[inline]
#[target_feature(enable = "avx2")]
fn load(a: &[u8; 32]) -> __m256i {
    // SAFETY: `a` is 32 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm256_loadu_si256(a.as_ptr().cast()) }
}

/// Which rows of one nibble plane of a block (rows 0-15: low nibbles, `HI` = false; rows
/// 16-31: high nibbles) have a quantised sum `<= t[i]`, for each of the `Q` queries.
///
/// Each 32-byte load is a pair of sub-quantisers (lane = which one); its nibble plane indexes
/// the pair's two u8 tables (one register, one table per 128-bit lane) with `vpshufb`. The
/// lookups of four loads (8 sub-quantisers) are added as bytes — entries are at most
/// [`super::quant_lut::LEVELS`] = 63, so four sum to at most 252 — and only then widened, as u16 words
/// (`even row + 256·odd row`) and, shifted right by 8, as the odd rows alone; the even rows
/// are `words − 256·odd` at the end, exact in u16 arithmetic because the true sums stay below
/// 2¹⁶ (the AVX-512 kernel's trick, and FAISS's; André et al., VLDB 2015, §4.3). Per load and
/// query that is 1 shuffle and 1 byte add, per four loads and query 1 shift and 2 word adds;
/// the nibble split (1 AND, and 1 shift for the high plane) is shared by the queries.
///
/// The kernel is bound by the vector ALUs' throughput, not by a latency or the loads: on AMD
/// Zen 4 its cycles per block matched its vector ALU µops over the four FP pipes whatever the
/// number of table loads (loading each table once for both planes, or once for two blocks,
/// ran at the same speed). So the work per query is what counts, and the nibble split is the
/// part that more queries per pass divide: per block and query it is 24 of about 115 vector
/// µops at 2 queries, 12 of about 105 at 4. Order matters for the 16 ymm registers: per group of four
/// loads the four index vectors are made first, then each query sums its four lookups and
/// widens them into its two accumulators, so a query needs 2 registers across the loop and
/// the group 8 + 4 + 2 at [`GROUP_AVX2`] = 4 (with the lookups added load by load, as the
/// AVX-512 kernel does, 4 queries held 12 accumulators and spilled). On AMD Zen 4 at N = 10⁶,
/// nq = 16 and 256, 4 queries per pass scanned 1.05-1.11× (M = 32) and 1.03-1.14× (M = 16) the
/// rows per second of 2 queries per pass (BENCHMARKS.md, "Scans vs FAISS").
///
/// One plane at a time, not both: both planes per table load need 4 accumulators and 2 byte
/// sums per query, which at 2 queries already filled the registers; the codes are loaded
/// twice per block instead, from L1.
///
/// Returns per query the `vpmovmskb` of the packed compare: bits 0-7 = rows 0, 2, …, 14 of
/// the plane, bits 16-23 = rows 1, 3, …, 15 (the other bits cleared); [`row_order`] turns the
/// two planes' masks into row order.
///
/// `C` = 0: any number of loads per block; otherwise exactly `C` (the loops then unroll). The
/// codes' and tables' addresses are offset by an [`opaque_zero`] once per plane: without
/// it LLVM hoisted the loop-invariant table loads and the other plane's nibble split out of
/// the block loop and spilled them to the stack (perf annotate, AMD Zen 4: a quarter of the
/// cycles on stack stores and reloads), which is slower than reloading the tables from L1. A
/// block whose loads do not match `C` (never produced by [`group_avx2`]) passes every row,
/// which re-scoring then decides exactly.
#[inline]
#[target_feature(enable = "avx2")]
fn plane_masks<const Q: usize, const HI: bool, const C: usize>(
    blk: &[[u8; 32]],
    tabs: &[[[u8; 32]; Q]],
    t: &[__m256i; Q],
) -> [u32; Q] {
    let z = opaque_zero();
    let n = if C != 0 { C } else { blk.len() };
    let (Some(blk), Some(tabs)) = (blk.get(z..z + n), tabs.get(z..z + n)) else {
        return [u32::MAX; Q];
    };
    let low = _mm256_set1_epi8(0x0f);
    let zero = _mm256_setzero_si256();
    // The nibbles of one load: the `vpshufb` indices of its 32 bytes.
    let index = |codes: &[u8; 32]| {
        let v = load(codes);
        if HI {
            _mm256_and_si256(_mm256_srli_epi16::<4>(v), low)
        } else {
            _mm256_and_si256(v, low)
        }
    };
    let look = |tab: &[u8; 32], idx: __m256i| _mm256_shuffle_epi8(load(tab), idx);
    // u16 words `even + 256·odd` (mod 2¹⁶) and the odd rows alone.
    let (mut words, mut odd) = ([zero; Q], [zero; Q]);
    for g in 0..n.div_ceil(4) {
        let j = 4 * g;
        let bytes: [__m256i; Q] = if j + 4 <= n {
            // Four loads: their indices first, then each query's four lookups.
            let x = [
                index(&blk[j]),
                index(&blk[j + 1]),
                index(&blk[j + 2]),
                index(&blk[j + 3]),
            ];
            core::array::from_fn(|i| {
                _mm256_add_epi8(
                    _mm256_add_epi8(look(&tabs[j][i], x[0]), look(&tabs[j + 1][i], x[1])),
                    _mm256_add_epi8(look(&tabs[j + 2][i], x[2]), look(&tabs[j + 3][i], x[3])),
                )
            })
        } else {
            // The last one to three loads of a block (`C` = 0 only).
            let mut bytes = [zero; Q];
            for (c, t) in blk[j..].iter().zip(&tabs[j..]) {
                let x = index(c);
                for (b, tab) in bytes.iter_mut().zip(t) {
                    *b = _mm256_add_epi8(*b, look(tab, x));
                }
            }
            bytes
        };
        for i in 0..Q {
            if g == 0 {
                words[i] = bytes[i];
                odd[i] = _mm256_srli_epi16::<8>(bytes[i]);
            } else {
                words[i] = _mm256_add_epi16(words[i], bytes[i]);
                odd[i] = _mm256_add_epi16(odd[i], _mm256_srli_epi16::<8>(bytes[i]));
            }
        }
    }
    core::array::from_fn(|i| {
        // Lane L of `even` / `odd`: the even / odd rows over the sub-quantisers j ≡ L (mod 2).
        let even = _mm256_sub_epi16(words[i], _mm256_slli_epi16::<8>(odd[i]));
        // [even rows | odd rows], each summed over both lanes' sub-quantisers.
        let sums = _mm256_add_epi16(
            _mm256_permute2x128_si256::<0x20>(even, odd[i]),
            _mm256_permute2x128_si256::<0x31>(even, odd[i]),
        );
        // Signed compare: sums and bounds are below 2¹⁵ (see [`bound_vector`]).
        let gt = _mm256_cmpgt_epi16(sums, t[i]);
        // Bytes [words 0-7, words 0-7 | words 8-15, words 8-15]: one bit per row that fails.
        !(_mm256_movemask_epi8(_mm256_packs_epi16(gt, gt)) as u32) & 0x00ff_00ff
    })
}

/// Zero, opaque to the optimiser, so that the block's addresses computed from it are new in
/// every call: LLVM cannot hoist the loop-invariant table loads and the other plane's nibble
/// split out of the block loop (where they spill, see [`plane_masks`]). An empty `asm!` costs
/// one register move per plane where [`core::hint::black_box`] of the two slices stored and
/// reloaded four words.
#[inline(always)]
fn opaque_zero() -> usize {
    let mut z = 0usize;
    // SAFETY: the template is empty: no instruction runs, no memory or flag is touched; the
    // compiler only forgets that `z` is zero.
    unsafe {
        core::arch::asm!("/* {0} */", inout(reg) z, options(nomem, nostack, preserves_flags))
    };
    z
}

/// The bound `tq` broadcast for [`plane_masks`]' signed compare: a row's sum is at most
/// `LEVELS · M2 ≤ 63 · 256 < 2¹⁵`, so a bound clamped to `i16::MAX` keeps every row a larger
/// bound keeps, and the signed `vpcmpgtw` replaces the unsigned `min` + `cmpeq` pair.
#[inline]
#[target_feature(enable = "avx2")]
fn bound_vector(tq: u16) -> __m256i {
    _mm256_set1_epi16(tq.min(i16::MAX as u16) as i16)
}

/// Bits 0-7 of `x` moved to the even bits 0, 2, …, 14.
#[inline]
fn spread8(x: u32) -> u32 {
    let x = x & 0xff;
    let x = (x | (x << 4)) & 0x0f0f;
    let x = (x | (x << 2)) & 0x3333;
    (x | (x << 1)) & 0x5555
}

/// The block's mask in row order (bit i = row i) from the [`plane_masks`] of the low (rows
/// 0-15) and high (rows 16-31) nibble planes. Only runs when some row passed.
#[inline]
fn row_order(lo: u32, hi: u32) -> u32 {
    let plane = |m: u32| spread8(m) | (spread8(m >> 16) << 1);
    plane(lo) | (plane(hi) << 16)
}

/// Most queries the AVX2 kernel scores per pass over a block (see [`plane_masks`]).
pub(crate) const GROUP_AVX2: usize = 4;

/// The tables of a group of queries interleaved for [`scan_avx2`]: entry `Q j + i` is query
/// `i`'s two u8 tables of load `j` (`Q` = `qls.len()`), so one block's loads walk the group's
/// tables in order. Made once per batch: it is the same for every block.
pub(crate) fn interleave_avx2(qls: &[QuantLut<'_>], m: usize) -> Vec<[u8; 32]> {
    let n = block_bytes(m) / 32;
    let q = qls.len();
    let mut tabs = vec![[0u8; 32]; n * q];
    for (i, ql) in qls.iter().enumerate() {
        for (j, t) in ql.q.as_chunks::<32>().0.iter().take(n).enumerate() {
            tabs[q * j + i] = *t;
        }
    }
    tabs
}

/// Scans rows `rows` (start on a block boundary) of the packed column for `Q` queries at once
/// (`Q` = `qls.len()` = `sinks.len()`, 1 to [`GROUP_AVX2`]; `tabs` from [`interleave_avx2`]
/// of `qls`).
#[target_feature(enable = "avx2")]
pub(crate) fn scan_avx2<S: Sink>(
    packed: &[u8],
    m: usize,
    rows: Range<usize>,
    qls: &[QuantLut<'_>],
    tabs: &[[u8; 32]],
    sinks: &mut [S],
) {
    // Blocks of 4, 8, 12 or 16 loads (M = 8, 16, 24, 32) run a kernel with the load count
    // fixed at compile time: the loops unroll and no bounds check or counter runs per load.
    let loads = block_bytes(m) / 32;
    match (qls.len().min(sinks.len()), loads) {
        (0, _) => {}
        (1, 4) => group_avx2::<S, 1, 4>(packed, m, rows, qls, tabs, sinks),
        (1, 8) => group_avx2::<S, 1, 8>(packed, m, rows, qls, tabs, sinks),
        (1, 12) => group_avx2::<S, 1, 12>(packed, m, rows, qls, tabs, sinks),
        (1, 16) => group_avx2::<S, 1, 16>(packed, m, rows, qls, tabs, sinks),
        (2, 4) => group_avx2::<S, 2, 4>(packed, m, rows, qls, tabs, sinks),
        (2, 8) => group_avx2::<S, 2, 8>(packed, m, rows, qls, tabs, sinks),
        (2, 12) => group_avx2::<S, 2, 12>(packed, m, rows, qls, tabs, sinks),
        (2, 16) => group_avx2::<S, 2, 16>(packed, m, rows, qls, tabs, sinks),
        (3, 4) => group_avx2::<S, 3, 4>(packed, m, rows, qls, tabs, sinks),
        (3, 8) => group_avx2::<S, 3, 8>(packed, m, rows, qls, tabs, sinks),
        (3, 12) => group_avx2::<S, 3, 12>(packed, m, rows, qls, tabs, sinks),
        (3, 16) => group_avx2::<S, 3, 16>(packed, m, rows, qls, tabs, sinks),
        (4, 4) => group_avx2::<S, 4, 4>(packed, m, rows, qls, tabs, sinks),
        (4, 8) => group_avx2::<S, 4, 8>(packed, m, rows, qls, tabs, sinks),
        (4, 12) => group_avx2::<S, 4, 12>(packed, m, rows, qls, tabs, sinks),
        (4, 16) => group_avx2::<S, 4, 16>(packed, m, rows, qls, tabs, sinks),
        (1, _) => group_avx2::<S, 1, 0>(packed, m, rows, qls, tabs, sinks),
        (2, _) => group_avx2::<S, 2, 0>(packed, m, rows, qls, tabs, sinks),
        (3, _) => group_avx2::<S, 3, 0>(packed, m, rows, qls, tabs, sinks),
        (4, _) => group_avx2::<S, 4, 0>(packed, m, rows, qls, tabs, sinks),
        _ => {
            for (ql, sink) in qls.chunks(GROUP_AVX2).zip(sinks.chunks_mut(GROUP_AVX2)) {
                let tabs = interleave_avx2(ql, m);
                scan_avx2(packed, m, rows.clone(), ql, &tabs, sink);
            }
        }
    }
}

/// [`scan_avx2`] for exactly `Q` queries and blocks of `C` 32-byte loads (`C` = 0: any count,
/// read from `m`). Same sums, same order and same masks for every `C`.
#[inline]
#[target_feature(enable = "avx2")]
fn group_avx2<S: Sink, const Q: usize, const C: usize>(
    packed: &[u8],
    m: usize,
    rows: Range<usize>,
    qls: &[QuantLut<'_>],
    tabs: &[[u8; 32]],
    sinks: &mut [S],
) {
    let (Some(qls), Some(sinks)) = (qls.get(..Q), sinks.get_mut(..Q)) else {
        return;
    };
    let n = block_bytes(m) / 32;
    if C != 0 && C != n {
        return;
    }
    let n = if C != 0 { C } else { n };
    // The group's tables interleaved: entry `j` holds the `Q` queries' tables of load `j`.
    let (tabs, _) = tabs.as_chunks::<Q>();
    if tabs.len() != n {
        return;
    }
    let (chunks, _) = packed.as_chunks::<32>();
    let mut tv: [__m256i; Q] =
        core::array::from_fn(|i| bound_vector(qls[i].q_bound(sinks[i].bound())));
    for b in rows.start / BLOCK_ROWS..rows.end.div_ceil(BLOCK_ROWS) {
        let Some(blk) = chunks.get(b * n..(b + 1) * n) else {
            return;
        };
        let lo = plane_masks::<Q, false, C>(blk, tabs, &tv);
        let hi = plane_masks::<Q, true, C>(blk, tabs, &tv);
        for i in 0..Q {
            if (lo[i] | hi[i]) != 0 {
                let pass = row_order(lo[i], hi[i]);
                let tq = qls[i].rescore(packed, b, pass, rows.end, &mut sinks[i]);
                tv[i] = bound_vector(tq);
            }
        }
    }
}

/// Most queries the AVX-512 kernel scores per pass over a block: 4 accumulators each, so 4
/// queries use 16 of the 32 vector registers next to the codes, nibble planes and bounds.
pub(crate) const GROUP: usize = 4;

/// Loads 64 bytes.
#[inline]
#[target_feature(enable = "avx512f")]
fn load64(a: &[u8; 64]) -> __m512i {
    // SAFETY: `a` is 64 readable bytes; `loadu` has no alignment requirement.
    unsafe { _mm512_loadu_si512(a.as_ptr().cast()) }
}

/// Loads 32 bytes into the low half of a register, the high half zero.
#[inline]
#[target_feature(enable = "avx512f,avx2")]
fn load32z(a: &[u8; 32]) -> __m512i {
    _mm512_zextsi256_si512(load(a))
}

/// One query's block sums in the AVX-512 kernel: u16 words of the low-nibble (rows 0-15) and
/// high-nibble (rows 16-31) lookups, and the same shifted right by 8 (the odd rows alone).
#[derive(Clone, Copy)]
struct Acc {
    lo: __m512i,
    lo_odd: __m512i,
    hi: __m512i,
    hi_odd: __m512i,
}

impl Acc {
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn zero() -> Acc {
        let z = _mm512_setzero_si512();
        Acc {
            lo: z,
            lo_odd: z,
            hi: z,
            hi_odd: z,
        }
    }

    /// Adds byte sums `lo` (rows 0-15) and `hi` (rows 16-31) of lookups.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn add(&mut self, lo: __m512i, hi: __m512i) {
        self.lo = _mm512_add_epi16(self.lo, lo);
        self.lo_odd = _mm512_add_epi16(self.lo_odd, _mm512_srli_epi16::<8>(lo));
        self.hi = _mm512_add_epi16(self.hi, hi);
        self.hi_odd = _mm512_add_epi16(self.hi_odd, _mm512_srli_epi16::<8>(hi));
    }

    /// Which of the 32 rows have a sum `<= t` (u16 lanes of `t`), as a mask in the order
    /// `[even rows 0-14, odd rows 1-15, even rows 16-30, odd rows 17-31]` ([`row_mask`]
    /// turns it into row order). Lane `L` (128 bits) of each accumulator holds the
    /// sub-quantisers `j ≡ L (mod 4)`; word `w` of the low accumulators is rows `2w` and
    /// `2w + 1`, of the high ones rows `16 + 2w` and `17 + 2w`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn within(&self, t: __m512i) -> u32 {
        // [lo0 + lo2, lo1 + lo3, odd0 + odd2, odd1 + odd3] (128-bit lanes), then the same
        // for the high rows; then the four lane sums [Σlo, Σodd, Σhi, Σhi_odd].
        let s = _mm512_add_epi16(
            _mm512_shuffle_i64x2::<0b01_00_01_00>(self.lo, self.lo_odd),
            _mm512_shuffle_i64x2::<0b11_10_11_10>(self.lo, self.lo_odd),
        );
        let s2 = _mm512_add_epi16(
            _mm512_shuffle_i64x2::<0b01_00_01_00>(self.hi, self.hi_odd),
            _mm512_shuffle_i64x2::<0b11_10_11_10>(self.hi, self.hi_odd),
        );
        let v = _mm512_add_epi16(
            _mm512_shuffle_i64x2::<0b10_00_10_00>(s, s2),
            _mm512_shuffle_i64x2::<0b11_01_11_01>(s, s2),
        );
        // Even rows: the words minus 256 × the odd bytes, in lanes 0 and 2 (mod 2¹⁶, exact
        // because the true sums are below 2¹⁶).
        let v256 = _mm512_slli_epi16::<8>(v);
        let odd256 = _mm512_shuffle_i64x2::<0b11_11_01_01>(v256, v256);
        let sums = _mm512_mask_sub_epi16(v, 0x00ff_00ff, v, odd256);
        _mm512_cmple_epu16_mask(sums, t)
    }
}

/// A [`Acc::within`] mask in row order (bit `i` = row `i` of the block).
#[inline]
#[target_feature(enable = "bmi2")]
fn row_mask(m: u32) -> u32 {
    _pdep_u32(_pext_u32(m, 0x00ff_00ff), 0x5555_5555)
        | _pdep_u32(_pext_u32(m, 0xff00_ff00), 0xaaaa_aaaa)
}

/// AVX-512 scan of rows `rows` (start on a block boundary) for `Q` queries at once (`Q` =
/// `qls.len()` = `sinks.len()`, 1 to [`GROUP`]).
#[target_feature(enable = "avx512f,avx512bw,avx2,bmi2")]
pub(crate) fn scan_avx512<S: Sink>(
    packed: &[u8],
    m: usize,
    rows: Range<usize>,
    qls: &[QuantLut<'_>],
    sinks: &mut [S],
) {
    let bb = block_bytes(m);
    // Blocks of whole 64-byte chunks (M2 a multiple of 4) at the common widths run a kernel
    // with the chunk count fixed at compile time.
    let chunks = if bb.is_multiple_of(64) { bb / 64 } else { 0 };
    match (qls.len().min(sinks.len()), chunks) {
        (1, 2) => fixed_avx512::<S, 1, 2>(packed, rows, qls, sinks),
        (1, 4) => fixed_avx512::<S, 1, 4>(packed, rows, qls, sinks),
        (1, 6) => fixed_avx512::<S, 1, 6>(packed, rows, qls, sinks),
        (1, 8) => fixed_avx512::<S, 1, 8>(packed, rows, qls, sinks),
        (2, 2) => fixed_avx512::<S, 2, 2>(packed, rows, qls, sinks),
        (2, 4) => fixed_avx512::<S, 2, 4>(packed, rows, qls, sinks),
        (2, 6) => fixed_avx512::<S, 2, 6>(packed, rows, qls, sinks),
        (2, 8) => fixed_avx512::<S, 2, 8>(packed, rows, qls, sinks),
        (3, 2) => fixed_avx512::<S, 3, 2>(packed, rows, qls, sinks),
        (3, 4) => fixed_avx512::<S, 3, 4>(packed, rows, qls, sinks),
        (3, 6) => fixed_avx512::<S, 3, 6>(packed, rows, qls, sinks),
        (3, 8) => fixed_avx512::<S, 3, 8>(packed, rows, qls, sinks),
        (4, 2) => fixed_avx512::<S, 4, 2>(packed, rows, qls, sinks),
        (4, 4) => fixed_avx512::<S, 4, 4>(packed, rows, qls, sinks),
        (4, 6) => fixed_avx512::<S, 4, 6>(packed, rows, qls, sinks),
        (4, 8) => fixed_avx512::<S, 4, 8>(packed, rows, qls, sinks),
        (1, _) => group_avx512::<S, 1>(packed, m, rows, qls, sinks),
        (2, _) => group_avx512::<S, 2>(packed, m, rows, qls, sinks),
        (3, _) => group_avx512::<S, 3>(packed, m, rows, qls, sinks),
        (4, _) => group_avx512::<S, 4>(packed, m, rows, qls, sinks),
        _ => {
            for (ql, sink) in qls.chunks(GROUP).zip(sinks.chunks_mut(GROUP)) {
                scan_avx512(packed, m, rows.clone(), ql, sink);
            }
        }
    }
}

/// [`scan_avx512`] for exactly `Q` queries.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx2,bmi2")]
fn group_avx512<S: Sink, const Q: usize>(
    packed: &[u8],
    m: usize,
    rows: Range<usize>,
    qls: &[QuantLut<'_>],
    sinks: &mut [S],
) {
    let (Some(qls), Some(sinks)) = (qls.get(..Q), sinks.get_mut(..Q)) else {
        return;
    };
    let bb = block_bytes(m);
    let n64 = bb / 64;
    // Each query's tables: `n64` chunks of four, then (M2 ≡ 2 mod 4) one of two.
    let t64: [&[[u8; 64]]; Q] = core::array::from_fn(|i| qls[i].q.as_chunks::<64>().0);
    let t32: [__m512i; Q] = core::array::from_fn(|i| {
        let rest = qls[i].q.get(n64 * 64..).unwrap_or(&[]);
        rest.as_chunks::<32>()
            .0
            .first()
            .map_or(_mm512_setzero_si512(), |t| load32z(t))
    });
    if t64.iter().any(|t| t.len() != n64) {
        return;
    }
    let low = _mm512_set1_epi8(0x0f);
    let mut tq: [u16; Q] = core::array::from_fn(|i| qls[i].q_bound(sinks[i].bound()));
    let mut tv: [__m512i; Q] = core::array::from_fn(|i| _mm512_set1_epi16(tq[i] as i16));
    for b in rows.start / BLOCK_ROWS..rows.end.div_ceil(BLOCK_ROWS) {
        let Some(blk) = packed.get(b * bb..(b + 1) * bb) else {
            return;
        };
        let (c64, rest) = blk.as_chunks::<64>();
        let mut acc = [Acc::zero(); Q];
        // Groups of four loads: their lookups add in bytes (4 × 63 ≤ 255), then widen once.
        for (gi, grp) in c64.chunks(4).enumerate() {
            let mut lo = [_mm512_setzero_si512(); Q];
            let mut hi = [_mm512_setzero_si512(); Q];
            for (ci, v) in grp.iter().enumerate() {
                let v = load64(v);
                let lo_idx = _mm512_and_si512(v, low);
                let hi_idx = _mm512_and_si512(_mm512_srli_epi16::<4>(v), low);
                for i in 0..Q {
                    if let Some(t) = t64[i].get(4 * gi + ci) {
                        let t = load64(t);
                        lo[i] = _mm512_add_epi8(lo[i], _mm512_shuffle_epi8(t, lo_idx));
                        hi[i] = _mm512_add_epi8(hi[i], _mm512_shuffle_epi8(t, hi_idx));
                    }
                }
            }
            for i in 0..Q {
                acc[i].add(lo[i], hi[i]);
            }
        }
        if let Some(v) = rest.as_chunks::<32>().0.first() {
            let v = load32z(v);
            let lo_idx = _mm512_and_si512(v, low);
            let hi_idx = _mm512_and_si512(_mm512_srli_epi16::<4>(v), low);
            for (a, &t) in acc.iter_mut().zip(&t32) {
                a.add(
                    _mm512_shuffle_epi8(t, lo_idx),
                    _mm512_shuffle_epi8(t, hi_idx),
                );
            }
        }
        // All masks first, so no accumulator lives across a re-scoring call (the rare path).
        let pass: [u32; Q] = core::array::from_fn(|i| acc[i].within(tv[i]));
        if pass.iter().any(|&p| p != 0) {
            for i in 0..Q {
                if pass[i] != 0 {
                    let pass = row_mask(pass[i]);
                    tq[i] = qls[i].rescore(packed, b, pass, rows.end, &mut sinks[i]);
                    tv[i] = _mm512_set1_epi16(tq[i] as i16);
                }
            }
        }
    }
}

/// [`group_avx512`] for blocks of exactly `C` 64-byte chunks (M2 = 4C: M = 8, 16, 24, 32).
/// With `C` a constant the chunk loops unroll, the single query's tables stay in registers and
/// no bounds check or loop counter runs per chunk: at M = 16 the generic loop spent a third of
/// its cycles on that overhead (perf annotate, AMD Zen 4). Same sums, same order, same masks.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx2,bmi2")]
fn fixed_avx512<S: Sink, const Q: usize, const C: usize>(
    packed: &[u8],
    rows: Range<usize>,
    qls: &[QuantLut<'_>],
    sinks: &mut [S],
) {
    let (Some(qls), Some(sinks)) = (qls.get(..Q), sinks.get_mut(..Q)) else {
        return;
    };
    let mut t = [[_mm512_setzero_si512(); C]; Q];
    for (ti, ql) in t.iter_mut().zip(qls.iter()) {
        let (tables, _) = ql.q.as_chunks::<64>();
        if tables.len() != C {
            return;
        }
        for (r, tab) in ti.iter_mut().zip(tables) {
            *r = load64(tab);
        }
    }
    let (chunks, _) = packed.as_chunks::<64>();
    let low = _mm512_set1_epi8(0x0f);
    let mut tq: [u16; Q] = core::array::from_fn(|i| qls[i].q_bound(sinks[i].bound()));
    let mut tv: [__m512i; Q] = core::array::from_fn(|i| _mm512_set1_epi16(tq[i] as i16));
    for b in rows.start / BLOCK_ROWS..rows.end.div_ceil(BLOCK_ROWS) {
        let Some(blk) = chunks.get(b * C..(b + 1) * C) else {
            return;
        };
        let Ok(blk) = <&[[u8; 64]; C]>::try_from(blk) else {
            return;
        };
        let mut acc = [Acc::zero(); Q];
        // Groups of four chunks: their lookups add in bytes (4 × 63 ≤ 255), then widen once.
        for g in 0..C.div_ceil(4) {
            let mut lo = [_mm512_setzero_si512(); Q];
            let mut hi = [_mm512_setzero_si512(); Q];
            for ci in 4 * g..(4 * g + 4).min(C) {
                let v = load64(&blk[ci]);
                let lo_idx = _mm512_and_si512(v, low);
                let hi_idx = _mm512_and_si512(_mm512_srli_epi16::<4>(v), low);
                for i in 0..Q {
                    lo[i] = _mm512_add_epi8(lo[i], _mm512_shuffle_epi8(t[i][ci], lo_idx));
                    hi[i] = _mm512_add_epi8(hi[i], _mm512_shuffle_epi8(t[i][ci], hi_idx));
                }
            }
            for i in 0..Q {
                acc[i].add(lo[i], hi[i]);
            }
        }
        let pass: [u32; Q] = core::array::from_fn(|i| acc[i].within(tv[i]));
        if pass.iter().any(|&p| p != 0) {
            for i in 0..Q {
                if pass[i] != 0 {
                    let pass = row_mask(pass[i]);
                    tq[i] = qls[i].rescore(packed, b, pass, rows.end, &mut sinks[i]);
                    tv[i] = _mm512_set1_epi16(tq[i] as i16);
                }
            }
        }
    }
}
