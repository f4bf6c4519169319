//! The golden file set: tiny files of every kind, written by the current format version with
//! fixed ids and contents. `tests/backward_compatibility.rs` reads the checked-in copies in
//! `format/golden/` and checks every value; `CODEDB_BLESS=1` rewrites them (only ever for a new
//! format version, into a new folder — old folders stay and must keep being read).
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test
#![allow(dead_code)]

use codedb::format::{
    Centroid, ClassFileEntry, ClassRecord, ClassTable, CodeKind, DeletionBitmap, FileId, FileRef,
    Manifest, ModelFile, SegmentData, SegmentEntry, SegmentLayout, StageRecord, StoredVectors,
    Tensor, TensorData, VectorDType, stage_kind,
};

pub const MODEL_ID: u128 = 0x1001;
pub const SEG_A_ID: u128 = 0x2001;
pub const SEG_B_ID: u128 = 0x2002;
pub const DEL_ID: u128 = 0x3001;
pub const CLS_ID: u128 = 0x4001;
pub const CLS_DELTA_ID: u128 = 0x4002;
pub const MANIFEST_ID: u128 = 0x5001;

pub fn name(prefix: &str, id: u128, ext: &str) -> String {
    format!("{prefix}-{}.{ext}", FileId::from_u128(id).to_hex())
}

/// A 4-D → 16-bit model: centre, project, binarise.
pub fn model() -> ModelFile {
    let w: Vec<f32> = (0..64).map(|i| ((i * 7 % 13) as f32 - 6.0) / 8.0).collect();
    ModelFile {
        model_id: FileId::from_u128(MODEL_ID),
        input_dim: 4,
        code_kind: CodeKind::Binary,
        code_bytes: 2,
        code_bits: 16,
        stages: vec![
            StageRecord {
                kind: stage_kind::CENTER,
                required: true,
                tensors: vec![Tensor::new(
                    "mean",
                    &[4],
                    TensorData::F32(vec![0.5, -0.25, 1.0, 0.0]),
                )],
            },
            StageRecord {
                kind: stage_kind::LINEAR,
                required: true,
                tensors: vec![Tensor::new("weight", &[16, 4], TensorData::F32(w))],
            },
            StageRecord {
                kind: stage_kind::BINARIZE,
                required: true,
                tensors: vec![
                    Tensor::new("threshold", &[16], TensorData::F32(vec![0.0; 16])),
                    Tensor::scalar_u64("bits", 16),
                ],
            },
        ],
        skipped_stages: vec![],
    }
}

/// Segment A: 5 rows of 16-bit binary codes with labels.
pub fn segment_a() -> SegmentData {
    SegmentData {
        segment_id: FileId::from_u128(SEG_A_ID),
        layout: SegmentLayout {
            code_kind: CodeKind::Binary,
            code_bytes: 2,
            code_bits: 16,
            model_id: FileId::from_u128(MODEL_ID),
        },
        ids: vec![10, 11, 12, 20, 21],
        codes: vec![0x00, 0x00, 0xff, 0xff, 0x0f, 0xf0, 0xaa, 0x55, 0x01, 0x80],
        labels: Some(vec![1, 1, 2, 3, 2]),
        lists: None,
        vectors: None,
    }
}

/// Segment B: 3 rows with list ids and zstd-compressed f16 stored vectors.
pub fn segment_b() -> SegmentData {
    SegmentData {
        segment_id: FileId::from_u128(SEG_B_ID),
        layout: SegmentLayout {
            code_kind: CodeKind::Binary,
            code_bytes: 2,
            code_bits: 16,
            model_id: FileId::from_u128(MODEL_ID),
        },
        ids: vec![30, 31, 32],
        codes: vec![0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc],
        labels: None,
        lists: Some(vec![0, 2, 2]),
        vectors: Some(StoredVectors {
            dim: 4,
            dtype: VectorDType::F16,
            data: vec![
                0.5, 0.25, -1.0, 2.0, //
                0.0, 1.5, 3.0, -0.125, //
                1.0, 1.0, 1.0, 1.0,
            ],
            zstd_level: Some(3),
        }),
    }
}

