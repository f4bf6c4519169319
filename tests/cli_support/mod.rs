//! Running the `codedb` binary from CLI tests.
#![allow(dead_code)]

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
