//! Portable LUT kernels, the reference twins of the SIMD ones.
//!
//! Each row's score is accumulated in one `f32`, starting from `0.0`, adding the table entries
//! in code-byte (LUT-8) or sub-quantiser (LUT-4) order `j = 0, 1, …, m-1`. The SIMD kernels add
//! the same entries in the same order, one row per lane, so the scores are bit-identical (f32
//! addition is deterministic; Rust never contracts or reassociates it).

use crate::scan::rows::Sink;
use crate::scan::topk::{f32_to_key, key_to_f32};

/// The score bound matching a collector's key bound (`+∞` while it is not full).
#[inline]
pub(crate) fn bound_score(key: u32) -> f32 {
    if key == u32::MAX {
        f32::INFINITY
    } else {
        key_to_f32(key)
    }
}

/// LUT-8 score of one row: `Σ_j lut[j][code[j]]`, j ascending.
///
/// The code is read 8 bytes at a time as one little-endian u64 and split with shifts, so each
/// lookup costs one load (the table entry) instead of two; the order of the additions is the
/// same as byte by byte.
#[inline]
pub(crate) fn score8(row: &[u8], lut: &[[f32; 256]]) -> f32 {
    let (words, tail) = row.as_chunks::<8>();
    let (tables8, tables_tail) = lut.as_chunks::<8>();
    let mut acc = 0.0f32;
    for (w, t8) in words.iter().zip(tables8) {
        let x = u64::from_le_bytes(*w);
        for (b, t) in t8.iter().enumerate() {
            acc += t[((x >> (8 * b)) & 0xff) as usize];
        }
    }
    for (&c, t) in tail.iter().zip(tables_tail) {
        acc += t[c as usize];
    }
    acc
}

/// LUT-4 score of one row: `Σ_j lut[j][nibble_j]`, nibble `2i` = low half of byte `i`,
/// nibble `2i + 1` = high half; j ascending over the `lut.len()` sub-quantisers.
#[inline]
pub(crate) fn score4(row: &[u8], lut: &[[f32; 16]]) -> f32 {
    let mut acc = 0.0f32;
    for (j, t) in lut.iter().enumerate() {
        let byte = row.get(j / 2).copied().unwrap_or(0);
        let nib = (byte >> (4 * (j & 1))) & 0x0f;
        acc += t[nib as usize];
    }
    acc
}

/// Offers every row (of `lut.len()` bytes) whose LUT-8 score is within the sink's bound.
///
/// A single row's sum is a chain of dependent f32 additions (latency-bound, 3-4 cycles each),
/// so rows go several at a time with independent accumulators. Widths of 8 and 16 bytes (PQ8
/// with M = 8, 16) run eight rows at a time with the width a compile-time constant
/// ([`scan8_x8`]): the code words, indices and accumulators then stay in registers, and on AMD
/// Zen 3 this measured 1.55× (M = 8) and 1.25-1.35× (M = 16) the four-row loop. Other widths run
/// four rows at a time with a run-time width ([`score8_x4`]): eight rows with a run-time width
/// spilled and lost to it, and at M = 24 and 32 the eight-row loop measured 15-20% slower. Each row still adds its entries in ascending `j`, so every path's score is
/// bit-identical to [`score8`].
pub(crate) fn scan8<S: Sink>(codes: &[u8], base: usize, lut: &[[f32; 256]], sink: &mut S) {
    match lut.len() {
        8 => scan8_x8::<8, S>(codes, base, lut, sink),
        16 => scan8_x8::<16, S>(codes, base, lut, sink),
        _ => scan8_x4(codes, base, lut, sink),
    }
}

/// [`scan8`] for rows of exactly `M` bytes (`lut.len() == M`, a multiple of 8): eight rows per
/// step, each row's code read as `M / 8` little-endian u64 words split with shifts.
fn scan8_x8<const M: usize, S: Sink>(codes: &[u8], base: usize, lut: &[[f32; 256]], sink: &mut S) {
    if lut.len() != M || !M.is_multiple_of(8) {
        return scan8_x4(codes, base, lut, sink);
    }
    let mut bound = bound_score(sink.bound());
    let octets = codes.len() / M / 8;
    for (g, group) in codes.chunks_exact(8 * M).enumerate() {
        // Fixed-size rows and a word loop of constant length let the compiler unroll and keep
        // the eight rows' words and sums in registers. Every index below is in range: the
        // group holds exactly 8 rows of M bytes, and 8w + 8 <= M, 8w + bi < M = lut.len().
        // (Variants written with `get`/fixed-array views measured 10-15% slower at M = 16.)
        let (rows, _) = group.as_chunks::<M>();
        let mut acc = [0.0f32; 8];
        #[allow(clippy::needless_range_loop)] // lane i of acc and x: indexing is the clear form
        for w in 0..M / 8 {
            let x: [u64; 8] = core::array::from_fn(|i| {
                u64::from_le_bytes(rows[i][w * 8..w * 8 + 8].try_into().unwrap_or([0; 8]))
            });
            for bi in 0..8 {
                let t = &lut[8 * w + bi];
                for i in 0..8 {
                    acc[i] += t[((x[i] >> (8 * bi)) & 0xff) as usize];
                }
            }
        }
        let r0 = base + g * 8;
        for (i, &si) in acc.iter().enumerate() {
            if si <= bound {
                bound = offer_row(sink, si, r0 + i);
            }
        }
    }
    let done = octets * 8;
    scan8_x4(&codes[done * M..], base + done, lut, sink);
}

