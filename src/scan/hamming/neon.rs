//! AArch64 NEON Hamming kernel: `cnt` (per-byte popcount of `code XOR query`), widened by
//! pairwise adds.
//!
//! 8-byte codes go two rows per 16-byte register (`vpaddlq` chain down to two u64 lanes, one
//! distance per row); codes whose width is a multiple of 16 bytes sum their per-byte counts in a
//! u8 register (at most 8 per byte per chunk, so up to 31 chunks = 496 bytes cannot overflow;
//! wider rows are flushed every 31 chunks) and reduce with `vaddlvq_u8`. Other widths, and the
//! rows after the last full group, run through the scalar twin. Distances are integers, so the
//! results equal the scalar kernel's exactly.

use core::arch::aarch64::*;

use super::scalar;
use crate::scan::rows::Sink;

/// Loads 16 bytes at `off` of `s`.
#[inline]
#[target_feature(enable = "neon")]
fn load16(s: &[u8], off: usize) -> uint8x16_t {
    assert!(off + 16 <= s.len());
    // SAFETY: the assert keeps the 16 bytes inside `s`; `vld1q_u8` has no alignment needs.
    unsafe { vld1q_u8(s.as_ptr().add(off)) }
}

/// NEON scan of rows of `query.len()` bytes, the first being row `base`.
#[target_feature(enable = "neon")]
pub(crate) fn scan_neon<S: Sink>(codes: &[u8], base: usize, query: &[u8], sink: &mut S) {
    let w = query.len();
    let rows = codes.len() / w.max(1);
    let mut bound = sink.bound();
    let done = if w == 8 {
        let mut q2 = [0u8; 16];
        q2[..8].copy_from_slice(query);
        q2[8..].copy_from_slice(query);
        let qv = load16(&q2, 0);
        let pairs = rows / 2;
        for p in 0..pairs {
            let c = vcntq_u8(veorq_u8(load16(codes, 16 * p), qv));
            let d = vpaddlq_u32(vpaddlq_u16(vpaddlq_u8(c)));
            let d0 = vgetq_lane_u64::<0>(d) as u32;
            let d1 = vgetq_lane_u64::<1>(d) as u32;
            if d0 <= bound {
                bound = sink.offer(d0, base + 2 * p);
            }
            if d1 <= bound {
                bound = sink.offer(d1, base + 2 * p + 1);
            }
        }
        2 * pairs
    } else if w.is_multiple_of(16) {
        let chunks = w / 16;
        for r in 0..rows {
            let row = r * w;
            let mut total = 0u32;
            let mut c = 0;
            while c < chunks {
                let end = (c + 31).min(chunks);
                let mut acc = vdupq_n_u8(0);
                for k in c..end {
                    let x = veorq_u8(load16(codes, row + 16 * k), load16(query, 16 * k));
                    acc = vaddq_u8(acc, vcntq_u8(x));
                }
                total += u32::from(vaddlvq_u8(acc));
                c = end;
            }
            if total <= bound {
                bound = sink.offer(total, base + r);
            }
        }
        rows
    } else {
        0
    };
    if done < rows {
        scalar::scan(&codes[done * w..], base + done, query, sink);
    }
}
