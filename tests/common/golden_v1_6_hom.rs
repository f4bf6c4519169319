//! The format 1.6 golden model of the `hom` stage (stage kind 11, REQUIRED): a 4-D → 16-bit
//! pipeline hom:chi2 (r = 1, L = 0.5: 12 features) → linear (16 × 12, values exact in f32)
//! → binarize. Fixed id and contents, so the bytes are reproducible;
//! `tests/backward_compatibility.rs` reads the checked-in copy in `format/golden/v1.6/`.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test
#![allow(dead_code)]

use codedb::format::{CodeKind, FileId, ModelFile, StageRecord, Tensor, TensorData, stage_kind};

use super::golden::name;

pub const MODEL_ID: u128 = 0x1_6002;
pub const PERIOD: f64 = 0.5;

/// The linear stage's weights, row-major 16 × 12: multiples of 1/8.
pub fn weight() -> Vec<f32> {
    (0..16 * 12)
        .map(|i| ((i * 7 % 13) as f32 - 6.0) / 8.0)
        .collect()
}

pub fn model_file() -> ModelFile {
    let rec = |kind, tensors| StageRecord {
        kind,
        required: true,
        tensors,
    };
    let u = |n: &str, v: u64| Tensor::new(n, &[], TensorData::U64(vec![v]));
    ModelFile {
        model_id: FileId::from_u128(MODEL_ID),
        input_dim: 4,
        code_kind: CodeKind::Binary,
        code_bytes: 2,
        code_bits: 16,
        stages: vec![
            rec(
                stage_kind::HOM,
                vec![
                    u("dim", 4),
                    u("kernel", 1),
                    u("order", 1),
                    Tensor::new("period", &[], TensorData::F64(vec![PERIOD])),
                ],
            ),
            rec(
                stage_kind::LINEAR,
                vec![Tensor::new("weight", &[16, 12], TensorData::F32(weight()))],
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

/// The folder of the checked-in files.
pub fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("format/golden/v1.6")
}

/// (file name, bytes as this build writes them).
pub fn files() -> Vec<(String, Vec<u8>)> {
    vec![(
        name("model", MODEL_ID, "model"),
        model_file().to_bytes().unwrap(),
    )]
}
