//! `CODEDB_FORCE_SCALAR=1` makes `Dispatch::Auto` run the scalar kernels. The variable is read
//! once per process, so the test re-runs itself in a child process with the variable set.

use std::process::Command;

use codedb::scan::{CodeRows, Dispatch, Isa, ScanOptions, detected_isa, hamming_topk_batch};

const NAME: &str = "force_scalar_env_makes_auto_scalar";

#[test]
fn force_scalar_env_makes_auto_scalar() {
    if std::env::var("CODEDB_FORCE_SCALAR").is_ok_and(|v| v == "1") {
        assert_eq!(detected_isa(), "scalar");
        assert_eq!(Dispatch::Auto.resolve().unwrap(), Isa::Scalar);
        // Explicit requests still get what they ask for (scalar always exists).
        assert_eq!(Dispatch::Scalar.resolve().unwrap(), Isa::Scalar);
        let codes = [0u8, 1, 3, 7];
        let ids = [10u64, 11, 12, 13];
        let rows = CodeRows::new(&codes, 1, &ids, None).unwrap();
        let got = hamming_topk_batch(&rows, &[0], 2, ScanOptions::default()).unwrap();
        assert_eq!(got, vec![vec![(0, 10), (1, 11)]]);
        return;
    }
    let exe = std::env::current_exe().expect("test binary path");
    let out = Command::new(exe)
        .args(["--exact", NAME, "--test-threads=1"])
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
}
