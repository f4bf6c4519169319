//! The block-interleaved layout of 4-bit PQ codes that the fast-scan kernel reads in place
//! (format 1.2, segment section `codes_fastscan`, FORMAT.md §3.4).
//!
//! Rows are grouped in blocks of 32. With `M` sub-quantisers padded to an even `M2`
//! (`M2 = M + M % 2`), a block is `M2 × 16` bytes — the same size as 32 row-major codes of
//! `M2 / 2` bytes. Within block `b` (rows `32b .. 32b + 32`), sub-quantiser `j` owns the 16 bytes
//! at offset `16 j`; byte `i` of them (i < 16) holds row `32b + i`'s index for `j` in its low
//! nibble and row `32b + 16 + i`'s in its high nibble. So the pair `(2p, 2p + 1)` is 32
//! contiguous bytes — one AVX2 register, `j = 2p` in the low 128-bit lane — and each nibble
//! plane indexes a 16-entry table with one byte shuffle. Rows past the end of the column in the
//! last block and the padding sub-quantiser of an odd `M` hold zero nibbles.
//!
//! This module is the byte layout only (the format layer owns it because segments store it);
//! `crate::scan::fastscan` is the kernel that reads it.

use std::ops::Range;

/// Rows per block.
pub const BLOCK_ROWS: usize = 32;

/// Most sub-quantisers a fast-scan column may have: the kernel sums one u8 per sub-quantiser
/// in u16 lanes, and `255 × 256` is the largest such sum that cannot overflow.
pub const MAX_M: usize = 256;

/// Sub-quantisers rounded up to even.
pub fn padded_m(m: usize) -> usize {
    m + (m & 1)
}

/// Bytes per block of 32 rows.
pub fn block_bytes(m: usize) -> usize {
    padded_m(m) * 16
}

/// Bytes of the packed layout for `n` rows (`None` on overflow).
pub fn packed_len(n: u64, m: usize) -> Option<u64> {
    n.div_ceil(BLOCK_ROWS as u64)
        .checked_mul(block_bytes(m) as u64)
}

/// Packs up to 32 row-major codes (`m.div_ceil(2)` bytes each, sub-quantiser `2i` in the low
/// nibble of byte `i`) into one zeroed block of [`block_bytes`]`(m)` bytes. The caller passes
/// whole rows; nibbles past `m` in an odd-`m` row are ignored.
pub fn pack_block(rows: &[u8], m: usize, block: &mut [u8]) {
    let cb = m.div_ceil(2);
    debug_assert!(cb > 0 && rows.len().is_multiple_of(cb) && rows.len() / cb <= BLOCK_ROWS);
    debug_assert_eq!(block.len(), block_bytes(m));
    block.fill(0);
    for (i, row) in rows.chunks_exact(cb).enumerate().take(BLOCK_ROWS) {
        let shift = if i < 16 { 0 } else { 4 };
        for j in 0..m {
            let nib = (row[j / 2] >> (4 * (j & 1))) & 0x0f;
            if let Some(b) = block.get_mut(16 * j + (i % 16)) {
                *b |= nib << shift;
            }
        }
    }
}

/// Sub-quantiser `j`'s index of row `r` (0 when `r`/`j` lie outside `packed`).
#[inline]
pub fn nibble(packed: &[u8], m: usize, r: usize, j: usize) -> u8 {
    let (b, i) = (r / BLOCK_ROWS, r % BLOCK_ROWS);
    let byte = packed
        .get(b * block_bytes(m) + 16 * j + (i % 16))
        .copied()
        .unwrap_or(0);
    if i < 16 { byte & 0x0f } else { byte >> 4 }
}

/// Appends row `r` in row-major 4-bit form (`m.div_ceil(2)` bytes) to `out`.
pub fn unpack_row_into(packed: &[u8], m: usize, r: usize, out: &mut Vec<u8>) {
    let at = out.len();
    out.resize(at + m.div_ceil(2), 0);
    for j in 0..m {
        out[at + j / 2] |= nibble(packed, m, r, j) << (4 * (j & 1));
    }
}

/// Appends rows `rows` in row-major form to `out`.
pub fn unpack_rows_into(packed: &[u8], m: usize, rows: Range<usize>, out: &mut Vec<u8>) {
    out.reserve(rows.len() * m.div_ceil(2));
    for r in rows {
        unpack_row_into(packed, m, r, out);
    }
}

/// The first nibble that must be zero and is not, in the last block of a column of `n` rows:
/// `(row, sub-quantiser)` of a padding row (`row ≥ n`) or of the padding sub-quantiser `m` of
/// an odd `m`. Only the last block can hold padding rows; every block holds the padding
/// sub-quantiser, so that check covers the whole column (O(rows / 2) bytes).
pub fn first_nonzero_padding(packed: &[u8], m: usize, n: usize) -> Option<(usize, usize)> {
    let blocks = n.div_ceil(BLOCK_ROWS);
    if m % 2 == 1 {
        for b in 0..blocks {
            for i in 0..BLOCK_ROWS {
                let r = b * BLOCK_ROWS + i;
                if nibble(packed, m, r, m) != 0 {
                    return Some((r, m));
                }
            }
        }
    }
    let last = blocks.saturating_sub(1) * BLOCK_ROWS;
    for r in n.max(last)..blocks * BLOCK_ROWS {
        for j in 0..padded_m(m) {
            if nibble(packed, m, r, j) != 0 {
                return Some((r, j));
            }
        }
    }
    None
}

/// `n` row-major 4-bit codes of `m` sub-quantisers with varied nibbles (the unused high
/// nibble of an odd `m` zero, as the format requires): test input for the layout.
#[cfg(test)]
pub(crate) fn test_codes(m: usize, n: usize) -> Vec<u8> {
    let cb = m.div_ceil(2);
    (0..n * cb)
        .map(|x| {
            let b = (x * 37 + 11) as u8;
            if m % 2 == 1 && x % cb == cb - 1 {
                b & 0x0f
            } else {
                b
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_round_trip_and_positions() {
        for m in [1usize, 2, 3, 16, 17] {
            let n = 29;
            let codes = test_codes(m, n);
            let mut block = vec![0xffu8; block_bytes(m)];
            pack_block(&codes, m, &mut block);
            let mut back = Vec::new();
            unpack_rows_into(&block, m, 0..n, &mut back);
            assert_eq!(back, codes, "m={m}");
            assert_eq!(first_nonzero_padding(&block, m, n), None, "m={m}");
            // A padding row's nibble set: found.
            let mut bad = block.clone();
            bad[16 * (m - 1) + (30 % 16)] |= 0x10;
            assert_eq!(first_nonzero_padding(&bad, m, n), Some((30, m - 1)));
        }
        // Row 17 (high nibble of byte 1), sub-quantiser 1 → byte 16 + 1.
        let mut codes = vec![0u8; 32];
        codes[17] = 0xa0;
        let mut block = vec![0u8; 64];
        pack_block(&codes, 2, &mut block);
        assert_eq!(block[17], 0xa0);
        assert_eq!(block.iter().filter(|&&b| b != 0).count(), 1);
        // Odd m: the padding sub-quantiser plane (j = 3) must be zero in every block.
        let mut two = vec![0u8; 2 * block_bytes(3)];
        assert_eq!(first_nonzero_padding(&two, 3, 64), None);
        two[block_bytes(3) + 16 * 3 + 2] = 0x01;
        assert_eq!(first_nonzero_padding(&two, 3, 64), Some((34, 3)));
        assert_eq!(packed_len(33, 3), Some(128));
        assert_eq!(packed_len(u64::MAX, 256), None);
    }
}
