//! `codedb search --mih auto|on|off` through the binary: the index `build` writes carries
//! multi-index hashing tables (format 1.6), every choice prints the linear scan's results, and
//! a bad value is a usage error.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod cli_support;
use cli_support::{codedb, digits, fails, ok, s, search, stdout, tmp_digits_index};

#[test]
fn search_mih_choices_print_the_linear_scans_results() {
    let (_tmp, _m, dir) = tmp_digits_index("pca-itq:32");
    let snap = codedb::Snapshot::open(&dir).unwrap();
    let with_tables = snap
        .blocks()
        .filter_map(|b| b.segment())
        .filter(|r| r.mih_tables().unwrap().is_some())
        .count();
    assert_eq!(with_tables, 1, "the built segment has tables");
    let (x, _) = digits();
    for k in ["1", "10", "100"] {
        let run = |mih: &str| {
            stdout(&search(
                &dir,
                &x,
                &[
                    "-k", k, "--mode", "hamming", "--mih", mih, "--format", "json",
                ],
            ))
        };
        let linear = run("off");
        assert!(linear.contains("\"id\""), "{linear}");
        assert_eq!(run("on"), linear, "k {k}");
        assert_eq!(run("auto"), linear, "k {k}");
    }
    ok(&["verify", s(&dir)]);
    fails(
        &["search", s(&dir), "--queries", s(&x), "--mih", "sometimes"],
        2,
        "--mih",
    );
    let help = String::from_utf8_lossy(&codedb(&["search", "--help"]).stdout).to_string();
    assert!(help.contains("--mih auto|on|off"), "{help}");
}
