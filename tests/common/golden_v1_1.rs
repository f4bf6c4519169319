//! The format 1.1 golden set: a complete tiny index directory that uses what 1.1 added — an
//! index that stores f16 vectors (manifest section 68), a segment grouped by list id with its
//! list index (section 7) and uncompressed stored vectors, and an active append log whose
//! records carry list ids and vectors (log meta and record flags of §10). Fixed ids and
//! contents, so the bytes are reproducible; `tests/backward_compatibility.rs` reads the
//! checked-in copies in `format/golden/v1.1/` and checks every value.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test
#![allow(dead_code)]

use codedb::format::{
    ActiveLogEntry, DeletionBitmap, FileId, FileRef, LogBatch, LogMeta, Manifest, SegmentData,
    SegmentEntry, SegmentLayout, StoredVectors, VectorBuf, VectorDType, VectorSpec, append_log,
};

use super::golden::{self, MODEL_ID, name};

pub const SEG_ID: u128 = 0x1_2101;
pub const SEG_DEL_ID: u128 = 0x1_3101;
pub const LOG_ID: u128 = 0x1_6101;
pub const LOG_DEL_ID: u128 = 0x1_3102;
pub const MANIFEST_ID: u128 = 0x1_5101;

pub const SPEC: VectorSpec = VectorSpec {
    dtype: VectorDType::F16,
    dim: 4,
};

fn layout() -> SegmentLayout {
    SegmentLayout {
        code_kind: codedb::format::CodeKind::Binary,
        code_bytes: 2,
        code_bits: 16,
        model_id: FileId::from_u128(MODEL_ID),
    }
}

/// The stored vector of row id `id` (exactly representable in f16).
pub fn vector(id: u64) -> [f32; 4] {
    let x = id as f32;
    [x, -x / 2.0, 0.25, x * 0.125 - 1.0]
}

/// 5 rows grouped by list (lists 1, 1, 3, 3, 3; ids increasing within a list), labels, and
/// uncompressed f16 vectors.
pub fn segment() -> SegmentData {
    let ids = vec![40u64, 47, 41, 44, 45];
    SegmentData {
        segment_id: FileId::from_u128(SEG_ID),
        layout: layout(),
        codes: ids.iter().flat_map(|&i| [i as u8, 0xc0]).collect(),
        labels: Some(vec![2, 2, 3, append_log::NO_LABEL, 3]),
        lists: Some(vec![1, 1, 3, 3, 3]),
        vectors: Some(StoredVectors {
            dim: SPEC.dim,
            dtype: SPEC.dtype,
            data: ids.iter().flat_map(|&i| vector(i)).collect(),
            zstd_level: None,
        }),
        ids,
    }
}

/// Row 2 (id 41) of the segment deleted.
pub fn segment_deletions() -> DeletionBitmap {
    let mut d = DeletionBitmap::new(FileId::from_u128(SEG_DEL_ID), FileId::from_u128(SEG_ID), 5);
    d.delete(2);
    d
}

pub fn log_meta() -> LogMeta {
    LogMeta {
        code_kind: codedb::format::CodeKind::Binary,
        code_bytes: 2,
        code_bits: 16,
        model_id: FileId::from_u128(MODEL_ID),
        vectors: Some(SPEC),
    }
}

/// Two records: ids 50-52 with labels and lists (grouped: lists 0, 0, 4), then id 53 with a
/// list and no label.
pub fn log_batches() -> Vec<LogBatch> {
    let batch = |ids: &[u64], labels: Option<Vec<u32>>, lists: Vec<u32>| LogBatch {
        ids: ids.to_vec(),
        codes: ids.iter().flat_map(|&i| [i as u8, 0x0f]).collect(),
        labels,
        lists: Some(lists),
        vectors: Some(VectorBuf::from_f32(
            SPEC.dtype,
            ids.iter().flat_map(|&i| vector(i)),
        )),
        attributes: None,
    };
    vec![
        batch(&[50, 52, 51], Some(vec![1, 1, 2]), vec![0, 0, 4]),
        batch(&[53], None, vec![3]),
    ]
}

pub fn log_bytes() -> Vec<u8> {
    let meta = log_meta();
    let mut out = append_log::encode_prelude(FileId::from_u128(LOG_ID), &meta);
    for b in log_batches() {
        out.extend(b.encode(&meta, std::path::Path::new("golden")).unwrap());
    }
    out
}

/// Log row 1 (id 52) deleted.
pub fn log_deletions() -> DeletionBitmap {
    let mut d = DeletionBitmap::new(FileId::from_u128(LOG_DEL_ID), FileId::from_u128(LOG_ID), 4);
    d.delete(1);
    d
}

fn fref(prefix: &str, id: u128, ext: &str) -> FileRef {
    FileRef {
        id: FileId::from_u128(id),
        name: name(prefix, id, ext),
    }
}

pub fn manifest() -> Manifest {
    Manifest {
        file_id: FileId::from_u128(MANIFEST_ID),
        version: 1,
        created_unix_ms: 1_800_000_000_000,
        next_auto_id: 54,
        model: fref("model", MODEL_ID, "model"),
        segments: vec![SegmentEntry {
            segment: fref("seg", SEG_ID, "seg"),
            rows: 5,
            deleted: 1,
            deletions: Some(fref("del", SEG_DEL_ID, "del")),
        }],
        class_files: vec![],
        vectors: Some(SPEC),
        attributes: Default::default(),
    }
}

pub fn active_log() -> ActiveLogEntry {
    ActiveLogEntry {
        log: fref("log", LOG_ID, "log"),
        committed_len: log_bytes().len() as u64,
        rows: 4,
        deleted: 1,
        deletions: Some(fref("del", LOG_DEL_ID, "del")),
    }
}

/// The live rows of the golden index: id → (list, label, vector).
pub fn live_rows() -> Vec<(u64, Option<u32>, Option<u32>)> {
    vec![
        (40, Some(1), Some(2)),
        (44, Some(3), None),
        (45, Some(3), Some(3)),
        (47, Some(1), Some(2)),
        (50, Some(0), Some(1)),
        (51, Some(4), Some(2)),
        (53, Some(3), None),
    ]
}

/// Every golden file: (file name, bytes).
pub fn files() -> Vec<(String, Vec<u8>)> {
    vec![
        (
            name("model", MODEL_ID, "model"),
            golden::model().to_bytes().unwrap(),
        ),
        (name("seg", SEG_ID, "seg"), segment().to_bytes().unwrap()),
        (
            name("del", SEG_DEL_ID, "del"),
            segment_deletions().to_bytes().unwrap(),
        ),
        (name("log", LOG_ID, "log"), log_bytes()),
        (
            name("del", LOG_DEL_ID, "del"),
            log_deletions().to_bytes().unwrap(),
        ),
        (
            "v00000000000000000001.manifest".into(),
            manifest().to_bytes_with_log(Some(&active_log())).unwrap(),
        ),
    ]
}

pub fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("format/golden/v1.1")
}
