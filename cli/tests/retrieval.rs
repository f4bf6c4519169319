//! The retrieval path end to end on the shipped digits: train → build an on-disk index →
//! search, checked against exact float search, plus the CLI and its errors.
#![allow(clippy::unwrap_used)] // test and bench code: a failed unwrap is a failed test

use std::path::Path;

use codedb::model::{PipelineSpec, TrainOptions, train};
use codedb::{BuildOptions, Index, Snapshot};
use codedb::{SearchMode, SearchParams, StorageError};
use ndarray::Array2;

mod cli_support;
use cli_support::{codedb, json};

fn digits() -> (Array2<f32>, Vec<u32>) {
    let (x, y) = cli_support::digits_data();
    (x, y.into_iter().map(|v| v as u32).collect())
}

fn class_p10(spec: &str, x: &Array2<f32>, y: &[u32], dir: &Path) -> f64 {
    let (model, _) = train(
        &PipelineSpec::parse(spec).unwrap(),
        x.view(),
        &TrainOptions::default(),
    )
    .unwrap();
    let ids: Vec<u64> = (0..x.nrows() as u64).collect();
    let index = Index::build(
        dir,
        &model,
        x.view(),
        &BuildOptions {
            ids: Some(&ids),
            labels: Some(y),
            classes_from_labels: false,
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    let q = x.slice(ndarray::s![0..300;3, ..]);
    let mode = SearchMode::default_for(model.code_kind());
    let hits = index
        .snapshot()
        .search(q, &SearchParams::new(11, mode).threads(2))
        .unwrap();
    let mut good = 0;
    for (qi, l) in hits.iter().enumerate() {
        // Drop the query itself (it is in the database).
        let want = y[qi * 3];
        good += l
            .iter()
            .filter(|h| h.id != (qi * 3) as u64)
            .take(10)
            .filter(|h| y[h.id as usize] == want)
            .count();
    }
    good as f64 / (10 * hits.len()) as f64
}

#[test]
fn itq_beats_random_projections_and_pq_beats_both_on_digits() {
    let (x, y) = digits();
    let tmp = tempfile::tempdir().unwrap();
    let itq = class_p10("pca-itq:32", &x, &y, &tmp.path().join("itq"));
    let lsh = class_p10("lsh:32", &x, &y, &tmp.path().join("lsh"));
    let pq = class_p10("pq:8x8", &x, &y, &tmp.path().join("pq"));
    // Gong et al. §4: ITQ > LSH at 32 bits; all far above chance (0.1).
    assert!(itq > lsh + 0.05, "itq {itq} lsh {lsh}");
    assert!(lsh > 0.5 && pq > itq, "lsh {lsh} itq {itq} pq {pq}");
}

#[test]
fn a_database_row_finds_itself_at_distance_zero_and_results_are_ordered() {
    let (x, y) = digits();
    let tmp = tempfile::tempdir().unwrap();
    let (model, _) = train(
        &PipelineSpec::parse("pca-itq:64").unwrap(),
        x.view(),
        &TrainOptions::default(),
    )
    .unwrap();
    Index::build(
        tmp.path(),
        &model,
        x.view(),
        &BuildOptions {
            labels: Some(&y),
            classes_from_labels: false,
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    let snap = Snapshot::open(tmp.path()).unwrap();
    let hits = snap
        .search(
            x.slice(ndarray::s![5..6, ..]),
            &SearchParams::new(20, SearchMode::Hamming),
        )
        .unwrap();
    assert_eq!(hits[0][0].score, 0.0);
    assert!(hits[0].iter().any(|h| h.id == 5 && h.score == 0.0));
    assert!(
        hits[0]
            .windows(2)
            .all(|w| (w[0].score, w[0].id) < (w[1].score, w[1].id))
    );
    // k larger than the index returns every row.
    let all = snap
        .search(
            x.slice(ndarray::s![0..1, ..]),
            &SearchParams::new(5000, SearchMode::Hamming).threads(2),
        )
        .unwrap();
    assert_eq!(all[0].len(), x.nrows());
}

#[test]
fn bad_search_arguments_are_clear_errors() {
    let (x, y) = digits();
    let tmp = tempfile::tempdir().unwrap();
    let (model, _) = train(
        &PipelineSpec::parse("lsh:16").unwrap(),
        x.view(),
        &TrainOptions::default(),
    )
    .unwrap();
    let index = Index::build(
        tmp.path(),
        &model,
        x.view(),
        &BuildOptions {
            labels: Some(&y),
            classes_from_labels: false,
            ..BuildOptions::default()
        },
        &mut |_| {},
    )
    .unwrap();
    let snap = index.snapshot();
    let q = x.slice(ndarray::s![0..2, ..]);
    let err = |r: Result<_, codedb::SearchError>| r.map(|_| ()).unwrap_err().to_string();
    assert!(err(snap.search(q, &SearchParams::new(0, SearchMode::Hamming))).contains("k"));
    assert!(
        err(snap.search(q, &SearchParams::new(3, SearchMode::AdcL2))).contains("does not apply")
    );
    let narrow = Array2::<f32>::zeros((1, 7));
    assert!(
        err(snap.search(narrow.view(), &SearchParams::new(3, SearchMode::Hamming)))
            .contains("64-D")
    );
    let mut nan = x.slice(ndarray::s![0..1, ..]).to_owned();
    nan[[0, 3]] = f32::NAN;
    assert!(
        snap.search(nan.view(), &SearchParams::new(3, SearchMode::Hamming))
            .is_err()
    );
    // A build with mismatched labels leaves no index behind.
    let t2 = tempfile::tempdir().unwrap();
    let r = Index::build(
        &t2.path().join("x"),
        &model,
        x.view(),
        &BuildOptions {
            labels: Some(&y[..10]),
            classes_from_labels: false,
            ..BuildOptions::default()
        },
        &mut |_| {},
    );
    assert!(matches!(r, Err(StorageError::InvalidArgument { .. })));
    assert!(!t2.path().join("x").exists());
}

#[test]
fn cli_train_build_search_add_delete_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, labels) = cli_support::digits();
    let m = tmp.path().join("m.model");
    let dir = tmp.path().join("idx");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let ok = |o: std::process::Output| {
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        o
    };
    cli_support::train(&data, "pq:8x8", &m);
    cli_support::build(&dir, &m, &data, &["--labels", &s(&labels)]);
    let out = ok(codedb(&[
        "search",
        &s(&dir),
        "--queries",
        &s(&data),
        "-k",
        "3",
        "--format",
        "json",
    ]));
    let v = json(&out);
    assert_eq!(v.as_array().unwrap().len(), 1797);
    assert_eq!(v[0]["query"], 0);
    assert_eq!(v[0]["results"].as_array().unwrap().len(), 3);
    ok(codedb(&["add", &s(&dir), "--data", &s(&data)]));
    // Rows 0-2 count in their classes and the index stores no vectors: their descriptors are
    // unknown, so the delete is refused unless the class statistics are to be kept.
    let o = codedb(&["delete", &s(&dir), "--ids", "0,1,2"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--keep-class-stats"));
    ok(codedb(&[
        "delete",
        &s(&dir),
        "--ids",
        "0,1,2",
        "--keep-class-stats",
    ]));
    let v: serde_json::Value =
        serde_json::from_slice(&ok(codedb(&["inspect", &s(&dir), "--json"])).stdout).unwrap();
    assert_eq!(v["rows"], 2 * 1797 - 3);
    ok(codedb(&["compact", &s(&dir)]));
    ok(codedb(&["verify", &s(&dir)]));
    // Errors: unknown pipeline token and k = 0 (usage, 2), model file already there and
    // unknown id (1).
    let o = codedb(&[
        "train",
        "--data",
        &s(&data),
        "--pipeline",
        "pq:8xz",
        "--out",
        &s(&tmp.path().join("z")),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("8xz"));
    assert_eq!(
        codedb(&[
            "train",
            "--data",
            &s(&data),
            "--pipeline",
            "lsh:8",
            "--out",
            &s(&m)
        ])
        .status
        .code(),
        Some(1)
    );
    assert_eq!(
        codedb(&["search", &s(&dir), "--queries", &s(&data), "-k", "0"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        codedb(&["delete", &s(&dir), "--ids", "999999"])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn demo_runs_on_the_built_in_digits() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let out = codedb(&["demo", "--dir", dir.to_str().unwrap(), "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 5);
    let p = |name: &str| {
        rows.iter().find(|r| r["pipeline"] == name).unwrap()["class_precision_at_10"]
            .as_f64()
            .unwrap()
    };
    assert!(p("pca-itq:64") > p("lsh:64"));
    assert_eq!(
        codedb(&["verify", v["index_dir"].as_str().unwrap()])
            .status
            .code(),
        Some(0)
    );
}
