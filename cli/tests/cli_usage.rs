//! Usage errors (argument combinations, out-of-range numbers) exit 2 with a message naming the
//! argument; a data file that does not fit exits 1 naming the file and the index or model.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::Path;
mod cli_support;
use cli_support::{digits, digits_index, fails, ok, s};

#[test]
fn argument_combinations_are_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, dir) = digits_index(tmp.path(), "pca-itq:32");
    let (x, y) = digits();
    let (d, x, y) = (s(&dir), s(&x), s(&y));
    let before = std::fs::read_dir(&dir).unwrap().count();

    // add-class: --validation needs its labels, --data and --parent, and not --prior-weight.
    fails(
        &[
            "add-class",
            d,
            "--name",
            "n",
            "--parent",
            "0",
            "--data",
            x,
            "--validation",
            x,
        ],
        2,
        "--validation-labels",
    );
    fails(
        &["add-class", d, "--name", "n", "--validation-labels", y],
        2,
        "--validation",
    );
    fails(
        &[
            "add-class",
            d,
            "--name",
            "n",
            "--validation",
            x,
            "--validation-labels",
            y,
        ],
        2,
        "--parent",
    );
    fails(
        &[
            "add-class",
            d,
            "--name",
            "n",
            "--parent",
            "0",
            "--data",
            x,
            "--validation",
            x,
            "--validation-labels",
            y,
            "--prior-weight",
            "3",
        ],
        2,
        "--prior-weight",
    );
    // search: --radius is a Hamming lookup over every list, without re-ranking.
    fails(
        &[
            "search",
            d,
            "--queries",
            x,
            "--radius",
            "2",
            "--mode",
            "asym",
        ],
        2,
        "--mode asym",
    );
    fails(
        &[
            "search",
            d,
            "--queries",
            x,
            "--radius",
            "2",
            "--classes",
            "1,2",
        ],
        2,
        "--classes",
    );
    fails(
        &[
            "search",
            d,
            "--queries",
            x,
            "--radius",
            "2",
            "--nprobe",
            "2",
        ],
        2,
        "--nprobe",
    );
    fails(
        &[
            "search",
            d,
            "--queries",
            x,
            "--radius",
            "1",
            "--rerank",
            "20",
        ],
        2,
        "--rerank",
    );
    // train: a supervised pipeline without labels, a bad pipeline.
    fails(
        &[
            "train",
            "--data",
            x,
            "--pipeline",
            "ncmml:16,itq,bits",
            "--out",
            "m2",
        ],
        2,
        "--labels",
    );
    fails(
        &[
            "train",
            "--data",
            x,
            "--pipeline",
            "pca:16,zap",
            "--out",
            "m2",
        ],
        2,
        "zap",
    );
    // demo: --data that is not a Fashion-MNIST directory needs --labels.
    fails(&["demo", "--data", x], 2, "--labels");
    // add: --upsert replaces rows by id, so it needs --ids.
    fails(&["add", d, "--data", x, "--upsert"], 2, "--ids");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), before);
}

#[test]
fn negative_and_zero_counts_say_what_is_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, dir) = digits_index(tmp.path(), "pca-itq:32");
    let (x, _) = digits();
    let (d, x) = (s(&dir), s(&x));
    for (args, want) in [
        (vec!["search", d, "--queries", x, "-k", "-1"], "must be ≥ 1"),
        (vec!["search", d, "--queries", x, "-k", "0"], "must be ≥ 1"),
        (
            vec!["search", d, "--queries", x, "--rerank", "-5"],
            "must be ≥ 1",
        ),
        (
            vec!["search", d, "--queries", x, "--nprobe", "-2"],
            "must be ≥ 1",
        ),
        (
            vec!["search", d, "--queries", x, "--threads", "-1"],
            "must be ≥ 0",
        ),
        (
            vec!["search", d, "--queries", x, "--radius", "-1"],
            "must be ≥ 0",
        ),
        (
            vec!["classify", d, "--data", x, "--top", "-3"],
            "must be ≥ 1",
        ),
        (vec!["delete", d, "--ids", "4,-8"], "must be ≥ 0"),
        (
            vec![
                "train",
                "--data",
                x,
                "--pipeline",
                "lsh:8",
                "--out",
                "m",
                "--seed",
                "-1",
            ],
            "must be ≥ 0",
        ),
        (
            vec!["eval", "--data", x, "--pipelines", "lsh:8", "--runs", "-2"],
            "must be ≥ 1",
        ),
        (
            vec!["bench", "scan", "--dir", d, "--codes", "-10"],
            "must be ≥ 1",
        ),
        (
            vec!["search", d, "--queries", x, "-k", "ten"],
            "not a whole number",
        ),
    ] {
        let out = fails(&args, 2, want);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("-- -"), "{args:?}: {err}");
    }
}

#[test]
fn a_data_file_of_the_wrong_width_is_named_with_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let (m, dir) = digits_index(t, "pca-itq:32");
    let (x, y) = digits();
    let wrong = t.join("wrongdim.npy");
    codedb_cli::io::write_npy_f32(&wrong, ndarray::Array2::<f32>::zeros((3, 10)).view()).unwrap();
    let wrong_mean = t.join("wrongmean.npy");
    codedb_cli::io::write_npy_f32(&wrong_mean, ndarray::Array2::<f32>::zeros((1, 10)).view())
        .unwrap();
    let (d, w) = (s(&dir), s(&wrong));
    let named = |args: &[&str], file: &Path, holder: &Path| {
        let out = fails(args, 1, "10 columns");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(s(file)),
            "{args:?}: {err} does not name {file:?}"
        );
        assert!(
            err.contains(s(holder)),
            "{args:?}: {err} does not name {holder:?}"
        );
        assert!(
            err.contains("64"),
            "{args:?}: {err} does not give the expected width"
        );
    };
    named(&["classify", d, "--data", w], &wrong, &dir);
    named(&["search", d, "--queries", w], &wrong, &dir);
    named(&["add", d, "--data", w], &wrong, &dir);
    named(&["add-class", d, "--name", "n", "--data", w], &wrong, &dir);
    named(
        &["add-class", d, "--name", "n", "--mean", s(&wrong_mean)],
        &wrong_mean,
        &dir,
    );
    named(
        &[
            "add-class",
            d,
            "--name",
            "n",
            "--parent",
            "0",
            "--data",
            s(&x),
            "--validation",
            w,
            "--validation-labels",
            s(&y),
        ],
        &wrong,
        &dir,
    );
    named(
        &["build", s(&t.join("idx2")), "--model", s(&m), "--data", w],
        &wrong,
        &m,
    );
    assert!(!t.join("idx2").exists());
    // train: the model is not fixed yet, but the error names the file it trained on.
    let out = fails(
        &[
            "train",
            "--data",
            w,
            "--pipeline",
            "pca-itq:32",
            "--out",
            s(&t.join("m2")),
        ],
        1,
        "10",
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(w));
    ok(&["verify", d]);
}
