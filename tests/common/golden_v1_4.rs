//! The format 1.4 golden set: two segments with per-block checksums of their row columns
//! (section 9, `block_checksums`, FORMAT.md §3.5), written with 4 KiB blocks so that every
//! column but the small ones spans several blocks, the last one short:
//!
//! - `seg A`: 600 rows of 16-byte PQ8 codes, grouped by list (4 lists of 150 rows, so it has a
//!   list index), labels, f16 stored vectors of dimension 8 (uncompressed). Columns: ids 4800
//!   bytes (2 blocks), codes 9600 (3), labels 2400 (1), lists 2400 (1), vectors 9600 (3).
//! - `seg B`: 600 rows of 4-bit PQ codes with M = 64 in the fast-scan layout (19 groups of 32
//!   rows × 1024 bytes = 19456 bytes: 5 blocks of 128 rows, the last of 88), no other column
//!   but ids.
//!
//! Fixed ids and contents, so the bytes are reproducible; `tests/backward_compatibility.rs`
//! reads the checked-in copy in `format/golden/v1.4/` and checks every value.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test
#![allow(dead_code)]

use std::path::Path;

use codedb::format::{
    CodeKind, FileId, SegmentLayout, SegmentWriter, VectorDType, VectorSlice, VectorSpec,
};

use super::golden::name;

pub const SEG_A_ID: u128 = 0x1_4401;
pub const SEG_B_ID: u128 = 0x1_4402;
pub const MODEL_ID: u128 = 0x1_4201;
pub const ROWS: usize = 600;
pub const BLOCK: u64 = 4096;
pub const DIM: usize = 8;
pub const M_B: usize = 64;

pub fn id_a(r: usize) -> u64 {
    5000 + 7 * r as u64
}
pub fn code_a(r: usize) -> [u8; 16] {
    std::array::from_fn(|j| ((r * 31 + j * 17 + r / 7) % 256) as u8)
}
pub fn label_a(r: usize) -> u32 {
    (r % 5) as u32
}
pub fn list_a(r: usize) -> u32 {
    (r / 150) as u32 * 3
}
/// Row `r`'s vector, exactly representable in f16.
pub fn vector_a(r: usize) -> [f32; DIM] {
    std::array::from_fn(|j| ((r * 3 + j) % 64) as f32 * 0.25 - 8.0)
}
pub fn id_b(r: usize) -> u64 {
    90_000 + 2 * r as u64
}
/// Row `r`'s row-major pq4 code (32 bytes: sub-quantiser 2k low nibble of byte k).
pub fn code_b(r: usize) -> [u8; 32] {
    std::array::from_fn(|k| {
        let q = |j: usize| ((r * (j + 1) + j / 3) % 16) as u8;
        q(2 * k) | (q(2 * k + 1) << 4)
    })
}

pub fn layout_a() -> SegmentLayout {
    SegmentLayout {
        code_kind: CodeKind::Pq8,
        code_bytes: 16,
        code_bits: 128,
        model_id: FileId::from_u128(MODEL_ID),
    }
}

pub fn layout_b() -> SegmentLayout {
    SegmentLayout {
        code_kind: CodeKind::Pq4,
        code_bytes: 32,
        code_bits: 256,
        model_id: FileId::from_u128(MODEL_ID),
    }
}

pub fn segment_a() -> Vec<u8> {
    let p = Path::new("<golden>");
    let mut w = SegmentWriter::new(Vec::new(), FileId::from_u128(SEG_A_ID), layout_a(), p)
        .unwrap()
        .with_block_bytes(BLOCK)
        .unwrap();
    // Written in uneven chunks: the block checksums do not depend on how rows arrive.
    let chunks = [0..1, 1..100, 100..333, 333..600];
    for c in chunks.clone() {
        w.ids(&c.map(id_a).collect::<Vec<_>>()).unwrap();
    }
    for c in chunks.clone() {
        w.codes(&c.flat_map(code_a).collect::<Vec<_>>()).unwrap();
    }
    w.labels(&(0..ROWS).map(label_a).collect::<Vec<_>>())
        .unwrap();
    w.lists(&(0..ROWS).map(list_a).collect::<Vec<_>>()).unwrap();
    let spec = VectorSpec::new(VectorDType::F16, DIM as u32);
    for c in chunks {
        let v: Vec<half::f16> = c.flat_map(vector_a).map(half::f16::from_f32).collect();
        w.vector_rows(spec, VectorSlice::F16(&v)).unwrap();
    }
    w.finish().unwrap().0
}

pub fn segment_b() -> Vec<u8> {
    let p = Path::new("<golden>");
    let mut w = SegmentWriter::new(Vec::new(), FileId::from_u128(SEG_B_ID), layout_b(), p)
        .unwrap()
        .with_block_bytes(BLOCK)
        .unwrap();
    w.ids(&(0..ROWS).map(id_b).collect::<Vec<_>>()).unwrap();
    w.codes(&(0..ROWS).flat_map(code_b).collect::<Vec<_>>())
        .unwrap();
    w.finish().unwrap().0
}

pub fn files() -> Vec<(String, Vec<u8>)> {
    vec![
        (name("seg", SEG_A_ID, "seg"), segment_a()),
        (name("seg", SEG_B_ID, "seg"), segment_b()),
    ]
}

pub fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("format/golden/v1.4")
}
