//! A `codedb build` that fails leaves nothing behind (issue 13, item 8): duplicate ids, the
//! reserved id 2^64 − 1 and a value too big for f16 with `--store-vectors f16` exit 1 with the
//! directory as it was — absent, or empty if it existed empty — so the corrected command then
//! succeeds instead of finding "already holds a codedb index".
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
mod cli_support;
use cli_support::{codedb, ok};

use ndarray::Array2;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// 40 rows of 8 values, a model trained on them, and the paths.
struct Setup {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let x = Array2::from_shape_fn((40, 8), |(i, j)| ((i * 7 + j * 3) % 11) as f32 - 5.0);
        codedb_cli::io::write_npy_f32(root.join("x.npy"), x.view()).unwrap();
        let mut big = x.clone();
        big[[17, 3]] = 70000.0; // finite in f32, past f16's largest finite value (65504)
        codedb_cli::io::write_npy_f32(root.join("big.npy"), big.view()).unwrap();
        let mut dup: Vec<u64> = (100..140).collect();
        dup[9] = 105;
        codedb_cli::io::write_npy_u64(root.join("dup_ids.npy"), &dup).unwrap();
        let mut reserved: Vec<u64> = (100..140).collect();
        reserved[39] = u64::MAX;
        codedb_cli::io::write_npy_u64(root.join("reserved_ids.npy"), &reserved).unwrap();
        let good: Vec<u64> = (100..140).collect();
        codedb_cli::io::write_npy_u64(root.join("ids.npy"), &good).unwrap();
        ok(&[
            "train",
            "--data",
            s(&root.join("x.npy")),
            "--pipeline",
            "lsh:16",
            "--out",
            s(&root.join("m.model")),
        ]);
        Setup { _tmp: tmp, root }
    }

    fn p(&self, name: &str) -> String {
        s(&self.root.join(name)).to_string()
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_failed_build_leaves_the_directory_as_it_was_and_the_rerun_succeeds() {
    let t = Setup::new();
    let model = t.p("m.model");
    let cases: [(&str, Vec<&str>, Vec<&str>, &str); 3] = [
        (
            "dup",
            vec!["--data", "x.npy", "--ids", "dup_ids.npy"],
            vec!["--data", "x.npy", "--ids", "ids.npy"],
            "id 105 appears twice",
        ),
        (
            "reserved",
            vec!["--data", "x.npy", "--ids", "reserved_ids.npy"],
            vec!["--data", "x.npy", "--ids", "ids.npy"],
            "is reserved",
        ),
        (
            "f16",
            vec!["--data", "big.npy", "--store-vectors", "f16"],
            vec!["--data", "big.npy", "--store-vectors", "f32"],
            "overflows f16",
        ),
    ];
    for (name, bad, good, needle) in cases {
        for existed_empty in [false, true] {
            let dir = t.root.join(format!("idx-{name}-{existed_empty}"));
            if existed_empty {
                std::fs::create_dir(&dir).unwrap();
            }
            let args = |extra: &[&str]| -> Vec<String> {
                let mut a = vec![
                    "build".to_string(),
                    s(&dir).into(),
                    "--model".into(),
                    model.clone(),
                ];
                for (i, e) in extra.iter().enumerate() {
                    // Every odd item is a file name under the setup's root.
                    a.push(if i % 2 == 1 && e.ends_with(".npy") {
                        t.p(e)
                    } else {
                        e.to_string()
                    });
                }
                a
            };
            let bad_args = args(&bad);
            let bad_args: Vec<&str> = bad_args.iter().map(String::as_str).collect();
            let out = codedb(&bad_args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{name}: {err}");
            assert!(err.contains(needle), "{name}: {err}");
            if existed_empty {
                assert_eq!(entries(&dir), Vec::<String>::new(), "{name}: left empty");
            } else {
                assert!(!dir.exists(), "{name}: {} was created", dir.display());
            }
            // The same bad command again fails the same way (not "already holds an index").
            let again = codedb(&bad_args);
            assert!(String::from_utf8_lossy(&again.stderr).contains(needle));
            let good_args = args(&good);
            let good_args: Vec<&str> = good_args.iter().map(String::as_str).collect();
            let out = ok(&good_args);
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("40 rows"),
                "{name}"
            );
            ok(&["verify", s(&dir)]);
        }
    }
}

#[test]
fn a_build_over_an_existing_index_fails_and_leaves_it_alone() {
    let t = Setup::new();
    let dir = t.root.join("idx");
    ok(&[
        "build",
        s(&dir),
        "--model",
        &t.p("m.model"),
        "--data",
        &t.p("x.npy"),
    ]);
    let before = entries(&dir);
    let out = codedb(&[
        "build",
        s(&dir),
        "--model",
        &t.p("m.model"),
        "--data",
        &t.p("x.npy"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already holds a codedb index"));
    assert_eq!(entries(&dir), before);
    ok(&["verify", s(&dir)]);
}
