//! Helpers shared by the storage-engine tests: a small model, deterministic codes, and the
//! live rows of a snapshot as a map (what every test compares against its in-memory model).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use codedb::format::{
    ClassRecord, CodeKind, FileId, ModelFile, StageRecord, Tensor, TensorData, stage_kind,
};
use codedb::storage::{Config, FileSystem, Retention, Snapshot};

/// Bytes per code of [`model`] (64-bit binary codes).
pub const CODE_BYTES: usize = 8;

/// A 4-D → 64-bit binary model (the engine stores it; it does not interpret the stages).
pub fn model() -> ModelFile {
    ModelFile {
        model_id: FileId::from_u128(0xC0DE_DB00_0000_0000_0000_0000_0000_0001),
        input_dim: 4,
        code_kind: CodeKind::Binary,
        code_bytes: CODE_BYTES as u32,
        code_bits: 64,
        stages: vec![StageRecord {
            kind: stage_kind::CENTER,
            required: true,
            tensors: vec![Tensor::new("mean", &[4], TensorData::F32(vec![0.0; 4]))],
        }],
        skipped_stages: vec![],
    }
}

/// The code stored for `id` in a given "generation" (upserts change the generation).
pub fn code(id: u64, generation: u64) -> [u8; CODE_BYTES] {
    let x = id
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(generation.wrapping_mul(0xD1B5_4A32_D192_ED03));
    (x ^ (x >> 29)).to_le_bytes()
}

/// Codes for `ids`, concatenated.
pub fn codes(ids: &[u64], generation: u64) -> Vec<u8> {
    ids.iter().flat_map(|&i| code(i, generation)).collect()
}

/// A live row as tests see it.
pub type RowMap = BTreeMap<u64, (Vec<u8>, Option<u32>)>;

/// Every live row of a snapshot, by id; panics if an id is live twice.
pub fn rows_of(s: &Snapshot) -> RowMap {
    let mut out = RowMap::new();
    for r in s.rows() {
        let prev = out.insert(r.id, (r.code.to_vec(), r.label));
        assert!(
            prev.is_none(),
            "id {} is live twice in version {}",
            r.id,
            s.version()
        );
    }
    assert_eq!(
        out.len() as u64,
        s.live_rows(),
        "live row count of version {}",
        s.version()
    );
    out
}

/// A config with a small seal threshold and no time-based retention, so tests exercise sealing
/// and GC quickly.
pub fn small_config(seal_bytes: u64) -> Config {
    Config {
        seal_bytes,
        retention: Retention {
            keep_versions: 2,
            keep_for: std::time::Duration::ZERO,
        },
        ..Config::default()
    }
}

pub fn with_fs(mut c: Config, fs: Arc<dyn FileSystem>) -> Config {
    c.fs = fs;
    c
}

/// A class record with a sum of `dim` values.
pub fn class(
    id: u32,
    name: &str,
    parent: Option<u32>,
    count: u64,
    dim: usize,
    v: f64,
) -> ClassRecord {
    ClassRecord {
        id,
        name: name.into(),
        parent,
        count,
        sum: vec![v; dim],
        centroids: vec![],
    }
}

/// File names in `dir`, sorted.
pub fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `codedb verify` on the directory: no problems.
pub fn assert_verifies(dir: &Path) {
    let r = codedb::storage::verify::verify_path(dir, &mut |_| {});
    assert!(
        r.ok(),
        "verify found problems in {}: {:#?}",
        dir.display(),
        r.problems
    );
}