/// Rows 1 and 3 of segment A deleted.
pub fn deletions() -> DeletionBitmap {
    let mut d = DeletionBitmap::new(FileId::from_u128(DEL_ID), FileId::from_u128(SEG_A_ID), 5);
    d.delete(1);
    d.delete(3);
    d
}

/// Three classes in a two-level hierarchy; "shoe" has two centroids.
pub fn classes() -> ClassTable {
    ClassTable {
        file_id: FileId::from_u128(CLS_ID),
        dim: 4,
        delta_of: None,
        classes: vec![
            ClassRecord {
                id: 1,
                name: "clothing".into(),
                parent: None,
                count: 0,
                sum: vec![0.0; 4],
                centroids: vec![],
                removed: 0,
            },
            ClassRecord {
                id: 2,
                name: "shirt".into(),
                parent: Some(1),
                count: 2,
                sum: vec![1.0, 2.0, 3.0, 4.0],
                centroids: vec![],
                removed: 0,
            },
            ClassRecord {
                id: 3,
                name: "shoe".into(),
                parent: Some(1),
                count: 3,
                sum: vec![-1.5, 0.0, 0.75, 3.0],
                centroids: vec![
                    Centroid {
                        weight: 0.25,
                        vector: vec![1.0, 0.0, 0.0, 0.0],
                    },
                    Centroid {
                        weight: 0.75,
                        vector: vec![0.0, 1.0, 0.0, 0.5],
                    },
                ],
                removed: 0,
            },
        ],
    }
}

/// A delta: one more "shirt" image and a new class "bag".
pub fn classes_delta() -> ClassTable {
    ClassTable {
        file_id: FileId::from_u128(CLS_DELTA_ID),
        dim: 4,
        delta_of: Some(FileId::from_u128(CLS_ID)),
        classes: vec![
            ClassRecord {
                id: 2,
                name: "shirt".into(),
                parent: Some(1),
                count: 1,
                sum: vec![0.5, 0.5, 0.5, 0.5],
                centroids: vec![],
                removed: 0,
            },
            ClassRecord {
                id: 4,
                name: "bag".into(),
                parent: None,
                count: 1,
                sum: vec![0.0, 0.0, 1.0, 1.0],
                centroids: vec![],
                removed: 0,
            },
        ],
    }
}

pub fn manifest() -> Manifest {
    let r = |prefix: &str, id: u128, ext: &str| FileRef {
        id: FileId::from_u128(id),
        name: name(prefix, id, ext),
    };
    Manifest {
        file_id: FileId::from_u128(MANIFEST_ID),
        version: 1,
        created_unix_ms: 1_790_000_000_000,
        next_auto_id: 33,
        model: r("model", MODEL_ID, "model"),
        segments: vec![
            SegmentEntry {
                segment: r("seg", SEG_A_ID, "seg"),
                rows: 5,
                deleted: 2,
                deletions: Some(r("del", DEL_ID, "del")),
            },
            SegmentEntry {
                segment: r("seg", SEG_B_ID, "seg"),
                rows: 3,
                deleted: 0,
                deletions: None,
            },
        ],
        class_files: vec![
            ClassFileEntry {
                file: r("classes", CLS_ID, "cls"),
                delta: false,
            },
            ClassFileEntry {
                file: r("classes", CLS_DELTA_ID, "cls"),
                delta: true,
            },
        ],
        vectors: None,
        attributes: Default::default(),
    }
}

/// Every golden file: (file name, bytes).
pub fn files() -> Vec<(String, Vec<u8>)> {
    vec![
        (
            name("model", MODEL_ID, "model"),
            model().to_bytes().unwrap(),
        ),
        (
            name("seg", SEG_A_ID, "seg"),
            segment_a().to_bytes().unwrap(),
        ),
        (
            name("seg", SEG_B_ID, "seg"),
            segment_b().to_bytes().unwrap(),
        ),
        (name("del", DEL_ID, "del"), deletions().to_bytes().unwrap()),
        (
            name("classes", CLS_ID, "cls"),
            classes().to_bytes().unwrap(),
        ),
        (
            name("classes", CLS_DELTA_ID, "cls"),
            classes_delta().to_bytes().unwrap(),
        ),
        (
            "v00000000000000000001.manifest".into(),
            manifest().to_bytes().unwrap(),
        ),
    ]
}

/// The folder of the current version's golden files.
pub fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("format/golden/v1.0")
}
