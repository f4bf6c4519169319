//! x86-64 Hamming kernels: AVX2 (nibble-table popcount with `vpshufb`, summed with `vpsadbw`;
//! at 32 bytes a third of the rows use scalar `popcnt` on the integer ALUs meanwhile) and
//! AVX-512 VPOPCNTDQ (`vpopcntq`).
//!
//! Each kernel computes the distances of a group of rows in registers, compares them with the
//! sink's bound (the current k-th distance) in registers, and only leaves the hot loop when some
//! row of the group is within the bound. Widths of 8/16/32/64 bytes have their own layouts
//! (several rows per register, reduced with unpack/permute trees); other widths sum one row at
//! a time. Rows left over after the last full group run through the scalar twin.

use core::arch::x86_64::*;

use super::scalar;
use crate::scan::rows::Sink;

/// Loads 32 bytes at `off` of a fixed-size array.
#[inline]
#[target_feature(enable = "avx2")]
fn load256<const N: usize>(a: &[u8; N], off: usize) -> __m256i {
    assert!(off + 32 <= N);
    // SAFETY: the assert keeps `off..off + 32` inside the array; `loadu` has no alignment
    // requirement.
    unsafe { _mm256_loadu_si256(a.as_ptr().add(off).cast()) }
}

/// Loads 64 bytes at `off` of a fixed-size array.
#[inline]
#[target_feature(enable = "avx512f")]
fn load512<const N: usize>(a: &[u8; N], off: usize) -> __m512i {
    assert!(off + 64 <= N);
    // SAFETY: the assert keeps `off..off + 64` inside the array; `loadu` has no alignment
    // requirement.
    unsafe { _mm512_loadu_si512(a.as_ptr().add(off).cast()) }
}

/// Per-byte popcount: two 16-entry table lookups (low and high nibble) with `vpshufb`.
#[inline]
#[target_feature(enable = "avx2")]
fn popcnt_epi8(v: __m256i) -> __m256i {
    let lut = _mm256_setr_epi8(
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3,
        3, 4,
    );
    let m = _mm256_set1_epi8(0x0f);
    let lo = _mm256_and_si256(v, m);
    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), m);
    _mm256_add_epi8(_mm256_shuffle_epi8(lut, lo), _mm256_shuffle_epi8(lut, hi))
}

/// Per-u64-lane popcount: byte counts summed by `vpsadbw` against zero.
#[inline]
#[target_feature(enable = "avx2")]
fn popcnt_epi64(v: __m256i) -> __m256i {
    _mm256_sad_epu8(popcnt_epi8(v), _mm256_setzero_si256())
}

/// `bound + 1` in every u64 lane, so `cmpgt(thr, d)` is `d <= bound`.
#[inline]
#[target_feature(enable = "avx2")]
fn thr256(bound: u32) -> __m256i {
    _mm256_set1_epi64x(i64::from(bound) + 1)
}

/// Lanes of `d` (u64 distances) with `d <= bound`, as a 4-bit mask.
#[inline]
#[target_feature(enable = "avx2")]
fn within256(d: __m256i, thr: __m256i) -> u32 {
    _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(thr, d))) as u32
}

/// Offers the lanes set in `mask`; `rows[lane]` is the row of each lane. Out of line: it runs
/// only while the collector fills and for the rare rows that beat the k-th afterwards.
#[inline(never)]
fn offer_lanes<S: Sink, const L: usize>(
    sink: &mut S,
    d: &[u64; L],
    mut mask: u32,
    rows: &[usize; L],
    mut bound: u32,
) -> u32 {
    while mask != 0 {
        let lane = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        if let (Some(&dist), Some(&row)) = (d.get(lane), rows.get(lane)) {
            let dist = dist as u32;
            if dist <= bound {
                bound = sink.offer(dist, row);
            }
        }
    }
    bound
}

#[inline]
fn lanes256(v: __m256i) -> [u64; 4] {
    bytemuck::cast(v)
}

/// The query's 8-byte words, zero-padded to 8 words.
fn query_words(query: &[u8]) -> [u64; 8] {
    let mut q = [0u64; 8];
    for (w, c) in q.iter_mut().zip(query.as_chunks::<8>().0) {
        *w = u64::from_le_bytes(*c);
    }
    q
}

