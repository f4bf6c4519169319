//! The format 1.6 golden set of the IVF stage (stage kind 12, `ivf`, FORMAT.md §4.4):
//!
//! - `model` 16003: a 4-D IVF model, `ivf` with 3 centroids then `pq` 2 × 8 bits (dsub 2), all
//!   values multiples of 1/8 (exact in f32);
//! - `seg` 16004: 40 rows encoded by it (`Model::encode_lists`: residual PQ codes, each row's
//!   list its nearest centroid), grouped by list then id, as the engine writes them.
//!
//! Fixed ids and contents, so the bytes are reproducible; `tests/backward_compatibility.rs`
//! reads the checked-in copy in `format/golden/v1.6/` and checks every value.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test
#![allow(dead_code)]

use std::path::Path;

use codedb::format::{
    CodeKind, FileId, ModelFile, SegmentLayout, SegmentWriter, StageRecord, Tensor, TensorData,
    stage_kind,
};
use codedb::model::Model;
use ndarray::Array2;

use super::golden::name;

pub const MODEL_ID: u128 = 0x1_6003;
pub const SEG_ID: u128 = 0x1_6004;
pub const ROWS: usize = 40;
pub const LISTS: usize = 3;

/// The coarse centroids, 3 × 4.
pub fn centroids() -> Vec<f32> {
    vec![
        -1.0, -0.5, 0.0, 0.5, //
        1.0, 0.5, -0.25, 0.0, //
        0.0, 1.5, 1.0, -1.0,
    ]
}

/// The PQ codebooks, 2 × 256 × 2.
pub fn codebooks() -> Vec<f32> {
    (0..2 * 256 * 2)
        .map(|i| ((i * 37 % 29) as f32 - 14.0) / 8.0)
        .collect()
}

pub fn model_file() -> ModelFile {
    let rec = |kind, tensors| StageRecord {
        kind,
        required: true,
        tensors,
    };
    ModelFile {
        model_id: FileId::from_u128(MODEL_ID),
        input_dim: 4,
        code_kind: CodeKind::Pq8,
        code_bytes: 2,
        code_bits: 16,
        stages: vec![
            rec(
                stage_kind::IVF,
                vec![Tensor::new(
                    "centroids",
                    &[3, 4],
                    TensorData::F32(centroids()),
                )],
            ),
            rec(
                stage_kind::PQ,
                vec![Tensor::new(
                    "centroids",
                    &[2, 256, 2],
                    TensorData::F32(codebooks()),
                )],
            ),
        ],
        skipped_stages: vec![],
    }
}

pub fn model() -> Model {
    Model::from_model_file(&model_file()).unwrap()
}

/// Row `r`'s input vector (multiples of 1/4).
pub fn vector(r: usize) -> [f32; 4] {
    [
        ((r * 3 % 11) as f32 - 5.0) / 4.0,
        ((r * 7 % 13) as f32 - 6.0) / 4.0,
        ((r * 5 % 9) as f32 - 4.0) / 4.0,
        ((r % 7) as f32 - 3.0) / 4.0,
    ]
}

pub fn id(r: usize) -> u64 {
    700 + 3 * r as u64
}

/// `(id, code, list)` of every row in segment order (by list, then id).
pub fn rows() -> Vec<(u64, [u8; 2], u32)> {
    let x = Array2::from_shape_vec((ROWS, 4), (0..ROWS).flat_map(vector).collect()).unwrap();
    let (codes, lists) = model().encode_lists(x.view()).unwrap();
    let lists = lists.unwrap();
    let mut rows: Vec<(u64, [u8; 2], u32)> = (0..ROWS)
        .map(|r| (id(r), [codes[2 * r], codes[2 * r + 1]], lists[r]))
        .collect();
    rows.sort_by_key(|&(id, _, l)| (l, id));
    rows
}

pub fn segment() -> Vec<u8> {
    let layout = SegmentLayout {
        code_kind: CodeKind::Pq8,
        code_bytes: 2,
        code_bits: 16,
        model_id: FileId::from_u128(MODEL_ID),
    };
    let p = Path::new("<golden>");
    let mut w = SegmentWriter::new(Vec::new(), FileId::from_u128(SEG_ID), layout, p).unwrap();
    let rows = rows();
    w.ids(&rows.iter().map(|r| r.0).collect::<Vec<_>>())
        .unwrap();
    w.codes(&rows.iter().flat_map(|r| r.1).collect::<Vec<_>>())
        .unwrap();
    w.lists(&rows.iter().map(|r| r.2).collect::<Vec<_>>())
        .unwrap();
    w.finish().unwrap().0
}

pub fn files() -> Vec<(String, Vec<u8>)> {
    vec![
        (
            name("model", MODEL_ID, "model"),
            model().to_model_file().to_bytes().unwrap(),
        ),
        (name("seg", SEG_ID, "seg"), segment()),
    ]
}

pub fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("format/golden/v1.6")
}
