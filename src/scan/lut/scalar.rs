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
pub(crate) fn scan8<S: Sink>(codes: &[u8], base: usize, lut: &[[f32; 256]], sink: &mut S) {
    let m = lut.len();
    let mut bound = bound_score(sink.bound());
    for (r, row) in codes.chunks_exact(m).enumerate() {
        let s = score8(row, lut);
        if s <= bound {
            bound = bound_score(sink.offer(f32_to_key(s), base + r));
        }
    }
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