/// Asks for the 64-byte lines of `bytes` to be brought into L1 (`prefetcht0`), without waiting
/// for them: a hint that reads nothing the program sees and never faults.
#[target_feature(enable = "avx2")]
pub(crate) fn prefetch(bytes: &[u8]) {
    for line in bytes.chunks(64) {
        _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast());
    }
}

/// Popcount of `chunk[off..off + 32] XOR q` per u64 lane.
#[inline]
#[target_feature(enable = "avx2")]
fn pop_xor<const N: usize>(chunk: &[u8; N], off: usize, q: __m256i) -> __m256i {
    popcnt_epi64(_mm256_xor_si256(load256(chunk, off), q))
}

/// 64-byte rows: per-byte popcounts of both halves added (≤ 16 per byte), then summed per lane.
#[inline]
#[target_feature(enable = "avx2")]
fn pop_xor_64<const N: usize>(chunk: &[u8; N], off: usize, q0: __m256i, q1: __m256i) -> __m256i {
    let a = popcnt_epi8(_mm256_xor_si256(load256(chunk, off), q0));
    let b = popcnt_epi8(_mm256_xor_si256(load256(chunk, off + 32), q1));
    _mm256_sad_epu8(_mm256_add_epi8(a, b), _mm256_setzero_si256())
}