/// Offers one row and returns the new score bound. Out of line: where the collector's code was
/// inlined into [`scan8_x8`] (depending on how the crate happened to be split into codegen
/// units), LLVM spilled the eight sums and rewrote the accumulation with vector shuffles, and
/// the kernel ran 2.5-4× slower at M = 16 (AMD Zen 4, `perf annotate`).
#[inline(never)]
fn offer_row<S: Sink>(sink: &mut S, score: f32, row: usize) -> f32 {
    bound_score(sink.offer(f32_to_key(score), row))
}

/// [`scan8`] for any width: four rows per step with a run-time width, then one at a time.
fn scan8_x4<S: Sink>(codes: &[u8], base: usize, lut: &[[f32; 256]], sink: &mut S) {
    let m = lut.len();
    let mut bound = bound_score(sink.bound());
    let quads = codes.len() / m / 4;
    let (head, tail) = codes.split_at(quads * 4 * m);
    for (g, rows4) in head.chunks_exact(4 * m).enumerate() {
        let s = score8_x4(rows4, m, lut);
        let r0 = base + g * 4;
        for (i, &si) in s.iter().enumerate() {
            if si <= bound {
                bound = bound_score(sink.offer(f32_to_key(si), r0 + i));
            }
        }
    }
    let r0 = base + quads * 4;
    for (r, row) in tail.chunks_exact(m).enumerate() {
        let s = score8(row, lut);
        if s <= bound {
            bound = bound_score(sink.offer(f32_to_key(s), r0 + r));
        }
    }
}

/// LUT-8 scores of four consecutive rows of `m` bytes (`rows4.len() == 4 * m`), each summed in
/// ascending `j` exactly like [`score8`].
#[inline]
fn score8_x4(rows4: &[u8], m: usize, lut: &[[f32; 256]]) -> [f32; 4] {
    let (r0, rest) = rows4.split_at(m);
    let (r1, rest) = rest.split_at(m);
    let (r2, r3) = rest.split_at(m);
    let mut acc = [0.0f32; 4];
    let (w0, t0) = r0.as_chunks::<8>();
    let (w1, t1) = r1.as_chunks::<8>();
    let (w2, t2) = r2.as_chunks::<8>();
    let (w3, t3) = r3.as_chunks::<8>();
    let (tables8, tables_tail) = lut.as_chunks::<8>();
    for ((((a, b), c), d), t8) in w0.iter().zip(w1).zip(w2).zip(w3).zip(tables8) {
        let x = [
            u64::from_le_bytes(*a),
            u64::from_le_bytes(*b),
            u64::from_le_bytes(*c),
            u64::from_le_bytes(*d),
        ];
        for (bi, t) in t8.iter().enumerate() {
            let sh = 8 * bi;
            acc[0] += t[((x[0] >> sh) & 0xff) as usize];
            acc[1] += t[((x[1] >> sh) & 0xff) as usize];
            acc[2] += t[((x[2] >> sh) & 0xff) as usize];
            acc[3] += t[((x[3] >> sh) & 0xff) as usize];
        }
    }
    for ((((&a, &b), &c), &d), t) in t0.iter().zip(t1).zip(t2).zip(t3).zip(tables_tail) {
        acc[0] += t[a as usize];
        acc[1] += t[b as usize];
        acc[2] += t[c as usize];
        acc[3] += t[d as usize];
    }
    acc
}

/// Offers every row (of `row_bytes` bytes holding `lut.len()` nibbles) whose LUT-4 score is
/// within the sink's bound.
pub(crate) fn scan4<S: Sink>(
    codes: &[u8],
    row_bytes: usize,
    base: usize,
    lut: &[[f32; 16]],
    sink: &mut S,
) {
    let mut bound = bound_score(sink.bound());
    for (r, row) in codes.chunks_exact(row_bytes).enumerate() {
        let s = score4(row, lut);
        if s <= bound {
            bound = bound_score(sink.offer(f32_to_key(s), base + r));
        }
    }
}
