//! The CLI tests' fixtures: running the `codedb` binary, the checked-in digits, the train and
//! build steps most tests start with, and reading what commands print.
#![allow(dead_code)]
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ndarray::{Array2, Axis};

/// The engine tests' file helpers (tests/common/files.rs), shared.
#[path = "../../../tests/common/files.rs"]
mod files;
pub mod handmade;
#[allow(unused_imports)] // each test crate uses some of the fixtures
pub use files::{dir_bytes, flip_middle};

/// Runs `codedb args…` and returns its output, whatever the exit code.
pub fn codedb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codedb"))
        .args(args)
        .output()
        .expect("run codedb")
}

/// Runs `codedb args…` and asserts it exits 0 (stderr in the failure message).
pub fn ok(args: &[&str]) -> Output {
    let out = codedb(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `codedb args…` with extra environment variables.
pub fn codedb_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codedb"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run codedb")
}

/// Runs `codedb args…` and asserts exit code `code` with `needle` in stderr.
pub fn fails(args: &[&str], code: i32, needle: &str) -> Output {
    let out = codedb(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
    out
}

/// The checked-in digits' pixels (1,797 x 64, .npy).
pub const PIXELS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/data/digits/pixels.npy"
);
/// Their labels (0-9, .npy).
pub const LABELS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/data/digits/labels.npy"
);

/// The checked-in digits (1,797 x 64) and their labels.
pub fn digits() -> (PathBuf, PathBuf) {
    (PathBuf::from(PIXELS), PathBuf::from(LABELS))
}

/// The checked-in digits read by the CLI's own readers: pixels (1,797 x 64) and labels 0-9.
pub fn digits_data() -> (Array2<f32>, Vec<i64>) {
    let (x, y) = digits();
    (
        codedb_cli::io::load_vectors(&x).unwrap(),
        codedb_cli::io::load_labels(&y).unwrap(),
    )
}

/// The digits split by row parity (the split tools/compare_classifiers.py uses).
pub struct Digits {
    /// Even rows.
    pub xtr: Array2<f32>,
    pub ytr: Vec<i64>,
    /// Odd rows.
    pub xte: Array2<f32>,
    pub yte: Vec<i64>,
}

/// [`digits_data`] split by row parity: even rows train, odd rows test.
pub fn digits_split() -> Digits {
    let (x, y) = digits_data();
    let tr: Vec<usize> = (0..y.len()).step_by(2).collect();
    let te: Vec<usize> = (1..y.len()).step_by(2).collect();
    Digits {
        xtr: x.select(Axis(0), &tr),
        ytr: tr.iter().map(|&i| y[i]).collect(),
        xte: x.select(Axis(0), &te),
        yte: te.iter().map(|&i| y[i]).collect(),
    }
}

/// A path as a `&str` argument.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Standard output as JSON.
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&o.stdout));
    })
}

/// Result ids per query of a `search --format json`.
pub fn result_ids(v: &serde_json::Value) -> Vec<Vec<u64>> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|q| {
            q["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["id"].as_u64().unwrap())
                .collect()
        })
        .collect()
}

/// The arguments of `codedb train --data DATA --pipeline SPEC --out OUT`.
pub fn train_args<'a>(data: &'a Path, spec: &'a str, out: &'a Path) -> Vec<&'a str> {
    vec![
        "train",
        "--data",
        s(data),
        "--pipeline",
        spec,
        "--out",
        s(out),
    ]
}

/// Runs `codedb train --data DATA --pipeline SPEC --out OUT`, which must succeed.
pub fn train(data: &Path, spec: &str, out: &Path) -> Output {
    ok(&train_args(data, spec, out))
}

/// Runs `codedb build DIR --model MODEL --data DATA EXTRA…`, which must succeed.
pub fn build(dir: &Path, model: &Path, data: &Path, extra: &[&str]) -> Output {
    let mut a = vec!["build", s(dir), "--model", s(model), "--data", s(data)];
    a.extend_from_slice(extra);
    ok(&a)
}

/// Runs `codedb classify DIR --data DATA EXTRA…`, which must succeed.
pub fn classify(dir: &Path, data: &Path, extra: &[&str]) -> Output {
    let mut a = vec!["classify", s(dir), "--data", s(data)];
    a.extend_from_slice(extra);
    ok(&a)
}

/// Runs `codedb search DIR --queries QUERIES EXTRA…`, which must succeed.
pub fn search(dir: &Path, queries: &Path, extra: &[&str]) -> Output {
    let mut a = vec!["search", s(dir), "--queries", s(queries)];
    a.extend_from_slice(extra);
    ok(&a)
}

/// Trains `spec` on the digits into `tmp/m.model` and builds `tmp/idx` from them with their
/// labels (so it has a class table); returns (model, index directory).
pub fn digits_index(tmp: &Path, spec: &str) -> (PathBuf, PathBuf) {
    let (x, y) = digits();
    let (m, dir) = (tmp.join("m.model"), tmp.join("idx"));
    train(&x, spec, &m);
    build(&dir, &m, &x, &["--labels", s(&y)]);
    (m, dir)
}

/// A new temporary directory holding [`digits_index`]'s model and index: (the directory, the
/// model, the index directory).
pub fn tmp_digits_index(spec: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let (m, dir) = digits_index(tmp.path(), spec);
    (tmp, m, dir)
}
