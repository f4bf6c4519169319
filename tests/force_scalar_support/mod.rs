//! Re-running a test of the current test binary in a child process with
//! `CODEDB_FORCE_SCALAR=1` (the variable is read once per process, so a child is the only way
//! to see what a CPU without SIMD computes).
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

/// True inside such a child.
pub fn in_forced_scalar_child() -> bool {
    std::env::var("CODEDB_FORCE_SCALAR").is_ok_and(|v| v == "1")
}

/// Runs test `name` (exact match; `extra` more harness arguments, e.g. `--nocapture`) in a
/// child with `CODEDB_FORCE_SCALAR=1`, asserts that it ran and passed, and returns its stdout.
pub fn rerun_forced_scalar(name: &str, extra: &[&str]) -> String {
    let exe = std::env::current_exe().expect("test binary path");
    let out = std::process::Command::new(exe)
        .args(["--exact", name, "--test-threads=1"])
        .args(extra)
        .env("CODEDB_FORCE_SCALAR", "1")
        .output()
        .expect("re-run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("1 passed"),
        "child did not run the test:\n{stdout}"
    );
    stdout.into_owned()
}
