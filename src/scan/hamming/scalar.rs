//! Portable Hamming kernels: `count_ones` over little-endian u64 words, then single bytes.
//!
//! These are the reference twins of the SIMD kernels and the only kernels on non-x86 targets.
//! Distances are integers, so every path agrees exactly by construction; the tests check it.

use crate::scan::rows::Sink;

/// Hamming distance of two equal-length byte strings (callers check the lengths).
#[inline]
pub(crate) fn distance(a: &[u8], b: &[u8]) -> u32 {
    debug_assert_eq!(a.len(), b.len());
    let (aw, at) = a.as_chunks::<8>();
    let (bw, bt) = b.as_chunks::<8>();
    let mut d = 0u32;
    for (x, y) in aw.iter().zip(bw) {
        d += (u64::from_le_bytes(*x) ^ u64::from_le_bytes(*y)).count_ones();
    }
    for (x, y) in at.iter().zip(bt) {
        d += (x ^ y).count_ones();
    }
    d
}

/// Offers every row of `codes` (rows of `query.len()` bytes, the first being row `base`) whose
/// distance to `query` is within the sink's bound.
pub(crate) fn scan<S: Sink>(codes: &[u8], base: usize, query: &[u8], sink: &mut S) {
    match query.len() {
        8 => fixed::<1, 8, S>(codes, base, query, sink),
        16 => fixed::<2, 16, S>(codes, base, query, sink),
        32 => fixed::<4, 32, S>(codes, base, query, sink),
        64 => fixed::<8, 64, S>(codes, base, query, sink),
        _ => any_width(codes, base, query, sink),
    }
}

fn fixed<const WORDS: usize, const BYTES: usize, S: Sink>(
    codes: &[u8],
    base: usize,
    query: &[u8],
    sink: &mut S,
) {
    debug_assert_eq!(WORDS * 8, BYTES);
    let mut q = [0u64; WORDS];
    for (w, c) in q.iter_mut().zip(query.as_chunks::<8>().0) {
        *w = u64::from_le_bytes(*c);
    }
    let mut bound = sink.bound();
    for (r, row) in codes.as_chunks::<BYTES>().0.iter().enumerate() {
        let mut d = 0u32;
        for (c, qw) in row.as_chunks::<8>().0.iter().zip(&q) {
            d += (u64::from_le_bytes(*c) ^ qw).count_ones();
        }
        if d <= bound {
            bound = sink.offer(d, base + r);
        }
    }
}

/// Any width: rows of `query.len()` bytes.
pub(crate) fn any_width<S: Sink>(codes: &[u8], base: usize, query: &[u8], sink: &mut S) {
    let w = query.len();
    let mut bound = sink.bound();
    for (r, row) in codes.chunks_exact(w).enumerate() {
        let d = distance(row, query);
        if d <= bound {
            bound = sink.offer(d, base + r);
        }
    }
}