/// AVX2 scan of rows of `query.len()` bytes, the first being row `base`.
#[target_feature(enable = "avx2,popcnt")]
pub(crate) fn scan_avx2<S: Sink>(codes: &[u8], base: usize, query: &[u8], sink: &mut S) {
    let w = query.len();
    let q = query_words(query).map(|x| x as i64);
    let mut bound = sink.bound();
    let mut thr = thr256(bound);
    let done_rows = match w {
        8 => {
            // 16 rows per step, 4 per register, lanes in row order.
            let qv = _mm256_set1_epi64x(q[0]);
            let (chunks, _) = codes.as_chunks::<128>();
            for (c, ch) in chunks.iter().enumerate() {
                let d0 = pop_xor(ch, 0, qv);
                let d1 = pop_xor(ch, 32, qv);
                let d2 = pop_xor(ch, 64, qv);
                let d3 = pop_xor(ch, 96, qv);
                let m0 = within256(d0, thr);
                let m1 = within256(d1, thr);
                let m2 = within256(d2, thr);
                let m3 = within256(d3, thr);
                if (m0 | m1 | m2 | m3) != 0 {
                    let r = base + c * 16;
                    bound = offer_lanes(sink, &lanes256(d0), m0, &[r, r + 1, r + 2, r + 3], bound);
                    let r = r + 4;
                    bound = offer_lanes(sink, &lanes256(d1), m1, &[r, r + 1, r + 2, r + 3], bound);
                    let r = r + 4;
                    bound = offer_lanes(sink, &lanes256(d2), m2, &[r, r + 1, r + 2, r + 3], bound);
                    let r = r + 4;
                    bound = offer_lanes(sink, &lanes256(d3), m3, &[r, r + 1, r + 2, r + 3], bound);
                    thr = thr256(bound);
                }
            }
            chunks.len() * 16
        }
        16 => {
            // 12 rows per step, as for 32-byte rows below: rows 0-7 in ymm registers (2 rows
            // of 2 words each per register; unpacklo/hi + add of two registers gives the rows
            // in lane order [0, 2, 1, 3]), rows 8-11 with scalar `popcnt` on the integer ALUs,
            // which the vector code leaves idle. llvm-mca (`-mcpu=znver3`, tools/mca.py): the
            // vector-only loop took 13.1 cycles per 8 rows (1.64 per row, the four FP pipes at
            // 11-12 µops each), this one 15.8 per 12 (1.32 per row, 6 µops per cycle: the
            // front end's width); from cache on AMD Zen 4 it ran 1.3× the vector-only loop.
            let qv = _mm256_setr_epi64x(q[0], q[1], q[0], q[1]);
            let qw = [q[0] as u64, q[1] as u64];
            let (chunks, _) = codes.as_chunks::<192>();
            for (c, ch) in chunks.iter().enumerate() {
                let p0 = pop_xor(ch, 0, qv);
                let p1 = pop_xor(ch, 32, qv);
                let p2 = pop_xor(ch, 64, qv);
                let p3 = pop_xor(ch, 96, qv);
                let s0 =
                    _mm256_add_epi64(_mm256_unpacklo_epi64(p0, p1), _mm256_unpackhi_epi64(p0, p1));
                let s1 =
                    _mm256_add_epi64(_mm256_unpacklo_epi64(p2, p3), _mm256_unpackhi_epi64(p2, p3));
                let s: [u64; 4] = core::array::from_fn(|i| scalar_row(ch, 128 + 16 * i, &qw));
                let m = within256(s0, thr) | (within256(s1, thr) << 4);
                if m != 0 || any_within(&s, bound) {
                    // The registers hold rows in lane order [0, 2, 1, 3].
                    const ORDER: [usize; 12] = [0, 2, 1, 3, 4, 6, 5, 7, 8, 9, 10, 11];
                    let rows = ORDER.map(|i| base + c * 12 + i);
                    bound = offer_step12(sink, s0, s1, &s, m, &rows, bound);
                    thr = thr256(bound);
                }
            }
            chunks.len() * 12
        }
        32 => {
            // 12 rows per step: rows 0-7 in ymm registers (nibble-table popcount, each 4
            // reduced by an unpack/permute tree to their distances in lane order), rows 8-11
            // with scalar `popcnt` on the integer ALUs, which the vector code leaves idle. A
            // vector row costs about 11 vector µops (xor, 2 and, shift, 2 shuffles, add,
            // `vpsadbw`, a quarter of the tree), a scalar row 12 integer ones (4 xor, 4
            // popcnt, 3 add, compare); two vector rows per scalar row measured fastest on AMD
            // Zen 4 (1.35× the vector-only loop from cache; 1:1 was 1.10×): BENCHMARKS.md.
            let qv = _mm256_setr_epi64x(q[0], q[1], q[2], q[3]);
            let qw = [q[0] as u64, q[1] as u64, q[2] as u64, q[3] as u64];
            let (chunks, _) = codes.as_chunks::<384>();
            for (c, ch) in chunks.iter().enumerate() {
                let d0 = reduce4(
                    pop_xor(ch, 0, qv),
                    pop_xor(ch, 32, qv),
                    pop_xor(ch, 64, qv),
                    pop_xor(ch, 96, qv),
                );
                let d1 = reduce4(
                    pop_xor(ch, 128, qv),
                    pop_xor(ch, 160, qv),
                    pop_xor(ch, 192, qv),
                    pop_xor(ch, 224, qv),
                );
                let s: [u64; 4] = core::array::from_fn(|i| scalar_row(ch, 256 + 32 * i, &qw));
                let m = within256(d0, thr) | (within256(d1, thr) << 4);
                if m != 0 || any_within(&s, bound) {
                    let rows: [usize; 12] = core::array::from_fn(|i| base + c * 12 + i);
                    bound = offer_step12(sink, d0, d1, &s, m, &rows, bound);
                    thr = thr256(bound);
                }
            }
            chunks.len() * 12
        }
        64 => {
            let q0 = _mm256_setr_epi64x(q[0], q[1], q[2], q[3]);
            let q1 = _mm256_setr_epi64x(q[4], q[5], q[6], q[7]);
            let (chunks, _) = codes.as_chunks::<256>();
            for (c, ch) in chunks.iter().enumerate() {
                let d = reduce4(
                    pop_xor_64(ch, 0, q0, q1),
                    pop_xor_64(ch, 64, q0, q1),
                    pop_xor_64(ch, 128, q0, q1),
                    pop_xor_64(ch, 192, q0, q1),
                );
                let m = within256(d, thr);
                if m != 0 {
                    let r = base + c * 4;
                    bound = offer_lanes(sink, &lanes256(d), m, &[r, r + 1, r + 2, r + 3], bound);
                    thr = thr256(bound);
                }
            }
            chunks.len() * 4
        }
        _ => {
            any_width_avx2(codes, base, query, sink);
            return;
        }
    };
    let rest = codes.get(done_rows * w..).unwrap_or(&[]);
    scalar::scan(rest, base + done_rows, query, sink);
}

