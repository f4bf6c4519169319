//! `codedb eval --task text` (PAMIR §5: AvgP, BEP, P10 over text queries) on the digits with
//! tags that name each digit: the oracle's figures are known exactly, PAMIR over ITQ bits beats
//! chance by far, CCA with a one-hot caption embedding finds the digit, and the user errors.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

mod cli_support;

use std::path::{Path, PathBuf};

use cli_support::{digits, digits_data, fails, json, ok, s};
use codedb_cli::io::npy_write::write_npy_f32;
use ndarray::Array2;

const NAMES: [&str; 10] = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
];

/// Tags (digit name, even/odd), a one-hot caption embedding of the digit, and the queries
/// "three", "even", "seven" (text file) with a one-hot embedding each.
fn write_inputs(dir: &Path) -> [PathBuf; 4] {
    let (_, y) = digits_data();
    let tags: Vec<Vec<&str>> = y
        .iter()
        .map(|&v| vec![NAMES[v as usize], if v % 2 == 0 { "even" } else { "odd" }])
        .collect();
    let tags_p = dir.join("tags.json");
    std::fs::write(&tags_p, serde_json::to_string(&tags).unwrap()).unwrap();
    let queries_p = dir.join("queries.txt");
    std::fs::write(&queries_p, "three\n\nseven\n").unwrap();
    let one_hot = |v: usize| (0..10).map(move |j| f32::from(u8::from(j == v)));
    let ce = Array2::from_shape_vec(
        (y.len(), 10),
        y.iter().flat_map(|&v| one_hot(v as usize)).collect(),
    )
    .unwrap();
    let ce_p = dir.join("ce.npy");
    write_npy_f32(&ce_p, ce.view()).unwrap();
    let qe = Array2::from_shape_vec((2, 10), one_hot(3).chain(one_hot(7)).collect()).unwrap();
    let qe_p = dir.join("qe.npy");
    write_npy_f32(&qe_p, qe.view()).unwrap();
    [tags_p, queries_p, ce_p, qe_p]
}

fn row<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["rankers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["pipeline"] == name)
        .unwrap_or_else(|| panic!("no ranker {name} in {v}"))
}

#[test]
fn text_eval_scores_oracle_exactly_pamir_and_cca_well_above_chance() {
    let tmp = tempfile::tempdir().unwrap();
    let [tags, queries, ce, qe] = write_inputs(tmp.path());
    let (x, _) = digits();
    let out = ok(&[
        "eval",
        "--task",
        "text",
        "--data",
        s(&x),
        "--captions",
        s(&tags),
        "--text-queries",
        s(&queries),
        "--pipelines",
        "random; oracle; cca:9; pca-itq:16",
        "--margins",
        "constant,caption",
        "--pamir-c",
        "0.1,1",
        "--pamir-iterations",
        "4000",
        "--caption-embeddings",
        s(&ce),
        "--query-embeddings",
        s(&qe),
        "--json",
    ]);
    let v = json(&out);
    // A seeded fifth of the 1,797 rows is the test split; both queries have test rows.
    assert_eq!(v["test_rows"], 1797 / 5);
    assert_eq!(v["train_rows"], 1797 - 1797 / 5);
    assert_eq!(
        (v["queries"].as_u64(), v["queries_given"].as_u64()),
        (Some(2), Some(2))
    );
    // The oracle scores exactly the rows tagged with the word above all others: AvgP = BEP =
    // 1, and P10 = 1 since each digit has more than 10 test rows.
    let o = row(&v, "oracle (tags)");
    assert_eq!(
        (o["avgp"].as_f64(), o["bep"].as_f64(), o["p10"].as_f64()),
        (Some(1.0), Some(1.0), Some(1.0))
    );
    let chance = row(&v, "random")["avgp"].as_f64().unwrap();
    assert!(chance < 0.2, "random AvgP {chance}");
    let cca = row(&v, "cca:9 (embeddings)");
    assert!(cca["avgp"].as_f64().unwrap() > 0.9, "cca {cca}");
    // ρ and the power were chosen on validation rows of the training split, never the test.
    let choice = &cca["cca"];
    assert_eq!(choice["r"], 9, "{choice}");
    assert!(
        choice["validation_avgp"].as_f64().unwrap() > 0.9,
        "{choice}"
    );
    assert!(
        choice["validation_rows"].as_u64().unwrap() > 200,
        "{choice}"
    );
    // Names in JSON are plain ASCII.
    for r in v["rankers"].as_array().unwrap() {
        assert!(r["pipeline"].as_str().unwrap().is_ascii(), "{r}");
    }
    for m in ["constant-eps", "caption-eps"] {
        let p = row(&v, &format!("pca-itq:16 {m}"));
        let avgp = p["avgp"].as_f64().unwrap();
        assert!(avgp > 0.85, "{m}: AvgP {avgp}");
        assert_eq!(p["bits"], 16);
        assert_eq!(p["unknown_queries"], 0);
        assert!(
            ["patience", "cap"].contains(&p["stopped"].as_str().unwrap()),
            "{p}"
        );
        assert!(p["bep"].as_f64().unwrap() > 0.8 && p["p10"].as_f64().unwrap() > 0.9);
    }
}

#[test]
fn text_eval_rejects_missing_and_inconsistent_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    let [tags, queries, _, _] = write_inputs(tmp.path());
    let (x, _) = digits();
    let base = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["eval", "--task", "text", "--data", s(&x)]
            .iter()
            .map(|v| v.to_string())
            .collect();
        a.extend(extra.iter().map(|v| v.to_string()));
        a
    };
    let run = |extra: &[&str], code: i32, needle: &str| {
        let a = base(extra);
        let r: Vec<&str> = a.iter().map(String::as_str).collect();
        fails(&r, code, needle);
    };
    run(&["--pipelines", "oracle"], 2, "needs --captions");
    run(
        &[
            "--pipelines",
            "oracle",
            "--captions",
            s(&tags),
            "--text-queries",
            s(&queries),
            "--plot",
            "x.svg",
        ],
        2,
        "--task text has none",
    );
    run(
        &[
            "--pipelines",
            "cca:0",
            "--captions",
            s(&tags),
            "--text-queries",
            s(&queries),
        ],
        2,
        "cca:R takes",
    );
    run(
        &[
            "--pipelines",
            "cca:4",
            "--captions",
            s(&tags),
            "--text-queries",
            s(&queries),
        ],
        1,
        "cca:R needs caption embeddings",
    );
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, r#"[{"text": "three", "relevant": [1, 99999]}]"#).unwrap();
    run(
        &[
            "--pipelines",
            "oracle",
            "--captions",
            s(&tags),
            "--text-queries",
            s(&bad),
        ],
        1,
        "relevant row 99999",
    );
    let none = tmp.path().join("none.txt");
    std::fs::write(&none, "zebra\n").unwrap();
    run(
        &[
            "--pipelines",
            "oracle",
            "--captions",
            s(&tags),
            "--text-queries",
            s(&none),
        ],
        1,
        "none of the 1 queries has a relevant test row",
    );
}
