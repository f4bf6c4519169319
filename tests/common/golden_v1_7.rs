//! The format 1.7 golden files of attribute columns (FORMAT.md §3.7, §7.4, §10.2): a segment
//! of 7 rows of 16-bit binary codes with an `attributes` section holding one column of every
//! type (a NaN float, an empty string, a non-ASCII string, a row without tags), a manifest with
//! the `attribute_schema` section (a default of every type), and an append log with one record
//! carrying the same columns for 3 rows. Fixed ids and values, so the bytes are reproducible;
//! `tests/backward_compatibility.rs` reads the checked-in copies in `format/golden/v1.7/`.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test
#![allow(dead_code)]

use std::path::Path;

use codedb::format::{
    CodeKind, FileId, FileRef, LogBatch, LogMeta, Manifest, SegmentEntry, SegmentLayout,
    SegmentWriter, append_log,
};
use codedb::{Attributes, Column, Schema, Value};

use super::golden::name;

pub const SEG_ID: u128 = 0x1_7001;
pub const LOG_ID: u128 = 0x1_7002;
pub const MANIFEST_ID: u128 = 0x1_7003;
pub const MODEL_ID: u128 = 0x1_7000;
pub const ROWS: usize = 7;

pub fn schema() -> Schema {
    Schema::parse("year:int,score:float,taken:timestamp,public:bool,licence:string,tags:tags")
        .unwrap()
        .with_default("year", Value::Int(-1))
        .unwrap()
        .with_default("score", Value::Float(f64::NAN))
        .unwrap()
        .with_default("taken", Value::Timestamp(1_262_304_000_000_000))
        .unwrap()
        .with_default("public", Value::Bool(true))
        .unwrap()
        .with_default("licence", Value::Str("unknown".into()))
        .unwrap()
        .with_default("tags", Value::Tags(vec!["untagged".into()]))
        .unwrap()
}

/// `n` rows of every column, row `r`'s values fixed by `r`.
pub fn attributes(n: usize) -> Attributes {
    let licences = ["cc0", "", "café", "cc-by"];
    let tags = ["cat", "dog", "été"];
    Attributes::new(
        n,
        vec![
            (
                "year".into(),
                Column::Int((0..n as i64).map(|r| 2000 + 3 * r).collect()),
            ),
            (
                "score".into(),
                Column::Float(
                    (0..n)
                        .map(|r| {
                            if r == 2 {
                                f64::NAN
                            } else {
                                r as f64 * 0.5 - 1.0
                            }
                        })
                        .collect(),
                ),
            ),
            (
                "taken".into(),
                Column::Timestamp((0..n as i64).map(|r| r * 86_400_000_000 - 5).collect()),
            ),
            (
                "public".into(),
                Column::Bool((0..n).map(|r| r % 3 == 0).collect()),
            ),
            (
                "licence".into(),
                Column::strings(&(0..n).map(|r| licences[r % 4]).collect::<Vec<_>>()),
            ),
            (
                "tags".into(),
                Column::tags(
                    &(0..n)
                        .map(|r| (0..r % 3).map(|t| tags[(r + t) % 3]).collect::<Vec<_>>())
                        .collect::<Vec<_>>(),
                ),
            ),
        ],
    )
    .unwrap()
}

pub fn layout() -> SegmentLayout {
    SegmentLayout {
        code_kind: CodeKind::Binary,
        code_bytes: 2,
        code_bits: 16,
        model_id: FileId::from_u128(MODEL_ID),
    }
}

pub fn id(r: usize) -> u64 {
    100 + 10 * r as u64
}

pub fn segment() -> Vec<u8> {
    let p = Path::new("<golden>");
    let mut w = SegmentWriter::new(Vec::new(), FileId::from_u128(SEG_ID), layout(), p).unwrap();
    w.ids(&(0..ROWS).map(id).collect::<Vec<_>>()).unwrap();
    let codes: Vec<u8> = (0..ROWS as u8).flat_map(|r| [r, 0xa5 ^ r]).collect();
    w.codes(&codes).unwrap();
    w.attributes(&attributes(ROWS)).unwrap();
    w.finish().unwrap().0
}

pub fn log_meta() -> LogMeta {
    let l = layout();
    LogMeta {
        code_kind: l.code_kind,
        code_bytes: l.code_bytes,
        code_bits: l.code_bits,
        model_id: l.model_id,
        vectors: None,
    }
}

/// The log's one record: 3 rows (ids 500, 501, 502) with the first 3 rows' attributes.
pub fn log_batch() -> LogBatch {
    LogBatch {
        ids: vec![500, 501, 502],
        codes: vec![1, 2, 3, 4, 5, 6],
        attributes: Some(attributes(3)),
        ..LogBatch::default()
    }
}

pub fn log() -> Vec<u8> {
    let mut out = append_log::encode_prelude(FileId::from_u128(LOG_ID), &log_meta());
    out.extend(
        log_batch()
            .encode(&log_meta(), Path::new("<golden>"))
            .unwrap(),
    );
    out
}

pub fn manifest() -> Manifest {
    Manifest {
        file_id: FileId::from_u128(MANIFEST_ID),
        version: 1,
        created_unix_ms: 1_810_000_000_000,
        next_auto_id: 503,
        model: FileRef {
            id: FileId::from_u128(MODEL_ID),
            name: name("model", MODEL_ID, "model"),
        },
        segments: vec![SegmentEntry {
            segment: FileRef {
                id: FileId::from_u128(SEG_ID),
                name: name("seg", SEG_ID, "seg"),
            },
            rows: ROWS as u64,
            deleted: 0,
            deletions: None,
        }],
        class_files: vec![],
        vectors: None,
        attributes: schema(),
    }
}

pub fn files() -> Vec<(String, Vec<u8>)> {
    vec![
        (name("seg", SEG_ID, "seg"), segment()),
        (name("log", LOG_ID, "log"), log()),
        (
            "v00000000000000000001.manifest".into(),
            manifest().to_bytes().unwrap(),
        ),
    ]
}

pub fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("format/golden/v1.7")
}