/// Offers the rows of a 12-row step (8 vector rows, 4 scalar ones) that can enter the
/// collector: the lanes of `d0` and `d1` set in `vector_mask` (rows `rows[0..8]`), then the
/// scalar distances `s` within `bound` (rows `rows[8..12]`). Returns the new bound.
#[inline]
#[target_feature(enable = "avx2")]
fn offer_step12<S: Sink>(
    sink: &mut S,
    d0: __m256i,
    d1: __m256i,
    s: &[u64; 4],
    vector_mask: u32,
    rows: &[usize; 12],
    bound: u32,
) -> u32 {
    let mask = vector_mask | scalar_mask(s, bound);
    let (v0, v1) = (lanes256(d0), lanes256(d1));
    let all = [
        v0[0], v0[1], v0[2], v0[3], v1[0], v1[1], v1[2], v1[3], s[0], s[1], s[2], s[3],
    ];
    offer_lanes(sink, &all, mask, rows, bound)
}

/// Whether any of the 4 scalar rows' distances is `<= bound`, in 8 integer µops and one branch:
/// `x <= bound` exactly when `x - (bound + 1)` is negative (distances and the bound are far below
/// 2⁶²), so one OR of the four differences carries the answer in its sign. The bit-per-row
/// mask ([`scalar_mask`]) is built only when it is needed, which after the collector fills is
/// rarely.
#[inline]
fn any_within(s: &[u64; 4], bound: u32) -> bool {
    let t = i64::from(bound) + 1;
    ((s[0] as i64 - t) | (s[1] as i64 - t) | (s[2] as i64 - t) | (s[3] as i64 - t)) < 0
}

/// Bits 8-11 set for the scalar rows (the 9th to 12th of a step) whose distance is `<= bound`.
#[inline]
fn scalar_mask(s: &[u64; 4], bound: u32) -> u32 {
    let mut m = 0;
    for (i, &x) in s.iter().enumerate() {
        m |= u32::from(x <= u64::from(bound)) << (8 + i);
    }
    m
}

/// Hamming distance of the `W`-word row at `off` of `chunk` to the query words `q`, with the
/// scalar `popcnt` instruction.
#[inline]
#[target_feature(enable = "popcnt")]
fn scalar_row<const N: usize, const W: usize>(chunk: &[u8; N], off: usize, q: &[u64; W]) -> u64 {
    let mut d = 0u64;
    for (i, &qw) in q.iter().enumerate() {
        let mut word = [0u8; 8];
        if let Some(b) = chunk.get(off + 8 * i..off + 8 * i + 8) {
            word.copy_from_slice(b);
        }
        d += popcnt_gpr(u64::from_le_bytes(word) ^ qw);
    }
    d
}

/// `popcnt` on a general-purpose register. Written as `asm!`, not `count_ones`: LLVM's SLP
/// vectoriser turned the scalar rows of [`scan_avx2`]'s 32-byte loop back into the vector
/// nibble-table popcount (objdump: no `popcnt` left in the loop), which is the very work the
/// scalar rows are there to take off the vector pipes.
#[inline]
#[target_feature(enable = "popcnt")]
fn popcnt_gpr(x: u64) -> u64 {
    let out: u64;
    // SAFETY: `popcnt` reads and writes only the two registers named; the `popcnt` feature is
    // enabled on this function, so only CPUs that have it (checked by the caller's dispatch)
    // run it.
    unsafe {
        core::arch::asm!(
            "popcnt {out}, {x}",
            x = in(reg) x,
            out = lateout(reg) out,
            options(pure, nomem, nostack),
        );
    }
    out
}

/// Sums the 4 u64 lanes of each of 4 registers: returns `[Σs0, Σs1, Σs2, Σs3]`.
#[inline]
#[target_feature(enable = "avx2")]
fn reduce4(s0: __m256i, s1: __m256i, s2: __m256i, s3: __m256i) -> __m256i {
    let t01 = _mm256_add_epi64(_mm256_unpacklo_epi64(s0, s1), _mm256_unpackhi_epi64(s0, s1));
    let t23 = _mm256_add_epi64(_mm256_unpacklo_epi64(s2, s3), _mm256_unpackhi_epi64(s2, s3));
    _mm256_add_epi64(
        _mm256_permute2x128_si256::<0x20>(t01, t23),
        _mm256_permute2x128_si256::<0x31>(t01, t23),
    )
}

