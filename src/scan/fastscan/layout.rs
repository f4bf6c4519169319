//! Packing whole columns into the block-interleaved 4-bit layout the fast-scan kernel reads.
//! The layout itself (byte positions, padding rules) is the format layer's:
//! [`crate::format::fastscan_layout`] documents it and FORMAT.md §3.4 draws it.

pub(crate) use crate::format::fastscan_layout::nibble;
use crate::format::fastscan_layout::pack_block;
pub use crate::format::fastscan_layout::{BLOCK_ROWS, block_bytes, padded_m};
use crate::scan::error::{Result, ScanError};

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
    for (rows, block) in codes.chunks(BLOCK_ROWS * cb).zip(out.chunks_exact_mut(bb)) {
        pack_block(rows, m, block);
    }
    Ok(out)
}

/// Row `r` back in row-major 4-bit form (`m.div_ceil(2)` bytes).
pub fn unpack_row(packed: &[u8], m: usize, r: usize) -> Vec<u8> {
    let mut row = Vec::with_capacity(m.div_ceil(2));
    crate::format::fastscan_layout::unpack_row_into(packed, m, r, &mut row);
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
            let codes = crate::format::fastscan_layout::test_codes(m, n);
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
