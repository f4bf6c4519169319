//! The format 1.3 golden set: a base class table and a delta of it that removes images
//! (section 37, `removed`, FORMAT.md §5.2-§5.3). Class "kept" loses one of its three images,
//! class "emptied" loses both of its two (its folded sum must be exactly zero), class "mixed"
//! gains two images and loses one in the same record, and the delta adds a new class "fresh"
//! that removes nothing. Fixed ids and dyadic values, so bytes and folded sums are exact;
//! `tests/backward_compatibility.rs` reads the checked-in copy in `format/golden/v1.3/`.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test
#![allow(dead_code)]

use codedb::format::{ClassRecord, ClassTable, FileId};

use super::golden::name;

pub const BASE_ID: u128 = 0x1_3401;
pub const DELTA_ID: u128 = 0x1_3402;

fn rec(id: u32, name: &str, count: u64, sum: [f64; 3], removed: u64) -> ClassRecord {
    ClassRecord {
        id,
        name: name.into(),
        parent: None,
        count,
        sum: sum.to_vec(),
        centroids: Vec::new(),
        removed,
    }
}

pub fn base() -> ClassTable {
    ClassTable {
        file_id: FileId::from_u128(BASE_ID),
        dim: 3,
        delta_of: None,
        classes: vec![
            rec(1, "kept", 3, [3.0, 1.5, -0.75], 0),
            rec(2, "emptied", 2, [0.5, -2.0, 4.25], 0),
            rec(3, "mixed", 1, [1.0, 1.0, 1.0], 0),
        ],
    }
}

/// Removes (1.0, 0.5, -0.25) from "kept", both images of "emptied", adds two images summing to
/// (4.0, 0.0, 2.0) and removes one of (1.0, 1.0, 1.0) from "mixed"; adds "fresh".
pub fn delta() -> ClassTable {
    ClassTable {
        file_id: FileId::from_u128(DELTA_ID),
        dim: 3,
        delta_of: Some(FileId::from_u128(BASE_ID)),
        classes: vec![
            rec(1, "kept", 0, [-1.0, -0.5, 0.25], 1),
            rec(2, "emptied", 0, [-0.5, 2.0, -4.25], 2),
            rec(3, "mixed", 2, [3.0, -1.0, 1.0], 1),
            rec(7, "fresh", 1, [0.25, 0.25, 0.25], 0),
        ],
    }
}

/// `(id, count, sum)` of every class after folding the delta into the base.
pub fn folded() -> Vec<(u32, u64, [f64; 3])> {
    vec![
        (1, 2, [2.0, 1.0, -0.5]),
        (2, 0, [0.0, 0.0, 0.0]),
        (3, 2, [4.0, 0.0, 2.0]),
        (7, 1, [0.25, 0.25, 0.25]),
    ]
}

pub fn files() -> Vec<(String, Vec<u8>)> {
    vec![
        (name("classes", BASE_ID, "cls"), base().to_bytes().unwrap()),
        (
            name("classes", DELTA_ID, "cls"),
            delta().to_bytes().unwrap(),
        ),
    ]
}

pub fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("format/golden/v1.3")
}