/// Any width, one row at a time: 32-byte blocks in AVX2, then 8-byte words, then bytes.
#[target_feature(enable = "avx2,popcnt")]
fn any_width_avx2<S: Sink>(codes: &[u8], base: usize, query: &[u8], sink: &mut S) {
    let w = query.len();
    let (qb, qrest) = query.as_chunks::<32>();
    let qv: Vec<__m256i> = qb.iter().map(|b| load256(b, 0)).collect();
    let mut bound = sink.bound();
    for (r, row) in codes.chunks_exact(w).enumerate() {
        let (rb, rrest) = row.as_chunks::<32>();
        let mut acc = _mm256_setzero_si256();
        for (b, q) in rb.iter().zip(&qv) {
            acc = _mm256_add_epi64(acc, popcnt_epi64(_mm256_xor_si256(load256(b, 0), *q)));
        }
        let l = lanes256(acc);
        let d = (l[0] + l[1] + l[2] + l[3]) as u32 + scalar::distance(rrest, qrest);
        if d <= bound {
            bound = sink.offer(d, base + r);
        }
    }
}

/// `bound` in every u64 lane.
#[inline]
#[target_feature(enable = "avx512f")]
fn thr512(bound: u32) -> __m512i {
    _mm512_set1_epi64(i64::from(bound))
}

#[inline]
fn lanes512(v: __m512i) -> [u64; 8] {
    // SAFETY: __m512i and [u64; 8] have the same size and every bit pattern is valid for both.
    unsafe { core::mem::transmute::<__m512i, [u64; 8]>(v) }
}

/// Popcount of `chunk[off..off + 64] XOR q` per u64 lane.
#[inline]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
fn pop_xor512<const N: usize>(chunk: &[u8; N], off: usize, q: __m512i) -> __m512i {
    _mm512_popcnt_epi64(_mm512_xor_si512(load512(chunk, off), q))
}

/// Row indices `r, r + 1, …, r + 7`.
#[inline]
fn rows8(r: usize) -> [usize; 8] {
    [r, r + 1, r + 2, r + 3, r + 4, r + 5, r + 6, r + 7]
}

