//! `codedb search --examples` / `--classifier`: query by examples on the digits (five threes,
//! tests/data/digits/threes.npy) over bits, PQ codes and floats, with re-ranking, lists and
//! probing; a given classifier's scores; and the user-visible errors (exit 1 naming the
//! option, exit 2 for usage).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod cli_support;

use std::path::{Path, PathBuf};

use cli_support::{build, digits, digits_data, fails, json, ok, result_ids, s, train};
use ndarray::Array2;

fn threes() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/digits/threes.npy")
}

/// `spec` trained on the digits, an index with labels, lists by label and stored vectors.
fn index(tmp: &Path, spec: &str) -> PathBuf {
    let (x, y) = digits();
    let (m, dir) = (tmp.join("m.model"), tmp.join("idx"));
    train(&x, spec, &m);
    let extra = [
        "--labels",
        s(&y),
        "--lists",
        "label",
        "--store-vectors",
        "f32",
    ];
    build(&dir, &m, &x, &extra);
    dir
}

fn search(dir: &Path, extra: &[&str]) -> serde_json::Value {
    let mut a = vec!["search", s(dir), "--format", "json"];
    a.extend_from_slice(extra);
    json(&ok(&a))
}

fn write(path: &Path, rows: usize, cols: usize, values: Vec<f32>) -> PathBuf {
    let a = Array2::from_shape_vec((rows, cols), values).unwrap();
    codedb_cli::io::write_npy_f32(path, a.view()).unwrap();
    path.to_path_buf()
}

#[test]
fn examples_find_the_threes_on_bits_pq_and_floats() {
    let (_, y) = digits_data();
    let t = threes();
    for spec in ["pca-itq:32", "pca:16,pq:8x8", "pca:16,float"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = index(tmp.path(), spec);
        let args = [
            "--examples",
            s(&t),
            "--random-negatives",
            "500",
            "--seed",
            "1",
            "-k",
            "50",
        ];
        let v = search(&dir, &args);
        let ids = &result_ids(&v)[0];
        assert_eq!(ids.len(), 50);
        let hits = ids.iter().filter(|&&i| y[i as usize] == 3).count();
        assert!(hits >= 15, "{spec}: {hits}/50 threes (chance: 5)");
        assert_eq!(search(&dir, &args), v, "{spec}: seeded");
        // Given negatives: the ones.
        let ones: Vec<usize> = (0..y.len()).filter(|&i| y[i] == 1).take(30).collect();
        let (x, _) = digits_data();
        let neg = x.select(ndarray::Axis(0), &ones);
        let negp = tmp.path().join("ones.npy");
        codedb_cli::io::write_npy_f32(&negp, neg.view()).unwrap();
        let g = search(
            &dir,
            &["--examples", s(&t), "--negatives", s(&negp), "-k", "10"],
        );
        assert_eq!(result_ids(&g)[0].len(), 10);
        // Re-ranking, lists, probing.
        let r = search(&dir, &["--examples", s(&t), "-k", "10", "--rerank", "100"]);
        assert_eq!(result_ids(&r)[0].len(), 10, "{spec} rerank");
        let l = search(&dir, &["--examples", s(&t), "-k", "20", "--classes", "3"]);
        assert!(
            result_ids(&l)[0].iter().all(|&i| y[i as usize] == 3),
            "{spec} classes"
        );
        let p = search(&dir, &["--examples", s(&t), "-k", "20", "--nprobe", "10"]);
        assert_eq!(
            result_ids(&p)[0],
            result_ids(&search(&dir, &["--examples", s(&t), "-k", "20"]))[0],
            "{spec} nprobe over every class"
        );
    }
}

#[test]
fn a_given_classifier_scores_bias_plus_weighted_bits() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = index(tmp.path(), "pca-itq:32");
    // w = e_0, b = 0.5: a row scores 1.5 when its bit 0 is set, −0.5 otherwise.
    let mut w = vec![0f32; 33];
    w[0] = 1.0;
    w[32] = 0.5;
    let wp = write(&tmp.path().join("w.npy"), 1, 33, w);
    let v = search(&dir, &["--classifier", s(&wp), "-k", "1797"]);
    let scores: Vec<f64> = v[0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["score"].as_f64().unwrap())
        .collect();
    assert_eq!(scores.len(), 1797);
    assert!(scores.iter().all(|&s| s == 1.5 || s == -0.5), "{scores:?}");
    assert!(scores.contains(&1.5) && scores.contains(&-0.5));
}

#[test]
fn bad_input_names_the_option() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = index(tmp.path(), "pca-itq:32");
    let d = s(&dir);
    let t = threes();
    let narrow = write(&tmp.path().join("narrow.npy"), 2, 10, vec![1.0; 20]);
    fails(&["search", d, "--examples", s(&narrow)], 1, "--examples");
    let mut v = vec![1.0f32; 128];
    v[67] = f32::NAN;
    let nan = write(&tmp.path().join("nan.npy"), 2, 64, v);
    let e = fails(&["search", d, "--examples", s(&nan)], 1, "--examples");
    assert!(cli_support::stderr(&e).contains("NaN"));
    fails(
        &["search", d, "--examples", s(&t), "--negatives", s(&nan)],
        1,
        "--negatives",
    );
    fails(
        &[
            "search",
            d,
            "--examples",
            s(&t),
            "--random-negatives",
            "5000",
        ],
        1,
        "--random-negatives 5000",
    );
    let short = write(&tmp.path().join("short.npy"), 1, 32, vec![1.0; 32]);
    fails(&["search", d, "--classifier", s(&short)], 1, "D + 1 = 33");
    let w = write(&tmp.path().join("w.npy"), 1, 33, vec![1.0; 33]);
    fails(
        &["search", d, "--classifier", s(&w), "--rerank", "20"],
        1,
        "rerank",
    );
    // Usage: negatives without examples, examples with queries.
    fails(&["search", d, "--negatives", s(&t)], 2, "--examples");
    fails(
        &["search", d, "--examples", s(&t), "--queries", s(&t)],
        2,
        "cannot be used",
    );
}
