//! The format 1.6 golden segment of multi-index hashing tables (section 10, `mih`, FORMAT.md
//! §3.6): 300 rows of 64-bit binary codes around three centres (so buckets hold several rows
//! and many rows tie), with its tables of 8 substrings of 8 bits (`MihShape::choose(8, 300)`),
//! written with 4 KiB blocks. Fixed ids and codes, so the bytes are reproducible;
//! `tests/backward_compatibility.rs` reads the checked-in copy in `format/golden/v1.6/`.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test
#![allow(dead_code)]

use std::path::Path;

use codedb::format::mih_tables::MihShape;
use codedb::format::{CodeKind, FileId, FormatError, SegmentLayout, SegmentWriter};

use super::golden::name;

pub const SEG_ID: u128 = 0x1_6005;
pub const MODEL_ID: u128 = 0x1_6005_0001;
pub const ROWS: usize = 300;

pub fn id(r: usize) -> u64 {
    1000 + 3 * r as u64
}

/// Row `r`'s code: one of three centres with a few bits flipped by a fixed rule.
pub fn code(r: usize) -> [u8; 8] {
    let centres = [
        0x0123_4567_89ab_cdefu64,
        0xfedc_ba98_7654_3210,
        0x0f0f_0f0f_f0f0_f0f0,
    ];
    let x = (r as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let flips = (1u64 << (x >> 58)) | ((1u64 << ((x >> 52) & 63)) * u64::from(r.is_multiple_of(3)));
    (centres[r % 3] ^ flips).to_le_bytes()
}

pub fn shape() -> MihShape {
    MihShape::choose(8, ROWS as u64).unwrap()
}

pub fn segment() -> Vec<u8> {
    let p = Path::new("<golden>");
    let layout = SegmentLayout {
        code_kind: CodeKind::Binary,
        code_bytes: 8,
        code_bits: 64,
        model_id: FileId::from_u128(MODEL_ID),
    };
    let mut w = SegmentWriter::new(Vec::new(), FileId::from_u128(SEG_ID), layout, p)
        .unwrap()
        .with_block_bytes(4096)
        .unwrap();
    w.ids(&(0..ROWS).map(id).collect::<Vec<_>>()).unwrap();
    let codes: Vec<u8> = (0..ROWS).flat_map(code).collect();
    w.codes(&codes).unwrap();
    // Fed in uneven chunks: the tables do not depend on how the codes arrive.
    w.mih_tables::<FormatError>(shape(), |sink| {
        for c in [0..7, 7..100, 100..300] {
            sink(&codes[c.start * 8..c.end * 8]);
        }
        Ok(())
    })
    .unwrap();
    w.finish().unwrap().0
}

pub fn files() -> Vec<(String, Vec<u8>)> {
    vec![(name("seg", SEG_ID, "seg"), segment())]
}

pub fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("format/golden/v1.6")
}