/// AVX-512 VPOPCNTDQ scan of rows of `query.len()` bytes, the first being row `base`.
#[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,avx2,popcnt")]
pub(crate) fn scan_avx512<S: Sink>(codes: &[u8], base: usize, query: &[u8], sink: &mut S) {
    let w = query.len();
    let q = query_words(query).map(|x| x as i64);
    let mut bound = sink.bound();
    let mut thr = thr512(bound);
    let done_rows = match w {
        8 => {
            // 32 rows per step, 8 per register, lanes in row order.
            let qv = _mm512_set1_epi64(q[0]);
            let (chunks, _) = codes.as_chunks::<256>();
            for (c, ch) in chunks.iter().enumerate() {
                let d0 = pop_xor512(ch, 0, qv);
                let d1 = pop_xor512(ch, 64, qv);
                let d2 = pop_xor512(ch, 128, qv);
                let d3 = pop_xor512(ch, 192, qv);
                let m0 = u32::from(_mm512_cmple_epu64_mask(d0, thr));
                let m1 = u32::from(_mm512_cmple_epu64_mask(d1, thr));
                let m2 = u32::from(_mm512_cmple_epu64_mask(d2, thr));
                let m3 = u32::from(_mm512_cmple_epu64_mask(d3, thr));
                if (m0 | m1 | m2 | m3) != 0 {
                    let r = base + c * 32;
                    bound = offer_lanes(sink, &lanes512(d0), m0, &rows8(r), bound);
                    bound = offer_lanes(sink, &lanes512(d1), m1, &rows8(r + 8), bound);
                    bound = offer_lanes(sink, &lanes512(d2), m2, &rows8(r + 16), bound);
                    bound = offer_lanes(sink, &lanes512(d3), m3, &rows8(r + 24), bound);
                    thr = thr512(bound);
                }
            }
            chunks.len() * 32
        }
        16 => {
            // 8 rows per step, 4 per register; adding the register to itself with the 64-bit
            // halves of each 128-bit lane swapped leaves row r's distance in lane 2r.
            let qv = _mm512_setr_epi64(q[0], q[1], q[0], q[1], q[0], q[1], q[0], q[1]);
            let (chunks, _) = codes.as_chunks::<128>();
            for (c, ch) in chunks.iter().enumerate() {
                let d0 = pop_xor512(ch, 0, qv);
                let d1 = pop_xor512(ch, 64, qv);
                let s0 = _mm512_add_epi64(d0, _mm512_shuffle_epi32::<0x4E>(d0));
                let s1 = _mm512_add_epi64(d1, _mm512_shuffle_epi32::<0x4E>(d1));
                let m0 = u32::from(_mm512_cmple_epu64_mask(s0, thr) & 0x55);
                let m1 = u32::from(_mm512_cmple_epu64_mask(s1, thr) & 0x55);
                if (m0 | m1) != 0 {
                    let r = base + c * 8;
                    let rows = [r, r, r + 1, r + 1, r + 2, r + 2, r + 3, r + 3];
                    bound = offer_lanes(sink, &lanes512(s0), m0, &rows, bound);
                    let rows = rows.map(|x| x + 4);
                    bound = offer_lanes(sink, &lanes512(s1), m1, &rows, bound);
                    thr = thr512(bound);
                }
            }
            chunks.len() * 8
        }
        32 => {
            // 4 rows per step in two registers (rows 0,1 and 2,3). unpacklo/hi + add pairs the
            // words; adding 128-bit lanes swapped pairwise finishes: row 0 in lane 0, row 2 in
            // lane 1, row 1 in lane 4, row 3 in lane 5.
            let qv = _mm512_setr_epi64(q[0], q[1], q[2], q[3], q[0], q[1], q[2], q[3]);
            let (chunks, _) = codes.as_chunks::<128>();
            for (c, ch) in chunks.iter().enumerate() {
                let d0 = pop_xor512(ch, 0, qv);
                let d1 = pop_xor512(ch, 64, qv);
                let u =
                    _mm512_add_epi64(_mm512_unpacklo_epi64(d0, d1), _mm512_unpackhi_epi64(d0, d1));
                let v = _mm512_add_epi64(u, _mm512_shuffle_i64x2::<0b10_11_00_01>(u, u));
                let m = u32::from(_mm512_cmple_epu64_mask(v, thr) & 0x33);
                if m != 0 {
                    let r = base + c * 4;
                    let rows = [r, r + 2, r, r + 2, r + 1, r + 3, r + 1, r + 3];
                    bound = offer_lanes(sink, &lanes512(v), m, &rows, bound);
                    thr = thr512(bound);
                }
            }
            chunks.len() * 4
        }
        64 => {
            // One row per register, reduced across lanes.
            let qv = _mm512_setr_epi64(q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]);
            let (chunks, _) = codes.as_chunks::<64>();
            for (r, ch) in chunks.iter().enumerate() {
                let d = _mm512_reduce_add_epi64(pop_xor512(ch, 0, qv)) as u32;
                if d <= bound {
                    bound = sink.offer(d, base + r);
                }
            }
            chunks.len()
        }
        _ => {
            any_width_avx512(codes, base, query, sink);
            return;
        }
    };
    let rest = codes.get(done_rows * w..).unwrap_or(&[]);
    scalar::scan(rest, base + done_rows, query, sink);
}

/// Any width, one row at a time: 64-byte blocks with `vpopcntq`, then 8-byte words, then bytes.
#[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq,avx2,popcnt")]
fn any_width_avx512<S: Sink>(codes: &[u8], base: usize, query: &[u8], sink: &mut S) {
    let w = query.len();
    let (qb, qrest) = query.as_chunks::<64>();
    let qv: Vec<__m512i> = qb.iter().map(|b| load512(b, 0)).collect();
    let mut bound = sink.bound();
    for (r, row) in codes.chunks_exact(w).enumerate() {
        let (rb, rrest) = row.as_chunks::<64>();
        let mut acc = _mm512_setzero_si512();
        for (b, q) in rb.iter().zip(&qv) {
            acc = _mm512_add_epi64(
                acc,
                _mm512_popcnt_epi64(_mm512_xor_si512(load512(b, 0), *q)),
            );
        }
        let d = _mm512_reduce_add_epi64(acc) as u32 + scalar::distance(rrest, qrest);
        if d <= bound {
            bound = sink.offer(d, base + r);
        }
    }
}
