//! The block-interleaved layout of 4-bit PQ codes that the fast-scan kernel reads.
//!
//! Rows are grouped in blocks of 32. With `M` sub-quantisers padded to an even `M2`
//! (`M2 = M + M % 2`), a block is `M2 × 16` bytes — the same size as 32 row-major codes of
//! `M2 / 2` bytes. Within block `b` (rows `32b .. 32b + 32`), sub-quantiser `j` owns the 16 bytes
//! at offset `16 j`; byte `i` of them (i < 16) holds row `32b + i`'s index for `j` in its low
//! nibble and row `32b + 16 + i`'s in its high nibble. So the pair `(2p, 2p + 1)` is 32
//! contiguous bytes — one AVX2 register, `j = 2p` in the low 128-bit lane — and each nibble
//! plane indexes a 16-entry table with one byte shuffle. Rows past the end of the column in the
//! last block and the padding sub-quantiser of an odd `M` hold zero nibbles.

use crate::scan::error::{Result, ScanError};

/// Rows per block.
pub const BLOCK_ROWS: usize = 32;

/// Sub-quantisers rounded up to even.
pub fn padded_m(m: usize) -> usize {
    m + (m & 1)
}

/// Bytes per block of 32 rows.
pub fn block_bytes(m: usize) -> usize {
    padded_m(m) * 16
}

/// Bytes of the packed layout for `n` rows.
pub fn packed_len(n: usize, m: usize) -> usize {
    n.div_ceil(BLOCK_ROWS) * block_bytes(m)
}

/// Packs row-major 4-bit codes (`m.div_ceil(2)` bytes per row, sub-quantiser `2i` in the low
/// nibble of byte `i`) into the fast-scan layout.
pub fn pack_fastscan(codes: &[u8], m: usize) -> Result<Vec<u8>> {
    if m == 0 {
        return Err(ScanError::Invalid {
            argument: "m",
            detail: "at least one sub-quantiser is needed".into(),
        });
    }
    let cb = m.div_ceil(2);
    if !codes.len().is_multiple_of(cb) {
        return Err(ScanError::CodesLength {
            codes_len: codes.len(),
            code_bytes: cb,
        });
    }
    let n = codes.len() / cb;
    let bb = block_bytes(m);
    let mut out = vec![0u8; packed_len(n, m)];
    for (r, row) in codes.chunks_exact(cb).enumerate() {
        let (b, i) = (r / BLOCK_ROWS, r % BLOCK_ROWS);
        for j in 0..m {
            let nib = (row[j / 2] >> (4 * (j & 1))) & 0x0f;
            let at = b * bb + 16 * j + (i % 16);
            out[at] |= if i < 16 { nib } else { nib << 4 };
        }
    }
    Ok(out)
}

/// Sub-quantiser `j`'s index of row `r` (caller keeps `r` and `j` in range).
#[inline]
pub(crate) fn nibble(packed: &[u8], m: usize, r: usize, j: usize) -> u8 {
    let (b, i) = (r / BLOCK_ROWS, r % BLOCK_ROWS);
    let byte = packed
        .get(b * block_bytes(m) + 16 * j + (i % 16))
        .copied()
        .unwrap_or(0);
    if i < 16 { byte & 0x0f } else { byte >> 4 }
}

/// Row `r` back in row-major 4-bit form (`m.div_ceil(2)` bytes).
pub fn unpack_row(packed: &[u8], m: usize, r: usize) -> Vec<u8> {
    let mut row = vec![0u8; m.div_ceil(2)];
    for j in 0..m {
        row[j / 2] |= nibble(packed, m, r, j) << (4 * (j & 1));
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_roundtrip() {
        for m in [1usize, 2, 3, 16, 17] {
            let cb = m.div_ceil(2);
            let n = 70;
            let codes: Vec<u8> = (0..n * cb)
                .map(|x| {
                    let b = (x * 37 + 11) as u8;
                    // Odd m: the unused high nibble of the last byte must be zero to round-trip.
                    if m % 2 == 1 && x % cb == cb - 1 {
                        b & 0x0f
                    } else {
                        b
                    }
                })
                .collect();
            let packed = pack_fastscan(&codes, m).unwrap();
            assert_eq!(packed.len(), 3 * padded_m(m) * 16);
            for r in 0..n {
                assert_eq!(
                    unpack_row(&packed, m, r),
                    codes[r * cb..(r + 1) * cb],
                    "m={m} r={r}"
                );
            }
        }
        assert!(pack_fastscan(&[0u8; 3], 4).is_err());
        assert!(pack_fastscan(&[0u8; 3], 0).is_err());
    }

    #[test]
    fn layout_positions() {
        // Row 17 (block 0, i = 17 → high nibble of byte 1), sub-quantiser 1 → byte 16 + 1.
        let m = 2;
        let mut codes = vec![0u8; 32];
        codes[17] = 0xa0; // row 17: j0 = 0, j1 = 0xa
        let packed = pack_fastscan(&codes, m).unwrap();
        assert_eq!(packed[17], 0xa0);
        assert_eq!(packed.iter().filter(|&&b| b != 0).count(), 1);
    }
}
