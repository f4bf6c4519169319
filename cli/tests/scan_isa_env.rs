//! `CODEDB_SCAN_ISA` caps the kernels `Dispatch::Auto` runs, per process: an unknown or
//! unavailable level fails the command naming the variable; a valid one is what `codedb bench`
//! reports running.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::process::{Command, Output};

fn bench_scan(isa: &str, dir: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codedb"))
        .args(["bench", "scan", "--codes", "2000", "--kind", "hamming64"])
        .args([
            "--queries",
            "1",
            "--threads",
            "1",
            "--repeats",
            "1",
            "--cache",
            "hot",
        ])
        .arg("--dir")
        .arg(dir)
        .arg("--json")
        .env("CODEDB_SCAN_ISA", isa)
        .env_remove("CODEDB_FORCE_SCALAR")
        .output()
        .expect("run codedb")
}

#[test]
fn unknown_level_is_an_error_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["AVX2", "sse", ""] {
        let out = bench_scan(bad, dir.path());
        assert_eq!(out.status.code(), Some(1), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("CODEDB_SCAN_ISA"), "{bad:?}: {err}");
        assert!(out.stdout.is_empty(), "{bad:?}: nothing printed on failure");
    }
}

#[test]
fn valid_level_is_the_one_reported() {
    let dir = tempfile::tempdir().unwrap();
    let mut levels = vec![("scalar", "scalar")];
    if cfg!(target_arch = "x86_64") {
        levels.push(("avx2", "avx2+fma"));
        levels.push(("avx512", "avx512-vpopcntdq"));
    }
    let best = codedb::kernels::best_available();
    for (level, name) in levels {
        let out = bench_scan(level, dir.path());
        let available = match level {
            "avx2" => best >= codedb::kernels::Isa::Avx2,
            "avx512" => best >= codedb::kernels::Isa::Avx512,
            _ => true,
        };
        if available {
            assert_eq!(out.status.code(), Some(0), "{level}");
            let json = String::from_utf8_lossy(&out.stdout);
            assert!(
                json.contains(&format!("\"isa\": \"{name}\"")),
                "{level}: {json}"
            );
        } else {
            // A level this CPU lacks fails like an unknown one.
            assert_eq!(out.status.code(), Some(1), "{level}");
            assert!(String::from_utf8_lossy(&out.stderr).contains("not support"));
        }
    }
}
