//! The format 1.8 golden segment of stored attribute indexes (FORMAT.md §3.8): 8,195 rows of
//! 16-bit binary codes — two whole zones of 4,096 rows and a partial third — whose columns are
//! an int clustered in row order (`year`), a float with NaN rows and a zone of NaN only
//! (`score`), a string (no index) and tags (`tags`: common, rare and absent tags, rows with
//! none), so the segment carries `attribute_postings` for one column and `attribute_zones` for
//! two. Fixed ids and values, so the bytes are reproducible; `tests/backward_compatibility.rs`
//! reads the checked-in copy in `format/golden/v1.8/`.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test
#![allow(dead_code)]

use std::path::Path;

use codedb::format::{CodeKind, FileId, SegmentLayout, SegmentWriter};
use codedb::{Attributes, Column};

use super::golden::name;

pub const SEG_ID: u128 = 0x1_8001;
pub const MODEL_ID: u128 = 0x1_8000;
/// Two whole zones and 3 rows of a third.
pub const ROWS: usize = 2 * 4096 + 3;

/// The tags of row `r`: `t{r mod 5}` on every row but each seventh, `rare` on rows 5, 4,100 and
/// 8,194, `été` on each 1,000th.
pub fn tags_of(r: usize) -> Vec<String> {
    let mut t = Vec::new();
    if !r.is_multiple_of(7) {
        t.push(format!("t{}", r % 5));
    }
    if [5, 4100, 8194].contains(&r) {
        t.push("rare".into());
    }
    if r.is_multiple_of(1000) {
        t.push("été".into());
    }
    t
}

/// Row `r`'s score: a ramp with NaN on each 97th row; the third zone's 3 rows all NaN.
pub fn score_of(r: usize) -> f64 {
    if r >= 2 * 4096 || r.is_multiple_of(97) {
        f64::NAN
    } else {
        (r as f64 - 3000.0) * 0.125
    }
}

pub fn attributes() -> Attributes {
    Attributes::new(
        ROWS,
        vec![
            (
                "year".into(),
                Column::Int((0..ROWS).map(|r| 1990 + (r / 300) as i64).collect()),
            ),
            (
                "score".into(),
                Column::Float((0..ROWS).map(score_of).collect()),
            ),
            (
                "licence".into(),
                Column::strings(
                    &(0..ROWS)
                        .map(|r| ["cc0", "cc-by"][r % 2])
                        .collect::<Vec<_>>(),
                ),
            ),
            (
                "tags".into(),
                Column::tags(&(0..ROWS).map(tags_of).collect::<Vec<_>>()),
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
    1_000 + r as u64
}

pub fn segment() -> Vec<u8> {
    let p = Path::new("<golden>");
    let mut w = SegmentWriter::new(Vec::new(), FileId::from_u128(SEG_ID), layout(), p).unwrap();
    w.ids(&(0..ROWS).map(id).collect::<Vec<_>>()).unwrap();
    let codes: Vec<u8> = (0..ROWS)
        .flat_map(|r| [(r % 251) as u8, 0xa5 ^ (r % 13) as u8])
        .collect();
    w.codes(&codes).unwrap();
    w.attributes(&attributes()).unwrap();
    w.finish().unwrap().0
}

pub fn files() -> Vec<(String, Vec<u8>)> {
    vec![(name("seg", SEG_ID, "seg"), segment())]
}

pub fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("format/golden/v1.8")
}
