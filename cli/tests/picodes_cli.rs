//! `codedb train` with `hom:chi2` and `picodes:C` on the shipped digits: the model trains
//! from labels with its objective shown per round, stores the hom stage and linear + binarize,
//! builds an index; negative input to `hom:chi2` and a missing `--labels` are refused naming
//! what is wrong.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod cli_support;

use cli_support::{LABELS, PIXELS, codedb, fails, json, ok, s, stderr};

#[test]
fn hom_picodes_trains_from_labels_and_bad_input_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("m.model");
    let out = ok(&[
        "train",
        "--data",
        PIXELS,
        "--labels",
        LABELS,
        "--pipeline",
        "hom:chi2,pca:32,picodes:16",
        "--picodes-rounds",
        "4",
        "--verbose",
        "--out",
        s(&m),
    ]);
    let err = stderr(&out);
    assert!(err.contains("picodes:16 round   1: objective"), "{err}");
    let v = json(&ok(&["inspect", s(&m), "--json"]));
    let kinds: Vec<&str> = v["contents"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|st| st["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["hom", "center", "linear", "linear", "binarize", "origin"],
        "{v}"
    );
    let steps: Vec<&str> = v["contents"]["stages"].as_array().unwrap()[..5]
        .iter()
        .map(|st| st["step"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        ["hom:chi2", "pca:32", "pca:32", "picodes:16", "picodes:16"]
    );
    let dir = tmp.path().join("idx");
    ok(&["build", s(&dir), "--model", s(&m), "--data", PIXELS]);

    // Negative input to hom:chi2: exit 1, the row and column named.
    let bad = tmp.path().join("bad.npy");
    let (mut x, _) = cli_support::digits_data();
    x[(4, 9)] = -2.0;
    codedb_cli::io::write_npy_f32(&bad, x.view()).unwrap();
    fails(
        &[
            "build",
            s(&tmp.path().join("idx2")),
            "--model",
            s(&m),
            "--data",
            s(&bad),
        ],
        1,
        "row 4, column 9",
    );
    fails(
        &[
            "train",
            "--data",
            s(&bad),
            "--labels",
            LABELS,
            "--pipeline",
            "hom:chi2,pca:32,picodes:16",
            "--out",
            s(&tmp.path().join("m2")),
        ],
        1,
        "hom:chi2 maps non-negative input only",
    );
    // picodes without labels: usage error naming --labels; hom not first: usage error.
    fails(
        &[
            "train",
            "--data",
            PIXELS,
            "--pipeline",
            "picodes:16",
            "--out",
            s(&tmp.path().join("m3")),
        ],
        2,
        "--labels",
    );
    fails(
        &[
            "train",
            "--data",
            PIXELS,
            "--pipeline",
            "pca:32,hom:inter,bits",
            "--out",
            s(&tmp.path().join("m4")),
        ],
        2,
        "must be the first step",
    );
    assert!(codedb(&["train", "--help"]).status.success());
}

/// `search --examples --svm-c C` sets the cost of the SVM learned at query time (another C,
/// another classifier, other scores; C = 1 is the default); C ≤ 0 is a usage error.
#[test]
fn search_examples_takes_the_svm_cost() {
    let tmp = tempfile::tempdir().unwrap();
    let m = tmp.path().join("m.model");
    ok(&[
        "train",
        "--data",
        PIXELS,
        "--pipeline",
        "pca-itq:32",
        "--out",
        s(&m),
    ]);
    let dir = tmp.path().join("idx");
    ok(&["build", s(&dir), "--model", s(&m), "--data", PIXELS]);
    let threes = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/data/digits/threes.npy"
    );
    let top = |extra: &[&str]| -> f64 {
        let mut a = vec![
            "search",
            s(&dir),
            "--examples",
            threes,
            "-k",
            "1",
            "--format",
            "json",
        ];
        a.extend_from_slice(extra);
        json(&ok(&a))[0]["results"][0]["score"].as_f64().unwrap()
    };
    let (default, small) = (top(&[]), top(&["--svm-c", "0.001"]));
    assert_eq!(top(&["--svm-c", "1"]), default);
    assert!(
        (small - default).abs() > 0.05,
        "C = 0.001: {small} vs C = 1: {default}"
    );
    fails(
        &["search", s(&dir), "--examples", threes, "--svm-c", "0"],
        2,
        "--svm-c",
    );
}
