//! The format 1.5 golden set: one model file with a text head (stage kind 9, OPTIONAL,
//! FORMAT.md §4.3) after a 4-D → 16-bit pipeline (center, linear, binarize). The head holds
//! three words (one not ASCII), their idf and a 3 × 16 matrix W of values exact in f32.
//!
//! Fixed id and contents, so the bytes are reproducible; `tests/backward_compatibility.rs`
//! reads the checked-in copy in `format/golden/v1.5/` and checks every value.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test
#![allow(dead_code)]

use std::path::Path;

use codedb::format::{CodeKind, FileId, ModelFile, StageRecord, Tensor, TensorData, stage_kind};
use codedb::model::Model;
use codedb::model::{TextHead, Vocabulary};

use super::golden::name;

pub const MODEL_ID: u128 = 0x1_5001;
pub const WORDS: [&str; 3] = ["apple", "café", "red"];
pub const IDF: [f32; 3] = [1.5, 0.25, 0.75];
pub const DIM: usize = 16;

/// W, row-major 3 × 16: multiples of 1/8.
pub fn weight() -> Vec<f32> {
    (0..3 * DIM)
        .map(|i| ((i * 5 % 11) as f32 - 5.0) / 8.0)
        .collect()
}

/// The pipeline without the head.
pub fn bare_model_file() -> ModelFile {
    let w: Vec<f32> = (0..64).map(|i| ((i * 7 % 13) as f32 - 6.0) / 8.0).collect();
    let rec = |kind, tensors| StageRecord {
        kind,
        required: true,
        tensors,
    };
    ModelFile {
        model_id: FileId::from_u128(MODEL_ID),
        input_dim: 4,
        code_kind: CodeKind::Binary,
        code_bytes: 2,
        code_bits: 16,
        stages: vec![
            rec(
                stage_kind::CENTER,
                vec![Tensor::new(
                    "mean",
                    &[4],
                    TensorData::F32(vec![0.5, -0.25, 1.0, 0.0]),
                )],
            ),
            rec(
                stage_kind::LINEAR,
                vec![Tensor::new("weight", &[16, 4], TensorData::F32(w))],
            ),
            rec(
                stage_kind::BINARIZE,
                vec![Tensor::new(
                    "thresholds",
                    &[16],
                    TensorData::F32(vec![0.0; 16]),
                )],
            ),
        ],
        skipped_stages: vec![],
    }
}

pub fn head() -> TextHead {
    let vocab =
        Vocabulary::new(WORDS.iter().map(|w| w.to_string()).collect(), IDF.to_vec()).unwrap();
    TextHead::new(vocab, DIM, weight()).unwrap()
}

pub fn model() -> Model {
    Model::from_model_file(&bare_model_file())
        .unwrap()
        .with_text_head(head())
        .unwrap()
}

pub fn files() -> Vec<(String, Vec<u8>)> {
    vec![(
        name("model", MODEL_ID, "model"),
        model().to_model_file().to_bytes().unwrap(),
    )]
}

pub fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("format/golden/v1.5")
}
