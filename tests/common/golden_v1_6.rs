//! The format 1.6 golden set: one model file recording its origin (stage kind 10, OPTIONAL,
//! FORMAT.md §4.4) after a 4-D → 16-bit pipeline (center, linear, binarize): the spec
//! `cca:16,bits` with the step behind each of the three stages and seed 42.
//!
//! Fixed id and contents, so the bytes are reproducible; `tests/backward_compatibility.rs`
//! reads the checked-in copy in `format/golden/v1.6/` and checks every value.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test
#![allow(dead_code)]

use std::path::Path;

use codedb::format::FileId;
use codedb::model::{Model, Origin};

use super::golden::name;

pub const MODEL_ID: u128 = 0x1_6001;
pub const SPEC: &str = "cca:16,bits";
pub const STAGE_STEPS: [usize; 3] = [0, 0, 1];
pub const SEED: u64 = 42;

pub fn origin() -> Origin {
    Origin::new(SPEC.into(), STAGE_STEPS.to_vec(), SEED).unwrap()
}

/// The v1.5 pipeline (center, linear, binarize) under this set's id, with its origin.
pub fn model() -> Model {
    let mut bare = super::golden_v1_5::bare_model_file();
    bare.model_id = FileId::from_u128(MODEL_ID);
    Model::from_model_file(&bare)
        .unwrap()
        .with_origin(origin())
        .unwrap()
}

pub fn files() -> Vec<(String, Vec<u8>)> {
    vec![(
        name("model", MODEL_ID, "model"),
        model().to_model_file().to_bytes().unwrap(),
    )]
}

pub fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("format/golden/v1.6")
}
