//! The format 1.2 golden set: one segment of 4-bit PQ codes in the block-interleaved fast-scan
//! layout (section 8, `codes_fastscan`, FORMAT.md §3.4): M = 3 sub-quantisers (odd, so every
//! block carries a zero padding sub-quantiser) and 37 rows (two blocks of 32, the second
//! partial and zero-padded), with labels. Fixed ids and contents, so the bytes are
//! reproducible; `tests/backward_compatibility.rs` reads the checked-in copy in
//! `format/golden/v1.2/` and checks every value.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test
#![allow(dead_code)]

use codedb::format::{CodeKind, FileId, SegmentData, SegmentLayout};

use super::golden::name;

pub const SEG_ID: u128 = 0x1_2201;
pub const MODEL_ID: u128 = 0x1_1201;
pub const ROWS: usize = 37;
pub const M: usize = 3;

/// Sub-quantiser `j`'s index of row `r`.
pub fn index(r: usize, j: usize) -> u8 {
    ((r * [1, 5, 7][j] + [0, 1, 3][j]) % 16) as u8
}

/// Row `r`'s code in the row-major pq4 layout (sub-quantiser 2 in the low nibble of byte 1,
/// its high nibble zero).
pub fn code(r: usize) -> [u8; 2] {
    [index(r, 0) | (index(r, 1) << 4), index(r, 2)]
}

pub fn segment() -> SegmentData {
    SegmentData {
        segment_id: FileId::from_u128(SEG_ID),
        layout: SegmentLayout {
            code_kind: CodeKind::Pq4,
            code_bytes: 2,
            code_bits: 12,
            model_id: FileId::from_u128(MODEL_ID),
        },
        ids: (0..ROWS as u64).map(|r| 1000 + 3 * r).collect(),
        codes: (0..ROWS).flat_map(code).collect(),
        labels: Some((0..ROWS as u32).map(|r| r % 4).collect()),
        lists: None,
        vectors: None,
    }
}

pub fn files() -> Vec<(String, Vec<u8>)> {
    vec![(name("seg", SEG_ID, "seg"), segment().to_bytes().unwrap())]
}

pub fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("format/golden/v1.2")
}
