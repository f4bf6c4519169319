//! Running the `codedb` binary from CLI tests.
#![allow(dead_code)]
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::process::{Command, Output};

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

/// The checked-in digits (1,797 x 64) and their labels.
pub fn digits() -> (std::path::PathBuf, std::path::PathBuf) {
    let d = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/digits");
    (d.join("pixels.npy"), d.join("labels.npy"))
}

/// A path as a `&str` argument.
pub fn s(p: &std::path::Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Trains `spec` on the digits into `tmp/m.model` and builds `tmp/idx` from them with their
/// labels (so it has a class table); returns (model, index directory).
pub fn digits_index(tmp: &std::path::Path, spec: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let (x, y) = digits();
    let (m, dir) = (tmp.join("m.model"), tmp.join("idx"));
    ok(&["train", "--data", s(&x), "--pipeline", spec, "--out", s(&m)]);
    ok(&[
        "build",
        s(&dir),
        "--model",
        s(&m),
        "--data",
        s(&x),
        "--labels",
        s(&y),
    ]);
    (m, dir)
}
